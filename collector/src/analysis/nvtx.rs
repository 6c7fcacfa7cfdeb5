//! NVTX ranges: pairing CUPTI's marker records into ranges, and the GPU time of the
//! kernels each range covers.
//!
//! Pairing: a marker with the START flag opens a range under its `(pid, id)`; the next
//! marker with the END flag and the same `(pid, id)` closes it. CUPTI gives a range's
//! start and end the same id, for push/pop and start/end ranges alike. An end with no
//! open start is counted in [`Ranges::unmatched_ends`]; a start never closed is an
//! *open* range (it has no wall time and covers no kernels). A second start under an
//! id that is still open leaves the first one open. Instantaneous marks and the
//! synchronisation markers are not ranges and are ignored.
//!
//! A range whose start marker names a thread (`thread_id != 0`) is a push/pop range of
//! that thread; one without (`thread_id == 0`) is a start/end range of the process.
//!
//! Which kernels a closed range `[start, end)` covers:
//! - a **start/end range** of process P: every kernel of P whose GPU start time is
//!   in `[start, end)`;
//! - a **push/pop range** of thread T in process P: every kernel of P whose
//!   correlation id is that of a `Launch` record of P made on thread T with its API
//!   entry time in `[start, end)`: the kernels the thread launched inside the range,
//!   wherever and whenever they ran on the GPU. A graph launch's correlation id
//!   covers every kernel of the graph. Kernels without a `Launch` record count for no
//!   push/pop range.
//!
//! Per range name (domain and message), a kernel counts once however many ranges of
//! that name cover it (a recursive range does not double its kernels), while ranges
//! of different names each count it (a kernel inside "layer" inside "decode" counts
//! for both). Wall time is the sum of the closed ranges' durations.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use wire::{marker_flags, Record};

use super::names::{lookup, strings};

/// How a range was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeKind {
    /// `nvtxRangePush` / `nvtxRangePop`: one thread.
    PushPop,
    /// `nvtxRangeStart` / `nvtxRangeEnd`: the process.
    StartEnd,
}

/// One range instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub pid: u32,
    pub id: u32,
    pub kind: RangeKind,
    /// The thread of a push/pop range, 0 for start/end ranges.
    pub thread_id: u64,
    /// The message; empty when there is none.
    pub name: String,
    /// The domain; empty for the default domain.
    pub domain: String,
    pub start_ns: u64,
    /// `None` for a range never closed.
    pub end_ns: Option<u64>,
}

/// What [`pair_ranges`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ranges {
    /// In the order their starts appear.
    pub ranges: Vec<Range>,
    /// Ends without an open start.
    pub unmatched_ends: u64,
}

/// Totals per range name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeStats {
    /// Empty for the default domain.
    pub domain: String,
    pub name: String,
    /// Closed ranges.
    pub count: u64,
    /// Ranges never closed.
    pub open: u64,
    /// Sum of the closed ranges' durations.
    pub wall_ns: u64,
    /// Distinct kernels covered (see the module documentation).
    pub kernels: u64,
    /// Sum of those kernels' durations.
    pub gpu_ns: u64,
}

/// What [`range_stats`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RangeTotals {
    /// By wall time, longest first (ties: domain, then name).
    pub stats: Vec<RangeStats>,
    pub unmatched_ends: u64,
}

/// Pairs start and end markers into ranges (see the module documentation).
pub fn pair_ranges(records: &[(u32, Record)]) -> Ranges {
    let strings = strings(records);
    let mut out = Ranges::default();
    let mut open: HashMap<(u32, u32), usize> = HashMap::new();
    for (pid, record) in records {
        let Record::Marker(m) = record else { continue };
        if m.flags & marker_flags::START != 0 {
            open.insert((*pid, m.id), out.ranges.len());
            out.ranges.push(Range {
                pid: *pid,
                id: m.id,
                kind: if m.thread_id != 0 {
                    RangeKind::PushPop
                } else {
                    RangeKind::StartEnd
                },
                thread_id: m.thread_id,
                name: lookup(&strings, *pid, m.name).unwrap_or("").to_string(),
                domain: lookup(&strings, *pid, m.domain).unwrap_or("").to_string(),
                start_ns: m.timestamp_ns,
                end_ns: None,
            });
        } else if m.flags & marker_flags::END != 0 {
            match open.remove(&(*pid, m.id)) {
                Some(i) => out.ranges[i].end_ns = Some(m.timestamp_ns),
                None => out.unmatched_ends += 1,
            }
        }
    }
    out
}

