//! Reading sessions for the commands that analyse them (`report`, `roofline`, and the
//! report `record` prints; `trace` reads parts itself, by the same rules): one part
//! at a time, every part and file that verifies ([`crate::store`]), folded into the
//! analyses' aggregate ([`crate::analysis::aggregate`]); damaged files are skipped and
//! noted with the records they held, parts never sealed are noted, and records whose
//! values cannot be true are screened out ([`crate::analysis::integrity`]). Whoever
//! prints the result says what was left out.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analysis::aggregate::{Aggregate, Aggregator};
use crate::analysis::integrity::{DamagedFile, Integrity, Unsealed};
use crate::store::Store;

/// A session analysed part by part, and what could not be read.
#[derive(Debug)]
pub struct Analysed {
    /// The session directory ("N sessions" when several were read together).
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
pub fn analyse(session: &Path, progress: impl FnMut(usize, usize)) -> Result<Analysed> {
    analyse_sessions(&[session.to_path_buf()], progress)
}

/// [`analyse`] for several sessions read together (the ranks of one distributed run,
/// runs of several hosts): one aggregate, each session's processes kept apart
/// ([`Aggregator::next_session`]), damaged files named with their session's
/// directory. `progress` gets (parts read, parts) over all of them. Every session is
/// opened before any is read, so that one that cannot be read at all fails the whole
/// command before any output.
pub fn analyse_sessions(
    sessions: &[PathBuf],
    progress: impl FnMut(usize, usize),
) -> Result<Analysed> {
    analyse_into(Aggregator::default(), sessions, progress)
}

/// [`analyse_sessions`] with launches also summed by the NVTX ranges enclosing them
/// ([`crate::analysis::aggregate::Aggregate::stacks`]), for `gpuprof pprof`.
pub fn analyse_stacks(
    sessions: &[PathBuf],
    progress: impl FnMut(usize, usize),
) -> Result<Analysed> {
    analyse_into(Aggregator::with_stacks(), sessions, progress)
}

fn analyse_into(
    mut aggregator: Aggregator,
    sessions: &[PathBuf],
    mut progress: impl FnMut(usize, usize),
) -> Result<Analysed> {
    let stores = sessions
        .iter()
        .map(|s| Store::open(s))
        .collect::<Result<Vec<Store>>>()?;
    let several = stores.len() > 1;
    let mut integrity = Integrity::default();
    let all: usize = stores.iter().map(|s| s.parts.len()).sum();
    let mut done = 0;
    for store in &stores {
        aggregator.next_session(store.dir.display().to_string());
        let name = |file: String| {
            if several {
                store.dir.join(file).display().to_string()
            } else {
                file
            }
        };
        for i in 0..store.parts.len() {
            let part = store.read_part_tables(i, |table| aggregator.add_records(table))?;
            // A damaged device_samples file is in `part.damaged` already.
            if let Ok(samples) = store.read_device_samples(i) {
                aggregator.add_device_samples(&samples);
            }
            integrity
                .damaged
                .extend(
                    part.damaged
                        .into_iter()
                        .map(DamagedFile::from)
                        .map(|mut d| {
                            d.file = name(d.file);
                            d
                        }),
                );
            aggregator.end_part();
            done += 1;
            progress(done, all);
        }
        integrity
            .damaged
            .extend(
                store
                    .damaged
                    .iter()
                    .cloned()
                    .map(DamagedFile::from)
                    .map(|mut d| {
                        d.file = name(d.file);
                        d
                    }),
            );
        integrity.lost.extend(store.lost().iter().cloned());
        integrity
            .unsealed
            .extend(unsealed(store).into_iter().map(|mut u| {
                u.dir = name(u.dir);
                u
            }));
    }
    let aggregate = aggregator.finish();
    integrity.impossible = aggregate.impossible_records();
    Ok(Analysed {
        dir: match &stores[..] {
            [one] => one.dir.clone(),
            _ => PathBuf::from(format!("{} sessions", stores.len())),
        },
        aggregate,
        parts: all,
        integrity,
    })
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
