//! CUDA graphs: `cuGraphCreate`, `cuGraphAddKernelNode_v2`, `cuGraphGetNodes`,
//! `cuGraphInstantiateWithFlags` (and the older `cuGraphInstantiate_v2` ABI),
//! `cuGraphLaunch`, `cuGraphExecDestroy`, `cuGraphDestroy`. Nodes run in the order
//! they were added (always a valid topological order).
//!
//! Instantiation clones the graph, as the real driver does: the executable graph runs
//! copies of the nodes, each with a new handle and a new unique id
//! (`cuptiGetGraphNodeId` answers for them), in a copy of the graph with its own id.
//! GPU operations of a launch carry the clone's node id (what NVIDIA's
//! `cuda_graphs_trace` sample maps back to the original node through
//! `GRAPHNODE_CLONED`), the id of the graph instantiated from, and `cuGraphLaunch`'s
//! correlation id.
//!
//! Resource callbacks (`CUpti_GraphData`), all on the calling thread inside the API
//! call (between its driver API enter and exit callbacks):
//! - `cuGraphCreate`, `cuStreamBeginCapture_v2`: `GRAPH_CREATED` (`graph`).
//! - `cuGraphAddKernelNode_v2` and each launch, copy or set issued to a capturing
//!   stream: `GRAPHNODE_CREATED` (`graph`, `node`, `nodeType`), so a subscriber ties
//!   the node to that call's correlation id.
//! - `cuGraphInstantiate*`: `GRAPHEXEC_CREATE_STARTING` (`graph` the graph
//!   instantiated, `graphExec` NULL); then per node, in node order,
//!   `GRAPHNODE_CREATED` (`graph` the copy, `node` the clone, `nodeType`) and
//!   `GRAPHNODE_CLONED` (`graph` the copy, `originalGraph` the graph instantiated,
//!   `node` the clone, `originalNode` the node it was cloned from, `nodeType`,
//!   `graphExec` the executable graph being made, already the handle the call
//!   returns); then `GRAPHEXEC_CREATED` (`graph`, `graphExec`). That nodes are
//!   created during instantiation is what NVIDIA's `cuda_graphs_trace` sample
//!   expects (it skips `GRAPHNODE_CREATED` while `cudaGraphInstantiate` runs);
//!   `cupti_callbacks.h` documents neither the order nor which fields each callback
//!   sets, so the order above and `graphExec` in `GRAPHNODE_CLONED` are the sim's
//!   choice.
//! - `cuGraphExecDestroy`: `GRAPHEXEC_DESTROY_STARTING` (`graph`, `graphExec`); the
//!   clones and the copy go with it. `cuGraphDestroy`, an invalidated capture:
//!   `GRAPH_DESTROY_STARTING` (`graph`).

use std::ffi::{c_char, c_uint, c_ulonglong};

use cupti_sys::CUpti_CallbackIdResource::*;
use cupti_sys::CUDA_KERNEL_NODE_PARAMS;

use crate::api_launch::{resolve, validate};
use crate::api_module::report_loaded;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::ops::{self, graph_data, Issued};
use crate::registry::{self, Exec, Graph, LaunchSpec, OpSpec};
use crate::{context, trace};

/// Reports a graph resource event (`GRAPH_*`, `GRAPHEXEC_*`).
pub(crate) fn report_graph(cbid: u32, graph: usize, exec: usize) {
    let mut data = graph_data(graph, 0, 0);
    data.graphExec = exec as CUgraphExec;
    let ctx = context::current().unwrap_or(0);
    trace::resource(cbid, ctx, 0, std::ptr::from_mut(&mut data).cast());
}

/// Creates an empty graph; returns its handle.
pub(crate) fn new_graph(d: &mut registry::Driver) -> usize {
    let h = d.new_handle();
    let id = d.new_graph_id();
    d.graphs.insert(
        h,
        Graph {
            id,
            nodes: Vec::new(),
        },
    );
    h
}

