//! Decode inside a CUDA graph, as serving engines run it: the cudarc workload with
//! `--graph-decode` captures one decode step (its cuBLAS and cuBLASLt GEMMs included)
//! and replays it. Every replayed kernel must be attributed to the GEMM call that
//! created its node, so the report's GEMM shapes, calls and model FLOPs are exactly
//! those of the same workload run without a graph.

use std::collections::BTreeMap;

use gpuprof_tests::{decode_shapes, record_cudarc_llm_with, report_json, Scratch};
use serde_json::Value;

/// (shape label) -> (calls, launches, model FLOPs) of the run's GEMM-shape rollup.
fn shapes(scratch: &Scratch, name: &str, args: &[&str]) -> BTreeMap<String, (u64, u64, f64)> {
    let report = report(scratch, name, args, &[("GPUPROF_COUNTERS", "off")]);
    assert_eq!(report["roofline"]["gemm_unjoined"], 0);
    report["roofline"]["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .map(|s| {
            (
                s["shape"].as_str().expect("label").to_string(),
                (
                    s["calls"].as_u64().expect("calls"),
                    s["launches"].as_u64().expect("launches"),
                    s["model_flops"].as_f64().expect("model FLOPs"),
                ),
            )
        })
        .collect()
}

#[test]
fn gemms_replayed_from_a_graph_keep_their_shapes() {
    let scratch = Scratch::new("graph-decode");
    let eager = shapes(&scratch, "eager", &[]);
    let graph = shapes(&scratch, "graph", &["--graph-decode"]);
    assert_eq!(graph, eager);
    // Decode's GEMVs: one call per layer and step (2 x 4), the LM head once per step
    // and once in prefill.
    assert_eq!(
        eager["3072x1x1024 x1 bf16·bf16->bf16 (fp32)"],
        (8, 8, 8.0 * 2.0 * 3072.0 * 1024.0)
    );
    assert_eq!(
        eager["32000x1x1024 x1 bf16·bf16->bf16 (fp32)"],
        (5, 5, 5.0 * 2.0 * 32000.0 * 1024.0)
    );
    assert_eq!(eager.len(), 10);
}

/// The report (JSON) of the cudarc workload recorded with `args` and `env` on the
/// simulated H100, CUPTI 13.4.
fn report(scratch: &Scratch, name: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let session = scratch.join(name);
    record_cudarc_llm_with(&session, "13.4", args, env);
    report_json(&session)
}

/// (shape label) -> (DRAM bytes, MBU %, AI) of the report's decode GEMM shapes (N = 1,
/// one token; `run` names the report in messages).
fn shape_bytes(run: &str, report: &Value) -> BTreeMap<String, (f64, f64, f64)> {
    decode_shapes(report)
        .into_iter()
        .map(|(label, s)| {
            let get = |k: &str| {
                s[k].as_f64()
                    .unwrap_or_else(|| panic!("{run}: {label}: no {k} in {s}"))
            };
            let v = (get("bytes"), get("mbu_pct"), get("intensity"));
            (label, v)
        })
        .collect()
}

/// The NVTX range `name`'s rollup.
fn range<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["roofline"]["ranges"]
        .as_array()
        .expect("ranges")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no range {name}"))
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

/// The cost model's numbers: the workload with `steps` decode steps, every launch
/// measured with every metric (`GPUPROF_REPLAY=kernel`, `GPUPROF_COUNTER_LAUNCHES=0`).
fn truth_report(scratch: &Scratch, steps: &str) -> Value {
    report(
        scratch,
        "truth",
        &["--decode-steps", steps],
        &[
            ("GPUPROF_REPLAY", "kernel"),
            ("GPUPROF_COUNTER_LAUNCHES", "0"),
        ],
    )
}

/// Each of `runs`' decode GEMM shapes (DRAM bytes, MBU, AI) and decode range (DRAM
/// bytes, MBU, the GEMMs' AI, and bytes for all of its time) within 5% of `truth`'s.
fn assert_decode_as_truth(truth: &Value, runs: &[(&str, &Value)]) {
    let want = shape_bytes("truth", truth);
    // Per layer QKV, output, gate-up and down projections, and the LM head.
    assert_eq!(want.len(), 5);
    let decode = range(truth, "decode");
    for (name, report) in runs {
        let got = shape_bytes(name, report);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        );
        for (label, (bytes, mbu, ai)) in &got {
            let (b, m, a) = want[label];
            assert!(
                within(*bytes, b, 0.05) && within(*mbu, m, 0.05) && within(*ai, a, 0.05),
                "{name} {label}: bytes {bytes} MBU {mbu} AI {ai}, cost model: {b} {m} {a}"
            );
        }
        let r = range(report, "decode");
        for k in ["bytes", "mbu_pct", "model_intensity"] {
            let (got, want) = (r[k].as_f64(), decode[k].as_f64());
            assert!(
                matches!((got, want), (Some(g), Some(w)) if within(g, w, 0.05)),
                "{name} decode {k}: {got:?}, cost model {want:?}"
            );
        }
        assert_eq!(
            r["mbu_ns"], r["gpu_ns"],
            "{name}: decode has bytes for all of its time"
        );
    }
}

