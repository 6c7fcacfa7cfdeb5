//! GEMM shapes from cuBLAS and cuBLASLt: M, N, K, batch, transposes and types of every
//! GEMM call, tied to the kernels the call launched.
//!
//! **Catching the calls.** Symbol interposition (an exported `cublasGemmEx` in an
//! `LD_PRELOAD`ed library) misses most real programs: cuBLAS is usually reached
//! through `dlopen` + `dlsym` on a library handle (cudarc, Python bindings), which
//! never consults preloaded objects, and under `CUDA_INJECTION64_PATH` nothing can
//! interpose at all. So in both injection modes, at start-up ([`install`]):
//! - every loaded object's GOT slots for the hooked cuBLAS / cuBLASLt functions are
//!   pointed at our hooks (`gemm/got.rs`, `gemm/patch.rs`); the real addresses come from the loaded
//!   libraries that define them;
//! - every loaded object's GOT slot for `dlsym` is pointed at [`dlsym`]'s entry, so a
//!   later `dlsym(handle, "cublasGemmEx")` (the library may be loaded later) returns
//!   our hook. Lookups through `RTLD_DEFAULT` / `RTLD_NEXT`, whose answer depends on
//!   the caller, go straight to the real `dlsym` with the caller's return address.
//!
//! Not caught: function pointers an application took before `cuInit` (we start then),
//! objects loaded later that link cuBLAS directly (their slots are bound by the loader
//! after our scan; [`rescan`] runs again when a context is created), and GEMMs issued
//! by cuBLAS entry points not in [`hooks`] (grouped-batched GEMMs, the 3m variants).
//!
//! **Tying shapes to kernels.** A hook records the call's shape in a thread-local
//! slot, calls the real function and clears the slot. Every kernel launch made on
//! that thread meanwhile (the driver-API launch callback, [`on_launch_enter`]) sends a
//! [`wire::Gemm`] with the launch's correlation id: a call may launch several kernels
//! (split-K reductions); they share the call number. Nested calls (cuBLAS calling
//! cuBLASLt) keep the outermost shape. Under stream capture the launch creates a
//! graph node instead: [`on_graph_node_created`] ties the node to the launch's
//! correlation id, and [`on_graph_node_cloned`] follows the clones instantiation makes,
//! so every replay of the graph is attributed by the collector.
//!
//! **The call's span.** A call whose shape was read and that launched kernels sends a
//! [`wire::GemmCall`] at its return: its thread and CUPTI timestamps at entry and
//! return (`gemm/spans.rs`), for the call's operator in traces.
//!
//! Hooks are always safe to call: when the profiler is off they only forward.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use cupti::Cupti;
use cupti_sys::{CUpti_GraphData, CUpti_ResourceData};
use wire::{Gemm, GemmStatus, GraphNode, GraphNodeCloned, Record};

use crate::handoff;
use crate::log::{debug, warn};
use crate::options::Options;

mod calls;
mod dlsym;
mod got;
mod hooks;
mod loaded;
mod lt;
mod patch;
mod spans;

thread_local! {
    /// Correlation id of the launch API call in progress on this thread, or 0.
    static LAUNCH: Cell<u32> = const { Cell::new(0) };
}

/// Interned ids of the API names, 0 until sent.
static API_IDS: [AtomicU32; hooks::COUNT] = [const { AtomicU32::new(0) }; hooks::COUNT];
/// The loader generation [`rescan`] last saw; the scan itself is serialised.
static SCANNED: Mutex<u64> = Mutex::new(0);

/// Turns shape recording on and patches the loaded objects; `opts.gemm` off leaves
/// everything untouched.
pub fn install(opts: &Options) {
    if !opts.gemm {
        return;
    }
    dlsym::init();
    calls::ON.store(true, Ordering::Release);
    if dlsym::entry_address().is_none() {
        let message = "GEMMs of cuBLAS reached through dlsym (cudarc, Python bindings) are \
                       not recorded on this architecture; calls through a program's PLT are"
            .to_string();
        warn!("{message}");
        handoff::send(Record::GemmStatus(GemmStatus { message }));
    }
    rescan();
}

