//! The `cuda.h` values the sim uses. `CUresult` values come from `cupti-sys` (generated
//! from NVIDIA's headers); enums `cupti-sys` does not carry are declared here with the
//! values of CUDA 13's `cuda.h`.

pub(crate) use cupti_sys::cudaError_enum::*;
pub(crate) use cupti_sys::{CUdevice, CUresult, CUuuid};

/// `CUdevice_attribute` values (`cuda.h`, `enum CUdevice_attribute_enum`).
pub(crate) mod attr {
    pub(crate) const MAX_THREADS_PER_BLOCK: i32 = 1;
    pub(crate) const MAX_BLOCK_DIM_X: i32 = 2;
    pub(crate) const MAX_BLOCK_DIM_Y: i32 = 3;
    pub(crate) const MAX_BLOCK_DIM_Z: i32 = 4;
    pub(crate) const MAX_GRID_DIM_X: i32 = 5;
    pub(crate) const MAX_GRID_DIM_Y: i32 = 6;
    pub(crate) const MAX_GRID_DIM_Z: i32 = 7;
    pub(crate) const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 8;
    pub(crate) const WARP_SIZE: i32 = 10;
    pub(crate) const MAX_REGISTERS_PER_BLOCK: i32 = 12;
    pub(crate) const CLOCK_RATE: i32 = 13;
    pub(crate) const MULTIPROCESSOR_COUNT: i32 = 16;
    pub(crate) const MEMORY_CLOCK_RATE: i32 = 36;
    pub(crate) const GLOBAL_MEMORY_BUS_WIDTH: i32 = 37;
    pub(crate) const L2_CACHE_SIZE: i32 = 38;
    pub(crate) const MAX_THREADS_PER_MULTIPROCESSOR: i32 = 39;
    pub(crate) const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
    pub(crate) const COMPUTE_CAPABILITY_MINOR: i32 = 76;
    pub(crate) const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: i32 = 81;
    pub(crate) const MAX_REGISTERS_PER_MULTIPROCESSOR: i32 = 82;
    pub(crate) const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: i32 = 97;
    pub(crate) const MAX_BLOCKS_PER_MULTIPROCESSOR: i32 = 106;
    /// `CU_DEVICE_ATTRIBUTE_MAX` of CUDA 13's `cuda.h`: one past the last attribute.
    pub(crate) const MAX: i32 = 162;
}

/// `CUdriverProcAddressQueryResult` (`cuda.h`, `enum CUdriverProcAddressQueryResult_enum`).
pub(crate) mod proc_status {
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const SYMBOL_NOT_FOUND: i32 = 1;
    pub(crate) const VERSION_NOT_SUFFICIENT: i32 = 2;
}