/// With `GPUPROF_GRAPH_REPLAY=on`, decode replayed from a CUDA graph gets
/// per-kernel counters (each executable graph's first launches measured by kernel
/// replay, a range per kernel node): its DRAM bytes, MBU and AI per decode GEMM
/// shape, and the decode range's MBU, AI and DRAM bytes, are those of the same work
/// launched eagerly, and those of the cost model (every launch measured with every
/// metric: each launch's counters are the model's, `collector/analysis/roofline.rs`). The
/// graph replays 8 times a step of 2 layers (21 kernels). With default settings graph
/// launches are not measured per kernel, and the plan says so.
#[test]
fn graph_decode_gets_counters_with_graph_replay_on() {
    let scratch = Scratch::new("graph-decode-counters");
    let truth = truth_report(&scratch, "8");
    let eager = report(&scratch, "eager", &["--decode-steps", "8"], &[]);
    let graph = report(
        &scratch,
        "graph",
        &["--graph-decode", "--decode-steps", "8"],
        &[("GPUPROF_GRAPH_REPLAY", "on")],
    );
    let default = report(
        &scratch,
        "graph-default",
        &["--graph-decode", "--decode-steps", "8"],
        &[],
    );
    let policy = default["counters"]["plans"][0]["policy"]
        .as_str()
        .expect("a policy");
    assert!(
        policy.contains(
            "CUDA graph launches: not measured per kernel; the first one on a GPU \
             hands the GPU over to PM sampling"
        ),
        "{policy}"
    );
    for s in decode_shapes(&default).values() {
        // The LM head's eager launch in prefill is measured; no graph launch is.
        let eager = u64::from(s["m"] == 32000);
        assert_eq!(s["bytes_launches"], eager, "{s}");
    }
    assert_decode_as_truth(&truth, &[("eager", &eager), ("graph", &graph)]);
    // Those values are the graph's own: of each decode GEMV's launches, those of the
    // graph's first two replays were measured (2 layers: 4; the LM head once per step,
    // and once eagerly in prefill: 3).
    for s in decode_shapes(&graph).values() {
        let per_step = if s["m"] == 32000 { 1 } else { 2 };
        let eager = u64::from(s["m"] == 32000);
        assert_eq!(s["bytes_launches"], 2 * per_step + eager, "{s}");
    }
    // The counter policy keys launches by GEMM shape too, so the eager run measures
    // every shape's DRAM bytes with its first launch, prefill's included (one cuBLAS
    // kernel and launch configuration serves several of its projections).
    let bytes_of = |r: &Value| -> BTreeMap<String, Option<f64>> {
        r["roofline"]["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .map(|s| {
                (
                    s["shape"].as_str().expect("label").to_string(),
                    s["bytes"].as_f64(),
                )
            })
            .collect()
    };
    let (all_truth, all_eager) = (bytes_of(&truth), bytes_of(&eager));
    assert_eq!(all_truth.len(), 10);
    for (label, want) in &all_truth {
        let (got, want) = (
            all_eager[label],
            want.expect("the truth has every shape's bytes"),
        );
        assert!(
            got.is_some_and(|g| within(g, want, 0.05)),
            "eager {label}: bytes {got:?}, cost model {want}"
        );
    }
    // 8 replays of a step of 21 kernels.
    assert_eq!(range(&graph, "decode")["launches"], 8 * 21);
    // Every graph kernel ran from the graph's measured launches' values: the plan
    // says how graph launches are measured.
    let policy = graph["counters"]["plans"][0]["policy"]
        .as_str()
        .expect("a policy")
        .to_string();
    assert!(
        policy.contains("CUDA graph launches: the first 2 of each executable graph"),
        "{policy}"
    );
}

/// Default settings, decode as a CUDA graph: the first graph launch hands the GPU over
/// from per-kernel counters to PM sampling, and the decode classes' DRAM bytes are
/// fitted to the sampling windows. Over 60 replays of a step of 2 layers (21 kernels),
/// each decode GEMM shape's DRAM bytes, MBU and AI, and the decode range's, are within
/// 5% of the same work launched eagerly with default settings (per-kernel counters)
/// and of the cost model (every launch measured with every metric).
#[test]
fn graph_decode_by_default_is_fitted_to_pm_sampling() {
    let scratch = Scratch::new("graph-decode-default");
    let truth = truth_report(&scratch, "60");
    let eager = report(&scratch, "eager", &["--decode-steps", "60"], &[]);
    let graph = report(
        &scratch,
        "graph",
        &["--graph-decode", "--decode-steps", "60"],
        &[],
    );
    // Two plans on the GPU: per-kernel counters until the first graph launch, PM
    // sampling after it.
    let modes: Vec<&str> = graph["counters"]["plans"]
        .as_array()
        .expect("plans")
        .iter()
        .map(|p| p["mode"].as_str().expect("mode"))
        .collect();
    assert_eq!(
        modes,
        ["kernel", "sampling"],
        "{}",
        graph["counters"]["plans"]
    );
    assert_decode_as_truth(&truth, &[("eager", &eager), ("graph", &graph)]);
    // The graph's decode GEMVs have fitted bytes; the LM head's class (same kernel,
    // launch configuration and shape) was measured by its eager launch in prefill,
    // whose value its graph launches take.
    for s in decode_shapes(&graph).values() {
        let source = if s["m"] == 32000 {
            "measured"
        } else {
            "sampled"
        };
        assert_eq!(s["bytes_source"], source, "{s}");
    }
}
