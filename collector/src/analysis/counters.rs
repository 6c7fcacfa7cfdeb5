//! Hardware counters: the plan and status of each process, kernel counters merged per
//! kernel, and PM sampling windows summed per metric and attributed to the kernels that
//! ran during them (by overlap time, see [`super::sampled`]).
//!
//! Kernel counters come one pass group per launch: successive launches of the same
//! kernel (name + launch configuration) rotate through the groups (docs/ARCHITECTURE.md,
//! "Counters"), so one launch carries only some of the metrics. [`counters`] joins each
//! `KernelCounters` record to the `Kernel` record with the same (pid, correlation id)
//! and merges what the launches of a kernel brought, metric by metric: every metric
//! says how many launches its value came from, and its mean is per such launch.
//!
//! Metric names are interned per process and resolved to text, so the same metric
//! from different processes (or different pass groups) merges into one entry.

use std::collections::BTreeMap;

use serde::Serialize;
use wire::Record;

use super::aggregate::{aggregate, Aggregate};
pub use super::aggregate::{PlanSummary, StatusSummary};
use super::counter_pct::{counter_pct, KernelPct, Means};
use super::deconvolve::LeftOut;
use super::fitted::{fitted_classes, fitted_pct, FittedClass};
use super::names::demangle;
use super::sampled::{SampleIdle, SampledKernel};
use crate::analysis::roofline::peaks::Overrides;

/// Everything the report's counter section shows.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Counters {
    /// `CounterPlan` records in file order.
    pub plans: Vec<PlanSummary>,
    /// `CounterStatus` records in file order, messages verbatim.
    pub statuses: Vec<StatusSummary>,
    /// Per kernel name (as recorded), every kernel of the session, by mangled name;
    /// kernels that had no counters have `launches_with_counters == 0` and no metrics.
    pub kernels: Vec<KernelCounterStats>,
    /// The percentages of peak of each of [`Counters::kernels`], same order (see
    /// [`super::counter_pct`]): with the built-in peaks from [`counters_of`]; whoever
    /// has the user's peaks file recomputes them with [`pct_of`].
    pub pct: Vec<KernelPct>,
    /// Per kernel key (name + grid + block), by mangled name then grid then block.
    pub configs: Vec<ConfigCounterStats>,
    /// PM sampling windows: per (pid, device, metric), by pid, device, metric name.
    pub samples: Vec<SampleStats>,
    /// The sampling windows attributed to kernel names (by mangled name), only kernels
    /// that overlapped a window; empty without samples.
    pub sampled: Vec<SampledKernel>,
    /// The sampled time and values with no kernel running.
    pub sample_idle: SampleIdle,
    /// The rates fitted to the sampling windows, per kernel class (see
    /// [`super::fitted`]); empty without samples.
    pub fitted: Vec<FittedClass>,
    /// The percentages of peak of the kernels without per-kernel counters, from the
    /// fitted rates, by mangled name: with the built-in peaks, as [`Counters::pct`].
    pub fitted_pct: Vec<KernelPct>,
    /// Window values the fits left out, and why.
    pub fitted_left_out: LeftOut,
    /// `KernelCounters` records that could not be joined to a kernel: no `Kernel`
    /// record with their (pid, correlation id), or, for a graph launch (whose kernels
    /// share its correlation id), none at their range's place in its order.
    pub unattributed: u64,
}

impl Counters {
    /// Whether the session holds any counter record at all. Without any, the report
    /// has no counter section.
    pub fn any(&self) -> bool {
        !self.plans.is_empty()
            || !self.statuses.is_empty()
            || !self.samples.is_empty()
            || self.unattributed > 0
            || self.kernels.iter().any(|k| k.launches_with_counters > 0)
    }

    /// The counters of the kernel whose recorded name is `mangled`.
    pub fn kernel(&self, mangled: &str) -> Option<&KernelCounterStats> {
        self.kernels
            .binary_search_by(|k| k.mangled.as_str().cmp(mangled))
            .ok()
            .map(|i| &self.kernels[i])
    }

    /// The percentages of peak of the kernel whose recorded name is `mangled`.
    pub fn pct(&self, mangled: &str) -> Option<&KernelPct> {
        self.pct
            .binary_search_by(|k| k.mangled.as_str().cmp(mangled))
            .ok()
            .map(|i| &self.pct[i])
    }

    /// The percentages of peak fitted to the sampling windows of the kernel whose
    /// recorded name is `mangled` (one without per-kernel counters).
    pub fn sampled_pct(&self, mangled: &str) -> Option<&KernelPct> {
        self.fitted_pct
            .binary_search_by(|k| k.mangled.as_str().cmp(mangled))
            .ok()
            .map(|i| &self.fitted_pct[i])
    }

    /// The sample values attributed to the kernel whose recorded name is `mangled`.
    pub fn sampled_kernel(&self, mangled: &str) -> Option<&SampledKernel> {
        self.sampled
            .binary_search_by(|k| k.mangled.as_str().cmp(mangled))
            .ok()
            .map(|i| &self.sampled[i])
    }

    /// Kernels (by name) of the session without any counters.
    pub fn kernels_without_counters(&self) -> usize {
        self.kernels
            .iter()
            .filter(|k| k.launches_with_counters == 0)
            .count()
    }
}

