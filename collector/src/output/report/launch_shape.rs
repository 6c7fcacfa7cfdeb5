//! The "Launch shape" section ([`crate::analysis::launch_shape`]): per kernel
//! configuration, the blocks an SM holds, theoretical and achieved occupancy, waves
//! and SMs busy, with what they cost; as text, JSON and CSV rows.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{
    drop_to_fit, fit_last_column, grid, note_left_out, pct, shown_rows, wrapped, Names,
};
use crate::analysis::launch_shape::LaunchShape;
use crate::analysis::names::{demangle, dims, percent};

/// The CSV columns of the `launch_shapes` section (the JSON keys of a row).
pub(super) const LAUNCH_SHAPE_COLUMNS: [&str; 24] = [
    "name",
    "mangled",
    "grid",
    "block",
    "compute_capability",
    "sm_count",
    "calls",
    "total_ns",
    "gpu_time_pct",
    "blocks",
    "threads_per_block",
    "registers_per_thread",
    "shared_memory_bytes",
    "shared_memory_bytes_min",
    "blocks_per_sm",
    "limited_by",
    "theoretical_occupancy_pct",
    "achieved_occupancy_pct",
    "blocks_per_wave",
    "waves",
    "sms_busy_pct",
    "wave_efficiency_pct",
    "findings",
    "unknown_why",
];

/// The rules of the launch shape section, for `gpuprof report --help`.
pub const LAUNCH_SHAPE_HELP: &str = "\
Launch shape by kernel config (theoretical: every SM free for the kernel, blocks equally long):
  blk/SM   blocks an SM holds at once: the least of what registers (256 per warp at a time,
           from four sub-partitions of 16,384), shared memory (the block's static and
           dynamic, plus 1 KiB the driver reserves, 128 bytes at a time, of the SM's
           largest carveout), warps and the block limit allow, as NVIDIA's occupancy
           calculator counts them; \"held by\" names each that gives the least. SM limits
           per compute capability: 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 12.0
  occ %    100 x blk/SM x warps per block / warps per SM (theoretical occupancy)
  ach %    sm__warps_active.avg.pct_of_peak_sustained_active, mean over measured launches
  waves    blocks / (SMs x blk/SM)
  SMs %    100 x min(blocks, SMs) / SMs
  no block fits an SM                  \"a block needs more than an SM holds\" (alone)
  fewer blocks than SMs                \"B blocks on S SMs: X% of SMs busy\"
  over 1 wave, under 75% of the block  \"W waves, the last X% full: Y% of block slots idle\"
    slots of the waves started used
  occupancy under 50%, held by         \"occupancy at most X%: held by ...\"
    registers or shared memory
  achieved under half the theoretical  \"achieved occupancy A% of a possible X%\"";

/// A fraction as a percentage rounded to two decimals.
fn pct2(f: f64) -> f64 {
    (f * 10_000.0).round() / 100.0
}

fn row_json(r: &LaunchShape, kernel_ns: u64) -> Value {
    let t = r.theoretical.as_ref().ok();
    let w = t.and_then(|t| t.waves);
    json!({
        "name": if r.mangled.is_empty() { "(unnamed)".to_string() } else { demangle(&r.mangled) },
        "mangled": r.mangled,
        "grid": r.grid,
        "block": r.block,
        "compute_capability": r.device.map(|(cc, _)| [cc.0, cc.1]),
        "sm_count": r.device.map(|(_, n)| n),
        "calls": r.calls,
        "total_ns": r.total_ns,
        "gpu_time_pct": percent(r.total_ns, kernel_ns),
        "blocks": r.blocks,
        "threads_per_block": r.threads_per_block,
        "registers_per_thread": r.registers_per_thread,
        "shared_memory_bytes": r.shared_memory.1,
        "shared_memory_bytes_min": r.shared_memory.0,
        "blocks_per_sm": t.map(|t| t.occupancy.blocks_per_sm),
        "limited_by": t.map(|t| t.occupancy.limiters.names()),
        "theoretical_occupancy_pct": t.map(|t| pct2(t.occupancy.fraction())),
        "achieved_occupancy_pct": r.achieved_occupancy_pct.map(|a| (a * 100.0).round() / 100.0),
        "blocks_per_wave": w.map(|w| w.per_wave),
        "waves": w.map(|w| (w.waves * 10_000.0).round() / 10_000.0),
        "sms_busy_pct": w.map(|w| pct2(w.sms_busy)),
        "wave_efficiency_pct": w.map(|w| pct2(w.efficiency)),
        "findings": r.findings,
        "unknown_why": r.theoretical.as_ref().err(),
    })
}

