//! The "What-if by GEMM shape" section ([`crate::analysis::roofline::what_if`]): the
//! roofline's time per call of each GEMM shape at other token counts, as text, JSON and
//! CSV rows.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{grid, micros, wrapped};
use super::figures::si;
use crate::analysis::roofline::what_if::WhatIf;

/// The CSV columns of the `what_if` section (the JSON keys of a row).
pub(super) const WHAT_IF_COLUMNS: [&str; 18] = [
    "shape",
    "gpu",
    "role",
    "tp_as_run",
    "tp",
    "m",
    "k",
    "batch",
    "tokens_as_run",
    "tokens",
    "flops",
    "bytes",
    "intensity",
    "bound",
    "roofline_ns",
    "ns_per_token",
    "mfu_pct",
    "measured_ns",
];

/// The rows as JSON, and the shapes left out with why.
pub(super) fn what_if_json(rows: &[WhatIf], skipped: &[(String, String)]) -> Value {
    json!({
        "rows": rows.iter().map(|r| json!({
            "shape": r.shape,
            "gpu": r.gpu,
            "role": r.role,
            "tp_as_run": r.tp_as_run,
            "tp": r.tp,
            "m": r.m,
            "k": r.k,
            "batch": r.batch,
            "tokens_as_run": r.tokens_as_run,
            "tokens": r.tokens,
            "flops": r.flops,
            "bytes": r.bytes,
            "intensity": r.intensity,
            "bound": r.bound.name(),
            "roofline_ns": r.roofline_ns,
            "ns_per_token": r.roofline_ns / r.tokens as f64,
            "mfu_pct": (r.mfu * 10_000.0).round() / 100.0,
            "measured_ns": r.measured_ns,
        })).collect::<Vec<_>>(),
        "skipped": skipped.iter().map(|(shape, why)| json!({"shape": shape, "why": why})).collect::<Vec<_>>(),
    })
}

/// The text section.
pub(super) fn what_if_table(out: &mut String, rows: &[WhatIf], skipped: &[(String, String)]) {
    out.push_str(
        "\nWhat-if by GEMM shape (the roofline's time per call at other tokens and TP degrees: \
         a model, each matrix moved once)\n",
    );
    if rows.is_empty() && skipped.is_empty() {
        out.push_str("  (no GEMM shapes in this session)\n");
        return;
    }
    let many_gpus = rows.iter().any(|r| r.gpu != rows[0].gpu);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let as_run = r.tokens == r.tokens_as_run && r.tp.is_none();
            let what = match r.tp {
                Some(t) => format!("TP {t} ({}x{}x{})", r.tokens, r.m, r.k),
                None => format!("{}{}", r.tokens, if as_run { " (ran)" } else { "" }),
            };
            vec![
                what,
                si(r.flops),
                si(r.bytes),
                format!("{:.2}", r.intensity),
                r.bound.name().to_string(),
                micros(r.roofline_ns.round() as u64),
                micros((r.roofline_ns / r.tokens as f64).round() as u64),
                format!("{:.1}", 100.0 * r.mfu),
                r.measured_ns
                    .map_or_else(String::new, |m| micros(m.round() as u64)),
            ]
        })
        .collect();
    let mut text = String::new();
    grid(
        &mut text,
        &[
            "tokens / TP",
            "FLOPs",
            "bytes",
            "AI",
            "bound",
            "roof µs",
            "µs/token",
            "MFU %",
            "ran µs",
        ],
        &[false, true, true, true, false, true, true, true, true],
        &cells,
    );
    // Each shape (as it ran) heads its rows.
    let mut lines = text.lines();
    if let Some(header) = lines.next() {
        let _ = writeln!(out, "  {header}");
    }
    let mut last: Option<(&str, &str)> = None;
    for (line, r) in lines.zip(rows) {
        if last != Some((&r.shape, &r.gpu)) {
            let gpu = if many_gpus {
                format!(" [{}]", r.gpu)
            } else {
                String::new()
            };
            let role = r
                .role
                .as_ref()
                .map_or_else(String::new, |role| format!("  ({role})"));
            let _ = writeln!(out, "  {}{gpu}{role}", r.shape);
            last = Some((&r.shape, &r.gpu));
        }
        let _ = writeln!(out, "  {line}");
    }
    for (shape, why) in skipped {
        wrapped(out, 2, &format!("{shape}: no what-if: {why}"));
    }
}
