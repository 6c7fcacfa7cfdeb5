//! The DRAM bytes of each class and kernel row of the roofline analysis
//! ([`super::efficiency`]): a launch's own, else the mean of the launches of its bytes
//! group (kernel row, launch configuration, GEMM shape) that measured them, else the
//! rates fitted to the PM sampling windows ([`crate::analysis::deconvolve`]).

use std::collections::{BTreeSet, HashMap};

use crate::analysis::aggregate::Aggregate;
use crate::analysis::classes::{Class, ClassKey, Tally};
use crate::analysis::deconvolve::Fitted;
use crate::analysis::flop_metrics::{DRAM_READ, DRAM_WRITE};
use crate::analysis::gemm::GemmShape;
use crate::analysis::names::demangle;
use crate::analysis::rollup::{with_mean, BytesSource};

/// The launches whose measured bytes stand in for each other's: one kernel row, launch
/// configuration and GEMM shape.
#[derive(PartialEq, Eq, Hash)]
struct BytesGroup {
    row: usize,
    grid: [i32; 3],
    block: [i32; 3],
    shape: Option<GemmShape>,
}

impl BytesGroup {
    /// The bytes group of class `c` of kernel row `row`.
    fn of(row: usize, c: &Class) -> BytesGroup {
        BytesGroup {
            row,
            grid: c.key.grid,
            block: c.key.block,
            shape: c.key.gemm.as_ref().map(|g| g.shape.clone()),
        }
    }
}

/// The DRAM bytes per launch of each class, for the launches that did not measure them.
pub(super) struct ClassBytes {
    /// Per class: the mean of its bytes group, else the sampling windows' fitted
    /// bytes; `None` when neither is known.
    pub(super) mean: Vec<Option<f64>>,
    /// Per class, when `mean` is the sampling windows' fit: whether it is of the
    /// reads alone (a lower bound).
    pub(super) fitted: Vec<Option<bool>>,
}

impl ClassBytes {
    /// The bytes per launch of the classes of `a`, class `i` being of kernel row
    /// `class_row[i]`.
    pub(super) fn of(a: &Aggregate, class_row: &[usize]) -> ClassBytes {
        let classes = &a.classes.list;
        // (launches that measured bytes, their bytes) per bytes group.
        let mut measured: HashMap<BytesGroup, (u64, f64)> = HashMap::new();
        for (c, &row) in classes.iter().zip(class_row) {
            if c.tally.bytes_calls > 0 {
                let e = measured.entry(BytesGroup::of(row, c)).or_default();
                e.0 += c.tally.bytes_calls;
                e.1 += c.tally.bytes;
            }
        }
        let group_mean: Vec<Option<f64>> = classes
            .iter()
            .zip(class_row)
            .map(|(c, &row)| {
                measured
                    .get(&BytesGroup::of(row, c))
                    .map(|(n, sum)| sum / *n as f64)
            })
            .collect();
        // Classes without measured bytes: the sampling windows' fitted rates.
        let fits: Vec<Option<(f64, bool)>> = group_mean
            .iter()
            .enumerate()
            .map(|(i, m)| match m {
                Some(_) => None,
                None => sampled_bytes(a, i),
            })
            .collect();
        let mean: Vec<Option<f64>> = group_mean
            .iter()
            .zip(&fits)
            .map(|(m, f)| m.or(f.map(|(bytes, _)| bytes)))
            .collect();
        ClassBytes {
            mean,
            fitted: fits
                .iter()
                .map(|f| f.map(|(_, reads_only)| reads_only))
                .collect(),
        }
    }

    /// Where the bytes of class `i` come from; `None` without bytes.
    pub(super) fn source(&self, i: usize) -> Option<BytesSource> {
        self.mean[i].map(|_| match self.fitted[i] {
            Some(true) => BytesSource::SampledReads,
            Some(false) => BytesSource::Sampled,
            None => BytesSource::Measured,
        })
    }

    /// The DRAM bytes of all launches of class `i`, whose launches are `tally`.
    pub(super) fn of_class(&self, i: usize, tally: &Tally) -> Option<f64> {
        self.mean[i].map(|m| with_mean(tally, m))
    }

    /// The bytes of each of `rows` kernel rows, class `i` of `classes` being of row
    /// `class_row[i]`.
    pub(super) fn per_row(
        &self,
        classes: &[Class],
        class_row: &[usize],
        rows: usize,
    ) -> Vec<RowBytes> {
        let mut out: Vec<RowBytes> = (0..rows).map(|_| RowBytes::default()).collect();
        for (i, (c, row)) in classes.iter().zip(class_row).enumerate() {
            let r = &mut out[*row];
            r.launches += c.tally.calls;
            if let Some(bytes) = self.of_class(i, &c.tally) {
                r.with_bytes += c.tally.calls;
                r.sum += bytes;
                r.source = BytesSource::and(r.source, self.source(i));
            }
        }
        out
    }
}

