//! The connection to the simulated driver.
//!
//! On the first CUPTI call that needs the driver, `libcuda.so.1` is opened (in a CUDA
//! process it is already loaded, so this only takes a reference), `cuGetExportTable`
//! is asked for [`sim_abi::DRIVER_TABLE_ID`], and the [`crate::tracer`] is installed
//! with `set_tracer`. If any step fails (no `libcuda.so.1`, a driver without the sim
//! table, another tracer already installed), the calls that need the driver return
//! `CUPTI_ERROR_NOT_INITIALIZED` ("unable to initialize CUPTI" in the headers) and the
//! connection is retried on the next such call.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use cupti_sys::{CUcontext, CUuuid};
use sim_abi::{DriverTable, Tracer};

type DeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
type DeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type DeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
type DeviceGetUuid = unsafe extern "C" fn(*mut CUuuid, c_int) -> c_int;
type CtxGetCurrent = unsafe extern "C" fn(*mut CUcontext) -> c_int;

/// The driver as CUPTI uses it: the private table plus a few public functions for
/// device records (each `None` if the driver lacks it).
#[derive(Clone, Copy)]
pub struct Driver {
    pub table: DriverTable,
    pub device_get_attribute: Option<DeviceGetAttribute>,
    pub device_get_name: Option<DeviceGetName>,
    pub device_total_mem: Option<DeviceTotalMem>,
    pub device_get_uuid: Option<DeviceGetUuid>,
    pub ctx_get_current: Option<CtxGetCurrent>,
}

static DRIVER: Mutex<Option<&'static Driver>> = Mutex::new(None);

/// The connected driver, connecting (and installing the tracer) if needed.
pub fn get() -> Option<&'static Driver> {
    let mut d = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    if d.is_none() {
        *d = connect(false);
    }
    *d
}

/// The driver if already connected, or if `libcuda.so.1` is already loaded in the
/// process (then connecting); never loads the driver.
pub fn get_if_loaded() -> Option<&'static Driver> {
    let mut d = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    if d.is_none() {
        *d = connect(true);
    }
    *d
}

/// The driver if connected; never connects.
pub fn connected() -> Option<&'static Driver> {
    *DRIVER.lock().unwrap_or_else(|e| e.into_inner())
}

/// The driver's clock (`DriverTable::now_ns`) when connected, else `CLOCK_REALTIME`
/// in ns (the driver's clock is on that timebase).
pub fn now_ns() -> u64 {
    match connected() {
        // SAFETY: the table's functions are valid for the life of the process.
        Some(d) => unsafe { (d.table.now_ns)() },
        None => realtime_ns(),
    }
}

/// `CLOCK_REALTIME` in ns.
pub fn realtime_ns() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_nanos() as u64
}

/// Removes the tracer (cuptiFinalize). The driver stays known; the next call that
/// needs it installs the tracer again.
pub fn detach() {
    let mut d = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(drv) = d.take() {
        // SAFETY: null removes the tracer, as DriverTable::set_tracer documents.
        unsafe { (drv.table.set_tracer)(std::ptr::null()) };
    }
}

/// Installs `driver` as the connected driver and `tracer` with it (unit tests play the
/// driver this way). Returns false if the driver refuses the tracer.
pub fn install(driver: Driver, tracer: &'static Tracer) -> bool {
    // SAFETY: the tracer is 'static; set_tracer is the driver's documented entry point.
    if unsafe { (driver.table.set_tracer)(tracer) } != 0 {
        return false;
    }
    *DRIVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::leak(Box::new(driver)));
    true
}

fn connect(only_if_loaded: bool) -> Option<&'static Driver> {
    let flags = libc::RTLD_NOW | if only_if_loaded { libc::RTLD_NOLOAD } else { 0 };
    // SAFETY: opening the CUDA driver (normally already loaded in a CUDA process); its
    // initialisers are the driver's own. The handle is never closed.
    let lib = unsafe { libloading::os::unix::Library::open(Some("libcuda.so.1"), flags) }.ok()?;
    // SAFETY: the driver documents `CUresult cuGetExportTable(const void**, const CUuuid*)`.
    let get_table = unsafe { lib.get::<sim_abi::GetExportTable>(b"cuGetExportTable\0") }.ok()?;
    // SAFETY: `get_table` is the loaded driver's `cuGetExportTable`.
    let table = unsafe { sim_abi::driver_table(*get_table) }?;
    macro_rules! sym {
        ($t:ty, $name:literal) => {
            // SAFETY: the symbol is the driver API function of that name, whose
            // prototype in cuda.h is `$t`.
            unsafe { lib.get::<$t>($name) }.ok().map(|s| *s)
        };
    }
    let driver = Driver {
        table,
        device_get_attribute: sym!(DeviceGetAttribute, b"cuDeviceGetAttribute\0"),
        device_get_name: sym!(DeviceGetName, b"cuDeviceGetName\0"),
        device_total_mem: sym!(DeviceTotalMem, b"cuDeviceTotalMem_v2\0"),
        device_get_uuid: sym!(DeviceGetUuid, b"cuDeviceGetUuid\0"),
        ctx_get_current: sym!(CtxGetCurrent, b"cuCtxGetCurrent\0"),
    };
    std::mem::forget(lib);
    let tracer: &'static Tracer = Box::leak(Box::new(crate::tracer::tracer()));
    // SAFETY: the tracer is 'static.
    if unsafe { (driver.table.set_tracer)(tracer) } != 0 {
        eprintln!("simcupti: the simulated driver already has a tracer; CUPTI is not initialized");
        return None;
    }
    Some(Box::leak(Box::new(driver)))
}

impl Driver {
    /// `cuDeviceGetAttribute`, or `None` on any error.
    pub fn attribute(&self, attrib: c_int, dev: c_int) -> Option<i32> {
        let f = self.device_get_attribute?;
        let mut v = 0;
        // SAFETY: the pointer is valid for the call.
        (unsafe { f(&mut v, attrib, dev) } == 0).then_some(v)
    }

    /// The current context of the calling thread (`cuCtxGetCurrent`), null if none.
    pub fn current_context(&self) -> CUcontext {
        let mut ctx: CUcontext = std::ptr::null_mut();
        if let Some(f) = self.ctx_get_current {
            // SAFETY: the pointer is valid for the call.
            if unsafe { f(&mut ctx) } != 0 {
                ctx = std::ptr::null_mut();
            }
        }
        ctx
    }
}
