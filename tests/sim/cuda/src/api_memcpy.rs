//! Copies and sets: `cuMemcpy{HtoD,DtoH,DtoD}_v2` and their `Async_v2` forms,
//! unified-address `cuMemcpy` / `cuMemcpyAsync`, `cuMemsetD{8,16,32}_v2` and their
//! `Async` forms. Each is a GPU operation (or, in a capturing stream, a graph node).
//!
//! Synchronous copies return when the copy has completed, except device-to-device
//! ones, which (as NVIDIA's "API synchronization behavior" documents) do not
//! synchronise with the host; synchronous sets do not either. An asynchronous copy
//! from device to pageable host memory returns only once it has completed (the same
//! document); other asynchronous copies return at once.

use std::ffi::{c_uchar, c_uint, c_ushort, c_void};

use cupti_sys::CUpti_ActivityMemcpyKind::*;
use cupti_sys::CUpti_ActivityMemoryKind::*;

use crate::clock;
use crate::consts::*;
use crate::ops::{self, Issued};
use crate::registry::{self, CopyKind, OpSpec};

/// Which side of a copy is on the device.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Host,
    Device,
    /// Decided by the address (unified addressing).
    Any,
}

/// Validates and issues a copy; waits for it when `sync`.
fn memcpy(
    dst: u64,
    src: u64,
    bytes: usize,
    sides: (Side, Side),
    stream: CUstream,
    sync: bool,
) -> CUresult {
    let issued = {
        let mut d = registry::lock();
        let r = (|| {
            let s = d.stream(stream)?;
            let device = |p: u64, side: Side| match side {
                Side::Any => d.memory.is_device_address(p),
                s => s == Side::Device,
            };
            let (dd, sd) = (device(dst, sides.0), device(src, sides.1));
            if dst == 0 || src == 0 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let n = bytes as u64;
            for (p, is_dev) in [(dst, dd), (src, sd)] {
                if is_dev {
                    d.memory.check(p, n)?;
                }
            }
            if bytes == 0 {
                return Ok(None);
            }
            let mem_kind = |p: u64, is_dev: bool| {
                if is_dev {
                    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
                } else if d.memory.is_pinned(p as usize, bytes) {
                    CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                } else {
                    CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
                }
            };
            let kind = CopyKind {
                kind: match (sd, dd) {
                    (false, true) => CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                    (true, false) => CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                    (true, true) => CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                    (false, false) => CUPTI_ACTIVITY_MEMCPY_KIND_HTOH,
                } as u8,
                src: mem_kind(src, sd) as u8,
                dst: mem_kind(dst, dd) as u8,
            };
            let op = OpSpec::Memcpy {
                dst,
                src,
                bytes: n,
                kind,
            };
            // A synchronous copy returns when it has completed, except device to
            // device; an asynchronous one from device to pageable host memory does
            // too (NVIDIA's "API synchronization behavior").
            let to_pageable = kind.dst == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE as u8;
            let wait = if sync {
                !(sd && dd)
            } else {
                sd && !dd && to_pageable
            };
            ops::issue(&mut d, s, op).map(|i| Some((i, wait)))
        })();
        match r {
            Ok(v) => v,
            Err(e) => return e,
        }
    };
    finish(issued)
}

/// Reports an issued operation and, when asked, waits for it to end.
fn finish(issued: Option<(Issued, bool)>) -> CUresult {
    if let Some((i, wait)) = issued {
        let end = i.end_ns();
        ops::report(vec![i]);
        if wait {
            clock::wait_until(end);
        }
    }
    CUDA_SUCCESS
}

/// `CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)`.
///
/// # Safety
/// `src` is valid for reading `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
) -> CUresult {
    let p = cupti_sys::cuMemcpyHtoD_v2_params {
        dstDevice: dst,
        srcHost: src,
        ByteCount: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
        c"cuMemcpyHtoD_v2",
        p,
        memcpy(
            dst,
            src as u64,
            n,
            (Side::Device, Side::Host),
            std::ptr::null_mut(),
            true
        )
    )
}

/// `CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)`.
///
/// # Safety
/// `dst` is valid for writing `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize) -> CUresult {
    let p = cupti_sys::cuMemcpyDtoH_v2_params {
        dstHost: dst,
        srcDevice: src,
        ByteCount: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
        c"cuMemcpyDtoH_v2",
        p,
        memcpy(
            dst as u64,
            src,
            n,
            (Side::Host, Side::Device),
            std::ptr::null_mut(),
            true
        )
    )
}

/// `CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)`.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    let p = cupti_sys::cuMemcpyDtoD_v2_params {
        dstDevice: dst,
        srcDevice: src,
        ByteCount: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
        c"cuMemcpyDtoD_v2",
        p,
        memcpy(
            dst,
            src,
            n,
            (Side::Device, Side::Device),
            std::ptr::null_mut(),
            true
        )
    )
}

