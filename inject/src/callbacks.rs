//! The CUPTI callback subscriber: driver- and runtime-API launches (which thread
//! launched what, and when), the other API calls (`api_calls.rs`, `api_tally.rs`,
//! `runtime_calls.rs`) and resource events (a context was created: describe its
//! device).
//! Launches and context creation also drive the per-kernel counters (`counters.rs`).
//!
//! These run on application threads, inside the application's CUDA calls: O(1) work,
//! no locks, no allocation on the launch path, `errno` preserved, nothing unwinds out.

use core::ffi::c_void;

use cupti_sys::CUpti_ApiCallbackSite::{CUPTI_API_ENTER, CUPTI_API_EXIT};
use cupti_sys::CUpti_CallbackDomain::{
    CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_NVTX, CUPTI_CB_DOMAIN_RESOURCE,
    CUPTI_CB_DOMAIN_RUNTIME_API,
};
use cupti_sys::CUpti_CallbackIdResource::{
    CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
    CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
};
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
use cupti_sys::{CUpti_CallbackData, CUpti_NvtxData, CUpti_ResourceData};
use wire::{ContextInfo, Launch, Record};

use crate::guard;
use crate::handoff::{self, CONTEXTS, DEVICES};
use crate::log::warn;
use crate::state::{self, State};
use cupti::callback;

use crate::{
    api_calls, api_tally, capture_window, counters, device, gemm, nvtx_markers, nvtx_ranges,
    runtime_calls, tally, tracer,
};

/// The driver-API calls that launch GPU work whose kernels we attribute.
pub const LAUNCH_CBIDS: &[u32] = &[
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
];

use crate::thread::id as thread_id;

/// The subscriber callback (`CUpti_CallbackFunc`).
pub unsafe extern "C" fn on_callback(
    _userdata: *mut c_void,
    domain: u32,
    cbid: u32,
    data: *const c_void,
) {
    if data.is_null() || state::state() != State::Running {
        return;
    }
    let _errno = guard::Errno::save();
    let Some(_entered) = guard::enter() else {
        return;
    };
    guard::guarded("a CUPTI callback", (), || match domain {
        CUPTI_CB_DOMAIN_DRIVER_API => {
            // SAFETY: for the driver-API domain CUPTI passes a CUpti_CallbackData.
            on_api(cbid, unsafe { &*(data as *const CUpti_CallbackData) })
        }
        CUPTI_CB_DOMAIN_RUNTIME_API => {
            // SAFETY: for the runtime-API domain CUPTI passes a CUpti_CallbackData.
            on_runtime_api(cbid, unsafe { &*(data as *const CUpti_CallbackData) })
        }
        CUPTI_CB_DOMAIN_RESOURCE => {
            // SAFETY: for the resource domain CUPTI passes a CUpti_ResourceData.
            let r = unsafe { &*(data as *const CUpti_ResourceData) };
            match cbid {
                CUPTI_CBID_RESOURCE_CONTEXT_CREATED => on_context_created(r),
                CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING => on_context_destroying(r),
                CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED => {
                    tally::graph_node_created();
                    if let Some(t) = tracer::get() {
                        gemm::on_graph_node_created(t.cupti, r);
                    }
                    counters::on_graph_resource(cbid, r);
                }
                CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED => {
                    if let Some(t) = tracer::get() {
                        gemm::on_graph_node_cloned(t.cupti, r);
                    }
                    counters::on_graph_resource(cbid, r);
                }
                CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED
                | CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING
                | CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING => {
                    counters::on_graph_resource(cbid, r)
                }
                _ => {}
            }
        }
        CUPTI_CB_DOMAIN_NVTX => {
            // SAFETY: for the NVTX domain CUPTI passes a CUpti_NvtxData.
            let d = unsafe { &*(data as *const CUpti_NvtxData) };
            nvtx_markers::on_nvtx(cbid, d);
            nvtx_ranges::on_nvtx(cbid, d);
        }
        _ => {}
    });
}

