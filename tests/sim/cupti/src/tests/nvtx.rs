//! The NVTX injection handshake with a fake NVTX instance laid out as `nvtxImpl.h`
//! lays out its globals, and marker records in every release's layout.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use cupti_sys::records::RELEASES;
use cupti_sys::CUpti_ActivityKind as K;

use super::harness::serial;
use crate::layouts::{encode, Encoded, Facts, MarkerDataFacts, MarkerFacts};
use crate::nvtx::InitializeInjectionNvtx2;

type Slot = Option<unsafe extern "C" fn()>;

/// `NVTX_CBID_CORE_SIZE` and `NVTX_CBID_CORE2_SIZE` (both 16 in nvtxTypes.h).
const SIZE: usize = 16;

/// One module's function pointers and its table of pointers to them (with the
/// leading and trailing nulls of nvtxImpl.h).
struct Module {
    slots: &'static mut [Slot; SIZE],
    table: &'static mut [*mut Slot; SIZE + 1],
}

fn module() -> Module {
    let slots: &'static mut [Slot; SIZE] = Box::leak(Box::new([None; SIZE]));
    let table: &'static mut [*mut Slot; SIZE + 1] =
        Box::leak(Box::new([std::ptr::null_mut(); SIZE + 1]));
    for (i, t) in table.iter_mut().enumerate().take(SIZE).skip(1) {
        *t = &mut slots[i];
    }
    Module { slots, table }
}

static CORE: AtomicUsize = AtomicUsize::new(0);
static CORE2: AtomicUsize = AtomicUsize::new(0);
static ASKED: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static VERSION_SET: AtomicU32 = AtomicU32::new(0);
/// The `struct_size` the fake callbacks table claims.
static CALLBACKS_SIZE: AtomicUsize = AtomicUsize::new(16);

unsafe extern "C" fn get_module_function_table(
    module: u32,
    out: *mut *mut *mut Slot,
    size: *mut c_uint,
) -> c_int {
    ASKED.lock().unwrap().push(module);
    let table = match module {
        1 => CORE.load(Ordering::SeqCst),
        5 => CORE2.load(Ordering::SeqCst),
        _ => return 0,
    };
    // SAFETY: the tool passes valid out-pointers.
    unsafe {
        *out = table as *mut *mut Slot;
        *size = SIZE as c_uint;
    }
    1
}

unsafe extern "C" fn set_version(v: u32) {
    VERSION_SET.store(v, Ordering::SeqCst);
}

#[repr(C)]
struct Callbacks {
    struct_size: usize,
    get: unsafe extern "C" fn(u32, *mut *mut *mut Slot, *mut c_uint) -> c_int,
}

#[repr(C)]
struct VersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set: unsafe extern "C" fn(u32),
}

static VERSION_INFO: VersionInfo = VersionInfo {
    struct_size: std::mem::size_of::<VersionInfo>(),
    version: 3,
    reserved0: 0,
    set: set_version,
};

unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    static mut CALLBACKS: Callbacks = Callbacks {
        struct_size: 16,
        get: get_module_function_table,
    };
    match id {
        1 => {
            // SAFETY: written only here, under the test's serial lock.
            unsafe {
                CALLBACKS.struct_size = CALLBACKS_SIZE.load(Ordering::SeqCst);
                std::ptr::addr_of!(CALLBACKS) as *const c_void
            }
        }
        3 => &VERSION_INFO as *const VersionInfo as *const c_void,
        _ => std::ptr::null(),
    }
}

