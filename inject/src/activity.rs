//! CUPTI activity buffers: a pool allocated at start (memory is bounded by
//! configuration, not by the workload), the request / complete callbacks CUPTI calls
//! on its own threads, and decoding of completed buffers into records.
//!
//! An empty pool answers a request with no buffer: CUPTI then drops records and
//! counts them (`cuptiActivityGetNumDroppedRecords`), which the writer reports.

use std::alloc::Layout;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use crossbeam_channel::{Receiver, Sender};
use cupti_sys::{
    CUcontext, CUpti_Activity, CUpti_BufferCallbackCompleteInfo, CUpti_BufferCallbackRequestInfo,
};
use wire::Record;

use crate::capture_window;
use crate::decode::Decoded;
use crate::handoff::{self, Claims, CONTEXTS, DEVICES, UNKNOWN_KINDS};
use crate::log::debug;
use crate::state::{self, State};
use crate::tracer;
use cupti::activity::BufferCallbacks;

/// CUPTI requires activity buffers aligned to 8 bytes.
const ALIGN: usize = 8;

struct Pool {
    /// Free buffers, as addresses.
    free: (Sender<usize>, Receiver<usize>),
    size: usize,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Allocates `count` buffers of `size` bytes, once per process.
pub fn make_pool(size: usize, count: usize) -> Result<(), String> {
    let layout = Layout::from_size_align(size, ALIGN)
        .map_err(|e| format!("CUPTI buffer size {size}: {e}"))?;
    let free = crossbeam_channel::bounded(count);
    for _ in 0..count {
        // SAFETY: the layout has a non-zero size (options enforce at least 64K).
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(format!(
                "cannot allocate {count} CUPTI buffers of {size} bytes"
            ));
        }
        // The buffers live for the life of the process (CUPTI may hold them until exit).
        let _ = free.0.try_send(p as usize);
    }
    POOL.set(Pool { free, size })
        .map_err(|_| "the CUPTI buffer pool exists already".to_string())
}

/// The callbacks to register, in both signatures.
pub fn callbacks() -> BufferCallbacks {
    BufferCallbacks {
        request: Some(buffer_requested),
        complete: Some(buffer_completed),
        request_v2: Some(buffer_requested_v2),
        complete_v2: Some(buffer_completed_v2),
    }
}

fn request(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let (p, n) = match POOL
        .get()
        .and_then(|pool| pool.free.1.try_recv().ok().map(|p| (p, pool.size)))
    {
        Some((p, n)) => (p as *mut u8, n),
        None => (core::ptr::null_mut(), 0),
    };
    // SAFETY: CUPTI passes valid out-pointers (null-checked anyway).
    unsafe {
        if !buffer.is_null() {
            *buffer = p;
        }
        if !size.is_null() {
            *size = n;
        }
        if !max_records.is_null() {
            *max_records = 0;
        }
    }
}

unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| request(buffer, size, max_records)));
}

unsafe extern "C" fn buffer_requested_v2(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
    _info: *mut CUpti_BufferCallbackRequestInfo,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| request(buffer, size, max_records)));
}

unsafe extern "C" fn buffer_completed(
    _ctx: CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    crate::guard::guarded("the CUPTI buffer callback", (), || complete(buffer, valid));
}

unsafe extern "C" fn buffer_completed_v2(
    buffer: *mut u8,
    _size: usize,
    valid: usize,
    _info: *mut CUpti_BufferCallbackCompleteInfo,
) {
    crate::guard::guarded("the CUPTI buffer callback", (), || complete(buffer, valid));
}

fn complete(buffer: *mut u8, valid: usize) {
    if buffer.is_null() {
        return;
    }
    if state::state() == State::Running {
        if let Some(t) = tracer::get() {
            // SAFETY: CUPTI completed this buffer with `valid` bytes of records.
            unsafe { decode_buffer(t, buffer, valid) };
        }
    }
    if let Some(pool) = POOL.get() {
        let _ = pool.free.0.try_send(buffer as usize);
    }
}

/// Kinds already reported at debug level.
static UNKNOWN_SEEN: Claims<2> = Claims::new();

/// # Safety
/// `buffer` holds `valid` bytes of records CUPTI completed.
unsafe fn decode_buffer(t: &tracer::Tracer, buffer: *mut u8, valid: usize) {
    let mut rec: *mut CUpti_Activity = core::ptr::null_mut();
    let mut intern = |p| {
        // SAFETY: strings in a completed record are valid while we decode it.
        unsafe { handoff::intern(p) }
    };
    loop {
        // SAFETY: the caller's contract; `rec` is null or the previous record.
        match unsafe { cupti::activity::next_record(t.cupti, &t.subscriber, buffer, valid, rec) } {
            Ok(Some(r)) => rec = r,
            Ok(None) => break,
            Err(e) => {
                debug!("cuptiActivityGetNextRecord: {e}; rest of the buffer skipped");
                break;
            }
        }
        // SAFETY: CUPTI returned a complete record; every record starts with its kind.
        let kind = unsafe { (*rec).kind };
        let kernel = matches!(
            kind,
            cupti_sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL
                | cupti_sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
        );
        if kind == cupti_sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MARKER {
            // Counted as made at the NVTX call, in or out of the capture window.
            crate::tally::marker_completed();
        }
        // SAFETY: CUPTI returned a complete record of the loaded release.
        match unsafe { t.layouts.decode(rec as *const u8, &mut intern) } {
            // Outside the capture window: not recorded, not counted (its launch was
            // not either).
            Decoded::Record(r) if !capture_window::keeps(&r) => {}
            Decoded::Record(r) => {
                if kernel {
                    crate::tally::kernel_completed();
                }
                emit(r)
            }
            Decoded::Lost => {
                if kernel {
                    crate::tally::kernel_completed();
                }
                handoff::lost()
            }
            Decoded::Unknown(kind) => {
                UNKNOWN_KINDS.fetch_add(1, Ordering::Relaxed);
                if UNKNOWN_SEEN.claim(kind) {
                    debug!("activity records of kind {kind} are not decoded; skipped and counted");
                }
            }
        }
    }
}

/// Hands off a decoded record; devices and contexts only the first time (the
/// resource callback usually described them already).
fn emit(r: Record) {
    match &r {
        Record::Device(d) if !DEVICES.claim(d.id) => {}
        Record::Context(c) if !CONTEXTS.claim(c.context_id) => {}
        _ => {
            handoff::send(r);
        }
    }
}
