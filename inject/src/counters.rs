//! Per-kernel hardware counters with CUPTI's range profiler (`GPUPROF_COUNTERS=kernel`,
//! the default). `GPUPROF_COUNTERS=sampling` uses PM sampling instead
//! ([`sampling`]); then nothing below runs.
//!
//! **Plan** (context created, once per device): the chip name
//! (`cuptiDeviceGetChipName`) and [`cupti::plan::plan`]: the chip's default pass groups
//! (or `GPUPROF_METRICS` as one group), each one config image from CUPTI's own
//! Profiler Host API with all of the group's metrics added in one call, each one pass.
//! The plan is sent as `Record::CounterPlan`. Each context gets a range profiler
//! object (`cuptiRangeProfilerEnable`) and a counter data image per group, sized for
//! one range.
//!
//! **Collection.** A kernel key is (name, grid, block, GEMM shape: the cuBLAS call in
//! progress on the thread, so one kernel run for two shapes is two keys); [`policy::Policy`] says which
//! launches of a key are measured and rotates successive measured launches through
//! the groups. Asking it takes a lock and hashes the name, so each thread remembers
//! the keys it has found the policy finished with ([`finished`]), and their launches
//! (every launch after a kernel's first 64, by default) return at once. At API enter of a measured launch (application thread): `SetConfig`
//! (auto range: one range per kernel; user replay: this process begins and ends the
//! pass, so no kernel is ever replayed; one range per pass) and `Start`; at API exit:
//! `Stop`. Decoding (`DecodeData`, which waits for the pass's kernel to finish on the
//! GPU, then `GetCounterDataInfo` and `cuptiProfilerHostEvaluateToGpuValues` into
//! `Record::KernelCounters`) runs on the internal thread `gpuprof-counters`, never on
//! the application's thread: a measured kernel may wait for work the application
//! issues after the launch returns (`cuStreamWaitValue32` on a value the host writes
//! later, producer/consumer kernels on two streams, NCCL group launches), and
//! decoding on the launching thread would then wait forever.
//!
//! The launching thread waits for the decode at most [`DECODE_WAIT`]: in the common
//! case the kernel finishes well within it, the measurement is over when the launch
//! returns, and which launches are measured depends only on the policy. A kernel
//! still running after [`DECODE_WAIT`] may be waiting for the application's later
//! work: the launch returns, the pass is decoded whenever the kernel ends, and its
//! key (name, grid, block, shape) is not measured again, and from then on no launch
//! waits for its decode (one warning): the application waits [`DECODE_WAIT`] once in
//! its life, never forever. The context stays busy until its pass is decoded:
//! launches on it meanwhile are not measured (never waited for).
//!
//! **CUDA graph launches** (decode in serving engines): CUPTI gives a graph's kernel
//! nodes a range each only with auto range and kernel replay, so a measured
//! `cuGraphLaunch` is configured with the plan's kernel-replay config (every metric
//! of the set, however many passes: [`Plan::graph`]), a counter data image for as
//! many ranges as the graph has kernels, and `maxRangesPerPass` that many. CUPTI runs
//! each kernel node once per pass inside the launch call; range `i` is the `i`-th
//! kernel in execution order, sent as `KernelCounters` with the launch's correlation
//! id and `range = i` (the collector matches it to the launch's kernels ordered by
//! start). Which graphs may be kernel-replayed and how many launches of each are
//! measured: [`graphs`]. A pass whose range count is not the graph's kernel count
//! gives no record.
//!
//! Not measured: a launch on a context already being measured, and launches under
//! stream capture (`cuStreamIsCapturing` says the stream is capturing, or cannot
//! say): they create graph nodes instead of running, and starting a range there
//! could invalidate the application's capture. A kernel launch's pass holding no
//! range (the launch failed) or more than one gives no record.
//!
//! **Kernel replay** (`GPUPROF_REPLAY=kernel`): the plan is one group holding every
//! metric of the set, however many passes it needs; `SetConfig` asks for kernel
//! replay, so CUPTI runs each measured kernel once per pass inside its launch call
//! (saving and restoring the memory it writes) and every metric comes from every
//! measured launch. It costs a launch that many kernel runs, and runs the kernel to
//! completion inside the launch call: a kernel that waits for later host work cannot
//! be measured this way. The launch policy bounds how many launches pay it.
//!
//! **Failure**: a chip without a default set, or any CUPTI error in planning or
//! collection, gives one `gpuprof:` warning naming the call and the error, a
//! `Record::CounterStatus`, and counters off for the rest of the run; tracing goes on.

use core::ffi::{c_void, CStr};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use cupti::plan::{self, Mode};
use cupti::profiler::{self as api, HostConfig, RangeProfiler, Replay};
use cupti::Cupti;
use cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
use cupti_sys::{CUcontext, CUpti_CallbackData, CUstream};
use wire::{CounterPlan, CounterStatus, KernelCounters, MetricValue, Record};

use crate::handoff;
use crate::log::{debug, warn};
use crate::nvtx_ranges::{self, Watch};
use crate::options::{CounterMode, Options, Replay as ReplayOption};

mod budget;
pub mod capture;
pub mod finished;
pub mod graphs;
pub mod policy;
pub mod sampling;
pub mod waits;

use budget::{Admit, Budget};
use finished::Finished;
use policy::Policy;