/// `CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)`: `flags` must be 0.
///
/// # Safety
/// `ph_graph` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuGraphCreate(ph_graph: *mut CUgraph, flags: c_uint) -> CUresult {
    let p = cupti_sys::cuGraphCreate_params {
        phGraph: ph_graph,
        flags,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphCreate,
        c"cuGraphCreate",
        p,
        code((|| {
            if ph_graph.is_null() || flags != 0 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let g = new_graph(&mut registry::lock());
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(ph_graph, g as CUgraph)? };
            report_graph(CUPTI_CBID_RESOURCE_GRAPH_CREATED, g, 0);
            Ok(())
        })())
    )
}

/// `CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const
/// CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS
/// *nodeParams)`: `func`, or `kern` when `func` is NULL.
///
/// # Safety
/// `ph_node` is NULL or writable; `deps` holds `num_deps` nodes; `params` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    deps: *const CUgraphNode,
    num_deps: usize,
    params: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    let p = cupti_sys::cuGraphAddKernelNode_v2_params {
        phGraphNode: ph_node,
        hGraph: h_graph,
        dependencies: deps,
        numDependencies: num_deps,
        nodeParams: params,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
        c"cuGraphAddKernelNode_v2",
        p,
        code((|| {
            // SAFETY: per this function's contract.
            let Some(np) = (unsafe { params.as_ref() }) else {
                return Err(CUDA_ERROR_INVALID_VALUE);
            };
            if ph_node.is_null() || (num_deps > 0 && deps.is_null()) {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let g = h_graph as usize;
            let (issued, loaded) = {
                let mut d = registry::lock();
                if !d.graphs.contains_key(&g) {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                // SAFETY: `deps` holds `num_deps` handles per this function's contract.
                let dep_list = if num_deps == 0 {
                    &[][..]
                } else {
                    // SAFETY: the caller's pointers are as this function's contract requires.
                    unsafe { std::slice::from_raw_parts(deps, num_deps) }
                };
                if dep_list
                    .iter()
                    .any(|n| d.nodes.get(&(*n as usize)).is_none_or(|n| n.graph != g))
                {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                let handle = if np.func.is_null() {
                    np.kern as usize
                } else {
                    np.func as usize
                };
                let (f, _, loaded) = resolve(&mut d, handle)?;
                let grid = [np.gridDimX, np.gridDimY, np.gridDimZ];
                let block = [np.blockDimX, np.blockDimY, np.blockDimZ];
                validate(&d, f, grid, block, np.sharedMemBytes)?;
                let spec = LaunchSpec {
                    kernel: d.functions[&f].kernel.clone(),
                    grid,
                    block,
                    shared: np.sharedMemBytes,
                    gemm: crate::export_table::thread_gemm(),
                };
                let op = OpSpec::Kernel(spec);
                let node_type = ops::node_type(&op);
                let node = ops::add_node(&mut d, g, op);
                let ctx = context::current().unwrap_or(0);
                (
                    Issued::Captured {
                        ctx,
                        graph: g,
                        node,
                        node_type,
                    },
                    loaded,
                )
            };
            report_loaded(loaded);
            if let Issued::Captured { node, .. } = &issued {
                // SAFETY: non-NULL and writable per this function's contract.
                unsafe { out(ph_node, *node as CUgraphNode)? };
            }
            ops::report(vec![issued]);
            Ok(())
        })())
    )
}

/// `CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)`:
/// with `nodes` NULL, the count; otherwise up to `*numNodes` nodes, NULL-padded, and
/// the number written.
///
/// # Safety
/// `num_nodes` is NULL or valid; `nodes` is NULL or holds `*num_nodes` entries.
#[no_mangle]
pub unsafe extern "C" fn cuGraphGetNodes(
    h_graph: CUgraph,
    nodes: *mut CUgraphNode,
    num_nodes: *mut usize,
) -> CUresult {
    let p = cupti_sys::cuGraphGetNodes_params {
        hGraph: h_graph,
        nodes,
        numNodes: num_nodes,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphGetNodes,
        c"cuGraphGetNodes",
        p,
        code((|| {
            if num_nodes.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let d = registry::lock();
            let g = d
                .graphs
                .get(&(h_graph as usize))
                .ok_or(CUDA_ERROR_INVALID_VALUE)?;
            if nodes.is_null() {
                // SAFETY: non-NULL per the check above.
                return unsafe { out(num_nodes, g.nodes.len()) };
            }
            // SAFETY: non-NULL and valid per this function's contract.
            let cap = unsafe { num_nodes.read() };
            for i in 0..cap {
                let v = g
                    .nodes
                    .get(i)
                    .map_or(std::ptr::null_mut(), |n| *n as CUgraphNode);
                // SAFETY: `nodes` holds `cap` entries per this function's contract.
                unsafe { nodes.add(i).write(v) };
            }
            // SAFETY: as above.
            unsafe { out(num_nodes, cap.min(g.nodes.len())) }
        })())
    )
}

/// Instantiates `h_graph`: reports `GRAPHEXEC_CREATE_STARTING`, clones every node into
/// the executable graph's own copy of the graph (reporting `GRAPHNODE_CREATED` then
/// `GRAPHNODE_CLONED` for each clone, in node order), then `GRAPHEXEC_CREATED`.
///
/// # Safety
/// `ph_exec` is NULL or writable.
unsafe fn instantiate(
    ph_exec: *mut CUgraphExec,
    h_graph: CUgraph,
    flags: u64,
) -> Result<(), CUresult> {
    if ph_exec.is_null() || flags > 0xf {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let g = h_graph as usize;
    if !registry::lock().graphs.contains_key(&g) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    report_graph(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING, g, 0);
    let (e, copy, clones) = {
        let mut d = registry::lock();
        let graph = d.graphs.get(&g).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let (graph_id, originals) = (graph.id, graph.nodes.clone());
        let e = d.new_handle();
        let copy = new_graph(&mut d);
        let mut clones = Vec::with_capacity(originals.len());
        for original in originals {
            let op = d.nodes[&original].op.clone();
            let node_type = ops::node_type(&op);
            let clone = ops::add_node(&mut d, copy, op);
            clones.push((clone, original, node_type));
        }
        let nodes = clones.iter().map(|c| c.0).collect();
        d.execs.insert(
            e,
            Exec {
                graph: g,
                graph_id,
                clone: copy,
                nodes,
            },
        );
        (e, copy, clones)
    };
    let ctx = context::current().unwrap_or(0);
    for (clone, original, node_type) in clones {
        let mut data = graph_data(copy, clone, node_type);
        trace::resource(
            CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
            ctx,
            0,
            std::ptr::from_mut(&mut data).cast(),
        );
        let mut data = graph_data(copy, clone, node_type);
        data.originalGraph = g as CUgraph;
        data.originalNode = original as CUgraphNode;
        data.graphExec = e as CUgraphExec;
        trace::resource(
            CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
            ctx,
            0,
            std::ptr::from_mut(&mut data).cast(),
        );
    }
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out(ph_exec, e as CUgraphExec)? };
    report_graph(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, g, e);
    Ok(())
}

/// `CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
/// unsigned long long flags)` (`cuGraphInstantiate` in CUDA 13's `cuda.h`).
///
/// # Safety
/// `ph_exec` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    ph_exec: *mut CUgraphExec,
    h_graph: CUgraph,
    flags: c_ulonglong,
) -> CUresult {
    let p = cupti_sys::cuGraphInstantiateWithFlags_params {
        phGraphExec: ph_exec,
        hGraph: h_graph,
        flags,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
        c"cuGraphInstantiateWithFlags",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { instantiate(ph_exec, h_graph, flags) })
    )
}

