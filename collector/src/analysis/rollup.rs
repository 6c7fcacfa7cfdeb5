//! Launches summed into [`Rollup`]s: by kernel family, by NVTX range name, and for the
//! whole run.
//!
//! **Rollups** ([`Rollup`]: by family, NVTX range name, and the whole run) add the
//! launches' FLOPs `F_i`, bytes `B_i` and GPU time `t_i` (ns), with `P_i` the peak
//! FLOP/s of launch i's precision on its GPU and `W_i` its GPU's DRAM bandwidth:
//! - time-weighted MFU = `(Σ F_i / P_i) / Σ t_i`: the share of the rollup's GPU time
//!   its FLOPs would take at peak, which is `total FLOPs / total time / peak` when one
//!   peak applies. Both sums run over the launches whose FLOPs and peak are known
//!   (a launch known to do no FLOPs counts, at 0 %): a launch whose FLOPs are unknown
//!   is left out of both, never counted as 0 %. [`Rollup::mfu_ns`] is the GPU time
//!   the value covers, so a rollup whose launches are partly unknown says so
//!   ("42.1 (94%)" in the table) instead of showing a smaller number that looks
//!   complete;
//! - time-weighted MBU = `(Σ B_i / W_i) / Σ t_i`, the same way over the launches
//!   whose DRAM bytes and bandwidth are known ([`Rollup::mbu_ns`]);
//! - AI = `Σ F_i / Σ B_i` over the launches with both; achieved = `Σ F_i / Σ t_i`
//!   over the launches with FLOPs ([`Rollup::flops_ns`]). Model FLOPs, hardware
//!   FLOPs and DRAM bytes are sums over the launches that have them; the `*_ns`
//!   fields say how much of the GPU time that is.
//!
//! - MFU over wall time (NVTX ranges and the run): the same FLOPs at peak over the
//!   GPU wall time instead of the covered GPU time: a range's instances' summed
//!   duration times the GPUs its kernels ran on; the run's, each GPU's span from its
//!   first kernel's start to its last kernel's end, summed. Idle time, host gaps
//!   between kernels, counts here and not in the busy-time MFU.
//!
//! NVTX ranges cover kernels as in [`super::nvtx`] (start/end ranges: kernels of the
//! process starting inside; push/pop ranges: kernels launched on that thread inside),
//! each kernel counting once per range name ([`super::range_cover`]).
//!
//! Launches come summed by class ([`super::classes`]): every launch of a class has the
//! same FLOPs, peak and bandwidth, so a class adds them times its launches.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::aggregate::Aggregate;
use super::classes::Tally;
use super::family::Family;
use super::range_cover::range_label;

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

/// Where a row's DRAM bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BytesSource {
    /// Per-kernel counters (a launch's own, or the mean of its group's).
    Measured,
    /// Rates fitted to PM sampling windows ([`super::deconvolve`]).
    Sampled,
    /// Some launches' bytes one way, some the other.
    Mixed,
    /// Some or all launches' bytes are DRAM reads fitted to PM sampling windows whose
    /// writes the windows did not determine (on a GPU, L2 write-backs land in later
    /// windows than the kernels that dirtied the lines): the bytes, and MBU, are a
    /// lower bound, AI an upper bound.
    SampledReads,
}

