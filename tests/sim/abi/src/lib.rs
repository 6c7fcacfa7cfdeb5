//! The private interface between the simulated CUDA libraries.
//!
//! Real CUPTI reaches into the real driver through `cuGetExportTable` with private
//! UUIDs; the simulated CUPTI and cuBLAS reach the simulated driver the same way, with
//! [`DRIVER_TABLE_ID`]. Everything here is `#[repr(C)]`: the libraries are separate
//! shared objects, each with its own copy of Rust's statics, so they share nothing
//! but this ABI.
//!
//! What crosses is what the driver knows and CUPTI reports: API calls (with the real
//! `cu*_params` structs and CUPTI callback ids), resource events (with the real
//! `CUpti_ResourceData`), and executed GPU operations with their simulated times.

use core::ffi::{c_char, c_int, c_void};

pub use cupti_sys::{CUcontext, CUgraph, CUgraphNode, CUpti_ResourceData, CUstream};

/// `cuGetExportTable` id of [`DriverTable`] ("gpuprof-sim-drv" + version byte).
pub const DRIVER_TABLE_ID: [u8; 16] = *b"gpuprof-sim-drv\x01";

/// `CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)`
/// (`cuda.h`; a `CUuuid` is 16 bytes).
pub type GetExportTable = unsafe extern "C" fn(*mut *const c_void, *const [u8; 16]) -> c_int;

/// The [`DriverTable`] a driver's `cuGetExportTable` gives for [`DRIVER_TABLE_ID`]:
/// `None` when it gives none (not the simulated driver), or one smaller than the
/// version built here.
///
/// # Safety
/// `get_export_table` is a CUDA driver's `cuGetExportTable`.
pub unsafe fn driver_table(get_export_table: GetExportTable) -> Option<DriverTable> {
    let mut p: *const c_void = core::ptr::null();
    // SAFETY: the driver's function (the caller's contract); both pointers are valid
    // for the call.
    if unsafe { get_export_table(&mut p, &DRIVER_TABLE_ID) } != 0 || p.is_null() {
        return None;
    }
    let t = p.cast::<DriverTable>();
    // SAFETY: the driver returned a `DriverTable` for this id; `size` comes first in
    // every version of it.
    let size = unsafe { core::ptr::addr_of!((*t).size).read() };
    if size < core::mem::size_of::<DriverTable>() {
        return None;
    }
    // SAFETY: the table is at least as large as the version built here.
    Some(unsafe { t.read() })
}

/// Callback site of [`Tracer::api`].
pub const SITE_ENTER: u32 = 0;
/// Callback site of [`Tracer::api`].
pub const SITE_EXIT: u32 = 1;

/// Functions the simulated driver offers its companions.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DriverTable {
    /// `size_of::<DriverTable>()` as the driver built it.
    pub size: usize,
    /// Installs `tracer` (non-null) or removes it (null). Returns 0, or 1 when another
    /// tracer is installed. The tracer and its `user` pointer must stay valid until removed.
    pub set_tracer: unsafe extern "C" fn(tracer: *const Tracer) -> c_int,
    /// The simulated GPU clock, in ns on the host's `CLOCK_REALTIME` timebase (CUPTI's).
    pub now_ns: unsafe extern "C" fn() -> u64,
    /// Unique id of a context (`cuCtxGetId`), 0 for an invalid handle.
    pub context_id: unsafe extern "C" fn(ctx: CUcontext) -> u32,
    /// Device ordinal of a context, -1 for an invalid handle.
    pub context_device: unsafe extern "C" fn(ctx: CUcontext) -> c_int,
    /// Unique id of a stream (`cuStreamGetId`); the NULL stream of `ctx` when `stream` is null.
    pub stream_id: unsafe extern "C" fn(ctx: CUcontext, stream: CUstream) -> u64,
    /// Unique id of a graph, 0 for an invalid handle.
    pub graph_id: unsafe extern "C" fn(graph: CUgraph) -> u32,
    /// Unique id of a graph node, 0 for an invalid handle.
    pub graph_node_id: unsafe extern "C" fn(node: CUgraphNode) -> u64,
    /// Sets (non-null) or clears (null) the GEMM shape that kernels launched next on
    /// the calling thread implement. Used by the simulated cuBLAS so the cost model
    /// can price its kernels by shape.
    pub set_thread_gemm: unsafe extern "C" fn(shape: *const GemmShape),
    /// Invalidates every stream capture in progress on context `ctx` (its
    /// `cuStreamEndCapture` then fails with `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`);
    /// returns how many.
    pub invalidate_captures: unsafe extern "C" fn(ctx: CUcontext) -> c_int,
    /// Reports runtime API call `call` (a `CUpti_runtime_api_trace_cbid` in `cbid`, the
    /// `cuda*_params` struct of `generated_cuda_runtime_api_meta.h` in `params`) at its
    /// entry or exit to the installed tracer's [`Tracer::runtime_api`], with the calling
    /// thread's current context filled in. The simulated CUDA runtime calls it around
    /// each of its functions, as the real runtime reports to CUPTI through the driver;
    /// a `correlation_id` still 0 after entry means no tracer saw it (report no exit).
    pub runtime_api: unsafe extern "C" fn(call: *mut ApiCall),
}

