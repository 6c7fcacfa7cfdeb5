//! Exports of `cupti_pmsampling.h` (CUDA 12.6 on); state and sample semantics in
//! [`crate::pm_sampling`].
//!
//! `structSize` below the struct's 12.6 size is `CUPTI_ERROR_INVALID_PARAMETER`
//! (`hwBufferAppendMode`, added in 12.8, reads as KEEP_OLDEST from smaller structs).
//! Calls on a null or unknown object are `CUPTI_ERROR_INVALID_OPERATION` ("called
//! without enabling PM sampling"), Disable's `CUPTI_ERROR_INVALID_PARAMETER`; order
//! errors (Start before SetConfig or twice, Stop when not sampling, SetConfig while
//! sampling) `CUPTI_ERROR_INVALID_OPERATION`. `cuptiProfilerInitialize` comes first.

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

use crate::counter_data::{self, Image, Shape, KIND_SAMPLE};
use crate::ffi::guard;
use crate::pm_sampling::{self as pm, hw_record_bytes, PmConfig};
use crate::profiling::{available, config_at, metric_names, with_params};

type R = CUptiResult::Type;

const NOT_ENABLED: R = CUPTI_ERROR_INVALID_OPERATION;
// `CUdevice_attribute` CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz).
const CLOCK_RATE: i32 = 13;

fn flat(r: Result<(), R>) -> R {
    r.err().unwrap_or(CUPTI_SUCCESS)
}

/// Every export's body: the release gate, [`with_params`] and `f`. `p` is the
/// export's params pointer, under the export's own safety contract.
fn run<T: Copy>(p: *mut T, min: usize, f: impl FnOnce(&mut T, usize) -> R) -> R {
    guard(|| {
        if !available() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        // SAFETY: `p` is the export's params pointer, valid per the export's contract.
        unsafe { with_params(p, min, f) }
    })
}

fn now() -> u64 {
    crate::driver::now_ns()
}

/// `cuptiPmSamplingEnable` on device `deviceIndex` (no such device:
/// `CUPTI_ERROR_INVALID_PARAMETER`; already enabled, or a range profiler enabled on
/// a context of the device: `CUPTI_ERROR_INVALID_OPERATION`).
///
/// # Safety
/// `p` is null or a valid `CUpti_PmSampling_Enable_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingEnable(p: *mut CUpti_PmSampling_Enable_Params) -> R {
    run(p, 32, |p, _| {
        if let Err(e) = crate::profiling::require_profiler_initialized() {
            return e;
        }
        let Some(d) = crate::driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        let Ok(dev) = i32::try_from(p.deviceIndex) else {
            return CUPTI_ERROR_INVALID_PARAMETER;
        };
        if d.attribute(CLOCK_RATE, dev).is_none() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        if crate::profiling::counters_busy("cuptiPmSamplingEnable") {
            return CUPTI_ERROR_HARDWARE_BUSY;
        }
        // Not documented either way; the sim refuses sampling beside a range
        // profiler on the device (see `cuptiRangeProfilerEnable`).
        if crate::range_profiler::any_on_device(dev) {
            return CUPTI_ERROR_INVALID_OPERATION;
        }
        let chip = crate::api_profiler_target::chip_of(d, dev).unwrap_or_default();
        match pm::enable(dev as u32, chip) {
            Ok(h) => {
                p.pPmSamplingObject = h as *mut CUpti_PmSampling_Object;
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiPmSamplingDisable`. Disabling the last sampler can finalize CUPTI: activity
/// records not yet delivered in a completed buffer are lost
/// ([`crate::activity::lose_undelivered`]), so a client flushes first.
///
/// # Safety
/// `p` is null or a valid `CUpti_PmSampling_Disable_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingDisable(p: *mut CUpti_PmSampling_Disable_Params) -> R {
    run(p, 24, |p, _| {
        flat(pm::disable(p.pPmSamplingObject as usize))
    })
}

/// `cuptiPmSamplingSetConfig`: config image (the sim's) of one pass (more:
/// `CUPTI_ERROR_NOT_SUPPORTED`), `hardwareBufferSize` for at least one sample,
/// `samplingInterval` > 0 in the trigger mode's unit. The time
/// trigger on Turing / GA100 ("not supported in Turing and GA100") and KEEP_LATEST on
/// Turing are `CUPTI_ERROR_NOT_SUPPORTED`; other invalid values
/// `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; the config image holds `configSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingSetConfig(p: *mut CUpti_PmSampling_SetConfig_Params) -> R {
    run(p, 60, |p, size| {
        let keep_latest = size >= 64 && p.hwBufferAppendMode == 1;
        flat(pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            // SAFETY: the client's config image.
            let image = unsafe { config_at(p.pConfig, p.configSize) }
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            // "CUPTI_ERROR_NOT_SUPPORTED for config image which require multiple
            // passes for data collection" (cupti_pmsampling.h).
            if image.passes > 1 {
                return Err(CUPTI_ERROR_NOT_SUPPORTED);
            }
            let metrics = image.metrics;
            let slots = p.hardwareBufferSize / hw_record_bytes(metrics.len());
            if p.samplingInterval == 0 || slots == 0 || (size >= 64 && p.hwBufferAppendMode > 1) {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            let turing = o.chip == "TU102";
            if keep_latest && turing {
                return Err(CUPTI_ERROR_NOT_SUPPORTED);
            }
            use CUpti_PmSampling_TriggerMode::*;
            let interval_ns = match p.triggerMode {
                CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL => {
                    if turing || o.chip == "GA100" {
                        return Err(CUPTI_ERROR_NOT_SUPPORTED);
                    }
                    p.samplingInterval
                }
                CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL => {
                    let d = crate::driver::get().ok_or(CUPTI_ERROR_NOT_INITIALIZED)?;
                    let khz = d.attribute(CLOCK_RATE, o.device as i32).unwrap_or(0).max(1) as f64;
                    ((p.samplingInterval as f64 * 1e6 / khz).round() as u64).max(1)
                }
                _ => return Err(CUPTI_ERROR_INVALID_PARAMETER),
            };
            o.set_config(PmConfig {
                metrics,
                interval_ns,
                hw_capacity: slots as u64,
                keep_latest,
            })
        }))
    })
}

/// `cuptiPmSamplingStart`: sampling starts at the driver's clock now.
///
/// # Safety
/// `p` is null or a valid `CUpti_PmSampling_Start_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingStart(p: *mut CUpti_PmSampling_Start_Params) -> R {
    run(p, 24, |p, _| {
        flat(pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            o.start(now())
        }))
    })
}

