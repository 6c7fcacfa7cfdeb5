//! The CUDA driver API as a library built on CUDA uses it: `dlopen("libcuda.so.1")` and
//! `dlsym` of the public entry points (signatures from `cuda.h`), plus the simulated
//! driver's private table (`cuGetExportTable` with [`sim_abi::DRIVER_TABLE_ID`]) through
//! which the GEMM shape of each launch is announced.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use sim_abi::{DriverTable, GemmShape};

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUstream = *mut c_void;

pub const CUDA_SUCCESS: CUresult = 0;
/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
pub const ATTR_SM_COUNT: c_int = 16;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const ATTR_CC_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const ATTR_CC_MINOR: c_int = 76;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub const FUNC_ATTR_MAX_DYNAMIC_SHARED: c_int = 8;

type FnInit = unsafe extern "C" fn(c_uint) -> CUresult;
type FnCtxGetCurrent = unsafe extern "C" fn(*mut CUcontext) -> CUresult;
type FnCtxSetCurrent = unsafe extern "C" fn(CUcontext) -> CUresult;
type FnCtxGetDevice = unsafe extern "C" fn(*mut CUdevice) -> CUresult;
type FnPrimaryCtxRetain = unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult;
type FnDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult;
type FnModuleLoadData = unsafe extern "C" fn(*mut CUmodule, *const c_void) -> CUresult;
type FnModuleUnload = unsafe extern "C" fn(CUmodule) -> CUresult;
type FnModuleGetFunction =
    unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> CUresult;
type FnFuncSetAttribute = unsafe extern "C" fn(CUfunction, c_int, c_int) -> CUresult;
type FnLaunchKernel = unsafe extern "C" fn(
    CUfunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    CUstream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

/// The driver entry points the simulated libraries call. Optional ones are `None`
/// when the driver does not export them.
pub struct Driver {
    _lib: libloading::Library,
    pub init: FnInit,
    pub ctx_get_current: FnCtxGetCurrent,
    pub ctx_set_current: FnCtxSetCurrent,
    pub ctx_get_device: FnCtxGetDevice,
    pub primary_ctx_retain: FnPrimaryCtxRetain,
    pub device_get_attribute: FnDeviceGetAttribute,
    pub module_load_data: FnModuleLoadData,
    pub module_unload: FnModuleUnload,
    pub module_get_function: FnModuleGetFunction,
    pub func_set_attribute: Option<FnFuncSetAttribute>,
    pub launch_kernel: FnLaunchKernel,
    /// The simulated driver's private table, when it offers one.
    pub table: Option<DriverTable>,
}

// SAFETY: the function pointers and the table are plain code addresses of a library
// that stays loaded for the life of the process; the driver API is thread-safe.
unsafe impl Send for Driver {}
// SAFETY: as above; nothing in `Driver` is mutated after loading.
unsafe impl Sync for Driver {}

/// The loaded driver, or `None` (once and for all) when `libcuda.so.1` or one of the
/// required entry points is missing.
pub fn get() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER.get_or_init(load).as_ref()
}

fn load() -> Option<Driver> {
    // SAFETY: loading the CUDA driver runs its initialisers, which is what any CUDA
    // library does; the simulated driver's have no preconditions.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }.ok()?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol has the `cuda.h` signature of the type it is read as.
            unsafe { lib.get::<_>(concat!($name, "\0").as_bytes()) }
                .ok()
                .map(|s| *s)
        };
    }
    let get_export_table: Option<sim_abi::GetExportTable> = sym!("cuGetExportTable");
    // SAFETY: `f` is the loaded driver's `cuGetExportTable`.
    let table = get_export_table.and_then(|f| unsafe { sim_abi::driver_table(f) });
    Some(Driver {
        init: sym!("cuInit")?,
        ctx_get_current: sym!("cuCtxGetCurrent")?,
        ctx_set_current: sym!("cuCtxSetCurrent")?,
        ctx_get_device: sym!("cuCtxGetDevice")?,
        primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain")?,
        device_get_attribute: sym!("cuDeviceGetAttribute")?,
        module_load_data: sym!("cuModuleLoadData")?,
        module_unload: sym!("cuModuleUnload")?,
        module_get_function: sym!("cuModuleGetFunction")?,
        func_set_attribute: sym!("cuFuncSetAttribute"),
        launch_kernel: sym!("cuLaunchKernel")?,
        table,
        _lib: lib,
    })
}

impl Driver {
    /// Announces (Some) or clears (None) the GEMM shape of the kernels this thread
    /// launches next.
    pub fn set_thread_gemm(&self, shape: Option<&GemmShape>) {
        if let Some(t) = &self.table {
            let p = shape.map_or(std::ptr::null(), |s| s as *const GemmShape);
            // SAFETY: `p` is null or points to a live `GemmShape` for the call.
            unsafe { (t.set_thread_gemm)(p) };
        }
    }
}
