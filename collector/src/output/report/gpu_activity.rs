//! The "GPU activity" section: DCGM's profiling fields per GPU over the run
//! ([`crate::analysis::gpu_activity`]), as text, JSON and CSV rows (a row per GPU
//! and field).

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::grid;
use crate::analysis::gpu_activity::GpuActivity;

fn is_ratio_metric(metric: &str) -> bool {
    cupti::metrics::DCGM_FIELDS
        .iter()
        .find(|f| f.metric == metric)
        .is_some_and(crate::analysis::gpu_activity::is_ratio)
}

/// The CSV columns of the `gpu_activity` section (the JSON keys of a GPU and of one
/// of its fields).
pub(super) const GPU_ACTIVITY_COLUMNS: [&str; 10] = [
    "index",
    "uuid",
    "name",
    "span_ns",
    "kernel_ns",
    "field",
    "metric",
    "value",
    "valued_ns",
    "valued_pct",
];

/// Percent of kernel time whose class has a value of the field.
fn valued_pct(valued_ns: u64, kernel_ns: u64) -> f64 {
    if kernel_ns == 0 {
        0.0
    } else {
        100.0 * valued_ns as f64 / kernel_ns as f64
    }
}

/// `v` with three significant digits (a mostly idle GPU's ratios are small).
fn three_digits(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return v.to_string();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.decimals$}")
}

/// A field's value as DCGM gives it: a ratio with three significant digits, bytes per second
/// as MB/s; ">=" when part of the kernel time had no value.
fn value_cell(ratio: bool, value: f64, partial: bool) -> String {
    let v = if ratio {
        three_digits(value)
    } else {
        format!("{:.1} MB/s", value / 1e6)
    };
    if partial {
        format!(">={v}")
    } else {
        v
    }
}

/// The text section (nothing when no GPU has a field).
pub(super) fn gpu_activity_table(out: &mut String, gpus: &[GpuActivity]) {
    if gpus.iter().all(|g| g.fields.is_empty()) {
        return;
    }
    out.push_str(
        "\nGPU activity (DCGM's profiling fields: over the wall clock from each GPU's first \
         kernel to its last, idle time included)\n",
    );
    let mut rows = Vec::new();
    for g in gpus {
        for f in &g.fields {
            let partial = f.valued_ns < g.kernel_ns;
            rows.push(vec![
                g.index.to_string(),
                f.field.to_string(),
                value_cell(is_ratio_metric(f.metric), f.value, partial),
                format!("{:.0}%", valued_pct(f.valued_ns, g.kernel_ns)),
            ]);
        }
    }
    grid(
        out,
        &["dev", "field", "value", "valued"],
        &[false, false, true, true],
        &rows,
    );
    for g in gpus.iter().filter(|g| !g.fields.is_empty()) {
        let _ = writeln!(
            out,
            "  dev {}: {} {}, span {:.3} s, kernels {:.3} s",
            g.index,
            g.name,
            g.uuid,
            g.span_ns() as f64 / 1e9,
            g.kernel_ns as f64 / 1e9
        );
    }
    if gpus
        .iter()
        .any(|g| g.fields.iter().any(|f| f.valued_ns < g.kernel_ns))
    {
        super::cells::wrapped(
            out,
            2,
            ">=: the rest of the kernel time (\"valued\" is the share with a value) is of \
             kernels never measured with the pass group holding the field's metric, left \
             out; GPUPROF_REPLAY=kernel measures every group at once, a longer run more \
             launches",
        );
    }
}

/// One JSON object per GPU with its fields.
pub(super) fn gpu_activity_json(gpus: &[GpuActivity]) -> Value {
    Value::Array(
        gpus.iter()
            .map(|g| {
                let fields: Vec<Value> = g
                    .fields
                    .iter()
                    .map(|f| {
                        json!({
                            "field": f.field,
                            "metric": f.metric,
                            "value": f.value,
                            "valued_ns": f.valued_ns,
                            "valued_pct": valued_pct(f.valued_ns, g.kernel_ns),
                        })
                    })
                    .collect();
                json!({
                    "index": g.index,
                    "uuid": g.uuid,
                    "name": g.name,
                    "first_ns": g.first_ns,
                    "last_ns": g.last_ns,
                    "span_ns": g.span_ns(),
                    "kernel_ns": g.kernel_ns,
                    "fields": fields,
                })
            })
            .collect(),
    )
}

/// The CSV rows: one per GPU and field, keyed as [`GPU_ACTIVITY_COLUMNS`].
pub(super) fn gpu_activity_rows(v: &Value) -> Vec<Value> {
    let mut rows = Vec::new();
    for g in v.as_array().into_iter().flatten() {
        for f in g["fields"].as_array().into_iter().flatten() {
            let mut row = f.clone();
            for key in ["index", "uuid", "name", "span_ns", "kernel_ns"] {
                row[key] = g[key].clone();
            }
            rows.push(row);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::three_digits;

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(three_digits(0.41234), "0.412");
        assert_eq!(three_digits(0.0022898), "0.00229");
        assert_eq!(three_digits(1.0), "1.00");
        assert_eq!(three_digits(0.0), "0");
    }
}
