//! CUDA 12.6 GA's CUPTI (the 12.6.37 wheel) answers API version 24, as the pinned
//! 12.6 Update 2 (12.6.80) does, and has the Profiler Host API and PM sampling but no
//! range profiler (no `cuptiRangeProfiler*` export). The planner that
//! `libgpuprof.so` runs at a device's first context, `doctor` and `metrics --cupti`
//! (all `cupti::plan::plan`) say so from the library's symbols, instead of planning
//! groups that the program would then find NOT_SUPPORTED; PM sampling plans.

use std::path::PathBuf;
use std::process::Output;

use gpuprof_tests::{gpuprof_command, nvidia_extra};

fn library() -> PathBuf {
    nvidia_extra("cupti_12_6_ga")
        .join("lib")
        .join("libcupti.so.12")
}

fn metrics(args: &[&str]) -> Output {
    gpuprof_command()
        .arg("metrics")
        .arg("--cupti")
        .arg(library())
        .args(["--chip", "GH100"])
        .args(args)
        .output()
        .expect("run gpuprof metrics")
}

#[test]
fn cuda_12_6_ga_has_no_range_profiler_and_gpuprof_says_so() {
    let symbols = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library())
        .output()
        .expect("nm");
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    assert!(
        !symbols.contains(" cuptiRangeProfiler"),
        "a range profiler export"
    );
    assert!(symbols.contains(" cuptiPmSamplingEnable"), "no PM sampling");

    let o = metrics(&[]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "gpuprof: error: this CUPTI has no range profiler (cuptiRangeProfiler*, from CUPTI \
         12.6 Update 1 on; 12.6 GA lacks it), which per-kernel counters need: use a newer \
         CUPTI, or GPUPROF_COUNTERS=sampling (PM sampling, which this CUPTI has)\n"
    );
    let o = metrics(&["--replay", "kernel"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");

    let o = metrics(&["--sampling", "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(plan["mode"], "sampling");
    assert_eq!(plan["total_passes"], 1);
}
