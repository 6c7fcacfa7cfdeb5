//! Issuing GPU operations to a stream: a capturing stream records them as graph nodes
//! (nothing runs); otherwise the operation's data effect happens at once and it is
//! scheduled on the device timeline with its simulated duration.

use cupti_sys::CUgraphNodeType_enum::*;
use cupti_sys::CUpti_ActivityMemcpyKind::*;
use cupti_sys::CUpti_CallbackIdResource::*;
use cupti_sys::CUpti_GraphData;
use sim_abi::{OP_KERNEL, OP_MEMCPY, OP_MEMSET};
use sim_core::telemetry::Work;

use crate::consts::*;
use crate::model;
use crate::registry::{Driver, Node, OpSpec};
use crate::trace::{self, OpRecord};

/// What issuing produced, to report once the driver lock is released.
pub(crate) enum Issued {
    Ran(OpRecord),
    /// Queued behind a `cuStreamWaitValue32` whose value has not come: runs when it
    /// does (`api_stream_memop`).
    Deferred,
    Captured {
        ctx: usize,
        graph: usize,
        node: usize,
        node_type: u32,
    },
}

impl Issued {
    /// When the operation ends (0 when it was captured).
    pub(crate) fn end_ns(&self) -> u64 {
        match self {
            Issued::Ran(r) => r.op.end_ns,
            Issued::Captured { .. } => 0,
            Issued::Deferred => crate::registry::NEVER,
        }
    }
}

/// Reports what was issued: the GPU operation, or `GRAPHNODE_CREATED`.
pub(crate) fn report(issued: Vec<Issued>) {
    let mut ops = Vec::new();
    for i in issued {
        match i {
            Issued::Ran(r) => ops.push(r),
            Issued::Deferred => {}
            Issued::Captured {
                ctx,
                graph,
                node,
                node_type,
            } => {
                trace::gpu_ops(std::mem::take(&mut ops));
                let mut data = graph_data(graph, node, node_type);
                trace::resource(
                    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                    ctx,
                    0,
                    std::ptr::from_mut(&mut data).cast(),
                );
            }
        }
    }
    trace::gpu_ops(ops);
}

/// `CUpti_GraphData` for a node of `graph`.
pub(crate) fn graph_data(graph: usize, node: usize, node_type: u32) -> CUpti_GraphData {
    CUpti_GraphData {
        graph: graph as CUgraph,
        originalGraph: std::ptr::null_mut(),
        node: node as CUgraphNode,
        originalNode: std::ptr::null_mut(),
        nodeType: node_type,
        dependency: std::ptr::null_mut(),
        graphExec: std::ptr::null_mut(),
    }
}

pub(crate) fn node_type(op: &OpSpec) -> u32 {
    match op {
        OpSpec::Kernel(_) => CU_GRAPH_NODE_TYPE_KERNEL,
        OpSpec::Memcpy { .. } => CU_GRAPH_NODE_TYPE_MEMCPY,
        OpSpec::Memset { .. } => CU_GRAPH_NODE_TYPE_MEMSET,
    }
}

/// Adds a node running `op` to `graph`; returns its handle.
pub(crate) fn add_node(d: &mut Driver, graph: usize, op: OpSpec) -> usize {
    let h = d.new_handle();
    let id = d.new_node_id();
    d.nodes.insert(h, Node { id, graph, op });
    d.graphs.get_mut(&graph).expect("live graph").nodes.push(h);
    h
}

