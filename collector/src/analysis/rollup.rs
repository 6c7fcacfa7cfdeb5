//! Launches summed into [`Rollup`]s: by kernel family, by NVTX range name, and for the
//! whole run.
//!
//! **Rollups** ([`Rollup`]: by family, NVTX range name, and the whole run) add the
//! launches' FLOPs, DRAM bytes `B_i` and GPU time `t_i` (ns). FLOPs come two ways and
//! are never added together: *model* FLOPs (GEMM shapes, 2·M·N·K·batch) of the
//! launches with a GEMM shape, and *hardware* FLOPs (counters) of the launches whose
//! kernel row has them ([`super::roofline::efficiency`]), GEMMs included. Each kind is
//! summed into its own [`FlopTotals`] with `F_i` its FLOPs and `P_i` the peak FLOP/s of
//! its precision on launch i's GPU:
//! - time-weighted utilization = `(Σ F_i / P_i) / Σ t_i`: the share of the GPU time of
//!   the launches it covers that their FLOPs would take at peak, which is `total FLOPs
//!   / total time / peak` when one peak applies. Model FLOPs give MFU, hardware FLOPs
//!   HFU (hardware FLOPs utilization, as PaLM names the two). Both sums run over the
//!   launches whose FLOPs of that kind and peak are known (a launch known to do no
//!   FLOPs counts, at 0 %): a launch whose FLOPs are unknown is left out of both, never
//!   counted as 0 %. [`FlopTotals::mfu_ns`] is the GPU time the value covers, so a
//!   rollup whose launches are partly unknown says so ("42.1 (94%)" in the table)
//!   instead of showing a smaller number that looks complete. Kernels without a GEMM
//!   shape (attention, elementwise) have no model FLOPs: the run's MFU covers its
//!   GEMMs' time;
//! - AI = `Σ F_i / Σ B_i` over the launches with both, achieved = `Σ F_i / Σ t_i` over
//!   the launches with FLOPs ([`FlopTotals::flops_ns`]);
//! - time-weighted MBU = `(Σ B_i / W_i) / Σ t_i`, `W_i` the DRAM bandwidth of launch
//!   i's GPU, over the launches whose DRAM bytes and bandwidth are known
//!   ([`Rollup::mbu_ns`]).
//!
//! - Utilization over wall time (NVTX ranges and the run): the same FLOPs at peak over
//!   the GPU wall time instead of the covered GPU time: a range's instances' summed
//!   duration times the GPUs its kernels ran on; the run's, each GPU's span from its
//!   first kernel's start to its last kernel's end, summed. Idle time, host gaps
//!   between kernels, counts here and not in the busy-time value. PaLM's MFU is this
//!   one, with the model's FLOPs; here they are the FLOPs of the covered launches, so
//!   the figure is a lower bound where the busy-time value's coverage is partial.
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
    /// Model FLOPs (GEMM shapes): MFU.
    pub model: FlopTotals,
    /// Hardware FLOPs (counters): HFU.
    pub hw: FlopTotals,
    /// DRAM bytes, and the GPU time of the launches with them.
    pub bytes: f64,
    pub bytes_ns: u64,
    /// GPU time of the launches MBU covers (bytes and bandwidth known).
    pub mbu_ns: u64,
    /// Where `bytes` come from; `None` when no launch has bytes.
    pub bytes_source: Option<BytesSource>,
    /// A fraction.
    pub mbu: Option<f64>,
    /// GPU wall time, ns: for an NVTX range its instances' summed duration times the
    /// GPUs its kernels ran on, for the run each GPU's span from its first kernel's
    /// start to its last kernel's end, summed; `None` for a family (not one stretch of
    /// time).
    pub wall_ns: Option<u64>,
}

/// One kind of FLOPs (model or hardware) of a rollup's launches.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct FlopTotals {
    /// The FLOPs of the launches that have this kind; `None` when none has.
    pub flops: Option<f64>,
    /// GPU time of the launches with these FLOPs.
    pub flops_ns: u64,
    /// FLOP/byte, over the launches with these FLOPs and DRAM bytes.
    pub intensity: Option<f64>,
    /// FLOP/s over `flops_ns`.
    pub achieved: Option<f64>,
    /// Time-weighted utilization of the peak (a fraction): MFU for model FLOPs, HFU
    /// for hardware FLOPs.
    pub mfu: Option<f64>,
    /// GPU time of the launches `mfu` covers (FLOPs and peak known).
    pub mfu_ns: u64,
    /// The same FLOPs at peak over the rollup's wall time instead (a fraction); `None`
    /// without wall time or FLOPs.
    pub mfu_wall: Option<f64>,
}

impl FlopTotals {
    /// The share of `gpu_ns` (a rollup's GPU time) that `mfu` covers (0 to 1), `None`
    /// without GPU time.
    pub fn mfu_coverage(&self, gpu_ns: u64) -> Option<f64> {
        coverage(self.mfu_ns, gpu_ns)
    }
}

