//! The hand-off from the threads CUPTI calls us on to the writer thread: a bounded
//! channel that is only ever `try_send`-ed to (a full channel is a counted drop,
//! never a wait), the counters the writer reports, and the per-process string table.
//!
//! The writer never blocks on the channel: it sleeps ([`writer_sleep`]) until its
//! next tick or until a sender finds [`WAKE_AT`] records waiting and wakes it. A
//! receiver blocked in the channel would make every `try_send` take the channel's
//! waker lock and wake it with a system call, once per record; this way a send is a
//! slot reservation (compare-and-swap) and a store, and one in `WAKE_AT` sends pays
//! an `unpark` (a futex wake, no lock).
//!
//! Counting: every record handed off (or lost trying) is *produced*; the writer adds
//! the ones it makes itself (`Process`, `String`s it re-sends are not new) and CUPTI's
//! own drops. `Dropped` and `End` are accounting, not produced records.

use core::ffi::{c_char, CStr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use wire::{InternedString, Record};

static TX: OnceLock<Sender<Record>> = OnceLock::new();

/// Records lost because the channel was full.
pub static CHANNEL_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Activity records of kinds no decoder converts (skipped, not lost).
pub static UNKNOWN_KINDS: AtomicU64 = AtomicU64::new(0);

/// Records waiting in the channel at which a sender wakes the writer: a full frame,
/// or a quarter of a smaller channel.
pub const WAKE_AT: usize = 4096;

/// The level in use: [`WAKE_AT`], or a quarter of the channel's capacity.
static WAKE_LEVEL: AtomicUsize = AtomicUsize::new(WAKE_AT);
/// The writer thread, once it has slept.
static WRITER: OnceLock<Thread> = OnceLock::new();
/// A wake-up is on its way to the writer (or it is awake): senders need not send one.
static WAKING: AtomicBool = AtomicBool::new(false);

/// Creates the channel; the writer gets the receiving end. Once per process.
pub fn open(capacity: usize) -> Option<Receiver<Record>> {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    TX.set(tx).ok()?;
    WAKE_LEVEL.store((capacity / 4).clamp(1, WAKE_AT), Ordering::Relaxed);
    Some(rx)
}

/// Hands one record to the writer. Never blocks, takes no lock and allocates
/// nothing; a full (or closed) channel counts a drop. Returns whether the record went
/// through.
pub fn send(r: Record) -> bool {
    crate::tally::produced(1);
    let Some(tx) = TX.get() else {
        CHANNEL_DROPPED.fetch_add(1, Ordering::Relaxed);
        return false;
    };
    match tx.try_send(r) {
        Ok(()) => {
            if tx.len() >= WAKE_LEVEL.load(Ordering::Relaxed) {
                wake_writer();
            }
            true
        }
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            CHANNEL_DROPPED.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

/// Wakes the writer unless a wake-up is already on its way. `unpark` is an atomic
/// swap, and a futex wake only when the writer is asleep.
fn wake_writer() {
    // SeqCst, with the writer's store and its look at the channel in
    // `writer_sleep`: either the writer sees this record, or this sees its store.
    if !WAKING.load(Ordering::SeqCst) && !WAKING.swap(true, Ordering::SeqCst) {
        if let Some(t) = WRITER.get() {
            t.unpark();
        }
    }
}

/// Wakes the writer now, whatever is waiting (at exit: it has been asked to finish).
pub fn wake_writer_now() {
    WAKING.store(true, Ordering::SeqCst);
    if let Some(t) = WRITER.get() {
        t.unpark();
    }
}

/// The writer, with `rx` drained as far as it wants: sleeps until `timeout` has
/// passed or a sender wakes it (a wake-up sent before this returns at once).
pub fn writer_sleep(rx: &Receiver<Record>, timeout: Duration) {
    WRITER.get_or_init(std::thread::current);
    WAKING.store(false, Ordering::SeqCst);
    if rx.len() >= WAKE_LEVEL.load(Ordering::Relaxed) {
        // A sender may have looked at WAKING before the store above.
        return;
    }
    std::thread::park_timeout(timeout);
}

/// Counts a record produced and lost before the hand-off (e.g. its name could not
/// be sent).
pub fn lost() {
    crate::tally::produced(1);
    CHANNEL_DROPPED.fetch_add(1, Ordering::Relaxed);
}

#[derive(Default)]
struct Strings {
    ids: HashMap<Box<[u8]>, u32>,
    next: u32,
}

static STRINGS: Mutex<Option<Strings>> = Mutex::new(None);

/// The id of a string, sending `Record::String` the first time it is seen. Null is
/// id 0. `None` when the string record could not be handed off (it will be sent again
/// next time; the caller drops the record that needed it).
///
/// Runs on CUPTI's buffer thread (or the thread that flushes), never on a launch path.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
pub unsafe fn intern(p: *const c_char) -> Option<u32> {
    if p.is_null() {
        return Some(0);
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    let mut guard = STRINGS.lock().unwrap_or_else(|e| e.into_inner());
    let strings = guard.get_or_insert_with(Strings::default);
    if let Some(id) = strings.ids.get(bytes) {
        return Some(*id);
    }
    let id = strings.next + 1;
    let text = String::from_utf8_lossy(bytes).into_owned();
    if !send(Record::String(InternedString { id, text })) {
        return None;
    }
    strings.next = id;
    strings.ids.insert(bytes.into(), id);
    Some(id)
}

/// A set of small ids (devices, contexts) claimed once, lock-free. Ids past its size
/// are always "new" (a repeated description is harmless; a missing one is not).
pub struct Claims<const WORDS: usize>([AtomicU64; WORDS]);

impl<const WORDS: usize> Claims<WORDS> {
    #[allow(clippy::declare_interior_mutable_const)]
    const ZERO: AtomicU64 = AtomicU64::new(0);

    pub const fn new() -> Self {
        Claims([Self::ZERO; WORDS])
    }

    /// True the first time `id` is claimed.
    pub fn claim(&self, id: u32) -> bool {
        let (word, bit) = ((id / 64) as usize, id % 64);
        match self.0.get(word) {
            Some(w) => w.fetch_or(1 << bit, Ordering::AcqRel) & (1 << bit) == 0,
            None => true,
        }
    }

    /// Forgets a claim (its description failed; let another source provide it).
    pub fn unclaim(&self, id: u32) {
        if let Some(w) = self.0.get((id / 64) as usize) {
            w.fetch_and(!(1 << (id % 64)), Ordering::AcqRel);
        }
    }
}

/// Devices described so far.
pub static DEVICES: Claims<4> = Claims::new();
/// Contexts described so far.
pub static CONTEXTS: Claims<64> = Claims::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_once() {
        let c: Claims<1> = Claims::new();
        assert!(c.claim(3));
        assert!(!c.claim(3));
        assert!(c.claim(63));
        assert!(c.claim(64));
        assert!(c.claim(64));
    }
}
