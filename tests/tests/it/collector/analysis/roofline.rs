//! The report's roofline sections end to end on the simulated CUDA stack: real programs
//! profiled (`gpuprof record`, which injects with `CUDA_INJECTION64_PATH`, and
//! `LD_PRELOAD` alone), then `gpuprof report --format json`. Every expected number is
//! computed by the pricing oracle, [`gpuprof_tests::pricing`], from the simulated GPU's
//! cost model (`sim_core`, the same model that timed and counted each kernel), the GEMM
//! shapes the programs are known to call, and the H100 SXM datasheet peaks, with the
//! formulas of collector/src/analysis/{roofline,efficiency}.rs's documentation.
//!
//! Counters run with `GPUPROF_REPLAY=kernel`, `GPUPROF_COUNTER_LAUNCHES=0` and
//! `GPUPROF_GRAPH_REPLAY=on`: every
//! directly launched kernel then carries every metric of the GH100 default set, so a
//! kernel's DRAM bytes and hardware FLOPs are the cost model's values for exactly its
//! own launches, with no rotation of pass groups to model. Kernels replayed from a CUDA
//! graph carry them for the graph's first two launches (documented: each executable
//! graph's first `GRAPH_LAUNCHES` are measured), which is what the graph tests model.
//!
//! Floats are compared exactly: each expected value is computed with the same
//! operations in the same order as the documented formula (sums of integer-valued
//! counters and FLOPs are exact in f64 whatever the order), then printed and parsed
//! like the report's JSON (see [`norm`]). The exceptions, compared to a
//! relative 1e-12, are hardware FLOPs scaled from per-metric means and the rollups'
//! hardware FLOPs and what derives from them, whose per-launch terms the report may add
//! in another grouping. `*_pct` fields are the fractions as percentages rounded to two decimals,
//! as the report writes them.
//!
//! `peaks_file_source_lists_its_keys_in_file_order` fails until the peaks file's keys
//! are listed in file order, as peaks.rs documents.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuprof_collector::store::write_parts;
use gpuprof_tests::pricing::*;
use gpuprof_tests::{
    artifact, cudarc_gemms, gemm_linked_client, gpuprof_command, record_on_sim, run_injected,
    session_records, Finished, Injection, Scratch, TimedChild,
};
use serde_json::{json, Value};
use wire::{testing, Kernel, Record};

const LIMIT: Duration = Duration::from_secs(120);

const LINKED_STDOUT: &str = "ok: 6 GEMMs, a graph of 3 GEMMs replayed 100 times\n";
const CUDARC_STDOUT: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";

/// Counters on every direct launch, every metric, and on the first launches of each
/// CUDA graph (see the module documentation).
const ALL_COUNTERS: &[(&str, &str)] = &[
    ("GPUPROF_REPLAY", "kernel"),
    ("GPUPROF_COUNTER_LAUNCHES", "0"),
    ("GPUPROF_GRAPH_REPLAY", "on"),
];

// ---------------------------------------------------------------------------------
// Running and reading sessions

/// `gpuprof record -o <scratch>/out -- program` on the simulated H100 with CUPTI 13.4
/// and `env`; checks the program's output and returns the output directory.
fn record(scratch: &Scratch, program: &Path, stdout: &str, env: &[(&str, &str)]) -> PathBuf {
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o").arg(&out).arg("--").arg(program);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(o.status.success(), "gpuprof record: {o:?}");
    assert!(
        o.stdout.starts_with(stdout),
        "the program's output comes first: {}",
        o.stdout
    );
    out
}

/// `program` with only `LD_PRELOAD=libgpuprof.so` (no collector: the ring it leaves is
/// read back), its records written as a session file the way the collector writes one.
fn preloaded(
    scratch: &Scratch,
    ring_scratch: &str,
    program: &Path,
    stdout: &str,
    env: &[(&str, &str)],
) -> PathBuf {
    let (out, records) = run_injected(program, Injection::Preload, ring_scratch, "13.4", env);
    assert_eq!(out.stdout, stdout);
    let pid = records
        .iter()
        .find_map(|r| match r {
            Record::Process(p) => Some(p.pid),
            _ => None,
        })
        .expect("a process record");
    let dir = scratch.join("preload");
    std::fs::create_dir_all(&dir).unwrap();
    let mut w: Vec<(u32, Vec<Record>)> = Vec::new();
    for chunk in records.chunks(1000) {
        w.push((pid, chunk.to_vec()));
    }
    write_parts(&dir.join(""), &w).unwrap();
    dir
}

