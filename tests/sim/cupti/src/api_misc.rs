//! Exports: version, results, timestamps, ids, thread id type, finalize.

use std::ffi::c_char;
use std::sync::atomic::Ordering;

use cupti_sys::CUptiResult::*;
use cupti_sys::{CUcontext, CUgraph, CUgraphNode, CUptiResult, CUpti_SubscriberHandle, CUstream};

use crate::ffi::{guard, take_last_error, write_out};
use crate::{activity, driver, release, subscribers};

type R = CUptiResult::Type;

/// `CUptiResult cuptiGetVersion(uint32_t *version)`: the impersonated release's
/// `CUPTI_API_VERSION`.
///
/// # Safety
/// `version` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetVersion(version: *mut u32) -> R {
    // SAFETY: the caller's pointer is null or writable.
    guard(|| unsafe { write_out(version, release::current().release.api_version) })
}

/// `CUptiResult cuptiGetResultString(CUptiResult result, const char **str)`: the
/// enumerator's name.
///
/// # Safety
/// `str` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetResultString(result: R, str: *mut *const c_char) -> R {
    guard(|| match crate::results::name(result) {
        // SAFETY: the caller's pointer is null or writable.
        Some(n) => unsafe { write_out(str, n.as_ptr() as *const c_char) },
        None => CUPTI_ERROR_INVALID_PARAMETER,
    })
}

/// `CUptiResult cuptiGetLastError(void)`: the last error of a CUPTI call on this
/// thread, then reset.
#[no_mangle]
pub extern "C" fn cuptiGetLastError() -> R {
    take_last_error()
}

/// `CUptiResult cuptiGetTimestamp(uint64_t *timestamp)`: the driver's GPU clock
/// (CUPTI's timebase, the one records use), or `CLOCK_REALTIME` before a driver is
/// loaded.
///
/// # Safety
/// `timestamp` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetTimestamp(timestamp: *mut u64) -> R {
    guard(|| {
        let now = match driver::get_if_loaded() {
            // SAFETY: the table's functions live as long as the process.
            Some(d) => unsafe { (d.table.now_ns)() },
            None => driver::realtime_ns(),
        };
        // SAFETY: the caller's pointer is null or writable.
        unsafe { write_out(timestamp, now) }
    })
}

/// `cuptiGetTimestamp_v2(CUpti_SubscriberHandle, uint64_t *)` (13.3 headers on).
///
/// # Safety
/// As [`cuptiGetTimestamp`].
#[no_mangle]
pub unsafe extern "C" fn cuptiGetTimestamp_v2(
    subscriber: CUpti_SubscriberHandle,
    timestamp: *mut u64,
) -> R {
    if !release::current().has_activity_v2_more() {
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    if !subscriber.is_null() && !subscribers::exists(subscriber) {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    // SAFETY: forwarded.
    unsafe { cuptiGetTimestamp(timestamp) }
}

/// The context, or the calling thread's current one for null.
fn context_or_current(d: &driver::Driver, ctx: CUcontext) -> CUcontext {
    if ctx.is_null() {
        d.current_context()
    } else {
        ctx
    }
}

/// `CUptiResult cuptiGetContextId(CUcontext context, uint32_t *contextId)`.
///
/// # Safety
/// `context_id` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetContextId(context: CUcontext, context_id: *mut u32) -> R {
    guard(|| {
        let Some(d) = driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        if context_id.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: table function.
        let id = unsafe { (d.table.context_id)(context) };
        if context.is_null() || id == 0 {
            return CUPTI_ERROR_INVALID_CONTEXT;
        }
        // SAFETY: non-null, writable per the caller.
        unsafe { write_out(context_id, id) }
    })
}

/// `CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)`; null means
/// the current context.
///
/// # Safety
/// `device_id` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetDeviceId(context: CUcontext, device_id: *mut u32) -> R {
    guard(|| {
        let Some(d) = driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        if device_id.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let ctx = context_or_current(d, context);
        // SAFETY: table function.
        let dev = unsafe { (d.table.context_device)(ctx) };
        if ctx.is_null() || dev < 0 {
            return CUPTI_ERROR_INVALID_DEVICE;
        }
        // SAFETY: non-null, writable per the caller.
        unsafe { write_out(device_id, dev as u32) }
    })
}

