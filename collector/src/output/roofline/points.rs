//! From the roofline analysis to what `gpuprof roofline` writes: one chart per GPU
//! model ([`charts`], drawn by [`crate::output::roofline::svg`]) and the points behind it as
//! CSV and JSON ([`points_csv`], [`points_json`]) for plotting elsewhere.
//!
//! A point is one GEMM shape (kind `gemm_shape`: its calls, model FLOPs and bytes, as
//! the report's shape row) or one kernel name whose launches are not all GEMM calls
//! (kind `kernel`), on one GPU model: x its arithmetic intensity (FLOP per DRAM
//! byte), y its achieved FLOP/s, size its GPU time, colour its family. A kernel that
//! only runs GEMMs is drawn as its shapes, so each launch's time is in one point. A
//! point without both values (no DRAM counters, no FLOPs) is listed with `plotted`
//! false and the reason, and is not drawn. A chart's ceilings are the DRAM bandwidth and the
//! compute peaks of the data types its kernels use (every known one when none has a
//! type).

use serde_json::{json, Value};

use crate::analysis::roofline::efficiency::{Efficiency, KernelRow, ShapeRow};
use crate::analysis::roofline::Input;
use crate::output::roofline::layout::{Ceiling, Chart, ChartPoint};

/// One value of a point, written to CSV and JSON from the same place.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Text(String),
    Count(u64),
    /// Absent: empty in CSV, `null` in JSON.
    Number(Option<f64>),
    Word(Option<&'static str>),
    Flag(bool),
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Cell::Text(s) => csv_field(s),
            Cell::Count(n) => n.to_string(),
            // Rust's shortest round-trip form.
            Cell::Number(v) => v.map(|x| x.to_string()).unwrap_or_default(),
            Cell::Word(w) => w.unwrap_or_default().to_string(),
            Cell::Flag(b) => b.to_string(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Cell::Text(s) => json!(s),
            Cell::Count(n) => json!(n),
            Cell::Number(v) => json!(v),
            Cell::Word(w) => json!(w),
            Cell::Flag(b) => json!(b),
        }
    }
}

/// The columns of a point: (CSV column, JSON key), in [`PointRow`] order.
const COLUMNS: [(&str, &str); 17] = [
    ("gpu", "gpu"),
    ("name", "name"),
    ("kind", "kind"),
    ("family", "family"),
    ("math", "math"),
    ("calls", "calls"),
    ("gpu_ns", "gpu_ns"),
    ("flops_source", "flops_source"),
    ("flops", "flops"),
    ("bytes", "bytes"),
    ("intensity", "intensity"),
    ("achieved_flops_per_s", "achieved_flops_per_s"),
    ("mfu_pct", "mfu_pct"),
    ("mbu_pct", "mbu_pct"),
    ("bound", "bound"),
    ("plotted", "plotted"),
    ("missing", "missing"),
];

/// One kernel name on one GPU model, as written to CSV and JSON: a value per
/// [`COLUMNS`] entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PointRow([Cell; COLUMNS.len()]);

/// What a point is drawn from: a kernel row or a GEMM shape row.
struct Source<'a> {
    gpu: &'a str,
    name: String,
    kind: &'static str,
    family: &'static str,
    math: Option<crate::analysis::precision::Math>,
    calls: u64,
    gpu_ns: u64,
    flops_source: &'static str,
    flops: Option<f64>,
    bytes: Option<f64>,
    point: &'a crate::analysis::roofline::Point,
}

impl<'a> Source<'a> {
    fn kernel(r: &'a KernelRow) -> Source<'a> {
        Source {
            gpu: &r.gpu,
            name: r.name.clone(),
            kind: "kernel",
            family: r.family.name(),
            math: r.math,
            calls: r.calls,
            gpu_ns: r.gpu_ns,
            flops_source: r.flops_source.map(|s| s.name()).unwrap_or_default(),
            flops: r.flops(),
            bytes: r.bytes,
            point: &r.point,
        }
    }

    fn shape(s: &'a ShapeRow) -> Source<'a> {
        Source {
            gpu: &s.gpu,
            name: format!("GEMM {}", s.shape.label_as_read()),
            kind: "gemm_shape",
            family: "GEMM",
            math: s.math,
            calls: s.calls,
            gpu_ns: s.gpu_ns,
            flops_source: "model",
            flops: Some(s.model_flops),
            bytes: s.bytes,
            point: &s.point,
        }
    }
}

/// The points of `e`: its GEMM shapes and the kernels that are not only GEMM calls,
/// by GPU time, longest first (ties: name).
fn sources(e: &Efficiency) -> Vec<Source<'_>> {
    let mut out: Vec<Source> = e
        .kernels
        .iter()
        .filter(|k| !(k.gemm_launches > 0 && k.gemm_launches == k.calls))
        .map(Source::kernel)
        .chain(e.shapes.iter().map(Source::shape))
        .collect();
    out.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.name.cmp(&b.name)));
    out
}

fn point_row(r: &Source) -> PointRow {
    let p = r.point;
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
    let math = r.math.map(|m| m.to_string()).unwrap_or_default();
    PointRow([
        Cell::Text(r.gpu.to_string()),
        Cell::Text(r.name.clone()),
        Cell::Text(r.kind.to_string()),
        Cell::Text(r.family.to_string()),
        Cell::Text(math),
        Cell::Count(r.calls),
        Cell::Count(r.gpu_ns),
        Cell::Text(r.flops_source.to_string()),
        Cell::Number(r.flops),
        Cell::Number(r.bytes),
        Cell::Number(p.intensity),
        Cell::Number(p.achieved),
        Cell::Number(p.mfu.map(pct)),
        Cell::Number(p.mbu.map(pct)),
        Cell::Word(p.bound.map(|b| b.name())),
        Cell::Flag(plotted),
        Cell::Text(missing),
    ])
}

/// A fraction as a percentage rounded to two decimals, as the report's CSV and JSON
/// give `mfu_pct` and `mbu_pct`.
fn pct(f: f64) -> f64 {
    (f * 10_000.0).round() / 100.0
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

/// Every point ([`sources`]), longest GPU time first.
pub fn points(e: &Efficiency) -> Vec<PointRow> {
    sources(e).iter().map(point_row).collect()
}

/// One chart per GPU model with known peaks, in the analysis's GPU order.
pub fn charts(e: &Efficiency) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for g in &e.gpus {
        let Some(peaks) = &g.peaks else { continue };
        let all = sources(e);
        let rows: Vec<&Source> = all.iter().filter(|r| r.gpu == g.gpu).collect();
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
                family: r.family.to_string(),
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

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The points as CSV: a header row, then one row per kernel.
pub fn points_csv(rows: &[PointRow]) -> String {
    let header: Vec<&str> = COLUMNS.iter().map(|(column, _)| *column).collect();
    let mut out = header.join(",");
    out.push('\n');
    for r in rows {
        let fields: Vec<String> = r.0.iter().map(Cell::csv).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The points as a JSON array of objects (absent values are `null`).
pub fn points_json(rows: &[PointRow]) -> Value {
    rows.iter()
        .map(|r| {
            let fields = COLUMNS.iter().zip(&r.0);
            Value::Object(
                fields
                    .map(|((_, key), cell)| (key.to_string(), cell.json()))
                    .collect(),
            )
        })
        .collect()
}
