//! CUPTI's profiling calls (`cupti_profiler_target.h`, `cupti_profiler_host.h`,
//! `cupti_range_profiler.h`, CUDA 12.6 on) as small safe wrappers, with owning
//! handles that tear down on drop. PM sampling is in [`crate::pm_sampling`].
//!
//! Params structs are built by [`Params::new`] (one size rule for all, see
//! [`crate::params`]). Errors name the call ([`CallError`]), so the one warning a
//! failure gives says which step CUPTI refused.
//!
//! The functions take the function table, not a [`crate::Cupti`], because the
//! Profiler Host API runs without a CUDA driver in CUPTI 12.6-13.1: the same code
//! that runs in the profiled process plans configs offline (`gpuprof metrics
//! --cupti`, the tests against NVIDIA's libraries) through [`crate::HostLibrary`].
//!
//! Reference: <https://docs.nvidia.com/cupti/api/group__CUPTI__RANGE__PROFILER__API.html>,
//! <https://docs.nvidia.com/cupti/api/group__CUPTI__PROFILER__HOST__API.html>.

use core::ffi::{c_char, CStr};
use std::ffi::CString;
use std::fmt;
use std::sync::Mutex;

use cupti_sys::CUptiResult::{
    CUPTI_ERROR_HARDWARE_BUSY, CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_NOT_SUPPORTED,
};
use cupti_sys::CUpti_ProfilerRange::CUPTI_AutoRange;
use cupti_sys::CUpti_ProfilerReplayMode::{CUPTI_KernelReplay, CUPTI_UserReplay};
use cupti_sys::CUpti_ProfilerType::{
    CUPTI_PROFILER_TYPE_PM_SAMPLING, CUPTI_PROFILER_TYPE_RANGE_PROFILER,
};
use cupti_sys::*;

use crate::error::CuptiError;
use crate::params::Params;

/// A CUPTI call that failed, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallError {
    pub call: &'static str,
    pub code: CuptiError,
}

