//! The roofline's rollups in the report (`analysis::rollup`): the tables by kernel
//! family, NVTX range, session and of the run, their JSON objects and CSV columns.
//! Model FLOPs (MFU) and hardware FLOPs (HFU) have columns of their own, each with the
//! share of GPU time it covers.

use serde_json::{json, Value};

use super::cells::{
    drop_to_fit, fit_last_column, grid, micros, note_left_out, pct, wrapped, TimeUnit,
};
use super::figures::{
    intensity, legend, marked, marked_ai, or_dash, pct_of, pct_value, si, utilization_of,
};
use crate::analysis::rollup::{FlopTotals, Rollup};

/// What the rollup tables' utilizations are, under the first of them.
pub(super) fn rollup_legend(out: &mut String) {
    wrapped(
        out,
        2,
        "MFU: model FLOPs (GEMM shapes), HFU: hardware FLOPs (counters), MBU: DRAM bytes, \
         each at peak over the GPU time of the launches that have them ((N%): their share \
         of the GPU time); wall: over the GPUs' wall time, idle included; AI in FLOP/byte",
    );
}

/// `cell` followed by the share of `all_ns` that `part_ns` is, when it is not all of
/// it ("1.20G (94%)"; rounded down, so a part is never shown as 100%); "-" when the
/// part is empty.
fn covered(cell: String, part_ns: u64, all_ns: u64) -> String {
    if part_ns == 0 {
        return "-".to_string();
    }
    if part_ns >= all_ns {
        return cell;
    }
    let share = (u128::from(part_ns) * 100 / u128::from(all_ns.max(1))) as u64;
    if share == 0 {
        format!("{cell} (<1%)")
    } else {
        format!("{cell} ({share}%)")
    }
}

/// A utilization over wall time: an idle GPU's rounds to 0.0, so say how small.
fn wall_pct(f: Option<f64>) -> String {
    match f {
        Some(f) if f > 0.0 && f < 0.0005 => "<0.1".to_string(),
        other => pct_of(other),
    }
}

/// The columns of one rollup table: (header, cell of a rollup), all right-aligned; the
/// name column follows.
type Column = (&'static str, fn(&Rollup, u64) -> String);

/// The columns of every rollup table; `kernel_ns` is all kernels' GPU time.
const COLUMNS: [Column; 11] = [
    ("launches", |r, _| r.launches.to_string()),
    ("GPU µs", |r, _| micros(r.gpu_ns)),
    ("time %", |r, kernel_ns| pct(r.gpu_ns, kernel_ns)),
    ("model FLOPs", |r, _| or_dash(r.model.flops.map(si))),
    ("MFU %", |r, _| utilization(&r.model, r.gpu_ns)),
    ("hw FLOPs", |r, _| or_dash(r.hw.flops.map(si))),
    ("HFU %", |r, _| utilization(&r.hw, r.gpu_ns)),
    ("DRAM bytes", |r, _| {
        covered(marked(si(r.bytes), r.bytes_source), r.bytes_ns, r.gpu_ns)
    }),
    ("MBU %", |r, _| {
        covered(
            marked(utilization_of(r.mbu), r.bytes_source),
            r.mbu_ns,
            r.gpu_ns,
        )
    }),
    ("model AI", |r, _| ai(&r.model, r)),
    ("hw AI", |r, _| ai(&r.hw, r)),
];

/// The GPU time's column, whose unit is the table's ([`TimeUnit::for_column`]).
const GPU_COLUMN: usize = 1;
/// The column MFU over wall time follows, in tables that have it.
const MFU_COLUMN: usize = 4;
/// Columns [`drop_to_fit`] leaves out first (indices into [`COLUMNS`]): the time
/// share, then the AIs.
const DROPPABLE: [usize; 3] = [2, 10, 9];

fn utilization(f: &FlopTotals, gpu_ns: u64) -> String {
    covered(utilization_of(f.mfu), f.mfu_ns, gpu_ns)
}

fn ai(f: &FlopTotals, r: &Rollup) -> String {
    marked_ai(or_dash(f.intensity.map(intensity)), r.bytes_source)
}

/// The rollups as a table whose last column, `title`, names them; with `wall`, MFU
/// over busy time and over wall time side by side (NVTX ranges, the run).
pub(super) fn rollup_grid(
    out: &mut String,
    title: &str,
    rows: &[Rollup],
    kernel_ns: u64,
    wall: bool,
) {
    out.push_str(&legend(rows.iter().map(|r| r.bytes_source)));
    let mut headers: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| COLUMNS.iter().map(|(_, cell)| cell(r, kernel_ns)).collect())
        .collect();
    // A long run's GPU time in ms or s, so that the row fits the terminal.
    let unit = TimeUnit::for_column(rows.iter().map(|r| r.gpu_ns).max().unwrap_or(0));
    headers[GPU_COLUMN] = format!("GPU {}", unit.name());
    for (row, r) in cells.iter_mut().zip(rows) {
        row[GPU_COLUMN] = unit.show(r.gpu_ns);
    }
    let mut droppable = DROPPABLE.to_vec();
    if wall {
        headers[MFU_COLUMN] = "MFU busy %".to_string();
        headers.insert(MFU_COLUMN + 1, "MFU wall %".to_string());
        for (row, r) in cells.iter_mut().zip(rows) {
            let cell = covered(wall_pct(r.model.mfu_wall), r.model.mfu_ns, r.gpu_ns);
            row.insert(MFU_COLUMN + 1, cell);
        }
        for d in &mut droppable {
            if *d > MFU_COLUMN {
                *d += 1;
            }
        }
    }
    headers.push(title.to_string());
    for (row, r) in cells.iter_mut().zip(rows) {
        row.push(r.name.clone());
    }
    let mut right: Vec<bool> = (0..headers.len()).map(|i| i + 1 < headers.len()).collect();
    let dropped = drop_to_fit(&mut headers, &mut right, &mut cells, &droppable);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    fit_last_column(&headers, &mut cells);
    grid(out, &headers, &right, &cells);
    note_left_out(out, &dropped);
}

