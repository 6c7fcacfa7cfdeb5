//! The injection entry points of the real `libgpuprof.so`: `InitializeInjection` as
//! the CUDA driver calls it, and the `LD_PRELOAD` constructor. Start-up is checked
//! against NVIDIA's real CUPTI libraries (no GPU needed: the releases used here
//! answer `cuptiGetVersion` offline) and a stand-in `libcuda.so.1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gpuprof_tests::{artifact, clean_env, compile_c, manifest_release};

fn libgpuprof() -> PathBuf {
    artifact("libgpuprof.so")
}

fn host() -> PathBuf {
    compile_c("inject_host.c", "inject_host", &[])
}

fn stub_libcuda() -> PathBuf {
    gpuprof_tests::stub_libcuda().1
}

/// Runs the host with a clean GPUPROF_* / CUDA environment plus `env`.
fn run_host(driver: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(host());
    cmd.arg(libgpuprof());
    if let Some(d) = driver {
        cmd.arg(d);
    }
    // cargo puts target/<profile> (which holds the simulated libcupti.so) on
    // LD_LIBRARY_PATH for tests; the host must see only what a test gives it.
    clean_env(&mut cmd);
    cmd.env("GPUPROF_NVIDIA_DIR", gpuprof_tests::nvidia_dir());
    cmd.envs(env.iter().copied());
    cmd.output().expect("run inject_host")
}

fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Real CUPTI loads and answers its version against the stand-in driver, but cannot
/// attach to it (the stand-in has no `cuGetExportTable`), so tracing is refused with one
/// warning: the start-up path a broken driver installation takes. Tracing itself is
/// tested on the simulated stack (`inject/tracing.rs`).
const REFUSED_13: &str =
    "gpuprof: cuptiSubscribe failed: CUPTI_ERROR_UNKNOWN (999); profiling is off, the program runs unprofiled";
const REFUSED_12: &str =
    "gpuprof: cuptiSubscribe failed: CUPTI_ERROR_NOT_INITIALIZED (15); profiling is off, the program runs unprofiled";

