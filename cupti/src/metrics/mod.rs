//! Metric sets and their passes, computed offline with NVIDIA's host-side metrics
//! library (`libnvperf_host.so`, which needs no GPU and no driver).
//!
//! Counters come in pass groups (design §4): a set of metrics needs as many replays of
//! a kernel as the hardware needs passes to count its raw counters. This module asks
//! the library, per chip:
//! - which raw counters a metric needs ([`Host::raw_dependencies`]),
//! - how many passes a metric set needs ([`Host::num_passes`]),
//! - how to split a list of metrics into single-pass groups
//!   ([`Host::split_into_groups`], [`Host::plan`]),
//!
//! and holds the default metric groups per architecture ([`default_groups`]), which
//! the tests check are one pass each on their chips.
//!
//! It uses the NVPW host API of `libnvperf_host.so` directly (metrics evaluator + raw
//! metrics config), not CUPTI's Profiler Host API: the latter lives in libcupti, and
//! libcupti 13.2+ cannot be initialised without a CUDA driver in the process (13.2.86
//! recurses in `cuptiGetVersion`, 13.3+ answers `CUPTI_ERROR_UNKNOWN`), while
//! libnvperf_host works offline in every pinned release.

mod defaults;
mod error;
mod host;
pub mod presets;

pub use defaults::{
    default_groups, default_set_for, sampling_metrics, Architecture, DefaultGroup, DefaultSet,
    SamplingSlot, DEFAULT_SETS,
};
pub use error::{status_name, MetricError};
pub use host::{Host, MetricKind, NVPERF_HOST_ENV, NVPERF_HOST_FILE};
pub use presets::{preset, DcgmField, DCGM_FIELDS};

/// One group of metrics collected together, and what it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassGroup {
    /// The metrics, in the order they were given.
    pub metrics: Vec<String>,
    /// The distinct raw counters they need.
    pub raw_counters: Vec<String>,
    /// Passes the group needs on the chip: 1, except for a group holding a single
    /// metric that alone needs more.
    pub passes: usize,
}

impl Host {
    /// The passes `metrics` together need on `chip` (0 for an empty list).
    pub fn num_passes(&self, chip: &str, metrics: &[&str]) -> Result<usize, MetricError> {
        let raw = self.raw_counters(chip, metrics)?;
        self.passes_for_raw(chip, &raw)
    }

    /// Splits `metrics` into groups of one pass each on `chip`, greedily in the order
    /// given: each metric joins the first group with which it still fits in one pass
    /// (checked with `GetNumPasses`), else starts a new group. A metric that alone
    /// needs more than one pass gets a group of its own, with its pass count.
    /// Duplicates are dropped; an unknown metric is an error naming it.
    pub fn plan(&self, chip: &str, metrics: &[&str]) -> Result<Vec<PassGroup>, MetricError> {
        let mut groups: Vec<PassGroup> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for &m in metrics {
            if seen.contains(&m) {
                continue;
            }
            seen.push(m);
            let own = self.raw_dependencies(chip, m)?;
            let alone = self.passes_for_raw(chip, &own)?;
            let mut placed = false;
            if alone <= 1 {
                for g in groups.iter_mut().filter(|g| g.passes <= 1) {
                    let mut union = g.raw_counters.clone();
                    for r in &own {
                        if !union.contains(r) {
                            union.push(r.clone());
                        }
                    }
                    if self.passes_for_raw(chip, &union)? <= 1 {
                        g.metrics.push(m.to_string());
                        g.raw_counters = union;
                        g.passes = 1;
                        placed = true;
                        break;
                    }
                }
            }
            if !placed {
                groups.push(PassGroup {
                    metrics: vec![m.to_string()],
                    raw_counters: own,
                    passes: alone,
                });
            }
        }
        Ok(groups)
    }

    /// [`Host::plan`], metric names only.
    pub fn split_into_groups(
        &self,
        chip: &str,
        metrics: &[&str],
    ) -> Result<Vec<Vec<String>>, MetricError> {
        Ok(self
            .plan(chip, metrics)?
            .into_iter()
            .map(|g| g.metrics)
            .collect())
    }

    /// Each group of `groups` as it stands (not re-split), with its raw counters and
    /// passes on `chip`.
    pub fn measure_groups(
        &self,
        chip: &str,
        groups: &[&[&str]],
    ) -> Result<Vec<PassGroup>, MetricError> {
        groups
            .iter()
            .map(|g| {
                let raw = self.raw_counters(chip, g)?;
                let passes = self.passes_for_raw(chip, &raw)?;
                Ok(PassGroup {
                    metrics: g.iter().map(|m| m.to_string()).collect(),
                    raw_counters: raw,
                    passes,
                })
            })
            .collect()
    }
}
