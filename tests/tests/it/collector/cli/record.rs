//! `gpuprof record` end to end: the real libgpuprof.so injected into the cudarc client
//! on the simulated CUDA stack, the collector draining its ring, the report read back.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, cudarc_llm_calls, gpuprof_command, kernel_calls, shm_dirs_of, sim_cupti, sim_lib_dir,
    Scratch,
};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `gpuprof record -o OUT -- CMD...` on the simulated stack (CUPTI 13.4), started.
fn record(out: &Path, cmd: &[&str]) -> Child {
    record_with(&[], out, cmd)
}

/// [`record`] with `args` after `record`.
fn record_with(args: &[&str], out: &Path, cmd: &[&str]) -> Child {
    gpuprof_command()
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(cmd)
        .env("LD_LIBRARY_PATH", sim_lib_dir())
        .env("GPUPROF_CUPTI_LIB", sim_cupti(13))
        .env("SIMCUPTI_VERSION", "13.4")
        .env(
            "SIMCUPTI_HOST_LIBRARY",
            gpuprof_tests::sim_host_library("13.4"),
        )
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits with a deadline; kills the child if it is exceeded.
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "gpuprof record did not end in time; stderr:\n{}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn report_json(out: &Path) -> serde_json::Value {
    let o = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn cudarc_client_under_record() {
    let scratch = Scratch::new("record-cudarc");
    let out_dir = scratch.join("out");
    let client = artifact("cudarc-llm");
    let child = record(&out_dir, &[client.to_str().unwrap()]);
    let pid = child.id();
    let out = finish(child);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.starts_with(
            "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("Kernels by GPU time (107 kernels, "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  cupti              0\n  channel            0\n  ring               0\n  undelivered        0\n  unwritten          0\n  unsaved            0\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("did not finish"), "{stdout}");
    assert!(
        stderr.ends_with(&format!(
            "gpuprof: session written to {o} (1 process, 107 kernels, 0 dropped); gpuprof report {o}\n",
            o = out_dir.display()
        )),
        "{stderr}"
    );
    assert!(
        shm_dirs_of(pid).is_empty(),
        "ring directory left in /dev/shm"
    );

    let v = report_json(&out_dir);
    assert_eq!(kernel_calls(&v), cudarc_llm_calls());
    assert_eq!(v["kernel_count"], 107);
    assert_eq!(v["processes"][0]["finished"], true);
    assert_eq!(v["processes"][0]["cupti_layouts"], "13.4");
    assert_eq!(v["unfinished"], serde_json::json!([]));
    let ranges: BTreeMap<String, u64> = v["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ranges,
        BTreeMap::from([("prefill".to_string(), 1), ("decode".to_string(), 4)])
    );
    // Kernels launched inside each range: prefill is 2 layers of 11 kernels (RMS norm,
    // QKV GEMM, attention-score GEMM, flash attention, output GEMM, add, RMS norm,
    // gate/up GEMM, SiLU, down GEMM, add) and the LM head; each of the 4 decode steps
    // is 2 layers of 10 (paged attention, no score GEMM) and the LM head. Every kernel
    // is inside one of them, so their GPU times add up to the whole run's.
    let range = |name: &str| {
        v["nvtx_ranges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no range {name}"))
            .clone()
    };
    assert_eq!(range("prefill")["kernels"], 2 * 11 + 1);
    assert_eq!(range("decode")["kernels"], 4 * (2 * 10 + 1));
    assert_eq!(
        range("prefill")["gpu_ns"].as_u64().unwrap() + range("decode")["gpu_ns"].as_u64().unwrap(),
        v["kernel_ns"].as_u64().unwrap()
    );

    // The trace: one kernel event and one launch flow per kernel.
    let trace = scratch.join("trace.json");
    let o = gpuprof_command()
        .arg("trace")
        .arg(&out_dir)
        .args(["--format", "chrome", "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let count = |ph: &str, cat: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["cat"] == cat)
            .count()
    };
    assert_eq!(count("X", "kernel"), 107);
    // A flow from each launch to its kernel, and from each copy's and set's call to
    // its copy or set (the round trip's 2 copies and 4 tokens read back, 67 sets).
    assert_eq!((count("s", "launch"), count("f", "launch")), (180, 180));
}

/// The report `record` prints is made while the session is written (each sealed
/// part folded as it appears, on idle CPU): over a session of many small parts it is
/// the report `gpuprof report` reads from the finished session, byte for byte.
#[test]
fn the_report_record_prints_is_the_report_of_the_finished_session() {
    let scratch = Scratch::new("record-follow");
    let out_dir = scratch.join("out");
    let client = artifact("cudarc-llm");
    let child = record_with(
        &["--part-rows", "64", "--part-seconds", "1"],
        &out_dir,
        &[client.to_str().unwrap(), "--decode-steps", "200"],
    );
    let out = finish(child);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let parts = std::fs::read_dir(out_dir.join("parts")).unwrap().count();
    assert!(parts >= 10, "{parts} parts");
    let printed = text(&out.stdout);
    let report = gpuprof_command()
        .arg("report")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    assert!(
        report.contains("Kernels by GPU time (4223 kernels, "),
        "{report}"
    );
    // The program's own lines, then the report.
    assert!(
        printed.ends_with(&report),
        "record printed:\n{printed}\ngpuprof report:\n{report}"
    );
}

#[test]
fn failing_command_exit_code_is_passed_through() {
    let scratch = Scratch::new("record-fail");
    let out_dir = scratch.join("out");
    let client = artifact("cudarc-llm");
    // The profiled client runs to the end; the shell around it then fails.
    let script = format!("'{}' >/dev/null && exit 7", client.display());
    let child = record(&out_dir, &["sh", "-c", &script]);
    let pid = child.id();
    let out = finish(child);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert_eq!(kernel_calls(&report_json(&out_dir)), cudarc_llm_calls());
    assert!(shm_dirs_of(pid).is_empty());

    // The client's own failure (a bad option, before any CUDA call).
    let scratch = Scratch::new("record-fail-client");
    let child = record(
        &scratch.join("out"),
        &[client.to_str().unwrap(), "--layers", "x"],
    );
    let out = finish(child);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "error: invalid value 'x' for '--layers <LAYERS>': needs a positive integer, not \"x\""
        ),
        "{}",
        text(&out.stderr)
    );
}

/// `gpuprof record ... | head -1`: a stdout closed before record prints its report
/// is not an error (it panicked with exit 101): record returns the program's status.
#[test]
fn a_closed_stdout_keeps_the_programs_status() {
    let scratch = Scratch::new("record-closed-stdout");
    let out_dir = scratch.join("out");
    let client = artifact("cudarc-llm");
    let script = format!("'{}' >/dev/null; exit 5", client.display());
    let mut child = record(&out_dir, &["sh", "-c", &script]);
    // The reading end of record's stdout, closed at once.
    drop(child.stdout.take());
    let out = finish(child);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(kernel_calls(&report_json(&out_dir)), cudarc_llm_calls());
}

#[test]
fn missing_command() {
    let scratch = Scratch::new("record-missing");
    let out_dir = scratch.join("out");
    let child = record(&out_dir, &["/nonexistent/cudarc-llm"]);
    let pid = child.id();
    let out = finish(child);
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(
        text(&out.stderr),
        "gpuprof: error: cannot run /nonexistent/cudarc-llm: No such file or directory (os error 2)\n"
    );
    assert!(!out_dir.exists());
    assert!(shm_dirs_of(pid).is_empty());

    let out = Command::new(artifact("gpuprof"))
        .args(["record", "--"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("<CMD>..."),
        "{}",
        text(&out.stderr)
    );
}