/// FLOPs per launch of one kind, and the peak FLOP/s of their precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchFlops {
    pub flops: f64,
    pub peak: Option<f64>,
}

/// What each launch of one class contributes to a rollup.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassValues {
    /// The family of the class's row.
    pub family: Family,
    /// Model FLOPs per launch: the class has a GEMM shape (a call's later launches,
    /// split-K reductions, have 0).
    pub model: Option<LaunchFlops>,
    /// Hardware FLOPs per launch: the class's kernel row has hardware FLOPs.
    pub hw: Option<LaunchFlops>,
    /// The DRAM bytes a launch that did not measure them is given: the mean of its
    /// group (see [`crate::analysis::roofline::efficiency`]); `None` when no launch of the group measured
    /// them (then no launch of the class did either). For a class without measured
    /// bytes, the bytes fitted to the sampling windows, when determined.
    pub bytes_mean: Option<f64>,
    /// Where `bytes_mean` comes from (measured, fitted, or fitted reads alone).
    pub bytes_source: BytesSource,
    pub bandwidth: Option<f64>,
}

impl ClassValues {
    /// The FLOPs per launch a kernel row's point uses for this class: model FLOPs where
    /// there are, else hardware FLOPs.
    pub fn flops(&self) -> Option<f64> {
        self.model.or(self.hw).map(|f| f.flops)
    }
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

    let mut ranges: Vec<Rollup> = range_classes(a)
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

/// The launches of each NVTX range with kernels, by "domain: name" (or the name): per
/// class its launches inside, and the range's wall time.
pub(super) fn range_classes(a: &Aggregate) -> BTreeMap<String, (BTreeMap<usize, Tally>, u64)> {
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
    covered
}

/// `r` with its wall time and the utilizations over it (none over no time).
fn with_wall(mut r: Rollup, wall_ns: u64) -> Rollup {
    r.wall_ns = Some(wall_ns);
    for f in [&mut r.model, &mut r.hw] {
        f.mfu_wall = match (f.mfu, wall_ns) {
            (Some(mfu), w) if w > 0 => Some(mfu * f.mfu_ns as f64 / w as f64),
            _ => None,
        };
    }
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

/// The sums of one kind of FLOPs while a rollup is summed.
#[derive(Default)]
struct FlopSums {
    flops: Option<f64>,
    flops_ns: u64,
    at_peak: f64,
    mfu_ns: u64,
    ai_flops: f64,
    ai_bytes: f64,
}

impl FlopSums {
    /// `n` launches of `ns` GPU time in all, each with `f` FLOPs and `bytes` in all.
    fn add(&mut self, f: LaunchFlops, n: f64, ns: u64, bytes: Option<f64>) {
        let flops = f.flops * n;
        self.flops = Some(self.flops.unwrap_or(0.0) + flops);
        self.flops_ns = self.flops_ns.saturating_add(ns);
        if let Some(p) = f.peak.filter(|p| *p > 0.0) {
            self.at_peak += f.flops / p * n;
            self.mfu_ns = self.mfu_ns.saturating_add(ns);
        } else if f.flops == 0.0 {
            self.mfu_ns = self.mfu_ns.saturating_add(ns);
        }
        if let Some(b) = bytes {
            self.ai_flops += flops;
            self.ai_bytes += b;
        }
    }

    fn totals(&self) -> FlopTotals {
        FlopTotals {
            flops: self.flops,
            flops_ns: self.flops_ns,
            intensity: (self.ai_bytes > 0.0).then(|| self.ai_flops / self.ai_bytes),
            achieved: self.flops.and_then(|f| per_ns(f, self.flops_ns)),
            mfu: per_ns(self.at_peak, self.mfu_ns),
            mfu_ns: self.mfu_ns,
            mfu_wall: None,
        }
    }
}

/// `sum` per second over `ns`, `None` over no time.
fn per_ns(sum: f64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| sum * 1e9 / ns as f64)
}

pub(super) fn rollup<'a>(
    name: &str,
    items: impl Iterator<Item = (&'a ClassValues, &'a Tally)>,
) -> Rollup {
    let mut r = Rollup {
        name: name.to_string(),
        ..Rollup::default()
    };
    let (mut model, mut hw) = (FlopSums::default(), FlopSums::default());
    let mut bytes_at_bw = 0.0;
    for (v, t) in items {
        if t.calls == 0 {
            continue;
        }
        let n = t.calls as f64;
        r.launches += t.calls;
        r.gpu_ns = r.gpu_ns.saturating_add(t.ns);
        let bytes = v.bytes_mean.map(|m| with_mean(t, m));
        if let Some(f) = v.model {
            model.add(f, n, t.ns, bytes);
        }
        if let Some(f) = v.hw {
            hw.add(f, n, t.ns, bytes);
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
    r.model = model.totals();
    r.hw = hw.totals();
    r.mbu = per_ns(bytes_at_bw, r.mbu_ns);
    r
}

impl Rollup {
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