/// One kind of FLOPs as JSON fields, `flops` naming the FLOPs ("model", "hw") and
/// `utilization` their utilization ("mfu", "hfu").
fn flop_fields(row: &mut Value, f: &FlopTotals, gpu_ns: u64, flops: &str, utilization: &str) {
    row[format!("{flops}_flops")] = json!(f.flops);
    row[format!("{flops}_flops_ns")] = json!(f.flops_ns);
    row[format!("{flops}_intensity")] = json!(f.intensity);
    row[format!("{flops}_achieved_flops_per_s")] = json!(f.achieved);
    row[format!("{utilization}_pct")] = pct_value(f.mfu);
    row[format!("{utilization}_ns")] = json!(f.mfu_ns);
    row[format!("{utilization}_coverage_pct")] = pct_value(f.mfu_coverage(gpu_ns));
    row[format!("{utilization}_wall_pct")] = pct_value(f.mfu_wall);
}

pub(super) fn rollup_json(r: &Rollup) -> Value {
    let mut row = json!({
        "name": r.name,
        "launches": r.launches,
        "gpu_ns": r.gpu_ns,
    });
    flop_fields(&mut row, &r.model, r.gpu_ns, "model", "mfu");
    flop_fields(&mut row, &r.hw, r.gpu_ns, "hw", "hfu");
    row["bytes"] = json!((r.bytes_ns > 0).then_some(r.bytes));
    row["bytes_ns"] = json!(r.bytes_ns);
    row["bytes_source"] = json!(r.bytes_source.map(|s| s.name()));
    row["mbu_pct"] = pct_value(r.mbu);
    row["mbu_ns"] = json!(r.mbu_ns);
    row["mbu_coverage_pct"] = pct_value(r.mbu_coverage());
    row["wall_ns"] = json!(r.wall_ns);
    row
}

/// The CSV columns of a rollup row, as [`rollup_json`] names them.
pub(super) const ROLLUP_COLUMNS: [&str; 26] = [
    "name",
    "launches",
    "gpu_ns",
    "model_flops",
    "model_flops_ns",
    "model_intensity",
    "model_achieved_flops_per_s",
    "mfu_pct",
    "mfu_ns",
    "mfu_coverage_pct",
    "mfu_wall_pct",
    "hw_flops",
    "hw_flops_ns",
    "hw_intensity",
    "hw_achieved_flops_per_s",
    "hfu_pct",
    "hfu_ns",
    "hfu_coverage_pct",
    "hfu_wall_pct",
    "bytes",
    "bytes_ns",
    "bytes_source",
    "mbu_pct",
    "mbu_ns",
    "mbu_coverage_pct",
    "wall_ns",
];
