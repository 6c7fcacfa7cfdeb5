//! The CUPTI profiling calls the counter collection makes (`cupti_profiler_target.h`,
//! `cupti_profiler_host.h`, `cupti_range_profiler.h`, `cupti_pmsampling.h`, CUDA 12.6
//! on), as small safe
//! wrappers. With `cupti_api.rs` this is the only caller of the raw function table.
//!
//! Every params struct is zeroed and its `structSize` set as the header's
//! `*_STRUCT_SIZE` macro does: the offset of the struct's last field plus its size
//! (no trailing padding). Struct layouts are those of the newest pinned headers; the
//! profiling structs only grow at the end, and CUPTI reads `structSize` to know which
//! fields a client passed, so where a struct gained fields after 12.6 that we do not
//! use (`cacheControlMode` of Enable, `pSinglePassMetricSetName` of host Initialize),
//! the size stops before them: what a 12.6 client passes, which every later CUPTI
//! accepts.
//!
//! Errors name the call ([`CallError`]), so the one warning a failure gives says which
//! step CUPTI refused.
//!
//! Reference: <https://docs.nvidia.com/cupti/api/group__CUPTI__RANGE__PROFILER__API.html>,
//! <https://docs.nvidia.com/cupti/api/group__CUPTI__PROFILER__HOST__API.html>.

use core::ffi::{c_char, CStr};
use std::ffi::CString;
use std::fmt;

use cupti::{Cupti, CuptiError};
use cupti_sys::CUptiResult::CUPTI_ERROR_NOT_SUPPORTED;
use cupti_sys::CUpti_PmSampling_DecodeStopReason::CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
use cupti_sys::CUpti_PmSampling_TriggerMode::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
use cupti_sys::CUpti_ProfilerRange::CUPTI_AutoRange;
use cupti_sys::CUpti_ProfilerReplayMode::{CUPTI_KernelReplay, CUPTI_UserReplay};
use cupti_sys::CUpti_ProfilerType::{
    CUPTI_PROFILER_TYPE_PM_SAMPLING, CUPTI_PROFILER_TYPE_RANGE_PROFILER,
};
use cupti_sys::*;

/// A CUPTI call that failed, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallError {
    pub call: &'static str,
    pub code: CuptiError,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code.0 == CUPTI_ERROR_NOT_SUPPORTED {
            write!(
                f,
                "{} is not supported by this CUPTI ({})",
                self.call, self.code
            )
        } else {
            // CuptiError names the codes the cupti crate knows, the number otherwise.
            write!(f, "{} failed: {}", self.call, self.code)
        }
    }
}

type Result<T> = std::result::Result<T, CallError>;

/// The size of the field `f` selects (for `*_STRUCT_SIZE`).
fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    core::mem::size_of::<F>()
}

/// A zeroed params struct of type `$t` whose last field is `$last`, with the header's
/// `structSize`.
macro_rules! params {
    ($t:ty, $last:ident) => {{
        // SAFETY: CUPTI's params structs are plain C structs of integers and pointers,
        // for which all-zero bytes are a valid value (what the headers' samples do with
        // memset).
        let mut p: $t = unsafe { core::mem::zeroed() };
        p.structSize = core::mem::offset_of!($t, $last) + field_size(|p: &$t| &p.$last);
        p
    }};
}

/// Calls the table entry `$name` with `$p` (a `&mut` params struct), mapping a missing
/// entry to `CUPTI_ERROR_NOT_SUPPORTED`.
macro_rules! call {
    ($c:expr, $name:ident, $p:expr) => {{
        let name = stringify!($name);
        match $c.fns().$name {
            None => Err(CallError {
                call: name,
                code: CuptiError(CUPTI_ERROR_NOT_SUPPORTED),
            }),
            Some(f) => {
                // SAFETY: the params struct is a valid, initialised struct of the
                // header's type with `structSize` set; every pointer in it is null or
                // valid for the call, as each caller below makes sure.
                let rc = unsafe { f($p) };
                CuptiError::check(rc).map_err(|code| CallError { call: name, code })
            }
        }
    }};
}

/// `cuptiProfilerInitialize`.
pub fn profiler_initialize(c: &Cupti) -> Result<()> {
    let mut p = params!(CUpti_Profiler_Initialize_Params, pPriv);
    call!(c, cuptiProfilerInitialize, &mut p)
}

