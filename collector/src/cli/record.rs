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
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use wire::session_dir;

use crate::analysis::follow::Follower;
use crate::cli::report::{render_report, Format};
use crate::cli::sessions::{finish, load_peaks, warn_damage};
use crate::collect::drain::Drainer;
use crate::collect::nvml::{Sampler, SamplingThread};
use crate::collect::output_name;
use crate::collect::serve::{ServeSettings, Serving, DEFAULT_ADDR, SERVE_ENV};
use crate::collect::session_dirs::{self, rename_new};
use crate::collect::signals;
use crate::collect::supervise::{
    conclude, exit_code, follow_owner, follow_program, spawn_program, wind_up, with_completeness,
    Ended, RingDir,
};
use crate::store::writer::MAX_PART_ROWS;
use crate::store::PartLimits;

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

/// `gpuprof record`: checks everything given before anything is made or run, runs
/// the program under the profiler, follows it to the end, prints the report.
pub fn record(args: &RecordArgs) -> Result<ExitCode> {
    let lib = session_dirs::injection_library()?;
    let mut env = program_env(args)?;
    let output = output_dir_name(args.output.as_deref(), None)?;
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
    env.insert(
        0,
        (wire::env::SESSION_DIR.into(), ring_dir.0.clone().into()),
    );
    let mut child = match spawn_program(&args.command, &lib, &env) {
        Ok(c) => c,
        Err(code) => {
            drainer.discard();
            if created {
                let _ = std::fs::remove_dir(&out_dir);
            }
            return Ok(ExitCode::from(code));
        }
    };
    if let Some(named) = output_dir_name(args.output.as_deref(), Some(child.id()))? {
        rename_session(&mut drainer, &mut out_dir, named);
    }
    // The report printed at the end is made as the parts are sealed, on idle CPU.
    let follower = Follower::start(out_dir.clone());
    // Once the program runs (a command that cannot run needs no telemetry).
    let sampling = start_sampling(args);
    if let (Some(serving), Some(sampling)) = (&mut serving, &sampling) {
        serving.nvml(sampling.latest());
    }
    let (status, interrupted) = follow_program(
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
    let code = status.map_or_else(signals::stop_code, exit_code);
    let unprofiled = session_dir::read_unprofiled(&ring_dir.0);
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
    print_report(follower);
    let end = Ended {
        code,
        counts: &counts,
        unprofiled: &unprofiled,
    };
    Ok(conclude(&out_dir, end, serving, &drainer))
}

/// The variables the program gets beside the injection's: `--ring-size`, the capture
/// window, `--env` (each checked here: a bad value is an error naming it).
fn program_env(args: &RecordArgs) -> Result<Vec<(OsString, OsString)>> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    if let Some(size) = args.ring_size.as_deref() {
        env.push((
            wire::env::RING_SIZE.into(),
            session_dirs::check_ring_size(size)?,
        ));
    }
    for (k, v) in capture_env(args)? {
        env.push((k.into(), v.into()));
    }
    env.extend(args.env.iter().cloned());
    Ok(env)
}

/// `-o NAME` with its `%` sequences expanded. Without `pid`: the name to make now
/// (`%p` not yet known, so `pending-<gpuprof pid>`); with it: the name to rename to,
/// `None` unless NAME holds `%p`. A `%p` outside the last component is an error.
fn output_dir_name(output: Option<&Path>, pid: Option<u32>) -> Result<Option<PathBuf>> {
    let Some(output) = output else {
        return Ok(None);
    };
    if let Some(parent) = output.parent() {
        if output_name::has_pid(parent.as_os_str()) {
            bail!(
                "output name {:?}: %p may only be in its last component",
                output.display().to_string()
            );
        }
    }
    if pid.is_some() && !output_name::has_pid(output.as_os_str()) {
        return Ok(None);
    }
    let host = output_name::host_name();
    let env = |var: &str| std::env::var_os(var);
    let values = output_name::Values {
        pid,
        host: &host,
        env: &env,
    };
    output_name::expand(output.as_os_str(), &values).map(Some)
}

/// Renames the session directory to `named` (nothing there is replaced) and tells the
/// drainer; a refused rename leaves the old name, with a warning.
fn rename_session(drainer: &mut Drainer, out_dir: &mut PathBuf, named: PathBuf) {
    match rename_new(out_dir, &named) {
        Ok(()) => {
            drainer.moved_to(&named);
            *out_dir = named;
        }
        Err(e) => eprintln!(
            "gpuprof: warning: cannot rename the session directory to {}: {e}; it stays {}",
            named.display(),
            out_dir.display()
        ),
    }
}

/// Prints the session's report on stdout, its damage on stderr.
fn print_report(follower: Follower) {
    match follower.finish() {
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

    let interrupted = follow_owner(&mut drainer, args.owner_pid, serving.as_mut());
    let unprofiled = session_dir::read_unprofiled(&ring_dir.0);
    let (counts, written) = wind_up(&mut drainer, ring_dir, interrupted);
    if let Some(s) = &mut serving {
        s.finish(&mut drainer, &[]);
    }
    if let Err(e) = written {
        with_completeness(0, &drainer);
        return Err(e);
    }
    let end = Ended {
        code: 0,
        counts: &counts,
        unprofiled: &unprofiled,
    };
    Ok(conclude(&out_dir, end, serving, &drainer))
}

#[derive(clap::Args, Clone, Default)]
pub struct ServeArgs {
    /// Serve live metrics at http://ADDR/metrics (Prometheus text format:
    /// dcgm-exporter's DCGM_FI_* per GPU and gpuprof_* series, see
    /// docs/METRICS.md) while the program runs. ADDR defaults to 127.0.0.1:9401;
    /// $GPUPROF_SERVE sets it when the option is not given.
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = DEFAULT_ADDR, require_equals = false)]
    serve: Option<String>,
    /// With --serve: kernel names (and NVTX range names) that get series of their
    /// own, the first ones by GPU time; the others are summed as "other".
    #[arg(long, value_name = "N", default_value_t = 20)]
    serve_top: usize,
    /// With --serve: once the program has ended, keep serving its final values for
    /// S seconds (SIGINT, SIGTERM or SIGHUP ends this sooner), so that a scraper
    /// reads them. The DCGM fields lag the GPU by 5 s: their last windows are shown
    /// one per second meanwhile (the last second holds the rest), so 5 or more
    /// keeps their average over the run equal to the report's "GPU activity".
    #[arg(long, value_name = "S", default_value_t = 0)]
    serve_linger: u64,
}

impl ServeArgs {
    /// The address to serve on, from the option or `$GPUPROF_SERVE`; `None`: off.
    fn addr(&self) -> Option<String> {
        self.serve.clone().or_else(|| {
            std::env::var(SERVE_ENV)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        })
    }

    /// Starts serving when asked: binds ADDR (an error names it) with the peaks
    /// `gpuprof report` takes (`$GPUPROF_PEAKS`; an unreadable file is warned about
    /// and the built-in peaks used). Call before the program starts, so a bad address
    /// stops everything before anything runs.
    pub fn start(&self) -> Result<Option<Serving>> {
        let Some(addr) = self.addr() else {
            return Ok(None);
        };
        let peaks = load_peaks(None).unwrap_or_else(|e| {
            eprintln!("gpuprof: warning: {e:#}; the live metrics use the built-in peaks");
            Default::default()
        });
        let settings = ServeSettings {
            addr,
            top: self.serve_top,
            linger: Duration::from_secs(self.serve_linger),
            peaks,
        };
        Serving::start(settings).map(Some)
    }
}
