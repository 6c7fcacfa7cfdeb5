//! CUPTI's activity API (`cupti_activity.h`) as safe wrappers returning
//! `Result<_, CuptiError>`; every `unsafe` block is one FFI call.
//!
//! Which variant of a call is used follows NVIDIA's headers, by the version the
//! library answered: the per-subscriber activity calls (`cuptiActivityEnable_v2`,
//! `cuptiActivityRegisterCallbacks_v2`) from 13.2, `cuptiActivityGetNextRecord_v2`,
//! `cuptiActivityGetNumDroppedRecords_v2` and the thread-id-type attribute from 13.3,
//! `cuptiActivityGetStructSize` from 13.2.
//!
//! Reference: <https://docs.nvidia.com/cupti/api/group__CUPTI__ACTIVITY__API.html>.

use cupti_sys::CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED;
use cupti_sys::{
    CUpti_Activity, CUpti_BuffersCallbackCompleteFunc, CUpti_BuffersCallbackCompleteFunc_v2,
    CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackRequestFunc_v2,
};

use crate::callback::{at_least, Subscriber, NOT_SUPPORTED};
use crate::error::CuptiError;
use crate::library::Cupti;

type Result<T> = std::result::Result<T, CuptiError>;

/// `cuptiActivityEnable_v2(subscriber, kind, NULL)` for a multiple-subscriber
/// subscription, else `cuptiActivityEnable(kind)`.
pub fn activity_enable(c: &Cupti, s: &Subscriber, kind: u32) -> Result<()> {
    let fns = c.fns();
    if s.multiple {
        let f = fns.cuptiActivityEnable_v2.ok_or(NOT_SUPPORTED)?;
        // SAFETY: a NULL config asks for every field, as documented.
        CuptiError::check(unsafe { f(s.handle, kind, core::ptr::null_mut()) })
    } else {
        let f = fns.cuptiActivityEnable.ok_or(NOT_SUPPORTED)?;
        // SAFETY: plain value.
        CuptiError::check(unsafe { f(kind) })
    }
}

/// The buffer callbacks in both signatures; which pair is registered depends on the
/// subscription.
pub struct BufferCallbacks {
    pub request: CUpti_BuffersCallbackRequestFunc,
    pub complete: CUpti_BuffersCallbackCompleteFunc,
    pub request_v2: CUpti_BuffersCallbackRequestFunc_v2,
    pub complete_v2: CUpti_BuffersCallbackCompleteFunc_v2,
}

/// `cuptiActivityRegisterCallbacks_v2` for a multiple-subscriber subscription, else
/// `cuptiActivityRegisterCallbacks`.
pub fn register_buffer_callbacks(c: &Cupti, s: &Subscriber, cb: &BufferCallbacks) -> Result<()> {
    let fns = c.fns();
    if s.multiple {
        let f = fns.cuptiActivityRegisterCallbacks_v2.ok_or(NOT_SUPPORTED)?;
        // SAFETY: both callbacks are `extern "C"` functions that live as long as the
        // library and have the header's prototypes.
        CuptiError::check(unsafe { f(s.handle, cb.request_v2, cb.complete_v2) })
    } else {
        let f = fns.cuptiActivityRegisterCallbacks.ok_or(NOT_SUPPORTED)?;
        // SAFETY: as above.
        CuptiError::check(unsafe { f(cb.request, cb.complete) })
    }
}

/// Thread ids in activity records (NVTX markers, overhead) become the kernel's
/// thread ids (gettid), the ids our callbacks record for launches, so ranges and
/// launches can be matched. `cupti_activity.h` of 13.3+: `cuptiSetThreadIdType` "is
/// not supported when multiple subscribers are allowed"; there the subscriber's
/// `CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE` is set through `cuptiActivitySetAttribute_v2`.
/// Before 13.3, and for a single subscriber, `cuptiSetThreadIdType`.
pub fn use_system_thread_ids(c: &Cupti, s: &Subscriber) -> Result<()> {
    use cupti_sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE;
    use cupti_sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
    let fns = c.fns();
    if s.multiple && at_least(c, 130300) {
        let f = fns.cuptiActivitySetAttribute_v2.ok_or(NOT_SUPPORTED)?;
        let mut value: cupti_sys::CUpti_ActivityThreadIdType::Type =
            CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
        let mut size = core::mem::size_of_val(&value);
        // SAFETY: the handle came from a successful subscribe; `size` and `value` are
        // valid for the call, and the value is the attribute's documented type
        // (`CUpti_ActivityThreadIdType`) of `size` bytes.
        CuptiError::check(unsafe {
            f(
                s.handle,
                CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE,
                &mut size,
                (&mut value as *mut u32).cast(),
            )
        })
    } else {
        let f = fns.cuptiSetThreadIdType.ok_or(NOT_SUPPORTED)?;
        // SAFETY: plain value.
        CuptiError::check(unsafe { f(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) })
    }
}

