//! Sessions recorded on an H200 (driver 580.159.04, CUPTI 13.0.1; `scripts/gpu-check.sh`
//! steps `default-graph` and `torch-graph`, 2026-11-27), checked in under
//! `tests/gpu-sessions/`: decode as a CUDA graph with default settings, so the GPU was
//! handed over to PM sampling at the first graph launch. The real hardware's windows
//! through the report, against what the hardware must have done: a decode GEMV with
//! one token reads its whole weight matrix from DRAM when the weights of a step are
//! far larger than the 60 MB L2 (at most 10% more: activations, partial tiles).

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpuprof_tests::{report_json, report_text};
use serde_json::Value;

/// Every session checked in under `tests/gpu-sessions/`.
const SESSIONS: [&str; 5] = [
    "h200-cudarc-graph-decode",
    "h200-torch-eager-decode-3",
    "h200-torch-graph-decode",
    "h200-torch-graph-decode-2",
    "h200-torch-graph-decode-3",
];

fn session(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("gpu-sessions")
        .join(name)
}

/// The fitted `dram__bytes_read.sum` entry of the class of GEMM shape `shape` whose
/// kernel name starts with `name`.
fn read_bytes<'r>(report: &'r Value, name: &str, shape: &str) -> &'r Value {
    report["counters"]["fitted"]
        .as_array()
        .expect("fitted classes")
        .iter()
        .filter(|f| f["shape"] == shape && f["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .flat_map(|f| f["metrics"].as_array().expect("metrics"))
        .find(|m| m["metric"] == "dram__bytes_read.sum")
        .unwrap_or_else(|| panic!("no fitted DRAM reads for {name} {shape}"))
}

/// Fitted read bytes per launch within [weights, 1.1 × weights], with a standard
/// error under a quarter of them.
fn assert_reads_its_weights(report: &Value, name: &str, shape: &str, weights: f64) {
    assert_reads_within(report, name, shape, weights, 1.0);
}

/// Fitted read bytes per launch within [`low` × weights, 1.1 × weights], with a
/// standard error under a quarter of them.
fn assert_reads_within(report: &Value, name: &str, shape: &str, weights: f64, low: f64) {
    let m = read_bytes(report, name, shape);
    let (v, se) = (
        m["value"]
            .as_f64()
            .unwrap_or_else(|| panic!("{shape}: {m}")),
        m["std_error"].as_f64().expect("a standard error"),
    );
    assert!(
        (low * weights..=1.1 * weights).contains(&v),
        "{shape}: {v} of {weights}: {m}"
    );
    assert!(se < 0.25 * v, "{shape}: {m}");
}

/// The PyTorch workload (hidden 4096, MLP 11008, 2 layers: 420 MB of weights a step):
/// the first window (GPU time counted from 0, claiming to start before the Start) is
/// left out, and the gate-up and QKV GEMVs read their weights.
#[test]
fn torch_decode_gemvs_read_their_weights() {
    let r = report_json(&session("h200-torch-graph-decode"));
    assert_eq!(r["counters"]["fitted_left_out"]["inconsistent"], 1);
    let bf16 = " x1 bf16·bf16->bf16 (fp32)";
    for (m, k) in [(22016.0, 4096.0), (12288.0, 4096.0)] {
        let shape = format!("{m}x8x{k}{bf16}");
        assert_reads_its_weights(&r, "nvjet", &shape, m * k * 2.0);
    }
}

/// A second run of the PyTorch workload, with the final build: every decode GEMV's
/// read bytes within 10% of its weights (gate-up +3.3%, QKV +0.9%, down -4.3%, output
/// -2.5%). In the first run the down projection got 30% too few (its neighbours took
/// them), so that run is not held to it.
#[test]
fn torch_decode_gemvs_read_their_weights_in_a_second_run() {
    let r = report_json(&session("h200-torch-graph-decode-2"));
    assert_eq!(r["counters"]["fitted_left_out"]["inconsistent"], 1);
    let bf16 = " x1 bf16·bf16->bf16 (fp32)";
    for (m, k) in [
        (22016.0, 4096.0),
        (12288.0, 4096.0),
        (4096.0, 11008.0),
        (4096.0, 4096.0),
    ] {
        let shape = format!("{m}x8x{k}{bf16}");
        assert_reads_within(&r, "nvjet", &shape, m * k * 2.0, 0.9);
    }
}

/// The cudarc workload (hidden 1024: 25 MB of layer weights, which the L2 can hold,
/// and a 65.5 MB LM head, which it cannot): the LM head reads its weights; the layer
/// GEMVs, which always run in the same order within a window's time, are not
/// determined (before the standard errors, they were shown as 0 and 0.28 MB).
#[test]
fn cudarc_lm_head_reads_its_weights_and_layer_gemvs_are_not_determined() {
    let r = report_json(&session("h200-cudarc-graph-decode"));
    assert_eq!(r["counters"]["fitted_left_out"]["inconsistent"], 1);
    let bf16 = " x1 bf16·bf16->bf16 (fp32)";
    assert_reads_its_weights(
        &r,
        "nvjet",
        &format!("32000x1x1024{bf16}"),
        32000.0 * 1024.0 * 2.0,
    );
    for shape in ["1024x1x1024", "3072x1x1024", "1024x1x2816"] {
        let m = read_bytes(&r, "nvjet", &format!("{shape}{bf16}"));
        assert_eq!(m["value"], Value::Null, "{shape}: {m}");
        let why = m["undetermined"].as_str().expect("a reason");
        assert!(
            why.starts_with("the windows do not pin it down"),
            "{shape}: {why}"
        );
    }
    // No window's GPU time beyond its length reaches the idle time's figures.
    let idle = &r["counters"]["sample_idle"];
    let gpu_time = idle["metrics"]
        .as_array()
        .expect("idle metrics")
        .iter()
        .find(|m| m["metric"] == "gpu__time_duration.sum")
        .and_then(|m| m["value"].as_f64())
        .expect("idle GPU time");
    assert!(
        gpu_time <= idle["sampled_ns"].as_f64().expect("sampled ns"),
        "{idle}"
    );
}

/// The first PyTorch run's decode GEMVs whose writes the windows did not determine:
/// their GEMM-shape rows count the fitted reads alone, marked a lower bound (JSON
/// `bytes_source: sampled_reads`; the table's MBU "≥…~", AI "≤…~"), and the bound is
/// true: at least the bytes of the weights every call reads, at most 10% more. The
/// decode range is a lower bound too.
#[test]
fn unknown_writes_leave_a_lower_bound_on_bytes_and_mbu() {
    let dir = session("h200-torch-graph-decode");
    let r = report_json(&dir);
    let shapes = r["roofline"]["shapes"].as_array().expect("shapes");
    let bf16 = " x1 bf16·bf16->bf16 (fp32)";
    for (m, k) in [(22016.0, 4096.0), (12288.0, 4096.0)] {
        let label = format!("{m}x8x{k}{bf16}");
        let s = shapes
            .iter()
            .find(|s| s["shape"] == label.as_str())
            .unwrap_or_else(|| panic!("no {label}"));
        assert_eq!(s["bytes_source"], "sampled_reads", "{s}");
        let calls = s["calls"].as_f64().expect("calls");
        let bytes = s["bytes"].as_f64().expect("bytes");
        let weights = m * k * 2.0 * calls;
        assert!(
            (weights..=1.1 * weights).contains(&bytes),
            "{label}: {bytes} of {weights}"
        );
    }
    let decode = r["roofline"]["ranges"]
        .as_array()
        .expect("ranges")
        .iter()
        .find(|x| x["name"] == "decode")
        .expect("decode");
    assert_eq!(decode["bytes_source"], "sampled_reads", "{decode}");
    let table = report_text(&dir);
    assert!(
        table.contains(
            "≤7.45~   30.68T    3.1  ≥85.8~  memory   8x22016x4096 x1 bf16·bf16->bf16 (fp32) TN"
        ),
        "{table}"
    );
    assert!(
        table.contains("(≥, ≤: the windows did not determine DRAM writes"),
        "{table}"
    );
}

/// The same PyTorch workload run twice on one H200, minutes apart: decode as a CUDA
/// graph with default settings (bytes fitted to PM sampling windows), and decode
/// launched eagerly with every launch allowed to measure (`GPUPROF_COUNTER_BUDGET=100`:
/// per-kernel DRAM counters). Each decode GEMM shape the windows determine has, per
/// launch, the bytes the per-kernel counters measured within 10% (gate-up +1.6%,
/// QKV -5.7%); the split-K shapes, whose reduce kernels the windows cannot tell
/// apart, have none.
#[test]
fn graph_decode_bytes_from_sampling_match_eager_per_kernel_counters() {
    let per_launch = |name: &str| -> BTreeMap<String, (Option<f64>, Value)> {
        report_json(&session(name))["roofline"]["shapes"]
            .as_array()
            .expect("shapes")
            .iter()
            .filter(|s| s["n"] == 8)
            .map(|s| {
                let launches = s["launches"].as_f64().expect("launches");
                let bytes = s["bytes"].as_f64().map(|b| b / launches);
                (
                    s["shape"].as_str().expect("label").to_string(),
                    (bytes, s["bytes_source"].clone()),
                )
            })
            .collect()
    };
    let graph = per_launch("h200-torch-graph-decode-3");
    let eager = per_launch("h200-torch-eager-decode-3");
    assert_eq!(
        graph.keys().collect::<Vec<_>>(),
        eager.keys().collect::<Vec<_>>()
    );
    let mut compared = 0;
    for (shape, (got, source)) in &graph {
        let (want, measured) = &eager[shape];
        assert_eq!(measured, "measured", "{shape}");
        let want = want.expect("measured bytes");
        match got {
            Some(got) => {
                assert_eq!(source, "sampled", "{shape}");
                assert!((got / want - 1.0).abs() < 0.1, "{shape}: {got} vs {want}");
                compared += 1;
            }
            None => assert!(shape.starts_with("4096x8x"), "{shape}: no fitted bytes"),
        }
    }
    assert_eq!(compared, 2);
}

/// Theoretical occupancy (collector/src/analysis/occupancy.rs: the SM limits of
/// compute capability 9.0 and NVIDIA's allocation rules) is an upper bound of what
/// the H200 measured: in every session, every kernel configuration whose launches
/// carry `sm__warps_active.avg.pct_of_peak_sustained_active` achieved at most its
/// theoretical occupancy (0.05 points for the JSON's rounding).
#[test]
fn measured_occupancy_never_exceeds_the_theoretical() {
    let mut compared = 0;
    let mut below_half = 0;
    for name in SESSIONS {
        let r = report_json(&session(name));
        for row in r["launch_shapes"].as_array().expect("launch shapes") {
            let (Some(achieved), Some(theoretical)) = (
                row["achieved_occupancy_pct"].as_f64(),
                row["theoretical_occupancy_pct"].as_f64(),
            ) else {
                continue;
            };
            assert_eq!(
                row["compute_capability"],
                serde_json::json!([9, 0]),
                "{row}"
            );
            assert!(achieved <= theoretical + 0.05, "{name}: {row}");
            compared += 1;
            below_half += usize::from(achieved < theoretical / 2.0);
        }
    }
    // The eager run measured its kernels (the graph runs sampled the GPU instead).
    assert_eq!(compared, 78, "configurations compared");
    assert!(below_half < compared, "{below_half} of {compared}");
}

/// Real runs, every section a GPU gives (per-kernel counters, PM sampling windows and
/// the classes fitted to them, cuDNN's 90-character kernel names) and the what-if:
/// every line of the report fits 120 columns, with the counters as percentages and as
/// raw means.
#[test]
fn every_report_line_fits_120_columns() {
    for name in SESSIONS {
        for view in ["pct", "raw"] {
            let mut cmd = gpuprof_tests::gpuprof_command();
            cmd.args(["report", "--top", "0", "--counters", view])
                .args(["--what-if", "tokens=1,8,64,512"])
                .arg(session(name));
            let o =
                gpuprof_tests::TimedChild::spawn(cmd, std::time::Duration::from_secs(180)).wait();
            assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
            for line in o.stdout.lines() {
                let n = line.chars().count();
                assert!(n <= 120, "{name} --counters {view}: {n} columns: {line}");
            }
        }
    }
}
