//! Exports of `cupti_profiler_host.h` (CUDA 12.6 on) that the target side needs:
//! host objects per chip, config images, pass counts, evaluation of counter data.
//!
//! What only NVIDIA's library knows is its answer ([`crate::real_host`]): each sim
//! host object holds a real one, and the chips supported, the chip a host object may
//! be made for, the metrics accepted (per profiler type, derived metrics included)
//! and the passes a config needs are the real library's, errors included. The config
//! image is the sim's own: the metric names and the real pass count
//! ([`crate::profiling::encode_config`]), which the range profiler and PM sampler
//! read. Evaluation reads the values the range profiler or PM sampler decoded into
//! the image: for a metric the image does not hold (not in `Get*CounterDataSize`'s
//! list, not in the config, or one the cost model does not know) the value is NaN,
//! as no counter was collected for it.

use std::ffi::{CStr, CString};
use std::sync::Mutex;

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

use crate::counter_data::{self, Image, KIND_RANGE};
use crate::ffi::guard;
use crate::profiling::{available, encode_config, metric_names, with_params};
use crate::real_host;

type R = CUptiResult::Type;

struct Host {
    handle: usize,
    chip: String,
    /// Created for `CUPTI_PROFILER_TYPE_PM_SAMPLING`.
    pm_sampling: bool,
    /// NVIDIA's host object behind it ([`real_host`]).
    real: usize,
    metrics: Vec<String>,
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

/// `cuptiProfilerHostInitialize`: a host object for `pChipName` and `profilerType`
/// (range profiler or PM sampling), if NVIDIA's library makes one: a chip the
/// release does not support is its error (13.x `CUPTI_ERROR_INVALID_CHIP_NAME`,
/// 12.x `CUPTI_ERROR_INVALID_PARAMETER`). The counter availability image and single-pass
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
        let pm_sampling = p.profilerType == CUPTI_PROFILER_TYPE_PM_SAMPLING;
        let real = match real_host::initialize(chip, pm_sampling) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let handle = crate::profiling::new_handle();
        HOSTS.lock().unwrap_or_else(|e| e.into_inner()).push(Host {
            handle,
            chip: chip.to_string_lossy().into_owned(),
            pm_sampling,
            real,
            metrics: Vec::new(),
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
                real_host::deinitialize(all.remove(i).real);
                CUPTI_SUCCESS
            }
            None => CUPTI_ERROR_INVALID_PARAMETER,
        }
    })
}

/// `cuptiProfilerHostGetSupportedChips`: NVIDIA's library's list (its own array).
///
/// # Safety
/// `p` is null or a valid `CUpti_Profiler_Host_GetSupportedChips_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiProfilerHostGetSupportedChips(
    p: *mut CUpti_Profiler_Host_GetSupportedChips_Params,
) -> R {
    run(p, 32, |p| match real_host::supported_chips() {
        Ok((n, names)) => {
            p.numChips = n;
            p.ppChipNames = names;
            CUPTI_SUCCESS
        }
        Err(e) => e,
    })
}

/// `cuptiProfilerHostConfigAddMetrics`: NVIDIA's library's answer for adding the
/// metrics in one call to the real host object; accepted, they join the sim's
/// config (each once). A refused call adds nothing here (what the real host object
/// keeps of it is the real library's business, as for a real client).
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
            let add = unsafe { metric_names(p.ppMetricNames, p.numMetrics) }
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            let c_names: Vec<CString> = add
                .iter()
                .map(|m| CString::new(m.as_str()).expect("read from a C string"))
                .collect();
            real_host::add_metrics(h.real, &c_names)?;
            for m in add {
                if !h.metrics.contains(&m) {
                    h.metrics.push(m);
                }
            }
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
            p.configImageSize = encode_config(&h.metrics, real_host::passes(h.real)?).len();
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
            let img = encode_config(&h.metrics, real_host::passes(h.real)?);
            if h.metrics.is_empty() || p.pConfigImage.is_null() || p.configImageSize < img.len() {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            // SAFETY: the client's buffer holds configImageSize >= img.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(img.as_ptr(), p.pConfigImage, img.len()) };
            Ok(())
        }))
    })
}

/// `cuptiProfilerHostGetNumOfPasses`: the passes NVIDIA's library counted for the
/// config the image was made from; not a config image: `CUPTI_ERROR_INVALID_PARAMETER`.
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
/// `rangeIndex`. Metrics NVIDIA's library refuses for the host's chip and profiler
/// type: `CUPTI_ERROR_INVALID_METRIC_NAME`; an image that is
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
            let metrics = unsafe { metric_names(p.ppMetricNames, p.numMetrics) }
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            real_host::check_metrics(&h.chip, h.pm_sampling, &metrics)?;
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
