//! Target-side profiler exports the range profiler and PM sampling build on
//! (`cupti_profiler_target.h`, `cupti_target.h`): `cuptiProfilerInitialize` /
//! `cuptiProfilerDeInitialize`, `cuptiDeviceGetChipName`,
//! `cuptiProfilerGetCounterAvailability`. These exist before 12.6 too.

use std::ffi::{c_int, CStr};
use std::sync::atomic::Ordering;

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

use crate::driver::Driver;
use crate::ffi::guard;
use crate::profiling::{with_params, PROFILER_INITIALIZED};
use sim_core::machine::chip_for_cc;

/// Every export's body: [`with_params`] and `f`, no panic out. `p` is the export's
/// params pointer, under the export's own safety contract.
fn run<T: Copy>(p: *mut T, min: usize, f: impl FnOnce(&mut T, usize) -> R) -> R {
    guard(|| {
        // SAFETY: `p` is the export's params pointer, valid per the export's contract.
        unsafe { with_params(p, min, f) }
    })
}

type R = CUptiResult::Type;

// `CUdevice_attribute` values from cuda.h.
const CC_MAJOR: c_int = 75;
const CC_MINOR: c_int = 76;

/// The chip name of device `dev` (from its compute capability), `None` if the
/// device does not exist or the sim does not name its chip.
pub fn chip_of(d: &Driver, dev: c_int) -> Option<String> {
    let c = chip_name(d, dev).ok()?;
    Some(c.to_string_lossy().into_owned())
}

fn chip_name(d: &Driver, dev: c_int) -> Result<&'static CStr, R> {
    let (Some(major), Some(minor)) = (d.attribute(CC_MAJOR, dev), d.attribute(CC_MINOR, dev))
    else {
        return Err(CUPTI_ERROR_INVALID_DEVICE);
    };
    chip_for_cc(major, minor).ok_or(CUPTI_ERROR_NOT_SUPPORTED)
}

/// `cuptiProfilerInitialize`: "Loads the required libraries ... Sets up the hooks with
/// the CUDA driver." Counted; needs the driver (`CUPTI_ERROR_NOT_INITIALIZED` without).
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Initialize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerInitialize(p: *mut CUpti_Profiler_Initialize_Params) -> R {
    run(p, 16, |_, _| {
        if crate::driver::get().is_none() {
            return CUPTI_ERROR_NOT_INITIALIZED;
        }
        if crate::profiling::counters_busy("cuptiProfilerInitialize") {
            return CUPTI_ERROR_HARDWARE_BUSY;
        }
        PROFILER_INITIALIZED.fetch_add(1, Ordering::AcqRel);
        crate::pm_sampling::profiler_initialized_at(crate::driver::now_ns());
        CUPTI_SUCCESS
    })
}

/// `cuptiProfilerDeInitialize`: undoes one `cuptiProfilerInitialize` (none left: a no-op).
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_DeInitialize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerDeInitialize(
    p: *mut CUpti_Profiler_DeInitialize_Params,
) -> R {
    run(p, 16, |_, _| {
        let _ = PROFILER_INITIALIZED
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        CUPTI_SUCCESS
    })
}

/// `cuptiDeviceGetChipName`: "GH100" for compute capability 9.0, "GA100" 8.0, "AD102"
/// 8.9, "GB100" 10.0 (also GV100 7.0, TU102 7.5, GA102 8.6). A device that does not
/// exist is `CUPTI_ERROR_INVALID_DEVICE`; one the sim does not name
/// `CUPTI_ERROR_NOT_SUPPORTED`. The string is CUPTI's (static).
///
/// # Safety
/// `p` is null or a valid `CUpti_Device_GetChipName_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiDeviceGetChipName(p: *mut CUpti_Device_GetChipName_Params) -> R {
    run(p, 32, |p, _| {
        let Some(d) = crate::driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        let Ok(dev) = c_int::try_from(p.deviceIndex) else {
            return CUPTI_ERROR_INVALID_DEVICE;
        };
        match chip_name(d, dev) {
            Ok(c) => {
                p.pChipName = c.as_ptr();
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// Bytes of the sim's counter availability image.
pub const AVAILABILITY_SIZE: usize = 64;

/// Fills a counter availability image query: size when `image` is null, else the
/// image ("SIMAVAIL" and the chip name; the sim has every counter of its cost model).
pub fn availability(size: &mut usize, image: *mut u8, chip: &str) -> R {
    if image.is_null() {
        *size = AVAILABILITY_SIZE;
        return CUPTI_SUCCESS;
    }
    if *size < AVAILABILITY_SIZE {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    let mut v = [0u8; AVAILABILITY_SIZE];
    v[..8].copy_from_slice(b"SIMAVAIL");
    let c = chip.as_bytes();
    let n = c.len().min(AVAILABILITY_SIZE - 9);
    v[8..8 + n].copy_from_slice(&c[..n]);
    // SAFETY: the client's buffer holds `*size >= AVAILABILITY_SIZE` bytes.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), image, AVAILABILITY_SIZE) };
    *size = AVAILABILITY_SIZE;
    CUPTI_SUCCESS
}

/// `cuptiProfilerGetCounterAvailability` on `ctx` (null: the current context):
/// two-call protocol, [`availability`]. Needs `cuptiProfilerInitialize`.
///
/// # Safety
/// `p` is null or valid; the image holds `counterAvailabilityImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerGetCounterAvailability(
    p: *mut CUpti_Profiler_GetCounterAvailability_Params,
) -> R {
    run(p, 40, |p, _| {
        if let Err(e) = crate::profiling::require_profiler_initialized() {
            return e;
        }
        let Some(d) = crate::driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        let ctx = if p.ctx.is_null() {
            d.current_context()
        } else {
            p.ctx
        };
        // SAFETY: table function.
        let dev = unsafe { (d.table.context_device)(ctx) };
        if ctx.is_null() || dev < 0 {
            return CUPTI_ERROR_INVALID_CONTEXT;
        }
        let chip = chip_of(d, dev).unwrap_or_default();
        availability(
            &mut p.counterAvailabilityImageSize,
            p.pCounterAvailabilityImage,
            &chip,
        )
    })
}