/// `cuptiGetStreamIdEx(CUcontext, CUstream, uint8_t perThreadStream, uint32_t *)`.
/// The sim has no per-thread default stream distinct from the NULL stream.
///
/// # Safety
/// `stream_id` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetStreamIdEx(
    context: CUcontext,
    stream: CUstream,
    _per_thread_stream: u8,
    stream_id: *mut u32,
) -> R {
    guard(|| {
        let Some(d) = driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        if stream_id.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let ctx = context_or_current(d, context);
        // SAFETY: table function.
        let id = unsafe { (d.table.stream_id)(ctx, stream) };
        if id == 0 {
            return CUPTI_ERROR_INVALID_STREAM;
        }
        // SAFETY: non-null, writable per the caller.
        unsafe { write_out(stream_id, id as u32) }
    })
}

/// `cuptiGetStreamId(CUcontext, CUstream, uint32_t *)`.
///
/// # Safety
/// As [`cuptiGetStreamIdEx`].
#[no_mangle]
pub unsafe extern "C" fn cuptiGetStreamId(
    context: CUcontext,
    stream: CUstream,
    stream_id: *mut u32,
) -> R {
    // SAFETY: forwarded.
    unsafe { cuptiGetStreamIdEx(context, stream, 0, stream_id) }
}

/// `CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t *pId)`.
///
/// # Safety
/// `id` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetGraphId(graph: CUgraph, id: *mut u32) -> R {
    guard(|| {
        let Some(d) = driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        // SAFETY: table function.
        let v = unsafe { (d.table.graph_id)(graph) };
        if v == 0 {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: null or writable per the caller.
        unsafe { write_out(id, v) }
    })
}

/// `CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId)`.
///
/// # Safety
/// `id` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetGraphNodeId(node: CUgraphNode, id: *mut u64) -> R {
    guard(|| {
        let Some(d) = driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        // SAFETY: table function.
        let v = unsafe { (d.table.graph_node_id)(node) };
        if v == 0 {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: null or writable per the caller.
        unsafe { write_out(id, v) }
    })
}

/// Whether the 13.3+ rule refuses `cuptiSetThreadIdType` / `cuptiGetThreadIdType`:
/// "This API is not supported when multiple subscribers are allowed. Use the
/// corresponding attribute instead: CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE"
/// (cupti_activity.h 13.3; 13.2's header does not say it). Multiple subscribers are
/// allowed once a subscriber was created with `allowMultipleSubscribers = 1`, until
/// the last one unsubscribes.
fn thread_id_type_call_refused() -> bool {
    crate::release::current().at_least(13, 3) && subscribers::multiple_state() == 1
}

/// `cuptiSetThreadIdType(CUpti_ActivityThreadIdType)`: 0 pthread_self, 1 gettid.
/// Refused on 13.3+ under multiple subscribers ([`thread_id_type_call_refused`]) with
/// `CUPTI_ERROR_NOT_SUPPORTED`, the header's code for this call ("if type is not
/// supported on the platform"; strict, the real answer needs a GPU to ask).
#[no_mangle]
pub extern "C" fn cuptiSetThreadIdType(kind: u32) -> R {
    guard(|| {
        if thread_id_type_call_refused() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        if kind > 1 {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        activity::THREAD_ID_TYPE.store(kind, Ordering::Relaxed);
        CUPTI_SUCCESS
    })
}

/// `cuptiGetThreadIdType(CUpti_ActivityThreadIdType *)`: the process-wide type.
/// Refused like [`cuptiSetThreadIdType`] on 13.3+ under multiple subscribers, with
/// `CUPTI_ERROR_NOT_SUPPORTED` (the header lists only `CUPTI_ERROR_INVALID_PARAMETER`
/// for this call; the code is a strict guess).
///
/// # Safety
/// `kind` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetThreadIdType(kind: *mut u32) -> R {
    guard(|| {
        if thread_id_type_call_refused() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        // SAFETY: null or writable per the caller.
        unsafe { write_out(kind, activity::THREAD_ID_TYPE.load(Ordering::Relaxed)) }
    })
}

/// `CUptiResult cuptiFinalize(void)`: "Explicitly destroys and cleans up all resources
/// associated with CUPTI in the current process." Buffers are flushed (forced) to the
/// clients first, then every subscriber, activity client and the driver tracer are
/// removed. The worker thread stays (idle).
#[no_mangle]
pub extern "C" fn cuptiFinalize() -> R {
    guard(|| {
        activity::flush_all(true);
        activity::reset();
        subscribers::reset();
        driver::detach();
        CUPTI_SUCCESS
    })
}
