//! NVTX ranges followed live through CUPTI's NVTX callbacks (`CUPTI_CB_DOMAIN_NVTX`,
//! which CUPTI fires once NVTX is routed to it), for the settings that act only
//! inside a range named NAME ([`Watch`]): `GPUPROF_COUNTER_RANGE` (counters) and
//! `GPUPROF_CAPTURE_RANGE=nvtx:NAME` (the capture window, `capture.rs`).
//!
//! - push / pop ranges (`nvtxRangePush*`, `nvtxDomainRangePush*`) are per thread: a
//!   launch is inside when its thread has an open matching push range;
//! - start / end ranges (`nvtxRangeStart*`, `nvtxDomainRangeStart*`) are process-wide:
//!   a launch on any thread is inside while a matching one is open.
//!
//! Messages given as ASCII, wide strings or registered strings
//! (`nvtxDomainRegisterString*`) are matched; the domain is not. Each range remembers
//! which watched names it matches as a bit mask, so one push is one byte whatever is
//! watched.

use core::ffi::{c_char, CStr};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use cupti::Cupti;
use cupti_sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
use cupti_sys::CUpti_nvtx_api_trace_cbid as cb;
use cupti_sys::{nvtxEventAttributes_t, wchar_t, CUpti_NvtxData};

use cupti::callback::{self, Subscriber};

/// What a range name is watched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// `GPUPROF_COUNTER_RANGE`: counters only inside.
    Counters = 0,
    /// `GPUPROF_CAPTURE_RANGE=nvtx:NAME`: records only inside.
    Capture = 1,
}

const WATCHES: [Watch; 2] = [Watch::Counters, Watch::Capture];