impl BytesSource {
    pub fn name(self) -> &'static str {
        match self {
            BytesSource::Measured => "measured",
            BytesSource::Sampled => "sampled",
            BytesSource::Mixed => "mixed",
            BytesSource::SampledReads => "sampled_reads",
        }
    }

    /// The source of two groups of launches together: a lower bound stays one.
    pub fn and(this: Option<BytesSource>, other: Option<BytesSource>) -> Option<BytesSource> {
        match (this, other) {
            (None, s) | (s, None) => s,
            (Some(BytesSource::SampledReads), _) | (_, Some(BytesSource::SampledReads)) => {
                Some(BytesSource::SampledReads)
            }
            (Some(a), Some(b)) if a == b => Some(a),
            _ => Some(BytesSource::Mixed),
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
    /// GPU time of the launches MFU covers (FLOPs and peak known), and MBU covers
    /// (bytes and bandwidth known).
    pub mfu_ns: u64,
    pub mbu_ns: u64,
    /// Where `bytes` come from; `None` when no launch has bytes.
    pub bytes_source: Option<BytesSource>,
    /// FLOP/byte.
    pub intensity: Option<f64>,
    /// FLOP/s.
    pub achieved: Option<f64>,
    /// Fractions.
    pub mfu: Option<f64>,
    pub mbu: Option<f64>,
    /// GPU wall time, ns: for an NVTX range its instances' summed duration times the
    /// GPUs its kernels ran on, for the run each GPU's span from its first kernel's
    /// start to its last kernel's end, summed; `None` for a family (not one stretch of
    /// time).
    pub wall_ns: Option<u64>,
    /// MFU over the wall time: the same FLOPs at peak as [`Rollup::mfu`], over
    /// `wall_ns` instead of the GPU time of the launches it covers; `None` without
    /// wall time or FLOPs.
    pub mfu_wall: Option<f64>,
}

/// What each launch of one class contributes to a rollup.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassValues {
    /// The family of the class's row.
    pub family: Family,
    /// FLOPs per launch.
    pub flops: Option<f64>,
    pub source: Option<FlopSource>,
    /// The DRAM bytes a launch that did not measure them is given: the mean of its
    /// group (see [`crate::analysis::roofline::efficiency`]); `None` when no launch of the group measured
    /// them (then no launch of the class did either). For a class without measured
    /// bytes, the bytes fitted to the sampling windows, when determined.
    pub bytes_mean: Option<f64>,
    /// Where `bytes_mean` comes from (measured, fitted, or fitted reads alone).
    pub bytes_source: BytesSource,
    pub peak: Option<f64>,
    pub bandwidth: Option<f64>,
}

/// The DRAM bytes of `t`'s launches: those measured, plus `mean` for each of the
/// others.
pub fn with_mean(t: &Tally, mean: f64) -> f64 {
    t.bytes + (t.calls - t.bytes_calls) as f64 * mean
}

/// The rollups of a session's launches.
pub(super) struct Rollups {
    /// In [`Family::ALL`] order, families with launches only.
    pub(super) families: Vec<Rollup>,
    /// By GPU time, longest first (ties: name).
    pub(super) ranges: Vec<Rollup>,
    pub(super) run: Rollup,
}

/// Every launch of the session rolled up by family, by NVTX range name, and for the
/// run; `values` per class of `a`.
pub(super) fn rollups(a: &Aggregate, values: &[ClassValues]) -> Rollups {
    let classes = &a.classes.list;
    let families = Family::ALL
        .iter()
        .filter_map(|f| {
            let items: Vec<(&ClassValues, &Tally)> = values
                .iter()
                .zip(classes)
                .filter(|(v, _)| v.family == *f)
                .map(|(v, c)| (v, &c.tally))
                .collect();
            (!items.is_empty()).then(|| rollup(f.name(), items.into_iter()))
        })
        .collect();

    // NVTX ranges, by "domain: name" (or the name), with their wall time.
    let mut covered: BTreeMap<String, (BTreeMap<usize, Tally>, u64)> = BTreeMap::new();
    for ((domain, name), t) in a.ranges.names.iter().zip(&a.ranges.totals) {
        if t.classes.is_empty() {
            continue;
        }
        let e = covered.entry(range_label(domain, name)).or_default();
        for (c, tally) in &t.classes {
            e.0.entry(*c).or_default().merge(tally);
        }
        e.1 = e.1.saturating_add(t.wall_ns);
    }
    let mut ranges: Vec<Rollup> = covered
        .iter()
        .map(|(name, (cs, wall_ns))| {
            let r = rollup(name, cs.iter().map(|(c, t)| (&values[*c], t)));
            let gpus: BTreeSet<(u32, u32)> = cs
                .keys()
                .map(|&c| (classes[c].key.pid, classes[c].key.device_id))
                .collect();
            with_wall(r, wall_ns.saturating_mul(gpus.len() as u64))
        })
        .collect();
    ranges.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.name.cmp(&b.name)));

    let run = rollup(
        "run",
        values.iter().zip(classes).map(|(v, c)| (v, &c.tally)),
    );
    let spans = a.kernel_spans.values().fold(0u64, |sum, (first, last)| {
        sum.saturating_add(last.saturating_sub(*first))
    });
    Rollups {
        families,
        ranges,
        run: with_wall(run, spans),
    }
}

/// `r` with its wall time and the MFU over it (none over no time).
fn with_wall(mut r: Rollup, wall_ns: u64) -> Rollup {
    r.wall_ns = Some(wall_ns);
    r.mfu_wall = match (r.mfu, wall_ns) {
        (Some(mfu), w) if w > 0 => Some(mfu * r.mfu_ns as f64 / w as f64),
        _ => None,
    };
    r
}

