//! Events: record the simulated time a stream reaches them; elapsed time is exact.

use std::ffi::c_uint;

use crate::clock;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::registry::{self, Event};

/// `CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)`.
///
/// # Safety
/// `ph_event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut CUevent, flags: c_uint) -> CUresult {
    let p = cupti_sys::cuEventCreate_params {
        phEvent: ph_event,
        Flags: flags,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventCreate,
        c"cuEventCreate",
        p,
        code((|| {
            let all = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
            let ipc_without_no_timing =
                flags & CU_EVENT_INTERPROCESS != 0 && flags & CU_EVENT_DISABLE_TIMING == 0;
            if ph_event.is_null() || flags & !all != 0 || ipc_without_no_timing {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let mut d = registry::lock();
            let ctx = d.current()?;
            let h = d.new_handle();
            d.events.insert(
                h,
                Event {
                    ctx,
                    flags,
                    recorded_ns: None,
                },
            );
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(ph_event, h as CUevent) }
        })())
    )
}

/// `CUresult cuEventRecord(CUevent hEvent, CUstream hStream)`: the event completes
/// when the stream's queued work does (or now, when the stream is idle). Recording in
/// a capturing stream is not simulated (`CUDA_ERROR_NOT_SUPPORTED`).
#[no_mangle]
pub extern "C" fn cuEventRecord(h_event: CUevent, h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuEventRecord_params {
        hEvent: h_event,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
        c"cuEventRecord",
        p,
        code((|| {
            let mut d = registry::lock();
            if !d.events.contains_key(&(h_event as usize)) {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            let s = d.stream(h_stream)?;
            // Capture, and a stream waiting for a memory value (when the event will
            // complete is unknown; sim limitation), are not supported.
            if d.streams[&s].capture.is_some() || d.waits_on_blocked(s) {
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
            let t = d.stream_ready(s).max(clock::now_ns());
            d.events
                .get_mut(&(h_event as usize))
                .expect("checked")
                .recorded_ns = Some(t);
            Ok(())
        })())
    )
}

/// When the event completes: `None` if never recorded.
fn completion(h: CUevent) -> Result<Option<u64>, CUresult> {
    let d = registry::lock();
    let e = d
        .events
        .get(&(h as usize))
        .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
    Ok(e.recorded_ns)
}

/// `CUresult cuEventSynchronize(CUevent hEvent)`: success at once if never recorded.
#[no_mangle]
pub extern "C" fn cuEventSynchronize(h_event: CUevent) -> CUresult {
    let p = cupti_sys::cuEventSynchronize_params { hEvent: h_event };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
        c"cuEventSynchronize",
        p,
        {
            match completion(h_event) {
                Ok(t) => {
                    clock::wait_until(t.unwrap_or(0));
                    CUDA_SUCCESS
                }
                Err(e) => e,
            }
        }
    )
}

/// `CUresult cuEventQuery(CUevent hEvent)`: success if never recorded.
#[no_mangle]
pub extern "C" fn cuEventQuery(h_event: CUevent) -> CUresult {
    let p = cupti_sys::cuEventQuery_params { hEvent: h_event };
    api!(CUPTI_DRIVER_TRACE_CBID_cuEventQuery, c"cuEventQuery", p, {
        match completion(h_event) {
            Ok(Some(t)) if t > clock::now_ns() => CUDA_ERROR_NOT_READY,
            Ok(_) => CUDA_SUCCESS,
            Err(e) => e,
        }
    })
}

/// The shared body of both `cuEventElapsedTime` ABIs: either event not recorded, or
/// created with `CU_EVENT_DISABLE_TIMING`, is `CUDA_ERROR_INVALID_HANDLE`; one not yet
/// complete is `CUDA_ERROR_NOT_READY`.
///
/// # Safety
/// `ms` is NULL or writable.
unsafe fn elapsed(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    code((|| {
        if ms.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let d = registry::lock();
        let time = |h: CUevent| {
            let e = d
                .events
                .get(&(h as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            if e.flags & CU_EVENT_DISABLE_TIMING != 0 {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            e.recorded_ns.ok_or(CUDA_ERROR_INVALID_HANDLE)
        };
        let (a, b) = (time(start)?, time(end)?);
        if a.max(b) > clock::now_ns() {
            return Err(CUDA_ERROR_NOT_READY);
        }
        // Subtract in integers: the absolute times need more bits than an f64 has.
        let v = (b as i64).wrapping_sub(a as i64) as f64 / 1e6;
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { out(ms, v as f32) }
    })())
}

/// `CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)`.
///
/// # Safety
/// `ms` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    let p = cupti_sys::cuEventElapsedTime_params {
        pMilliseconds: ms,
        hStart: start,
        hEnd: end,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime,
        c"cuEventElapsedTime",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { elapsed(ms, start, end) }
    )
}

/// `CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent
/// hEnd)` (`cuEventElapsedTime` in CUDA 13's `cuda.h`).
///
/// # Safety
/// `ms` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    let p = cupti_sys::cuEventElapsedTime_v2_params {
        pMilliseconds: ms,
        hStart: start,
        hEnd: end,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime_v2,
        c"cuEventElapsedTime_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { elapsed(ms, start, end) }
    )
}

/// `CUresult cuEventDestroy_v2(CUevent hEvent)`.
#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(h_event: CUevent) -> CUresult {
    let p = cupti_sys::cuEventDestroy_v2_params { hEvent: h_event };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2,
        c"cuEventDestroy_v2",
        p,
        {
            match registry::lock().events.remove(&(h_event as usize)) {
                Some(_) => CUDA_SUCCESS,
                None => CUDA_ERROR_INVALID_HANDLE,
            }
        }
    )
}
