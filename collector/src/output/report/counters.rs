//! The counters sections of the report: the table's `Counters`, `Counters by kernel`,
//! `Counter samples` and `Counter samples by kernel`, the JSON `counters` object and
//! the columns of the CSV counter sections.
//!
//! `Counters by kernel` is one row per kernel with its counters as percentages of
//! peak ([`crate::analysis::counter_pct`]), or with `--counters raw` the metric means
//! per kernel, leaving out metrics that are 0 for every kernel shown. Every line of
//! the counter sections fits [`super::cells::WIDTH`] columns: a metric row whose note
//! would pass it has the note on lines of its own, and a kernel's name in a heading
//! is cut to leave room for the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{
    fit_last_column, grid, micros, plural, shown, value, wrap_after as wrapped, CsvTables, Names,
    WIDTH,
};
use crate::analysis::counter_pct::{KernelPct, Pct};
use crate::analysis::fitted::FittedClass;
use crate::analysis::{Counters, KernelStats, Summary};

/// What the table shows of the kernels' counters (`gpuprof report --counters`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CounterView {
    /// One row per kernel: SM active, tensor pipe, DRAM throughput, L2 hit rate and
    /// achieved occupancy as percentages of peak.
    #[default]
    Pct,
    /// The mean of each metric per kernel; metrics 0 for every kernel shown are left
    /// out.
    Raw,
    /// No counter sections in the table.
    Off,
}

