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
    pub(crate) const UNIFIED_ADDRESSING: i32 = 41;
    pub(crate) const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
    pub(crate) const COMPUTE_CAPABILITY_MINOR: i32 = 76;
    pub(crate) const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: i32 = 81;
    pub(crate) const MAX_REGISTERS_PER_MULTIPROCESSOR: i32 = 82;
    pub(crate) const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: i32 = 97;
    pub(crate) const MAX_BLOCKS_PER_MULTIPROCESSOR: i32 = 106;
    pub(crate) const MEMORY_POOLS_SUPPORTED: i32 = 115;
    pub(crate) const CAN_USE_64_BIT_STREAM_MEM_OPS: i32 = 122;
    pub(crate) const CAN_USE_STREAM_WAIT_VALUE_NOR: i32 = 123;
    /// `CU_DEVICE_ATTRIBUTE_MAX` of CUDA 13's `cuda.h`: one past the last attribute.
    pub(crate) const PCI_BUS_ID: i32 = 33;
    pub(crate) const PCI_DEVICE_ID: i32 = 34;
    pub(crate) const PCI_DOMAIN_ID: i32 = 50;
    pub(crate) const MAX: i32 = 162;
}

/// `CUdriverProcAddressQueryResult` (`cuda.h`, `enum CUdriverProcAddressQueryResult_enum`).
pub(crate) mod proc_status {
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const SYMBOL_NOT_FOUND: i32 = 1;
    pub(crate) const VERSION_NOT_SUFFICIENT: i32 = 2;
}

pub(crate) use cupti_sys::{
    CUcontext, CUdeviceptr, CUevent, CUfunction, CUgraph, CUgraphExec, CUgraphNode, CUkernel,
    CUlibrary, CUmodule, CUstream,
};

/// Special stream handles (`cuda.h`: `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`).
pub(crate) const CU_STREAM_LEGACY: usize = 0x1;
pub(crate) const CU_STREAM_PER_THREAD: usize = 0x2;

/// `CUctx_flags`: every valid bit (`CU_CTX_FLAGS_MASK`).
pub(crate) const CU_CTX_FLAGS_MASK: u32 = 0xFF;
/// `CUstream_flags`: `CU_STREAM_NON_BLOCKING`.
pub(crate) const CU_STREAM_NON_BLOCKING: u32 = 0x1;
/// `CUevent_flags`.
pub(crate) const CU_EVENT_BLOCKING_SYNC: u32 = 0x1;
pub(crate) const CU_EVENT_DISABLE_TIMING: u32 = 0x2;
pub(crate) const CU_EVENT_INTERPROCESS: u32 = 0x4;
/// `CUevent_wait_flags`: `CU_EVENT_WAIT_EXTERNAL`.
pub(crate) const CU_EVENT_WAIT_EXTERNAL: u32 = 0x1;
/// `cuMemHostAlloc` flags: `CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED`.
pub(crate) const CU_MEMHOSTALLOC_ALL: u32 = 0x7;

/// `CUfunction_attribute` values.
pub(crate) mod func_attr {
    pub(crate) const MAX_THREADS_PER_BLOCK: i32 = 0;
    pub(crate) const SHARED_SIZE_BYTES: i32 = 1;
    pub(crate) const CONST_SIZE_BYTES: i32 = 2;
    pub(crate) const LOCAL_SIZE_BYTES: i32 = 3;
    pub(crate) const NUM_REGS: i32 = 4;
    pub(crate) const PTX_VERSION: i32 = 5;
    pub(crate) const BINARY_VERSION: i32 = 6;
    pub(crate) const CACHE_MODE_CA: i32 = 7;
    pub(crate) const MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
    pub(crate) const PREFERRED_SHARED_MEMORY_CARVEOUT: i32 = 9;
}

/// `CUpointer_attribute` values and `CUmemorytype`.
pub(crate) mod pointer_attr {
    pub(crate) const CONTEXT: i32 = 1;
    pub(crate) const MEMORY_TYPE: i32 = 2;
    pub(crate) const DEVICE_POINTER: i32 = 3;
    pub(crate) const MEMORYTYPE_HOST: u32 = 1;
    pub(crate) const MEMORYTYPE_DEVICE: u32 = 2;
}

/// `CUstreamCaptureMode` and `CUstreamCaptureStatus` values.
pub(crate) mod capture {
    pub(crate) const MODE_RELAXED: u32 = 2;
    pub(crate) const STATUS_NONE: u32 = 0;
    pub(crate) const STATUS_ACTIVE: u32 = 1;
    pub(crate) const STATUS_INVALIDATED: u32 = 2;
}