fn report_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Finished {
    let mut cmd = gpuprof_command();
    cmd.args(["report", "--format", "json"]).args(args).arg(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    TimedChild::spawn(cmd, LIMIT).wait()
}

/// `gpuprof report --format json [args] dir`.
fn report(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Value {
    let o = report_run(dir, args, env);
    assert!(o.status.success(), "gpuprof report: {o:?}");
    serde_json::from_str(&o.stdout).expect("report JSON")
}

// ---------------------------------------------------------------------------------
// 1. The linked cuBLAS client, both injection modes

/// The correlation ids of the first two launches of the session's CUDA graph (one
/// executable graph): the graph launches that are measured.
fn measured_graph_launches(records: &[(u32, Record)]) -> Vec<u32> {
    let mut graph: Vec<(u64, u32)> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Kernel(k) if k.graph_node_id != 0 => Some((k.start_ns, k.correlation_id)),
            _ => None,
        })
        .collect();
    graph.sort_unstable();
    let mut ids: Vec<u32> = Vec::new();
    for (_, id) in graph {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.truncate(2);
    ids
}

/// The linked client's launches priced: kernels in start order are the six direct
/// GEMMs, then the graph's three per replay; direct ones and those of the graph's first
/// two replays are measured.
fn price_linked(records: &[(u32, Record)]) -> Vec<Priced> {
    let graph_measured = measured_graph_launches(records);
    let direct = |k: &Kernel| k.graph_node_id == 0;
    let launches = price(
        records,
        |i, k| {
            Some(if direct(k) {
                LINKED_DIRECT[i]
            } else {
                LINKED_GRAPH[(i - LINKED_DIRECT.len()) % 3]
            })
        },
        |k| direct(k) || graph_measured.contains(&k.correlation_id),
    );
    assert_eq!(launches.len(), 6 + 300);
    launches
}

fn check_linked(dir: &Path) {
    let records = session_records(dir);
    let launches = price_linked(&records);
    let r = report(dir, &[], &[]);
    let rows = expected_rows(&launches, &H100_PEAKS);
    assert_rows(&r, &rows);

    // The three graph GEMMs run on the BF16 T,N kernel, 100 calls each, plus the two
    // direct BF16 T,N GEMMs: 302 calls, each with its captured call's shape.
    let tn = &rows[0].row;
    assert_eq!(tn["calls"], json!(302));
    assert_eq!(tn["gemm_launches"], json!(302));
    let shapes = r["roofline"]["shapes"].as_array().expect("shapes");
    assert_eq!(shapes, &expected_shapes(&launches, &H100_PEAKS, &r));
    let replayed: Vec<(u64, u64, u64, u64, u64)> = shapes
        .iter()
        .filter(|s| s["calls"].as_u64() >= Some(100))
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap();
            (n("m"), n("n"), n("k"), n("batch"), n("calls"))
        })
        .collect();
    assert_eq!(
        replayed,
        [
            (2048, 512, 1024, 4, 101),
            (3072, 8, 1024, 1, 100),
            (1024, 8, 1024, 1, 100)
        ]
    );

    // The BF16 T,N kernel: its two direct launches and the graph's first two replays
    // (three kernels each) were measured, and every other replay takes the mean of its
    // class (launch configuration and GEMM shape): its bytes and hardware FLOPs are
    // known, and no GEMM shape lacks DRAM bytes.
    assert_eq!(
        r["roofline"]["missing"],
        expected_missing(&r, &rows, &expected_shapes(&launches, &H100_PEAKS, &r))
    );
    assert_eq!(tn["bytes_launches"], json!(8));
    let named: Vec<&Value> = r["roofline"]["missing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["kernel"] == tn["mangled"] || m["kernel"].as_str().unwrap().starts_with("GEMM ")
        })
        .collect();
    assert_eq!(named, Vec::<&Value>::new());
    assert!(shapes.iter().all(|s| s["bytes"].is_number()), "{shapes:?}");

    // Everything is a GEMM: one family, and the run. Launches without bytes add
    // nothing to the bytes and MBU's numerator, and their time to its denominator.
    let ls = rollup_launches(&launches, &H100_PEAKS);
    let want = expected_rollup(ls.iter(), &H100_PEAKS);
    let families = r["roofline"]["families"].as_array().unwrap();
    assert_eq!(families.len(), 1);
    assert_eq!(families[0]["name"], "GEMM");
    assert_rollup(&families[0], &want, true, "GEMM family");
    assert_eq!(r["roofline"]["run"]["name"], "run");
    assert_rollup(&r["roofline"]["run"], &want, true, "run");
    assert_eq!(r["roofline"]["ranges"], json!([]));
    assert_eq!(r["roofline"]["gemm_unjoined"], json!(0));
    assert_eq!(r["roofline"]["gemm_statuses"], json!([]));

    // The datasheet's peaks for the simulated H100.
    let peaks = &r["roofline"]["peaks"];
    assert_eq!(peaks.as_array().map(Vec::len), Some(1));
    assert_eq!(peaks[0]["gpu"], H100);
    assert_eq!(peaks[0]["source"], H100_SOURCE);
    assert_eq!(peaks[0]["error"], Value::Null);
    for (k, v) in [
        ("bf16_tensor_flops_per_s", 989.4e12),
        ("fp16_tensor_flops_per_s", 989.4e12),
        ("tf32_tensor_flops_per_s", 494.7e12),
        ("fp8_tensor_flops_per_s", 1978.8e12),
        ("int8_tensor_flops_per_s", 1978.8e12),
        ("fp64_tensor_flops_per_s", 67e12),
        ("fp32_cuda_flops_per_s", 67e12),
        ("fp64_cuda_flops_per_s", 34e12),
        ("dram_bytes_per_s", 3.35e12),
    ] {
        assert_eq!(peaks[0][k], num(v), "{k}");
    }

    check_square_gemm_by_hand(&r);
}

