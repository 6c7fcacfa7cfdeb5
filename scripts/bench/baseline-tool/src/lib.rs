//! The baseline of the launch benchmark (`scripts/bench.sh`): a CUPTI tool that
//! subscribes to what libgpuprof.so subscribes to and does nothing with it, so that
//! what gpuprof adds over it is gpuprof's own cost, not CUPTI's.
//!
//! It is loaded as libgpuprof.so is (`CUDA_INJECTION64_PATH`: the driver calls
//! `InitializeInjection` during `cuInit`), finds CUPTI the same way
//! (`cupti::discover`, so `GPUPROF_CUPTI_LIB` is honoured) and makes the same calls
//! through the same wrappers (`cupti::callback`, `cupti::activity`): subscribe, the
//! context-created and graph-node resource callbacks, every driver-API callback
//! (libgpuprof.so traces launches and copies, sets and waits, and counts the other
//! calls), system thread ids, buffer callbacks, the same activity kinds. Its
//! callback returns at once; its buffer callbacks hand CUPTI a buffer from a pool
//! made at start (gpuprof's default pool: 8 buffers of 8 MiB) and take it back when
//! completed, without reading it.
//!
//! The lists below are those of inject/src/tracing.rs (`KINDS`, the resource
//! callbacks); keep them in step.
//!
//! With `GPUPROF_BASELINE_RANGE_PROFILER=1` it also does what libgpuprof.so does for
//! per-kernel counters when a context is created (inject/src/counters.rs,
//! `add_context`): `cuptiProfilerInitialize` once, then a range profiler enabled on
//! the context and kept enabled, never started. A CUPTI with a range profiler enabled
//! may charge every launch for it (the simulated one does: it collects each kernel's
//! counters while one is enabled), and that charge is CUPTI's, not gpuprof's: the
//! launch benchmark compares gpuprof's default counters against this baseline.
//!
//! Not mirrored: the NVTX callback domain (libgpuprof enables it only with
//! `GPUPROF_COUNTER_RANGE`) and pointing `NVTX_INJECTION64_PATH` at CUPTI (the flood
//! makes no NVTX call). Per-kernel counters are not subscriptions but gpuprof's own
//! work, measured as part of its cost.

use core::ffi::{c_int, c_void};
use std::sync::{Mutex, OnceLock};

use cupti::activity::{self, BufferCallbacks};
use cupti::callback::{self, Subscriber};
use cupti::profiler;
use cupti::Cupti;
use cupti_sys::CUpti_ActivityKind as K;
use cupti_sys::CUpti_CallbackDomain::{
    CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RUNTIME_API,
};
use cupti_sys::CUpti_CallbackIdResource::{
    CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
};
use cupti_sys::{
    CUcontext, CUpti_BufferCallbackCompleteInfo, CUpti_BufferCallbackRequestInfo,
    CUpti_ResourceData,
};

const RESOURCE_CBIDS: &[u32] = &[
    CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
];

const KINDS: &[u32] = &[
    K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    K::CUPTI_ACTIVITY_KIND_MEMCPY,
    K::CUPTI_ACTIVITY_KIND_MEMSET,
    K::CUPTI_ACTIVITY_KIND_MARKER,
    K::CUPTI_ACTIVITY_KIND_OVERHEAD,
    K::CUPTI_ACTIVITY_KIND_DEVICE,
    K::CUPTI_ACTIVITY_KIND_CONTEXT,
];

const BUFFERS: usize = 8;
const BUFFER_SIZE: usize = 8 << 20;

/// Free activity buffers, as addresses (touched on CUPTI's buffer thread only).
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Called once by the CUDA driver during `cuInit`. Returns 1 whatever happens, as
/// libgpuprof.so does; a tool that cannot start says so on stderr.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    let started = std::panic::catch_unwind(start).unwrap_or_else(|_| Err("panic".into()));
    if let Err(e) = started {
        eprintln!("gpuprof-baseline-tool: not started: {e}");
    }
    1
}

