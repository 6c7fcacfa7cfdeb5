//! What the simulated driver reports, turned into CUPTI's outputs: correlation ids,
//! `CUPTI_CB_DOMAIN_DRIVER_API` / `CUPTI_CB_DOMAIN_RUNTIME_API` /
//! `CUPTI_CB_DOMAIN_RESOURCE` callbacks, and activity records (driver and runtime API,
//! kernel, memcpy, memset, device, context).
//!
//! Correlation ids: every API call the program makes gets a new one; a driver call the
//! CUDA runtime makes inside one of its calls gets the runtime call's (modelled on
//! what CUPTI's clients rely on: Kineto joins kernels to the runtime's
//! `cudaLaunchKernel` by correlation id, and Triton's Proton joins them to the driver
//! launch callback's id for the same kernels; unchecked: needs a GPU).

use std::cell::RefCell;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

use cupti_sys::{
    CUpti_ActivityKind as K, CUpti_ApiCallbackSite, CUpti_CallbackData, CUpti_CallbackDomain as D,
    CUpti_CallbackIdResource as R, CUpti_ResourceData,
};
use sim_abi::{ApiCall, GpuOp, Tracer, OP_KERNEL, OP_MEMCPY, OP_MEMSET, SITE_ENTER};

use crate::activity;
use crate::layouts::{ApiFacts, ContextFacts, Facts, KernelFacts, MemcpyFacts, MemsetFacts};
use crate::subscribers::{self, Target};

/// Correlation ids: process-wide, starting at 1.
static NEXT_CORRELATION: AtomicU32 = AtomicU32::new(1);
/// Kernel grid ids ("Each kernel is assigned a unique grid ID at runtime").
static NEXT_GRID: AtomicI64 = AtomicI64::new(1);

/// The tracer CUPTI installs in the driver.
pub fn tracer() -> Tracer {
    Tracer {
        size: std::mem::size_of::<Tracer>(),
        user: std::ptr::null_mut(),
        api: on_api,
        resource: on_resource,
        gpu_op: on_gpu_op,
        runtime_api: on_runtime_api,
    }
}

/// One driver or runtime API call in progress on this thread.
struct Frame {
    /// `CUPTI_CB_DOMAIN_DRIVER_API` or `CUPTI_CB_DOMAIN_RUNTIME_API`.
    domain: u32,
    correlation_id: u32,
    cbid: u32,
    start: u64,
    async_call: bool,
    /// Per subscriber: the `correlationData` slot shared by its enter and exit callbacks.
    data: Vec<(usize, Box<u64>)>,
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// The calling thread's id as activity records report it (`cuptiSetThreadIdType`).
pub fn thread_id() -> u32 {
    thread_id_as(activity::THREAD_ID_TYPE.load(Ordering::Relaxed))
}

/// The calling thread's id by `CUpti_ActivityThreadIdType` `kind`: DEFAULT (0)
/// `pthread_self()`, SYSTEM (1) `gettid` ("Linux uses syscall SYS_gettid").
pub fn thread_id_as(kind: u32) -> u32 {
    if kind == 1 {
        crate::worker::gettid() as u32
    } else {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() as u32 }
    }
}

fn pid() -> u32 {
    std::process::id()
}

/// `Tracer::api`.
///
/// # Safety
/// `call` is valid for reading and writing during the call (the driver's promise).
pub unsafe extern "C" fn on_api(_user: *mut c_void, call: *mut ApiCall) {
    // SAFETY: the driver's promise, passed on.
    unsafe { on_call(D::CUPTI_CB_DOMAIN_DRIVER_API, call) }
}

/// `Tracer::runtime_api`.
///
/// # Safety
/// `call` is valid for reading and writing during the call (the driver's promise).
pub unsafe extern "C" fn on_runtime_api(_user: *mut c_void, call: *mut ApiCall) {
    // SAFETY: the driver's promise, passed on.
    unsafe { on_call(D::CUPTI_CB_DOMAIN_RUNTIME_API, call) }
}

