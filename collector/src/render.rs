//! A [`Summary`] as text: an aligned table for people, CSV and JSON for programs.
//!
//! The three carry the same tables: processes (and their devices), kernels, copies and
//! sets, NVTX ranges, dropped records, unfinished processes. Tables show times in µs
//! with ns precision; CSV and JSON give integer ns (`*_ns`), the mean rounded to the
//! nearest ns, and percentages of the session's kernel time rounded to two decimals.
//! JSON field names and CSV column names are the same and stable.
//!
//! Counters get their own section (table `Counters`, CSV `counter_plans`,
//! `counter_statuses`, `kernel_counters`, `counter_samples`, JSON `counters`) only when
//! the session holds counter records, so reports of sessions without counters are the
//! same as before counters existed. The sampling windows attributed to kernels
//! (`analysis::sampled`: `.sum` metrics split by overlap time, others as the
//! overlap-time-weighted mean; time without kernels as idle) show only when the
//! session has samples (table `Counter samples by kernel`, CSV
//! `sampled_kernel_counters`, JSON `sample_*` fields of each kernel and
//! `counters.sample_idle`).
//!
//! The roofline (`analysis::efficiency`) gets its sections only when the session has
//! GEMM records or FLOP counters ([`table_with`], [`csv_with`], [`json_with`]): per
//! kernel (model and hardware FLOPs side by side, which one AI and MFU use, DRAM
//! bytes, AI, FLOP/s, MFU, MBU, bound, roofline efficiency, family, precision), per
//! GEMM shape, per kernel family, per NVTX range, for the run, the peaks used for each
//! GPU with their source, and what could not be computed for which kernel (table
//! `Roofline ...`, `Peaks`, `Roofline values missing`; CSV `roofline_kernels`,
//! `roofline_shapes`, `roofline_families`, `roofline_ranges`, `roofline_run`, `peaks`,
//! `roofline_missing`; JSON `roofline`). The table shows FLOPs, bytes and FLOP/s with
//! SI prefixes and percentages with one decimal; CSV and JSON give plain numbers and
//! percentages rounded to two decimals (`*_pct`), empty / `null` where unknown.

use std::fmt::Write;

use serde_json::{json, Value};

use crate::analysis::efficiency::{Efficiency, KernelRow, Rollup, ShapeRow};
use crate::analysis::roofline::Point;
use crate::analysis::{percent, Counters, KernelStats, Summary};

/// µs with three decimals, from ns.
pub fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn mean_ns(total: u64, count: u64) -> u64 {
    if count == 0 {
        0
    } else {
        ((total as u128 + count as u128 / 2) / count as u128) as u64
    }
}

fn dims(d: [i32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.2}", percent(part, whole))
}

fn shown(kernels: &[KernelStats], top: Option<usize>) -> &[KernelStats] {
    match top {
        Some(n) if n > 0 && n < kernels.len() => &kernels[..n],
        _ => kernels,
    }
}

