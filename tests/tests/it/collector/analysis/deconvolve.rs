//! PM sampling deconvolved into per-class rates, end to end on the simulated stack:
//! the cudarc workload decodes as serving engines do (one CUDA graph replayed per
//! token) under `GPUPROF_COUNTERS=sampling`, with windows short enough and of a
//! length no multiple of the step that they fall at every phase of it. Each kernel
//! class's fitted DRAM bytes per launch are checked against the cost model's exact
//! value for that class (the model that timed and counted every kernel), and the
//! report's decode GEMM shapes (DRAM bytes, MBU, AI) against the same workload run
//! eagerly with per-kernel counters on every launch, as are the percentages of peak of
//! a decode-only kernel. The old overlap split's error for the same classes is
//! printed, and must be worse for the GEMVs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpuprof_collector::analysis::aggregate::aggregate;
use gpuprof_collector::analysis::classes::Class;
use gpuprof_collector::analysis::deconvolve::LeftOut;
use gpuprof_tests::{
    artifact, decode_shapes, record_on_sim, report_json, session_records, Scratch, TimedChild,
};
use serde_json::Value;
use sim_core::{CostModel, GemmShape, Launch};

const READ: &str = "dram__bytes_read.sum";
const WRITE: &str = "dram__bytes_write.sum";
const OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
const STEPS: u64 = 120;
/// µs; the decode step is about 45 µs of GPU time.
const INTERVAL_US: &str = "97";

fn record(scratch: &Scratch, name: &str, args: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let out = scratch.join(name);
    let steps = STEPS.to_string();
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(["--layers", "1", "--decode-steps", &steps])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = TimedChild::spawn(cmd, std::time::Duration::from_secs(180)).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record: {}", o.stderr);
    out
}

/// The cost model's value of each of `metrics` for one launch of class `c`.
fn truth(c: &Class, metrics: &[&str]) -> (u64, Vec<f64>) {
    let launch = Launch {
        name: c.mangled.clone(),
        grid: c.key.grid.map(|g| g as u32),
        block: c.key.block.map(|b| b as u32),
        shared_mem: 0,
        registers: 0,
        gemm: c.key.gemm.as_ref().map(|g| GemmShape {
            m: g.shape.m,
            n: g.shape.n,
            k: g.shape.k,
            batch: g.shape.batch,
            elem_bytes: match g.shape.a_type {
                14 | 2 => 2,
                0 => 4,
                t => panic!("data type {t}"),
            },
        }),
    };
    let cost = CostModel::builtin().cost(&launch).expect("costed");
    let values = metrics
        .iter()
        .map(|m| cost.counters.get(*m).copied().unwrap_or(0.0))
        .collect();
    (cost.duration_ns, values)
}

/// Relative error.
fn off(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(f64::MIN_POSITIVE)
}

/// A class as the printout names it.
fn label(c: &Class) -> String {
    let shape = c.key.gemm.as_ref().map_or(String::new(), |g| {
        format!(" {}x{}x{}", g.shape.m, g.shape.n, g.shape.k)
    });
    let name: String = c.mangled.chars().take(40).collect();
    format!("{name} grid {:?}{shape}", c.key.grid)
}

/// The workload decoding as a CUDA graph, under PM sampling with [`INTERVAL_US`]
/// windows.
fn record_sampled_graph(scratch: &Scratch) -> PathBuf {
    record(
        scratch,
        "graph",
        &["--graph-decode"],
        &[
            ("GPUPROF_COUNTERS", "sampling"),
            ("GPUPROF_SAMPLE_INTERVAL_US", INTERVAL_US),
            ("GPUPROF_RING_SIZE", "512M"),
            ("GPUPROF_EXIT_TIMEOUT_MS", "20000"),
        ],
    )
}

