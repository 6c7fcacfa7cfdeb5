//! NVTX through CUPTI: the injection entry point `InitializeInjectionNvtx2` and the
//! handlers it installs in NVTX's function table, turning NVTX calls into
//! `CUPTI_ACTIVITY_KIND_MARKER` / `_MARKER_DATA` / `_NAME` records.
//!
//! How NVTX reaches a tool (NVTX 3 headers, `nvtxDetail/nvtxInit.h`): the first NVTX
//! call of an NVTX instance reads `NVTX_INJECTION64_PATH`, `dlopen`s that library,
//! looks up `InitializeInjectionNvtx2` and calls it with the instance's
//! `nvtxGetExportTable`; "If it returns zero ("false"), the tool init was
//! unsuccessful". The tool asks for `NVTX_ETID_CALLBACKS` (an
//! `NvtxExportTableCallbacks`, `nvtxTypes.h`) and, per module, calls
//! `GetModuleFunctionTable(module, &table, &size)`: `table[cbid]` points at the
//! instance's function pointer for callback id `cbid` (`NvtxCallbackIdCore`,
//! `NvtxCallbackIdCore2`), and `size` is the number of ids (`NVTX_CBID_*_SIZE`, the
//! table holding one more, null, entry: `nvtxImpl.h`). Slots the tool does not fill
//! become no-ops (`nvtxSetInitFunctionsToNoops`).
//!
//! Installed: CORE `MarkEx/A/W`, `RangeStartEx/A/W`, `RangeEnd`, `RangePushEx/A/W`,
//! `RangePop`, `NameCategoryA/W`, `NameOsThreadA/W`; CORE2 `DomainMarkEx`,
//! `DomainRangeStartEx`, `DomainRangeEnd`, `DomainRangePushEx`, `DomainRangePop`,
//! `DomainNameCategoryA/W`, `DomainRegisterStringA/W`, `DomainCreateA/W`,
//! `DomainDestroy`. The CUDA, CUDART, OPENCL and SYNC modules and the CORE2 resource
//! slots are left alone.
//!
//! Callbacks (`CUPTI_CB_DOMAIN_NVTX`, `cupti_callbacks.h`): every installed handler,
//! after doing its work, calls the subscribers that enabled its callback id
//! (`CUpti_nvtx_api_trace_cbid`: `cuptiEnableCallback`, `cuptiEnableDomain`,
//! `cuptiEnableAllDomains`), on the calling thread, once per call (the domain has no
//! enter / exit sites), with `cbdata` a `CUpti_NvtxData`: `functionName` the NVTX
//! function's name (static), `functionParams` its `generated_nvtx_meta.h` params struct
//! holding the caller's own arguments (pointers as passed, not copies; see
//! [`crate::nvtx_meta`]), `functionReturnValue` a pointer to what the function returns
//! (range id for range start, level for push and pop, handle for domain create and
//! register string; null for `void` functions). Both are valid during the callback
//! only. Callbacks come whether or not any activity kind is enabled.
//!
//! Records (`cupti_activity.h`, `CUpti_ActivityMarker2`):
//! - every marker names the calling thread: `objectKind` `CUPTI_ACTIVITY_OBJECT_THREAD`,
//!   `objectId.pt` = process and thread (as `cuptiSetThreadIdType` chooses), for push /
//!   pop, start / end and marks alike;
//! - mark: one `CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS` marker with a new id;
//! - push: `_START` with a new id, kept on the thread's stack of that domain; pop:
//!   `_END` with the id on top of the stack;
//! - range start: `_START` with a new id, which is also the `nvtxRangeId_t` returned;
//!   range end: `_END` with that id (an id that is not an open range gives no record);
//! - `name`: the message ("NULL for an end marker"); `domain`: the domain's name,
//!   "NULL for default domain" (also on the end marker of a domain range);
//! - ids: one process-wide counter from 1, shared by every kind of marker;
//! - strings (messages, domain names) are copied into CUPTI-owned memory that lives
//!   until the process exits; wide (`wchar_t`, UTF-32) strings become UTF-8;
//! - the `Ex` functions also write a `MARKER_DATA` record with the same id (to clients
//!   that enabled both kinds): color flag `CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB` with
//!   the color, or `_COLOR_NONE`; the payload as a `CUpti_MetricValue` (64-bit and
//!   32-bit unsigned as `UINT64`, signed as `INT64`, double and float as `DOUBLE`; no
//!   payload leaves kind and value zero); the category; and in 13.x `cuptiDomainId`
//!   (0 for the default domain, then 1, 2, ... per created domain);
//! - `nvtxNameOsThreadA/W` writes a `CUPTI_ACTIVITY_KIND_NAME` record for that thread;
//! - timestamps come from the driver's clock when the driver is connected, else
//!   `CLOCK_REALTIME` (the driver's timebase): NVTX works before any CUDA call.
//!
//! Return values (`nvToolsExt.h`): push returns "The 0 based level of range being
//! started. This value is scoped to the domain." (per thread); pop returns "The level
//! of the range being ended", and -1 ("a negative value") with nothing to pop.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use cupti_sys::{
    CUpti_ActivityFlag as Flag, CUpti_ActivityKind as K, CUpti_CallbackDomain as D,
    CUpti_MetricValueKind as V, CUpti_NvtxData,
};

