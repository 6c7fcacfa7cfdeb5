//! The exported entry points. Each catches panics: nothing unwinds into the host.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::lifecycle::{self, Trigger};
use crate::log::warn;

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
            lifecycle::disable();
            warn!("internal error in {what}: {msg}; profiling is off, the program continues");
            default
        }
    }
}

/// Called once by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH` names
/// this library. Returns 1: injection was handled. A profiler that could not start
/// has already said why and stays off; that is no reason to fail the application's
/// `cuInit`, so the answer is 1 then too.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> core::ffi::c_int {
    guarded("InitializeInjection", (), || {
        lifecycle::start(Trigger::Injection);
    });
    1
}
