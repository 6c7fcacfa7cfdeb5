//! Allocation, copies and sets (`cuda_runtime_api.h`), each made of the driver call
//! the real runtime makes for it.

use std::ffi::{c_int, c_void};

use cupti_sys::CUpti_runtime_api_trace_cbid_enum as cb;
use cupti_sys::{
    cudaFreeHost_v3020_params, cudaFree_v3020_params, cudaMallocHost_v3020_params,
    cudaMalloc_v3020_params, cudaMemcpyAsync_v3020_params, cudaMemcpy_v3020_params,
    cudaMemsetAsync_v3020_params, cudaMemset_v3020_params, cudaStream_t,
};

use crate::context;
use crate::driver::{CUdeviceptr, Driver, Handle};
use crate::trace::{api, check, cudaError_t, write_out, INVALID_VALUE};

/// `cudaMemcpyKind`.
const HOST_TO_HOST: u32 = 0;
const HOST_TO_DEVICE: u32 = 1;
const DEVICE_TO_HOST: u32 = 2;
const DEVICE_TO_DEVICE: u32 = 3;
const DEFAULT: u32 = 4;

/// `cudaError_t cudaMalloc(void **devPtr, size_t size)`.
///
/// # Safety
/// `dev_ptr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaMalloc(dev_ptr: *mut *mut c_void, size: usize) -> cudaError_t {
    let p = cudaMalloc_v3020_params {
        devPtr: dev_ptr,
        size,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
        c"cudaMalloc",
        Some(&p),
        None,
        |drv| {
            if dev_ptr.is_null() {
                return Err(INVALID_VALUE);
            }
            context::ensure(drv)?;
            let mut d: CUdeviceptr = 0;
            // SAFETY: `d` is writable.
            check(unsafe { (drv.mem_alloc)(&mut d, size) })?;
            // SAFETY: per this function's contract.
            unsafe { write_out(dev_ptr, d as *mut c_void) }
        },
    )
}

/// `cudaError_t cudaFree(void *devPtr)`: NULL only initialises the context.
#[no_mangle]
pub extern "C" fn cudaFree(dev_ptr: *mut c_void) -> cudaError_t {
    let p = cudaFree_v3020_params { devPtr: dev_ptr };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
        c"cudaFree",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            if dev_ptr.is_null() {
                return Ok(());
            }
            // SAFETY: the driver checks the pointer.
            check(unsafe { (drv.mem_free)(dev_ptr as CUdeviceptr) })
        },
    )
}

/// `cudaError_t cudaMallocHost(void **ptr, size_t size)`: page-locked host memory.
///
/// # Safety
/// `ptr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cudaMallocHost(ptr: *mut *mut c_void, size: usize) -> cudaError_t {
    let p = cudaMallocHost_v3020_params { ptr, size };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
        c"cudaMallocHost",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks `ptr` (NULL is its invalid value).
            check(unsafe { (drv.mem_alloc_host)(ptr, size) })
        },
    )
}

/// `cudaError_t cudaFreeHost(void *ptr)`.
#[no_mangle]
pub extern "C" fn cudaFreeHost(ptr: *mut c_void) -> cudaError_t {
    let p = cudaFreeHost_v3020_params { ptr };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
        c"cudaFreeHost",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the pointer.
            check(unsafe { (drv.mem_free_host)(ptr) })
        },
    )
}

/// A copy of `count` bytes of kind `kind`, on `stream` when Some.
fn copy(
    drv: &Driver,
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: u32,
    stream: Option<Handle>,
) -> Result<(), cudaError_t> {
    context::ensure(drv)?;
    let (d, s) = (dst as CUdeviceptr, src as CUdeviceptr);
    // SAFETY: the driver checks the pointers against its allocations and the caller's
    // host buffers are the caller's promise, as with the real runtime.
    let r = unsafe {
        match (kind, stream) {
            (HOST_TO_DEVICE, None) => (drv.memcpy_htod)(d, src, count),
            (DEVICE_TO_HOST, None) => (drv.memcpy_dtoh)(dst, s, count),
            (DEVICE_TO_DEVICE, None) => (drv.memcpy_dtod)(d, s, count),
            (HOST_TO_HOST | DEFAULT, None) => (drv.memcpy)(d, s, count),
            (HOST_TO_DEVICE, Some(st)) => (drv.memcpy_htod_async)(d, src, count, st),
            (DEVICE_TO_HOST, Some(st)) => (drv.memcpy_dtoh_async)(dst, s, count, st),
            (DEVICE_TO_DEVICE, Some(st)) => (drv.memcpy_dtod_async)(d, s, count, st),
            (HOST_TO_HOST | DEFAULT, Some(st)) => (drv.memcpy_async)(d, s, count, st),
            _ => return Err(INVALID_VALUE),
        }
    };
    check(r)
}

/// `cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind)`.
///
/// # Safety
/// Host pointers are valid for `count` bytes, as with the real runtime.
#[no_mangle]
pub unsafe extern "C" fn cudaMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: u32,
) -> cudaError_t {
    let p = cudaMemcpy_v3020_params {
        dst,
        src,
        count,
        kind,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
        c"cudaMemcpy",
        Some(&p),
        None,
        |drv| copy(drv, dst, src, count, kind, None),
    )
}

/// `cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
/// cudaMemcpyKind, cudaStream_t)`.
///
/// # Safety
/// Host pointers are valid for `count` bytes until the copy completes.
#[no_mangle]
pub unsafe extern "C" fn cudaMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: u32,
    stream: cudaStream_t,
) -> cudaError_t {
    let p = cudaMemcpyAsync_v3020_params {
        dst,
        src,
        count,
        kind,
        stream,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
        c"cudaMemcpyAsync",
        Some(&p),
        None,
        |drv| copy(drv, dst, src, count, kind, Some(stream.cast())),
    )
}

/// `cudaError_t cudaMemset(void *devPtr, int value, size_t count)`.
#[no_mangle]
pub extern "C" fn cudaMemset(dev_ptr: *mut c_void, value: c_int, count: usize) -> cudaError_t {
    let p = cudaMemset_v3020_params {
        devPtr: dev_ptr,
        value,
        count,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
        c"cudaMemset",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the range against its allocations.
            check(unsafe { (drv.memset_d8)(dev_ptr as CUdeviceptr, value as u8, count) })
        },
    )
}

/// `cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t)`.
#[no_mangle]
pub extern "C" fn cudaMemsetAsync(
    dev_ptr: *mut c_void,
    value: c_int,
    count: usize,
    stream: cudaStream_t,
) -> cudaError_t {
    let p = cudaMemsetAsync_v3020_params {
        devPtr: dev_ptr,
        value,
        count,
        stream,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
        c"cudaMemsetAsync",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the range and the stream.
            check(unsafe {
                (drv.memset_d8_async)(dev_ptr as CUdeviceptr, value as u8, count, stream.cast())
            })
        },
    )
}
