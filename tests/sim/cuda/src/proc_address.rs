//! `cuGetProcAddress` (CUDA 11.3) and `cuGetProcAddress_v2` (CUDA 12.0): the driver's
//! own entry points by base name and CUDA version, as `cuda.h` documents. They work
//! before `cuInit` (the CUDA runtime resolves `cuInit` itself through them).

use std::ffi::{c_char, c_int, c_void, CStr};

#[cfg(test)]
use crate::api_device;
use crate::config;
use crate::consts::*;
use crate::ffi::guard;
use crate::proc_table::table;

/// The outcome of a lookup: the function (NULL when none) and the
/// `CUdriverProcAddressQueryResult`.
fn lookup(symbol: &[u8], cuda_version: c_int) -> (*const c_void, c_int) {
    let entries = table();
    let mut named = entries
        .iter()
        .filter(|e| e.name.as_bytes() == symbol)
        .peekable();
    if named.peek().is_none() {
        return (std::ptr::null(), proc_status::SYMBOL_NOT_FOUND);
    }
    match named
        .filter(|e| e.since <= cuda_version)
        .max_by_key(|e| e.since)
    {
        Some(e) => (e.func, proc_status::SUCCESS),
        None => (std::ptr::null(), proc_status::VERSION_NOT_SUFFICIENT),
    }
}

/// The shared argument checks and lookup; `None` when an argument is invalid.
///
/// # Safety
/// `symbol` is NULL or a NUL-terminated string; `pfn` is NULL or writable.
unsafe fn resolve(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
) -> Option<c_int> {
    if symbol.is_null() || pfn.is_null() || cuda_version > config::get().driver_version {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per this function's contract.
    let name = unsafe { CStr::from_ptr(symbol) };
    let (func, status) = lookup(name.to_bytes(), cuda_version);
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { pfn.write(func.cast_mut()) };
    Some(status)
}

/// `CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
/// cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)`.
///
/// As CUDA 13's `cuda.h` documents: a `cudaVersion` above the driver's version is
/// `CUDA_ERROR_INVALID_VALUE`; an unknown symbol, or one newer than `cudaVersion`, is
/// `CUDA_SUCCESS` with `*pfn = NULL` and the reason in the optional `*symbolStatus`.
/// The sim has no per-thread-stream variants, so `flags` selects nothing.
///
/// # Safety
/// `symbol` is NULL or NUL-terminated; `pfn` and `symbol_status` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    _flags: u64,
    symbol_status: *mut c_int,
) -> CUresult {
    guard(move || {
        // SAFETY: the caller's pointers are as `resolve` requires.
        let Some(status) = (unsafe { resolve(symbol, pfn, cuda_version) }) else {
            return CUDA_ERROR_INVALID_VALUE;
        };
        if !symbol_status.is_null() {
            // SAFETY: non-NULL, and writable per this function's contract.
            unsafe { symbol_status.write(status) };
        }
        CUDA_SUCCESS
    })
}

/// `CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
/// cuuint64_t flags)`, the CUDA 11.3 ABI: with no status out-parameter, a symbol that is
/// not found (or not in `cudaVersion`) is `CUDA_ERROR_NOT_FOUND` with `*pfn = NULL`,
/// as CUDA 11.x's `cuda.h` documented it.
///
/// # Safety
/// `symbol` is NULL or NUL-terminated; `pfn` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    _flags: u64,
) -> CUresult {
    guard(move || {
        // SAFETY: the caller's pointers are as `resolve` requires.
        match unsafe { resolve(symbol, pfn, cuda_version) } {
            None => CUDA_ERROR_INVALID_VALUE,
            Some(proc_status::SUCCESS) => CUDA_SUCCESS,
            Some(_) => CUDA_ERROR_NOT_FOUND,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_newest_abi_the_version_allows() {
        let v2 = api_device::cuDeviceGetUuid_v2 as *const c_void;
        let v1 = api_device::cuDeviceGetUuid as *const c_void;
        assert_eq!(
            lookup(b"cuDeviceGetUuid", 13000),
            (v2, proc_status::SUCCESS)
        );
        assert_eq!(
            lookup(b"cuDeviceGetUuid", 11000),
            (v1, proc_status::SUCCESS)
        );
        assert_eq!(
            lookup(b"cuDeviceGetUuid", 9000),
            (std::ptr::null(), proc_status::VERSION_NOT_SUFFICIENT)
        );
        assert_eq!(
            lookup(b"cuBogus", 13000),
            (std::ptr::null(), proc_status::SYMBOL_NOT_FOUND)
        );
    }

    /// Stream memory operations: the CUDA 8.0 (32-bit) / 9.0 (64-bit) ABI, and the
    /// `_v2` one from CUDA 11.7 (`PFN_cuStreamWaitValue32_v11070`, cudaTypedefs.h).
    #[test]
    fn stream_memory_operations_by_version() {
        use crate::api_stream_memop as mo;
        let f = |p: *const c_void| (p, proc_status::SUCCESS);
        for (name, v1, v2, since) in [
            (
                &b"cuStreamWaitValue32"[..],
                mo::cuStreamWaitValue32 as *const c_void,
                mo::cuStreamWaitValue32_v2 as *const c_void,
                8000,
            ),
            (
                b"cuStreamWriteValue32",
                mo::cuStreamWriteValue32 as *const c_void,
                mo::cuStreamWriteValue32_v2 as *const c_void,
                8000,
            ),
            (
                b"cuStreamWaitValue64",
                mo::cuStreamWaitValue64 as *const c_void,
                mo::cuStreamWaitValue64_v2 as *const c_void,
                9000,
            ),
            (
                b"cuStreamWriteValue64",
                mo::cuStreamWriteValue64 as *const c_void,
                mo::cuStreamWriteValue64_v2 as *const c_void,
                9000,
            ),
        ] {
            assert_eq!(lookup(name, 13000), f(v2));
            assert_eq!(lookup(name, 11070), f(v2));
            assert_eq!(lookup(name, 11060), f(v1));
            assert_eq!(lookup(name, since), f(v1));
            assert_eq!(
                lookup(name, since - 10),
                (std::ptr::null(), proc_status::VERSION_NOT_SUFFICIENT)
            );
        }
    }
}
