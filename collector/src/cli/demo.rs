//! `gpuprof demo`: the whole pipeline on the built-in LLM-shaped workload
//! (`cudarc-llm`: prefill GEMMs, decode GEMVs, attention-like and elementwise
//! kernels, cuBLAS and cuBLASLt, NVTX ranges "prefill" and "decode"): `gpuprof
//! record` (which prints the report), then the roofline chart and its points, then
//! the Perfetto trace, all in one output directory.
//!
//! With a usable GPU (`gpuprof doctor` succeeds) it runs there. Without one it runs
//! the same unmodified program on the simulated H100 of the repository's test stack
//! (`tests/sim`: driver, CUPTI, cuBLAS, cuBLASLt, built beside this binary), through
//! the real injection path: `CUDA_INJECTION64_PATH=libgpuprof.so`. This is the only
//! place outside the tests that knows the simulated stack exists.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context, Result};

use crate::cli::{record, roofline, trace};
use crate::collect::session_dirs;

#[derive(clap::Args)]
pub struct Args {
    /// Run on the simulated GPU (an H100 unless --chip says otherwise) even when a GPU
    /// is usable.
    #[arg(long, conflicts_with = "gpu")]
    sim: bool,
    /// Run on this machine's GPU; fail when `gpuprof doctor` finds no usable driver
    /// and CUPTI.
    #[arg(long)]
    gpu: bool,
    /// The simulated GPU (implies --sim): its SMs, clocks, memory, datasheet peaks
    /// and the chip's own default counters.
    #[arg(long, value_enum, ignore_case = true, conflicts_with = "gpu")]
    chip: Option<SimChip>,
    /// Output directory (created; an existing one must be empty): the session
    /// (parts/), roofline.svg / .csv / .json, trace.perfetto-trace. Default: $GPUPROF_OUT, else
    /// ./gpuprof-<YYYYmmdd-HHMMSS>-<pid>.
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Arguments for the workload (e.g. -- --layers 4 --decode-steps 16; see
    /// `cudarc-llm --help`).
    #[arg(last = true, value_name = "WORKLOAD-ARGS")]
    workload_args: Vec<OsString>,
}

/// The libraries of the simulated stack, as built beside `gpuprof`, and the names a
/// program looks them up by.
/// A GPU the simulated stack can be (`SIMCUDA_CHIP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum SimChip {
    /// NVIDIA A100 SXM4 80GB.
    Ga100,
    /// NVIDIA L40S.
    Ad102,
    /// NVIDIA H100 SXM5 80GB (the default).
    Gh100,
    /// NVIDIA B200.
    Gb100,
}

impl SimChip {
    fn name(self) -> &'static str {
        match self {
            SimChip::Ga100 => "GA100",
            SimChip::Ad102 => "AD102",
            SimChip::Gh100 => "GH100",
            SimChip::Gb100 => "GB100",
        }
    }

    fn gpu(self) -> &'static str {
        match self {
            SimChip::Ga100 => "A100",
            SimChip::Ad102 => "L40S",
            SimChip::Gh100 => "H100",
            SimChip::Gb100 => "B200",
        }
    }
}

const SIM_LIBRARIES: &[(&str, &[&str])] = &[
    ("libcuda.so", &["libcuda.so.1", "libcuda.so"]),
    ("libcupti.so", &["libcupti.so.13"]),
    ("libcublas.so", &["libcublas.so.12", "libcublas.so"]),
    ("libcublasLt.so", &["libcublasLt.so.12", "libcublasLt.so"]),
    ("libcudart.so", &["libcudart.so.12", "libcudart.so"]),
    ("libnvidia_ml.so", &["libnvidia-ml.so.1"]),
];

/// The simulated stack's directory, made new (mode 0700) under the temporary
/// directory; on every path out the links made in it, its `telemetry/` directory
/// (what the simulated driver tells the simulated NVML) and then the directory are
/// removed, and nothing else.
struct SimDir {
    dir: PathBuf,
    links: Vec<PathBuf>,
}

/// The name of the telemetry directory in a [`SimDir`].
const TELEMETRY: &str = "telemetry";

