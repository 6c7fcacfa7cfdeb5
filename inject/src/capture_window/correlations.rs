//! Which API calls were made inside the capture window, by correlation id, for the
//! activity records that arrive later (CUPTI's buffer thread): a fixed table of
//! 2^20 slots, slot `id mod 2^20` holding the last captured id that fell there.
//! Marking is one store (Release: the record is decoded on another thread), asking one load; no lock, no allocation after
//! start-up.
//!
//! An id is captured when its slot holds it. A call outside the window writes
//! nothing, so it never reads as captured; a captured call reads as not captured
//! only when 2^20 later API calls were made (and one of them captured into the same
//! slot) before its records were decoded: at the one-second flush, more than a
//! million driver calls a second.

use std::alloc::Layout;
use std::sync::atomic::{AtomicU32, Ordering};

const SLOTS: usize = 1 << 20;

pub struct Marks {
    slots: &'static [AtomicU32],
}

impl Marks {
    /// The table (4 MiB, zeroed; pages are touched as ids land on them). `None`
    /// when it cannot be allocated.
    pub fn new() -> Option<Marks> {
        let layout = Layout::array::<AtomicU32>(SLOTS).ok()?;
        // SAFETY: a non-zero size; zeroed memory is a valid AtomicU32 (0).
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as *const AtomicU32;
        if p.is_null() {
            return None;
        }
        // SAFETY: `SLOTS` initialised AtomicU32s, never freed (the table lives as long
        // as the process: CUPTI may deliver records until exit).
        let slots = unsafe { std::slice::from_raw_parts(p, SLOTS) };
        Some(Marks { slots })
    }

    /// The call with this correlation id was made inside the window.
    pub fn mark(&self, id: u32) {
        self.slots[id as usize % SLOTS].store(id, Ordering::Release);
    }

    /// Whether the call with this id was marked (0, no call, never is).
    pub fn has(&self, id: u32) -> bool {
        id != 0 && self.slots[id as usize % SLOTS].load(Ordering::Acquire) == id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_ids_are_found_and_others_are_not() {
        let m = Marks::new().unwrap();
        assert!(!m.has(0) && !m.has(7));
        m.mark(7);
        m.mark(9);
        assert!(m.has(7) && m.has(9) && !m.has(8));
        // An id 2^20 later in the same slot is not the marked one.
        assert!(!m.has(7 + SLOTS as u32));
        // Marking it forgets the older one: the documented limit.
        m.mark(7 + SLOTS as u32);
        assert!(m.has(7 + SLOTS as u32) && !m.has(7));
    }
}
