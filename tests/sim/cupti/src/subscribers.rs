//! Callback subscribers: who gets which callbacks, and the rules for how many may
//! subscribe.
//!
//! - `cuptiSubscribe`: "Only a single subscriber can be registered at a time"; a
//!   second gets `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`.
//! - `cuptiSubscribe_v2` (13.0 headers on): the same rule in 13.0 and 13.1 (their
//!   `CUpti_SubscriberParams` has no `allowMultipleSubscribers`), plus the subscriber
//!   name: on failure the existing subscriber's name is written to
//!   `oldSubscriberName`. From 13.2, `allowMultipleSubscribers = 1` lets several
//!   subscribers coexist when every subscriber asked for it; the first subscriber
//!   fixes the process's state (`CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE`: 2 =
//!   not set yet, 0 = single, 1 = multiple), which resets when the last unsubscribes.
//!
//! Callbacks are enabled per subscriber and callback id in the domains the sim
//! delivers: driver API, runtime API (from the simulated CUDA runtime), resource and
//! NVTX (`CUpti_nvtx_api_trace_cbid`, see `nvtx_meta.rs`). Enabling a whole domain
//! enables every valid id of it (1 to size - 1); `cuptiEnableAllDomains` enables all of
//! them. The synchronize and state domains accept whole-domain enables but deliver
//! nothing.

use std::ffi::{c_void, CString};
use std::sync::Mutex;

use cupti_sys::{
    CUpti_CallbackDomain as D, CUpti_CallbackFunc, CUpti_CallbackIdResource,
    CUpti_SubscriberHandle, CUpti_driver_api_trace_cbid_enum, CUpti_runtime_api_trace_cbid_enum,
};

use crate::activity::lock;

/// The number of callback ids of a domain the sim delivers (0 for the others).
pub fn domain_size(domain: u32) -> Option<usize> {
    match domain {
        D::CUPTI_CB_DOMAIN_DRIVER_API => {
            Some(CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_SIZE as usize)
        }
        D::CUPTI_CB_DOMAIN_RESOURCE => {
            Some(CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_SIZE as usize)
        }
        D::CUPTI_CB_DOMAIN_NVTX => Some(crate::nvtx_meta::cbid::SIZE as usize),
        D::CUPTI_CB_DOMAIN_RUNTIME_API => {
            Some(CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_SIZE as usize)
        }
        D::CUPTI_CB_DOMAIN_SYNCHRONIZE | D::CUPTI_CB_DOMAIN_STATE => Some(0),
        _ => None,
    }
}

/// One subscriber.
pub struct Subscriber {
    pub handle: usize,
    pub callback: CUpti_CallbackFunc,
    pub userdata: usize,
    /// "CUPTI for <subscriberName>".
    pub name: CString,
    /// Enabled callback ids of the driver API, runtime API, resource and NVTX domains;
    /// whole-domain enables of the other domains are remembered but nothing is
    /// delivered there.
    pub driver: Vec<bool>,
    pub runtime: Vec<bool>,
    pub resource: Vec<bool>,
    pub nvtx: Vec<bool>,
    pub other_domains: Vec<u32>,
}

struct Registry {
    subs: Vec<Subscriber>,
    /// `CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE`.
    multiple_state: u8,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    subs: Vec::new(),
    multiple_state: 2,
});

/// Why a subscription was refused.
pub enum Refused {
    /// Another subscriber holds CUPTI; its name.
    Multiple(CString),
}

/// Adds a subscriber. `allow_multiple` is the `_v2` request (always false for
/// `cuptiSubscribe` and releases before 13.2). On success returns the handle and the
/// name of the first subscriber (for `oldSubscriberName` under multiple subscribers).
pub fn subscribe(
    callback: CUpti_CallbackFunc,
    userdata: *mut c_void,
    name: Option<&str>,
    allow_multiple: bool,
) -> Result<(CUpti_SubscriberHandle, CString), Refused> {
    let mut reg = lock(&REGISTRY);
    if let Some(first) = reg.subs.first() {
        if !(allow_multiple && reg.multiple_state == 1) {
            return Err(Refused::Multiple(first.name.clone()));
        }
    }
    if reg.subs.is_empty() {
        reg.multiple_state = u8::from(allow_multiple);
    }
    let full = match name {
        Some(n) if !n.is_empty() => format!("CUPTI for {n}"),
        _ => "CUPTI".to_string(),
    };
    let name = CString::new(full.replace('\0', "")).expect("no NUL");
    let handle = Box::into_raw(Box::new(0u64)) as usize;
    reg.subs.push(Subscriber {
        handle,
        callback,
        userdata: userdata as usize,
        name,
        driver: vec![false; domain_size(D::CUPTI_CB_DOMAIN_DRIVER_API).unwrap_or(0)],
        runtime: vec![false; domain_size(D::CUPTI_CB_DOMAIN_RUNTIME_API).unwrap_or(0)],
        resource: vec![false; domain_size(D::CUPTI_CB_DOMAIN_RESOURCE).unwrap_or(0)],
        nvtx: vec![false; domain_size(D::CUPTI_CB_DOMAIN_NVTX).unwrap_or(0)],
        other_domains: Vec::new(),
    });
    let first = reg.subs[0].name.clone();
    Ok((handle as CUpti_SubscriberHandle, first))
}

