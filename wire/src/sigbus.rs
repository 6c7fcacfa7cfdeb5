//! Surviving a ring file that shrinks under its mapping.
//!
//! Touching a page of a shared file mapping past the file's end raises `SIGBUS`.
//! Space is reserved when a ring is made (`posix_fallocate`, see [`crate::ring`]), so
//! a full tmpfs cannot do this; a file truncated by someone else still can, on either
//! side. A guarded mapping is registered here; on a `SIGBUS` whose address lies in
//! one, the handler maps anonymous zero pages over the whole mapping (the faulting
//! access then completes on throwaway memory) and marks it hit. The owner checks
//! [`Guard::hit`] after its accesses and stops using the ring. Any other `SIGBUS` goes
//! to the handler that was installed before ours, or gets the default action, as if
//! we were not there.
//!
//! The handler is installed once per process, on the first registration, and never
//! removed (a later handler of the program may chain to it).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Mappings guarded at once, per process.
const SLOTS: usize = 1024;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    hit: AtomicBool,
    taken: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    hit: AtomicBool::new(false),
    taken: AtomicBool::new(false),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// The disposition before ours; written once, before our handler is installed.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();

/// A registered mapping; unregisters on drop (drop it before unmapping).
#[derive(Debug)]
pub struct Guard {
    slot: usize,
}

impl Guard {
    /// Guards `len` bytes at `start` (a mapping's address and length). Fails when the
    /// handler cannot be installed or every slot is taken.
    pub fn register(start: *const u8, len: usize) -> std::io::Result<Guard> {
        install()?;
        for (i, s) in TABLE.iter().enumerate() {
            if s.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                s.hit.store(false, Ordering::Relaxed);
                s.start.store(start as usize, Ordering::Relaxed);
                s.len.store(len, Ordering::Release);
                return Ok(Guard { slot: i });
            }
        }
        Err(std::io::Error::other(format!(
            "more than {SLOTS} rings mapped at once"
        )))
    }

    /// Whether an access to the mapping faulted: its pages are now anonymous zeros and
    /// the file behind it is no longer seen.
    pub fn hit(&self) -> bool {
        TABLE[self.slot].hit.load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &TABLE[self.slot];
        s.len.store(0, Ordering::Release);
        s.start.store(0, Ordering::Relaxed);
        s.taken.store(false, Ordering::Release);
    }
}

fn install() -> std::io::Result<()> {
    let r = INSTALLED.get_or_init(|| {
        let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: querying the current disposition into `old`.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), old.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        // SAFETY: sigaction filled `old`.
        let _ = PREVIOUS.set(unsafe { old.assume_init() });
        // SAFETY: an all-zero sigaction is a valid value to fill in.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_sigbus as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset to initialise.
        unsafe { libc::sigemptyset(&mut act.sa_mask) };
        // SAFETY: installing a handler that only makes async-signal-safe calls.
        if unsafe { libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        Ok(())
    });
    (*r).map_err(std::io::Error::from_raw_os_error)
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    for s in TABLE.iter() {
        let len = s.len.load(Ordering::Acquire);
        let start = s.start.load(Ordering::Relaxed);
        if len == 0 || addr < start || addr - start >= len {
            continue;
        }
        // SAFETY: [start, start + len) is a mapping its owner registered and has not
        // unregistered; replacing it with private anonymous pages keeps every address
        // valid for the owner, who only ever sees zeros or its own writes from now on.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            s.hit.store(true, Ordering::Release);
            return;
        }
        break;
    }
    chain(sig, info, ctx);
}

/// Hands a `SIGBUS` that is not ours to the previous disposition.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let prev = PREVIOUS.get();
    let handler = prev.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    let siginfo = prev.is_some_and(|p| p.sa_flags & libc::SA_SIGINFO != 0);
    // SAFETY: `info` is the kernel's siginfo for this signal.
    let from_fault = unsafe { (*info).si_code } > 0;
    if handler == libc::SIG_IGN && !from_fault {
        return;
    }
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // The default action, as without us: a fault re-executes and kills; a sent
        // signal is raised again and delivered when this handler returns.
        // SAFETY: restoring the default disposition and raising are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            if !from_fault {
                libc::raise(sig);
            }
        }
        return;
    }
    if siginfo {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this
        // signature.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a handler installed without SA_SIGINFO takes the signal number.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_truncated_mapping_reads_zeros_and_is_marked_hit() {
        let dir = std::env::temp_dir().join(format!("gpuprof-sigbus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all(&[7u8; 8192]).unwrap();
        // SAFETY: a file of this test, mapped for this test only.
        let map = unsafe { memmap2::MmapMut::map_mut(&f) }.unwrap();
        let guard = Guard::register(map.as_ptr(), map.len()).unwrap();
        assert_eq!(map[4096], 7);
        f.set_len(0).unwrap();
        assert!(!guard.hit());
        // SAFETY: a volatile read of a byte inside the mapping; it faults and the
        // handler replaces the pages.
        let v = unsafe { std::ptr::read_volatile(map.as_ptr().add(4096)) };
        assert_eq!(v, 0);
        assert!(guard.hit());
        assert_eq!(map[0], 0);
        drop(guard);
        drop(map);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
