//! Exports of the callback API (`cupti_callbacks.h`).

use std::ffi::{c_char, c_void, CStr};

use cupti_sys::CUptiResult::*;
use cupti_sys::{CUptiResult, CUpti_CallbackFunc, CUpti_SubscriberHandle, CUpti_SubscriberParams};

use crate::ffi::guard;
use crate::subscribers::{self, Refused};
use crate::{activity, driver, release};

type R = CUptiResult::Type;

/// `cuptiSubscribe(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *)`: one
/// subscriber at a time in every release.
///
/// # Safety
/// `subscriber` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiSubscribe(
    subscriber: *mut CUpti_SubscriberHandle,
    callback: CUpti_CallbackFunc,
    userdata: *mut c_void,
) -> R {
    guard(|| {
        if subscriber.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        if driver::get().is_none() {
            return CUPTI_ERROR_NOT_INITIALIZED;
        }
        match subscribers::subscribe(callback, userdata, None, false) {
            Ok((h, _)) => {
                // SAFETY: non-null, writable per the caller.
                unsafe { subscriber.write(h) };
                CUPTI_SUCCESS
            }
            Err(Refused::Multiple(_)) => CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
        }
    })
}

/// `cuptiSubscribe_v2(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
/// CUpti_SubscriberParams *)`.
///
/// Declared from the 13.0 headers on. Impersonating a 12.x release it behaves as if
/// absent and returns `CUPTI_ERROR_NOT_SUPPORTED` without doing anything; the symbol
/// itself is still exported, since one shared object cannot hide symbols per
/// release (a client probing with `dlsym` finds it on every release).
///
/// 13.0 and 13.1: one subscriber at a time (their params struct has no
/// `allowMultipleSubscribers`). 13.2 on: `allowMultipleSubscribers` is read when
/// `structSize` covers it. A `structSize` larger than the release's
/// `CUpti_SubscriberParams_STRUCT_SIZE` is `CUPTI_ERROR_INVALID_PARAMETER`.
///
/// # Safety
/// `subscriber` is null or writable; `params` is null or a valid params struct whose
/// `subscriberName` is null or a C string and `oldSubscriberName` null or writable
/// for `oldSubscriberSize` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuptiSubscribe_v2(
    subscriber: *mut CUpti_SubscriberHandle,
    callback: CUpti_CallbackFunc,
    userdata: *mut c_void,
    params: *mut CUpti_SubscriberParams,
) -> R {
    guard(|| {
        let rel = release::current();
        if !rel.has_subscribe_v2() {
            return CUPTI_ERROR_NOT_SUPPORTED;
        }
        if subscriber.is_null() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        // SAFETY: null or valid per the caller.
        let p = unsafe { params.as_mut() };
        // A size beyond the release's CUpti_SubscriberParams_STRUCT_SIZE is refused
        // (strict, as for the profiling params structs).
        let max = crate::profiling::release_struct_size("CUpti_SubscriberParams");
        if p.as_ref()
            .is_some_and(|p| p.structSize == 0 || max.is_some_and(|m| p.structSize > m))
        {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        if driver::get().is_none() {
            return CUPTI_ERROR_NOT_INITIALIZED;
        }
        let name = p.as_ref().filter(|p| !p.subscriberName.is_null()).map(|p| {
            // SAFETY: subscriberName is a C string per the caller.
            unsafe { CStr::from_ptr(p.subscriberName) }
                .to_string_lossy()
                .into_owned()
        });
        let allow_field_end =
            std::mem::offset_of!(CUpti_SubscriberParams, allowMultipleSubscribers) + 1;
        let allow = rel.has_multiple_subscribers()
            && p.as_ref().is_some_and(|p| {
                p.structSize >= allow_field_end && p.allowMultipleSubscribers != 0
            });
        let (result, old) = match subscribers::subscribe(callback, userdata, name.as_deref(), allow)
        {
            Ok((h, first)) => {
                // SAFETY: non-null, writable per the caller.
                unsafe { subscriber.write(h) };
                // "If multiple subscribers are allowed, this will be the name of the
                // first subscriber".
                (CUPTI_SUCCESS, allow.then_some(first))
            }
            Err(Refused::Multiple(holder)) => {
                (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, Some(holder))
            }
        };
        if let (Some(p), Some(old)) = (p, old) {
            if !p.oldSubscriberName.is_null() && p.oldSubscriberSize > 0 {
                let bytes = old.as_bytes();
                let n = bytes.len().min(p.oldSubscriberSize - 1);
                // SAFETY: writable for oldSubscriberSize bytes per the caller; n + 1
                // <= oldSubscriberSize.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr() as *const c_char,
                        p.oldSubscriberName,
                        n,
                    );
                    *p.oldSubscriberName.add(n) = 0;
                }
            }
        }
        result
    })
}

/// `cuptiUnsubscribe(CUpti_SubscriberHandle)`. The subscriber's own activity client
/// (13.2 `_v2` functions) is flushed, forced, and removed.
#[no_mangle]
pub extern "C" fn cuptiUnsubscribe(subscriber: CUpti_SubscriberHandle) -> R {
    guard(|| {
        if subscriber.is_null() || !subscribers::unsubscribe(subscriber) {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        activity::remove(subscriber as usize);
        CUPTI_SUCCESS
    })
}

/// `cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain,
/// CUpti_CallbackId)`.
#[no_mangle]
pub extern "C" fn cuptiEnableCallback(
    enable: u32,
    subscriber: CUpti_SubscriberHandle,
    domain: u32,
    cbid: u32,
) -> R {
    guard(|| {
        if subscribers::enable(subscriber, domain, Some(cbid), enable != 0) {
            CUPTI_SUCCESS
        } else {
            CUPTI_ERROR_INVALID_PARAMETER
        }
    })
}

/// `cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain)`.
#[no_mangle]
pub extern "C" fn cuptiEnableDomain(
    enable: u32,
    subscriber: CUpti_SubscriberHandle,
    domain: u32,
) -> R {
    guard(|| {
        if subscribers::enable(subscriber, domain, None, enable != 0) {
            CUPTI_SUCCESS
        } else {
            CUPTI_ERROR_INVALID_PARAMETER
        }
    })
}

/// `cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle)`.
#[no_mangle]
pub extern "C" fn cuptiEnableAllDomains(enable: u32, subscriber: CUpti_SubscriberHandle) -> R {
    guard(|| {
        if !subscribers::exists(subscriber) {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        for d in 1..cupti_sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_SIZE {
            subscribers::enable(subscriber, d, None, enable != 0);
        }
        CUPTI_SUCCESS
    })
}

/// `cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle, domain, cbid)`.
///
/// # Safety
/// `enable` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetCallbackState(
    enable: *mut u32,
    subscriber: CUpti_SubscriberHandle,
    domain: u32,
    cbid: u32,
) -> R {
    guard(|| match subscribers::state(subscriber, domain, cbid) {
        // SAFETY: null or writable per the caller.
        Some(on) => unsafe { crate::ffi::write_out(enable, u32::from(on)) },
        None => CUPTI_ERROR_INVALID_PARAMETER,
    })
}
