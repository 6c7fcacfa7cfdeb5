//! The roofline sections of the report (`analysis::efficiency`): the table's
//! `Roofline ...`, `Peaks` and `Roofline values missing`, the JSON `roofline` object
//! and the CSV `roofline_*` and `peaks` sections, with their number formats.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{
    fit_last_column, grid, pct, plural, shown_rows, value, wrapped, CsvTables, Names, TimeUnit,
};
use super::figures::{
    intensity, legend, marked, marked_ai, or_dash, pct_value, si, utilization_of, OVER_PEAK_LEGEND,
};
use super::rollups::{rollup_grid, rollup_json, rollup_legend, ROLLUP_COLUMNS};
use crate::analysis::precision::Math;
use crate::analysis::rollup::{BytesSource, FlopSource};
use crate::analysis::roofline::efficiency::{Efficiency, KernelRow, ShapeRow};
use crate::analysis::roofline::Point;
use crate::analysis::short_name::fit_names;

/// The most characters of a kernel's name in a line of prose ("... missing").
const PROSE_NAME_WIDTH: usize = 60;

/// The point's columns for tables: AI, FLOP/s, MFU %, MBU %, bound. (The roofline
/// efficiency, the share of the attainable FLOP/s, is in CSV and JSON.) AI and MBU
/// end in `~` ([`super::figures::marked`]) when the bytes are not all measured.
fn point_cells(p: &Point, bytes: Option<BytesSource>) -> Vec<String> {
    let reads_only = bytes == Some(BytesSource::SampledReads);
    // An upper bound on AI says "memory" for sure, "compute" not at all.
    let bound = p
        .bound
        .map(|b| b.name())
        .filter(|b| !(reads_only && *b == "compute"));
    vec![
        marked_ai(or_dash(p.intensity.map(intensity)), bytes),
        or_dash(p.achieved.map(si)),
        utilization_of(p.mfu),
        marked(utilization_of(p.mbu), bytes),
        or_dash(bound.map(str::to_string)),
    ]
}

/// A kernel's or shape's name, with its GPU's when the session has several.
fn label_of(e: &Efficiency, name: &str, gpu: &str) -> String {
    if e.gpus.len() > 1 {
        format!("{name} [{gpu}]")
    } else {
        name.to_string()
    }
}

/// Whether a utilization anywhere in the roofline's tables is over 100%.
fn over_peak(e: &Efficiency) -> bool {
    let over = |u: Option<f64>| u.is_some_and(|u| u > 1.0);
    let points = e.kernels.iter().map(|k| &k.point);
    let mut points = points.chain(e.shapes.iter().map(|s| &s.point));
    let rollups = e.families.iter().chain(&e.ranges).chain(&e.ranks);
    points.any(|p| over(p.mfu) || over(p.mbu))
        || rollups
            .chain(std::iter::once(&e.run))
            .any(|r| over(r.model.mfu) || over(r.hw.mfu) || over(r.mbu))
}

/// What kernel and GEMM-shape rows share: the math whose peak applies, DRAM bytes
/// and the launches they came from, the GPU's peaks, and the roofline point.
struct Measured<'a> {
    math: Option<Math>,
    bytes: (Option<f64>, u64, Option<BytesSource>),
    /// FLOP/s for `math`, DRAM bytes/s.
    peaks: (Option<f64>, Option<f64>),
    point: &'a Point,
}

/// Rows as JSON objects: `fields` gives each one's own fields and what it measured.
fn rows_json<'a, T>(items: &'a [T], fields: impl Fn(&'a T) -> (Value, Measured<'a>)) -> Vec<Value> {
    items
        .iter()
        .map(|item| {
            let (mut row, m) = fields(item);
            row["precision"] = json!(m.math.map(|m| m.precision.name()));
            row["pipe"] = json!(m.math.map(|m| m.pipe.name()));
            row["bytes"] = json!(m.bytes.0);
            row["bytes_launches"] = json!(m.bytes.1);
            row["bytes_source"] = json!(m.bytes.2.map(BytesSource::name));
            row["peak_flops_per_s"] = json!(m.peaks.0);
            row["dram_bytes_per_s"] = json!(m.peaks.1);
            point_json(m.point, &mut row);
            row
        })
        .collect()
}

