//! The simulated GPU clock: nanoseconds on the host's `CLOCK_REALTIME` timebase (the
//! timebase CUPTI reports), and waiting in real time until a simulated instant.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in ns since the Unix epoch (`CLOCK_REALTIME`).
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Blocks the calling thread until [`now_ns`] is at least `t`, so that host timestamps
/// taken after a synchronisation are never before the GPU work it waited for.
pub(crate) fn wait_until(t: u64) {
    loop {
        let now = now_ns();
        if now >= t {
            return;
        }
        std::thread::sleep(Duration::from_nanos(t - now));
    }
}

/// Blocks until the simulated instant `ready()` answers (asked under the driver lock
/// by the closure) has passed. While it answers [`crate::registry::NEVER`] (work
/// waiting for a memory value nobody wrote yet) it asks again every millisecond: the
/// caller waits as long as a GPU would, forever if the value never comes.
pub(crate) fn wait_for(ready: impl Fn() -> u64) {
    loop {
        let t = ready();
        if t != crate::registry::NEVER {
            wait_until(t);
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
