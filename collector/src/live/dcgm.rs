//! The DCGM profiling fields of each GPU over the last window, from per-kernel
//! counters ([`cupti::metrics::DCGM_FIELDS`]: which CUPTI metric each field comes
//! from; `GPUPROF_METRICS=dcgm` collects exactly those).
//!
//! The window is one live update: the kernels finalized since the previous one
//! ([`super::Live`]). For a GPU (by UUID) it spans from the first start to the last
//! end of those kernels on that GPU, `span`; `busy` is their GPU time. Each launch
//! takes its class's mean of the metric (a class: kernel name, launch configuration,
//! GEMM shape; [`crate::analysis::classes`]), so launches the counter policy did not
//! measure count with the measured ones of their class; classes never measured are
//! left out of the mean. Then:
//!
//! - a ratio field (`.pct_of_peak_sustained_elapsed` metric) is the time-weighted
//!   mean over the window's kernels, / 100, times `min(1, busy / span)`: the share
//!   of the window the unit was active, 0 to 1 as dcgm-exporter reports it;
//! - a byte field (`.sum` metric) is the mean bytes per launch times the window's
//!   launches, / `span` in seconds: bytes per second, as DCGM reports PCIe and
//!   NVLink traffic.
//!
//! A window without kernels on a GPU gives 0 for every field it has measured; a
//! field whose metric was never measured on a GPU is not shown for it.
//!
//! Under PM sampling (`GPUPROF_COUNTERS=sampling`) the fields come from the sampling
//! windows received in the update instead ([`sampled_fields`]): GPU-wide values,
//! idle time included, as DCGM's are. A ratio is the windows' time-weighted mean of
//! the metric / 100; a byte rate is the windows' bytes over the time from the first
//! window's start to the last one's end. An update without windows (the sampler
//! has stopped) keeps the last values.

use std::collections::BTreeMap;

use ahash::AHashMap;
use cupti::metrics::{DcgmField, DCGM_FIELDS};
use wire::CounterSample;

use crate::analysis::aggregate::Aggregate;

/// The GPU time and launches of each class at the previous update.
#[derive(Debug, Default)]
pub struct Window {
    prev: Vec<(u64, u64)>,
}

/// Per field: (Σ mean × Δns, Σ Δns, Σ mean × Δcalls, Σ Δcalls) over measured classes,
/// and whether the field was ever measured on the GPU.
#[derive(Debug, Default, Clone, Copy)]
struct FieldAcc {
    weighted: f64,
    ns: u64,
    per_launch: f64,
    calls: u64,
    measured: bool,
}

#[derive(Debug, Default)]
struct GpuAcc {
    busy_ns: u64,
    calls: u64,
    span: Option<(u64, u64)>,
    fields: Vec<FieldAcc>,
}

/// Whether `field` is a ratio (percent of elapsed time) rather than a byte count.
pub fn is_ratio(field: &DcgmField) -> bool {
    field.metric.ends_with(".pct_of_peak_sustained_elapsed")
}

impl Window {
    /// The fields of each GPU (by UUID) over the kernels finalized since the last
    /// call; `spans` are their first start and last end per (pid, device).
    pub fn fields(
        &mut self,
        a: &Aggregate,
        spans: &AHashMap<(u32, u32), (u64, u64)>,
        uuid_of: impl Fn(u32, u32) -> Option<String>,
    ) -> BTreeMap<String, Vec<(&'static str, f64)>> {
        let ids: Vec<Option<u32>> = DCGM_FIELDS
            .iter()
            .map(|f| a.metrics.find(f.metric))
            .collect();
        let mut gpus: BTreeMap<String, GpuAcc> = BTreeMap::new();
        let classes = &a.classes.list;
        self.prev.resize(classes.len(), (0, 0));
        for (c, prev) in classes.iter().zip(self.prev.iter_mut()) {
            let Some(uuid) = uuid_of(c.key.pid, c.key.device_id) else {
                continue;
            };
            let d_ns = c.tally.ns.saturating_sub(prev.0);
            let d_calls = c.tally.calls.saturating_sub(prev.1);
            *prev = (c.tally.ns, c.tally.calls);
            let g = gpus.entry(uuid).or_default();
            g.fields.resize(DCGM_FIELDS.len(), FieldAcc::default());
            g.busy_ns = g.busy_ns.saturating_add(d_ns);
            g.calls += d_calls;
            for (acc, id) in g.fields.iter_mut().zip(&ids) {
                let Some((n, sum)) = id.and_then(|id| c.metrics.get(&id)) else {
                    continue;
                };
                if *n == 0 {
                    continue;
                }
                let mean = sum / *n as f64;
                acc.measured = true;
                acc.weighted += mean * d_ns as f64;
                acc.ns += d_ns;
                acc.per_launch += mean * d_calls as f64;
                acc.calls += d_calls;
            }
        }
        for ((pid, device), (start, end)) in spans {
            let Some(uuid) = uuid_of(*pid, *device) else {
                continue;
            };
            let g = gpus.entry(uuid).or_default();
            g.span = Some(match g.span {
                None => (*start, *end),
                Some((s, e)) => (s.min(*start), e.max(*end)),
            });
        }
        gpus.into_iter()
            .map(|(uuid, g)| {
                let span_ns = g.span.map_or(0, |(s, e)| e.saturating_sub(s));
                let values = DCGM_FIELDS
                    .iter()
                    .zip(&g.fields)
                    .filter(|(_, acc)| acc.measured)
                    .map(|(f, acc)| (f.name, value(f, acc, g.busy_ns, g.calls, span_ns)))
                    .collect();
                (uuid, values)
            })
            .collect()
    }
}