/// The 4096³ BF16 GEMM, worked out by hand from the cost model's rule for
/// `sm90_xmma_gemm_*` (tensor cores at 700 TFLOP/s, DRAM at 3000 B/ns, A and B read and
/// C written once, 2 bytes per element) and the H100 SXM peaks.
fn check_square_gemm_by_hand(r: &Value) {
    let s = r["roofline"]["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["m"] == 4096)
        .expect("the 4096³ shape");
    // 2·4096³ = 137,438,953,472 FLOPs; 3·4096²·2 = 100,663,296 bytes;
    // max(137438953472 / 700000, 100663296 / 3000, 2000) = 196,341.36 -> 196,341 ns.
    assert_eq!(s["model_flops"], num(137_438_953_472.0));
    assert_eq!(s["bytes"], num(100_663_296.0));
    assert_eq!(s["gpu_ns"], json!(196_341));
    // 137438953472 · 1e9 / 196341 FLOP/s, 70.75 % of 989.4 TFLOP/s.
    assert_eq!(s["achieved_flops_per_s"], num(700_001_290_978_450.8));
    assert_eq!(s["mfu_pct"], num(70.75));
    // 100663296 · 1e9 / 196341 B/s = 512.7 GB/s, 15.30 % of 3.35 TB/s.
    assert_eq!(s["mbu_pct"], json!(15.3));
    // AI = 2·4096 / 6 = 1365.33 FLOP/byte, above the ridge 989.4 / 3.35 = 295.34.
    assert_eq!(s["intensity"], num(8192.0 / 6.0));
    assert_eq!(s["ridge"], num(989.4e12 / 3.35e12));
    assert_eq!(s["bound"], "compute");
    assert_eq!(s["attainable_flops_per_s"], num(989.4e12));
    assert_eq!(s["roofline_efficiency_pct"], num(70.75));
    assert_eq!(
        (&s["precision"], &s["pipe"], &s["compute_type"]),
        (&json!("BF16"), &json!("tensor"), &json!("fp32"))
    );
}

#[test]
fn linked_client_roofline_is_exact_under_record() {
    let scratch = Scratch::new("roofline-linked-record");
    let out = record(&scratch, &gemm_linked_client(), LINKED_STDOUT, ALL_COUNTERS);
    check_linked(&out);
}

#[test]
fn linked_client_roofline_is_exact_under_ld_preload() {
    let scratch = Scratch::new("roofline-linked-preload");
    let dir = preloaded(
        &scratch,
        "roofline-linked-preload-ring",
        &gemm_linked_client(),
        LINKED_STDOUT,
        ALL_COUNTERS,
    );
    check_linked(&dir);
}

/// The BF16 T,N kernel runs the two direct GEMMs and the graph's three shapes. Each
/// replay's DRAM bytes come from the measured launches of its own class (the graph's
/// first two replays): taking them from the launches of other shapes (a 4096³ GEMM's
/// 100 MB for a 3072x8x1024 one) would be a made-up number, and give an MBU no GPU can
/// reach. The cost model never moves more than 3000 B/ns, so any honest MBU here is at
/// most 3000 / 3350 = 89.6 %.
#[test]
fn graph_kernels_get_bytes_from_their_own_shapes_only() {
    let scratch = Scratch::new("roofline-linked-graph-bytes");
    let out = record(&scratch, &gemm_linked_client(), LINKED_STDOUT, ALL_COUNTERS);
    let r = report(&out, &[], &[]);
    let tn = &r["roofline"]["kernels"][0];
    assert_eq!(tn["calls"], json!(302));
    // Two direct launches, and the graph's first two replays of three kernels.
    assert_eq!(tn["bytes_launches"], json!(8));
    let max_mbu = 3000.0e9 / 3.35e12 * 100.0;
    for (what, v) in [
        ("kernel row", &tn["mbu_pct"]),
        ("GEMM family", &r["roofline"]["families"][0]["mbu_pct"]),
        ("run", &r["roofline"]["run"]["mbu_pct"]),
    ] {
        let mbu = v.as_f64().unwrap_or_else(|| panic!("{what}: no MBU"));
        assert!(
            mbu <= max_mbu,
            "{what}: MBU {mbu} % from extrapolated bytes"
        );
    }
}

// ---------------------------------------------------------------------------------
// 2. The cudarc workload: prefill and decode

/// A GEMM of cudarc-llm ([`cudarc_gemms`]: M, N, K, batch): N,N but for the attention
/// scores' batched one (T,N).
fn cudarc_shape(gemm: Option<(u64, u64, u64, u64)>) -> Option<Shape> {
    gemm.map(|(m, n, k, b)| {
        let s = bf16(m, n, k, b);
        if b > 1 {
            s.ops(OP_T, OP_N)
        } else {
            s
        }
    })
}

fn price_cudarc(records: &[(u32, Record)], measured: bool) -> Vec<Priced> {
    let gemms = cudarc_gemms();
    let launches = price(records, |i, _| cudarc_shape(gemms[i]), |_| measured);
    assert_eq!(launches.len(), 107);
    launches
}

/// The record index order equals start order for this single-stream program: the
/// first 23 kernels are the prefill range's, the other 84 the decode range's.
fn ranges_of(launches: &[Priced]) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    assert_eq!(launches.len(), 23 + 84);
    (0..23, 23..107)
}

fn cudarc_session(scratch: &Scratch, env: &[(&str, &str)]) -> (PathBuf, Vec<Priced>) {
    let out = record(scratch, &artifact("cudarc-llm"), CUDARC_STDOUT, env);
    let records = session_records(&out);
    // Start order is record order here (one stream).
    let starts: Vec<u64> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Kernel(k) => Some(k.start_ns),
            _ => None,
        })
        .collect();
    let sorted = {
        let mut s = starts.clone();
        s.sort_unstable();
        s
    };
    assert_eq!(starts, sorted, "kernel records in start order");
    let measured = !env.contains(&("GPUPROF_COUNTERS", "off"));
    let launches = price_cudarc(&records, measured);
    (out, launches)
}

fn range<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["roofline"]["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("no range {name}: {}", r["roofline"]["ranges"]))
}

fn check_cudarc_rows_and_rollups(r: &Value, launches: &[Priced], c: &Ceilings) {
    assert_rows(r, &expected_rows(launches, c));
    assert_eq!(
        r["roofline"]["shapes"].as_array().unwrap(),
        &expected_shapes(launches, c, r)
    );
    let ls = rollup_launches(launches, c);
    assert_rollup(
        &r["roofline"]["run"],
        &expected_rollup(ls.iter(), c),
        true,
        "run",
    );
    // Families in report order, each over its launches.
    let fam_of = |l: &Priced| {
        if l.shape.is_some() {
            "GEMM"
        } else {
            family(&l.mangled)
        }
    };
    let families = r["roofline"]["families"].as_array().unwrap();
    let names: Vec<&str> = families
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GEMM", "attention", "elementwise", "reduction"]);
    for f in families {
        let name = f["name"].as_str().unwrap();
        let want = expected_rollup(
            launches
                .iter()
                .zip(&ls)
                .filter(|(l, _)| fam_of(l) == name)
                .map(|(_, x)| x),
            c,
        );
        assert_rollup(f, &want, true, name);
    }
}

#[test]
fn cudarc_kernel_rows_shapes_families_and_run_are_exact() {
    let scratch = Scratch::new("roofline-cudarc");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let r = report(&out, &[], &[]);
    check_cudarc_rows_and_rollups(&r, &launches, &H100_PEAKS);
    assert_eq!(r["roofline"]["missing"], json!([]));
}

