//! `GPUPROF_COUNTER_RANGE=NAME`: counters only for launches made inside an NVTX range
//! whose message is `NAME` (e.g. "decode"), followed live through CUPTI's NVTX
//! callbacks (`CUPTI_CB_DOMAIN_NVTX`, which CUPTI fires once NVTX is routed to it).
//!
//! - push / pop ranges (`nvtxRangePush*`, `nvtxDomainRangePush*`) are per thread: a
//!   launch is inside when its thread has an open matching push range;
//! - start / end ranges (`nvtxRangeStart*`, `nvtxDomainRangeStart*`) are process-wide:
//!   a launch on any thread is inside while a matching one is open.
//!
//! Messages given as ASCII, wide strings or registered strings
//! (`nvtxDomainRegisterString*`) are matched; the domain is not. Launches outside are
//! not counted by the launch policy either, so "the first N launches" means the first
//! N inside the range.

use core::ffi::{c_char, CStr};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use cupti::Cupti;
use cupti_sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
use cupti_sys::CUpti_nvtx_api_trace_cbid as cb;
use cupti_sys::{nvtxEventAttributes_t, wchar_t, CUpti_NvtxData};

use cupti::callback::{self, Subscriber};

/// The range name, when filtering.
static NAME: OnceLock<String> = OnceLock::new();
/// Open matching start / end ranges, process-wide.
static OPEN_STARTED: AtomicU32 = AtomicU32::new(0);
/// Their ids.
static STARTED: Mutex<Option<HashSet<u64>>> = Mutex::new(None);
/// Registered strings that match (handle addresses); others are not kept.
static REGISTERED: Mutex<Option<HashMap<usize, bool>>> = Mutex::new(None);

thread_local! {
    /// This thread's open push ranges: whether each matches.
    static STACK: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
}

/// The NVTX callbacks the filter follows.
const CBIDS: &[u32] = &[
    cb::CUPTI_CBID_NVTX_nvtxRangePushA,
    cb::CUPTI_CBID_NVTX_nvtxRangePushW,
    cb::CUPTI_CBID_NVTX_nvtxRangePushEx,
    cb::CUPTI_CBID_NVTX_nvtxRangePop,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartA,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartW,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartEx,
    cb::CUPTI_CBID_NVTX_nvtxRangeEnd,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
    cb::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
    cb::CUPTI_CBID_NVTX_nvtxDomainRegisterStringW,
];

/// Sets the range name (once).
pub fn configure(name: Option<&str>) {
    if let Some(n) = name {
        let _ = NAME.set(n.to_string());
    }
}

/// The range name, when filtering.
pub fn name() -> Option<&'static str> {
    NAME.get().map(String::as_str)
}

/// Subscribes to the NVTX callbacks when filtering.
pub fn enable(c: &Cupti, s: &Subscriber) -> Result<(), String> {
    if NAME.get().is_none() {
        return Ok(());
    }
    for &id in CBIDS {
        callback::enable_callback(c, s, CUPTI_CB_DOMAIN_NVTX, id).map_err(|e| {
            format!("cannot follow NVTX ranges for GPUPROF_COUNTER_RANGE (callback {id}: {e})")
        })?;
    }
    Ok(())
}