/// Removes a subscriber; false if the handle is unknown.
pub fn unsubscribe(handle: CUpti_SubscriberHandle) -> bool {
    let mut reg = lock(&REGISTRY);
    let Some(i) = reg.subs.iter().position(|s| s.handle == handle as usize) else {
        return false;
    };
    reg.subs.remove(i);
    if reg.subs.is_empty() {
        reg.multiple_state = 2;
    }
    true
}

/// Whether `handle` is a live subscriber.
pub fn exists(handle: CUpti_SubscriberHandle) -> bool {
    lock(&REGISTRY)
        .subs
        .iter()
        .any(|s| s.handle == handle as usize)
}

/// `CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE`.
pub fn multiple_state() -> u8 {
    lock(&REGISTRY).multiple_state
}

/// Enables (`cbid` Some) one callback or (None) a whole domain. Errors are
/// `CUPTI_ERROR_INVALID_PARAMETER` cases: unknown subscriber, domain or cbid.
pub fn enable(handle: CUpti_SubscriberHandle, domain: u32, cbid: Option<u32>, on: bool) -> bool {
    let Some(size) = domain_size(domain) else {
        return false;
    };
    let mut reg = lock(&REGISTRY);
    let Some(s) = reg.subs.iter_mut().find(|s| s.handle == handle as usize) else {
        return false;
    };
    let ids = match domain {
        D::CUPTI_CB_DOMAIN_DRIVER_API => &mut s.driver,
        D::CUPTI_CB_DOMAIN_RUNTIME_API => &mut s.runtime,
        D::CUPTI_CB_DOMAIN_RESOURCE => &mut s.resource,
        D::CUPTI_CB_DOMAIN_NVTX => &mut s.nvtx,
        _ => {
            if cbid.is_none() {
                s.other_domains.retain(|d| *d != domain);
                if on {
                    s.other_domains.push(domain);
                }
            }
            // Callback ids of domains the sim never fires are accepted as given.
            return true;
        }
    };
    match cbid {
        None => ids.iter_mut().skip(1).for_each(|b| *b = on),
        Some(id) if (id as usize) < size && id > 0 => ids[id as usize] = on,
        Some(_) => return false,
    }
    true
}

/// Whether callback `cbid` of `domain` is enabled for `handle`; None if invalid.
pub fn state(handle: CUpti_SubscriberHandle, domain: u32, cbid: u32) -> Option<bool> {
    domain_size(domain)?;
    let reg = lock(&REGISTRY);
    let s = reg.subs.iter().find(|s| s.handle == handle as usize)?;
    let ids = match domain {
        D::CUPTI_CB_DOMAIN_DRIVER_API => &s.driver,
        D::CUPTI_CB_DOMAIN_RUNTIME_API => &s.runtime,
        D::CUPTI_CB_DOMAIN_RESOURCE => &s.resource,
        D::CUPTI_CB_DOMAIN_NVTX => &s.nvtx,
        _ => return Some(s.other_domains.contains(&domain)),
    };
    ids.get(cbid as usize).copied()
}

/// A subscriber to call: (handle, callback, userdata).
#[derive(Clone, Copy)]
pub struct Target {
    pub handle: usize,
    pub callback: CUpti_CallbackFunc,
    pub userdata: usize,
}

/// The subscribers that enabled `cbid` of `domain`, appended to `out` (collected so
/// no lock is held while calling them: callbacks may call back into CUPTI).
pub fn targets(domain: u32, cbid: u32, out: &mut Vec<Target>) {
    let reg = lock(&REGISTRY);
    for s in &reg.subs {
        let on = match domain {
            D::CUPTI_CB_DOMAIN_DRIVER_API => s.driver.get(cbid as usize).copied(),
            D::CUPTI_CB_DOMAIN_RUNTIME_API => s.runtime.get(cbid as usize).copied(),
            D::CUPTI_CB_DOMAIN_RESOURCE => s.resource.get(cbid as usize).copied(),
            D::CUPTI_CB_DOMAIN_NVTX => s.nvtx.get(cbid as usize).copied(),
            _ => None,
        };
        if on == Some(true) {
            out.push(Target {
                handle: s.handle,
                callback: s.callback,
                userdata: s.userdata,
            });
        }
    }
}

/// Every subscriber's handle.
pub fn handles() -> Vec<usize> {
    lock(&REGISTRY).subs.iter().map(|s| s.handle).collect()
}

/// Drops every subscriber (cuptiFinalize, tests).
pub fn reset() {
    let mut reg = lock(&REGISTRY);
    reg.subs.clear();
    reg.multiple_state = 2;
}
