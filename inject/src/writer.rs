//! The writer thread ("gpuprof-writer"): drains the channel, batches records, encodes
//! them (`wire::encode_batch_into`, into one buffer it keeps) and appends frames to
//! the ring, never waiting for the collector while the program runs. A refused
//! frame's records are counted as dropped (`DropSource::Ring`, and in the ring
//! header); `String` and `Process` records are kept and sent again ahead of the next
//! frame, so every name that arrives resolves.
//! `Dropped` records carry the new losses of each source since the last delivered
//! one; `End` carries the records produced (see `handoff`), so that for a complete
//! stream: End.records = records received (but Dropped and End) + sum of Dropped.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_NONE;
use wire::ring::{RingWriter, WriteError};
use wire::{DropSource, Dropped, End, ProcessInfo, Record};

use crate::handoff::{self, CHANNEL_DROPPED};
use crate::log::{debug, warn};
use crate::state;
use crate::tracer;

/// Records per frame at most.
const BATCH: usize = 4096;
/// How often a partial batch is written and losses are reported.
const TICK: Duration = Duration::from_millis(50);
/// How often CUPTI is asked for its completed buffers (a default, non-forced flush).
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Largest frame: a quarter of the ring, at most 1 MiB, so a small ring still moves.
const MAX_FRAME: usize = 1 << 20;

const SOURCES: [DropSource; 3] = [DropSource::Cupti, DropSource::Channel, DropSource::Ring];

/// Asks the writer to finish: drain, write the last frames (waiting for the
/// collector until `deadline` if the ring is full), `End`, the finished flag. The
/// writer answers on `done`.
pub struct Finish {
    pub deadline: Instant,
    pub done: Sender<()>,
}

struct Writer {
    ring: RingWriter,
    dir: PathBuf,
    rx: Receiver<Record>,
    max_frame: usize,
    /// `String` / `Process` records refused by the ring, sent again first.
    pending: Vec<Record>,
    /// Losses per source (Cupti, Channel, Ring) known so far.
    lost: [u64; 3],
    /// Losses reported in delivered `Dropped` records.
    reported: [u64; 3],
    /// Losses added to the ring header.
    in_header: [u64; 3],
    /// The collector died: nothing more is written (the ring is deleted at exit).
    abandoned: bool,
    /// Records lost since the ring file was truncated by another process.
    lost_to_truncation: Option<u64>,
    /// The frame being encoded: one buffer for the life of the writer, grown to the
    /// largest frame so far, so encoding allocates nothing per frame.
    encoded: Vec<u8>,
}

/// Starts the writer with `process` as the ring's first record.
pub fn spawn(
    ring: RingWriter,
    dir: PathBuf,
    rx: Receiver<Record>,
    process: ProcessInfo,
    ctl: Receiver<Finish>,
) -> std::io::Result<JoinHandle<()>> {
    let max_frame = (ring.capacity() / 4).min(MAX_FRAME);
    let mut w = Writer {
        ring,
        dir,
        rx,
        max_frame,
        pending: Vec::new(),
        lost: [0; 3],
        reported: [0; 3],
        in_header: [0; 3],
        abandoned: false,
        lost_to_truncation: None,
        encoded: Vec::with_capacity(max_frame),
    };
    std::thread::Builder::new()
        .name("gpuprof-writer".into())
        .spawn(move || {
            crate::guard::mark_internal();
            crate::guard::guarded("the writer thread", (), || {
                crate::tally::produced(1);
                w.write(vec![Record::Process(Box::new(process))], None);
                w.run(ctl);
            });
            // The launching threads count into the ring header until the process
            // exits (`launches`): the mapping stays.
            std::mem::forget(w);
        })
}

/// Where a record goes when its frame is refused.
fn retained(r: &Record) -> bool {
    matches!(r, Record::String(_) | Record::Process(_))
}

fn accounting(r: &Record) -> bool {
    matches!(r, Record::Dropped(_) | Record::End(_))
}

fn source_index(s: DropSource) -> usize {
    SOURCES.iter().position(|x| *x == s).unwrap_or(2)
}

