//! Reporting to the installed tracer (the simulated CUPTI, through `sim_abi`): API
//! calls at entry and exit, resource events, and executed GPU operations. Never called
//! with the driver lock held, since a tracer may call back into the driver.

use std::cell::Cell;
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use cupti_sys::{CUpti_ResourceData, CUpti_ResourceData__bindgen_ty_1};
use sim_abi::{ApiCall, Counter, GpuOp, Tracer, SITE_ENTER, SITE_EXIT};

use crate::consts::*;
use crate::registry;

static TRACER: AtomicPtr<Tracer> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// The correlation id of the API call running on this thread (0 outside one).
    static CORRELATION: Cell<u32> = const { Cell::new(0) };
}

/// `DriverTable::set_tracer`.
pub(crate) extern "C" fn set_tracer(tracer: *const Tracer) -> std::ffi::c_int {
    if tracer.is_null() {
        TRACER.store(std::ptr::null_mut(), Ordering::Release);
        return 0;
    }
    match TRACER.compare_exchange(
        std::ptr::null_mut(),
        tracer.cast_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => 0,
        Err(_) => 1,
    }
}

fn tracer() -> Option<&'static Tracer> {
    let p = TRACER.load(Ordering::Acquire);
    // SAFETY: `set_tracer`'s contract keeps an installed tracer valid until removed.
    unsafe { p.as_ref() }
}

/// The correlation id GPU operations started now belong to.
pub(crate) fn correlation_id() -> u32 {
    CORRELATION.with(Cell::get)
}

/// Id of context `h` (0 when it is not a live context).
pub(crate) fn context_id(h: usize) -> u32 {
    registry::lock().contexts.get(&h).map_or(0, |c| c.id)
}