/// The columns of [`point_cells`]: (header, right-aligned).
const POINT_COLUMNS: [(&str, bool); 5] = [
    ("AI", true),
    ("FLOP/s", true),
    ("MFU %", true),
    ("MBU %", true),
    ("bound", false),
];

/// [`grid`] with each column given as (header, right-aligned).
/// The last column (a name) is cut to fit [`super::cells::WIDTH`] unless `whole`.
fn grid_columns(out: &mut String, columns: &[(&str, bool)], rows: &mut [Vec<String>], whole: bool) {
    let (headers, right): (Vec<&str>, Vec<bool>) = columns.iter().copied().unzip();
    if !whole {
        fit_last_column(&headers, rows);
    }
    grid(out, &headers, &right, rows);
}

/// The point's fields for CSV and JSON.
fn point_json(p: &Point, row: &mut Value) {
    row["intensity"] = json!(p.intensity);
    row["achieved_flops_per_s"] = json!(p.achieved);
    row["mfu_pct"] = pct_value(p.mfu);
    row["mbu_pct"] = pct_value(p.mbu);
    row["ridge"] = json!(p.ridge);
    row["bound"] = json!(p.bound.map(|b| b.name()));
    row["attainable_flops_per_s"] = json!(p.attainable);
    row["roofline_efficiency_pct"] = pct_value(p.efficiency);
}

/// The table's roofline sections: per kernel, per GEMM shape, per family, per NVTX
/// range, the run, the peaks used and what is missing.
pub(super) fn roofline_table(
    out: &mut String,
    e: &Efficiency,
    kernel_ns: u64,
    top: Option<usize>,
    names: &Names,
) {
    let many_gpus = e.gpus.len() > 1;
    out.push_str(
        "\nRoofline by kernel (FLOPs: GEMM shapes; hw: counters, * where AI, FLOP/s and MFU use \
         them; AI in FLOP/byte)\n",
    );
    let kernels = shown_rows(&e.kernels, top);
    out.push_str(&legend(kernels.iter().map(|k| k.bytes_source)));
    if over_peak(e) {
        out.push_str(OVER_PEAK_LEGEND);
    }
    // A long run's GPU time in ms or s, so that the row fits the terminal.
    let unit = TimeUnit::for_column(kernels.iter().map(|k| k.gpu_ns).max().unwrap_or(0));
    let gpu_header = format!("GPU {}", unit.name());
    let mut rows: Vec<Vec<String>> = kernels
        .iter()
        .map(|k: &KernelRow| {
            // Model and counter FLOPs side by side, never one for the other; "*" on the
            // counters' when the row's AI, FLOP/s and MFU use them.
            let hw_used = k.flops_source == Some(FlopSource::Hardware);
            let hw = or_dash(
                k.hw_flops
                    .map(|f| format!("{}{}", si(f), if hw_used { "*" } else { "" })),
            );
            let bytes = marked(or_dash(k.bytes.map(si)), k.bytes_source);
            let mut row = vec![
                unit.show(k.gpu_ns),
                or_dash(k.model_flops.map(si)),
                hw,
                bytes,
            ];
            row.extend(point_cells(&k.point, k.bytes_source));
            row.push(or_dash(k.math.map(|m| m.to_string())));
            if many_gpus {
                row.push(k.gpu.clone());
            }
            row.push(names.of(&k.mangled, &k.name));
            row
        })
        .collect();
    let gpu_column: &[(&str, bool)] = if many_gpus { &[("gpu", false)] } else { &[] };
    let columns = [
        &[
            (gpu_header.as_str(), true),
            ("FLOPs", true),
            ("hw FLOPs", true),
            ("DRAM bytes", true),
        ][..],
        &POINT_COLUMNS,
        &[("math", false)],
        gpu_column,
        &[("name", false)],
    ];
    grid_columns(out, &columns.concat(), &mut rows, names.full);
    if kernels.len() < e.kernels.len() {
        let _ = writeln!(
            out,
            "  ... {} more kernels (--top 0 shows all)",
            e.kernels.len() - kernels.len()
        );
    }

    shapes_table(out, e, kernel_ns, top);

    out.push_str("\nRoofline by kernel family\n");
    rollup_legend(out);
    rollup_grid(out, "family", &e.families, kernel_ns, false);
    if !e.ranges.is_empty() {
        out.push_str("\nRoofline by NVTX range\n");
        rollup_grid(out, "range", &e.ranges, kernel_ns, true);
    }
    out.push_str("\nRoofline of the run\n");
    rollup_grid(out, "", std::slice::from_ref(&e.run), kernel_ns, true);
    if !e.ranks.is_empty() {
        out.push_str("\nRoofline by session\n");
        rollup_grid(out, "session", &e.ranks, kernel_ns, false);
    }

    peaks_table(out, e);

    for (pid, message) in &e.gemm_statuses {
        let _ = writeln!(out, "  pid {pid}: GEMM shapes unavailable: {message}");
    }
    if e.gemm_unjoined > 0 {
        let _ = writeln!(
            out,
            "  {} not joined to a kernel",
            plural(e.gemm_unjoined, "GEMM record", "GEMM records")
        );
    }

    missing_table(out, e, top, names);
}

