//! What one device reports: identity (`nvmlDeviceGetName`, `nvmlDeviceGetUUID`,
//! `nvmlDeviceGetPciInfo_v3`), memory (`nvmlDeviceGetMemoryInfo`, `_v2`), and the
//! telemetry the model (`crate::model`) computes from the simulated driver's work:
//! utilisation, power, energy, clocks, temperature, clock event reasons. Every call
//! needs `nvmlInit*` first (`NVML_ERROR_UNINITIALIZED`) and a handle this library gave
//! out; a NULL out-pointer is `NVML_ERROR_INVALID_ARGUMENT`.

use std::ffi::{c_char, c_uint, c_ulonglong};

use sim_core::machine;
use sim_core::telemetry::{Busy, TelemetryDir, Work};

use crate::config;
use crate::consts::*;
use crate::devices;
use crate::ffi::{c_array, guard, out, out_str};
use crate::model::{self, Power};
use crate::state;

/// Device `index`'s operations so far (none without a telemetry directory).
fn ops(index: u32) -> Vec<Busy> {
    TelemetryDir::from_env().map_or_else(Vec::new, |d| d.busy(index))
}

/// Device memory allocated on device `index` by live processes.
fn used_bytes(index: u32) -> u64 {
    TelemetryDir::from_env().map_or(0, |d| {
        d.memory_used(index, |pid| {
            std::path::Path::new("/proc").join(pid.to_string()).exists()
        })
    })
}

fn power() -> Power {
    let c = config::get();
    Power {
        idle_mw: c.idle_mw,
        tdp_mw: c.tdp_mw,
    }
}

/// `nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int
/// length)`: too short a buffer is `NVML_ERROR_INSUFFICIENT_SIZE`.
///
/// # Safety
/// `name` is NULL or valid for writing `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    guard(|| {
        devices::index(device)?;
        // SAFETY: the caller's buffer is NULL or holds `length` bytes.
        unsafe { out_str(name, length, &machine::get().device.name) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int
/// length)`: `GPU-` and the driver's UUID (`sim_core::machine::uuid_string`).
///
/// # Safety
/// `uuid` is NULL or valid for writing `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        // SAFETY: the caller's buffer is NULL or holds `length` bytes.
        unsafe { out_str(uuid, length, &machine::uuid_string(i)) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)`:
/// where the driver's `CU_DEVICE_ATTRIBUTE_PCI_*` say the device is.
///
/// # Safety
/// `pci` is NULL or valid for writing an `nvmlPciInfo_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: nvmlDevice_t,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        let bus = machine::pci_bus(i);
        let info = nvmlPciInfo_t {
            busIdLegacy: c_array(&format!("{:04X}:{:02X}:{:02X}.0", 0, bus, 0)),
            domain: 0,
            bus,
            device: 0,
            pciDeviceId: machine::PCI_DEVICE_ID,
            pciSubSystemId: 0,
            busId: c_array(&machine::pci_bus_id(i)),
        };
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(pci, info) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)`:
/// `used` is what live processes allocated (the sim reserves nothing).
///
/// # Safety
/// `memory` is NULL or valid for writing an `nvmlMemory_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_t,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        let total = config::get().total_mem_bytes;
        let used = used_bytes(i).min(total);
        let m = nvmlMemory_t {
            total,
            free: total - used,
            used,
        };
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(memory, m) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t
/// *memory)`: `memory->version` must be `nvmlMemory_v2`, else
/// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
///
/// # Safety
/// `memory` is NULL or valid for reading and writing an `nvmlMemory_v2_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_v2_t,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        if memory.is_null() {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-NULL and readable per this function's contract.
        if unsafe { (*memory).version } != NVML_MEMORY_V2 {
            return Err(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
        }
        let total = config::get().total_mem_bytes;
        let used = used_bytes(i).min(total);
        let m = nvmlMemory_v2_t {
            version: NVML_MEMORY_V2,
            total,
            reserved: 0,
            free: total - used,
            used,
        };
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { out(memory, m) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t
/// *utilization)`.
///
/// # Safety
/// `utilization` is NULL or valid for writing an `nvmlUtilization_t`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: nvmlDevice_t,
    utilization: *mut nvmlUtilization_t,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        let p = config::get().period_ns;
        let (from, to) = model::period(state::now_ns(), p);
        let ops = ops(i);
        let u = nvmlUtilization_t {
            gpu: model::percent(model::busy_in(&ops, Work::Kernel, from, to), p),
            memory: model::percent(model::busy_in(&ops, Work::Transfer, from, to), p),
        };
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(utilization, u) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)`, mW.
///
/// # Safety
/// `power` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: nvmlDevice_t,
    power_mw: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        let p = config::get().period_ns;
        let (from, to) = model::period(state::now_ns(), p);
        let busy = model::busy_in(&ops(i), Work::Kernel, from, to);
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(power_mw, model::power_mw(power(), busy, p) as c_uint) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long
/// long *energy)`, mJ since the driver was loaded.
///
/// # Safety
/// `energy` is NULL or valid for writing an `unsigned long long`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    device: nvmlDevice_t,
    energy: *mut c_ulonglong,
) -> nvmlReturn_t {
    guard(|| {
        let i = devices::index(device)?;
        let loaded = state::loaded_ns()?;
        let mj = model::energy_mj(power(), &ops(i), loaded, state::now_ns());
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(energy, mj) }
    })
}