/// `cuptiPmSamplingStop`: the last sample ends now.
///
/// # Safety
/// `p` is null or a valid `CUpti_PmSampling_Stop_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingStop(p: *mut CUpti_PmSampling_Stop_Params) -> R {
    run(p, 24, |p, _| {
        flat(pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            o.stop(now())
        }))
    })
}

/// `cuptiPmSamplingDecodeData`: moves completed samples from the hardware buffer into
/// the image (also while sampling); `decodeStopReason` COUNTER_DATA_FULL when
/// samples remain, else END_OF_RECORDS. A KEEP_OLDEST overflow sets `overflow` and
/// answers `CUPTI_ERROR_OUT_OF_MEMORY` after decoding what was kept.
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingDecodeData(
    p: *mut CUpti_PmSampling_DecodeData_Params,
) -> R {
    run(p, 45, |p, _| {
        let r = pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            if p.pCounterDataImage.is_null() || p.counterDataImageSize == 0 {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            // SAFETY: the client's image of counterDataImageSize bytes.
            let buf = unsafe {
                std::slice::from_raw_parts_mut(p.pCounterDataImage, p.counterDataImageSize)
            };
            o.decode(buf, now())
        });
        match r {
            Ok((reason, overflow)) => {
                p.decodeStopReason = reason;
                p.overflow = u8::from(overflow);
                if overflow {
                    CUPTI_ERROR_OUT_OF_MEMORY
                } else {
                    CUPTI_SUCCESS
                }
            }
            Err(e) => e,
        }
    })
}

/// `cuptiPmSamplingGetCounterAvailability` for `deviceIndex` (two-call protocol).
///
/// # Safety
/// `p` is null or valid; the image holds `counterAvailabilityImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingGetCounterAvailability(
    p: *mut CUpti_PmSampling_GetCounterAvailability_Params,
) -> R {
    run(p, 40, |p, _| {
        let Some(d) = crate::driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        let Ok(dev) = i32::try_from(p.deviceIndex) else {
            return CUPTI_ERROR_INVALID_PARAMETER;
        };
        if d.attribute(CLOCK_RATE, dev).is_none() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let chip = crate::api_profiler_target::chip_of(d, dev).unwrap_or_default();
        crate::api_profiler_target::availability(
            &mut p.counterAvailabilityImageSize,
            p.pCounterAvailabilityImage,
            &chip,
        )
    })
}

