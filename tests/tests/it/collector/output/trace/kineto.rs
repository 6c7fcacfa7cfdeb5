//! `gpuprof trace --format kineto`, read by the real Holistic Trace Analysis (HTA
//! 0.5.0, `target/venv-hta`, made by `scripts/python-env.sh hta`) through
//! `tests/hta/analyse.py`: the README's demo workload recorded on the simulated H100
//! and a four-process run launched as torchrun launches ranks (RANK, LOCAL_RANK,
//! WORLD_SIZE in each process's environment), each against `gpuprof report`; and
//! sessions that hold nothing to trace or hostile values, and output directories
//! that are not ours.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use gpuprof_collector::store::write_parts;
use gpuprof_tests::{
    artifact, class_key, duckdb, fitted_bytes_by_class, gpuprof_command, read_perfetto_trace,
    record_on_sim, venv_python, venv_python_of, Scratch, TimedChild,
};
use serde_json::{json, Value};
use wire::testing::{k, launch, marker, process, string};
use wire::{marker_flags, ProcessInfo, Record};

const LIMIT: Duration = Duration::from_secs(300);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn gpuprof(args: &[&str]) -> Output {
    gpuprof_command().args(args).output().unwrap()
}

/// `gpuprof trace SESSION --format kineto -o OUT EXTRA...`.
fn kineto_to(session: &Path, out: &Path, extra: &[&str]) -> Output {
    gpuprof_command()
        .arg("trace")
        .arg(session)
        .args(["--format", "kineto", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn report_json(dir: &Path) -> Value {
    let o = gpuprof(&["report", "--format", "json", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What HTA makes of the Kineto trace in `dir` (see tests/hta/analyse.py).
fn hta(dir: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hta/analyse.py");
    let mut cmd = Command::new(venv_python_of("hta"));
    cmd.arg(script).arg(dir);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "HTA: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// HTA's critical path of rank 0 over the first `annotation` range in `dir`.
fn hta_critical_path(dir: &Path, annotation: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hta/analyse.py");
    let mut cmd = Command::new(venv_python_of("hta"));
    cmd.arg(script)
        .arg(dir)
        .args(["--critical-path", annotation]);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "HTA: {}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    v["critical_path"].clone()
}

/// The report's copies (of every kind).
fn copies_of(v: &Value) -> u64 {
    transfers_of(v, |kind| kind != "memset")
}

/// The report's sets.
fn sets_of(v: &Value) -> u64 {
    transfers_of(v, |kind| kind == "memset")
}

fn transfers_of(v: &Value, kind: impl Fn(&str) -> bool) -> u64 {
    v["transfers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| kind(t["kind"].as_str().unwrap()))
        .map(|t| t["count"].as_u64().unwrap())
        .sum()
}

/// The report's traced calls other than launches: calls per function.
fn api_calls(v: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in v["api_calls"]["by_thread"].as_array().unwrap() {
        // Counted calls are not in a trace: only those traced one by one (launch
        // calls are the trace's launches).
        if r["traced"] != true || r["class"] == "launch" {
            continue;
        }
        *out.entry(r["function"].as_str().unwrap().to_string())
            .or_default() += r["calls"].as_u64().unwrap();
    }
    out
}

/// The report's launch calls by function (`api_calls.by_thread`, class "launch").
fn launch_calls(v: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in v["api_calls"]["by_thread"].as_array().unwrap() {
        if r["class"] == "launch" {
            *out.entry(r["function"].as_str().unwrap().to_string())
                .or_default() += r["calls"].as_u64().unwrap();
        }
    }
    out
}

/// The report's kernels by name: (launches, total ns).
fn report_kernels(v: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for k in v["kernels"].as_array().unwrap() {
        let e = out
            .entry(k["name"].as_str().unwrap().to_string())
            .or_default();
        e.0 += k["calls"].as_u64().unwrap();
        e.1 += k["total_ns"].as_u64().unwrap();
    }
    out
}

/// HTA's kernels by name: (count, total ns); copies and sets (count 0: HTA counts
/// only `kernel` events here) by name: total ns.
type Kernels = BTreeMap<String, (u64, u64)>;
fn hta_kernels(h: &Value) -> (Kernels, BTreeMap<String, u64>) {
    let mut kernels = BTreeMap::new();
    let mut transfers = BTreeMap::new();
    for (name, k) in h["kernels"].as_object().unwrap() {
        let ns = (k["total_us"].as_f64().unwrap() * 1000.0).round() as u64;
        match k["count"].as_u64().unwrap() {
            0 => {
                transfers.insert(name.clone(), ns);
            }
            n => {
                kernels.insert(name.clone(), (n, ns));
            }
        }
    }
    (kernels, transfers)
}

/// The report's copies and sets by Kineto's name, total ns ("Memcpy HtoD (Pageable
/// -> Device)" -> "HtoD" as the report's kind).
fn transfer_kinds(hta: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (name, ns) in hta {
        let kind = match name.strip_prefix("Memcpy ") {
            Some(rest) => rest.split(' ').next().unwrap().to_string(),
            None => "memset".to_string(),
        };
        *out.entry(kind).or_default() += ns;
    }
    out
}

fn report_transfers(v: &Value) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for t in v["transfers"].as_array().unwrap() {
        *out.entry(t["kind"].as_str().unwrap().to_string())
            .or_default() += t["total_ns"].as_u64().unwrap();
    }
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn the_demo_workload_reads_in_hta_as_in_the_report() {
    let scratch = Scratch::new("kineto-demo");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let rec = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    let v = report_json(&out);
    assert_eq!(v["kernel_count"], 107);
    let p = &v["processes"][0];
    let pid = p["pid"].as_u64().unwrap();
    let host = p["host"].as_str().unwrap();

    let o = gpuprof(&["trace", out.to_str().unwrap(), "--format", "kineto"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = out.join("kineto");
    let stderr = text(&o.stderr);
    assert!(
        stderr.starts_with(&format!(
            "gpuprof: Kineto trace written to {} (1 file, one per process; ranks numbered by gpuprof: no process had RANK set): 107 kernels, ",
            dir.display()
        )),
        "{stderr}"
    );
    // The calls other than launches are the report's; the flows run from each
    // launch to its kernel and from each copy's or set's call to the copy or set.
    let calls = api_calls(&v);
    let launches = launch_calls(&v);
    let waits = calls["cudaStreamSynchronize"] + calls["cuStreamSynchronize"];
    let others: u64 = calls.values().sum();
    assert_eq!(
        (calls["cudaStreamSynchronize"], calls["cuStreamSynchronize"]),
        (4, 1),
        "a token read back per decode step (through the runtime), and the end"
    );
    let flows = 107 + copies_of(&v) + sets_of(&v);
    assert!(
        stderr.contains(&format!(
        ", 107 launch calls, {others} other CUDA calls ({waits} waits on the GPU), 5 NVTX ranges, \
         5 NVTX ranges on the GPU, 47 GEMM calls as operators, {flows} flows from CPU call to \
         GPU work; analyse it with HTA: TraceAnalysis(trace_dir="
    )),
        "{stderr}"
    );
    // One file, named as PyTorch names a worker's trace.
    let file = dir.join(format!("{host}_{pid}.pt.trace.json"));
    assert_eq!(files_in(&dir), vec![file.clone()]);

    // The header, before the events, in Kineto's order and spelling.
    let raw = std::fs::read_to_string(&file).unwrap();
    let keys: Vec<&str> = raw
        .lines()
        .take_while(|l| !l.contains("\"traceEvents\""))
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .collect();
    assert_eq!(
        keys,
        [
            "schemaVersion",
            "deviceProperties",
            "distributedInfo",
            "gpuprof",
            "displayTimeUnit",
            "baseTimeNanoseconds"
        ]
    );
    assert!(
        raw.contains("\n  \"distributedInfo\": {\"rank\": 0},\n"),
        "{}",
        &raw[..600]
    );
    let t = read_json(&file);
    assert_eq!(t["schemaVersion"], 1);
    let d = &t["deviceProperties"][0];
    assert_eq!(
        (
            &d["id"],
            &d["name"],
            &d["numSms"],
            &d["computeMajor"],
            &d["computeMinor"]
        ),
        (
            &json!(0),
            &json!("NVIDIA H100 80GB HBM3"),
            &json!(132),
            &json!(9),
            &json!(0)
        )
    );
    assert!(d["uuid"].as_str().unwrap().starts_with("GPU-"), "{d}");
    assert!(d["totalGlobalMem"].as_u64().unwrap() > 0);
    assert_eq!(t["gpuprof"]["pid"], pid);
    assert_eq!(t["gpuprof"]["rank_source"], "assigned by gpuprof");
    let base = t["baseTimeNanoseconds"].as_u64().unwrap();
    assert!(base > 1_600_000_000_000_000_000);

    // Events: categories and counts; times exact to the ns (three decimals, from
    // integers), never before the base.
    let events = t["traceEvents"].as_array().unwrap();
    let mut cats: BTreeMap<String, u64> = BTreeMap::new();
    for e in events {
        *cats
            .entry(format!(
                "{} {}",
                e["ph"].as_str().unwrap(),
                e["cat"].as_str().unwrap_or("")
            ))
            .or_default() += 1;
    }
    let (copies, sets) = (copies_of(&v), sets_of(&v));
    assert_eq!(cats["X kernel"], 107);
    // The runtime's calls as `cuda_runtime`, the driver's as `cuda_driver`, as Kineto
    // writes CUPTI's runtime and driver API records.
    let runtime_calls: u64 = calls
        .iter()
        .filter(|(f, _)| f.starts_with("cuda"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(runtime_calls, 8, "{calls:?}");
    assert_eq!(
        cats["X cuda_runtime"],
        launches["cudaLaunchKernel"] + runtime_calls
    );
    assert_eq!(
        cats["X cuda_driver"],
        launches["cuLaunchKernel"] + others - runtime_calls
    );
    assert_eq!(cats["s ac2g"], 107 + copies + sets);
    assert_eq!(cats["f ac2g"], 107 + copies + sets);
    assert_eq!(cats["X cuda_sync"], waits);
    // A cpu_op per GEMM call (the workload's GEMMs launch one kernel each).
    assert_eq!(cats["X cpu_op"], 47);
    assert_eq!(cats["X gpu_memcpy"], copies);
    assert_eq!(cats["X gpu_memset"], sets);
    assert_eq!(cats["X user_annotation"], 5);
    assert_eq!(cats["X gpu_user_annotation"], 5);
    for line in raw.lines().filter(|l| l.starts_with("{\"ph\": \"X\"")) {
        for field in ["\"ts\": ", "\"dur\": "] {
            let at = line.find(field).unwrap() + field.len();
            let num: String = line[at..].chars().take_while(|c| *c != ',').collect();
            let (whole, frac) = num.split_once('.').unwrap_or_else(|| panic!("{line}"));
            assert!(whole.parse::<u64>().is_ok() && frac.len() == 3, "{line}");
        }
    }
    // Kernels on pid = device, tid = stream, with Kineto's arguments; flows keyed by
    // the correlation id from the launch's thread to the kernel's stream.
    let kernels: Vec<&Value> = events.iter().filter(|e| e["cat"] == "kernel").collect();
    for e in &kernels {
        let a = &e["args"];
        assert_eq!((&e["pid"], &e["tid"]), (&a["device"], &a["stream"]), "{e}");
        for key in [
            "correlation",
            "grid",
            "block",
            "registers per thread",
            "shared memory",
            "context",
        ] {
            assert!(!a[key].is_null(), "{key}: {e}");
        }
    }
    for e in events.iter().filter(|e| e["cat"] == "cuda_driver") {
        assert_eq!(e["pid"], pid);
        // No `stream` on the CPU: HTA takes every event with one for GPU work.
        assert!(e["args"]["stream"].is_null(), "{e}");
        if e["name"] != "cuLaunchKernel" {
            // A copy's or set's call: a flow to its copy or set, same correlation id.
            let corr = &e["args"]["correlation"];
            let moved = events
                .iter()
                .find(|g| &g["args"]["correlation"] == corr && g["pid"] == 0);
            let name = e["name"].as_str().unwrap();
            if name.starts_with("cuMemcpy") || name.starts_with("cuMemset") {
                let g = moved.unwrap_or_else(|| panic!("no GPU work for {e}"));
                assert_eq!(g["args"]["bytes"], e["args"]["bytes"], "{e} {g}");
                let s = events.iter().find(|f| f["ph"] == "s" && &f["id"] == corr);
                assert_eq!(s.unwrap()["ts"], e["ts"]);
            }
            continue;
        }
        assert!(e["args"]["stream"].is_null(), "{e}");
        let corr = &e["args"]["correlation"];
        let s = events
            .iter()
            .find(|f| f["ph"] == "s" && &f["id"] == corr)
            .unwrap();
        assert_eq!((&s["ts"], &s["tid"]), (&e["ts"], &e["tid"]));
        let k = kernels
            .iter()
            .find(|k| &k["args"]["correlation"] == corr)
            .unwrap();
        let f = events
            .iter()
            .find(|f| f["ph"] == "f" && &f["id"] == corr)
            .unwrap();
        assert_eq!(
            (&f["ts"], &f["pid"], &f["tid"], &f["bp"]),
            (&k["ts"], &k["pid"], &k["tid"], &json!("e"))
        );
    }
    // Copies carry bytes and bandwidth as Kineto names them.
    for e in events.iter().filter(|e| e["cat"] == "gpu_memcpy") {
        let gbps = e["args"]["memory bandwidth (GB/s)"].as_f64().unwrap();
        let bytes = e["args"]["bytes"].as_f64().unwrap();
        let dur_ns = e["dur"].as_f64().unwrap() * 1000.0;
        assert!((gbps - bytes / dur_ns).abs() < 1e-9 * gbps.max(1.0), "{e}");
        assert!(e["name"].as_str().unwrap().starts_with("Memcpy "), "{e}");
    }
    // GEMM kernels: shape, model FLOPs, arithmetic intensity and MFU, as the
    // workload's GEMMs (the demo runs with every counter on every kernel).
    let gemms: Vec<&&Value> = kernels
        .iter()
        .filter(|e| !e["args"]["GEMM M"].is_null())
        .collect();
    assert_eq!(gemms.len(), 47, "the workload's 47 GEMMs");
    for e in &gemms {
        let a = &e["args"];
        let (m, n, kk, b) = (
            a["GEMM M"].as_f64().unwrap(),
            a["GEMM N"].as_f64().unwrap(),
            a["GEMM K"].as_f64().unwrap(),
            a["GEMM batch"].as_f64().unwrap(),
        );
        assert_eq!(
            a["model FLOPs"].as_f64().unwrap(),
            2.0 * m * n * kk * b,
            "{e}"
        );
        let dur_s = e["dur"].as_f64().unwrap() * 1e-6;
        let mfu = a["MFU (%)"].as_f64().unwrap();
        assert!(mfu > 0.0 && mfu < 100.0, "{e}");
        assert!(
            a["GEMM"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{m}x{n}x{kk} x{b} ")),
            "{e}"
        );
        let _ = dur_s;
    }
    assert!(gemms
        .iter()
        .any(|e| e["args"]["arithmetic intensity (FLOP/byte)"]
            .as_f64()
            .is_some_and(|ai| ai > 0.0)));
    // CPU NVTX ranges on the launching thread; their GPU projections on the stream,
    // holding the kernels launched inside them.
    for e in events.iter().filter(|e| e["cat"] == "gpu_user_annotation") {
        assert_eq!((&e["pid"], &e["tid"]), (&json!(0), &json!(1)));
        assert!(e["args"]["stream"].is_null());
    }

    // What TraceLens reads, by the rules of its source (see `as_tracelens_reads`).
    as_tracelens_reads(events, &v);
    // Each operator spans its GEMM call itself, as the hook timed it: the session's
    // gemm_calls row of its `GEMM call`, to the ns.
    let parts = out.join("parts").to_str().unwrap().replace('\'', "''");
    let rows = &duckdb(
        &[],
        &[&format!(
            "SELECT call, start_ns, end_ns FROM read_parquet('{parts}/*/gemm_calls.parquet')"
        )],
    )[0];
    let spans: BTreeMap<u64, (u64, u64)> = rows
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (n("call"), (n("start_ns") - base, n("end_ns") - base))
        })
        .collect();
    let ops: Vec<&Value> = events.iter().filter(|e| e["cat"] == "cpu_op").collect();
    assert_eq!((ops.len(), spans.len()), (47, 47));
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    for op in ops {
        let (start, end) = spans[&op["args"]["GEMM call"].as_u64().unwrap()];
        assert_eq!(
            (ns(&op["ts"]), ns(&op["ts"]) + ns(&op["dur"])),
            (start, end),
            "{op}"
        );
    }

    // HTA: per kernel name, the count and total duration the report has, exactly.
    let h = hta(&dir);
    assert_eq!(h["ranks"], json!({"0": {"distributedInfo": {"rank": 0}}}));
    let (kernels, transfers) = hta_kernels(&h);
    assert_eq!(kernels, report_kernels(&v));
    assert_eq!(transfer_kinds(&transfers), report_transfers(&v));
    // Launches: HTA links every launch call to its kernel by correlation id (the
    // launch events of its queue-length and critical-path analyses), the runtime's
    // cudaLaunchKernel (the workload's own kernels) as the driver's cuLaunchKernel
    // (cuBLAS's), and the runtime's cudaMemcpyAsync and cudaMemsetAsync.
    assert_eq!(
        h["linked_launches"],
        json!({"0": 107 + calls["cudaMemcpyAsync"]})
    );
    // HTA links each copy's, set's and wait's call to its GPU side by correlation id.
    assert_eq!(
        h["launch_names"],
        json!({"0": ["cuLaunchKernel", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2",
                     "cuMemsetD8Async", "cuStreamSynchronize", "cudaLaunchKernel",
                     "cudaMemcpyAsync", "cudaStreamSynchronize"]})
    );
    // get_cuda_kernel_launch_stats counts the runtime API's launches only
    // (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync), each
    // with its GPU side: the report's calls of those.
    assert_eq!(
        h["launch_stats_rows"],
        json!(launches["cudaLaunchKernel"] + calls["cudaMemcpyAsync"])
    );
    assert_eq!(launches["cudaLaunchKernel"], 60);
    // The waits on the GPU, as the report counts the calls; HTA's critical path over
    // "prefill" with no warning about missing CUDA synchronization events.
    assert_eq!(h["syncs"], json!({"0": {"Stream Sync": waits}}));
    let cp = hta_critical_path(&dir, "prefill");
    assert_eq!(cp["ok"], true, "{cp}");
    assert!(!cp.to_string().contains("Synchronization"), "{cp}");
    // What HTA still warns of: it counts a copy's or set's call into a stream's queue
    // only under its runtime API names (cudaMemcpyAsync, cudaMemsetAsync), so for the
    // driver's (cuMemsetD8Async here) it finds no queue length.
    for w in cp["warnings"].as_array().unwrap() {
        let w = w.as_str().unwrap();
        assert!(
            w.starts_with("No edge was added - queue length is nan")
                && (w.contains("name = Memset (Device)") || w.contains("name = Memcpy ")),
            "{cp}"
        );
    }

    // Again: the earlier trace's file is replaced, nothing else is made.
    let o = gpuprof(&["trace", out.to_str().unwrap(), "--format", "kineto"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(files_in(&dir), vec![file.clone()]);

    // Gzipped (--gzip): the same file compressed, which HTA reads the same, and
    // which replaces the plain one (and is replaced by it) as gpuprof's own.
    let o = kineto_to(&out, &dir, &["--gzip"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("(1 file, one per process; ranks numbered by gpuprof"),
        "{}",
        text(&o.stderr)
    );
    let gz = dir.join(format!(
        "{}.gz",
        file.file_name().unwrap().to_string_lossy()
    ));
    assert_eq!(files_in(&dir), vec![gz.clone()]);
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut plain,
    )
    .unwrap();
    assert!(
        plain.starts_with(b"{\n  \"schemaVersion\": 1,"),
        "{}",
        text(&plain[..200])
    );
    assert_eq!(hta(&dir), h);
    let o = gpuprof(&["trace", out.to_str().unwrap(), "--format", "kineto"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(files_in(&dir), vec![file.clone()]);
    let o = gpuprof(&["trace", out.to_str().unwrap(), "--gzip"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--gzip is for --format kineto"),
        "{}",
        text(&o.stderr)
    );

    // A window keeps what overlaps it, and HTA still reads it.
    let part = scratch.join("window");
    let o = kineto_to(&out, &part, &["--from", "0", "--to", "0.000001"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("(what overlaps 0 s to 0.000001 s after the session's first timestamp)"),
        "{stderr}"
    );
    let windowed = read_json(&files_in(&part)[0]);
    let n = windowed["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert!(n >= 1 && n < events.len(), "{n}");

    // --steps decode: each decode step is also a ProfilerStep#N, with its span, and
    // HTA's critical path over "ProfilerStep" runs (it found none before).
    let steps = scratch.join("steps");
    let o = kineto_to(&out, &steps, &["--steps", "decode"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = read_json(&files_in(&steps)[0]);
    let events = t["traceEvents"].as_array().unwrap();
    let named = |name: &str| -> Vec<(Value, Value)> {
        events
            .iter()
            .filter(|e| e["cat"] == "user_annotation" && e["name"] == name)
            .map(|e| (e["ts"].clone(), e["dur"].clone()))
            .collect()
    };
    let decode = named("decode");
    assert_eq!(decode.len(), 4);
    for (i, d) in decode.iter().enumerate() {
        assert_eq!(named(&format!("ProfilerStep#{i}")), vec![d.clone()]);
    }
    let cp = hta_critical_path(&steps, "ProfilerStep");
    assert_eq!(cp["ok"], true, "{cp}");
    let o = gpuprof(&["trace", out.to_str().unwrap(), "--steps", "decode"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--steps is for --format kineto"),
        "{}",
        text(&o.stderr)
    );
}

/// TraceLens (AMD's analyser of PyTorch traces; not in any package registry, so its
/// rules are read from its source, AMD-AGI/TraceLens, and held here):
/// - it builds its GEMM tables from `cpu_op` events named `aten::mm`, `aten::bmm`
///   (`PerfModel/torch_op_mapping.py`), reading `Input Dims` (`[[M, K], [K, N]]`,
///   `[[B, M, K], [B, K, N]]`) and `Input type` (`c10::BFloat16`, ...:
///   `PerfModel/utils.py`, `name2bpe`), FLOPs 2·M·N·K(·B) (`PerfModel/perf_model.py`);
/// - it puts an event under a `cpu_op` when, on the same pid and tid, it starts at or
///   after the op and ends at or before it (`Trace2Tree/trace_to_tree.py`, events
///   sorted by start, stably);
/// - it links a CPU call to its GPU work by `correlation` and an `ac2g` pair (`s`
///   anywhere, `f` on the GPU event's pid and tid), copies and sets as kernels;
///   GPU work it cannot link is left out of its timeline by default.
///
/// So: every GEMM call of the report is a `cpu_op` whose FLOPs, computed as TraceLens
/// does, are gpuprof's, and whose span holds the launch calls of exactly its kernels;
/// and every copy and set is linked to its call.
fn as_tracelens_reads(events: &[Value], report: &Value) {
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let span = |e: &Value| (ns(&e["ts"]), ns(&e["ts"]) + ns(&e["dur"]));
    let of = |cat: &str| -> Vec<&Value> { events.iter().filter(|e| e["cat"] == cat).collect() };
    let (ops, kernels) = (of("cpu_op"), of("kernel"));
    // The CPU calls: the runtime's and the driver's.
    let launches: Vec<&Value> = [of("cuda_runtime"), of("cuda_driver")].concat();
    // Model FLOPs per GEMM shape label: the report's.
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for k in &kernels {
        if let Some(label) = k["args"]["GEMM"].as_str() {
            *want.entry(label.to_string()).or_default() +=
                k["args"]["model FLOPs"].as_f64().unwrap_or(0.0);
        }
    }
    let report_flops: f64 = report["roofline"]["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["model_flops"].as_f64().unwrap())
        .sum();
    assert_eq!(want.values().sum::<f64>(), report_flops);
    let mut got: BTreeMap<String, f64> = BTreeMap::new();
    for op in &ops {
        let a = &op["args"];
        let dims: Vec<Vec<u64>> = serde_json::from_value(a["Input Dims"].clone()).unwrap();
        let flops = match op["name"].as_str().unwrap() {
            "aten::mm" => 2 * dims[0][0] * dims[1][1] * dims[0][1],
            "aten::bmm" => 2 * dims[0][0] * dims[0][1] * dims[1][2] * dims[0][2],
            other => panic!("an operator TraceLens does not model here: {other}"),
        };
        assert_eq!(flops as f64, a["model FLOPs"].as_f64().unwrap(), "{op}");
        assert_eq!(
            a["Input type"],
            json!(["c10::BFloat16", "c10::BFloat16"]),
            "{op}"
        );
        *got.entry(a["GEMM"].as_str().unwrap().to_string())
            .or_default() += flops as f64;
        // The launch calls inside it on its thread are those of its kernels.
        let (start, end) = span(op);
        let inside: Vec<&&Value> = launches
            .iter()
            .filter(|l| l["pid"] == op["pid"] && l["tid"] == op["tid"])
            .filter(|l| {
                let (s, e) = span(l);
                start <= s && e <= end
            })
            .collect();
        assert_eq!(inside.len() as u64, a["launches"].as_u64().unwrap(), "{op}");
        for l in inside {
            let k = kernels
                .iter()
                .find(|k| k["args"]["correlation"] == l["args"]["correlation"])
                .unwrap();
            assert_eq!(k["args"]["GEMM"], a["GEMM"], "{op} {k}");
        }
    }
    assert_eq!(got, want);
    // Copies and sets: a call with their correlation id, and the flow pair.
    for g in events
        .iter()
        .filter(|e| e["cat"] == "gpu_memcpy" || e["cat"] == "gpu_memset")
    {
        let corr = &g["args"]["correlation"];
        assert!(
            launches.iter().any(|l| &l["args"]["correlation"] == corr),
            "no call for {g}"
        );
        assert!(
            events.iter().any(|f| f["ph"] == "s" && &f["id"] == corr),
            "{g}"
        );
        assert!(
            events.iter().any(|f| f["ph"] == "f"
                && &f["id"] == corr
                && f["pid"] == g["pid"]
                && f["tid"] == g["tid"]),
            "{g}"
        );
    }
}

/// The Python client launching its kernels through the CUDA runtime (`--runtime`:
/// libcudart.so.12 by ctypes, the library PyTorch links): HTA's launch statistics
/// count its `cudaLaunchKernel`s that ran a kernel, the prefill's 2 layers x 6; the
/// decode step's 12 are captured into a graph, whose 4 replays (cuda-python's
/// `cuGraphLaunch`) HTA does not count.
#[test]
fn the_python_client_on_the_runtime_has_hta_launch_statistics() {
    let scratch = Scratch::new("kineto-python-runtime");
    let out = scratch.join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/python/llm_driver.py");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(venv_python())
        .arg(&script)
        .arg("--runtime");
    let rec = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    assert!(
        rec.stdout.starts_with("llm_driver: ok: 2 layers, prompt 128, 4 decode steps (graph replays): 24 launches captured or issued, "),
        "{}",
        rec.stdout
    );
    let v = report_json(&out);
    assert_eq!(v["kernel_count"], 12 + 4 * 12);
    let launches = launch_calls(&v);
    assert_eq!(
        launches,
        BTreeMap::from([
            ("cuGraphLaunch".to_string(), 4),
            ("cudaLaunchKernel".to_string(), 24),
        ])
    );
    let dir = scratch.join("kineto");
    let o = kineto_to(&out, &dir, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let h = hta(&dir);
    assert_eq!(h["launch_stats_rows"], 12);
    // The launches HTA links to GPU work by correlation id: the prefill's (a captured
    // launch runs nothing itself; cuGraphLaunch is not among HTA's launch names).
    assert_eq!(h["linked_launches"], json!({"0": 12}));
}

#[test]
fn four_ranks_are_four_files_and_hta_loads_four_ranks() {
    let scratch = Scratch::new("kineto-ranks");
    let out = scratch.join("out");
    // The ranks in reverse order of their start, as a launcher may start them.
    let script = format!(
        "for r in 3 2 1 0; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 {} --layers 1 --decode-steps 2 & done; wait",
        artifact("cudarc-llm").display()
    );
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o").arg(&out).args(["--", "sh", "-c", &script]);
    let rec = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    let v = report_json(&out);
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 4, "{v:#}");

    let dir = scratch.join("kineto");
    let o = kineto_to(&out, &dir, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).starts_with(&format!("gpuprof: Kineto trace written to {} (4 files, one per process; each rank from its process's RANK): ", dir.display())), "{}", text(&o.stderr));
    let files = files_in(&dir);
    assert_eq!(files.len(), 4);
    // Each file: its process's rank from its environment, and only its own events.
    let mut kernels_of_rank = BTreeMap::new();
    for f in &files {
        let t = read_json(f);
        let rank = t["distributedInfo"]["rank"].as_u64().unwrap();
        assert_eq!(
            t["distributedInfo"],
            json!({"rank": rank, "world_size": 4, "local_rank": rank})
        );
        assert_eq!(t["gpuprof"]["rank_source"], "RANK");
        let pid = t["gpuprof"]["pid"].as_u64().unwrap();
        let p = procs.iter().find(|p| p["pid"] == pid).unwrap();
        assert!(f.ends_with(format!(
            "{}_{pid}.pt.trace.json",
            p["host"].as_str().unwrap()
        )));
        let events = t["traceEvents"].as_array().unwrap();
        let kernels = events.iter().filter(|e| e["cat"] == "kernel").count() as u64;
        assert_eq!(kernels, p["kernels"].as_u64().unwrap());
        assert!(events
            .iter()
            .filter(|e| e["cat"] == "cuda_driver")
            .all(|e| e["pid"] == pid));
        kernels_of_rank.insert(rank.to_string(), kernels);
    }

    let h = hta(&dir);
    let ranks: BTreeMap<String, Value> = (0..4)
        .map(|r| {
            (
                r.to_string(),
                json!({"distributedInfo": {"rank": r, "world_size": 4, "local_rank": r}}),
            )
        })
        .collect();
    assert_eq!(h["ranks"], json!(ranks));
    let (kernels, transfers) = hta_kernels(&h);
    assert_eq!(kernels, report_kernels(&v));
    assert_eq!(transfer_kinds(&transfers), report_transfers(&v));
    // Each rank's launches and token read-backs: the runtime's, in HTA's launch
    // statistics as in the report.
    let linked: BTreeMap<String, u64> = kernels_of_rank
        .iter()
        .map(|(r, k)| (r.clone(), k + 2))
        .collect();
    assert_eq!(h["linked_launches"], json!(linked));
    let calls = api_calls(&v);
    assert_eq!(
        calls["cudaMemcpyAsync"],
        4 * 2,
        "two decode steps on each rank"
    );
    assert_eq!(
        h["launch_stats_rows"],
        json!(launch_calls(&v)["cudaLaunchKernel"] + calls["cudaMemcpyAsync"])
    );
}

const T0: u64 = 1_700_000_000_000_000_000;

fn process_with(pid: u32, host: &str, env: &[&str]) -> Record {
    let Record::Process(p) = process(pid, "./app") else {
        unreachable!()
    };
    Record::Process(Box::new(ProcessInfo {
        host: host.into(),
        start_ns: T0 + u64::from(pid),
        environment: env.iter().map(|e| e.to_string()).collect(),
        ..*p
    }))
}

#[test]
fn hostile_values_stay_in_the_directory_and_every_file_gets_its_own_rank() {
    let dir = Scratch::new("kineto-hostile");
    let session = dir.join("s");
    let kernel_of = |_pid: u32| -> Vec<Record> {
        vec![
            string(1, "_Z1kv"),
            string(2, "step \"rank\": 9"),
            launch(1, 7, T0 + 100, T0 + 200),
            k(1, 1, T0 + 300, T0 + 400),
            marker(marker_flags::START, 1, 7, T0 + 50, 2, 0),
            marker(marker_flags::END, 1, 7, T0 + 500, 0, 0),
        ]
    };
    let parts = vec![
        (
            10,
            [
                vec![process_with(10, "../../etc/x", &["RANK=1", "WORLD_SIZE=2"])],
                kernel_of(10),
            ]
            .concat(),
        ),
        (
            11,
            [
                vec![process_with(11, "node/\n\"2\"", &["RANK=1"])],
                kernel_of(11),
            ]
            .concat(),
        ),
        (
            12,
            [
                vec![process_with(12, "node", &["RANK=-3", "WORLD_SIZE=many"])],
                kernel_of(12),
            ]
            .concat(),
        ),
        // A process whose record was lost.
        (13, kernel_of(13)),
    ];
    std::fs::create_dir_all(&session).unwrap();
    write_parts(&session, &parts).unwrap();
    let out = dir.join("k");
    let o = kineto_to(&session, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(
            "(4 files, one per process; 3 ranks numbered by gpuprof, the others from RANK)"
        ),
        "{}",
        text(&o.stderr)
    );
    let names: Vec<String> = files_in(&out)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "etcx_10.pt.trace.json",
            "host_13.pt.trace.json",
            "node2_11.pt.trace.json",
            "node_12.pt.trace.json"
        ]
    );
    let rank_of = |name: &str| read_json(&out.join(name))["distributedInfo"].clone();
    // The first process with RANK=1 keeps it; the second with it, the one with a
    // RANK that is no rank, and the one without a record take the free ones in order
    // of their start (unknown first).
    assert_eq!(
        rank_of("etcx_10.pt.trace.json"),
        json!({"rank": 1, "world_size": 2})
    );
    assert_eq!(rank_of("host_13.pt.trace.json"), json!({"rank": 0}));
    assert_eq!(rank_of("node2_11.pt.trace.json"), json!({"rank": 2}));
    assert_eq!(rank_of("node_12.pt.trace.json"), json!({"rank": 3}));
    // HTA loads the four, the NVTX name's quotes do not fool its rank scan.
    let h = hta(&out);
    assert_eq!(h["ranks"].as_object().unwrap().len(), 4, "{h}");
    let (kernels, _) = hta_kernels(&h);
    assert_eq!(kernels, BTreeMap::from([("k()".to_string(), (4, 400))]));
    assert_eq!(
        h["linked_launches"],
        json!({"0": 1, "1": 1, "2": 1, "3": 1})
    );
}

#[test]
fn nothing_to_trace_and_directories_not_ours_are_errors() {
    let dir = Scratch::new("kineto-errors");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    write_parts(&empty, &[(5, vec![process_with(5, "h", &["RANK=0"])])]).unwrap();
    let out = dir.join("k");
    let o = kineto_to(&empty, &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!("gpuprof: error: {}: the session has no kernel, copy, set, launch call or NVTX range: no Kineto trace written\n", empty.display())
    );
    assert!(!out.exists());

    // A window that holds nothing.
    let session = dir.join("s");
    std::fs::create_dir_all(&session).unwrap();
    write_parts(
        &session,
        &[(
            5,
            vec![
                process_with(5, "h", &[]),
                string(1, "k"),
                launch(1, 7, T0 + 100, T0 + 200),
                k(1, 1, T0 + 300, T0 + 400),
            ],
        )],
    )
    .unwrap();
    let o = kineto_to(&session, &out, &["--from", "10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).ends_with("no kernel, copy, set, launch call or NVTX range in the window: no Kineto trace written\n"), "{}", text(&o.stderr));
    assert!(!out.exists());

    // An output directory holding anything but a Kineto trace is left alone.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.json"), b"{}").unwrap();
    let o = kineto_to(&session, &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains(
            "holds \"notes.json\", not a Kineto trace file (*.pt.trace.json or .json.gz)"
        ),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(files_in(&out), vec![out.join("notes.json")]);
    // A Kineto trace gpuprof did not write (the PyTorch profiler's) is neither mixed
    // with nor removed; an earlier gpuprof trace there is replaced.
    let own = dir.join("own");
    std::fs::create_dir_all(&own).unwrap();
    let theirs = own.join("worker0.123.pt.trace.json");
    let pytorch = b"{\n  \"schemaVersion\": 1,\n  \"traceEvents\": []\n}\n";
    std::fs::write(&theirs, pytorch).unwrap();
    let o = kineto_to(&session, &own, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("holds \"worker0.123.pt.trace.json\", a Kineto trace gpuprof did not write"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), pytorch);
    std::fs::remove_file(&theirs).unwrap();
    // A link named as a trace file is named as a link, and left alone.
    let link = own.join("planted.pt.trace.json");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    let o = kineto_to(&session, &own, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("holds \"planted.pt.trace.json\", a symbolic link, not a trace file:"),
        "{}",
        text(&o.stderr)
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    std::fs::remove_file(&link).unwrap();
    let o = kineto_to(&session, &own, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let first = files_in(&own);
    assert_eq!(first.len(), 1);
    let o = kineto_to(&session, &own, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(files_in(&own), first);
    // A file is not a directory.
    let file = out.join("notes.json");
    let o = kineto_to(&session, &file, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("is not a directory: the Kineto trace is a directory of files"),
        "{}",
        text(&o.stderr)
    );
    // Not a session at all.
    let o = gpuprof(&["trace", out.to_str().unwrap(), "--format", "kineto"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no session here"),
        "{}",
        text(&o.stderr)
    );
    // A damaged part: what verifies is written, the damage named, exit 3.
    let kernels = session.join("parts/00000001/kernels.parquet");
    let mut b = std::fs::read(&kernels).unwrap();
    b[40] ^= 0x10;
    std::fs::write(&kernels, b).unwrap();
    let good = dir.join("good");
    let o = kineto_to(&session, &good, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("kernels.parquet"),
        "{}",
        text(&o.stderr)
    );
    let t = read_json(&files_in(&good)[0]);
    assert!(t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["cat"] != "kernel"));
}

/// Decode as a CUDA graph with default settings: the first graph launch hands the GPU
/// over to PM sampling, and the report fits the graph kernels' DRAM bytes per class.
/// In every trace format each launch of such a class carries its class's fitted rate
/// times its duration (Kineto: "DRAM bytes (fitted to PM sampling)", Perfetto and
/// Chrome: `dram_bytes_fitted`), never beside measured bytes, and per class they add
/// up to the report's fitted bytes (per launch times launches): one total in all.
#[test]
fn kernels_without_counters_carry_the_fitted_bytes_that_add_up_to_the_report() {
    let scratch = Scratch::new("kineto-fitted");
    let session = scratch.join("s");
    gpuprof_tests::record_cudarc_llm_with(
        &session,
        "13.4",
        &["--graph-decode", "--decode-steps", "60"],
        &[],
    );
    let fitted = fitted_bytes_by_class(&report_json(&session));

    let out = scratch.join("k");
    let o = kineto_to(&session, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut events = Vec::new();
    for file in files_in(&out) {
        let t = read_json(&file);
        events.extend(t["traceEvents"].as_array().expect("events").iter().cloned());
    }
    let kineto = fitted_in(
        &events,
        "DRAM bytes",
        "DRAM bytes (fitted to PM sampling)",
        "GEMM",
    );
    assert_same_totals("kineto", &kineto, &fitted);

    let chrome_file = scratch.join("t.json");
    let o = gpuprof(&[
        "trace",
        session.to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        chrome_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let chrome = read_json(&chrome_file);
    let events = chrome["traceEvents"].as_array().expect("events");
    let chrome = fitted_in(events, "dram_bytes", "dram_bytes_fitted", "gemm");
    assert_same_totals("chrome", &chrome, &fitted);

    let perfetto_file = scratch.join("t.perfetto-trace");
    let o = gpuprof(&[
        "trace",
        session.to_str().unwrap(),
        "-o",
        perfetto_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = read_perfetto_trace(&perfetto_file);
    let perfetto = fitted_in(
        t["slices"].as_array().expect("slices"),
        "dram_bytes",
        "dram_bytes_fitted",
        "gemm",
    );
    assert_same_totals("perfetto", &perfetto, &fitted);
}

/// Class key -> Σ fitted bytes over the kernel events of `events` whose argument
/// `fitted` is set (never beside `measured`); and the classes with an event that
/// has `measured`.
fn fitted_in(
    events: &[Value],
    measured: &str,
    fitted: &str,
    gemm: &str,
) -> (BTreeMap<String, f64>, BTreeSet<String>) {
    let mut by_class: BTreeMap<String, f64> = BTreeMap::new();
    let mut measured_classes = BTreeSet::new();
    for e in events {
        let a = &e["args"];
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let key = class_key(name, &a["grid"], &a["block"], &a[gemm]);
        if !a[measured].is_null() {
            assert!(a[fitted].is_null(), "measured and fitted: {e}");
            measured_classes.insert(key);
        } else if let Some(bytes) = a[fitted].as_f64() {
            *by_class.entry(key).or_default() += bytes;
        }
    }
    (by_class, measured_classes)
}

/// `traced` ([`fitted_in`]) has fitted bytes for the classes the report fits whose
/// launches measured none (the report takes a class's bytes from the fit only then),
/// with the report's totals (to rounding).
fn assert_same_totals(
    format: &str,
    (traced, measured): &(BTreeMap<String, f64>, BTreeSet<String>),
    report: &BTreeMap<String, f64>,
) {
    let want: Vec<&String> = report.keys().filter(|k| !measured.contains(*k)).collect();
    assert_eq!(
        traced.keys().collect::<Vec<_>>(),
        want,
        "{format}: the classes with fitted bytes"
    );
    // The decode GEMVs of 2 layers (4 shapes) at least.
    assert!(traced.len() >= 4, "{format}: {traced:#?}");
    for (key, got) in traced {
        let want = report[key];
        assert!(
            (got - want).abs() <= 1e-9 * want.abs(),
            "{format}: {key}: trace {got}, report {want}"
        );
    }
}
