//! What a report leaves out and says so: damaged files and unsealed parts of the
//! session (filled in by whoever read it, `crate::analysis::session::analyse`) and records whose values cannot
//! be true ([`screen`]).
//!
//! A record is impossible when an interval ends before it starts or lasts longer than
//! [`MAX_SPAN_NS`] (a year: no kernel, copy or API call does, and timestamps near
//! `u64::MAX` would otherwise add up to nonsense), a counter value is not a finite
//! number of at most [`MAX_COUNTER_VALUE`] in magnitude, or a GEMM has a matrix of
//! more than [`MAX_MATRIX_ELEMENTS`] elements. Such records are left out of every
//! analysis and counted by kind; the rest of the session is reported as usual. The
//! bounds keep every sum the analyses make finite: 1e30 is far beyond any count a GPU
//! makes (an exabyte of DRAM traffic is 1e18 bytes), and a matrix of 2^48 elements
//! (256 TB at one byte each) is beyond any GPU's memory.

use std::collections::BTreeMap;

use serde::Serialize;
use wire::Record;

/// The longest interval a record may span: 366 days, in ns.
pub const MAX_SPAN_NS: u64 = 366 * 86_400 * 1_000_000_000;
/// The largest counter value, in magnitude.
pub const MAX_COUNTER_VALUE: f64 = 1e30;
/// The most elements a GEMM operand (A, B or C) may have.
pub const MAX_MATRIX_ELEMENTS: u128 = 1 << 48;

/// A file of the session skipped because it does not verify or decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedFile {
    /// Relative to the session directory (`parts/00000003/kernels.parquet`).
    pub file: String,
    pub bytes: u64,
    /// Records it held, as its part's manifest or the session's index says; `None`
    /// when nothing says (JSON `null`, the table `-`).
    pub records: Option<u64>,
    pub reason: String,
}

impl From<crate::store::Damage> for DamagedFile {
    fn from(d: crate::store::Damage) -> DamagedFile {
        DamagedFile {
            file: d.file,
            bytes: d.bytes,
            records: d.records,
            reason: d.reason,
        }
    }
}

/// A part the collector was writing when it stopped (killed): never sealed, so its
/// records are lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unsealed {
    /// Its directory in the session directory (`.unsealed-00000007`).
    pub dir: String,
    pub bytes: u64,
}

/// Records left out because a value cannot be true.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImpossibleRecords {
    /// The record kind (`kernel`, `memcpy`, ...).
    pub kind: String,
    pub reason: String,
    pub records: u64,
}

/// Everything a report could not use, for it to say so.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Integrity {
    /// In part order.
    pub damaged: Vec<DamagedFile>,
    pub unsealed: Vec<Unsealed>,
    /// Losses the collector saw and could not count (the session index's `lost`).
    pub lost: Vec<String>,
    /// By kind, then reason.
    pub impossible: Vec<ImpossibleRecords>,
}

impl Integrity {
    /// Adds records screened out as impossible ([`screen`]'s counts), keeping one
    /// entry per kind and reason, in that order.
    pub fn add_impossible(&mut self, counts: Vec<ImpossibleRecords>) {
        for c in counts {
            match self
                .impossible
                .iter_mut()
                .find(|i| i.kind == c.kind && i.reason == c.reason)
            {
                Some(i) => i.records += c.records,
                None => self.impossible.push(c),
            }
        }
        self.impossible
            .sort_by(|a, b| (&a.kind, &a.reason).cmp(&(&b.kind, &b.reason)));
    }

    /// Whether the session was read whole (no damaged file, no part left unsealed).
    pub fn file_complete(&self) -> bool {
        self.damaged.is_empty() && self.unsealed.is_empty() && self.lost.is_empty()
    }

    /// Bytes of the damaged files.
    pub fn damaged_bytes(&self) -> u64 {
        self.damaged
            .iter()
            .fold(0u64, |sum, d| sum.saturating_add(d.bytes))
    }

    /// Records the damaged files held, as their manifests say (those that say).
    pub fn damaged_records(&self) -> u64 {
        self.damaged
            .iter()
            .fold(0u64, |sum, d| sum.saturating_add(d.records.unwrap_or(0)))
    }

    /// Damaged files whose records nothing says.
    pub fn damaged_unknown(&self) -> usize {
        self.damaged.iter().filter(|d| d.records.is_none()).count()
    }

    /// The damaged files' records in words: "N records", with "and an unknown number
    /// more" (or "an unknown number of records") where a file's count is unknown.
    pub fn damaged_records_text(&self) -> String {
        let n = self.damaged_records();
        let word = if n == 1 { "record" } else { "records" };
        match (self.damaged_unknown(), n) {
            (0, _) => format!("{n} {word}"),
            (_, 0) => "an unknown number of records".to_string(),
            _ => format!("{n} {word} and an unknown number more"),
        }
    }

    /// Whether there is anything to report.
    pub fn any(&self) -> bool {
        !self.file_complete() || !self.impossible.is_empty()
    }
}

