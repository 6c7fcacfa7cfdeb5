//! Start-up: whichever entry point comes first loads the options and CUPTI, turns
//! tracing on, joins or starts the session, starts the writer and registers the exit
//! handler, once per process. What it reaches is kept in `state.rs`.

use std::sync::OnceLock;
use std::time::Duration;

use cupti::Cupti;

use crate::log::{debug, info, warn};
use crate::options::Options;
use crate::state::{self, State};
use crate::{exit, handoff, session, tally, tracer, tracing, writer};

/// What started the profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The CUDA driver called `InitializeInjection` (CUDA_INJECTION64_PATH).
    Injection,
}

/// Starts the profiler if nobody has yet. Later calls return the state reached.
pub fn start(trigger: Trigger) -> State {
    if !state::claim_start() {
        return state::state();
    }
    let next = match start_up(trigger) {
        Ok(()) => State::Running,
        Err(Off::Asked(msg)) => {
            warn!("{msg}; profiling is off, the program runs unprofiled");
            State::Disabled
        }
        Err(Off::Failed(msg)) => {
            warn!("{msg}; profiling is off, the program runs unprofiled");
            session::say_unprofiled(&msg);
            State::Disabled
        }
    };
    state::end_start(next)
}

/// Why start-up did not profile this process.
enum Off {
    /// The user or the system asked for it not to be (GPUPROF_DISABLE, a privileged
    /// process): nothing else is said, or read from the environment.
    Asked(String),
    /// Profiling was wanted and failed: the collector is told as well.
    Failed(String),
}

impl From<String> for Off {
    fn from(why: String) -> Off {
        Off::Failed(why)
    }
}

impl From<&str> for Off {
    fn from(why: &str) -> Off {
        Off::Failed(why.to_string())
    }
}

/// The loaded CUPTI, kept for the life of the process.
static CUPTI: OnceLock<Cupti> = OnceLock::new();

/// Why a privileged process is not profiled: its environment was set by a user with
/// fewer rights than it runs with, and the profiler acts on that environment.
const PRIVILEGED: &str = "this process runs with privileges its user does not have (AT_SECURE: \
     setuid, setgid or file capabilities); gpuprof does not act on its environment \
     (GPUPROF_COLLECTOR, GPUPROF_OUT, GPUPROF_SESSION_DIR, GPUPROF_CUPTI_LIB)";

/// Whether the kernel marked this process `AT_SECURE`: set-user-ID, set-group-ID or
/// with file capabilities. The dynamic loader ignores `LD_LIBRARY_PATH` there for
/// the same reason.
fn privileged() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave the process.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

fn start_up(trigger: Trigger) -> Result<(), Off> {
    // Before the environment is read at all: in such a process, starting
    // GPUPROF_COLLECTOR, writing to GPUPROF_OUT / GPUPROF_SESSION_DIR or loading
    // GPUPROF_CUPTI_LIB would do it with privileges the user who set them lacks.
    if privileged() {
        return Err(Off::Asked(PRIVILEGED.into()));
    }
    let opts = Options::load();
    debug!("start-up ({trigger:?}), pid {}", std::process::id());
    if opts.disabled {
        return Err(Off::Asked("GPUPROF_DISABLE=1".into()));
    }
    let driver = cupti::driver_version(false).ok().map(|(v, _)| v);
    let (candidate, lib) = cupti::discover(&cupti::Inputs::from_process(), driver)
        .map_err(|e| Off::Failed(e.to_string()))?;
    info!(
        "CUPTI {} from {} ({}); record layouts of CUPTI {}{}",
        lib.api_version(),
        lib.path().display(),
        candidate.source,
        lib.release().name,
        match driver {
            Some(v) => format!("; driver supports CUDA {}.{}", v / 1000, (v % 1000) / 10),
            None => String::new(),
        }
    );
    let _ = CUPTI.set(lib);
    let cupti = CUPTI.get().ok_or("CUPTI was loaded twice")?;
    Ok(trace(cupti, &opts)?)
}

/// Everything after CUPTI is loaded: NVTX, tracing, the session, the writer, the exit
/// handler. CUPTI first: a process that cannot be traced never starts a collector.
fn trace(cupti: &'static Cupti, opts: &Options) -> Result<(), String> {
    let pid = std::process::id();
    let start_ns = session::realtime_ns();
    nvtx_through_cupti(cupti);
    let rx = handoff::open(opts.channel_records).ok_or("the record channel exists already")?;
    tracing::start(cupti, opts)?;
    let unsubscribe = |e: String| {
        if let Some(t) = tracer::get() {
            let _ = cupti::callback::unsubscribe(t.cupti, &t.subscriber);
        }
        e
    };
    let session = session::open(opts, pid).map_err(unsubscribe)?;
    let ring_path = session.ring.path().to_path_buf();
    let (ctl_tx, ctl_rx) = crossbeam_channel::bounded(1);
    let process = session::process_info(cupti, pid, start_ns);
    let tally: *const wire::ring::Tally = session.ring.tally();
    writer::spawn(session.ring, session.dir.clone(), rx, process, ctl_rx)
        .map_err(|e| unsubscribe(format!("cannot start the writer thread: {e}")))?;
    // SAFETY: the writer thread owns the ring from here and never unmaps it.
    unsafe { tally::publish(tally) };
    exit::install(
        pid,
        Duration::from_millis(opts.exit_timeout_ms),
        ctl_tx,
        session.dir,
        ring_path,
    )?;
    Ok(())
}

/// NVTX reaches CUPTI only when NVTX loads it as its injection library (CUPTI
/// exports `InitializeInjectionNvtx2`). NVTX reads `NVTX_INJECTION64_PATH` at its first
/// call, so calls made before `cuInit` (before we run) are not seen; a value the
/// user set is left alone.
fn nvtx_through_cupti(cupti: &Cupti) {
    if std::env::var_os("NVTX_INJECTION64_PATH").is_none_or(|v| v.is_empty()) {
        std::env::set_var("NVTX_INJECTION64_PATH", cupti.path());
        debug!("NVTX_INJECTION64_PATH set to {}", cupti.path().display());
    }
}
