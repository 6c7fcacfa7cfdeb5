//! Draining a session's rings into the session file (docs/SESSION.md), shared by
//! `gpuprof record` and `gpuprof collect`.
//!
//! The caller polls: [`Drainer::discover`] opens rings that appeared in the ring
//! directory (`ring-<pid>.ring`), [`Drainer::drain`] copies every complete frame of
//! every ring into the session file, unchanged, under the pid of the ring's header, and
//! decodes it for the live counts. A ring is done when it was finished before a drain
//! that left it empty (the flag is read *before* draining, so a frame written between
//! the last read and the flag cannot be lost), or when its producer is gone (drained
//! once more; the stream did not end, which becomes a note). A done ring's file is
//! deleted.
//!
//! The ring header's dropped-record counter holds every record the producer lost
//! (whatever the source); the producer also reports its losses in the stream as
//! `Dropped` records when it can. When a ring is done, the part of the header count
//! the stream did not report (all of it when the ring stayed full to the end) is
//! appended as one frame of the collector's own for that pid, `Dropped { source:
//! Ring, records: missing }`, so each lost record is counted once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use wire::ring::{process_alive, RingReader};
use wire::session::SessionWriter;
use wire::{DropSource, Dropped, Record};

/// How long a ring file may stay unreadable (its producer is still writing the header)
/// before it is reported and removed.
const OPEN_GRACE: Duration = Duration::from_secs(2);

struct Ring {
    reader: RingReader,
    pid: u32,
}

/// Counts for the progress line and the final message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub processes: usize,
    pub kernels: u64,
    pub dropped: u64,
}

/// The rings of one session directory and the session file they go to.
pub struct Drainer {
    dir: PathBuf,
    session_path: PathBuf,
    /// `None` after a write error (already noted): frames are then read and dropped.
    writer: Option<SessionWriter>,
    rings: BTreeMap<PathBuf, Ring>,
    /// Ring files that could not be opened yet, with when they were first seen.
    unopened: BTreeMap<PathBuf, Instant>,
    /// Ring files already handled (in case deleting one failed).
    done: BTreeSet<PathBuf>,
    pids: BTreeSet<u32>,
    kernels: u64,
    dropped_in_records: u64,
    dropped_in_headers_done: u64,
    /// Per producer pid, the losses its stream reported in `Dropped` records.
    dropped_reported: BTreeMap<u32, u64>,
    notes: Vec<String>,
}

impl Drainer {
    /// Creates the session file `session_path` for the rings of `dir`.
    pub fn new(dir: &Path, session_path: &Path) -> Result<Drainer> {
        let file = crate::output_file::create_new(session_path).map_err(|e| {
            anyhow::anyhow!(
                "cannot create the session file {}: {e}",
                session_path.display()
            )
        })?;
        let writer = SessionWriter::new(file, session_path)
            .map_err(|e| anyhow::anyhow!("cannot create the session file {e}"))?;
        Ok(Drainer {
            dir: dir.to_path_buf(),
            session_path: session_path.to_path_buf(),
            writer: Some(writer),
            rings: BTreeMap::new(),
            unopened: BTreeMap::new(),
            done: BTreeSet::new(),
            pids: BTreeSet::new(),
            kernels: 0,
            dropped_in_records: 0,
            dropped_in_headers_done: 0,
            dropped_reported: BTreeMap::new(),
            notes: Vec::new(),
        })
    }

