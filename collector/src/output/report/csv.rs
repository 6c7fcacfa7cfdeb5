//! The report as CSV: a section per table (`# name`, a header row, the rows), each
//! table also on its own for `report --format csv -o DIR`.

use super::*;

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
    let shape_sections: &[(&str, &[&str])] = if v.get("launch_shapes").is_none() {
        &[]
    } else {
        &[("launch_shapes", &LAUNCH_SHAPE_COLUMNS)]
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
    // Launch shapes right after the kernel configurations they describe.
    let (kernel_sections, other_sections) = sections.split_at(4);
    for (name, columns) in session_sections
        .iter()
        .chain(kernel_sections)
        .chain(shape_sections)
        .chain(other_sections)
        .chain(capture_sections)
        .chain(telemetry_sections)
        .chain(activity_sections)
        .chain(counter_sections)
    {
        let rows = csv_rows(name, &v);
        out.table(name, columns, rows);
    }
    if let Some(a) = v.get("api_calls") {
        for (name, key, columns) in [
            ("api_calls_by_thread", "by_thread", &THREAD_CALL_COLUMNS[..]),
            ("api_calls_by_range", "by_range", &RANGE_CALL_COLUMNS[..]),
        ] {
            out.table(
                name,
                columns,
                a[key].as_array().cloned().unwrap_or_default(),
            );
        }
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
        "launch_shapes" => launch_shape_rows(&v["launch_shapes"]),
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
