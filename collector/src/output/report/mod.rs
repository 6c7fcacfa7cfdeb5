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
//! This module holds the public entry points; the base report is written in `table`,
//! `csv` and `json` (one format each), the helpers the sections share (`grid`,
//! `csv_cell`, `micros`, `value`, ...) are in `cells`, the counters sections in
//! `counters`, the roofline sections in `roofline`.

mod api_calls;
mod cells;
mod counters;
mod csv;
mod devices;
mod figures;
mod gpu_activity;
mod integrity;
mod json;
mod launch_shape;
mod roles;
mod rollups;
mod roofline;
mod table;
mod what_if;

use std::fmt::Write;

use serde_json::{json, Value};

use crate::analysis::findings::Findings;
use crate::analysis::roofline::efficiency::Efficiency;
use crate::analysis::{dims, percent, KernelStats, Summary};
use api_calls::{
    api_calls_json, api_calls_table, RANGE_COLUMNS as RANGE_CALL_COLUMNS,
    THREAD_COLUMNS as THREAD_CALL_COLUMNS,
};
use cells::{
    cut_to_width, drop_to_fit, fit_last_column, grid, grid_or_none, mean_ns, note_left_out, pct,
    shown, shown_rows, wrapped, Names, TimeUnit,
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
use launch_shape::{
    launch_shape_json, launch_shape_rows, launch_shape_table, LAUNCH_SHAPE_COLUMNS,
};
use roles::{role_columns, roles_csv_rows, roles_json};
use roofline::{roofline_csv, roofline_json, roofline_table};
use what_if::{what_if_json, what_if_table, WHAT_IF_COLUMNS};

pub use cells::{micros, value, CsvTables};
pub use counters::{CounterView, PCT_HELP};
pub use csv::{csv, csv_tables, csv_with};
pub use figures::si;
pub use figures::MARKS_HELP;
pub use json::{json, json_with, members as json_members, write_members};
pub use launch_shape::LAUNCH_SHAPE_HELP;
pub use roofline::VERDICT_HELP;
pub use table::{capture_line, table, table_view, table_view_with, table_with};

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
    let mut out = Vec::new();
    write_report_with(f, format, top, view, &mut out).expect("writing into memory cannot fail");
    String::from_utf8(out).expect("the report is UTF-8")
}

/// [`report_with`] written to `w`; the JSON object one member at a time
/// ([`write_members`]), so that the whole document is never in memory.
pub fn write_report_with(
    f: &Findings,
    format: Format,
    top: Option<usize>,
    view: &View,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let (summary, roofline) = (&f.summary, &f.roofline);
    match format {
        Format::Table => w.write_all(
            table_view_with(
                summary,
                Some(roofline),
                (f.what_if.as_ref(), f.roles.as_ref()),
                Some(top.unwrap_or(20)),
                view,
            )
            .as_bytes(),
        ),
        Format::Csv => w.write_all(report_csv_tables(f, top).stream().as_bytes()),
        Format::Json => {
            let mut members = json::members(summary, Some(roofline), top);
            if let Some((rows, skipped)) = &f.what_if {
                members.push(("what_if", Box::new(|| what_if_json(rows, skipped))));
            }
            if let Some(r) = &f.roles {
                members.push(("model_roles", Box::new(|| roles_json(r))));
            }
            json::write_members(members, w)?;
            w.write_all(b"\n")
        }
    }
}

/// The CSV report's tables, one by one (`report --format csv -o DIR`): the same
/// tables [`report`] writes to one stream.
pub fn report_csv_tables(f: &Findings, top: Option<usize>) -> CsvTables {
    let mut tables = csv_tables(&f.summary, Some(&f.roofline), top);
    if let Some((rows, skipped)) = &f.what_if {
        let v = what_if_json(rows, skipped);
        let rows = v["rows"].as_array().cloned().unwrap_or_default();
        tables.table("what_if", &WHAT_IF_COLUMNS, rows);
    }
    if let Some(r) = &f.roles {
        tables.table("model_roles", &role_columns(), roles_csv_rows(r));
    }
    tables
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
