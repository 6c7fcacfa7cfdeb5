//! Counter failures inside libgpuprof.so on the simulated CUDA stack (docs/ARCHITECTURE.md,
//! inject "Counters": "Any CUPTI error: one warning naming the call, `CounterStatus`,
//! counters off, tracing on"): a chip without a default metric set, a metric CUPTI
//! refuses, and the counters held by another tool. Each runs the cudarc client with
//! the profiler injected and a session directory but no collector (as
//! inject/counters.rs) and reads the ring back: the program's output is unchanged,
//! stderr is exactly one `gpuprof:` warning with the reason, every kernel is traced,
//! one `CounterStatus` holds the reason, no counter values, nothing dropped.
//!
//! The unsupported chip is GA102 (`SIMCUDA_CC=8.6`): the simulated CUPTI names
//! compute capability 7.0 GV100, which has no default set either, but the cudarc
//! client's BF16 GEMMs need 8.0 or newer (the simulated cuBLAS answers
//! `CUBLAS_STATUS_ARCH_MISMATCH` on 7.0 and 7.5, as the real one does), so it cannot
//! run there.

use std::process::Command;
use std::time::Duration;

use gpuprof_tests::{
    artifact, cudarc_llm_calls, gpuprof_command, kernel_calls, record_on_sim, ring_files, Finished,
    Injection, Scratch, SimCommand, TimedChild,
};
use wire::ring::RingReader;
use wire::{Kernel, Record};

const LIMIT: Duration = Duration::from_secs(120);
const STDOUT: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";
/// Kernels the cudarc client launches (inject/counters.rs, collector/collect/e2e_sessions.rs).
const KERNELS: usize = 107;

/// Reason for the chip without a default set (cupti/src/plan.rs, `PlanError`).
const NO_DEFAULT_GA102: &str = "gpuprof has no default metric set for chip GA102 (GPU 0); \
                                set GPUPROF_METRICS to choose metrics";
/// Reason for a metric CUPTI refuses (cupti/src/plan.rs `PlanError`, profiler.rs
/// `CallError`; CUPTI answers a refused metric with `CUPTI_ERROR_INVALID_PARAMETER` = 1,
/// found by adding the metrics one by one on a scratch host object).
const REFUSED_METRIC: &str = "CUPTI does not accept metric not_a_real_metric.sum on GH100 \
                              (GPU 0): cuptiProfilerHostConfigAddMetrics failed: \
                              CUPTI_ERROR_INVALID_PARAMETER (1)";
/// What a `CUPTI_ERROR_HARDWARE_BUSY` answer (26, "The performance monitoring hardware
/// is in use by other client", cupti_result.h) says after the call and the code.
const BUSY_EXPLAINED: &str = "the GPU's performance counters are held by another tool \
                              (DCGM: `dcgmi profile --pause`, or another profiler); kernels \
                              are recorded without counters";

/// Reason when another tool holds the counters and `call` says so.
fn counters_busy(call: &str) -> String {
    format!("{call} failed: CUPTI_ERROR_HARDWARE_BUSY (26): {BUSY_EXPLAINED}")
}

/// The one warning line a counter failure gives (counters.rs `fail`, log.rs); a busy
/// answer's reason already says that kernels are recorded.
fn warning(reason: &str) -> String {
    if reason.ends_with(BUSY_EXPLAINED) {
        format!("gpuprof: hardware counters are off: {reason}\n")
    } else {
        format!("gpuprof: hardware counters are off: {reason}; tracing continues\n")
    }
}

/// The cudarc client on the simulated stack (CUPTI 13.4), injected, with `env`; checks
/// it succeeded with its usual output and left one finished ring without drops.
fn run(name: &str, env: &[(&str, &str)]) -> (Finished, Vec<Record>) {
    let dir = Scratch::new(&format!("counter-failures-{name}"));
    let mut cmd = SimCommand::new(Command::new(artifact("cudarc-llm")))
        .cupti("13.4")
        .injected(Injection::Driver)
        .session_dir(dir.path())
        .command();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(
        out.status.success(),
        "{name}: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert_eq!(out.stdout, STDOUT, "{name}: the app's output is unchanged");
    let rings = ring_files(dir.path());
    assert_eq!(rings.len(), 1, "{name}: {rings:?}");
    let mut reader = RingReader::open(&rings[0]).expect("open ring");
    let mut records = Vec::new();
    while let Some(frame) = reader.try_read().expect("ring reads") {
        records.extend(wire::decode_batch(&frame).expect("frame decodes"));
    }
    assert!(reader.is_finished(), "{name}");
    let h = reader.header();
    assert_eq!(
        (h.dropped_records, h.dropped_frames),
        (0, 0),
        "{name}: no drops"
    );
    assert!(!records.iter().any(|r| matches!(r, Record::Dropped(_))));
    match records.last() {
        Some(Record::End(e)) => assert_eq!(e.records, records.len() as u64 - 1),
        other => panic!("{name}: last record is {other:?}"),
    }
    (out, records)
}

fn statuses(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterStatus(s) => Some(s.message.as_str()),
            _ => None,
        })
        .collect()
}

