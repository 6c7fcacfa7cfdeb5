//! The CUDA driver as the runtime uses it: `dlopen("libcuda.so.1")`, `dlsym` of the
//! public entry points (signatures from `cuda.h`), so every driver call the runtime
//! makes reaches the driver's own callbacks; and the simulated driver's private table
//! (`cuGetExportTable` with [`sim_abi::DRIVER_TABLE_ID`]), through which the runtime's
//! own calls are reported to CUPTI, as the real runtime reports them through the
//! driver.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use sim_abi::DriverTable;

pub type CUresult = c_int;
pub type Handle = *mut c_void;
pub type CUdeviceptr = u64;

macro_rules! driver_functions {
    ($($field:ident: $sym:literal => ($($arg:ty),*);)*) => {
        /// The driver entry points the runtime calls.
        pub struct Driver {
            _lib: libloading::Library,
            /// The simulated driver's private table, when it offers one.
            pub table: Option<DriverTable>,
            $(pub $field: unsafe extern "C" fn($($arg),*) -> CUresult,)*
        }

        fn load() -> Option<Driver> {
            // SAFETY: loading the CUDA driver runs its initialisers, which is what the
            // real runtime does; the simulated driver's have no preconditions.
            let lib = unsafe { libloading::Library::new("libcuda.so.1") }.ok()?;
            let table = export_table(&lib);
            Some(Driver {
                $(
                    // SAFETY: the symbol has the `cuda.h` signature it is read as.
                    $field: *unsafe { lib.get(concat!($sym, "\0").as_bytes()) }.ok()?,
                )*
                table,
                _lib: lib,
            })
        }
    };
}

driver_functions! {
    init: "cuInit" => (c_uint);
    driver_get_version: "cuDriverGetVersion" => (*mut c_int);
    device_get_count: "cuDeviceGetCount" => (*mut c_int);
    primary_ctx_retain: "cuDevicePrimaryCtxRetain" => (*mut Handle, c_int);
    ctx_get_current: "cuCtxGetCurrent" => (*mut Handle);
    ctx_set_current: "cuCtxSetCurrent" => (Handle);
    ctx_get_device: "cuCtxGetDevice" => (*mut c_int);
    ctx_synchronize: "cuCtxSynchronize" => ();
    mem_alloc: "cuMemAlloc_v2" => (*mut CUdeviceptr, usize);
    mem_free: "cuMemFree_v2" => (CUdeviceptr);
    mem_alloc_host: "cuMemAllocHost_v2" => (*mut *mut c_void, usize);
    mem_free_host: "cuMemFreeHost" => (*mut c_void);
    memcpy: "cuMemcpy" => (CUdeviceptr, CUdeviceptr, usize);
    memcpy_async: "cuMemcpyAsync" => (CUdeviceptr, CUdeviceptr, usize, Handle);
    memcpy_htod: "cuMemcpyHtoD_v2" => (CUdeviceptr, *const c_void, usize);
    memcpy_dtoh: "cuMemcpyDtoH_v2" => (*mut c_void, CUdeviceptr, usize);
    memcpy_dtod: "cuMemcpyDtoD_v2" => (CUdeviceptr, CUdeviceptr, usize);
    memcpy_htod_async: "cuMemcpyHtoDAsync_v2" => (CUdeviceptr, *const c_void, usize, Handle);
    memcpy_dtoh_async: "cuMemcpyDtoHAsync_v2" => (*mut c_void, CUdeviceptr, usize, Handle);
    memcpy_dtod_async: "cuMemcpyDtoDAsync_v2" => (CUdeviceptr, CUdeviceptr, usize, Handle);
    memset_d8: "cuMemsetD8_v2" => (CUdeviceptr, u8, usize);
    memset_d8_async: "cuMemsetD8Async" => (CUdeviceptr, u8, usize, Handle);
    stream_create: "cuStreamCreate" => (*mut Handle, c_uint);
    stream_destroy: "cuStreamDestroy_v2" => (Handle);
    stream_synchronize: "cuStreamSynchronize" => (Handle);
    stream_query: "cuStreamQuery" => (Handle);
    stream_wait_event: "cuStreamWaitEvent" => (Handle, Handle, c_uint);
    event_create: "cuEventCreate" => (*mut Handle, c_uint);
    event_record: "cuEventRecord" => (Handle, Handle);
    event_synchronize: "cuEventSynchronize" => (Handle);
    event_query: "cuEventQuery" => (Handle);
    event_destroy: "cuEventDestroy_v2" => (Handle);
    library_load_data: "cuLibraryLoadData" => (
        *mut Handle, *const c_void, *mut c_uint, *mut *mut c_void, c_uint,
        *mut c_uint, *mut *mut c_void, c_uint
    );
    library_get_kernel: "cuLibraryGetKernel" => (*mut Handle, Handle, *const c_char);
    launch_kernel: "cuLaunchKernel" => (
        Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle,
        *mut *mut c_void, *mut *mut c_void
    );
    graph_launch: "cuGraphLaunch" => (Handle, Handle);
}

// SAFETY: the function pointers and the table are plain code addresses of a library
// that stays loaded for the life of the process; the driver API is thread-safe.
unsafe impl Send for Driver {}
// SAFETY: as above; nothing in `Driver` is mutated after loading.
unsafe impl Sync for Driver {}

/// The loaded driver, or `None` (once and for all) when `libcuda.so.1` or one of the
/// entry points is missing.
pub fn get() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER.get_or_init(load).as_ref()
}

fn export_table(lib: &libloading::Library) -> Option<DriverTable> {
    // SAFETY: `cuGetExportTable` has the `cuda.h` signature it is read as.
    let f: sim_abi::GetExportTable = *unsafe { lib.get(b"cuGetExportTable\0") }.ok()?;
    // SAFETY: `f` is the loaded driver's `cuGetExportTable`.
    unsafe { sim_abi::driver_table(f) }
}
