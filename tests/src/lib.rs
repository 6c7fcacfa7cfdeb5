//! Shared helpers for gpuprof's integration tests.
//!
//! The tests in `tests/tests/it/cupti/nvidia_libraries.rs` run against NVIDIA's real
//! CUPTI and nvperf libraries and headers, taken from the pinned NVIDIA wheels that
//! `python3 scripts/nvidia-wheels.py fetch` downloads into `target/nvidia/` and
//! describes in `target/nvidia/manifest.json`. No GPU and no driver are needed.
//!
//! A missing manifest is a failure, never a skip: every helper here panics with a
//! message telling how to fetch the wheels.

mod artifacts;
mod collector;
mod driver_workload;
mod duckdb;
mod http;
mod injected;
mod live_metrics;
mod own_process;
mod perfetto;
pub mod pricing;
mod prometheus;
mod report;
mod sim_command;
mod sim_env;
mod skip;
mod timed;

pub use artifacts::{artifact, compile_c, stub_libcuda, target_profile_dir};
pub use collector::{
    clean_env, dead_pid, gpuprof_command, record_on_sim, record_session_on_sim, shm_dirs_of,
    unprofiled_lines, unprofiled_pids, Scratch,
};
pub use driver_workload::{DRIVER_WORKLOAD_MODEL, DRIVER_WORKLOAD_STDOUT};
pub use duckdb::{duckdb, sql_blocks};
pub use http::{free_port, http_get, url_encode};
pub use injected::{
    cudarc_gemms, gemm_linked_client, kernels_in_order, plans, ring_files, run_cudarc_injected,
    run_injected, run_injected_with_args, run_injected_within, statuses, strings, Injection,
    CUDARC_LLM_STDOUT, RUN_LIMIT, WAIT_VALUE_STDOUT,
};
pub use live_metrics::{
    check_against_report, record_serving, record_serving_with, wait_for_final, Sample,
};
pub use own_process::{harness_name, in_own_process, running_binary};
pub use perfetto::{read_perfetto_trace, slices_per_track, track_names};
pub use prometheus::{prometheus_binary, Prometheus};
pub use report::{
    class_key, cudarc_llm_calls, decode_shapes, fitted_bytes_by_class, kernel_calls,
    record_cudarc_llm, record_cudarc_llm_with, report_json, report_text, session_records,
};
pub use sim_command::SimCommand;
pub use sim_env::{
    nvidia_extra, nvtx_library, sim_cupti, sim_lib_dir, venv_python, venv_python_of,
};
pub use skip::skip;
pub use timed::{Finished, TimedChild};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

/// Environment variable naming the directory that holds `manifest.json`.
pub const NVIDIA_DIR_ENV: &str = "GPUPROF_NVIDIA_DIR";

/// What to run when the NVIDIA wheels are missing.
pub const FETCH_COMMAND: &str = "python3 scripts/nvidia-wheels.py fetch";

/// One CUPTI release of the manifest: where its library and headers are.
#[derive(Debug, Clone, Deserialize)]
pub struct NvidiaRelease {
    /// `major.minor`, e.g. "13.4"; matches `cupti_sys::records::Release::name`.
    pub release: String,
    /// Full version of the CUPTI wheel, e.g. "13.4.92".
    pub cupti_version: String,
    /// Full version of the CUDA runtime wheel whose headers go with it.
    pub runtime_version: String,
    /// CUPTI's include directory (`cupti.h`, `cupti_activity.h`, ...).
    pub cupti_include: PathBuf,
    /// The CUDA runtime's include directory (`cuda.h`, ...).
    pub cuda_include: PathBuf,
    /// Every `-I` directory needed to compile against CUPTI's headers.
    pub include_dirs: Vec<PathBuf>,
    /// The directory holding the libraries.
    pub lib_dir: PathBuf,
    /// The real `libcupti.so.12` / `libcupti.so.13`.
    pub libcupti: PathBuf,
    /// The real `libnvperf_host.so`.
    pub libnvperf_host: PathBuf,
}