/// An API call of `domain` at its entry or exit.
///
/// # Safety
/// `call` is valid for reading and writing during the call.
unsafe fn on_call(domain: u32, call: *mut ApiCall) {
    crate::ffi::guard_void(|| {
        // SAFETY: valid per this function's contract.
        let call = unsafe { &mut *call };
        if call.site == SITE_ENTER {
            enter(domain, call)
        } else {
            exit(domain, call)
        }
    })
}

/// The correlation id of a call entering now: the innermost runtime call's in progress
/// on this thread for a driver call inside one, else a new one.
fn correlation_for(domain: u32) -> u32 {
    let enclosing = (domain == D::CUPTI_CB_DOMAIN_DRIVER_API)
        .then(|| {
            FRAMES.with(|f| {
                f.borrow()
                    .iter()
                    .rev()
                    .find(|fr| fr.domain == D::CUPTI_CB_DOMAIN_RUNTIME_API)
                    .map(|fr| fr.correlation_id)
            })
        })
        .flatten();
    enclosing.unwrap_or_else(|| NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed))
}

fn enter(domain: u32, call: &mut ApiCall) {
    let corr = correlation_for(domain);
    call.correlation_id = corr;
    let async_call = !call.function_name.is_null()
        // SAFETY: function_name is a static NUL-terminated string.
        && unsafe { CStr::from_ptr(call.function_name) }.to_bytes().ends_with(b"Async");
    let mut targets = Vec::new();
    subscribers::targets(domain, call.cbid, &mut targets);
    let mut frame = Frame {
        domain,
        correlation_id: corr,
        cbid: call.cbid,
        start: crate::driver::now_ns(),
        async_call,
        data: targets.iter().map(|t| (t.handle, Box::new(0u64))).collect(),
    };
    for t in &targets {
        let slot = frame
            .data
            .iter_mut()
            .find(|(h, _)| *h == t.handle)
            .map(|(_, d)| &mut **d as *mut u64)
            .expect("slot");
        fire_api(
            t,
            domain,
            call,
            CUpti_ApiCallbackSite::CUPTI_API_ENTER,
            slot,
            std::ptr::null_mut(),
        );
    }
    FRAMES.with(|f| f.borrow_mut().push(frame));
}

/// Whether `cbid` launches one kernel (not a graph).
fn is_kernel_launch(cbid: u32) -> bool {
    use cupti_sys::CUpti_driver_api_trace_cbid_enum as c;
    matches!(
        cbid,
        c::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
            | c::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz
            | c::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
            | c::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz
            | c::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel
            | c::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz
    )
}

fn exit(domain: u32, call: &mut ApiCall) {
    let end = crate::driver::now_ns();
    let frame = FRAMES.with(|f| {
        let mut f = f.borrow_mut();
        let i = f
            .iter()
            .rposition(|fr| fr.domain == domain && fr.correlation_id == call.correlation_id)?;
        Some(f.remove(i))
    });
    let mut frame = frame.unwrap_or(Frame {
        domain,
        correlation_id: call.correlation_id,
        cbid: call.cbid,
        start: end,
        async_call: false,
        data: Vec::new(),
    });
    if domain == D::CUPTI_CB_DOMAIN_DRIVER_API && call.result == 0 && is_kernel_launch(call.cbid) {
        crate::range_profiler::on_launch_exit(call.context_id, call.correlation_id);
    }
    let mut targets = Vec::new();
    subscribers::targets(domain, call.cbid, &mut targets);
    let mut result: c_int = call.result;
    for t in &targets {
        if !frame.data.iter().any(|(h, _)| *h == t.handle) {
            frame.data.push((t.handle, Box::new(0)));
        }
        let slot = frame
            .data
            .iter_mut()
            .find(|(h, _)| *h == t.handle)
            .map(|(_, d)| &mut **d as *mut u64)
            .expect("slot");
        let ret = &mut result as *mut c_int as *mut c_void;
        fire_api(
            t,
            domain,
            call,
            CUpti_ApiCallbackSite::CUPTI_API_EXIT,
            slot,
            ret,
        );
    }
    let runtime = domain == D::CUPTI_CB_DOMAIN_RUNTIME_API;
    let kind = if runtime {
        K::CUPTI_ACTIVITY_KIND_RUNTIME
    } else {
        K::CUPTI_ACTIVITY_KIND_DRIVER
    };
    if activity::any_enabled(kind) {
        activity::emit(Facts::Api(ApiFacts {
            runtime,
            cbid: frame.cbid,
            start: frame.start,
            end,
            process_id: pid(),
            thread_id: thread_id(),
            correlation_id: frame.correlation_id,
            return_value: call.result as u32,
        }));
    }
}