/// `cuptiDeviceGetChipName` of device ordinal `device`.
pub fn chip_name(c: &Cupti, device: u32) -> Result<String> {
    let mut p = params!(CUpti_Device_GetChipName_Params, pChipName);
    p.deviceIndex = device as usize;
    call!(c, cuptiDeviceGetChipName, &mut p)?;
    if p.pChipName.is_null() {
        return Err(CallError {
            call: "cuptiDeviceGetChipName",
            code: CuptiError(cupti_sys::CUptiResult::CUPTI_ERROR_UNKNOWN),
        });
    }
    // SAFETY: CUPTI returned a NUL-terminated string it owns.
    Ok(unsafe { CStr::from_ptr(p.pChipName) }
        .to_string_lossy()
        .into_owned())
}

/// Metric names as C strings and the pointer array CUPTI's calls take.
pub struct MetricNames {
    names: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

// SAFETY: the pointers point into the owned `CString`s' heap buffers, which never move
// or change while `self` lives; nothing is mutated after construction.
unsafe impl Send for MetricNames {}
// SAFETY: as for Send.
unsafe impl Sync for MetricNames {}

impl MetricNames {
    /// `None` if a name holds a NUL byte.
    pub fn new(names: &[&str]) -> Option<MetricNames> {
        let names: Vec<CString> = names
            .iter()
            .map(|n| CString::new(*n).ok())
            .collect::<Option<_>>()?;
        let ptrs = names.iter().map(|n| n.as_ptr()).collect();
        Some(MetricNames { names, ptrs })
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn names(&self) -> &[CString] {
        &self.names
    }

    /// The array as CUPTI's `const char **` (CUPTI only reads it).
    fn array(&self) -> *mut *const c_char {
        self.ptrs.as_ptr() as *mut *const c_char
    }
}

/// A profiler host object of one pass group: its metrics and config image.
pub struct HostConfig {
    host: usize,
    pub metrics: MetricNames,
    pub config: Vec<u8>,
}

/// Why a host config could not be made: the call, and for an unknown metric its name.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub error: CallError,
    pub metric: Option<String>,
}

impl HostConfig {
    /// `cuptiProfilerHostInitialize` (range profiler, `chip`), then
    /// `cuptiProfilerHostConfigAddMetrics` one metric at a time (so a refusal names the
    /// metric), `GetConfigImageSize` and `GetConfigImage`.
    pub fn new(
        c: &Cupti,
        chip: &str,
        metrics: MetricNames,
    ) -> std::result::Result<HostConfig, ConfigError> {
        HostConfig::with_type(c, chip, metrics, CUPTI_PROFILER_TYPE_RANGE_PROFILER)
    }

    /// As [`HostConfig::new`], for PM sampling's config images.
    pub fn for_sampling(
        c: &Cupti,
        chip: &str,
        metrics: MetricNames,
    ) -> std::result::Result<HostConfig, ConfigError> {
        HostConfig::with_type(c, chip, metrics, CUPTI_PROFILER_TYPE_PM_SAMPLING)
    }

