//! `cuInit` and `cuDriverGetVersion`.

use std::ffi::{c_int, c_uint};

use crate::consts::*;
use crate::ffi::{guard, write_out};
use crate::{config, model, state};

/// `CUresult cuInit(unsigned int Flags)`: `Flags` must be 0. Fails with
/// `CUDA_ERROR_NO_DEVICE` when the simulated machine has no device
/// (`SIMCUDA_DEVICE_COUNT=0`), as the real driver does on a machine without a GPU.
/// Loads the cost model once; an unusable model (`$SIMCUDA_COST_MODEL`) is named on
/// stderr (`simcuda: <error>`, once) and fails every `cuInit` with
/// `CUDA_ERROR_INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    guard(move || {
        if flags != 0 {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if config::get().device_count == 0 {
            return CUDA_ERROR_NO_DEVICE;
        }
        if !model::load() {
            return CUDA_ERROR_INVALID_VALUE;
        }
        crate::telemetry::driver_loaded();
        state::initialize();
        CUDA_SUCCESS
    })
}

/// `CUresult cuDriverGetVersion(int *driverVersion)`: works before `cuInit`.
///
/// # Safety
/// `driver_version` is NULL or valid for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(driver_version: *mut c_int) -> CUresult {
    guard(move || {
        // SAFETY: the caller's pointer is NULL or writable.
        unsafe { write_out(driver_version, config::get().driver_version) }
    })
}
