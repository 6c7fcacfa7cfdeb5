//! Exports of the activity API (`cupti_activity.h`): enabling kinds, buffer callbacks,
//! flushing, iterating records, dropped counts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use cupti_sys::CUptiResult::*;
use cupti_sys::{
    CUcontext, CUptiResult, CUpti_Activity, CUpti_ActivityConfig, CUpti_ActivityFlag,
    CUpti_ActivityKind as K, CUpti_BuffersCallbackCompleteFunc,
    CUpti_BuffersCallbackCompleteFunc_v2, CUpti_BuffersCallbackRequestFunc,
    CUpti_BuffersCallbackRequestFunc_v2, CUpti_SubscriberHandle,
};

use crate::activity::{self, lock, Client, Request};
use crate::buffers::align_offset;
use crate::ffi::{guard, write_out};
use crate::worker::Complete;
use crate::{driver, layouts, release, subscribers};

type R = CUptiResult::Type;

/// The `_v2` client of `subscriber`, or the error for a missing function / handle.
pub(crate) fn v2_client(
    subscriber: CUpti_SubscriberHandle,
    since_13_3: bool,
) -> Result<Arc<Client>, R> {
    let rel = release::current();
    let present = if since_13_3 {
        rel.has_activity_v2_more()
    } else {
        rel.has_activity_v2()
    };
    if !present {
        return Err(CUPTI_ERROR_NOT_SUPPORTED);
    }
    if subscriber.is_null() || !subscribers::exists(subscriber) {
        return Err(CUPTI_ERROR_INVALID_PARAMETER);
    }
    Ok(activity::client(subscriber as usize))
}

fn valid_kind(kind: u32) -> bool {
    kind > K::CUPTI_ACTIVITY_KIND_INVALID && kind < K::CUPTI_ACTIVITY_KIND_COUNT
}

fn set_kind(c: &Client, kind: u32, on: bool) -> R {
    if !valid_kind(kind) {
        return CUPTI_ERROR_INVALID_KIND;
    }
    if driver::get().is_none() {
        return CUPTI_ERROR_NOT_INITIALIZED;
    }
    c.set_enabled(kind, on);
    CUPTI_SUCCESS
}

/// `cuptiActivityEnable(CUpti_ActivityKind)`. Every valid kind can be enabled; the sim
/// writes records for MEMCPY, MEMSET, KERNEL, CONCURRENT_KERNEL, DRIVER, DEVICE,
/// CONTEXT, and (from NVTX) MARKER, MARKER_DATA and NAME only.
#[no_mangle]
pub extern "C" fn cuptiActivityEnable(kind: u32) -> R {
    guard(|| set_kind(&activity::client(0), kind, true))
}

/// `cuptiActivityDisable(CUpti_ActivityKind)`.
#[no_mangle]
pub extern "C" fn cuptiActivityDisable(kind: u32) -> R {
    guard(|| set_kind(&activity::client(0), kind, false))
}

/// `cuptiActivityEnable_v2(CUpti_SubscriberHandle, CUpti_ActivityKind,
/// CUpti_ActivityConfig *)` (13.2 on). Field selection in the config is not
/// simulated: records always carry every field.
#[no_mangle]
pub extern "C" fn cuptiActivityEnable_v2(
    s: CUpti_SubscriberHandle,
    kind: u32,
    _cfg: *mut CUpti_ActivityConfig,
) -> R {
    guard(|| match v2_client(s, false) {
        Ok(c) => set_kind(&c, kind, true),
        Err(e) => e,
    })
}

/// `cuptiActivityDisable_v2` (13.2 on).
#[no_mangle]
pub extern "C" fn cuptiActivityDisable_v2(
    s: CUpti_SubscriberHandle,
    kind: u32,
    _cfg: *mut CUpti_ActivityConfig,
) -> R {
    guard(|| match v2_client(s, false) {
        Ok(c) => set_kind(&c, kind, false),
        Err(e) => e,
    })
}