/// The formulas of the percentages, for `gpuprof report --help` (docs/ARCHITECTURE.md
/// has the same).
pub const PCT_HELP: &str = "\
Counters by kernel (the table's default, --counters pct), as percentages; each from the means
per measured launch, \"-\" where the kernel lacks a metric, a footnote where a device fact is
missing:
  SM active %    100 x sm__cycles_active.avg / (gpu__time_duration.sum x the device record's
                 core clock: CUDA's CLOCK_RATE, the maximum, so low when the GPU ran slower)
  tensor pipe %  sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
  DRAM %         100 x (dram__bytes_read.sum + dram__bytes_write.sum) / (gpu__time_duration.sum
                 x the peak DRAM bandwidth the roofline uses, --peaks included), or
                 dram__throughput.avg.pct_of_peak_sustained_elapsed when that was collected
  L2 hit %       100 x lts__t_sectors_lookup_hit.sum / (that + lts__t_sectors_lookup_miss.sum),
                 or lts__t_sector_hit_rate.pct when that was collected
  occupancy %    sm__warps_active.avg.pct_of_peak_sustained_active (achieved occupancy)";

/// The longest metric name the rows are aligned to: CUPTI's run to about 75
/// characters; a longer one (a session file can hold any) is printed whole, its value
/// right after it.
const METRIC_NAME_PAD: usize = 80;

/// Metric rows: name padded, value right-aligned, then a note; indented by four.
fn metric_rows(out: &mut String, rows: &[(String, String, String)]) {
    let name_w = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(0)
        .min(METRIC_NAME_PAD);
    let value_w = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    // Padded by hand: a format width above u16::MAX panics, and a metric name in a
    // session file can be that long.
    let pad = |n: usize| " ".repeat(n);
    for (name, v, note) in rows {
        let (name_pad, value_pad) = (
            pad(name_w.saturating_sub(name.chars().count())),
            pad(value_w - v.chars().count()),
        );
        let line = format!("    {name}{name_pad}  {value_pad}{v}");
        if note.is_empty() {
            let _ = writeln!(out, "{line}");
        } else if line.chars().count() + 1 + note.chars().count() <= WIDTH {
            let _ = writeln!(out, "{line} {note}");
        } else {
            // Past the width: the note on lines of its own under the value.
            let _ = writeln!(out, "{line}");
            wrapped(out, "     ", "        ", note);
        }
    }
}

/// "  NAME" and `rest`, the name cut ([`crate::analysis::short_name::fit_names`])
/// so the line fits [`WIDTH`]: what follows the name stays whole.
fn heading(out: &mut String, name: &str, rest: &str) {
    let room = WIDTH.saturating_sub(2 + rest.chars().count()).max(16);
    let name = crate::analysis::short_name::fit_names(&[name], room).remove(0);
    let _ = writeln!(out, "  {name}{rest}");
}

/// The table's counter section: per process the plan or status, per shown kernel
/// the counters as `view` says, and the sampling windows; nothing for
/// [`CounterView::Off`].
pub(super) fn counters_table(
    out: &mut String,
    s: &Summary,
    kernels: &[KernelStats],
    view: CounterView,
    names: &Names,
) {
    if view == CounterView::Off {
        return;
    }
    let c: &Counters = &s.counters;
    out.push_str("\nCounters\n");
    for p in &s.processes {
        for plan in c.plans.iter().filter(|x| x.pid == p.pid) {
            let head = format!(
                "  pid {}, device {}: chip {}, {} mode;",
                plan.pid, plan.device_id, plan.chip, plan.mode
            );
            wrapped(out, &head, "      ", &plan.policy);
            for (i, g) in plan.groups.iter().enumerate() {
                let head = format!("    group {i}:");
                let rest = " ".repeat(head.chars().count() + 1);
                wrapped(out, &head, &rest, &g.join(", "));
            }
        }
        for st in c.statuses.iter().filter(|x| x.pid == p.pid) {
            wrapped(out, &format!("  pid {}:", st.pid), "      ", &st.message);
        }
    }

    if view == CounterView::Raw {
        raw_table(out, c, kernels, names);
    } else {
        pct_table(out, c, kernels, names);
    }
    let _ = writeln!(
        out,
        "  {} of {} kernels without counters",
        c.kernels_without_counters(),
        c.kernels.len()
    );
    if c.unattributed > 0 {
        let _ = writeln!(
            out,
            "  {} not joined to a single kernel launch",
            plural(c.unattributed, "counter record", "counter records")
        );
    }

    if !c.samples.is_empty() {
        out.push_str("\nCounter samples (GPU-wide sampling windows, sum)\n");
        let mut i = 0;
        while i < c.samples.len() {
            let (pid, dev) = (c.samples[i].pid, c.samples[i].device_id);
            let _ = writeln!(out, "  pid {pid}, device {dev}");
            let rows: Vec<(String, String, String)> = c.samples[i..]
                .iter()
                .take_while(|x| x.pid == pid && x.device_id == dev)
                .map(|x| {
                    (
                        x.metric.clone(),
                        value(x.sum),
                        format!("({})", plural(x.samples, "sample", "samples")),
                    )
                })
                .collect();
            i += rows.len();
            metric_rows(out, &rows);
        }
        sampled_table(out, c, kernels, names);
        fitted_table(out, c, kernels, names);
    }
}

/// The shown kernels' metric means, without the metrics that are 0 for every one of
/// them (counted in a line of their own).
fn raw_table(out: &mut String, c: &Counters, kernels: &[KernelStats], names: &Names) {
    out.push_str("\nCounters by kernel (mean per launch)\n");
    if kernels.is_empty() {
        out.push_str("  (no kernels)\n");
    }
    // Metrics some shown kernel has a value other than 0 of, and all of them.
    let mut nonzero: BTreeSet<&str> = BTreeSet::new();
    let mut all: BTreeSet<&str> = BTreeSet::new();
    for kc in kernels.iter().filter_map(|k| c.kernel(&k.mangled)) {
        for m in &kc.metrics {
            all.insert(&m.metric);
            if m.mean != 0.0 {
                nonzero.insert(&m.metric);
            }
        }
    }
    for k in kernels {
        match c.kernel(&k.mangled) {
            Some(kc) if kc.launches_with_counters > 0 => {
                heading(
                    out,
                    &names.of(&k.mangled, &k.name),
                    &format!(
                        ": {} of {} with counters",
                        kc.launches_with_counters,
                        plural(kc.launches, "launch", "launches")
                    ),
                );
                let rows: Vec<(String, String, String)> = kc
                    .metrics
                    .iter()
                    .filter(|m| nonzero.contains(m.metric.as_str()))
                    .map(|m| {
                        (
                            m.metric.clone(),
                            value(m.mean),
                            format!("({})", plural(m.launches, "launch", "launches")),
                        )
                    })
                    .collect();
                metric_rows(out, &rows);
            }
            _ => {
                heading(
                    out,
                    &names.of(&k.mangled, &k.name),
                    &format!(": no counters ({})", plural(k.calls, "launch", "launches")),
                );
            }
        }
    }
    let zero = all.len() - nonzero.len();
    if zero > 0 {
        let _ = writeln!(
            out,
            "  {} left out: 0 for every kernel shown",
            plural(zero as u64, "metric", "metrics")
        );
    }
}

/// A percentage with one decimal, `-` without one.
fn pct_cell(p: &Pct) -> String {
    p.value()
        .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// The percentage columns: header and [`KernelPct::columns`] key.
const PCT_HEADERS: [&str; 5] = [
    "SM active %",
    "tensor pipe %",
    "DRAM %",
    "L2 hit %",
    "occupancy %",
];

/// One row per shown kernel: launches, launches with counters, the percentages of
/// peak and the name cut to the width left; then why figures are unknown.
fn pct_table(out: &mut String, c: &Counters, kernels: &[KernelStats], names: &Names) {
    out.push_str("\nCounters by kernel (% of peak; formulas: gpuprof report --help)\n");
    if kernels.is_empty() {
        out.push_str("  (no kernels)\n");
        return;
    }
    let mut headers = vec!["launches", "measured"];
    headers.extend(PCT_HEADERS);
    // footnote text -> kernels it applies to
    let mut notes: BTreeMap<String, u64> = BTreeMap::new();
    let mut rows: Vec<Vec<String>> = kernels
        .iter()
        .map(|k| {
            let measured = c
                .kernel(&k.mangled)
                .map_or(0, |kc| kc.launches_with_counters);
            let mut row = vec![k.calls.to_string(), measured.to_string()];
            let sampled = c.sampled_pct(&k.mangled).filter(|_| measured == 0);
            let mark = if sampled.is_some() { "~" } else { "" };
            match c.pct(&k.mangled).filter(|_| measured > 0).or(sampled) {
                Some(p) => {
                    for ((_, v), h) in p.columns().into_iter().zip(PCT_HEADERS) {
                        let cell = pct_cell(v);
                        row.push(if cell == "-" { cell } else { cell + mark });
                        if let Pct::Unknown(why) = v {
                            *notes.entry(format!("{h}: {why}")).or_default() += 1;
                        }
                    }
                }
                None => row.extend(PCT_HEADERS.map(|_| "-".to_string())),
            }
            row
        })
        .collect();
    for (row, k) in rows.iter_mut().zip(kernels) {
        row.push(names.of(&k.mangled, &k.name));
    }
    headers.push("kernel");
    if !names.full {
        fit_last_column(&headers, &mut rows);
    }
    let mut right = vec![true; headers.len()];
    right[headers.len() - 1] = false;
    grid(out, &headers, &right, &rows);
    if kernels.iter().any(|k| {
        c.sampled_pct(&k.mangled).is_some()
            && c.kernel(&k.mangled)
                .is_none_or(|kc| kc.launches_with_counters == 0)
    }) {
        out.push_str("  ~: fitted to PM sampling windows (no per-kernel counters)\n");
    }
    for (note, n) in &notes {
        wrapped(
            out,
            "  \"-\" in",
            "    ",
            &format!("{note} ({})", plural(*n, "kernel", "kernels")),
        );
    }
}

fn sampled_rows(metrics: &[crate::analysis::SampledMetric]) -> Vec<(String, String, String)> {
    metrics
        .iter()
        .map(|m| (m.metric.clone(), value(m.value), format!("({})", m.kind)))
        .collect()
}

/// The samples attributed to the shown kernels, then the idle time.
fn sampled_table(out: &mut String, c: &Counters, kernels: &[KernelStats], names: &Names) {
    out.push_str(
        "\nCounter samples by kernel (by overlap time: .sum split, others time-weighted mean)\n",
    );
    for k in kernels {
        if let Some(sk) = c.sampled_kernel(&k.mangled) {
            heading(
                out,
                &names.of(&k.mangled, &k.name),
                &format!(
                    ": from {}, {} µs inside windows",
                    plural(sk.samples, "sample", "samples"),
                    micros(sk.overlap_ns)
                ),
            );
            metric_rows(out, &sampled_rows(&sk.metrics));
        }
    }
    let idle = &c.sample_idle;
    let _ = writeln!(
        out,
        "  idle: {} without kernels; {} of {} µs sampled without kernels",
        plural(idle.windows, "window", "windows"),
        micros(idle.idle_ns),
        micros(idle.sampled_ns)
    );
    metric_rows(out, &sampled_rows(&idle.metrics));
}

/// The fitted rates of the shown kernels' classes: per class its metrics per launch
/// (ratios as they are), the overlap split's figure beside them, and why a metric is
/// not determined.
/// Values show `± 2 standard errors` where the fit computed them.
fn fitted_table(out: &mut String, c: &Counters, kernels: &[KernelStats], names: &Names) {
    if c.fitted.is_empty() {
        return;
    }
    out.push_str(
        "\nCounter samples fitted by kernel class (per launch, ratios as they are; ± 2 \
         standard errors; split: by overlap)\n",
    );
    for k in kernels {
        for f in c.fitted.iter().filter(|f| f.mangled == k.mangled) {
            heading(
                out,
                &names.of(&k.mangled, &k.name),
                &format!(
                    "{}: {}",
                    class_label(f),
                    plural(f.calls, "launch", "launches")
                ),
            );
            metric_rows(out, &fitted_rows(f));
            for m in &f.metrics {
                if let Some(why) = &m.undetermined {
                    let head = format!("    {} not determined:", m.metric);
                    wrapped(out, &head, "      ", why);
                }
            }
        }
    }
    let l = &c.fitted_left_out;
    if l.inconsistent > 0 {
        let _ = writeln!(
            out,
            "  {} left out of the split and the fit: GPU time over its length (the \
             first sample after a PM sampling start)",
            plural(l.inconsistent, "window", "windows")
        );
    }
    for (n, why) in [
        (l.not_finite, "not a finite number"),
        (l.crowded, "too many classes or pairs of classes"),
        (l.metrics, "beyond 64 metrics per device"),
    ] {
        if n > 0 {
            let _ = writeln!(
                out,
                "  {} left out of the fit: {why}",
                plural(n, "window value", "window values")
            );
        }
    }
}

/// " grid G block B [shape]".
fn class_label(f: &FittedClass) -> String {
    let shape = f.shape.as_ref().map_or(String::new(), |s| format!(" {s}"));
    format!(
        " grid {} block {}{shape}",
        crate::analysis::dims(f.grid),
        crate::analysis::dims(f.block)
    )
}

fn fitted_rows(f: &FittedClass) -> Vec<(String, String, String)> {
    f.metrics
        .iter()
        .map(|m| {
            let residual = m
                .residual
                .map_or(String::new(), |r| format!(", residual {:.2} %", r * 100.0));
            let shown = match (m.value, m.std_error) {
                (Some(v), Some(e)) => format!("{} ± {}", value(v), value(2.0 * e)),
                (Some(v), None) => value(v),
                (None, _) => "-".to_string(),
            };
            (
                m.metric.clone(),
                shown,
                format!(
                    "({}, split {}{residual})",
                    plural(m.windows, "window", "windows"),
                    value(m.split)
                ),
            )
        })
        .collect()
}

/// The CSV sections of the fitted rates, when there are any: `sampled_counter_pct`
/// (the `counter_pct` columns, for kernels whose percentages are fitted) and
/// `fitted_counters` (a row per class and metric).
pub(super) fn fitted_csv(out: &mut CsvTables, v: &Value) {
    let sampled: Vec<Value> = pct_rows(&v["counters"], true);
    if !sampled.is_empty() {
        out.table("sampled_counter_pct", &PCT_COLUMNS, sampled);
    }
    let rows: Vec<Value> = v["counters"]["fitted"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| {
            let metrics = f["metrics"].as_array().cloned().unwrap_or_default();
            metrics.into_iter().map(move |m| {
                let mut row = f.clone();
                for field in FITTED_METRIC_FIELDS {
                    row[field] = m[field].clone();
                }
                row["grid"] = json!(dims_of(&f["grid"]));
                row["block"] = json!(dims_of(&f["block"]));
                row
            })
        })
        .collect();
    if !rows.is_empty() {
        out.table("fitted_counters", &fitted_columns(), rows);
    }
}

/// A JSON `[x, y, z]` as "xXyXz" (as the table writes dimensions).
fn dims_of(v: &Value) -> String {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

const FITTED_METRIC_FIELDS: [&str; 9] = [
    "metric",
    "kind",
    "windows",
    "overlap_ns",
    "value",
    "std_error",
    "split",
    "residual",
    "undetermined",
];

/// The CSV `fitted_counters` columns: the class, then [`FITTED_METRIC_FIELDS`].
fn fitted_columns() -> Vec<&'static str> {
    let class = [
        "pid",
        "device_id",
        "name",
        "mangled",
        "grid",
        "block",
        "shape",
        "calls",
        "gpu_ns",
    ];
    [&class[..], &FITTED_METRIC_FIELDS].concat()
}

/// The `counters` object: plans, statuses, the shown kernels' merged metrics (kernels
/// without counters have `launches_with_counters` 0 and no metrics), samples.
pub(super) fn counters_json(s: &Summary, top: Option<usize>) -> Value {
    let c = &s.counters;
    let plans: Vec<Value> = c
        .plans
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "device_id": p.device_id,
                "chip": p.chip,
                "mode": p.mode,
                "policy": p.policy,
                "groups": p.groups,
            })
        })
        .collect();
    let statuses: Vec<Value> = c
        .statuses
        .iter()
        .map(|st| json!({"pid": st.pid, "message": st.message}))
        .collect();
    let kernels: Vec<Value> = shown(&s.kernels, top)
        .iter()
        .map(|k| {
            let kc = c.kernel(&k.mangled);
            let metrics: Vec<Value> = kc
                .map(|kc| {
                    kc.metrics
                        .iter()
                        .map(|m| {
                            json!({
                                "metric": m.metric,
                                "launches": m.launches,
                                "mean": m.mean,
                                "sum": m.sum,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut row = json!({
                "mangled": k.mangled,
                "name": k.name,
                "launches": k.calls,
                "launches_with_counters": kc.map_or(0, |kc| kc.launches_with_counters),
                "metrics": metrics,
            });
            let measured = c.pct(&k.mangled).filter(|_| !metrics_empty(kc));
            let sampled = c.sampled_pct(&k.mangled).filter(|_| metrics_empty(kc));
            if let Some(p) = measured.or(sampled) {
                let (pct, unknown) = pct_json(p);
                row["pct"] = pct;
                if !unknown.is_empty() {
                    row["pct_unknown"] = json!(unknown);
                }
                if sampled.is_some() {
                    row["pct_source"] = json!("sampled");
                }
            }
            if !c.samples.is_empty() {
                let sk = c.sampled_kernel(&k.mangled);
                row["sample_count"] = json!(sk.map_or(0, |sk| sk.samples));
                row["sample_time_ns"] = json!(sk.map_or(0, |sk| sk.overlap_ns));
                row["sample_metrics"] = json!(sk.map_or(&[][..], |sk| &sk.metrics[..]));
            }
            row
        })
        .collect();
    let samples: Vec<Value> = c
        .samples
        .iter()
        .map(|x| {
            json!({
                "pid": x.pid,
                "device_id": x.device_id,
                "metric": x.metric,
                "samples": x.samples,
                "sum": x.sum,
            })
        })
        .collect();
    let mut out = json!({
        "plans": plans,
        "statuses": statuses,
        "kernels": kernels,
        "kernels_without_counters": c.kernels_without_counters(),
        "unattributed": c.unattributed,
        "samples": samples,
    });
    if !c.samples.is_empty() {
        out["sample_idle"] = json!(c.sample_idle);
    }
    if !c.fitted.is_empty() {
        out["fitted"] = json!(c.fitted);
        out["fitted_left_out"] = json!(c.fitted_left_out);
    }
    out
}

fn metrics_empty(kc: Option<&crate::analysis::KernelCounterStats>) -> bool {
    kc.is_none_or(|kc| kc.metrics.is_empty())
}

/// A kernel's percentages rounded to two decimals (`null` where unknown), and why
/// each unknown one is.
fn pct_json(p: &KernelPct) -> (Value, BTreeMap<&'static str, String>) {
    let mut values = serde_json::Map::new();
    let mut unknown = BTreeMap::new();
    for (key, v) in p.columns() {
        values.insert(
            key.to_string(),
            json!(v.value().map(|v| (v * 100.0).round() / 100.0)),
        );
        if let Pct::Unknown(why) = v {
            unknown.insert(key, why.clone());
        }
    }
    (Value::Object(values), unknown)
}

/// The CSV's `counter_pct` rows: one per kernel of the JSON `counters.kernels` with
/// counters, its `pct` values as `<key>_pct` columns; with `sampled`, the kernels
/// whose percentages were fitted to sampling windows instead.
pub(super) fn pct_rows(counters: &Value, sampled: bool) -> Vec<Value> {
    counters["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k.get("pct").is_some())
        .filter(|k| (k["pct_source"] == "sampled") == sampled)
        .map(|k| {
            let mut row = json!({
                "name": k["name"],
                "mangled": k["mangled"],
                "launches": k["launches"],
                "launches_with_counters": k["launches_with_counters"],
            });
            if let Some(p) = k["pct"].as_object() {
                for (key, v) in p {
                    row[format!("{key}_pct")] = v.clone();
                }
            }
            row
        })
        .collect()
}

pub(super) const PCT_COLUMNS: [&str; 9] = [
    "name",
    "mangled",
    "launches",
    "launches_with_counters",
    "sm_active_pct",
    "tensor_pipe_pct",
    "dram_throughput_pct",
    "l2_hit_rate_pct",
    "achieved_occupancy_pct",
];

pub(super) const PLAN_COLUMNS: [&str; 7] = [
    "pid",
    "device_id",
    "chip",
    "mode",
    "policy",
    "group",
    "metric",
];
pub(super) const KERNEL_COUNTER_COLUMNS: [&str; 7] = [
    "name",
    "mangled",
    "launches_with_counters",
    "metric",
    "launches",
    "mean",
    "sum",
];
pub(super) const SAMPLE_COLUMNS: [&str; 5] = ["pid", "device_id", "metric", "samples", "sum"];
pub(super) const SAMPLED_COLUMNS: [&str; 7] = [
    "name", "mangled", "samples", "time_ns", "metric", "kind", "value",
];
