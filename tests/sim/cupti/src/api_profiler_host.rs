//! Exports of `cupti_profiler_host.h` (CUDA 12.6 on) that the target side needs:
//! host objects per chip, config images, pass counts, evaluation of counter data.
//!
//! The config image is the sim's own list of metric names and pass count
//! ([`crate::profiling::encode_config`]): one pass per `ConfigAddMetrics` call, as the
//! real library schedules them (see [`crate::profiling`]). Evaluation reads the values the range profiler or PM
//! sampler decoded into the image: for a metric the cost model knows but the image
//! does not hold (not in `Get*CounterDataSize`'s list, or not in the config), the
//! value is NaN, as no counter was collected for it.

use std::ffi::{c_char, CStr};
use std::sync::Mutex;

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

use crate::counter_data::{self, Image, KIND_RANGE};
use crate::ffi::guard;
use crate::profiling::{
    available, encode_config, known_metrics, pm_sampling_accepts, with_params, CHIPS,
};

type R = CUptiResult::Type;

struct Host {
    handle: usize,
    chip: String,
    /// Created for `CUPTI_PROFILER_TYPE_PM_SAMPLING`.
    pm_sampling: bool,
    metrics: Vec<String>,
    /// `ConfigAddMetrics` calls that added metrics: each is its own pass group.
    calls: usize,
}

static HOSTS: Mutex<Vec<Host>> = Mutex::new(Vec::new());

fn with_host<T>(handle: usize, f: impl FnOnce(&mut Host) -> Result<T, R>) -> Result<T, R> {
    let mut all = HOSTS.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|h| h.handle == handle && handle != 0) {
        Some(h) => f(h),
        None => Err(CUPTI_ERROR_INVALID_PARAMETER),
    }
}

fn flat(r: Result<(), R>) -> R {
    r.err().unwrap_or(CUPTI_SUCCESS)
}

/// Every export's body: the release gate, [`with_params`] and `f`. `p` is the
/// export's params pointer, under the export's own safety contract.
fn run<T: Copy>(p: *mut T, min: usize, f: impl FnOnce(&mut T) -> R) -> R {
    guard(|| {
        if !available() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        // SAFETY: `p` is the export's params pointer, valid per the export's contract.
        unsafe { with_params(p, min, |p, _| f(p)) }
    })
}

