//! Process exit and fork.
//!
//! Exit (`atexit`, once, in the process that started profiling): PM sampling
//! stopped and its last samples sent (`counters::sampling::stop`), kernel counter
//! passes still being decoded waited for (`counters::finish`, at most a quarter of
//! `GPUPROF_EXIT_TIMEOUT_MS`), CUPTI's forced flush, then PM sampling disabled
//! (`counters::sampling::disable`: only after the flush, as disabling can finalize
//! CUPTI and lose undelivered activity buffers), then the writer drains, writes
//! `End` and the ring's finished flag while we wait at most
//! `GPUPROF_EXIT_TIMEOUT_MS`; a ring whose collector is gone is deleted (and the
//! directory, by `wire::session_dir`'s rules, when it was the last ring; what those
//! rules leave in place is named in a warning).
//!
//! Fork: the child disables profiling (no CUPTI call, no ring: both belong to the
//! parent). A child that execs starts over through the environment
//! (`CUDA_INJECTION64_PATH`, `GPUPROF_SESSION_DIR`). A child that keeps using CUDA
//! after fork without exec is not profiled (CUDA itself does not support using a
//! context inherited over fork).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use cupti::activity;
use cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;

use crate::log::{debug, warn};
use crate::state::{self, State};
use crate::tracer;
use crate::writer::Finish;

struct AtExit {
    pid: u32,
    timeout: Duration,
    ctl: Mutex<Option<Sender<Finish>>>,
    dir: PathBuf,
    ring: PathBuf,
}

static AT_EXIT: OnceLock<AtExit> = OnceLock::new();
static RAN: AtomicBool = AtomicBool::new(false);

/// Registers the exit and fork handlers (once per process).
pub fn install(
    pid: u32,
    timeout: Duration,
    ctl: Sender<Finish>,
    dir: PathBuf,
    ring: PathBuf,
) -> Result<(), String> {
    AT_EXIT
        .set(AtExit {
            pid,
            timeout,
            ctl: Mutex::new(Some(ctl)),
            dir,
            ring,
        })
        .map_err(|_| "exit handler installed twice".to_string())?;
    // SAFETY: registering handlers that are plain `extern "C"` functions of this
    // library, which is never unloaded.
    let (rc_fork, rc_exit) = unsafe {
        (
            libc::pthread_atfork(None, None, Some(in_child)),
            libc::atexit(at_exit),
        )
    };
    if rc_fork != 0 || rc_exit != 0 {
        return Err("cannot register the exit / fork handlers".into());
    }
    crate::exit_order::set_handler(at_exit);
    Ok(())
}

extern "C" fn in_child() {
    // Only an atomic store: async-signal-safe, as a fork handler must be.
    state::disable();
}

extern "C" fn at_exit() {
    crate::guard::guarded("the exit handler", (), on_exit);
}

fn on_exit() {
    let Some(a) = AT_EXIT.get() else { return };
    if std::process::id() != a.pid || RAN.swap(true, Ordering::AcqRel) {
        return;
    }
    let started = Instant::now();
    if state::state() == State::Running {
        if let Some(t) = tracer::get() {
            crate::counters::sampling::stop();
            crate::counters::finish(started + a.timeout / 4);
            if let Err(e) = activity::flush_all(t.cupti, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
                debug!("cuptiActivityFlushAll at exit: {e}");
            }
            crate::capture_window::finish();
            // Only after the flush: disabling PM sampling can finalize CUPTI and lose
            // activity buffers not yet delivered.
            crate::counters::sampling::disable();
        }
    }
    // From here callbacks and late buffers are ignored: the stream is closing.
    state::disable();
    let ctl = a.ctl.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(ctl) = ctl {
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let deadline = started + a.timeout * 3 / 4;
        if ctl
            .send(Finish {
                deadline,
                done: done_tx,
            })
            .is_ok()
        {
            // It sleeps until its next tick unless woken.
            crate::handoff::wake_writer_now();
            let left = (started + a.timeout).saturating_duration_since(Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                warn!(
                    "the profile of this process was not finished within GPUPROF_EXIT_TIMEOUT_MS={} ms; its end is missing",
                    a.timeout.as_millis()
                );
            }
        }
    }
    if let Err(kept) = wire::session_dir::remove_if_orphaned(&a.dir, &a.ring) {
        warn!("{kept}");
    }
}
