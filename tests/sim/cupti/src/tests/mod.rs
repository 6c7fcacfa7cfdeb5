//! Unit tests with a fake driver calling the tracer directly. They share the
//! process-wide CUPTI state, so each takes `serial()` and starts from `reset()`.

mod harness;
mod nvtx;

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use cupti_sys::records::v13_4;
use cupti_sys::CUptiResult::*;
use cupti_sys::{
    CUpti_Activity, CUpti_ActivityKind as K, CUpti_CallbackData, CUpti_SubscriberHandle,
};

use crate::api_activity::*;
use crate::api_attributes::*;
use crate::api_callbacks::*;
use crate::api_misc::*;
use harness::*;

#[test]
fn release_choice() {
    let (r, w) = crate::release::choose(Some("12.9"));
    assert_eq!((r.release.api_version, w), (28, None));
    let (r, w) = crate::release::choose(Some("11.8"));
    assert_eq!(r.release.name, "13.4");
    assert_eq!(
        w.as_deref(),
        Some("simcupti: SIMCUPTI_VERSION=11.8 is not a release with layouts, using 13.4")
    );
    assert_eq!(crate::release::choose(None).0.release.api_version, 130401);
    assert!(!crate::release::choose(Some("12.9")).0.has_subscribe_v2());
    assert!(!crate::release::choose(Some("13.1"))
        .0
        .has_multiple_subscribers());
    assert!(crate::release::choose(Some("13.2"))
        .0
        .has_multiple_subscribers());
}

#[test]
fn version_and_result_strings() {
    let _g = serial();
    let mut v = 0;
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuptiGetVersion(&mut v), CUPTI_SUCCESS);
        assert_eq!(v, 130401);
        let mut s = std::ptr::null();
        assert_eq!(
            cuptiGetResultString(CUPTI_ERROR_INVALID_PARAMETER, &mut s),
            CUPTI_SUCCESS
        );
        assert_eq!(
            CStr::from_ptr(s).to_str().unwrap(),
            "CUPTI_ERROR_INVALID_PARAMETER"
        );
        assert_eq!(
            cuptiGetResultString(12345, &mut s),
            CUPTI_ERROR_INVALID_PARAMETER
        );
    }
    assert_eq!(cuptiGetLastError(), CUPTI_ERROR_INVALID_PARAMETER);
    assert_eq!(cuptiGetLastError(), CUPTI_SUCCESS);
}

#[test]
fn kernel_records_are_packed_aligned_and_complete() {
    let _g = serial();
    setup_activity();
    let ids: Vec<u32> = (0..3).map(|i| launch(2_000 + i)).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    let delivered = lock(&DELIVERED).len();
    assert_eq!(delivered, 1);
    assert_ne!(lock(&DELIVERED)[0].thread, std::thread::current().id());
    let recs = records();
    assert_eq!(recs.len(), 3);
    let size = std::mem::size_of::<v13_4::CUpti_ActivityKernel13>();
    for (i, (addr, bytes)) in recs.iter().enumerate() {
        assert_eq!(addr % 8, 0);
        assert_eq!(
            *addr,
            recs[0].0 + i * size.next_multiple_of(8),
            "back to back"
        );
        let k = kernel(bytes);
        assert_eq!(k.kind, K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        assert_eq!(k.correlationId, ids[i]);
        assert_eq!(
            (k.start, k.end, k.completed),
            (1_500 + i as u64, 2_000 + i as u64, 2_000 + i as u64)
        );
        assert_eq!((k.gridX, k.gridY, k.gridZ, k.blockX), (4, 2, 1, 128));
        assert_eq!(
            (
                k.staticSharedMemory,
                k.dynamicSharedMemory,
                k.registersPerThread
            ),
            (1024, 256, 32)
        );
        assert_eq!((k.deviceId, k.contextId, k.streamId), (0, 7, 13));
        // SAFETY: the name is CUPTI-owned and NUL-terminated.
        assert_eq!(unsafe { CStr::from_ptr(k.name) }.to_str().unwrap(), "axpy");
        assert_eq!((k.queued, k.submitted), (0, 0));
    }
    assert_eq!(kernel(&recs[0].1).name, kernel(&recs[2].1).name, "interned");
}

#[test]
fn misaligned_client_buffer_starts_at_the_next_8_byte_address() {
    let _g = serial();
    REQUEST_MODE.store(2, Ordering::SeqCst);
    setup_activity();
    launch(2_000);
    launch(2_001);
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    let recs = records();
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|(a, _)| a % 8 == 0));
    let d = &lock(&DELIVERED)[0];
    assert_eq!(d.base % 8, 4);
    assert_eq!(
        d.valid,
        4 + 2 * std::mem::size_of::<v13_4::CUpti_ActivityKernel13>()
    );
}

