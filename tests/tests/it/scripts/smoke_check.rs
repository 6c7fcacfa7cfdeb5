//! `scripts/smoke_check.py`, the invariant checker of `scripts/gpu-smoke.sh`, on a real
//! report: `gpuprof record` of the cudarc client on the simulated stack (counters on
//! every launch, as gpu-smoke.sh runs it), then the same report with one invariant
//! broken per case, each of which must fail with its exact line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use gpuprof_tests::{
    artifact, gpuprof_command, record_on_sim, Finished, Scratch, TimedChild, RUN_LIMIT,
};

/// The cudarc client's summary with its default shape.
const WORKLOAD_LINE: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs";

const PASS_LINE: &str =
    "PASS: all 6 invariants hold (107 kernels, 60 launches, 47 GEMMs, 4 decode steps)";

fn smoke_check_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/smoke_check.py")
}

/// The JSON report of one recording, made once per test process.
fn sim_report() -> &'static Value {
    static REPORT: OnceLock<Value> = OnceLock::new();
    REPORT.get_or_init(|| {
        let scratch = Scratch::new("gpu-smoke-record");
        let session = scratch.join("session");
        let mut cmd = record_on_sim("13.4");
        cmd.arg("-o")
            .arg(&session)
            .arg("--")
            .arg(artifact("cudarc-llm"))
            .env("GPUPROF_REPLAY", "kernel")
            .env("GPUPROF_COUNTER_LAUNCHES", "0");
        let rec = TimedChild::spawn(cmd, RUN_LIMIT).wait();
        assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
        assert!(
            rec.stdout.starts_with(&format!("{WORKLOAD_LINE}\n")),
            "{}",
            rec.stdout
        );
        let mut cmd = gpuprof_command();
        cmd.args(["report", "--format", "json"]).arg(&session);
        let rep = TimedChild::spawn(cmd, RUN_LIMIT).wait();
        assert_eq!(rep.status.code(), Some(0), "{}", rep.stderr);
        serde_json::from_str(&rep.stdout).expect("the report is JSON")
    })
}

/// smoke_check.py on `report` (written to a scratch file) and the workload's line.
fn smoke_check(name: &str, report: &Value) -> Finished {
    let scratch = Scratch::new(name);
    let file = scratch.join("report.json");
    std::fs::write(&file, serde_json::to_vec_pretty(report).unwrap()).unwrap();
    let mut cmd = Command::new("python3");
    cmd.env_remove("LD_LIBRARY_PATH")
        .arg(smoke_check_script())
        .arg(&file)
        .args(["--workload-line", WORKLOAD_LINE]);
    TimedChild::spawn(cmd, RUN_LIMIT).wait()
}

