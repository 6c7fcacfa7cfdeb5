//! Helpers for the collector's tests: the `gpuprof` binary with a clean environment and
//! scratch directories that disappear with the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::artifacts::{artifact, target_profile_dir};

/// Removes everything of the test's environment that would reach the profiler, the
/// simulated stack or a program's choice of libraries: `GPUPROF_*`, `CUDA_*`, `SIM*`,
/// `NVTX_*`, `LD_LIBRARY_PATH` (cargo puts the simulated libraries on the loader path
/// for tests), `LD_PRELOAD`, `VIRTUAL_ENV`, `CONDA_PREFIX`; and quiets backtraces.
pub fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUPROF_")
            || k.starts_with("CUDA_")
            || k.starts_with("SIM")
            || k.starts_with("NVTX_")
            || k == "LD_LIBRARY_PATH"
            || k == "LD_PRELOAD"
            || k == "VIRTUAL_ENV"
            || k == "CONDA_PREFIX"
        {
            cmd.env_remove(k);
        }
    }
    cmd.env("RUST_BACKTRACE", "0");
}

/// `gpuprof` with a clean environment ([`clean_env`]).
pub fn gpuprof_command() -> Command {
    let mut cmd = Command::new(artifact("gpuprof"));
    clean_env(&mut cmd);
    cmd
}

/// `gpuprof record` (arguments to follow: `-o DIR -- CMD`) with the program on the
/// simulated stack, CUPTI impersonating `release`.
pub fn record_on_sim(release: &str) -> Command {
    let mut cmd = crate::SimCommand::new(Command::new(artifact("gpuprof")))
        .cupti(release)
        .command();
    cmd.arg("record");
    cmd
}

/// `gpuprof record ARGS -o OUT -- CMD` on the simulated stack, CUPTI impersonating
/// `release` ([`record_on_sim`]).
pub fn record_session_on_sim(
    out: &Path,
    release: &str,
    args: &[&str],
    cmd: &[&std::ffi::OsStr],
) -> Command {
    let mut c = record_on_sim(release);
    c.args(args).arg("-o").arg(out).arg("--").args(cmd);
    c
}

/// The ring directories of a session whose creator (the `gpuprof record` process, or
/// in env-var-only mode the first profiled process) had `pid`.
pub fn shm_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("gpuprof-{pid}-");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// A fresh directory under `target/<profile>/scratch/`, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// `name` says whose it is; a number counted in the process makes it unique there:
    /// every test of the suite runs in one test binary, and two of them (or two calls
    /// of one) may pass the same name.
    pub fn new(name: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = target_profile_dir()
            .join("scratch")
            .join(format!("{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The pids `gpuprof record` names in `stderr` as having run unprofiled
/// (`gpuprof: process <pid> ran unprofiled: ...`).
pub fn unprofiled_pids(stderr: &str) -> Vec<u32> {
    stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("gpuprof: process ")?
                .split_once(" ran unprofiled: ")
        })
        .filter_map(|(pid, _)| pid.parse().ok())
        .collect()
}

/// What `gpuprof record` says last when the processes `pids` ran unprofiled, each
/// after the warning `warning` (`gpuprof: <why>; profiling is off, the program runs
/// unprofiled`): a line naming each with why, then, when the program exited 0 and
/// nothing was profiled, that the session holds none of its GPU work (exit status 4).
pub fn unprofiled_lines(pids: &[u32], warning: &str, program_ok: bool) -> String {
    let why = warning
        .strip_prefix("gpuprof: ")
        .and_then(|w| w.strip_suffix("; profiling is off, the program runs unprofiled"))
        .unwrap_or_else(|| panic!("not a profiling-off warning: {warning}"));
    let mut out: String = pids
        .iter()
        .map(|pid| format!("gpuprof: process {pid} ran unprofiled: {why}\n"))
        .collect();
    if program_ok {
        out.push_str("gpuprof: the session holds none of the program's GPU work; exit status 4\n");
    }
    out
}

/// A pid no process can have: one past the kernel's largest.
pub fn dead_pid() -> u32 {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("/proc/sys/kernel/pid_max")
        .trim()
        .parse()
        .expect("a number in /proc/sys/kernel/pid_max");
    max + 1
}
