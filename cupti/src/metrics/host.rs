//! `libnvperf_host.so` loaded by path, and the few NVPW calls the pass planner needs.
//!
//! Every NVPW call goes through [`Host::call`]: the function comes from the
//! generated table (`None` becomes [`MetricError::MissingSymbol`], never a panic),
//! and the status is checked. All calls on one library are serialised by a mutex:
//! the host library's objects (metrics evaluators, raw metrics configs) are not
//! documented as thread-safe, and planning is far from any hot path.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use cupti_sys::{
    NVPA_ActivityKind, NVPA_RawMetricRequest, NVPA_RawMetricsConfig, NVPA_Status,
    NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params,
    NVPW_CUDA_MetricsEvaluator_Initialize_Params, NVPW_CUDA_RawMetricsConfig_Create_V2_Params,
    NVPW_GetSupportedChipNames_Params, NVPW_InitializeHost_Params, NVPW_MetricEvalRequest,
    NVPW_MetricsEvaluator, NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params,
    NVPW_MetricsEvaluator_GetMetricNames_Params,
    NVPW_MetricsEvaluator_GetMetricRawDependencies_Params,
    NVPW_MetricsEvaluator_GetSupportedSubmetrics_Params, NVPW_RawMetricsConfig_AddMetrics_Params,
    NVPW_RawMetricsConfig_BeginPassGroup_Params, NVPW_RawMetricsConfig_Destroy_Params,
    NVPW_RawMetricsConfig_EndPassGroup_Params, NVPW_RawMetricsConfig_GenerateConfigImage_Params,
    NVPW_RawMetricsConfig_GetNumPasses_Params, NVPW_RawMetricsConfig_GetNumPasses_V2_Params,
    NVPW_RawMetricsConfig_IsAddMetricsPossible_Params, NvperfHostFns,
};

use super::error::MetricError;

use crate::struct_size;

/// Calls an NVPW function of the table by name: `nvpw!(host, NVPW_Foo, &mut params)`.
/// Expands to a call of the unsafe [`Host::call`].
macro_rules! nvpw {
    ($host:expr, $f:ident, $params:expr) => {
        $host.call(stringify!($f), $host.fns().$f, $params)
    };
}

/// `NVPW_MetricType` of `nvperf_host.h` (not in the generated bindings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// `NVPW_METRIC_TYPE_COUNTER`: base name + `.sum` / `.avg` / `.min` / `.max` [+ submetric].
    Counter,
    /// `NVPW_METRIC_TYPE_RATIO`: base name + `.pct` / `.ratio` / `.max_rate`.
    Ratio,
    /// `NVPW_METRIC_TYPE_THROUGHPUT`: base name + rollup + submetric.
    Throughput,
}

impl MetricKind {
    /// Every kind, in `NVPW_MetricType` order.
    pub const ALL: [MetricKind; 3] = [
        MetricKind::Counter,
        MetricKind::Ratio,
        MetricKind::Throughput,
    ];

    fn nvpw(self) -> u8 {
        match self {
            MetricKind::Counter => 0,
            MetricKind::Ratio => 1,
            MetricKind::Throughput => 2,
        }
    }
}

/// A loaded `libnvperf_host.so`, initialised with `NVPW_InitializeHost`.
///
/// Cheap to copy: one library per path is loaded once per process and never
/// unloaded, so every `Host` for the same file shares its state.
#[derive(Clone, Copy)]
pub struct Host {
    inner: &'static Inner,
}

struct Inner {
    path: PathBuf,
    fns: NvperfHostFns,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// One metrics evaluator per chip, made on first use.
    evaluators: HashMap<String, Evaluator>,
    chips: Option<Vec<String>>,
}

/// An `NVPW_MetricsEvaluator` and the scratch buffer it lives in. Never destroyed:
/// it belongs to a library state that lives as long as the process.
struct Evaluator {
    ptr: *mut NVPW_MetricsEvaluator,
    /// Owned by the evaluator for its whole life; a Vec's heap buffer does not move
    /// when the Vec does.
    _scratch: Vec<u8>,
}

// SAFETY: the evaluator pointer is only ever used with the `State` mutex held, so
// at most one thread uses it at a time; the library has no thread affinity for
// host-side objects.
unsafe impl Send for Evaluator {}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// The file name of NVIDIA's host-side metrics library.
pub const NVPERF_HOST_FILE: &str = "libnvperf_host.so";