fn register(c: &Client, request: Request, complete: Complete, ok: bool) -> R {
    if !ok {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    *lock(&c.callbacks) = Some((request, complete));
    CUPTI_SUCCESS
}

/// `cuptiActivityRegisterCallbacks(request, complete)`: both must be non-null.
#[no_mangle]
pub extern "C" fn cuptiActivityRegisterCallbacks(
    request: CUpti_BuffersCallbackRequestFunc,
    complete: CUpti_BuffersCallbackCompleteFunc,
) -> R {
    guard(|| {
        let ok = request.is_some() && complete.is_some();
        register(
            &activity::client(0),
            Request::V1(request),
            Complete::V1(complete),
            ok,
        )
    })
}

/// `cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle, request, complete)`
/// (13.2 on).
#[no_mangle]
pub extern "C" fn cuptiActivityRegisterCallbacks_v2(
    s: CUpti_SubscriberHandle,
    request: CUpti_BuffersCallbackRequestFunc_v2,
    complete: CUpti_BuffersCallbackCompleteFunc_v2,
) -> R {
    guard(|| match v2_client(s, false) {
        Ok(c) => {
            let ok = request.is_some() && complete.is_some();
            register(&c, Request::V2(request), Complete::V2(complete), ok)
        }
        Err(e) => e,
    })
}

/// `cuptiActivityFlushAll(uint32_t flag)`: blocking; returns after the worker handed
/// the flushed buffers to the completion callbacks. `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`
/// returns every buffer; flag 0 only buffers whose records are all complete (every
/// GPU operation in it has ended by the driver's clock). The buffers of all clients
/// are flushed. `CUPTI_ERROR_INVALID_OPERATION` if no client registered callbacks.
#[no_mangle]
pub extern "C" fn cuptiActivityFlushAll(flag: u32) -> R {
    guard(|| {
        if !activity::clients()
            .iter()
            .any(|c| lock(&c.callbacks).is_some())
        {
            return CUPTI_ERROR_INVALID_OPERATION;
        }
        activity::flush_all(flag & CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED != 0);
        CUPTI_SUCCESS
    })
}

/// `cuptiActivityFlush(CUcontext, uint32_t streamId, uint32_t flag)`: deprecated;
/// "CONTEXT and STREAMID will be ignored".
#[no_mangle]
pub extern "C" fn cuptiActivityFlush(_ctx: CUcontext, _stream: u32, flag: u32) -> R {
    cuptiActivityFlushAll(flag)
}

/// `cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
/// CUpti_Activity **record)`. Records start at 8-byte aligned addresses; the size of
/// each is that of the impersonated release's struct for its kind.
///
/// # Safety
/// `buffer` holds `valid` readable bytes; `record` is null or points to null or to a
/// record this function returned for the same buffer.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNextRecord(
    buffer: *mut u8,
    valid: usize,
    record: *mut *mut CUpti_Activity,
) -> R {
    // SAFETY: forwarded.
    guard(|| unsafe { next_record(buffer, valid, record) })
}

/// `cuptiActivityGetNextRecord_v2(CUpti_SubscriberHandle, ...)` (13.3 on).
///
/// # Safety
/// As [`cuptiActivityGetNextRecord`].
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNextRecord_v2(
    s: CUpti_SubscriberHandle,
    buffer: *mut u8,
    valid: usize,
    record: *mut *mut CUpti_Activity,
) -> R {
    guard(|| match v2_client(s, true) {
        // SAFETY: forwarded.
        Ok(_) => unsafe { next_record(buffer, valid, record) },
        Err(e) => e,
    })
}