/// Why `record` cannot be true, if it cannot.
pub fn impossible(record: &Record) -> Option<(&'static str, &'static str)> {
    let finite = |values: &[wire::MetricValue]| -> Option<&'static str> {
        values
            .iter()
            .any(|m| !m.value.is_finite() || m.value.abs() > MAX_COUNTER_VALUE)
            .then_some("a counter value is not a finite number up to 1e30")
    };
    match record {
        Record::Kernel(k) => impossible_span(k.start_ns, k.end_ns).map(|r| ("kernel", r)),
        Record::Memcpy(m) => impossible_span(m.start_ns, m.end_ns).map(|r| ("memcpy", r)),
        Record::Memset(m) => impossible_span(m.start_ns, m.end_ns).map(|r| ("memset", r)),
        Record::Launch(l) => impossible_span(l.start_ns, l.end_ns).map(|r| ("launch", r)),
        Record::ApiCall(c) => impossible_span(c.start_ns, c.end_ns).map(|r| ("api call", r)),
        Record::GemmCall(c) => impossible_span(c.start_ns, c.end_ns).map(|r| ("GEMM call", r)),
        Record::Overhead(o) => impossible_span(o.start_ns, o.end_ns).map(|r| ("overhead", r)),
        Record::CounterSample(s) => impossible_span(s.start_ns, s.end_ns)
            .or_else(|| finite(&s.metrics))
            .map(|r| ("counter sample", r)),
        Record::KernelCounters(k) => finite(&k.metrics).map(|r| ("kernel counters", r)),
        Record::Gemm(g) => impossible_shape(g.m, g.n, g.k).map(|r| ("gemm", r)),
        _ => None,
    }
}

/// Why a record that starts at `start` and ends at `end` cannot be true, if it
/// cannot ([`impossible`]).
pub fn impossible_span(start: u64, end: u64) -> Option<&'static str> {
    if end < start {
        Some("ends before it starts")
    } else if end - start > MAX_SPAN_NS {
        Some("lasts longer than a year")
    } else {
        None
    }
}

/// Why a GEMM of `m` x `n` x `k` cannot be true, if it cannot ([`impossible`]).
pub fn impossible_shape(m: u64, n: u64, k: u64) -> Option<&'static str> {
    let (m, n, k) = (m as u128, n as u128, k as u128);
    [m * k, k * n, m * n]
        .iter()
        .any(|e| *e > MAX_MATRIX_ELEMENTS)
        .then_some("a matrix of more than 2^48 elements")
}

/// `records` without the impossible ones, and those counted by kind and reason.
pub fn screen(records: Vec<(u32, Record)>) -> (Vec<(u32, Record)>, Vec<ImpossibleRecords>) {
    let mut counts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let kept = records
        .into_iter()
        .filter(|(_, r)| match impossible(r) {
            Some(key) => {
                *counts.entry(key).or_default() += 1;
                false
            }
            None => true,
        })
        .collect();
    let counts = counts
        .into_iter()
        .map(|((kind, reason), records)| ImpossibleRecords {
            kind: kind.to_string(),
            reason: reason.to_string(),
            records,
        })
        .collect();
    (kept, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::testing::{gemm, kernel, launch};
    use wire::{CounterSample, KernelCounters, MetricValue};

    #[test]
    fn impossible_records_are_left_out_and_counted() {
        let metric = |value| MetricValue { name: 1, value };
        let k = |corr, start, end| Record::Kernel(kernel(1, corr, start, end));
        let records = vec![
            (1, k(1, 10, 20)),
            (1, k(2, 20, 10)),
            (1, k(3, 0, u64::MAX)),
            (1, k(4, 0, MAX_SPAN_NS)),
            (1, k(5, 1, MAX_SPAN_NS + 2)),
            (1, k(6, u64::MAX - 1, u64::MAX)),
            (2, launch(7, 1, 5, 4)),
            (
                2,
                Record::KernelCounters(KernelCounters {
                    correlation_id: 1,
                    group: 0,
                    metrics: vec![metric(1.0), metric(f64::NAN)],
                    range: 0,
                }),
            ),
            (
                2,
                Record::KernelCounters(KernelCounters {
                    correlation_id: 2,
                    group: 0,
                    metrics: vec![metric(f64::MAX)],
                    range: 0,
                }),
            ),
            (
                2,
                Record::KernelCounters(KernelCounters {
                    correlation_id: 3,
                    group: 0,
                    metrics: vec![metric(-1e30), metric(1e30)],
                    range: 0,
                }),
            ),
            (2, gemm(5, 1, 0, 1 << 24, 1 << 24, 1 << 24)),
            (2, gemm(6, 1, 0, 1 << 24, (1 << 24) + 1, 1 << 24)),
            (2, gemm(7, 1, 0, u64::MAX, 1, 0)),
            (
                2,
                Record::CounterSample(CounterSample {
                    device_id: 0,
                    start_ns: 0,
                    end_ns: 10,
                    metrics: vec![metric(f64::NEG_INFINITY)],
                }),
            ),
        ];
        let (kept, counts) = screen(records.clone());
        let kept_ids: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| kept.contains(r))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(kept_ids, [0, 3, 5, 9, 10]);
        let row = |kind: &str, reason: &str, records| ImpossibleRecords {
            kind: kind.into(),
            reason: reason.into(),
            records,
        };
        assert_eq!(
            counts,
            [
                row(
                    "counter sample",
                    "a counter value is not a finite number up to 1e30",
                    1
                ),
                row("gemm", "a matrix of more than 2^48 elements", 2),
                row("kernel", "ends before it starts", 1),
                row("kernel", "lasts longer than a year", 2),
                row(
                    "kernel counters",
                    "a counter value is not a finite number up to 1e30",
                    2
                ),
                row("launch", "ends before it starts", 1),
            ]
        );
    }
}