/// The directory with the fetched wheels: `$GPUPROF_NVIDIA_DIR`, else
/// `<workspace>/target/nvidia`.
pub fn nvidia_dir() -> PathBuf {
    match std::env::var_os(NVIDIA_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("target")
            .join("nvidia"),
    }
}

/// The path of `manifest.json`.
pub fn manifest_path() -> PathBuf {
    nvidia_dir().join("manifest.json")
}

/// The manifest's releases, oldest first, read once per process.
///
/// Panics, telling to run [`FETCH_COMMAND`], when the manifest or any file it
/// names is missing or unreadable.
pub fn manifest() -> &'static [NvidiaRelease] {
    static MANIFEST: OnceLock<Vec<NvidiaRelease>> = OnceLock::new();
    MANIFEST.get_or_init(|| load_manifest(&manifest_path()))
}

/// The manifest entry of `release` ("13.4"). Panics if there is none.
pub fn manifest_release(release: &str) -> &'static NvidiaRelease {
    manifest()
        .iter()
        .find(|r| r.release == release)
        .unwrap_or_else(|| panic!("release {release} is not in {}", manifest_path().display()))
}

fn load_manifest(path: &Path) -> Vec<NvidiaRelease> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "cannot read the NVIDIA wheel manifest {}: {e}.\n\
             These tests need NVIDIA's real CUPTI libraries and headers. Run\n    {FETCH_COMMAND}\n\
             from the workspace root (or set {NVIDIA_DIR_ENV} to a directory holding manifest.json).",
            path.display()
        )
    });
    let releases: Vec<NvidiaRelease> = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{} is not a valid manifest ({e}); re-run `{FETCH_COMMAND}`",
            path.display()
        )
    });
    assert!(
        !releases.is_empty(),
        "{} lists no release; re-run `{FETCH_COMMAND}`",
        path.display()
    );
    for r in &releases {
        let files = [
            &r.libcupti,
            &r.libnvperf_host,
            &r.cupti_include,
            &r.cuda_include,
            &r.lib_dir,
        ];
        for f in files.into_iter().chain(&r.include_dirs) {
            assert!(
                f.exists(),
                "{} (release {}) names {}, which does not exist; re-run `{FETCH_COMMAND}`",
                path.display(),
                r.release,
                f.display()
            );
        }
    }
    releases
}

/// `(major, minor)` of a release name such as "13.4". Panics on anything else.
pub fn major_minor(release: &str) -> (u32, u32) {
    let parse = || {
        let (a, b) = release.split_once('.')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    parse().unwrap_or_else(|| panic!("release name {release:?} is not major.minor"))
}

/// Whether CUPTI `release` ("12.9", "13.4") is a 12.x one: `libcupti.so.12`, and the
/// record layouts, error codes and NVTX records of CUDA 12.
pub fn cupti_12x(release: &str) -> bool {
    release.starts_with("12.")
}

/// The major version of CUPTI `release`, as in its soname: 12 or 13.
pub fn cupti_major(release: &str) -> u32 {
    if cupti_12x(release) {
        12
    } else {
        13
    }
}

/// The soname of CUPTI `release`: `libcupti.so.12` or `libcupti.so.13`.
pub fn cupti_soname(release: &str) -> String {
    format!("libcupti.so.{}", cupti_major(release))
}

/// CUPTI releases whose Profiler Host API NVIDIA's library runs without a driver.
pub const HOST_API_OFFLINE: [&str; 5] = ["12.6", "12.8", "12.9", "13.0", "13.1"];

/// NVIDIA's libcupti the simulated CUPTI impersonating `release` takes its Profiler
/// Host API answers from (`SIMCUPTI_HOST_LIBRARY`): that release's where it runs
/// offline, else 13.1's, the newest that does.
pub fn sim_host_library(release: &str) -> &'static Path {
    let host = if HOST_API_OFFLINE.contains(&release) {
        release
    } else {
        "13.1"
    };
    &manifest_release(host).libcupti
}
