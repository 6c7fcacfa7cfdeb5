//! The "GEMMs by role in the model" section (`report --model`,
//! [`crate::analysis::roles`]): per NVTX range and for the run, each role's calls,
//! calls per forward pass, time, model FLOPs, MFU, MBU, AI and bound, as text, JSON and
//! CSV rows.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{drop_to_fit, fit_last_column, grid, micros, note_left_out, wrapped};
use super::figures::{intensity, marked, marked_ai, or_dash, pct_of, pct_value, si};
use super::rollups::{rollup_json, ROLLUP_COLUMNS};
use crate::analysis::roles::{ModelRoles, RoleRow, TpSource, NO_ROLE};

/// The CSV columns of the `model_roles` table: the row's own, then a rollup's.
pub(super) fn role_columns() -> Vec<&'static str> {
    let own = [
        "scope",
        "role",
        "shapes",
        "calls",
        "per_forward",
        "time_pct",
        "ridge",
        "bound",
    ];
    [&own[..], &ROLLUP_COLUMNS[1..]].concat()
}

/// The tensor-parallel degree and where it came from, in words.
fn tp_words(r: &ModelRoles) -> String {
    let tp = r.assignment.tp.unwrap_or(1);
    match &r.assignment.tp_source {
        TpSource::NoConfig => "no tensor-parallel degree without a config".to_string(),
        TpSource::Given => format!("TP {tp} (--tp)"),
        TpSource::Inferred { fits } if fits.is_empty() => {
            "no tensor-parallel degree fits the shapes".to_string()
        }
        TpSource::Inferred { fits } if fits.len() == 1 => {
            format!("TP {tp} (inferred: no other degree fits as much of the GEMM time)")
        }
        TpSource::Inferred { fits } => {
            let all: Vec<String> = fits.iter().map(u64::to_string).collect();
            format!(
                "TP {tp}, inferred: TP {} fit the shapes as well (--tp decides)",
                all.join(", ")
            )
        }
    }
}

fn row_json(r: &RoleRow) -> Value {
    let mut row = rollup_json(&r.rollup);
    if let Some(o) = row.as_object_mut() {
        o.remove("name");
    }
    row["scope"] = json!(r.scope);
    row["role"] = json!(r.role);
    row["shapes"] = json!(r.shapes);
    row["calls"] = json!(r.calls);
    row["per_forward"] = json!(r.per_forward);
    row["time_pct"] = pct_value(Some(r.share));
    row["ridge"] = json!(r.ridge);
    row["bound"] = json!(r.bound.map(|b| b.name()));
    row
}

/// The section as JSON: the config, the degree, every shape's roles and the rows.
pub(super) fn roles_json(r: &ModelRoles) -> Value {
    let fits = match &r.assignment.tp_source {
        TpSource::Inferred { fits } => json!(fits),
        TpSource::Given | TpSource::NoConfig => Value::Null,
    };
    json!({
        "config": r.config,
        "tp": r.assignment.tp,
        "tp_source": match r.assignment.tp_source {
            TpSource::Given => "given",
            TpSource::Inferred { .. } => "inferred",
            TpSource::NoConfig => "none",
        },
        "roles_from": if r.config.is_some() { "config" } else { "shapes" },
        "tp_fits": fits,
        "shapes": r.assignment.shapes.iter().map(|(s, roles)| json!({
            "shape": s.label_as_read(),
            "m": s.m, "n": s.n, "k": s.k, "batch": s.batch,
            "roles": roles.iter().map(|x| x.name()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "rows": r.rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

/// The CSV rows of the section (shapes joined by "; ").
pub(super) fn roles_csv_rows(r: &ModelRoles) -> Vec<Value> {
    r.rows
        .iter()
        .map(|row| {
            let mut v = row_json(row);
            v["shapes"] = json!(row.shapes.join("; "));
            v
        })
        .collect()
}

/// "28" for a whole number of calls per forward pass, else two decimals.
fn per_forward(v: Option<f64>) -> String {
    match v {
        Some(v) if v.fract() == 0.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".to_string(),
    }
}

/// The text section.
pub(super) fn roles_table(out: &mut String, r: &ModelRoles) {
    match &r.config {
        Some(c) => {
            out.push_str("\nGEMMs by role in the model\n");
            wrapped(out, 2, &format!("{}; {}", c.summary(), tp_words(r)));
        }
        None => {
            out.push_str("\nGEMMs by role in the model, inferred from the shapes\n");
            wrapped(
                out,
                2,
                "no model config: the roles are guessed from the shapes (the hidden size is \
                 the feature count most shapes share; rules: docs/ARCHITECTURE.md); --model \
                 config.json names them from the model's dimensions",
            );
        }
    }
    if r.config.is_some() && r.rows.iter().all(|row| row.role == NO_ROLE) {
        wrapped(
            out,
            2,
            "no GEMM shape fits a role of this config at any tensor-parallel degree from 1 \
             to 64: is it the config of the model that ran? (the shapes are in \"Roofline by \
             GEMM shape\")",
        );
    }
    wrapped(
        out,
        2,
        "per fwd: calls over the LM head's in the same range (a GEMM of every layer: the \
         layers that ran); time %: of the range's kernel time; MFU, MBU, AI: the role's \
         model FLOPs and DRAM bytes over its GPU time; shapes: tokens x out x in (x batch)",
    );
    // The ranges' rows; the run's where there are no ranges.
    let ranged = r.rows.iter().any(|row| row.scope != "run");
    let mut rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .filter(|row| !ranged || row.scope != "run")
        .map(|row| {
            let x = &row.rollup;
            vec![
                row.scope.clone(),
                row.role.clone(),
                row.calls.to_string(),
                per_forward(row.per_forward),
                micros(x.gpu_ns),
                format!("{:.2}", row.share * 100.0),
                or_dash(x.model.flops.map(si)),
                pct_of(x.model.mfu),
                marked(pct_of(x.mbu), x.bytes_source),
                marked_ai(or_dash(x.model.intensity.map(intensity)), x.bytes_source),
                or_dash(row.bound.map(|b| b.name().to_string())),
                row.dims.join(", "),
            ]
        })
        .collect();
    let mut headers: Vec<String> = [
        "range",
        "role",
        "calls",
        "per fwd",
        "GPU µs",
        "time %",
        "model FLOPs",
        "MFU %",
        "MBU %",
        "AI",
        "bound",
        "shapes",
    ]
    .map(String::from)
    .to_vec();
    let mut right = vec![
        false, false, true, true, true, true, true, true, true, true, false, false,
    ];
    // Too wide (long range names, ambiguous roles): model FLOPs, then AI, then the
    // GPU time go.
    let dropped = drop_to_fit(&mut headers, &mut right, &mut rows, &[6, 9, 4]);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    fit_last_column(&headers, &mut rows);
    grid(out, &headers, &right, &rows);
    note_left_out(out, &dropped);
    let _ = writeln!(
        out,
        "  (JSON and CSV model_roles: the run's rows, HFU, types, and every shape's roles)"
    );
}