/// Fitted and split DRAM bytes per launch of every class against the cost model.
#[test]
fn fitted_dram_bytes_per_class_match_the_cost_model() {
    let scratch = Scratch::new("deconvolve-classes");
    let dir = record_sampled_graph(&scratch);
    let a = aggregate(&session_records(&dir));
    let fitted = a.fitted.as_ref().expect("sampling windows were fitted");
    // The first sample after the Start: its GPU time exceeds its length (as on an
    // H200), so it is left out.
    let left_out = LeftOut {
        inconsistent: 1,
        ..Default::default()
    };
    assert_eq!(fitted.left_out, left_out);
    let mut gemv = (0, 0);
    for (i, c) in a.classes.list.iter().enumerate() {
        let (ns, want) = truth(c, &[READ, WRITE, OCCUPANCY]);
        assert_eq!(c.tally.ns, ns * c.tally.calls, "{}: durations", label(c));
        let mean = c.tally.ns as f64 / c.tally.calls as f64;
        let fit = |m: &str| fitted.class(i, m).map(|(_, f)| f.clone());
        let (Some(read), Some(write)) = (fit(READ), fit(WRITE)) else {
            // Launched before sampling started (the context's first kernels).
            println!("{:<70} calls {:>4}: in no window", label(c), c.tally.calls);
            assert!(c.tally.calls < STEPS, "{}: in no window", label(c));
            continue;
        };
        let want_bytes = want[0] + want[1];
        let split = (read.split + write.split) / c.tally.calls as f64;
        let estimate = read
            .estimate
            .zip(write.estimate)
            .map(|(r, w)| (r + w) * mean);
        println!(
            "{:<70} calls {:>4} windows {:>4}: truth {want_bytes:>12.0} fit {:>14} ({}) \
             split {split:>12.0} ({:.2} %)",
            label(c),
            c.tally.calls,
            read.windows,
            estimate.map_or("-".into(), |e| format!("{e:.0}")),
            estimate.map_or(format!("{:?}", read.undetermined), |e| format!(
                "{:.4} %",
                100.0 * off(e, want_bytes)
            )),
            100.0 * off(split, want_bytes)
        );
        if c.tally.calls < STEPS {
            // Prefill: a few launches in a few windows; undetermined or right.
            if let Some(e) = estimate {
                assert!(
                    off(e, want_bytes) < 0.05,
                    "{}: {e} vs {want_bytes}",
                    label(c)
                );
            }
            continue;
        }
        let e = estimate.unwrap_or_else(|| panic!("{}: {read:?} {write:?}", label(c)));
        assert!(
            off(e, want_bytes) < 0.05,
            "{}: {e} vs {want_bytes}",
            label(c)
        );
        let occupancy = fit(OCCUPANCY).and_then(|f| f.estimate).expect("occupancy");
        assert!(off(occupancy, want[2]) < 0.05, "{}: occupancy", label(c));
        if c.mangled.contains("gemv") {
            gemv.0 += 1;
            gemv.1 += usize::from(off(split, want_bytes) > off(e, want_bytes));
        }
    }
    assert!(gemv.0 >= 4, "decode GEMV classes: {gemv:?}");
    assert_eq!(gemv.0, gemv.1, "the split is worse for every GEMV class");
}

/// Bytes per launch, MBU % and AI of a shape.
type ShapeFigures = (Option<f64>, Option<f64>, Option<f64>);

/// The [`ShapeFigures`] of each decode GEMM shape of a report.
fn shape_figures(report: &Value) -> BTreeMap<String, ShapeFigures> {
    decode_shapes(report)
        .into_iter()
        .map(|(label, s)| {
            let launches = s["launches"].as_f64().expect("launches");
            (
                label,
                (
                    s["bytes"].as_f64().map(|b| b / launches),
                    s["mbu_pct"].as_f64(),
                    s["intensity"].as_f64(),
                ),
            )
        })
        .collect()
}

/// The report's decode GEMM shapes from sampling (graph replays, fitted bytes) agree
/// within 5 % with the eager run's measured on every launch.
#[test]
fn decode_shapes_from_sampling_match_per_kernel_counters() {
    let scratch = Scratch::new("deconvolve-shapes");
    let sampled = report_json(&record_sampled_graph(&scratch));
    let measured = report_json(&record(
        &scratch,
        "eager",
        &[],
        &[
            ("GPUPROF_REPLAY", "kernel"),
            ("GPUPROF_COUNTER_LAUNCHES", "0"),
        ],
    ));
    let (got, want) = (shape_figures(&sampled), shape_figures(&measured));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got.len() >= 5, "{got:?}");
    for (shape, (g, w)) in got.iter().zip(want.values()).map(|((s, g), w)| (s, (g, w))) {
        println!("{shape}: sampled {g:?}, measured {w:?}");
        for (what, g, w) in [("bytes", g.0, w.0), ("MBU", g.1, w.1), ("AI", g.2, w.2)] {
            let (g, w) = (g.expect(what), w.expect(what));
            assert!(off(g, w) < 0.05, "{shape}: {what} {g} vs {w}");
        }
    }
    for s in sampled["roofline"]["shapes"].as_array().expect("shapes") {
        if s["n"] == 1 {
            assert_eq!(s["bytes_source"], "sampled", "{s}");
        }
    }
    // Percentages of peak of decode-only kernels: fitted, as measured.
    let pct = |report: &Value, name: &str| -> Value {
        let kernels = report["counters"]["kernels"].as_array().expect("kernels");
        let k = kernels.iter().find(|k| k["mangled"] == name).expect(name);
        let sampled = report["counters"]["plans"][0]["mode"] == "sampling";
        assert_eq!(k.get("pct_source").is_some(), sampled, "{k}");
        k["pct"].clone()
    };
    for name in ["paged_attention_v1_kernel"] {
        let (got, want) = (pct(&sampled, name), pct(&measured, name));
        println!("{name}: sampled {got}, measured {want}");
        for key in ["sm_active", "dram_throughput", "achieved_occupancy"] {
            let (g, w) = (
                got[key].as_f64().expect(key),
                want[key].as_f64().expect(key),
            );
            assert!(off(g, w) < 0.05, "{name}: {key} {g} vs {w}");
        }
    }
}