impl Writer {
    fn run(&mut self, ctl: Receiver<Finish>) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut next_tick = Instant::now() + TICK;
        let mut next_flush = Instant::now() + FLUSH_EVERY;
        loop {
            match ctl.try_recv() {
                Ok(f) => {
                    self.finish(batch, f.deadline);
                    let _ = f.done.send(());
                    return;
                }
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {}
            }
            while batch.len() < BATCH {
                match self.rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            let now = Instant::now();
            if batch.len() >= BATCH || now >= next_tick {
                self.write_batch(std::mem::take(&mut batch), None);
                next_tick = now + TICK;
            }
            if let Some(n) = &mut self.lost_to_truncation {
                *n += batch.iter().filter(|r| !accounting(r)).count() as u64;
                batch.clear();
            } else if self.abandoned {
                batch.clear();
            } else if now >= next_flush
                && (wire::session_dir::collector_gone(&self.dir) || self.ring.reader_gone())
            {
                self.abandon();
                batch.clear();
            }
            if now >= next_flush {
                // The counted calls' counts since the last time.
                if !self.abandoned && self.lost_to_truncation.is_none() {
                    batch.extend(crate::api_tally::deltas());
                }
                // Completed buffers reach us at least this often (CUPTI otherwise
                // returns a buffer only when it is full). Our buffer callback only
                // try_sends, so calling from this thread cannot deadlock.
                if let Some(t) = tracer::get() {
                    if let Err(e) = cupti::activity::flush_all(t.cupti, CUPTI_ACTIVITY_FLAG_NONE) {
                        debug!("periodic cuptiActivityFlushAll: {e}");
                    }
                }
                next_flush = now + FLUSH_EVERY;
            }
            if batch.len() < BATCH {
                // Until the next tick, or until senders have a frame's worth waiting
                // (`handoff`: the senders never take a lock to wake us).
                let wait = next_tick.saturating_duration_since(Instant::now());
                handoff::writer_sleep(&self.rx, wait);
            }
        }
    }

    /// The collector died, or stopped reading our ring: say so once, stop profiling,
    /// write nothing more.
    fn abandon(&mut self) {
        if self.ring.reader_gone() {
            warn!(
                "the collector stopped reading {} (its own output says why: a damaged ring, or it was stopped); profiling is off, the program runs unprofiled",
                self.ring.path().display()
            );
        } else {
            warn!(
                "the collector ({}) is gone, or its session directory was removed; profiling is off, the program runs unprofiled",
                self.dir.join("collector.pid").display()
            );
        }
        state::disable();
        self.abandoned = true;
    }

    /// Learns new losses (CUPTI's count resets on every call) and adds them to the header.
    fn poll_losses(&mut self) {
        if let Some(t) = tracer::get() {
            match cupti::activity::take_dropped(t.cupti, &t.subscriber) {
                Ok(n) => {
                    self.lost[0] += n;
                    crate::tally::produced(n);
                }
                Err(e) => debug!("cuptiActivityGetNumDroppedRecords: {e}"),
            }
        }
        self.lost[1] = CHANNEL_DROPPED.load(Ordering::Relaxed);
        for i in 0..2 {
            let new = self.lost[i] - self.in_header[i];
            if new > 0 {
                self.ring.add_dropped(new, 0);
                self.in_header[i] = self.lost[i];
            }
        }
    }