fn fire_api(t: &Target, domain: u32, call: &ApiCall, site: u32, slot: *mut u64, ret: *mut c_void) {
    let Some(cb) = t.callback else { return };
    let data = CUpti_CallbackData {
        callbackSite: site,
        functionName: call.function_name,
        functionParams: call.params,
        functionReturnValue: ret,
        symbolName: call.symbol_name,
        context: call.context,
        contextUid: call.context_id,
        correlationData: slot,
        correlationId: call.correlation_id,
    };
    // SAFETY: the subscriber registered `cb` with the CUpti_CallbackFunc prototype;
    // `data` lives across the call.
    unsafe {
        cb(
            t.userdata as *mut c_void,
            domain,
            call.cbid,
            &data as *const CUpti_CallbackData as *const c_void,
        )
    };
}

/// `Tracer::resource`.
///
/// # Safety
/// `data` is valid for reading during the call.
pub unsafe extern "C" fn on_resource(
    _user: *mut c_void,
    cbid: u32,
    data: *const CUpti_ResourceData,
) {
    crate::ffi::guard_void(|| {
        if cbid == R::CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !data.is_null() {
            // SAFETY: non-null, valid per the driver's promise.
            context_created(unsafe { (*data).context });
        }
        let mut targets = Vec::new();
        subscribers::targets(D::CUPTI_CB_DOMAIN_RESOURCE, cbid, &mut targets);
        for t in &targets {
            if let Some(cb) = t.callback {
                // SAFETY: registered CUpti_CallbackFunc; `data` is the driver's
                // CUpti_ResourceData, valid during the call.
                unsafe {
                    cb(
                        t.userdata as *mut c_void,
                        D::CUPTI_CB_DOMAIN_RESOURCE,
                        cbid,
                        data as *const c_void,
                    )
                };
            }
        }
        if cbid == R::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && !data.is_null() {
            // SAFETY: non-null, valid per the driver's promise.
            context_destroyed(unsafe { (*data).context });
        }
    })
}

/// Live contexts per device, for what outlives a device's last context.
static LIVE_CONTEXTS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());

/// After the subscribers saw `CONTEXT_DESTROY_STARTING`: the context is gone, and with
/// the device's last one, what PM sampling left enabled on it is orphaned.
fn context_destroyed(ctx: cupti_sys::CUcontext) {
    let Some(drv) = crate::driver::connected() else {
        return;
    };
    // SAFETY: table functions are valid for the life of the process.
    let dev = unsafe { (drv.table.context_device)(ctx) };
    if dev < 0 {
        return;
    }
    let mut live = LIVE_CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = live.iter_mut().find(|(d, _)| *d == dev as u32) {
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            drop(live);
            crate::pm_sampling::device_contexts_gone(dev as u32);
        }
    }
}

