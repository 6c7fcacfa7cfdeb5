//! What every way into the library goes through: the exported entry points, CUPTI's
//! callbacks, the GEMM hooks, the `dlsym` entry and our own threads.
//! - [`guarded`]: a panic becomes one warning and a disabled profiler; nothing
//!   unwinds into the host.
//! - [`Errno`]: the application's `errno` is what it was before our code ran.
//! - [`enter`] / [`mark_internal`]: re-entrancy. CUDA calls our own code makes (from
//!   a callback, or on our threads) are not traced.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::log::warn;
use crate::state;

/// Runs `f`, turning a panic into one warning and a disabled profiler.
pub(crate) fn guarded<R>(what: &str, default: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            state::disable();
            warn!("internal error in {what}: {msg}; profiling is off, the program continues");
            default
        }
    }
}

/// Saves errno on creation and restores it on drop (our calls must not change what
/// the application sees).
pub(crate) struct Errno(i32);

impl Errno {
    pub(crate) fn save() -> Errno {
        // SAFETY: __errno_location returns this thread's errno slot.
        Errno(unsafe { *libc::__errno_location() })
    }
}

impl Drop for Errno {
    fn drop(&mut self) {
        // SAFETY: as in save.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

thread_local! {
    /// Set on our own threads and while our code runs inside an application call.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as the profiler's own: its CUDA calls (if any) are not
/// traced.
pub(crate) fn mark_internal() {
    BUSY.with(|b| b.set(true));
}

/// Inside our code on this thread, until dropped.
pub(crate) struct Entered(());

impl Drop for Entered {
    fn drop(&mut self) {
        BUSY.with(|b| b.set(false));
    }
}

/// Enters our code on this thread; `None` when it is already inside (a CUDA call our
/// own code made) or the thread is one of ours.
pub(crate) fn enter() -> Option<Entered> {
    // Not `then_some(Entered(()))`: that builds the guard either way, and dropping
    // the unused one would clear the flag of the call already inside.
    if BUSY.with(|b| b.replace(true)) {
        None
    } else {
        Some(Entered(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_entry_leaves_the_call_inside_marked() {
        let outer = enter().expect("the first entry");
        assert!(enter().is_none(), "a nested entry");
        // The refused entry must not have cleared the flag (it did when the guard was
        // built eagerly and dropped): a second nested call is refused too.
        assert!(enter().is_none(), "a second nested entry");
        drop(outer);
        assert!(enter().is_some(), "after the outer call");
    }
}
