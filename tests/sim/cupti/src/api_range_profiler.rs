//! Exports of `cupti_range_profiler.h` (CUDA 12.6 on); state in [`crate::range_profiler`].
//!
//! Every function checks `structSize` against the struct's size in 12.6 (smaller:
//! `CUPTI_ERROR_INVALID_PARAMETER`). Calls on a null or unknown object answer
//! `CUPTI_ERROR_INVALID_OPERATION` ("called without enabling range profiler"), except
//! Disable (`CUPTI_ERROR_INVALID_PARAMETER`, its only documented error). Order errors
//! (Start before SetConfig, Start twice, Stop without Start, Push/Pop outside
//! Start..Stop or in auto range, DecodeData before Stop, SetConfig while started) are
//! `CUPTI_ERROR_INVALID_OPERATION`. `cuptiProfilerInitialize` must come first
//! (`CUPTI_ERROR_NOT_INITIALIZED`).
//!
//! `SIMCUPTI_COUNTERS_BUSY` plays another tool holding the GPU's counters
//! ([`crate::profiling::counters_busy`]): `cuptiRangeProfilerEnable` on a valid
//! context then answers `CUPTI_ERROR_HARDWARE_BUSY` ("The performance monitoring
//! hardware is in use by other client", cupti_result.h).

use std::ffi::CStr;

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

use crate::counter_data::{self, Image, Shape, KIND_RANGE};
use crate::ffi::guard;
use crate::profiling::{available, config_at, metric_names, with_params};
use crate::range_profiler::{self as rp, Config};

type R = CUptiResult::Type;

fn flat(r: Result<(), R>) -> R {
    r.err().unwrap_or(CUPTI_SUCCESS)
}

/// Gate + struct check + body, for every export here.
///
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

const NOT_ENABLED: R = CUPTI_ERROR_INVALID_OPERATION;

