//! `gpuprof record -- CMD...` and `gpuprof collect`: run a session's collector
//! (docs/SESSION.md).
//!
//! `record` makes the ring and output directories, starts CMD with the injection
//! variables, drains rings until CMD has exited and every ring is done, seals the
//! session's last part, removes the ring directory, prints the report and exits with CMD's
//! exit status (128 + the signal number when a signal ended it).
//!
//! `collect` is the same loop for env-var-only mode, where the first profiled process
//! made the ring directory and started the collector: it runs until the owner process
//! is gone and every ring is done.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use wire::ring::process_alive;
use wire::session_dir;

use crate::drain::{describe, Counts, Drainer, Progress, POLL};
use crate::output_name;
use crate::report::{analyse, finish, render_report, warn_damage, Format};
use crate::serve::{ServeArgs, Serving};
use crate::session_dirs;
use crate::signals;
use gpuprof_collector::nvml::{Sampler, SamplingThread};
use gpuprof_collector::store::writer::MAX_PART_ROWS;
use gpuprof_collector::store::PartLimits;

/// How often `record` reads NVML by default: once a second, as `nvidia-smi dmon`
/// does, so a long run costs a few rows a second.
pub const DEFAULT_NVML_INTERVAL_MS: u64 = 1000;

#[derive(clap::Args)]
pub struct RecordArgs {
    /// Output directory for the session (created; an existing one must be empty).
    /// Default: $GPUPROF_OUT, else ./gpuprof-<YYYYmmdd-HHMMSS>-<pid>.
    ///
    /// In DIR, %p is the program's pid (in the last component only: the session is
    /// made as pending-<gpuprof's pid> there and renamed once the program has
    /// started), %h the host name, %q{VAR} the value of environment variable VAR (an
    /// error when it is not set), %% a %; any other % sequence is an error.
    /// Example: -o runs/%h-rank%q{SLURM_PROCID}-%p
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Ring capacity per profiled process, bytes with an optional K, M or G suffix
    /// (sets GPUPROF_RING_SIZE; the library's default is 64M). A bigger ring drops
    /// fewer records when the collector falls behind.
    #[arg(long, value_name = "SIZE")]
    ring_size: Option<String>,
    /// Seal a part of the session once it holds this many records (all tables). A
    /// part is what a killed collector can lose, and what it holds in memory.
    #[arg(long, value_name = "N", default_value_t = PartLimits::default().rows as u64,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PART_ROWS as u64))]
    part_rows: u64,
    /// Seal a part of the session at the latest this many seconds after its first
    /// record.
    #[arg(long, value_name = "S", default_value_t = PartLimits::default().age.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    part_seconds: u64,
    /// Record only from S seconds after the program starts (fractions allowed;
    /// sets GPUPROF_DELAY). With --capture-range, the delay applies first: windows
    /// open only after it.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    delay: Option<String>,
    /// Record only for S seconds, from the start or from the end of --delay
    /// (fractions allowed; sets GPUPROF_DURATION).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    duration: Option<String>,
    /// Record only inside capture windows: `cudaProfilerApi`, between each
    /// cuProfilerStart / cudaProfilerStart and the next stop; `nvtx:NAME`, while an
    /// NVTX range named NAME is open (a push/pop range on the launching thread, or a
    /// start/end range on any thread). Sets GPUPROF_CAPTURE_RANGE. Kernels, copies,
    /// sets, launches, GEMM shapes and counters outside the windows are not
    /// recorded; NVTX ranges are.
    #[arg(long, value_name = "RANGE", allow_hyphen_values = true)]
    capture_range: Option<String>,
    #[command(flatten)]
    serve: ServeArgs,
    /// Read every GPU's telemetry (utilisation, power, energy, clocks, memory) through
    /// NVML every this many milliseconds, and once more when the program has ended.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_NVML_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    nvml_interval: u64,
    /// Do not read GPU telemetry through NVML.
    #[arg(long)]
    no_nvml: bool,
    /// The program to profile and its arguments. Every CUDA process it starts is
    /// profiled too.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
    /// Variables set for CMD only, after the injection variables (`gpuprof demo`
    /// points CMD at the simulated stack this way; the collector's own environment
    /// is left alone).
    #[arg(skip)]
    env: Vec<(OsString, OsString)>,
    /// The NVML library the collector loads (`gpuprof demo` points it at the
    /// simulated one); else `$GPUPROF_NVML_LIB` or `libnvidia-ml.so.1`.
    #[arg(skip)]
    nvml_lib: Option<PathBuf>,
}

