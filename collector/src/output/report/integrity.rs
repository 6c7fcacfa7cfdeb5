//! The report's statement of what it leaves out ([`Integrity`]): damaged files of the
//! session (file, bytes, records, why), parts never sealed, losses the collector could
//! not count (`lost, uncounted: ...`, JSON `lost`), and impossible records by kind.
//! Shown only when there is something to state, so the report of an intact session
//! is unchanged: table `Session damage` and `Impossible records`, JSON
//! `session_damage` and `impossible_records`, CSV sections of the same names.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{grid, plural, CsvTables};
use crate::analysis::Integrity;

/// Damaged files listed in the table; JSON and CSV list all.
const TABLE_REGIONS: usize = 20;

pub(super) fn integrity_table(out: &mut String, i: &Integrity) {
    if !i.file_complete() {
        out.push_str("\nSession damage\n");
        if !i.damaged.is_empty() {
            let _ = writeln!(
                out,
                "  {} skipped ({}, {}): the tables above leave them out",
                plural(i.damaged.len() as u64, "damaged file", "damaged files"),
                i.damaged_records_text(),
                plural(i.damaged_bytes(), "byte", "bytes")
            );
            let rows: Vec<Vec<String>> = i
                .damaged
                .iter()
                .take(TABLE_REGIONS)
                .map(|d| {
                    vec![
                        d.file.clone(),
                        d.records.map_or("-".to_string(), |r| r.to_string()),
                        d.bytes.to_string(),
                        d.reason.clone(),
                    ]
                })
                .collect();
            grid(
                out,
                &["file", "records", "bytes", "reason"],
                &[false, true, true, false],
                &rows,
            );
            if i.damaged.len() > TABLE_REGIONS {
                let _ = writeln!(
                    out,
                    "  ... {} more (--format json lists all)",
                    i.damaged.len() - TABLE_REGIONS
                );
            }
        }
        for u in &i.unsealed {
            let _ = writeln!(
                out,
                "  {} ({}) was never sealed: the collector stopped while writing it; its records are lost",
                u.dir,
                plural(u.bytes, "byte", "bytes")
            );
        }
        for what in &i.lost {
            let _ = writeln!(out, "  lost, uncounted: {what}");
        }
    }
    if !i.impossible.is_empty() {
        out.push_str("\nImpossible records (left out)\n");
        let rows: Vec<Vec<String>> = i
            .impossible
            .iter()
            .map(|r| vec![r.kind.clone(), r.records.to_string(), r.reason.clone()])
            .collect();
        grid(
            out,
            &["kind", "records", "reason"],
            &[false, true, false],
            &rows,
        );
    }
}

/// The report object's `session_damage` and `impossible_records` members, those that
/// have something to state.
pub(super) fn integrity_json(i: &Integrity) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    if !i.file_complete() {
        out.push((
            "session_damage",
            json!({
                "damaged_files": i.damaged.len(),
                "damaged_records": i.damaged_records(),
                "damaged_files_of_unknown_records": i.damaged_unknown(),
                "damaged_bytes": i.damaged_bytes(),
                "damaged": i.damaged,
                "unsealed": i.unsealed,
                "lost": i.lost,
            }),
        ));
    }
    if !i.impossible.is_empty() {
        out.push(("impossible_records", json!(i.impossible)));
    }
    out
}

pub(super) const DAMAGE_COLUMNS: [&str; 5] = ["kind", "file", "records", "bytes", "reason"];
pub(super) const IMPOSSIBLE_COLUMNS: [&str; 3] = ["kind", "records", "reason"];

/// The CSV sections of [`integrity_json`]'s members in `v`, each after an empty line.
pub(super) fn integrity_csv(out: &mut CsvTables, v: &Value) {
    let mut section = |name: &str, columns: &[&str], rows: Vec<Value>| {
        out.table(name, columns, rows);
    };
    if let Some(d) = v.get("session_damage") {
        let tagged = |kind: &str, mut row: Value| {
            row["kind"] = json!(kind);
            row
        };
        let mut rows: Vec<Value> = d["damaged"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| tagged("damaged", r.clone()))
            .collect();
        for u in d["unsealed"].as_array().into_iter().flatten() {
            let mut row = json!({"file": u["dir"], "bytes": u["bytes"], "reason": "never sealed"});
            row["records"] = Value::Null;
            rows.push(tagged("unsealed", row));
        }
        section("session_damage", &DAMAGE_COLUMNS, rows);
    }
    if let Some(rows) = v.get("impossible_records").and_then(Value::as_array) {
        section("impossible_records", &IMPOSSIBLE_COLUMNS, rows.clone());
    }
}