/// The GEMM shapes' section of [`roofline_table`]: the first `top` by GPU time, each
/// with its verdicts, and the others counted.
fn shapes_table(out: &mut String, e: &Efficiency, kernel_ns: u64, top: Option<usize>) {
    let label = |name: &str, gpu: &str| label_of(e, name, gpu);
    if !e.shapes.is_empty() {
        out.push_str(
            "\nRoofline by GEMM shape (tokens x out x in x batch: cuBLAS's N x M x K as \
             PyTorch calls it; types; op(A) op(B))\n",
        );
        out.push_str(&legend(e.shapes.iter().map(|s| s.bytes_source)));
        let shapes = shown_rows(&e.shapes, top);
        let unit = TimeUnit::for_column(shapes.iter().map(|s| s.gpu_ns).max().unwrap_or(0));
        let gpu_header = format!("GPU {}", unit.name());
        let mut rows: Vec<Vec<String>> = shapes
            .iter()
            .map(|s: &ShapeRow| {
                let mut row = vec![s.calls.to_string(), unit.show(s.gpu_ns), si(s.model_flops)];
                row.extend(point_cells(&s.point, s.bytes_source));
                row.push(label(&s.shape.label_as_read(), &s.gpu));
                row
            })
            .collect();
        let columns = [
            &[
                ("calls", true),
                (gpu_header.as_str(), true),
                ("model FLOPs", true),
            ][..],
            &POINT_COLUMNS,
            &[("shape", false)],
        ];
        let mut text = String::new();
        grid_columns(&mut text, &columns.concat(), &mut rows, true);
        // Each row, then why it is where it is (analysis::roofline::verdict).
        let mut lines = text.lines();
        if let Some(header) = lines.next() {
            let _ = writeln!(out, "{header}");
        }
        for (line, s) in lines.zip(shapes) {
            let _ = writeln!(out, "{line}");
            for v in &s.verdicts {
                wrapped(out, 9, &format!("└ {}", v.text));
            }
        }
        let rest = &e.shapes[shapes.len()..];
        if !rest.is_empty() {
            let gpu_ns = rest.iter().fold(0u64, |t, s| t.saturating_add(s.gpu_ns));
            let _ = writeln!(
                out,
                "  ... {} more GEMM shapes, {} calls, {}% of GPU time (--top 0 shows all)",
                rest.len(),
                rest.iter().map(|s| s.calls).sum::<u64>(),
                pct(gpu_ns, kernel_ns)
            );
        }
    }
}

