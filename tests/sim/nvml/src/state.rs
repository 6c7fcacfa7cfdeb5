//! Whether NVML is initialised (a reference count, as `nvml.h` documents: every
//! `nvmlInit*` adds one, `nvmlShutdown` takes one away, and NVML is shut down at
//! zero), and what an initialisation learnt: when the driver was loaded.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use sim_core::telemetry::TelemetryDir;

use crate::consts::*;

struct State {
    refcount: u32,
    loaded_ns: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    refcount: 0,
    loaded_ns: 0,
});

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `CLOCK_REALTIME` now, ns.
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One more initialisation. The driver's load time is the telemetry directory's
/// (`sim_core::telemetry`), else this first initialisation's.
pub(crate) fn init() -> nvmlReturn_t {
    let mut s = lock();
    if s.refcount == 0 {
        let now = now_ns();
        s.loaded_ns = TelemetryDir::from_env()
            .and_then(|d| d.loaded_ns(now))
            .unwrap_or(now);
    }
    s.refcount += 1;
    NVML_SUCCESS
}

/// One initialisation fewer; `NVML_ERROR_UNINITIALIZED` when there was none.
pub(crate) fn shutdown() -> nvmlReturn_t {
    let mut s = lock();
    if s.refcount == 0 {
        return NVML_ERROR_UNINITIALIZED;
    }
    s.refcount -= 1;
    NVML_SUCCESS
}

/// When the driver was loaded, or `NVML_ERROR_UNINITIALIZED`.
pub(crate) fn loaded_ns() -> Result<u64, nvmlReturn_t> {
    let s = lock();
    if s.refcount == 0 {
        return Err(NVML_ERROR_UNINITIALIZED);
    }
    Ok(s.loaded_ns)
}
