//! Types, codes and layouts from NVIDIA's `nvml.h` (the `nvidia-nvml-dev-cu12` 12.9.79
//! wheel that `scripts/nvidia-wheels.py` pins).
#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_uint, c_ulonglong};

pub(crate) type nvmlReturn_t = c_uint;

pub(crate) const NVML_SUCCESS: nvmlReturn_t = 0;
pub(crate) const NVML_ERROR_UNINITIALIZED: nvmlReturn_t = 1;
pub(crate) const NVML_ERROR_INVALID_ARGUMENT: nvmlReturn_t = 2;
pub(crate) const NVML_ERROR_NOT_SUPPORTED: nvmlReturn_t = 3;
pub(crate) const NVML_ERROR_INSUFFICIENT_SIZE: nvmlReturn_t = 7;
pub(crate) const NVML_ERROR_ARGUMENT_VERSION_MISMATCH: nvmlReturn_t = 25;
pub(crate) const NVML_ERROR_UNKNOWN: nvmlReturn_t = 999;

/// `nvmlClockType_t`.
pub(crate) const NVML_CLOCK_GRAPHICS: c_uint = 0;
pub(crate) const NVML_CLOCK_SM: c_uint = 1;
pub(crate) const NVML_CLOCK_MEM: c_uint = 2;
pub(crate) const NVML_CLOCK_VIDEO: c_uint = 3;

/// `nvmlTemperatureSensors_t`: the only sensor.
pub(crate) const NVML_TEMPERATURE_GPU: c_uint = 0;

/// `nvmlClocksEventReasonSwPowerCap`.
pub(crate) const CLOCKS_EVENT_REASON_SW_POWER_CAP: c_ulonglong = 0x4;

/// `NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE`, `NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE`.
pub(crate) const PCI_BUS_ID_BUFFER_SIZE: usize = 32;
pub(crate) const PCI_BUS_ID_BUFFER_V2_SIZE: usize = 16;

/// `nvmlPciInfo_t`.
#[repr(C)]
pub(crate) struct nvmlPciInfo_t {
    pub(crate) busIdLegacy: [c_char; PCI_BUS_ID_BUFFER_V2_SIZE],
    pub(crate) domain: c_uint,
    pub(crate) bus: c_uint,
    pub(crate) device: c_uint,
    pub(crate) pciDeviceId: c_uint,
    pub(crate) pciSubSystemId: c_uint,
    pub(crate) busId: [c_char; PCI_BUS_ID_BUFFER_SIZE],
}

/// `nvmlMemory_t`.
#[repr(C)]
pub(crate) struct nvmlMemory_t {
    pub(crate) total: c_ulonglong,
    pub(crate) free: c_ulonglong,
    pub(crate) used: c_ulonglong,
}

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub(crate) struct nvmlMemory_v2_t {
    pub(crate) version: c_uint,
    pub(crate) total: c_ulonglong,
    pub(crate) reserved: c_ulonglong,
    pub(crate) free: c_ulonglong,
    pub(crate) used: c_ulonglong,
}

/// `nvmlMemory_v2`: `NVML_STRUCT_VERSION(Memory, 2)`, the size in the low 24 bits and
/// the version above.
pub(crate) const NVML_MEMORY_V2: c_uint =
    (std::mem::size_of::<nvmlMemory_v2_t>() as c_uint) | (2 << 24);

/// `nvmlUtilization_t`.
#[repr(C)]
pub(crate) struct nvmlUtilization_t {
    pub(crate) gpu: c_uint,
    pub(crate) memory: c_uint,
}

/// `nvmlDevice_t`: a pointer to an opaque struct; the sim's handles are never
/// dereferenced ([`crate::devices`]).
#[repr(C)]
pub(crate) struct nvmlDevice_st {
    _opaque: [u8; 0],
}
pub(crate) type nvmlDevice_t = *mut nvmlDevice_st;

const _: () = assert!(std::mem::size_of::<nvmlPciInfo_t>() == 68);
const _: () = assert!(std::mem::size_of::<nvmlMemory_v2_t>() == 40);
