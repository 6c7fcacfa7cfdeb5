//! The exit handler's place among the process's exit handlers, which run in reverse
//! order of registration.
//!
//! `exit::install` registers the handler at start-up and hands it here; [`run_first`]
//! registers it once more, so that it runs before every exit handler registered
//! until then (it does its work once, at the first of its registrations to be
//! called). Called once PM sampling is enabled on a GPU: on an H200 with CUPTI
//! 13.0.1, a process that exits with its context alive (PyTorch never destroys its
//! primary context) crashed in `cuptiPmSamplingStop` when our handler ran after the
//! handlers registered up to the enable (docs/ARCHITECTURE.md, "Seen on a GPU").
//! Its own module, below both `exit` and `counters`, so neither imports the other
//! for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::log::debug;

static HANDLER: OnceLock<extern "C" fn()> = OnceLock::new();
/// How many times [`run_first`] registered the handler again.
static REREGISTERED: AtomicUsize = AtomicUsize::new(0);
/// More than one per GPU of a large node is never needed.
const MAX_REREGISTERED: usize = 64;

/// The exit handler `exit::install` registered (once per process).
pub fn set_handler(handler: extern "C" fn()) {
    let _ = HANDLER.set(handler);
}

/// Registers the exit handler once more (see the module doc); nothing before
/// [`set_handler`], or after [`MAX_REREGISTERED`] times.
pub fn run_first() {
    let Some(&handler) = HANDLER.get() else {
        return;
    };
    if REREGISTERED.fetch_add(1, Ordering::AcqRel) >= MAX_REREGISTERED {
        return;
    }
    // SAFETY: registering a plain `extern "C"` function of this library, which is
    // never unloaded; it does its work once however often it is called.
    if unsafe { libc::atexit(handler) } != 0 {
        debug!("cannot register the exit handler again");
    }
}