use crate::activity::{self, lock};
use crate::layouts::{Facts, MarkerDataFacts, MarkerFacts, NameFacts};
use crate::nvtx_meta::{self as meta, cbid};
use crate::subscribers;

// --- NVTX's types (nvtxTypes.h, nvToolsExt.h) ---

/// `NvtxExportTableID`.
const NVTX_ETID_CALLBACKS: u32 = 1;
const NVTX_ETID_VERSIONINFO: u32 = 3;
/// `NvtxCallbackModule`.
const NVTX_CB_MODULE_CORE: u32 = 1;
const NVTX_CB_MODULE_CORE2: u32 = 5;
/// The NVTX API version this injection implements (`NVTX_VERSION` of the v3 headers).
const NVTX_VERSION: u32 = 3;

/// `NvtxCallbackIdCore`.
mod core_id {
    pub const MARK_EX: usize = 1;
    pub const MARK_A: usize = 2;
    pub const MARK_W: usize = 3;
    pub const RANGE_START_EX: usize = 4;
    pub const RANGE_START_A: usize = 5;
    pub const RANGE_START_W: usize = 6;
    pub const RANGE_END: usize = 7;
    pub const RANGE_PUSH_EX: usize = 8;
    pub const RANGE_PUSH_A: usize = 9;
    pub const RANGE_PUSH_W: usize = 10;
    pub const RANGE_POP: usize = 11;
    pub const NAME_CATEGORY_A: usize = 12;
    pub const NAME_CATEGORY_W: usize = 13;
    pub const NAME_OS_THREAD_A: usize = 14;
    pub const NAME_OS_THREAD_W: usize = 15;
}

/// `NvtxCallbackIdCore2`.
mod core2_id {
    pub const DOMAIN_MARK_EX: usize = 1;
    pub const DOMAIN_RANGE_START_EX: usize = 2;
    pub const DOMAIN_RANGE_END: usize = 3;
    pub const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub const DOMAIN_RANGE_POP: usize = 5;
    pub const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub const DOMAIN_NAME_CATEGORY_W: usize = 9;
    pub const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub const DOMAIN_CREATE_A: usize = 12;
    pub const DOMAIN_CREATE_W: usize = 13;
    pub const DOMAIN_DESTROY: usize = 14;
}

/// `NvtxFunctionPointer`: "generic uncallable function pointer, must be cast to
/// appropriate function type".
type NvtxFunctionPointer = Option<unsafe extern "C" fn()>;
/// `NvtxFunctionTable`: "array(1) of pointers(2) to function pointers".
type NvtxFunctionTable = *mut *mut NvtxFunctionPointer;
/// `NvtxGetExportTableFunc_t`.
pub type NvtxGetExportTableFunc = unsafe extern "C" fn(u32) -> *const c_void;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table:
        Option<unsafe extern "C" fn(u32, *mut NvtxFunctionTable, *mut c_uint) -> c_int>,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
#[allow(dead_code)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: Option<unsafe extern "C" fn(u32)>,
}

/// `nvtxEventAttributes_v2` (`nvToolsExt.h`): 48 bytes, `payload` at 24, `message` at 40.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    /// `union payload_t`: the 8 bytes as stored.
    pub payload: u64,
    pub message_type: i32,
    /// `nvtxMessageValue_t`: `ascii`, `unicode` or `registered`.
    pub message: *const c_void,
}

/// `nvtxColorType_t`.
const NVTX_COLOR_ARGB: i32 = 1;
/// `nvtxMessageType_t`.
const NVTX_MESSAGE_TYPE_ASCII: i32 = 1;
const NVTX_MESSAGE_TYPE_UNICODE: i32 = 2;
const NVTX_MESSAGE_TYPE_REGISTERED: i32 = 3;
/// `nvtxPayloadType_t`.
const NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: i32 = 1;
const NVTX_PAYLOAD_TYPE_INT64: i32 = 2;
const NVTX_PAYLOAD_TYPE_DOUBLE: i32 = 3;
const NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: i32 = 4;
const NVTX_PAYLOAD_TYPE_INT32: i32 = 5;
const NVTX_PAYLOAD_TYPE_FLOAT: i32 = 6;

type WChar = i32;

// --- State ---

/// A domain (`nvtxDomainHandle_t` points at one; never freed: records keep its name).
struct Domain {
    name: &'static CStr,
    cupti_id: u32,
}

/// A registered string (`nvtxStringHandle_t` points at one; never freed).
struct Registered {
    text: &'static CStr,
}

