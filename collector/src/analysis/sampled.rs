//! PM sampling windows attributed to the kernels that ran during them.
//!
//! A `CounterSample` is GPU-wide: it covers the window `[s, e)` of one device of one
//! process. Each kernel launch of the same process and device whose `[start, end)`
//! overlaps the window by `o` ns gets a share of the window's values. With `B` the total
//! kernel time inside the window (the sum of the overlaps; concurrent kernels count
//! each, so `B` may exceed `e - s`):
//!
//! - an *additive* metric (name ending in `.sum`: bytes, instructions, cycles summed
//!   over units) gives the launch `value * o / B`; per kernel name the shares add up
//!   over windows. The shares of one window add up to its value, so the sum over
//!   kernels plus idle equals the sum over samples (up to f64 rounding).
//! - any other metric (`.avg`, `.max`, `.pct_of_peak_*`, `.per_second`, ratios) is not
//!   a quantity that can be split: per kernel name it is the mean of the window values
//!   weighted by the kernel's overlap time, `sum(value * o) / sum(o)`.
//!
//! A window in which no kernel ran (`B == 0`, including empty windows) is *idle*: its
//! values go to the idle bucket (`.sum` values added, which should be about 0; other
//! metrics averaged weighted by window length, or plainly when all such windows are
//! empty), never dropped. A window that is only partly covered gives all its values
//! to its kernels (the counts were produced by them); its uncovered time is still
//! reported as idle time ([`SampleIdle::idle_ns`]).
//!
//! "From N samples": the number of windows that overlapped at least one launch of
//! the kernel name. Pure: spans in, numbers out.

use std::collections::BTreeMap;

use serde::Serialize;

/// Whether a metric's values add up over time (and so split by overlap time).
pub fn additive(metric: &str) -> bool {
    metric.ends_with(".sum")
}

/// One kernel launch, as far as attribution is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpan<'a> {
    pub pid: u32,
    pub device_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The kernel's name as recorded (the key the results are grouped by).
    pub mangled: &'a str,
}

/// One sampling window with its metric names resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub pid: u32,
    pub device_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub metrics: Vec<(String, f64)>,
}

/// Whether a window's GPU time agrees with its length. A PM sample's
/// `gpu__time_duration.sum` is its window's length (to the ns on an H200, idle windows
/// too); the first sample after a start there claimed to begin seconds before it,
/// with its GPU time counted from 0 (its end timestamp). A window whose GPU time
/// exceeds its length by more than 1% and 1 µs is such a one: its values cannot be
/// placed in time, so it is left out of the split and the fit (and counted). A window
/// without the metric is taken as it is.
pub fn consistent(w: &Window) -> bool {
    let length = w.end_ns.saturating_sub(w.start_ns) as f64;
    w.metrics
        .iter()
        .filter(|(m, _)| m == "gpu__time_duration.sum")
        .all(|(_, gpu_ns)| *gpu_ns <= length * 1.01 + 1000.0)
}

/// One metric attributed to a kernel name (or to idle).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledMetric {
    pub metric: String,
    /// Windows that carried this metric and contributed to this entry.
    pub samples: u64,
    /// "sum" (additive, shares added up) or "mean" (overlap-time-weighted mean).
    pub kind: &'static str,
    pub value: f64,
}

/// The sample values attributed to one kernel name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledKernel {
    /// As recorded.
    pub mangled: String,
    /// Windows that overlapped at least one launch of this name.
    pub samples: u64,
    /// Kernel time of this name inside sampling windows, ns.
    pub overlap_ns: u64,
    /// By metric name.
    pub metrics: Vec<SampledMetric>,
}

/// Sampled time and values with no kernel running.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SampleIdle {
    /// Windows in which no kernel ran.
    pub windows: u64,
    /// Time of all windows, ns.
    pub sampled_ns: u64,
    /// Time of all windows not covered by any kernel (idle windows and the uncovered
    /// parts of the others), ns.
    pub idle_ns: u64,
    /// The values of the idle windows, by metric name.
    pub metrics: Vec<SampledMetric>,
}

/// The attribution of every window.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Attribution {
    /// Kernel names with at least one overlapping window, by mangled name.
    pub kernels: Vec<SampledKernel>,
    pub idle: SampleIdle,
}

#[derive(Default)]
struct MetricAcc {
    samples: u64,
    /// Additive: the sum of the shares. Otherwise: sum(value * weight).
    sum: f64,
    weight: f64,
    /// Plain sum of the values, for a mean when every weight is 0.
    plain: f64,
}

impl MetricAcc {
    fn add(&mut self, metric: &str, share: f64, value: f64, weight: f64) {
        self.samples += 1;
        if additive(metric) {
            self.sum += share;
        } else {
            self.sum += value * weight;
            self.weight += weight;
            self.plain += value;
        }
    }
}

fn finish(metrics: BTreeMap<String, MetricAcc>) -> Vec<SampledMetric> {
    metrics
        .into_iter()
        .map(|(metric, a)| {
            let (kind, value) = if additive(&metric) {
                ("sum", a.sum)
            } else if a.weight > 0.0 {
                ("mean", a.sum / a.weight)
            } else {
                ("mean", a.plain / a.samples as f64)
            };
            SampledMetric {
                metric,
                samples: a.samples,
                kind,
                value,
            }
        })
        .collect()
}