#[test]
fn injection_fills_core_and_core2_slots_and_levels_follow_nvtx() {
    let _g = serial();
    let core = module();
    let core2 = module();
    CORE.store(core.table.as_mut_ptr() as usize, Ordering::SeqCst);
    CORE2.store(core2.table.as_mut_ptr() as usize, Ordering::SeqCst);
    ASKED.lock().unwrap().clear();
    CALLBACKS_SIZE.store(16, Ordering::SeqCst);

    // SAFETY: the fake export table behaves as NVTX's.
    let ok = unsafe { InitializeInjectionNvtx2(Some(get_export_table)) };
    assert_eq!(ok, 1);
    assert_eq!(
        *ASKED.lock().unwrap(),
        [1, 5],
        "only CORE and CORE2 are asked for"
    );
    assert_eq!(VERSION_SET.load(Ordering::SeqCst), 3);
    // Every CORE id 1..=15 is installed; CORE2 all but the resource ids (6, 7) and
    // Initialize (15).
    let filled =
        |m: &Module| -> Vec<usize> { (0..SIZE).filter(|&i| m.slots[i].is_some()).collect() };
    assert_eq!(filled(&core), (1..=15).collect::<Vec<_>>());
    assert_eq!(filled(&core2), [1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14]);

    // nvtxRangePushA / nvtxRangePop through the installed slots: "The 0 based level of
    // range being started", "The level of the range being ended", negative on error.
    type Push = unsafe extern "C" fn(*const c_char) -> c_int;
    type Pop = unsafe extern "C" fn() -> c_int;
    // SAFETY: the slots hold the handlers with NVTX's prototypes for these ids.
    let (push, pop) = unsafe {
        (
            std::mem::transmute::<unsafe extern "C" fn(), Push>(core.slots[9].unwrap()),
            std::mem::transmute::<unsafe extern "C" fn(), Pop>(core.slots[11].unwrap()),
        )
    };
    // SAFETY: valid C strings.
    let levels = unsafe {
        [
            push(c"a".as_ptr()),
            push(c"b".as_ptr()),
            pop(),
            pop(),
            pop(),
        ]
    };
    assert_eq!(levels, [0, 1, 1, 0, -1]);

    // A callbacks table smaller than NvtxExportTableCallbacks is refused.
    CALLBACKS_SIZE.store(8, Ordering::SeqCst);
    // SAFETY: as above.
    let refused = unsafe { InitializeInjectionNvtx2(Some(get_export_table)) };
    assert_eq!(refused, 0);
    CALLBACKS_SIZE.store(16, Ordering::SeqCst);
    // SAFETY: null is accepted.
    assert_eq!(unsafe { InitializeInjectionNvtx2(None) }, 0);
}

#[test]
fn marker_records_in_every_release_layout() {
    let marker = Facts::Marker(MarkerFacts {
        flags: 2,
        timestamp: 1234,
        id: 9,
        process_id: 77,
        thread_id: 88,
        name: c"range".as_ptr(),
        domain: std::ptr::null(),
    });
    let data = Facts::MarkerData(MarkerDataFacts {
        flags: 2,
        id: 9,
        payload_kind: 1,
        payload: 42,
        color: 0xff00ff00,
        category: 3,
        cupti_domain_id: 4,
    });
    for r in RELEASES {
        for (f, family) in [(marker, "Marker"), (data, "MarkerData")] {
            let mut e = Encoded {
                bytes: [0; crate::layouts::MAX_RECORD],
                len: 0,
            };
            encode(r.name, &f, &mut e);
            let want = r.records.iter().find(|x| x.0 == family).unwrap().2;
            assert_eq!(e.len, want, "{} {family}", r.name);
            assert_eq!(crate::layouts::record_size(r.name, f.kind()), Some(want));
        }
    }
    let mut e = Encoded {
        bytes: [0; crate::layouts::MAX_RECORD],
        len: 0,
    };
    encode("13.4", &marker, &mut e);
    // SAFETY: exactly one CUpti_ActivityMarker2 record.
    let m = unsafe {
        std::ptr::read_unaligned(
            e.bytes.as_ptr() as *const cupti_sys::records::v13_4::CUpti_ActivityMarker2
        )
    };
    // SAFETY: the record was written with the pt member.
    let (pid, tid) = unsafe { (m.objectId.pt.processId, m.objectId.pt.threadId) };
    assert_eq!(
        (
            m.kind,
            m.flags,
            { m.timestamp },
            m.id,
            m.objectKind,
            pid,
            tid
        ),
        (K::CUPTI_ACTIVITY_KIND_MARKER, 2, 1234, 9, 2, 77, 88)
    );
    // SAFETY: the interned-or-static name pointer copied into the record.
    assert_eq!(unsafe { CStr::from_ptr(m.name) }, c"range");
    assert!(m.domain.is_null());
    encode("13.4", &data, &mut e);
    // SAFETY: exactly one CUpti_ActivityMarkerData2 record.
    let d = unsafe {
        std::ptr::read_unaligned(
            e.bytes.as_ptr() as *const cupti_sys::records::v13_4::CUpti_ActivityMarkerData2
        )
    };
    // SAFETY: written as metricValueUint64.
    let payload = unsafe { d.payload.metricValueUint64 };
    assert_eq!(
        (
            d.kind,
            d.id,
            d.payloadKind,
            payload,
            d.color,
            d.category,
            d.cuptiDomainId
        ),
        (
            K::CUPTI_ACTIVITY_KIND_MARKER_DATA,
            9,
            1,
            42,
            0xff00ff00,
            3,
            4
        )
    );
}

