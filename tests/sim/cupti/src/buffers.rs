//! One client's activity buffers: requested from the client, filled with records back
//! to back (each at an 8-byte aligned address: every record struct is declared with
//! `PACKED_ALIGNMENT`, 8-byte alignment, in `cupti_activity.h`), and handed back
//! through the [`crate::worker`].

use std::cell::Cell;

use crate::worker::{self, Complete, Job};

/// The alignment of every record in a buffer.
pub const RECORD_ALIGN: usize = 8;

/// A buffer the client gave CUPTI.
pub struct Buffer {
    pub base: *mut u8,
    pub size: usize,
    /// Offset of the end of the last record.
    pub used: usize,
    pub records: usize,
    /// "If > 0 the buffer is filled with at most that many records before it is returned."
    pub max_records: usize,
    /// The latest GPU end time of its records: complete once the GPU clock passed it.
    pub gpu_end: u64,
}

// SAFETY: a buffer is owned by CUPTI between the request and the completion callback,
// and only touched under its client's lock.
unsafe impl Send for Buffer {}

impl Buffer {
    /// Offset at which a record of `len` bytes would go, if it fits.
    pub fn slot(&self, len: usize) -> Option<usize> {
        let off = align_offset(self.base, self.used);
        (off.checked_add(len)? <= self.size).then_some(off)
    }
}

/// The first offset at or after `off` whose address in `base` is 8-byte aligned.
pub fn align_offset(base: *const u8, off: usize) -> usize {
    let addr = base as usize + off;
    let aligned = addr.div_ceil(RECORD_ALIGN) * RECORD_ALIGN;
    aligned - base as usize
}

/// The buffers of one client.
#[derive(Default)]
pub struct Buffers {
    pub current: Option<Buffer>,
    /// Buffers received while another thread had already installed one.
    pub spare: Vec<Buffer>,
}

thread_local! {
    /// Set while this thread runs the client's request callback: a record produced by
    /// it (the callback calling the driver) cannot get a buffer and is dropped.
    pub static IN_REQUEST: Cell<bool> = const { Cell::new(false) };
}

/// What writing a record did.
#[derive(Debug, PartialEq, Eq)]
pub enum Put {
    Written,
    NeedBuffer,
}

impl Buffers {
    /// Writes `rec` into the current buffer, queueing buffers that are full.
    pub fn put(&mut self, rec: &[u8], gpu_end: u64, complete: Complete) -> Put {
        loop {
            let Some(cur) = self.current.as_mut() else {
                match self.spare.pop() {
                    Some(b) => {
                        self.current = Some(b);
                        continue;
                    }
                    None => return Put::NeedBuffer,
                }
            };
            let Some(off) = cur.slot(rec.len()) else {
                let full = self.current.take().expect("current buffer");
                hand_back(full, complete);
                continue;
            };
            // SAFETY: `off + len <= size`, and the client gave us `size` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(rec.as_ptr(), cur.base.add(off), rec.len()) };
            cur.used = off + rec.len();
            cur.records += 1;
            cur.gpu_end = cur.gpu_end.max(gpu_end);
            if cur.max_records > 0 && cur.records >= cur.max_records {
                let full = self.current.take().expect("current buffer");
                hand_back(full, complete);
            }
            return Put::Written;
        }
    }

    /// Queues the buffers a flush returns: with `forced`, every buffer (spares and an
    /// empty current one too, with validSize 0, so the client gets all its memory
    /// back); otherwise the current buffer if it holds records that are all complete
    /// by the GPU clock `now`.
    pub fn flush(&mut self, forced: bool, now: u64, complete: Complete) {
        if forced {
            if let Some(b) = self.current.take() {
                hand_back(b, complete);
            }
            for b in self.spare.drain(..) {
                hand_back(b, complete);
            }
        } else if self
            .current
            .as_ref()
            .is_some_and(|b| b.records > 0 && b.gpu_end <= now)
        {
            let b = self.current.take().expect("current buffer");
            hand_back(b, complete);
        }
    }
}

/// Queues `b` for the completion callback with its valid size.
pub fn hand_back(b: Buffer, complete: Complete) {
    worker::submit(Job {
        complete,
        buffer: b.base,
        size: b.size,
        valid: b.used,
        trigger_thread: worker::gettid(),
    });
}
