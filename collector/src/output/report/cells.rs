//! Cells and tables of the text and CSV reports: units, percentages, counter values,
//! aligned columns and CSV quoting.

use std::fmt::Write;

use serde_json::Value;

use crate::analysis::short_name::fit_names;
use crate::analysis::{percent, KernelStats};

/// µs with three decimals, from ns.
pub fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

pub(super) fn mean_ns(total: u64, count: u64) -> u64 {
    if count == 0 {
        0
    } else {
        ((total as u128 + count as u128 / 2) / count as u128) as u64
    }
}

pub(super) fn pct(part: u64, whole: u64) -> String {
    format!("{:.2}", percent(part, whole))
}

/// The first `top` rows (all for `None` or 0).
pub(super) fn shown_rows<T>(rows: &[T], top: Option<usize>) -> &[T] {
    match top {
        Some(n) if n > 0 && n < rows.len() => &rows[..n],
        _ => rows,
    }
}

pub(super) fn shown(kernels: &[KernelStats], top: Option<usize>) -> &[KernelStats] {
    match top {
        Some(n) if n > 0 && n < kernels.len() => &kernels[..n],
        _ => kernels,
    }
}

/// Columns padded to their widest cell, two spaces apart, indented by two; numeric
/// columns (`right[i]`) right-aligned; the last column is never padded.
pub(super) fn grid(out: &mut String, headers: &[&str], right: &[bool], rows: &[Vec<String>]) {
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

pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn csv_cell(v: &Value) -> String {
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

/// [`grid`], or `  (none)` when there are no rows.
pub(super) fn grid_or_none(
    out: &mut String,
    headers: &[&str],
    right: &[bool],
    rows: &[Vec<String>],
) {
    if rows.is_empty() {
        out.push_str("  (none)\n");
    } else {
        grid(out, headers, right, rows);
    }
}

/// The width the text report fits, in columns (characters).
pub const WIDTH: usize = 120;

/// The narrowest a name column is cut to, however wide the other columns are.
const MIN_NAME_WIDTH: usize = 16;

/// The width [`grid`] gives the columns before the last one, separators and indent
/// included.
fn prefix_width(headers: &[&str], rows: &[Vec<String>]) -> usize {
    let n = headers.len();
    let mut prefix = 2 + 2 * n.saturating_sub(1);
    for (i, header) in headers.iter().enumerate().take(n.saturating_sub(1)) {
        let w = rows
            .iter()
            .filter_map(|r| r.get(i))
            .map(|c| c.chars().count())
            .chain([header.chars().count()])
            .max()
            .unwrap_or(0);
        prefix += w;
    }
    prefix
}

/// Leaves out columns `droppable` (indices, in the order to drop them) while the
/// columns before the last leave it less than it needs of [`WIDTH`] (its widest cell,
/// at most [`MIN_NAME_WIDTH`]); returns the headers left out. The caller says which,
/// and where the full table is.
pub(super) fn drop_to_fit(
    headers: &mut Vec<String>,
    right: &mut Vec<bool>,
    rows: &mut [Vec<String>],
    droppable: &[usize],
) -> Vec<String> {
    let mut dropped = Vec::new();
    let mut gone: Vec<usize> = Vec::new();
    // The room the last column needs: its widest cell, at most MIN_NAME_WIDTH (a
    // longer name is cut to fit).
    let last = rows
        .iter()
        .filter_map(|r| r.last())
        .chain(headers.last())
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0)
        .min(MIN_NAME_WIDTH);
    for &col in droppable {
        let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        if prefix_width(&refs, rows) + last <= WIDTH {
            break;
        }
        // The index of `col` among the columns still there.
        let at = col - gone.iter().filter(|&&g| g < col).count();
        dropped.push(headers.remove(at));
        right.remove(at);
        for r in rows.iter_mut() {
            if at < r.len() {
                r.remove(at);
            }
        }
        gone.push(col);
    }
    dropped
}

/// The line under a table that [`drop_to_fit`] left columns out of, naming them and
/// where they are; nothing when none was.
pub(super) fn note_left_out(out: &mut String, dropped: &[String]) {
    if !dropped.is_empty() {
        let _ = writeln!(
            out,
            "  ({} left out to fit {WIDTH} columns: --format csv or json has them)",
            dropped.join(", ")
        );
    }
}

/// Cuts the last column of `rows` so every line of [`grid`] fits [`WIDTH`]: names are
/// cut by [`fit_names`], which keeps distinct names distinct.
pub(super) fn fit_last_column(headers: &[&str], rows: &mut [Vec<String>]) {
    if headers.is_empty() {
        return;
    }
    let prefix = prefix_width(headers, rows);
    let avail = WIDTH.saturating_sub(prefix).max(MIN_NAME_WIDTH);
    let mut distinct: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.last())
        .map(|s| s.as_str())
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let fitted = fit_names(&distinct, avail);
    let map: std::collections::HashMap<String, String> =
        distinct.iter().map(|s| s.to_string()).zip(fitted).collect();
    for r in rows.iter_mut() {
        if let Some(last) = r.last_mut() {
            if let Some(f) = map.get(last.as_str()) {
                *last = f.clone();
            }
        }
    }
}