/// Chips of the `CounterPlan` records.
fn plan_chips(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterPlan(p) => Some(p.chip.as_str()),
            _ => None,
        })
        .collect()
}

fn counter_values(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::KernelCounters(_) | Record::CounterSample(_)))
        .count()
}

/// Each kernel's (name, grid, block), in execution order.
fn kernels(records: &[Record]) -> Vec<(String, [i32; 3], [i32; 3])> {
    let names: std::collections::HashMap<u32, &str> = records
        .iter()
        .filter_map(|r| match r {
            Record::String(s) => Some((s.id, s.text.as_str())),
            _ => None,
        })
        .collect();
    let mut k: Vec<&Kernel> = records
        .iter()
        .filter_map(|r| match r {
            Record::Kernel(x) => Some(x),
            _ => None,
        })
        .collect();
    k.sort_by_key(|k| k.start_ns);
    k.iter()
        .map(|k| (names[&k.name].to_string(), k.grid, k.block))
        .collect()
}

/// A failed run: exactly the one warning, the reason as the only `CounterStatus`, no
/// counter values, every kernel traced.
fn check_failed(name: &str, out: &Finished, records: &[Record], reason: &str) {
    assert_eq!(out.stderr, warning(reason), "{name}: stderr");
    assert_eq!(statuses(records), vec![reason], "{name}: CounterStatus");
    assert_eq!(counter_values(records), 0, "{name}: no counter values");
    assert_eq!(
        kernels(records).len(),
        KERNELS,
        "{name}: every kernel traced"
    );
}

/// A chip gpuprof has no default metric set for: counters are off before any CUPTI
/// profiling object exists; the kernels are those of a run with counters on the same
/// chip (`GPUPROF_METRICS` chosen).
#[test]
fn chip_without_default_set_leaves_tracing_on() {
    assert!(cupti::metrics::default_groups("GA102").is_none());
    let (out, records) = run("ga102", &[("SIMCUDA_CC", "8.6")]);
    check_failed("ga102", &out, &records, NO_DEFAULT_GA102);
    assert!(plan_chips(&records).is_empty(), "no plan");

    let (with, with_records) = run(
        "ga102-metrics",
        &[
            ("SIMCUDA_CC", "8.6"),
            ("GPUPROF_METRICS", "dram__bytes_read.sum"),
        ],
    );
    assert_eq!(
        with.stderr, "",
        "counters work on GA102 with chosen metrics"
    );
    assert_eq!(plan_chips(&with_records), vec!["GA102"]);
    assert!(statuses(&with_records).is_empty());
    assert_eq!(
        counter_values(&with_records),
        KERNELS,
        "every launch measured"
    );
    assert_eq!(
        kernels(&records),
        kernels(&with_records),
        "the same kernels as with counters"
    );
}

/// The same under `gpuprof record`: stderr has the one warning before the session
/// line, the summary's Counters section and `gpuprof report --format json`'s
/// `counters.statuses` hold the reason.
#[test]
fn chip_without_default_set_under_record_reaches_the_report() {
    let scratch = Scratch::new("counter-failures-record-ga102");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .env("SIMCUDA_CC", "8.6");
    let ended = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    // The program's output, then record's summary report.
    assert!(ended.stdout.starts_with(STDOUT), "{}", ended.stdout);
    assert_eq!(
        ended.stderr,
        format!(
            "{}gpuprof: session written to {o} (1 process, {KERNELS} kernels, 0 dropped); \
             gpuprof report {o}\n",
            warning(NO_DEFAULT_GA102),
            o = out.display(),
        )
    );

    let mut report = gpuprof_command();
    report.args(["report", "--format", "json"]).arg(&out);
    let r = TimedChild::spawn(report, LIMIT).wait();
    assert!(r.status.success(), "gpuprof report: {}", r.stderr);
    assert_eq!(r.stderr, "");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("report JSON");
    let pid = v["processes"][0]["pid"].as_u64().expect("pid");
    assert_eq!(
        v["counters"]["statuses"],
        serde_json::json!([{"pid": pid, "message": NO_DEFAULT_GA102}]),
        "{:#}",
        v["counters"]
    );
    assert_eq!(v["counters"]["plans"], serde_json::json!([]));
    assert!(
        ended
            .stdout
            .contains(&format!("\nCounters\n  pid {pid}: {NO_DEFAULT_GA102}\n")),
        "the summary names the reason: {}",
        ended.stdout
    );
    let dropped: u64 = v["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .map(|d| d["records"].as_u64().expect("records"))
        .sum();
    assert_eq!(dropped, 0);
    let calls: u64 = v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| k["calls"].as_u64().expect("calls"))
        .sum();
    assert_eq!(calls, KERNELS as u64, "every kernel in the report");
}