/// One metric merged over the launches that measured it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricStats {
    pub metric: String,
    /// Launches whose counters carried this metric.
    pub launches: u64,
    pub sum: f64,
    /// `sum / launches`.
    pub mean: f64,
}

/// The counters of every launch of one kernel name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelCounterStats {
    /// Demangled (see [`demangle`]).
    pub name: String,
    /// As recorded.
    pub mangled: String,
    /// Kernel launches (records) of this name.
    pub launches: u64,
    /// Of these, launches with at least one `KernelCounters` record.
    pub launches_with_counters: u64,
    /// By metric name.
    pub metrics: Vec<MetricStats>,
}

/// The counters of every launch of one kernel key (name + launch configuration).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigCounterStats {
    pub mangled: String,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub launches: u64,
    pub launches_with_counters: u64,
    /// By metric name.
    pub metrics: Vec<MetricStats>,
}

/// One metric over the PM sampling windows of one device of one process.
///
/// Samples are GPU-wide; [`Counters::sampled`] attributes them to the kernels running
/// during each window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleStats {
    pub pid: u32,
    pub device_id: u32,
    pub metric: String,
    /// Sampling windows that carried this metric.
    pub samples: u64,
    pub sum: f64,
}

#[derive(Default)]
struct Acc {
    launches: u64,
    with_counters: u64,
    /// metric -> (launches, sum)
    metrics: BTreeMap<String, (u64, f64)>,
}

impl Acc {
    fn metrics(&self) -> Vec<MetricStats> {
        self.metrics
            .iter()
            .map(|(metric, &(launches, sum))| MetricStats {
                metric: metric.clone(),
                launches,
                sum,
                mean: sum / launches as f64,
            })
            .collect()
    }
}

/// The percentages of peak of `kernels` (see [`super::counter_pct`]) with the peaks
/// of `overrides` (or the built-in ones).
pub fn pct_of(
    a: &Aggregate,
    kernels: &[KernelCounterStats],
    overrides: &Overrides,
) -> Vec<KernelPct> {
    let means: Vec<(&str, Means)> = kernels
        .iter()
        .map(|k| {
            (
                k.mangled.as_str(),
                k.metrics
                    .iter()
                    .map(|m| (m.metric.as_str(), m.mean))
                    .collect(),
            )
        })
        .collect();
    counter_pct(a, &means, overrides)
}

/// Builds the counter summary of `records`, read as one part.
pub fn counters(records: &[(u32, Record)]) -> Counters {
    counters_of(&aggregate(records))
}

/// Builds the counter summary from a session's aggregate.
pub fn counters_of(a: &Aggregate) -> Counters {
    let mut by_name: BTreeMap<&str, Acc> = BTreeMap::new();
    let mut by_key: BTreeMap<(&str, [i32; 3], [i32; 3]), Acc> = BTreeMap::new();
    for c in &a.classes.list {
        let name = c.mangled.as_str();
        for acc in [
            by_name.entry(name).or_default(),
            by_key.entry((name, c.key.grid, c.key.block)).or_default(),
        ] {
            acc.launches += c.tally.calls;
            acc.with_counters += c.with_counters;
            for (m, (n, sum)) in &c.metrics {
                let e = acc
                    .metrics
                    .entry(a.metrics.name(*m).to_string())
                    .or_default();
                e.0 += n;
                e.1 += sum;
            }
        }
    }
    let kernels: Vec<KernelCounterStats> = by_name
        .iter()
        .map(|(mangled, acc)| KernelCounterStats {
            name: if mangled.is_empty() {
                "(unnamed)".to_string()
            } else {
                demangle(mangled)
            },
            mangled: mangled.to_string(),
            launches: acc.launches,
            launches_with_counters: acc.with_counters,
            metrics: acc.metrics(),
        })
        .collect();
    Counters {
        plans: a.plans.clone(),
        statuses: a.counter_statuses.clone(),
        pct: pct_of(a, &kernels, &Overrides::default()),
        kernels,
        configs: by_key
            .iter()
            .map(|((mangled, grid, block), acc)| ConfigCounterStats {
                mangled: mangled.to_string(),
                grid: *grid,
                block: *block,
                launches: acc.launches,
                launches_with_counters: acc.with_counters,
                metrics: acc.metrics(),
            })
            .collect(),
        samples: a
            .samples
            .iter()
            .map(|((pid, device_id, metric), &(samples, sum))| SampleStats {
                pid: a.pid(*pid),
                device_id: *device_id,
                metric: metric.clone(),
                samples,
                sum,
            })
            .collect(),
        sampled: a
            .sampled
            .as_ref()
            .map(|s| s.kernels.clone())
            .unwrap_or_default(),
        sample_idle: a
            .sampled
            .as_ref()
            .map(|s| s.idle.clone())
            .unwrap_or_default(),
        fitted: fitted_classes(a),
        fitted_left_out: a.fitted.as_ref().map(|f| f.left_out).unwrap_or_default(),
        fitted_pct: fitted_pct(a, &Overrides::default()),
        unattributed: a.counters_unattributed,
    }
}