#[test]
fn default_flush_waits_for_gpu_completion_forced_does_not() {
    let _g = serial();
    setup_activity();
    launch(5_000); // ends after the GPU clock (1_000)
    assert_eq!(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    assert_eq!(
        lock(&DELIVERED).len(),
        0,
        "an incomplete record holds its buffer back"
    );
    NOW.store(5_000, Ordering::SeqCst);
    assert_eq!(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    assert_eq!(records().len(), 1);
    launch(9_000);
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    assert_eq!(records().len(), 2);
}

#[test]
fn max_num_records_completes_buffers_without_a_flush() {
    let _g = serial();
    REQUEST_MODE.store(3, Ordering::SeqCst);
    setup_activity();
    launch(2_000);
    launch(2_001);
    crate::worker::wait_delivered(crate::worker::last_submitted());
    assert_eq!(lock(&DELIVERED).len(), 2);
    assert_eq!(records().len(), 2);
}

#[test]
fn records_without_a_buffer_are_dropped_and_counted() {
    let _g = serial();
    REQUEST_MODE.store(1, Ordering::SeqCst);
    setup_activity();
    launch(2_000);
    launch(2_001);
    let mut n = 99;
    // SAFETY: valid out-pointer.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut n) },
        CUPTI_SUCCESS
    );
    assert_eq!(n, 2);
    // SAFETY: as above.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut n) },
        CUPTI_SUCCESS
    );
    assert_eq!(n, 0, "reset by reading");
    REQUEST_MODE.store(4, Ordering::SeqCst);
    launch(2_002);
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    // SAFETY: as above.
    unsafe { cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut n) };
    assert_eq!(n, 1, "a buffer too small for the record");
    assert_eq!(
        lock(&DELIVERED).iter().map(|d| d.valid).collect::<Vec<_>>(),
        vec![0]
    );
}

#[test]
fn get_next_record_rejects_garbage_and_null() {
    let _g = serial();
    let mut buf = [0u64; 16];
    buf[0] = 0xdead_beef;
    let mut rec: *mut CUpti_Activity = std::ptr::null_mut();
    let p = buf.as_mut_ptr() as *mut u8;
    // SAFETY: 128 readable bytes.
    unsafe {
        assert_eq!(
            cuptiActivityGetNextRecord(p, 128, &mut rec),
            CUPTI_ERROR_INVALID_KIND
        );
        assert_eq!(
            cuptiActivityGetNextRecord(p, 0, &mut rec),
            CUPTI_ERROR_MAX_LIMIT_REACHED
        );
        assert_eq!(
            cuptiActivityGetNextRecord(std::ptr::null_mut(), 8, &mut rec),
            CUPTI_ERROR_INVALID_PARAMETER
        );
        p.cast::<u32>()
            .write(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        assert_eq!(
            cuptiActivityGetNextRecord(p, 128, &mut rec),
            CUPTI_ERROR_INVALID_KIND,
            "truncated"
        );
    }
}

#[test]
fn flush_without_callbacks_is_an_invalid_operation() {
    let _g = serial();
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_ERROR_INVALID_OPERATION);
    assert_eq!(
        cuptiActivityRegisterCallbacks(Some(request), None),
        CUPTI_ERROR_INVALID_PARAMETER
    );
    assert_eq!(cuptiActivityEnable(0), CUPTI_ERROR_INVALID_KIND);
}