#[derive(Default)]
struct State {
    /// Domain handles by name: creating a domain twice gives the same handle.
    domains: HashMap<CString, usize>,
    /// Every handle given out, to reject foreign pointers.
    domain_handles: HashSet<usize>,
    strings: HashSet<usize>,
    /// Open start/end ranges: id -> domain handle (0 for the default domain).
    open_ranges: HashMap<u32, usize>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// Marker ids, process-wide, from 1.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// `cuptiDomainId`s of created domains, from 1 (0 is the default domain).
static NEXT_DOMAIN: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// Per domain handle (0 = default): the ids of this thread's pushed ranges.
    static STACKS: RefCell<HashMap<usize, Vec<u32>>> = RefCell::new(HashMap::new());
}

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut s = lock(&STATE);
    f(s.get_or_insert_with(State::default))
}

/// Runs a handler's body; a panic becomes `default` (nothing unwinds into NVTX).
fn guarded<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("simcupti: internal panic in an NVTX handler, ignored");
        default
    })
}

// --- Strings ---

/// The interned copy of a C string (null stays null).
///
/// # Safety
/// `s` is null or a valid NUL-terminated string.
unsafe fn ascii(s: *const c_char) -> *const c_char {
    // SAFETY: forwarded.
    unsafe { crate::names::intern(s) }
}

/// The interned UTF-8 copy of a wide string (null stays null).
///
/// # Safety
/// `s` is null or a valid NUL-terminated `wchar_t` string.
unsafe fn wide(s: *const WChar) -> *const c_char {
    if s.is_null() {
        return std::ptr::null();
    }
    let mut text = String::new();
    let mut p = s;
    // SAFETY: NUL-terminated per the caller; reads stop at the terminator.
    unsafe {
        while *p != 0 {
            text.push(char::from_u32(*p as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
            p = p.add(1);
        }
    }
    let c = CString::new(text.replace('\0', "")).unwrap_or_default();
    crate::names::intern_cstr(&c).as_ptr()
}

/// The message of `attr` as a CUPTI-owned string, or null.
fn message(attr: &EventAttributes) -> *const c_char {
    if attr.message.is_null() {
        return std::ptr::null();
    }
    match attr.message_type {
        // SAFETY: NVTX's contract for this message type: a C string.
        NVTX_MESSAGE_TYPE_ASCII => unsafe { ascii(attr.message as *const c_char) },
        // SAFETY: as above, a wide string.
        NVTX_MESSAGE_TYPE_UNICODE => unsafe { wide(attr.message as *const WChar) },
        NVTX_MESSAGE_TYPE_REGISTERED => {
            let h = attr.message as usize;
            if with_state(|s| s.strings.contains(&h)) {
                // SAFETY: a handle this module gave out points at a leaked Registered.
                unsafe { (*(h as *const Registered)).text.as_ptr() }
            } else {
                std::ptr::null()
            }
        }
        _ => std::ptr::null(),
    }
}

/// Reads the attributes, honouring `size`: fields past it keep their defaults (zero).
///
/// # Safety
/// `attr` is null or points to at least `attr->size` readable bytes (at least the
/// 4-byte header).
unsafe fn read_attributes(attr: *const EventAttributes) -> Option<EventAttributes> {
    if attr.is_null() {
        return None;
    }
    // SAFETY: the version/size header is readable per the caller.
    let size = unsafe { (*attr).size } as usize;
    let mut out: EventAttributes = EventAttributes {
        version: 0,
        size: 0,
        category: 0,
        color_type: 0,
        color: 0,
        payload_type: 0,
        reserved0: 0,
        payload: 0,
        message_type: 0,
        message: std::ptr::null(),
    };
    let n = size.min(std::mem::size_of::<EventAttributes>());
    // SAFETY: `n` bytes are readable at `attr` and writable at `out`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            attr as *const u8,
            &mut out as *mut EventAttributes as *mut u8,
            n,
        )
    };
    Some(out)
}

// --- Records ---

fn domain_of(handle: usize) -> (*const c_char, u32) {
    if handle == 0 || !with_state(|s| s.domain_handles.contains(&handle)) {
        return (std::ptr::null(), 0);
    }
    // SAFETY: a handle this module gave out points at a leaked Domain.
    let d = unsafe { &*(handle as *const Domain) };
    (d.name.as_ptr(), d.cupti_id)
}

