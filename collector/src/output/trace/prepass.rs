//! What a Kineto trace needs before it streams the session ([`prepass`]): the
//! session's first timestamp (the files' `baseTimeNanoseconds`) and a header per
//! process (host, command, devices, rank). One pass over the session that decodes
//! only what those need: the process and device tables, the tables whose rows can be
//! refused, and of the others the pid column and the columns that decide whether a
//! record is screened out ([`impossible`]) or is the first. It gives what the same
//! pass over every record would (what the tests hold it to, `prepass_tests.rs`):
//! the records the stream keeps (of the files that verify, screened) are the ones
//! counted.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use arrow_array::types::{UInt32Type, UInt64Type};
use wire::Record;

use super::kineto::{assign_ranks, ProcessHeader};
use crate::analysis::integrity::{impossible, impossible_shape, impossible_span};
use crate::store::columns::values;
use crate::store::tables::{is_record_table, rows_may_fail, TableId, TABLE_IDS};
use crate::store::Store;

/// What the Kineto trace needs before it streams the session.
#[derive(Debug, PartialEq)]
pub struct Prepass {
    /// The first timestamp ([`super::first_timestamp`] over the session).
    pub first: Option<u64>,
    /// What each process's file says of it, ranks assigned ([`assign_ranks`]).
    pub headers: Vec<ProcessHeader>,
}

/// What is gathered part by part.
#[derive(Default)]
struct Gathered {
    first: Option<u64>,
    headers: BTreeMap<u32, ProcessHeader>,
}

impl Gathered {
    fn earliest(&mut self, t: Option<u64>) {
        if let Some(t) = t {
            self.first = Some(self.first.map_or(t, |f| f.min(t)));
        }
    }

    /// A process's record, screened: the first `Process` record of a pid and the first
    /// `Device` record of each of its devices are what its header says.
    fn record(&mut self, pid: u32, r: &Record) {
        let h = self
            .headers
            .entry(pid)
            .or_insert_with(|| ProcessHeader::unknown(pid));
        match r {
            // The first record of a process wins, as the builder takes it.
            Record::Process(p) if h.command.is_empty() && h.host.is_empty() => {
                let devices = std::mem::take(&mut h.devices);
                *h = ProcessHeader::of(p, pid);
                h.devices = devices;
            }
            Record::Device(d) => {
                h.devices.entry(d.id).or_insert_with(|| d.clone());
            }
            _ => {}
        }
    }

    /// A process that has records but none that describe it.
    fn pid(&mut self, pid: u32) {
        self.headers
            .entry(pid)
            .or_insert_with(|| ProcessHeader::unknown(pid));
    }

    fn finish(self) -> Prepass {
        let mut headers: Vec<ProcessHeader> = self.headers.into_values().collect();
        assign_ranks(&mut headers);
        Prepass {
            first: self.first,
            headers,
        }
    }
}

/// How a table's rows are read in the pass, when not whole: which columns after
/// `pid`, and what they decide.
#[derive(Clone, Copy)]
enum Columns {
    /// `start_ns`, `end_ns`: screened by [`impossible_span`]; the start is a first
    /// timestamp when `timed`.
    Span { timed: bool },
    /// `m`, `n`, `k`: screened by [`impossible_shape`].
    Shape,
    /// `timestamp_ns`: a first timestamp.
    Timestamp,
    /// The pid alone.
    Pid,
}

impl Columns {
    fn names(self) -> &'static [&'static str] {
        match self {
            Columns::Span { .. } => &["pid", "start_ns", "end_ns"],
            Columns::Shape => &["pid", "m", "n", "k"],
            Columns::Timestamp => &["pid", "timestamp_ns"],
            Columns::Pid => &["pid"],
        }
    }

    /// Of `row`: whether it is kept, and the time it counts towards the first.
    fn row(self, c: &[&[u64]], row: usize) -> (bool, Option<u64>) {
        match self {
            Columns::Span { timed } => {
                let (start, end) = (c[0][row], c[1][row]);
                let kept = impossible_span(start, end).is_none();
                (kept, (kept && timed).then_some(start))
            }
            Columns::Shape => (
                impossible_shape(c[0][row], c[1][row], c[2][row]).is_none(),
                None,
            ),
            Columns::Timestamp => (true, Some(c[0][row])),
            Columns::Pid => (true, None),
        }
    }
}

/// How table `id` is read in the pass: `None` whole (the process and device tables,
/// and the tables whose rows can be refused).
fn columns_of(id: TableId) -> Option<Columns> {
    Some(match id {
        TableId::Processes | TableId::Devices => return None,
        _ if rows_may_fail(id) => return None,
        TableId::Kernels
        | TableId::Memcpys
        | TableId::Memsets
        | TableId::Launches
        | TableId::ApiCalls
        | TableId::GemmCalls => Columns::Span { timed: true },
        TableId::Overheads => Columns::Span { timed: false },
        TableId::Gemms => Columns::Shape,
        TableId::Markers => Columns::Timestamp,
        _ => Columns::Pid,
    })
}

/// The first timestamp and the processes' headers (see the module documentation).
/// Errors only as [`Store::read_part`] does (a part of a newer session version).
pub fn prepass(store: &Store) -> Result<Prepass> {
    let mut gathered = Gathered::default();
    let whole: Vec<TableId> = TABLE_IDS
        .iter()
        .copied()
        .filter(|&t| columns_of(t).is_some())
        .collect();
    let mut records = Vec::new();
    for i in 0..store.parts.len() {
        records.clear();
        store.read_part_tables(i, &whole, &mut records, |_| {})?;
        for (pid, r) in &records {
            if impossible(r).is_none() {
                gathered.record(*pid, r);
            }
        }
        for &id in TABLE_IDS.iter().filter(|&&t| is_record_table(t)) {
            if let Some(columns) = columns_of(id) {
                // A file that does not verify is skipped, as the stream skips it.
                if let Ok((pids, first)) = table_pass(store, i, id, columns) {
                    pids.into_iter().for_each(|pid| gathered.pid(pid));
                    gathered.earliest(first);
                }
            }
        }
    }
    Ok(gathered.finish())
}

/// The pids of a table's kept records in part `i`, and the earliest time among them
/// that [`super::first_timestamp`] counts; all or nothing.
fn table_pass(
    store: &Store,
    i: usize,
    id: TableId,
    columns: Columns,
) -> Result<(BTreeSet<u32>, Option<u64>), String> {
    let mut pids = BTreeSet::new();
    let mut first: Option<u64> = None;
    store.read_columns(i, id, columns.names(), |c| {
        let pid = values::<UInt32Type>(&c[0])?;
        let rest = c[1..]
            .iter()
            .map(values::<UInt64Type>)
            .collect::<Result<Vec<&[u64]>, String>>()?;
        for (row, &p) in pid.iter().enumerate() {
            let (kept, t) = columns.row(&rest, row);
            if kept {
                pids.insert(p);
            }
            if let Some(t) = t {
                first = Some(first.map_or(t, |f| f.min(t)));
            }
        }
        Ok(())
    })?;
    Ok((pids, first))
}

#[cfg(test)]
#[path = "prepass_tests.rs"]
mod tests;