/// `CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
/// CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)` (the CUDA 11 ABI):
/// on success the error node is NULL and the log empty.
///
/// # Safety
/// `ph_exec` and `ph_error_node` are NULL or writable; `log` holds `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate_v2(
    ph_exec: *mut CUgraphExec,
    h_graph: CUgraph,
    ph_error_node: *mut CUgraphNode,
    log: *mut c_char,
    size: usize,
) -> CUresult {
    let p = cupti_sys::cuGraphInstantiate_v2_params {
        phGraphExec: ph_exec,
        hGraph: h_graph,
        phErrorNode: ph_error_node,
        logBuffer: log,
        bufferSize: size,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
        c"cuGraphInstantiate_v2",
        p,
        code((|| {
            // SAFETY: the caller's pointers are NULL or writable.
            unsafe {
                instantiate(ph_exec, h_graph, 0)?;
                if !ph_error_node.is_null() {
                    ph_error_node.write(std::ptr::null_mut());
                }
                if !log.is_null() && size > 0 {
                    log.write(0);
                }
            }
            Ok(())
        })())
    )
}

/// `CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)`. Launching into
/// a capturing stream (a child-graph node), or into a stream waiting for a memory
/// value, is not simulated (`CUDA_ERROR_NOT_SUPPORTED`).
#[no_mangle]
pub extern "C" fn cuGraphLaunch(h_exec: CUgraphExec, h_stream: CUstream) -> CUresult {
    let p = cupti_sys::cuGraphLaunch_params {
        hGraph: h_exec,
        hStream: h_stream,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
        c"cuGraphLaunch",
        p,
        code((|| {
            let ops = {
                let mut d = registry::lock();
                let exec = d
                    .execs
                    .get(&(h_exec as usize))
                    .ok_or(CUDA_ERROR_INVALID_VALUE)?;
                let graph_id = exec.graph_id;
                let nodes = exec
                    .nodes
                    .iter()
                    .map(|n| d.nodes.get(n).map(|n| (n.id, n.op.clone())))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(CUDA_ERROR_INVALID_VALUE)?;
                let s = d.stream(h_stream)?;
                // A graph launched behind a memory-value wait is not simulated.
                if d.streams[&s].capture.is_some() || d.waits_on_blocked(s) {
                    return Err(CUDA_ERROR_NOT_SUPPORTED);
                }
                let mut ops = Vec::new();
                for (id, op) in &nodes {
                    ops.push(ops::run(&mut d, s, op, graph_id, *id)?);
                }
                ops
            };
            trace::gpu_ops(ops);
            Ok(())
        })())
    )
}

