//! Draining a session's rings into the session's parts (docs/SESSION.md), shared by
//! `gpuprof record` and `gpuprof collect`.
//!
//! The caller polls: [`Drainer::discover`] opens rings that appeared in the ring
//! directory (`ring-<pid>.ring`), [`Drainer::drain`] decodes every complete frame of
//! every ring and appends its records to the session's tables under the pid of the
//! ring's header, and seals a part when one is due
//! ([`crate::store::PartLimits`]). A ring is done when it was finished before a drain
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

use crate::analysis::live::snapshot::{Collection, Snapshot};
use crate::analysis::live::{GpuFields, Live};
use crate::store::device_samples::DeviceSample;
use crate::store::writer::Lost;
use crate::store::{PartLimits, SealFailure, StoreWriter};
use anyhow::Result;
use wire::ring::{process_alive, RingReader, MAX_IN_CUPTI, MAX_UNWRITTEN};
use wire::{DropSource, Dropped, Record};

/// How long a ring file may stay unreadable (its producer is still writing the header)
/// before it is reported and removed.
const OPEN_GRACE: Duration = Duration::from_secs(2);

struct Ring {
    reader: RingReader,
    pid: u32,
    /// When `/proc/<pid>/maps` last showed the ring mapped by its producer.
    verified: Option<Instant>,
    /// Since when a running producer has been seen without the ring mapped.
    unmapped_since: Option<Instant>,
    /// When a frame was last read (or the ring opened).
    last_data: Instant,
    /// Not its producer's (a stale or forged ring): its header's counts are not
    /// believed.
    forged: bool,
}

/// How often a live producer is checked to still map its ring.
const VERIFY_EVERY: Duration = Duration::from_secs(1);
/// How long a running producer may be seen without its ring mapped before the ring
/// is taken as not its own: a process that is exiting has unmapped everything some
/// time before it becomes a zombie, which `process_alive` tells.
const UNMAPPED_GRACE: Duration = Duration::from_secs(1);

/// What one producer's stream delivered, to compare with its header's tally.
#[derive(Debug, Default, Clone, Copy)]
struct Received {
    /// Records other than `Dropped` and `End`.
    records: u64,
    kernels: u64,
    /// Reported in `Dropped { source: Cupti }`.
    cupti_dropped: u64,
}

/// Counts for the progress line and the final message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub processes: usize,
    /// Kernels in the session: read from the rings and written (those that could not
    /// be written are counted in `dropped`).
    pub kernels: u64,
    pub dropped: u64,
    /// Records read from the rings.
    pub records: u64,
    /// How full the fullest ring was before the last drain read it, in percent.
    pub ring_fill_pct: u32,
}

/// The rings of one session directory and the session they go to.
pub struct Drainer {
    dir: PathBuf,
    out_dir: PathBuf,
    /// `None` after a write error (already noted): frames are then read and counted.
    writer: Option<StoreWriter>,
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
    /// Per producer pid, what reached us (see [`Received`]).
    received: BTreeMap<u32, Received>,
    /// Records read from rings that could not be written to the session.
    unsaved: u64,
    /// Of those, kernels.
    unsaved_kernels: u64,
    /// The session's file system is full: records are counted, not written, and per
    /// pid what is owed goes into a last part in the room of the reserve file.
    full: bool,
    unsaved_by_pid: BTreeMap<u32, u64>,
    /// Accounting records (drop counts) that could not be written.
    owed: BTreeMap<u32, Vec<Record>>,
    /// Whether the session lacks something a complete run would have (see
    /// [`Drainer::incomplete`]).
    incomplete: bool,
    notes: Vec<String>,
    /// The frame being read, its allocation kept from frame to frame.
    frame: Vec<u8>,
    /// [`Counts::ring_fill_pct`].
    fill_pct: u32,
    /// With `--serve`: the live aggregate the session's records are also folded
    /// into, and per producer pid the records its ring's tally says it produced (at
    /// the last update, or when the ring was retired) and the largest share of its
    /// ring found filled since the last update.
    live: Option<Live>,
    produced: BTreeMap<u32, u64>,
    fill: BTreeMap<u32, f64>,
}

