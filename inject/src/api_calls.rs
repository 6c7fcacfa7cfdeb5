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

use core::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use cupti_sys::CUpti_ApiCallbackSite::{CUPTI_API_ENTER, CUPTI_API_EXIT};
use cupti_sys::CUpti_CallbackData;
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
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
            args_of(cbid, d.functionParams)
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

/// What a call's parameters say: bytes, the stream named (with whether a null
/// handle means the per-thread default stream), the event named.
#[derive(Default)]
pub struct Args {
    pub bytes: u64,
    pub stream: Option<(cupti_sys::CUstream, bool)>,
    pub event: usize,
}

/// Whether `cbid` is a per-thread default stream variant (`_ptsz`, `_ptds`).
#[allow(non_upper_case_globals)]
fn per_thread(cbid: u32) -> bool {
    use cbid::*;
    matches!(
        cbid,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz
            | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz
    )
}

/// The arguments of the calls whose parameters are read; others give none.
///
/// # Safety
/// `params` is null or the params struct CUPTI passes for `cbid`, valid for reading.
#[allow(non_upper_case_globals)]
unsafe fn args_of(cbid: u32, params: *const c_void) -> Args {
    use cbid::*;
    if params.is_null() {
        return Args::default();
    }
    let pt = per_thread(cbid);
    macro_rules! read {
        ($t:ident, |$p:ident| $args:expr) => {{
            // SAFETY: CUPTI passes this struct for this callback id (the caller's
            // contract); it is valid during the callback.
            let $p = unsafe { &*(params as *const cupti_sys::$t) };
            $args
        }};
    }
    let on_default = |bytes: usize| Args {
        bytes: bytes as u64,
        // The legacy (or per-thread) default stream: a synchronous copy's or set's.
        stream: Some((core::ptr::null_mut(), pt)),
        event: 0,
    };
    let on = |bytes: u64, stream: cupti_sys::CUstream| Args {
        bytes,
        stream: Some((stream, pt)),
        event: 0,
    };
    match cbid {
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize
        | CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz => {
            read!(cuStreamSynchronize_params, |p| on(0, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize => read!(cuEventSynchronize_params, |p| Args {
            event: p.hEvent as usize,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuEventRecord | CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz => {
            read!(cuEventRecord_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags
        | CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz => {
            read!(cuEventRecordWithFlags_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz => {
            read!(cuStreamWaitEvent_params, |p| Args {
                event: p.hEvent as usize,
                ..on(0, p.hStream)
            })
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz => {
            read!(cuStreamWaitValue32_v2_params, |p| on(0, p.stream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64
        | CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz => {
            read!(cuStreamWaitValue64_v2_params, |p| on(0, p.stream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 => read!(cuMemAlloc_v2_params, |p| Args {
            bytes: p.bytesize as u64,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync | CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz => {
            read!(cuMemAllocAsync_params, |p| on(p.bytesize as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2 => read!(cuMemAllocHost_v2_params, |p| Args {
            bytes: p.bytesize as u64,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc => read!(cuMemHostAlloc_params, |p| Args {
            bytes: p.bytesize as u64,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged => read!(cuMemAllocManaged_params, |p| Args {
            bytes: p.bytesize as u64,
            ..Args::default()
        }),
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync | CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz => {
            read!(cuMemFreeAsync_params, |p| on(0, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy | CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds => {
            read!(cuMemcpy_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync | CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz => {
            read!(cuMemcpyAsync_params, |p| on(p.ByteCount as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds => {
            read!(cuMemcpyHtoD_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds => {
            read!(cuMemcpyDtoH_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds => {
            read!(cuMemcpyDtoD_v2_params, |p| on_default(p.ByteCount))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz => {
            read!(cuMemcpyHtoDAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz => {
            read!(cuMemcpyDtoHAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2
        | CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz => {
            read!(cuMemcpyDtoDAsync_v2_params, |p| on(
                p.ByteCount as u64,
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds => {
            read!(cuMemsetD8_v2_params, |p| on_default(p.N))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds => {
            read!(cuMemsetD16_v2_params, |p| on_default(p.N.saturating_mul(2)))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2 | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds => {
            read!(cuMemsetD32_v2_params, |p| on_default(p.N.saturating_mul(4)))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async | CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz => {
            read!(cuMemsetD8Async_params, |p| on(p.N as u64, p.hStream))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async
        | CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz => {
            read!(cuMemsetD16Async_params, |p| on(
                (p.N as u64).saturating_mul(2),
                p.hStream
            ))
        }
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async
        | CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz => {
            read!(cuMemsetD32Async_params, |p| on(
                (p.N as u64).saturating_mul(4),
                p.hStream
            ))
        }
        _ => Args::default(),
    }
}