/// What the options asked for.
struct Settings {
    metrics: Option<Vec<String>>,
    /// `GPUPROF_REPLAY=kernel`: one multi-pass group, CUPTI replaying each measured
    /// kernel once per pass.
    replay: Replay,
    /// `GPUPROF_GRAPH_REPLAY=on`: graph launches are measured (by kernel replay).
    graph_replay: bool,
    /// `GPUPROF_COUNTER_BUDGET`.
    budget_pct: u32,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Counters are being collected (set by [`configure`], cleared for good by [`fail`]).
static ON: AtomicBool = AtomicBool::new(false);
static POLICY: Mutex<Option<Policy>> = Mutex::new(None);
/// The time measurements may take (`GPUPROF_COUNTER_BUDGET`).
static BUDGET: Budget = Budget::new();

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
    /// Every metric of the set in one kernel-replay config, for CUDA graph launches
    /// (group index `groups.len()` in the `CounterPlan`); `None` when the device's
    /// plan is already kernel replay (group 0 serves), graph launches are not
    /// measured (`GPUPROF_GRAPH_REPLAY` off) or CUPTI refused it.
    graph: Option<Group>,
}

impl Plan {
    /// The group graph launches are measured with, and its index.
    fn graph_group(&self) -> Option<(u32, &Group)> {
        if !SETTINGS.get().is_some_and(|s| s.graph_replay) {
            return None;
        }
        match &self.graph {
            Some(g) => Some((self.groups.len() as u32, g)),
            None if SETTINGS.get().is_some_and(|s| s.replay == Replay::Kernel) => {
                self.groups.first().map(|g| (0, g))
            }
            None => None,
        }
    }
}

/// A context's range profiler and counter data images (one per group).
struct Ctx {
    uid: u32,
    device_id: u32,
    /// The `CUcontext`, as an address: the range profiler is enabled on it again
    /// when the config changes ([`Ctx::with_profiler`]).
    context: usize,
    fns: &'static cupti_sys::CuptiFns,
    plan: Arc<Plan>,
    /// `None` only between a disable and a failed enable.
    rp: Mutex<Option<RangeProfiler>>,
    /// The group whose config the profiler was last set with (`u32::MAX`: none).
    configured: AtomicU32,
    /// A launch on this context is being measured or decoded (the holder owns
    /// `images`).
    busy: AtomicBool,
    images: Mutex<Vec<Vec<u8>>>,
    /// The counter data image of a graph launch's pass, sized for its kernels.
    graph_image: Mutex<Vec<u8>>,
}

impl Ctx {
    /// Runs `f` on the context's range profiler. With `config` (a pass about to be
    /// set up with that group's config): on H100 and H200 with CUPTI 13.0, a config
    /// set on a profiler object after another one measured nothing (every metric
    /// evaluated to NaN, docs/ARCHITECTURE.md), so a change of config disables the
    /// object and enables a new one first.
    fn with_profiler<T>(
        &self,
        config: Option<u32>,
        f: impl FnOnce(&RangeProfiler) -> Result<T, api::CallError>,
    ) -> Result<T, String> {
        let mut rp = lock(&self.rp);
        if let Some(group) = config {
            let last = self.configured.swap(group, Ordering::AcqRel);
            if last != group && last != u32::MAX {
                *rp = None;
                let t = Instant::now();
                // SAFETY: the context CUPTI named at its creation; it is not destroyed
                // while it is in CONTEXTS (`on_context_destroying` removes it first).
                let ctx = self.context as CUcontext;
                *rp = Some(RangeProfiler::enable(self.fns, ctx).map_err(|e| e.to_string())?);
                debug!(
                    "counters: context {}: the range profiler enabled again for group {group} in {} µs",
                    self.uid,
                    t.elapsed().as_micros()
                );
            }
        }
        match rp.as_ref() {
            Some(rp) => f(rp).map_err(|e| e.to_string()),
            None => Err("the range profiler could not be enabled again".to_string()),
        }
    }
}

/// A stopped pass waiting to be decoded on the counters thread.
struct Stopped {
    ctx: Arc<Ctx>,
    group: u32,
    /// A graph launch: its kernels (ranges expected); `None` for a kernel launch.
    graph: Option<u32>,
    correlation_id: u32,
    /// Told when the pass is decoded.
    done: Sender<()>,
}

/// How long the launching thread waits for its measured kernel's pass to be decoded.
pub const DECODE_WAIT: Duration = Duration::from_millis(250);

/// A measurement this thread started at launch enter.
struct Started {
    ctx: Arc<Ctx>,
    group: u32,
    what: Measured,
    /// When the measurement began on the launching thread (charged to [`BUDGET`]).
    began: Instant,
}

/// What a started measurement measures.
enum Measured {
    /// A kernel launch of this key.
    Kernel {
        name: String,
        grid: [u32; 3],
        block: [u32; 3],
        shape: u64,
    },
    /// A launch of executable graph `exec`, which runs `kernels` kernels.
    Graph { exec: usize, kernels: u32 },
}

