//! Decode inside a CUDA graph, as serving engines run it: the cudarc workload with
//! `--graph-decode` captures one decode step (its cuBLAS and cuBLASLt GEMMs included)
//! and replays it. Every replayed kernel must be attributed to the GEMM call that
//! created its node, so the report's GEMM shapes, calls and model FLOPs are exactly
//! those of the same workload run without a graph.

use std::collections::BTreeMap;

use gpuprof_tests::{artifact, gpuprof_command, record_on_sim, Scratch};
use serde_json::Value;

/// (shape label) -> (calls, launches, model FLOPs) of the run's GEMM-shape rollup.
fn shapes(scratch: &Scratch, name: &str, args: &[&str]) -> BTreeMap<String, (u64, u64, f64)> {
    let session = scratch.join(name);
    let out = record_on_sim("13.4")
        .arg("-o")
        .arg(&session)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(args)
        .env("GPUPROF_COUNTERS", "off")
        .output()
        .expect("run gpuprof record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(&session)
        .output()
        .expect("run gpuprof report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
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