fn new_id() -> u32 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Writes the marker (and, with attributes, its data) to the clients that want it.
fn record(flags: u32, id: u32, name: *const c_char, domain: usize, attr: Option<&EventAttributes>) {
    if !activity::any_enabled(K::CUPTI_ACTIVITY_KIND_MARKER) {
        return;
    }
    let (domain_name, cupti_domain_id) = domain_of(domain);
    activity::emit(Facts::Marker(MarkerFacts {
        flags,
        timestamp: crate::driver::now_ns(),
        id,
        process_id: std::process::id(),
        thread_id: crate::tracer::thread_id(),
        name,
        domain: domain_name,
    }));
    let Some(a) = attr else { return };
    if !activity::any_enabled(K::CUPTI_ACTIVITY_KIND_MARKER_DATA) {
        return;
    }
    let (payload_kind, payload) = match a.payload_type {
        NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 => (V::CUPTI_METRIC_VALUE_KIND_UINT64, a.payload),
        NVTX_PAYLOAD_TYPE_INT64 => (V::CUPTI_METRIC_VALUE_KIND_INT64, a.payload),
        NVTX_PAYLOAD_TYPE_DOUBLE => (V::CUPTI_METRIC_VALUE_KIND_DOUBLE, a.payload),
        NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 => (
            V::CUPTI_METRIC_VALUE_KIND_UINT64,
            u64::from(a.payload as u32),
        ),
        NVTX_PAYLOAD_TYPE_INT32 => (
            V::CUPTI_METRIC_VALUE_KIND_INT64,
            i64::from(a.payload as u32 as i32) as u64,
        ),
        NVTX_PAYLOAD_TYPE_FLOAT => (
            V::CUPTI_METRIC_VALUE_KIND_DOUBLE,
            f64::from(f32::from_bits(a.payload as u32)).to_bits(),
        ),
        _ => (0, 0),
    };
    let (color_flag, color) = if a.color_type == NVTX_COLOR_ARGB {
        (Flag::CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB, a.color)
    } else {
        (Flag::CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE, 0)
    };
    activity::emit(Facts::MarkerData(MarkerDataFacts {
        flags: color_flag,
        id,
        payload_kind,
        payload,
        color,
        category: a.category,
        cupti_domain_id,
    }));
}

fn mark(domain: usize, name: *const c_char, attr: Option<&EventAttributes>) {
    record(
        Flag::CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS,
        new_id(),
        name,
        domain,
        attr,
    );
}

fn range_start(domain: usize, name: *const c_char, attr: Option<&EventAttributes>) -> u64 {
    let id = new_id();
    with_state(|s| s.open_ranges.insert(id, domain));
    record(
        Flag::CUPTI_ACTIVITY_FLAG_MARKER_START,
        id,
        name,
        domain,
        attr,
    );
    u64::from(id)
}

fn range_end(id: u64) {
    let Ok(id) = u32::try_from(id) else { return };
    if let Some(domain) = with_state(|s| s.open_ranges.remove(&id)) {
        record(
            Flag::CUPTI_ACTIVITY_FLAG_MARKER_END,
            id,
            std::ptr::null(),
            domain,
            None,
        );
    }
}

fn push(domain: usize, name: *const c_char, attr: Option<&EventAttributes>) -> c_int {
    let id = new_id();
    let level = STACKS.with(|s| {
        let mut s = s.borrow_mut();
        let stack = s.entry(domain).or_default();
        stack.push(id);
        stack.len() - 1
    });
    record(
        Flag::CUPTI_ACTIVITY_FLAG_MARKER_START,
        id,
        name,
        domain,
        attr,
    );
    c_int::try_from(level).unwrap_or(c_int::MAX)
}

fn pop(domain: usize) -> c_int {
    let popped = STACKS.with(|s| {
        let mut s = s.borrow_mut();
        let stack = s.entry(domain).or_default();
        stack.pop().map(|id| (id, stack.len()))
    });
    let Some((id, level)) = popped else {
        return -1;
    };
    record(
        Flag::CUPTI_ACTIVITY_FLAG_MARKER_END,
        id,
        std::ptr::null(),
        domain,
        None,
    );
    c_int::try_from(level).unwrap_or(c_int::MAX)
}

fn name_os_thread(thread_id: u32, name: *const c_char) {
    if name.is_null() || !activity::any_enabled(K::CUPTI_ACTIVITY_KIND_NAME) {
        return;
    }
    activity::emit(Facts::Name(NameFacts {
        process_id: std::process::id(),
        thread_id,
        name,
    }));
}

fn create_domain(name: *const c_char) -> usize {
    if name.is_null() {
        return 0;
    }
    // SAFETY: `name` is an interned, valid C string.
    let name = unsafe { CStr::from_ptr(name) };
    with_state(|s| {
        if let Some(h) = s.domains.get(name) {
            return *h;
        }
        let d = Box::leak(Box::new(Domain {
            name: crate::names::intern_cstr(name),
            cupti_id: NEXT_DOMAIN.fetch_add(1, Ordering::Relaxed),
        }));
        let h = d as *const Domain as usize;
        s.domains.insert(name.to_owned(), h);
        s.domain_handles.insert(h);
        h
    })
}

fn register_string(text: *const c_char) -> usize {
    if text.is_null() {
        return 0;
    }
    // SAFETY: `text` is an interned, valid C string.
    let text = crate::names::intern_cstr(unsafe { CStr::from_ptr(text) });
    let h = Box::leak(Box::new(Registered { text })) as *const Registered as usize;
    with_state(|s| s.strings.insert(h));
    h
}

// --- Callbacks ---

