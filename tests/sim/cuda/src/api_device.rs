//! Device enumeration and description: `cuDeviceGetCount`, `cuDeviceGet`,
//! `cuDeviceGetName`, `cuDeviceGetAttribute`, `cuDeviceTotalMem_v2`,
//! `cuDeviceGetUuid`, `cuDeviceGetUuid_v2`. All need a prior successful `cuInit`.

use std::ffi::{c_char, c_int};

use crate::config::{self, Device};
use crate::consts::*;
use crate::ffi::{guard, write_out};
use crate::state;

/// The device `dev` names, or the error the driver returns for it.
pub(crate) fn device(dev: CUdevice) -> Result<&'static Device, CUresult> {
    if !state::is_initialized() {
        return Err(CUDA_ERROR_NOT_INITIALIZED);
    }
    let c = config::get();
    if (0..c.device_count).contains(&dev) {
        Ok(&c.device)
    } else {
        Err(CUDA_ERROR_INVALID_DEVICE)
    }
}

/// `CUresult cuDeviceGetCount(int *count)`.
///
/// # Safety
/// `count` is NULL or valid for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    guard(move || {
        if !state::is_initialized() {
            return CUDA_ERROR_NOT_INITIALIZED;
        }
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { write_out(count, config::get().device_count) }
    })
}

/// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
///
/// # Safety
/// `out` is NULL or valid for writing a `CUdevice`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(out: *mut CUdevice, ordinal: c_int) -> CUresult {
    guard(move || {
        if !state::is_initialized() {
            return CUDA_ERROR_NOT_INITIALIZED;
        }
        if out.is_null() {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if let Err(e) = device(ordinal) {
            return e;
        }
        // SAFETY: the caller's pointer is non-NULL and writable.
        unsafe { write_out(out, ordinal) }
    })
}

/// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`: the name, shortened
/// to fit `len` bytes with its terminating NUL.
///
/// # Safety
/// `name` is NULL or valid for writing `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    guard(move || {
        let d = match device(dev) {
            Ok(d) => d,
            Err(e) => return e,
        };
        if name.is_null() || len <= 0 {
            return CUDA_ERROR_INVALID_VALUE;
        }
        let bytes = d.name.as_bytes();
        let n = bytes.len().min(len as usize - 1);
        // SAFETY: `name` holds `len` bytes and `n + 1 <= len`; the source is a distinct
        // Rust string.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        CUDA_SUCCESS
    })
}

/// The value of attribute `attrib` on `d`; `None` for an attribute the sim does not
/// model (or that `cuda.h` does not define).
fn attribute(d: &Device, ordinal: CUdevice, attrib: c_int) -> Option<c_int> {
    use crate::consts::attr::*;
    Some(match attrib {
        MAX_THREADS_PER_BLOCK | MAX_BLOCK_DIM_X | MAX_BLOCK_DIM_Y => 1024,
        MAX_BLOCK_DIM_Z => 64,
        MAX_GRID_DIM_X => i32::MAX,
        MAX_GRID_DIM_Y | MAX_GRID_DIM_Z => 65535,
        MAX_SHARED_MEMORY_PER_BLOCK => 48 * 1024,
        WARP_SIZE => 32,
        MAX_REGISTERS_PER_BLOCK | MAX_REGISTERS_PER_MULTIPROCESSOR => 65536,
        CLOCK_RATE => d.clock_khz,
        MULTIPROCESSOR_COUNT => d.sm_count,
        MEMORY_CLOCK_RATE => d.mem_clock_khz,
        GLOBAL_MEMORY_BUS_WIDTH => d.bus_width_bits,
        L2_CACHE_SIZE => d.l2_bytes,
        MAX_THREADS_PER_MULTIPROCESSOR => 2048,
        COMPUTE_CAPABILITY_MAJOR => d.cc_major,
        COMPUTE_CAPABILITY_MINOR => d.cc_minor,
        MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => 228 * 1024,
        MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => 227 * 1024,
        MAX_BLOCKS_PER_MULTIPROCESSOR => 32,
        // Where NVML finds it too (`sim_core::machine::pci_bus`).
        PCI_BUS_ID => config::pci_bus(ordinal as u32) as i32,
        PCI_DEVICE_ID | PCI_DOMAIN_ID => 0,
        UNIFIED_ADDRESSING | MEMORY_POOLS_SUPPORTED => 1,
        // Stream memory operations (`api_stream_memop`): 64-bit ones and NOR waits.
        CAN_USE_64_BIT_STREAM_MEM_OPS | CAN_USE_STREAM_WAIT_VALUE_NOR => 1,
        _ => return None,
    })
}

/// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
/// An attribute outside `cuda.h`'s enum is `CUDA_ERROR_INVALID_VALUE`; a defined one
/// the sim does not model is `CUDA_ERROR_NOT_SUPPORTED` (a sim limitation, not driver
/// behaviour: the real driver answers every defined attribute).
///
/// # Safety
/// `pi` is NULL or valid for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    dev: CUdevice,
) -> CUresult {
    guard(move || {
        let d = match device(dev) {
            Ok(d) => d,
            Err(e) => return e,
        };
        if pi.is_null() || !(1..crate::consts::attr::MAX).contains(&attrib) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        match attribute(d, dev, attrib) {
            // SAFETY: the caller's pointer is non-NULL and writable.
            Some(v) => unsafe { write_out(pi, v) },
            None => CUDA_ERROR_NOT_SUPPORTED,
        }
    })
}

/// `CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)` (`cuDeviceTotalMem` in
/// `cuda.h`).
///
/// # Safety
/// `bytes` is NULL or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    guard(move || match device(dev) {
        // SAFETY: the caller's pointer is NULL or writable.
        Ok(d) => unsafe { write_out(bytes, d.total_mem_bytes) },
        Err(e) => e,
    })
}

/// Device `dev`'s UUID (`sim_core::machine::uuid`, which NVML reports too).
fn uuid(dev: CUdevice) -> CUuuid {
    CUuuid {
        bytes: config::uuid(dev as u32).map(|x| x as c_char),
    }
}

/// # Safety
/// `out` is NULL or valid for writing a `CUuuid`.
unsafe fn get_uuid(out: *mut CUuuid, dev: CUdevice) -> CUresult {
    match device(dev) {
        // SAFETY: per this function's contract.
        Ok(_) => unsafe { write_out(out, uuid(dev)) },
        Err(e) => e,
    }
}

/// `CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)` (the CUDA 9.2 entry point).
///
/// # Safety
/// `out` is NULL or valid for writing a `CUuuid`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(out: *mut CUuuid, dev: CUdevice) -> CUresult {
    // SAFETY: the caller's pointer is NULL or writable.
    guard(move || unsafe { get_uuid(out, dev) })
}

/// `CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)` (`cuDeviceGetUuid` in
/// `cuda.h` since CUDA 11.4).
///
/// # Safety
/// `out` is NULL or valid for writing a `CUuuid`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(out: *mut CUuuid, dev: CUdevice) -> CUresult {
    // SAFETY: the caller's pointer is NULL or writable.
    guard(move || unsafe { get_uuid(out, dev) })
}
