//! Following a session until it is done, for `gpuprof record` (the program it
//! started) and `gpuprof collect` (the process that started it): drain, sample, serve
//! and forward signals every [`POLL`]; then wind up (seal the last part, remove the
//! ring directory) and turn what happened into the exit status.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::time::Duration;

use anyhow::{Context, Result};
use wire::ring::process_alive;
use wire::session_dir;

use crate::collect::drain::{Counts, Drainer, POLL};
use crate::collect::nvml::SamplingThread;
use crate::collect::progress::{describe, Progress};
use crate::collect::serve::Serving;
use crate::collect::signals;

/// Removes the ring directory when dropped, on every path out: this collector's
/// `collector.pid`, then `wire::session_dir::remove_ring_dir` (gpuprof's files and the
/// directory, only when gpuprof made it and nothing else is in it; what stays is
/// named in a warning).
pub struct RingDir(pub PathBuf);

impl Drop for RingDir {
    fn drop(&mut self) {
        session_dir::remove_collector_pid(&self.0, std::process::id());
        if let Err(kept) = session_dir::remove_ring_dir(&self.0) {
            eprintln!("gpuprof: warning: {kept}");
        }
    }
}

/// The end of collection, for record and collect alike: stop following rings whose
/// producers still run (when interrupted), take the counts, seal the session's last part,
/// remove the ring directory, and print the drainer's notes.
pub fn wind_up(
    drainer: &mut Drainer,
    ring_dir: RingDir,
    interrupted: bool,
) -> (Counts, Result<()>) {
    if interrupted {
        drainer.abandon();
    }
    // After the last part is sealed: the counts say what the session holds.
    let written = drainer.finish();
    let counts = drainer.counts();
    drop(ring_dir);
    for note in drainer.notes() {
        eprintln!("gpuprof: {note}");
    }
    (counts, written)
}

/// Exit status when the program succeeded but the session is incomplete
/// ([`Drainer::incomplete`]); README's "Exit status" lists every code.
pub const INCOMPLETE: u8 = 3;

/// The program's exit code, or [`INCOMPLETE`] in place of a success when the session
/// lacks something (said on stderr).
pub fn with_completeness(code: u8, drainer: &Drainer) -> u8 {
    if drainer.unsaved() > 0 {
        eprintln!(
            "gpuprof: {} records could not be written to the session",
            drainer.unsaved()
        );
    }
    if code == 0 && drainer.incomplete() {
        eprintln!("gpuprof: the session is incomplete (see above); exit status {INCOMPLETE}");
        return INCOMPLETE;
    }
    code
}

/// Starts `command` with `CUDA_INJECTION64_PATH` naming `lib` and the variables
/// `env`. A command that cannot run is said on stderr and gives the shell's exit
/// code: 127 when it is not found, 126 otherwise.
pub fn spawn_program(
    command: &[OsString],
    lib: &Path,
    env: &[(OsString, OsString)],
) -> std::result::Result<Child, u8> {
    let program = &command[0];
    if let Some(other) = std::env::var_os("CUDA_INJECTION64_PATH").filter(|v| v != lib.as_os_str())
    {
        eprintln!(
            "gpuprof: warning: CUDA_INJECTION64_PATH was {}; the program gets {} instead",
            Path::new(&other).display(),
            lib.display()
        );
    }
    Command::new(program)
        .args(&command[1..])
        .env("CUDA_INJECTION64_PATH", lib)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .spawn()
        .map_err(|e| {
            eprintln!(
                "gpuprof: error: cannot run {}: {e}",
                Path::new(program).display()
            );
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        })
}

/// How a session ended: the program's exit `code`, what the session holds, and the
/// processes that ran unprofiled.
pub struct Ended<'a> {
    pub code: u8,
    pub counts: &'a Counts,
    pub unprofiled: &'a [(u32, String)],
}

/// The end of `record` and `collect` once the session in `out_dir` is written: where
/// it is and what it holds, the final values served for their linger time, and the
/// exit status: the program's, or 4 or 3 in its place ([`with_unprofiled`],
/// [`with_completeness`]).
pub fn conclude(
    out_dir: &Path,
    end: Ended,
    serving: Option<Serving>,
    drainer: &Drainer,
) -> ExitCode {
    eprintln!(
        "gpuprof: session written to {} ({}); gpuprof report {}",
        out_dir.display(),
        describe(end.counts),
        out_dir.display()
    );
    if let Some(s) = serving {
        s.linger();
    }
    let code = with_unprofiled(end.code, end.unprofiled, end.counts.processes);
    ExitCode::from(with_completeness(code, drainer))
}