/// Columns padded to their widest cell, two spaces apart, indented by two; numeric
/// columns (`right[i]`) right-aligned; the last column is never padded.
fn grid(out: &mut String, headers: &[&str], right: &[bool], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |out: &mut String, cells: &[String]| {
        let mut s = String::from("  ");
        for (i, cell) in cells.iter().enumerate() {
            let last = i + 1 == cells.len();
            let pad = widths[i].saturating_sub(cell.chars().count());
            if right[i] {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if !last {
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            }
            if !last {
                s.push_str("  ");
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(
        out,
        &headers.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
    );
    for row in rows {
        line(out, row);
    }
}

/// The report as aligned text. `top` limits the kernel table (`None` or 0: all).
pub fn table(s: &Summary, top: Option<usize>) -> String {
    table_with(s, None, top)
}

/// [`table`] with the roofline sections of `roofline` (shown when
/// [`Efficiency::any`]) after the counters.
pub fn table_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> String {
    let mut out = String::new();
    out.push_str("Processes\n");
    if s.processes.is_empty() {
        out.push_str("  (none: the session holds no records)\n");
    }
    for p in &s.processes {
        if p.known {
            let _ = writeln!(out, "  pid {}: {}", p.pid, p.command.join(" "));
            let _ = writeln!(
                out,
                "    host {}; CUPTI API {} (record layouts {}) from {}",
                p.host, p.cupti_api_version, p.cupti_layouts, p.cupti_path
            );
        } else {
            let _ = writeln!(out, "  pid {}: (no process record)", p.pid);
        }
        for d in &p.devices {
            let _ = writeln!(
                out,
                "    device {}: {} (compute capability {}.{}, {} SMs)",
                d.id, d.name, d.compute_capability.0, d.compute_capability.1, d.sm_count
            );
        }
        let _ = writeln!(
            out,
            "    {} kernels, {} µs GPU time; {}",
            p.kernels,
            micros(p.kernel_ns),
            if p.finished {
                "stream complete"
            } else {
                "stream did not finish"
            }
        );
    }

    let _ = writeln!(
        out,
        "\nKernels by GPU time ({} kernels, {} µs)",
        s.kernel_count,
        micros(s.kernel_ns)
    );
    let kernels = shown(&s.kernels, top);
    if kernels.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = kernels
            .iter()
            .map(|k| {
                vec![
                    pct(k.total_ns, s.kernel_ns),
                    micros(k.total_ns),
                    k.calls.to_string(),
                    micros(mean_ns(k.total_ns, k.calls)),
                    micros(k.min_ns),
                    micros(k.max_ns),
                    dims(k.grid),
                    dims(k.block),
                    k.name.clone(),
                ]
            })
            .collect();
        grid(
            &mut out,
            &[
                "time %",
                "total µs",
                "calls",
                "mean µs",
                "min µs",
                "max µs",
                "grid",
                "block",
                "name",
            ],
            &[true, true, true, true, true, true, false, false, false],
            &rows,
        );
        if kernels.len() < s.kernels.len() {
            let _ = writeln!(
                out,
                "  ... {} more kernels (--top 0 shows all)",
                s.kernels.len() - kernels.len()
            );
        }
    }

    if s.counters.any() {
        counters_table(&mut out, s, kernels);
    }
    match roofline {
        Some(e) if e.any() => roofline_table(&mut out, e, s.kernel_ns, top),
        Some(_) if s.kernel_count > 0 => out.push_str(
            "\nRoofline\n  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; \
             see GPUPROF_GEMM and GPUPROF_COUNTERS)\n",
        ),
        _ => {}
    }

    out.push_str("\nMemory copies and sets\n");
    if s.transfers.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .transfers
            .iter()
            .map(|t| {
                vec![
                    t.kind.clone(),
                    t.count.to_string(),
                    t.bytes.to_string(),
                    micros(t.total_ns),
                ]
            })
            .collect();
        grid(
            &mut out,
            &["kind", "count", "bytes", "total µs"],
            &[false, true, true, true],
            &rows,
        );
    }

    out.push_str("\nNVTX ranges\n");
    if s.ranges.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = s
            .ranges
            .iter()
            .map(|r| {
                vec![
                    r.count.to_string(),
                    r.open.to_string(),
                    micros(r.wall_ns),
                    r.kernels.to_string(),
                    micros(r.gpu_ns),
                    pct(r.gpu_ns, s.kernel_ns),
                    if r.domain.is_empty() {
                        r.name.clone()
                    } else {
                        format!("{}: {}", r.domain, r.name)
                    },
                ]
            })
            .collect();
        grid(
            &mut out,
            &[
                "count",
                "open",
                "wall µs",
                "kernels",
                "GPU µs",
                "GPU time %",
                "range",
            ],
            &[true, true, true, true, true, true, false],
            &rows,
        );
    }
    if s.unmatched_range_ends > 0 {
        let _ = writeln!(
            out,
            "  {} range ends without a start",
            s.unmatched_range_ends
        );
    }

    out.push_str("\nDropped records\n");
    let rows: Vec<Vec<String>> = s
        .dropped
        .iter()
        .map(|d| vec![d.source.clone(), d.records.to_string()])
        .collect();
    grid(&mut out, &["source", "records"], &[false, true], &rows);

    if !s.unfinished.is_empty() {
        let pids: Vec<String> = s.unfinished.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            out,
            "\nProcesses whose stream did not finish: {}",
            pids.join(", ")
        );
    }
    out
}

/// A counter value: at most three decimals, trailing zeros dropped.
pub fn value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Metric rows: name padded, value right-aligned, then a note; indented by four.
fn metric_rows(out: &mut String, rows: &[(String, String, String)]) {
    let name_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let value_w = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (name, v, note) in rows {
        let _ = writeln!(out, "    {name:<name_w$}  {v:>value_w$} {note}");
    }
}