/// One field's value over a window of `span_ns` with `busy_ns` of kernels.
fn value(field: &DcgmField, acc: &FieldAcc, busy_ns: u64, calls: u64, span_ns: u64) -> f64 {
    if span_ns == 0 || busy_ns == 0 {
        return 0.0;
    }
    if is_ratio(field) {
        if acc.ns == 0 {
            return 0.0;
        }
        let mean = acc.weighted / acc.ns as f64 / 100.0;
        let busy = (busy_ns as f64 / span_ns as f64).min(1.0);
        (mean * busy).clamp(0.0, 1.0)
    } else {
        if acc.calls == 0 {
            return 0.0;
        }
        let bytes = acc.per_launch / acc.calls as f64 * calls as f64;
        bytes / (span_ns as f64 / 1e9)
    }
}

/// One GPU's windows of an update: per field (Σ value x ns for a ratio or Σ value for
/// bytes, Σ ns, seen), and the windows' first start and last end.
type SampledGpu = (Vec<(f64, u64, bool)>, u64, u64);

/// The fields of each GPU (by UUID) from PM sampling windows `samples` (pid, window)
/// of one update; metric names are the processes' interned strings of `a`.
pub fn sampled_fields(
    a: &Aggregate,
    samples: &[(u32, CounterSample)],
    uuid_of: impl Fn(u32, u32) -> Option<String>,
) -> BTreeMap<String, Vec<(&'static str, f64)>> {
    let mut gpus: BTreeMap<String, SampledGpu> = BTreeMap::new();
    for (pid, w) in samples {
        let Some(uuid) = uuid_of(*pid, w.device_id) else {
            continue;
        };
        let ns = w.end_ns.saturating_sub(w.start_ns);
        let g = gpus
            .entry(uuid)
            .or_insert_with(|| (vec![(0.0, 0, false); DCGM_FIELDS.len()], u64::MAX, 0));
        g.1 = g.1.min(w.start_ns);
        g.2 = g.2.max(w.end_ns);
        for m in &w.metrics {
            let Some(name) = a.string(*pid, m.name) else {
                continue;
            };
            let Some(i) = DCGM_FIELDS.iter().position(|f| f.metric == name) else {
                continue;
            };
            let acc = &mut g.0[i];
            if is_ratio(&DCGM_FIELDS[i]) {
                acc.0 += m.value * ns as f64;
                acc.1 += ns;
            } else {
                acc.0 += m.value;
            }
            acc.2 = true;
        }
    }
    gpus.into_iter()
        .map(|(uuid, (accs, start, end))| {
            let span_ns = end.saturating_sub(start);
            let values = DCGM_FIELDS
                .iter()
                .zip(accs)
                .filter(|(_, acc)| acc.2)
                .map(|(f, (sum, ns, _))| {
                    let v = if is_ratio(f) {
                        if ns == 0 {
                            0.0
                        } else {
                            (sum / ns as f64 / 100.0).clamp(0.0, 1.0)
                        }
                    } else if span_ns == 0 {
                        0.0
                    } else {
                        sum / (span_ns as f64 / 1e9)
                    };
                    (f.name, v)
                })
                .collect();
            (uuid, values)
        })
        .collect()
}
