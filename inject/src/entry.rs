//! The exported entry point. Like every way in, it runs under `guard::guarded`:
//! nothing unwinds into the host.

use crate::guard::guarded;
use crate::startup::{self, Trigger};

/// Called once by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH` names
/// this library. Returns 1: injection was handled. A profiler that could not start
/// has already said why and stays off; that is no reason to fail the application's
/// `cuInit`, so the answer is 1 then too.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> core::ffi::c_int {
    guarded("InitializeInjection", (), || {
        startup::start(Trigger::Injection);
    });
    1
}
