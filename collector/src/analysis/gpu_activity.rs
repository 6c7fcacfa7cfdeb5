//! DCGM's profiling fields over the whole run, per GPU, as DCGM defines them:
//! GPU-wide and over wall-clock time, idle time included ("The value represents an
//! average over a time interval": a kernel using every SM for a fifth of the
//! interval is an SM activity of 0.2).
//!
//! The interval is the GPU's span in the session: from its earliest kernel start to
//! its latest kernel end, over every process on it. Each kernel adds its class's mean
//! of the field's metric over its own time (a class: kernel name, launch
//! configuration, GEMM shape; the counter policy measures some launches of each): a
//! ratio field (`.pct_of_peak_sustained_elapsed`) as a fraction of that time, a byte
//! field (`.sum`) as the class's bytes per launch. The field is that sum over the
//! span: a fraction, or bytes per second.
//!
//! Kernel time of a class with no value of the metric is not counted as 0: it is
//! left out and its share is given (`valued_ns` of `kernel_ns`), so a reader sees the
//! figure is a lower bound. `record --serve` publishes the same sums bin by bin
//! (`crate::analysis::live::dcgm`), so its series averaged over the run equal these values.

use std::collections::BTreeMap;

use cupti::metrics::{DcgmField, DCGM_FIELDS};
use serde::Serialize;

use super::aggregate::Aggregate;
use super::classes::Class;
use super::names::gpu_uuid;

/// Whether `field` is a ratio (percent of elapsed time) rather than a byte count.
pub fn is_ratio(field: &DcgmField) -> bool {
    field.metric.ends_with(".pct_of_peak_sustained_elapsed")
}

/// A class's value of `field` per ns of its GPU time: a fraction of elapsed time for
/// a ratio, bytes per ns for bytes; `None` before any launch of it measured the metric.
pub fn class_rate(a: &Aggregate, c: &Class, field: &DcgmField) -> Option<f64> {
    let id = a.metrics.find(field.metric)?;
    let (n, sum) = c.metrics.get(&id)?;
    if *n == 0 {
        return None;
    }
    let mean = sum / *n as f64;
    if is_ratio(field) {
        Some((mean / 100.0).clamp(0.0, 1.0))
    } else if c.tally.ns > 0 && c.tally.calls > 0 {
        Some(mean / (c.tally.ns as f64 / c.tally.calls as f64))
    } else {
        None
    }
}

/// One DCGM field of one GPU over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActivityField {
    /// dcgm-exporter's name.
    pub field: &'static str,
    pub metric: &'static str,
    /// A ratio 0..1, or bytes per second, over the GPU's span.
    pub value: f64,
    /// Kernel time on the GPU whose class has a value of the metric, ns.
    pub valued_ns: u64,
}

/// One GPU's DCGM fields over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuActivity {
    pub uuid: String,
    /// The CUDA device ordinal of the first process seen on it.
    pub index: u32,
    pub name: String,
    /// Earliest kernel start and latest kernel end, ns of the session's clock.
    pub first_ns: u64,
    pub last_ns: u64,
    /// Kernel time on the GPU, ns.
    pub kernel_ns: u64,
    /// The fields whose metric some class on the GPU measured, in
    /// [`DCGM_FIELDS`]'s order.
    pub fields: Vec<ActivityField>,
}

impl GpuActivity {
    /// The wall-clock span the fields are averaged over, ns.
    pub fn span_ns(&self) -> u64 {
        self.last_ns.saturating_sub(self.first_ns)
    }
}

/// Every GPU with timed kernels (by UUID, in UUID order) and its DCGM fields.
pub fn gpu_activity(a: &Aggregate) -> Vec<GpuActivity> {
    let mut gpus: BTreeMap<String, GpuActivity> = BTreeMap::new();
    let mut spans: Vec<((u32, u32), (u64, u64))> =
        a.kernel_spans.iter().map(|(k, s)| (*k, *s)).collect();
    spans.sort_unstable();
    for (key, (first, last)) in spans {
        let Some(d) = a.devices.get(&key) else {
            continue;
        };
        let g = gpus
            .entry(gpu_uuid(&d.uuid))
            .or_insert_with(|| GpuActivity {
                uuid: gpu_uuid(&d.uuid),
                index: d.id,
                name: d.name.trim().to_string(),
                first_ns: first,
                last_ns: last,
                kernel_ns: 0,
                fields: Vec::new(),
            });
        g.first_ns = g.first_ns.min(first);
        g.last_ns = g.last_ns.max(last);
    }
    // Per GPU and field: (sum of value x ns, valued ns).
    let mut sums: BTreeMap<(String, usize), (f64, u64)> = BTreeMap::new();
    for c in &a.classes.list {
        let Some(d) = a.devices.get(&(c.key.pid, c.key.device_id)) else {
            continue;
        };
        let uuid = gpu_uuid(&d.uuid);
        let Some(g) = gpus.get_mut(&uuid) else {
            continue;
        };
        g.kernel_ns = g.kernel_ns.saturating_add(c.tally.ns);
        for (i, f) in DCGM_FIELDS.iter().enumerate() {
            if let Some(r) = class_rate(a, c, f) {
                let e = sums.entry((uuid.clone(), i)).or_default();
                e.0 += r * c.tally.ns as f64;
                e.1 = e.1.saturating_add(c.tally.ns);
            }
        }
    }
    for ((uuid, i), (sum, valued_ns)) in sums {
        let g = gpus.get_mut(&uuid).expect("summed for a GPU listed");
        let span = g.span_ns();
        if span == 0 {
            continue;
        }
        let f = &DCGM_FIELDS[i];
        let value = if is_ratio(f) {
            (sum / span as f64).clamp(0.0, 1.0)
        } else {
            sum / (span as f64 / 1e9)
        };
        g.fields.push(ActivityField {
            field: f.name,
            metric: f.metric,
            value,
            valued_ns,
        });
    }
    gpus.into_values().collect()
}

#[cfg(test)]
#[path = "gpu_activity_tests.rs"]
mod tests;
