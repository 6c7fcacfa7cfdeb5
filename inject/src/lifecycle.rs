//! The profiler's life in the host process: one atomic state machine, started once
//! from whichever entry point comes first, with a permanent "disabled" state that
//! every later hook checks before doing anything.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use cupti::Cupti;

use crate::log::{debug, info, warn};
use crate::options::Options;
use crate::{exit, handoff, session, tracer, writer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Nothing has happened yet.
    Idle = 0,
    /// Start-up is in progress on some thread.
    Starting = 1,
    /// CUPTI is loaded and the profiler is active.
    Running = 2,
    /// Turned off, for good: by configuration or after a failure (already reported).
    Disabled = 3,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Idle,
            1 => State::Starting,
            2 => State::Running,
            _ => State::Disabled,
        }
    }
}

/// What started the profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The CUDA driver called `InitializeInjection` (CUDA_INJECTION64_PATH).
    Injection,
}

static STATE: AtomicU8 = AtomicU8::new(State::Idle as u8);
static CUPTI: OnceLock<Cupti> = OnceLock::new();

/// The current state.
pub fn state() -> State {
    State::from_u8(STATE.load(Ordering::Acquire))
}

/// Turns the profiler off for good, whatever it was doing. Idempotent.
pub fn disable() {
    STATE.store(State::Disabled as u8, Ordering::Release);
}

/// The loaded CUPTI, once running.
#[allow(dead_code)]
pub fn cupti() -> Option<&'static Cupti> {
    CUPTI.get()
}

/// Starts the profiler if nobody has yet. Later calls return the state reached.
pub fn start(trigger: Trigger) -> State {
    if STATE
        .compare_exchange(
            State::Idle as u8,
            State::Starting as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return state();
    }
    let next = match start_up(trigger) {
        Ok(()) => State::Running,
        Err(msg) => {
            warn!("{msg}; profiling is off, the program runs unprofiled");
            State::Disabled
        }
    };
    // A `disable()` that raced with start-up wins.
    let _ = STATE.compare_exchange(
        State::Starting as u8,
        next as u8,
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    state()
}

fn start_up(trigger: Trigger) -> Result<(), String> {
    let opts = Options::load();
    debug!("start-up ({trigger:?}), pid {}", std::process::id());
    if opts.disabled {
        return Err("GPUPROF_DISABLE=1".into());
    }
    let driver = cupti::driver_version(false).ok().map(|(v, _)| v);
    let (candidate, lib) =
        cupti::discover(&cupti::Inputs::from_process(), driver).map_err(|e| e.to_string())?;
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
    trace(cupti, &opts)
}

/// Everything after CUPTI is loaded: NVTX, tracing, the session, the writer, the exit
/// handler. CUPTI first: a process that cannot be traced never starts a collector.
fn trace(cupti: &'static Cupti, opts: &Options) -> Result<(), String> {
    let pid = std::process::id();
    let start_ns = session::realtime_ns();
    nvtx_through_cupti(cupti);
    let rx = handoff::open(opts.channel_records).ok_or("the record channel exists already")?;
    tracer::start(cupti, opts)?;
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
    writer::spawn(session.ring, session.dir.clone(), rx, process, ctl_rx)
        .map_err(|e| unsubscribe(format!("cannot start the writer thread: {e}")))?;
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
