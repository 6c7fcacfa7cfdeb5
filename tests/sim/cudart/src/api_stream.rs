//! Streams and events (`cuda_runtime_api.h`): creation, ordering and the host's waits.

use std::ffi::c_uint;

use cupti_sys::CUpti_runtime_api_trace_cbid_enum as cb;
use cupti_sys::{
    cudaEventCreateWithFlags_v3020_params, cudaEventCreate_v3020_params,
    cudaEventDestroy_v3020_params, cudaEventQuery_v3020_params, cudaEventRecord_v3020_params,
    cudaEventSynchronize_v3020_params, cudaEvent_t, cudaStreamCreateWithFlags_v5000_params,
    cudaStreamCreate_v3020_params, cudaStreamDestroy_v5050_params, cudaStreamQuery_v3020_params,
    cudaStreamSynchronize_v3020_params, cudaStreamWaitEvent_v3020_params, cudaStream_t,
};

use crate::context;
use crate::driver::Handle;
use crate::trace::{api, check, cudaError_t};

/// # Safety
/// `stream` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamCreate(stream: *mut cudaStream_t) -> cudaError_t {
    let p = cudaStreamCreate_v3020_params { pStream: stream };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020,
        c"cudaStreamCreate",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the out-pointer.
            check(unsafe { (drv.stream_create)(stream.cast::<Handle>(), 0) })
        },
    )
}

/// # Safety
/// `stream` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamCreateWithFlags(
    stream: *mut cudaStream_t,
    flags: c_uint,
) -> cudaError_t {
    let p = cudaStreamCreateWithFlags_v5000_params {
        pStream: stream,
        flags,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000,
        c"cudaStreamCreateWithFlags",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the out-pointer and the flags.
            check(unsafe { (drv.stream_create)(stream.cast::<Handle>(), flags) })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaStreamDestroy(stream: cudaStream_t) -> cudaError_t {
    let p = cudaStreamDestroy_v5050_params { stream };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050,
        c"cudaStreamDestroy",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.stream_destroy)(stream.cast()) })
        },
    )
}

/// Blocks until every operation queued on `stream` has completed.
#[no_mangle]
pub extern "C" fn cudaStreamSynchronize(stream: cudaStream_t) -> cudaError_t {
    let p = cudaStreamSynchronize_v3020_params { stream };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
        c"cudaStreamSynchronize",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.stream_synchronize)(stream.cast()) })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaStreamQuery(stream: cudaStream_t) -> cudaError_t {
    let p = cudaStreamQuery_v3020_params { stream };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
        c"cudaStreamQuery",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.stream_query)(stream.cast()) })
        },
    )
}

/// Work queued on `stream` after this waits for `event`'s last record.
#[no_mangle]
pub extern "C" fn cudaStreamWaitEvent(
    stream: cudaStream_t,
    event: cudaEvent_t,
    flags: c_uint,
) -> cudaError_t {
    let p = cudaStreamWaitEvent_v3020_params {
        stream,
        event,
        flags,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
        c"cudaStreamWaitEvent",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handles.
            check(unsafe { (drv.stream_wait_event)(stream.cast(), event.cast(), flags) })
        },
    )
}

/// # Safety
/// `event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaEventCreate(event: *mut cudaEvent_t) -> cudaError_t {
    let p = cudaEventCreate_v3020_params { event };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
        c"cudaEventCreate",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the out-pointer.
            check(unsafe { (drv.event_create)(event.cast::<Handle>(), 0) })
        },
    )
}

/// # Safety
/// `event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaEventCreateWithFlags(
    event: *mut cudaEvent_t,
    flags: c_uint,
) -> cudaError_t {
    let p = cudaEventCreateWithFlags_v3020_params { event, flags };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
        c"cudaEventCreateWithFlags",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the out-pointer and the flags.
            check(unsafe { (drv.event_create)(event.cast::<Handle>(), flags) })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaEventRecord(event: cudaEvent_t, stream: cudaStream_t) -> cudaError_t {
    let p = cudaEventRecord_v3020_params { event, stream };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
        c"cudaEventRecord",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handles.
            check(unsafe { (drv.event_record)(event.cast(), stream.cast()) })
        },
    )
}

/// Blocks until `event`'s last record has completed.
#[no_mangle]
pub extern "C" fn cudaEventSynchronize(event: cudaEvent_t) -> cudaError_t {
    let p = cudaEventSynchronize_v3020_params { event };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
        c"cudaEventSynchronize",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.event_synchronize)(event.cast()) })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaEventQuery(event: cudaEvent_t) -> cudaError_t {
    let p = cudaEventQuery_v3020_params { event };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
        c"cudaEventQuery",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.event_query)(event.cast()) })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaEventDestroy(event: cudaEvent_t) -> cudaError_t {
    let p = cudaEventDestroy_v3020_params { event };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020,
        c"cudaEventDestroy",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handle.
            check(unsafe { (drv.event_destroy)(event.cast()) })
        },
    )
}