impl SimDir {
    /// `$TMPDIR/gpuprof-demo-sim-<pid>-<n>` with the first `n` whose name is free.
    fn new() -> Result<SimDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let pid = std::process::id();
        for n in 0..100 {
            let dir = base.join(format!("gpuprof-demo-sim-{pid}-{n}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    return Ok(SimDir {
                        dir,
                        links: Vec::new(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", dir.display()))
                }
            }
        }
        bail!(
            "cannot create a directory for the simulated stack under {}: gpuprof-demo-sim-{pid}-0 to -99 exist",
            base.display()
        )
    }

    fn link(&mut self, target: &Path, name: &str) -> Result<()> {
        let at = self.dir.join(name);
        std::os::unix::fs::symlink(target, &at)
            .with_context(|| format!("cannot link {name} in {}", self.dir.display()))?;
        self.links.push(at);
        Ok(())
    }
}

impl Drop for SimDir {
    fn drop(&mut self) {
        for l in &self.links {
            let _ = std::fs::remove_file(l);
        }
        let _ = std::fs::remove_dir_all(self.dir.join(TELEMETRY));
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn exe_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the gpuprof binary's own path")?;
    Ok(exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".")))
}

/// Whether `gpuprof doctor` finds a usable driver and CUPTI here.
fn gpu_usable() -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            Command::new(exe)
                .arg("doctor")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .ok()
        })
        .is_some_and(|s| s.success())
}

/// An NVIDIA library the simulated run needs: `$var`, else the one the repository's
/// `scripts/nvidia-wheels.py fetch-extras` fetched (`target/nvidia/extras.json`,
/// entry `key`); `what` names it in the error.
fn extra_library(exe_dir: &Path, var: &str, key: &str, what: &str) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("{var}={} is not a file", p.display());
        }
        return Ok(p);
    }
    let extras = exe_dir.join("../nvidia/extras.json");
    let found = std::fs::read(&extras)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v[key].as_str().map(PathBuf::from))
        .filter(|p| p.is_file());
    found.with_context(|| {
        format!(
            "the simulated run needs {what} and {} does not name one: run \
             `python3 scripts/nvidia-wheels.py fetch-extras` in the repository, or set {var}",
            extras.display()
        )
    })
}

/// NVIDIA's NVTX library (`libnvtx3interop.so.1`, which cudarc loads as
/// `libnvToolsExt.so`).
fn nvtx_library(exe_dir: &Path) -> Result<PathBuf> {
    extra_library(
        exe_dir,
        wire::env::NVTX_LIB,
        "libnvtx3interop",
        "NVIDIA's NVTX library (libnvtx3interop.so.1 from the nvidia-nvtx-cu12 wheel)",
    )
}

/// NVIDIA's CUPTI 13.1, whose Profiler Host API the simulated CUPTI's answers
/// (metrics accepted, passes) come from, offline.
fn sim_host_library(exe_dir: &Path) -> Result<PathBuf> {
    extra_library(
        exe_dir,
        SIM_HOST_LIBRARY,
        "cupti_host",
        "NVIDIA's CUPTI 13.1 (libcupti.so.13 from the nvidia-cuda-cupti wheel), whose \
         Profiler Host API the simulated CUPTI answers from",
    )
}

/// The simulated CUPTI's variable naming that library.
const SIM_HOST_LIBRARY: &str = "SIMCUPTI_HOST_LIBRARY";