#[derive(Default)]
struct KernelAcc {
    samples: u64,
    overlap_ns: u64,
    metrics: BTreeMap<String, MetricAcc>,
}

/// The launches and windows of one (pid, device).
type Device<'s, 'k> = (Vec<&'s KernelSpan<'k>>, Vec<&'s Window>);

/// Attributes every window to the kernels of its process and device (module docs).
pub fn attribute(kernels: &[KernelSpan], windows: &[Window]) -> Attribution {
    let mut a = Attributor::default();
    a.add(kernels, windows);
    a.finish()
}

/// Attribution window by window: [`Attributor::add`] some windows with every launch
/// that may overlap them, as often as needed, then [`Attributor::finish`]. Each window
/// must be added once.
#[derive(Default)]
pub struct Attributor {
    per_kernel: BTreeMap<String, KernelAcc>,
    idle: SampleIdle,
    idle_metrics: BTreeMap<String, MetricAcc>,
}

impl Attributor {
    /// Attributes `windows` to the launches of `kernels` that overlap them.
    pub fn add(&mut self, kernels: &[KernelSpan], windows: &[Window]) {
        let mut by_device: BTreeMap<(u32, u32), Device> = BTreeMap::new();
        for w in windows {
            by_device.entry((w.pid, w.device_id)).or_default().1.push(w);
        }
        for k in kernels {
            if k.end_ns > k.start_ns {
                if let Some(d) = by_device.get_mut(&(k.pid, k.device_id)) {
                    d.0.push(k);
                }
            }
        }
        let idle = &mut self.idle;
        for (_, (mut ks, mut ws)) in by_device {
            ks.sort_by_key(|k| (k.start_ns, k.end_ns));
            ws.sort_by_key(|w| (w.start_ns, w.end_ns));
            // Sweep: `active` holds the launches started before the current window's end
            // that had not ended by its start (windows come by start, so a launch that
            // ended before one window's start ends before every later one's).
            let mut next = 0;
            let mut active: Vec<&KernelSpan> = Vec::new();
            for w in ws {
                let (s, e) = (w.start_ns, w.end_ns);
                while next < ks.len() && ks[next].start_ns < e {
                    active.push(ks[next]);
                    next += 1;
                }
                active.retain(|k| k.end_ns > s);
                let mut shares: BTreeMap<&str, u64> = BTreeMap::new();
                let mut covered: Vec<(u64, u64)> = Vec::new();
                for k in &active {
                    let (a, b) = (k.start_ns.max(s), k.end_ns.min(e));
                    if b > a {
                        let share = shares.entry(k.mangled).or_default();
                        *share = share.saturating_add(b - a);
                        covered.push((a, b));
                    }
                }
                let length = e.saturating_sub(s);
                idle.sampled_ns = idle.sampled_ns.saturating_add(length);
                idle.idle_ns = idle
                    .idle_ns
                    .saturating_add(length.saturating_sub(union(&mut covered)));
                let busy = shares.values().fold(0u64, |sum, o| sum.saturating_add(*o));
                if busy == 0 {
                    idle.windows += 1;
                    for (m, v) in &w.metrics {
                        self.idle_metrics.entry(m.clone()).or_default().add(
                            m,
                            *v,
                            *v,
                            length as f64,
                        );
                    }
                    continue;
                }
                for (name, o) in shares {
                    let acc = match self.per_kernel.get_mut(name) {
                        Some(a) => a,
                        None => self.per_kernel.entry(name.to_string()).or_default(),
                    };
                    acc.samples += 1;
                    acc.overlap_ns = acc.overlap_ns.saturating_add(o);
                    for (m, v) in &w.metrics {
                        let share = *v * o as f64 / busy as f64;
                        acc.metrics
                            .entry(m.clone())
                            .or_default()
                            .add(m, share, *v, o as f64);
                    }
                }
            }
        }
    }

    pub fn finish(self) -> Attribution {
        let mut idle = self.idle;
        idle.metrics = finish(self.idle_metrics);
        Attribution {
            kernels: self
                .per_kernel
                .into_iter()
                .map(|(mangled, acc)| SampledKernel {
                    mangled,
                    samples: acc.samples,
                    overlap_ns: acc.overlap_ns,
                    metrics: finish(acc.metrics),
                })
                .collect(),
            idle,
        }
    }
}

/// Total length of the union of the intervals.
fn union(intervals: &mut [(u64, u64)]) -> u64 {
    intervals.sort_unstable();
    let mut total = 0u64;
    let mut current: Option<(u64, u64)> = None;
    for &(a, b) in intervals.iter() {
        match current {
            Some((ca, cb)) if a <= cb => current = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total = add(total, cb - ca);
                current = Some((a, b));
            }
            None => current = Some((a, b)),
        }
    }
    add(total, current.map_or(0, |(a, b)| b - a))
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}
