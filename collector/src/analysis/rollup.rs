//! Launches summed into [`Rollup`]s: by kernel family, by NVTX range name, and for the
//! whole run.
//!
//! **Rollups** ([`Rollup`]: by family, NVTX range name, and the whole run) add the
//! launches' FLOPs `F_i`, bytes `B_i` and GPU time `t_i` (ns), with `P_i` the peak
//! FLOP/s of launch i's precision on its GPU and `W_i` its GPU's DRAM bandwidth:
//! - time-weighted MFU = `(Σ F_i / P_i) / Σ t_i`: the share of the rollup's GPU time
//!   its FLOPs would take at peak, which is `total FLOPs / total time / peak` when one
//!   peak applies. The numerator sums the launches whose FLOPs and peak are known; the
//!   denominator is all the rollup's GPU time, so launches without FLOPs count as 0 %;
//! - time-weighted MBU = `(Σ B_i / W_i) / Σ t_i`, the same way;
//! - AI = `Σ F_i / Σ B_i` over the launches with both; achieved = `Σ F_i / Σ t_i`.
//!
//! NVTX ranges cover kernels as in [`super::nvtx`] (start/end ranges: kernels of the
//! process starting inside; push/pop ranges: kernels launched on that thread inside),
//! each kernel counting once per range name (`nvtx::kernels_in_ranges`).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use wire::Record;

use super::family::Family;
use super::nvtx::{kernels_in_ranges, pair_ranges};

/// Where a row's FLOPs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlopSource {
    /// GEMM shapes: 2·M·N·K·batch.
    Model,
    /// Hardware counters.
    Hardware,
}

impl FlopSource {
    pub fn name(self) -> &'static str {
        match self {
            FlopSource::Model => "model",
            FlopSource::Hardware => "hw",
        }
    }
}

/// Launches summed: see the module documentation for the formulas.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Rollup {
    /// The family, the NVTX range ("domain: name", or the name), or "run".
    pub name: String,
    pub launches: u64,
    pub gpu_ns: u64,
    /// Model and hardware FLOPs of the launches whose FLOPs came from each.
    pub model_flops: f64,
    pub hw_flops: f64,
    /// GPU time of the launches with known FLOPs, and with known bytes.
    pub flops_ns: u64,
    pub bytes: f64,
    pub bytes_ns: u64,
    /// FLOP/byte.
    pub intensity: Option<f64>,
    /// FLOP/s.
    pub achieved: Option<f64>,
    /// Fractions.
    pub mfu: Option<f64>,
    pub mbu: Option<f64>,
}

/// What one launch contributes to a rollup, and which rollups it belongs to.
pub(super) struct LaunchValues {
    /// Index of the kernel record in the session's records.
    pub(super) record: usize,
    /// The family of the launch's row.
    pub(super) family: Family,
    pub(super) ns: u64,
    pub(super) flops: Option<f64>,
    pub(super) source: Option<FlopSource>,
    pub(super) bytes: Option<f64>,
    pub(super) peak: Option<f64>,
    pub(super) bandwidth: Option<f64>,
}

/// The rollups of a session's launches.
pub(super) struct Rollups {
    /// In [`Family::ALL`] order, families with launches only.
    pub(super) families: Vec<Rollup>,
    /// By GPU time, longest first (ties: name).
    pub(super) ranges: Vec<Rollup>,
    pub(super) run: Rollup,
}

/// Every launch of the session (`launches`, in record order) rolled up by family, by
/// NVTX range name of `records`, and for the run.
pub(super) fn rollups(records: &[(u32, Record)], launches: &[LaunchValues]) -> Rollups {
    // Families.
    let mut families: BTreeMap<Family, Vec<usize>> = BTreeMap::new();
    for (li, l) in launches.iter().enumerate() {
        families.entry(l.family).or_default().push(li);
    }
    let families = Family::ALL
        .iter()
        .filter_map(|f| {
            families
                .get(f)
                .map(|ls| rollup(f.name(), ls.iter().map(|&i| &launches[i])))
        })
        .collect();

    // NVTX ranges.
    let launch_of: HashMap<usize, usize> = launches
        .iter()
        .enumerate()
        .map(|(li, l)| (l.record, li))
        .collect();
    let mut ranges: Vec<Rollup> = covered(records)
        .into_iter()
        .filter(|(_, kernels)| !kernels.is_empty())
        .map(|(name, kernels)| {
            let mut ls: Vec<usize> = kernels
                .iter()
                .filter_map(|r| launch_of.get(r).copied())
                .collect();
            ls.sort_unstable();
            rollup(&name, ls.iter().map(|&i| &launches[i]))
        })
        .collect();
    ranges.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.name.cmp(&b.name)));

    Rollups {
        families,
        ranges,
        run: rollup("run", launches.iter()),
    }
}

fn rollup<'a>(name: &str, launches: impl Iterator<Item = &'a LaunchValues>) -> Rollup {
    let mut r = Rollup {
        name: name.to_string(),
        ..Rollup::default()
    };
    let (mut flops, mut flops_at_peak, mut bytes_at_bw) = (0.0, 0.0, 0.0);
    let (mut ai_flops, mut ai_bytes) = (0.0, 0.0);
    let (mut any_flops, mut any_peak, mut any_bw) = (false, false, false);
    for l in launches {
        r.launches += 1;
        r.gpu_ns = r.gpu_ns.saturating_add(l.ns);
        if let Some(f) = l.flops {
            any_flops = true;
            flops += f;
            r.flops_ns = r.flops_ns.saturating_add(l.ns);
            match l.source {
                Some(FlopSource::Model) => r.model_flops += f,
                _ => r.hw_flops += f,
            }
            if let Some(p) = l.peak.filter(|p| *p > 0.0) {
                any_peak = true;
                flops_at_peak += f / p;
            } else if f == 0.0 {
                any_peak = true;
            }
            if let Some(b) = l.bytes {
                ai_flops += f;
                ai_bytes += b;
            }
        }
        if let Some(b) = l.bytes {
            r.bytes += b;
            r.bytes_ns = r.bytes_ns.saturating_add(l.ns);
            if let Some(w) = l.bandwidth.filter(|w| *w > 0.0) {
                any_bw = true;
                bytes_at_bw += b / w;
            }
        }
    }
    if r.gpu_ns > 0 {
        let ns = r.gpu_ns as f64;
        r.achieved = any_flops.then(|| flops * 1e9 / ns);
        r.mfu = any_peak.then(|| flops_at_peak * 1e9 / ns);
        r.mbu = any_bw.then(|| bytes_at_bw * 1e9 / ns);
    }
    r.intensity = (ai_bytes > 0.0).then(|| ai_flops / ai_bytes);
    r
}

/// Per NVTX range name ("domain: name", or the name), the kernel records it covers
/// (indices into `records`), by name.
fn covered(records: &[(u32, Record)]) -> BTreeMap<String, HashSet<usize>> {
    let paired = pair_ranges(records);
    let mut out: BTreeMap<String, HashSet<usize>> = BTreeMap::new();
    for (r, kernels) in paired
        .ranges
        .iter()
        .zip(kernels_in_ranges(records, &paired))
    {
        let name = if r.domain.is_empty() {
            r.name.clone()
        } else {
            format!("{}: {}", r.domain, r.name)
        };
        out.entry(name).or_default().extend(kernels);
    }
    out
}