/// # Safety
/// As [`cuptiActivityGetNextRecord`].
pub(crate) unsafe fn next_record(
    buffer: *mut u8,
    valid: usize,
    record: *mut *mut CUpti_Activity,
) -> R {
    if buffer.is_null() || record.is_null() {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    let rel = release::current().release.name;
    // SAFETY: readable per the caller.
    let prev = unsafe { *record } as *mut u8;
    let from = if prev.is_null() {
        0
    } else {
        let off = prev as usize - buffer as usize;
        // SAFETY: `prev` is a record returned earlier, so its kind is readable.
        let kind = unsafe { (prev as *const u32).read() };
        match layouts::record_size(rel, kind) {
            Some(n) => off + n,
            None => return CUPTI_ERROR_INVALID_KIND,
        }
    };
    let off = align_offset(buffer, from);
    if off + std::mem::size_of::<u32>() > valid {
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    // SAFETY: off + 4 <= valid, and the buffer is aligned there.
    let kind = unsafe { (buffer.add(off) as *const u32).read() };
    match layouts::record_size(rel, kind) {
        Some(n) if off + n <= valid => {
            // SAFETY: writable per the caller; the record lies inside the buffer.
            unsafe { *record = buffer.add(off) as *mut CUpti_Activity };
            CUPTI_SUCCESS
        }
        _ => CUPTI_ERROR_INVALID_KIND,
    }
}

/// `cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t streamId, size_t *dropped)`:
/// records dropped since the last call, then reset. All buffers are global since
/// CUDA 6.0, so the count is the global queue's for any context and stream.
///
/// # Safety
/// `dropped` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNumDroppedRecords(
    _ctx: CUcontext,
    _stream: u32,
    dropped: *mut usize,
) -> R {
    guard(|| {
        if dropped.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let n = activity::client(0).dropped.swap(0, Ordering::AcqRel);
        // SAFETY: non-null, writable per the caller.
        unsafe { write_out(dropped, n as usize) }
    })
}

/// `cuptiActivityGetNumDroppedRecords_v2(CUpti_SubscriberHandle, CUcontext, uint32_t,
/// size_t *)` (13.3 on): the subscriber's own count, then reset.
///
/// # Safety
/// `dropped` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNumDroppedRecords_v2(
    s: CUpti_SubscriberHandle,
    _ctx: CUcontext,
    _stream: u32,
    dropped: *mut usize,
) -> R {
    guard(|| match v2_client(s, true) {
        Ok(c) if !dropped.is_null() => {
            let n = c.dropped.swap(0, Ordering::AcqRel);
            // SAFETY: non-null, writable per the caller.
            unsafe { write_out(dropped, n as usize) }
        }
        Ok(_) => CUPTI_ERROR_INVALID_PARAMETER,
        Err(e) => e,
    })
}

/// `cuptiActivityGetStructSize(CUpti_ActivityKind, uint32_t version, size_t *)`
/// (13.2 on): the size of the kind's record in the impersonated release (version 0)
/// or in the release whose `CUPTI_API_VERSION` is `version`; "Only versions >=
/// 130000 are supported". A version the sim has no layouts for is
/// `CUPTI_ERROR_NOT_SUPPORTED` too (not documented).
///
/// # Safety
/// `size` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetStructSize(
    kind: u32,
    version: u32,
    size: *mut usize,
) -> R {
    guard(|| {
        if !release::current().has_activity_v2() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        if size.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let name = if version == 0 {
            release::current().release.name
        } else if version < 130000 {
            return CUPTI_ERROR_NOT_SUPPORTED;
        } else {
            // CUPTI_API_VERSION is MMmmpp: match major and minor.
            match cupti_sys::records::RELEASES
                .iter()
                .find(|r| r.api_version >= 130000 && r.api_version / 100 == version / 100)
            {
                Some(r) => r.name,
                None => return CUPTI_ERROR_NOT_SUPPORTED,
            }
        };
        if !valid_kind(kind) {
            return CUPTI_ERROR_INVALID_KIND;
        }
        match layouts::record_size(name, kind) {
            // SAFETY: non-null, writable per the caller.
            Some(n) => unsafe { write_out(size, n) },
            None => CUPTI_ERROR_INVALID_KIND,
        }
    })
}