/// Calls the subscribers that enabled NVTX callback `cbid`, on the calling thread, with
/// a `CUpti_NvtxData` naming the function, pointing at its parameters (a
/// `generated_nvtx_meta.h` struct) and at its return value (null for `void`).
fn callback<P>(cbid: u32, name: &'static CStr, params: &P, ret: *const c_void) {
    let mut targets = Vec::new();
    subscribers::targets(D::CUPTI_CB_DOMAIN_NVTX, cbid, &mut targets);
    if targets.is_empty() {
        return;
    }
    let data = CUpti_NvtxData {
        functionName: name.as_ptr(),
        functionParams: std::ptr::from_ref(params).cast(),
        functionReturnValue: ret,
    };
    for t in &targets {
        if let Some(cb) = t.callback {
            // SAFETY: the subscriber registered `cb` with the CUpti_CallbackFunc
            // prototype; `data` and what it points to live across the call.
            unsafe {
                cb(
                    t.userdata as *mut c_void,
                    D::CUPTI_CB_DOMAIN_NVTX,
                    cbid,
                    std::ptr::from_ref(&data).cast(),
                )
            };
        }
    }
}

/// A return value as `functionReturnValue` points at it.
fn ret<T>(v: &T) -> *const c_void {
    std::ptr::from_ref(v).cast()
}

const VOID: *const c_void = std::ptr::null();

// --- Handlers (the prototypes of nvtxTypes.h's *_impl_fntype) ---

unsafe extern "C" fn mark_ex(attr: *const EventAttributes) {
    guarded((), || {
        // SAFETY: NVTX passes the caller's attributes (null or valid).
        let a = unsafe { read_attributes(attr) };
        mark(0, a.as_ref().map_or(std::ptr::null(), message), a.as_ref());
        let p = meta::nvtxMarkEx_params { eventAttrib: attr };
        callback(cbid::MARK_EX, c"nvtxMarkEx", &p, VOID);
    })
}

unsafe extern "C" fn mark_a(msg: *const c_char) {
    guarded((), || {
        // SAFETY: NVTX passes the caller's C string.
        mark(0, unsafe { ascii(msg) }, None);
        let p = meta::nvtxMarkA_params { message: msg };
        callback(cbid::MARK_A, c"nvtxMarkA", &p, VOID);
    })
}

unsafe extern "C" fn mark_w(msg: *const WChar) {
    guarded((), || {
        // SAFETY: NVTX passes the caller's wide string.
        mark(0, unsafe { wide(msg) }, None);
        let p = meta::nvtxMarkW_params { message: msg };
        callback(cbid::MARK_W, c"nvtxMarkW", &p, VOID);
    })
}

unsafe extern "C" fn range_start_ex(attr: *const EventAttributes) -> u64 {
    guarded(0, || {
        // SAFETY: as in mark_ex.
        let a = unsafe { read_attributes(attr) };
        let id = range_start(0, a.as_ref().map_or(std::ptr::null(), message), a.as_ref());
        let p = meta::nvtxRangeStartEx_params { eventAttrib: attr };
        callback(cbid::RANGE_START_EX, c"nvtxRangeStartEx", &p, ret(&id));
        id
    })
}

unsafe extern "C" fn range_start_a(msg: *const c_char) -> u64 {
    guarded(0, || {
        // SAFETY: as in mark_a.
        let id = range_start(0, unsafe { ascii(msg) }, None);
        let p = meta::nvtxRangeStartA_params { message: msg };
        callback(cbid::RANGE_START_A, c"nvtxRangeStartA", &p, ret(&id));
        id
    })
}

unsafe extern "C" fn range_start_w(msg: *const WChar) -> u64 {
    guarded(0, || {
        // SAFETY: as in mark_w.
        let id = range_start(0, unsafe { wide(msg) }, None);
        let p = meta::nvtxRangeStartW_params { message: msg };
        callback(cbid::RANGE_START_W, c"nvtxRangeStartW", &p, ret(&id));
        id
    })
}

unsafe extern "C" fn range_end_fn(id: u64) {
    guarded((), || {
        range_end(id);
        let p = meta::nvtxRangeEnd_params { id };
        callback(cbid::RANGE_END, c"nvtxRangeEnd", &p, VOID);
    })
}

unsafe extern "C" fn range_push_ex(attr: *const EventAttributes) -> c_int {
    guarded(-1, || {
        // SAFETY: as in mark_ex.
        let a = unsafe { read_attributes(attr) };
        let level = push(0, a.as_ref().map_or(std::ptr::null(), message), a.as_ref());
        let p = meta::nvtxRangePushEx_params { eventAttrib: attr };
        callback(cbid::RANGE_PUSH_EX, c"nvtxRangePushEx", &p, ret(&level));
        level
    })
}

unsafe extern "C" fn range_push_a(msg: *const c_char) -> c_int {
    guarded(-1, || {
        // SAFETY: as in mark_a.
        let level = push(0, unsafe { ascii(msg) }, None);
        let p = meta::nvtxRangePushA_params { message: msg };
        callback(cbid::RANGE_PUSH_A, c"nvtxRangePushA", &p, ret(&level));
        level
    })
}

unsafe extern "C" fn range_push_w(msg: *const WChar) -> c_int {
    guarded(-1, || {
        // SAFETY: as in mark_w.
        let level = push(0, unsafe { wide(msg) }, None);
        let p = meta::nvtxRangePushW_params { message: msg };
        callback(cbid::RANGE_PUSH_W, c"nvtxRangePushW", &p, ret(&level));
        level
    })
}