/// The name tables print for a kernel: its short name (see
/// [`crate::analysis::short_name`]), or with `--full-names` the demangled one.
pub struct Names<'a> {
    pub full: bool,
    /// Recorded name -> short name.
    short: std::collections::HashMap<&'a str, &'a str>,
    /// Demangled name -> short name.
    by_demangled: std::collections::HashMap<&'a str, &'a str>,
}

impl<'a> Names<'a> {
    pub fn new(kernels: &'a [KernelStats], full: bool) -> Names<'a> {
        Names {
            full,
            short: kernels
                .iter()
                .map(|k| (k.mangled.as_str(), k.short_name.as_str()))
                .collect(),
            by_demangled: kernels
                .iter()
                .map(|k| (k.name.as_str(), k.short_name.as_str()))
                .collect(),
        }
    }

    /// The name of the kernel whose demangled name is `name`; other text (a GEMM
    /// shape's label) as it is.
    pub fn of_demangled(&self, name: &str) -> String {
        match self.by_demangled.get(name) {
            Some(s) if !self.full => s.to_string(),
            _ => name.to_string(),
        }
    }

    /// The name of the kernel recorded as `mangled`, demangled `name`.
    pub fn of(&self, mangled: &str, name: &str) -> String {
        if self.full {
            return name.to_string();
        }
        match self.short.get(mangled) {
            Some(s) => s.to_string(),
            None => crate::analysis::short_name::short_name(name),
        }
    }
}

/// The CSV report as tables: each a name, a header row and its rows. Written as one
/// stream ([`CsvTables::stream`]: `# name` lines, tables separated by an empty line)
/// or one file per table (`gpuprof report --format csv -o DIR`).
#[derive(Debug, Default)]
pub struct CsvTables {
    pub tables: Vec<(String, String)>,
}

impl CsvTables {
    /// Adds table `name`: `columns` as the header, then each row's cells in order.
    pub(super) fn table(&mut self, name: &str, columns: &[&str], rows: Vec<Value>) {
        let mut t = columns.join(",");
        t.push('\n');
        for row in rows {
            let cells: Vec<String> = columns.iter().map(|c| csv_cell(&row[*c])).collect();
            t.push_str(&cells.join(","));
            t.push('\n');
        }
        self.tables.push((name.to_string(), t));
    }

    /// Every table in one stream.
    pub fn stream(&self) -> String {
        let mut out = String::new();
        for (i, (name, t)) in self.tables.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str("# ");
            out.push_str(name);
            out.push('\n');
            out.push_str(t);
        }
        out
    }
}

/// `text` in lines of at most [`WIDTH`] characters, broken at spaces: the first line
/// after `first` and a space, the others after `rest` (a longer word stays whole).
pub(super) fn wrap_after(out: &mut String, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    // What goes before the next word when it is the line's first.
    let mut lead = " ";
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            lead = "";
            empty = true;
        }
        line.push_str(if empty { lead } else { " " });
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// `text` at `indent` (at least 1) spaces, wrapped at spaces to fit [`WIDTH`];
/// continuation lines are indented two more. A word longer than a line (a path) stays
/// whole.
pub(super) fn wrapped(out: &mut String, indent: usize, text: &str) {
    let indent = indent.max(1);
    wrap_after(out, &" ".repeat(indent - 1), &" ".repeat(indent + 2), text);
}

/// `text` cut to fit [`WIDTH`] after `indent` spaces, ending in "…" when cut.
pub(super) fn cut_to_width(indent: usize, text: &str) -> String {
    let room = WIDTH.saturating_sub(indent).max(16);
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut s: String = text.chars().take(room - 1).collect();
    s.push('…');
    s
}

/// The unit of a time column: µs with ns precision while its values stay under a
/// second, then ms, then s (µs precision), so a long run's column keeps the table
/// within [`WIDTH`].
#[derive(Clone, Copy)]
pub(super) enum TimeUnit {
    Micros,
    Millis,
    Seconds,
}

impl TimeUnit {
    pub(super) fn for_column(largest_ns: u64) -> TimeUnit {
        match largest_ns {
            0..1_000_000_000 => TimeUnit::Micros,
            1_000_000_000..1_000_000_000_000 => TimeUnit::Millis,
            _ => TimeUnit::Seconds,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            TimeUnit::Micros => "µs",
            TimeUnit::Millis => "ms",
            TimeUnit::Seconds => "s",
        }
    }

    pub(super) fn show(self, ns: u64) -> String {
        match self {
            TimeUnit::Micros => micros(ns),
            TimeUnit::Millis => micros(ns / 1000),
            TimeUnit::Seconds => micros(ns / 1_000_000),
        }
    }
}
