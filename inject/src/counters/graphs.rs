//! Which CUDA graph launches may be measured, and how many kernels each runs.
//!
//! CUPTI measures the kernel nodes of a graph launch one range each only with auto
//! range and kernel replay (CUPTI release notes, known issues of the range profiling
//! API: "User replay and application replay modes with auto range are not
//! supported" for kernel nodes launched by a CUDA graph). Kernel replay runs every
//! kernel node once per pass inside the `cuGraphLaunch` call, saving and restoring
//! the memory it writes, so a graph is measured only when that is harmless and
//! cannot hang:
//! - every node is a kernel, copy, set, empty, event-record, memory alloc or free
//!   node: a host node, an event wait, an external semaphore, a stream memory
//!   operation (`cuStreamWaitValue32` captured), a child graph or a conditional node
//!   can wait on work outside the launch, or hide kernels from the count;
//! - every kernel node was made by a kernel launch captured on a stream, so its name
//!   is known ([`note_launch`]), and no name is a communication kernel's
//!   ([`is_communication`]): NCCL, the custom all-reduce kernels of serving engines
//!   and the like spin on flags other GPUs write, and replaying one alone would hang
//!   or, restoring memory a peer wrote, corrupt it.
//!
//! An executable graph is known from its instantiation: its kernel count and
//! verdict are those of the graph it was instantiated from (`GRAPHNODE_CLONED`
//! names the original graph and the executable graph; `GRAPHEXEC_CREATED` names
//! the executable graph). The first [`GRAPH_LAUNCHES`] launches of each executable
//! graph are measured.
//!
//! Memory is bounded: at most [`MAX_GRAPHS`] graphs and as many executable graphs
//! are tracked; a graph beyond that is not measured. Destroyed graphs are forgotten.

use core::ffi::{c_char, CStr};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;

use crate::log::debug;

/// Launches of each executable graph measured: every metric of the set comes from
/// each (kernel replay), so two give each kernel node its values twice.
pub const GRAPH_LAUNCHES: u64 = 2;
/// Graphs, and executable graphs, tracked at most.
pub const MAX_GRAPHS: usize = 4096;

/// Substrings of the kernel names (compared without case) of kernels that
/// communicate with other GPUs or processes: never kernel-replayed.
pub const COMMUNICATION: &[&str] = &[
    "nccl",
    "allreduce",
    "all_reduce",
    "allgather",
    "all_gather",
    "reducescatter",
    "reduce_scatter",
    "alltoall",
    "all_to_all",
    "cross_device",
    "mscclpp",
    "nvshmem",
    "deep_ep",
    "multimem",
    "lamport",
];

/// `CUgraphNodeType` values whose nodes cannot wait on work outside the launch.
const KERNEL_NODE: u32 = 0;
const HARMLESS_NODES: &[u32] = &[
    0,  // kernel (checked by name)
    1,  // memcpy
    2,  // memset
    5,  // empty
    7,  // event record
    10, // memory allocation
    11, // memory free
];

/// Whether kernel `name` (mangled or not) communicates with other GPUs.
pub fn is_communication(name: &[u8]) -> bool {
    COMMUNICATION.iter().any(|w| {
        name.windows(w.len())
            .any(|x| x.eq_ignore_ascii_case(w.as_bytes()))
    })
}

thread_local! {
    /// The symbol name of the kernel launch this thread is inside, if any.
    static LAUNCH_SYMBOL: Cell<*const c_char> = const { Cell::new(std::ptr::null()) };
}

/// Launch API enter / exit on this thread: the kernel's symbol name (null at exit
/// and for launches without one). A node created meanwhile is that kernel's.
pub fn note_launch(symbol: *const c_char) {
    LAUNCH_SYMBOL.with(|s| s.set(symbol));
}

/// What is known of a graph or an executable graph.
#[derive(Debug, Clone, Default)]
struct Info {
    kernels: u32,
    /// Why it is not measured.
    refused: Option<String>,
}

#[derive(Debug, Clone)]
struct Exec {
    info: Info,
    launches: u64,
    excluded: bool,
}

#[derive(Debug, Default)]
struct Registry {
    graphs: HashMap<usize, Info>,
    /// Executable graph -> the graph it was instantiated from (from its clones).
    sources: HashMap<usize, usize>,
    execs: HashMap<usize, Exec>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(r.get_or_insert_with(Registry::default))
}