impl CallError {
    pub(crate) fn new(call: &'static str, code: u32) -> CallError {
        CallError {
            call,
            code: CuptiError(code),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code.0 == CUPTI_ERROR_NOT_SUPPORTED {
            write!(
                f,
                "{} is not supported by this CUPTI ({})",
                self.call, self.code
            )
        } else if self.code.0 == CUPTI_ERROR_HARDWARE_BUSY {
            write!(
                f,
                "{} failed: {}: {}",
                self.call,
                self.code,
                crate::error::HARDWARE_BUSY_EXPLAINED
            )
        } else {
            // CuptiError names the codes this crate knows, the number otherwise.
            write!(f, "{} failed: {}", self.call, self.code)
        }
    }
}

impl std::error::Error for CallError {}

pub type Result<T> = std::result::Result<T, CallError>;

/// Calls the table entry `$name` of `$fns` with `$p` (a `&mut` params struct built by
/// [`Params::new`]), mapping a missing entry to `CUPTI_ERROR_NOT_SUPPORTED`.
macro_rules! call {
    ($fns:expr, $name:ident, $p:expr) => {{
        let name = stringify!($name);
        match $fns.$name {
            None => Err($crate::profiler::CallError::new(
                name,
                cupti_sys::CUptiResult::CUPTI_ERROR_NOT_SUPPORTED,
            )),
            Some(f) => {
                // SAFETY: the params struct is a valid, initialised struct of the
                // header's type with `structSize` set by `Params::new`; every pointer
                // in it is null or valid for the call, as each caller makes sure.
                let rc = unsafe { f($p) };
                $crate::error::CuptiError::check(rc)
                    .map_err(|code| $crate::profiler::CallError { call: name, code })
            }
        }
    }};
}
pub(crate) use call;

/// `cuptiProfilerInitialize` (target side; needs the driver).
pub fn profiler_initialize(fns: &CuptiFns) -> Result<()> {
    let mut p = CUpti_Profiler_Initialize_Params::new();
    call!(fns, cuptiProfilerInitialize, &mut p)
}

/// `cuptiProfilerHostGetSupportedChips`: the chips this library's host API knows.
pub fn supported_chips(fns: &CuptiFns) -> Result<Vec<String>> {
    let mut p = CUpti_Profiler_Host_GetSupportedChips_Params::new();
    call!(fns, cuptiProfilerHostGetSupportedChips, &mut p)?;
    if p.ppChipNames.is_null() {
        return Ok(Vec::new());
    }
    // Bounded: no release knows more than a few dozen chips.
    let n = p.numChips.min(4096);
    Ok((0..n)
        .filter_map(|i| {
            // SAFETY: the library's array of `numChips` entries (`n` of them read).
            let name = unsafe { *p.ppChipNames.add(i) };
            if name.is_null() {
                return None;
            }
            // SAFETY: a non-null entry is a C string owned by the library.
            let name = unsafe { CStr::from_ptr(name) };
            Some(name.to_string_lossy().into_owned())
        })
        .collect())
}

/// `cuptiDeviceGetChipName` of device ordinal `device`.
pub fn chip_name(fns: &CuptiFns, device: u32) -> Result<String> {
    let mut p = CUpti_Device_GetChipName_Params::new();
    p.deviceIndex = device as usize;
    call!(fns, cuptiDeviceGetChipName, &mut p)?;
    if p.pChipName.is_null() {
        return Err(CallError::new(
            "cuptiDeviceGetChipName",
            cupti_sys::CUptiResult::CUPTI_ERROR_UNKNOWN,
        ));
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
    pub fn new<S: AsRef<str>>(names: &[S]) -> Option<MetricNames> {
        let names: Vec<CString> = names
            .iter()
            .map(|n| CString::new(n.as_ref()).ok())
            .collect::<Option<_>>()?;
        let ptrs = names.iter().map(|n| n.as_ptr()).collect();
        Some(MetricNames { names, ptrs })
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn names(&self) -> &[CString] {
        &self.names
    }

    /// The names as Rust strings.
    pub fn to_strings(&self) -> Vec<String> {
        self.names
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    /// The array as CUPTI's `const char **` (CUPTI only reads it).
    pub(crate) fn array(&self) -> *mut *const c_char {
        self.ptrs.as_ptr() as *mut *const c_char
    }
}

/// Which profiler a host config is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfilerType {
    /// `CUPTI_PROFILER_TYPE_RANGE_PROFILER`: per-kernel ranges.
    RangeProfiler,
    /// `CUPTI_PROFILER_TYPE_PM_SAMPLING`: GPU-wide samples.
    PmSampling,
}

impl ProfilerType {
    fn raw(self) -> CUpti_ProfilerType::Type {
        match self {
            ProfilerType::RangeProfiler => CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            ProfilerType::PmSampling => CUPTI_PROFILER_TYPE_PM_SAMPLING,
        }
    }
}

/// An initialised profiler host object (`cuptiProfilerHostInitialize`), deinitialised
/// on drop.
struct HostObject {
    fns: &'static CuptiFns,
    handle: *mut CUpti_Profiler_Host_Object,
}

impl HostObject {
    fn new(fns: &'static CuptiFns, chip: &CStr, kind: ProfilerType) -> Result<HostObject> {
        let mut p = CUpti_Profiler_Host_Initialize_Params::new();
        p.profilerType = kind.raw();
        p.pChipName = chip.as_ptr();
        call!(fns, cuptiProfilerHostInitialize, &mut p)?;
        Ok(HostObject {
            fns,
            handle: p.pHostObject,
        })
    }

    /// `cuptiProfilerHostConfigAddMetrics` with `names[range]` in one call.
    fn add(&self, names: &MetricNames, range: std::ops::Range<usize>) -> Result<()> {
        let mut a = CUpti_Profiler_Host_ConfigAddMetrics_Params::new();
        a.pHostObject = self.handle;
        // SAFETY: `range` is within the array (callers pass sub-ranges of 0..len).
        a.ppMetricNames = unsafe { names.array().add(range.start) };
        a.numMetrics = range.len();
        call!(self.fns, cuptiProfilerHostConfigAddMetrics, &mut a)
    }
}

impl Drop for HostObject {
    fn drop(&mut self) {
        let mut p = CUpti_Profiler_Host_Deinitialize_Params::new();
        p.pHostObject = self.handle;
        let _ = call!(self.fns, cuptiProfilerHostDeinitialize, &mut p);
    }
}

/// Why a host config could not be made: the call, and for a metric CUPTI refused,
/// its name.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub error: CallError,
    pub metric: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.metric {
            Some(m) => write!(f, "CUPTI does not accept metric {m} ({})", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {}

/// One pass group's profiler host object, its metrics, config image and passes.
pub struct HostConfig {
    host: HostObject,
    metrics: MetricNames,
    config: Vec<u8>,
    passes: usize,
    /// Serialises `cuptiProfilerHostEvaluateToGpuValues` on the host object, which
    /// NVIDIA does not document as thread-safe.
    evaluating: Mutex<()>,
}

// SAFETY: the host object is an opaque CUPTI handle usable from any thread; the
// only call made through `&self` (evaluate) is serialised by `evaluating`, and drop
// needs `&mut self`.
unsafe impl Send for HostConfig {}
// SAFETY: as for Send.
unsafe impl Sync for HostConfig {}

impl HostConfig {
    /// `cuptiProfilerHostInitialize` for `chip` and `kind`, every metric added in ONE
    /// `cuptiProfilerHostConfigAddMetrics` call (each call becomes its own pass group:
    /// NVIDIA's library schedules three metrics added one by one in 3 passes and the
    /// same three in one call in 1), then `GetConfigImageSize`, `GetConfigImage` and
    /// `GetNumOfPasses`. When CUPTI refuses the metrics, each is tried alone on a
    /// scratch host object so the error names the first one refused.
    pub fn new(
        fns: &'static CuptiFns,
        chip: &str,
        kind: ProfilerType,
        metrics: MetricNames,
    ) -> std::result::Result<HostConfig, ConfigError> {
        let plain = |error| ConfigError {
            error,
            metric: None,
        };
        let chip_c = CString::new(chip).map_err(|_| {
            plain(CallError::new(
                "cuptiProfilerHostInitialize",
                CUPTI_ERROR_INVALID_PARAMETER,
            ))
        })?;
        if metrics.is_empty() {
            return Err(plain(CallError::new(
                "cuptiProfilerHostConfigAddMetrics",
                CUPTI_ERROR_INVALID_PARAMETER,
            )));
        }
        let host = HostObject::new(fns, &chip_c, kind).map_err(plain)?;
        if let Err(error) = host.add(&metrics, 0..metrics.len()) {
            drop(host);
            return Err(ConfigError {
                error,
                metric: refused_metric(fns, &chip_c, kind, &metrics),
            });
        }
        let mut s = CUpti_Profiler_Host_GetConfigImageSize_Params::new();
        s.pHostObject = host.handle;
        call!(fns, cuptiProfilerHostGetConfigImageSize, &mut s).map_err(plain)?;
        let mut config = vec![0u8; s.configImageSize];
        let mut g = CUpti_Profiler_Host_GetConfigImage_Params::new();
        g.pHostObject = host.handle;
        g.configImageSize = config.len();
        g.pConfigImage = config.as_mut_ptr();
        call!(fns, cuptiProfilerHostGetConfigImage, &mut g).map_err(plain)?;
        let passes = num_passes(fns, &mut config).map_err(plain)?;
        Ok(HostConfig {
            host,
            metrics,
            config,
            passes,
            evaluating: Mutex::new(()),
        })
    }

    /// The metrics, in the order they were added.
    pub fn metrics(&self) -> &MetricNames {
        &self.metrics
    }

    /// The config image.
    pub fn config(&self) -> &[u8] {
        &self.config
    }

    /// Passes the config image needs (`cuptiProfilerHostGetNumOfPasses`).
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// `cuptiProfilerHostEvaluateToGpuValues` of range (or sample) `index` of `image`
    /// into `out` (one value per metric).
    pub fn evaluate(&self, image: &[u8], index: usize, out: &mut [f64]) -> Result<()> {
        if out.len() != self.metrics.len() {
            return Err(CallError::new(
                "cuptiProfilerHostEvaluateToGpuValues",
                CUPTI_ERROR_INVALID_PARAMETER,
            ));
        }
        let _one = self.evaluating.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = CUpti_Profiler_Host_EvaluateToGpuValues_Params::new();
        p.pHostObject = self.host.handle;
        p.pCounterDataImage = image.as_ptr();
        p.counterDataImageSize = image.len();
        p.rangeIndex = index;
        p.ppMetricNames = self.metrics.array();
        p.numMetrics = self.metrics.len();
        p.pMetricValues = out.as_mut_ptr();
        call!(self.host.fns, cuptiProfilerHostEvaluateToGpuValues, &mut p)
    }
}

/// `cuptiProfilerHostGetNumOfPasses` of a config image.
fn num_passes(fns: &CuptiFns, config: &mut [u8]) -> Result<usize> {
    let mut p = CUpti_Profiler_Host_GetNumOfPasses_Params::new();
    p.configImageSize = config.len();
    p.pConfigImage = config.as_mut_ptr();
    call!(fns, cuptiProfilerHostGetNumOfPasses, &mut p)?;
    Ok(p.numOfPasses)
}

/// The first of `metrics` CUPTI refuses alone, each tried on a fresh scratch host
/// object (a host object a refused call was made on is not reused).
fn refused_metric(
    fns: &'static CuptiFns,
    chip: &CStr,
    kind: ProfilerType,
    metrics: &MetricNames,
) -> Option<String> {
    (0..metrics.len()).find_map(|i| {
        let scratch = HostObject::new(fns, chip, kind).ok()?;
        scratch
            .add(metrics, i..i + 1)
            .is_err()
            .then(|| metrics.names()[i].to_string_lossy().into_owned())
    })
}

/// A range profiler object (`cuptiRangeProfilerEnable` on one context), disabled on
/// drop. The object is an opaque token CUPTI accepts from any thread; we never
/// dereference it.
pub struct RangeProfiler {
    fns: &'static CuptiFns,
    object: *mut CUpti_RangeProfiler_Object,
}

// SAFETY: an opaque CUPTI handle; callers serialise its use per context (one
// measurement at a time).
unsafe impl Send for RangeProfiler {}
// SAFETY: as for Send.
unsafe impl Sync for RangeProfiler {}

/// How the range profiler replays a measured kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// User replay: this process begins and ends the pass, so no kernel is replayed;
    /// the config must be one pass.
    User,
    /// Kernel replay: CUPTI runs the measured kernel once per pass of the config
    /// inside its launch call (saving and restoring the memory it writes).
    Kernel,
}

impl RangeProfiler {
    /// `cuptiRangeProfilerEnable` on `ctx`.
    pub fn enable(fns: &'static CuptiFns, ctx: CUcontext) -> Result<RangeProfiler> {
        let mut p = CUpti_RangeProfiler_Enable_Params::new();
        p.ctx = ctx;
        call!(fns, cuptiRangeProfilerEnable, &mut p)?;
        Ok(RangeProfiler {
            fns,
            object: p.pRangeProfilerObject,
        })
    }

    /// The function table the object was made with.
    pub fn fns(&self) -> &'static CuptiFns {
        self.fns
    }

    /// `cuptiRangeProfilerGetCounterDataSize` for `max_ranges` ranges of `metrics`.
    pub fn counter_data_size(&self, metrics: &MetricNames, max_ranges: usize) -> Result<usize> {
        let mut p = CUpti_RangeProfiler_GetCounterDataSize_Params::new();
        p.pRangeProfilerObject = self.object;
        p.pMetricNames = metrics.array();
        p.numMetrics = metrics.len();
        p.maxNumOfRanges = max_ranges;
        p.maxNumRangeTreeNodes = max_ranges as u32;
        call!(self.fns, cuptiRangeProfilerGetCounterDataSize, &mut p)?;
        Ok(p.counterDataSize)
    }

    /// `cuptiRangeProfilerCounterDataImageInitialize` of `image` (sized by the last
    /// [`RangeProfiler::counter_data_size`]).
    pub fn initialize_image(&self, image: &mut [u8]) -> Result<()> {
        let mut p = CUpti_RangeProfiler_CounterDataImage_Initialize_Params::new();
        p.pRangeProfilerObject = self.object;
        p.counterDataSize = image.len();
        p.pCounterData = image.as_mut_ptr();
        call!(
            self.fns,
            cuptiRangeProfilerCounterDataImageInitialize,
            &mut p
        )
    }

    /// `cuptiRangeProfilerSetConfig`: auto range (one range per kernel), at most
    /// `max_ranges` ranges per pass (1 for a kernel launch; a CUDA graph launch's
    /// kernel nodes, under kernel replay), one nesting level, `replay` as asked.
    ///
    /// # Safety
    /// `image` stays valid and unmoved until the pass is decoded
    /// ([`RangeProfiler::decode`]): CUPTI writes it then.
    pub unsafe fn set_config(
        &self,
        config: &[u8],
        image: &mut [u8],
        replay: Replay,
        max_ranges: usize,
    ) -> Result<()> {
        let mut p = CUpti_RangeProfiler_SetConfig_Params::new();
        p.pRangeProfilerObject = self.object;
        p.configSize = config.len();
        p.pConfig = config.as_ptr();
        p.counterDataImageSize = image.len();
        p.pCounterDataImage = image.as_mut_ptr();
        p.range = CUPTI_AutoRange;
        p.replayMode = match replay {
            Replay::User => CUPTI_UserReplay,
            Replay::Kernel => CUPTI_KernelReplay,
        };
        p.maxRangesPerPass = max_ranges;
        p.numNestingLevels = 1;
        p.minNestingLevel = 1;
        p.passIndex = 0;
        p.targetNestingLevel = 1;
        call!(self.fns, cuptiRangeProfilerSetConfig, &mut p)
    }

    /// `cuptiRangeProfilerStart`.
    pub fn start(&self) -> Result<()> {
        let mut p = CUpti_RangeProfiler_Start_Params::new();
        p.pRangeProfilerObject = self.object;
        call!(self.fns, cuptiRangeProfilerStart, &mut p)
    }

    /// `cuptiRangeProfilerStop`; returns `isAllPassSubmitted`.
    pub fn stop(&self) -> Result<bool> {
        let mut p = CUpti_RangeProfiler_Stop_Params::new();
        p.pRangeProfilerObject = self.object;
        call!(self.fns, cuptiRangeProfilerStop, &mut p)?;
        Ok(p.isAllPassSubmitted != 0)
    }

    /// `cuptiRangeProfilerDecodeData`; returns the ranges dropped. Waits for the
    /// pass's work to finish on the GPU: never call it on an application thread.
    pub fn decode(&self) -> Result<usize> {
        let mut p = CUpti_RangeProfiler_DecodeData_Params::new();
        p.pRangeProfilerObject = self.object;
        call!(self.fns, cuptiRangeProfilerDecodeData, &mut p)?;
        Ok(p.numOfRangeDropped)
    }
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        let mut p = CUpti_RangeProfiler_Disable_Params::new();
        p.pRangeProfilerObject = self.object;
        let _ = call!(self.fns, cuptiRangeProfilerDisable, &mut p);
    }
}

/// `cuptiRangeProfilerGetCounterDataInfo`: the ranges in `image`.
pub fn ranges(fns: &CuptiFns, image: &[u8]) -> Result<usize> {
    let mut p = CUpti_RangeProfiler_GetCounterDataInfo_Params::new();
    p.pCounterDataImage = image.as_ptr();
    p.counterDataImageSize = image.len();
    call!(fns, cuptiRangeProfilerGetCounterDataInfo, &mut p)?;
    Ok(p.numTotalRanges)
}
