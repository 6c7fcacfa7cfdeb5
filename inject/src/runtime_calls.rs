//! The CUDA runtime's calls (CUPTI's runtime API domain), as the program sees them.
//!
//! A runtime call is made of driver calls, which CUPTI reports too, between the
//! runtime call's entry and exit and with its correlation id. gpuprof records the
//! outermost call only, so one call is counted once in every total:
//! - a runtime launch (`cudaLaunchKernel`, `cudaGraphLaunch`, ...) makes the
//!   `Launch` record, with its own name and span and the correlation id of the driver
//!   launch it made (the id kernels are joined by, whether or not a CUPTI release
//!   gives the two calls one id); the driver launch inside it is still followed
//!   (counters, GEMM shapes, graph nodes) but sends none;
//! - a driver call inside any runtime call is neither traced nor counted; the
//!   runtime call is (`api_calls.rs`, `api_tally.rs`).
//!
//! Without the runtime domain's callbacks (no runtime in the program, or CUPTI refused
//! them) nothing here is ever entered and the driver calls are recorded as before.

use std::cell::Cell;

use cupti_sys::CUpti_ApiCallbackSite::{CUPTI_API_ENTER, CUPTI_API_EXIT};
use cupti_sys::CUpti_CallbackData;
use wire::{Launch, Record};

use crate::handoff;
use crate::tracer::Tracer;

/// The runtime calls that launch GPU work (`cupti::cbids::RUNTIME_LAUNCHES`).
pub use cupti::cbids::RUNTIME_LAUNCHES as LAUNCHES;

thread_local! {
    /// Runtime calls entered and not yet exited on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether a runtime launch is in progress on this thread.
    static LAUNCH: Cell<bool> = const { Cell::new(false) };
    /// The correlation id of the driver launch that runtime launch made (0: none yet).
    static DRIVER_LAUNCH: Cell<u32> = const { Cell::new(0) };
}

/// Keeps the thread's account of the runtime calls in progress; called first at
/// every runtime callback.
pub fn track(d: &CUpti_CallbackData, launch: bool) {
    if d.callbackSite == CUPTI_API_ENTER {
        DEPTH.with(|n| n.set(n.get().saturating_add(1)));
        if launch {
            LAUNCH.with(|l| l.set(true));
            DRIVER_LAUNCH.with(|l| l.set(0));
        }
    } else if d.callbackSite == CUPTI_API_EXIT {
        DEPTH.with(|n| n.set(n.get().saturating_sub(1)));
        if launch {
            LAUNCH.with(|l| l.set(false));
        }
    }
}

/// Whether a runtime call is in progress on this thread (a driver call now is one it
/// makes).
pub fn inside() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Whether a runtime launch is in progress on this thread (a driver launch now is the
/// one it makes).
pub fn in_launch() -> bool {
    LAUNCH.with(Cell::get)
}

/// At a driver launch's exit: whether a runtime launch in progress on this thread made
/// it. If so the runtime launch's record stands for it, with its correlation id.
pub fn claim_driver_launch(correlation_id: u32) -> bool {
    if !in_launch() {
        return false;
    }
    DRIVER_LAUNCH.with(|l| l.set(correlation_id));
    true
}

/// A runtime launch's entry or exit: at exit its `Launch` record.
pub fn on_launch(t: &Tracer, cbid: u32, d: &CUpti_CallbackData, thread_id: u64) {
    let Some((start_ns, end_ns)) = crate::api_calls::span(t, d) else {
        return;
    };
    // The driver launch's id when it made one (it failed before, else).
    let driver = DRIVER_LAUNCH.with(|l| l.replace(0));
    handoff::send(Record::Launch(Launch {
        correlation_id: if driver != 0 { driver } else { d.correlationId },
        cbid,
        runtime: true,
        thread_id,
        start_ns,
        end_ns,
    }));
}