/// Runs `body`, the work of API function `name` (`cbid`), between the tracer's entry
/// and exit callbacks. Before `cuInit` nothing is reported and the result is
/// `CUDA_ERROR_NOT_INITIALIZED`, as the real driver returns without reaching CUPTI.
pub(crate) fn traced(
    cbid: u32,
    name: &'static CStr,
    params: *const c_void,
    symbol: Option<&CStr>,
    body: impl FnOnce() -> CUresult,
) -> CUresult {
    if !crate::state::is_initialized() {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    let make = |site| {
        let ctx = crate::context::current().unwrap_or(0);
        ApiCall {
            site,
            cbid,
            function_name: name.as_ptr(),
            params,
            context: ctx as CUcontext,
            context_id: if ctx == 0 { 0 } else { context_id(ctx) },
            symbol_name: symbol.map_or(std::ptr::null(), CStr::as_ptr),
            result: 0,
            correlation_id: 0,
        }
    };
    let entered = tracer().map(|t| {
        let mut call = make(SITE_ENTER);
        // SAFETY: the tracer's functions are valid while it is installed; `call` is a
        // live, exclusive ApiCall.
        unsafe { (t.api)(t.user, &mut call) };
        (t as *const Tracer, call.correlation_id)
    });
    let correlation = entered.map_or(0, |(_, c)| c);
    let outer = CORRELATION.with(|c| c.replace(correlation));
    let result = body();
    CORRELATION.with(|c| c.set(outer));
    if let (Some((was, correlation)), Some(t)) = (entered, tracer()) {
        if std::ptr::eq(was, t) {
            let mut call = make(SITE_EXIT);
            call.result = result as i32;
            call.correlation_id = correlation;
            // SAFETY: as at entry.
            unsafe { (t.api)(t.user, &mut call) };
        }
    }
    result
}

/// Reports a call of the simulated CUDA runtime (`DriverTable::runtime_api`) to the
/// tracer, with the thread's current context, when the tracer was built with
/// `Tracer::runtime_api`.
pub(crate) fn runtime_call(call: &mut ApiCall) {
    let Some(t) = tracer() else { return };
    if t.size < std::mem::offset_of!(Tracer, runtime_api) + std::mem::size_of::<usize>() {
        return;
    }
    let ctx = crate::context::current().unwrap_or(0);
    call.context = ctx as CUcontext;
    call.context_id = if ctx == 0 { 0 } else { context_id(ctx) };
    // SAFETY: the tracer's functions are valid while it is installed (its size covers
    // `runtime_api`); `call` is a live, exclusive ApiCall.
    unsafe { (t.runtime_api)(t.user, call) };
}

/// Reports resource event `cbid` (a `CUpti_CallbackIdResource`).
pub(crate) fn resource(cbid: u32, ctx: usize, stream: usize, descriptor: *mut c_void) {
    if let Some(t) = tracer() {
        let data = CUpti_ResourceData {
            context: ctx as CUcontext,
            resourceHandle: CUpti_ResourceData__bindgen_ty_1 {
                stream: stream as CUstream,
            },
            resourceDescriptor: descriptor,
        };
        // SAFETY: the tracer is valid while installed; `data` lives through the call.
        unsafe { (t.resource)(t.user, cbid, &data) };
    }
}

/// A GPU operation to report, owning the strings its [`GpuOp`] points to.
pub(crate) struct OpRecord {
    pub(crate) op: GpuOp,
    pub(crate) name: Option<CString>,
    pub(crate) counters: Arc<[(CString, f64)]>,
}

impl OpRecord {
    /// An operation with every optional field empty.
    pub(crate) fn new(kind: u32, start_ns: u64, end_ns: u64) -> Self {
        OpRecord {
            op: GpuOp {
                kind,
                correlation_id: correlation_id(),
                start_ns,
                end_ns,
                device_id: 0,
                context_id: 0,
                stream_id: 0,
                name: std::ptr::null(),
                grid: [0; 3],
                block: [0; 3],
                dynamic_shared_memory: 0,
                static_shared_memory: 0,
                registers_per_thread: 0,
                graph_id: 0,
                graph_node_id: 0,
                bytes: 0,
                copy_kind: 0,
                src_kind: 0,
                dst_kind: 0,
                value: 0,
                counters: std::ptr::null(),
                num_counters: 0,
            },
            name: None,
            counters: Arc::new([]),
        }
    }
}

/// Reports executed GPU operations, in order.
pub(crate) fn gpu_ops(ops: Vec<OpRecord>) {
    let Some(t) = tracer() else { return };
    for mut r in ops {
        let counters: Vec<Counter> = r
            .counters
            .iter()
            .map(|(n, v)| Counter {
                name: n.as_ptr(),
                value: *v,
            })
            .collect();
        r.op.name = r.name.as_deref().map_or(std::ptr::null(), CStr::as_ptr);
        r.op.counters = counters.as_ptr();
        r.op.num_counters = counters.len();
        // SAFETY: the tracer is valid while installed; the op and the strings and
        // counters it points to live through the call.
        unsafe { (t.gpu_op)(t.user, &r.op) };
    }
}

/// Runs an exported function's body under the panic guard and the tracer:
/// `api!(CBID_CONST, c"name", params_struct, body)`; `params_struct` may be `()` for a
/// function without a `cu*_params` struct (null is reported).
macro_rules! api {
    ($cbid:ident, $name:literal, (), $body:expr) => {
        $crate::ffi::guard(::std::panic::AssertUnwindSafe(|| {
            $crate::trace::traced(
                ::cupti_sys::CUpti_driver_api_trace_cbid_enum::$cbid,
                $name,
                ::std::ptr::null(),
                None,
                || $body,
            )
        }))
    };
    ($cbid:ident, $name:literal, $params:expr, $body:expr) => {
        $crate::ffi::guard(::std::panic::AssertUnwindSafe(|| {
            let params = $params;
            $crate::trace::traced(
                ::cupti_sys::CUpti_driver_api_trace_cbid_enum::$cbid,
                $name,
                ::std::ptr::from_ref(&params).cast(),
                None,
                || $body,
            )
        }))
    };
}
