//! Per-kernel hardware counters with CUPTI's range profiler (`GPUPROF_COUNTERS=kernel`,
//! the default). `GPUPROF_COUNTERS=sampling` uses PM sampling instead
//! ([`sampling`]); then nothing below runs.
//!
//! **Plan** (context created, once per device): the chip name
//! (`cuptiDeviceGetChipName`), its pass groups (the default set of
//! [`cupti::metrics::default_groups`], or `GPUPROF_METRICS` as one group), and one config
//! image per group from CUPTI's own Profiler Host API (`cuptiProfilerHostInitialize`
//! with the chip, `ConfigAddMetrics`, `GetConfigImage`); each group must be one pass
//! (`cuptiProfilerHostGetNumOfPasses`). The plan is sent as `Record::CounterPlan`. Each
//! context gets a range profiler object (`cuptiRangeProfilerEnable`) and a counter data
//! image per group, sized for one range.
//!
//! **Collection** (launch callbacks, on the launching thread). A kernel key is (name,
//! grid, block); [`policy::Policy`] says which launches of a key are measured and
//! rotates successive measured launches through the groups. At API enter of a
//! measured launch: `SetConfig` (auto range: one range per kernel; user replay: this
//! process begins and ends the pass, so no kernel is ever replayed; one range per
//! pass) and `Start`; at API exit: `Stop`, `DecodeData`, and when the pass holds
//! exactly that kernel's range, `cuptiProfilerHostEvaluateToGpuValues` into
//! `Record::KernelCounters` (the launch's correlation id, the group). A measured kernel
//! is serialised with the GPU's other work while the range is open; the launch policy
//! bounds how many are. Unmeasured launches cost one map look-up.
//!
//! One measurement at a time per context: a launch on a context already being
//! measured by another thread is not measured (never waited for). A pass holding no
//! range (the launch failed) or more than one (another kernel of the context ran in
//! it) gives no record. CUDA graph launches are not measured (their kernels are not
//! one range).
//!
//! **Kernel replay** (`GPUPROF_REPLAY=kernel`): the plan is one group holding every
//! metric of the set, however many passes it needs; `SetConfig` asks for kernel
//! replay, so CUPTI runs each measured kernel once per pass inside its launch call
//! (saving and restoring the memory it writes) and every metric comes from every
//! measured launch. It costs a launch that many kernel runs; the launch policy still
//! bounds how many launches pay it.
//!
//! **Failure**: a chip without a default set, or any CUPTI error in planning or
//! collection, gives one `gpuprof:` warning naming the call and the error, a
//! `Record::CounterStatus`, and counters off for the rest of the run; tracing goes on.

use core::ffi::{c_void, CStr};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use cupti::Cupti;
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
use cupti_sys::{CUcontext, CUpti_CallbackData};
use wire::{CounterPlan, CounterStatus, KernelCounters, MetricValue, Record};

use crate::handoff;
use crate::log::{debug, warn};
use crate::options::{CounterMode, Options, Replay};
use crate::profiler_api::{self as api, HostConfig, MetricNames, RangeProfiler};

pub mod policy;
pub mod range_filter;
pub mod sampling;

use policy::Policy;