    fn dropped_records(&self) -> Vec<Record> {
        SOURCES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.lost[*i] > self.reported[*i])
            .map(|(i, s)| {
                Record::Dropped(Dropped {
                    source: *s,
                    records: self.lost[i] - self.reported[i],
                })
            })
            .collect()
    }

    /// Pending strings, then `batch`, then any new losses.
    fn write_batch(&mut self, batch: Vec<Record>, wait: Option<Instant>) {
        crate::tally::settle();
        self.poll_losses();
        let mut frame = std::mem::take(&mut self.pending);
        frame.extend(batch);
        frame.extend(self.dropped_records());
        self.write(frame, wait);
    }

    /// The ring file was truncated under us: nothing written reaches the collector.
    /// Profiling stops; what is lost is counted and said at exit (the collector can
    /// no longer be told).
    fn on_truncated(&mut self, lost: u64) {
        if self.lost_to_truncation.is_none() {
            warn!(
                "{} was truncated by another process; profiling is off, the program runs unprofiled",
                self.ring.path().display()
            );
            state::disable();
            self.lost_to_truncation = Some(0);
        }
        if let Some(n) = &mut self.lost_to_truncation {
            *n += lost;
        }
    }

    fn finish(&mut self, mut batch: Vec<Record>, deadline: Instant) {
        if let Some(n) = self.lost_to_truncation {
            let n = n + batch.iter().filter(|r| !accounting(r)).count() as u64;
            warn!(
                "{n} records of this process were lost with its truncated ring {}",
                self.ring.path().display()
            );
            return;
        }
        if !self.abandoned
            && (wire::session_dir::collector_gone(&self.dir) || self.ring.reader_gone())
        {
            self.abandon();
        }
        if self.abandoned {
            self.ring.finish();
            return;
        }
        // What the counted calls added since the last time.
        batch.extend(crate::api_tally::deltas());
        // A full ring is waited for while the collector drains it: data for the first
        // half of the time left, the last frame (losses and End) until the deadline,
        // so the stream ends properly even when data had to be dropped.
        let now = Instant::now();
        let wait = Some(deadline);
        let data_wait = Some(now + deadline.saturating_duration_since(now) / 2);
        loop {
            while batch.len() < BATCH {
                match self.rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            if batch.is_empty() {
                break;
            }
            self.write_batch(std::mem::take(&mut batch), data_wait);
        }
        self.poll_losses();
        let mut frame = std::mem::take(&mut self.pending);
        frame.extend(self.dropped_records());
        frame.push(Record::End(End {
            records: crate::tally::produced_total(),
        }));
        if !self.write(frame, wait) {
            debug!("the last frame did not fit in the ring; the stream ends without End");
        }
        self.ring.finish();
    }

    /// Writes `records` as one or more frames, in order; after the first refusal the
    /// rest is refused too (a later frame must not overtake a kept `String`). With
    /// `wait`, a full ring is retried until that deadline. True if all went in.
    fn write(&mut self, records: Vec<Record>, wait: Option<Instant>) -> bool {
        let mut refusing = false;
        let mut ok = true;
        let mut stack = vec![records];
        while let Some(recs) = stack.pop() {
            if recs.is_empty() {
                continue;
            }
            if refusing {
                self.refused(recs, false);
                continue;
            }
            if let Err(e) = wire::encode_batch_into(&mut self.encoded, &recs) {
                debug!("cannot encode {} records: {e}", recs.len());
                self.refused(recs, true);
                ok = false;
                continue;
            }
            if self.encoded.len() > self.max_frame && recs.len() > 1 {
                let mut first = recs;
                let second = first.split_off(first.len() / 2);
                stack.push(second);
                stack.push(first);
                continue;
            }
            if self.lost_to_truncation.is_some() {
                self.on_truncated(recs.iter().filter(|r| !accounting(r)).count() as u64);
                continue;
            }
            match try_write(&mut self.ring, &self.encoded, wait) {
                Ok(()) => self.delivered(&recs),
                Err(WriteError::Lost) => {
                    self.on_truncated(recs.iter().filter(|r| !accounting(r)).count() as u64);
                    ok = false;
                }
                Err(e) => {
                    debug!("ring refused a frame of {} records: {e}", recs.len());
                    let too_large = matches!(e, WriteError::TooLarge(_));
                    self.refused(recs, too_large);
                    refusing = true;
                    ok = false;
                }
            }
        }
        ok
    }

    fn delivered(&mut self, recs: &[Record]) {
        for r in recs {
            if let Record::Dropped(d) = r {
                self.reported[source_index(d.source)] += d.records;
            }
        }
    }

    /// Counts a refused frame's data records as lost; keeps strings unless they can
    /// never fit (`for_good`).
    fn refused(&mut self, recs: Vec<Record>, for_good: bool) {
        let mut lost = 0u64;
        for r in recs {
            if accounting(&r) {
                continue;
            }
            if retained(&r) && !for_good {
                self.pending.push(r);
            } else {
                lost += 1;
            }
        }
        if lost > 0 {
            self.lost[2] += lost;
            self.in_header[2] += lost;
            self.ring.add_dropped(lost, 1);
        }
    }
}

/// Writes one frame; with `wait`, a full ring is retried until that deadline.
fn try_write(ring: &mut RingWriter, bytes: &[u8], wait: Option<Instant>) -> Result<(), WriteError> {
    loop {
        match ring.try_write(bytes) {
            Err(WriteError::Full { .. }) if wait.is_some_and(|d| Instant::now() < d) => {
                // Only at exit, bounded by the deadline: the collector is draining.
                std::thread::sleep(Duration::from_millis(1));
            }
            r => return r,
        }
    }
}
