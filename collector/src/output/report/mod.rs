//! A [`Summary`] as text: an aligned table for people, CSV and JSON for programs.
//!
//! The three carry the same tables: processes (and their devices), kernels, copies and
//! sets, NVTX ranges, dropped records, unfinished processes. Tables show times in µs
//! with ns precision; CSV and JSON give integer ns (`*_ns`), the mean rounded to the
//! nearest ns, and percentages of the session's kernel time rounded to two decimals.
//! JSON field names and CSV column names are the same and stable.
//!
//! Counters get their own section (table `Counters`, CSV `counter_plans`,
//! `counter_statuses`, `kernel_counters`, `counter_pct`, `counter_samples`, JSON
//! `counters`) only when
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
mod gpu_activity;
mod integrity;
mod roofline;

use std::fmt::Write;

use serde_json::{json, Value};

use crate::analysis::findings::Findings;
use crate::analysis::roofline::efficiency::Efficiency;
use crate::analysis::{dims, percent, KernelStats, Summary};
use cells::{
    cut_to_width, fit_last_column, grid, grid_or_none, mean_ns, pct, shown, wrapped, Names,
};
use counters::{
    counters_json, counters_table, fitted_csv, pct_rows, KERNEL_COUNTER_COLUMNS, PCT_COLUMNS,
    PLAN_COLUMNS, SAMPLED_COLUMNS, SAMPLE_COLUMNS,
};
use devices::{devices_table, telemetry_json, TELEMETRY_COLUMNS};
use gpu_activity::{
    gpu_activity_json, gpu_activity_rows, gpu_activity_table, GPU_ACTIVITY_COLUMNS,
};
use integrity::{integrity_csv, integrity_json, integrity_table};
use roofline::{roofline_csv, roofline_json, roofline_table};

pub use cells::{micros, value, CsvTables};
pub use counters::{CounterView, PCT_HELP};
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

/// What `gpuprof report` prints for a session's findings ([`crate::analysis::findings`]):
/// the summary, the counters and the roofline in `format`, the kernel table limited
/// to `top` (default 20 in the table, all in CSV and JSON).
pub fn report(findings: &Findings, format: Format, top: Option<usize>) -> String {
    report_with(findings, format, top, &View::default())
}

/// How the text report shows what it shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// Kernels by their demangled names, whole (default: short names, cut to fit
    /// [`cells::WIDTH`] columns).
    pub full_names: bool,
    /// How the kernels' counters are shown.
    pub counters: CounterView,
}

/// [`report`] shown as `view` says.
pub fn report_with(f: &Findings, format: Format, top: Option<usize>, view: &View) -> String {
    let (summary, roofline) = (&f.summary, &f.roofline);
    match format {
        Format::Table => table_view(summary, Some(roofline), Some(top.unwrap_or(20)), view),
        Format::Csv => csv_with(summary, Some(roofline), top),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json_with(summary, Some(roofline), top))
                .expect("JSON values serialise");
            s.push('\n');
            s
        }
    }
}

/// The CSV report's tables, one by one (`report --format csv -o DIR`): the same
/// tables [`report`] writes to one stream.
pub fn report_csv_tables(f: &Findings, top: Option<usize>) -> CsvTables {
    csv_tables(&f.summary, Some(&f.roofline), top)
}

/// The report as aligned text. `top` limits the kernel table (`None` or 0: all).
pub fn table(s: &Summary, top: Option<usize>) -> String {
    table_with(s, None, top)
}

/// [`table`] with the roofline sections of `roofline` (shown when
/// [`Efficiency::any`]) after the counters.
pub fn table_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> String {
    table_view(s, roofline, top, &View::default())
}

/// [`table_with`] shown as `view` says.
pub fn table_view(
    s: &Summary,
    roofline: Option<&Efficiency>,
    top: Option<usize>,
    view: &View,
) -> String {
    let names = Names::new(&s.kernels, view.full_names);
    let mut out = String::new();
    sessions_table(&mut out, s);
    processes_table(&mut out, s);
    let kernels = kernels_table(&mut out, s, top, &names);
    if s.counters.any() {
        counters_table(&mut out, s, kernels, view.counters, &names);
    }
    if !s.telemetry.is_empty() {
        devices_table(&mut out, &s.telemetry, !s.sessions.is_empty());
    }
    gpu_activity_table(&mut out, &s.gpu_activity);
    match roofline {
        Some(e) if e.any() => roofline_table(&mut out, e, s.kernel_ns, top, &names),
        Some(_) if s.kernel_count > 0 => out.push_str(
            "\nRoofline\n  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; \
             see GPUPROF_GEMM and GPUPROF_COUNTERS)\n",
        ),
        _ => {}
    }
    transfers_table(&mut out, s);
    ranges_table(&mut out, s);
    dropped_table(&mut out, s);
    integrity_table(&mut out, &s.integrity);
    out
}