    fn with_type(
        c: &Cupti,
        chip: &str,
        metrics: MetricNames,
        kind: CUpti_ProfilerType::Type,
    ) -> std::result::Result<HostConfig, ConfigError> {
        let plain = |error| ConfigError {
            error,
            metric: None,
        };
        let chip_c = CString::new(chip).map_err(|_| {
            plain(CallError {
                call: "cuptiProfilerHostInitialize",
                code: CuptiError(cupti_sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER),
            })
        })?;
        let mut p = params!(
            CUpti_Profiler_Host_Initialize_Params,
            pSinglePassMetricSetName
        );
        p.profilerType = kind;
        p.pChipName = chip_c.as_ptr();
        call!(c, cuptiProfilerHostInitialize, &mut p).map_err(plain)?;
        let mut hc = HostConfig {
            host: p.pHostObject as usize,
            metrics,
            config: Vec::new(),
        };
        for (i, name) in hc.metrics.names().iter().enumerate() {
            let mut a = params!(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
            a.pHostObject = hc.host_object();
            // SAFETY: `i` is in bounds; CUPTI reads one pointer from there.
            a.ppMetricNames = unsafe { hc.metrics.array().add(i) };
            a.numMetrics = 1;
            call!(c, cuptiProfilerHostConfigAddMetrics, &mut a).map_err(|error| ConfigError {
                error,
                metric: Some(name.to_string_lossy().into_owned()),
            })?;
        }
        let mut s = params!(
            CUpti_Profiler_Host_GetConfigImageSize_Params,
            configImageSize
        );
        s.pHostObject = hc.host_object();
        call!(c, cuptiProfilerHostGetConfigImageSize, &mut s).map_err(plain)?;
        hc.config = vec![0u8; s.configImageSize];
        let mut g = params!(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
        g.pHostObject = hc.host_object();
        g.configImageSize = hc.config.len();
        g.pConfigImage = hc.config.as_mut_ptr();
        call!(c, cuptiProfilerHostGetConfigImage, &mut g).map_err(plain)?;
        Ok(hc)
    }

    /// `cuptiProfilerHostGetNumOfPasses` of the config image.
    pub fn passes(&mut self, c: &Cupti) -> Result<usize> {
        let mut p = params!(CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
        p.configImageSize = self.config.len();
        p.pConfigImage = self.config.as_mut_ptr();
        call!(c, cuptiProfilerHostGetNumOfPasses, &mut p)?;
        Ok(p.numOfPasses)
    }

    fn host_object(&self) -> *mut CUpti_Profiler_Host_Object {
        self.host as *mut CUpti_Profiler_Host_Object
    }

    /// `cuptiProfilerHostEvaluateToGpuValues` of range `index` of `image` into `out`
    /// (one value per metric).
    pub fn evaluate(&self, c: &Cupti, image: &[u8], index: usize, out: &mut [f64]) -> Result<()> {
        if out.len() != self.metrics.len() {
            return Err(CallError {
                call: "cuptiProfilerHostEvaluateToGpuValues",
                code: CuptiError(cupti_sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER),
            });
        }
        let mut p = params!(
            CUpti_Profiler_Host_EvaluateToGpuValues_Params,
            pMetricValues
        );
        p.pHostObject = self.host_object();
        p.pCounterDataImage = image.as_ptr();
        p.counterDataImageSize = image.len();
        p.rangeIndex = index;
        p.ppMetricNames = self.metrics.array();
        p.numMetrics = self.metrics.len();
        p.pMetricValues = out.as_mut_ptr();
        call!(c, cuptiProfilerHostEvaluateToGpuValues, &mut p)
    }
}

/// A range profiler object (`cuptiRangeProfilerEnable` on one context). An opaque
/// token CUPTI accepts from any thread; we never dereference it.
#[derive(Debug, Clone, Copy)]
pub struct RangeProfiler(usize);

impl RangeProfiler {
    fn object(self) -> *mut CUpti_RangeProfiler_Object {
        self.0 as *mut CUpti_RangeProfiler_Object
    }
}

/// `cuptiRangeProfilerEnable` on `ctx`.
pub fn range_enable(c: &Cupti, ctx: CUcontext) -> Result<RangeProfiler> {
    let mut p = params!(CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject);
    p.ctx = ctx;
    call!(c, cuptiRangeProfilerEnable, &mut p)?;
    Ok(RangeProfiler(p.pRangeProfilerObject as usize))
}

/// `cuptiRangeProfilerGetCounterDataSize` for `max_ranges` ranges of `metrics`.
pub fn counter_data_size(
    c: &Cupti,
    rp: RangeProfiler,
    metrics: &MetricNames,
    max_ranges: usize,
) -> Result<usize> {
    let mut p = params!(
        CUpti_RangeProfiler_GetCounterDataSize_Params,
        counterDataSize
    );
    p.pRangeProfilerObject = rp.object();
    p.pMetricNames = metrics.array();
    p.numMetrics = metrics.len();
    p.maxNumOfRanges = max_ranges;
    p.maxNumRangeTreeNodes = max_ranges as u32;
    call!(c, cuptiRangeProfilerGetCounterDataSize, &mut p)?;
    Ok(p.counterDataSize)
}

/// `cuptiRangeProfilerCounterDataImageInitialize` of `image` (sized by the last
/// [`counter_data_size`] on `rp`).
pub fn counter_data_initialize(c: &Cupti, rp: RangeProfiler, image: &mut [u8]) -> Result<()> {
    let mut p = params!(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
        pCounterData
    );
    p.pRangeProfilerObject = rp.object();
    p.counterDataSize = image.len();
    p.pCounterData = image.as_mut_ptr();
    call!(c, cuptiRangeProfilerCounterDataImageInitialize, &mut p)
}

/// `cuptiRangeProfilerSetConfig`: auto range (one range per kernel), one range per
/// pass, one nesting level. Without `kernel_replay`, user replay: this process decides
/// when the pass begins and ends, so no kernel is ever replayed and the config must be
/// one pass. With it, kernel replay: CUPTI runs the measured kernel once per pass of
/// the config (saving and restoring the memory it writes) inside the launch call.
///
/// # Safety
/// `image` stays valid and unmoved until the pass is decoded
/// ([`decode`]): CUPTI writes it then.
pub unsafe fn set_config(
    c: &Cupti,
    rp: RangeProfiler,
    config: &[u8],
    image: &mut [u8],
    kernel_replay: bool,
) -> Result<()> {
    let mut p = params!(CUpti_RangeProfiler_SetConfig_Params, targetNestingLevel);
    p.pRangeProfilerObject = rp.object();
    p.configSize = config.len();
    p.pConfig = config.as_ptr();
    p.counterDataImageSize = image.len();
    p.pCounterDataImage = image.as_mut_ptr();
    p.range = CUPTI_AutoRange;
    p.replayMode = if kernel_replay {
        CUPTI_KernelReplay
    } else {
        CUPTI_UserReplay
    };
    p.maxRangesPerPass = 1;
    p.numNestingLevels = 1;
    p.minNestingLevel = 1;
    p.passIndex = 0;
    p.targetNestingLevel = 1;
    call!(c, cuptiRangeProfilerSetConfig, &mut p)
}

/// `cuptiRangeProfilerStart`.
pub fn start(c: &Cupti, rp: RangeProfiler) -> Result<()> {
    let mut p = params!(CUpti_RangeProfiler_Start_Params, pRangeProfilerObject);
    p.pRangeProfilerObject = rp.object();
    call!(c, cuptiRangeProfilerStart, &mut p)
}

/// `cuptiRangeProfilerStop`; returns `isAllPassSubmitted`.
pub fn stop(c: &Cupti, rp: RangeProfiler) -> Result<bool> {
    let mut p = params!(CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted);
    p.pRangeProfilerObject = rp.object();
    call!(c, cuptiRangeProfilerStop, &mut p)?;
    Ok(p.isAllPassSubmitted != 0)
}

/// `cuptiRangeProfilerDecodeData`; returns the ranges dropped.
pub fn decode(c: &Cupti, rp: RangeProfiler) -> Result<usize> {
    let mut p = params!(CUpti_RangeProfiler_DecodeData_Params, numOfRangeDropped);
    p.pRangeProfilerObject = rp.object();
    call!(c, cuptiRangeProfilerDecodeData, &mut p)?;
    Ok(p.numOfRangeDropped)
}

/// `cuptiRangeProfilerGetCounterDataInfo`: the ranges in `image`.
pub fn ranges(c: &Cupti, image: &[u8]) -> Result<usize> {
    let mut p = params!(
        CUpti_RangeProfiler_GetCounterDataInfo_Params,
        numTotalRanges
    );
    p.pCounterDataImage = image.as_ptr();
    p.counterDataImageSize = image.len();
    call!(c, cuptiRangeProfilerGetCounterDataInfo, &mut p)?;
    Ok(p.numTotalRanges)
}

/// A PM sampling object (`cuptiPmSamplingEnable` on one device). An opaque token;
/// we never dereference it.
#[derive(Debug, Clone, Copy)]
pub struct PmSampler(usize);

impl PmSampler {
    fn object(self) -> *mut CUpti_PmSampling_Object {
        self.0 as *mut CUpti_PmSampling_Object
    }
}

/// `cuptiPmSamplingEnable` on device ordinal `device`.
pub fn pm_enable(c: &Cupti, device: u32) -> Result<PmSampler> {
    let mut p = params!(CUpti_PmSampling_Enable_Params, pPmSamplingObject);
    p.deviceIndex = device as usize;
    call!(c, cuptiPmSamplingEnable, &mut p)?;
    Ok(PmSampler(p.pPmSamplingObject as usize))
}

/// `cuptiPmSamplingDisable`.
pub fn pm_disable(c: &Cupti, s: PmSampler) -> Result<()> {
    let mut p = params!(CUpti_PmSampling_Disable_Params, pPmSamplingObject);
    p.pPmSamplingObject = s.object();
    call!(c, cuptiPmSamplingDisable, &mut p)
}

/// `cuptiPmSamplingSetConfig`: `config` (a PM sampling host config image), a time
/// trigger every `interval_ns` of GPU time, a hardware buffer of `buffer_bytes`. The
/// struct stops before `hwBufferAppendMode` (12.8): the 12.6 default, keep oldest.
pub fn pm_set_config(
    c: &Cupti,
    s: PmSampler,
    config: &[u8],
    interval_ns: u64,
    buffer_bytes: usize,
) -> Result<()> {
    let mut p = params!(CUpti_PmSampling_SetConfig_Params, triggerMode);
    p.pPmSamplingObject = s.object();
    p.configSize = config.len();
    p.pConfig = config.as_ptr();
    p.hardwareBufferSize = buffer_bytes;
    p.samplingInterval = interval_ns;
    p.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    call!(c, cuptiPmSamplingSetConfig, &mut p)
}

/// `cuptiPmSamplingStart`.
pub fn pm_start(c: &Cupti, s: PmSampler) -> Result<()> {
    let mut p = params!(CUpti_PmSampling_Start_Params, pPmSamplingObject);
    p.pPmSamplingObject = s.object();
    call!(c, cuptiPmSamplingStart, &mut p)
}

/// `cuptiPmSamplingStop`.
pub fn pm_stop(c: &Cupti, s: PmSampler) -> Result<()> {
    let mut p = params!(CUpti_PmSampling_Stop_Params, pPmSamplingObject);
    p.pPmSamplingObject = s.object();
    call!(c, cuptiPmSamplingStop, &mut p)
}

/// `cuptiPmSamplingGetCounterDataSize` for `max_samples` samples of `metrics`.
pub fn pm_counter_data_size(
    c: &Cupti,
    s: PmSampler,
    metrics: &MetricNames,
    max_samples: u32,
) -> Result<usize> {
    let mut p = params!(CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
    p.pPmSamplingObject = s.object();
    p.pMetricNames = metrics.array();
    p.numMetrics = metrics.len();
    p.maxSamples = max_samples;
    call!(c, cuptiPmSamplingGetCounterDataSize, &mut p)?;
    Ok(p.counterDataSize)
}

/// `cuptiPmSamplingCounterDataImageInitialize` of `image`.
pub fn pm_counter_data_initialize(c: &Cupti, s: PmSampler, image: &mut [u8]) -> Result<()> {
    let mut p = params!(
        CUpti_PmSampling_CounterDataImage_Initialize_Params,
        pCounterData
    );
    p.pPmSamplingObject = s.object();
    p.counterDataSize = image.len();
    p.pCounterData = image.as_mut_ptr();
    call!(c, cuptiPmSamplingCounterDataImageInitialize, &mut p)
}

/// `cuptiPmSamplingDecodeData` into `image`; returns whether samples are left
/// (`CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL`: the image is full).
pub fn pm_decode(c: &Cupti, s: PmSampler, image: &mut [u8]) -> Result<bool> {
    let mut p = params!(CUpti_PmSampling_DecodeData_Params, overflow);
    p.pPmSamplingObject = s.object();
    p.pCounterDataImage = image.as_mut_ptr();
    p.counterDataImageSize = image.len();
    call!(c, cuptiPmSamplingDecodeData, &mut p)?;
    Ok(p.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
}

/// `cuptiPmSamplingGetCounterDataInfo`: the completed samples in `image`.
pub fn pm_completed_samples(c: &Cupti, image: &[u8]) -> Result<usize> {
    let mut p = params!(
        CUpti_PmSampling_GetCounterDataInfo_Params,
        numCompletedSamples
    );
    p.pCounterDataImage = image.as_ptr();
    p.counterDataImageSize = image.len();
    call!(c, cuptiPmSamplingGetCounterDataInfo, &mut p)?;
    Ok(p.numCompletedSamples)
}

/// `cuptiPmSamplingCounterDataGetSampleInfo`: sample `index`'s start and end
/// timestamps (ns).
pub fn pm_sample_times(c: &Cupti, s: PmSampler, image: &[u8], index: usize) -> Result<(u64, u64)> {
    let mut p = params!(
        CUpti_PmSampling_CounterData_GetSampleInfo_Params,
        endTimestamp
    );
    p.pPmSamplingObject = s.object();
    p.pCounterDataImage = image.as_ptr();
    p.counterDataImageSize = image.len();
    p.sampleIndex = index;
    call!(c, cuptiPmSamplingCounterDataGetSampleInfo, &mut p)?;
    Ok((p.startTimestamp, p.endTimestamp))
}
