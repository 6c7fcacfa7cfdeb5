//! The counters sections of the report: the table's `Counters`, `Counters by kernel`,
//! `Counter samples` and `Counter samples by kernel`, the JSON `counters` object and
//! the columns of the CSV counter sections.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::{micros, plural, shown, value};
use crate::analysis::{Counters, KernelStats, Summary};

/// Metric rows: name padded, value right-aligned, then a note; indented by four.
fn metric_rows(out: &mut String, rows: &[(String, String, String)]) {
    let name_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let value_w = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    // Padded by hand: a format width above u16::MAX panics, and a metric name in a
    // session file can be that long.
    let pad = |n: usize| " ".repeat(n);
    for (name, v, note) in rows {
        let (name_pad, value_pad) = (
            pad(name_w - name.chars().count()),
            pad(value_w - v.chars().count()),
        );
        let _ = writeln!(out, "    {name}{name_pad}  {value_pad}{v} {note}");
    }
}

/// The table's counter section: per process the plan or status, per shown kernel the
/// metric means, and the sampling windows.
pub(super) fn counters_table(out: &mut String, s: &Summary, kernels: &[KernelStats]) {
    let c: &Counters = &s.counters;
    out.push_str("\nCounters\n");
    for p in &s.processes {
        for plan in c.plans.iter().filter(|x| x.pid == p.pid) {
            let _ = writeln!(
                out,
                "  pid {}, device {}: chip {}, {} mode; {}",
                plan.pid, plan.device_id, plan.chip, plan.mode, plan.policy
            );
            for (i, g) in plan.groups.iter().enumerate() {
                let _ = writeln!(out, "    group {i}: {}", g.join(", "));
            }
        }
        for st in c.statuses.iter().filter(|x| x.pid == p.pid) {
            let _ = writeln!(out, "  pid {}: {}", st.pid, st.message);
        }
    }

    out.push_str("\nCounters by kernel (mean per launch)\n");
    if kernels.is_empty() {
        out.push_str("  (no kernels)\n");
    }
    for k in kernels {
        match c.kernel(&k.mangled) {
            Some(kc) if kc.launches_with_counters > 0 => {
                let _ = writeln!(
                    out,
                    "  {}: {} of {} with counters",
                    k.name,
                    kc.launches_with_counters,
                    plural(kc.launches, "launch", "launches")
                );
                let rows: Vec<(String, String, String)> = kc
                    .metrics
                    .iter()
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
                let _ = writeln!(
                    out,
                    "  {}: no counters ({})",
                    k.name,
                    plural(k.calls, "launch", "launches")
                );
            }
        }
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
        sampled_table(out, c, kernels);
    }
}

fn sampled_rows(metrics: &[crate::analysis::SampledMetric]) -> Vec<(String, String, String)> {
    metrics
        .iter()
        .map(|m| (m.metric.clone(), value(m.value), format!("({})", m.kind)))
        .collect()
}

/// The samples attributed to the shown kernels, then the idle time.
fn sampled_table(out: &mut String, c: &Counters, kernels: &[KernelStats]) {
    out.push_str(
        "\nCounter samples by kernel (by overlap time: .sum split, others time-weighted mean)\n",
    );
    for k in kernels {
        if let Some(sk) = c.sampled_kernel(&k.mangled) {
            let _ = writeln!(
                out,
                "  {}: from {}, {} µs inside windows",
                k.name,
                plural(sk.samples, "sample", "samples"),
                micros(sk.overlap_ns)
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
    out
}

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