/// Lays the simulated stack out as a program finds a real one: one directory of
/// links with NVIDIA's names.
fn sim_stack(exe_dir: &Path) -> Result<SimDir> {
    let nvtx = nvtx_library(exe_dir)?;
    let mut sim = SimDir::new()?;
    let mut links: Vec<(PathBuf, &str)> = vec![(nvtx, "libnvToolsExt.so")];
    for (built, names) in SIM_LIBRARIES {
        let target = exe_dir.join(built);
        if !target.is_file() {
            bail!(
                "{} is missing: the simulated CUDA stack is built with the workspace \
                 (cargo build --release in the repository)",
                target.display()
            );
        }
        links.extend(names.iter().map(|n| (target.clone(), *n)));
    }
    for (target, name) in links {
        sim.link(&target, name)?;
    }
    Ok(sim)
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let dir = exe_dir()?;
    let workload = dir.join("cudarc-llm");
    if !workload.is_file() {
        bail!(
            "{} is missing: the demo workload is built with the workspace \
             (cargo build --release in the repository)",
            workload.display()
        );
    }
    let on_gpu = if args.sim || args.chip.is_some() {
        false
    } else {
        let usable = gpu_usable();
        if args.gpu && !usable {
            bail!("--gpu: gpuprof doctor finds no usable CUDA driver and CUPTI here (run it to see why)");
        }
        usable
    };
    let mut env: Vec<(&str, OsString)> = Vec::new();
    let mut nvml_lib = None;
    let _sim = if on_gpu {
        eprintln!("gpuprof: demo: profiling the workload on this machine's GPU");
        None
    } else {
        let sim = sim_stack(&dir)?;
        let chip = args.chip.unwrap_or(SimChip::Gh100);
        eprintln!(
            "gpuprof: demo: {}the workload runs on the simulated {} (tests/sim: driver, \
             CUPTI, cuBLAS, cuBLASLt), through the real injection path",
            if args.sim || args.chip.is_some() {
                ""
            } else {
                "no usable GPU here: "
            },
            chip.gpu()
        );
        // Both the program's simulated driver and the collector's simulated NVML.
        std::env::set_var("SIMCUDA_CHIP", chip.name());
        // The collector reads the simulated NVML, which learns what the simulated
        // driver ran from files in the stack's directory (`SIMCUDA_TELEMETRY_DIR`, read
        // by both libraries: set here before any thread starts).
        let telemetry = sim.dir.join(TELEMETRY);
        std::fs::create_dir(&telemetry)
            .with_context(|| format!("cannot create {}", telemetry.display()))?;
        std::env::set_var("SIMCUDA_TELEMETRY_DIR", &telemetry);
        nvml_lib = Some(sim.dir.join("libnvidia-ml.so.1"));
        // The profiled program (and only it) gets these.
        env.push(("LD_LIBRARY_PATH", sim.dir.clone().into()));
        env.push((wire::env::CUPTI_LIB, sim.dir.join("libcupti.so.13").into()));
        env.push((SIM_HOST_LIBRARY, sim_host_library(&dir)?.into()));
        Some(sim)
    };
    // A short run, whose kernel rows should all be complete. On the simulated GPU every
    // measured launch gets every counter (CUPTI replays each measured kernel once per
    // pass group); GPUPROF_REPLAY=none undoes it. On a real GPU CUPTI gives a replayed
    // kernel no timestamps (docs/ARCHITECTURE.md), so instead every launch is measured,
    // the groups rotating, whatever the time it takes.
    if std::env::var_os(wire::env::REPLAY).is_none() {
        if on_gpu {
            for (var, value) in [
                ("GPUPROF_COUNTER_LAUNCHES", "0"),
                ("GPUPROF_COUNTER_BUDGET", "100"),
            ] {
                if std::env::var_os(var).is_none() {
                    env.push((var, value.into()));
                }
            }
        } else {
            env.push((wire::env::REPLAY, "kernel".into()));
        }
    }
    // Checked (and made) before anything runs; `record` accepts it empty.
    let (out, _) = session_dirs::make_out_dir(args.output.as_deref())?;
    let mut command = vec![workload.into_os_string()];
    command.extend(args.workload_args.iter().cloned());
    let mut args = env.into_iter().fold(
        record::RecordArgs::new(Some(out.clone()), command),
        |args, (k, v)| args.env(k, v),
    );
    if let Some(lib) = nvml_lib {
        args = args.nvml_lib(lib);
    }
    let code = record::record(&args)?;
    if code != ExitCode::SUCCESS {
        eprintln!("gpuprof: demo: the workload failed; no roofline or trace written");
        return Ok(code);
    }
    roofline::run(&roofline::Args::new(out.clone()))?;
    trace::run(&trace::Args::new(out.clone()))?;
    eprintln!(
        "gpuprof: demo: everything is in {}: gpuprof report {} [--format csv|json]",
        out.display(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