/// MFU over wall time, on a run whose GPU is idle most of the time (the program sleeps
/// between steps): the run's is its FLOPs at peak over the span from its first
/// kernel's start to its last kernel's end, the decode range's over the range's wall
/// time (one GPU); each far below the MFU over busy time, and both labelled in the
/// table.
#[test]
fn mfu_over_wall_time_counts_the_idle_gpu() {
    let scratch = Scratch::new("roofline-wall");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let records = session_records(&out);
    let r = report(&out, &[], &[]);
    let (first, last) = records
        .iter()
        .filter_map(|(_, rec)| match rec {
            Record::Kernel(k) => Some((k.start_ns, k.end_ns)),
            _ => None,
        })
        .fold((u64::MAX, 0), |(a, b), (s, e)| (a.min(s), b.max(e)));
    let ls = rollup_launches(&launches, &H100_PEAKS);
    let run = expected_rollup(ls.iter(), &H100_PEAKS);
    let at_peak_s = run.model.mfu.unwrap() * run.model.mfu_ns as f64;
    let wall = last - first;
    assert_eq!(r["roofline"]["run"]["wall_ns"], json!(wall));
    assert_eq!(
        r["roofline"]["run"]["mfu_wall_pct"],
        pct(Some(at_peak_s / wall as f64))
    );
    // Hardware FLOPs the same way, over their own launches: never added to the model
    // FLOPs.
    let hw_at_peak_s = run.hw.mfu.unwrap() * run.hw.mfu_ns as f64;
    assert_eq!(
        r["roofline"]["run"]["hfu_wall_pct"],
        pct(Some(hw_at_peak_s / wall as f64))
    );
    let (_, decode) = ranges_of(&launches);
    let d = expected_rollup(ls[decode].iter(), &H100_PEAKS);
    let range_wall = r["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "decode")
        .unwrap()["wall_ns"]
        .as_u64()
        .unwrap();
    let got = range(&r, "decode");
    assert_eq!(got["wall_ns"], json!(range_wall));
    assert_eq!(
        got["mfu_wall_pct"],
        pct(Some(
            d.model.mfu.unwrap() * d.model.mfu_ns as f64 / range_wall as f64
        ))
    );
    // The GPU sat idle over 90% of the range's wall time.
    assert!(got["mfu_wall_pct"].as_f64().unwrap() < got["mfu_pct"].as_f64().unwrap() / 10.0);
    // Families are not one stretch of time.
    assert_eq!(r["roofline"]["families"][0]["wall_ns"], Value::Null);
    let mut cmd = gpuprof_command();
    cmd.arg("report").arg(&out);
    let table = TimedChild::spawn(cmd, LIMIT).wait().stdout;
    assert!(table.contains("MFU busy %  MFU wall %"), "{table}");
}

/// The same workload on the simulated A100, L40S and B200 (`SIMCUDA_CHIP`), every
/// counter on (kernel replay: 5 or 6 passes per measured launch there, NVIDIA's
/// counts): the run and the prefill and decode ranges have the cost model's time,
/// FLOPs, DRAM bytes, MFU and MBU for that chip against its datasheet peaks; with
/// default settings the run's time, model FLOPs, bytes and MBU are the same.
#[test]
fn cudarc_rollups_are_exact_on_every_chip() {
    for (chip, c) in CHIP_PEAKS {
        if chip == "GH100" {
            continue; // The tests above.
        }
        let scratch = Scratch::new(&format!("roofline-chip-{chip}"));
        let mut env = ALL_COUNTERS.to_vec();
        env.push(("SIMCUDA_CHIP", chip));
        let out = record(&scratch, &artifact("cudarc-llm"), CUDARC_STDOUT, &env);
        let records = session_records(&out);
        // NVIDIA's pass count for the chip's whole default set in one config.
        let passes = [("GA100", 5), ("AD102", 6), ("GB100", 6)]
            .iter()
            .find(|(c, _)| *c == chip)
            .map(|(_, n)| *n)
            .expect("a chip with a default set");
        let policy = records
            .iter()
            .find_map(|(_, r)| match r {
                Record::CounterPlan(p) => Some(p.policy.clone()),
                _ => None,
            })
            .expect("a counter plan");
        assert!(
            policy.contains(&format!(
                "every metric on each measured launch, {passes} passes"
            )),
            "{chip}: {policy}"
        );
        let gemms = cudarc_gemms();
        let launches = price_on(chip, &records, |i, _| cudarc_shape(gemms[i]), |_| true);
        let r = report(&out, &[], &[]);
        let ls = rollup_launches(&launches, &c);
        assert_rollup(
            &r["roofline"]["run"],
            &expected_rollup(ls.iter(), &c),
            true,
            chip,
        );
        // Default settings (groups rotated over each kernel's first launches): every
        // launch of a kernel here moves the same bytes, so time, model FLOPs, DRAM
        // bytes and MBU are the same; hardware FLOPs (and with them the time MFU
        // covers) come from fewer configurations, which the coverage says.
        let scratch_default = Scratch::new(&format!("roofline-chip-default-{chip}"));
        let out = record(
            &scratch_default,
            &artifact("cudarc-llm"),
            CUDARC_STDOUT,
            &[("SIMCUDA_CHIP", chip)],
        );
        let d = report(&out, &[], &[]);
        for field in [
            "launches",
            "gpu_ns",
            "model_flops",
            "bytes",
            "bytes_ns",
            "mbu_pct",
        ] {
            assert_eq!(
                d["roofline"]["run"][field], r["roofline"]["run"][field],
                "{chip} default settings: {field}"
            );
        }
        let (prefill, decode) = ranges_of(&launches);
        for (name, span) in [("prefill", prefill), ("decode", decode)] {
            let want = expected_rollup(ls[span].iter(), &c);
            assert_rollup(range(&r, name), &want, true, &format!("{chip} {name}"));
        }
        assert_eq!(r["roofline"]["missing"], json!([]), "{chip}");
    }
}

/// Prefill and decode: launches, GPU time, model FLOPs, DRAM bytes and MBU are the
/// sums over exactly the kernels in each range.
#[test]
fn cudarc_prefill_and_decode_rollups_separate() {
    let scratch = Scratch::new("roofline-cudarc-ranges");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let r = report(&out, &[], &[]);
    let ls = rollup_launches(&launches, &H100_PEAKS);
    let (prefill, decode) = ranges_of(&launches);
    let names: Vec<&str> = r["roofline"]["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    // By GPU time, longest first.
    assert_eq!(names, ["decode", "prefill"]);
    for (name, span, n) in [("prefill", prefill, 23), ("decode", decode, 84)] {
        let want = expected_rollup(ls[span.clone()].iter(), &H100_PEAKS);
        let got = range(&r, name);
        assert_eq!(got["launches"], json!(n));
        assert_eq!(got["launches"], json!(want.launches), "{name}");
        assert_eq!(got["gpu_ns"], json!(want.gpu_ns), "{name}: gpu_ns");
        assert_eq!(
            got["model_flops_ns"],
            json!(want.model.flops_ns),
            "{name}: model_flops_ns"
        );
        assert_eq!(
            got["model_flops"],
            num(want.model.flops),
            "{name}: model_flops"
        );
        assert_eq!(got["bytes"], num(want.bytes), "{name}: bytes");
        assert_eq!(got["bytes_ns"], json!(want.bytes_ns), "{name}: bytes_ns");
        assert_eq!(got["mbu_pct"], pct(want.mbu), "{name}: mbu_pct");
    }
    // The whole run is prefill + decode.
    let run = &r["roofline"]["run"];
    let p = range(&r, "prefill");
    let d = range(&r, "decode");
    for k in ["launches", "gpu_ns"] {
        assert_eq!(
            run[k].as_u64(),
            Some(p[k].as_u64().unwrap() + d[k].as_u64().unwrap()),
            "{k}"
        );
    }
}

/// Each launch in a range brings its own hardware FLOPs: a prefill `rms_norm_kernel`
/// over 128 tokens does 128 times the work of a decode one over 1, and the counters of
/// every launch say so. Crediting each launch with its kernel's mean instead moves
/// FLOPs from prefill to decode.
#[test]
fn cudarc_range_rollups_credit_each_launch_its_own_hw_flops() {
    let scratch = Scratch::new("roofline-cudarc-range-hw");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let r = report(&out, &[], &[]);
    let ls = rollup_launches(&launches, &H100_PEAKS);
    let (prefill, decode) = ranges_of(&launches);
    for (name, span) in [("prefill", prefill), ("decode", decode)] {
        let want = expected_rollup(ls[span].iter(), &H100_PEAKS);
        assert_rollup(range(&r, name), &want, true, name);
    }
}

// ---------------------------------------------------------------------------------
// 3. Peaks files

const OVERRIDE: &str = "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf16 = 500\ndram_tb_s = 2\n";

/// H100 with BF16 at 500 TFLOP/s and DRAM at 2 TB/s.
const OVERRIDDEN: Ceilings = Ceilings {
    bf16: 500e12,
    dram: 2e12,
    ..H100_PEAKS
};

#[test]
fn a_peaks_file_overrides_bf16_and_dram_exactly() {
    let scratch = Scratch::new("roofline-peaks");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let file = scratch.join("peaks.toml");
    std::fs::write(&file, OVERRIDE).unwrap();
    let path = file.to_str().unwrap();

    let by_flag = report(&out, &["--peaks", path], &[]);
    check_cudarc_rows_and_rollups(&by_flag, &launches, &OVERRIDDEN);
    let p = &by_flag["roofline"]["peaks"][0];
    assert_eq!(
        p["source"],
        json!(format!(
            "{H100_SOURCE}; overridden by peaks file {path}: bf16, dram_tb_s"
        ))
    );
    assert_eq!(p["bf16_tensor_flops_per_s"], num(500e12));
    assert_eq!(p["dram_bytes_per_s"], num(2e12));
    // Keys not given keep the table's values.
    assert_eq!(p["fp16_tensor_flops_per_s"], num(989.4e12));
    assert_eq!(p["tf32_tensor_flops_per_s"], num(494.7e12));
    assert_eq!(p["fp32_cuda_flops_per_s"], num(67e12));

    // $GPUPROF_PEAKS: the same report.
    let by_env = report(&out, &[], &[("GPUPROF_PEAKS", path)]);
    assert_eq!(by_env, by_flag);
    // And without either, the datasheet's.
    let plain = report(&out, &[], &[]);
    assert_ne!(plain, by_flag);
    check_cudarc_rows_and_rollups(&plain, &launches, &H100_PEAKS);
}

#[test]
fn bad_peaks_files_fail_with_the_file_and_key_and_no_report() {
    let scratch = Scratch::new("roofline-bad-peaks");
    // Any session will do: the peaks file is read first.
    let dir = scratch.join("session");
    std::fs::create_dir_all(&dir).unwrap();
    let w: Vec<(u32, Vec<Record>)> = vec![(1, Vec::new())];
    write_parts(&dir.join(""), &w).unwrap();
    let cases: [(&str, &str, String); 5] = [
        (
            "syntax.toml",
            "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf16 = = 3\n",
            ", line 3: ".to_string(),
        ),
        (
            "unknown.toml",
            "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf61 = 3\n",
            ", line 3, [[gpu]] entry 1 (\"NVIDIA H100 80GB HBM3\"), key `bf61`: unknown key \
             (known: name, bf16, fp16, tf32, fp8, int8, fp4, fp64_tensor, fp32, fp64, \
             dram_tb_s, source)"
                .to_string(),
        ),
        (
            "negative.toml",
            "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\n\ndram_tb_s = -3.35\n",
            ", line 4, [[gpu]] entry 1 (\"NVIDIA H100 80GB HBM3\"), key `dram_tb_s`: must be \
             a positive finite number, got -3.35"
                .to_string(),
        ),
        (
            "noname.toml",
            "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\n[[gpu]]\nbf16 = 900\n",
            ", line 3, [[gpu]] entry 2, key `name`: missing: every entry names its GPU \
             (the CUDA device name)"
                .to_string(),
        ),
        (
            "top.toml",
            "gpus = 1\n",
            ", line 1, key `gpus`: unknown key (the file holds [[gpu]] entries only)".to_string(),
        ),
    ];
    for (name, text, tail) in &cases {
        let file = scratch.join(name);
        std::fs::write(&file, text).unwrap();
        let path = file.to_str().unwrap();
        for (args, env) in [
            (vec!["--peaks", path], vec![]),
            (vec![], vec![("GPUPROF_PEAKS", path)]),
        ] {
            let o = report_run(&dir, &args, &env);
            assert_eq!(o.status.code(), Some(2), "{name}: {o:?}");
            assert_eq!(o.stdout, "", "{name}: no report");
            let head = format!("gpuprof: error: peaks file {path}{tail}");
            assert!(
                o.stderr.starts_with(&head) && o.stderr.ends_with('\n'),
                "{name}: {:?}\nwant it to start with {head:?}",
                o.stderr
            );
            assert_eq!(
                o.stderr.lines().count(),
                1,
                "{name}: one line: {}",
                o.stderr
            );
        }
    }
    // A file that cannot be read names it too.
    let gone = scratch.join("absent.toml");
    let o = report_run(&dir, &["--peaks", gone.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(o.stdout, "");
    assert!(
        o.stderr.starts_with(&format!(
            "gpuprof: error: cannot read peaks file {}: ",
            gone.display()
        )),
        "{}",
        o.stderr
    );
}

// ---------------------------------------------------------------------------------
// 4. Missing data

/// Counters off: GEMM rows keep their model FLOPs, achieved FLOP/s and MFU, and have no
/// DRAM bytes, AI or MBU; the other kernels have nothing to place; the missing list
/// says what is missing for each kernel and each GEMM shape.
#[test]
fn counters_off_leaves_bytes_null_and_names_each_kernel() {
    let scratch = Scratch::new("roofline-counters-off");
    let (out, launches) = cudarc_session(&scratch, &[("GPUPROF_COUNTERS", "off")]);
    let r = report(&out, &[], &[]);
    assert!(r.get("counters").is_none(), "no counter section");
    let rows = expected_rows(&launches, &H100_PEAKS);
    assert_rows(&r, &rows);
    for k in r["roofline"]["kernels"].as_array().unwrap() {
        for f in ["bytes", "intensity", "mbu_pct", "bound", "hw_flops"] {
            assert!(k[f].is_null(), "{}: {f} = {}", k["mangled"], k[f]);
        }
        let gemm = k["family"] == "GEMM";
        assert_eq!(k["model_flops"].is_number(), gemm, "{}", k["mangled"]);
        assert_eq!(k["mfu_pct"].is_number(), gemm, "{}", k["mangled"]);
        assert_eq!(k["achieved_flops_per_s"].is_number(), gemm);
    }
    assert_eq!(
        r["roofline"]["missing"],
        expected_missing(&r, &rows, &expected_shapes(&launches, &H100_PEAKS, &r))
    );
    // The ranges keep model FLOPs and MFU over the GEMMs' time, and have no bytes
    // and no hardware FLOPs (null, not 0).
    let ls = rollup_launches(&launches, &H100_PEAKS);
    let (prefill, decode) = ranges_of(&launches);
    for (name, span) in [("prefill", prefill), ("decode", decode)] {
        let want = expected_rollup(ls[span].iter(), &H100_PEAKS);
        let got = range(&r, name);
        assert_rollup(got, &want, true, name);
        assert_eq!(
            (&got["bytes"], &got["mbu_pct"], &got["hw_flops"]),
            (&Value::Null, &Value::Null, &Value::Null)
        );
    }
}

/// Neither GEMM shapes nor counters: nothing gives FLOPs; the JSON has no roofline and
/// the table says why in one line.
#[test]
fn no_shapes_and_no_counters_means_no_roofline_sections() {
    let scratch = Scratch::new("roofline-nothing");
    let (out, _) = cudarc_session(
        &scratch,
        &[("GPUPROF_COUNTERS", "off"), ("GPUPROF_GEMM", "off")],
    );
    let r = report(&out, &[], &[]);
    assert!(r.get("roofline").is_none(), "{}", r["roofline"]);
    assert_eq!(r["kernel_count"], json!(107));
    let mut cmd = gpuprof_command();
    cmd.arg("report").arg(&out);
    let table = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(table.status.success());
    assert!(
        table.stdout.contains(
            "\nRoofline\n  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this \
             session; see GPUPROF_GEMM and GPUPROF_COUNTERS)\n\nLaunch shape by kernel config"
        ),
        "{}",
        table.stdout
    );
}

/// A GPU the table does not know, with every attribute the derivation needs: peaks are
/// SMs x clock x the sm_90 per-SM rates, DRAM bandwidth memory clock x 2 x bus width /
/// 8, and MFU and MBU follow them exactly.
#[test]
fn unknown_gpu_gets_peaks_derived_from_its_attributes() {
    let scratch = Scratch::new("roofline-derived");
    let name = "Simulated Hopper 100SM";
    let mut env = ALL_COUNTERS.to_vec();
    env.extend([
        ("SIMCUDA_DEVICE_NAME", name),
        ("SIMCUDA_SM_COUNT", "100"),
        ("SIMCUDA_CLOCK_KHZ", "1500000"),
        ("SIMCUDA_MEM_CLOCK_KHZ", "2000000"),
        ("SIMCUDA_BUS_WIDTH", "4096"),
    ]);
    let out = record(&scratch, &gemm_linked_client(), LINKED_STDOUT, &env);
    let launches = price_linked(&session_records(&out));
    let r = report(&out, &[], &[]);
    // sm_90: 2048 BF16 tensor FMAs, 128 FP32 lanes per SM per clock; FMA = 2 FLOPs.
    let fma = |per_sm: f64| per_sm * 2.0 * 100.0 * (1_500_000.0 * 1000.0);
    let bf16 = fma(2048.0);
    let derived = Ceilings {
        bf16,
        fp16: bf16,
        tf32: bf16 / 2.0,
        fp32: fma(128.0),
        dram: 2_000_000.0 * 1000.0 * 2.0 * 4096.0 / 8.0,
    };
    assert_eq!(derived.bf16, 614.4e12);
    assert_eq!(derived.dram, 2.048e12);
    let p = &r["roofline"]["peaks"][0];
    assert_eq!(p["gpu"], name);
    assert_eq!(p["error"], Value::Null);
    assert_eq!(
        p["source"],
        "derived from 100 SMs x 1500 MHz (sm_90 rates: 2048 BF16 tensor FMA, 128 FP32 and 64 \
         FP64 lanes per SM per clock) and 2000 MHz memory x 2 x 4096-bit bus"
    );
    for (k, v) in [
        ("bf16_tensor_flops_per_s", bf16),
        ("fp16_tensor_flops_per_s", bf16),
        ("tf32_tensor_flops_per_s", bf16 / 2.0),
        ("fp8_tensor_flops_per_s", bf16 * 2.0),
        ("int8_tensor_flops_per_s", bf16 * 2.0),
        ("fp64_tensor_flops_per_s", fma(128.0)),
        ("fp32_cuda_flops_per_s", fma(128.0)),
        ("fp64_cuda_flops_per_s", fma(64.0)),
        ("dram_bytes_per_s", derived.dram),
    ] {
        assert_eq!(p[k], num(v), "{k}");
    }
    let mut rows = expected_rows(&launches, &derived);
    for row in &mut rows {
        row.row.insert("gpu".into(), json!(name));
    }
    assert_rows(&r, &rows);
}

/// A GPU the table does not know, of an architecture without per-SM rates (sm_87):
/// no peaks, and the report says why, for which GPU, on every kernel; FLOPs and
/// FLOP/s stay, MFU and MBU are null. A peaks file naming the GPU then supplies them.
#[test]
fn unknown_gpu_without_rates_names_what_is_missing() {
    let scratch = Scratch::new("roofline-no-peaks");
    let name = "Simulated Orin";
    let env = [
        ("GPUPROF_COUNTERS", "off"),
        ("SIMCUDA_DEVICE_NAME", name),
        ("SIMCUDA_CC", "8.7"),
    ];
    let out = record(&scratch, &gemm_linked_client(), LINKED_STDOUT, &env);
    let r = report(&out, &[], &[]);
    let why = format!(
        "no peaks for GPU \"{name}\" (device 0): not in the table of known GPUs, and cannot \
         derive them without the per-SM rates of architecture sm_87 (known: sm_80, sm_86, \
         sm_89, sm_90, sm_100); give them in a peaks file (--peaks)"
    );
    let p = &r["roofline"]["peaks"][0];
    assert_eq!((&p["gpu"], &p["error"]), (&json!(name), &json!(why)));
    assert_eq!(p["source"], Value::Null);
    let kernels = r["roofline"]["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty());
    for k in kernels {
        assert!(k["model_flops"].as_f64().unwrap() > 0.0);
        assert!(k["achieved_flops_per_s"].as_f64().unwrap() > 0.0);
        for f in ["mfu_pct", "mbu_pct", "peak_flops_per_s", "dram_bytes_per_s"] {
            assert!(k[f].is_null(), "{}: {f}", k["name"]);
        }
        let said: Vec<&str> = r["roofline"]["missing"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kernel"] == k["name"])
            .map(|m| m["what"].as_str().unwrap())
            .collect();
        assert_eq!(
            said,
            [
                "no DRAM counters: hardware counters were off (the Counters section says why)"
                    .to_string(),
                format!("no peaks for {name}")
            ],
            "{}",
            k["name"]
        );
    }
    assert!(r["roofline"]["run"]["mfu_pct"].is_null());

    // A peaks file entry alone gives that GPU peaks.
    let file = scratch.join("orin.toml");
    std::fs::write(
        &file,
        format!("[[gpu]]\nname = \"{name}\"\nbf16 = 100\nfp16 = 100\ntf32 = 50\nfp32 = 10\ndram_tb_s = 0.2\n"),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let r = report(&out, &["--peaks", path], &[]);
    let p = &r["roofline"]["peaks"][0];
    assert_eq!(p["error"], Value::Null);
    let source = p["source"].as_str().unwrap();
    assert!(
        source.starts_with(&format!("peaks file {path}: ")),
        "{source}"
    );
    let records = session_records(&out);
    let launches = price(
        &records,
        |i, k| {
            Some(if k.graph_node_id == 0 {
                LINKED_DIRECT[i]
            } else {
                LINKED_GRAPH[(i - LINKED_DIRECT.len()) % 3]
            })
        },
        |_| false,
    );
    let c = Ceilings {
        bf16: 100e12,
        fp16: 100e12,
        tf32: 50e12,
        fp32: 10e12,
        dram: 0.2e12,
    };
    let mut rows = expected_rows(&launches, &c);
    for row in &mut rows {
        row.row.insert("gpu".into(), json!(name));
    }
    assert_rows(&r, &rows);
}

/// The peaks source line lists the keys a peaks file gave in file order (peaks.rs:
/// `Override::keys`, "The keys given, in file order").
#[test]
fn peaks_file_source_lists_its_keys_in_file_order() {
    let scratch = Scratch::new("roofline-key-order");
    let dir = scratch.join("session");
    std::fs::create_dir_all(&dir).unwrap();
    let name = "Simulated Orin";
    let records = vec![
        Record::String(wire::InternedString {
            id: 1,
            text: "gemm_kernel".into(),
        }),
        Record::String(wire::InternedString {
            id: 2,
            text: "cublasGemmEx".into(),
        }),
        Record::Device(wire::DeviceInfo {
            id: 0,
            name: name.into(),
            compute_capability: (8, 7),
            sm_count: 16,
            core_clock_khz: 1_300_000,
            memory_clock_khz: 3_200_000,
            memory_bus_width_bits: 256,
            global_memory_bytes: 32 << 30,
            l2_cache_bytes: 4 << 20,
            uuid: [0; 16],
        }),
        Record::Kernel(Kernel {
            registers_per_thread: 40,
            ..testing::kernel(1, 5, 1_000, 3_000)
        }),
        Record::Gemm(wire::Gemm {
            api: 2,
            trans_a: 0,
            ..testing::gemm_launch(5, 1, 0, 64, 64, 64)
        }),
    ];
    let w: Vec<(u32, Vec<Record>)> = vec![(4242, records)];
    write_parts(&dir.join(""), &w).unwrap();
    let file = scratch.join("orin.toml");
    std::fs::write(
        &file,
        format!("[[gpu]]\nname = \"{name}\"\nbf16 = 100\nfp16 = 100\ntf32 = 50\nfp32 = 10\ndram_tb_s = 0.2\n"),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let r = report(&dir, &["--peaks", path], &[]);
    let p = &r["roofline"]["peaks"][0];
    assert_eq!(p["error"], Value::Null);
    assert_eq!(p["bf16_tensor_flops_per_s"], num(100e12));
    // 2·64³ FLOPs in 2 µs at 100 TFLOP/s.
    assert_eq!(r["roofline"]["kernels"][0]["mfu_pct"], num(0.26));
    assert_eq!(
        p["source"],
        json!(format!(
            "peaks file {path}: bf16, fp16, tf32, fp32, dram_tb_s"
        ))
    );
}

// ---------------------------------------------------------------------------------
// Launch shape: why the decode GEMVs leave the H100 idle

/// Blocks of `threads` threads using `registers` per thread and `shared` bytes of
/// shared memory one H100 SM holds, and what holds it there: registers go to a warp
/// 256 at a time from four sub-partitions of 16,384; shared memory (228 KiB an SM)
/// 128 bytes at a time with 1 KiB reserved per block; 64 warps and 32 blocks an SM.
fn h100_blocks_per_sm(threads: u32, registers: u32, shared: u32) -> (u32, Vec<&'static str>) {
    let warps = threads.div_ceil(32);
    let per_warp = (registers * 32).div_ceil(256) * 256;
    let limits = [
        ("registers", 16_384 / per_warp * 4 / warps),
        (
            "shared memory",
            228 * 1024 / ((shared + 1024).div_ceil(128) * 128),
        ),
        ("warps", 64 / warps),
        ("blocks", 32),
    ];
    let least = limits.iter().map(|l| l.1).min().unwrap();
    let by: Vec<&str> = limits
        .iter()
        .filter(|l| l.1 == least)
        .map(|l| l.0)
        .collect();
    (least, by)
}

/// Every configuration of cuBLAS's decode GEMV (`gemv2N_kernel`) in the cudarc-llm
/// run: its blocks per SM and what holds it there, theoretical occupancy, waves, SMs
/// busy and the achieved occupancy the cost model measured, each as the launch
/// configuration recorded and the H100's 132 SMs give them; every one has fewer
/// blocks than SMs, so that is its first finding, and each achieved less than half
/// its theoretical occupancy.
#[test]
fn decode_gemvs_state_their_waves_sms_busy_and_occupancy() {
    let scratch = Scratch::new("launch-shape-gemv");
    let (out, launches) = cudarc_session(&scratch, ALL_COUNTERS);
    let records = session_records(&out);
    let r = report(&out, &[], &[]);
    let rows: Vec<&Value> = r["launch_shapes"]
        .as_array()
        .expect("launch shapes")
        .iter()
        .filter(|x| x["mangled"].as_str().unwrap().contains("gemv2N_kernel"))
        .collect();
    let grids: std::collections::BTreeSet<[i32; 3]> = launches
        .iter()
        .filter(|l| l.mangled.contains("gemv2N_kernel"))
        .map(|l| l.config.0)
        .collect();
    assert_eq!(rows.len(), grids.len());
    assert!(rows.len() >= 4, "{rows:?}");
    for row in rows {
        let grid: [i32; 3] = serde_json::from_value(row["grid"].clone()).unwrap();
        let gemv = |id: u32| {
            records.iter().any(|(_, rec)| {
                matches!(rec, Record::String(s) if s.id == id && s.text.contains("gemv2N_kernel"))
            })
        };
        let k: &Kernel = records
            .iter()
            .find_map(|(_, rec)| match rec {
                Record::Kernel(k)
                    if k.grid == grid && row["block"] == json!(k.block) && gemv(k.name) =>
                {
                    Some(k)
                }
                _ => None,
            })
            .unwrap();
        let blocks = (grid[0] * grid[1] * grid[2]) as u64;
        let threads = (k.block[0] * k.block[1] * k.block[2]) as u32;
        let (per_sm, by) = h100_blocks_per_sm(
            threads,
            u32::from(k.registers_per_thread),
            k.dynamic_shared_memory as u32,
        );
        let theoretical = f64::from(per_sm * threads.div_ceil(32)) / 64.0;
        let per_wave = 132 * u64::from(per_sm);
        let achieved: Vec<f64> = launches
            .iter()
            .filter(|l| l.mangled.contains("gemv2N_kernel") && l.config.0 == grid)
            .map(|l| {
                l.counters.as_ref().unwrap()["sm__warps_active.avg.pct_of_peak_sustained_active"]
            })
            .collect();
        let achieved = achieved.iter().sum::<f64>() / achieved.len() as f64;
        assert!(blocks < 132, "{row}");
        assert_eq!(row["compute_capability"], json!([9, 0]));
        assert_eq!(row["sm_count"], json!(132));
        assert_eq!(row["blocks"], json!(blocks));
        assert_eq!(row["blocks_per_sm"], json!(per_sm), "{row}");
        assert_eq!(row["limited_by"], json!(by), "{row}");
        assert_eq!(
            row["theoretical_occupancy_pct"],
            num((theoretical * 10_000.0).round() / 100.0)
        );
        assert_eq!(row["blocks_per_wave"], json!(per_wave));
        assert_eq!(
            row["waves"],
            num((blocks as f64 / per_wave as f64 * 10_000.0).round() / 10_000.0)
        );
        let busy = blocks as f64 / 132.0;
        assert_eq!(row["sms_busy_pct"], num((busy * 10_000.0).round() / 100.0));
        assert_eq!(
            row["achieved_occupancy_pct"],
            num((achieved * 100.0).round() / 100.0)
        );
        assert_eq!(
            row["findings"],
            json!([
                format!(
                    "{blocks} blocks on 132 SMs: {:.1}% of SMs busy",
                    100.0 * busy
                ),
                format!(
                    "achieved occupancy {achieved:.1}% of a possible {:.1}%",
                    100.0 * theoretical
                ),
            ]),
            "{row}"
        );
    }
}