impl Drainer {
    /// Starts the session in `out_dir` (an empty directory of ours) for the rings of
    /// `dir`.
    pub fn new(dir: &Path, out_dir: &Path, limits: PartLimits) -> Result<Drainer> {
        let writer = StoreWriter::create(out_dir, limits).map_err(|e| {
            anyhow::anyhow!("cannot start the session in {}: {e}", out_dir.display())
        })?;
        Ok(Drainer {
            dir: dir.to_path_buf(),
            out_dir: out_dir.to_path_buf(),
            writer: Some(writer),
            rings: BTreeMap::new(),
            unopened: BTreeMap::new(),
            done: BTreeSet::new(),
            pids: BTreeSet::new(),
            kernels: 0,
            dropped_in_records: 0,
            dropped_in_headers_done: 0,
            dropped_reported: BTreeMap::new(),
            received: BTreeMap::new(),
            unsaved: 0,
            unsaved_kernels: 0,
            full: false,
            unsaved_by_pid: BTreeMap::new(),
            owed: BTreeMap::new(),
            incomplete: false,
            notes: Vec::new(),
            frame: Vec::new(),
            fill_pct: 0,
            live: None,
            produced: BTreeMap::new(),
            fill: BTreeMap::new(),
        })
    }

    /// The session directory was renamed to `out_dir`.
    pub fn moved_to(&mut self, out_dir: &Path) {
        self.out_dir = out_dir.to_path_buf();
        if let Some(w) = &mut self.writer {
            w.moved_to(out_dir);
        }
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
                    if let Some(why) = foreign(&entry.file_name(), pid) {
                        // Not deleted: gpuprof did not make it.
                        self.notes
                            .push(format!("skipped {}: {why}", path.display()));
                        self.incomplete = true;
                        self.done.insert(path);
                        continue;
                    }
                    self.pids.insert(pid);
                    self.rings.insert(
                        path,
                        Ring {
                            reader,
                            pid,
                            verified: None,
                            unmapped_since: None,
                            last_data: Instant::now(),
                            forged: false,
                        },
                    );
                }
                Err(e) => {
                    let first = *self
                        .unopened
                        .entry(path.clone())
                        .or_insert_with(Instant::now);
                    if first.elapsed() >= OPEN_GRACE {
                        // Deleted only when it is a file of this user's.
                        let kept = match wire::session_dir::remove_own_file(&path) {
                            Ok(()) => String::new(),
                            Err(why) => format!(" (left in place: {why})"),
                        };
                        self.notes
                            .push(format!("skipped a ring that cannot be read: {e}{kept}"));
                        // As a ring read only in part: its records are not in the session.
                        self.incomplete = true;
                        self.unopened.remove(&path);
                        self.done.insert(path);
                    }
                }
            }
        }
    }

    /// Reads every complete frame of every ring into the session; retires rings that
    /// are done; seals a part when one is due. Returns whether any frame was read.
    pub fn drain(&mut self) -> bool {
        let any = self.drain_rings();
        if self.writer.as_ref().is_some_and(|w| w.due()) && !self.full {
            self.seal();
        }
        any
    }

    fn drain_rings(&mut self) -> bool {
        let mut any = false;
        let paths: Vec<PathBuf> = self.rings.keys().cloned().collect();
        self.fill_pct = 0;
        for path in paths {
            let mut ring = self.rings.remove(&path).expect("ring listed");
            self.fill_pct = self.fill_pct.max(ring.reader.fill_pct());
            if self.live.is_some() {
                self.note_fill(&ring);
            }
            let finished = ring.reader.is_finished();
            let (read, ok) = self.read_all(&mut ring);
            any |= read > 0;
            if read > 0 {
                ring.last_data = Instant::now();
            }
            if !ok {
                self.retire(path, ring, None);
            } else if finished {
                self.retire(path, ring, Some(true));
            } else if let Some(len) = truncated(&path, &ring.reader) {
                // Its producer stops writing a ring cut under it; not a forged ring.
                self.lose_uncounted(format!(
                    "process {}: another process truncated {} to {len} bytes; what the \
                     process made after that is lost",
                    ring.pid,
                    path.display()
                ));
                self.retire(path, ring, None);
            } else if !self.producer_maps(&mut ring) {
                if ring.reader.is_finished() {
                    // It finished and unmapped since the flag was read above.
                    let (read, _) = self.read_all(&mut ring);
                    any |= read > 0;
                    self.retire(path, ring, Some(true));
                    continue;
                }
                self.notes.push(format!(
                    "process {} runs but does not map {}: not its producer (a stale or forged ring); stopped reading it, its header's counts not believed",
                    ring.pid,
                    path.display()
                ));
                ring.forged = true;
                self.retire(path, ring, None);
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

    /// A loss nobody can count: a note for the user, and in the session's index
    /// (the session is then incomplete to every reader).
    fn lose_uncounted(&mut self, what: String) {
        if let Some(w) = self.writer.as_mut() {
            w.note_loss(what.clone());
        }
        self.notes.push(what);
    }

    /// Whether the ring's producer still maps it, checked against `/proc` at most once
    /// per [`VERIFY_EVERY`] (true in between, and when `/proc` cannot tell). A process
    /// that has exited is left to the liveness check; one that runs without the ring
    /// mapped is not its producer once that has lasted [`UNMAPPED_GRACE`].
    fn producer_maps(&self, ring: &mut Ring) -> bool {
        if ring.verified.is_some_and(|t| t.elapsed() < VERIFY_EVERY) {
            return true;
        }
        match ring.reader.mapped_by(ring.pid) {
            Some(false) if process_alive(ring.pid) => {
                // It may be exiting (its maps empty, not yet a zombie): only one that
                // keeps running without the ring is not its producer.
                let since = *ring.unmapped_since.get_or_insert_with(Instant::now);
                since.elapsed() < UNMAPPED_GRACE
            }
            _ => {
                ring.unmapped_since = None;
                ring.verified = Some(Instant::now());
                true
            }
        }
    }

    /// Stops following rings whose producers still run but have written nothing for
    /// `idle` (`gpuprof record` calls this once the program it started has exited:
    /// a process it left behind must not keep the session open forever).
    pub fn retire_idle(&mut self, idle: Duration) {
        let paths: Vec<PathBuf> = self
            .rings
            .iter()
            .filter(|(_, r)| r.last_data.elapsed() >= idle)
            .map(|(p, _)| p.clone())
            .collect();
        for path in paths {
            let ring = self.rings.remove(&path).expect("ring listed");
            self.lose_uncounted(format!(
                "process {} still runs, silent for {} s after the program exited; its later records are lost",
                ring.pid,
                idle.as_secs()
            ));
            self.retire(path, ring, None);
        }
    }

    /// Reads what is in the ring now; `false` when the ring is corrupt (noted).
    fn read_all(&mut self, ring: &mut Ring) -> (usize, bool) {
        let mut n = 0;
        // One buffer for every frame: no allocation per frame.
        let mut payload = std::mem::take(&mut self.frame);
        let ok = loop {
            match ring.reader.try_read_into(&mut payload) {
                Ok(true) => {
                    n += 1;
                    self.take(ring.pid, &payload);
                }
                Ok(false) => break true,
                Err(e) => {
                    self.lose_uncounted(format!("stopped reading process {}: {e}", ring.pid));
                    break false;
                }
            }
        };
        self.frame = payload;
        (n, ok)
    }

    fn take(&mut self, pid: u32, payload: &[u8]) {
        let records = match wire::decode_batch(payload) {
            Ok(records) => {
                let got = self.received.entry(pid).or_default();
                for r in &records {
                    match r {
                        Record::Kernel(_) => {
                            self.kernels += 1;
                            got.kernels += 1;
                            got.records += 1;
                        }
                        Record::Dropped(d) => {
                            self.dropped_in_records =
                                self.dropped_in_records.saturating_add(d.records);
                            let reported = self.dropped_reported.entry(pid).or_default();
                            *reported = reported.saturating_add(d.records);
                            if d.source == DropSource::Cupti {
                                got.cupti_dropped = got.cupti_dropped.saturating_add(d.records);
                            }
                        }
                        Record::End(_) => {}
                        _ => got.records += 1,
                    }
                }
                records
            }
            Err(e) => {
                // Its records are unknown; the frames after it are good.
                self.notes.push(format!(
                    "process {pid}: skipped a frame of {} bytes that does not decode: {e}",
                    payload.len()
                ));
                self.incomplete = true;
                return;
            }
        };
        self.append(pid, records);
    }

    /// Adds `records` of `pid` to the session (and the live aggregate), or counts
    /// them as not saved when it can no longer be written.
    fn append(&mut self, pid: u32, records: Vec<Record>) {
        match &mut self.writer {
            Some(w) if !self.full => {
                w.push_all(pid, &records);
                let due = w.due();
                if let Some(live) = &mut self.live {
                    live.add(pid, records);
                }
                if due {
                    self.seal();
                }
            }
            _ => self.not_saved(pid, records),
        }
    }

    /// Folds every record saved from now on into `live` as well (`--serve`).
    pub fn serve(&mut self, live: Live) {
        self.live = Some(live);
    }

    /// Notes how full `ring` is before it is drained.
    fn note_fill(&mut self, ring: &Ring) {
        let h = ring.reader.header();
        let used = h.write_pos.saturating_sub(h.read_pos) as f64;
        let share = if h.capacity == 0 {
            0.0
        } else {
            (used / h.capacity as f64).min(1.0)
        };
        let f = self.fill.entry(ring.pid).or_default();
        *f = f.max(share);
    }

    /// What the collector has seen, for the live series; the fill shares start over.
    fn collection(&mut self) -> Collection {
        for r in self.rings.values() {
            self.produced.insert(r.pid, r.reader.header().produced);
        }
        let fill = std::mem::take(&mut self.fill);
        Collection {
            produced: self.produced.values().sum(),
            received: self.received.values().map(|r| r.records).sum(),
            ring_fill: fill
                .into_iter()
                .filter(|(pid, _)| self.rings.values().any(|r| r.pid == *pid))
                .collect(),
        }
    }

    /// A live update (`--serve`): `None` when not serving.
    pub fn live_update(&mut self) -> Option<Snapshot> {
        let collection = self.collection();
        let mut s = self.live.as_mut()?.update();
        s.collection = collection;
        Some(s)
    }

    /// The final live values, once every record has been drained, and the DCGM
    /// fields not yet shown in up to `steps` updates ([`Live::finish_at`]).
    pub fn live_finish(&mut self, steps: usize) -> Option<(Snapshot, Vec<GpuFields>)> {
        let collection = self.collection();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let (mut s, tail) = self.live.as_mut()?.finish_at(now, steps);
        s.collection = collection;
        Some((s, tail))
    }

    fn not_saved(&mut self, pid: u32, records: Vec<Record>) {
        let mut lost = Lost::default();
        for r in records {
            match r {
                Record::Dropped(_) | Record::End(_) => lost.owed.push(r),
                Record::Kernel(_) => {
                    lost.records += 1;
                    lost.kernels += 1;
                }
                _ => lost.records += 1,
            }
        }
        self.count_unsaved(pid, lost);
    }

    /// What of `pid` was not written: its records are counted, its drop counts and
    /// the end of its stream are owed to the session's last part.
    fn count_unsaved(&mut self, pid: u32, lost: Lost) {
        self.unsaved += lost.records;
        self.unsaved_kernels += lost.kernels;
        *self.unsaved_by_pid.entry(pid).or_default() += lost.records;
        self.owed.entry(pid).or_default().extend(lost.owed);
    }

    /// Seals the part being filled; a part that cannot be written is counted as not
    /// saved, and on a full file system nothing more is written.
    fn seal(&mut self) {
        let Some(w) = &mut self.writer else { return };
        let Err(SealFailure { error, full, lost }) = w.seal() else {
            return;
        };
        self.incomplete = true;
        let records: u64 = lost.values().map(|l| l.records).sum();
        for (pid, l) in lost {
            self.count_unsaved(pid, l);
        }
        if full {
            self.notes.push(format!(
                "the file system of {} is full ({error}): a part of {records} records was not written; later records are counted, not written",
                self.out_dir.display()
            ));
            self.full = true;
        } else {
            self.notes.push(format!(
                "stopped writing the session in {}: {error}; a part of {records} records was not written, later records are counted",
                self.out_dir.display()
            ));
            self.writer = None;
        }
    }

    /// `finished`: `Some(true)` the stream ended, `Some(false)` its producer is gone,
    /// `None` the ring could not be read to its end (already noted).
    fn retire(&mut self, path: PathBuf, ring: Ring, finished: Option<bool>) {
        if self.live.is_some() {
            self.produced
                .insert(ring.pid, ring.reader.header().produced);
        }
        let missing = if ring.forged {
            0
        } else {
            self.unreported_drops(&ring)
        };
        let (kernels_in_cupti, markers_in_cupti, unwritten) =
            if ring.reader.is_lost() || ring.forged {
                (0, 0, 0)
            } else {
                self.undelivered(&ring, missing, finished == Some(true))
            };
        let undelivered = kernels_in_cupti.saturating_add(markers_in_cupti);
        let mut accounting = Vec::new();
        for (source, records) in [
            (DropSource::Ring, missing),
            (DropSource::Undelivered, undelivered),
            (DropSource::Unwritten, unwritten),
        ] {
            if records > 0 {
                self.dropped_in_headers_done = self.dropped_in_headers_done.saturating_add(records);
                accounting.push(Record::Dropped(Dropped { source, records }));
            }
        }
        if undelivered + unwritten > 0 {
            let markers = if markers_in_cupti > 0 {
                format!(" and {markers_in_cupti} NVTX markers")
            } else {
                String::new()
            };
            self.notes.push(format!(
                "process {} ended before its records were delivered: {kernels_in_cupti} kernels{markers} never left CUPTI, {unwritten} records were not written to the ring",
                ring.pid
            ));
        }
        if !accounting.is_empty() {
            self.append(ring.pid, accounting);
        }
        if finished != Some(true) || undelivered + unwritten > 0 {
            self.incomplete = true;
        }
        if finished.is_none() {
            // Its producer may still run: nothing more it writes will be read.
            ring.reader.give_up();
        }
        if finished == Some(false) {
            self.notes.push(format!(
                "process {} ended without finishing its stream",
                ring.pid
            ));
        }
        drop(ring);
        if let Err(e) = wire::session_dir::remove_own_file(&path) {
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
            self.lose_uncounted(format!(
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
            kernels: self.kernels.saturating_sub(self.unsaved_kernels),
            dropped: self.dropped_in_records + self.dropped_in_headers_done + live + self.unsaved,
            records: self.received.values().map(|r| r.records).sum(),
            ring_fill_pct: self.fill_pct,
        }
    }

    /// What the producer made that neither reached the ring nor was counted as
    /// dropped: kernels launched whose records never left CUPTI (less the records
    /// CUPTI said it dropped), NVTX markers made whose records never left it (for a
    /// stream that did not finish: a finished one flushed them all, and a difference
    /// there is a note), and records produced but not yet written to the ring when the
    /// process ended. `missing` is the header's unreported drop count.
    fn undelivered(&mut self, ring: &Ring, missing: u64, finished: bool) -> (u64, u64, u64) {
        let h = ring.reader.header();
        let got = self.received.get(&ring.pid).copied().unwrap_or_default();
        let dropped = self
            .dropped_reported
            .get(&ring.pid)
            .copied()
            .unwrap_or(0)
            .saturating_add(missing);
        let in_cupti = h
            .launches
            .saturating_sub(h.kernels)
            .saturating_sub(got.cupti_dropped);
        let unwritten = h
            .produced
            .saturating_sub(got.records.saturating_add(dropped));
        let markers = h.markers.saturating_sub(h.markers_done);
        if finished && markers > 0 {
            self.notes.push(format!(
                "process {}: {markers} NVTX calls counted as making a marker record made none \
                 (its stream finished); at an abrupt end its NVTX markers still in CUPTI would \
                 be over-counted",
                ring.pid
            ));
        }
        let markers = if finished { 0 } else { markers };
        if in_cupti.saturating_add(markers) > MAX_IN_CUPTI || unwritten > MAX_UNWRITTEN {
            // More than a process can hold: a damaged or forged header.
            self.incomplete = true;
            self.notes.push(format!(
                "process {}: its ring's header claims {in_cupti} kernels and {markers} NVTX \
                 markers still in CUPTI and {unwritten} records not written to the ring, more \
                 than a process can hold ({MAX_IN_CUPTI} and {MAX_UNWRITTEN}): not counted",
                ring.pid
            ));
            return (0, 0, 0);
        }
        (in_cupti, markers, unwritten)
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

    /// Whether the session lacks something a complete run would have: a stream that
    /// did not end (its process was killed, aborted or `_exit`ed, or outlived the
    /// collector), records that never reached the ring, a ring that could not be read
    /// to its end, a frame that did not decode, or frames not written to the session
    /// file. Losses counted by design (a full ring, channel or CUPTI buffer) do not
    /// make a session incomplete: they are in the report.
    pub fn incomplete(&self) -> bool {
        self.incomplete
    }

    /// Removes the session started in the output directory, before anything was
    /// written to it (the program could not be started).
    pub fn discard(self) {
        if let Some(w) = self.writer {
            w.remove_unused();
        }
    }

    /// Adds NVML readings to the session (the `device_samples` table). Once the session
    /// cannot be written (an error, or the file system is full) they are left out: the
    /// room left is for the processes' records.
    pub fn push_samples(&mut self, samples: &[DeviceSample]) {
        if self.full {
            return;
        }
        if let Some(w) = &mut self.writer {
            for s in samples {
                w.push_sample(s);
            }
        }
    }

    /// Records read from rings but not written to the session (it failed).
    pub fn unsaved(&self) -> u64 {
        self.unsaved
    }

    /// Seals the last part. Errors if any record could not be written.
    pub fn finish(&mut self) -> Result<()> {
        if !self.full {
            self.seal();
        }
        if self.full {
            self.close_full();
        }
        match &mut self.writer {
            Some(w) => w.finish().map_err(|e| {
                anyhow::anyhow!(
                    "the session in {} cannot be marked finished ({e}): readers will call it \
                     unfinished",
                    self.out_dir.display()
                )
            }),
            None => anyhow::bail!(
                "the session in {} is incomplete (see above)",
                self.out_dir.display()
            ),
        }
    }
}

impl Drainer {
    /// After the file system filled: the reserve file makes room for one last part
    /// with what each process owes (its drop counts and the end of its stream that
    /// were not written) and `Dropped { Unsaved }` for its records that were not.
    fn close_full(&mut self) {
        let Some(w) = &mut self.writer else { return };
        w.release_reserve();
        let mut pids: BTreeSet<u32> = self.owed.keys().copied().collect();
        pids.extend(self.unsaved_by_pid.keys());
        for pid in pids {
            let mut records = self.owed.remove(&pid).unwrap_or_default();
            if let Some(n) = self.unsaved_by_pid.get(&pid).filter(|n| **n > 0) {
                records.push(Record::Dropped(Dropped {
                    source: DropSource::Unsaved,
                    records: *n,
                }));
            }
            for r in &records {
                w.push(pid, r);
            }
        }
        if let Err(f) = w.seal() {
            self.notes.push(format!(
                "the closing drop counts could not be written either: {}",
                f.error
            ));
        }
    }
}

/// The length of the ring file at `path` when it is shorter than `reader` maps it
/// (another process truncated it).
fn truncated(path: &Path, reader: &RingReader) -> Option<u64> {
    let want = wire::ring::HEADER_SIZE as u64 + reader.header().capacity;
    let len = std::fs::symlink_metadata(path).ok()?.len();
    (len < want).then_some(len)
}

/// Why a ring file in our directory is not a producer's: its header's pid is not the
/// one in its name (a file of another user is refused by `RingReader::open`).
fn foreign(name: &std::ffi::OsStr, pid: u32) -> Option<String> {
    let named = wire::session_dir::parse_ring_file_name(name);
    if named != Some(pid) {
        return Some(format!(
            "its header names process {pid}, its file name {}",
            named.map_or("no process".to_string(), |n| format!("process {n}"))
        ));
    }
    None
}

/// The poll period of the collector's loop.
pub const POLL: Duration = Duration::from_millis(20);