impl Watch {
    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The range name of each watch, when set.
static NAMES: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
/// Open matching start / end ranges, process-wide, per watch.
static OPEN_STARTED: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
/// Open start / end ranges that match a watch: id -> mask.
static STARTED: Mutex<Option<HashMap<u64, u8>>> = Mutex::new(None);
/// Registered strings that match a watch (handle addresses -> mask); others are not
/// kept.
static REGISTERED: Mutex<Option<HashMap<usize, u8>>> = Mutex::new(None);
/// Called when a matching range of [`Watch::Capture`] opens (the capture window
/// counts it if its time window is open).
static ON_CAPTURE_OPENED: OnceLock<fn()> = OnceLock::new();

thread_local! {
    /// This thread's open push ranges: the watches each matches.
    static STACK: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The NVTX callbacks followed.
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

/// Sets the range name of `watch` (once).
pub fn configure(watch: Watch, name: Option<&str>) {
    if let Some(n) = name {
        let _ = NAMES[watch as usize].set(n.to_string());
    }
}

/// The range name of `watch`, when set.
pub fn name(watch: Watch) -> Option<&'static str> {
    NAMES[watch as usize].get().map(String::as_str)
}

/// Calls `f` each time a range matching [`Watch::Capture`] opens.
pub fn on_capture_opened(f: fn()) {
    let _ = ON_CAPTURE_OPENED.set(f);
}

fn watching() -> bool {
    NAMES.iter().any(|n| n.get().is_some())
}

/// Subscribes to the NVTX callbacks when a name is watched.
pub fn enable(c: &Cupti, s: &Subscriber) -> Result<(), String> {
    if !watching() {
        return Ok(());
    }
    for &id in CBIDS {
        callback::enable_callback(c, s, CUPTI_CB_DOMAIN_NVTX, id)
            .map_err(|e| format!("cannot follow NVTX ranges (callback {id}: {e})"))?;
    }
    Ok(())
}

/// Whether a launch on this thread now is inside a range of `watch` (always, when
/// `watch` has no name).
pub fn admits(watch: Watch) -> bool {
    if NAMES[watch as usize].get().is_none() {
        return true;
    }
    OPEN_STARTED[watch as usize].load(Ordering::Acquire) > 0
        // A thread being torn down has no open push range we could still see.
        || STACK
            .try_with(|s| s.borrow().iter().any(|m| m & watch.bit() != 0))
            .unwrap_or(false)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The watches whose name equals `bytes`.
fn mask_of(equal: impl Fn(&str) -> bool) -> u8 {
    WATCHES
        .iter()
        .filter(|w| NAMES[**w as usize].get().is_some_and(|n| equal(n)))
        .fold(0, |m, w| m | w.bit())
}

fn matches_c(p: *const c_char) -> u8 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: NVTX's ASCII message: null or a C string valid during the callback.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    mask_of(|n| n.as_bytes() == bytes)
}

/// Whether the NUL-terminated wide string `p` (not null) equals `name`.
fn wide_equals(p: *const wchar_t, name: &str) -> bool {
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

fn matches_w(p: *const wchar_t) -> u8 {
    if p.is_null() {
        return 0;
    }
    mask_of(|n| wide_equals(p, n))
}

fn matches_attributes(a: *const nvtxEventAttributes_t) -> u8 {
    use cupti_sys::nvtxMessageType_t as m;
    if a.is_null() {
        return 0;
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
                .unwrap_or(0)
        }
        _ => 0,
    }
}

/// Reads the params struct `T` of a callback.
///
/// # Safety
/// `d.functionParams` is the `T` CUPTI passes for this callback id.
pub(crate) unsafe fn params<T>(d: &CUpti_NvtxData) -> Option<&T> {
    let p = d.functionParams as *const T;
    // SAFETY: the caller's contract; valid during the callback.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `functionReturnValue` as a `T`.
///
/// # Safety
/// It points at the function's return value, of type `T`.
pub(crate) unsafe fn returned<T: Copy>(d: &CUpti_NvtxData) -> Option<T> {
    let p = d.functionReturnValue as *const T;
    // SAFETY: the caller's contract; valid during the callback.
    (!p.is_null()).then(|| unsafe { *p })
}

/// What an NVTX call does to the filter.
/// Masks are the watches a range or string matches.
enum Event {
    Push(u8),
    Pop,
    Start(u8, Option<u64>),
    End(u64),
    Register(u8, Option<usize>),
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
                params::<s::nvtxRangePushA_params>(d).map_or(0, |p| matches_c(p.message)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePushW => Event::Push(
                params::<s::nvtxRangePushW_params>(d).map_or(0, |p| matches_w(p.message)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePushEx => Event::Push(
                params::<s::nvtxRangePushEx_params>(d)
                    .map_or(0, |p| matches_attributes(p.eventAttrib)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxDomainRangePushEx => Event::Push(
                params::<s::nvtxDomainRangePushEx_params>(d)
                    .map_or(0, |p| matches_attributes(p.core.eventAttrib)),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangePop | cb::CUPTI_CBID_NVTX_nvtxDomainRangePop => Event::Pop,
            cb::CUPTI_CBID_NVTX_nvtxRangeStartA => Event::Start(
                params::<s::nvtxRangeStartA_params>(d).map_or(0, |p| matches_c(p.message)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangeStartW => Event::Start(
                params::<s::nvtxRangeStartW_params>(d).map_or(0, |p| matches_w(p.message)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxRangeStartEx => Event::Start(
                params::<s::nvtxRangeStartEx_params>(d)
                    .map_or(0, |p| matches_attributes(p.eventAttrib)),
                returned::<u64>(d),
            ),
            cb::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => Event::Start(
                params::<s::nvtxDomainRangeStartEx_params>(d)
                    .map_or(0, |p| matches_attributes(p.core.eventAttrib)),
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
                params::<s::nvtxDomainRegisterStringA_params>(d).map_or(0, |p| matches_c(p.string)),
                returned::<usize>(d),
            ),
            // The header declares the wide string as `const char*`; it is the caller's
            // `const wchar_t*`.
            cb::CUPTI_CBID_NVTX_nvtxDomainRegisterStringW => Event::Register(
                params::<s::nvtxDomainRegisterStringW_params>(d)
                    .map_or(0, |p| matches_w(p.string.cast())),
                returned::<usize>(d),
            ),
            _ => Event::Other,
        }
    }
}

/// An NVTX callback (`CUPTI_CB_DOMAIN_NVTX`).
pub fn on_nvtx(cbid: u32, d: &CUpti_NvtxData) {
    if !watching() {
        return;
    }
    // SAFETY: CUPTI passed `d` for NVTX callback `cbid`.
    match unsafe { event(cbid, d) } {
        Event::Push(m) => {
            let _ = STACK.try_with(|s| s.borrow_mut().push(m));
            opened_now(m);
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

/// A range that matches `mask` opened.
fn opened_now(mask: u8) {
    if mask & Watch::Capture.bit() != 0 {
        if let Some(f) = ON_CAPTURE_OPENED.get() {
            f();
        }
    }
}

fn started(mask: u8, id: Option<u64>) {
    let Some(id) = id.filter(|_| mask != 0) else {
        return;
    };
    if lock(&STARTED)
        .get_or_insert_with(HashMap::new)
        .insert(id, mask)
        .is_none()
    {
        for w in WATCHES {
            if mask & w.bit() != 0 {
                OPEN_STARTED[w as usize].fetch_add(1, Ordering::AcqRel);
            }
        }
        opened_now(mask);
    }
}

fn ended(id: u64) {
    let Some(mask) = lock(&STARTED).as_mut().and_then(|s| s.remove(&id)) else {
        return;
    };
    for w in WATCHES {
        if mask & w.bit() != 0 {
            OPEN_STARTED[w as usize].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn registered(mask: u8, handle: Option<usize>) {
    if let Some(h) = handle.filter(|&h| h != 0) {
        lock(&REGISTERED)
            .get_or_insert_with(HashMap::new)
            .insert(h, mask);
    }
}