impl RecordArgs {
    /// `gpuprof record [-o output] -- command`.
    pub fn new(output: Option<PathBuf>, command: Vec<OsString>) -> RecordArgs {
        RecordArgs {
            output,
            ring_size: None,
            part_rows: PartLimits::default().rows as u64,
            part_seconds: PartLimits::default().age.as_secs(),
            delay: None,
            duration: None,
            capture_range: None,
            serve: ServeArgs::default(),
            nvml_interval: DEFAULT_NVML_INTERVAL_MS,
            no_nvml: false,
            command,
            env: Vec::new(),
            nvml_lib: None,
        }
    }

    /// Loads NVML from `lib`.
    pub fn nvml_lib(mut self, lib: PathBuf) -> RecordArgs {
        self.nvml_lib = Some(lib);
        self
    }

    /// Sets `key=value` in CMD's environment.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> RecordArgs {
        self.env.push((key.into(), value.into()));
        self
    }
}

#[derive(clap::Args)]
pub struct CollectArgs {
    /// The ring directory (GPUPROF_SESSION_DIR of the profiled processes). It must
    /// belong to the user running gpuprof. Removed at the end when gpuprof made it
    /// (only gpuprof's own files in it are deleted, then the directory if empty).
    #[arg(long, value_name = "DIR")]
    session_dir: PathBuf,
    /// Output directory for the session (created; an existing one must be empty).
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
    /// The process that started the session: collection ends once it is gone and every
    /// ring is done.
    #[arg(long, value_name = "PID")]
    owner_pid: u32,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Removes the ring directory when dropped, on every path out: this collector's
/// `collector.pid`, then `wire::session_dir::remove_ring_dir` (gpuprof's files and the
/// directory, only when gpuprof made it and nothing else is in it; what stays is
/// named in a warning).
struct RingDir(PathBuf);

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
fn wind_up(drainer: &mut Drainer, ring_dir: RingDir, interrupted: bool) -> (Counts, Result<()>) {
    if interrupted {
        drainer.abandon();
    }
    let counts = drainer.counts();
    let written = drainer.finish();
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
fn with_completeness(code: u8, drainer: &Drainer) -> u8 {
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

/// The exit code a shell would show for `status`.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => (128 + s) as u8,
        _ => 1,
    }
}

/// The capture window's variables for the program, checked by the rule the library
/// reads them with (`wire::capture`).
fn capture_env(args: &RecordArgs) -> Result<Vec<(&'static str, String)>> {
    let mut vars = Vec::new();
    for (flag, var, value, zero_ok) in [
        ("--delay", wire::env::DELAY, &args.delay, true),
        ("--duration", wire::env::DURATION, &args.duration, false),
    ] {
        let Some(v) = value else { continue };
        match wire::capture::parse_seconds(v) {
            Some(ns) if zero_ok || ns > 0 => vars.push((var, v.clone())),
            _ => bail!(
                "{flag} {v:?}: not a number of seconds from {} to {} (fractions allowed, e.g. 1.5)",
                if zero_ok { "0" } else { "0.000000001" },
                wire::capture::MAX_SECONDS
            ),
        }
    }
    if let Some(v) = &args.capture_range {
        let range = wire::capture::CaptureRange::parse(v)
            .map_err(|e| anyhow::anyhow!("--capture-range {v:?}: {e}"))?;
        vars.push((wire::env::CAPTURE_RANGE, range.spec()));
    }
    Ok(vars)
}

pub fn record(args: &RecordArgs) -> Result<ExitCode> {
    let lib = session_dirs::injection_library()?;
    let ring_size = args
        .ring_size
        .as_deref()
        .map(session_dirs::check_ring_size)
        .transpose()?;
    let capture = capture_env(args)?;
    let host = output_name::host_name();
    let env = |var: &str| std::env::var_os(var);
    let values = |pid| output_name::Values {
        pid,
        host: &host,
        env: &env,
    };
    let pid_named = args
        .output
        .as_ref()
        .is_some_and(|o| output_name::has_pid(o.as_os_str()));
    if let Some(parent) = args.output.as_ref().and_then(|o| o.parent()) {
        if output_name::has_pid(parent.as_os_str()) {
            bail!(
                "output name {:?}: %p may only be in its last component",
                args.output.as_ref().unwrap().display().to_string()
            );
        }
    }
    let output = args
        .output
        .as_ref()
        .map(|o| output_name::expand(o.as_os_str(), &values(None)))
        .transpose()?;
    // Before anything is made or run: a bad address stops here.
    let mut serving = args.serve.start()?;
    let (mut out_dir, created) = session_dirs::make_out_dir(output.as_deref())?;
    let ring_dir = RingDir(session_dirs::make_ring_dir()?);
    let limits = PartLimits {
        rows: usize::try_from(args.part_rows).unwrap_or(usize::MAX),
        age: Duration::from_secs(args.part_seconds),
    };
    let mut drainer = Drainer::new(&ring_dir.0, &out_dir, limits)?;
    signals::install().context("cannot install signal handlers")?;
    if let Some(s) = &mut serving {
        s.attach(&mut drainer);
    }

    let program = &args.command[0];
    let mut cmd = Command::new(program);
    cmd.args(&args.command[1..])
        .env("CUDA_INJECTION64_PATH", &lib)
        .env(wire::env::SESSION_DIR, &ring_dir.0);
    if let Some(size) = &ring_size {
        cmd.env(wire::env::RING_SIZE, size);
    }
    cmd.envs(capture.iter().map(|(k, v)| (k, v)));
    cmd.envs(args.env.iter().map(|(k, v)| (k, v)));
    if let Some(other) = std::env::var_os("CUDA_INJECTION64_PATH").filter(|v| v != lib.as_os_str())
    {
        eprintln!(
            "gpuprof: warning: CUDA_INJECTION64_PATH was {}; the program gets {} instead",
            Path::new(&other).display(),
            lib.display()
        );
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            drainer.discard();
            if created {
                let _ = std::fs::remove_dir(&out_dir);
            }
            eprintln!(
                "gpuprof: error: cannot run {}: {e}",
                Path::new(program).display()
            );
            // As shells do: 127 when the command is not found, 126 when it cannot run.
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(ExitCode::from(code));
        }
    };

