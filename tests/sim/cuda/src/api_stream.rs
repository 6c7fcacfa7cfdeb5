//! Streams: creation, destruction, synchronisation, queries and event waits.

use std::ffi::{c_int, c_uint};

use cupti_sys::CUpti_CallbackIdResource::*;

use crate::clock;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::registry::{self, Stream};
use crate::trace::resource;

/// Stream priorities of the simulated device: `[GREATEST, LEAST]` = `[-5, 0]` (H100).
const GREATEST_PRIORITY: c_int = -5;
const LEAST_PRIORITY: c_int = 0;

/// # Safety
/// `ph` is NULL or writable.
unsafe fn create(ph: *mut CUstream, flags: c_uint, priority: c_int) -> Result<(), CUresult> {
    // Priorities (clamped to [GREATEST, LEAST] as documented) do not change the
    // simulated schedule: the device runs one operation at a time.
    let _ = priority.clamp(GREATEST_PRIORITY, LEAST_PRIORITY);
    if ph.is_null() || flags & !CU_STREAM_NON_BLOCKING != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (ctx, h) = {
        let mut d = registry::lock();
        let ctx = d.current()?;
        let h = d.new_handle();
        let id = d.new_stream_id();
        d.streams.insert(
            h,
            Stream {
                id,
                ctx,
                flags,
                ready_ns: 0,
                capture: None,
                blocked: None,
            },
        );
        (ctx, h)
    };
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out(ph, h as CUstream)? };
    resource(
        CUPTI_CBID_RESOURCE_STREAM_CREATED,
        ctx,
        h,
        std::ptr::null_mut(),
    );
    Ok(())
}

/// `CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)`.
///
/// # Safety
/// `ph_stream` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(ph_stream: *mut CUstream, flags: c_uint) -> CUresult {
    let p = cupti_sys::cuStreamCreate_params {
        phStream: ph_stream,
        Flags: flags,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamCreate,
        c"cuStreamCreate",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { create(ph_stream, flags, 0) })
    )
}

/// `CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int
/// priority)`: the priority is clamped to the device's range, as documented.
///
/// # Safety
/// `ph_stream` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    let p = cupti_sys::cuStreamCreateWithPriority_params {
        phStream: ph_stream,
        flags,
        priority,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority,
        c"cuStreamCreateWithPriority",
        p,
        // SAFETY: the caller's pointer is NULL or writable.
        code(unsafe { create(ph_stream, flags, priority) })
    )
}

/// `CUresult cuStreamDestroy_v2(CUstream hStream)`: queued work still completes.
#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuStreamDestroy_v2_params { hStream: h_stream };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2,
        c"cuStreamDestroy_v2",
        p,
        {
            let h = h_stream as usize;
            let ctx = {
                let d = registry::lock();
                match d.streams.get(&h) {
                    Some(s) if !d.is_null_stream(h) => s.ctx,
                    _ => return CUDA_ERROR_INVALID_HANDLE,
                }
            };
            resource(
                CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING,
                ctx,
                h,
                std::ptr::null_mut(),
            );
            registry::lock().streams.remove(&h);
            CUDA_SUCCESS
        }
    )
}

/// The stream for `h` and when its work ends; a capturing stream is
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and its capture is invalidated, as
/// documented for synchronising calls during capture.
fn ready(h: CUstream) -> Result<u64, CUresult> {
    let mut d = registry::lock();
    let s = d.stream(h)?;
    if let Some(c) = d.streams.get_mut(&s).and_then(|s| s.capture.as_mut()) {
        c.invalidated = true;
        return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(d.stream_ready(s))
}

/// `CUresult cuStreamSynchronize(CUstream hStream)`: waits in real time until the
/// stream's work ends.
#[no_mangle]
pub extern "C" fn cuStreamSynchronize(h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuStreamSynchronize_params { hStream: h_stream };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        c"cuStreamSynchronize",
        p,
        {
            match ready(h_stream) {
                Ok(_) => {
                    // Validated above; the handle stays valid while the client waits.
                    clock::wait_for(|| {
                        let d = registry::lock();
                        d.stream(h_stream).map_or(0, |s| d.stream_ready(s))
                    });
                    CUDA_SUCCESS
                }
                Err(e) => e,
            }
        }
    )
}