/// `cuptiPmSamplingGetCounterDataSize`: the sim image for `maxSamples` samples of
/// `pMetricNames` (metrics NVIDIA's library refuses for PM sampling on the chip:
/// `CUPTI_ERROR_INVALID_METRIC_NAME`); remembered
/// for `cuptiPmSamplingCounterDataImageInitialize`.
///
/// # Safety
/// `p` is null or valid; `pMetricNames` holds `numMetrics` C strings.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingGetCounterDataSize(
    p: *mut CUpti_PmSampling_GetCounterDataSize_Params,
) -> R {
    run(p, 56, |p, _| {
        flat(pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            // SAFETY: the client's array.
            let metrics = unsafe { metric_names(p.pMetricNames, p.numMetrics) }
                .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
            crate::real_host::check_metrics(&o.chip, true, &metrics)?;
            if p.maxSamples == 0 {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            let shape = Shape {
                kind: KIND_SAMPLE,
                metrics,
                capacity: p.maxSamples as usize,
                chip: o.chip.clone(),
            };
            p.counterDataSize = shape.size();
            o.shape = Some(shape);
            Ok(())
        }))
    })
}

/// `cuptiPmSamplingCounterDataImageInitialize` (before a GetCounterDataSize:
/// `CUPTI_ERROR_INVALID_OPERATION`; a smaller size or null buffer:
/// `CUPTI_ERROR_INVALID_PARAMETER`). Re-initialising empties the image.
///
/// # Safety
/// `p` is null or valid; `pCounterData` holds `counterDataSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingCounterDataImageInitialize(
    p: *mut CUpti_PmSampling_CounterDataImage_Initialize_Params,
) -> R {
    run(p, 40, |p, _| {
        flat(pm::with(p.pPmSamplingObject as usize, NOT_ENABLED, |o| {
            let shape = o.shape.as_ref().ok_or(CUPTI_ERROR_INVALID_OPERATION)?;
            if p.pCounterData.is_null() || p.counterDataSize < shape.size() {
                return Err(CUPTI_ERROR_INVALID_PARAMETER);
            }
            // SAFETY: the client's buffer of counterDataSize bytes.
            shape.initialize(unsafe {
                std::slice::from_raw_parts_mut(p.pCounterData, p.counterDataSize)
            });
            Ok(())
        }))
    })
}

/// The PM sampling image at (`ptr`, `size`), or `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `ptr` is null or valid for `size` bytes for `'a`.
unsafe fn sample_image<'a>(ptr: *const u8, size: usize) -> Result<(&'a [u8], Image), R> {
    // SAFETY: forwarded.
    let buf = unsafe { counter_data::bytes(ptr, size) }.ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
    let img = Image::parse(buf)
        .filter(|i| i.shape.kind == KIND_SAMPLE)
        .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
    Ok((buf, img))
}

/// `cuptiPmSamplingGetCounterDataInfo`: `numTotalSamples` the image's capacity
/// (`maxSamples`), `numPopulatedSamples` and `numCompletedSamples` the samples
/// decoded into it (every sim sample is complete).
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingGetCounterDataInfo(
    p: *mut CUpti_PmSampling_GetCounterDataInfo_Params,
) -> R {
    run(p, 56, |p, _| {
        // SAFETY: the client's image.
        match unsafe { sample_image(p.pCounterDataImage, p.counterDataImageSize) } {
            Ok((_, img)) => {
                p.numTotalSamples = img.shape.capacity;
                p.numPopulatedSamples = img.filled;
                p.numCompletedSamples = img.filled;
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiPmSamplingCounterDataGetSampleInfo`: the sample's start and end timestamps
/// (CUPTI's timebase, the driver's clock); an index past the samples is
/// `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiPmSamplingCounterDataGetSampleInfo(
    p: *mut CUpti_PmSampling_CounterData_GetSampleInfo_Params,
) -> R {
    run(p, 64, |p, _| {
        // SAFETY: the client's image.
        let rec = match unsafe { sample_image(p.pCounterDataImage, p.counterDataImageSize) } {
            Ok((buf, img)) => img.record(buf, p.sampleIndex),
            Err(e) => return e,
        };
        match rec {
            Some(r) => {
                p.startTimestamp = r.start;
                p.endTimestamp = r.end;
                CUPTI_SUCCESS
            }
            None => CUPTI_ERROR_INVALID_PARAMETER,
        }
    })
}