/// The shape of a GEMM as the cost model sees it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Bytes per element of A/B (2 for BF16/FP16, 4 for FP32, ...).
    pub elem_bytes: u32,
}

/// What the driver reports to an installed tracer. All calls come on the thread
/// doing the work, synchronously.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Tracer {
    /// `size_of::<Tracer>()` as the tracer built it.
    pub size: usize,
    /// Passed back to every function.
    pub user: *mut c_void,
    /// Around every driver API function the simulation implements (after argument
    /// checks that do not reach the GPU are done, as with the real driver).
    pub api: unsafe extern "C" fn(user: *mut c_void, call: *mut ApiCall),
    /// Resource creation and destruction, with `cbid` a `CUpti_CallbackIdResource`.
    pub resource:
        unsafe extern "C" fn(user: *mut c_void, cbid: u32, data: *const CUpti_ResourceData),
    /// A GPU operation with its simulated start and end.
    pub gpu_op: unsafe extern "C" fn(user: *mut c_void, op: *const GpuOp),
    /// Around every function of the simulated CUDA runtime ([`DriverTable::runtime_api`]);
    /// the driver calls the runtime makes inside one come between its entry and exit.
    pub runtime_api: unsafe extern "C" fn(user: *mut c_void, call: *mut ApiCall),
}

/// One driver (or, through [`DriverTable::runtime_api`], runtime) API call, seen at
/// entry and at exit.
#[repr(C)]
pub struct ApiCall {
    /// [`SITE_ENTER`] or [`SITE_EXIT`].
    pub site: u32,
    /// `CUpti_driver_api_trace_cbid` (`CUpti_runtime_api_trace_cbid`) of the function.
    pub cbid: u32,
    /// The function's name, e.g. `cuLaunchKernel` (static, NUL-terminated).
    pub function_name: *const c_char,
    /// The function's parameters as the matching `cu*_params` struct of
    /// `generated_cuda_meta.h`, or null where the simulation has none.
    pub params: *const c_void,
    /// The current context of the calling thread (may be null).
    pub context: CUcontext,
    /// Its id, 0 when null.
    pub context_id: u32,
    /// The kernel name for launches, else null.
    pub symbol_name: *const c_char,
    /// The function's return value; meaningful at exit only.
    pub result: c_int,
    /// Written by the tracer at entry; the driver passes the same value back at exit
    /// and tags the GPU operations the call starts with it.
    pub correlation_id: u32,
}

/// Kinds of [`GpuOp`].
pub const OP_KERNEL: u32 = 1;
/// Kinds of [`GpuOp`].
pub const OP_MEMCPY: u32 = 2;
/// Kinds of [`GpuOp`].
pub const OP_MEMSET: u32 = 3;

/// A GPU operation the simulated device executed.
#[repr(C)]
pub struct GpuOp {
    /// [`OP_KERNEL`], [`OP_MEMCPY`] or [`OP_MEMSET`].
    pub kind: u32,
    /// Of the API call that started it (for graph launches: of `cuGraphLaunch`).
    pub correlation_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u64,
    /// Kernels: the kernel's name (valid during the call).
    pub name: *const c_char,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub dynamic_shared_memory: i32,
    pub static_shared_memory: i32,
    pub registers_per_thread: u16,
    /// Set when launched from a CUDA graph, else 0: the id of the graph instantiated
    /// and the id of the node's clone in the executable graph (`GRAPHNODE_CLONED`).
    pub graph_id: u32,
    pub graph_node_id: u64,
    /// Memcpy / memset: bytes moved or set.
    pub bytes: u64,
    /// Memcpy: a `CUpti_ActivityMemcpyKind` value.
    pub copy_kind: u8,
    /// Memcpy: `CUpti_ActivityMemoryKind` of source and destination.
    pub src_kind: u8,
    pub dst_kind: u8,
    /// Memset: the value.
    pub value: u32,
    /// Kernels: hardware counter values from the cost model (metric name, value),
    /// valid during the call. Empty for other operations.
    pub counters: *const Counter,
    pub num_counters: usize,
}

/// One counter value of a [`GpuOp`].
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Counter {
    /// Metric name, NUL-terminated.
    pub name: *const c_char,
    pub value: f64,
}
