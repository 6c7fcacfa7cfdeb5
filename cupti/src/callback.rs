//! CUPTI's callback API (`cupti_callbacks.h`) and the small queries callbacks make,
//! as safe wrappers returning `Result<_, CuptiError>`. With [`crate::activity`],
//! [`crate::profiler`] and [`crate::pm_sampling`] this is the only caller of the raw
//! function table; every `unsafe` block is one FFI call.
//!
//! Which variant of a call is used follows NVIDIA's headers, by the version the
//! library answered: `cuptiSubscribe_v2` from 13.0 (`allowMultipleSubscribers` in
//! `CUpti_SubscriberParams` from 13.2). A release's library lacks the newer symbols,
//! so the table entry is `None` there; both must agree before a call is made.
//!
//! Reference: <https://docs.nvidia.com/cupti/api/group__CUPTI__CALLBACK__API.html>.

use core::ffi::{c_char, CStr};

use cupti_sys::CUptiResult::CUPTI_ERROR_NOT_SUPPORTED;
use cupti_sys::{CUcontext, CUpti_CallbackFunc, CUpti_SubscriberHandle, CUpti_SubscriberParams};

use crate::error::CuptiError;
use crate::library::Cupti;
use crate::version::ApiVersion;

type Result<T> = std::result::Result<T, CuptiError>;

pub(crate) const NOT_SUPPORTED: CuptiError = CuptiError(CUPTI_ERROR_NOT_SUPPORTED);

/// `CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN`.
const OLD_NAME_LEN: usize = 64;
/// `CUpti_SubscriberParams_STRUCT_SIZE` of the 13.0 and 13.1 headers, whose struct
/// ends at `oldSubscriberSize` (no `allowMultipleSubscribers`).
const SUBSCRIBER_PARAMS_SIZE_13_0: usize = 32;

/// A subscriber handle. CUPTI's handles are opaque tokens valid from any thread.
#[derive(Debug, Clone, Copy)]
pub struct Subscriber {
    pub(crate) handle: CUpti_SubscriberHandle,
    /// Subscribed with `allowMultipleSubscribers`: use the per-subscriber activity calls.
    pub multiple: bool,
}

// SAFETY: the handle is an opaque token CUPTI accepts from any thread; we never
// dereference it.
unsafe impl Send for Subscriber {}
// SAFETY: as for Send; the handle is never mutated after subscribing.
unsafe impl Sync for Subscriber {}

/// Why subscribing failed.
#[derive(Debug, Clone)]
pub struct SubscribeError {
    pub code: CuptiError,
    /// The subscriber that holds CUPTI, when CUPTI said (`oldSubscriberName`).
    pub holder: Option<String>,
}

pub(crate) fn at_least(c: &Cupti, v: u32) -> bool {
    // CUDA 12 API numbers (22..28) are all below the 13.x `MMmmpp` numbers.
    c.api_version().0 >= v
}

/// The `structSize` of `CUpti_SubscriberParams` passed to a library answering
/// `api`: 13.0 and 13.1 end at `oldSubscriberSize`, 13.2 adds
/// `allowMultipleSubscribers` (which gpuprof sets there).
pub fn subscriber_params_size(api: ApiVersion) -> usize {
    if api.0 >= 130200 {
        core::mem::size_of::<CUpti_SubscriberParams>()
    } else {
        SUBSCRIBER_PARAMS_SIZE_13_0
    }
}

/// `cuptiSubscribe_v2` where the release has it (asking for multiple subscribers from
/// 13.2), else `cuptiSubscribe`.
pub fn subscribe(
    c: &Cupti,
    callback: CUpti_CallbackFunc,
    name: &CStr,
) -> std::result::Result<Subscriber, SubscribeError> {
    let fns = c.fns();
    let mut handle: CUpti_SubscriberHandle = core::ptr::null_mut();
    match fns.cuptiSubscribe_v2.filter(|_| at_least(c, 130000)) {
        Some(subscribe_v2) => {
            let multiple = at_least(c, 130200);
            let mut old = [0 as c_char; OLD_NAME_LEN];
            let params = CUpti_SubscriberParams {
                structSize: subscriber_params_size(c.api_version()),
                subscriberName: name.as_ptr(),
                oldSubscriberName: old.as_mut_ptr(),
                oldSubscriberSize: OLD_NAME_LEN,
                allowMultipleSubscribers: u8::from(multiple),
                padding: [0; 7],
            };
            let mut params = params;
            // SAFETY: `handle` and `params` are valid for the call; CUPTI reads
            // `structSize` bytes of params (never more than the struct we pass) and
            // writes at most `oldSubscriberSize` bytes to `old`. The callback is an
            // `extern "C"` function that lives as long as the library.
            let rc =
                unsafe { subscribe_v2(&mut handle, callback, core::ptr::null_mut(), &mut params) };
            CuptiError::check(rc).map_err(|code| {
                old[OLD_NAME_LEN - 1] = 0;
                // SAFETY: `old` is NUL-terminated (the last byte was just zeroed).
                let holder = unsafe { CStr::from_ptr(old.as_ptr()) }
                    .to_string_lossy()
                    .into_owned();
                SubscribeError {
                    code,
                    holder: Some(holder).filter(|h| !h.is_empty()),
                }
            })?;
            Ok(Subscriber { handle, multiple })
        }
        None => {
            let f = fns.cuptiSubscribe.ok_or(SubscribeError {
                code: NOT_SUPPORTED,
                holder: None,
            })?;
            // SAFETY: as above, without params.
            let rc = unsafe { f(&mut handle, callback, core::ptr::null_mut()) };
            CuptiError::check(rc).map_err(|code| SubscribeError { code, holder: None })?;
            Ok(Subscriber {
                handle,
                multiple: false,
            })
        }
    }
}

