//! `gpuprof trace` in Perfetto's protobuf format, read back with Perfetto's own
//! classes (`tests/perfetto/read_trace.py`, which also checks the rules Perfetto's
//! trace processor relies on): a run recorded on the simulated stack against its
//! report and its Chrome JSON; launches matched to their kernels across parts; the
//! time window; damage; bad arguments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use gpuprof_collector::output::trace::perfetto::PerfettoWriter;
use gpuprof_collector::output::trace::TraceBuilder;
use gpuprof_collector::store::write_parts;
use gpuprof_tests::{
    artifact, gpuprof_command, read_perfetto_trace, record_on_sim, slices_per_track, track_names,
    Scratch, TimedChild,
};
use serde_json::{json, Value};
use wire::testing::{graph_kernel, k, launch, marker, memcpy, memset, process, string};
use wire::{marker_flags, Launch, Record};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn gpuprof(args: &[&str]) -> Output {
    gpuprof_command().args(args).output().unwrap()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A kernel slice's identity in these tests: its correlation id and graph node.
fn ids(s: &Value) -> (u64, u64) {
    (
        s["args"]["correlation_id"].as_u64().unwrap(),
        s["args"]["graph_node_id"].as_u64().unwrap_or(0),
    )
}

/// A slice as (category, ids).
type End = (String, (u64, u64));
/// A slice as (track name, category, name, start ns, duration ns, arguments).
type Row = (String, String, String, u64, u64, String);
/// A flow as (call correlation id, the ids of the kernel, copy or set it goes into).
type LaunchFlow = (u64, (u64, u64));

/// Each flow as (category, ids) of its two slices.
fn flows(t: &Value) -> BTreeSet<(End, End)> {
    let slices = t["slices"].as_array().unwrap();
    let end = |i: &Value| {
        let s = &slices[i.as_u64().unwrap() as usize];
        (s["category"].as_str().unwrap().to_string(), ids(s))
    };
    t["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (end(&f[0]), end(&f[1])))
        .collect()
}

/// The slices' (category, name, ts, dur) in timestamp order.
fn spans(t: &Value) -> Vec<(String, String, u64, u64)> {
    t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["category"].as_str().unwrap().to_string(),
                s["name"].as_str().unwrap().to_string(),
                s["ts"].as_u64().unwrap(),
                s["dur"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Every slice of the Chrome JSON `v` as (track name, category, name, start ns, dur
/// ns, args): complete events on their thread or stream, async ranges on "NVTX
/// ranges"; and its flows as ((launch correlation id), (kernel ids)).
fn chrome_slices(v: &Value) -> (Vec<Row>, BTreeSet<LaunchFlow>) {
    let origin = v["otherData"]["time_base_ns"].as_u64().unwrap();
    let ns = |us: &Value| origin + (us.as_f64().unwrap() * 1000.0).round() as u64;
    let events = v["traceEvents"].as_array().unwrap();
    let mut threads = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        threads.insert(
            (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
            e["args"]["name"].as_str().unwrap().to_string(),
        );
    }
    let mut out = Vec::new();
    for e in events {
        let track = match e["ph"].as_str().unwrap() {
            "X" => threads[&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())].clone(),
            "b" => "NVTX ranges".to_string(),
            _ => continue,
        };
        let dur = if e["ph"] == "b" {
            let end = events
                .iter()
                .find(|x| x["ph"] == "e" && x["id"] == e["id"])
                .unwrap();
            ns(&end["ts"]) - ns(&e["ts"])
        } else {
            (e["dur"].as_f64().unwrap() * 1000.0).round() as u64
        };
        out.push((
            track,
            e["cat"].as_str().unwrap().to_string(),
            e["name"].as_str().unwrap().to_string(),
            ns(&e["ts"]),
            dur,
            e["args"].to_string(),
        ));
    }
    out.sort();
    // A flow's ends: the slice on its (pid, tid) holding its timestamp.
    let holding = |f: &Value, cats: &[&str]| {
        let t = ns(&f["ts"]);
        events
            .iter()
            .find(|e| {
                e["ph"] == "X"
                    && cats.iter().any(|c| e["cat"] == *c)
                    && e["pid"] == f["pid"]
                    && e["tid"] == f["tid"]
                    && ns(&e["ts"]) <= t
                    && t <= ns(&e["ts"]) + (e["dur"].as_f64().unwrap() * 1000.0).round() as u64
            })
            .unwrap_or_else(|| panic!("no {cats:?} under the flow event {f}"))
    };
    let flows = events
        .iter()
        .filter(|e| e["ph"] == "s")
        .map(|s| {
            let f = events
                .iter()
                .find(|x| x["ph"] == "f" && x["id"] == s["id"])
                .unwrap();
            (
                holding(s, &["cuda_api"])["args"]["correlation_id"]
                    .as_u64()
                    .unwrap(),
                ids(holding(f, &["kernel", "memcpy", "memset"])),
            )
        })
        .collect();
    (out, flows)
}

/// The Perfetto slices as [`chrome_slices`] gives the Chrome ones.
fn perfetto_slices(t: &Value) -> (Vec<Row>, BTreeSet<LaunchFlow>) {
    let names = track_names(t);
    let mut out: Vec<_> = t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                names[&s["track"].as_u64().unwrap()].clone(),
                s["category"].as_str().unwrap().to_string(),
                s["name"].as_str().unwrap().to_string(),
                s["ts"].as_u64().unwrap(),
                s["dur"].as_u64().unwrap(),
                s["args"].to_string(),
            )
        })
        .collect();
    out.sort();
    let slices = t["slices"].as_array().unwrap();
    // A flow into a kernel comes from its launch, or (a graph's) from the kernel
    // before it in the chain, whose launch is the same; into a copy or set, from
    // its call.
    let flows = t["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let to = &slices[f[1].as_u64().unwrap() as usize];
            assert!(
                ["kernel", "memcpy", "memset"]
                    .iter()
                    .any(|c| to["category"] == *c),
                "a flow into {to}"
            );
            (to["args"]["correlation_id"].as_u64().unwrap(), ids(to))
        })
        .collect();
    (out, flows)
}

