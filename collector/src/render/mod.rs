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
//!
//! What the report leaves out gets its sections last, only when there is something to
//! state (`integrity`): damaged regions of the session file with their offsets and
//! sizes, where the file is cut short, and impossible records by kind (table `Session
//! file damage`, `Impossible records`; CSV and JSON `session_damage`,
//! `impossible_records`).
//!
//! This module holds the base report, the helpers the sections share (`grid`,
//! `csv_cell`, `micros`, `value`, ...) and the public entry points; the counters
//! sections are rendered in `counters`, the roofline sections in `roofline`.

mod cells;
mod counters;
mod devices;
mod integrity;
mod roofline;

use std::fmt::Write;

use serde_json::{json, Value};

use crate::analysis::aggregate::Aggregate;
use crate::analysis::efficiency::{efficiency_of, Efficiency};
use crate::analysis::peaks::Overrides;
use crate::analysis::summary::summarize_aggregate;
use crate::analysis::{dims, percent, Integrity, Summary};
use cells::{csv_cell, grid, grid_or_none, mean_ns, pct, shown};
use counters::{
    counters_json, counters_table, KERNEL_COUNTER_COLUMNS, PLAN_COLUMNS, SAMPLED_COLUMNS,
    SAMPLE_COLUMNS,
};
use devices::{devices_table, telemetry_json, TELEMETRY_COLUMNS};
use integrity::{integrity_csv, integrity_json, integrity_table};
use roofline::{roofline_csv, roofline_json, roofline_table};

pub use cells::{micros, value};
pub use roofline::si;

/// The formats of `gpuprof report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for reading.
    Table,
    /// One section per table (`# name`, header row, rows).
    Csv,
    /// One object: {"processes": [...], "kernels": [...], ...}.
    Json,
}

/// What `gpuprof report` prints for a session's aggregate (as
/// [`crate::session::analyse`] gives it) and what was left out of it: the summary, the
/// counters and the roofline with `peaks`, in `format`, the kernel table limited to
/// `top` (default 20 in the table, all in CSV and JSON).
pub fn report(
    aggregate: &Aggregate,
    integrity: &Integrity,
    format: Format,
    top: Option<usize>,
    peaks: &Overrides,
) -> String {
    let mut summary = summarize_aggregate(aggregate);
    summary.integrity = integrity.clone();
    let roofline = efficiency_of(aggregate, peaks);
    match format {
        Format::Table => table_with(&summary, Some(&roofline), Some(top.unwrap_or(20))),
        Format::Csv => csv_with(&summary, Some(&roofline), top),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json_with(&summary, Some(&roofline), top))
                .expect("JSON values serialise");
            s.push('\n');
            s
        }
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
    if !s.sessions.is_empty() {
        out.push_str("Sessions\n");
        let rows: Vec<Vec<String>> = session_rows(s)
            .into_iter()
            .map(|r| {
                vec![
                    r.session.to_string(),
                    r.processes.to_string(),
                    r.kernels.to_string(),
                    micros(r.kernel_ns),
                    r.dir.to_string(),
                ]
            })
            .collect();
        grid(
            &mut out,
            &["session", "processes", "kernels", "GPU µs", "directory"],
            &[true, true, true, true, false],
            &rows,
        );
        out.push('\n');
    }
    out.push_str("Processes\n");
    if s.processes.is_empty() {
        out.push_str("  (none: the session holds no records)\n");
    }
    for p in &s.processes {
        let session = if s.sessions.is_empty() {
            String::new()
        } else {
            format!(" (session {})", p.session + 1)
        };
        if p.known {
            let _ = writeln!(out, "  pid {}{session}: {}", p.pid, p.command.join(" "));
            let _ = writeln!(
                out,
                "    host {}; CUPTI API {} (record layouts {}) from {}",
                p.host, p.cupti_api_version, p.cupti_layouts, p.cupti_path
            );
        } else {
            let _ = writeln!(out, "  pid {}{session}: (no process record)", p.pid);
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
    grid_or_none(
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

    if s.counters.any() {
        counters_table(&mut out, s, kernels);
    }
    if !s.telemetry.is_empty() {
        devices_table(&mut out, &s.telemetry, !s.sessions.is_empty());
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
    grid_or_none(
        &mut out,
        &["kind", "count", "bytes", "total µs"],
        &[false, true, true, true],
        &rows,
    );

    out.push_str("\nNVTX ranges\n");
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
    grid_or_none(
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
        out.push_str(UNFINISHED_NOTE);
    }
    integrity_table(&mut out, &s.integrity);
    out
}

/// One session of several read together: its number (from 1), directory and totals.
struct SessionRow<'a> {
    session: usize,
    dir: &'a str,
    processes: u64,
    kernels: u64,
    kernel_ns: u64,
}

fn session_rows(s: &Summary) -> Vec<SessionRow<'_>> {
    s.sessions
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let procs = s.processes.iter().filter(|p| p.session == i);
            SessionRow {
                session: i + 1,
                dir,
                processes: procs.clone().count() as u64,
                kernels: procs.clone().map(|p| p.kernels).sum(),
                kernel_ns: procs.fold(0u64, |t, p| t.saturating_add(p.kernel_ns)),
            }
        })
        .collect()
}