/// What the roofline could not give, and why: the first `top` lines.
fn missing_table(out: &mut String, e: &Efficiency, top: Option<usize>, names: &Names) {
    let label = |name: &str, gpu: &str| label_of(e, name, gpu);
    if !e.missing.is_empty() {
        out.push_str("\nRoofline values missing\n");
        let missing = shown_rows(&e.missing, top);
        for m in missing {
            let mut kernel = names.of_demangled(&m.kernel);
            if !names.full {
                kernel = fit_names(&[&kernel], PROSE_NAME_WIDTH).remove(0);
            }
            wrapped(out, 2, &format!("{}: {}", label(&kernel, &m.gpu), m.what));
        }
        if missing.len() < e.missing.len() {
            let _ = writeln!(
                out,
                "  ... {} more (--top 0 shows all; JSON: roofline.missing)",
                e.missing.len() - missing.len()
            );
        }
    }
}

/// The peaks used for each GPU, with their source and ridge points.
fn peaks_table(out: &mut String, e: &Efficiency) {
    out.push_str("\nPeaks (dense)\n");
    for g in &e.gpus {
        let devices: Vec<String> = g
            .devices
            .iter()
            .map(|(pid, d)| format!("pid {pid} device {d}"))
            .collect();
        let _ = writeln!(out, "  {} ({})", g.gpu, devices.join(", "));
        match (&g.peaks, &g.error) {
            (Some(p), _) => {
                let ceilings: Vec<String> = p
                    .ceilings()
                    .iter()
                    .map(|(m, v)| format!("{m} {}", value(v / 1e12)))
                    .collect();
                wrapped(out, 4, &format!("TFLOP/s: {}", ceilings.join(", ")));
                let _ = writeln!(
                    out,
                    "    DRAM: {}",
                    match p.bandwidth() {
                        Some(bw) => format!("{} TB/s", value(bw / 1e12)),
                        None => "unknown".to_string(),
                    }
                );
                if let Some(bw) = p.bandwidth().filter(|b| *b > 0.0) {
                    // Where each ceiling meets the DRAM slope: below, memory-bound.
                    let ridges: Vec<String> = p
                        .ceilings()
                        .iter()
                        .map(|(m, v)| format!("{m} {}", intensity(v / bw)))
                        .collect();
                    wrapped(
                        out,
                        4,
                        &format!("ridge points, FLOP/byte: {}", ridges.join(", ")),
                    );
                }
                wrapped(out, 4, &format!("source: {}", p.source));
            }
            (None, Some(err)) => wrapped(out, 4, err),
            (None, None) => {}
        }
    }
}