/// The DRAM bytes of one kernel row's launches.
#[derive(Default)]
pub(super) struct RowBytes {
    /// Launches with bytes (own, or their group's or fitted mean).
    pub(super) with_bytes: u64,
    pub(super) launches: u64,
    /// The bytes of the launches with bytes.
    pub(super) sum: f64,
    pub(super) source: Option<BytesSource>,
}

impl RowBytes {
    /// The row's bytes: only when every launch has them.
    pub(super) fn total(&self) -> Option<f64> {
        (self.with_bytes == self.launches && self.launches > 0).then_some(self.sum)
    }
}

/// The DRAM bytes per launch of class `i` from the rates fitted to the sampling
/// windows, `(read + write) × mean duration`, and whether they are the reads alone:
/// `None` unless each metric the sampling set has is determined for the class (one
/// it lacks counts as 0, as for a launch whose counters lack it) and one of them is;
/// reads determined and writes not give the reads alone, a lower bound.
fn sampled_bytes(a: &Aggregate, i: usize) -> Option<(f64, bool)> {
    let t = &a.classes.list.get(i)?.tally;
    if t.calls == 0 {
        return None;
    }
    let (rate, reads_only) = sampled_bytes_per_ns(a, i, true)?;
    Some((rate * t.ns as f64 / t.calls as f64, reads_only))
}

/// The DRAM bytes per ns of class `i`'s GPU time fitted to the sampling windows
/// (read + write; see [`sampled_bytes`]), and whether they are the reads alone (only
/// when `reads_alone` allows it).
fn sampled_bytes_per_ns(a: &Aggregate, i: usize, reads_alone: bool) -> Option<(f64, bool)> {
    let fitted: &Fitted = a.fitted.as_ref()?;
    // Outer `None`: in the set and not determined; inner: not in the set.
    let rate = |metric: &str| -> Option<Option<f64>> {
        match fitted.class(i, metric) {
            Some((_, c)) => c.estimate.map(Some),
            None => Some(None),
        }
    };
    match (rate(DRAM_READ)?, rate(DRAM_WRITE)) {
        (Some(r), None) if reads_alone => Some((r, true)),
        (_, None) | (None, Some(None)) => None,
        (r, Some(w)) => Some((r.unwrap_or(0.0) + w.unwrap_or(0.0), false)),
    }
}

/// The DRAM bytes per ns of GPU time fitted to the PM sampling windows of each class
/// whose bytes the report takes from the fit (no launch of its kernel, launch
/// configuration and GEMM shape measured any; the windows determine it), by class
/// key: a launch of `d` ns moved `d` times that, and the class's launches add up to
/// the report's bytes for it.
pub fn fitted_bytes_per_ns(a: &Aggregate) -> HashMap<ClassKey, f64> {
    let group = |c: &Class| {
        (
            c.mangled.clone(),
            c.key.grid,
            c.key.block,
            c.key.gemm.as_ref().map(|g| g.shape.clone()),
        )
    };
    let measured: BTreeSet<_> = a
        .classes
        .list
        .iter()
        .filter(|c| c.tally.bytes_calls > 0)
        .map(group)
        .collect();
    a.classes
        .list
        .iter()
        .enumerate()
        .filter(|(_, c)| !measured.contains(&group(c)))
        .filter_map(|(i, c)| Some((c.key.clone(), sampled_bytes_per_ns(a, i, false)?.0)))
        .collect()
}

/// Why the sampling windows do not determine the DRAM bytes of a class of `row`:
/// the first such class's reason, naming other classes by their kernel names.
pub(super) fn undetermined_bytes(a: &Aggregate, row: usize, class_row: &[usize]) -> Option<String> {
    let fitted = a.fitted.as_ref()?;
    let classes = &a.classes.list;
    let name_of = |c: usize| {
        classes
            .get(c)
            .map_or_else(|| format!("class {c}"), |c| demangle(&c.mangled))
    };
    (0..classes.len())
        .filter(|&i| class_row.get(i) == Some(&row))
        .flat_map(|i| [fitted.class(i, DRAM_READ), fitted.class(i, DRAM_WRITE)])
        .flatten()
        .find_map(|(_, c)| c.undetermined)
        .map(|u| u.describe(name_of))
}
