//! The hand-off from the threads CUPTI calls us on to the writer thread: a bounded
//! channel that is only ever `try_send`-ed to (a full channel is a counted drop,
//! never a wait), the counters the writer reports, and the per-process string table.
//!
//! Counting: every record handed off (or lost trying) is *produced*; the writer adds
//! the ones it makes itself (`Process`, `String`s it re-sends are not new) and CUPTI's
//! own drops. `Dropped` and `End` are accounting, not produced records.

use core::ffi::{c_char, CStr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use wire::{InternedString, Record};

static TX: OnceLock<Sender<Record>> = OnceLock::new();

/// Records lost because the channel was full.
pub static CHANNEL_DROPPED: AtomicU64 = AtomicU64::new(0);
/// Activity records of kinds no decoder converts (skipped, not lost).
pub static UNKNOWN_KINDS: AtomicU64 = AtomicU64::new(0);

/// Creates the channel; the writer gets the receiving end. Once per process.
pub fn open(capacity: usize) -> Option<Receiver<Record>> {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    TX.set(tx).ok()?;
    Some(rx)
}

/// Hands one record to the writer. Never blocks; a full (or closed) channel counts
/// a drop. Returns whether the record went through.
pub fn send(r: Record) -> bool {
    crate::tally::produced(1);
    let Some(tx) = TX.get() else {
        CHANNEL_DROPPED.fetch_add(1, Ordering::Relaxed);
        return false;
    };
    match tx.try_send(r) {
        Ok(()) => true,
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            CHANNEL_DROPPED.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
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