/// The `roofline` object: `kernels` (the shown ones), `shapes`, `families`, `ranges`,
/// `run`, `peaks`, `missing`, `gemm_statuses`, `gemm_unjoined`. FLOPs, bytes and
/// FLOP/s are plain numbers; `*_pct` are percentages rounded to two decimals; `null`
/// where a value could not be computed (see `missing`).
pub(super) fn roofline_json(e: &Efficiency, top: Option<usize>) -> Value {
    let kernels = rows_json(shown_rows(&e.kernels, top), |k| {
        let row = json!({
            "name": k.name,
            "mangled": k.mangled,
            "gpu": k.gpu,
            "family": k.family.name(),
            "calls": k.calls,
            "gpu_ns": k.gpu_ns,
            "gemm_launches": k.gemm_launches,
            "gemm_part_launches": k.gemm_part_launches,
            "model_flops": k.model_flops,
            "hw_flops": k.hw_flops,
            "hw_flops_launches": k.hw_flops_launches,
            "flops_source": k.flops_source.map(|f| f.name()),
        });
        let measured = Measured {
            math: k.math,
            bytes: (k.bytes, k.bytes_launches, k.bytes_source),
            peaks: (k.peak_flops, k.bandwidth),
            point: &k.point,
        };
        (row, measured)
    });
    let shapes = rows_json(&e.shapes, |s| {
        use crate::analysis::gemm::op_name;
        use crate::analysis::precision::{compute_type_name, data_type_name};
        let row = json!({
            "shape": s.label,
            "gpu": s.gpu,
            "m": s.shape.m,
            "n": s.shape.n,
            "k": s.shape.k,
            "batch": s.shape.batch,
            "a_type": data_type_name(s.shape.a_type),
            "b_type": data_type_name(s.shape.b_type),
            "c_type": data_type_name(s.shape.c_type),
            "d_type": data_type_name(s.shape.d_type),
            "compute_type": compute_type_name(s.shape.compute_type),
            "trans_a": op_name(s.shape.trans_a),
            "trans_b": op_name(s.shape.trans_b),
            "calls": s.calls,
            "launches": s.launches,
            "gpu_ns": s.gpu_ns,
            "model_flops": s.model_flops,
            "kernels": s.kernels,
            "verdicts": s.verdicts,
        });
        let measured = Measured {
            math: s.math,
            bytes: (s.bytes, s.bytes_launches, s.bytes_source),
            peaks: (s.peak_flops, s.bandwidth),
            point: &s.point,
        };
        (row, measured)
    });
    let peaks: Vec<Value> = e
        .gpus
        .iter()
        .map(|g| {
            let mut row = json!({
                "gpu": g.gpu,
                "devices": g.devices.iter().map(|(pid, d)| json!({"pid": pid, "device_id": d})).collect::<Vec<_>>(),
                "source": g.peaks.as_ref().map(|p| p.source.clone()),
                "error": g.error,
                "dram_bytes_per_s": g.peaks.as_ref().and_then(|p| p.bandwidth()),
            });
            for (m, v) in g.peaks.as_ref().map(|p| p.ceilings()).unwrap_or_default() {
                let pipe = match m.pipe {
                    crate::analysis::precision::Pipe::Tensor => "tensor",
                    crate::analysis::precision::Pipe::Cuda => "cuda",
                };
                row[format!("{}_{pipe}_flops_per_s", m.precision.name().to_lowercase())] =
                    json!(v);
            }
            row
        })
        .collect();
    let mut out = json!({
        "kernels": kernels,
        "shapes": shapes,
        "families": e.families.iter().map(rollup_json).collect::<Vec<_>>(),
        "ranges": e.ranges.iter().map(rollup_json).collect::<Vec<_>>(),
        "run": rollup_json(&e.run),
        "peaks": peaks,
        "missing": e.missing,
        "gemm_statuses": e.gemm_statuses.iter().map(|(pid, m)| json!({"pid": pid, "message": m})).collect::<Vec<_>>(),
        "gemm_unjoined": e.gemm_unjoined,
    });
    if !e.ranks.is_empty() {
        out["sessions"] = json!(e.ranks.iter().map(rollup_json).collect::<Vec<_>>());
    }
    out
}

/// The verdict rules under the GEMM shape rows ([`crate::analysis::roofline::verdict`]),
/// for `report --help`.
pub const VERDICT_HELP: &str = "\
Verdicts under \"Roofline by GEMM shape\" rows (JSON/CSV verdicts; thresholds worth a line, not NVIDIA's):
  memory_bound        AI < ridge, MBU >= 60%: at the DRAM ceiling; more tokens per call raise AI
  memory_bound_slow   AI < ridge, MBU < 60%: below it; the launch shape or latency holds it
  compute_bound       AI >= ridge, MFU >= 60% of the shape's precision's peak
  compute_bound_slow  AI >= ridge, MFU < 60%: tile padding or the launch shape hold it
  off_tensor_pipe     a tensor-pipe precision whose kernel's FLOP counters put most FLOPs on
                      CUDA cores: that pipe's peak is its ceiling
  tile_padding        the kernel name's CTA tile (tilesize128x128x64, _128x64_ldg8_, CUTLASS
                      _64x64_64x4_) tiles cuBLAS's M x N; fill = M*N / (whole tiles' M' * N')
                      under 90%";

