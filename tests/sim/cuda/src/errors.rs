//! `cuGetErrorName` and `cuGetErrorString`.

use std::ffi::{c_char, CStr};

use crate::consts::*;
use crate::error_names::ERROR_NAMES;
use crate::ffi::guard;

/// The driver's description strings for the codes the sim returns or that clients
/// commonly look up. These are the strings the real driver's `cuGetErrorString`
/// returns (the same texts as the runtime's `cudaGetErrorString`).
const ERROR_STRINGS: &[(CUresult, &CStr)] = &[
    (CUDA_SUCCESS, c"no error"),
    (CUDA_ERROR_INVALID_VALUE, c"invalid argument"),
    (CUDA_ERROR_OUT_OF_MEMORY, c"out of memory"),
    (CUDA_ERROR_NOT_INITIALIZED, c"initialization error"),
    (CUDA_ERROR_DEINITIALIZED, c"driver shutting down"),
    (CUDA_ERROR_NO_DEVICE, c"no CUDA-capable device is detected"),
    (CUDA_ERROR_INVALID_DEVICE, c"invalid device ordinal"),
    (CUDA_ERROR_INVALID_CONTEXT, c"invalid device context"),
    (CUDA_ERROR_INVALID_HANDLE, c"invalid resource handle"),
    (CUDA_ERROR_NOT_FOUND, c"named symbol not found"),
    (CUDA_ERROR_NOT_READY, c"device not ready"),
    (CUDA_ERROR_NOT_SUPPORTED, c"operation not supported"),
    (CUDA_ERROR_UNKNOWN, c"unknown error"),
];

/// Sets `*p_str` to `found` (or NULL) and returns the documented result: success, or
/// `CUDA_ERROR_INVALID_VALUE` for an unrecognised code.
///
/// # Safety
/// `p_str` is NULL or valid for writing a pointer.
unsafe fn answer(p_str: *mut *const c_char, found: Option<&'static CStr>) -> CUresult {
    if p_str.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { p_str.write(found.map_or(std::ptr::null(), CStr::as_ptr)) };
    if found.is_some() {
        CUDA_SUCCESS
    } else {
        CUDA_ERROR_INVALID_VALUE
    }
}

/// `CUresult cuGetErrorName(CUresult error, const char **pStr)`.
///
/// # Safety
/// `p_str` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    guard(move || {
        let found = ERROR_NAMES
            .iter()
            .find(|(v, _)| *v == error)
            .map(|(_, n)| *n);
        // SAFETY: the caller's `p_str` is NULL or writable.
        unsafe { answer(p_str, found) }
    })
}

/// `CUresult cuGetErrorString(CUresult error, const char **pStr)`.
///
/// # Safety
/// `p_str` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    guard(move || {
        let found = ERROR_STRINGS
            .iter()
            .find(|(v, _)| *v == error)
            .map(|(_, s)| *s);
        // SAFETY: the caller's `p_str` is NULL or writable.
        unsafe { answer(p_str, found) }
    })
}