/// Every configuration, most GPU time first (`top` of them; all for `None` or 0).
pub(super) fn launch_shape_json(
    shapes: &[LaunchShape],
    kernel_ns: u64,
    top: Option<usize>,
) -> Value {
    Value::Array(
        shown_rows(shapes, top)
            .iter()
            .map(|r| row_json(r, kernel_ns))
            .collect(),
    )
}

/// The CSV rows: the JSON rows with their lists joined.
pub(super) fn launch_shape_rows(v: &Value) -> Vec<Value> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let mut r = r.clone();
            for (key, sep) in [("findings", "; "), ("limited_by", "+")] {
                if let Some(items) = r[key].as_array() {
                    let joined: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    r[key] = json!(joined.join(sep));
                }
            }
            r
        })
        .collect()
}

const HEADERS: [&str; 12] = [
    "time %", "grid", "block", "regs", "smem KiB", "blk/SM", "held by", "occ %", "ach %", "waves",
    "SMs %", "name",
];

fn cells(r: &LaunchShape, kernel_ns: u64, names: &Names) -> Vec<String> {
    let dash = || "-".to_string();
    let t = r.theoretical.as_ref().ok();
    let w = t.and_then(|t| t.waves);
    let name = if r.mangled.is_empty() {
        "(unnamed)".to_string()
    } else {
        names.of(&r.mangled, &demangle(&r.mangled))
    };
    let smem = if r.shared_memory.0 == r.shared_memory.1 {
        format!("{:.1}", f64::from(r.shared_memory.1) / 1024.0)
    } else {
        format!("<={:.1}", f64::from(r.shared_memory.1) / 1024.0)
    };
    vec![
        pct(r.total_ns, kernel_ns),
        dims(r.grid),
        dims(r.block),
        r.registers_per_thread.to_string(),
        smem,
        t.map_or_else(dash, |t| t.occupancy.blocks_per_sm.to_string()),
        t.map_or_else(dash, |t| t.occupancy.limiters.short()),
        t.map_or_else(dash, |t| format!("{:.1}", 100.0 * t.occupancy.fraction())),
        r.achieved_occupancy_pct
            .map_or_else(dash, |a| format!("{a:.1}")),
        w.map_or_else(dash, |w| format!("{:.2}", w.waves)),
        w.map_or_else(dash, |w| format!("{:.1}", 100.0 * w.sms_busy)),
        name,
    ]
}

/// The text section: the first `top` configurations, each with its first finding (or
/// why it has no numbers) on the line below.
pub(super) fn launch_shape_table(
    out: &mut String,
    shapes: &[LaunchShape],
    kernel_ns: u64,
    top: Option<usize>,
    names: &Names,
) {
    if shapes.is_empty() {
        return;
    }
    out.push_str(
        "\nLaunch shape by kernel config (theoretical, from each launch's grid and block)\n",
    );
    let shown = shown_rows(shapes, top);
    let mut rows: Vec<Vec<String>> = shown.iter().map(|r| cells(r, kernel_ns, names)).collect();
    let mut right = vec![true; HEADERS.len()];
    for left in [1, 2, 6, HEADERS.len() - 1] {
        right[left] = false;
    }
    let mut headers: Vec<String> = HEADERS.iter().map(|h| h.to_string()).collect();
    // Grids at CUDA's largest: achieved occupancy, then the block and the grid go.
    let dropped = drop_to_fit(&mut headers, &mut right, &mut rows, &[8, 2, 1]);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    fit_last_column(&headers, &mut rows);
    let mut text = String::new();
    grid(&mut text, &headers, &right, &rows);
    let mut lines = text.lines();
    if let Some(header) = lines.next() {
        let _ = writeln!(out, "{header}");
    }
    for (line, r) in lines.zip(shown) {
        let _ = writeln!(out, "{line}");
        let note = match &r.theoretical {
            Err(why) => Some(format!("no occupancy: {why}")),
            Ok(_) => r.findings.first().cloned(),
        };
        if let Some(note) = note {
            wrapped(out, 10, &format!("└ {note}"));
        }
    }
    note_left_out(out, &dropped);
    wrapped(
        out,
        2,
        "blk/SM: blocks an SM holds at once, held by registers, shared memory, warps or the \
         block limit; occ %: theoretical occupancy (resident warps over the SM's most); ach %: \
         achieved occupancy (counter mean); waves: blocks over blocks the GPU holds at once; \
         SMs %: SMs given a block in the first wave (rules: gpuprof report --help)",
    );
    if shown.len() < shapes.len() {
        let _ = writeln!(
            out,
            "  ... {} more configs (--top 0 shows all; JSON and CSV list every finding)",
            shapes.len() - shown.len()
        );
    }
}
