//! What the parameters of the traced driver API calls say ([`Args`]): bytes copied,
//! set or allocated, the stream named and the event named, read from the `cu*_params`
//! structs of `generated_cuda_meta.h`.

use core::ffi::c_void;

use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;

/// What a call's parameters say: bytes, the stream named (with whether a null
/// handle means the per-thread default stream), the event named.
#[derive(Default)]
pub struct Args {
    pub bytes: u64,
    pub stream: Option<(cupti_sys::CUstream, bool)>,
    pub event: usize,
}

impl Args {
    /// `bytes` enqueued on `stream` (a null handle: the legacy default stream, or the
    /// per-thread one with `per_thread`).
    pub fn on(bytes: u64, stream: cupti_sys::CUstream, per_thread: bool) -> Args {
        Args {
            bytes,
            stream: Some((stream, per_thread)),
            event: 0,
        }
    }

    /// `bytes` copied, set or allocated, naming no stream.
    pub fn sized(bytes: u64) -> Args {
        Args {
            bytes,
            ..Args::default()
        }
    }
}

/// Whether `cbid` is a per-thread default stream variant (`_ptsz`, `_ptds`).
#[allow(non_upper_case_globals)]
fn per_thread(cbid: u32) -> bool {
    use cbid::*;
    matches!(
        cbid,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz
    )
}

/// The arguments of the calls whose parameters are read; others give none.
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for `cbid`, valid for reading.
#[allow(non_upper_case_globals)]
pub unsafe fn args_of(cbid: u32, params: *const c_void) -> Args {
    use cbid::*;
    if params.is_null() {
        return Args::default();
    }
    let pt = per_thread(cbid);
    macro_rules! read {
        ($t:ident, |$p:ident| $args:expr) => {{
            // SAFETY: CUPTI passes this struct for this callback id (the caller's
            // contract); it is valid during the callback.
            let $p = unsafe { &*(params as *const cupti_sys::$t) };
            $args
        }};
    }
    // The legacy (or per-thread) default stream: a synchronous copy's or set's.
    let on_default = |bytes: usize| Args::on(bytes as u64, core::ptr::null_mut(), pt);
    let on = |bytes: u64, stream: cupti_sys::CUstream| Args::on(bytes, stream, pt);
    match cbid {
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize
        | CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz => {
            read!(cuStreamSynchronize_params, |p| on(0, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize => read!(cuEventSynchronize_params, |p| Args {
            event: p.hEvent as usize,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuEventRecord | CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz => {
            read!(cuEventRecord_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags
        | CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz => {
            read!(cuEventRecordWithFlags_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz => {
            read!(cuStreamWaitEvent_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz => {
            read!(cuStreamWaitValue32_v2_params, |p| on(0, p.stream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz => {
            read!(cuStreamWaitValue64_v2_params, |p| on(0, p.stream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 => {
            read!(cuMemAlloc_v2_params, |p| Args::sized(p.bytesize as u64))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync | CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz => {
            read!(cuMemAllocAsync_params, |p| on(p.bytesize as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2 => {
            read!(cuMemAllocHost_v2_params, |p| Args::sized(p.bytesize as u64))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc => {
            read!(cuMemHostAlloc_params, |p| Args::sized(p.bytesize as u64))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged => {
            read!(cuMemAllocManaged_params, |p| Args::sized(p.bytesize as u64))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync | CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz => {
            read!(cuMemFreeAsync_params, |p| on(0, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy | CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds => {
            read!(cuMemcpy_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync | CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz => {
            read!(cuMemcpyAsync_params, |p| on(p.ByteCount as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds => {
            read!(cuMemcpyHtoD_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds => {
            read!(cuMemcpyDtoH_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds => {
            read!(cuMemcpyDtoD_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz => {
            read!(cuMemcpyHtoDAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz => {
            read!(cuMemcpyDtoHAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz => {
            read!(cuMemcpyDtoDAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds => {
            read!(cuMemsetD8_v2_params, |p| on_default(p.N))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds => {
            read!(cuMemsetD16_v2_params, |p| on_default(p.N.saturating_mul(2)))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds => {
            read!(cuMemsetD32_v2_params, |p| on_default(p.N.saturating_mul(4)))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz => {
            read!(cuMemsetD8Async_params, |p| on(p.N as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async
        | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz => {
            read!(cuMemsetD16Async_params, |p| on(
                (p.N as u64).saturating_mul(2),
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async
        | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz => {
            read!(cuMemsetD32Async_params, |p| on(
                (p.N as u64).saturating_mul(4),
                p.hStream
            ))
        }
        _ => Args::default(),
    }
}