static SEEN: Mutex<Vec<(u32, u32, u32, u64)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_callback(_u: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    // SAFETY: driver API callbacks carry a CUpti_CallbackData.
    let d = unsafe { &*(data as *const CUpti_CallbackData) };
    // SAFETY: correlationData points at this subscriber's per-call slot.
    let slot = unsafe { &mut *d.correlationData };
    if d.callbackSite == 0 {
        *slot = u64::from(d.correlationId) * 10;
        assert!(d.functionReturnValue.is_null());
    } else {
        // SAFETY: at exit it points at the CUresult.
        assert_eq!(unsafe { *(d.functionReturnValue as *const c_int) }, 0);
    }
    assert_eq!(domain, 1);
    lock(&SEEN).push((cbid, d.callbackSite, d.correlationId, *slot));
}

#[test]
fn callbacks_see_correlation_ids_and_share_correlation_data() {
    let _g = serial();
    lock(&SEEN).clear();
    let mut s: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiSubscribe(&mut s, Some(on_callback), std::ptr::null_mut()) },
        CUPTI_SUCCESS
    );
    assert_eq!(cuptiEnableCallback(1, s, 1, 307), CUPTI_SUCCESS);
    assert_eq!(
        cuptiEnableCallback(1, s, 1, 999_999),
        CUPTI_ERROR_INVALID_PARAMETER
    );
    setup_activity();
    let id = launch(2_000);
    assert_eq!(
        *lock(&SEEN),
        vec![
            (307, 0, id, u64::from(id) * 10),
            (307, 1, id, u64::from(id) * 10)
        ]
    );
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    assert_eq!(kernel(&records()[0].1).correlationId, id);
    assert_eq!(cuptiUnsubscribe(s), CUPTI_SUCCESS);
    assert_eq!(cuptiUnsubscribe(s), CUPTI_ERROR_INVALID_PARAMETER);
}

static SEEN_DOMAINS: Mutex<Vec<(u32, u32, u32, u32)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_any(_u: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    // SAFETY: driver and runtime API callbacks carry a CUpti_CallbackData.
    let d = unsafe { &*(data as *const CUpti_CallbackData) };
    lock(&SEEN_DOMAINS).push((domain, cbid, d.callbackSite, d.correlationId));
}

/// A runtime call reports to the runtime domain; the driver calls it makes get its
/// correlation id, and so does the kernel it launches; the next call gets a new one.
#[test]
fn a_runtime_call_shares_its_correlation_id_with_the_driver_calls_inside() {
    use cupti_sys::CUpti_CallbackDomain::{
        CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
    };
    let _g = serial();
    lock(&SEEN_DOMAINS).clear();
    let mut s: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let r = unsafe { cuptiSubscribe(&mut s, Some(on_any), std::ptr::null_mut()) };
    assert_eq!(r, CUPTI_SUCCESS);
    assert_eq!(
        cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API),
        CUPTI_SUCCESS
    );
    assert_eq!(
        cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_DRIVER_API, 307),
        CUPTI_SUCCESS
    );
    setup_activity();
    let mut call = sim_abi::ApiCall {
        site: sim_abi::SITE_ENTER,
        cbid: 211,
        function_name: c"cudaLaunchKernel".as_ptr(),
        params: std::ptr::null(),
        context: std::ptr::null_mut(),
        context_id: 0,
        symbol_name: std::ptr::null(),
        result: 0,
        correlation_id: 0,
    };
    // SAFETY: a valid ApiCall for each call.
    unsafe { runtime_api(&mut call) };
    let outer = call.correlation_id;
    let inner = launch(2_000);
    call.site = sim_abi::SITE_EXIT;
    // SAFETY: as above.
    unsafe { runtime_api(&mut call) };
    let next = launch(3_000);
    assert_eq!(inner, outer);
    assert_ne!(next, outer);
    let (rt, drv) = (CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API);
    assert_eq!(
        *lock(&SEEN_DOMAINS),
        vec![
            (rt, 211, 0, outer),
            (drv, 307, 0, outer),
            (drv, 307, 1, outer),
            (rt, 211, 1, outer),
            (drv, 307, 0, next),
            (drv, 307, 1, next),
        ]
    );
    assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
    assert_eq!(kernel(&records()[0].1).correlationId, outer);
    assert_eq!(cuptiUnsubscribe(s), CUPTI_SUCCESS);
}

