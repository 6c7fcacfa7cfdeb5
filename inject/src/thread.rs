//! The calling thread's kernel id (`gettid`), as records name threads: cached per
//! thread, one system call at a thread's first use.

use std::cell::Cell;

thread_local! {
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// This thread's kernel id.
pub fn id() -> u64 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::syscall(libc::SYS_gettid) } as u64);
        }
        t.get()
    })
}
