//! NVTX marker records counted at their NVTX call, so that markers still inside CUPTI
//! when the process ends abruptly are counted as lost (`wire::ring::Tally::markers`;
//! the collector counts the difference for a stream that did not finish).
//!
//! One marker record per call, as CUPTI's marker activity makes them (`cupti_activity.h`:
//! `CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS`, `_START`, `_END`): a mark, a push, a
//! pop that popped a range (it returns the level ended, -1 with nothing to pop), a
//! range start, and the end of a range started in this process (ids of open ranges
//! are kept, at most [`MAX_OPEN`]; the end of one not kept is not counted, so a
//! process with more open at once undercounts, never overcounts). That each of these
//! makes exactly one record on a real GPU is checked by `scripts/gpu-check.sh`
//! (docs/ARCHITECTURE.md, "Seen on a GPU").

use std::collections::HashSet;
use std::sync::Mutex;

use cupti::callback::{self, Subscriber};
use cupti::Cupti;
use cupti_sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
use cupti_sys::CUpti_NvtxData;
use cupti_sys::CUpti_nvtx_api_trace_cbid as cb;

use crate::log::debug;
use crate::nvtx_ranges::{params, returned};

/// Open start / end ranges kept, process-wide.
pub const MAX_OPEN: usize = 1 << 16;

/// Ids of the start / end ranges open now.
static OPEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

/// The NVTX calls that make a marker record.
const CBIDS: &[u32] = &[
    cb::CUPTI_CBID_NVTX_nvtxMarkA,
    cb::CUPTI_CBID_NVTX_nvtxMarkW,
    cb::CUPTI_CBID_NVTX_nvtxMarkEx,
    cb::CUPTI_CBID_NVTX_nvtxDomainMarkEx,
    cb::CUPTI_CBID_NVTX_nvtxRangePushA,
    cb::CUPTI_CBID_NVTX_nvtxRangePushW,
    cb::CUPTI_CBID_NVTX_nvtxRangePushEx,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    cb::CUPTI_CBID_NVTX_nvtxRangePop,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartA,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartW,
    cb::CUPTI_CBID_NVTX_nvtxRangeStartEx,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    cb::CUPTI_CBID_NVTX_nvtxRangeEnd,
    cb::CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
];

/// Subscribes to the NVTX calls that make markers. Without them no marker is counted
/// as made, so none is counted as lost (said once in the debug log).
pub fn enable(c: &Cupti, s: &Subscriber) {
    for &id in CBIDS {
        if let Err(e) = callback::enable_callback(c, s, CUPTI_CB_DOMAIN_NVTX, id) {
            debug!("NVTX markers still in CUPTI at an abrupt end go uncounted: callback {id}: {e}");
            return;
        }
    }
}

/// An NVTX callback (`CUPTI_CB_DOMAIN_NVTX`).
pub fn on_nvtx(cbid: u32, d: &CUpti_NvtxData) {
    // SAFETY: CUPTI passed `d` for NVTX callback `cbid`.
    if unsafe { makes_marker(cbid, d) } {
        crate::tally::marker_made();
    }
}

/// Whether the call made a marker record (module doc).
///
/// # Safety
/// `d` is what CUPTI passed for NVTX callback `cbid`.
unsafe fn makes_marker(cbid: u32, d: &CUpti_NvtxData) -> bool {
    use cupti_sys as s;
    let open = || OPEN.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the function's contract: each arm reads the params struct and return
    // value of its own callback id.
    unsafe {
        match cbid {
            cb::CUPTI_CBID_NVTX_nvtxRangePop | cb::CUPTI_CBID_NVTX_nvtxDomainRangePop => {
                returned::<i32>(d).is_some_and(|level| level >= 0)
            }
            cb::CUPTI_CBID_NVTX_nvtxRangeStartA
            | cb::CUPTI_CBID_NVTX_nvtxRangeStartW
            | cb::CUPTI_CBID_NVTX_nvtxRangeStartEx
            | cb::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => {
                if let Some(id) = returned::<u64>(d) {
                    let mut open = open();
                    let set = open.get_or_insert_with(HashSet::new);
                    if set.len() < MAX_OPEN {
                        set.insert(id);
                    }
                }
                true
            }
            cb::CUPTI_CBID_NVTX_nvtxRangeEnd => params::<s::nvtxRangeEnd_params>(d)
                .is_some_and(|p| open().as_mut().is_some_and(|o| o.remove(&p.id))),
            cb::CUPTI_CBID_NVTX_nvtxDomainRangeEnd => params::<s::nvtxDomainRangeEnd_params>(d)
                .is_some_and(|p| open().as_mut().is_some_and(|o| o.remove(&p.core.id))),
            _ => CBIDS.contains(&cbid),
        }
    }
}
