//! From the roofline analysis to what `gpuprof roofline` writes: one chart per GPU
//! model ([`charts`], drawn by [`crate::roofline_svg`]) and the points behind it as
//! CSV and JSON ([`points_csv`], [`points_json`]) for plotting elsewhere.
//!
//! A point is one kernel name on one GPU model: x its arithmetic intensity (FLOP per
//! DRAM byte), y its achieved FLOP/s, size its GPU time, colour its family. A kernel
//! without both values (no DRAM counters, no FLOPs) is listed with `plotted` false and
//! the reason, and is not drawn. A chart's ceilings are the DRAM bandwidth and the
//! compute peaks of the data types its kernels use (every known one when none has a
//! type).

use serde::Serialize;

use crate::analysis::efficiency::{Efficiency, KernelRow};
use crate::analysis::roofline::Input;
use crate::roofline_svg::{Ceiling, Chart, ChartPoint};

/// One kernel name on one GPU model, as written to CSV / JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointRow {
    pub gpu: String,
    pub name: String,
    pub family: String,
    /// "BF16 tensor", "FP32 CUDA cores", ... (empty when unknown).
    pub math: String,
    pub calls: u64,
    pub gpu_ns: u64,
    /// FLOPs used ("model": GEMM shapes, "hw": counters; empty when none).
    pub flops_source: String,
    pub flops: Option<f64>,
    pub dram_bytes: Option<f64>,
    /// FLOP/byte.
    pub intensity: Option<f64>,
    /// FLOP/s.
    pub achieved_flops_per_s: Option<f64>,
    /// Fractions.
    pub mfu: Option<f64>,
    pub mbu: Option<f64>,
    /// "memory" or "compute".
    pub bound: Option<String>,
    /// Whether the chart shows it.
    pub plotted: bool,
    /// Why it is not plotted.
    pub missing: String,
}

fn point_row(r: &KernelRow) -> PointRow {
    let p = &r.point;
    let plotted = drawable(p.intensity) && drawable(p.achieved);
    let missing = if plotted {
        String::new()
    } else {
        p.missing
            .iter()
            .map(|m| input_name(*m))
            .collect::<Vec<_>>()
            .join(", ")
    };
    PointRow {
        gpu: r.gpu.clone(),
        name: r.name.clone(),
        family: r.family.name().to_string(),
        math: r.math.map(|m| m.to_string()).unwrap_or_default(),
        calls: r.calls,
        gpu_ns: r.gpu_ns,
        flops_source: r
            .flops_source
            .map(|s| s.name().to_string())
            .unwrap_or_default(),
        flops: r.flops(),
        dram_bytes: r.bytes,
        intensity: p.intensity,
        achieved_flops_per_s: p.achieved,
        mfu: p.mfu,
        mbu: p.mbu,
        bound: p.bound.map(|b| b.name().to_string()),
        plotted,
        missing,
    }
}

fn input_name(i: Input) -> &'static str {
    match i {
        Input::Flops => "no FLOPs",
        Input::Bytes => "no DRAM bytes",
        Input::Duration => "no GPU time",
        Input::PeakFlops => "no peak FLOP/s",
        Input::Bandwidth => "no DRAM bandwidth",
    }
}

fn drawable(v: Option<f64>) -> bool {
    v.is_some_and(|x| x.is_finite() && x > 0.0)
}

/// Every kernel row, in the analysis's order (longest GPU time first).
pub fn points(e: &Efficiency) -> Vec<PointRow> {
    e.kernels.iter().map(point_row).collect()
}

/// One chart per GPU model with known peaks, in the analysis's GPU order.
pub fn charts(e: &Efficiency) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for g in &e.gpus {
        let Some(peaks) = &g.peaks else { continue };
        let rows: Vec<&KernelRow> = e.kernels.iter().filter(|r| r.gpu == g.gpu).collect();
        let used: Vec<_> = rows.iter().filter_map(|r| r.math).collect();
        let ceilings = peaks
            .ceilings()
            .into_iter()
            .filter(|(m, _)| used.is_empty() || used.contains(m))
            .map(|(m, v)| Ceiling {
                label: m.to_string(),
                flops_per_s: v,
            })
            .collect();
        let points = rows
            .iter()
            .map(|r| ChartPoint {
                label: r.name.clone(),
                family: r.family.name().to_string(),
                intensity: r.point.intensity.unwrap_or(f64::NAN),
                flops_per_s: r.point.achieved.unwrap_or(f64::NAN),
                gpu_ns: r.gpu_ns,
            })
            .collect();
        out.push((
            g.gpu.clone(),
            Chart {
                title: format!("{} \u{2014} roofline", g.gpu),
                bandwidth_bytes_per_s: peaks.bandwidth().unwrap_or(f64::NAN),
                ceilings,
                points,
            },
        ));
    }
    out
}

const CSV_COLUMNS: [&str; 16] = [
    "gpu",
    "name",
    "family",
    "math",
    "calls",
    "gpu_ns",
    "flops_source",
    "flops",
    "dram_bytes",
    "intensity_flop_per_byte",
    "achieved_flop_per_s",
    "mfu",
    "mbu",
    "bound",
    "plotted",
    "missing",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number as Rust prints it (shortest round-trip form); empty when absent.
fn num(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The points as CSV: a header row, then one row per kernel.
pub fn points_csv(rows: &[PointRow]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let fields = [
            csv_field(&r.gpu),
            csv_field(&r.name),
            csv_field(&r.family),
            csv_field(&r.math),
            r.calls.to_string(),
            r.gpu_ns.to_string(),
            csv_field(&r.flops_source),
            num(r.flops),
            num(r.dram_bytes),
            num(r.intensity),
            num(r.achieved_flops_per_s),
            num(r.mfu),
            num(r.mbu),
            r.bound.clone().unwrap_or_default(),
            r.plotted.to_string(),
            csv_field(&r.missing),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The points as a JSON array of objects (absent values are `null`).
pub fn points_json(rows: &[PointRow]) -> serde_json::Value {
    serde_json::to_value(rows).unwrap_or(serde_json::Value::Null)
}