    if pid_named {
        let named = args
            .output
            .as_ref()
            .map(|o| output_name::expand(o.as_os_str(), &values(Some(child.id()))))
            .transpose()?;
        if let Some(named) = named {
            match rename_new(&out_dir, &named) {
                Ok(()) => {
                    drainer.moved_to(&named);
                    out_dir = named;
                }
                Err(e) => eprintln!(
                    "gpuprof: warning: cannot rename the session directory to {}: {e}; it stays {}",
                    named.display(),
                    out_dir.display()
                ),
            }
        }
    }
    // Once the program runs (a command that cannot run needs no telemetry).
    let sampling = start_sampling(args);
    if let (Some(serving), Some(sampling)) = (&mut serving, &sampling) {
        serving.nvml(sampling.latest());
    }
    let (status, interrupted) = follow(
        &mut drainer,
        &mut child,
        sampling.as_ref(),
        serving.as_mut(),
    )?;
    let last_readings = match sampling {
        Some(s) => {
            // The last reading: after the program's work, so energy includes all of it.
            let last = s.stop();
            drainer.push_samples(&last);
            last
        }
        None => Vec::new(),
    };
    let code = match status {
        Some(s) => exit_code(s),
        None => signals::stop_code(),
    };
    let (counts, written) = wind_up(&mut drainer, ring_dir, interrupted);
    if let Some(s) = &mut serving {
        s.finish(&mut drainer, &last_readings);
    }
    if interrupted {
        eprintln!(
            "gpuprof: interrupted: the collector stopped before the program's processes finished"
        );
    }
    if let Err(e) = written {
        eprintln!("gpuprof: error: {e:#}");
        return Ok(ExitCode::from(with_completeness(code, &drainer)));
    }
    match analyse(&out_dir, |_, _| {}) {
        Ok(loaded) => {
            warn_damage(&loaded, "report");
            let text = render_report(&loaded.aggregate, &loaded.integrity, Format::Table, None);
            // A closed stdout (`gpuprof record ... | head -1`) is not an error: the
            // program's status is what record returns.
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            // The program's exit status stays ours; the damage is stated.
            let _ = finish(&loaded, "report");
        }
        Err(e) => eprintln!("gpuprof: error: {e:#}"),
    }
    eprintln!(
        "gpuprof: session written to {} ({}); gpuprof report {}",
        out_dir.display(),
        describe(&counts),
        out_dir.display()
    );
    if let Some(s) = serving {
        s.linger();
    }
    Ok(ExitCode::from(with_completeness(code, &drainer)))
}