/// `CUresult cuStreamQuery(CUstream hStream)`: `CUDA_ERROR_NOT_READY` while work is
/// pending.
#[no_mangle]
pub extern "C" fn cuStreamQuery(h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuStreamQuery_params { hStream: h_stream };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
        c"cuStreamQuery",
        p,
        {
            match ready(h_stream) {
                Ok(t) if t > clock::now_ns() => CUDA_ERROR_NOT_READY,
                Ok(_) => CUDA_SUCCESS,
                Err(e) => e,
            }
        }
    )
}

/// `CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)`:
/// later work on the stream starts after the event's last record. Waiting on an event
/// in a capturing stream is not simulated (`CUDA_ERROR_NOT_SUPPORTED`).
#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(
    h_stream: CUstream,
    h_event: CUevent,
    flags: c_uint,
) -> CUresult {
    let p = cupti_sys::cuStreamWaitEvent_params {
        hStream: h_stream,
        hEvent: h_event,
        Flags: flags,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
        c"cuStreamWaitEvent",
        p,
        code((|| {
            if flags & !CU_EVENT_WAIT_EXTERNAL != 0 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let mut d = registry::lock();
            let s = d.stream(h_stream)?;
            let e = d
                .events
                .get(&(h_event as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            let t = e.recorded_ns.unwrap_or(0);
            let st = d.streams.get_mut(&s).expect("checked");
            if st.capture.is_some() {
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
            st.ready_ns = st.ready_ns.max(t);
            Ok(())
        })())
    )
}

/// `CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)`.
///
/// # Safety
/// `stream_id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetId(h_stream: CUstream, stream_id: *mut u64) -> CUresult {
    let p = cupti_sys::cuStreamGetId_params {
        hStream: h_stream,
        streamId: stream_id,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamGetId,
        c"cuStreamGetId",
        p,
        code((|| {
            let d = registry::lock();
            let s = d.stream(h_stream)?;
            // SAFETY: the caller's pointer is NULL or writable.
            unsafe { out(stream_id, d.streams[&s].id) }
        })())
    )
}

/// # Safety
/// `pctx` is NULL or writable.
unsafe fn get_ctx(h_stream: CUstream, pctx: *mut CUcontext) -> Result<(), CUresult> {
    let d = registry::lock();
    let s = d.stream(h_stream)?;
    // SAFETY: per this function's contract.
    unsafe { out(pctx, d.streams[&s].ctx as CUcontext) }
}

/// `CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)`.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx(h_stream: CUstream, pctx: *mut CUcontext) -> CUresult {
    let p = cupti_sys::cuStreamGetCtx_params {
        hStream: h_stream,
        pctx,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx,
        c"cuStreamGetCtx",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { get_ctx(h_stream, pctx) })
    )
}

/// `CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx
/// *pGreenCtx)`: the sim has no green contexts, so `*pGreenCtx` is NULL.
///
/// # Safety
/// `pctx` and `pgreen` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx_v2(
    h_stream: CUstream,
    pctx: *mut CUcontext,
    pgreen: *mut cupti_sys::CUgreenCtx,
) -> CUresult {
    let p = cupti_sys::cuStreamGetCtx_v2_params {
        hStream: h_stream,
        pCtx: pctx,
        pGreenCtx: pgreen,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_v2,
        c"cuStreamGetCtx_v2",
        p,
        code((|| {
            if pgreen.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: the caller's pointers are NULL or writable.
            unsafe {
                get_ctx(h_stream, pctx)?;
                out(pgreen, std::ptr::null_mut())
            }
        })())
    )
}