/// For each range of `paired`, in its order, the kernels it covers (see the module
/// documentation for the rules): indices into `records`; none for a range still open.
pub fn kernels_in_ranges(records: &[(u32, Record)], paired: &Ranges) -> Vec<Vec<usize>> {
    // Kernels per process sorted by start, and per (pid, correlation id).
    let mut by_start: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
    let mut by_correlation: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    // Launches per (pid, thread), sorted by entry time: (entry, correlation id).
    let mut launches: HashMap<(u32, u64), Vec<(u64, u32)>> = HashMap::new();
    for (i, (pid, record)) in records.iter().enumerate() {
        match record {
            Record::Kernel(k) => {
                by_start.entry(*pid).or_default().push((k.start_ns, i));
                by_correlation
                    .entry((*pid, k.correlation_id))
                    .or_default()
                    .push(i);
            }
            Record::Launch(l) => launches
                .entry((*pid, l.thread_id))
                .or_default()
                .push((l.start_ns, l.correlation_id)),
            _ => {}
        }
    }
    by_start.values_mut().for_each(|v| v.sort_unstable());
    launches.values_mut().for_each(|v| v.sort_unstable());
    paired
        .ranges
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            let Some(end) = r.end_ns else { return out };
            match r.kind {
                RangeKind::StartEnd => {
                    if let Some(ks) = by_start.get(&r.pid) {
                        let from = ks.partition_point(|(s, _)| *s < r.start_ns);
                        out.extend(
                            ks[from..]
                                .iter()
                                .take_while(|(s, _)| *s < end)
                                .map(|(_, i)| *i),
                        );
                    }
                }
                RangeKind::PushPop => {
                    if let Some(ls) = launches.get(&(r.pid, r.thread_id)) {
                        let from = ls.partition_point(|(s, _)| *s < r.start_ns);
                        for (_, corr) in ls[from..].iter().take_while(|(s, _)| *s < end) {
                            if let Some(ks) = by_correlation.get(&(r.pid, *corr)) {
                                out.extend(ks.iter().copied());
                            }
                        }
                    }
                }
            }
            out
        })
        .collect()
}

/// Totals per `(domain, name)` (see the module documentation for the rules).
pub fn range_stats(records: &[(u32, Record)]) -> RangeTotals {
    let paired = pair_ranges(records);
    let covered = kernels_in_ranges(records, &paired);
    let duration = |i: usize| match &records[i].1 {
        Record::Kernel(k) => k.end_ns.saturating_sub(k.start_ns),
        _ => 0,
    };

    struct Acc {
        count: u64,
        open: u64,
        wall_ns: u64,
        kernels: HashSet<usize>,
    }
    let mut acc: BTreeMap<(String, String), Acc> = BTreeMap::new();
    for (r, kernels) in paired.ranges.iter().zip(covered) {
        let a = acc
            .entry((r.domain.clone(), r.name.clone()))
            .or_insert(Acc {
                count: 0,
                open: 0,
                wall_ns: 0,
                kernels: HashSet::new(),
            });
        let Some(end) = r.end_ns else {
            a.open += 1;
            continue;
        };
        a.count += 1;
        a.wall_ns = a.wall_ns.saturating_add(end.saturating_sub(r.start_ns));
        a.kernels.extend(kernels);
    }

    let mut stats: Vec<RangeStats> = acc
        .into_iter()
        .map(|((domain, name), a)| RangeStats {
            domain,
            name,
            count: a.count,
            open: a.open,
            wall_ns: a.wall_ns,
            kernels: a.kernels.len() as u64,
            gpu_ns: a
                .kernels
                .iter()
                .fold(0u64, |sum, i| sum.saturating_add(duration(*i))),
        })
        .collect();
    // Stable sort: equal wall times keep the (domain, name) order of the BTreeMap.
    stats.sort_by_key(|s| std::cmp::Reverse(s.wall_ns));
    RangeTotals {
        stats,
        unmatched_ends: paired.unmatched_ends,
    }
}