/// Renames `from` to `to`, which must not exist (`RENAME_NOREPLACE`: nothing
/// planted at `to` is replaced or followed).
fn rename_new(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path")
        })
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated strings that outlive the call; renameat2 only
    // reads them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Starts reading NVML every `--nvml-interval` ms, unless `--no-nvml`. Without NVML
/// (no driver, no library, or it does not initialise) that is one line on stderr and
/// the recording goes on without device telemetry.
fn start_sampling(args: &RecordArgs) -> Option<SamplingThread> {
    if args.no_nvml {
        return None;
    }
    match Sampler::open_lib(args.nvml_lib.as_deref().map(Path::as_os_str)) {
        Ok(s) => Some(SamplingThread::start(
            s,
            Duration::from_millis(args.nvml_interval),
        )),
        Err(e) => {
            let why = format!("{e:#}").replace('\n', " ");
            eprintln!("gpuprof: no GPU telemetry (NVML): {why}");
            None
        }
    }
}

/// How long a process the program left running may stay silent before the session
/// ends without it.
const LEFT_BEHIND: Duration = Duration::from_secs(10);

/// Drains until the child has exited and every ring is done, or until a stop signal.
/// Returns the child's status (if it exited) and whether collection was interrupted.
fn follow(
    drainer: &mut Drainer,
    child: &mut Child,
    sampling: Option<&SamplingThread>,
    mut serving: Option<&mut Serving>,
) -> Result<(Option<ExitStatus>, bool)> {
    let mut progress = Progress::new();
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

pub fn collect(args: &CollectArgs) -> Result<ExitCode> {
    // Not followed through a symbolic link, and never another user's: a collector
    // reads, writes and removes files in it.
    let meta = std::fs::symlink_metadata(&args.session_dir).ok();
    if !meta.as_ref().is_some_and(|m| m.is_dir()) {
        anyhow::bail!(
            "--session-dir {}: not a directory",
            args.session_dir.display()
        );
    }
    if let Some(uid) = meta.as_ref().and_then(session_dir::foreign_owner) {
        anyhow::bail!(
            "--session-dir {}: belongs to uid {uid}, not to uid {} who runs gpuprof; \
             gpuprof collects only from ring directories of its own user",
            args.session_dir.display(),
            session_dir::euid()
        );
    }
    // Before collector.pid: a collector that cannot serve exits, and the profiled
    // process that started it goes on unprofiled, saying so.
    let mut serving = args.serve.start()?;
    let (out_dir, _) = session_dirs::prepare_out_dir(&args.out)?;
    let mut drainer = Drainer::new(&args.session_dir, &out_dir, PartLimits::default())?;
    signals::install().context("cannot install signal handlers")?;
    if let Some(s) = &mut serving {
        s.attach(&mut drainer);
    }
    session_dirs::write_collector_pid(&args.session_dir)?;
    // From here on the directory is ours to remove (before, a failure leaves it to the
    // producers, which remove it when they see no collector).
    let ring_dir = RingDir(args.session_dir.clone());

    let interrupted = loop {
        let sig = signals::poll();
        // Not the program's supervisor: any termination request ends collection.
        if sig.stop || sig.forward.is_some() {
            break true;
        }
        let owner_gone = !process_alive(args.owner_pid);
        drainer.discover();
        drainer.drain();
        if let Some(s) = &mut serving {
            s.tick(&mut drainer);
        }
        if owner_gone && drainer.all_done() {
            break false;
        }
        std::thread::sleep(POLL);
    };
    let (counts, written) = wind_up(&mut drainer, ring_dir, interrupted);
    if let Some(s) = &mut serving {
        s.finish(&mut drainer, &[]);
    }
    if let Err(e) = written {
        with_completeness(0, &drainer);
        return Err(e);
    }
    eprintln!(
        "gpuprof: session written to {} ({}); gpuprof report {}",
        out_dir.display(),
        describe(&counts),
        out_dir.display()
    );
    if let Some(s) = serving {
        s.linger();
    }
    Ok(ExitCode::from(with_completeness(0, &drainer)))
}