/// The CSV columns kernel and GEMM-shape rows share (see [`Measured`]).
const MEASURED_COLUMNS: [&str; 12] = [
    "bytes",
    "bytes_launches",
    "bytes_source",
    "intensity",
    "achieved_flops_per_s",
    "mfu_pct",
    "mbu_pct",
    "ridge",
    "bound",
    "attainable_flops_per_s",
    "roofline_efficiency_pct",
    "peak_flops_per_s",
];

fn kernel_columns() -> Vec<&'static str> {
    let own = [
        "name",
        "mangled",
        "gpu",
        "family",
        "precision",
        "pipe",
        "calls",
        "gpu_ns",
        "gemm_launches",
        "gemm_part_launches",
        "model_flops",
        "hw_flops",
        "hw_flops_launches",
        "flops_source",
    ];
    [&own[..], &MEASURED_COLUMNS, &["dram_bytes_per_s"]].concat()
}

fn shape_columns() -> Vec<&'static str> {
    let own = [
        "shape",
        "gpu",
        "m",
        "n",
        "k",
        "batch",
        "a_type",
        "b_type",
        "c_type",
        "d_type",
        "compute_type",
        "trans_a",
        "trans_b",
        "precision",
        "pipe",
        "calls",
        "launches",
        "gpu_ns",
        "model_flops",
    ];
    [&own[..], &MEASURED_COLUMNS, &["verdicts"]].concat()
}

const PEAK_COLUMNS: [&str; 14] = [
    "gpu",
    "devices",
    "bf16_tensor_flops_per_s",
    "fp16_tensor_flops_per_s",
    "tf32_tensor_flops_per_s",
    "fp8_tensor_flops_per_s",
    "int8_tensor_flops_per_s",
    "fp4_tensor_flops_per_s",
    "fp64_tensor_flops_per_s",
    "fp32_cuda_flops_per_s",
    "fp64_cuda_flops_per_s",
    "dram_bytes_per_s",
    "source",
    "error",
];

/// The CSV roofline sections from the JSON `roofline` object.
pub(super) fn roofline_csv(out: &mut CsvTables, r: &Value) {
    let rows = |key: &str| r[key].as_array().cloned().unwrap_or_default();
    let peaks: Vec<Value> = rows("peaks")
        .into_iter()
        .map(|mut p| {
            let devices: Vec<String> = p["devices"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| format!("{}:{}", d["pid"], d["device_id"]))
                .collect();
            p["devices"] = json!(devices.join(" "));
            p
        })
        .collect();
    // A shape's verdicts as "rule: text; rule: text".
    let shapes: Vec<Value> = rows("shapes")
        .into_iter()
        .map(|mut s| {
            let verdicts: Vec<String> = s["verdicts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    format!(
                        "{}: {}",
                        v["rule"].as_str().unwrap_or(""),
                        v["text"].as_str().unwrap_or("")
                    )
                })
                .collect();
            s["verdicts"] = json!(verdicts.join("; "));
            s
        })
        .collect();
    let (kernel_columns, shape_columns) = (kernel_columns(), shape_columns());
    let sections: [(&str, &[&str], Vec<Value>); 8] = [
        ("roofline_kernels", &kernel_columns, rows("kernels")),
        ("roofline_shapes", &shape_columns, shapes),
        ("roofline_families", &ROLLUP_COLUMNS, rows("families")),
        ("roofline_ranges", &ROLLUP_COLUMNS, rows("ranges")),
        ("roofline_run", &ROLLUP_COLUMNS, vec![r["run"].clone()]),
        ("roofline_sessions", &ROLLUP_COLUMNS, rows("sessions")),
        ("peaks", &PEAK_COLUMNS, peaks),
        (
            "roofline_missing",
            &["kernel", "gpu", "what"],
            rows("missing"),
        ),
    ];
    for (name, columns, rows) in sections {
        // Only a report of several sessions has a run per session.
        if name == "roofline_sessions" && rows.is_empty() {
            continue;
        }
        out.table(name, columns, rows);
    }
}
