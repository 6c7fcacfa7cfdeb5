//! Contexts where a stream waits on a memory value (`cuStreamWaitValue32/64`, a
//! batch of stream memory operations): a kernel launched there may wait for work the
//! application issues after the launch (the host's write, a peer's), so with kernel
//! replay it is not measured. CUPTI replays a kernel inside its launch call, and one
//! that waits for later host work would make that call never return.
//!
//! Which stream waits, and whether its value was written, is not tracked (the
//! calls' parameters are not read): the whole context counts as waiting from the
//! call that enqueued a wait until `cuCtxSynchronize` returns there, when every wait
//! enqueued before it was met. Conservative: kernel replay measures nothing in such
//! a context meanwhile, which loses measurements and never hangs the program.
//!
//! Only followed with kernel replay (`GPUPROF_REPLAY=kernel`): [`CBIDS`] are then
//! enabled on top of the launch callbacks ([`cbids`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use cupti_sys::CUpti_ApiCallbackSite::*;
use cupti_sys::CUpti_CallbackData;
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;

/// The calls that enqueue a wait on a memory value.
const WAIT_CBIDS: &[u32] = &[
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz,
    // A batch may hold waits; its operations are not read.
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_ptsz,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2,
    cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2_ptsz,
];

/// The call that ends every wait of its context.
const SYNC: u32 = cbid::CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;

/// The driver calls followed: the waits, and `cuCtxSynchronize`.
pub fn cbids() -> impl Iterator<Item = u32> {
    WAIT_CBIDS.iter().copied().chain(std::iter::once(SYNC))
}

/// Contexts (CUPTI's unique ids) with a wait enqueued since their last
/// `cuCtxSynchronize`; a handful at most (one per context).
static WAITING: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Whether [`WAITING`] holds any: launches look at the lock only then.
static ANY: AtomicBool = AtomicBool::new(false);

/// Follows one of [`cbids`]; `false` for any other call (not handled here).
pub fn on_api(call: u32, d: &CUpti_CallbackData) -> bool {
    let wait = WAIT_CBIDS.contains(&call);
    if !wait && call != SYNC {
        return false;
    }
    let mut waiting = WAITING.lock().unwrap_or_else(|e| e.into_inner());
    if wait && d.callbackSite == CUPTI_API_ENTER {
        // From the call on: a launch made on another thread meanwhile counts too.
        if !waiting.contains(&d.contextUid) {
            waiting.push(d.contextUid);
        }
    } else if !wait && d.callbackSite == CUPTI_API_EXIT && cupti::callback::returned_success(d) {
        waiting.retain(|&c| c != d.contextUid);
    }
    ANY.store(!waiting.is_empty(), Ordering::Release);
    true
}

/// Whether a kernel launched in context `uid` may wait for work issued after it.
pub fn context_may_wait(uid: u32) -> bool {
    ANY.load(Ordering::Acquire)
        && WAITING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&uid)
}
