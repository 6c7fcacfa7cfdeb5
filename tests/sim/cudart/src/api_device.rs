//! Devices, versions, device-wide synchronisation and errors (`cuda_runtime_api.h`).

use std::ffi::{c_char, c_int};

use cupti_sys::CUpti_runtime_api_trace_cbid_enum as cb;
use cupti_sys::{
    cudaDriverGetVersion_v3020_params, cudaGetDeviceCount_v3020_params, cudaGetDevice_v3020_params,
    cudaRuntimeGetVersion_v3020_params, cudaSetDevice_v3020_params,
};

use crate::context;
use crate::trace::{api, check, cudaError_t, last_error, write_out};

/// The version this runtime reports (`CUDART_VERSION` of CUDA 12.9).
const RUNTIME_VERSION: c_int = 12090;

/// `cudaError_t cudaGetDeviceCount(int *count)`.
///
/// # Safety
/// `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaGetDeviceCount(count: *mut c_int) -> cudaError_t {
    let p = cudaGetDeviceCount_v3020_params { count };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
        c"cudaGetDeviceCount",
        Some(&p),
        None,
        |drv| {
            // SAFETY: `cuInit(unsigned int)`.
            check(unsafe { (drv.init)(0) })?;
            let mut n: c_int = 0;
            // SAFETY: `n` is writable.
            check(unsafe { (drv.device_get_count)(&mut n) })?;
            // SAFETY: per this function's contract.
            unsafe { write_out(count, n) }
        },
    )
}

/// `cudaError_t cudaGetDevice(int *device)`.
///
/// # Safety
/// `device` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaGetDevice(device: *mut c_int) -> cudaError_t {
    let p = cudaGetDevice_v3020_params { device };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
        c"cudaGetDevice",
        Some(&p),
        None,
        |drv| {
            let d = context::device(drv)?;
            // SAFETY: per this function's contract.
            unsafe { write_out(device, d) }
        },
    )
}

/// `cudaError_t cudaSetDevice(int device)`.
#[no_mangle]
pub extern "C" fn cudaSetDevice(device: c_int) -> cudaError_t {
    let p = cudaSetDevice_v3020_params { device };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
        c"cudaSetDevice",
        Some(&p),
        None,
        |drv| context::set_device(drv, device),
    )
}

/// `cudaError_t cudaDeviceSynchronize(void)`: waits for all work of the current context.
#[no_mangle]
pub extern "C" fn cudaDeviceSynchronize() -> cudaError_t {
    api::<()>(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
        c"cudaDeviceSynchronize",
        None,
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: no arguments.
            check(unsafe { (drv.ctx_synchronize)() })
        },
    )
}

/// `cudaError_t cudaDriverGetVersion(int *driverVersion)`.
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaDriverGetVersion(version: *mut c_int) -> cudaError_t {
    let p = cudaDriverGetVersion_v3020_params {
        driverVersion: version,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
        c"cudaDriverGetVersion",
        Some(&p),
        None,
        |drv| {
            let mut v: c_int = 0;
            // SAFETY: `v` is writable.
            check(unsafe { (drv.driver_get_version)(&mut v) })?;
            // SAFETY: per this function's contract.
            unsafe { write_out(version, v) }
        },
    )
}

/// `cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)`: 12090.
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaRuntimeGetVersion(version: *mut c_int) -> cudaError_t {
    let p = cudaRuntimeGetVersion_v3020_params {
        runtimeVersion: version,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
        c"cudaRuntimeGetVersion",
        Some(&p),
        None,
        |_| {
            // SAFETY: per this function's contract.
            unsafe { write_out(version, RUNTIME_VERSION) }
        },
    )
}

/// `cudaError_t cudaGetLastError(void)`: the thread's last error, reset to success.
#[no_mangle]
pub extern "C" fn cudaGetLastError() -> cudaError_t {
    let mut last = 0;
    api::<()>(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
        c"cudaGetLastError",
        None,
        None,
        |_| {
            last = last_error(true);
            Ok(())
        },
    );
    last
}

/// `cudaError_t cudaPeekAtLastError(void)`: the thread's last error, kept.
#[no_mangle]
pub extern "C" fn cudaPeekAtLastError() -> cudaError_t {
    let mut last = 0;
    api::<()>(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
        c"cudaPeekAtLastError",
        None,
        None,
        |_| {
            last = last_error(false);
            Ok(())
        },
    );
    last
}

/// (name, description) of the errors this runtime returns.
fn describe(error: cudaError_t) -> (&'static std::ffi::CStr, &'static std::ffi::CStr) {
    match error {
        0 => (c"cudaSuccess", c"no error"),
        1 => (c"cudaErrorInvalidValue", c"invalid argument"),
        2 => (c"cudaErrorMemoryAllocation", c"out of memory"),
        3 => (c"cudaErrorInitializationError", c"initialization error"),
        35 => (
            c"cudaErrorInsufficientDriver",
            c"CUDA driver version is insufficient for CUDA runtime version",
        ),
        100 => (c"cudaErrorNoDevice", c"no CUDA-capable device is detected"),
        101 => (c"cudaErrorInvalidDevice", c"invalid device ordinal"),
        400 => (
            c"cudaErrorInvalidResourceHandle",
            c"invalid resource handle",
        ),
        500 => (c"cudaErrorSymbolNotFound", c"named symbol not found"),
        600 => (c"cudaErrorNotReady", c"device not ready"),
        _ => (c"cudaErrorUnknown", c"unknown error"),
    }
}

/// `const char *cudaGetErrorString(cudaError_t error)` (not reported to CUPTI).
#[no_mangle]
pub extern "C" fn cudaGetErrorString(error: cudaError_t) -> *const c_char {
    describe(error).1.as_ptr()
}

/// `const char *cudaGetErrorName(cudaError_t error)` (not reported to CUPTI).
#[no_mangle]
pub extern "C" fn cudaGetErrorName(error: cudaError_t) -> *const c_char {
    describe(error).0.as_ptr()
}