/// What the options asked for.
struct Settings {
    metrics: Option<Vec<String>>,
    /// `GPUPROF_REPLAY=kernel`: one multi-pass group, CUPTI replaying each measured
    /// kernel once per pass.
    kernel_replay: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Counters are being collected (set by [`configure`], cleared for good by [`fail`]).
static ON: AtomicBool = AtomicBool::new(false);
static POLICY: Mutex<Option<Policy>> = Mutex::new(None);

/// Planning state, touched only at context creation.
struct Setup {
    initialized: bool,
    plans: Vec<(u32, Arc<Plan>)>,
}

static SETUP: Mutex<Setup> = Mutex::new(Setup {
    initialized: false,
    plans: Vec::new(),
});

/// Contexts with a range profiler, read on the launch path.
static CONTEXTS: RwLock<Vec<Arc<Ctx>>> = RwLock::new(Vec::new());

/// One pass group of a device's plan.
struct Group {
    host: HostConfig,
    /// Interned metric names, in the host config's order.
    ids: Vec<u32>,
}

/// The pass groups of one device.
struct Plan {
    groups: Vec<Group>,
}

/// A context's range profiler and counter data images (one per group).
struct Ctx {
    uid: u32,
    plan: Arc<Plan>,
    rp: RangeProfiler,
    /// A launch on this context is being measured (the holder owns `images`).
    busy: AtomicBool,
    images: Mutex<Vec<Vec<u8>>>,
}

thread_local! {
    /// The measurement this thread started at launch enter: (context, group).
    static PENDING: RefCell<Option<(Arc<Ctx>, u32)>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads the counter options at start-up; counters are on unless
/// `GPUPROF_COUNTERS=off`.
pub fn configure(opts: &Options) {
    match opts.counters {
        CounterMode::Off => return,
        CounterMode::Sampling => {
            if let Some(r) = &opts.counter_range {
                warn!(
                    "GPUPROF_COUNTER_RANGE={r:?} applies to per-kernel counters \
                     (GPUPROF_COUNTERS=kernel); PM samples are GPU-wide, ignoring it"
                );
            }
            return sampling::configure(opts);
        }
        CounterMode::Kernel => {}
    }
    range_filter::configure(opts.counter_range.as_deref());
    if SETTINGS
        .set(Settings {
            metrics: opts.metrics.clone(),
            kernel_replay: opts.replay == Replay::Kernel,
        })
        .is_err()
    {
        return;
    }
    *lock(&POLICY) = Some(Policy::new(opts.counter_launches, opts.counter_every));
    ON.store(true, Ordering::Release);
}

/// Turns counters off for the rest of the run: one warning, one `CounterStatus`.
pub fn fail(message: String) {
    if ON.swap(false, Ordering::AcqRel) {
        warn!("hardware counters are off: {message}; tracing continues");
        handoff::send(Record::CounterStatus(CounterStatus { message }));
    }
}

/// Context created (resource callback): plans the device's groups if this is its
/// first context, and enables the range profiler on the context.
pub fn on_context_created(c: &Cupti, ctx: CUcontext, context_id: u32, device_id: u32) {
    sampling::on_context_created(c, device_id);
    if !ON.load(Ordering::Acquire) {
        return;
    }
    if let Err(e) = add_context(c, ctx, context_id, device_id) {
        fail(e);
    }
}

fn add_context(c: &Cupti, ctx: CUcontext, uid: u32, device_id: u32) -> Result<(), String> {
    let plan = {
        let mut setup = lock(&SETUP);
        if !setup.initialized {
            api::profiler_initialize(c).map_err(|e| e.to_string())?;
            setup.initialized = true;
        }
        match setup.plans.iter().find(|(d, _)| *d == device_id) {
            Some((_, p)) => p.clone(),
            None => {
                let p = Arc::new(make_plan(c, device_id)?);
                setup.plans.push((device_id, p.clone()));
                p
            }
        }
    };
    let rp = api::range_enable(c, ctx).map_err(|e| e.to_string())?;
    let mut images = Vec::with_capacity(plan.groups.len());
    for g in &plan.groups {
        let size = api::counter_data_size(c, rp, &g.host.metrics, 1).map_err(|e| e.to_string())?;
        images.push(vec![0u8; size]);
    }
    CONTEXTS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::new(Ctx {
            uid,
            plan,
            rp,
            busy: AtomicBool::new(false),
            images: Mutex::new(images),
        }));
    Ok(())
}

/// The device's groups as config images, sent as `Record::CounterPlan`.
fn make_plan(c: &Cupti, device_id: u32) -> Result<Plan, String> {
    let chip = api::chip_name(c, device_id).map_err(|e| e.to_string())?;
    let chosen: Vec<Vec<&str>> = match SETTINGS.get().and_then(|s| s.metrics.as_ref()) {
        Some(m) => vec![m.iter().map(String::as_str).collect()],
        None => cupti::metrics::default_groups(&chip)
            .ok_or_else(|| {
                format!(
                    "gpuprof has no default metric set for chip {chip} (GPU {device_id}); \
                     set GPUPROF_METRICS to choose metrics"
                )
            })?
            .iter()
            .map(|g| g.to_vec())
            .collect(),
    };
    let kernel_replay = SETTINGS.get().is_some_and(|s| s.kernel_replay);
    let chosen = if kernel_replay {
        // Every metric of every group in one config; CUPTI replays per pass.
        let mut all: Vec<&str> = Vec::new();
        for name in chosen.into_iter().flatten() {
            if !all.contains(&name) {
                all.push(name);
            }
        }
        vec![all]
    } else {
        chosen
    };
    let mut groups = Vec::with_capacity(chosen.len());
    let mut replay_passes = 0;
    for (i, names) in chosen.iter().enumerate() {
        let metrics = MetricNames::new(names).ok_or("a metric name holds a NUL byte")?;
        let mut host = HostConfig::new(c, &chip, metrics).map_err(|e| match e.metric {
            Some(m) => format!("CUPTI does not accept metric {m} on {chip} ({})", e.error),
            None => e.error.to_string(),
        })?;
        let passes = host.passes(c).map_err(|e| e.to_string())?;
        if kernel_replay {
            replay_passes = passes;
        } else if passes != 1 {
            return Err(format!(
                "metric group {i} ({}) needs {passes} passes on {chip}; \
                 each group must fit in one pass",
                names.join(", ")
            ));
        }
        let mut ids = Vec::with_capacity(names.len());
        for name in host.metrics.names() {
            // SAFETY: a NUL-terminated string we own.
            let id = unsafe { handoff::intern(name.as_ptr()) }
                .ok_or("the record channel is full; the plan could not be sent")?;
            ids.push(id);
        }
        groups.push(Group { host, ids });
    }
    let mut policy = lock(&POLICY)
        .as_ref()
        .map(|p| p.describe(groups.len()))
        .unwrap_or_default();
    if let Some(r) = range_filter::name() {
        policy.push_str(&format!("; only launches inside NVTX range {r:?}"));
    }
    if kernel_replay {
        policy.push_str(&format!(
            "; kernel replay: every metric on each measured launch, \
             {replay_passes} pass{} (the kernel runs once per pass)",
            if replay_passes == 1 { "" } else { "es" }
        ));
    }
    handoff::send(Record::CounterPlan(CounterPlan {
        device_id,
        chip,
        mode: "kernel".to_string(),
        groups: groups.iter().map(|g| g.ids.clone()).collect(),
        policy,
    }));
    Ok(Plan { groups })
}

/// Grid and block of a kernel launch from its `cu*_params`; `None` for other calls
/// (graph launches).
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for `cbid`.
unsafe fn launch_dims(cbid: u32, params: *const c_void) -> Option<([u32; 3], [u32; 3])> {
    macro_rules! dims {
        ($t:ty) => {{
            // SAFETY: CUPTI passes this struct for this callback id (the caller's
            // contract); it is valid during the callback.
            let p = unsafe { &*(params as *const $t) };
            Some((
                [p.gridDimX, p.gridDimY, p.gridDimZ],
                [p.blockDimX, p.blockDimY, p.blockDimZ],
            ))
        }};
    }
    if params.is_null() {
        return None;
    }
    match cbid {
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel => dims!(cupti_sys::cuLaunchKernel_params),
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz => {
            dims!(cupti_sys::cuLaunchKernel_ptsz_params)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel => {
            dims!(cupti_sys::cuLaunchCooperativeKernel_params)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz => {
            dims!(cupti_sys::cuLaunchCooperativeKernel_ptsz_params)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
        | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz => {
            // The _ptsz variant has the same layout (config, f, kernelParams, extra).
            // SAFETY: as in dims!.
            let p = unsafe { &*(params as *const cupti_sys::cuLaunchKernelEx_params) };
            if p.config.is_null() {
                return None;
            }
            // SAFETY: the application's launch config, valid during the call.
            let cfg = unsafe { &*p.config };
            Some((
                [cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ],
                [cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ],
            ))
        }
        _ => None,
    }
}

/// Launch API enter: starts a range if the policy measures this launch.
pub fn on_launch_enter(c: &Cupti, cbid: u32, d: &CUpti_CallbackData) {
    if !ON.load(Ordering::Acquire) || d.symbolName.is_null() {
        return;
    }
    // SAFETY: functionParams is the params struct CUPTI passes for `cbid`.
    let Some((grid, block)) = (unsafe { launch_dims(cbid, d.functionParams) }) else {
        return;
    };
    if !range_filter::admits() {
        return;
    }
    let ctx = CONTEXTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|x| x.uid == d.contextUid)
        .cloned();
    let Some(ctx) = ctx else { return };
    if ctx
        .busy
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // SAFETY: CUPTI's symbol name is a NUL-terminated string valid during the callback.
    let name = unsafe { CStr::from_ptr(d.symbolName) }.to_string_lossy();
    let group = lock(&POLICY)
        .as_mut()
        .and_then(|p| p.decide(&name, grid, block, ctx.plan.groups.len()));
    let Some(group) = group else {
        ctx.busy.store(false, Ordering::Release);
        return;
    };
    match begin(c, &ctx, group) {
        Ok(()) => PENDING.with(|p| *p.borrow_mut() = Some((ctx, group))),
        Err(e) => {
            ctx.busy.store(false, Ordering::Release);
            fail(e.to_string());
        }
    }
}

fn begin(c: &Cupti, ctx: &Ctx, group: u32) -> Result<(), api::CallError> {
    let g = &ctx.plan.groups[group as usize];
    let mut images = lock(&ctx.images);
    let image = &mut images[group as usize];
    // The image is laid out for the shape of the last GetCounterDataSize on the object.
    api::counter_data_size(c, ctx.rp, &g.host.metrics, 1)?;
    api::counter_data_initialize(c, ctx.rp, image)?;
    let kernel_replay = SETTINGS.get().is_some_and(|s| s.kernel_replay);
    // SAFETY: the image lives in `ctx` (kept alive by PENDING until the pass is
    // decoded) and is never resized, so it stays valid and unmoved.
    unsafe { api::set_config(c, ctx.rp, &g.host.config, image, kernel_replay) }?;
    api::start(c, ctx.rp)
}

/// Launch API exit: ends the range this thread started, if any, and sends its values.
pub fn on_launch_exit(c: &Cupti, d: &CUpti_CallbackData) {
    let Some((ctx, group)) = PENDING.with(|p| p.borrow_mut().take()) else {
        return;
    };
    let r = finish(c, &ctx, group, d.correlationId);
    ctx.busy.store(false, Ordering::Release);
    if let Err(e) = r {
        fail(e);
    }
}

fn finish(c: &Cupti, ctx: &Ctx, group: u32, correlation_id: u32) -> Result<(), String> {
    let all_passes = api::stop(c, ctx.rp).map_err(|e| e.to_string())?;
    let dropped = api::decode(c, ctx.rp).map_err(|e| e.to_string())?;
    if !all_passes {
        return Err(format!(
            "metric group {group} needs more than one pass \
             (cuptiRangeProfilerStop: isAllPassSubmitted = 0)"
        ));
    }
    let g = &ctx.plan.groups[group as usize];
    let images = lock(&ctx.images);
    let image = &images[group as usize];
    let ranges = api::ranges(c, image).map_err(|e| e.to_string())?;
    if ranges != 1 || dropped != 0 {
        debug!(
            "launch {correlation_id}: {ranges} ranges, {dropped} dropped in its pass; no counters"
        );
        return Ok(());
    }
    let mut values = vec![0.0; g.ids.len()];
    g.host
        .evaluate(c, image, 0, &mut values)
        .map_err(|e| e.to_string())?;
    handoff::send(Record::KernelCounters(KernelCounters {
        correlation_id,
        group,
        metrics: g
            .ids
            .iter()
            .zip(values)
            .map(|(&name, value)| MetricValue { name, value })
            .collect(),
    }));
    Ok(())
}

/// Whether `cbid` is a launch whose kernel can be measured (not a graph launch).
pub fn measurable(cbid: u32) -> bool {
    !matches!(
        cbid,
        cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
    )
}