fn on_api(cbid: u32, d: &CUpti_CallbackData) {
    let Some(t) = tracer::get() else { return };
    if !LAUNCH_CBIDS.contains(&cbid) {
        counters::waits::on_api(cbid, d);
        // With a capture window the whole driver domain is on: decide every call.
        if capture_window::active() && !capture_window::on_api(cbid, d, false) {
            return;
        }
        // A call the runtime makes inside one of its own is the runtime call's.
        if runtime_calls::inside() {
            return;
        }
        if api_calls::traced(cbid, false) {
            api_calls::on_api(t, cbid, false, d, thread_id());
        } else if api_calls::counts_others() {
            api_tally::on_api(t, cbid, false, d, thread_id());
        }
        return;
    }
    // Launches made inside the window only.
    if capture_window::active() && !capture_window::on_api(cbid, d, true) {
        return;
    }
    let slot = d.correlationData;
    let graph_launch = counters::is_graph_launch(cbid);
    if d.callbackSite == CUPTI_API_ENTER {
        // Before the timestamp: starting a counter range is not the launch's time.
        counters::on_launch_enter(t.cupti, cbid, d, gemm::shape_key());
    }
    // A runtime launch's record stands for the driver launch it makes: no time of its
    // own needed (`runtime_calls.rs`).
    let by_runtime = runtime_calls::in_launch();
    let now = if by_runtime {
        0
    } else {
        callback::timestamp(t.cupti)
    };
    if d.callbackSite == CUPTI_API_ENTER {
        tally::launch_enter();
        // A graph node created inside this call is this kernel's.
        counters::graphs::note_launch(if graph_launch {
            std::ptr::null()
        } else {
            d.symbolName
        });
        gemm::on_launch_enter(d.correlationId, graph_launch);
        if !slot.is_null() && !by_runtime {
            // SAFETY: CUPTI gives each API call an 8-byte slot kept from enter to exit.
            unsafe { *slot = now };
        }
    } else if d.callbackSite == CUPTI_API_EXIT {
        gemm::on_launch_exit();
        counters::graphs::note_launch(std::ptr::null());
        if tally::single_kernel(cbid) {
            tally::launch_exit(callback::returned_success(d));
        }
        let start = if slot.is_null() {
            now
        } else {
            // SAFETY: as above; it holds what we stored at enter.
            unsafe { *slot }
        };
        // A runtime launch sends the record of its own call.
        if !runtime_calls::claim_driver_launch(d.correlationId) {
            handoff::send(Record::Launch(Launch {
                correlation_id: d.correlationId,
                cbid,
                runtime: false,
                thread_id: thread_id(),
                start_ns: start,
                end_ns: now,
            }));
        }
        counters::on_launch_exit(d);
    }
}

fn on_runtime_api(cbid: u32, d: &CUpti_CallbackData) {
    let launch = runtime_calls::LAUNCHES.contains(&cbid);
    runtime_calls::track(d, launch);
    let Some(t) = tracer::get() else { return };
    if capture_window::active() && !capture_window::on_runtime_api(d) {
        return;
    }
    if launch {
        runtime_calls::on_launch(t, cbid, d, thread_id());
    } else if api_calls::traced(cbid, true) {
        api_calls::on_api(t, cbid, true, d, thread_id());
    } else if api_calls::counts_others() {
        api_tally::on_api(t, cbid, true, d, thread_id());
    }
}

/// A context is about to be destroyed: what is bound to it ends first.
fn on_context_destroying(r: &CUpti_ResourceData) {
    let Some(t) = tracer::get() else { return };
    // SAFETY: the context CUPTI passed to the context-destroy resource callback,
    // still valid while the callback runs.
    match unsafe { callback::context_ids(t.cupti, r.context) } {
        Ok((context_id, device_id)) => {
            counters::on_context_destroying(t.cupti, context_id, device_id)
        }
        Err(e) => crate::log::debug!("a context is destroyed but CUPTI cannot name it: {e}"),
    }
}

fn on_context_created(r: &CUpti_ResourceData) {
    let Some(t) = tracer::get() else { return };
    // SAFETY: the context CUPTI passed to the context-created resource callback.
    let (context_id, device_id) = match unsafe { callback::context_ids(t.cupti, r.context) } {
        Ok(ids) => ids,
        Err(e) => {
            crate::log::debug!("a context was created but CUPTI cannot name it: {e}");
            return;
        }
    };
    if DEVICES.claim(device_id) {
        match device::describe(device_id) {
            Ok(d) => {
                handoff::send(Record::Device(d));
            }
            Err(e) => {
                // Let CUPTI's device record describe it instead.
                warn!("cannot describe GPU {device_id} from the driver ({e}); its memory clock and bus width are unknown");
                DEVICES.unclaim(device_id);
            }
        }
    }
    if CONTEXTS.claim(context_id) {
        handoff::send(Record::Context(ContextInfo {
            context_id,
            device_id,
        }));
    }
    counters::on_context_created(t.cupti, r.context, context_id, device_id);
    // Libraries loaded since start-up (cuBLAS is often loaded with its first handle,
    // which creates or needs a context).
    gemm::rescan();
}
