//! `cuGetExportTable`: the driver's private tables. The only one the sim has is
//! `sim_abi::DriverTable` (id `sim_abi::DRIVER_TABLE_ID`), used by the simulated
//! CUPTI and cuBLAS.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use sim_abi::{DriverTable, GemmShape, DRIVER_TABLE_ID};

use crate::consts::*;
use crate::ffi::guard;
use crate::{clock, registry, trace};

thread_local! {
    static GEMM: Cell<Option<GemmShape>> = const { Cell::new(None) };
}

/// The GEMM shape set on this thread by the simulated cuBLAS, if any.
pub(crate) fn thread_gemm() -> Option<GemmShape> {
    GEMM.with(Cell::get)
}

extern "C" fn now_ns() -> u64 {
    clock::now_ns()
}

extern "C" fn context_id(ctx: CUcontext) -> u32 {
    trace::context_id(ctx as usize)
}

extern "C" fn context_device(ctx: CUcontext) -> c_int {
    registry::lock()
        .contexts
        .get(&(ctx as usize))
        .map_or(-1, |c| c.device)
}

extern "C" fn stream_id(ctx: CUcontext, stream: CUstream) -> u64 {
    let d = registry::lock();
    let s = stream as usize;
    if s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD {
        let ctx = d.contexts.get(&(ctx as usize));
        return ctx
            .and_then(|c| d.streams.get(&c.null_stream))
            .map_or(0, |s| s.id);
    }
    d.streams.get(&s).map_or(0, |s| s.id)
}

extern "C" fn graph_id(graph: CUgraph) -> u32 {
    registry::lock()
        .graphs
        .get(&(graph as usize))
        .map_or(0, |g| g.id)
}

extern "C" fn graph_node_id(node: CUgraphNode) -> u64 {
    registry::lock()
        .nodes
        .get(&(node as usize))
        .map_or(0, |n| n.id)
}

extern "C" fn invalidate_captures(ctx: CUcontext) -> c_int {
    let mut d = registry::lock();
    let mut n = 0;
    for st in d.streams.values_mut().filter(|s| s.ctx == ctx as usize) {
        if let Some(c) = st.capture.as_mut() {
            c.invalidated = true;
            n += 1;
        }
    }
    n
}

/// # Safety
/// `shape` is NULL or points to a valid `GemmShape`.
unsafe extern "C" fn set_thread_gemm(shape: *const GemmShape) {
    // SAFETY: per this function's contract.
    let v = unsafe { shape.as_ref() }.copied();
    GEMM.with(|g| g.set(v));
}

/// # Safety
/// `tracer` is NULL or valid until removed (the `DriverTable` contract).
unsafe extern "C" fn set_tracer(tracer: *const sim_abi::Tracer) -> c_int {
    trace::set_tracer(tracer)
}

/// # Safety
/// `call` is valid for reading and writing during the call (the `DriverTable` contract).
unsafe extern "C" fn runtime_api(call: *mut sim_abi::ApiCall) {
    // SAFETY: per this function's contract.
    if let Some(call) = unsafe { call.as_mut() } {
        trace::runtime_call(call);
    }
}

static TABLE: DriverTable = DriverTable {
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

/// `CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)`.
/// Works before `cuInit` (CUPTI may look its tables up early).
///
/// # Safety
/// `pp_export_table` is NULL or writable; `id` is NULL or points to 16 bytes.
#[no_mangle]
pub unsafe extern "C" fn cuGetExportTable(
    pp_export_table: *mut *const c_void,
    id: *const CUuuid,
) -> CUresult {
    guard(move || {
        if pp_export_table.is_null() || id.is_null() {
            return CUDA_ERROR_INVALID_VALUE;
        }
        // SAFETY: non-NULL and points to a CUuuid per this function's contract.
        let bytes = unsafe { (*id).bytes }.map(|b| b as u8);
        if bytes != DRIVER_TABLE_ID {
            return CUDA_ERROR_INVALID_VALUE;
        }
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { pp_export_table.write(std::ptr::from_ref(&TABLE).cast()) };
        CUDA_SUCCESS
    })
}
