//! Memory management: device allocations (`cuMemAlloc_v2`, `cuMemFree_v2`, the
//! stream-ordered `cuMemAllocAsync` / `cuMemFreeAsync`), page-locked host memory
//! (`cuMemAllocHost_v2`, `cuMemHostAlloc`, `cuMemFreeHost`), `cuMemGetInfo_v2` and
//! `cuPointerGetAttribute`.

use std::alloc::Layout;
use std::ffi::{c_int, c_uint, c_void};

use crate::config;
use crate::consts::pointer_attr::*;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::registry;
use crate::telemetry;

/// Device memory a client can allocate: the device's total less what the driver
/// itself keeps (512 MiB, as a real driver reserves some).
fn capacity() -> u64 {
    (config::get().device.total_mem_bytes as u64).saturating_sub(512 << 20)
}

/// # Safety
/// `dptr` is NULL or writable.
unsafe fn alloc(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    stream: Option<CUstream>,
) -> Result<(), CUresult> {
    if dptr.is_null() || bytesize == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let mut d = registry::lock();
    let ctx = match stream {
        Some(s) => {
            let s = d.stream(s)?;
            d.streams[&s].ctx
        }
        None => d.current()?,
    };
    let p = d
        .memory
        .alloc(ctx, bytesize as u64, capacity())
        .ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
    telemetry::memory(&d);
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out(dptr, p) }
}

/// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`: 0 bytes is
/// `CUDA_ERROR_INVALID_VALUE`, as documented.
///
/// # Safety
/// `dptr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
    let p = cupti_sys::cuMemAlloc_v2_params { dptr, bytesize };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
        c"cuMemAlloc_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { alloc(dptr, bytesize, None) })
    )
}

/// `CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)`:
/// from the device's default pool; the sim allocates at once.
///
/// # Safety
/// `dptr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemAllocAsync_params {
        dptr,
        bytesize,
        hStream: h_stream,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
        c"cuMemAllocAsync",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { alloc(dptr, bytesize, Some(h_stream)) })
    )
}

fn free(dptr: CUdeviceptr, stream: Option<CUstream>) -> Result<(), CUresult> {
    let mut d = registry::lock();
    if let Some(s) = stream {
        d.stream(s)?;
    }
    d.memory.free(dptr)?;
    telemetry::memory(&d);
    Ok(())
}

/// `CUresult cuMemFree_v2(CUdeviceptr dptr)`: `dptr` must be an allocation's base.
#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    let p = cupti_sys::cuMemFree_v2_params { dptr };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        c"cuMemFree_v2",
        p,
        code(free(dptr, None))
    )
}

/// `CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)`.
#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuMemFreeAsync_params {
        dptr,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
        c"cuMemFreeAsync",
        p,
        code(free(dptr, Some(h_stream)))
    )
}

/// `CUresult cuMemGetInfo_v2(size_t *free, size_t *total)`.
///
/// # Safety
/// `free` and `total` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    let p = cupti_sys::cuMemGetInfo_v2_params { free, total };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2,
        c"cuMemGetInfo_v2",
        p,
        code((|| {
            let d = registry::lock();
            d.current()?;
            let t = config::get().device.total_mem_bytes;
            let f = capacity() - d.memory.used();
            // SAFETY: the caller's pointers are NULL or writable.
            unsafe {
                out(free, f as usize)?;
                out(total, t)
            }
        })())
    )
}

/// Alignment of page-locked host allocations.
const HOST_ALIGN: usize = 4096;

/// # Safety
/// `pp` is NULL or writable.
unsafe fn host_alloc(pp: *mut *mut c_void, bytesize: usize, flags: c_uint) -> Result<(), CUresult> {
    if pp.is_null() || flags & !CU_MEMHOSTALLOC_ALL != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let mut d = registry::lock();
    let ctx = d.current()?;
    let layout = Layout::from_size_align(bytesize.max(1), HOST_ALIGN)
        .map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    d.memory.host.insert(p as usize, (bytesize.max(1), ctx));
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out(pp, p.cast()) }
}

/// `CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)`: real, page-locked (in
/// name) host memory the device can reach.
///
/// # Safety
/// `pp` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize) -> CUresult {
    let p = cupti_sys::cuMemAllocHost_v2_params { pp, bytesize };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
        c"cuMemAllocHost_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { host_alloc(pp, bytesize, 0) })
    )
}

/// `CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)`.
///
/// # Safety
/// `pp` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytesize: usize,
    flags: c_uint,
) -> CUresult {
    let p = cupti_sys::cuMemHostAlloc_params {
        pp,
        bytesize,
        Flags: flags,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
        c"cuMemHostAlloc",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { host_alloc(pp, bytesize, flags) })
    )
}

/// `CUresult cuMemFreeHost(void *p)`: `p` must come from `cuMemAllocHost` /
/// `cuMemHostAlloc`.
#[no_mangle]
pub extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    let params = cupti_sys::cuMemFreeHost_params { p };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
        c"cuMemFreeHost",
        params,
        {
            let Some((size, _)) = registry::lock().memory.host.remove(&(p as usize)) else {
                return CUDA_ERROR_INVALID_VALUE;
            };
            let layout = Layout::from_size_align(size, HOST_ALIGN).expect("valid at allocation");
            // SAFETY: allocated by `host_alloc` with this layout, and removed from the
            // table above, so freed once.
            unsafe { std::alloc::dealloc(p.cast(), layout) };
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
/// CUdeviceptr ptr)` for `CONTEXT`, `MEMORY_TYPE` and `DEVICE_POINTER`; other
/// attributes are `CUDA_ERROR_NOT_SUPPORTED` (a sim limitation). A pointer the driver
/// did not allocate is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `data` is NULL or writable for the attribute's type.
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: c_int,
    ptr: CUdeviceptr,
) -> CUresult {
    let p = cupti_sys::cuPointerGetAttribute_params {
        data,
        attribute: attribute as _,
        ptr,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
        c"cuPointerGetAttribute",
        p,
        code((|| {
            if data.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let d = registry::lock();
            let (ctx, ty) = if let Some((_, a)) = d.memory.find(ptr) {
                (a.ctx, MEMORYTYPE_DEVICE)
            } else if let Some((b, (size, ctx))) =
                d.memory.host.range(..=(ptr as usize)).next_back()
            {
                if ptr as usize - b >= *size {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                (*ctx, MEMORYTYPE_HOST)
            } else {
                return Err(CUDA_ERROR_INVALID_VALUE);
            };
            // SAFETY: non-NULL, and writable for the attribute's type per this function's
            // contract.
            unsafe {
                match attribute {
                    CONTEXT => out(data.cast::<CUcontext>(), ctx as CUcontext),
                    MEMORY_TYPE => out(data.cast::<c_uint>(), ty),
                    DEVICE_POINTER => out(data.cast::<CUdeviceptr>(), ptr),
                    _ => Err(CUDA_ERROR_NOT_SUPPORTED),
                }
            }
        })())
    )
}