/// The environment variable naming the `libnvperf_host.so` to use (a file, or a
/// directory holding one).
pub const NVPERF_HOST_ENV: &str = "GPUPROF_NVPERF_HOST_LIB";

impl Host {
    /// Loads (once per process and file) and initialises the library at `path`.
    pub fn open(path: &Path) -> Result<Host, MetricError> {
        static LOADED: Mutex<Vec<(PathBuf, &'static Inner)>> = Mutex::new(Vec::new());
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, inner)) = loaded.iter().find(|(p, _)| *p == key) {
            return Ok(Host { inner });
        }
        crate::library::check_before_loading(path.as_os_str()).map_err(|reason| {
            MetricError::Load {
                path: path.to_path_buf(),
                reason,
            }
        })?;
        // SAFETY: loading a shared library runs its initialisers; libnvperf_host's are
        // NVIDIA's own and need no GPU or driver.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| MetricError::Load {
            path: path.to_path_buf(),
            reason: dl_error(&e),
        })?;
        // Never unloaded: function pointers and evaluator objects outlive any Host.
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: the table's prototypes are those of NVIDIA's nvperf_host.h, which this
        // library implements; it stays loaded for the life of the process.
        let fns = unsafe { NvperfHostFns::load(lib) };
        let inner: &'static Inner = Box::leak(Box::new(Inner {
            path: path.to_path_buf(),
            fns,
            state: Mutex::new(State::default()),
        }));
        let host = Host { inner };
        let mut p = NVPW_InitializeHost_Params {
            structSize: struct_size!(NVPW_InitializeHost_Params, pPriv),
            pPriv: ptr::null_mut(),
        };
        // SAFETY: `p` is a valid, fully initialised parameter struct.
        unsafe { nvpw!(host, NVPW_InitializeHost, &mut p) }?;
        loaded.push((key, inner));
        Ok(host)
    }

    /// Finds and opens the library: `$GPUPROF_NVPERF_HOST_LIB` (a file, or a
    /// directory holding `libnvperf_host.so`), else the `libnvperf_host.so` next to
    /// the first CUPTI candidate that has one (the order of [`crate::candidates`]),
    /// else the loader search path.
    pub fn discover() -> Result<Host, MetricError> {
        let explicit = std::env::var_os(NVPERF_HOST_ENV).filter(|v| !v.is_empty());
        if let Some(v) = explicit {
            let p = PathBuf::from(v);
            let file = if p.is_dir() {
                p.join(NVPERF_HOST_FILE)
            } else {
                p
            };
            return Host::open(&file);
        }
        let mut tried = Vec::new();
        for c in crate::discovery::candidates(&crate::discovery::Inputs::from_process()) {
            let p = Path::new(&c.path);
            let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) else {
                continue;
            };
            let file = dir.join(NVPERF_HOST_FILE);
            if tried.contains(&file) {
                continue;
            }
            if file.is_file() {
                match Host::open(&file) {
                    Ok(h) => return Ok(h),
                    Err(e) => tried.push(PathBuf::from(format!("{} ({e})", file.display()))),
                }
            } else {
                tried.push(file);
            }
        }
        match Host::open(Path::new(NVPERF_HOST_FILE)) {
            Ok(h) => Ok(h),
            Err(e) => {
                tried.push(PathBuf::from(format!(
                    "{NVPERF_HOST_FILE} on the loader path ({e})"
                )));
                Err(MetricError::NotFound { tried })
            }
        }
    }

    /// The path this library was opened with.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    fn lock(&self) -> MutexGuard<'static, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f` (named `name` in errors) with `params` and checks the status.
    ///
    /// # Safety
    /// `P` must be `f`'s parameter struct and every pointer in `params` valid as
    /// `nvperf_host.h` requires for the call.
    unsafe fn call<P>(
        &self,
        name: &'static str,
        f: Option<unsafe extern "C" fn(*mut P) -> NVPA_Status::Type>,
        params: &mut P,
    ) -> Result<(), MetricError> {
        let f = f.ok_or_else(|| MetricError::MissingSymbol {
            library: self.inner.path.clone(),
            symbol: name,
        })?;
        // SAFETY: the caller guarantees `params` is what `f` expects.
        let status = unsafe { f(params) };
        if status == NVPA_Status::NVPA_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(MetricError::Nvpw {
                library: self.inner.path.clone(),
                function: name,
                status,
            })
        }
    }

    fn fns(&self) -> &NvperfHostFns {
        &self.inner.fns
    }

    /// The chip names this library knows (`NVPW_GetSupportedChipNames`), as it spells
    /// them.
    pub fn supported_chips(&self) -> Result<Vec<String>, MetricError> {
        let mut state = self.lock();
        self.chips_locked(&mut state)
    }

    fn chips_locked(&self, state: &mut State) -> Result<Vec<String>, MetricError> {
        if let Some(c) = &state.chips {
            return Ok(c.clone());
        }
        let mut p = NVPW_GetSupportedChipNames_Params {
            structSize: struct_size!(NVPW_GetSupportedChipNames_Params, numChipNames),
            pPriv: ptr::null_mut(),
            ppChipNames: ptr::null(),
            numChipNames: 0,
        };
        // SAFETY: `p` is a valid parameter struct; the outputs are written by the call.
        unsafe { nvpw!(self, NVPW_GetSupportedChipNames, &mut p) }?;
        let mut chips = Vec::with_capacity(p.numChipNames);
        for i in 0..p.numChipNames {
            // SAFETY: on success `ppChipNames` points to `numChipNames` pointers owned
            // by the library for its lifetime.
            let name = unsafe { *p.ppChipNames.add(i) };
            if let Some(s) = cstr(name) {
                chips.push(s);
            }
        }
        state.chips = Some(chips.clone());
        Ok(chips)
    }

    /// The evaluator for `chip`, made on first use. Unknown chips are
    /// [`MetricError::UnknownChip`].
    fn evaluator(
        &self,
        state: &mut State,
        chip: &str,
    ) -> Result<*mut NVPW_MetricsEvaluator, MetricError> {
        if let Some(e) = state.evaluators.get(chip) {
            return Ok(e.ptr);
        }
        let chips = self.chips_locked(state)?;
        if !chips.iter().any(|c| c == chip) {
            return Err(MetricError::UnknownChip {
                chip: chip.to_string(),
                supported: chips,
            });
        }
        let c_chip = c_string(chip)?;
        let mut size = NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params {
            structSize: struct_size!(
                NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params,
                scratchBufferSize
            ),
            pPriv: ptr::null_mut(),
            pChipName: c_chip.as_ptr(),
            pCounterAvailabilityImage: ptr::null(),
            scratchBufferSize: 0,
        };
        // SAFETY: `size` is valid; `pChipName` is a NUL-terminated string alive for the call.
        unsafe {
            nvpw!(
                self,
                NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize,
                &mut size
            )
        }?;
        let mut scratch = vec![0u8; size.scratchBufferSize];
        let mut init = NVPW_CUDA_MetricsEvaluator_Initialize_Params {
            structSize: struct_size!(
                NVPW_CUDA_MetricsEvaluator_Initialize_Params,
                pMetricsEvaluator
            ),
            pPriv: ptr::null_mut(),
            pScratchBuffer: scratch.as_mut_ptr(),
            scratchBufferSize: scratch.len(),
            pChipName: c_chip.as_ptr(),
            pCounterAvailabilityImage: ptr::null(),
            pCounterDataImage: ptr::null(),
            counterDataImageSize: 0,
            pMetricsEvaluator: ptr::null_mut(),
        };
        // SAFETY: `init` is valid; the scratch buffer has the size the library asked
        // for and is kept alive with the evaluator (stored together below).
        unsafe { nvpw!(self, NVPW_CUDA_MetricsEvaluator_Initialize, &mut init) }?;
        let ptr = init.pMetricsEvaluator;
        state.evaluators.insert(
            chip.to_string(),
            Evaluator {
                ptr,
                _scratch: scratch,
            },
        );
        Ok(ptr)
    }

    /// `Ok` when the library knows `chip`, else [`MetricError::UnknownChip`] listing
    /// the chips it knows.
    pub fn check_chip(&self, chip: &str) -> Result<(), MetricError> {
        let mut state = self.lock();
        self.evaluator(&mut state, chip).map(|_| ())
    }

    /// The raw counters `metric` needs on `chip` (`GetMetricRawDependencies`, required
    /// dependencies only), in the library's order.
    pub fn raw_dependencies(&self, chip: &str, metric: &str) -> Result<Vec<String>, MetricError> {
        let mut state = self.lock();
        self.raw_dependencies_locked(&mut state, chip, metric)
    }

    fn raw_dependencies_locked(
        &self,
        state: &mut State,
        chip: &str,
        metric: &str,
    ) -> Result<Vec<String>, MetricError> {
        let eval = self.evaluator(state, chip)?;
        let unknown = || MetricError::UnknownMetric {
            chip: chip.to_string(),
            metric: metric.to_string(),
        };
        let c_metric = CString::new(metric).map_err(|_| unknown())?;
        let mut request = NVPW_MetricEvalRequest::default();
        let mut conv = NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params {
            structSize: struct_size!(
                NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params,
                metricEvalRequestStructSize
            ),
            pPriv: ptr::null_mut(),
            pMetricsEvaluator: eval,
            pMetricName: c_metric.as_ptr(),
            pMetricEvalRequest: &mut request,
            metricEvalRequestStructSize: struct_size!(NVPW_MetricEvalRequest, submetric),
        };
        // SAFETY: `conv` is valid: a live evaluator, a NUL-terminated name and a
        // request struct of the size stated, all alive for the call.
        match unsafe {
            nvpw!(
                self,
                NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest,
                &mut conv
            )
        } {
            Ok(()) => {}
            Err(MetricError::Nvpw { .. }) => return Err(unknown()),
            Err(e) => return Err(e),
        }
        let mut deps = NVPW_MetricsEvaluator_GetMetricRawDependencies_Params {
            structSize: struct_size!(
                NVPW_MetricsEvaluator_GetMetricRawDependencies_Params,
                numOptionalRawDependencies
            ),
            pPriv: ptr::null_mut(),
            pMetricsEvaluator: eval,
            pMetricEvalRequests: &request,
            numMetricEvalRequests: 1,
            metricEvalRequestStructSize: struct_size!(NVPW_MetricEvalRequest, submetric),
            metricEvalRequestStrideSize: core::mem::size_of::<NVPW_MetricEvalRequest>(),
            ppRawDependencies: ptr::null_mut(),
            numRawDependencies: 0,
            ppOptionalRawDependencies: ptr::null_mut(),
            numOptionalRawDependencies: 0,
        };
        // SAFETY: first call with null arrays: the library only writes the counts.
        unsafe {
            nvpw!(
                self,
                NVPW_MetricsEvaluator_GetMetricRawDependencies,
                &mut deps
            )
        }?;
        let mut names: Vec<*const c_char> = vec![ptr::null(); deps.numRawDependencies];
        let mut optional: Vec<*const c_char> = vec![ptr::null(); deps.numOptionalRawDependencies];
        deps.ppRawDependencies = names.as_mut_ptr();
        deps.ppOptionalRawDependencies = optional.as_mut_ptr();
        // SAFETY: both arrays have exactly as many elements as the counts say and are
        // alive for the call; the request is still alive.
        unsafe {
            nvpw!(
                self,
                NVPW_MetricsEvaluator_GetMetricRawDependencies,
                &mut deps
            )
        }?;
        names.truncate(deps.numRawDependencies);
        Ok(names.into_iter().filter_map(cstr).collect())
    }

    /// Every metric base name of `kind` the chip has (`GetMetricNames`); a full name
    /// adds rollup and submetric suffixes (see [`Host::supported_submetrics`]).
    pub fn metric_names(&self, chip: &str, kind: MetricKind) -> Result<Vec<String>, MetricError> {
        let mut state = self.lock();
        let eval = self.evaluator(&mut state, chip)?;
        let mut p = NVPW_MetricsEvaluator_GetMetricNames_Params {
            structSize: struct_size!(NVPW_MetricsEvaluator_GetMetricNames_Params, numMetrics),
            pPriv: ptr::null_mut(),
            pMetricsEvaluator: eval,
            metricType: kind.nvpw(),
            pMetricNames: ptr::null(),
            pMetricNameBeginIndices: ptr::null(),
            numMetrics: 0,
        };
        // SAFETY: `p` is valid with a live evaluator; outputs point into the evaluator.
        unsafe { nvpw!(self, NVPW_MetricsEvaluator_GetMetricNames, &mut p) }?;
        let mut out = Vec::with_capacity(p.numMetrics);
        for i in 0..p.numMetrics {
            // SAFETY: on success `pMetricNameBeginIndices` has `numMetrics` entries,
            // each the offset of a NUL-terminated name in `pMetricNames`, both owned
            // by the evaluator, which the lock keeps alive.
            let name = unsafe { p.pMetricNames.add(*p.pMetricNameBeginIndices.add(i)) };
            if let Some(s) = cstr(name) {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// The `NVPW_Submetric` values metrics of `kind` accept on `chip`.
    pub fn supported_submetrics(
        &self,
        chip: &str,
        kind: MetricKind,
    ) -> Result<Vec<u16>, MetricError> {
        let mut state = self.lock();
        let eval = self.evaluator(&mut state, chip)?;
        let mut p = NVPW_MetricsEvaluator_GetSupportedSubmetrics_Params {
            structSize: struct_size!(
                NVPW_MetricsEvaluator_GetSupportedSubmetrics_Params,
                numSupportedSubmetrics
            ),
            pPriv: ptr::null_mut(),
            pMetricsEvaluator: eval,
            metricType: kind.nvpw(),
            pSupportedSubmetrics: ptr::null(),
            numSupportedSubmetrics: 0,
        };
        // SAFETY: `p` is valid with a live evaluator; the output array is the library's.
        unsafe { nvpw!(self, NVPW_MetricsEvaluator_GetSupportedSubmetrics, &mut p) }?;
        if p.pSupportedSubmetrics.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: on success the library's array holds `numSupportedSubmetrics` values.
        let s =
            unsafe { std::slice::from_raw_parts(p.pSupportedSubmetrics, p.numSupportedSubmetrics) };
        Ok(s.to_vec())
    }

    /// The union of the raw counters of `metrics` on `chip`, first-seen order. Every
    /// metric must exist on the chip.
    pub fn raw_counters(&self, chip: &str, metrics: &[&str]) -> Result<Vec<String>, MetricError> {
        let mut state = self.lock();
        let mut out: Vec<String> = Vec::new();
        for m in metrics {
            for d in self.raw_dependencies_locked(&mut state, chip, m)? {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        Ok(out)
    }

    /// The passes a set of raw counters needs on `chip`: one raw metrics config
    /// (`NVPA_ACTIVITY_KIND_PROFILER`, isolated requests, one pass group), its config
    /// image generated, then `GetNumPasses_V2` (`GetNumPasses` on libraries without
    /// it: pipelined + isolated passes). No counters need no passes.
    pub fn passes_for_raw(&self, chip: &str, raw: &[String]) -> Result<usize, MetricError> {
        let mut state = self.lock();
        self.passes_for_raw_locked(&mut state, chip, raw)
    }

    fn passes_for_raw_locked(
        &self,
        state: &mut State,
        chip: &str,
        raw: &[String],
    ) -> Result<usize, MetricError> {
        // Checks the chip (UnknownChip) the same way every other call does.
        self.evaluator(state, chip)?;
        if raw.is_empty() {
            return Ok(0);
        }
        let c_chip = c_string(chip)?;
        let names: Vec<CString> = raw.iter().map(|r| c_string(r)).collect::<Result<_, _>>()?;
        let requests: Vec<NVPA_RawMetricRequest> = names
            .iter()
            .map(|n| NVPA_RawMetricRequest {
                structSize: struct_size!(NVPA_RawMetricRequest, keepInstances),
                pPriv: ptr::null_mut(),
                pMetricName: n.as_ptr(),
                isolated: 1,
                keepInstances: 1,
            })
            .collect();

        let mut create = NVPW_CUDA_RawMetricsConfig_Create_V2_Params {
            structSize: struct_size!(
                NVPW_CUDA_RawMetricsConfig_Create_V2_Params,
                pRawMetricsConfig
            ),
            pPriv: ptr::null_mut(),
            activityKind: NVPA_ActivityKind::NVPA_ACTIVITY_KIND_PROFILER,
            pChipName: c_chip.as_ptr(),
            pCounterAvailabilityImage: ptr::null(),
            pRawMetricsConfig: ptr::null_mut(),
        };
        // SAFETY: `create` is valid; the chip name is NUL-terminated and alive.
        unsafe { nvpw!(self, NVPW_CUDA_RawMetricsConfig_Create_V2, &mut create) }?;
        let config = RawConfig {
            host: *self,
            ptr: create.pRawMetricsConfig,
        };

        let mut begin = NVPW_RawMetricsConfig_BeginPassGroup_Params {
            structSize: struct_size!(NVPW_RawMetricsConfig_BeginPassGroup_Params, maxPassCount),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: config.ptr,
            maxPassCount: 0,
        };
        // SAFETY: `begin` names the live config made above.
        unsafe { nvpw!(self, NVPW_RawMetricsConfig_BeginPassGroup, &mut begin) }?;

        let mut possible = NVPW_RawMetricsConfig_IsAddMetricsPossible_Params {
            structSize: struct_size!(
                NVPW_RawMetricsConfig_IsAddMetricsPossible_Params,
                isPossible
            ),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: config.ptr,
            pRawMetricRequests: requests.as_ptr(),
            numMetricRequests: requests.len(),
            isPossible: 0,
        };
        // SAFETY: the config is live; `requests` (and the names it points to) are alive
        // and hold `numMetricRequests` entries.
        unsafe {
            nvpw!(
                self,
                NVPW_RawMetricsConfig_IsAddMetricsPossible,
                &mut possible
            )
        }?;
        if possible.isPossible == 0 {
            return Err(MetricError::NotSchedulable {
                chip: chip.to_string(),
                counters: raw.to_vec(),
            });
        }

        let mut add = NVPW_RawMetricsConfig_AddMetrics_Params {
            structSize: struct_size!(NVPW_RawMetricsConfig_AddMetrics_Params, numMetricRequests),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: config.ptr,
            pRawMetricRequests: requests.as_ptr(),
            numMetricRequests: requests.len(),
        };
        // SAFETY: as for IsAddMetricsPossible above.
        unsafe { nvpw!(self, NVPW_RawMetricsConfig_AddMetrics, &mut add) }?;

        let mut end = NVPW_RawMetricsConfig_EndPassGroup_Params {
            structSize: struct_size!(NVPW_RawMetricsConfig_EndPassGroup_Params, pRawMetricsConfig),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: config.ptr,
        };
        // SAFETY: `end` names the live config.
        unsafe { nvpw!(self, NVPW_RawMetricsConfig_EndPassGroup, &mut end) }?;

        let mut generate = NVPW_RawMetricsConfig_GenerateConfigImage_Params {
            structSize: struct_size!(
                NVPW_RawMetricsConfig_GenerateConfigImage_Params,
                mergeAllPassGroups
            ),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: config.ptr,
            mergeAllPassGroups: 0,
        };
        // SAFETY: `generate` names the live config.
        unsafe {
            nvpw!(
                self,
                NVPW_RawMetricsConfig_GenerateConfigImage,
                &mut generate
            )
        }?;

        if self.fns().NVPW_RawMetricsConfig_GetNumPasses_V2.is_some() {
            let mut n = NVPW_RawMetricsConfig_GetNumPasses_V2_Params {
                structSize: struct_size!(NVPW_RawMetricsConfig_GetNumPasses_V2_Params, numPasses),
                pPriv: ptr::null_mut(),
                pRawMetricsConfig: config.ptr,
                numPasses: 0,
            };
            // SAFETY: `n` names the live config whose image was generated.
            unsafe { nvpw!(self, NVPW_RawMetricsConfig_GetNumPasses_V2, &mut n) }?;
            Ok(n.numPasses)
        } else {
            let mut n = NVPW_RawMetricsConfig_GetNumPasses_Params {
                structSize: struct_size!(
                    NVPW_RawMetricsConfig_GetNumPasses_Params,
                    numIsolatedPasses
                ),
                pPriv: ptr::null_mut(),
                pRawMetricsConfig: config.ptr,
                numPipelinedPasses: 0,
                numIsolatedPasses: 0,
            };
            // SAFETY: `n` names the live config whose image was generated.
            unsafe { nvpw!(self, NVPW_RawMetricsConfig_GetNumPasses, &mut n) }?;
            Ok(n.numPipelinedPasses + n.numIsolatedPasses)
        }
    }
}

/// A raw metrics config, destroyed on drop.
struct RawConfig {
    host: Host,
    ptr: *mut NVPA_RawMetricsConfig,
}

impl Drop for RawConfig {
    fn drop(&mut self) {
        let mut p = NVPW_RawMetricsConfig_Destroy_Params {
            structSize: struct_size!(NVPW_RawMetricsConfig_Destroy_Params, pRawMetricsConfig),
            pPriv: ptr::null_mut(),
            pRawMetricsConfig: self.ptr,
        };
        // SAFETY: `ptr` came from NVPW_CUDA_RawMetricsConfig_Create_V2 and is destroyed
        // exactly once, here. A failure leaks the config; nothing else can be done.
        let _ = unsafe { nvpw!(self.host, NVPW_RawMetricsConfig_Destroy, &mut p) };
    }
}

fn c_string(s: &str) -> Result<CString, MetricError> {
    CString::new(s).map_err(|_| MetricError::InvalidName(s.to_string()))
}

/// A library-owned C string as an owned `String` (lossy), `None` for null.
fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every non-null name pointer the library returns is NUL-terminated and
    // alive at least until the next call on its object, and it is copied here at once.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The loader's message for a failed dlopen (libloading keeps it in the source).
fn dl_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(src) => src.to_string(),
        None => e.to_string(),
    }
}
