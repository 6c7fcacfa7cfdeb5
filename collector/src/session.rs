//! Reading a session for every command that analyses one (`report`, `trace`,
//! `roofline`, and the report `record` prints): every part and file that verifies is
//! read ([`crate::store`]), damaged files are skipped and noted with the records they
//! held, parts never sealed are noted, and records whose values cannot be true are
//! screened out ([`crate::analysis::integrity`]). Whoever prints the result says what
//! was left out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use wire::Record;

use crate::analysis::aggregate::{Aggregate, Aggregator};
use crate::analysis::integrity::{screen, DamagedFile, Integrity, Unsealed};
use crate::store::reader::Damage;
use crate::store::Store;

/// The records of a session and what could not be read.
#[derive(Debug)]
pub struct Loaded {
    /// The session directory.
    pub dir: PathBuf,
    /// Part by part, tables in [`crate::store::tables::TableId`] order, each with the
    /// producer's pid; impossible records left out.
    pub records: Vec<(u32, Record)>,
    /// Parts read.
    pub parts: usize,
    pub integrity: Integrity,
}

/// Reads every part and file that verifies, skipping damaged ones. Errors only when
/// nothing can be read (no session, a session of the old format, a part of a newer
/// version).
pub fn load(session: &Path) -> Result<Loaded> {
    let store = Store::open(session)?;
    let mut records = Vec::new();
    let mut integrity = Integrity::default();
    for i in 0..store.parts.len() {
        let part = store.read_part(i)?;
        records.extend(part.records);
        integrity
            .damaged
            .extend(part.damaged.into_iter().map(damaged_file));
    }
    integrity.unsealed = unsealed(&store);
    let (records, impossible) = screen(records);
    integrity.impossible = impossible;
    Ok(Loaded {
        dir: store.dir.clone(),
        records,
        parts: store.parts.len(),
        integrity,
    })
}

/// A session analysed part by part, and what could not be read.
#[derive(Debug)]
pub struct Analysed {
    /// The session directory.
    pub dir: PathBuf,
    pub aggregate: Aggregate,
    /// Parts read.
    pub parts: usize,
    /// Damaged files, unsealed parts, and the impossible records left out.
    pub integrity: Integrity,
}

/// Reads every part and file that verifies, one part at a time, folding each into the
/// analyses' aggregate ([`crate::analysis::aggregate`]): memory stays bounded whatever
/// the session's length. `progress` is called after each part with (parts read,
/// parts). Errors only when nothing can be read (no session, a session of the old
/// format, a part of a newer version).
pub fn analyse(session: &Path, mut progress: impl FnMut(usize, usize)) -> Result<Analysed> {
    let store = Store::open(session)?;
    let mut aggregator = Aggregator::default();
    let mut integrity = Integrity::default();
    let n = store.parts.len();
    for i in 0..n {
        let part = store.read_part_tables(i, |table| aggregator.add_records(table))?;
        integrity
            .damaged
            .extend(part.damaged.into_iter().map(damaged_file));
        aggregator.end_part();
        progress(i + 1, n);
    }
    integrity.unsealed = unsealed(&store);
    let aggregate = aggregator.finish();
    integrity.impossible = aggregate.impossible_records();
    Ok(Analysed {
        dir: store.dir.clone(),
        aggregate,
        parts: n,
        integrity,
    })
}

fn damaged_file(d: Damage) -> DamagedFile {
    DamagedFile {
        file: d.file,
        bytes: d.bytes,
        records: d.records,
        reason: d.reason,
    }
}

fn unsealed(store: &Store) -> Vec<Unsealed> {
    store
        .unsealed
        .iter()
        .map(|(dir, bytes)| Unsealed {
            dir: dir.clone(),
            bytes: *bytes,
        })
        .collect()
}