/// The counters thread's queue. At most one pass per context is in flight, so the
/// bound is only reached with more than [`QUEUE`] contexts measuring at once; a pass
/// that does not fit is dropped (its context released, no record).
const QUEUE: usize = 256;
/// How long a context's destruction waits for a counter pass on it to be decoded.
const DESTROY_WAIT: Duration = Duration::from_secs(2);
static DECODER: OnceLock<Sender<Stopped>> = OnceLock::new();
/// Passes stopped and not yet decoded.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The measurement this thread started at launch enter.
    static PENDING: RefCell<Option<Started>> = const { RefCell::new(None) };
    /// Launch keys this thread found the policy finished with.
    static FINISHED: RefCell<Finished> = const { RefCell::new(Finished::new()) };
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
    nvtx_ranges::configure(Watch::Counters, opts.counter_range.as_deref());
    if SETTINGS
        .set(Settings {
            metrics: opts.metrics.clone(),
            replay: if opts.replay == ReplayOption::Kernel {
                Replay::Kernel
            } else {
                Replay::User
            },
            graph_replay: opts.graph_replay,
            budget_pct: opts.counter_budget_pct,
        })
        .is_err()
    {
        return;
    }
    if !opts.graph_replay {
        sampling::prepare(opts);
    }
    *lock(&POLICY) = Some(Policy::new(opts.counter_launches, opts.counter_every));
    BUDGET.start(opts.counter_budget_pct);
    ON.store(true, Ordering::Release);
}

/// Turns counters off for the rest of the run: one warning, one `CounterStatus`.
pub fn fail(message: String) {
    if ON.swap(false, Ordering::AcqRel) {
        // The explanation of a busy answer already says what goes on.
        let tail = if message.ends_with(cupti::HARDWARE_BUSY_EXPLAINED) {
            ""
        } else {
            "; tracing continues"
        };
        warn!("hardware counters are off: {message}{tail}");
        handoff::send(Record::CounterStatus(CounterStatus { message }));
    }
}

/// Context created (resource callback): plans the device's groups if this is its
/// first context, and enables the range profiler on the context.
pub fn on_context_created(c: &'static Cupti, ctx: CUcontext, context_id: u32, device_id: u32) {
    sampling::on_context_created(c, device_id);
    if !ON.load(Ordering::Acquire) {
        return;
    }
    if let Err(e) = add_context(c, ctx, context_id, device_id) {
        fail(e);
    }
}

/// Context being destroyed (resource callback, before the driver destroys it): its
/// PM sampling (`sampling::on_context_destroying`) and its range profiler end while
/// the context exists. A pass in flight on it is waited for, at most
/// [`DESTROY_WAIT`]; the profiler object is disabled when the last user drops it.
pub fn on_context_destroying(c: &'static Cupti, context_id: u32, device_id: u32) {
    sampling::on_context_destroying(device_id, || {
        if let Err(e) = cupti::activity::flush_all(c, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
            debug!("cuptiActivityFlushAll before PM sampling is disabled: {e}");
        }
    });
    let Some(ctx) = CONTEXTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|x| x.uid == context_id)
        .cloned()
    else {
        return;
    };
    if !take_when_idle(&ctx, Instant::now() + DESTROY_WAIT) {
        debug!("context {context_id} is destroyed with a counter pass still being decoded");
    }
    CONTEXTS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|x| x.uid != context_id);
}

