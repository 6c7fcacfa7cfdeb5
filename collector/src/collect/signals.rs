//! Ctrl+C and termination for the collector, samply's way: the first Ctrl+C belongs to
//! the profiled program, the second ends the collector (which still writes what it
//! has). The first SIGTERM or SIGHUP is passed on to the program (as a supervisor
//! does: the collector keeps draining while the program shuts down); a second one
//! ends the collector at once, also after writing.
//!
//! A Ctrl+C typed at the terminal reaches the whole foreground process group, the
//! program included, so it is not sent again; a SIGINT sent to the collector alone
//! (`kill -INT`, `si_code` <= 0: from a process, not the kernel's terminal driver) is
//! forwarded to the program. The handler only touches atomics; the collector's loop
//! looks at them every few milliseconds.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

static INTERRUPTS: AtomicU32 = AtomicU32::new(0);
static FORWARD: AtomicBool = AtomicBool::new(false);
static TERMINATE: AtomicBool = AtomicBool::new(false);
/// SIGTERM or SIGHUP received and not yet passed on (the signal number).
static PASS_ON: AtomicI32 = AtomicI32::new(0);
static TERMS: AtomicU32 = AtomicU32::new(0);
static LAST_TERM: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if sig == libc::SIGINT {
        INTERRUPTS.fetch_add(1, Ordering::SeqCst);
        let code = if info.is_null() {
            0
        } else {
            // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
            unsafe { (*info).si_code }
        };
        if code <= 0 {
            FORWARD.store(true, Ordering::SeqCst);
        }
    } else {
        LAST_TERM.store(sig, Ordering::SeqCst);
        if TERMS.fetch_add(1, Ordering::SeqCst) == 0 {
            PASS_ON.store(sig, Ordering::SeqCst);
        } else {
            TERMINATE.store(true, Ordering::SeqCst);
        }
    }
}

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
pub fn install() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler is an
        // async-signal-safe extern "C" function that only stores to atomics.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What the collector's loop should do about signals received so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// A SIGINT sent to the collector alone: send one to the program.
    pub forward_interrupt: bool,
    /// The first SIGTERM or SIGHUP: send it to the program.
    pub forward: Option<libc::c_int>,
    /// A second Ctrl+C, a second SIGTERM or SIGHUP: stop collecting now.
    pub stop: bool,
}

/// The exit status of a collector stopped by its signals: 128 + the last one.
pub fn stop_code() -> u8 {
    if TERMINATE.load(Ordering::SeqCst) {
        let last = LAST_TERM.load(Ordering::SeqCst);
        (128 + if last > 0 { last } else { libc::SIGTERM }) as u8
    } else {
        (128 + libc::SIGINT) as u8
    }
}

/// Takes the pending forward request and says whether to stop.
pub fn poll() -> Pending {
    Pending {
        forward_interrupt: FORWARD.swap(false, Ordering::SeqCst),
        forward: Some(PASS_ON.swap(0, Ordering::SeqCst)).filter(|s| *s != 0),
        stop: INTERRUPTS.load(Ordering::SeqCst) >= 2 || TERMINATE.load(Ordering::SeqCst),
    }
}
