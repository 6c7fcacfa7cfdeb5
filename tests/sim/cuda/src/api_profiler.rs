//! `cuProfilerStart` / `cuProfilerStop` (`cudaProfilerTypedefs.h`:
//! `PFN_cuProfilerStart_v4000`, `(void)`): they tell the profiling tool attached to
//! the process where to collect, and do nothing else. The driver reports them to the
//! tracer like every API call (`CUPTI_DRIVER_TRACE_CBID_cuProfilerStart` = 308,
//! `cuProfilerStop` = 309 in `cupti_driver_cbid.h`).
//!
//! Strict where NVIDIA's text is not in the pinned headers (`cudaProfiler.h` is not
//! shipped in the wheels): a call needs a current context (`CUDA_ERROR_INVALID_CONTEXT`
//! without one, as for every call "for the current context"); calling start twice or
//! stop without start succeeds (`cuda.h`: `CUDA_ERROR_PROFILER_ALREADY_STARTED` /
//! `_STOPPED` are "no longer an error" since CUDA 5.0).

use crate::consts::*;
use crate::registry;

/// `CUresult cuProfilerStart(void)`.
#[no_mangle]
pub extern "C" fn cuProfilerStart() -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
        c"cuProfilerStart",
        (),
        { current_context() }
    )
}

/// `CUresult cuProfilerStop(void)`.
#[no_mangle]
pub extern "C" fn cuProfilerStop() -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
        c"cuProfilerStop",
        (),
        { current_context() }
    )
}

fn current_context() -> CUresult {
    match registry::lock().current() {
        Ok(_) => CUDA_SUCCESS,
        Err(e) => e,
    }
}
