//! Device records from the driver's public device queries.

use std::ffi::{c_char, c_int, CStr};

use cupti_sys::CUuuid;

use crate::driver::Driver;
use crate::layouts::DeviceFacts;

// `CUdevice_attribute` values from cuda.h.
const MAX_THREADS_PER_BLOCK: c_int = 1;
const MAX_BLOCK_DIM_X: c_int = 2;
const MAX_GRID_DIM_X: c_int = 5;
const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
const TOTAL_CONSTANT_MEMORY: c_int = 9;
const WARP_SIZE: c_int = 10;
const MAX_REGISTERS_PER_BLOCK: c_int = 12;
const CLOCK_RATE: c_int = 13;
const MULTIPROCESSOR_COUNT: c_int = 16;
const ECC_ENABLED: c_int = 32;
const MEMORY_CLOCK_RATE: c_int = 36;
const GLOBAL_MEMORY_BUS_WIDTH: c_int = 37;
const L2_CACHE_SIZE: c_int = 38;
const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
const ASYNC_ENGINE_COUNT: c_int = 40;
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;
const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: c_int = 81;
const MAX_REGISTERS_PER_MULTIPROCESSOR: c_int = 82;
const MAX_BLOCKS_PER_MULTIPROCESSOR: c_int = 106;
const NUMA_CONFIG: c_int = 130;
const NUMA_ID: c_int = 131;

/// The facts of device `dev`, or `None` if the driver cannot describe it. Attributes
/// the driver does not answer are 0 (unknown).
pub fn facts(drv: &Driver, dev: c_int) -> Option<DeviceFacts> {
    let a = |attr| drv.attribute(attr, dev).unwrap_or(0).max(0) as u32;
    let mut total: usize = 0;
    let f = drv.device_total_mem?;
    // SAFETY: the pointer is valid for the call.
    if unsafe { f(&mut total, dev) } != 0 {
        return None;
    }
    let mut name: [c_char; 256] = [0; 256];
    if let Some(f) = drv.device_get_name {
        // SAFETY: the buffer holds 256 chars.
        unsafe { f(name.as_mut_ptr(), 255, dev) };
    }
    name[255] = 0;
    // SAFETY: NUL-terminated above.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) };
    let name = if crate::release::current().device_name_client_owned() {
        // SAFETY: strdup of a valid C string; the client frees it, as 13.x documents.
        unsafe { libc::strdup(name.as_ptr()) as *const c_char }
    } else {
        crate::names::intern_cstr(name).as_ptr()
    };
    let mut uuid = CUuuid { bytes: [0; 16] };
    if let Some(f) = drv.device_get_uuid {
        // SAFETY: the pointer is valid for the call.
        unsafe { f(&mut uuid, dev) };
    }
    let warp = a(WARP_SIZE).max(1);
    let (numa_config, numa_id) = (drv.attribute(NUMA_CONFIG, dev), drv.attribute(NUMA_ID, dev));
    Some(DeviceFacts {
        id: dev as u32,
        // kBytes/s: memory clock (kHz) x 2 (double data rate) x bus width in bytes.
        global_memory_bandwidth_kbps: u64::from(a(MEMORY_CLOCK_RATE))
            * 2
            * u64::from(a(GLOBAL_MEMORY_BUS_WIDTH) / 8),
        global_memory_size: total as u64,
        constant_memory_size: a(TOTAL_CONSTANT_MEMORY),
        l2_cache_size: a(L2_CACHE_SIZE),
        threads_per_warp: a(WARP_SIZE),
        core_clock_khz: a(CLOCK_RATE),
        memcpy_engines: a(ASYNC_ENGINE_COUNT),
        multiprocessors: a(MULTIPROCESSOR_COUNT),
        // Four warp schedulers issuing one instruction per cycle each on every
        // architecture since Volta (cc 7.0); unknown (0) before.
        max_ipc: if a(COMPUTE_CAPABILITY_MAJOR) >= 7 {
            4
        } else {
            0
        },
        max_warps_per_sm: a(MAX_THREADS_PER_MULTIPROCESSOR) / warp,
        max_blocks_per_sm: a(MAX_BLOCKS_PER_MULTIPROCESSOR),
        max_shared_per_sm: a(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        max_registers_per_sm: a(MAX_REGISTERS_PER_MULTIPROCESSOR),
        max_registers_per_block: a(MAX_REGISTERS_PER_BLOCK),
        max_shared_per_block: a(MAX_SHARED_MEMORY_PER_BLOCK),
        max_threads_per_block: a(MAX_THREADS_PER_BLOCK),
        max_block: [
            a(MAX_BLOCK_DIM_X),
            a(MAX_BLOCK_DIM_X + 1),
            a(MAX_BLOCK_DIM_X + 2),
        ],
        max_grid: [
            a(MAX_GRID_DIM_X),
            a(MAX_GRID_DIM_X + 1),
            a(MAX_GRID_DIM_X + 2),
        ],
        cc: (a(COMPUTE_CAPABILITY_MAJOR), a(COMPUTE_CAPABILITY_MINOR)),
        ecc_enabled: a(ECC_ENABLED),
        uuid,
        name,
        // CU_DEVICE_NUMA_CONFIG_NUMA_NODE = 1.
        is_numa_node: u32::from(numa_config == Some(1)),
        // Not a NUMA node, or unknown: the invalid id.
        numa_id: match (numa_config, numa_id) {
            (Some(1), Some(id)) if id >= 0 => id as u32,
            _ => u32::MAX,
        },
    })
}