unsafe extern "C" fn range_pop() -> c_int {
    guarded(-1, || {
        let level = pop(0);
        let p = meta::nvtxRangePop_params {
            dummy: std::ptr::null_mut(),
        };
        callback(cbid::RANGE_POP, c"nvtxRangePop", &p, ret(&level));
        level
    })
}

/// Category names: accepted; CUPTI has no record for them.
unsafe extern "C" fn name_category_a(category: u32, name: *const c_char) {
    guarded((), || {
        let p = meta::nvtxNameCategoryA_params { category, name };
        callback(cbid::NAME_CATEGORY_A, c"nvtxNameCategoryA", &p, VOID);
    })
}

unsafe extern "C" fn name_category_w(category: u32, name: *const WChar) {
    guarded((), || {
        let p = meta::nvtxNameCategoryW_params { category, name };
        callback(cbid::NAME_CATEGORY_W, c"nvtxNameCategoryW", &p, VOID);
    })
}

unsafe extern "C" fn name_os_thread_a(thread_id: u32, name: *const c_char) {
    guarded((), || {
        // SAFETY: as in mark_a.
        name_os_thread(thread_id, unsafe { ascii(name) });
        let p = meta::nvtxNameOsThreadA_params {
            threadId: thread_id,
            name,
        };
        callback(cbid::NAME_OS_THREAD_A, c"nvtxNameOsThreadA", &p, VOID);
    })
}

unsafe extern "C" fn name_os_thread_w(thread_id: u32, name: *const WChar) {
    guarded((), || {
        // SAFETY: as in mark_w.
        name_os_thread(thread_id, unsafe { wide(name) });
        let p = meta::nvtxNameOsThreadW_params {
            threadId: thread_id,
            name,
        };
        callback(cbid::NAME_OS_THREAD_W, c"nvtxNameOsThreadW", &p, VOID);
    })
}

unsafe extern "C" fn domain_mark_ex(domain: *const c_void, attr: *const EventAttributes) {
    guarded((), || {
        // SAFETY: as in mark_ex.
        let a = unsafe { read_attributes(attr) };
        let name = a.as_ref().map_or(std::ptr::null(), message);
        mark(domain as usize, name, a.as_ref());
        let p = meta::nvtxDomainMarkEx_params {
            domain,
            core: meta::nvtxMarkEx_params { eventAttrib: attr },
        };
        callback(cbid::DOMAIN_MARK_EX, c"nvtxDomainMarkEx", &p, VOID);
    })
}

unsafe extern "C" fn domain_range_start_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> u64 {
    guarded(0, || {
        // SAFETY: as in mark_ex.
        let a = unsafe { read_attributes(attr) };
        let name = a.as_ref().map_or(std::ptr::null(), message);
        let id = range_start(domain as usize, name, a.as_ref());
        let p = meta::nvtxDomainRangeStartEx_params {
            domain,
            core: meta::nvtxRangeStartEx_params { eventAttrib: attr },
        };
        callback(
            cbid::DOMAIN_RANGE_START_EX,
            c"nvtxDomainRangeStartEx",
            &p,
            ret(&id),
        );
        id
    })
}

/// "This function is offered completeness but is an alias for ::nvtxRangeEnd."
unsafe extern "C" fn domain_range_end(domain: *const c_void, id: u64) {
    guarded((), || {
        range_end(id);
        let p = meta::nvtxDomainRangeEnd_params {
            domain,
            core: meta::nvtxRangeEnd_params { id },
        };
        callback(cbid::DOMAIN_RANGE_END, c"nvtxDomainRangeEnd", &p, VOID);
    })
}

unsafe extern "C" fn domain_range_push_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> c_int {
    guarded(-1, || {
        // SAFETY: as in mark_ex.
        let a = unsafe { read_attributes(attr) };
        let name = a.as_ref().map_or(std::ptr::null(), message);
        let level = push(domain as usize, name, a.as_ref());
        let p = meta::nvtxDomainRangePushEx_params {
            domain,
            core: meta::nvtxRangePushEx_params { eventAttrib: attr },
        };
        callback(
            cbid::DOMAIN_RANGE_PUSH_EX,
            c"nvtxDomainRangePushEx",
            &p,
            ret(&level),
        );
        level
    })
}

unsafe extern "C" fn domain_range_pop(domain: *const c_void) -> c_int {
    guarded(-1, || {
        let level = pop(domain as usize);
        let p = meta::nvtxDomainRangePop_params { domain };
        callback(
            cbid::DOMAIN_RANGE_POP,
            c"nvtxDomainRangePop",
            &p,
            ret(&level),
        );
        level
    })
}

unsafe extern "C" fn domain_name_category_a(d: *const c_void, c: u32, n: *const c_char) {
    guarded((), || {
        let p = meta::nvtxDomainNameCategoryA_params {
            domain: d,
            category: c,
            name: n,
        };
        callback(
            cbid::DOMAIN_NAME_CATEGORY_A,
            c"nvtxDomainNameCategoryA",
            &p,
            VOID,
        );
    })
}