    /// Opens rings that appeared since the last call.
    pub fn discover(&mut self) {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => {
                let note = format!("cannot list the ring directory {}: {e}", self.dir.display());
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
                return;
            }
        };
        for entry in entries.flatten() {
            if wire::session_dir::parse_ring_file_name(&entry.file_name()).is_none() {
                continue;
            }
            let path = entry.path();
            if self.rings.contains_key(&path) || self.done.contains(&path) {
                continue;
            }
            match RingReader::open(&path) {
                Ok(reader) => {
                    self.unopened.remove(&path);
                    let pid = reader.header().producer_pid;
                    self.pids.insert(pid);
                    self.rings.insert(path, Ring { reader, pid });
                }
                Err(e) => {
                    let first = *self
                        .unopened
                        .entry(path.clone())
                        .or_insert_with(Instant::now);
                    if first.elapsed() >= OPEN_GRACE {
                        self.notes
                            .push(format!("skipped a ring that cannot be read: {e}"));
                        self.unopened.remove(&path);
                        let _ = std::fs::remove_file(&path);
                        self.done.insert(path);
                    }
                }
            }
        }
    }

    /// Copies every complete frame of every ring to the session file; retires rings
    /// that are done. Returns whether any frame was read.
    pub fn drain(&mut self) -> bool {
        let mut any = false;
        let paths: Vec<PathBuf> = self.rings.keys().cloned().collect();
        for path in paths {
            let mut ring = self.rings.remove(&path).expect("ring listed");
            let finished = ring.reader.is_finished();
            let (read, ok) = self.read_all(&mut ring);
            any |= read > 0;
            if !ok {
                self.retire(path, ring, None);
            } else if finished {
                self.retire(path, ring, Some(true));
            } else if !process_alive(ring.pid) {
                // The producer may have finished just before it exited.
                let finished = ring.reader.is_finished();
                let (read, _) = self.read_all(&mut ring);
                any |= read > 0;
                self.retire(path, ring, Some(finished));
            } else {
                self.rings.insert(path, ring);
            }
        }
        any
    }

    /// Reads what is in the ring now; `false` when the ring is corrupt (noted).
    fn read_all(&mut self, ring: &mut Ring) -> (usize, bool) {
        let mut n = 0;
        loop {
            match ring.reader.try_read() {
                Ok(Some(payload)) => {
                    n += 1;
                    self.take(ring.pid, &payload);
                }
                Ok(None) => return (n, true),
                Err(e) => {
                    self.notes
                        .push(format!("stopped reading process {}: {e}", ring.pid));
                    return (n, false);
                }
            }
        }
    }

    fn take(&mut self, pid: u32, payload: &[u8]) {
        match wire::decode_batch(payload) {
            Ok(records) => {
                for r in &records {
                    match r {
                        Record::Kernel(_) => self.kernels += 1,
                        Record::Dropped(d) => {
                            self.dropped_in_records += d.records;
                            *self.dropped_reported.entry(pid).or_default() += d.records;
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => {
                // Not written: it would stop every reader of the session file there,
                // and the frames after it are good.
                self.notes.push(format!(
                    "process {pid}: skipped a frame of {} bytes that does not decode: {e}",
                    payload.len()
                ));
                return;
            }
        }
        self.append(pid, payload);
    }

    fn append(&mut self, pid: u32, payload: &[u8]) {
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.append(pid, payload) {
                self.notes
                    .push(format!("stopped writing the session file: {e}"));
                self.writer = None;
            }
        }
    }

    /// `finished`: `Some(true)` the stream ended, `Some(false)` its producer is gone,
    /// `None` the ring could not be read to its end (already noted).
    fn retire(&mut self, path: PathBuf, ring: Ring, finished: Option<bool>) {
        let missing = self.unreported_drops(&ring);
        if missing > 0 {
            self.dropped_in_headers_done += missing;
            let dropped = [Record::Dropped(Dropped {
                source: DropSource::Ring,
                records: missing,
            })];
            match wire::encode_batch(&dropped) {
                Ok(payload) => self.append(ring.pid, &payload),
                Err(e) => self.notes.push(format!(
                    "process {}: cannot encode the ring's drop count: {e}",
                    ring.pid
                )),
            }
        }
        if finished == Some(false) {
            self.notes.push(format!(
                "process {} ended without finishing its stream",
                ring.pid
            ));
        }
        drop(ring);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                self.notes
                    .push(format!("cannot remove {}: {e}", path.display()));
            }
        }
        self.done.insert(path);
    }

    /// Whether every ring seen is done (none open, none waiting to be opened).
    pub fn all_done(&self) -> bool {
        self.rings.is_empty() && self.unopened.is_empty()
    }

    /// Stops following the rings still open (their producers still run): what they
    /// hold now is read, the rest is lost, and each gets a note.
    pub fn abandon(&mut self) {
        self.drain();
        let paths: Vec<PathBuf> = self.rings.keys().cloned().collect();
        for path in paths {
            let ring = self.rings.remove(&path).expect("ring listed");
            self.notes.push(format!(
                "process {} was still running when the collector stopped; its later records are lost",
                ring.pid
            ));
            self.retire(path, ring, None);
        }
        self.unopened.clear();
    }

    /// Counts so far (drops include the header counters of open rings).
    pub fn counts(&self) -> Counts {
        let live: u64 = self.rings.values().map(|r| self.unreported_drops(r)).sum();
        Counts {
            processes: self.pids.len(),
            kernels: self.kernels,
            dropped: self.dropped_in_records + self.dropped_in_headers_done + live,
        }
    }

    /// Losses in `ring`'s header counter that its stream has not reported (so far).
    fn unreported_drops(&self, ring: &Ring) -> u64 {
        let reported = self.dropped_reported.get(&ring.pid).copied().unwrap_or(0);
        ring.reader
            .header()
            .dropped_records
            .saturating_sub(reported)
    }

    /// Notes for the user, in the order they arose.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Flushes the session file to disk. Errors if any frame could not be written.
    pub fn finish(&mut self) -> Result<()> {
        match &mut self.writer {
            Some(w) => w
                .sync()
                .map_err(|e| anyhow::anyhow!("cannot write the session file {e}")),
            None => anyhow::bail!(
                "the session file {} is incomplete (see above)",
                self.session_path.display()
            ),
        }
    }
}

/// The `gpuprof: N processes, M kernels, D dropped` line on stderr, at most four times
/// a second and only when stderr is a terminal.
pub struct Progress {
    tty: bool,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    pub fn new() -> Progress {
        use std::io::IsTerminal;
        Progress {
            tty: std::io::stderr().is_terminal(),
            last: None,
            shown: false,
        }
    }

    pub fn update(&mut self, c: &Counts) {
        if !self.tty
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(250))
        {
            return;
        }
        self.last = Some(Instant::now());
        self.shown = true;
        eprint!("\r\x1b[Kgpuprof: {}", describe(c));
    }

    /// Erases the line.
    pub fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
}

/// `3 processes, 12345 kernels, 0 dropped`.
pub fn describe(c: &Counts) -> String {
    format!(
        "{} process{}, {} kernel{}, {} dropped",
        c.processes,
        if c.processes == 1 { "" } else { "es" },
        c.kernels,
        if c.kernels == 1 { "" } else { "s" },
        c.dropped
    )
}

/// The poll period of the collector's loop.
pub const POLL: Duration = Duration::from_millis(20);
