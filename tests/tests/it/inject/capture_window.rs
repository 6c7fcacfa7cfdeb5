//! Capture windows: `gpuprof record --capture-range cudaProfilerApi | nvtx:NAME`,
//! `--delay`, `--duration` (and the variables they set, in env-var-only mode) record
//! exactly the launches made inside the window, with their kernels, copies and sets,
//! and the session says what the window let through. Programs run on the simulated
//! stack with a cost model that makes every kernel last `1000 + blocks` ns
//! (`tests/c/capture_window.c`: `fill` 1 block, `scale` 2 or 8).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gpuprof_tests::{
    artifact, compile_c, record_cudarc_llm, record_on_sim, report_json, run_injected_with_args,
    Finished, Injection, Scratch, TimedChild, DRIVER_WORKLOAD_MODEL,
};
use serde_json::{json, Value};
use wire::Record;

const PROFILER_STDOUT: &str =
    "no context: start 201 stop 201\n12 launches, 3 between start and stop\n";

fn client() -> PathBuf {
    compile_c("capture_window.c", "capture_window", &[])
}

/// The cost model file, in `scratch`.
fn model(scratch: &Scratch) -> PathBuf {
    let f = scratch.join("model.toml");
    std::fs::write(&f, DRIVER_WORKLOAD_MODEL).unwrap();
    f
}

/// `gpuprof record OPTIONS -o OUT -- capture_window MODE` on the simulated stack.
fn record(scratch: &Scratch, options: &[&str], mode: &str) -> (Finished, PathBuf) {
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.args(options)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(client())
        .arg(mode)
        .env("SIMCUDA_COST_MODEL", model(scratch));
    let o = TimedChild::spawn(cmd, Duration::from_secs(120)).wait();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", o.stdout, o.stderr);
    (o, out)
}