unsafe extern "C" fn domain_name_category_w(d: *const c_void, c: u32, n: *const WChar) {
    guarded((), || {
        let p = meta::nvtxDomainNameCategoryW_params {
            domain: d,
            category: c,
            name: n,
        };
        callback(
            cbid::DOMAIN_NAME_CATEGORY_W,
            c"nvtxDomainNameCategoryW",
            &p,
            VOID,
        );
    })
}

unsafe extern "C" fn domain_register_string_a(d: *const c_void, s: *const c_char) -> usize {
    guarded(0, || {
        // SAFETY: as in mark_a.
        let h = register_string(unsafe { ascii(s) });
        let p = meta::nvtxDomainRegisterStringA_params {
            domain: d,
            string: s,
        };
        callback(
            cbid::DOMAIN_REGISTER_STRING_A,
            c"nvtxDomainRegisterStringA",
            &p,
            ret(&h),
        );
        h
    })
}

unsafe extern "C" fn domain_register_string_w(d: *const c_void, s: *const WChar) -> usize {
    guarded(0, || {
        // SAFETY: as in mark_w.
        let h = register_string(unsafe { wide(s) });
        let p = meta::nvtxDomainRegisterStringW_params {
            domain: d,
            string: s.cast(),
        };
        callback(
            cbid::DOMAIN_REGISTER_STRING_W,
            c"nvtxDomainRegisterStringW",
            &p,
            ret(&h),
        );
        h
    })
}

unsafe extern "C" fn domain_create_a(name: *const c_char) -> usize {
    guarded(0, || {
        // SAFETY: as in mark_a.
        let h = create_domain(unsafe { ascii(name) });
        let p = meta::nvtxDomainCreateA_params { name };
        callback(cbid::DOMAIN_CREATE_A, c"nvtxDomainCreateA", &p, ret(&h));
        h
    })
}

unsafe extern "C" fn domain_create_w(name: *const WChar) -> usize {
    guarded(0, || {
        // SAFETY: as in mark_w.
        let h = create_domain(unsafe { wide(name) });
        let p = meta::nvtxDomainCreateW_params { name };
        callback(cbid::DOMAIN_CREATE_W, c"nvtxDomainCreateW", &p, ret(&h));
        h
    })
}

/// The handle stays valid: records already written name the domain.
unsafe extern "C" fn domain_destroy(domain: *const c_void) {
    guarded((), || {
        let p = meta::nvtxDomainDestroy_params { domain };
        callback(cbid::DOMAIN_DESTROY, c"nvtxDomainDestroy", &p, VOID);
    })
}

/// Casts a handler to NVTX's generic function pointer.
macro_rules! slot {
    ($f:expr, $t:ty) => {{
        let f: $t = $f;
        // SAFETY: NVTX casts the slot back to the handler's own prototype before
        // calling it ("must be cast to appropriate function type").
        Some(unsafe { std::mem::transmute::<$t, unsafe extern "C" fn()>(f) })
    }};
}

fn core_handlers() -> Vec<(usize, NvtxFunctionPointer)> {
    use core_id::*;
    type Attr = *const EventAttributes;
    vec![
        (MARK_EX, slot!(mark_ex, unsafe extern "C" fn(Attr))),
        (MARK_A, slot!(mark_a, unsafe extern "C" fn(*const c_char))),
        (MARK_W, slot!(mark_w, unsafe extern "C" fn(*const WChar))),
        (
            RANGE_START_EX,
            slot!(range_start_ex, unsafe extern "C" fn(Attr) -> u64),
        ),
        (
            RANGE_START_A,
            slot!(range_start_a, unsafe extern "C" fn(*const c_char) -> u64),
        ),
        (
            RANGE_START_W,
            slot!(range_start_w, unsafe extern "C" fn(*const WChar) -> u64),
        ),
        (RANGE_END, slot!(range_end_fn, unsafe extern "C" fn(u64))),
        (
            RANGE_PUSH_EX,
            slot!(range_push_ex, unsafe extern "C" fn(Attr) -> c_int),
        ),
        (
            RANGE_PUSH_A,
            slot!(range_push_a, unsafe extern "C" fn(*const c_char) -> c_int),
        ),
        (
            RANGE_PUSH_W,
            slot!(range_push_w, unsafe extern "C" fn(*const WChar) -> c_int),
        ),
        (RANGE_POP, slot!(range_pop, unsafe extern "C" fn() -> c_int)),
        (
            NAME_CATEGORY_A,
            slot!(name_category_a, unsafe extern "C" fn(u32, *const c_char)),
        ),
        (
            NAME_CATEGORY_W,
            slot!(name_category_w, unsafe extern "C" fn(u32, *const WChar)),
        ),
        (
            NAME_OS_THREAD_A,
            slot!(name_os_thread_a, unsafe extern "C" fn(u32, *const c_char)),
        ),
        (
            NAME_OS_THREAD_W,
            slot!(name_os_thread_w, unsafe extern "C" fn(u32, *const WChar)),
        ),
    ]
}