/// `cuptiProfilerHostInitialize`: a host object for `pChipName` (one of
/// [`CHIPS`]) and `profilerType` (range profiler or PM sampling). An unknown chip is
/// `CUPTI_ERROR_INVALID_CHIP_NAME` ("For invalid or unsupported chip name passed to
/// cuptiProfilerHostInitialize", 13.0 on; 12.x, which lacks that code,
/// `CUPTI_ERROR_INVALID_PARAMETER`). The counter availability image and single-pass
/// set name are not needed by the sim.
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Host_Initialize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostInitialize(
    p: *mut CUpti_Profiler_Host_Initialize_Params,
) -> R {
    run(p, 48, |p| {
        use CUpti_ProfilerType::*;
        if !matches!(
            p.profilerType,
            CUPTI_PROFILER_TYPE_RANGE_PROFILER | CUPTI_PROFILER_TYPE_PM_SAMPLING
        ) || p.pChipName.is_null()
        {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: non-null C string.
        let chip = unsafe { CStr::from_ptr(p.pChipName) };
        if !CHIPS.contains(&chip) {
            return if crate::release::current().at_least(13, 0) {
                CUPTI_ERROR_INVALID_CHIP_NAME
            } else {
                CUPTI_ERROR_INVALID_PARAMETER
            };
        }
        let handle = crate::profiling::new_handle();
        HOSTS.lock().unwrap_or_else(|e| e.into_inner()).push(Host {
            handle,
            chip: chip.to_string_lossy().into_owned(),
            pm_sampling: p.profilerType == CUPTI_PROFILER_TYPE_PM_SAMPLING,
            metrics: Vec::new(),
            calls: 0,
        });
        p.pHostObject = handle as *mut CUpti_Profiler_Host_Object;
        CUPTI_SUCCESS
    })
}

/// `cuptiProfilerHostDeinitialize`.
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Host_Deinitialize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostDeinitialize(
    p: *mut CUpti_Profiler_Host_Deinitialize_Params,
) -> R {
    run(p, 24, |p| {
        let mut all = HOSTS.lock().unwrap_or_else(|e| e.into_inner());
        let h = p.pHostObject as usize;
        match all.iter().position(|x| x.handle == h && h != 0) {
            Some(i) => {
                all.remove(i);
                CUPTI_SUCCESS
            }
            None => CUPTI_ERROR_INVALID_PARAMETER,
        }
    })
}

/// `cuptiProfilerHostGetSupportedChips`: [`CHIPS`].
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Host_GetSupportedChips_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetSupportedChips(
    p: *mut CUpti_Profiler_Host_GetSupportedChips_Params,
) -> R {
    struct Table([*const c_char; CHIPS.len()]);
    // SAFETY: the pointers are to 'static C strings, never written.
    unsafe impl Sync for Table {}
    static TABLE: Table = Table([
        CHIPS[0].as_ptr(),
        CHIPS[1].as_ptr(),
        CHIPS[2].as_ptr(),
        CHIPS[3].as_ptr(),
        CHIPS[4].as_ptr(),
        CHIPS[5].as_ptr(),
        CHIPS[6].as_ptr(),
    ]);
    run(p, 32, |p| {
        let t = &TABLE;
        p.numChips = CHIPS.len();
        p.ppChipNames = t.0.as_ptr();
        CUPTI_SUCCESS
    })
}

/// `cuptiProfilerHostConfigAddMetrics`: adds metrics (each once) to the host's
/// config, the call's metrics one pass group of their own. A name the cost model does
/// not know, or (for a PM sampling host) one the release does not accept for PM
/// sampling ([`sim_core::pm_metrics`]), is `CUPTI_ERROR_INVALID_PARAMETER`, NVIDIA's
/// library's answer for both, and adds nothing.
///
/// # Safety
/// `p` is null or valid; `ppMetricNames` holds `numMetrics` C strings.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostConfigAddMetrics(
    p: *mut CUpti_Profiler_Host_ConfigAddMetrics_Params,
) -> R {
    run(p, 40, |p| {
        flat(with_host(p.pHostObject as usize, |h| {
            // SAFETY: the client's array.
            let add = unsafe { known_metrics(p.ppMetricNames, p.numMetrics) }
                .map_err(|_| CUPTI_ERROR_INVALID_PARAMETER)?;
            if h.pm_sampling && !add.iter().all(|m| pm_sampling_accepts(m, &h.chip)) {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            for m in add {
                if !h.metrics.contains(&m) {
                    h.metrics.push(m);
                }
            }
            h.calls += 1;
            Ok(())
        }))
    })
}

/// `cuptiProfilerHostGetConfigImageSize` (no metrics added yet:
/// `CUPTI_ERROR_INVALID_PARAMETER`).
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Host_GetConfigImageSize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetConfigImageSize(
    p: *mut CUpti_Profiler_Host_GetConfigImageSize_Params,
) -> R {
    run(p, 32, |p| {
        flat(with_host(p.pHostObject as usize, |h| {
            if h.metrics.is_empty() {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            p.configImageSize = encode_config(&h.metrics, h.calls).len();
            Ok(())
        }))
    })
}

/// `cuptiProfilerHostGetConfigImage` (a buffer smaller than the image:
/// `CUPTI_ERROR_INVALID_PARAMETER`).
///
/// # Safety
/// `p` is null or valid; `pConfigImage` holds `configImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetConfigImage(
    p: *mut CUpti_Profiler_Host_GetConfigImage_Params,
) -> R {
    run(p, 40, |p| {
        flat(with_host(p.pHostObject as usize, |h| {
            let img = encode_config(&h.metrics, h.calls);
            if h.metrics.is_empty() || p.pConfigImage.is_null() || p.configImageSize < img.len() {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            // SAFETY: the client's buffer holds configImageSize >= img.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(img.as_ptr(), p.pConfigImage, img.len()) };
            Ok(())
        }))
    })
}

/// `cuptiProfilerHostGetNumOfPasses`: one pass per `ConfigAddMetrics` call that
/// made the image ([`crate::profiling`]); not a config image:
/// `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; `pConfigImage` holds `configImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetNumOfPasses(
    p: *mut CUpti_Profiler_Host_GetNumOfPasses_Params,
) -> R {
    run(p, 40, |p| {
        // SAFETY: the client's image.
        match unsafe { crate::profiling::config_at(p.pConfigImage, p.configImageSize) } {
            Some(c) => {
                p.numOfPasses = c.passes;
                CUPTI_SUCCESS
            }
            None => CUPTI_ERROR_INVALID_PARAMETER,
        }
    })
}

/// `cuptiProfilerHostEvaluateToGpuValues`: the values of range (or PM sample)
/// `rangeIndex`. Unknown metric: `CUPTI_ERROR_INVALID_METRIC_NAME`; an image that is
/// not a decoded sim image, of another chip, or an index past its records:
/// `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; arrays and image as the header describes.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostEvaluateToGpuValues(
    p: *mut CUpti_Profiler_Host_EvaluateToGpuValues_Params,
) -> R {
    run(p, 72, |p| {
        flat(with_host(p.pHostObject as usize, |h| {
            // SAFETY: the client's array.
            let metrics = unsafe { known_metrics(p.ppMetricNames, p.numMetrics) }?;
            // SAFETY: the client's image.
            let buf = unsafe { counter_data::bytes(p.pCounterDataImage, p.counterDataImageSize) }
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            let img = Image::parse(buf).ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            if img.shape.chip != h.chip || p.pMetricValues.is_null() {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            let rec = img
                .record(buf, p.rangeIndex)
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            for (i, m) in metrics.iter().enumerate() {
                let v = img
                    .shape
                    .metrics
                    .iter()
                    .position(|x| x == m)
                    .map_or(f64::NAN, |j| rec.values[j]);
                // SAFETY: the client's array of numMetrics doubles.
                unsafe { p.pMetricValues.add(i).write(v) };
            }
            Ok(())
        }))
    })
}

/// `cuptiProfilerHostGetRangeName`: as `cuptiRangeProfilerCounterDataGetRangeInfo`
/// ("For user range mode, the name of range will be based on the range name provided
/// by the user using Push range API"; auto ranges are numbered), a `malloc`ed string
/// the client frees. PM sampling images have no ranges: `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetRangeName(
    p: *mut CUpti_Profiler_Host_GetRangeName_Params,
) -> R {
    run(p, 56, |p| {
        // SAFETY: the client's image.
        let Some(buf) =
            (unsafe { counter_data::bytes(p.pCounterDataImage, p.counterDataImageSize) })
        else {
            return CUPTI_ERROR_INVALID_PARAMETER;
        };
        let rec = Image::parse(buf)
            .filter(|i| i.shape.kind == KIND_RANGE)
            .and_then(|i| i.record(buf, p.rangeIndex));
        let Some(rec) = rec else {
            return CUPTI_ERROR_INVALID_PARAMETER;
        };
        // SAFETY: the delimiter is null or a C string.
        p.pRangeName = unsafe { counter_data::range_name(&rec.name, p.delimiter) };
        CUPTI_SUCCESS
    })
}