/// The clock of `kind` (current or maximum), MHz; an unknown kind is
/// `NVML_ERROR_INVALID_ARGUMENT`.
fn clock(kind: c_uint, current: bool) -> Result<c_uint, nvmlReturn_t> {
    let c = config::get();
    let sm = if current { c.sm_mhz } else { c.max_sm_mhz };
    match kind {
        NVML_CLOCK_GRAPHICS | NVML_CLOCK_SM => Ok(sm),
        NVML_CLOCK_MEM => Ok(c.mem_mhz),
        // An H100 SXM's video clock.
        NVML_CLOCK_VIDEO => Ok(1755),
        _ => Err(NVML_ERROR_INVALID_ARGUMENT),
    }
}

/// `nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
/// unsigned int *clock)`, MHz.
///
/// # Safety
/// `mhz` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nvmlDevice_t,
    kind: c_uint,
    mhz: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        devices::index(device)?;
        let v = clock(kind, true)?;
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(mhz, v) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
/// unsigned int *clock)`, MHz.
///
/// # Safety
/// `mhz` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    device: nvmlDevice_t,
    kind: c_uint,
    mhz: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        devices::index(device)?;
        let v = clock(kind, false)?;
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(mhz, v) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t
/// sensorType, unsigned int *temp)`, °C: constant. A sensor other than
/// `NVML_TEMPERATURE_GPU` is `NVML_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `temp` is NULL or valid for writing an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    sensor: c_uint,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        devices::index(device)?;
        if sensor != NVML_TEMPERATURE_GPU {
            return Err(NVML_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { out(temp, config::get().temperature_c) }
    })
}

/// # Safety
/// `reasons` is NULL or valid for writing an `unsigned long long`.
unsafe fn clock_event_reasons(device: nvmlDevice_t, reasons: *mut c_ulonglong) -> nvmlReturn_t {
    guard(|| {
        devices::index(device)?;
        let c = config::get();
        let r = if c.sm_mhz < c.max_sm_mhz {
            CLOCKS_EVENT_REASON_SW_POWER_CAP
        } else {
            0
        };
        // SAFETY: per this function's contract.
        unsafe { out(reasons, r) }
    })
}

/// `nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned
/// long long *clocksEventReasons)`: the SW power cap when `SIMNVML_SM_CLOCK_MHZ` holds
/// the clock below its maximum, else none.
///
/// # Safety
/// `reasons` is NULL or valid for writing an `unsigned long long`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { clock_event_reasons(device, reasons) }
}

/// `nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
/// unsigned long long *clocksThrottleReasons)`: the deprecated name of
/// `nvmlDeviceGetCurrentClocksEventReasons`.
///
/// # Safety
/// `reasons` is NULL or valid for writing an `unsigned long long`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the caller's pointer is NULL or writable.
    unsafe { clock_event_reasons(device, reasons) }
}