#[test]
fn starts_once_and_reports_the_cupti_it_loaded() {
    let cupti = &manifest_release("13.0").libcupti;
    let out = run_host(
        Some(&stub_libcuda()),
        &[
            ("GPUPROF_LOG", "info"),
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
            ("STUB_CUDA_DRIVER_VERSION", "13000"),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    assert_eq!(
        stderr_lines(&out),
        vec![
            format!(
                "gpuprof: CUPTI 13.0.1 (API 130001) from {} (GPUPROF_CUPTI_LIB); record layouts of CUPTI 13.0; \
                 driver supports CUDA 13.0",
                cupti.display()
            ),
            REFUSED_13.to_string()
        ]
    );
    assert!(out.status.success());
}

#[test]
fn cuda12_cupti_runs_on_a_cuda13_driver() {
    let cupti = &manifest_release("12.9").libcupti;
    let out = run_host(
        Some(&stub_libcuda()),
        &[
            ("GPUPROF_LOG", "info"),
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
        ],
    );
    assert_eq!(
        stderr_lines(&out),
        vec![
            format!(
                "gpuprof: CUPTI 12.9 (API 28) from {} (GPUPROF_CUPTI_LIB); record layouts of CUPTI 12.9; \
                 driver supports CUDA 13.0",
                cupti.display()
            ),
            REFUSED_12.to_string()
        ]
    );
}

#[test]
fn silent_at_the_default_log_level() {
    let cupti = &manifest_release("13.1").libcupti;
    let out = run_host(
        Some(&stub_libcuda()),
        &[("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap())],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    // Silent but for the one warning that tracing is off (see REFUSED_13).
    assert_eq!(stderr_lines(&out), vec![REFUSED_13.to_string()]);
}

#[test]
fn cupti_newer_than_the_driver_is_refused_with_one_warning() {
    let cupti = &manifest_release("13.0").libcupti;
    let out = run_host(
        Some(&stub_libcuda()),
        &[
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
            ("STUB_CUDA_DRIVER_VERSION", "12080"),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    assert_eq!(
        stderr_lines(&out),
        vec![format!(
            "gpuprof: GPUPROF_CUPTI_LIB={}: not loaded: a CUPTI for CUDA 13 (libcupti.so.13) needs a \
             CUDA 13 driver; the loaded driver supports CUDA 12.8; profiling is off, the program \
             runs unprofiled",
            cupti.display()
        )]
    );
}

#[test]
fn missing_explicit_library_is_one_warning_and_the_host_continues() {
    let out = run_host(
        Some(&stub_libcuda()),
        &[("GPUPROF_CUPTI_LIB", "/nonexistent/libcupti.so.13")],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    assert_eq!(
        stderr_lines(&out),
        vec!["gpuprof: GPUPROF_CUPTI_LIB=/nonexistent/libcupti.so.13: cannot load: /nonexistent/libcupti.so.13: \
              cannot open shared object file: No such file or directory; profiling is off, the program runs \
              unprofiled"
            .to_string()]
    );
    assert!(out.status.success());
}

#[test]
fn no_cupti_anywhere_names_every_path_tried() {
    let out = run_host(Some(&stub_libcuda()), &[("CUDA_HOME", "/nonexistent-cuda")]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0],
        "gpuprof: no usable CUPTI library found; tried libcupti.so.13 (loader search path): cannot load: \
         libcupti.so.13: cannot open shared object file: No such file or directory; libcupti.so.12 (loader \
         search path): cannot load: libcupti.so.12: cannot open shared object file: No such file or directory; \
         libcupti.so (loader search path): cannot load: libcupti.so: cannot open shared object file: No such \
         file or directory; profiling is off, the program runs unprofiled"
    );
}

#[test]
fn without_a_driver_cupti_is_not_asked_its_version() {
    // CUPTI 13.2 overflows its stack in cuptiGetVersion without libcuda.so.1; the
    // profiler must not call it then. (Injection always has a driver loaded; this
    // guards every other caller.)
    let cupti = &manifest_release("13.2").libcupti;
    let out = run_host(None, &[("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap())]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    assert_eq!(
        stderr_lines(&out),
        vec![format!(
            "gpuprof: GPUPROF_CUPTI_LIB={}: not asked for its version: no CUDA driver (libcuda.so.1) is loaded \
             in this process, and CUPTI 13.2+ cannot answer without one; profiling is off, the program runs \
             unprofiled",
            cupti.display()
        )]
    );
}

#[test]
fn invalid_settings_are_named_with_the_value_used() {
    let cupti = &manifest_release("13.0").libcupti;
    let out = run_host(
        Some(&stub_libcuda()),
        &[
            ("GPUPROF_LOG", "chatty"),
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
        ],
    );
    assert_eq!(
        stderr_lines(&out),
        vec![
            "gpuprof: GPUPROF_LOG=\"chatty\" is not one of off, error, warn, info, debug; using warn".to_string(),
            REFUSED_13.to_string()
        ]
    );
}

#[test]
fn disabled_by_configuration_loads_nothing() {
    let out = run_host(
        Some(&stub_libcuda()),
        &[("GPUPROF_DISABLE", "1"), ("GPUPROF_LOG", "info")],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "InitializeInjection=1,1\n"
    );
    assert_eq!(
        stderr_lines(&out),
        vec![
            "gpuprof: GPUPROF_DISABLE=1; profiling is off, the program runs unprofiled".to_string()
        ]
    );
}

fn preloaded_env(extra: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("/usr/bin/env");
    clean_env(&mut cmd);
    cmd.env("LD_PRELOAD", libgpuprof());
    cmd.envs(extra.iter().copied());
    cmd.output().expect("run env")
}

fn env_value(o: &Output, key: &str) -> Option<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
}

#[test]
fn ld_preload_arranges_injection_at_cuinit() {
    let out = preloaded_env(&[]);
    assert!(out.status.success());
    assert_eq!(
        env_value(&out, "CUDA_INJECTION64_PATH"),
        Some(libgpuprof().to_str().unwrap().to_string())
    );
    assert_eq!(stderr_lines(&out), Vec::<String>::new());
}

#[test]
fn ld_preload_leaves_another_injected_tool_alone() {
    let out = preloaded_env(&[("CUDA_INJECTION64_PATH", "/opt/other/libtool.so")]);
    assert!(out.status.success());
    assert_eq!(
        env_value(&out, "CUDA_INJECTION64_PATH"),
        Some("/opt/other/libtool.so".to_string())
    );
    assert_eq!(
        stderr_lines(&out),
        vec!["gpuprof: CUDA_INJECTION64_PATH=/opt/other/libtool.so names another injection library; gpuprof \
              stays off (one injected tool per process)"
            .to_string()]
    );
}

#[test]
fn ld_preload_respects_gpuprof_disable() {
    let out = preloaded_env(&[("GPUPROF_DISABLE", "1")]);
    assert_eq!(env_value(&out, "CUDA_INJECTION64_PATH"), None);
}

#[test]
fn only_the_injection_entry_point_is_exported() {
    let data = std::fs::read(libgpuprof()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSymbol};
    let mut exported: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_definition() && s.is_global())
        .map(|s| s.name().unwrap().to_string())
        .collect();
    exported.sort();
    assert_eq!(exported, vec!["InitializeInjection".to_string()]);
}
