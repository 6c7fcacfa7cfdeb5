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
//! for both). Wall time is the sum of the closed ranges' durations. As the session
//! streams, [`super::range_cover`] applies these rules kernel by kernel and
//! [`super::summary::range_totals`] gives the totals per name.

use std::collections::HashMap;

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