/// What the table says of processes whose stream did not finish.
const UNFINISHED_NOTE: &str = "  (they or the collector stopped first: what they did not deliver is in the\n   undelivered and unwritten rows above when the collector saw them stop;\n   when the collector itself stopped, records it had not sealed are lost, uncounted)\n";

/// The report as CSV: one section per table, each a `# name` line, a header row and
/// the rows, sections separated by an empty line. Same columns as [`json()`].
pub fn csv(s: &Summary, top: Option<usize>) -> String {
    csv_with(s, None, top)
}

/// [`csv`] with the roofline sections (`roofline_*`, `peaks`) at the end, when
/// [`Efficiency::any`].
pub fn csv_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> String {
    let v = json_with(s, roofline, top);
    let mut out = String::new();
    // Several sessions: a section listing them, and each process's session.
    let several = !s.sessions.is_empty();
    let process_columns: Vec<&str> = PROCESS_COLUMNS
        .iter()
        .copied()
        .chain(several.then_some("session"))
        .collect();
    let session_sections: &[(&str, &[&str])] = if several {
        &[(
            "sessions",
            &["session", "dir", "processes", "kernels", "kernel_ns"],
        )]
    } else {
        &[]
    };
    let sections: [(&str, &[&str]); 7] = [
        ("processes", &process_columns),
        ("devices", &DEVICE_COLUMNS),
        ("kernels", &KERNEL_COLUMNS),
        ("transfers", &TRANSFER_COLUMNS),
        ("nvtx_ranges", &RANGE_COLUMNS),
        ("dropped", &DROPPED_COLUMNS),
        ("unfinished", &["pid"]),
    ];
    let telemetry_sections: &[(&str, &[&str])] = if s.telemetry.is_empty() {
        &[]
    } else {
        &[("device_telemetry", &TELEMETRY_COLUMNS)]
    };
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
    for (i, (name, columns)) in session_sections
        .iter()
        .chain(&sections)
        .chain(telemetry_sections)
        .chain(counter_sections)
        .enumerate()
    {
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
    integrity_csv(&mut out, &v);
    out
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
const DEVICE_COLUMNS: [&str; 6] = [
    "pid",
    "id",
    "name",
    "compute_capability",
    "sm_count",
    "uuid",
];
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

/// The report as one JSON object of arrays (see the module documentation).
pub fn json(s: &Summary, top: Option<usize>) -> Value {
    json_with(s, None, top)
}

/// [`json()`] with a `roofline` object when [`Efficiency::any`].
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
                    "uuid": d.uuid,
                })).collect::<Vec<_>>(),
                "kernels": p.kernels,
                "kernel_ns": p.kernel_ns,
                "finished": p.finished,
            })
        })
        .collect();
    let mut processes = processes;
    if !s.sessions.is_empty() {
        for (v, p) in processes.iter_mut().zip(&s.processes) {
            v["session"] = json!(p.session + 1);
        }
    }
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
    if !s.sessions.is_empty() {
        out["sessions"] = json!(session_rows(s)
            .iter()
            .map(|r| json!({
                "session": r.session,
                "dir": r.dir,
                "processes": r.processes,
                "kernels": r.kernels,
                "kernel_ns": r.kernel_ns,
            }))
            .collect::<Vec<_>>());
    }
    if !s.telemetry.is_empty() {
        out["device_telemetry"] = telemetry_json(&s.telemetry);
    }
    if s.counters.any() {
        out["counters"] = counters_json(s, top);
    }
    if let Some(e) = roofline.filter(|e| e.any()) {
        out["roofline"] = roofline_json(e, top);
    }
    integrity_json(&mut out, &s.integrity);
    out
}
