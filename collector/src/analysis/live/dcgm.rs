//! The DCGM profiling fields of each GPU ([`cupti::metrics::DCGM_FIELDS`]: which CUPTI
//! metric each field comes from; `GPUPROF_METRICS=dcgm` collects exactly those), as
//! DCGM defines them: GPU-wide, averaged over the wall-clock window, idle time
//! included ("The value represents an average over a time interval": a kernel using
//! every SM for a fifth of the interval is an SM activity of 0.2).
//!
//! **Timeline.** Each GPU (by UUID) has a timeline of bins of [`BIN_NS`] of the
//! session's clock (CUPTI's timestamps, the host's `CLOCK_REALTIME`). What ran adds
//! to the bins it overlaps, per field, an amount:
//! - a ratio field (`.pct_of_peak_sustained_elapsed` metric): the value as a fraction
//!   of elapsed time, times the ns of the overlap;
//! - a byte field (`.sum` metric): the bytes that fell in the overlap.
//!
//! From per-kernel counters, a launch's value is its class's mean of the metric (a
//! class: kernel name, launch configuration, GEMM shape; the counter policy measures
//! some launches of each), spread evenly over the launch: a ratio as it is, bytes as
//! the class's bytes per ns of GPU time. Kernel time of a class with no value yet for
//! a field is held, per class, and added to the first bin not yet published once the
//! class has one, so nothing is counted as 0 for being measured late. Under PM
//! sampling the windows add their values the same way, each over its own span.
//!
//! **Publishing.** Each update publishes the bins that ended at least [`LAG_NS`]
//! before the update's time (the live aggregate sums a kernel 2 to 3 s after it
//! reached the collector, and CUPTI delivers it up to a second after it ran), in
//! whole windows of [`WINDOW_BINS`] bins from the GPU's first bin: one window per
//! update while updates keep time, so each window is shown for about as long as it
//! is, and a series averaged over time weighs every window by its length. A field
//! is the sum of the window's bins over its length, a fraction for a ratio, bytes per
//! second for bytes. An amount that arrives for a bin already published goes to the
//! first bin not yet published, so over the run the published values times their
//! windows add up to exactly what ran, which is what the report's "GPU activity"
//! gives over the run ([`crate::analysis::gpu_activity`], the same class rates). An
//! update with no bin to publish keeps the last values. The final update publishes
//! every bin. A field whose metric was never measured on a GPU is not shown for it.

use std::collections::{BTreeMap, VecDeque};

use ahash::AHashMap;
use cupti::metrics::DCGM_FIELDS;
use wire::CounterSample;

use crate::analysis::aggregate::{split_into_bins, Aggregate, BinKey};
use crate::analysis::gpu_activity::{class_rate as rate, is_ratio};

/// The length of a timeline bin, ns.
pub const BIN_NS: u64 = 100_000_000;
/// Bins one window publishes: the update period (`serve::UPDATE_EVERY`, 1 s).
pub const WINDOW_BINS: u64 = 10;
/// How long before an update's time the bins it publishes end, ns.
pub const LAG_NS: u64 = 5_000_000_000;
/// Bins a GPU's timeline holds at most; an amount further ahead goes to the last.
const MAX_BINS: usize = 6000;

/// One GPU's amounts per bin and field, from bin `first` on (the bins before it are
/// published, once `published`).
#[derive(Debug, Default)]
struct Timeline {
    first: Option<u64>,
    published: bool,
    bins: VecDeque<Vec<f64>>,
    /// Whether each field ever had an amount.
    measured: Vec<bool>,
    /// The last published values.
    last: Vec<f64>,
}

impl Timeline {
    /// Adds `amount` of field `field` to bin `bin` (or the first one not published).
    fn add(&mut self, bin: u64, field: usize, amount: f64) {
        if !amount.is_finite() {
            return;
        }
        let mut first = *self.first.get_or_insert(bin);
        // Before anything is published the timeline starts at its earliest bin.
        while bin < first && !self.published && self.bins.len() < MAX_BINS {
            self.bins.push_front(vec![0.0; DCGM_FIELDS.len()]);
            first -= 1;
            self.first = Some(first);
        }
        let i = (bin.saturating_sub(first) as usize).min(MAX_BINS - 1);
        while self.bins.len() <= i {
            self.bins.push_back(vec![0.0; DCGM_FIELDS.len()]);
        }
        self.bins[i][field] += amount;
        self.measured.resize(DCGM_FIELDS.len(), false);
        self.measured[field] = true;
    }

    /// Publishes the bins that end by `to`, those nothing ran in included (every bin
    /// held when `all`); keeps the last values when no bin is due.
    fn publish(&mut self, to: u64, all: bool) {
        let Some(first) = self.first else { return };
        let due = if all {
            self.bins.len() as u64
        } else {
            // Whole windows only: a window as long as the update period is shown for
            // about that long, so a series averaged over time weighs each window by
            // its length.
            let ready = (to / BIN_NS).saturating_sub(first);
            ready - ready % WINDOW_BINS
        };
        self.publish_bins(due);
    }

    /// Publishes the next `due` bins as one window (those not held are idle); keeps
    /// the last values when `due` is 0.
    fn publish_bins(&mut self, due: u64) {
        let Some(first) = self.first else { return };
        if due == 0 {
            return;
        }
        let held = (due.min(self.bins.len() as u64)) as usize;
        let mut sums = vec![0.0; DCGM_FIELDS.len()];
        for bin in self.bins.drain(..held) {
            for (s, v) in sums.iter_mut().zip(bin) {
                *s += v;
            }
        }
        self.first = Some(first.saturating_add(due));
        self.published = true;
        let window_ns = due.saturating_mul(BIN_NS) as f64;
        self.last = DCGM_FIELDS
            .iter()
            .zip(sums)
            .map(|(f, sum)| {
                if is_ratio(f) {
                    (sum / window_ns).clamp(0.0, 1.0)
                } else {
                    sum / (window_ns / 1e9)
                }
            })
            .collect();
    }