/// The sessions of a report over several, one row each (nothing for one session).
fn sessions_table(out: &mut String, s: &Summary) {
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
            out,
            &["session", "processes", "kernels", "GPU µs", "directory"],
            &[true, true, true, true, false],
            &rows,
        );
        out.push('\n');
    }
}

/// Each process: its command, host and CUPTI, devices, capture window, kernels and
/// what was left out of them.
fn processes_table(out: &mut String, s: &Summary) {
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
            let head = format!("pid {}{session}: ", p.pid);
            let command = cut_to_width(2 + head.chars().count(), &p.command.join(" "));
            let _ = writeln!(out, "  {head}{command}");
            wrapped(
                out,
                4,
                &format!(
                    "host {}; CUPTI API {} (record layouts {}) from {}",
                    p.host, p.cupti_api_version, p.cupti_layouts, p.cupti_path
                ),
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
        if let Some(c) = &p.capture {
            let _ = writeln!(out, "    {}", capture_line(c));
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
        if p.untimed_kernels > 0 {
            let _ = writeln!(
                out,
                "    {} kernels without timestamps (CUPTI gives none to a kernel it replays: \
                 GPUPROF_REPLAY=kernel, GPUPROF_GRAPH_REPLAY=on): their GPU time is unknown \
                 and counts as 0",
                p.untimed_kernels
            );
        }
        if p.cupti_kernels > 0 {
            let _ = writeln!(
                out,
                "    left out: {} kernels CUPTI launched to measure counters (WaitNs, one per \
                 measured launch), {} µs",
                p.cupti_kernels,
                micros(p.cupti_kernel_ns)
            );
        }
    }
}

/// The kernel table, the first `top` kernels by GPU time; returns those shown.
fn kernels_table<'s>(
    out: &mut String,
    s: &'s Summary,
    top: Option<usize>,
    names: &Names,
) -> &'s [KernelStats] {
    let _ = writeln!(
        out,
        "\nKernels by GPU time ({} kernels, {} µs)",
        s.kernel_count,
        micros(s.kernel_ns)
    );
    let kernels = shown(&s.kernels, top);
    kernels_grid(out, s, kernels, names);
    if kernels.len() < s.kernels.len() {
        let _ = writeln!(
            out,
            "  ... {} more kernels (--top 0 shows all)",
            s.kernels.len() - kernels.len()
        );
    }
    kernels
}

/// Memory copies and sets by kind.
fn transfers_table(out: &mut String, s: &Summary) {
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
        out,
        &["kind", "count", "bytes", "total µs"],
        &[false, true, true, true],
        &rows,
    );
}

/// NVTX ranges by name: count, wall and GPU time.
fn ranges_table(out: &mut String, s: &Summary) {
    out.push_str("\nNVTX ranges\n");
    let mut rows: Vec<Vec<String>> = s
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
    let range_headers = [
        "count",
        "open",
        "wall µs",
        "kernels",
        "GPU µs",
        "GPU time %",
        "range",
    ];
    fit_last_column(&range_headers, &mut rows);
    grid_or_none(
        out,
        &range_headers,
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
}

/// Records dropped by source, and the processes whose stream did not finish.
fn dropped_table(out: &mut String, s: &Summary) {
    out.push_str("\nDropped records\n");
    let rows: Vec<Vec<String>> = s
        .dropped
        .iter()
        .map(|d| vec![d.source.clone(), d.records.to_string()])
        .collect();
    grid(out, &["source", "records"], &[false, true], &rows);

    if !s.unfinished.is_empty() {
        let pids: Vec<String> = s.unfinished.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            out,
            "\nProcesses whose stream did not finish: {}",
            pids.join(", ")
        );
        out.push_str(UNFINISHED_NOTE);
    }
}

/// What a process's capture window let through, in one line: "captured:
/// cudaProfilerApi, 2 windows, 12 of 40 launches", with the delay and duration when
/// set.
pub fn capture_line(c: &wire::Capture) -> String {
    let mut what = Vec::new();
    if !c.range.is_empty() {
        what.push(c.range.clone());
    }
    if c.delay_ns > 0 {
        what.push(format!("delay {} s", seconds(c.delay_ns)));
    }
    if c.duration_ns > 0 {
        what.push(format!("duration {} s", seconds(c.duration_ns)));
    }
    format!(
        "captured: {}, {} window{}, {} of {} launches",
        what.join(", "),
        c.windows,
        if c.windows == 1 { "" } else { "s" },
        c.captured_launches,
        c.launches
    )
}

