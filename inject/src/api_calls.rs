//! CUDA driver and runtime API calls other than launches, traced one by one
//! (`GPUPROF_API`): by default the calls that copy, set, allocate or free memory,
//! record or wait for events and synchronise ([`TRACED`], [`TRACED_RUNTIME`]); with
//! `all`, every call. Each becomes a `Record::ApiCall`: thread, CUPTI timestamps at
//! entry and exit, correlation id (a copy's or set's activity record carries the
//! same), the bytes it moves or allocates, the stream it enqueues on or waits for
//! (CUPTI's stream id) and the event it records or waits for. A driver call the
//! runtime makes inside one of its calls is not recorded (`runtime_calls.rs`).
//!
//! Like the launch callbacks these run inside the application's CUDA calls: no lock
//! but the string table's, taken once per function name; the stream id is one CUPTI
//! call, made only for calls that name a stream.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use cupti_sys::CUpti_ApiCallbackSite::{CUPTI_API_ENTER, CUPTI_API_EXIT};
use cupti_sys::CUpti_CallbackData;
use wire::{ApiCall, Record, NO_STREAM};

use crate::handoff;
use crate::options::{ApiTrace, Options};
use crate::tracer::Tracer;
use cupti::callback;

/// The driver calls traced by default (`cupti::cbids::TRACED_CALLS`).
pub use cupti::cbids::TRACED_CALLS as TRACED;
/// The runtime calls traced by default (`cupti::cbids::TRACED_RUNTIME_CALLS`).
pub use cupti::cbids::TRACED_RUNTIME_CALLS as TRACED_RUNTIME;

/// Callback ids of each domain kept per function (the driver's and the runtime's are
/// below this).
pub const MAX_CBID: usize = 1024;

/// A function's slot in the per-function tables: the driver's cbids first, then the
/// runtime's. None past the tables.
pub fn slot(cbid: u32, runtime: bool) -> Option<usize> {
    let c = cbid as usize;
    (c < MAX_CBID).then_some(c + usize::from(runtime) * MAX_CBID)
}

/// (cbid, runtime) of a [`slot`].
pub fn unslot(slot: usize) -> (u32, bool) {
    ((slot % MAX_CBID) as u32, slot >= MAX_CBID)
}

/// [`TRACED`] and [`TRACED_RUNTIME`] as a bit set over [`slot`]s.
const TRACED_SET: [u64; 32] = {
    let mut set = [0u64; 32];
    let mut i = 0;
    while i < TRACED.len() + TRACED_RUNTIME.len() {
        let (c, runtime) = if i < TRACED.len() {
            (TRACED[i] as usize, 0)
        } else {
            (TRACED_RUNTIME[i - TRACED.len()] as usize, 1)
        };
        assert!(c < MAX_CBID, "a traced cbid past the set");
        let s = c + runtime * MAX_CBID;
        set[s / 64] |= 1 << (s % 64);
        i += 1;
    }
    set
};

/// `GPUPROF_API` as [`ApiTrace`] as u8 (`configure`).
static MODE: AtomicU8 = AtomicU8::new(ApiTrace::Sync as u8);

/// Takes `GPUPROF_API`.
pub fn configure(opts: &Options) {
    MODE.store(opts.api as u8, Ordering::Relaxed);
}

/// The tracing mode in use.
pub fn mode() -> ApiTrace {
    match MODE.load(Ordering::Relaxed) {
        m if m == ApiTrace::Off as u8 => ApiTrace::Off,
        m if m == ApiTrace::All as u8 => ApiTrace::All,
        _ => ApiTrace::Sync,
    }
}

/// Whether call `cbid` (not a launch) of the driver or (`runtime`) the runtime is
/// traced in the mode in use.
pub fn traced(cbid: u32, runtime: bool) -> bool {
    match mode() {
        ApiTrace::Off => false,
        ApiTrace::All => true,
        ApiTrace::Sync => {
            slot(cbid, runtime).is_some_and(|s| TRACED_SET[s / 64] & (1 << (s % 64)) != 0)
        }
    }
}

/// Interned name ids per [`slot`] (0: not interned yet); cbids past the table intern
/// at every call.
static NAMES: [AtomicU32; 2 * MAX_CBID] = [const { AtomicU32::new(0) }; 2 * MAX_CBID];

/// A call's span from its API entry and exit callbacks: at entry the time is kept in
/// CUPTI's per-call slot and `None` returned; at exit, (entry, exit) CUPTI
/// timestamps (the exit's twice when CUPTI gave no slot).
pub fn span(t: &Tracer, d: &CUpti_CallbackData) -> Option<(u64, u64)> {
    let now = callback::timestamp(t.cupti);
    let slot = d.correlationData;
    if d.callbackSite == CUPTI_API_ENTER {
        if !slot.is_null() {
            // SAFETY: CUPTI gives each API call an 8-byte slot kept from enter to exit.
            unsafe { *slot = now };
        }
        return None;
    }
    if d.callbackSite != CUPTI_API_EXIT {
        return None;
    }
    let start = if slot.is_null() {
        now
    } else {
        // SAFETY: as above; it holds what we stored at enter.
        unsafe { *slot }
    };
    Some((start, now))
}

/// One traced call's API entry or exit (a runtime call's when `runtime`): at exit it
/// hands off the record.
pub fn on_api(t: &Tracer, cbid: u32, runtime: bool, d: &CUpti_CallbackData, thread_id: u64) {
    let Some((start, now)) = span(t, d) else {
        return;
    };
    let Some(name) = name_id(cbid, runtime, d) else {
        handoff::lost();
        return;
    };
    // SAFETY: functionParams is the params struct CUPTI passes for `cbid` of the
    // domain, valid during the callback.
    let args = unsafe {
        if runtime {
            crate::runtime_args::args_of(cbid, d.functionParams)
        } else {
            crate::driver_args::args_of(cbid, d.functionParams)
        }
    };
    let stream_id = match args.stream {
        Some((stream, per_thread)) => {
            // SAFETY: the call's context and a stream handle the application passed
            // to it, during its callback.
            let id = unsafe { callback::stream_id(t.cupti, d.context, stream, per_thread) };
            id.unwrap_or(NO_STREAM)
        }
        None => NO_STREAM,
    };
    handoff::send(Record::ApiCall(ApiCall {
        correlation_id: d.correlationId,
        cbid,
        runtime,
        name,
        context_id: d.contextUid,
        thread_id,
        start_ns: start,
        end_ns: now,
        bytes: args.bytes,
        stream_id,
        event: args.event as u64,
        ok: callback::returned_success(d),
    }));
}

/// The id of the name of the function in `slot`, once a call of it was seen.
pub fn cached_name(slot: usize) -> Option<u32> {
    let id = NAMES.get(slot)?.load(Ordering::Relaxed);
    (id != 0).then_some(id)
}

/// Whether the calls not traced one by one are counted (`GPUPROF_API=sync`).
pub fn counts_others() -> bool {
    mode() == ApiTrace::Sync
}

/// The id of the function's name, interned the first time its cbid is seen.
pub fn name_id(cbid: u32, runtime: bool, d: &CUpti_CallbackData) -> Option<u32> {
    let cached = slot(cbid, runtime).and_then(|s| NAMES.get(s));
    if let Some(id) = cached
        .map(|c| c.load(Ordering::Relaxed))
        .filter(|&id| id != 0)
    {
        return Some(id);
    }
    // SAFETY: CUPTI's function name is a static NUL-terminated string (or null).
    let id = unsafe { handoff::intern(d.functionName) }?;
    if let Some(c) = cached {
        c.store(id, Ordering::Relaxed);
    }
    Some(id)
}
