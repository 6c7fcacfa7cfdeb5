//! A GPU's description from the CUDA driver already loaded in the process
//! (`dlopen("libcuda.so.1", RTLD_NOLOAD)`: we never load a driver ourselves). Runs
//! once per device, in the resource callback of the first context created on it.

use core::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use wire::DeviceInfo;

type CUresult = c_int;
type CUdevice = c_int;

// CUdevice_attribute values (cuda.h).
const ATTR_CLOCK_RATE: c_int = 13;
const ATTR_MULTIPROCESSOR_COUNT: c_int = 16;
const ATTR_MEMORY_CLOCK_RATE: c_int = 36;
const ATTR_GLOBAL_MEMORY_BUS_WIDTH: c_int = 37;
const ATTR_L2_CACHE_SIZE: c_int = 38;
const ATTR_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const ATTR_COMPUTE_CAPABILITY_MINOR: c_int = 76;

struct Driver {
    device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
    get_name: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CUresult,
    total_mem: unsafe extern "C" fn(*mut usize, CUdevice) -> CUresult,
    get_uuid: unsafe extern "C" fn(*mut [u8; 16], CUdevice) -> CUresult,
}

fn symbol(lib: *mut c_void, name: &CStr) -> Option<*mut c_void> {
    // SAFETY: `lib` is a live handle from dlopen and `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

fn load() -> Option<Driver> {
    // SAFETY: RTLD_NOLOAD only finds an already-loaded library; no initialiser runs.
    let lib = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if lib.is_null() {
        return None;
    }
    // The handle is kept (the driver stays loaded for the life of the process).
    let uuid = symbol(lib, c"cuDeviceGetUuid_v2").or_else(|| symbol(lib, c"cuDeviceGetUuid"))?;
    let (a, b, c, d) = (
        symbol(lib, c"cuDeviceGet")?,
        symbol(lib, c"cuDeviceGetAttribute")?,
        symbol(lib, c"cuDeviceGetName")?,
        symbol(lib, c"cuDeviceTotalMem_v2")?,
    );
    // SAFETY: these are the CUDA driver's exports with cuda.h's prototypes
    // (CUdevice is an int, CUuuid 16 bytes).
    unsafe {
        Some(Driver {
            device_get: core::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
            >(a),
            get_attribute: core::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
            >(b),
            get_name: core::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CUresult,
            >(c),
            total_mem: core::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut usize, CUdevice) -> CUresult,
            >(d),
            get_uuid: core::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut [u8; 16], CUdevice) -> CUresult,
            >(uuid),
        })
    }
}

fn driver() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER.get_or_init(load).as_ref()
}

/// Describes device `ordinal`; `Err` names the call that failed.
pub fn describe(ordinal: u32) -> Result<DeviceInfo, String> {
    let d = driver().ok_or("libcuda.so.1 is not loaded or lacks the device queries")?;
    let mut dev: CUdevice = 0;
    // SAFETY: `dev` is valid for writing.
    let rc = unsafe { (d.device_get)(&mut dev, ordinal as c_int) };
    if rc != 0 {
        return Err(format!("cuDeviceGet({ordinal}) returned CUresult {rc}"));
    }
    let attr = |a: c_int| -> Result<u32, String> {
        let mut v: c_int = 0;
        // SAFETY: `v` is valid for writing; `dev` is a device the driver gave us.
        let rc = unsafe { (d.get_attribute)(&mut v, a, dev) };
        if rc != 0 {
            return Err(format!("cuDeviceGetAttribute({a}) returned CUresult {rc}"));
        }
        Ok(v.max(0) as u32)
    };
    let mut name = [0 as c_char; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
    let rc = unsafe { (d.get_name)(name.as_mut_ptr(), name.len() as c_int - 1, dev) };
    if rc != 0 {
        return Err(format!("cuDeviceGetName returned CUresult {rc}"));
    }
    // SAFETY: the buffer's last byte was never written, so it is NUL-terminated.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut mem = 0usize;
    // SAFETY: `mem` is valid for writing.
    let rc = unsafe { (d.total_mem)(&mut mem, dev) };
    if rc != 0 {
        return Err(format!("cuDeviceTotalMem_v2 returned CUresult {rc}"));
    }
    let mut uuid = [0u8; 16];
    // SAFETY: `uuid` has the 16 bytes of a CUuuid.
    let rc = unsafe { (d.get_uuid)(&mut uuid, dev) };
    if rc != 0 {
        return Err(format!("cuDeviceGetUuid returned CUresult {rc}"));
    }
    Ok(DeviceInfo {
        id: ordinal,
        name,
        compute_capability: (
            attr(ATTR_COMPUTE_CAPABILITY_MAJOR)?,
            attr(ATTR_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sm_count: attr(ATTR_MULTIPROCESSOR_COUNT)?,
        core_clock_khz: attr(ATTR_CLOCK_RATE)?,
        memory_clock_khz: attr(ATTR_MEMORY_CLOCK_RATE)?,
        memory_bus_width_bits: attr(ATTR_GLOBAL_MEMORY_BUS_WIDTH)?,
        global_memory_bytes: mem as u64,
        l2_cache_bytes: attr(ATTR_L2_CACHE_SIZE)?,
        uuid,
    })
}
