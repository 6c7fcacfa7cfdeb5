//! Cells and tables of the text and CSV reports: units, percentages, counter values,
//! aligned columns and CSV quoting.

use serde_json::Value;

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
