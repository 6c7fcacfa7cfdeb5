//! Turning CUPTI tracing on: the subscriber, the callbacks it enables, the activity
//! buffers and kinds. What the callbacks need afterwards is kept in `tracer.rs`.

use cupti::Cupti;
use cupti_sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
use cupti_sys::CUpti_ActivityKind as K;
use cupti_sys::CUpti_CallbackDomain::{
    CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RUNTIME_API,
};
use cupti_sys::CUpti_CallbackIdResource::{
    CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
    CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
};

use crate::activity;
use crate::callbacks::{self, LAUNCH_CBIDS};
use crate::decode::{self, Layouts};
use crate::log::{debug, warn};
use crate::options::{ApiTrace, Options};
use crate::tracer::{self, Tracer};
use cupti::callback;

/// Activity kinds recorded; the first is required.
const KINDS: &[(u32, &str)] = &[
    (
        K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        "CONCURRENT_KERNEL",
    ),
    (K::CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"),
    (K::CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"),
    (K::CUPTI_ACTIVITY_KIND_MARKER, "MARKER"),
    (K::CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD"),
    (K::CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE"),
    (K::CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT"),
];

/// Name under which we subscribe ("CUPTI for gpuprof").
const SUBSCRIBER_NAME: &core::ffi::CStr = c"gpuprof";

/// Subscribes and enables tracing. `Err` is the one warning to print (tracing is then
/// off; whatever was enabled is left inert behind the disabled state).
pub fn start(cupti: &'static Cupti, opts: &Options) -> Result<(), String> {
    let release = cupti.release().name;
    let layouts = decode::for_release(release)
        .ok_or_else(|| format!("no activity record decoder for CUPTI {release}"))?;
    check_sizes(cupti, layouts)?;
    activity::make_pool(opts.cupti_buffer_size, opts.cupti_buffers)?;
    let subscriber = callback::subscribe(cupti, Some(callbacks::on_callback), SUBSCRIBER_NAME)
        .map_err(|e| {
            if e.code.0 == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
                format!(
                    "CUPTI is already in use by {}, which does not share it ({})",
                    e.holder.as_deref().unwrap_or("another CUPTI client"),
                    e.code
                )
            } else {
                format!("cuptiSubscribe failed: {}", e.code)
            }
        })?;
    crate::counters::configure(opts);
    crate::capture_window::configure(opts);
    crate::gemm::install(opts);
    crate::api_calls::configure(opts);
    let tracer = tracer::set(Tracer {
        cupti,
        subscriber,
        layouts,
    });
    let result = enable(tracer);
    if result.is_err() {
        if let Err(e) = callback::unsubscribe(cupti, &tracer.subscriber) {
            debug!("cuptiUnsubscribe: {e}");
        }
    }
    result
}

fn enable(t: &Tracer) -> Result<(), String> {
    let (c, s) = (t.cupti, &t.subscriber);
    callback::enable_callback(
        c,
        s,
        CUPTI_CB_DOMAIN_RESOURCE,
        CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
    )
    .map_err(|e| format!("cannot enable CUPTI's context-created callback: {e}"))?;
    // Counters bound to a context end before it goes (`counters::on_context_destroying`).
    if let Err(e) = callback::enable_callback(
        c,
        s,
        CUPTI_CB_DOMAIN_RESOURCE,
        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
    ) {
        warn!("cannot enable CUPTI's context-destroy callback ({e}); counters of a destroyed context are not ended first");
    }
    // Graph nodes tie kernels replayed from CUDA graphs to the launches (and GEMM
    // calls) that created them at capture time; graphs and executable graphs tell
    // which graph launches may be measured (`counters::graphs`).
    for cbid in [
        CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
        CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
        CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
        CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
    ] {
        if let Err(e) = callback::enable_callback(c, s, CUPTI_CB_DOMAIN_RESOURCE, cbid) {
            warn!("cannot enable CUPTI's graph-node callback {cbid} ({e}); GEMM shapes of kernels in CUDA graphs will be missing");
        }
    }
    for (i, cbid) in LAUNCH_CBIDS.iter().enumerate() {
        if let Err(e) = callback::enable_callback(c, s, CUPTI_CB_DOMAIN_DRIVER_API, *cbid) {
            if i == 0 {
                return Err(format!(
                    "cannot enable CUPTI's cuLaunchKernel callback: {e}"
                ));
            }
            debug!("driver callback {cbid} not enabled: {e}");
        }
    }
    enable_api_calls(c, s)?;
    if crate::counters::follows_waits() {
        for cbid in crate::counters::waits::cbids() {
            if let Err(e) = callback::enable_callback(c, s, CUPTI_CB_DOMAIN_DRIVER_API, cbid) {
                // Then no launch is kernel-replayed: one may wait on a value.
                crate::counters::fail(format!(
                    "cannot follow stream waits (driver callback {cbid}: {e}), which kernel \
                     replay must not replay"
                ));
                break;
            }
        }
    }
    if crate::capture_window::active() {
        // Copies and sets are decided at their API call too (`capture_window.rs`).
        callback::enable_domain(c, s, CUPTI_CB_DOMAIN_DRIVER_API).map_err(|e| {
            format!("cannot enable CUPTI's driver-API callbacks for the capture window: {e}")
        })?;
    }
    if let Err(e) = crate::nvtx_ranges::enable(c, s) {
        if crate::nvtx_ranges::name(crate::nvtx_ranges::Watch::Counters).is_some() {
            crate::counters::fail(format!("{e}: GPUPROF_COUNTER_RANGE cannot be followed"));
        }
        if crate::nvtx_ranges::name(crate::nvtx_ranges::Watch::Capture).is_some() {
            warn!("{e}: the capture range never opens, nothing is recorded");
        }
    }
    // Without system thread ids, NVTX push/pop ranges could not be matched with the
    // launches made inside them; tracing still works, so this is not fatal.
    if let Err(e) = cupti::activity::use_system_thread_ids(c, s) {
        warn!("cannot make CUPTI report system thread ids ({e}); NVTX ranges will show no kernels");
    }
    cupti::activity::register_buffer_callbacks(c, s, &activity::callbacks())
        .map_err(|e| format!("cannot register CUPTI activity buffers: {e}"))?;
    let mut refused = Vec::new();
    for (i, (kind, name)) in KINDS.iter().enumerate() {
        match cupti::activity::activity_enable(c, s, *kind) {
            Err(e) if i == 0 => {
                return Err(format!("CUPTI refused kernel activity records: {e}"));
            }
            Err(e) => refused.push(format!("{name} ({e})")),
            // Markers are counted at their NVTX call only when they are recorded.
            Ok(()) if *kind == K::CUPTI_ACTIVITY_KIND_MARKER => {
                crate::nvtx_markers::enable(c, s);
            }
            Ok(()) => {}
        }
    }
    if !refused.is_empty() {
        warn!(
            "CUPTI refused activity kinds {}; those records are missing",
            refused.join(", ")
        );
    }
    Ok(())
}

/// The driver and runtime callbacks of the API calls traced one by one
/// (`api_calls.rs`), and the runtime's launches (`runtime_calls.rs`). A callback id
/// this CUPTI does not know is left out (the call is then not traced). The runtime
/// domain is enabled in every process: one without the CUDA runtime (or with it linked
/// statically) makes no runtime callbacks, and costs nothing for it.
fn enable_api_calls(c: &Cupti, s: &cupti::callback::Subscriber) -> Result<(), String> {
    enable_runtime_calls(c, s);
    match crate::api_calls::mode() {
        ApiTrace::Off => {}
        ApiTrace::Sync => {
            // Every driver call: the others are counted (`api_tally.rs`).
            if let Err(e) = callback::enable_domain(c, s, CUPTI_CB_DOMAIN_DRIVER_API) {
                warn!("cannot enable CUPTI's driver-API callbacks ({e}); the calls not traced one by one are not counted");
                for cbid in crate::api_calls::TRACED {
                    if let Err(e) =
                        callback::enable_callback(c, s, CUPTI_CB_DOMAIN_DRIVER_API, *cbid)
                    {
                        debug!("driver callback {cbid} not enabled: {e}");
                    }
                }
            }
        }
        ApiTrace::All => {
            callback::enable_domain(c, s, CUPTI_CB_DOMAIN_DRIVER_API).map_err(|e| {
                format!("cannot enable CUPTI's driver-API callbacks for GPUPROF_API=all: {e}")
            })?;
        }
    }
    Ok(())
}

/// The runtime domain: its launches always; every call with `GPUPROF_API=sync` or
/// `all` (else, or when CUPTI refuses the whole domain, the traced ones only).
fn enable_runtime_calls(c: &Cupti, s: &cupti::callback::Subscriber) {
    let one_by_one = |cbids: &[u32]| {
        for cbid in cbids {
            if let Err(e) = callback::enable_callback(c, s, CUPTI_CB_DOMAIN_RUNTIME_API, *cbid) {
                debug!("runtime callback {cbid} not enabled: {e}");
            }
        }
    };
    let mode = crate::api_calls::mode();
    if mode != ApiTrace::Off {
        match callback::enable_domain(c, s, CUPTI_CB_DOMAIN_RUNTIME_API) {
            Ok(()) => return,
            Err(e) => {
                warn!("cannot enable CUPTI's runtime-API callbacks ({e}); of the CUDA runtime's calls only launches, copies, sets, allocations, event calls and synchronisation are recorded");
                one_by_one(crate::api_calls::TRACED_RUNTIME);
            }
        }
    }
    one_by_one(crate::runtime_calls::LAUNCHES);
}

/// From 13.2 CUPTI says how large each record it writes is: it must be the size of
/// the release's layout we decode with, or the layout is wrong and tracing stays off.
fn check_sizes(c: &Cupti, l: &dyn Layouts) -> Result<(), String> {
    for (kind, name) in KINDS {
        let (Some(theirs), Some(ours)) = (cupti::activity::struct_size(c, *kind), l.size_of(*kind))
        else {
            continue;
        };
        if theirs != ours {
            return Err(format!(
                "CUPTI {} writes {theirs}-byte {name} records, but the {} layout is {ours} bytes",
                c.api_version(),
                l.release()
            ));
        }
    }
    Ok(())
}
