//! The fake driver and buffer callbacks the unit tests use.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use cupti_sys::records::v13_4;
use cupti_sys::CUptiResult::*;
use cupti_sys::{CUpti_Activity, CUpti_ActivityKind as K};
use sim_abi::{ApiCall, DriverTable, GpuOp, Tracer, OP_KERNEL, SITE_ENTER, SITE_EXIT};

use crate::api_activity::*;

pub(super) static NOW: AtomicU64 = AtomicU64::new(1_000);
pub(super) static TRACER: AtomicUsize = AtomicUsize::new(0);

pub(super) unsafe extern "C" fn set_tracer(t: *const Tracer) -> c_int {
    TRACER.store(t as usize, Ordering::SeqCst);
    0
}
pub(super) unsafe extern "C" fn now_ns() -> u64 {
    NOW.load(Ordering::SeqCst)
}
pub(super) unsafe extern "C" fn context_id(ctx: cupti_sys::CUcontext) -> u32 {
    if ctx.is_null() {
        0
    } else {
        7
    }
}
pub(super) unsafe extern "C" fn context_device(ctx: cupti_sys::CUcontext) -> c_int {
    if ctx.is_null() {
        -1
    } else {
        0
    }
}
pub(super) unsafe extern "C" fn stream_id(_: cupti_sys::CUcontext, _: cupti_sys::CUstream) -> u64 {
    13
}
pub(super) unsafe extern "C" fn graph_id(_: cupti_sys::CUgraph) -> u32 {
    0
}
pub(super) unsafe extern "C" fn graph_node_id(_: cupti_sys::CUgraphNode) -> u64 {
    0
}
pub(super) unsafe extern "C" fn set_thread_gemm(_: *const sim_abi::GemmShape) {}
pub(super) unsafe extern "C" fn invalidate_captures(_: cupti_sys::CUcontext) -> std::ffi::c_int {
    0
}

pub(super) unsafe extern "C" fn runtime_api(call: *mut sim_abi::ApiCall) {
    let t = crate::tracer::tracer();
    // SAFETY: the runtime's call, valid for the call (the DriverTable contract).
    unsafe { (t.runtime_api)(t.user, call) };
}

pub(super) fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    let g = M.lock().unwrap_or_else(|e| e.into_inner());
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let table = DriverTable {
            size: std::mem::size_of::<DriverTable>(),
            set_tracer,
            now_ns,
            context_id,
            context_device,
            stream_id,
            graph_id,
            graph_node_id,
            set_thread_gemm,
            invalidate_captures,
            runtime_api,
        };
        let drv = crate::driver::Driver {
            table,
            device_get_attribute: None,
            device_get_name: None,
            device_total_mem: None,
            device_get_uuid: None,
            ctx_get_current: None,
        };
        assert!(crate::driver::install(
            drv,
            Box::leak(Box::new(crate::tracer::tracer()))
        ));
    });
    crate::activity::flush_all(true);
    crate::activity::reset();
    crate::subscribers::reset();
    crate::activity::THREAD_ID_TYPE.store(0, Ordering::SeqCst);
    lock(&DELIVERED).clear();
    REQUEST_MODE.store(0, Ordering::SeqCst);
    NOW.store(1_000, Ordering::SeqCst);
    g
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// 0: 4 KiB aligned; 1: decline; 2: misaligned by 4; 3: one record per buffer;
/// 4: 16 bytes (too small for any record).
pub(super) static REQUEST_MODE: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
pub(super) struct Delivered {
    pub(super) base: usize,
    /// A copy at the same address alignment as the original (offset `base % 8`).
    pub(super) copy: Vec<u64>,
    pub(super) valid: usize,
    pub(super) thread: std::thread::ThreadId,
}
pub(super) static DELIVERED: Mutex<Vec<Delivered>> = Mutex::new(Vec::new());

pub(super) unsafe extern "C" fn request(buf: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let mode = REQUEST_MODE.load(Ordering::SeqCst);
    let (n, offset, m) = match mode {
        1 => {
            // SAFETY: CUPTI passes valid out-pointers.
            unsafe { *buf = std::ptr::null_mut() };
            return;
        }
        2 => (4096, 4, 0),
        3 => (4096, 0, 1),
        4 => (16, 0, 0),
        _ => (4096, 0, 0),
    };
    let mem: &'static mut [u64] =
        Box::leak(vec![0xAAAA_AAAA_AAAA_AAAAu64; n / 8 + 1].into_boxed_slice());
    // SAFETY: CUPTI passes valid out-pointers; the memory is leaked (test only).
    unsafe {
        *buf = (mem.as_mut_ptr() as *mut u8).add(offset);
        *size = n - offset;
        *max = m;
    }
}