/// Exit status in place of the program's success when it ran GPU work and no process
/// of it was profiled (each turned profiling off: no CUPTI, no room for its ring);
/// README's "Exit status" lists every code.
pub const UNPROFILED: u8 = 4;

/// How many processes that ran unprofiled are named one by one on stderr.
const NAMED_UNPROFILED: usize = 10;

/// Says which processes ran unprofiled and why (`unprofiled`, from their notes in the
/// ring directory), and gives the exit status: the program's `code`, or in place of a
/// success [`UNPROFILED`] when no process was profiled (`profiled` is 0) and
/// [`INCOMPLETE`] when some were.
pub fn with_unprofiled(code: u8, unprofiled: &[(u32, String)], profiled: usize) -> u8 {
    if unprofiled.is_empty() {
        return code;
    }
    for (pid, why) in unprofiled.iter().take(NAMED_UNPROFILED) {
        eprintln!("gpuprof: process {pid} ran unprofiled: {why}");
    }
    if unprofiled.len() > NAMED_UNPROFILED {
        eprintln!(
            "gpuprof: {} more processes ran unprofiled",
            unprofiled.len() - NAMED_UNPROFILED
        );
    }
    let (status, what) = if profiled == 0 {
        (
            UNPROFILED,
            "the session holds none of the program's GPU work",
        )
    } else {
        (
            INCOMPLETE,
            "the session holds only the profiled processes' GPU work",
        )
    };
    if code != 0 {
        return code;
    }
    eprintln!("gpuprof: {what}; exit status {status}");
    status
}

/// The exit code a shell would show for `status`.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => (128 + s) as u8,
        _ => 1,
    }
}

/// How long a process the program left running may stay silent before the session
/// ends without it.
const LEFT_BEHIND: Duration = Duration::from_secs(10);

/// Drains until the child has exited and every ring is done, or until a stop signal.
/// Returns the child's status (if it exited) and whether collection was interrupted.
pub fn follow_program(
    drainer: &mut Drainer,
    child: &mut Child,
    sampling: Option<&SamplingThread>,
    mut serving: Option<&mut Serving>,
) -> Result<(Option<ExitStatus>, bool)> {
    let mut progress = Progress::start();
    let mut status = None;
    let interrupted = loop {
        let sig = signals::poll();
        let forward = sig
            .forward
            .or(sig.forward_interrupt.then_some(libc::SIGINT));
        if let (Some(signal), None) = (forward, status) {
            // SAFETY: kill has no memory-safety preconditions; the child is not reaped
            // yet (status is None), so its pid cannot have been reused.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        }
        if sig.stop {
            break true;
        }
        if status.is_none() {
            status = child.try_wait().context("cannot wait for the program")?;
        }
        drainer.discover();
        if let Some(s) = sampling {
            drainer.push_samples(&s.take());
        }
        drainer.drain();
        if status.is_some() {
            drainer.retire_idle(LEFT_BEHIND);
        }
        if let Some(s) = serving.as_deref_mut() {
            s.tick(drainer);
        }
        progress.update(&drainer.counts());
        if status.is_some() && drainer.all_done() {
            break false;
        }
        std::thread::sleep(POLL);
    };
    if status.is_none() {
        status = child.try_wait().context("cannot wait for the program")?;
    }
    progress.clear();
    Ok((status, interrupted))
}

/// Drains until the process `owner` is gone and every ring is done, or until a stop
/// or termination signal (not the program's supervisor: any request ends collection).
/// Returns whether collection was interrupted.
pub fn follow_owner(drainer: &mut Drainer, owner: u32, mut serving: Option<&mut Serving>) -> bool {
    loop {
        let sig = signals::poll();
        if sig.stop || sig.forward.is_some() {
            break true;
        }
        let owner_gone = !process_alive(owner);
        drainer.discover();
        drainer.drain();
        if let Some(s) = serving.as_deref_mut() {
            s.tick(drainer);
        }
        if owner_gone && drainer.all_done() {
            break false;
        }
        std::thread::sleep(POLL);
    }
}