/// `CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t
/// ByteCount, CUstream hStream)`.
///
/// # Safety
/// `src` is valid for reading `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemcpyHtoDAsync_v2_params {
        dstDevice: dst,
        srcHost: src,
        ByteCount: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
        c"cuMemcpyHtoDAsync_v2",
        p,
        memcpy(
            dst,
            src as u64,
            n,
            (Side::Device, Side::Host),
            h_stream,
            false
        )
    )
}

/// `CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t
/// ByteCount, CUstream hStream)`.
///
/// # Safety
/// `dst` is valid for writing `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemcpyDtoHAsync_v2_params {
        dstHost: dst,
        srcDevice: src,
        ByteCount: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
        c"cuMemcpyDtoHAsync_v2",
        p,
        memcpy(
            dst as u64,
            src,
            n,
            (Side::Host, Side::Device),
            h_stream,
            false
        )
    )
}

/// `CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t
/// ByteCount, CUstream hStream)`.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemcpyDtoDAsync_v2_params {
        dstDevice: dst,
        srcDevice: src,
        ByteCount: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
        c"cuMemcpyDtoDAsync_v2",
        p,
        memcpy(dst, src, n, (Side::Device, Side::Device), h_stream, false)
    )
}

/// `CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)`: either
/// side may be host memory (unified addressing).
///
/// # Safety
/// Host-side addresses are valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    let p = cupti_sys::cuMemcpy_params {
        dst,
        src,
        ByteCount: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
        c"cuMemcpy",
        p,
        memcpy(
            dst,
            src,
            n,
            (Side::Any, Side::Any),
            std::ptr::null_mut(),
            true
        )
    )
}

/// `CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream
/// hStream)`.
///
/// # Safety
/// Host-side addresses are valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemcpyAsync_params {
        dst,
        src,
        ByteCount: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
        c"cuMemcpyAsync",
        p,
        memcpy(dst, src, n, (Side::Any, Side::Any), h_stream, false)
    )
}

/// Validates and issues a set of `count` elements of `elem` bytes. `dst` must be
/// aligned to the element size.
fn memset(dst: CUdeviceptr, value: u32, elem: u8, count: usize, stream: CUstream) -> CUresult {
    let issued = {
        let mut d = registry::lock();
        let r = (|| {
            let s = d.stream(stream)?;
            if dst & (u64::from(elem) - 1) != 0 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let bytes = (count as u64)
                .checked_mul(u64::from(elem))
                .ok_or(CUDA_ERROR_INVALID_VALUE)?;
            d.memory.check(dst, bytes)?;
            if count == 0 {
                return Ok(None);
            }
            let op = OpSpec::Memset {
                dst,
                count: count as u64,
                elem,
                value,
            };
            ops::issue(&mut d, s, op).map(|i| Some((i, false)))
        })();
        match r {
            Ok(v) => v,
            Err(e) => return e,
        }
    };
    finish(issued)
}

/// `CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)`.
#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, uc: c_uchar, n: usize) -> CUresult {
    let p = cupti_sys::cuMemsetD8_v2_params {
        dstDevice: dst,
        uc,
        N: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
        c"cuMemsetD8_v2",
        p,
        memset(dst, u32::from(uc), 1, n, std::ptr::null_mut())
    )
}

/// `CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)`.
#[no_mangle]
pub extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, us: c_ushort, n: usize) -> CUresult {
    let p = cupti_sys::cuMemsetD16_v2_params {
        dstDevice: dst,
        us,
        N: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
        c"cuMemsetD16_v2",
        p,
        memset(dst, u32::from(us), 2, n, std::ptr::null_mut())
    )
}

/// `CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)`.
#[no_mangle]
pub extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, ui: c_uint, n: usize) -> CUresult {
    let p = cupti_sys::cuMemsetD32_v2_params {
        dstDevice: dst,
        ui,
        N: n,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
        c"cuMemsetD32_v2",
        p,
        memset(dst, ui, 4, n, std::ptr::null_mut())
    )
}

/// `CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)`.
#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    uc: c_uchar,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemsetD8Async_params {
        dstDevice: dst,
        uc,
        N: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
        c"cuMemsetD8Async",
        p,
        memset(dst, u32::from(uc), 1, n, h_stream)
    )
}

/// `CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)`.
#[no_mangle]
pub extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    us: c_ushort,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemsetD16Async_params {
        dstDevice: dst,
        us,
        N: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
        c"cuMemsetD16Async",
        p,
        memset(dst, u32::from(us), 2, n, h_stream)
    )
}

/// `CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)`.
#[no_mangle]
pub extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    ui: c_uint,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    let p = cupti_sys::cuMemsetD32Async_params {
        dstDevice: dst,
        ui,
        N: n,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
        c"cuMemsetD32Async",
        p,
        memset(dst, ui, 4, n, h_stream)
    )
}
