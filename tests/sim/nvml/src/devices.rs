//! Device handles: `nvmlDevice_t` values for the simulated driver's devices
//! (`sim_core::machine`), never dereferenced. A handle is valid when it is one this
//! library handed out; any other value (NULL included) is
//! `NVML_ERROR_INVALID_ARGUMENT`, as `nvml.h` says for an invalid device.

use crate::consts::*;

/// The first handle; handles step by 0x40 per index.
const HANDLE_BASE: usize = 0x6e76_6d6c_0000;

/// How many devices there are (the simulated driver's count).
pub(crate) fn count() -> u32 {
    sim_core::machine::get().device_count.max(0) as u32
}

/// The handle of device `index`, or `NVML_ERROR_INVALID_ARGUMENT` past the last.
pub(crate) fn handle(index: u32) -> Result<nvmlDevice_t, nvmlReturn_t> {
    if index >= count() {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    Ok((HANDLE_BASE + index as usize * 0x40) as nvmlDevice_t)
}

/// The index `device` stands for: NVML must be initialised and the handle valid.
pub(crate) fn index(device: nvmlDevice_t) -> Result<u32, nvmlReturn_t> {
    crate::state::loaded_ns()?;
    let off = (device as usize).wrapping_sub(HANDLE_BASE);
    let i = off / 0x40;
    if !off.is_multiple_of(0x40) || i >= count() as usize {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    Ok(i as u32)
}