/// `cuptiActivityFlushAll(flag)`. Not to be called from a buffer callback.
pub fn flush_all(c: &Cupti, flag: u32) -> Result<()> {
    let f = c.fns().cuptiActivityFlushAll.ok_or(NOT_SUPPORTED)?;
    // SAFETY: plain value.
    CuptiError::check(unsafe { f(flag) })
}

/// The record after `prev` (the first for null) in `buffer[..valid]`, `None` at the
/// end. `cuptiActivityGetNextRecord_v2` for a multiple-subscriber subscription on
/// 13.3+, else `cuptiActivityGetNextRecord`.
///
/// # Safety
/// `buffer` holds `valid` bytes CUPTI completed, and `prev` is null or a record this
/// function returned for the same buffer.
pub unsafe fn next_record(
    c: &Cupti,
    s: &Subscriber,
    buffer: *mut u8,
    valid: usize,
    prev: *mut CUpti_Activity,
) -> Result<Option<*mut CUpti_Activity>> {
    let fns = c.fns();
    let mut rec = prev;
    let v2 = fns
        .cuptiActivityGetNextRecord_v2
        .filter(|_| s.multiple && at_least(c, 130300));
    let rc = match v2 {
        // SAFETY: the caller's contract; CUPTI only reads the buffer and writes `rec`.
        Some(f) => unsafe { f(s.handle, buffer, valid, &mut rec) },
        None => {
            let f = fns.cuptiActivityGetNextRecord.ok_or(NOT_SUPPORTED)?;
            // SAFETY: as above.
            unsafe { f(buffer, valid, &mut rec) }
        }
    };
    if rc == CUPTI_ERROR_MAX_LIMIT_REACHED {
        return Ok(None);
    }
    CuptiError::check(rc)?;
    Ok(Some(rec).filter(|r| !r.is_null()))
}

/// Records CUPTI dropped since the last call (it resets the count):
/// `cuptiActivityGetNumDroppedRecords_v2` for a multiple-subscriber subscription on
/// 13.3+, else `cuptiActivityGetNumDroppedRecords(NULL, 0)` (the global queue, which
/// holds every buffer since CUDA 6).
pub fn take_dropped(c: &Cupti, s: &Subscriber) -> Result<u64> {
    let fns = c.fns();
    let mut n: usize = 0;
    let v2 = fns
        .cuptiActivityGetNumDroppedRecords_v2
        .filter(|_| s.multiple && at_least(c, 130300));
    let rc = match v2 {
        // SAFETY: `n` is valid for writing; context and stream are reserved.
        Some(f) => unsafe { f(s.handle, core::ptr::null_mut(), 0, &mut n) },
        None => {
            let f = fns.cuptiActivityGetNumDroppedRecords.ok_or(NOT_SUPPORTED)?;
            // SAFETY: `n` is valid for writing; NULL context means the global queue.
            unsafe { f(core::ptr::null_mut(), 0, &mut n) }
        }
    };
    CuptiError::check(rc)?;
    Ok(n as u64)
}

/// `cuptiActivityGetStructSize(kind, 0)`: the size of the record CUPTI writes for
/// `kind`, on 13.2+ (`None` where the release cannot say).
pub fn struct_size(c: &Cupti, kind: u32) -> Option<usize> {
    let f = c
        .fns()
        .cuptiActivityGetStructSize
        .filter(|_| at_least(c, 130200))?;
    let mut n = 0usize;
    // SAFETY: `n` is valid for writing; version 0 means the library's own.
    let rc = unsafe { f(kind, 0, &mut n) };
    (rc == 0).then_some(n)
}