fn add_context(c: &'static Cupti, ctx: CUcontext, uid: u32, device_id: u32) -> Result<(), String> {
    // A device handed over to PM sampling gets no range profiler again.
    if sampling::switched(device_id) {
        return Ok(());
    }
    let plan = {
        let mut setup = lock(&SETUP);
        if !setup.initialized {
            cupti::preload_perf_libraries(c.path());
            api::profiler_initialize(c.fns()).map_err(|e| e.to_string())?;
            start_decoder()?;
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
    let rp = RangeProfiler::enable(c.fns(), ctx).map_err(|e| e.to_string())?;
    let mut images = Vec::with_capacity(plan.groups.len());
    for g in &plan.groups {
        let size = rp
            .counter_data_size(g.host.metrics(), 1)
            .map_err(|e| e.to_string())?;
        images.push(vec![0u8; size]);
    }
    CONTEXTS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::new(Ctx {
            uid,
            device_id,
            context: ctx as usize,
            fns: c.fns(),
            plan,
            rp: Mutex::new(Some(rp)),
            configured: AtomicU32::new(u32::MAX),
            busy: AtomicBool::new(false),
            images: Mutex::new(images),
            graph_image: Mutex::new(Vec::new()),
        }));
    Ok(())
}

/// The device's groups as config images, sent as `Record::CounterPlan`.
fn make_plan(c: &'static Cupti, device_id: u32) -> Result<Plan, String> {
    let chip = api::chip_name(c.fns(), device_id).map_err(|e| e.to_string())?;
    let settings = SETTINGS.get().ok_or("counters are not configured")?;
    let mode = match settings.replay {
        Replay::Kernel => Mode::KernelReplay,
        Replay::User => Mode::UserReplay,
    };
    let planned = plan::plan(c.fns(), &chip, mode, settings.metrics.as_deref())
        .map_err(|e| e.describe(&format!("{chip} (GPU {device_id})")))?;
    let replay_passes = planned.total_passes();
    let mut groups = Vec::with_capacity(planned.groups.len());
    for host in planned.groups {
        groups.push(group_of(host)?);
    }
    // Graph launches need kernel replay: one config of every metric of the set.
    let (graph, graph_note) = match mode {
        _ if !settings.graph_replay => (None, GRAPHS_OFF.to_string()),
        Mode::KernelReplay => (None, graph_policy(replay_passes)),
        _ => match plan::plan(
            c.fns(),
            &chip,
            Mode::KernelReplay,
            settings.metrics.as_deref(),
        ) {
            Ok(p) => match p.groups.into_iter().next() {
                Some(host) => {
                    let note = graph_policy(host.passes());
                    (Some(group_of(host)?), note)
                }
                None => (None, "; CUDA graph launches are not measured".to_string()),
            },
            Err(e) => (
                None,
                format!(
                    "; CUDA graph launches are not measured: {}",
                    e.describe(&format!("{chip} (GPU {device_id}), kernel replay"))
                ),
            ),
        },
    };
    let mut policy = lock(&POLICY)
        .as_ref()
        .map(|p| p.describe(groups.len()))
        .unwrap_or_default();
    if let Some(r) = nvtx_ranges::name(Watch::Counters) {
        policy.push_str(&format!("; only launches inside NVTX range {r:?}"));
    }
    if mode == Mode::KernelReplay {
        policy.push_str(&format!(
            "; kernel replay: every metric on each measured launch, \
             {replay_passes} pass{} (the kernel runs once per pass), never a \
             communication kernel (NCCL, custom all-reduce) or a launch in a context \
             waiting on a stream memory value (replayed inside its launch, it could \
             wait forever)",
            if replay_passes == 1 { "" } else { "es" }
        ));
    }
    policy.push_str(&graph_note);
    policy.push_str(&budget_note(settings.budget_pct));
    handoff::send(Record::CounterPlan(Box::new(CounterPlan {
        device_id,
        chip,
        mode: wire::CounterMode::Kernel.name().to_string(),
        groups: groups.iter().chain(&graph).map(|g| g.ids.clone()).collect(),
        policy,
    })));
    Ok(Plan { groups, graph })
}

/// A host config with its metric names interned.
fn group_of(host: HostConfig) -> Result<Group, String> {
    let mut ids = Vec::with_capacity(host.metrics().len());
    for name in host.metrics().names() {
        // SAFETY: a NUL-terminated string we own.
        let id = unsafe { handoff::intern(name.as_ptr()) }
            .ok_or("the record channel is full; the plan could not be sent")?;
        ids.push(id);
    }
    Ok(Group { host, ids })
}

/// The policy text's note on the time budget.
fn budget_note(pct: u32) -> String {
    if pct >= 100 {
        "; no limit on the time measuring takes".to_string()
    } else {
        format!(
            "; measuring takes at most {pct}% of the run's time after its first {} s \
             (GPUPROF_COUNTER_BUDGET)",
            budget::GRACE.as_secs()
        )
    }
}

/// The policy text's note when graph launches are not measured (the default).
const GRAPHS_OFF: &str = "; CUDA graph launches: not measured per kernel; the first one on a GPU \
     hands the GPU over to PM sampling, whose windows are fitted per kernel class \
     (GPUPROF_GRAPH_REPLAY=on measures them by kernel replay instead, which on H100 and \
     H200 with CUPTI 13.0 crashed a PyTorch graph launch once and decoded no ranges since)";

/// How graph launches are measured, for the plan's policy text.
fn graph_policy(passes: usize) -> String {
    format!(
        "; CUDA graph launches: the first {} of each executable graph, every metric \
         by kernel replay ({passes} pass{} per kernel node), unless the graph can wait \
         on work outside it or communicates with other GPUs",
        graphs::GRAPH_LAUNCHES,
        if passes == 1 { "" } else { "es" }
    )
}

/// What the policy and the capture check need of a kernel launch.
struct Launch {
    /// The `CUfunction`, as an address.
    function: usize,
    grid: [u32; 3],
    block: [u32; 3],
    stream: CUstream,
    /// A `_ptsz` launch: a null stream is the per-thread default stream.
    per_thread: bool,
}

/// Function, grid, block and stream of a kernel launch from its `cu*_params`; `None` for other
/// calls (graph launches).
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for `cbid`.
unsafe fn launch_of(cbid: u32, params: *const c_void) -> Option<Launch> {
    macro_rules! plain {
        ($t:ty, $per_thread:expr) => {{
            // SAFETY: CUPTI passes this struct for this callback id (the caller's
            // contract); it is valid during the callback.
            let p = unsafe { &*(params as *const $t) };
            Some(Launch {
                function: p.f as usize,
                grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                stream: p.hStream,
                per_thread: $per_thread,
            })
        }};
    }
    if params.is_null() {
        return None;
    }
    match cbid {
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel => {
            plain!(cupti_sys::cuLaunchKernel_params, false)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz => {
            plain!(cupti_sys::cuLaunchKernel_ptsz_params, true)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel => {
            plain!(cupti_sys::cuLaunchCooperativeKernel_params, false)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz => {
            plain!(cupti_sys::cuLaunchCooperativeKernel_ptsz_params, true)
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
        | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz => {
            // The _ptsz variant has the same layout (config, f, kernelParams, extra).
            // SAFETY: as in plain!.
            let p = unsafe { &*(params as *const cupti_sys::cuLaunchKernelEx_params) };
            if p.config.is_null() {
                return None;
            }
            // SAFETY: the application's launch config, valid during the call.
            let cfg = unsafe { &*p.config };
            Some(Launch {
                function: p.f as usize,
                grid: [cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ],
                block: [cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ],
                stream: cfg.hStream,
                per_thread: cbid == cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
            })
        }
        _ => None,
    }
}

/// The executable graph and stream of a `cuGraphLaunch` (per-thread default stream
/// for `_ptsz`) from its params; `None` for other calls.
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for `cbid`.
unsafe fn graph_launch_of(cbid: u32, params: *const c_void) -> Option<(usize, CUstream, bool)> {
    if params.is_null() {
        return None;
    }
    match cbid {
        cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch => {
            // SAFETY: CUPTI passes this struct for this callback id; valid during it.
            let p = unsafe { &*(params as *const cupti_sys::cuGraphLaunch_params) };
            Some((p.hGraph as usize, p.hStream, false))
        }
        cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz => {
            // SAFETY: as above.
            let p = unsafe { &*(params as *const cupti_sys::cuGraphLaunch_ptsz_params) };
            Some((p.hGraphExec as usize, p.hStream, true))
        }
        _ => None,
    }
}

/// The context with a range profiler, if it has one.
fn find_context(context_uid: u32) -> Option<Arc<Ctx>> {
    CONTEXTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|x| x.uid == context_uid)
        .cloned()
}

/// Takes `ctx` for a measurement, if it is not busy.
fn claim(ctx: Arc<Ctx>) -> Option<Arc<Ctx>> {
    ctx.busy
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| ctx)
}

/// Takes `ctx` for good once its pass in flight (if any) is decoded, waiting until
/// `deadline`; false when it was still busy then.
fn take_when_idle(ctx: &Ctx, deadline: Instant) -> bool {
    while ctx
        .busy
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The context's range profiler, if this launch may take it (it is not busy).
fn claim_context(context_uid: u32) -> Option<Arc<Ctx>> {
    claim(find_context(context_uid)?)
}

/// Serialises hand-overs, so that sampling never starts beside a range profiler.
static HANDING_OVER: Mutex<()> = Mutex::new(());

/// Gives device `device_id` up to PM sampling: its CUDA graph launches cannot be
/// measured per kernel (`GPUPROF_GRAPH_REPLAY` off, or no kernel-replay config), and
/// sampling windows fitted per kernel class are what measures them then. Each of its
/// contexts leaves [`CONTEXTS`] (no pass starts there again) and its range profiler
/// is disabled once its pass in flight is decoded (at most [`DESTROY_WAIT`]); then
/// sampling starts on the device (`sampling::switch_device`). The two are never on
/// at once on a device: whether CUPTI allows that is not documented.
fn hand_over(c: &'static Cupti, device_id: u32) {
    let _serial = lock(&HANDING_OVER);
    let leaving: Vec<Arc<Ctx>> = {
        let mut all = CONTEXTS.write().unwrap_or_else(|e| e.into_inner());
        let (leaving, staying) = all.drain(..).partition(|x| x.device_id == device_id);
        *all = staying;
        leaving
    };
    let deadline = Instant::now() + DESTROY_WAIT;
    let mut decoding = 0;
    for ctx in leaving {
        if take_when_idle(&ctx, deadline) {
            *lock(&ctx.rp) = None;
        } else {
            // Its range profiler is disabled when the pass in flight lets go of it.
            decoding += 1;
        }
    }
    if decoding > 0 {
        // Sampling would start beside a range profiler. Once per device: its
        // contexts have left CONTEXTS, so no graph launch there comes back here.
        warn!(
            "GPU {device_id}: {decoding} context(s) still decoding a counter pass {} s after \
             the first unmeasured CUDA graph launch; PM sampling does not start there, so \
             from now on no kernel on this GPU gets counters (set GPUPROF_COUNTERS=sampling \
             to sample from the start)",
            DESTROY_WAIT.as_secs()
        );
        return;
    }
    debug!("GPU {device_id}: handed over to PM sampling at its first unmeasured graph launch");
    sampling::switch_device(c, device_id);
}

/// Graph launch API enter: starts a kernel-replay pass over the graph's kernels if
/// [`graphs::decide`] measures this launch.
fn on_graph_launch_enter(
    c: &'static Cupti,
    d: &CUpti_CallbackData,
    exec: usize,
    stream: CUstream,
    per_thread: bool,
) {
    if !nvtx_ranges::admits(Watch::Counters) {
        return;
    }
    let Some(ctx) = find_context(d.contextUid) else {
        return;
    };
    let Some((group, _)) = ctx.plan.graph_group() else {
        return hand_over(c, ctx.device_id);
    };
    if waits::context_may_wait(d.contextUid) {
        debug!(
            "graph launch {}: its context waits on a stream memory value; not kernel-replayed",
            d.correlationId
        );
        return;
    }
    let Some(ctx) = claim(ctx) else {
        return;
    };
    let began = Instant::now();
    if BUDGET.admit(began) == Admit::Nothing {
        ctx.busy.store(false, Ordering::Release);
        return;
    }
    let kernels = match graphs::decide(exec) {
        graphs::Decision::Measure(n) => n,
        graphs::Decision::Skip => {
            ctx.busy.store(false, Ordering::Release);
            return;
        }
        graphs::Decision::Refused(why) => {
            ctx.busy.store(false, Ordering::Release);
            debug!("graph launch {}: not measured: {why}", d.correlationId);
            return;
        }
    };
    if !capture::certainly_not_capturing(stream, per_thread) {
        graphs::undo(exec);
        ctx.busy.store(false, Ordering::Release);
        return;
    }
    match begin_graph(&ctx, kernels) {
        Ok(()) => PENDING.with(|p| {
            *p.borrow_mut() = Some(Started {
                ctx,
                group,
                what: Measured::Graph { exec, kernels },
                began,
            })
        }),
        Err(e) => {
            ctx.busy.store(false, Ordering::Release);
            fail(e.to_string());
        }
    }
}

/// SetConfig (kernel replay, a range per kernel node) and Start for a graph launch.
fn begin_graph(ctx: &Ctx, kernels: u32) -> Result<(), String> {
    let Some((index, g)) = ctx.plan.graph_group() else {
        return Ok(());
    };
    let mut image = lock(&ctx.graph_image);
    start_pass(ctx, index, g, &mut image, Replay::Kernel, kernels as usize)
}

/// Sets up and starts a pass of group `index` (`g`) for `ranges` ranges on the
/// context's range profiler, with `image` sized for it (a group's image keeps its
/// size: the same metrics and one range always need the same).
fn start_pass(
    ctx: &Ctx,
    index: u32,
    g: &Group,
    image: &mut Vec<u8>,
    replay: Replay,
    ranges: usize,
) -> Result<(), String> {
    let t = Instant::now();
    let (size, initialized, configured) = ctx.with_profiler(Some(index), |rp| {
        // The image is laid out for the shape of the last GetCounterDataSize on the
        // object.
        let size = rp.counter_data_size(g.host.metrics(), ranges)?;
        image.resize(size, 0);
        rp.initialize_image(image)?;
        let initialized = t.elapsed();
        // SAFETY: the image lives in `ctx` (kept alive by PENDING, then by the
        // decoder's queue entry, until the pass is decoded) and is not resized while
        // the context is busy, so it stays valid and unmoved.
        unsafe { rp.set_config(g.host.config(), image, replay, ranges) }?;
        let configured = t.elapsed();
        rp.start()?;
        Ok((size, initialized, configured))
    })?;
    debug!(
        "counters: group {index}, {ranges} range(s): image {} µs ({size} bytes), \
         SetConfig {} µs, Start {} µs",
        initialized.as_micros(),
        (configured - initialized).as_micros(),
        (t.elapsed() - configured).as_micros()
    );
    Ok(())
}

/// Launch API enter: starts a range if the policy measures this launch. `shape` is the
/// GEMM call in progress on this thread as a number (`gemm::shape_key`; 0 outside a
/// call): part of the policy's key.
pub fn on_launch_enter(c: &'static Cupti, cbid: u32, d: &CUpti_CallbackData, shape: u64) {
    if !ON.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: functionParams is the params struct CUPTI passes for `cbid`.
    if let Some((exec, stream, per_thread)) = unsafe { graph_launch_of(cbid, d.functionParams) } {
        return on_graph_launch_enter(c, d, exec, stream, per_thread);
    }
    if d.symbolName.is_null() {
        return;
    }
    // SAFETY: functionParams is the params struct CUPTI passes for `cbid`.
    let Some(launch) = (unsafe { launch_of(cbid, d.functionParams) }) else {
        return;
    };
    let key = finished::Key {
        function: launch.function,
        context: d.contextUid,
        grid: launch.grid,
        block: launch.block,
        shape,
    };
    // Most launches end here: no lock, no name, no context lookup.
    if FINISHED.with(|f| f.borrow().contains(&key)) {
        return;
    }
    if !nvtx_ranges::admits(Watch::Counters) {
        return;
    }
    let Some(ctx) = claim_context(d.contextUid) else {
        return;
    };
    // SAFETY: CUPTI's symbol name is a NUL-terminated string valid during the callback.
    let name = unsafe { CStr::from_ptr(d.symbolName) }.to_string_lossy();
    if kernel_replay() && !may_replay(&name, d.contextUid, key) {
        ctx.busy.store(false, Ordering::Release);
        return;
    }
    let began = Instant::now();
    let admit = BUDGET.admit(began);
    let (group, finished) = match lock(&POLICY).as_mut() {
        Some(p) => {
            let group = p.decide(
                &name,
                launch.grid,
                launch.block,
                shape,
                ctx.plan.groups.len(),
                admit,
            );
            let finished = group.is_none() && p.finished(&name, launch.grid, launch.block, shape);
            (group, finished)
        }
        None => (None, false),
    };
    let Some(group) = group else {
        if finished {
            FINISHED.with(|f| f.borrow_mut().insert(key));
        }
        ctx.busy.store(false, Ordering::Release);
        return;
    };
    // Asked only of launches the policy measures: one driver call each.
    if !capture::certainly_not_capturing(launch.stream, launch.per_thread) {
        if let Some(p) = lock(&POLICY).as_mut() {
            p.undo(&name, launch.grid, launch.block, shape);
        }
        ctx.busy.store(false, Ordering::Release);
        return;
    }
    match begin(&ctx, group) {
        Ok(()) => PENDING.with(|p| {
            *p.borrow_mut() = Some(Started {
                ctx,
                group,
                what: Measured::Kernel {
                    name: name.into_owned(),
                    grid: launch.grid,
                    block: launch.block,
                    shape,
                },
                began,
            })
        }),
        Err(e) => {
            ctx.busy.store(false, Ordering::Release);
            fail(e.to_string());
        }
    }
}

/// Whether stream waits are followed ([`waits`]): with kernel replay of launches or
/// of CUDA graphs (`GPUPROF_GRAPH_REPLAY=on`).
pub fn follows_waits() -> bool {
    ON.load(Ordering::Acquire)
        && SETTINGS
            .get()
            .is_some_and(|s| s.replay == Replay::Kernel || s.graph_replay)
}

/// Whether each measured launch is kernel-replayed (`GPUPROF_REPLAY=kernel`).
fn kernel_replay() -> bool {
    SETTINGS.get().is_some_and(|s| s.replay == Replay::Kernel)
}

/// Whether kernel `name` (launch `key`) may be kernel-replayed: CUPTI runs it once
/// per pass inside the launch call, which never returns if the kernel waits for
/// work outside it. Not a communication kernel ([`graphs::is_communication`]: its
/// key is not looked at again), nor a launch in a context with a stream waiting on
/// a memory value ([`waits`]).
fn may_replay(name: &str, context: u32, key: finished::Key) -> bool {
    if graphs::is_communication(name.as_bytes()) {
        FINISHED.with(|f| f.borrow_mut().insert(key));
        debug!("{name}: a communication kernel; never kernel-replayed");
        return false;
    }
    if waits::context_may_wait(context) {
        debug!("{name}: its context waits on a stream memory value; not kernel-replayed");
        return false;
    }
    true
}

fn begin(ctx: &Ctx, group: u32) -> Result<(), String> {
    let g = &ctx.plan.groups[group as usize];
    let mut images = lock(&ctx.images);
    let replay = SETTINGS.get().map_or(Replay::User, |s| s.replay);
    start_pass(ctx, group, g, &mut images[group as usize], replay, 1)
}

/// Charges the time since a measurement began to [`BUDGET`] when dropped.
struct ChargeOnDrop(Instant);

impl Drop for ChargeOnDrop {
    fn drop(&mut self) {
        BUDGET.charge(self.0.elapsed());
    }
}

/// Launch API exit: stops the range this thread started, if any, hands the pass to
/// the counters thread and waits at most [`DECODE_WAIT`] for it to be decoded.
pub fn on_launch_exit(d: &CUpti_CallbackData) {
    let Some(started) = PENDING.with(|p| p.borrow_mut().take()) else {
        return;
    };
    let Started {
        ctx,
        group,
        what,
        began,
    } = started;
    // Whatever happens below, the launching thread's time is charged.
    let _charge = ChargeOnDrop(began);
    let stopping = Instant::now();
    let all_passes = match ctx.with_profiler(None, RangeProfiler::stop) {
        Ok(all) => all,
        Err(e) => {
            ctx.busy.store(false, Ordering::Release);
            return fail(e.to_string());
        }
    };
    if !all_passes {
        ctx.busy.store(false, Ordering::Release);
        return fail(format!(
            "metric group {group} needs more than one pass \
             (cuptiRangeProfilerStop: isAllPassSubmitted = 0)"
        ));
    }
    let (done, decoded) = crossbeam_channel::bounded(1);
    let stopped = Stopped {
        ctx,
        group,
        graph: match what {
            Measured::Graph { kernels, .. } => Some(kernels),
            Measured::Kernel { .. } => None,
        },
        correlation_id: d.correlationId,
        done,
    };
    IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    let Some(queue) = DECODER.get() else {
        // Unreachable: the counters thread starts before any context is measured.
        stopped.ctx.busy.store(false, Ordering::Release);
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        return;
    };
    let stopped_after = stopping.elapsed();
    match queue.try_send(stopped) {
        Ok(()) if NO_WAIT.load(Ordering::Acquire) => {}
        Ok(()) => {
            let waited = decoded.recv_timeout(DECODE_WAIT);
            debug!(
                "counters: launch {}: Stop {} µs, then waited {} µs for DecodeData",
                d.correlationId,
                stopped_after.as_micros(),
                (stopping.elapsed() - stopped_after).as_micros()
            );
            if waited.is_err() {
                let what = match &what {
                    Measured::Kernel {
                        name,
                        grid,
                        block,
                        shape,
                    } => {
                        if let Some(p) = lock(&POLICY).as_mut() {
                            p.exclude(name, *grid, *block, *shape);
                        }
                        format!("{name} {grid:?} {block:?}")
                    }
                    Measured::Graph { exec, .. } => {
                        graphs::exclude(*exec);
                        format!("executable graph {exec:#x}")
                    }
                };
                debug!(
                    "launch {}: {what} had not finished {} ms after its launch (it may \
                     wait for work issued later); it is decoded when it ends, and its \
                     launches are not measured again",
                    d.correlationId,
                    DECODE_WAIT.as_millis()
                );
                stop_waiting();
            }
        }
        Err(e) => {
            let s = e.into_inner();
            s.ctx.busy.store(false, Ordering::Release);
            IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
            debug!(
                "launch {}: the counters queue is full; not decoded",
                s.correlation_id
            );
        }
    }
}

/// Set once a launch's decode took longer than [`DECODE_WAIT`]: launches no longer
/// wait for their counters (see [`stop_waiting`]).
static NO_WAIT: AtomicBool = AtomicBool::new(false);

/// After the first decode that outlived [`DECODE_WAIT`] the program has waited all
/// it will: a program whose kernels wait for its later work (a new grid each
/// launch, so a new key each time) would otherwise lose that much per launch.
/// Measured launches then return at once and are decoded whenever their kernels
/// end; the context stays busy until then, so which launches get measured depends
/// on timing. Said once.
fn stop_waiting() {
    if !NO_WAIT.swap(true, Ordering::AcqRel) {
        warn!(
            "a measured kernel had not finished {} ms after its launch (it may wait for work \
             the program issues later); from now on launches do not wait for their counters, \
             and which launches are measured depends on timing",
            DECODE_WAIT.as_millis()
        );
    }
}

fn start_decoder() -> Result<(), String> {
    let (tx, rx) = crossbeam_channel::bounded(QUEUE);
    std::thread::Builder::new()
        .name("gpuprof-counters".into())
        .spawn(move || decoder_thread(rx))
        .map_err(|e| format!("cannot start the counters thread: {e}"))?;
    let _ = DECODER.set(tx);
    Ok(())
}

fn decoder_thread(rx: Receiver<Stopped>) {
    crate::guard::mark_internal();
    for s in rx {
        crate::guard::guarded("the counters thread", (), || {
            if ON.load(Ordering::Acquire) {
                if let Err(e) = decode(&s) {
                    fail(e);
                }
            }
        });
        s.ctx.busy.store(false, Ordering::Release);
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        let _ = s.done.try_send(());
    }
}

/// Decodes a stopped pass (waiting for its kernel on the GPU) and sends its values.
fn decode(s: &Stopped) -> Result<(), String> {
    let ctx = &s.ctx;
    let t = Instant::now();
    let dropped = ctx.with_profiler(None, RangeProfiler::decode)?;
    debug!(
        "counters: launch {}: DecodeData {} µs",
        s.correlation_id,
        t.elapsed().as_micros()
    );
    match s.graph {
        None => {
            let images = lock(&ctx.images);
            let g = &ctx.plan.groups[s.group as usize];
            send_ranges(s, g, &images[s.group as usize], 1, dropped)
        }
        Some(kernels) => {
            let Some((_, g)) = ctx.plan.graph_group() else {
                return Ok(());
            };
            let image = lock(&ctx.graph_image);
            send_ranges(s, g, &image, kernels as usize, dropped)
        }
    }
}

/// Sends each range of a decoded pass as `KernelCounters`, when the pass holds the
/// `expected` ranges (one per kernel it ran) and dropped none; else nothing, rather
/// than values attributed to the wrong kernel.
fn send_ranges(
    s: &Stopped,
    g: &Group,
    image: &[u8],
    expected: usize,
    dropped: usize,
) -> Result<(), String> {
    let ranges = api::ranges(s.ctx.fns, image).map_err(|e| e.to_string())?;
    if ranges != expected || dropped != 0 {
        debug!(
            "launch {}: {ranges} ranges ({expected} expected), {dropped} dropped in its \
             pass; no counters",
            s.correlation_id
        );
        return Ok(());
    }
    for range in 0..ranges {
        let mut values = vec![0.0; g.ids.len()];
        g.host
            .evaluate(image, range, &mut values)
            .map_err(|e| e.to_string())?;
        let not_finite = values.iter().filter(|v| !v.is_finite()).count();
        if not_finite > 0 {
            debug!(
                "launch {}: group {} range {range}: {not_finite} of {} values not finite",
                s.correlation_id,
                s.group,
                values.len()
            );
        }
        handoff::send(Record::KernelCounters(KernelCounters {
            correlation_id: s.correlation_id,
            group: s.group,
            metrics: g
                .ids
                .iter()
                .zip(values)
                .map(|(&name, value)| MetricValue { name, value })
                .collect(),
            range: range as u32,
        }));
    }
    Ok(())
}

/// Process exit: waits until every stopped pass is decoded, at most until
/// `deadline`. A pass whose kernel never finishes (it waits for work that will not
/// come) is left, with one warning: its launch gets no counters.
pub fn finish(deadline: Instant) {
    debug!(
        "counters: measuring took {:.3} s of the launching threads' time",
        BUDGET.spent().as_secs_f64()
    );
    while IN_FLIGHT.load(Ordering::Acquire) > 0 {
        if Instant::now() >= deadline {
            warn!(
                "{} kernel counter measurement(s) were still waiting for the GPU at exit; \
                 those launches have no counters",
                IN_FLIGHT.load(Ordering::Acquire)
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A graph resource callback: what [`graphs`] needs to know which graph launches may
/// be measured, and how many kernels they run.
pub fn on_graph_resource(cbid: u32, r: &cupti_sys::CUpti_ResourceData) {
    use cupti_sys::CUpti_CallbackIdResource::*;
    if !ON.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: called from the graph resource callbacks with CUPTI's data.
    let Some(g) = (unsafe { cupti::callback::graph_data(r) }) else {
        return;
    };
    match cbid {
        CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED => {
            graphs::on_node_created(g.graph as usize, g.nodeType)
        }
        CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED => {
            graphs::on_node_cloned(g.originalGraph as usize, g.graphExec as usize)
        }
        CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED => {
            graphs::on_exec_created(g.graph as usize, g.graphExec as usize)
        }
        CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING => graphs::on_graph_destroyed(g.graph as usize),
        CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING => {
            graphs::on_exec_destroyed(g.graphExec as usize)
        }
        _ => {}
    }
}

/// Whether `cbid` is a graph launch (its kernels are measured together, by kernel
/// replay).
pub fn is_graph_launch(cbid: u32) -> bool {
    matches!(
        cbid,
        cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
    )
}