unsafe extern "C" fn ignore(_u: *mut c_void, _d: u32, _c: u32, _data: *const c_void) {}

/// `CUPTI_CB_DOMAIN_NVTX` (4) follows the rules of the other delivered domains: ids 1
/// to `CUPTI_CBID_NVTX_SIZE` - 1 can be enabled one by one or as a domain (which leaves
/// the invalid id 0 off), `cuptiEnableAllDomains` includes it, and ids outside the enum
/// are `CUPTI_ERROR_INVALID_PARAMETER`.
#[test]
fn nvtx_callback_ids_are_enabled_per_subscriber() {
    use crate::api_callbacks::*;
    use crate::nvtx_meta::cbid;
    use cupti_sys::CUptiResult::*;

    let _g = serial();
    const NVTX: u32 = cupti_sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
    let mut s: cupti_sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let r = unsafe { cuptiSubscribe(&mut s, Some(ignore), std::ptr::null_mut()) };
    assert_eq!(r, CUPTI_SUCCESS);
    let state = |id: u32| {
        let mut on = 7u32;
        // SAFETY: valid out-pointer.
        let r = unsafe { cuptiGetCallbackState(&mut on, s, NVTX, id) };
        (r, on)
    };
    let on_ids = || -> Vec<u32> {
        (0..cbid::SIZE)
            .filter(|&id| state(id) == (CUPTI_SUCCESS, 1))
            .collect()
    };

    assert_eq!(on_ids(), Vec::<u32>::new());
    assert_eq!(
        cuptiEnableCallback(1, s, NVTX, cbid::RANGE_PUSH_A),
        CUPTI_SUCCESS
    );
    assert_eq!(on_ids(), [cbid::RANGE_PUSH_A]);
    assert_eq!(
        cuptiEnableCallback(1, s, NVTX, 0),
        CUPTI_ERROR_INVALID_PARAMETER
    );
    assert_eq!(
        cuptiEnableCallback(1, s, NVTX, cbid::SIZE),
        CUPTI_ERROR_INVALID_PARAMETER
    );
    assert_eq!(state(cbid::SIZE).0, CUPTI_ERROR_INVALID_PARAMETER);

    assert_eq!(cuptiEnableDomain(1, s, NVTX), CUPTI_SUCCESS);
    assert_eq!(on_ids(), (1..cbid::SIZE).collect::<Vec<_>>());
    assert_eq!(cuptiEnableCallback(0, s, NVTX, cbid::MARK_A), CUPTI_SUCCESS);
    assert_eq!(state(cbid::MARK_A), (CUPTI_SUCCESS, 0));
    assert_eq!(cuptiEnableDomain(0, s, NVTX), CUPTI_SUCCESS);
    assert_eq!(on_ids(), Vec::<u32>::new());

    assert_eq!(cuptiEnableAllDomains(1, s), CUPTI_SUCCESS);
    assert_eq!(on_ids(), (1..cbid::SIZE).collect::<Vec<_>>());
    assert_eq!(cuptiUnsubscribe(s), CUPTI_SUCCESS);
}
