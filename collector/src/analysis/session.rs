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
use crate::analysis::integrity::{impossible, DamagedFile, Integrity, Unsealed};
use std::sync::mpsc::{Receiver, SyncSender};

use wire::Record;

use crate::store::device_samples::DeviceSample;
use crate::store::tables::TableId;
use crate::store::{Part, Store};

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

/// Chunks of records read ahead of the one being folded in (each at most a few
/// thousand records: [`Store::read_part_tables`]).
const IN_FLIGHT: usize = 16;

/// What the reading thread hands to the folding one, in session order.
enum Read {
    /// The next session's records follow (index into the sessions read).
    Session(usize),
    /// Records of the part, screened ([`crate::analysis::integrity::impossible`]):
    /// those kept, how many were read, and the impossible ones left out.
    Records {
        kept: Vec<(u32, Record)>,
        read: u64,
        screened: Vec<(u32, (&'static str, &'static str))>,
    },
    /// The end of a part: what of it could not be read, and its NVML readings.
    EndPart {
        part: Part,
        samples: Result<Vec<DeviceSample>, String>,
    },
}

/// [`analyse_sessions`] for what the kernel rows need ([`Aggregator::kernel_rows_only`]:
/// no launches, no NVTX ranges), for `gpuprof roofline`.
pub fn analyse_kernel_rows(
    sessions: &[PathBuf],
    progress: impl FnMut(usize, usize),
) -> Result<Analysed> {
    analyse_into(Aggregator::default().kernel_rows_only(), sessions, progress)
}

fn analyse_into(
    aggregator: Aggregator,
    sessions: &[PathBuf],
    mut progress: impl FnMut(usize, usize),
) -> Result<Analysed> {
    let stores = sessions
        .iter()
        .map(|s| Store::open(s))
        .collect::<Result<Vec<Store>>>()?;
    let mut folded = Folded::new(aggregator);
    let all: usize = stores.iter().map(|s| s.parts.len()).sum();
    folded.fold(&stores, 0, &mut |done| {
        progress(done, all);
        true
    })?;
    Ok(folded.conclude(&stores))
}

/// An aggregate of the parts read so far, and the damage found in them.
pub(super) struct Folded {
    aggregator: Aggregator,
    integrity: Integrity,
    /// Parts read, over every session.
    pub(super) parts: usize,
}

impl Folded {
    pub(super) fn new(aggregator: Aggregator) -> Folded {
        Folded {
            aggregator,
            integrity: Integrity::default(),
            parts: 0,
        }
    }

    /// Reads the parts of `stores` from part `from` of the first (every part of the
    /// others) and folds them in, in order; `progress` gets the parts read so far
    /// after each, and stops the reading after that part by answering `false`.
    pub(super) fn fold(
        &mut self,
        stores: &[Store],
        from: usize,
        progress: &mut dyn FnMut(usize) -> bool,
    ) -> Result<()> {
        let several = stores.len() > 1;
        // One thread reads and decodes the parts, in order, while this one folds them
        // in: the two take about the same time, and a few chunks are all that is in
        // flight.
        let (to_fold, read) = std::sync::mpsc::sync_channel::<Read>(IN_FLIGHT);
        let (give_back, reuse) = std::sync::mpsc::channel::<Vec<(u32, Record)>>();
        let aggregator = &mut self.aggregator;
        let integrity = &mut self.integrity;
        let done = &mut self.parts;
        std::thread::scope(|scope| -> Result<()> {
            // The sender moves to the reader: the channel closes when it is done.
            let skip = aggregator.skipped_tables();
            let reader = scope.spawn(move || read_parts(stores, from, skip, &to_fold, &reuse));
            let mut store = 0;
            for message in read {
                match message {
                    Read::Session(i) => {
                        store = i;
                        aggregator.next_session(stores[i].dir.display().to_string());
                    }
                    Read::Records {
                        mut kept,
                        read,
                        screened,
                    } => {
                        aggregator.add_screened(kept.drain(..), read, &screened);
                        // The reader may be done: then the chunk is dropped here.
                        let _ = give_back.send(kept);
                    }
                    Read::EndPart { part, samples } => {
                        // A damaged device_samples file is in `part.damaged` already.
                        if let Ok(samples) = samples {
                            aggregator.add_device_samples(&samples);
                        }
                        let store = &stores[store];
                        integrity.damaged.extend(
                            part.damaged
                                .into_iter()
                                .map(|d| named(DamagedFile::from(d), store, several)),
                        );
                        aggregator.add_skipped_rows(part.skipped_rows);
                        aggregator.end_part();
                        *done += 1;
                        if !progress(*done) {
                            // The reader stops at its next send.
                            break;
                        }
                    }
                }
            }
            reader.join().expect("the part reader does not panic")
        })
    }