/// Patches objects loaded since the last scan (all of them the first time).
pub fn rescan() {
    if !calls::ON.load(Ordering::Acquire) {
        return;
    }
    let generation = loaded::generation();
    let mut seen = SCANNED.lock().unwrap_or_else(|e| e.into_inner());
    if *seen == generation {
        return;
    }
    *seen = generation;
    patch::patch_loaded();
}

fn api_id(api: usize) -> Option<u32> {
    let slot = API_IDS.get(api)?;
    let id = slot.load(Ordering::Relaxed);
    if id != 0 {
        return Some(id);
    }
    let name = hooks::C_NAMES.get(api)?;
    // SAFETY: a NUL-terminated static string.
    let id = unsafe { handoff::intern(name.as_ptr()) }?;
    slot.store(id, Ordering::Relaxed);
    Some(id)
}

/// A kernel launch API call begins on this thread (driver-API callback, enter).
pub fn on_launch_enter(correlation_id: u32, graph_launch: bool) {
    if graph_launch {
        return;
    }
    LAUNCH.with(|l| l.set(correlation_id));
    let Some((s, call, index)) = calls::next_launch() else {
        return;
    };
    let Some(api) = api_id(s.api) else {
        handoff::lost();
        return;
    };
    handoff::send(Record::Gemm(Gemm {
        correlation_id,
        call,
        launch_index: index,
        api,
        ..s.gemm
    }));
}

/// The GEMM call in progress on this thread as a counter policy key part
/// ([`calls::shape_key`]); 0 outside one.
pub fn shape_key() -> u64 {
    calls::shape_key()
}

/// The launch API call on this thread returns (driver-API callback, exit).
pub fn on_launch_exit() {
    LAUNCH.with(|l| l.set(0));
}

/// The id of a node of the `CUpti_GraphData` CUPTI passed to the running
/// graph-node callback (null: none).
fn node_id(c: &Cupti, node: cupti_sys::CUgraphNode) -> Option<u64> {
    if node.is_null() {
        return None;
    }
    // SAFETY: a node handle from the callback's `CUpti_GraphData`, valid during the
    // callback this runs in.
    unsafe { cupti::callback::graph_node_id(c, node) }
        .ok()
        .filter(|&id| id != 0)
}

fn graph_data(r: &CUpti_ResourceData) -> Option<&CUpti_GraphData> {
    // SAFETY: called from the graph-node resource callbacks with CUPTI's data.
    unsafe { cupti::callback::graph_data(r) }
}

const KERNEL_NODE: u32 = cupti_sys::CUgraphNodeType_enum::CU_GRAPH_NODE_TYPE_KERNEL;

/// A graph node was created (resource callback): under stream capture, inside the
/// launch call that made it.
pub fn on_graph_node_created(c: &Cupti, r: &CUpti_ResourceData) {
    let correlation_id = LAUNCH.with(Cell::get);
    let Some(g) = graph_data(r) else { return };
    if correlation_id == 0 || g.nodeType != KERNEL_NODE {
        return;
    }
    if let Some(node_id) = node_id(c, g.node) {
        handoff::send(Record::GraphNode(GraphNode {
            node_id,
            correlation_id,
        }));
    }
}

/// A graph node was cloned (resource callback): graph instantiation clones every node.
pub fn on_graph_node_cloned(c: &Cupti, r: &CUpti_ResourceData) {
    let Some(g) = graph_data(r) else { return };
    if g.nodeType != KERNEL_NODE {
        return;
    }
    match (node_id(c, g.node), node_id(c, g.originalNode)) {
        (Some(node_id), Some(original_node_id)) => {
            handoff::send(Record::GraphNodeCloned(GraphNodeCloned {
                node_id,
                original_node_id,
            }));
        }
        _ => debug!("a graph node was cloned but CUPTI cannot name it"),
    }
}