/// A broken report must fail exactly `invariant`, with exactly the line `expected`.
fn assert_fails(out: &Finished, invariant: &str, expected: &str) {
    assert_eq!(out.status.code(), Some(1), "{}{}", out.stdout, out.stderr);
    let fails: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAIL "))
        .collect();
    assert_eq!(fails, vec![expected], "{}", out.stdout);
    assert!(
        out.stdout
            .ends_with(&format!("FAILED: 1 of 6 invariants: {invariant}\n")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("PASS"), "{}", out.stdout);
}

/// As smoke_check.py prints a percentage: two decimals, trailing zeros dropped.
fn pct(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

#[test]
fn sim_recording_passes_every_invariant() {
    let out = smoke_check("gpu-smoke-pass", sim_report());
    assert_eq!(out.status.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.ends_with(&format!("{PASS_LINE}\n")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.starts_with(&format!(
            "workload: {WORKLOAD_LINE}\n\
             tolerances: GEMM hw vs model FLOPs 10%; MFU / MBU <= 100% + 5%; counters kernel\n"
        )),
        "{}",
        out.stdout
    );
    for invariant in [
        "no-drops",
        "kernel-count",
        "nvtx-ranges",
        "gemm-flops",
        "counters",
        "mfu-mbu",
    ] {
        assert!(
            out.stdout.contains(&format!("\nok   {invariant}: ")),
            "{invariant}: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains(
            "\nok   kernel-count: 107 kernels >= 60 launches + 47 GEMMs; 47 GEMM calls seen; \
             60 kernels outside GEMM calls, 47 inside; 60 cudaLaunchKernel calls\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("\nok   nvtx-ranges: prefill x1 (23 kernels), decode x4 (84 kernels)\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("FAIL"), "{}", out.stdout);
}

/// A kernel no range holds (its launch did not join it) fails nvtx-ranges; runtime
/// launches not recorded as launches fail kernel-count.
#[test]
fn a_kernel_outside_the_ranges_and_missing_runtime_launches_fail() {
    let mut r = sim_report().clone();
    let decode = r["nvtx_ranges"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|x| x["name"] == "decode")
        .unwrap();
    decode["kernels"] = 83.into();
    let out = smoke_check("gpu-smoke-ranges", &r);
    assert_fails(
        &out,
        "nvtx-ranges",
        "FAIL nvtx-ranges: kernels in prefill and decode: expected 107 (kernel_count), got 106",
    );

    let mut r = sim_report().clone();
    for row in r["api_calls"]["by_thread"].as_array_mut().unwrap() {
        if row["function"] == "cudaLaunchKernel" {
            row["function"] = "cuLaunchKernel".into();
        }
    }
    let out = smoke_check("gpu-smoke-runtime", &r);
    assert_fails(
        &out,
        "kernel-count",
        "FAIL kernel-count: cudaLaunchKernel calls (api_calls): expected 60, got 0",
    );
}

#[test]
fn dropped_records_fail_no_drops() {
    let mut r = sim_report().clone();
    let source = r["dropped"][0]["source"].as_str().unwrap().to_string();
    r["dropped"][0]["records"] = 5.into();
    let out = smoke_check("gpu-smoke-drops", &r);
    assert_fails(
        &out,
        "no-drops",
        &format!("FAIL no-drops: records dropped from {source}: expected 0, got 5"),
    );
}

#[test]
fn gemm_hw_flops_half_again_fail_gemm_flops() {
    let mut r = sim_report().clone();
    let rows = r["roofline"]["kernels"].as_array_mut().unwrap();
    // A GEMM kernel whose every launch is a GEMM call's only launch, with both FLOPs.
    let row = rows
        .iter_mut()
        .find(|k| {
            k["gemm_launches"].as_u64() > Some(0)
                && k["gemm_launches"] == k["calls"]
                && k["gemm_part_launches"] == 0
                && k["model_flops"].is_f64()
                && k["hw_flops"].is_f64()
        })
        .expect("a GEMM row with model and hw FLOPs");
    let model = row["model_flops"].as_f64().unwrap();
    let hw = row["hw_flops"].as_f64().unwrap() * 1.5;
    assert_eq!(hw.fract(), 0.0, "the sim's FLOP counts are whole numbers");
    row["hw_flops"] = hw.into();
    let name = row["name"].as_str().unwrap().to_string();
    let err = (hw - model).abs() / model * 100.0;
    assert!(err > 10.0);
    let out = smoke_check("gpu-smoke-flops", &r);
    assert_fails(
        &out,
        "gemm-flops",
        &format!(
            "FAIL gemm-flops: {name}: |hw - model| / model expected <= 10%, got {} \
             (hw {hw:.0}, model {model:.0} FLOPs)",
            pct(err)
        ),
    );
}

#[test]
fn mfu_above_peak_fails_mfu_mbu() {
    let mut r = sim_report().clone();
    let row = &mut r["roofline"]["kernels"][0];
    let name = row["name"].as_str().unwrap().to_string();
    // 1.3 of peak: the report gives percentages.
    row["mfu_pct"] = 130.0.into();
    let out = smoke_check("gpu-smoke-mfu", &r);
    assert_fails(
        &out,
        "mfu-mbu",
        &format!("FAIL mfu-mbu: kernel {name}: MFU expected <= 105% (100% + 5% slack), got 130%"),
    );
}

/// The run's HFU (hardware FLOPs) is held to the same ceiling as its MFU.
#[test]
fn hfu_above_peak_fails_mfu_mbu() {
    let mut r = sim_report().clone();
    assert!(
        r["roofline"]["run"]["hfu_pct"].is_number(),
        "the sim run has HFU"
    );
    r["roofline"]["run"]["hfu_pct"] = 112.5.into();
    let out = smoke_check("gpu-smoke-hfu", &r);
    assert_fails(
        &out,
        "mfu-mbu",
        "FAIL mfu-mbu: run: HFU expected <= 105% (100% + 5% slack), got 112.5%",
    );
}

#[test]
fn missing_decode_range_fails_nvtx_ranges() {
    let mut r = sim_report().clone();
    let ranges = r["nvtx_ranges"].as_array_mut().unwrap();
    let before = ranges.len();
    ranges.retain(|x| x["name"] != "decode");
    assert_eq!(ranges.len(), before - 1);
    let out = smoke_check("gpu-smoke-ranges", &r);
    assert_fails(
        &out,
        "nvtx-ranges",
        "FAIL nvtx-ranges: range \"decode\": expected 4 occurrences, got 0 (not in nvtx_ranges)",
    );
}
