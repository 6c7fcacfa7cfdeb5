//! `cuptiActivityGetAttribute` / `cuptiActivitySetAttribute` (and `_v2`).
//!
//! Modelled: the device buffer sizes and pool attributes (size_t, stored and
//! reported; the sim has no device buffers, so they change nothing else),
//! `ZEROED_OUT_ACTIVITY_BUFFER` (honoured), `MEM_ALLOCATION_TYPE_HOST_PINNED`,
//! `PER_THREAD_ACTIVITY_BUFFER` (13.2+; stored), `MULTIPLE_SUBSCRIBER_STATE` (13.2+,
//! read-only), `THREAD_ID_TYPE` (13.2+: "Get or set the thread ID type (for the
//! specified subscriber). The value is a CUpti_ActivityThreadIdType", a 4-byte enum,
//! DEFAULT 0 or SYSTEM 1; set through `cuptiActivitySetAttribute_v2` it is that
//! subscriber's own and its API and marker records carry that kind of thread id,
//! set without a subscriber it is the process-wide type `cuptiSetThreadIdType`
//! sets). The profiling-semaphore attributes ("not
//! supported starting with CUDA 12.3") and the other attributes of the release's enum
//! answer `CUPTI_ERROR_NOT_SUPPORTED`; values outside the enum
//! `CUPTI_ERROR_INVALID_PARAMETER`.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use cupti_sys::CUptiResult::*;
use cupti_sys::{CUptiResult, CUpti_SubscriberHandle};

use crate::activity::{self, lock, Attrs, Client};
use crate::api_activity::v2_client;
use crate::ffi::guard;
use crate::{release, subscribers};

type R = CUptiResult::Type;

enum Slot<'a> {
    Size(&'a mut usize),
    Byte(&'a mut u8),
    MultipleState,
    ThreadIdType(&'a mut Option<u32>),
}

fn slot(a: &mut Attrs, attr: u32) -> Result<Slot<'_>, R> {
    let rel = release::current();
    if attr > rel.max_attribute() {
        return Err(CUPTI_ERROR_INVALID_PARAMETER);
    }
    Ok(match attr {
        0 => Slot::Size(&mut a.device_buffer_size),
        1 => Slot::Size(&mut a.device_buffer_size_cdp),
        2 => Slot::Size(&mut a.device_buffer_pool_limit),
        5 => Slot::Byte(&mut a.zeroed_out_buffer),
        6 => Slot::Size(&mut a.device_buffer_pre_allocate),
        8 => Slot::Byte(&mut a.host_pinned),
        9 => Slot::Byte(&mut a.per_thread_buffer),
        10 => Slot::Size(&mut a.device_buffer_size_graphs),
        12 => Slot::MultipleState,
        21 => Slot::ThreadIdType(&mut a.thread_id_type),
        _ => return Err(CUPTI_ERROR_NOT_SUPPORTED),
    })
}

/// # Safety
/// `size` and `value` are null or valid for `*size` bytes.
unsafe fn get(c: &Client, attr: u32, size: *mut usize, value: *mut c_void) -> R {
    if size.is_null() || value.is_null() {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    let mut attrs = lock(&c.attrs);
    let bytes: Vec<u8> = match slot(&mut attrs, attr) {
        Err(e) => return e,
        Ok(Slot::Size(v)) => v.to_ne_bytes().to_vec(),
        Ok(Slot::Byte(v)) => vec![*v],
        Ok(Slot::MultipleState) => vec![subscribers::multiple_state()],
        Ok(Slot::ThreadIdType(own)) => own
            .unwrap_or_else(|| activity::THREAD_ID_TYPE.load(Ordering::Relaxed))
            .to_ne_bytes()
            .to_vec(),
    };
    // SAFETY: non-null per the check; valid per the caller.
    unsafe {
        if *size < bytes.len() {
            return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), value as *mut u8, bytes.len());
        *size = bytes.len();
    }
    CUPTI_SUCCESS
}

/// # Safety
/// `size` and `value` are null or valid for `*size` bytes.
unsafe fn set(c: &Client, attr: u32, size: *mut usize, value: *mut c_void) -> R {
    if size.is_null() || value.is_null() {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    // SAFETY: non-null, readable per the caller.
    let have = unsafe { *size };
    let mut attrs = lock(&c.attrs);
    match slot(&mut attrs, attr) {
        Err(e) => e,
        Ok(Slot::Size(v)) if have >= std::mem::size_of::<usize>() => {
            // SAFETY: at least size_of::<usize>() readable bytes.
            *v = unsafe { (value as *const usize).read_unaligned() };
            CUPTI_SUCCESS
        }
        Ok(Slot::Byte(v)) if have >= 1 => {
            // SAFETY: at least one readable byte.
            *v = unsafe { *(value as *const u8) };
            CUPTI_SUCCESS
        }
        // "this attribute cannot be set by cuptiActivitySetAttribute".
        Ok(Slot::MultipleState) => CUPTI_ERROR_INVALID_PARAMETER,
        Ok(Slot::ThreadIdType(own)) if have >= 4 => {
            // SAFETY: at least four readable bytes.
            let t = unsafe { (value as *const u32).read_unaligned() };
            // CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT or _SYSTEM (_SIZE is the count).
            if t > 1 {
                return CUPTI_ERROR_INVALID_PARAMETER;
            }
            if c.key == 0 {
                activity::THREAD_ID_TYPE.store(t, Ordering::Relaxed);
            } else {
                *own = Some(t);
            }
            CUPTI_SUCCESS
        }
        Ok(_) => CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT,
    }
}

/// `cuptiActivityGetAttribute(CUpti_ActivityAttribute, size_t *valueSize, void *value)`.
///
/// # Safety
/// `size` and `value` are null or valid for `*size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetAttribute(
    attr: u32,
    size: *mut usize,
    value: *mut c_void,
) -> R {
    // SAFETY: forwarded.
    guard(|| unsafe { get(&activity::client(0), attr, size, value) })
}

/// `cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t *valueSize, void *value)`.
///
/// # Safety
/// As [`cuptiActivityGetAttribute`].
#[no_mangle]
pub unsafe extern "C" fn cuptiActivitySetAttribute(
    attr: u32,
    size: *mut usize,
    value: *mut c_void,
) -> R {
    // SAFETY: forwarded.
    guard(|| unsafe { set(&activity::client(0), attr, size, value) })
}

/// `cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle, ...)` (13.2 on).
///
/// # Safety
/// As [`cuptiActivityGetAttribute`].
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetAttribute_v2(
    s: CUpti_SubscriberHandle,
    attr: u32,
    size: *mut usize,
    value: *mut c_void,
) -> R {
    guard(|| match v2_client(s, false) {
        // SAFETY: forwarded.
        Ok(c) => unsafe { get(&c, attr, size, value) },
        Err(e) => e,
    })
}

/// `cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle, ...)` (13.2 on).
///
/// # Safety
/// As [`cuptiActivityGetAttribute`].
#[no_mangle]
pub unsafe extern "C" fn cuptiActivitySetAttribute_v2(
    s: CUpti_SubscriberHandle,
    attr: u32,
    size: *mut usize,
    value: *mut c_void,
) -> R {
    guard(|| match v2_client(s, false) {
        // SAFETY: forwarded.
        Ok(c) => unsafe { set(&c, attr, size, value) },
        Err(e) => e,
    })
}
