//! What this process produced, counted in the ring header (shared memory) so the
//! count outlives the process: when it is killed, calls `abort()` or `_exit()`, or
//! runs out of `GPUPROF_EXIT_TIMEOUT_MS`, the collector compares the counts with what
//! reached the ring and counts the difference as lost (`DropSource::Undelivered`).
//! See `wire::ring::Tally` for the three counts.
//!
//! A counted launch is a kernel launch call (not a graph launch, whose kernel count
//! is not known here) that returned `CUDA_SUCCESS` and was not captured into a graph
//! (a captured launch makes a graph node, reported through `GRAPHNODE_CREATED` inside
//! the call, and no kernel runs): each makes exactly one kernel record.
//!
//! Before the ring exists the counts go to this module's own statics; the writer
//! moves them into the header ([`settle`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, Ordering};

use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
use wire::ring::Tally;

/// The header's counts; null until the ring exists.
static HEADER: AtomicPtr<Tally> = AtomicPtr::new(std::ptr::null_mut());
/// Counts made before the header was published.
static EARLY: Tally = Tally::new();

thread_local! {
    /// Whether the launch this thread is inside made a graph node.
    static CAPTURED: Cell<bool> = const { Cell::new(false) };
}

/// Sends the counts to the ring header from now on.
///
/// # Safety
/// `tally` must stay valid until the process exits: the ring is never unmapped after
/// this (the writer thread forgets it).
pub unsafe fn publish(tally: *const Tally) {
    HEADER.store(tally as *mut Tally, Ordering::Release);
    settle();
}

fn with(f: impl FnOnce(&Tally)) {
    let p = HEADER.load(Ordering::Acquire);
    // SAFETY: non-null only once published, and valid until the process exits.
    match unsafe { p.as_ref() } {
        Some(t) => f(t),
        None => f(&EARLY),
    }
}

/// Moves counts made before the header existed (or while it was being published)
/// into it. The writer calls this on every tick.
pub fn settle() {
    let p = HEADER.load(Ordering::Acquire);
    // SAFETY: as in `with`.
    let Some(t) = (unsafe { p.as_ref() }) else {
        return;
    };
    for (early, header) in [
        (&EARLY.launches, &t.launches),
        (&EARLY.kernels, &t.kernels),
        (&EARLY.produced, &t.produced),
        (&EARLY.markers, &t.markers),
        (&EARLY.markers_done, &t.markers_done),
    ] {
        let n = early.swap(0, Ordering::Relaxed);
        if n > 0 {
            header.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Records produced: handed off, or lost trying (see `handoff`).
pub fn produced(n: u64) {
    with(|t| {
        t.produced.fetch_add(n, Ordering::Relaxed);
    });
}

/// All records produced so far.
pub fn produced_total() -> u64 {
    settle();
    let mut n = EARLY.produced.load(Ordering::Relaxed);
    with(|t| {
        if !std::ptr::eq(t, &EARLY) {
            n += t.produced.load(Ordering::Relaxed);
        }
    });
    n
}

/// A kernel record left CUPTI (whatever happens to it next).
pub fn kernel_completed() {
    with(|t| {
        t.kernels.fetch_add(1, Ordering::Relaxed);
    });
}

/// An NVTX call made one marker record (`nvtx_markers`).
pub fn marker_made() {
    with(|t| {
        t.markers.fetch_add(1, Ordering::Relaxed);
    });
}

/// A marker record left CUPTI (whatever happens to it next).
pub fn marker_completed() {
    with(|t| {
        t.markers_done.fetch_add(1, Ordering::Relaxed);
    });
}

/// Whether `cbid` launches exactly one kernel.
pub fn single_kernel(id: u32) -> bool {
    matches!(
        id,
        cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel
            | cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz
    )
}

/// At a launch's enter callback.
pub fn launch_enter() {
    CAPTURED.with(|c| c.set(false));
}

/// A graph node was created on this thread (inside a launch: it was captured).
pub fn graph_node_created() {
    CAPTURED.with(|c| c.set(true));
}

/// At a single-kernel launch's exit callback, with whether the call succeeded.
pub fn launch_exit(succeeded: bool) {
    if succeeded && !CAPTURED.with(Cell::get) {
        with(|t| {
            t.launches.fetch_add(1, Ordering::Relaxed);
        });
    }
}