fn core2_handlers() -> Vec<(usize, NvtxFunctionPointer)> {
    use core2_id::*;
    type Attr = *const EventAttributes;
    type Dom = *const c_void;
    vec![
        (
            DOMAIN_MARK_EX,
            slot!(domain_mark_ex, unsafe extern "C" fn(Dom, Attr)),
        ),
        (
            DOMAIN_RANGE_START_EX,
            slot!(
                domain_range_start_ex,
                unsafe extern "C" fn(Dom, Attr) -> u64
            ),
        ),
        (
            DOMAIN_RANGE_END,
            slot!(domain_range_end, unsafe extern "C" fn(Dom, u64)),
        ),
        (
            DOMAIN_RANGE_PUSH_EX,
            slot!(
                domain_range_push_ex,
                unsafe extern "C" fn(Dom, Attr) -> c_int
            ),
        ),
        (
            DOMAIN_RANGE_POP,
            slot!(domain_range_pop, unsafe extern "C" fn(Dom) -> c_int),
        ),
        (
            DOMAIN_NAME_CATEGORY_A,
            slot!(
                domain_name_category_a,
                unsafe extern "C" fn(Dom, u32, *const c_char)
            ),
        ),
        (
            DOMAIN_NAME_CATEGORY_W,
            slot!(
                domain_name_category_w,
                unsafe extern "C" fn(Dom, u32, *const WChar)
            ),
        ),
        (
            DOMAIN_REGISTER_STRING_A,
            slot!(
                domain_register_string_a,
                unsafe extern "C" fn(Dom, *const c_char) -> usize
            ),
        ),
        (
            DOMAIN_REGISTER_STRING_W,
            slot!(
                domain_register_string_w,
                unsafe extern "C" fn(Dom, *const WChar) -> usize
            ),
        ),
        (
            DOMAIN_CREATE_A,
            slot!(
                domain_create_a,
                unsafe extern "C" fn(*const c_char) -> usize
            ),
        ),
        (
            DOMAIN_CREATE_W,
            slot!(domain_create_w, unsafe extern "C" fn(*const WChar) -> usize),
        ),
        (
            DOMAIN_DESTROY,
            slot!(domain_destroy, unsafe extern "C" fn(Dom)),
        ),
    ]
}

/// Fills `handlers` into `module`'s table; false if NVTX has no such module.
///
/// # Safety
/// `get` is the `GetModuleFunctionTable` of a live NVTX instance.
unsafe fn install(
    get: unsafe extern "C" fn(u32, *mut NvtxFunctionTable, *mut c_uint) -> c_int,
    module: u32,
    handlers: &[(usize, NvtxFunctionPointer)],
) -> bool {
    let mut table: NvtxFunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: both out-pointers are valid for the call.
    if unsafe { get(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(cbid, f) in handlers {
        if cbid >= size as usize {
            continue;
        }
        // SAFETY: `cbid < size`: NVTX's table has `size` slots (plus a null one), each
        // null or pointing at the instance's function pointer for that id.
        unsafe {
            let slot = *table.add(cbid);
            if !slot.is_null() {
                *slot = f;
            }
        }
    }
    true
}

/// `int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)`: attaches
/// to the calling NVTX instance. Returns 1 on success, 0 if the instance offers no
/// usable callbacks table (NVTX then unloads the library and makes every call a no-op).
///
/// # Safety
/// `get_export_table` is null or NVTX's `nvtxGetExportTable`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<NvtxGetExportTableFunc>,
) -> c_int {
    guarded(0, || {
        let Some(get) = get_export_table else {
            return 0;
        };
        // SAFETY: NVTX's export table function; the answer is null or the table.
        let callbacks = unsafe { get(NVTX_ETID_CALLBACKS) } as *const ExportTableCallbacks;
        if callbacks.is_null() {
            return 0;
        }
        // SAFETY: non-null; `struct_size` is the first field of every export table.
        let cb = unsafe { &*callbacks };
        if cb.struct_size < std::mem::size_of::<ExportTableCallbacks>() {
            return 0;
        }
        let Some(get_table) = cb.get_module_function_table else {
            return 0;
        };
        // SAFETY: the instance's own GetModuleFunctionTable.
        let core = unsafe { install(get_table, NVTX_CB_MODULE_CORE, &core_handlers()) };
        // SAFETY: as above. An NVTX 1 instance has no CORE2 module.
        unsafe { install(get_table, NVTX_CB_MODULE_CORE2, &core2_handlers()) };
        if !core {
            return 0;
        }
        // SAFETY: as for the callbacks table.
        let version = unsafe { get(NVTX_ETID_VERSIONINFO) } as *const ExportTableVersionInfo;
        if !version.is_null() {
            // SAFETY: non-null; size-checked before reading the function pointer.
            let v = unsafe { &*version };
            if v.struct_size >= std::mem::size_of::<ExportTableVersionInfo>() {
                if let Some(set) = v.set_injection_nvtx_version {
                    // SAFETY: NVTX's own function ("This must be set by tools when
                    // attaching").
                    unsafe { set(NVTX_VERSION) };
                }
            }
        }
        1
    })
}
