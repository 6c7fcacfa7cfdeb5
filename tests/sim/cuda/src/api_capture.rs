//! Stream capture: `cuStreamBeginCapture_v2`, `cuStreamEndCapture`,
//! `cuStreamIsCapturing`, `cuStreamGetCaptureInfo_v2` / `_v3`. Work issued to a
//! capturing stream becomes nodes of the capture's graph (see `ops::issue`).

use std::ffi::c_uint;

use cupti_sys::CUpti_CallbackIdResource::*;

use crate::api_graph::{destroy_graph, new_graph, report_graph};
use crate::consts::capture::*;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::registry::{self, Capture};

/// `CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)`: the
/// legacy NULL stream cannot capture (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`); a
/// stream already capturing is `CUDA_ERROR_ILLEGAL_STATE`.
#[no_mangle]
pub extern "C" fn cuStreamBeginCapture_v2(h_stream: CUstream, mode: c_uint) -> CUresult {
    let p = cupti_sys::cuStreamBeginCapture_v2_params {
        hStream: h_stream,
        mode: mode as _,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
        c"cuStreamBeginCapture_v2",
        p,
        code((|| {
            if mode > MODE_RELAXED {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let g = {
                let mut d = registry::lock();
                let s = d.stream(h_stream)?;
                if d.is_null_stream(s) {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
                }
                if d.streams[&s].capture.is_some() {
                    return Err(CUDA_ERROR_ILLEGAL_STATE);
                }
                let g = new_graph(&mut d);
                let id = d.new_capture_id();
                d.streams.get_mut(&s).expect("checked").capture = Some(Capture {
                    id,
                    graph: g,
                    mode,
                    thread: std::thread::current().id(),
                    invalidated: false,
                    last_node: Box::new(0),
                });
                g
            };
            report_graph(CUPTI_CBID_RESOURCE_GRAPH_CREATED, g, 0);
            Ok(())
        })())
    )
}

/// `CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)`.
///
/// # Safety
/// `ph_graph` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(
    h_stream: CUstream,
    ph_graph: *mut CUgraph,
) -> CUresult {
    let p = cupti_sys::cuStreamEndCapture_params {
        hStream: h_stream,
        phGraph: ph_graph,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
        c"cuStreamEndCapture",
        p,
        code((|| {
            if ph_graph.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let c = {
                let mut d = registry::lock();
                let s = d.stream(h_stream)?;
                let st = d.streams.get_mut(&s).expect("checked");
                let c = st.capture.as_ref().ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
                if c.mode != MODE_RELAXED && c.thread != std::thread::current().id() {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
                }
                st.capture.take().expect("checked")
            };
            if c.invalidated {
                // SAFETY: non-NULL and writable per this function's contract.
                unsafe { out(ph_graph, std::ptr::null_mut())? };
                destroy_graph(c.graph);
                return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            }
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(ph_graph, c.graph as CUgraph) }
        })())
    )
}

/// `CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)`.
///
/// # Safety
/// `status` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing(h_stream: CUstream, status: *mut c_uint) -> CUresult {
    let p = cupti_sys::cuStreamIsCapturing_params {
        hStream: h_stream,
        captureStatus: status.cast(),
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
        c"cuStreamIsCapturing",
        p,
        code((|| {
            let d = registry::lock();
            let s = d.stream(h_stream)?;
            let v = match &d.streams[&s].capture {
                None => STATUS_NONE,
                Some(c) if c.invalidated => STATUS_INVALIDATED,
                Some(_) => STATUS_ACTIVE,
            };
            // SAFETY: the caller's pointer is NULL or writable.
            unsafe { out(status, v) }
        })())
    )
}

/// The shared body of `cuStreamGetCaptureInfo_v2` / `_v3`; every output is optional.
/// The dependency array (the last captured node) stays valid until the next capture
/// call on the stream.
///
/// # Safety
/// Each pointer is NULL or writable.
unsafe fn capture_info(
    h_stream: CUstream,
    status: *mut c_uint,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const cupti_sys::CUgraphEdgeData,
    num_deps: *mut usize,
) -> Result<(), CUresult> {
    let d = registry::lock();
    let s = d.stream(h_stream)?;
    let c = d.streams[&s].capture.as_ref();
    let st = match c {
        None => STATUS_NONE,
        Some(c) if c.invalidated => STATUS_INVALIDATED,
        Some(_) => STATUS_ACTIVE,
    };
    if status.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: each pointer is checked for NULL and writable per this function's contract.
    unsafe {
        out(status, st)?;
        if let Some(c) = c.filter(|_| st == STATUS_ACTIVE) {
            let n = usize::from(*c.last_node != 0);
            if !id.is_null() {
                id.write(c.id);
            }
            if !graph.is_null() {
                graph.write(c.graph as CUgraph);
            }
            if !deps.is_null() {
                let p: *const usize = &*c.last_node;
                deps.write(if n == 0 { std::ptr::null() } else { p.cast() });
            }
            if !edges.is_null() {
                edges.write(std::ptr::null());
            }
            if !num_deps.is_null() {
                num_deps.write(n);
            }
        }
    }
    Ok(())
}

/// `CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus
/// *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode
/// **dependencies_out, size_t *numDependencies_out)`.
///
/// # Safety
/// Each pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h_stream: CUstream,
    status: *mut c_uint,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    num_deps: *mut usize,
) -> CUresult {
    let p = cupti_sys::cuStreamGetCaptureInfo_v2_params {
        hStream: h_stream,
        captureStatus_out: status.cast(),
        id_out: id,
        graph_out: graph,
        dependencies_out: deps,
        numDependencies_out: num_deps,
    };
    // SAFETY: the caller's pointers are NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2,
        c"cuStreamGetCaptureInfo_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe {
            capture_info(
                h_stream,
                status,
                id,
                graph,
                deps,
                std::ptr::null_mut(),
                num_deps,
            )
        })
    )
}

/// `CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus
/// *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode
/// **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t
/// *numDependencies_out)` (`cuStreamGetCaptureInfo` in CUDA 13's `cuda.h`): all edges
/// are default edges, so `*edgeData_out` is NULL.
///
/// # Safety
/// Each pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h_stream: CUstream,
    status: *mut c_uint,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const cupti_sys::CUgraphEdgeData,
    num_deps: *mut usize,
) -> CUresult {
    let p = cupti_sys::cuStreamGetCaptureInfo_v3_params {
        hStream: h_stream,
        captureStatus_out: status.cast(),
        id_out: id,
        graph_out: graph,
        dependencies_out: deps,
        edgeData_out: edges,
        numDependencies_out: num_deps,
    };
    // SAFETY: the caller's pointers are NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3,
        c"cuStreamGetCaptureInfo_v3",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { capture_info(h_stream, status, id, graph, deps, edges, num_deps) })
    )
}