/// `cuptiRangeProfilerEnable`: "Create a range profiler object and enable range
/// profiling on the CUDA context." A null or invalid context is
/// `CUPTI_ERROR_INVALID_PARAMETER`; a second object on one context, or PM sampling
/// enabled on its device, `CUPTI_ERROR_INVALID_OPERATION`; with `SIMCUPTI_COUNTERS_BUSY` naming it (another
/// tool holds the counters) `CUPTI_ERROR_HARDWARE_BUSY`.
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_Enable_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerEnable(p: *mut CUpti_RangeProfiler_Enable_Params) -> R {
    run(p, 32, |p, _| {
        if let Err(e) = crate::profiling::require_profiler_initialized() {
            return e;
        }
        let Some(d) = crate::driver::get() else {
            return CUPTI_ERROR_NOT_INITIALIZED;
        };
        if p.ctx.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: table functions.
        let (id, dev) = unsafe { ((d.table.context_id)(p.ctx), (d.table.context_device)(p.ctx)) };
        if id == 0 || dev < 0 {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        if crate::profiling::counters_busy("cuptiRangeProfilerEnable") {
            return CUPTI_ERROR_HARDWARE_BUSY;
        }
        // Whether the range profiler and PM sampling may be enabled at once on a
        // device is not documented (`cuptiPmSamplingGetCounterAvailability`: "may
        // fail, if any profiling or sampling session is active"): the sim refuses it.
        if crate::pm_sampling::any_on_device(dev as u32) {
            return CUPTI_ERROR_INVALID_OPERATION;
        }
        let chip = crate::api_profiler_target::chip_of(d, dev).unwrap_or_default();
        match rp::enable(id, p.ctx as usize, dev, chip) {
            Ok(h) => {
                p.pRangeProfilerObject = h as *mut CUpti_RangeProfiler_Object;
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiRangeProfilerDisable`: destroys the object (stopping it if started).
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_Disable_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerDisable(
    p: *mut CUpti_RangeProfiler_Disable_Params,
) -> R {
    run(p, 24, |p, _| {
        flat(rp::disable(p.pRangeProfilerObject as usize))
    })
}

/// `cuptiRangeProfilerGetCounterDataSize`: the sim image for `maxNumOfRanges` ranges
/// of `pMetricNames` (metrics NVIDIA's library refuses on the chip:
/// `CUPTI_ERROR_INVALID_METRIC_NAME`;
/// `maxNumRangeTreeNodes` below `maxNumOfRanges`, "must be >= maxNumOfRanges":
/// `CUPTI_ERROR_INVALID_PARAMETER`). The object remembers the shape for
/// `cuptiRangeProfilerCounterDataImageInitialize`.
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_GetCounterDataSize_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerGetCounterDataSize(
    p: *mut CUpti_RangeProfiler_GetCounterDataSize_Params,
) -> R {
    run(p, 64, |p, _| {
        flat(rp::with(
            p.pRangeProfilerObject as usize,
            NOT_ENABLED,
            |o| {
                // SAFETY: the client's array of `numMetrics` names.
                let metrics = unsafe { metric_names(p.pMetricNames, p.numMetrics) }
                    .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
                crate::real_host::check_metrics(&o.chip, false, &metrics)?;
                if p.maxNumOfRanges == 0
                    || p.maxNumOfRanges > u32::MAX as usize
                    || (p.maxNumRangeTreeNodes as usize) < p.maxNumOfRanges
                {
                    return Err(CUPTI_ERROR_INVALID_PARAMETER);
                }
                let shape = Shape {
                    kind: KIND_RANGE,
                    metrics,
                    capacity: p.maxNumOfRanges,
                    chip: o.chip.clone(),
                };
                p.counterDataSize = shape.size();
                o.shape = Some(shape);
                Ok(())
            },
        ))
    })
}

/// `cuptiRangeProfilerCounterDataImageInitialize`: lays out the image of the last
/// `cuptiRangeProfilerGetCounterDataSize` (none yet: `CUPTI_ERROR_INVALID_OPERATION`;
/// a smaller `counterDataSize` or null buffer: `CUPTI_ERROR_INVALID_PARAMETER`).
///
/// # Safety
/// `p` is null or valid; `pCounterData` holds `counterDataSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerCounterDataImageInitialize(
    p: *mut CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
) -> R {
    run(p, 40, |p, _| {
        flat(rp::with(
            p.pRangeProfilerObject as usize,
            NOT_ENABLED,
            |o| {
                let shape = o.shape.as_ref().ok_or(CUPTI_ERROR_INVALID_OPERATION)?;
                if p.pCounterData.is_null() || p.counterDataSize < shape.size() {
                    return Err(CUPTI_ERROR_INVALID_PARAMETER);
                }
                // SAFETY: the client's buffer of counterDataSize bytes.
                let buf =
                    unsafe { std::slice::from_raw_parts_mut(p.pCounterData, p.counterDataSize) };
                shape.initialize(buf);
                Ok(())
            },
        ))
    })
}

/// `cuptiRangeProfilerSetConfig`: config image (the sim's, from the profiler host),
/// counter data image (initialised), `CUPTI_AutoRange` or `CUPTI_UserRange`,
/// `CUPTI_KernelReplay` (auto range only) or `CUPTI_UserReplay`, `maxRangesPerPass`
/// at least 1, `numNestingLevels` at least 1 (`minNestingLevel` 0 counts as 1). Anything else is
/// `CUPTI_ERROR_INVALID_PARAMETER`; while started `CUPTI_ERROR_INVALID_OPERATION`.
/// `passIndex` and `targetNestingLevel` are accepted as given (one pass).
///
/// # Safety
/// `p` is null or valid; the images stay valid until decoded.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerSetConfig(
    p: *mut CUpti_RangeProfiler_SetConfig_Params,
) -> R {
    run(p, 90, |p, _| {
        flat(rp::with(
            p.pRangeProfilerObject as usize,
            NOT_ENABLED,
            |o| {
                // SAFETY: the client's config image of configSize bytes.
                let image = unsafe { config_at(p.pConfig, p.configSize) }
                    .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
                // SAFETY: the client's counter data image.
                let buf =
                    unsafe { counter_data::bytes(p.pCounterDataImage, p.counterDataImageSize) };
                buf.and_then(Image::parse)
                    .filter(|i| i.shape.kind == KIND_RANGE)
                    .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
                use CUpti_ProfilerRange::{CUPTI_AutoRange as AUTO, CUPTI_UserRange as USER};
                use CUpti_ProfilerReplayMode::{
                    CUPTI_KernelReplay as KERNEL, CUPTI_UserReplay as USER_REPLAY,
                };
                let auto = match p.range {
                    AUTO => true,
                    USER => false,
                    _ => return Err(CUPTI_ERROR_INVALID_PARAMETER),
                };
                let replay_ok = match p.replayMode {
                    KERNEL => auto,
                    USER_REPLAY => true,
                    _ => false,
                };
                if !replay_ok || p.maxRangesPerPass == 0 || p.numNestingLevels == 0 {
                    return Err(CUPTI_ERROR_INVALID_PARAMETER);
                }
                o.set_config(Config {
                    metrics: image.metrics,
                    passes: image.passes,
                    kernel_replay: p.replayMode == KERNEL,
                    image: p.pCounterDataImage as usize,
                    image_size: p.counterDataImageSize,
                    auto,
                    max_per_pass: p.maxRangesPerPass,
                    min_level: usize::from(p.minNestingLevel.max(1)),
                    num_levels: if auto {
                        1
                    } else {
                        usize::from(p.numNestingLevels)
                    },
                })
            },
        ))
    })
}

/// `cuptiRangeProfilerStart`. Starting a pass while a stream of the object's context
/// is being captured into a graph invalidates that capture (its
/// `cuStreamEndCapture` fails): whether NVIDIA's range profiler can start a pass
/// inside a capture without breaking it cannot be asked without a GPU, so the sim
/// assumes the worst for the application (strict).
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_Start_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerStart(p: *mut CUpti_RangeProfiler_Start_Params) -> R {
    run(p, 24, |p, _| {
        let r = rp::with(p.pRangeProfilerObject as usize, NOT_ENABLED, |o| {
            o.start().map(|()| o.ctx)
        });
        match r {
            Ok(ctx) => {
                if let Some(d) = crate::driver::get() {
                    // SAFETY: a table function; the handle is the context the object
                    // was enabled on (an unknown handle matches no stream).
                    unsafe { (d.table.invalidate_captures)(ctx as CUcontext) };
                }
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiRangeProfilerStop`: `isAllPassSubmitted` is always 1 (one pass per config,
/// [`crate::profiling`]); `passIndex` 1 and `targetNestingLevel` the minimum level.
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_Stop_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerStop(p: *mut CUpti_RangeProfiler_Stop_Params) -> R {
    run(p, 41, |p, _| {
        match rp::with(p.pRangeProfilerObject as usize, NOT_ENABLED, |o| o.stop()) {
            Ok((pass, level, all)) => {
                p.passIndex = pass;
                p.targetNestingLevel = level;
                p.isAllPassSubmitted = u8::from(all);
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiRangeProfilerPushRange` (user range mode; a null name is
/// `CUPTI_ERROR_INVALID_PARAMETER`).
///
/// # Safety
/// `p` is null or valid; `pRangeName` null or a C string.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerPushRange(
    p: *mut CUpti_RangeProfiler_PushRange_Params,
) -> R {
    run(p, 32, |p, _| {
        flat(rp::with(
            p.pRangeProfilerObject as usize,
            NOT_ENABLED,
            |o| {
                if p.pRangeName.is_null() {
                    return Err(CUPTI_ERROR_INVALID_PARAMETER);
                }
                // SAFETY: non-null C string.
                let name = unsafe { CStr::from_ptr(p.pRangeName) }
                    .to_string_lossy()
                    .into_owned();
                o.push(name)
            },
        ))
    })
}

/// `cuptiRangeProfilerPopRange` (without an open range: `CUPTI_ERROR_INVALID_OPERATION`).
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_PopRange_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerPopRange(
    p: *mut CUpti_RangeProfiler_PopRange_Params,
) -> R {
    run(p, 24, |p, _| {
        flat(rp::with(
            p.pRangeProfilerObject as usize,
            NOT_ENABLED,
            |o| o.pop(),
        ))
    })
}

/// `cuptiRangeProfilerDecodeData`: "should be called after cuptiRangeProfilerStop"
/// (before: `CUPTI_ERROR_INVALID_OPERATION`); appends the pass's ranges to the image
/// given at SetConfig, counting those that do not fit in `numOfRangeDropped`.
///
/// # Safety
/// `p` is null or a valid `CUpti_RangeProfiler_DecodeData_Params`.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerDecodeData(
    p: *mut CUpti_RangeProfiler_DecodeData_Params,
) -> R {
    run(p, 32, |p, _| {
        // The pass's data is in the hardware once its kernels have run: wait for them
        // in real time (forever if one never runs), outside the profilers' lock.
        let handle = p.pRangeProfilerObject as usize;
        loop {
            match rp::pass_end(handle) {
                Ok(Some(end)) => {
                    while crate::driver::now_ns() < end {
                        std::thread::sleep(std::time::Duration::from_micros(100));
                    }
                    break;
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(_) => break,
            }
        }
        match rp::with(p.pRangeProfilerObject as usize, NOT_ENABLED, |o| o.decode()) {
            Ok(dropped) => {
                p.numOfRangeDropped = dropped;
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// The range image at (`ptr`, `size`), or `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `ptr` is null or valid for `size` bytes for `'a`.
pub unsafe fn range_image<'a>(ptr: *const u8, size: usize) -> Result<(&'a [u8], Image), R> {
    // SAFETY: forwarded.
    let buf = unsafe { counter_data::bytes(ptr, size) }.ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
    let img = Image::parse(buf)
        .filter(|i| i.shape.kind == KIND_RANGE)
        .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
    Ok((buf, img))
}

/// `cuptiRangeProfilerGetCounterDataInfo`: `numTotalRanges`, the ranges decoded into
/// the image.
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerGetCounterDataInfo(
    p: *mut CUpti_RangeProfiler_GetCounterDataInfo_Params,
) -> R {
    run(p, 40, |p, _| {
        // SAFETY: the client's image.
        match unsafe { range_image(p.pCounterDataImage, p.counterDataImageSize) } {
            Ok((_, img)) => {
                p.numTotalRanges = img.filled;
                CUPTI_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// `cuptiRangeProfilerCounterDataGetRangeInfo`: the range's name, nested levels joined
/// by `rangeDelimiter` ("/" when null); a `malloc`ed string the client may free. An
/// index past the ranges is `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `p` is null or valid; the image holds `counterDataImageSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiRangeProfilerCounterDataGetRangeInfo(
    p: *mut CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
) -> R {
    run(p, 56, |p, _| {
        // SAFETY: the client's image.
        let (buf, img) = match unsafe { range_image(p.pCounterDataImage, p.counterDataImageSize) } {
            Ok(x) => x,
            Err(e) => return e,
        };
        let Some(rec) = img.record(buf, p.rangeIndex) else {
            return CUPTI_ERROR_INVALID_PARAMETER;
        };
        // SAFETY: the delimiter is null or a C string.
        p.rangeName = unsafe { counter_data::range_name(&rec.name, p.rangeDelimiter) };
        CUPTI_SUCCESS
    })
}