/// Issues `op` to stream `s` (a live stream).
pub(crate) fn issue(d: &mut Driver, s: usize, op: OpSpec) -> Result<Issued, CUresult> {
    let ctx = d.streams[&s].ctx;
    if let Some(c) = &d.streams[&s].capture {
        if c.invalidated {
            return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
        let graph = c.graph;
        let node_type = node_type(&op);
        let node = add_node(d, graph, op);
        if let Some(c) = d.streams.get_mut(&s).and_then(|s| s.capture.as_mut()) {
            *c.last_node = node;
        }
        return Ok(Issued::Captured {
            ctx,
            graph,
            node,
            node_type,
        });
    }
    if d.waits_on_blocked(s) {
        if d.is_null_stream(s) {
            // The legacy stream's implicit wait for a blocked stream is not modelled
            // (sim limitation): refused rather than run early.
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        crate::api_stream_memop::defer(d, s, op);
        return Ok(Issued::Deferred);
    }
    run(d, s, &op, 0, 0).map(Issued::Ran)
}

/// Runs `op` on stream `s` now: its data effect, then its place on the timeline.
/// `graph_id` / `node_id` are set for operations of a graph launch.
pub(crate) fn run(
    d: &mut Driver,
    s: usize,
    op: &OpSpec,
    graph_id: u32,
    node_id: u64,
) -> Result<OpRecord, CUresult> {
    let (duration, mut rec) = match op {
        OpSpec::Kernel(l) => {
            let (duration_ns, counters) = model::kernel_cost(l).map_err(|e| {
                eprintln!("simcuda: {e}");
                CUDA_ERROR_LAUNCH_FAILED
            })?;
            let mut r = OpRecord::new(OP_KERNEL, 0, 0);
            r.op.grid = l.grid.map(|v| v as i32);
            r.op.block = l.block.map(|v| v as i32);
            r.op.dynamic_shared_memory = l.shared as i32;
            r.op.static_shared_memory = l.kernel.static_shared as i32;
            r.op.registers_per_thread = l.kernel.registers as u16;
            r.name = Some(l.kernel.name.clone());
            r.counters = counters;
            (duration_ns, r)
        }
        OpSpec::Memcpy {
            dst,
            src,
            bytes,
            kind,
        } => {
            copy(d, *dst, *src, *bytes, kind.kind as u32)?;
            let rate = if kind.kind as u32 == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD {
                model::DEVICE_BYTES_PER_NS
            } else {
                model::HOST_LINK_BYTES_PER_NS
            };
            let mut r = OpRecord::new(OP_MEMCPY, 0, 0);
            r.op.bytes = *bytes;
            r.op.copy_kind = kind.kind;
            r.op.src_kind = kind.src;
            r.op.dst_kind = kind.dst;
            (model::transfer_ns(*bytes, rate), r)
        }
        OpSpec::Memset {
            dst,
            count,
            elem,
            value,
        } => {
            let bytes = count * u64::from(*elem);
            let buf = d.memory.range_mut(*dst, bytes)?;
            let pattern = &value.to_le_bytes()[..*elem as usize];
            for chunk in buf.chunks_exact_mut(*elem as usize) {
                chunk.copy_from_slice(pattern);
            }
            let mut r = OpRecord::new(OP_MEMSET, 0, 0);
            r.op.bytes = bytes;
            r.op.value = *value;
            // CUPTI's memset record names the memory set; every set the sim makes is
            // of device memory (`cuMemsetD*` accept device addresses only).
            r.op.dst_kind =
                cupti_sys::CUpti_ActivityMemoryKind::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE as u8;
            (model::transfer_ns(bytes, model::DEVICE_BYTES_PER_NS), r)
        }
    };
    let (start, end) = d.schedule(s, duration);
    let work = if rec.op.kind == OP_KERNEL {
        Work::Kernel
    } else {
        Work::Transfer
    };
    crate::telemetry::ran(d.stream_device(s), work, start, end);
    let ctx = d.streams[&s].ctx;
    rec.op.start_ns = start;
    rec.op.end_ns = end;
    rec.op.device_id = d.stream_device(s) as u32;
    rec.op.context_id = d.contexts.get(&ctx).map_or(0, |c| c.id);
    rec.op.stream_id = d.streams[&s].id;
    rec.op.graph_id = graph_id;
    rec.op.graph_node_id = node_id;
    Ok(rec)
}

/// Moves the bytes of a copy. Host addresses were promised valid by the client (at
/// the call, or for captured copies, whenever the graph runs).
fn copy(d: &mut Driver, dst: u64, src: u64, bytes: u64, kind: u32) -> Result<(), CUresult> {
    let n = bytes as usize;
    match kind {
        CUPTI_ACTIVITY_MEMCPY_KIND_HTOD => {
            let out = d.memory.range_mut(dst, bytes)?;
            // SAFETY: `src` is a host buffer of `bytes` bytes per the client's contract.
            let from = unsafe { std::slice::from_raw_parts(src as usize as *const u8, n) };
            out.copy_from_slice(from);
        }
        CUPTI_ACTIVITY_MEMCPY_KIND_DTOH => {
            let from = d.memory.range_mut(src, bytes)?;
            // SAFETY: `dst` is a writable host buffer of `bytes` bytes, distinct from
            // the driver's device buffers, per the client's contract.
            let out = unsafe { std::slice::from_raw_parts_mut(dst as usize as *mut u8, n) };
            out.copy_from_slice(from);
        }
        CUPTI_ACTIVITY_MEMCPY_KIND_DTOD => {
            let tmp = d.memory.range_mut(src, bytes)?.to_vec();
            d.memory.range_mut(dst, bytes)?.copy_from_slice(&tmp);
        }
        _ => {
            // SAFETY: both are host buffers of `bytes` bytes per the client's contract;
            // `copy` allows overlap.
            unsafe { std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, n) };
        }
    }
    Ok(())
}