/// `GPUPROF_METRICS` names a metric CUPTI does not know: the warning names it and
/// CUPTI's error; no plan goes out.
#[test]
fn refused_metric_leaves_tracing_on() {
    let (out, records) = run(
        "refused-metric",
        &[(
            "GPUPROF_METRICS",
            "dram__bytes_read.sum,not_a_real_metric.sum",
        )],
    );
    check_failed("refused-metric", &out, &records, REFUSED_METRIC);
    assert!(plan_chips(&records).is_empty(), "no plan");
}

/// Another tool holds the GPU's counters (`SIMCUPTI_COUNTERS_BUSY=1`: the simulated
/// `cuptiRangeProfilerEnable` answers `CUPTI_ERROR_HARDWARE_BUSY`): the plan was made
/// (host side, before the context's range profiler), then counters go off, saying
/// who holds them and what to do.
#[test]
fn counters_held_by_another_tool_leave_tracing_on() {
    let (out, records) = run("busy", &[("SIMCUPTI_COUNTERS_BUSY", "1")]);
    check_failed(
        "busy",
        &out,
        &records,
        &counters_busy("cuptiRangeProfilerEnable"),
    );
    assert_eq!(plan_chips(&records), vec!["GH100"]);
}

/// The same answer from the other calls that take the counters: PM sampling's
/// enable (`GPUPROF_COUNTERS=sampling`), and `cuptiProfilerInitialize` before any plan.
#[test]
fn counters_held_by_another_tool_at_any_setup_call_say_so() {
    let (out, records) = run(
        "busy-sampling",
        &[
            ("SIMCUPTI_COUNTERS_BUSY", "1"),
            ("GPUPROF_COUNTERS", "sampling"),
        ],
    );
    check_failed(
        "busy-sampling",
        &out,
        &records,
        &counters_busy("cuptiPmSamplingEnable"),
    );
    let (out, records) = run(
        "busy-initialize",
        &[("SIMCUPTI_COUNTERS_BUSY", "cuptiProfilerInitialize")],
    );
    check_failed(
        "busy-initialize",
        &out,
        &records,
        &counters_busy("cuptiProfilerInitialize"),
    );
    assert!(plan_chips(&records).is_empty(), "no plan");
}

/// Under `gpuprof record`: the one warning, the report's counter status is exactly
/// the busy reason (JSON, and the table's Counters section, wrapped at 120 columns),
/// and every kernel is in the report with its exact count.
#[test]
fn counters_held_by_another_tool_under_record_reach_the_report() {
    let scratch = Scratch::new("counter-failures-record-busy");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .env("SIMCUPTI_COUNTERS_BUSY", "1");
    let ended = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let reason = counters_busy("cuptiRangeProfilerEnable");
    assert_eq!(
        ended.stderr,
        format!(
            "{}gpuprof: session written to {o} (1 process, {KERNELS} kernels, 0 dropped); \
             gpuprof report {o}\n",
            warning(&reason),
            o = out.display(),
        )
    );

    let mut report = gpuprof_command();
    report.args(["report", "--format", "json"]).arg(&out);
    let r = TimedChild::spawn(report, LIMIT).wait();
    assert!(r.status.success(), "gpuprof report: {}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("report JSON");
    let pid = v["processes"][0]["pid"].as_u64().expect("pid");
    assert_eq!(
        v["counters"]["statuses"],
        serde_json::json!([{"pid": pid, "message": reason}])
    );
    assert_eq!(kernel_calls(&v), cudarc_llm_calls());
    assert_eq!(v["counters"]["kernels_without_counters"], 8);

    // The table: after the plan, the status's lines, joined, are the reason; no line
    // is over 120 columns.
    let section = ended
        .stdout
        .split("\nCounters\n")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("a Counters section");
    assert!(
        section.lines().all(|l| l.chars().count() <= 120),
        "{section}"
    );
    let status = &section[section.find(&format!("  pid {pid}: ")).expect("status")..];
    let joined: Vec<&str> = status.lines().map(str::trim).collect();
    assert_eq!(joined.join(" "), format!("pid {pid}: {reason}"));
}
