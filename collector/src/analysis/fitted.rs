//! The rates fitted to PM sampling windows ([`super::deconvolve`]) as the report shows
//! them: per kernel class, each metric per launch (amounts) or as the class's value
//! (ratios), with its support, the fit's residual and, when there is none, why; and per
//! kernel name without per-kernel counters, the metric means the percentages of peak
//! ([`super::counter_pct`]) are made from.

use std::collections::BTreeMap;

use serde::Serialize;

use super::aggregate::Aggregate;
use super::classes::Class;
use super::counter_pct::{counter_pct, KernelPct, GPU_TIME};
use super::deconvolve::{ClassFit, MetricFit, MetricKind};
use super::names::demangle;
use crate::analysis::roofline::peaks::Overrides;

/// One metric of one class, fitted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FittedValue {
    pub metric: String,
    pub kind: MetricKind,
    /// Windows the class ran in, and its kernel time inside them.
    pub windows: u64,
    pub overlap_ns: u64,
    /// Per launch for an amount (rate × mean duration), the class's value for a ratio;
    /// `None` when not determined.
    pub value: Option<f64>,
    /// The value's standard error, the same way (`None` when not computed: fits of
    /// over 256 classes, or no value).
    pub std_error: Option<f64>,
    /// What the overlap split gives, the same way (per launch, or the value).
    pub split: f64,
    /// The fit's RMS misfit relative to the RMS amount (of the whole metric).
    pub residual: Option<f64>,
    /// Why there is no value.
    pub undetermined: Option<String>,
}

/// The fitted metrics of one kernel class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FittedClass {
    pub pid: u32,
    pub device_id: u32,
    /// Demangled, and as recorded.
    pub name: String,
    pub mangled: String,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    /// The GEMM shape's label, for a GEMM's launches.
    pub shape: Option<String>,
    pub calls: u64,
    pub gpu_ns: u64,
    /// By metric name.
    pub metrics: Vec<FittedValue>,
}

/// Every class with fitted metrics, in class order.
pub fn fitted_classes(a: &Aggregate) -> Vec<FittedClass> {
    let Some(fitted) = &a.fitted else {
        return Vec::new();
    };
    let mut by_class: BTreeMap<usize, Vec<FittedValue>> = BTreeMap::new();
    for f in &fitted.fits {
        for c in &f.classes {
            if let Some(class) = a.classes.list.get(c.class) {
                let value = fitted_value(a, f, c, class);
                by_class.entry(c.class).or_default().push(value);
            }
        }
    }
    by_class
        .into_iter()
        .filter_map(|(i, metrics)| {
            let c = a.classes.list.get(i)?;
            Some(FittedClass {
                pid: a.pid(c.key.pid),
                device_id: c.key.device_id,
                name: name_of(c),
                mangled: c.mangled.clone(),
                grid: c.key.grid,
                block: c.key.block,
                shape: c.key.gemm.as_ref().map(|g| g.shape.label()),
                calls: c.tally.calls,
                gpu_ns: c.tally.ns,
                metrics,
            })
        })
        .collect()
}

fn name_of(c: &Class) -> String {
    if c.mangled.is_empty() {
        "(unnamed)".to_string()
    } else {
        demangle(&c.mangled)
    }
}

/// A class's mean duration, ns (0 without launches).
fn mean_ns(c: &Class) -> f64 {
    if c.tally.calls == 0 {
        0.0
    } else {
        c.tally.ns as f64 / c.tally.calls as f64
    }
}

fn fitted_value(a: &Aggregate, f: &MetricFit, c: &ClassFit, class: &Class) -> FittedValue {
    let per_launch = |v: f64| match f.kind {
        MetricKind::Amount => v * mean_ns(class),
        _ => v,
    };
    let split = match f.kind {
        MetricKind::Amount if class.tally.calls > 0 => c.split / class.tally.calls as f64,
        MetricKind::Amount => 0.0,
        _ => c.split,
    };
    let other = |i: usize| a.classes.list.get(i).map_or(format!("class {i}"), name_of);
    FittedValue {
        metric: f.metric.clone(),
        kind: f.kind,
        windows: c.windows,
        overlap_ns: c.overlap_ns,
        value: c.estimate.map(per_launch),
        std_error: c.estimate.and(c.std_error).map(per_launch),
        split,
        residual: f.residual,
        undetermined: c.undetermined.map(|u| u.describe(other)),
    }
}

/// The percentages of peak of each kernel name without per-kernel counters from its
/// fitted metrics, by mangled name (names without any fitted value left out). A
/// metric counts for a name when every class of the name has it determined: its
/// mean per launch over them.
pub fn fitted_pct(a: &Aggregate, overrides: &Overrides) -> Vec<KernelPct> {
    let classes = fitted_classes(a);
    let mut by_name: BTreeMap<&str, Vec<&FittedClass>> = BTreeMap::new();
    for c in &classes {
        by_name.entry(c.mangled.as_str()).or_default().push(c);
    }
    // Per name: whether a launch has per-kernel counters, and its classes with launches.
    let mut names: BTreeMap<&str, (bool, usize)> = BTreeMap::new();
    for c in &a.classes.list {
        let e = names.entry(c.mangled.as_str()).or_default();
        e.0 |= c.with_counters > 0;
        e.1 += usize::from(c.tally.calls > 0);
    }
    let all_fitted = |name: &str, n: usize| {
        names
            .get(name)
            .is_some_and(|(measured, all)| !measured && *all == n)
    };
    let means: Vec<(&str, BTreeMap<&str, f64>)> = by_name
        .into_iter()
        .filter(|(name, cs)| all_fitted(name, cs.len()))
        .map(|(name, cs)| (name, name_means(&cs)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    counter_pct(a, &means, overrides)
}

/// The metrics every one of `classes` has determined, as means per launch over them,
/// with the GPU time per launch from the kernels' own durations (a window's GPU time
/// is its length, so it is not fitted).
fn name_means<'c>(classes: &[&'c FittedClass]) -> BTreeMap<&'c str, f64> {
    let mut sums: BTreeMap<&str, (u64, u64, f64)> = BTreeMap::new();
    for c in classes {
        for m in &c.metrics {
            let e = sums.entry(m.metric.as_str()).or_default();
            e.0 += 1;
            if let Some(v) = m.value {
                e.1 += c.calls;
                e.2 += v * c.calls as f64;
            }
        }
    }
    let calls: u64 = classes.iter().map(|c| c.calls).sum();
    let mut means: BTreeMap<&str, f64> = sums
        .into_iter()
        .filter(|(_, (n, with, _))| *n == classes.len() as u64 && *with == calls && calls > 0)
        .map(|(m, (_, with, sum))| (m, sum / with as f64))
        .collect();
    if calls > 0 && !means.is_empty() {
        let ns: u64 = classes.iter().map(|c| c.gpu_ns).sum();
        means.insert(GPU_TIME, ns as f64 / calls as f64);
    }
    means
}