#[test]
fn subscriber_rules() {
    let _g = serial();
    let mut a: CUpti_SubscriberHandle = std::ptr::null_mut();
    let mut b: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointers and params throughout.
    unsafe {
        assert_eq!(
            cuptiSubscribe(&mut a, Some(on_callback), std::ptr::null_mut()),
            CUPTI_SUCCESS
        );
        assert_eq!(
            cuptiSubscribe(&mut b, Some(on_callback), std::ptr::null_mut()),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
        );
        let mut old = [0i8; 64];
        let mut p = cupti_sys::CUpti_SubscriberParams {
            structSize: std::mem::size_of::<cupti_sys::CUpti_SubscriberParams>(),
            subscriberName: c"tool".as_ptr(),
            oldSubscriberName: old.as_mut_ptr(),
            oldSubscriberSize: 64,
            allowMultipleSubscribers: 1,
            padding: [0; 7],
        };
        assert_eq!(
            cuptiSubscribe_v2(&mut b, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
            "the first subscriber (v1) allowed only one"
        );
        assert_eq!(CStr::from_ptr(old.as_ptr()).to_str().unwrap(), "CUPTI");
        assert_eq!(cuptiUnsubscribe(a), CUPTI_SUCCESS);
        // 13.4 (the default): both ask for multiple subscribers.
        assert_eq!(
            cuptiSubscribe_v2(&mut a, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_SUCCESS
        );
        p.subscriberName = c"other".as_ptr();
        assert_eq!(
            cuptiSubscribe_v2(&mut b, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_SUCCESS
        );
        assert_eq!(
            CStr::from_ptr(old.as_ptr()).to_str().unwrap(),
            "CUPTI for tool"
        );
        let (mut v, mut n) = (0u8, 1usize);
        assert_eq!(
            cuptiActivityGetAttribute_v2(b, 12, &mut n, &mut v as *mut u8 as *mut c_void),
            CUPTI_SUCCESS
        );
        assert_eq!(v, 1);
        // Each subscriber gets only what it enabled.
        lock(&SEEN).clear();
        assert_eq!(cuptiEnableDomain(1, b, 1), CUPTI_SUCCESS);
        launch(2_000);
        assert_eq!(lock(&SEEN).len(), 2);
        p.structSize = 0;
        assert_eq!(
            cuptiSubscribe_v2(&mut b, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_ERROR_INVALID_PARAMETER
        );
        // 13.4's CUpti_SubscriberParams_STRUCT_SIZE is 40: one field (8 bytes) more
        // is refused.
        p.structSize = 48;
        assert_eq!(
            cuptiSubscribe_v2(&mut b, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_ERROR_INVALID_PARAMETER
        );
        p.structSize = 40;
        assert_eq!(
            cuptiSubscribe_v2(&mut b, Some(on_callback), std::ptr::null_mut(), &mut p),
            CUPTI_SUCCESS
        );
    }
}

/// The thread ids of the API records delivered so far (then forgets them).
fn api_thread_ids() -> Vec<u32> {
    let ids = records()
        .iter()
        .filter(|(_, r)| r.len() == std::mem::size_of::<v13_4::CUpti_ActivityAPI>())
        .map(|(_, r)| {
            // SAFETY: one CUpti_ActivityAPI record's bytes.
            let a =
                unsafe { std::ptr::read_unaligned(r.as_ptr() as *const v13_4::CUpti_ActivityAPI) };
            assert_eq!(a.kind, K::CUPTI_ACTIVITY_KIND_DRIVER);
            a.threadId
        })
        .collect();
    lock(&DELIVERED).clear();
    ids
}

/// 13.3+ (13.4 here): `cuptiSetThreadIdType` / `cuptiGetThreadIdType` are refused
/// while multiple subscribers are allowed; `CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE`
/// through `cuptiActivitySetAttribute_v2` sets each subscriber's own type.
#[test]
fn thread_id_type_under_multiple_subscribers() {
    let _g = serial();
    const ATTR: u32 = cupti_sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE;
    const SYSTEM: u32 = cupti_sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
    let tid = crate::worker::gettid() as u32;
    // SAFETY: pthread_self has no preconditions.
    let pthread = unsafe { libc::pthread_self() } as u32;
    assert_ne!(tid, pthread);
    // No subscriber yet: the call works.
    assert_eq!(cuptiSetThreadIdType(SYSTEM), CUPTI_SUCCESS);
    assert_eq!(cuptiSetThreadIdType(0), CUPTI_SUCCESS);
    let (mut a, mut b): (CUpti_SubscriberHandle, CUpti_SubscriberHandle) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    let mut p = cupti_sys::CUpti_SubscriberParams {
        structSize: 40,
        subscriberName: c"a".as_ptr(),
        oldSubscriberName: std::ptr::null_mut(),
        oldSubscriberSize: 0,
        allowMultipleSubscribers: 1,
        padding: [0; 7],
    };
    // SAFETY: valid out-pointers and params throughout.
    unsafe {
        assert_eq!(
            cuptiSubscribe_v2(&mut a, None, std::ptr::null_mut(), &mut p),
            CUPTI_SUCCESS
        );
        assert_eq!(
            cuptiSubscribe_v2(&mut b, None, std::ptr::null_mut(), &mut p),
            CUPTI_SUCCESS
        );
        assert_eq!(cuptiSetThreadIdType(SYSTEM), CUPTI_ERROR_NOT_SUPPORTED);
        let mut kind = 7u32;
        assert_eq!(cuptiGetThreadIdType(&mut kind), CUPTI_ERROR_NOT_SUPPORTED);
        assert_eq!(kind, 7);

        // The attribute: a 4-byte CUpti_ActivityThreadIdType per subscriber.
        let (mut v, mut n) = (SYSTEM, 4usize);
        let vp = &mut v as *mut u32 as *mut c_void;
        assert_eq!(
            cuptiActivitySetAttribute_v2(a, ATTR, &mut n, vp),
            CUPTI_SUCCESS
        );
        let (mut got, mut n) = (9u32, 4usize);
        let gp = &mut got as *mut u32 as *mut c_void;
        assert_eq!(
            cuptiActivityGetAttribute_v2(a, ATTR, &mut n, gp),
            CUPTI_SUCCESS
        );
        assert_eq!((got, n), (SYSTEM, 4));
        assert_eq!(
            cuptiActivityGetAttribute_v2(b, ATTR, &mut n, gp),
            CUPTI_SUCCESS
        );
        assert_eq!(
            (got, n),
            (0, 4),
            "b keeps CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT"
        );
        let (mut bad, mut n) = (2u32, 4usize);
        let bp = &mut bad as *mut u32 as *mut c_void;
        assert_eq!(
            cuptiActivitySetAttribute_v2(a, ATTR, &mut n, bp),
            CUPTI_ERROR_INVALID_PARAMETER,
            "CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE is no type"
        );
        let mut n = 2usize;
        assert_eq!(
            cuptiActivitySetAttribute_v2(a, ATTR, &mut n, vp),
            CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT
        );

        // Each subscriber's API records carry its own kind of thread id.
        for s in [a, b] {
            assert_eq!(
                cuptiActivityRegisterCallbacks_v2(s, Some(request_v2), Some(complete_v2)),
                CUPTI_SUCCESS
            );
        }
        let driver = K::CUPTI_ACTIVITY_KIND_DRIVER;
        assert_eq!(
            cuptiActivityEnable_v2(a, driver, std::ptr::null_mut()),
            CUPTI_SUCCESS
        );
        launch(2_000);
        assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
        assert_eq!(
            api_thread_ids(),
            [tid],
            "a: CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM"
        );
        assert_eq!(
            cuptiActivityDisable_v2(a, driver, std::ptr::null_mut()),
            CUPTI_SUCCESS
        );
        assert_eq!(
            cuptiActivityEnable_v2(b, driver, std::ptr::null_mut()),
            CUPTI_SUCCESS
        );
        launch(3_000);
        assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
        assert_eq!(api_thread_ids(), [pthread], "b: the default type");
        assert_eq!(
            cuptiActivityEnable_v2(a, driver, std::ptr::null_mut()),
            CUPTI_SUCCESS
        );
        launch(4_000);
        assert_eq!(cuptiActivityFlushAll(1), CUPTI_SUCCESS);
        let mut both = api_thread_ids();
        both.sort();
        let mut want = vec![tid, pthread];
        want.sort();
        assert_eq!(both, want, "one record per subscriber, each its own id");

        // Once the last subscriber is gone, the calls work again.
        assert_eq!(cuptiUnsubscribe(a), CUPTI_SUCCESS);
        assert_eq!(cuptiSetThreadIdType(SYSTEM), CUPTI_ERROR_NOT_SUPPORTED);
        assert_eq!(cuptiUnsubscribe(b), CUPTI_SUCCESS);
        assert_eq!(cuptiSetThreadIdType(SYSTEM), CUPTI_SUCCESS);
        assert_eq!(cuptiGetThreadIdType(&mut kind), CUPTI_SUCCESS);
        assert_eq!(kind, SYSTEM);
        assert_eq!(cuptiSetThreadIdType(0), CUPTI_SUCCESS);
    }
}

#[test]
fn v2_clients_have_their_own_buffers() {
    let _g = serial();
    let mut s: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiSubscribe_v2(&mut s, None, std::ptr::null_mut(), std::ptr::null_mut()) },
        CUPTI_SUCCESS
    );
    assert_eq!(
        cuptiActivityEnable_v2(
            s,
            K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            std::ptr::null_mut()
        ),
        CUPTI_SUCCESS
    );
    launch(2_000);
    let mut n = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiActivityGetNumDroppedRecords_v2(s, std::ptr::null_mut(), 0, &mut n) },
        CUPTI_SUCCESS
    );
    assert_eq!(n, 1, "enabled but no buffer callbacks registered");
    // SAFETY: as above.
    unsafe { cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut n) };
    assert_eq!(n, 0, "the global client enabled nothing");
    let mut size = 0usize;
    // SAFETY: valid out-pointer.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiActivityGetStructSize(K::CUPTI_ACTIVITY_KIND_KERNEL, 130000, &mut size) },
        CUPTI_SUCCESS
    );
    assert_eq!(
        size,
        std::mem::size_of::<cupti_sys::records::v13_0::CUpti_ActivityKernel10>()
    );
    // SAFETY: as above.
    assert_eq!(
        // SAFETY: valid pointers for the call (a C string / out-pointers per the caller).
        unsafe { cuptiActivityGetStructSize(K::CUPTI_ACTIVITY_KIND_KERNEL, 28, &mut size) },
        CUPTI_ERROR_NOT_SUPPORTED
    );
}

