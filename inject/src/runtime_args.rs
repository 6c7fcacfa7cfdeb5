//! What the parameters of the traced runtime API calls say (`driver_args::Args`): bytes
//! copied, set or allocated, the stream named and the event named, read from the
//! `cuda*_params` structs of `generated_cuda_runtime_api_meta.h`.

use core::ffi::c_void;

use cupti_sys::CUpti_runtime_api_trace_cbid_enum as cbid;

use crate::driver_args::Args;

/// Whether `cbid` is a per-thread default stream variant (`_ptsz`, `_ptds`).
#[allow(non_upper_case_globals)]
fn per_thread(cbid: u32) -> bool {
    use cbid::*;
    matches!(
        cbid,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010
            | CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020
            | CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020
            | CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000
            | CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000
    )
}

/// The arguments of the runtime calls whose parameters are read; others give none.
/// Each `_ptsz` / `_ptds` variant has its base function's parameters.
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for runtime callback `cbid`,
/// valid for reading.
#[allow(non_upper_case_globals)]
pub unsafe fn args_of(cbid: u32, params: *const c_void) -> Args {
    use cbid::*;
    if params.is_null() {
        return Args::default();
    }
    let pt = per_thread(cbid);
    macro_rules! read {
        ($t:ident, |$p:ident| $args:expr) => {{
            // SAFETY: CUPTI passes this struct (or its per-thread variant, of the same
            // layout) for this callback id (the caller's contract); valid during the
            // callback.
            let $p = unsafe { &*(params as *const cupti_sys::$t) };
            $args
        }};
    }
    let on = |bytes: usize, s: cupti_sys::cudaStream_t| {
        Args::on(bytes as u64, s as cupti_sys::CUstream, pt)
    };
    let sized = |bytes: usize| Args::sized(bytes as u64);
    match cbid {
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 => {
            read!(cudaStreamSynchronize_v3020_params, |p| on(0, p.stream))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 => {
            read!(cudaEventSynchronize_v3020_params, |p| Args {
                event: p.event as usize,
                ..Args::default()
            })
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000 => {
            read!(cudaEventRecord_v3020_params, |p| Args {
                event: p.event as usize,
                ..on(0, p.stream)
            })
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010
        | CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010 => {
            read!(cudaEventRecordWithFlags_v11010_params, |p| Args {
                event: p.event as usize,
                ..on(0, p.stream)
            })
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000 => {
            read!(cudaStreamWaitEvent_v3020_params, |p| Args {
                event: p.event as usize,
                ..on(0, p.stream)
            })
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020 => {
            read!(cudaMalloc_v3020_params, |p| sized(p.size))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020 => {
            read!(cudaMallocHost_v3020_params, |p| sized(p.size))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020 => {
            read!(cudaHostAlloc_v3020_params, |p| sized(p.size))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000 => {
            read!(cudaMallocManaged_v6000_params, |p| sized(p.size))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020
        | CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020 => {
            read!(cudaMallocAsync_v11020_params, |p| on(p.size, p.hStream))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020
        | CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020 => {
            read!(cudaFreeAsync_v11020_params, |p| on(0, p.hStream))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000 => {
            // The legacy (or per-thread) default stream: a synchronous copy's.
            read!(cudaMemcpy_v3020_params, |p| on(
                p.count,
                core::ptr::null_mut()
            ))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 => {
            read!(cudaMemcpyAsync_v3020_params, |p| on(p.count, p.stream))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000 => {
            read!(cudaMemset_v3020_params, |p| on(
                p.count,
                core::ptr::null_mut()
            ))
        }
        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020
        | CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000 => {
            read!(cudaMemsetAsync_v3020_params, |p| on(p.count, p.stream))
        }
        _ => Args::default(),
    }
}