/// `CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)`.
#[no_mangle]
pub extern "C" fn cuGraphExecDestroy(h_exec: CUgraphExec) -> CUresult {
    let p = cupti_sys::cuGraphExecDestroy_params { hGraphExec: h_exec };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
        c"cuGraphExecDestroy",
        p,
        {
            let e = h_exec as usize;
            let Some(g) = registry::lock().execs.get(&e).map(|x| x.graph) else {
                return CUDA_ERROR_INVALID_VALUE;
            };
            report_graph(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, g, e);
            let mut d = registry::lock();
            if let Some(exec) = d.execs.remove(&e) {
                d.graphs.remove(&exec.clone);
                for n in exec.nodes {
                    d.nodes.remove(&n);
                }
            }
            CUDA_SUCCESS
        }
    )
}

/// Reports `GRAPH_DESTROY_STARTING`, then removes the graph and its nodes.
pub(crate) fn destroy_graph(g: usize) {
    report_graph(CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING, g, 0);
    let mut d = registry::lock();
    if let Some(graph) = d.graphs.remove(&g) {
        for n in graph.nodes {
            d.nodes.remove(&n);
        }
    }
}

/// `CUresult cuGraphDestroy(CUgraph hGraph)`.
#[no_mangle]
pub extern "C" fn cuGraphDestroy(h_graph: CUgraph) -> CUresult {
    let p = cupti_sys::cuGraphDestroy_params { hGraph: h_graph };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy,
        c"cuGraphDestroy",
        p,
        {
            if !registry::lock().graphs.contains_key(&(h_graph as usize)) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            destroy_graph(h_graph as usize);
            CUDA_SUCCESS
        }
    )
}