/// ns as seconds, without trailing zeros ("1.5", "2").
fn seconds(ns: u64) -> String {
    let s = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The columns of the kernel table.
const KERNEL_TABLE_HEADERS: [&str; 11] = [
    "time %",
    "total µs",
    "calls",
    "mean µs",
    "median µs",
    "min µs",
    "max µs",
    "stddev µs",
    "grid",
    "block",
    "name",
];

/// The kernel table: a row per kernel, and under a kernel launched with several
/// configurations a row per configuration (`└` in the name column).
fn kernels_grid(out: &mut String, s: &Summary, kernels: &[KernelStats], names: &Names) {
    let spread = |total: u64, calls: u64, median: u64, exact: bool, min: u64, max: u64, sd: f64| {
        vec![
            pct(total, s.kernel_ns),
            micros(total),
            calls.to_string(),
            micros(mean_ns(total, calls)),
            format!("{}{}", if exact { "" } else { "~" }, micros(median)),
            micros(min),
            micros(max),
            micros(sd.round() as u64),
        ]
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for k in kernels {
        let mut row = spread(
            k.total_ns,
            k.calls,
            k.median_ns,
            k.median_exact,
            k.min_ns,
            k.max_ns,
            k.stddev_ns,
        );
        if k.configs.len() > 1 {
            row.extend([format!("{} configs", k.configs.len()), String::new()]);
        } else {
            row.extend([dims(k.grid), dims(k.block)]);
        }
        row.push(names.of(&k.mangled, &k.name));
        rows.push(row);
        if k.configs.len() > 1 {
            for c in &k.configs {
                let mut row = spread(
                    c.total_ns,
                    c.calls,
                    c.median_ns,
                    c.median_exact,
                    c.min_ns,
                    c.max_ns,
                    c.stddev_ns,
                );
                row.extend([dims(c.grid), dims(c.block), "└".to_string()]);
                rows.push(row);
            }
        }
    }
    if !names.full {
        fit_last_column(&KERNEL_TABLE_HEADERS, &mut rows);
    }
    grid_or_none(
        out,
        &KERNEL_TABLE_HEADERS,
        &[
            true, true, true, true, true, true, true, true, false, false, false,
        ],
        &rows,
    );
    if kernels.iter().any(|k| !k.median_exact) {
        out.push_str("  ~ median within 0.4% (a kernel with over 256 distinct durations)\n");
    }
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
    csv_tables(s, roofline, top).stream()
}

/// The tables of [`csv_with`], one by one.
pub fn csv_tables(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> CsvTables {
    let v = json_with(s, roofline, top);
    let mut out = CsvTables::default();
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
    let sections: [(&str, &[&str]); 8] = [
        ("processes", &process_columns),
        ("devices", &DEVICE_COLUMNS),
        ("kernels", &KERNEL_COLUMNS),
        ("kernel_configs", &CONFIG_COLUMNS),
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
    let activity_sections: &[(&str, &[&str])] = if v.get("gpu_activity").is_none() {
        &[]
    } else {
        &[("gpu_activity", &GPU_ACTIVITY_COLUMNS)]
    };
    let counter_sections: [(&str, &[&str]); 6] = [
        ("counter_plans", &PLAN_COLUMNS),
        ("counter_statuses", &["pid", "message"]),
        ("kernel_counters", &KERNEL_COUNTER_COLUMNS),
        ("counter_pct", &PCT_COLUMNS),
        ("counter_samples", &SAMPLE_COLUMNS),
        ("sampled_kernel_counters", &SAMPLED_COLUMNS),
    ];
    let capture_sections: &[(&str, &[&str])] = if s.processes.iter().any(|p| p.capture.is_some()) {
        &[("captures", &CAPTURE_COLUMNS)]
    } else {
        &[]
    };
    let counter_sections: &[(&str, &[&str])] = if v.get("counters").is_none() {
        &[]
    } else if s.counters.samples.is_empty() {
        &counter_sections[..5]
    } else {
        &counter_sections
    };
    for (name, columns) in session_sections
        .iter()
        .chain(&sections)
        .chain(capture_sections)
        .chain(telemetry_sections)
        .chain(activity_sections)
        .chain(counter_sections)
    {
        let rows = csv_rows(name, &v);
        out.table(name, columns, rows);
    }
    fitted_csv(&mut out, &v);
    if let Some(r) = v.get("roofline") {
        roofline_csv(&mut out, r);
    }
    integrity_csv(&mut out, &v);
    out
}

/// The rows of CSV section `name`, from the JSON report `v`.
fn csv_rows(name: &str, v: &Value) -> Vec<Value> {
    match name {
        "kernels" => kernel_rows(v),
        "kernel_configs" => kernel_config_rows(v),
        "gpu_activity" => gpu_activity_rows(&v["gpu_activity"]),
        "devices" => device_rows(v),
        "counter_plans" => counter_plan_rows(v),
        "captures" => v["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p.get("capture").is_some())
            .map(|p| {
                let mut row = p["capture"].clone();
                row["pid"] = p["pid"].clone();
                row
            })
            .collect(),
        "counter_statuses" => v["counters"]["statuses"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        "kernel_counters" => kernel_counter_rows(v),
        "counter_pct" => pct_rows(&v["counters"], false),
        "counter_samples" => v["counters"]["samples"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        "sampled_kernel_counters" => sampled_kernel_rows(v),
        "unfinished" => v["unfinished"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pid| json!({"pid": pid}))
            .collect(),
        _ => v[name].as_array().cloned().unwrap_or_default(),
    }
}

/// The kernels, with the number of configurations in place of the configurations
/// (each is a row of `kernel_configs`).
fn kernel_rows(v: &Value) -> Vec<Value> {
    v["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|k| {
            let mut k = k.clone();
            k["configs"] = json!(k["configs"].as_array().map_or(0, Vec::len));
            k
        })
        .collect()
}

/// Each kernel's launch configurations, a row each, named by their kernel.
fn kernel_config_rows(v: &Value) -> Vec<Value> {
    v["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|k| {
            let (name, mangled) = (k["name"].clone(), k["mangled"].clone());
            k["configs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |mut c| {
                    c["name"] = name.clone();
                    c["mangled"] = mangled.clone();
                    c
                })
        })
        .collect()
}

/// Each process's devices, a row each, with the process's pid.
fn device_rows(v: &Value) -> Vec<Value> {
    v["processes"]
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
        .collect()
}

/// Each counter plan's groups, a row per metric of each group.
fn counter_plan_rows(v: &Value) -> Vec<Value> {
    v["counters"]["plans"]
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
        .collect()
}

/// A row per kernel and metric (one, metric fields empty, for a kernel without counters).
fn kernel_counter_rows(v: &Value) -> Vec<Value> {
    v["counters"]["kernels"]
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
        .collect()
}

/// A row per kernel (and the idle time) and sampled metric.
fn sampled_kernel_rows(v: &Value) -> Vec<Value> {
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
const KERNEL_COLUMNS: [&str; 15] = [
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
    "short_name",
    "median_ns",
    "median_exact",
    "stddev_ns",
    "configs",
];
/// One row per kernel and launch configuration.
const CONFIG_COLUMNS: [&str; 13] = [
    "name",
    "mangled",
    "grid",
    "block",
    "calls",
    "total_ns",
    "mean_ns",
    "min_ns",
    "max_ns",
    "median_ns",
    "median_exact",
    "stddev_ns",
    "gpu_time_pct",
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

/// A process's `capture` object (JSON), also the row of CSV `captures`.
fn capture_json(c: &wire::Capture) -> Value {
    json!({
        "range": c.range,
        "delay_ns": c.delay_ns,
        "duration_ns": c.duration_ns,
        "windows": c.windows,
        "launches": c.launches,
        "captured_launches": c.captured_launches,
    })
}

/// The columns of CSV `captures`: a row per process recorded in a capture window.
const CAPTURE_COLUMNS: [&str; 7] = [
    "pid",
    "range",
    "delay_ns",
    "duration_ns",
    "windows",
    "launches",
    "captured_launches",
];

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
    for (v, p) in processes.iter_mut().zip(&s.processes) {
        if let Some(c) = &p.capture {
            v["capture"] = capture_json(c);
        }
    }
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
                "short_name": k.short_name,
                "median_ns": k.median_ns,
                "median_exact": k.median_exact,
                "stddev_ns": k.stddev_ns,
                "configs": k.configs.iter().map(|c| json!({
                    "grid": c.grid,
                    "block": c.block,
                    "calls": c.calls,
                    "total_ns": c.total_ns,
                    "mean_ns": mean_ns(c.total_ns, c.calls),
                    "min_ns": c.min_ns,
                    "max_ns": c.max_ns,
                    "median_ns": c.median_ns,
                    "median_exact": c.median_exact,
                    "stddev_ns": c.stddev_ns,
                    "gpu_time_pct": percent(c.total_ns, s.kernel_ns),
                })).collect::<Vec<_>>(),
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
    if s.gpu_activity.iter().any(|g| !g.fields.is_empty()) {
        out["gpu_activity"] = gpu_activity_json(&s.gpu_activity);
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
