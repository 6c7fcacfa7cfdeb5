//! `gpuprof doctor`: which driver and CUPTI the profiler would use.
//!
//! Every CUPTI candidate is probed in a child process (`gpuprof doctor --probe PATH`):
//! loading a library runs its code, and some releases crash when asked their version
//! without a driver (CUPTI 13.2 overflows its stack), which must not take doctor down.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use cupti::{Candidate, Inputs, Source};

#[derive(clap::Args)]
pub struct Args {
    /// The Python interpreter the profiled program will run under; its site-packages
    /// are searched for nvidia/*/lib/libcupti.so* as libgpuprof.so would. Default:
    /// python3 on PATH.
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Probe one library and print the result (used by doctor itself).
    #[arg(long, hide = true, value_name = "PATH")]
    probe: Option<OsString>,
    /// Plan each GPU's counters with one library and print the result (used by
    /// doctor itself).
    #[arg(long, hide = true, value_name = "PATH")]
    counters: Option<OsString>,
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

pub fn run(args: &Args) -> Result<ExitCode> {
    if let Some(path) = &args.probe {
        return Ok(probe(path));
    }
    if let Some(path) = &args.counters {
        return Ok(crate::cli::doctor_counters::check(path));
    }
    println!("gpuprof {}", crate::cli::version::LINE);
    let driver = cupti::driver_version(true);
    match &driver {
        Ok((v, path)) => println!(
            "CUDA driver: {} (supports CUDA {}.{})",
            path.display(),
            v / 1000,
            (v % 1000) / 10
        ),
        Err(e) => println!("CUDA driver: not available ({e})"),
    }

    let mut inputs = Inputs::from_process();
    // Doctor runs outside the application: look where the application's Python would.
    inputs.mapped.clear();
    let python = args
        .python
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"));
    match python_site_packages(&python) {
        Ok(dirs) => {
            println!(
                "Python: {} (site-packages: {})",
                python.display(),
                join_paths(&dirs)
            );
            inputs.site_packages = dirs;
        }
        Err(e) if args.python.is_some() => return Err(e),
        Err(e) => println!("Python: not searched ({e:#})"),
    }
    for var in [
        "GPUPROF_CUPTI_LIB",
        "CUDA_HOME",
        "CUDA_PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
    ] {
        if let Some(v) = std::env::var_os(var) {
            println!("{var}={}", v.to_string_lossy());
        }
    }

    let candidates = cupti::candidates(&inputs);
    println!("\nCUPTI candidates, in the order libgpuprof.so tries them:");
    let mut chosen: Option<usize> = None;
    let explicit_failed = std::cell::Cell::new(false);
    let explicit_dir = inputs
        .gpuprof_cupti_lib
        .as_ref()
        .is_some_and(|p| Path::new(p).is_dir());
    for (i, c) in candidates.iter().enumerate() {
        // A GPUPROF_CUPTI_LIB directory is an explicit choice: with nothing usable in
        // it, libgpuprof.so tries no further source.
        if explicit_dir && chosen.is_none() && c.source.after_explicit() {
            explicit_failed.set(true);
        }
        let verdict = match probe_in_child(c) {
            Ok(desc) => {
                if chosen.is_none() && !explicit_failed.get() {
                    chosen = Some(i);
                    format!("usable, {desc}  <- would be used")
                } else {
                    format!("usable, {desc}")
                }
            }
            Err(reason) => {
                if c.source == Source::EnvVar
                    && !PathBuf::from(&c.path).is_dir()
                    && chosen.is_none()
                {
                    explicit_failed.set(true);
                }
                format!("rejected: {reason}")
            }
        };
        println!(
            "  {:>2}. {} ({}): {verdict}",
            i + 1,
            c.path.to_string_lossy(),
            c.source
        );
    }
    let supported: Vec<&str> = cupti_sys::records::RELEASES
        .iter()
        .map(|r| r.name)
        .collect();
    println!(
        "\nCUPTI releases with record layouts in this build: {}",
        supported.join(", ")
    );
    if explicit_failed.get() {
        if explicit_dir {
            println!(
                "GPUPROF_CUPTI_LIB names a directory without a usable libcupti: profiling would stay off."
            );
        } else {
            println!(
                "GPUPROF_CUPTI_LIB names a library that cannot be used: profiling would stay off."
            );
        }
        return Ok(ExitCode::from(1));
    }
    if let (Some(i), Ok(_)) = (chosen, &driver) {
        println!(
            "\nCounters with {}, planned as libgpuprof.so would:",
            candidates[i].path.to_string_lossy()
        );
        for line in crate::cli::doctor_counters::check_in_child(&candidates[i].path) {
            println!("  {line}");
        }
    }
    match chosen {
        Some(_) => Ok(ExitCode::SUCCESS),
        None => {
            println!("No usable CUPTI: profiling would stay off (set GPUPROF_CUPTI_LIB to a libcupti.so).");
            Ok(ExitCode::from(1))
        }
    }
}

/// Runs in the child: load the driver, then the library, print one line.
fn probe(path: &OsStr) -> ExitCode {
    let driver = cupti::driver_version(true).ok().map(|(v, _)| v);
    match cupti::Cupti::open(path, driver) {
        Ok(c) => {
            println!(
                "ok CUPTI {} at {}, record layouts of CUPTI {}",
                c.api_version(),
                c.path().display(),
                c.release().name
            );
            ExitCode::SUCCESS
        }
        Err(reason) => {
            println!("rejected {reason}");
            ExitCode::from(1)
        }
    }
}

fn probe_in_child(c: &Candidate) -> Result<String, String> {
    let args: [&OsStr; 3] = ["doctor".as_ref(), "--probe".as_ref(), &c.path];
    let o =
        crate::collect::child::run_self(args, PROBE_TIMEOUT).map_err(|e| format!("probe {e}"))?;
    let line = o.stdout.lines().next().unwrap_or("").to_string();
    if let Some(rest) = line.strip_prefix("ok ") {
        return Ok(rest.to_string());
    }
    if let Some(rest) = line.strip_prefix("rejected ") {
        return Err(rest.to_string());
    }
    match o.signal() {
        Some(sig) => Err(format!("the library crashed the probe process ({sig})")),
        None => Err(format!("probe failed ({})", o.status)),
    }
}

/// The site-packages directories of a Python interpreter, as it reports them.
fn python_site_packages(python: &std::path::Path) -> Result<Vec<PathBuf>> {
    let out = Command::new(python)
        .args(["-c", "import site,sys\nfor d in site.getsitepackages()+[site.getusersitepackages()]: print(d)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} exited with {}",
        python.display(),
        out.status
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .collect())
}

fn join_paths(v: &[PathBuf]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