/// (name, calls, total ns) per kernel.
fn kernels(v: &Value) -> Vec<(String, u64, u64)> {
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["calls"].as_u64().unwrap(),
                k["total_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// (kind, count, bytes) per copy / set kind.
fn transfers(v: &Value) -> Vec<(String, u64, u64)> {
    v["transfers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["kind"].as_str().unwrap().to_string(),
                t["count"].as_u64().unwrap(),
                t["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn range<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no range {name}: {v}"))
}

#[test]
fn the_profiler_api_window_records_the_launches_between_start_and_stop() {
    let scratch = Scratch::new("capture-profiler-api");
    let (o, out) = record(
        &scratch,
        &["--capture-range", "cudaProfilerApi"],
        "profiler",
    );
    assert!(o.stdout.starts_with(PROFILER_STDOUT), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("    captured: cudaProfilerApi, 2 windows, 3 of 12 launches\n"),
        "{}",
        o.stdout
    );
    let v = report_json(&out);
    // Two scale launches of 2 blocks in the first window, one of 8 in the second; no
    // fill (launched only outside).
    assert_eq!(kernels(&v), [("scale".to_string(), 3, 1002 + 1002 + 1008)]);
    assert_eq!(v["kernel_count"], 3);
    assert_eq!(v["kernel_ns"], 3012);
    // The copy and the set inside the first window, not the copy between the two.
    assert_eq!(
        transfers(&v),
        [
            ("HtoD".to_string(), 1, 4096),
            ("memset".to_string(), 1, 4096)
        ]
    );
    assert_eq!(
        v["processes"][0]["capture"],
        json!({
            "range": "cudaProfilerApi", "delay_ns": 0, "duration_ns": 0, "windows": 2,
            "launches": 12, "captured_launches": 3,
        })
    );
    assert!(v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["records"] == 0));
}

#[test]
fn an_nvtx_window_records_exactly_the_kernels_of_that_range() {
    let scratch = Scratch::new("capture-nvtx");
    let all = scratch.join("all");
    record_cudarc_llm(&all, "13.4", &[]);
    let whole = report_json(&all);
    let decode = range(&whole, "decode").clone();
    assert_eq!(decode["kernels"], 4 * (2 * 10 + 1));

    let out = scratch.join("decode");
    let mut cmd = record_on_sim("13.4");
    cmd.args(["--capture-range", "nvtx:decode", "-o"])
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let o = TimedChild::spawn(cmd, Duration::from_secs(180)).wait();
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    let v = report_json(&out);
    assert_eq!(v["kernel_count"], decode["kernels"]);
    assert_eq!(v["kernel_ns"], decode["gpu_ns"]);
    // The ranges are still recorded; every recorded kernel is inside decode.
    assert_eq!(range(&v, "decode")["kernels"], decode["kernels"]);
    assert_eq!(range(&v, "decode")["gpu_ns"], decode["gpu_ns"]);
    assert_eq!(range(&v, "prefill")["kernels"], 0);
    assert_eq!(range(&v, "prefill")["count"], 1);
    assert_eq!(
        v["processes"][0]["capture"],
        json!({
            "range": "nvtx:decode", "delay_ns": 0, "duration_ns": 0, "windows": 4,
            "launches": whole["kernel_count"], "captured_launches": decode["kernels"],
        })
    );
    // The CUDA calls inside the window only, the runtime's as the driver's: per decode
    // step the workload's 12 own kernels through the runtime and cuBLAS's 9 through
    // the driver (the 21 above), 12 buffers allocated and zeroed (cudarc's
    // alloc_zeros), 10 of them freed inside (the LM head's 2 go after the step's range
    // ends), the token read back and waited for through the runtime; nothing of the
    // prefill or the set-up (its runtime library load, counted in the whole run).
    let calls = |v: &Value| -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = v["api_calls"]["by_thread"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["traced"] == true)
            .map(|r| {
                (
                    r["function"].as_str().unwrap().to_string(),
                    r["calls"].as_u64().unwrap(),
                )
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(
        calls(&v),
        [
            ("cuLaunchKernel", 4 * 9),
            ("cuMemAllocAsync", 4 * 12),
            ("cuMemFreeAsync", 4 * 10),
            ("cuMemsetD8Async", 4 * 12),
            ("cudaLaunchKernel", 4 * 12),
            ("cudaMemcpyAsync", 4),
            ("cudaStreamSynchronize", 4),
        ]
        .map(|(f, n)| (f.to_string(), n))
    );
    let counted = |v: &Value, f: &str| {
        v["api_calls"]["by_thread"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["traced"] == false && r["function"] == f)
    };
    assert!(counted(&whole, "cudaLibraryLoadData"));
    assert!(!counted(&v, "cudaLibraryLoadData"));
}

#[test]
fn delay_and_duration_record_the_batch_inside_the_time_window() {
    // Batches at 0, 2 and 4 s after the program starts; the window is 1 s to 3 s.
    let scratch = Scratch::new("capture-delay");
    let (o, out) = record(&scratch, &["--delay", "1", "--duration", "2"], "sleep");
    assert!(
        o.stdout.starts_with(
            "no context: start 201 stop 201\nbatches of 2, 3, 4 launches at 0, 2, 4 s\n"
        ),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("    captured: delay 1 s, duration 2 s, 1 window, 3 of 9 launches\n"),
        "{}",
        o.stdout
    );
    let v = report_json(&out);
    assert_eq!(kernels(&v), [("scale".to_string(), 3, 3 * 1002)]);
    assert_eq!(
        v["processes"][0]["capture"],
        json!({
            "range": "", "delay_ns": 1_000_000_000u64, "duration_ns": 2_000_000_000u64,
            "windows": 1, "launches": 9, "captured_launches": 3,
        })
    );
}

#[test]
fn a_delay_applies_before_the_capture_range() {
    // The profiler client runs in well under 30 s: no window opens after the delay.
    let scratch = Scratch::new("capture-delay-range");
    let (_, out) = record(
        &scratch,
        &["--delay", "30", "--capture-range", "cudaProfilerApi"],
        "profiler",
    );
    let v = report_json(&out);
    assert_eq!(v["kernel_count"], 0);
    assert_eq!(v["processes"][0]["capture"]["windows"], 0);
    assert_eq!(v["processes"][0]["capture"]["captured_launches"], 0);
    assert_eq!(v["processes"][0]["capture"]["launches"], 12);
}

/// `gpuprof record OPTIONS -- touch MARKER`: must fail before the program runs.
fn refused(options: &[&str], message: &str) {
    let scratch = Scratch::new(&format!("capture-refused-{}", options.join("-")));
    let marker = scratch.join("ran");
    let mut cmd = record_on_sim("13.4");
    cmd.args(options)
        .arg("-o")
        .arg(scratch.join("out"))
        .arg("--")
        .arg("touch")
        .arg(&marker);
    let o = TimedChild::spawn(cmd, Duration::from_secs(60)).wait();
    assert_eq!(o.status.code(), Some(2), "{options:?}: {}", o.stderr);
    assert_eq!(
        o.stderr,
        format!("gpuprof: error: {message}\n"),
        "{options:?}"
    );
    assert!(!marker.exists(), "{options:?}: the program ran");
    assert!(!Path::new(&scratch.join("out")).exists(), "{options:?}");
}

#[test]
fn bad_window_options_are_refused_before_the_program_starts() {
    refused(
        &["--delay", "-1"],
        "--delay \"-1\": not a number of seconds from 0 to 10000000 (fractions allowed, e.g. 1.5)",
    );
    refused(
        &["--duration", "0"],
        "--duration \"0\": not a number of seconds from 0.000000001 to 10000000 (fractions allowed, e.g. 1.5)",
    );
    refused(
        &["--duration", "soon"],
        "--duration \"soon\": not a number of seconds from 0.000000001 to 10000000 (fractions allowed, e.g. 1.5)",
    );
    refused(
        &["--capture-range", "foo"],
        "--capture-range \"foo\": not cudaProfilerApi or nvtx:NAME",
    );
    refused(
        &["--capture-range", "nvtx:"],
        "--capture-range \"nvtx:\": nvtx: needs a range name (nvtx:NAME)",
    );
}

/// The profiler client injected without `record`, `env` set; its ring's records.
fn injected(name: &str, env: &[(&str, &str)]) -> (Finished, Vec<Record>) {
    let scratch = Scratch::new(name);
    let model = model(&scratch);
    let mut all = vec![
        ("SIMCUDA_COST_MODEL", model.to_str().unwrap()),
        ("GPUPROF_COUNTERS", "off"),
    ];
    all.extend_from_slice(env);
    let (o, records) = run_injected_with_args(
        &client(),
        &["profiler"],
        Injection::Driver,
        &format!("{name}-ring"),
        "13.4",
        &all,
    );
    assert_eq!(o.stdout, PROFILER_STDOUT);
    (o, records)
}

fn count(records: &[Record], f: impl Fn(&Record) -> bool) -> usize {
    records.iter().filter(|r| f(r)).count()
}

#[test]
fn env_only_mode_follows_the_variables() {
    let (o, records) = injected(
        "capture-env",
        &[("GPUPROF_CAPTURE_RANGE", "cudaProfilerApi")],
    );
    assert_eq!(o.stderr, "");
    assert_eq!(count(&records, |r| matches!(r, Record::Kernel(_))), 3);
    assert_eq!(count(&records, |r| matches!(r, Record::Launch(_))), 3);
    assert_eq!(count(&records, |r| matches!(r, Record::Memcpy(_))), 1);
    assert_eq!(count(&records, |r| matches!(r, Record::Memset(_))), 1);
    let captures: Vec<&wire::Capture> = records
        .iter()
        .filter_map(|r| match r {
            Record::Capture(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(
        captures,
        [&wire::Capture {
            range: "cudaProfilerApi".into(),
            delay_ns: 0,
            duration_ns: 0,
            windows: 2,
            launches: 12,
            captured_launches: 3,
        }]
    );
    // Every kernel record has its launch record.
    for r in &records {
        if let Record::Kernel(k) = r {
            assert!(records
                .iter()
                .any(|l| matches!(l, Record::Launch(l) if l.correlation_id == k.correlation_id)));
        }
    }
}

#[test]
fn a_bad_variable_is_one_warning_and_everything_is_recorded() {
    for (var, value, warning) in [
        (
            "GPUPROF_CAPTURE_RANGE",
            "foo",
            "gpuprof: GPUPROF_CAPTURE_RANGE=\"foo\": not cudaProfilerApi or nvtx:NAME; ignoring it: recording everything\n",
        ),
        (
            "GPUPROF_DELAY",
            "-1",
            "gpuprof: GPUPROF_DELAY=\"-1\" is not a number of seconds from 0 to 10000000; ignoring it: recording everything it would limit\n",
        ),
        (
            "GPUPROF_DURATION",
            "0",
            "gpuprof: GPUPROF_DURATION=\"0\" is not a number of seconds from 0.000000001 to 10000000; ignoring it: recording everything it would limit\n",
        ),
    ] {
        let (o, records) = injected(&format!("capture-bad-{var}"), &[(var, value)]);
        assert_eq!(o.stderr, warning, "{var}");
        assert_eq!(count(&records, |r| matches!(r, Record::Kernel(_))), 12, "{var}");
        assert_eq!(count(&records, |r| matches!(r, Record::Memcpy(_))), 2, "{var}");
        assert_eq!(count(&records, |r| matches!(r, Record::Capture(_))), 0, "{var}");
    }
}

#[test]
fn the_simulated_driver_reports_profiler_start_and_stop() {
    // Unprofiled, the client's output is the same (start / stop do nothing else).
    let scratch = Scratch::new("capture-unprofiled");
    let mut cmd = gpuprof_tests::SimCommand::new(Command::new(client())).command();
    cmd.arg("profiler")
        .env("SIMCUDA_COST_MODEL", model(&scratch));
    let o = TimedChild::spawn(cmd, Duration::from_secs(60)).wait();
    assert_eq!(
        (o.status.code(), o.stdout.as_str()),
        (Some(0), PROFILER_STDOUT)
    );
}