/// The table's counter section: per process the plan or status, per shown kernel the
/// metric means, and the sampling windows.
fn counters_table(out: &mut String, s: &Summary, kernels: &[KernelStats]) {
    let c: &Counters = &s.counters;
    out.push_str("\nCounters\n");
    for p in &s.processes {
        for plan in c.plans.iter().filter(|x| x.pid == p.pid) {
            let _ = writeln!(
                out,
                "  pid {}, device {}: chip {}, {} mode; {}",
                plan.pid, plan.device_id, plan.chip, plan.mode, plan.policy
            );
            for (i, g) in plan.groups.iter().enumerate() {
                let _ = writeln!(out, "    group {i}: {}", g.join(", "));
            }
        }
        for st in c.statuses.iter().filter(|x| x.pid == p.pid) {
            let _ = writeln!(out, "  pid {}: {}", st.pid, st.message);
        }
    }

    out.push_str("\nCounters by kernel (mean per launch)\n");
    if kernels.is_empty() {
        out.push_str("  (no kernels)\n");
    }
    for k in kernels {
        match c.kernel(&k.mangled) {
            Some(kc) if kc.launches_with_counters > 0 => {
                let _ = writeln!(
                    out,
                    "  {}: {} of {} with counters",
                    k.name,
                    kc.launches_with_counters,
                    plural(kc.launches, "launch", "launches")
                );
                let rows: Vec<(String, String, String)> = kc
                    .metrics
                    .iter()
                    .map(|m| {
                        (
                            m.metric.clone(),
                            value(m.mean),
                            format!("({})", plural(m.launches, "launch", "launches")),
                        )
                    })
                    .collect();
                metric_rows(out, &rows);
            }
            _ => {
                let _ = writeln!(
                    out,
                    "  {}: no counters ({})",
                    k.name,
                    plural(k.calls, "launch", "launches")
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "  {} of {} kernels without counters",
        c.kernels_without_counters(),
        c.kernels.len()
    );
    if c.unattributed > 0 {
        let _ = writeln!(
            out,
            "  {} not joined to a single kernel launch",
            plural(c.unattributed, "counter record", "counter records")
        );
    }

    if !c.samples.is_empty() {
        out.push_str("\nCounter samples (GPU-wide sampling windows, sum)\n");
        let mut i = 0;
        while i < c.samples.len() {
            let (pid, dev) = (c.samples[i].pid, c.samples[i].device_id);
            let _ = writeln!(out, "  pid {pid}, device {dev}");
            let rows: Vec<(String, String, String)> = c.samples[i..]
                .iter()
                .take_while(|x| x.pid == pid && x.device_id == dev)
                .map(|x| {
                    (
                        x.metric.clone(),
                        value(x.sum),
                        format!("({})", plural(x.samples, "sample", "samples")),
                    )
                })
                .collect();
            i += rows.len();
            metric_rows(out, &rows);
        }
        sampled_table(out, c, kernels);
    }
}

fn sampled_rows(metrics: &[crate::analysis::SampledMetric]) -> Vec<(String, String, String)> {
    metrics
        .iter()
        .map(|m| (m.metric.clone(), value(m.value), format!("({})", m.kind)))
        .collect()
}

/// The samples attributed to the shown kernels, then the idle time.
fn sampled_table(out: &mut String, c: &Counters, kernels: &[KernelStats]) {
    out.push_str(
        "\nCounter samples by kernel (by overlap time: .sum split, others time-weighted mean)\n",
    );
    for k in kernels {
        if let Some(sk) = c.sampled_kernel(&k.mangled) {
            let _ = writeln!(
                out,
                "  {}: from {}, {} µs inside windows",
                k.name,
                plural(sk.samples, "sample", "samples"),
                micros(sk.overlap_ns)
            );
            metric_rows(out, &sampled_rows(&sk.metrics));
        }
    }
    let idle = &c.sample_idle;
    let _ = writeln!(
        out,
        "  idle: {} without kernels; {} of {} µs sampled without kernels",
        plural(idle.windows, "window", "windows"),
        micros(idle.idle_ns),
        micros(idle.sampled_ns)
    );
    metric_rows(out, &sampled_rows(&idle.metrics));
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The report as CSV: one section per table, each a `# name` line, a header row and
/// the rows, sections separated by an empty line. Same columns as [`json`].
pub fn csv(s: &Summary, top: Option<usize>) -> String {
    csv_with(s, None, top)
}

/// [`csv`] with the roofline sections (`roofline_*`, `peaks`) at the end, when
/// [`Efficiency::any`].
pub fn csv_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> String {
    let v = json_with(s, roofline, top);
    let mut out = String::new();
    let sections: [(&str, &[&str]); 7] = [
        ("processes", &PROCESS_COLUMNS),
        ("devices", &DEVICE_COLUMNS),
        ("kernels", &KERNEL_COLUMNS),
        ("transfers", &TRANSFER_COLUMNS),
        ("nvtx_ranges", &RANGE_COLUMNS),
        ("dropped", &DROPPED_COLUMNS),
        ("unfinished", &["pid"]),
    ];
    let counter_sections: [(&str, &[&str]); 5] = [
        ("counter_plans", &PLAN_COLUMNS),
        ("counter_statuses", &["pid", "message"]),
        ("kernel_counters", &KERNEL_COUNTER_COLUMNS),
        ("counter_samples", &SAMPLE_COLUMNS),
        ("sampled_kernel_counters", &SAMPLED_COLUMNS),
    ];
    let counter_sections: &[(&str, &[&str])] = if v.get("counters").is_none() {
        &[]
    } else if s.counters.samples.is_empty() {
        &counter_sections[..4]
    } else {
        &counter_sections
    };
    for (i, (name, columns)) in sections.iter().chain(counter_sections).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "# {name}");
        out.push_str(&columns.join(","));
        out.push('\n');
        let rows: Vec<Value> = match *name {
            "devices" => v["processes"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| {
                    p["devices"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |mut d| {
                            d["pid"] = p["pid"].clone();
                            d
                        })
                })
                .collect(),
            "counter_plans" => v["counters"]["plans"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| {
                    let groups = p["groups"].as_array().cloned().unwrap_or_default();
                    groups
                        .into_iter()
                        .enumerate()
                        .flat_map(move |(g, metrics)| {
                            let p = p.clone();
                            metrics
                                .as_array()
                                .cloned()
                                .unwrap_or_default()
                                .into_iter()
                                .map(move |m| {
                                    let mut row = p.clone();
                                    row["group"] = json!(g);
                                    row["metric"] = m;
                                    row
                                })
                        })
                })
                .collect(),
            "counter_statuses" => v["counters"]["statuses"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            "kernel_counters" => v["counters"]["kernels"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|k| {
                    let metrics = k["metrics"].as_array().cloned().unwrap_or_default();
                    if metrics.is_empty() {
                        // A kernel without counters: one row, metric fields empty.
                        let mut row = k.clone();
                        row["launches"] = Value::Null;
                        return vec![row];
                    }
                    metrics
                        .into_iter()
                        .map(|m| {
                            let mut row = k.clone();
                            for f in ["metric", "launches", "mean", "sum"] {
                                row[f] = m[f].clone();
                            }
                            row
                        })
                        .collect()
                })
                .collect(),
            "counter_samples" => v["counters"]["samples"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            "sampled_kernel_counters" => {
                let kernels = v["counters"]["kernels"].as_array().cloned();
                let idle = &v["counters"]["sample_idle"];
                let idle_row = json!({
                    "name": "(idle)",
                    "mangled": "",
                    "sample_count": idle["windows"],
                    "sample_time_ns": idle["idle_ns"],
                    "sample_metrics": idle["metrics"],
                });
                kernels
                    .into_iter()
                    .flatten()
                    .chain([idle_row])
                    .flat_map(|k| {
                        let metrics = k["sample_metrics"].as_array().cloned().unwrap_or_default();
                        let mut row = json!({
                            "name": k["name"],
                            "mangled": k["mangled"],
                            "samples": k["sample_count"],
                            "time_ns": k["sample_time_ns"],
                        });
                        if metrics.is_empty() {
                            return vec![row];
                        }
                        metrics
                            .into_iter()
                            .map(|m| {
                                for f in ["metric", "kind", "value"] {
                                    row[f] = m[f].clone();
                                }
                                row.clone()
                            })
                            .collect()
                    })
                    .collect()
            }
            "unfinished" => v["unfinished"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|pid| json!({"pid": pid}))
                .collect(),
            _ => v[*name].as_array().cloned().unwrap_or_default(),
        };
        for row in rows {
            let cells: Vec<String> = columns.iter().map(|c| csv_cell(&row[*c])).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    if let Some(r) = v.get("roofline") {
        roofline_csv(&mut out, r);
    }
    out
}

fn csv_cell(v: &Value) -> String {
    match v {
        Value::String(s) => csv_field(s),
        Value::Array(items) => {
            // Command lines join with spaces; dimensions and versions with 'x' / '.'.
            let parts: Vec<String> = items
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let sep = if items.iter().all(Value::is_string) {
                " "
            } else if items.len() == 2 {
                "."
            } else {
                "x"
            };
            csv_field(&parts.join(sep))
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

const PROCESS_COLUMNS: [&str; 10] = [
    "pid",
    "known",
    "command",
    "host",
    "cupti_api_version",
    "cupti_layouts",
    "cupti_path",
    "kernels",
    "kernel_ns",
    "finished",
];
const DEVICE_COLUMNS: [&str; 5] = ["pid", "id", "name", "compute_capability", "sm_count"];
const KERNEL_COLUMNS: [&str; 10] = [
    "name",
    "mangled",
    "calls",
    "total_ns",
    "mean_ns",
    "min_ns",
    "max_ns",
    "gpu_time_pct",
    "grid",
    "block",
];
const TRANSFER_COLUMNS: [&str; 4] = ["kind", "count", "bytes", "total_ns"];
const RANGE_COLUMNS: [&str; 8] = [
    "domain",
    "name",
    "count",
    "open",
    "wall_ns",
    "kernels",
    "gpu_ns",
    "gpu_time_pct",
];
const DROPPED_COLUMNS: [&str; 2] = ["source", "records"];
const PLAN_COLUMNS: [&str; 7] = [
    "pid",
    "device_id",
    "chip",
    "mode",
    "policy",
    "group",
    "metric",
];
const KERNEL_COUNTER_COLUMNS: [&str; 7] = [
    "name",
    "mangled",
    "launches_with_counters",
    "metric",
    "launches",
    "mean",
    "sum",
];
const SAMPLE_COLUMNS: [&str; 5] = ["pid", "device_id", "metric", "samples", "sum"];
const SAMPLED_COLUMNS: [&str; 7] = [
    "name", "mangled", "samples", "time_ns", "metric", "kind", "value",
];

/// The report as one JSON object of arrays (see the module documentation).
pub fn json(s: &Summary, top: Option<usize>) -> Value {
    json_with(s, None, top)
}

/// [`json`] with a `roofline` object when [`Efficiency::any`].
pub fn json_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> Value {
    let processes: Vec<Value> = s
        .processes
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "known": p.known,
                "command": p.command,
                "host": p.host,
                "cupti_api_version": p.cupti_api_version,
                "cupti_layouts": p.cupti_layouts,
                "cupti_path": p.cupti_path,
                "devices": p.devices.iter().map(|d| json!({
                    "id": d.id,
                    "name": d.name,
                    "compute_capability": [d.compute_capability.0, d.compute_capability.1],
                    "sm_count": d.sm_count,
                })).collect::<Vec<_>>(),
                "kernels": p.kernels,
                "kernel_ns": p.kernel_ns,
                "finished": p.finished,
            })
        })
        .collect();
    let kernels: Vec<Value> = shown(&s.kernels, top)
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "mangled": k.mangled,
                "calls": k.calls,
                "total_ns": k.total_ns,
                "mean_ns": mean_ns(k.total_ns, k.calls),
                "min_ns": k.min_ns,
                "max_ns": k.max_ns,
                "gpu_time_pct": percent(k.total_ns, s.kernel_ns),
                "grid": k.grid,
                "block": k.block,
            })
        })
        .collect();
    let transfers: Vec<Value> = s
        .transfers
        .iter()
        .map(
            |t| json!({"kind": t.kind, "count": t.count, "bytes": t.bytes, "total_ns": t.total_ns}),
        )
        .collect();
    let ranges: Vec<Value> = s
        .ranges
        .iter()
        .map(|r| {
            json!({
                "domain": r.domain,
                "name": r.name,
                "count": r.count,
                "open": r.open,
                "wall_ns": r.wall_ns,
                "kernels": r.kernels,
                "gpu_ns": r.gpu_ns,
                "gpu_time_pct": percent(r.gpu_ns, s.kernel_ns),
            })
        })
        .collect();
    let dropped: Vec<Value> = s
        .dropped
        .iter()
        .map(|d| json!({"source": d.source, "records": d.records}))
        .collect();
    let mut out = json!({
        "processes": processes,
        "kernel_count": s.kernel_count,
        "kernel_ns": s.kernel_ns,
        "kernels": kernels,
        "transfers": transfers,
        "nvtx_ranges": ranges,
        "unmatched_range_ends": s.unmatched_range_ends,
        "dropped": dropped,
        "unfinished": s.unfinished,
    });
    if s.counters.any() {
        out["counters"] = counters_json(s, top);
    }
    if let Some(e) = roofline.filter(|e| e.any()) {
        out["roofline"] = roofline_json(e, top);
    }
    out
}

/// The `counters` object: plans, statuses, the shown kernels' merged metrics (kernels
/// without counters have `launches_with_counters` 0 and no metrics), samples.
fn counters_json(s: &Summary, top: Option<usize>) -> Value {
    let c = &s.counters;
    let plans: Vec<Value> = c
        .plans
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "device_id": p.device_id,
                "chip": p.chip,
                "mode": p.mode,
                "policy": p.policy,
                "groups": p.groups,
            })
        })
        .collect();
    let statuses: Vec<Value> = c
        .statuses
        .iter()
        .map(|st| json!({"pid": st.pid, "message": st.message}))
        .collect();
    let kernels: Vec<Value> = shown(&s.kernels, top)
        .iter()
        .map(|k| {
            let kc = c.kernel(&k.mangled);
            let metrics: Vec<Value> = kc
                .map(|kc| {
                    kc.metrics
                        .iter()
                        .map(|m| {
                            json!({
                                "metric": m.metric,
                                "launches": m.launches,
                                "mean": m.mean,
                                "sum": m.sum,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut row = json!({
                "mangled": k.mangled,
                "name": k.name,
                "launches": k.calls,
                "launches_with_counters": kc.map_or(0, |kc| kc.launches_with_counters),
                "metrics": metrics,
            });
            if !c.samples.is_empty() {
                let sk = c.sampled_kernel(&k.mangled);
                row["sample_count"] = json!(sk.map_or(0, |sk| sk.samples));
                row["sample_time_ns"] = json!(sk.map_or(0, |sk| sk.overlap_ns));
                row["sample_metrics"] = json!(sk.map_or(&[][..], |sk| &sk.metrics[..]));
            }
            row
        })
        .collect();
    let samples: Vec<Value> = c
        .samples
        .iter()
        .map(|x| {
            json!({
                "pid": x.pid,
                "device_id": x.device_id,
                "metric": x.metric,
                "samples": x.samples,
                "sum": x.sum,
            })
        })
        .collect();
    let mut out = json!({
        "plans": plans,
        "statuses": statuses,
        "kernels": kernels,
        "kernels_without_counters": c.kernels_without_counters(),
        "unattributed": c.unattributed,
        "samples": samples,
    });
    if !c.samples.is_empty() {
        out["sample_idle"] = json!(c.sample_idle);
    }
    out
}

/// A large number with an SI prefix and two decimals ("137.44G"); below 1000 at most
/// three decimals.
pub fn si(v: f64) -> String {
    const PREFIXES: [&str; 6] = ["k", "M", "G", "T", "P", "E"];
    if !v.is_finite() || v.abs() < 1000.0 {
        return value(v);
    }
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1000.0 && i < PREFIXES.len() {
        x /= 1000.0;
        i += 1;
    }
    format!("{x:.2}{}", PREFIXES[i - 1])
}

/// Arithmetic intensity, FLOP/byte: two decimals, four below 1.
fn intensity(v: f64) -> String {
    if v.abs() < 1.0 {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".to_string())
}

/// A fraction as a percentage with one decimal.
fn pct_of(f: Option<f64>) -> String {
    or_dash(f.map(|f| format!("{:.1}", f * 100.0)))
}

/// A fraction as a percentage rounded to two decimals, for CSV and JSON.
fn pct_value(f: Option<f64>) -> Value {
    json!(f.map(|f| (f * 10_000.0).round() / 100.0))
}

fn shown_rows<T>(rows: &[T], top: Option<usize>) -> &[T] {
    match top {
        Some(n) if n > 0 && n < rows.len() => &rows[..n],
        _ => rows,
    }
}

/// The point's columns for tables: AI, FLOP/s, MFU %, MBU %, bound, roofline %.
fn point_cells(p: &Point) -> Vec<String> {
    vec![
        or_dash(p.intensity.map(intensity)),
        or_dash(p.achieved.map(si)),
        pct_of(p.mfu),
        pct_of(p.mbu),
        or_dash(p.bound.map(|b| b.name().to_string())),
        pct_of(p.efficiency),
    ]
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

fn rollup_cells(r: &Rollup, kernel_ns: u64) -> Vec<String> {
    vec![
        r.launches.to_string(),
        micros(r.gpu_ns),
        pct(r.gpu_ns, kernel_ns),
        si(r.model_flops),
        si(r.hw_flops),
        si(r.bytes),
        or_dash(r.intensity.map(intensity)),
        or_dash(r.achieved.map(si)),
        pct_of(r.mfu),
        pct_of(r.mbu),
        r.name.clone(),
    ]
}

const ROLLUP_HEADERS: [&str; 10] = [
    "launches",
    "GPU µs",
    "time %",
    "model FLOPs",
    "hw FLOPs",
    "DRAM bytes",
    "AI",
    "FLOP/s",
    "MFU %",
    "MBU %",
];

fn rollup_grid(out: &mut String, title: &str, rows: &[Rollup], kernel_ns: u64) {
    let mut headers: Vec<&str> = ROLLUP_HEADERS.to_vec();
    headers.push(title);
    let right: Vec<bool> = (0..11).map(|i| i < 10).collect();
    let cells: Vec<Vec<String>> = rows.iter().map(|r| rollup_cells(r, kernel_ns)).collect();
    grid(out, &headers, &right, &cells);
}

/// The table's roofline sections: per kernel, per GEMM shape, per family, per NVTX
/// range, the run, the peaks used and what is missing.
fn roofline_table(out: &mut String, e: &Efficiency, kernel_ns: u64, top: Option<usize>) {
    let many_gpus = e.gpus.len() > 1;
    let label = |name: &str, gpu: &str| {
        if many_gpus {
            format!("{name} [{gpu}]")
        } else {
            name.to_string()
        }
    };
    out.push_str(
        "\nRoofline by kernel (FLOPs: model = GEMM shapes, hw = counters; AI in FLOP/byte)\n",
    );
    let kernels = shown_rows(&e.kernels, top);
    let rows: Vec<Vec<String>> = kernels
        .iter()
        .map(|k: &KernelRow| {
            let mut row = vec![
                micros(k.gpu_ns),
                k.calls.to_string(),
                or_dash(k.model_flops.map(si)),
                or_dash(k.hw_flops.map(si)),
                or_dash(k.flops_source.map(|f| f.name().to_string())),
                or_dash(k.bytes.map(si)),
            ];
            row.extend(point_cells(&k.point));
            row.push(k.family.name().to_string());
            row.push(or_dash(k.math.map(|m| m.to_string())));
            row.push(label(&k.name, &k.gpu));
            row
        })
        .collect();
    grid(
        out,
        &[
            "GPU µs",
            "calls",
            "model FLOPs",
            "hw FLOPs",
            "used",
            "DRAM bytes",
            "AI",
            "FLOP/s",
            "MFU %",
            "MBU %",
            "bound",
            "roofline %",
            "family",
            "math",
            "name",
        ],
        &[
            true, true, true, true, false, true, true, true, true, true, false, true, false, false,
            false,
        ],
        &rows,
    );
    if kernels.len() < e.kernels.len() {
        let _ = writeln!(
            out,
            "  ... {} more kernels (--top 0 shows all)",
            e.kernels.len() - kernels.len()
        );
    }

    if !e.shapes.is_empty() {
        out.push_str("\nRoofline by GEMM shape (M x N x K x batch, A·B->D types, compute type)\n");
        let rows: Vec<Vec<String>> = e
            .shapes
            .iter()
            .map(|s: &ShapeRow| {
                let mut row = vec![
                    s.calls.to_string(),
                    s.launches.to_string(),
                    micros(s.gpu_ns),
                    si(s.model_flops),
                    or_dash(s.bytes.map(si)),
                ];
                row.extend(point_cells(&s.point));
                row.push(or_dash(s.math.map(|m| m.to_string())));
                row.push(label(&s.label, &s.gpu));
                row
            })
            .collect();
        grid(
            out,
            &[
                "calls",
                "launches",
                "GPU µs",
                "model FLOPs",
                "DRAM bytes",
                "AI",
                "FLOP/s",
                "MFU %",
                "MBU %",
                "bound",
                "roofline %",
                "math",
                "shape",
            ],
            &[
                true, true, true, true, true, true, true, true, true, false, true, false, false,
            ],
            &rows,
        );
    }

    out.push_str(
        "\nRoofline by kernel family (MFU, MBU: time-weighted, (Σ FLOPs / peak) / Σ time)\n",
    );
    rollup_grid(out, "family", &e.families, kernel_ns);
    if !e.ranges.is_empty() {
        out.push_str("\nRoofline by NVTX range\n");
        rollup_grid(out, "range", &e.ranges, kernel_ns);
    }
    out.push_str("\nRoofline of the run\n");
    rollup_grid(out, "", std::slice::from_ref(&e.run), kernel_ns);

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
                let _ = writeln!(out, "    TFLOP/s: {}", ceilings.join(", "));
                let _ = writeln!(
                    out,
                    "    DRAM: {}",
                    match p.bandwidth() {
                        Some(bw) => format!("{} TB/s", value(bw / 1e12)),
                        None => "unknown".to_string(),
                    }
                );
                let _ = writeln!(out, "    source: {}", p.source);
            }
            (None, Some(err)) => {
                let _ = writeln!(out, "    {err}");
            }
            (None, None) => {}
        }
    }

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

    if !e.missing.is_empty() {
        out.push_str("\nRoofline values missing\n");
        for m in &e.missing {
            let _ = writeln!(out, "  {}: {}", label(&m.kernel, &m.gpu), m.what);
        }
    }
}

fn rollup_json(r: &Rollup) -> Value {
    json!({
        "name": r.name,
        "launches": r.launches,
        "gpu_ns": r.gpu_ns,
        "model_flops": r.model_flops,
        "hw_flops": r.hw_flops,
        "flops_ns": r.flops_ns,
        "bytes": r.bytes,
        "bytes_ns": r.bytes_ns,
        "intensity": r.intensity,
        "achieved_flops_per_s": r.achieved,
        "mfu_pct": pct_value(r.mfu),
        "mbu_pct": pct_value(r.mbu),
    })
}

/// The `roofline` object: `kernels` (the shown ones), `shapes`, `families`, `ranges`,
/// `run`, `peaks`, `missing`, `gemm_statuses`, `gemm_unjoined`. FLOPs, bytes and
/// FLOP/s are plain numbers; `*_pct` are percentages rounded to two decimals; `null`
/// where a value could not be computed (see `missing`).
fn roofline_json(e: &Efficiency, top: Option<usize>) -> Value {
    let kernels: Vec<Value> = shown_rows(&e.kernels, top)
        .iter()
        .map(|k| {
            let mut row = json!({
                "name": k.name,
                "mangled": k.mangled,
                "gpu": k.gpu,
                "family": k.family.name(),
                "precision": k.math.map(|m| m.precision.name()),
                "pipe": k.math.map(|m| m.pipe.name()),
                "calls": k.calls,
                "gpu_ns": k.gpu_ns,
                "gemm_launches": k.gemm_launches,
                "gemm_part_launches": k.gemm_part_launches,
                "model_flops": k.model_flops,
                "hw_flops": k.hw_flops,
                "hw_flops_launches": k.hw_flops_launches,
                "flops_source": k.flops_source.map(|f| f.name()),
                "bytes": k.bytes,
                "bytes_launches": k.bytes_launches,
                "peak_flops_per_s": k.peak_flops,
                "dram_bytes_per_s": k.bandwidth,
            });
            point_json(&k.point, &mut row);
            row
        })
        .collect();
    let shapes: Vec<Value> = e
        .shapes
        .iter()
        .map(|s| {
            use crate::analysis::precision::{compute_type_name, data_type_name};
            let mut row = json!({
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
                "precision": s.math.map(|m| m.precision.name()),
                "pipe": s.math.map(|m| m.pipe.name()),
                "calls": s.calls,
                "launches": s.launches,
                "gpu_ns": s.gpu_ns,
                "model_flops": s.model_flops,
                "bytes": s.bytes,
                "bytes_launches": s.bytes_launches,
                "peak_flops_per_s": s.peak_flops,
                "dram_bytes_per_s": s.bandwidth,
                "kernels": s.kernels,
            });
            point_json(&s.point, &mut row);
            row
        })
        .collect();
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
    json!({
        "kernels": kernels,
        "shapes": shapes,
        "families": e.families.iter().map(rollup_json).collect::<Vec<_>>(),
        "ranges": e.ranges.iter().map(rollup_json).collect::<Vec<_>>(),
        "run": rollup_json(&e.run),
        "peaks": peaks,
        "missing": e.missing,
        "gemm_statuses": e.gemm_statuses.iter().map(|(pid, m)| json!({"pid": pid, "message": m})).collect::<Vec<_>>(),
        "gemm_unjoined": e.gemm_unjoined,
    })
}

const ROOFLINE_KERNEL_COLUMNS: [&str; 26] = [
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
    "bytes",
    "bytes_launches",
    "intensity",
    "achieved_flops_per_s",
    "mfu_pct",
    "mbu_pct",
    "ridge",
    "bound",
    "attainable_flops_per_s",
    "roofline_efficiency_pct",
    "peak_flops_per_s",
    "dram_bytes_per_s",
];
const ROOFLINE_SHAPE_COLUMNS: [&str; 28] = [
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
    "precision",
    "pipe",
    "calls",
    "launches",
    "gpu_ns",
    "model_flops",
    "bytes",
    "bytes_launches",
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
const ROLLUP_COLUMNS: [&str; 12] = [
    "name",
    "launches",
    "gpu_ns",
    "model_flops",
    "hw_flops",
    "flops_ns",
    "bytes",
    "bytes_ns",
    "intensity",
    "achieved_flops_per_s",
    "mfu_pct",
    "mbu_pct",
];
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
fn roofline_csv(out: &mut String, r: &Value) {
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
    let sections: [(&str, &[&str], Vec<Value>); 7] = [
        (
            "roofline_kernels",
            &ROOFLINE_KERNEL_COLUMNS,
            rows("kernels"),
        ),
        ("roofline_shapes", &ROOFLINE_SHAPE_COLUMNS, rows("shapes")),
        ("roofline_families", &ROLLUP_COLUMNS, rows("families")),
        ("roofline_ranges", &ROLLUP_COLUMNS, rows("ranges")),
        ("roofline_run", &ROLLUP_COLUMNS, vec![r["run"].clone()]),
        ("peaks", &PEAK_COLUMNS, peaks),
        (
            "roofline_missing",
            &["kernel", "gpu", "what"],
            rows("missing"),
        ),
    ];
    for (name, columns, rows) in sections {
        let _ = writeln!(out, "\n# {name}");
        out.push_str(&columns.join(","));
        out.push('\n');
        for row in rows {
            let cells: Vec<String> = columns.iter().map(|c| csv_cell(&row[*c])).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
}