pub(super) unsafe extern "C" fn complete(
    _c: cupti_sys::CUcontext,
    _s: u32,
    buf: *mut u8,
    _size: usize,
    valid: usize,
) {
    // SAFETY: CUPTI hands back `valid` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf, valid) };
    let mut copy = vec![0u64; valid / 8 + 2];
    // SAFETY: the copy holds valid + 8 bytes from offset base % 8.
    unsafe {
        let dst = (copy.as_mut_ptr() as *mut u8).add(buf as usize % 8);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, valid);
    }
    lock(&DELIVERED).push(Delivered {
        base: buf as usize,
        copy,
        valid,
        thread: std::thread::current().id(),
    });
}

/// [`request`] with the `_v2` prototype.
pub(super) unsafe extern "C" fn request_v2(
    buf: *mut *mut u8,
    size: *mut usize,
    max: *mut usize,
    _info: *mut cupti_sys::CUpti_BufferCallbackRequestInfo,
) {
    // SAFETY: forwarded from CUPTI.
    unsafe { request(buf, size, max) }
}

/// [`complete`] with the `_v2` prototype.
pub(super) unsafe extern "C" fn complete_v2(
    buf: *mut u8,
    size: usize,
    valid: usize,
    _info: *mut cupti_sys::CUpti_BufferCallbackCompleteInfo,
) {
    // SAFETY: forwarded from CUPTI.
    unsafe { complete(std::ptr::null_mut(), 0, buf, size, valid) }
}

pub(super) fn tracer() -> &'static Tracer {
    // SAFETY: set by set_tracer from a leaked Box.
    unsafe { &*(TRACER.load(Ordering::SeqCst) as *const Tracer) }
}

/// One `cuLaunchKernel` through the tracer: enter, a kernel ending at `end`, exit.
pub(super) fn launch(end: u64) -> u32 {
    let t = tracer();
    let ctx = 0x1000usize as cupti_sys::CUcontext;
    let mut call = ApiCall {
        site: SITE_ENTER,
        cbid: 307,
        function_name: c"cuLaunchKernel".as_ptr(),
        params: std::ptr::null(),
        context: ctx,
        context_id: 7,
        symbol_name: c"axpy".as_ptr(),
        result: 0,
        correlation_id: 0,
    };
    // SAFETY: a valid ApiCall for the duration of the call.
    unsafe { (t.api)(t.user, &mut call) };
    let op = GpuOp {
        kind: OP_KERNEL,
        correlation_id: call.correlation_id,
        start_ns: end - 500,
        end_ns: end,
        device_id: 0,
        context_id: 7,
        stream_id: 13,
        name: c"axpy".as_ptr(),
        grid: [4, 2, 1],
        block: [128, 1, 1],
        dynamic_shared_memory: 256,
        static_shared_memory: 1024,
        registers_per_thread: 32,
        graph_id: 0,
        graph_node_id: 0,
        bytes: 0,
        copy_kind: 0,
        src_kind: 0,
        dst_kind: 0,
        value: 0,
        counters: std::ptr::null(),
        num_counters: 0,
    };
    // SAFETY: a valid GpuOp.
    unsafe { (t.gpu_op)(t.user, &op) };
    call.site = SITE_EXIT;
    // SAFETY: as above.
    unsafe { (t.api)(t.user, &mut call) };
    call.correlation_id
}

pub(super) fn setup_activity() {
    assert_eq!(
        cuptiActivityRegisterCallbacks(Some(request), Some(complete)),
        CUPTI_SUCCESS
    );
    assert_eq!(
        cuptiActivityEnable(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
        CUPTI_SUCCESS
    );
}

/// Every record of every delivered buffer, iterated with cuptiActivityGetNextRecord.
pub(super) fn records() -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    for d in lock(&DELIVERED).iter_mut() {
        let mut rec: *mut CUpti_Activity = std::ptr::null_mut();
        // SAFETY: the copy starts at offset base % 8 of its allocation.
        let start = unsafe { (d.copy.as_mut_ptr() as *mut u8).add(d.base % 8) };
        // SAFETY: the copy holds `valid` bytes from `start`.
        let bytes = unsafe { std::slice::from_raw_parts(start, d.valid) };
        loop {
            // SAFETY: the copied buffer holds `valid` bytes; rec is null or returned.
            let r = unsafe { cuptiActivityGetNextRecord(start, d.valid, &mut rec) };
            if r == CUPTI_ERROR_MAX_LIMIT_REACHED {
                break;
            }
            assert_eq!(r, CUPTI_SUCCESS);
            let off = rec as usize - start as usize;
            // SAFETY: a record of the kind's size lies at `off`.
            let kind = unsafe { (*rec).kind };
            let n = crate::layouts::record_size("13.4", kind).expect("known kind");
            out.push((d.base + off, bytes[off..off + n].to_vec()));
        }
    }
    out
}

pub(super) fn kernel(bytes: &[u8]) -> v13_4::CUpti_ActivityKernel13 {
    assert_eq!(
        bytes.len(),
        std::mem::size_of::<v13_4::CUpti_ActivityKernel13>()
    );
    // SAFETY: exactly one record's bytes, plain data.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const v13_4::CUpti_ActivityKernel13) }
}