    /// The measured fields' last published values.
    fn values(&self) -> Vec<(&'static str, f64)> {
        DCGM_FIELDS
            .iter()
            .zip(&self.last)
            .zip(&self.measured)
            .filter(|(_, m)| **m)
            .map(|((f, v), _)| (f.name, *v))
            .collect()
    }
}

/// Every GPU's timeline, and the kernel time of classes not valued yet.
#[derive(Debug, Default)]
pub struct Window {
    gpus: BTreeMap<String, Timeline>,
    /// (GPU, class, field) -> kernel ns waiting for the class's value of the field.
    waiting: AHashMap<(String, usize, usize), u64>,
}

impl Window {
    /// Adds the kernel time finalized since the last call (`binned`, from
    /// `Aggregator::take_binned`), valued by each class's means.
    pub fn add_kernels(
        &mut self,
        a: &Aggregate,
        binned: &AHashMap<BinKey, u64>,
        uuid_of: impl Fn(u32, u32) -> Option<String>,
    ) {
        for (key, ns) in binned {
            let (Some(uuid), Some(c)) = (
                uuid_of(key.pid, key.device_id),
                a.classes.list.get(key.class),
            ) else {
                continue;
            };
            let timeline = self.gpus.entry(uuid.clone()).or_default();
            for (i, f) in DCGM_FIELDS.iter().enumerate() {
                match rate(a, c, f) {
                    Some(r) => timeline.add(key.bin, i, r * *ns as f64),
                    None => {
                        *self
                            .waiting
                            .entry((uuid.clone(), key.class, i))
                            .or_default() += ns;
                    }
                }
            }
        }
        // Time of classes that have a value now.
        let mut valued = Vec::new();
        for ((uuid, class, i), ns) in &self.waiting {
            let Some(r) = a
                .classes
                .list
                .get(*class)
                .and_then(|c| rate(a, c, &DCGM_FIELDS[*i]))
            else {
                continue;
            };
            // Into the first bin not published (none yet: it waits on).
            let Some(t) = self.gpus.get_mut(uuid).filter(|t| t.first.is_some()) else {
                continue;
            };
            t.add(t.first.unwrap_or_default(), *i, r * *ns as f64);
            valued.push((uuid.clone(), *class, *i));
        }
        for k in valued {
            self.waiting.remove(&k);
        }
    }

    /// Adds PM sampling windows `samples` (pid, window); metric names are the
    /// processes' interned strings of `a`.
    pub fn add_samples(
        &mut self,
        a: &Aggregate,
        samples: &[(u32, CounterSample)],
        uuid_of: impl Fn(u32, u32) -> Option<String>,
    ) {
        for (pid, w) in samples {
            let Some(uuid) = uuid_of(*pid, w.device_id) else {
                continue;
            };
            let span = w.end_ns.saturating_sub(w.start_ns);
            if span == 0 {
                continue;
            }
            let timeline = self.gpus.entry(uuid).or_default();
            for m in &w.metrics {
                let Some(name) = a.string(*pid, m.name) else {
                    continue;
                };
                let Some(i) = DCGM_FIELDS.iter().position(|f| f.metric == name) else {
                    continue;
                };
                // Per ns of the window.
                let per_ns = if is_ratio(&DCGM_FIELDS[i]) {
                    (m.value / 100.0).clamp(0.0, 1.0)
                } else {
                    m.value / span as f64
                };
                for (bin, ns) in split_into_bins(w.start_ns, w.end_ns, BIN_NS) {
                    timeline.add(bin, i, per_ns * ns as f64);
                }
            }
        }
    }

    /// After the program ended: the bins not yet published, as up to `steps`
    /// successive field sets of every GPU, to be shown one update period apart. Each
    /// holds one window of [`WINDOW_BINS`] bins, the last everything left, so each
    /// window is shown for as long as it is while `steps` lasts.
    pub fn tail(&mut self, steps: usize) -> Vec<BTreeMap<String, Vec<(&'static str, f64)>>> {
        let steps = steps.max(1);
        let mut out = Vec::new();
        for step in 0..steps {
            let last = step + 1 == steps;
            if self.gpus.values().all(|t| t.bins.is_empty()) {
                break;
            }
            let fields = self
                .gpus
                .iter_mut()
                .map(|(uuid, t)| {
                    let held = t.bins.len() as u64;
                    t.publish_bins(if last { held } else { held.min(WINDOW_BINS) });
                    (uuid.clone(), t.values())
                })
                .collect();
            out.push(fields);
        }
        out
    }

    /// Publishes each GPU's bins that ended [`LAG_NS`] before `now_ns` (every bin when
    /// `all`), and gives every GPU's fields (by UUID).
    pub fn publish(
        &mut self,
        now_ns: u64,
        all: bool,
    ) -> BTreeMap<String, Vec<(&'static str, f64)>> {
        let to = now_ns.saturating_sub(LAG_NS);
        self.gpus
            .iter_mut()
            .map(|(uuid, t)| {
                t.publish(to, all);
                (uuid.clone(), t.values())
            })
            .collect()
    }
}