#[test]
fn every_release_encodes_its_own_layout() {
    use crate::layouts::{encode, Encoded, Facts, MemcpyFacts};
    let f = Facts::Memcpy(MemcpyFacts {
        copy_kind: 1,
        src_kind: 1,
        dst_kind: 3,
        flags: 0,
        bytes: 4096,
        start: 10,
        end: 20,
        device_id: 0,
        context_id: 7,
        stream_id: 13,
        correlation_id: 5,
        graph_id: 0,
        graph_node_id: 0,
    });
    for r in cupti_sys::records::RELEASES {
        let mut e = Encoded {
            bytes: [0; crate::layouts::MAX_RECORD],
            len: 0,
        };
        encode(r.name, &f, &mut e);
        let want = r.records.iter().find(|x| x.0 == "Memcpy").unwrap().2;
        assert_eq!(e.len, want, "{}", r.name);
        assert_eq!(e.len % 8, 0);
    }
    let mut e = Encoded {
        bytes: [0; crate::layouts::MAX_RECORD],
        len: 0,
    };
    encode("12.9", &f, &mut e);
    // SAFETY: exactly one Memcpy6 record.
    let m = unsafe {
        std::ptr::read_unaligned(
            e.bytes.as_ptr() as *const cupti_sys::records::v12_9::CUpti_ActivityMemcpy6
        )
    };
    assert_eq!(
        (m.kind, m.bytes, m.correlationId, m.copyCount),
        (K::CUPTI_ACTIVITY_KIND_MEMCPY, 4096, 5, 1)
    );
}
