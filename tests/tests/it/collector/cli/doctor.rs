//! `gpuprof --version` and `gpuprof doctor`, run as a user would, against NVIDIA's
//! real CUPTI libraries and a stand-in libcuda.so.1.

use std::path::PathBuf;
use std::process::{Command, Output};

use gpuprof_tests::{artifact, clean_env, manifest_release, stub_libcuda};

fn gpuprof() -> PathBuf {
    artifact("gpuprof")
}

fn doctor(env: &[(&str, &str)], driver: bool) -> Output {
    let mut cmd = Command::new(gpuprof());
    cmd.arg("doctor");
    clean_env(&mut cmd);
    cmd.env("CUDA_HOME", "/nonexistent-cuda");
    if driver {
        cmd.env("LD_LIBRARY_PATH", stub_libcuda().0);
    }
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn version_names_the_record_protocol() {
    let out = Command::new(gpuprof()).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "gpuprof {} (record protocol {})\n",
            env!("CARGO_PKG_VERSION"),
            wire::PROTOCOL_VERSION
        )
    );
}

#[test]
fn doctor_picks_the_explicit_library_and_says_why_others_fail() {
    let cupti = &manifest_release("13.1").libcupti;
    let out = doctor(
        &[
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
            ("STUB_CUDA_DRIVER_VERSION", "13020"),
        ],
        true,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        line_with(&text, "CUDA driver:").ends_with("libcuda.so.1 (supports CUDA 13.2)"),
        "{text}"
    );
    assert_eq!(
        line_with(&text, "1. "),
        format!(
            "   1. {p} (GPUPROF_CUPTI_LIB): usable, CUPTI 13.1.1 (API 130101) at {p}, record layouts of CUPTI 13.1  <- \
             would be used",
            p = cupti.display()
        )
    );
    assert_eq!(
        line_with(&text, "libcupti.so.12 (loader"),
        "   3. libcupti.so.12 (loader search path): rejected: cannot load: libcupti.so.12: cannot open shared \
         object file: No such file or directory"
    );
    assert_eq!(
        line_with(&text, "record layouts in this build"),
        "CUPTI releases with record layouts in this build: 12.4, 12.6, 12.8, 12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5"
    );
    // The stand-in libcuda.so.1 cannot be initialised (no cuInit): the counters are
    // not checked, and doctor says why.
    assert_eq!(
        line_with(&text, "  not checked"),
        "  not checked: the CUDA driver lacks cuInit or cuDeviceGetCount"
    );
}

#[test]
fn doctor_exits_1_when_the_explicit_library_is_unusable() {
    let cupti = &manifest_release("13.0").libcupti;
    let out = doctor(
        &[
            ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
            ("STUB_CUDA_DRIVER_VERSION", "12040"),
        ],
        true,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        line_with(&text, "1. ").ends_with(
            "(GPUPROF_CUPTI_LIB): rejected: not loaded: a CUPTI for CUDA 13 (libcupti.so.13) needs a CUDA \
             13 driver; the loaded driver supports CUDA 12.4"
        ),
        "{text}"
    );
    assert!(text.contains(
        "GPUPROF_CUPTI_LIB names a library that cannot be used: profiling would stay off."
    ));
}

#[test]
fn doctor_survives_a_library_that_crashes() {
    // CUPTI 13.2's cuptiGetVersion overflows its stack when no real driver backs it
    // (the Rust runtime's guard page handler turns that into SIGABRT); doctor probes
    // in a child process and reports the crash instead of dying.
    let cupti = &manifest_release("13.2").libcupti;
    let out = doctor(&[("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap())], true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        line_with(&text, "1. ").ends_with(
            "(GPUPROF_CUPTI_LIB): rejected: the library crashed the probe process (SIGABRT)"
        ),
        "{text}"
    );
}

#[test]
fn doctor_without_a_driver_says_so() {
    let out = doctor(&[], false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        line_with(&text, "CUDA driver:"),
        "CUDA driver: not available (cannot load libcuda.so.1: libcuda.so.1: cannot open shared object file: No \
         such file or directory)"
    );
    assert!(
        text.contains("No usable CUPTI: profiling would stay off"),
        "{text}"
    );
}

/// With a driver and GPUs (the simulated H100, and an A100: SIMCUDA_CC=8.0), doctor
/// plans each GPU's counters through the chosen CUPTI as libgpuprof.so would: the
/// default pass groups and the PM sampling set, with the trigger the chip supports,
/// or the reason counters would be off.
#[test]
fn doctor_plans_each_gpus_counters_with_the_chosen_cupti() {
    let sim = gpuprof_tests::sim_lib_dir();
    let cupti = gpuprof_tests::sim_cupti(13);
    for (cc, want) in [
        (
            "9.0",
            "  GPU 0 GH100: per-kernel counters ready (5 pass groups, one pass each); PM \
             sampling ready (6 metrics, GPU time trigger)",
        ),
        // GA100's six default groups, each one pass for NVIDIA's 13.1 host API (which
        // the simulated CUPTI asks).
        (
            "8.0",
            "  GPU 0 GA100: per-kernel counters ready (6 pass groups, one pass each); PM \
             sampling ready (6 metrics, SYSCLK cycles trigger)",
        ),
    ] {
        let host = gpuprof_tests::sim_host_library("13.4");
        let out = doctor(
            &[
                ("LD_LIBRARY_PATH", sim.to_str().unwrap()),
                ("GPUPROF_CUPTI_LIB", cupti.to_str().unwrap()),
                ("SIMCUPTI_VERSION", "13.4"),
                ("SIMCUPTI_HOST_LIBRARY", host.to_str().unwrap()),
                ("SIMCUDA_CC", cc),
            ],
            false,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert_eq!(
            line_with(&text, "Counters with "),
            format!(
                "Counters with {}, planned as libgpuprof.so would:",
                cupti.display()
            )
        );
        assert_eq!(line_with(&text, "  GPU 0 "), want, "{text}");
    }
}