/// `cuptiUnsubscribe`.
pub fn unsubscribe(c: &Cupti, s: &Subscriber) -> Result<()> {
    let f = c.fns().cuptiUnsubscribe.ok_or(NOT_SUPPORTED)?;
    // SAFETY: the handle came from a successful subscribe.
    CuptiError::check(unsafe { f(s.handle) })
}

/// `cuptiEnableCallback(1, subscriber, domain, cbid)`.
pub fn enable_callback(c: &Cupti, s: &Subscriber, domain: u32, cbid: u32) -> Result<()> {
    let f = c.fns().cuptiEnableCallback.ok_or(NOT_SUPPORTED)?;
    // SAFETY: plain values; the handle came from a successful subscribe.
    CuptiError::check(unsafe { f(1, s.handle, domain, cbid) })
}

/// `cuptiEnableDomain(1, subscriber, domain)`: every callback of the domain.
pub fn enable_domain(c: &Cupti, s: &Subscriber, domain: u32) -> Result<()> {
    let f = c.fns().cuptiEnableDomain.ok_or(NOT_SUPPORTED)?;
    // SAFETY: plain values; the handle came from a successful subscribe.
    CuptiError::check(unsafe { f(1, s.handle, domain) })
}

/// Whether the driver call of `d`, at its API-exit callback, returned
/// `CUDA_SUCCESS` (`d` as CUPTI passed it to the callback).
pub fn returned_success(d: &cupti_sys::CUpti_CallbackData) -> bool {
    // SAFETY: at API exit CUPTI points `functionReturnValue` at the call's CUresult,
    // valid during the callback (checked for null).
    !d.functionReturnValue.is_null() && unsafe { *(d.functionReturnValue as *const u32) } == 0
}

/// `cuptiGetTimestamp`, 0 if CUPTI cannot answer.
pub fn timestamp(c: &Cupti) -> u64 {
    let Some(f) = c.fns().cuptiGetTimestamp else {
        return 0;
    };
    let mut t = 0u64;
    // SAFETY: `t` is valid for writing.
    let rc = unsafe { f(&mut t) };
    if rc == 0 {
        t
    } else {
        0
    }
}

/// `cuptiGetContextId` and `cuptiGetDeviceId` of a context.
///
/// # Safety
/// `ctx` is a live context, such as the one CUPTI passed to a resource callback.
pub unsafe fn context_ids(c: &Cupti, ctx: CUcontext) -> Result<(u32, u32)> {
    let fns = c.fns();
    let (fc, fd) = (
        fns.cuptiGetContextId.ok_or(NOT_SUPPORTED)?,
        fns.cuptiGetDeviceId.ok_or(NOT_SUPPORTED)?,
    );
    let (mut context, mut device) = (0u32, 0u32);
    // SAFETY: `ctx` is the context CUPTI passed to the resource callback; the out
    // pointer is valid.
    CuptiError::check(unsafe { fc(ctx, &mut context) })?;
    // SAFETY: as above.
    CuptiError::check(unsafe { fd(ctx, &mut device) })?;
    Ok((context, device))
}

/// `cuptiGetStreamIdEx`: CUPTI's id of stream `stream` of context `ctx` (the NULL
/// stream, or the per-thread default stream when `per_thread`, for a null handle).
///
/// # Safety
/// `ctx` and `stream` are what CUPTI passed to a driver API callback (its context,
/// a stream handle the application passed to the call), during that callback.
pub unsafe fn stream_id(
    c: &Cupti,
    ctx: CUcontext,
    stream: cupti_sys::CUstream,
    per_thread: bool,
) -> Result<u32> {
    let f = c.fns().cuptiGetStreamIdEx.ok_or(NOT_SUPPORTED)?;
    let mut id = 0u32;
    // SAFETY: the caller's contract for the handles; the out pointer is valid.
    CuptiError::check(unsafe { f(ctx, stream, u8::from(per_thread), &mut id) })?;
    Ok(id)
}

/// `cuptiGetGraphNodeId` of a node CUPTI passed to a callback.
///
/// # Safety
/// `node` is a live graph node, such as the one CUPTI passed to a callback.
pub unsafe fn graph_node_id(c: &Cupti, node: cupti_sys::CUgraphNode) -> Result<u64> {
    let f = c.fns().cuptiGetGraphNodeId.ok_or(NOT_SUPPORTED)?;
    let mut id = 0u64;
    // SAFETY: `node` is a node handle CUPTI passed to the callback, valid during it;
    // the out pointer is valid.
    CuptiError::check(unsafe { f(node, &mut id) })?;
    Ok(id)
}

/// A NUL-terminated string CUPTI owns, copied; `None` for null.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for the call.
pub unsafe fn c_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The graph a graph resource callback (`CUPTI_CBID_RESOURCE_GRAPH*`) is about:
/// its `resourceDescriptor`, a `CUpti_GraphData` (every pinned release's
/// `cupti_callbacks.h` has the same fields, `graphExec` last).
///
/// # Safety
/// `r` is the resource data CUPTI passed to a graph resource callback, in which
/// `resourceDescriptor` is null or a `CUpti_GraphData` valid during the callback;
/// the reference must not outlive it.
pub unsafe fn graph_data(r: &cupti_sys::CUpti_ResourceData) -> Option<&cupti_sys::CUpti_GraphData> {
    let p = r.resourceDescriptor as *const cupti_sys::CUpti_GraphData;
    // SAFETY: the caller's contract: null or valid during the callback.
    (!p.is_null()).then(|| unsafe { &*p })
}
