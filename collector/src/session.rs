//! Reading a session for every command that analyses one (`report`, `trace`,
//! `roofline`, and the report `record` prints): every part and file that verifies is
//! read ([`crate::store`]), damaged files are skipped and noted with the records they
//! held, parts never sealed are noted, and records whose values cannot be true are
//! screened out ([`crate::analysis::integrity`]). Whoever prints the result says what
//! was left out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use wire::Record;

use crate::analysis::integrity::{screen, DamagedFile, Integrity, Unsealed};
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
            .extend(part.damaged.into_iter().map(|d| DamagedFile {
                file: d.file,
                bytes: d.bytes,
                records: d.records,
                reason: d.reason,
            }));
    }
    integrity.unsealed = store
        .unsealed
        .iter()
        .map(|(dir, bytes)| Unsealed {
            dir: dir.clone(),
            bytes: *bytes,
        })
        .collect();
    let (records, impossible) = screen(records);
    integrity.impossible = impossible;
    Ok(Loaded {
        dir: store.dir.clone(),
        records,
        parts: store.parts.len(),
        integrity,
    })
}