fn start() -> Result<(), String> {
    let driver = cupti::driver_version(false).ok().map(|(v, _)| v);
    let (_, cupti) =
        cupti::discover(&cupti::Inputs::from_process(), driver).map_err(|e| e.to_string())?;
    // Never unloaded, as libgpuprof.so keeps its CUPTI.
    let cupti: &'static Cupti = Box::leak(Box::new(cupti));
    {
        let mut free = FREE.lock().map_err(|e| e.to_string())?;
        for _ in 0..BUFFERS {
            // Kept for the life of the process, as CUPTI may hold them until exit.
            let buffer: &'static mut [u64] = Vec::leak(vec![0u64; BUFFER_SIZE / 8]);
            free.push(buffer.as_mut_ptr() as usize);
        }
    }
    let rp = std::env::var("GPUPROF_BASELINE_RANGE_PROFILER").is_ok_and(|v| v == "1");
    let _ = RANGE_PROFILER.set(rp.then_some(cupti));
    let s: &'static Subscriber = Box::leak(Box::new(
        callback::subscribe(cupti, Some(on_callback), c"gpuprof-baseline-tool")
            .map_err(|e| format!("cuptiSubscribe: {}", e.code))?,
    ));
    for &id in RESOURCE_CBIDS {
        callback::enable_callback(cupti, s, CUPTI_CB_DOMAIN_RESOURCE, id)
            .map_err(|e| format!("resource callback {id}: {e}"))?;
    }
    // By default (`GPUPROF_API=sync`) libgpuprof.so enables every driver and runtime
    // callback: launches, the calls it traces one by one, and the others, which it
    // counts.
    callback::enable_domain(cupti, s, CUPTI_CB_DOMAIN_DRIVER_API)
        .map_err(|e| format!("driver callbacks: {e}"))?;
    callback::enable_domain(cupti, s, CUPTI_CB_DOMAIN_RUNTIME_API)
        .map_err(|e| format!("runtime callbacks: {e}"))?;
    activity::use_system_thread_ids(cupti, s).map_err(|e| format!("thread ids: {e}"))?;
    let callbacks = BufferCallbacks {
        request: Some(requested),
        complete: Some(completed),
        request_v2: Some(requested_v2),
        complete_v2: Some(completed_v2),
    };
    activity::register_buffer_callbacks(cupti, s, &callbacks)
        .map_err(|e| format!("buffer callbacks: {e}"))?;
    for &kind in KINDS {
        activity::activity_enable(cupti, s, kind).map_err(|e| format!("kind {kind}: {e}"))?;
    }
    Ok(())
}

/// The subscriber callback: nothing to do, but enable a range profiler on each new
/// context when asked to (see the crate documentation).
unsafe extern "C" fn on_callback(_: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    if domain != CUPTI_CB_DOMAIN_RESOURCE
        || cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED
        || data.is_null()
    {
        return;
    }
    let Some(cupti) = RANGE_PROFILER.get().copied().flatten() else {
        return;
    };
    // SAFETY: for resource callbacks CUPTI passes a CUpti_ResourceData, valid
    // during the call.
    let ctx = unsafe { (*(data as *const CUpti_ResourceData)).context };
    if let Err(e) = enable_range_profiler(cupti, ctx) {
        eprintln!("gpuprof-baseline-tool: not started: range profiler: {e}");
    }
}

/// The CUPTI to enable range profilers with, when `GPUPROF_BASELINE_RANGE_PROFILER`
/// asks for them.
static RANGE_PROFILER: OnceLock<Option<&'static Cupti>> = OnceLock::new();

fn enable_range_profiler(cupti: &'static Cupti, ctx: CUcontext) -> Result<(), String> {
    static INITIALIZED: OnceLock<Result<(), String>> = OnceLock::new();
    INITIALIZED
        .get_or_init(|| {
            cupti::preload_perf_libraries(cupti.path());
            profiler::profiler_initialize(cupti.fns()).map_err(|e| e.to_string())
        })
        .clone()?;
    let rp = profiler::RangeProfiler::enable(cupti.fns(), ctx).map_err(|e| e.to_string())?;
    // Enabled for the life of the context, as libgpuprof.so keeps it.
    std::mem::forget(rp);
    Ok(())
}

fn request(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let p = FREE.lock().ok().and_then(|mut f| f.pop());
    let (p, n) = p.map_or((core::ptr::null_mut(), 0), |p| (p as *mut u8, BUFFER_SIZE));
    // SAFETY: CUPTI passes valid out-pointers (null-checked anyway).
    unsafe {
        if !buffer.is_null() {
            *buffer = p;
        }
        if !size.is_null() {
            *size = n;
        }
        if !max_records.is_null() {
            *max_records = 0;
        }
    }
}

fn complete(buffer: *mut u8) {
    if !buffer.is_null() {
        if let Ok(mut f) = FREE.lock() {
            f.push(buffer as usize);
        }
    }
}

unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    request(buffer, size, max_records);
}

unsafe extern "C" fn requested_v2(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
    _: *mut CUpti_BufferCallbackRequestInfo,
) {
    request(buffer, size, max_records);
}

unsafe extern "C" fn completed(_: CUcontext, _: u32, buffer: *mut u8, _: usize, _: usize) {
    complete(buffer);
}

unsafe extern "C" fn completed_v2(
    buffer: *mut u8,
    _: usize,
    _: usize,
    _: *mut CUpti_BufferCallbackCompleteInfo,
) {
    complete(buffer);
}