/// Device records (once per device and client, at the first context CUPTI sees on
/// the device: CUPTI emits them at driver initialisation when attached before it)
/// and the context record.
fn context_created(ctx: cupti_sys::CUcontext) {
    let Some(drv) = crate::driver::connected() else {
        return;
    };
    // SAFETY: table functions are valid for the life of the process.
    let (id, dev, null_stream) = unsafe {
        (
            (drv.table.context_id)(ctx),
            (drv.table.context_device)(ctx),
            (drv.table.stream_id)(ctx, std::ptr::null_mut()),
        )
    };
    if dev >= 0 {
        let mut live = LIVE_CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        match live.iter_mut().find(|(d, _)| *d == dev as u32) {
            Some(e) => e.1 += 1,
            None => live.push((dev as u32, 1)),
        }
        drop(live);
        for c in activity::clients() {
            if c.enabled(K::CUPTI_ACTIVITY_KIND_DEVICE) {
                let mut done = activity::lock(&c.devices_emitted);
                if !done.contains(&(dev as u32)) {
                    done.push(dev as u32);
                    drop(done);
                    if let Some(f) = crate::device::facts(drv, dev) {
                        let rel = crate::release::current().release.name;
                        let mut enc = crate::layouts::Encoded {
                            bytes: [0; crate::layouts::MAX_RECORD],
                            len: 0,
                        };
                        crate::layouts::encode(rel, &Facts::Device(f), &mut enc);
                        c.write(&enc.bytes[..enc.len], 0);
                    }
                }
            }
        }
    }
    activity::emit(Facts::Context(ContextFacts {
        context_id: id,
        device_id: dev.max(0) as u32,
        null_stream_id: null_stream as u16,
        process_id: pid(),
    }));
}

/// `Tracer::gpu_op`.
///
/// # Safety
/// `op` is valid for reading during the call.
pub unsafe extern "C" fn on_gpu_op(_user: *mut c_void, op: *const GpuOp) {
    crate::ffi::guard_void(|| {
        // SAFETY: the driver passes a valid GpuOp.
        let op = unsafe { &*op };
        let async_call = FRAMES.with(|f| f.borrow().last().is_some_and(|fr| fr.async_call));
        let facts = match op.kind {
            OP_KERNEL => {
                crate::profiling::on_kernel(op);
                if !activity::any_enabled(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                    && !activity::any_enabled(K::CUPTI_ACTIVITY_KIND_KERNEL)
                {
                    return;
                }
                Facts::Kernel(KernelFacts {
                    kind: K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                    start: op.start_ns,
                    end: op.end_ns,
                    device_id: op.device_id,
                    context_id: op.context_id,
                    stream_id: op.stream_id as u32,
                    correlation_id: op.correlation_id,
                    grid: op.grid,
                    block: op.block,
                    static_shared_memory: op.static_shared_memory,
                    dynamic_shared_memory: op.dynamic_shared_memory,
                    registers_per_thread: op.registers_per_thread,
                    // SAFETY: the name is NULL or a valid C string during the call.
                    name: unsafe { crate::names::intern(op.name) },
                    grid_id: NEXT_GRID.fetch_add(1, Ordering::Relaxed),
                    graph_id: op.graph_id,
                    graph_node_id: op.graph_node_id,
                })
            }
            OP_MEMCPY => Facts::Memcpy(MemcpyFacts {
                copy_kind: op.copy_kind,
                src_kind: op.src_kind,
                dst_kind: op.dst_kind,
                flags: if async_call {
                    cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC as u8
                } else {
                    0
                },
                bytes: op.bytes,
                start: op.start_ns,
                end: op.end_ns,
                device_id: op.device_id,
                context_id: op.context_id,
                stream_id: op.stream_id as u32,
                correlation_id: op.correlation_id,
                graph_id: op.graph_id,
                graph_node_id: op.graph_node_id,
            }),
            OP_MEMSET => Facts::Memset(MemsetFacts {
                value: op.value,
                bytes: op.bytes,
                start: op.start_ns,
                end: op.end_ns,
                device_id: op.device_id,
                context_id: op.context_id,
                stream_id: op.stream_id as u32,
                correlation_id: op.correlation_id,
                flags: if async_call {
                    cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC as u16
                } else {
                    0
                },
                memory_kind: u16::from(op.dst_kind),
                graph_id: op.graph_id,
                graph_node_id: op.graph_node_id,
            }),
            _ => return,
        };
        activity::emit(facts);
    })
}