/// Whether a launch on this thread now is inside the range (always, when not
/// filtering).
pub fn admits() -> bool {
    if NAME.get().is_none() {
        return true;
    }
    OPEN_STARTED.load(Ordering::Acquire) > 0
        // A thread being torn down has no open push range we could still see.
        || STACK
            .try_with(|s| s.borrow().contains(&true))
            .unwrap_or(false)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn matches_c(p: *const c_char) -> bool {
    let Some(name) = NAME.get() else { return false };
    // SAFETY: NVTX's ASCII message: null or a C string valid during the callback.
    !p.is_null() && unsafe { CStr::from_ptr(p) }.to_bytes() == name.as_bytes()
}

fn matches_w(p: *const wchar_t) -> bool {
    let Some(name) = NAME.get() else { return false };
    if p.is_null() {
        return false;
    }
    let mut chars = name.chars();
    for i in 0.. {
        // SAFETY: a NUL-terminated wide string valid during the callback; reading
        // stops at its NUL.
        let w = unsafe { *p.add(i) };
        match (w, chars.next()) {
            (0, None) => return true,
            (0, Some(_)) | (_, None) => return false,
            (w, Some(c)) if w as u32 == c as u32 => {}
            _ => return false,
        }
    }
    false
}

fn matches_attributes(a: *const nvtxEventAttributes_t) -> bool {
    use cupti_sys::nvtxMessageType_t as m;
    if a.is_null() {
        return false;
    }
    // SAFETY: the caller's event attributes, valid during the callback.
    let a = unsafe { &*a };
    match a.messageType as u32 {
        m::NVTX_MESSAGE_TYPE_ASCII => {
            // SAFETY: `messageType` says the ASCII member is set.
            matches_c(unsafe { a.message.ascii })
        }
        m::NVTX_MESSAGE_TYPE_UNICODE => {
            // SAFETY: `messageType` says the wide member is set.
            matches_w(unsafe { a.message.unicode })
        }
        m::NVTX_MESSAGE_TYPE_REGISTERED => {
            // SAFETY: `messageType` says the registered-handle member is set.
            let h = unsafe { a.message.registered } as usize;
            lock(&REGISTERED)
                .as_ref()
                .and_then(|r| r.get(&h).copied())
                .unwrap_or(false)
        }
        _ => false,
    }
}

/// Reads the params struct `T` of a callback.
///
/// # Safety
/// `d.functionParams` is the `T` CUPTI passes for this callback id.
unsafe fn params<T>(d: &CUpti_NvtxData) -> Option<&T> {
    let p = d.functionParams as *const T;
    // SAFETY: the caller's contract; valid during the callback.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `functionReturnValue` as a `T`.
///
/// # Safety
/// It points at the function's return value, of type `T`.
unsafe fn returned<T: Copy>(d: &CUpti_NvtxData) -> Option<T> {
    let p = d.functionReturnValue as *const T;
    // SAFETY: the caller's contract; valid during the callback.
    (!p.is_null()).then(|| unsafe { *p })
}

/// What an NVTX call does to the filter.
enum Event {
    Push(bool),
    Pop,
    Start(bool, Option<u64>),
    End(u64),
    Register(bool, Option<usize>),
    Other,
}

/// Reads callback `cbid`'s parameters and return value.
///
/// # Safety
/// `d` is what CUPTI passed for NVTX callback `cbid`: its `functionParams` is the
/// `generated_nvtx_meta.h` params struct of that callback id and its
/// `functionReturnValue` points at the function's return value (or is null).
unsafe fn event(cbid: u32, d: &CUpti_NvtxData) -> Event {
    use cupti_sys as s;
    // SAFETY: the function's contract: each arm reads the params struct and return
    // value type of its own callback id.
    unsafe {
        match cbid {
            cb::CUPTI_CBID_NVTX_nvtxRangePushA => Event::Push(
                params::<s::nvtxRangePushA_params>(d).is_some_and(|p| matches_c(p.message)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePushW => Event::Push(
                params::<s::nvtxRangePushW_params>(d).is_some_and(|p| matches_w(p.message)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePushEx => Event::Push(
                params::<s::nvtxRangePushEx_params>(d)
                    .is_some_and(|p| matches_attributes(p.eventAttrib)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxDomainRangePushEx => Event::Push(
                params::<s::nvtxDomainRangePushEx_params>(d)
                    .is_some_and(|p| matches_attributes(p.core.eventAttrib)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePop | cb::CUPTI_CBID_NVTX_nvtxDomainRangePop => Event::Pop,
            cb::CUPTI_CBID_NVTX_nvtxRangeStartA => Event::Start(
                params::<s::nvtxRangeStartA_params>(d).is_some_and(|p| matches_c(p.message)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangeStartW => Event::Start(
                params::<s::nvtxRangeStartW_params>(d).is_some_and(|p| matches_w(p.message)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangeStartEx => Event::Start(
                params::<s::nvtxRangeStartEx_params>(d)
                    .is_some_and(|p| matches_attributes(p.eventAttrib)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => Event::Start(
                params::<s::nvtxDomainRangeStartEx_params>(d)
                    .is_some_and(|p| matches_attributes(p.core.eventAttrib)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangeEnd => match params::<s::nvtxRangeEnd_params>(d) {
                Some(p) => Event::End(p.id),
                None => Event::Other,
            },
            cb::CUPTI_CBID_NVTX_nvtxDomainRangeEnd => {
                match params::<s::nvtxDomainRangeEnd_params>(d) {
                    Some(p) => Event::End(p.core.id),
                    None => Event::Other,
                }
            }
            cb::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA => Event::Register(
                params::<s::nvtxDomainRegisterStringA_params>(d)
                    .is_some_and(|p| matches_c(p.string)),
                returned::<usize>(d),
            ),
            // The header declares the wide string as `const char*`; it is the caller's
            // `const wchar_t*`.
            cb::CUPTI_CBID_NVTX_nvtxDomainRegisterStringW => Event::Register(
                params::<s::nvtxDomainRegisterStringW_params>(d)
                    .is_some_and(|p| matches_w(p.string.cast())),
                returned::<usize>(d),
            ),
            _ => Event::Other,
        }
    }
}

/// An NVTX callback (`CUPTI_CB_DOMAIN_NVTX`).
pub fn on_nvtx(cbid: u32, d: &CUpti_NvtxData) {
    if NAME.get().is_none() {
        return;
    }
    // SAFETY: CUPTI passed `d` for NVTX callback `cbid`.
    match unsafe { event(cbid, d) } {
        Event::Push(m) => {
            let _ = STACK.try_with(|s| s.borrow_mut().push(m));
        }
        Event::Pop => {
            let _ = STACK.try_with(|s| s.borrow_mut().pop());
        }
        Event::Start(m, id) => started(m, id),
        Event::End(id) => ended(id),
        Event::Register(m, h) => registered(m, h),
        Event::Other => {}
    }
}

fn started(matches: bool, id: Option<u64>) {
    let Some(id) = id.filter(|_| matches) else {
        return;
    };
    if lock(&STARTED).get_or_insert_with(HashSet::new).insert(id) {
        OPEN_STARTED.fetch_add(1, Ordering::AcqRel);
    }
}

fn ended(id: u64) {
    if lock(&STARTED).as_mut().is_some_and(|s| s.remove(&id)) {
        OPEN_STARTED.fetch_sub(1, Ordering::AcqRel);
    }
}

fn registered(matches: bool, handle: Option<usize>) {
    if let Some(h) = handle.filter(|&h| h != 0) {
        lock(&REGISTERED)
            .get_or_insert_with(HashMap::new)
            .insert(h, matches);
    }
}
