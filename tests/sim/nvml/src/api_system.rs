//! Initialisation, shutdown, error strings, and finding devices: `nvmlInit_v2`,
//! `nvmlInit`, `nvmlInitWithFlags`, `nvmlShutdown`, `nvmlErrorString`,
//! `nvmlDeviceGetCount_v2` / `nvmlDeviceGetCount`, `nvmlDeviceGetHandleByIndex_v2` /
//! `nvmlDeviceGetHandleByIndex` (the versioned entry points are what `nvml.h` maps the
//! plain names to; the sim has no devices without permission, so both answer alike).

use std::ffi::{c_char, c_uint};

use crate::consts::*;
use crate::devices;
use crate::ffi::{guard, out};
use crate::state;

/// `nvmlReturn_t nvmlInit_v2(void)`.
#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    guard(|| match state::init() {
        NVML_SUCCESS => Ok(()),
        e => Err(e),
    })
}

/// `nvmlReturn_t nvmlInit(void)`, the pre-`_v2` entry point.
#[no_mangle]
pub extern "C" fn nvmlInit() -> nvmlReturn_t {
    nvmlInit_v2()
}

/// `nvmlReturn_t nvmlInitWithFlags(unsigned int flags)`: `NVML_INIT_FLAG_NO_GPUS` (1)
/// and `NVML_INIT_FLAG_NO_ATTACH` (2) change nothing here (the sim always has its
/// devices and attaches to none).
#[no_mangle]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    nvmlInit_v2()
}

/// `nvmlReturn_t nvmlShutdown(void)`.
#[no_mangle]
pub extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    guard(|| match state::shutdown() {
        NVML_SUCCESS => Ok(()),
        e => Err(e),
    })
}

/// `const char *nvmlErrorString(nvmlReturn_t result)`: a static string per code.
#[no_mangle]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    let s: &'static std::ffi::CStr = match result {
        NVML_SUCCESS => c"Success",
        NVML_ERROR_UNINITIALIZED => c"Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED => c"Not Supported",
        NVML_ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        _ => c"Unknown Error",
    };
    s.as_ptr()
}

/// # Safety
/// `count` is NULL or valid for writing an `unsigned int`.
unsafe fn get_count(count: *mut c_uint) -> nvmlReturn_t {
    guard(|| {
        state::loaded_ns()?;
        // SAFETY: per this function's contract.
        unsafe { out(count, devices::count()) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)`.
///
/// # Safety
/// `count` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { get_count(count) }
}

/// `nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)`.
///
/// # Safety
/// `count` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount(count: *mut c_uint) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { get_count(count) }
}

/// # Safety
/// `device` is NULL or valid for writing an `nvmlDevice_t`.
unsafe fn get_handle(index: c_uint, device: *mut nvmlDevice_t) -> nvmlReturn_t {
    guard(|| {
        state::loaded_ns()?;
        let h = devices::handle(index)?;
        // SAFETY: per this function's contract.
        unsafe { out(device, h) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t
/// *device)`: an index past the last device, or NULL, is
/// `NVML_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `device` is NULL or valid for writing an `nvmlDevice_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { get_handle(index, device) }
}

/// `nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)`.
///
/// # Safety
/// `device` is NULL or valid for writing an `nvmlDevice_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { get_handle(index, device) }
}