    /// The analysis of `stores`, every part of which has been folded in: the
    /// sessions' own damage, losses and unsealed parts added.
    pub(super) fn conclude(self, stores: &[Store]) -> Analysed {
        let Folded {
            aggregator,
            mut integrity,
            parts,
        } = self;
        let several = stores.len() > 1;
        for store in stores {
            integrity.damaged.extend(
                store
                    .damaged
                    .iter()
                    .cloned()
                    .map(|d| named(DamagedFile::from(d), store, several)),
            );
            integrity.lost.extend(store.lost().iter().cloned());
            integrity
                .unsealed
                .extend(unsealed(store).into_iter().map(|mut u| {
                    u.dir = in_session(u.dir, store, several);
                    u
                }));
        }
        let aggregate = aggregator.finish();
        integrity.impossible = aggregate.impossible_records();
        Analysed {
            dir: match stores {
                [one] => one.dir.clone(),
                _ => PathBuf::from(format!("{} sessions", stores.len())),
            },
            aggregate,
            parts,
            integrity,
        }
    }
}

/// Reads every part of every session in order (the first from part `from`) and hands
/// them over (see [`Read`]), reusing the chunks given back; stops early when the
/// folding side is gone.
fn read_parts(
    stores: &[Store],
    from: usize,
    skip: &[TableId],
    to_fold: &SyncSender<Read>,
    reuse: &Receiver<Vec<(u32, Record)>>,
) -> Result<()> {
    // Only a slot: each chunk is swapped out of it for one given back.
    let mut buffer = Vec::new();
    for (i, store) in stores.iter().enumerate() {
        // A session is announced when read from its start (a session followed while
        // it is written was announced by the first read).
        let first = if i == 0 { from } else { 0 };
        if first == 0 && to_fold.send(Read::Session(i)).is_err() {
            return Ok(());
        }
        for p in first..store.parts.len() {
            let part = store.read_part_tables(p, skip, &mut buffer, |chunk| {
                let mut kept = reuse.try_recv().unwrap_or_default();
                std::mem::swap(&mut kept, chunk);
                // Screened here, off the folding thread, which is the busier one.
                let read = kept.len() as u64;
                let mut screened = Vec::new();
                kept.retain(|(pid, r)| match impossible(r) {
                    Some(key) => {
                        screened.push((*pid, key));
                        false
                    }
                    None => true,
                });
                let _ = to_fold.send(Read::Records {
                    kept,
                    read,
                    screened,
                });
            })?;
            let samples = store.read_device_samples(p);
            if to_fold.send(Read::EndPart { part, samples }).is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// A damaged file named with its session's directory when several are read.
fn named(mut d: DamagedFile, store: &Store, several: bool) -> DamagedFile {
    d.file = in_session(d.file, store, several);
    d
}

/// `name` (relative to `store`'s directory), with that directory before it when
/// several sessions are read.
fn in_session(name: String, store: &Store, several: bool) -> String {
    if several {
        store.dir.join(name).display().to_string()
    } else {
        name
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