/// The run of each session, when several are read together (none otherwise).
pub(super) fn by_session(a: &Aggregate, values: &[ClassValues]) -> Vec<Rollup> {
    if a.sessions.len() < 2 {
        return Vec::new();
    }
    let classes = &a.classes.list;
    a.sessions
        .iter()
        .enumerate()
        .map(|(s, name)| {
            rollup(
                name,
                values
                    .iter()
                    .zip(classes)
                    .filter(|(_, c)| a.session(c.key.pid) == s)
                    .map(|(v, c)| (v, &c.tally)),
            )
        })
        .collect()
}

fn rollup<'a>(name: &str, items: impl Iterator<Item = (&'a ClassValues, &'a Tally)>) -> Rollup {
    let mut r = Rollup {
        name: name.to_string(),
        ..Rollup::default()
    };
    let (mut flops, mut flops_at_peak, mut bytes_at_bw) = (0.0, 0.0, 0.0);
    let (mut ai_flops, mut ai_bytes) = (0.0, 0.0);
    for (v, t) in items {
        if t.calls == 0 {
            continue;
        }
        let n = t.calls as f64;
        r.launches += t.calls;
        r.gpu_ns = r.gpu_ns.saturating_add(t.ns);
        let bytes = v.bytes_mean.map(|m| with_mean(t, m));
        if let Some(f) = v.flops {
            flops += f * n;
            r.flops_ns = r.flops_ns.saturating_add(t.ns);
            match v.source {
                Some(FlopSource::Model) => r.model_flops += f * n,
                _ => r.hw_flops += f * n,
            }
            if let Some(p) = v.peak.filter(|p| *p > 0.0) {
                flops_at_peak += f / p * n;
                r.mfu_ns = r.mfu_ns.saturating_add(t.ns);
            } else if f == 0.0 {
                r.mfu_ns = r.mfu_ns.saturating_add(t.ns);
            }
            if let Some(b) = bytes {
                ai_flops += f * n;
                ai_bytes += b;
            }
        }
        if let Some(b) = bytes {
            r.bytes += b;
            r.bytes_ns = r.bytes_ns.saturating_add(t.ns);
            r.bytes_source = BytesSource::and(r.bytes_source, Some(v.bytes_source));
            if let Some(w) = v.bandwidth.filter(|w| *w > 0.0) {
                bytes_at_bw += b / w;
                r.mbu_ns = r.mbu_ns.saturating_add(t.ns);
            }
        }
    }
    let per_ns = |sum: f64, ns: u64| (ns > 0).then(|| sum * 1e9 / ns as f64);
    r.achieved = per_ns(flops, r.flops_ns);
    r.mfu = per_ns(flops_at_peak, r.mfu_ns);
    r.mbu = per_ns(bytes_at_bw, r.mbu_ns);
    r.intensity = (ai_bytes > 0.0).then(|| ai_flops / ai_bytes);
    r
}

impl Rollup {
    /// The share of the rollup's GPU time that MFU covers (0 to 1), `None` without
    /// GPU time.
    pub fn mfu_coverage(&self) -> Option<f64> {
        coverage(self.mfu_ns, self.gpu_ns)
    }

    /// The share of the rollup's GPU time that MBU covers.
    pub fn mbu_coverage(&self) -> Option<f64> {
        coverage(self.mbu_ns, self.gpu_ns)
    }
}

fn coverage(part_ns: u64, all_ns: u64) -> Option<f64> {
    (all_ns > 0).then(|| part_ns as f64 / all_ns as f64)
}

#[cfg(test)]
mod tests {
    use super::BytesSource::{self, *};

    /// Sources combine to themselves, to mixed, and a lower bound stays one.
    #[test]
    fn sources_combine_and_a_lower_bound_stays_one() {
        let and = BytesSource::and;
        assert_eq!(and(None, Some(Sampled)), Some(Sampled));
        assert_eq!(and(Some(Measured), Some(Measured)), Some(Measured));
        assert_eq!(and(Some(Measured), Some(Sampled)), Some(Mixed));
        assert_eq!(and(Some(Measured), Some(SampledReads)), Some(SampledReads));
        assert_eq!(and(Some(SampledReads), Some(Mixed)), Some(SampledReads));
        assert_eq!(SampledReads.name(), "sampled_reads");
    }
}