/// A node of type `node_type` was added to `graph` (resource callback, on the thread
/// that made it).
pub fn on_node_created(graph: usize, node_type: u32) {
    let symbol = LAUNCH_SYMBOL.with(Cell::get);
    let refusal = if !HARMLESS_NODES.contains(&node_type) {
        Some(format!(
            "it has a node of type {node_type} (not a kernel, copy or set)"
        ))
    } else if node_type != KERNEL_NODE {
        None
    } else if symbol.is_null() {
        Some("it has a kernel node not made by a captured launch".to_string())
    } else {
        // SAFETY: the launch's symbol name from CUPTI's callback data, NUL-terminated;
        // the node is created inside that launch call, while the name is valid.
        let name = unsafe { CStr::from_ptr(symbol) }.to_bytes();
        is_communication(name).then(|| {
            format!(
                "it launches {}, which communicates with other GPUs",
                String::from_utf8_lossy(name)
            )
        })
    };
    with(|r| {
        if !r.graphs.contains_key(&graph) && r.graphs.len() >= MAX_GRAPHS {
            return;
        }
        let info = r.graphs.entry(graph).or_default();
        if node_type == KERNEL_NODE {
            info.kernels += 1;
        }
        if info.refused.is_none() {
            if let Some(why) = &refusal {
                debug!("graph {graph:#x}: not measured: {why}");
            }
            info.refused = refusal;
        }
    });
}

/// A node of `original` was cloned into executable graph `exec` (instantiation).
pub fn on_node_cloned(original: usize, exec: usize) {
    if original == 0 || exec == 0 {
        return;
    }
    with(|r| {
        if r.sources.len() < MAX_GRAPHS {
            r.sources.entry(exec).or_insert(original);
        }
    });
}

/// Executable graph `exec` was instantiated from `graph`.
pub fn on_exec_created(graph: usize, exec: usize) {
    with(|r| {
        let source = r.sources.remove(&exec).unwrap_or(graph);
        if r.execs.len() >= MAX_GRAPHS {
            return;
        }
        let info = r.graphs.get(&source).cloned().unwrap_or(Info {
            kernels: 0,
            refused: Some("its nodes were not seen".to_string()),
        });
        debug!(
            "graph {graph:#x} (nodes from {source:#x}) instantiated as {exec:#x}: {} kernel \
             node(s){}",
            info.kernels,
            info.refused
                .as_deref()
                .map(|w| format!("; not measured: {w}"))
                .unwrap_or_default()
        );
        r.execs.insert(
            exec,
            Exec {
                info,
                launches: 0,
                excluded: false,
            },
        );
    });
}

/// A graph is destroyed: forgotten (its handle may be reused).
pub fn on_graph_destroyed(graph: usize) {
    with(|r| {
        r.graphs.remove(&graph);
    });
}

/// An executable graph is destroyed.
pub fn on_exec_destroyed(exec: usize) {
    with(|r| {
        r.execs.remove(&exec);
        r.sources.remove(&exec);
    });
}

/// What to do with a launch of executable graph `exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Measure it: the graph runs this many kernels.
    Measure(u32),
    /// Not now (measured enough, excluded, or nothing to measure).
    Skip,
    /// Never: why (said once per executable graph, at its first launch).
    Refused(String),
}

/// Counts a launch of `exec` and decides whether it is measured.
pub fn decide(exec: usize) -> Decision {
    with(|r| {
        let Some(e) = r.execs.get_mut(&exec) else {
            debug!("graph launch of {exec:#x}: its instantiation was not seen; not measured");
            return Decision::Skip;
        };
        e.launches += 1;
        if let Some(why) = &e.info.refused {
            return if e.launches == 1 {
                Decision::Refused(why.clone())
            } else {
                Decision::Skip
            };
        }
        if e.excluded || e.info.kernels == 0 || e.launches > GRAPH_LAUNCHES {
            return Decision::Skip;
        }
        Decision::Measure(e.info.kernels)
    })
}

/// Takes back the last [`decide`] of `exec`: the launch was not measured after all.
pub fn undo(exec: usize) {
    with(|r| {
        if let Some(e) = r.execs.get_mut(&exec) {
            e.launches = e.launches.saturating_sub(1);
        }
    });
}

/// Launches of `exec` are not measured again.
pub fn exclude(exec: usize) {
    with(|r| {
        if let Some(e) = r.execs.get_mut(&exec) {
            e.excluded = true;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communication_kernels_are_known_by_name() {
        for name in [
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            "_ZN4vllm25cross_device_reduce_1stageI13__nv_bfloat16Li8EEEvPNS_7RankDataE",
            "_ZN12tensorrt_llm7kernels19oneShotAllReduceKernelIfLi8EEEvNS0_18AllReduceParamsE",
            "nvshmemi_barrier_all",
        ] {
            assert!(is_communication(name.as_bytes()), "{name}");
        }
        for name in [
            "_Z13rmsnorm_kernelPK13__nv_bfloat16PS_i",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
            "gemv_bf16",
        ] {
            assert!(!is_communication(name.as_bytes()), "{name}");
        }
    }
}