fn report_json(dir: &Path) -> Value {
    let o = gpuprof(&["report", "--format", "json", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Per name: (count, total duration, total bytes) of the slices of `category`.
fn totals(t: &Value, category: &str) -> BTreeMap<String, (u64, u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for s in t["slices"].as_array().unwrap() {
        if s["category"] != category {
            continue;
        }
        let e = out
            .entry(s["name"].as_str().unwrap().to_string())
            .or_default();
        e.0 += 1;
        e.1 += s["dur"].as_u64().unwrap();
        e.2 += s["args"]["bytes"].as_u64().unwrap_or(0);
    }
    out
}

#[test]
fn a_recorded_run_reads_back_with_its_report_and_its_chrome_json() {
    let scratch = Scratch::new("perfetto-recorded");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let rec = TimedChild::spawn(cmd, Duration::from_secs(180)).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    let v = report_json(&out);
    assert_eq!(v["kernel_count"], 107);

    // The default: Perfetto's format, beside the session.
    let o = gpuprof(&["trace", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = out.join("trace.perfetto-trace");
    let transfers = v["transfers"].as_array().unwrap();
    let count_of = |memset: bool| {
        transfers
            .iter()
            .filter(|t| (t["kind"] == "memset") == memset)
            .map(|t| t["count"].as_u64().unwrap())
            .sum::<u64>()
    };
    let (copies, sets) = (count_of(false), count_of(true));
    // The traced calls other than launches: as many as the report's.
    let api_calls: u64 = v["api_calls"]["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["traced"] == true && r["class"] != "launch")
        .map(|r| r["calls"].as_u64().unwrap())
        .sum();
    let summary = format!(
        "107 kernels, {}, {}, 107 launch calls, {}, 5 NVTX ranges, {} flows from CPU call to GPU work",
        plural(copies, "copy", "copies"),
        plural(sets, "set", "sets"),
        plural(api_calls, "other CUDA call", "other CUDA calls"),
        // A flow from each launch to its kernel and from each copy's and set's call.
        107 + copies + sets
    );
    assert_eq!(
        text(&o.stderr),
        format!(
            "gpuprof: trace written to {}: {summary}; open it in ui.perfetto.dev\n",
            file.display()
        )
    );
    let t = read_perfetto_trace(&file);

    // One process, its main thread, its stream; the process's command line.
    let p = &v["processes"][0];
    let pid = p["pid"].as_u64().unwrap();
    let command: Vec<&str> = p["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let tracks = t["tracks"].as_array().unwrap();
    assert_eq!(tracks.len(), 3, "{tracks:?}");
    assert_eq!(
        tracks[0],
        json!({"uuid": 1, "name": null, "parent": null, "pid": pid, "tid": null,
               "process_name": command.join(" "), "cmdline": command})
    );
    // The thread and the stream, in the order they first got a slice.
    let mut rest: Vec<Value> = tracks[1..]
        .iter()
        .map(|t| json!([t["name"], t["parent"], t["pid"], t["tid"]]))
        .collect();
    rest.sort_by_key(|t| t.to_string());
    assert_eq!(
        rest,
        [
            json!(["GPU 0 stream 1", 1, null, null]),
            json!([null, null, pid, pid]),
        ]
    );

    // Slices per track and category, as the report counts them: every launch call of
    // the workload runs one kernel; the other traced calls are the report's.
    let thread = format!("thread {pid}");
    let stream = "GPU 0 stream 1".to_string();
    let nvtx: u64 = v["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        slices_per_track(&t),
        BTreeMap::from([
            ((thread.clone(), "cuda_api".to_string()), 107 + api_calls),
            ((thread, "nvtx".to_string()), nvtx),
            ((stream.clone(), "kernel".to_string()), 107),
            ((stream.clone(), "memcpy".to_string()), copies),
            ((stream, "memset".to_string()), sets),
        ])
    );
    // Kernels by name: calls and GPU time as the report has them.
    let mut want: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for k in v["kernels"].as_array().unwrap() {
        let e = want
            .entry(k["name"].as_str().unwrap().to_string())
            .or_default();
        e.0 += k["calls"].as_u64().unwrap();
        e.1 += k["total_ns"].as_u64().unwrap();
    }
    assert_eq!(totals(&t, "kernel"), want);
    // Copies and sets by kind: count, time and bytes.
    let want = |memset: bool| -> BTreeMap<String, (u64, u64, u64)> {
        transfers
            .iter()
            .filter(|t| (t["kind"] == "memset") == memset)
            .map(|t| {
                let kind = t["kind"].as_str().unwrap();
                (
                    if memset {
                        "memset".to_string()
                    } else {
                        format!("memcpy {kind}")
                    },
                    (
                        t["count"].as_u64().unwrap(),
                        t["total_ns"].as_u64().unwrap(),
                        t["bytes"].as_u64().unwrap(),
                    ),
                )
            })
            .collect()
    };
    assert_eq!(totals(&t, "memcpy"), want(false));
    assert_eq!(totals(&t, "memset"), want(true));
    // NVTX ranges: count and wall time.
    let ranges: BTreeMap<String, (u64, u64)> = v["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (r["count"].as_u64().unwrap(), r["wall_ns"].as_u64().unwrap()),
            )
        })
        .collect();
    let got: BTreeMap<String, (u64, u64)> = totals(&t, "nvtx")
        .into_iter()
        .map(|(n, (c, d, _))| (n, (c, d)))
        .collect();
    assert_eq!(got, ranges);
    // Every launch is inside "prefill" or a "decode" step on its thread (the other
    // calls may be outside: allocations before, frees after).
    for s in t["slices"].as_array().unwrap() {
        if s["category"] == "cuda_api" && s["name"] != "cuLaunchKernel" {
            continue;
        }
        let depth = if s["category"] == "cuda_api" { 1 } else { 0 };
        assert_eq!(s["depth"], depth, "{s}");
    }

    // A flow from each launch call to its kernel and from each copy's or set's call to
    // its copy or set, the same correlation id at both ends, the call starting first.
    let slices = t["slices"].as_array().unwrap();
    let f = t["flows"].as_array().unwrap();
    assert_eq!(f.len() as u64, 107 + copies + sets);
    let mut into = BTreeSet::new();
    for pair in f {
        let (a, b) = (
            &slices[pair[0].as_u64().unwrap() as usize],
            &slices[pair[1].as_u64().unwrap() as usize],
        );
        assert_eq!(a["category"], json!("cuda_api"));
        let kind = match a["name"].as_str().unwrap() {
            "cuLaunchKernel" | "cudaLaunchKernel" => "kernel",
            n if n.starts_with("cuMemcpy") || n.starts_with("cudaMemcpy") => "memcpy",
            n if n.starts_with("cuMemset") => "memset",
            n => panic!("a flow from {n}"),
        };
        assert_eq!(b["category"], json!(kind), "{a} {b}");
        assert_eq!(a["args"]["correlation_id"], b["args"]["correlation_id"]);
        assert!(a["ts"].as_u64() < b["ts"].as_u64(), "{a} {b}");
        assert!(into.insert(pair[1].as_u64().unwrap()), "two flows into {b}");
    }

    // Names, categories and argument names interned once each, in one generation.
    let distinct = |field: &str| -> usize {
        slices
            .iter()
            .map(|s| s[field].as_str().unwrap())
            .collect::<BTreeSet<_>>()
            .len()
    };
    let arg_names: BTreeSet<&str> = slices
        .iter()
        .flat_map(|s| s["args"].as_object().unwrap().keys().map(String::as_str))
        .collect();
    assert_eq!(arg_names.len(), 31);
    assert_eq!(
        t["sequences"],
        json!({"1": {"clears": 1, "interned": {
            "names": distinct("name"), "categories": distinct("category"),
            "annotation_names": arg_names.len()}}})
    );
    // One clock snapshot: BOOTTIME (the trace's clock) reads as REALTIME.
    let clocks = t["clock_snapshots"].as_array().unwrap();
    assert_eq!(clocks.len(), 1);
    assert_eq!(clocks[0]["6"], clocks[0]["1"]);

    // The same slices, arguments and flows as the Chrome JSON.
    let json_file = scratch.join("t.json");
    let o = gpuprof(&[
        "trace",
        out.to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        json_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        format!(
            "gpuprof: trace written to {}: {summary}; open it in ui.perfetto.dev or chrome://tracing\n",
            json_file.display()
        )
    );
    let chrome: Value = serde_json::from_slice(&std::fs::read(&json_file).unwrap()).unwrap();
    let (c_slices, c_flows) = chrome_slices(&chrome);
    let (p_slices, p_flows) = perfetto_slices(&t);
    assert_eq!(
        p_slices.len(),
        (107 + 107 + api_calls + copies + sets + nvtx) as usize
    );
    assert_eq!(p_slices, c_slices);
    assert_eq!(p_flows.len() as u64, 107 + copies + sets);
    assert_eq!(p_flows, c_flows);
}

const T0: u64 = 1_700_000_000_000_000_000;
const PID: u32 = 100;
const THREAD: u64 = 7;

fn graph_launch(corr: u32, start: u64, end: u64) -> Record {
    Record::Launch(Launch {
        correlation_id: corr,
        cbid: 514,
        runtime: false,
        thread_id: THREAD,
        start_ns: start,
        end_ns: end,
    })
}

/// Four parts of one process: launches in the first whose kernels come in the same
/// part and the next (a graph's two), two parts later (held long enough), three parts
/// later (too late) and never; a push/pop range over everything and a start/end
/// range; a copy, a set, and an end without a start.
fn parts() -> Vec<(u32, Vec<Record>)> {
    const S: u32 = marker_flags::START;
    const E: u32 = marker_flags::END;
    vec![
        (
            PID,
            vec![
                process(PID, "./app --steps 2"),
                string(1, "_Z1kv"),
                string(2, "phase"),
                string(3, "graph_kernel"),
                launch(1, THREAD, T0 + 100, T0 + 200),
                launch(2, THREAD, T0 + 300, T0 + 400),
                graph_launch(3, T0 + 500, T0 + 600),
                launch(4, THREAD, T0 + 700, T0 + 800),
                graph_kernel(3, 3, 11, T0 + 1000, T0 + 1500),
                marker(S, 1, THREAD, T0 + 50, 2, 0),
                marker(S, 2, 0, T0 + 60, 2, 0),
            ],
        ),
        (
            PID,
            vec![
                graph_kernel(3, 3, 12, T0 + 1600, T0 + 2000),
                memcpy(1, 4096, T0 + 2100, T0 + 2200),
            ],
        ),
        (
            PID,
            vec![
                k(1, 1, T0 + 2300, T0 + 2400),
                marker(E, 2, 0, T0 + 2500, 0, 0),
            ],
        ),
        (
            PID,
            vec![
                k(1, 2, T0 + 2600, T0 + 2700),
                memset(64, T0 + 2800, T0 + 2900),
                marker(E, 1, THREAD, T0 + 3000, 0, 0),
                marker(E, 9, THREAD, T0 + 3100, 0, 0),
            ],
        ),
    ]
}

fn kernel_span(corr: u64, node: u64) -> End {
    ("kernel".to_string(), (corr, node))
}

fn launch_span(corr: u64) -> End {
    ("cuda_api".to_string(), (corr, 0))
}

#[test]
fn launches_wait_two_parts_for_their_kernels() {
    let dir = Scratch::new("perfetto-parts");
    write_parts(dir.path(), &parts()).unwrap();
    let file = dir.join("t.perfetto-trace");
    let o = gpuprof(&[
        "trace",
        dir.path().to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        format!(
            "gpuprof: trace written to {}: 4 kernels, 1 copy, 1 set, 4 launch calls, 2 NVTX ranges, \
             3 flows from launch to kernel; open it in ui.perfetto.dev\n\
             gpuprof: 2 launch calls have no kernel in their part of the session or the 2 after it \
             (captured into a CUDA graph, failed, or the kernel's record was lost): no flow from them\n\
             gpuprof: 1 NVTX range end without a start: ignored\n",
            file.display()
        )
    );
    let t = read_perfetto_trace(&file);
    let n = |s: &str| s.to_string();
    assert_eq!(
        spans(&t),
        [
            (n("nvtx"), n("phase"), T0 + 50, 2950),
            (n("nvtx"), n("phase"), T0 + 60, 2440),
            (n("cuda_api"), n("cuLaunchKernel"), T0 + 100, 100),
            (n("cuda_api"), n("cuLaunchKernel"), T0 + 300, 100),
            (n("cuda_api"), n("cuGraphLaunch"), T0 + 500, 100),
            (n("cuda_api"), n("cuLaunchKernel"), T0 + 700, 100),
            (n("kernel"), n("graph_kernel"), T0 + 1000, 500),
            (n("kernel"), n("graph_kernel"), T0 + 1600, 400),
            (n("memcpy"), n("memcpy HtoD"), T0 + 2100, 100),
            (n("kernel"), n("k()"), T0 + 2300, 100),
            (n("kernel"), n("k()"), T0 + 2600, 100),
            (n("memset"), n("memset"), T0 + 2800, 100),
        ]
    );
    // The graph's flow steps from its launch through its kernels; the kernel two
    // parts after its launch gets its flow, the one three parts after does not.
    assert_eq!(
        flows(&t),
        BTreeSet::from([
            (launch_span(3), kernel_span(3, 11)),
            (kernel_span(3, 11), kernel_span(3, 12)),
            (launch_span(1), kernel_span(1, 0)),
        ])
    );
    let names: Vec<String> = track_names(&t).into_values().collect();
    assert_eq!(
        names,
        ["process 100", "thread 7", "GPU 0 stream 7", "NVTX ranges"]
    );
    let tracks = t["tracks"].as_array().unwrap();
    assert_eq!(tracks[0]["cmdline"], json!(["./app", "--steps", "2"]));
    assert_eq!(tracks[3]["parent"], tracks[0]["uuid"]);

    // The Chrome JSON of the same session: the same flows, s/f pairs.
    let json_file = dir.join("t.json");
    let o = gpuprof(&[
        "trace",
        dir.path().to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        json_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let chrome: Value = serde_json::from_slice(&std::fs::read(&json_file).unwrap()).unwrap();
    let (c_slices, c_flows) = chrome_slices(&chrome);
    let (p_slices, p_flows) = perfetto_slices(&t);
    assert_eq!(p_slices, c_slices);
    assert_eq!(
        c_flows,
        BTreeSet::from([(3, (3, 11)), (3, (3, 12)), (1, (1, 0))])
    );
    assert_eq!(p_flows, c_flows);
}

/// `gpuprof trace` of the [`parts`] session with `args`, read back.
fn windowed(dir: &Path, args: &[&str]) -> (Value, String) {
    let file = dir.join("w.perfetto-trace");
    let mut all = vec!["trace", dir.to_str().unwrap(), "-o", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = gpuprof(&all);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (read_perfetto_trace(&file), text(&o.stderr))
}

#[test]
fn from_and_to_select_the_slices_overlapping_the_window() {
    let dir = Scratch::new("perfetto-window");
    write_parts(dir.path(), &parts()).unwrap();
    let n = |s: &str| s.to_string();
    // The origin is the first timestamp, the push/pop range's start at T0 + 50: the
    // window is T0 + 500 to T0 + 2200, both ends included.
    let (t, stderr) = windowed(dir.path(), &["--from", "0.00000045", "--to", "0.00000215"]);
    assert_eq!(
        spans(&t),
        [
            (n("nvtx"), n("phase"), T0 + 50, 2950),
            (n("nvtx"), n("phase"), T0 + 60, 2440),
            (n("cuda_api"), n("cuGraphLaunch"), T0 + 500, 100),
            (n("cuda_api"), n("cuLaunchKernel"), T0 + 700, 100),
            (n("kernel"), n("graph_kernel"), T0 + 1000, 500),
            (n("kernel"), n("graph_kernel"), T0 + 1600, 400),
            (n("memcpy"), n("memcpy HtoD"), T0 + 2100, 100),
        ]
    );
    assert_eq!(
        flows(&t),
        BTreeSet::from([
            (launch_span(3), kernel_span(3, 11)),
            (kernel_span(3, 11), kernel_span(3, 12)),
        ])
    );
    assert!(
        stderr.starts_with(&format!(
            "gpuprof: trace written to {}: 2 kernels, 1 copy, 0 sets, 2 launch calls, \
             2 NVTX ranges, 2 flows from launch to kernel (what overlaps 0.00000045 s to \
             0.00000215 s after the session's first timestamp); open it in ui.perfetto.dev\n",
            dir.join("w.perfetto-trace").display()
        )),
        "{stderr}"
    );

    // A window of one instant: what ends exactly then, and the ranges around it.
    let (t, _) = windowed(dir.path(), &["--from", "0.00000215", "--to", "0.00000215"]);
    assert_eq!(
        spans(&t),
        [
            (n("nvtx"), n("phase"), T0 + 50, 2950),
            (n("nvtx"), n("phase"), T0 + 60, 2440),
            (n("memcpy"), n("memcpy HtoD"), T0 + 2100, 100),
        ]
    );
    // --from alone: to the end; a kernel whose launch is before the window has no flow.
    let (t, stderr) = windowed(dir.path(), &["--from", "0.000002251"]);
    assert_eq!(
        spans(&t),
        [
            (n("nvtx"), n("phase"), T0 + 50, 2950),
            (n("nvtx"), n("phase"), T0 + 60, 2440),
            (n("kernel"), n("k()"), T0 + 2300, 100),
            (n("kernel"), n("k()"), T0 + 2600, 100),
            (n("memset"), n("memset"), T0 + 2800, 100),
        ]
    );
    assert_eq!(flows(&t), BTreeSet::new());
    assert!(
        stderr.contains(
            " (what overlaps 0.000002251 s to its end after the session's first timestamp);"
        ),
        "{stderr}"
    );
    // --to alone: from the start.
    let (t, _) = windowed(dir.path(), &["--to", "0.00000005"]);
    assert_eq!(
        spans(&t),
        [
            (n("nvtx"), n("phase"), T0 + 50, 2950),
            (n("nvtx"), n("phase"), T0 + 60, 2440),
            (n("cuda_api"), n("cuLaunchKernel"), T0 + 100, 100),
        ]
    );
    // Past the end: nothing.
    let (t, _) = windowed(dir.path(), &["--from", "1"]);
    assert_eq!(spans(&t), []);
    assert_eq!(t["packets"], 0);

    // The Chrome JSON of a window: times still from the session's first timestamp.
    let json_file = dir.join("w.json");
    let o = gpuprof(&[
        "trace",
        dir.path().to_str().unwrap(),
        "--format",
        "chrome",
        "--from",
        "0.00000045",
        "--to",
        "0.00000215",
        "-o",
        json_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&std::fs::read(&json_file).unwrap()).unwrap();
    assert_eq!(v["otherData"]["time_base_ns"], T0 + 50);
    let copy = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cat"] == "memcpy")
        .unwrap();
    assert_eq!(
        (copy["ts"].as_f64(), copy["dur"].as_f64()),
        (Some(2.05), Some(0.1))
    );
    let (c_slices, _) = chrome_slices(&v);
    assert_eq!(c_slices.len(), 7);
}

#[test]
fn bad_window_arguments_are_errors_and_write_nothing() {
    let dir = Scratch::new("perfetto-bad-args");
    write_parts(dir.path(), &parts()).unwrap();
    let d = dir.path().to_str().unwrap();
    let o = gpuprof(&["trace", d, "--from", "2", "--to", "1.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "gpuprof: error: --from 2 is after --to 1.5: the window would hold nothing\n"
    );
    for (arg, value, why) in [
        (
            "--from",
            "-1",
            "-1 s is before the session's first timestamp: a time is counted from it, 0 or more seconds",
        ),
        ("--to", "-0.5", "-0.5 s is before the session's first timestamp: a time is counted from it, 0 or more seconds"),
        ("--to", "soon", "\"soon\" is not a number of seconds"),
        ("--from", "inf", "\"inf\" is not a finite number of seconds"),
        ("--from", "NaN", "\"NaN\" is not a finite number of seconds"),
    ] {
        let o = gpuprof(&["trace", d, arg, value]);
        assert_eq!(o.status.code(), Some(2), "{arg} {value}");
        let stderr = text(&o.stderr);
        assert!(
            stderr.starts_with(&format!(
                "error: invalid value '{value}' for '{arg} <S>': {why}\n"
            )),
            "{stderr}"
        );
    }
    let o = gpuprof(&["trace", d, "--format", "svg"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("error: invalid value 'svg' for '--format <FORMAT>'\n  [possible values: perfetto, chrome, kineto]\n"),
        "{}",
        text(&o.stderr)
    );
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["index.json", "parts"]);
}

#[test]
fn a_damaged_part_file_is_left_out_named_and_exits_3() {
    let dir = Scratch::new("perfetto-damage");
    write_parts(dir.path(), &parts()).unwrap();
    // The third part's kernels: the kernel of launch 1 is lost, and with it its flow.
    let file = dir.join("parts/00000003/kernels.parquet");
    let bytes = std::fs::metadata(&file).unwrap().len();
    let mut b = std::fs::read(&file).unwrap();
    b[10] ^= 0x10;
    std::fs::write(&file, b).unwrap();
    let out = dir.join("t.perfetto-trace");
    let o = gpuprof(&[
        "trace",
        dir.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let stderr = text(&o.stderr);
    let d = dir.path().display();
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "gpuprof: warning: {d}: parts/00000003/kernels.parquet is damaged (checksum mismatch"
        )) && lines[0].ends_with("; its 1 records are left out of the trace"),
        "{stderr}"
    );
    assert_eq!(
        lines[1],
        format!(
            "gpuprof: trace written to {}: 3 kernels, 1 copy, 1 set, 4 launch calls, 2 NVTX ranges, \
             2 flows from launch to kernel; open it in ui.perfetto.dev",
            out.display()
        )
    );
    assert_eq!(
        lines[lines.len() - 1],
        format!(
            "gpuprof: error: {d}: 1 damaged file (1 record, {bytes} bytes) skipped; the trace covers the rest of the 4 parts"
        )
    );
    let t = read_perfetto_trace(&out);
    assert_eq!(
        flows(&t),
        BTreeSet::from([
            (launch_span(3), kernel_span(3, 11)),
            (kernel_span(3, 11), kernel_span(3, 12)),
        ])
    );
}

#[test]
fn interned_names_start_again_past_the_limit() {
    // Ten kernels of ten names, the state cleared whenever four names are interned:
    // before the 5th and the 9th kernel, each generation interning its names, the
    // category and the 11 argument names again.
    let mut records = vec![(PID, process(PID, "./app"))];
    for i in 0..10u32 {
        records.push((PID, string(i + 1, &format!("kernel_{i}"))));
    }
    for i in 0..10u32 {
        let start = T0 + u64::from(i) * 100;
        records.push((PID, k(i + 1, i + 1, start, start + 50)));
    }
    let mut b = TraceBuilder::new(PerfettoWriter::with_interning_limit(Vec::new(), 4), None);
    b.part(&records).unwrap();
    let (writer, stats) = b.finish().unwrap();
    assert_eq!(stats.kernels, 10);
    let dir = Scratch::new("perfetto-interning");
    let file = dir.join("t.perfetto-trace");
    std::fs::write(&file, writer.into_inner()).unwrap();
    let t = read_perfetto_trace(&file);
    assert_eq!(
        t["sequences"],
        json!({"1": {"clears": 3, "interned": {"names": 10, "categories": 3, "annotation_names": 33}}})
    );
    let names: Vec<String> = spans(&t).into_iter().map(|s| s.1).collect();
    let want: Vec<String> = (0..10).map(|i| format!("kernel_{i}")).collect();
    assert_eq!(names, want);
}

#[test]
fn records_that_cannot_be_true_are_left_out_and_said_so_by_every_output_but_the_report() {
    let dir = Scratch::new("perfetto-impossible");
    let mut records = parts();
    // A kernel that ends before it starts, two launch calls that last over a year.
    records.push((
        PID,
        vec![
            k(1, 90, 500, 400),
            launch(91, 7, 0, u64::MAX),
            launch(92, 7, 1, u64::MAX),
        ],
    ));
    write_parts(dir.path(), &records).unwrap();
    let d = dir.path().display();
    let warning = format!(
        "gpuprof: warning: {d}: 3 records whose values cannot be true left out of the {{}} \
         (1 kernel: ends before it starts; 2 launch: lasts longer than a year; \
         `gpuprof report` lists them)"
    );
    let session = dir.path().to_str().unwrap();
    for (what, args) in [
        ("trace", vec!["trace", session, "-o"]),
        ("trace", vec!["trace", session, "--format", "kineto", "-o"]),
        ("profile", vec!["pprof", session, "-o"]),
    ] {
        let out = dir.join(format!("out-{}", args.len()));
        let mut args = args.clone();
        args.push(out.to_str().unwrap());
        let o = gpuprof(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        let stderr = text(&o.stderr);
        assert!(
            stderr.lines().any(|l| l == warning.replace("{}", what)),
            "{args:?}: {stderr}"
        );
    }
    // The report states them in its own output, not as a warning.
    let o = gpuprof(&["report", session]);
    assert!(
        !text(&o.stderr).contains("cannot be true"),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stdout).contains("ends before it starts"));
}
