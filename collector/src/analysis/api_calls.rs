//! CPU-side time in the CUDA calls traced one by one (`Record::ApiCall`: copies,
//! sets, allocations and frees, event records and waits, synchronisation), per thread
//! and per NVTX range name.
//!
//! A call counts for a range name when an instance of that name encloses it: a
//! push/pop range of its thread open at its API entry, or a start/end range of its
//! process open then ([`super::range_cover::RangeCover::enclosing`]); once per name,
//! however many instances of the name enclose it. Calls wait in the join window as
//! kernels do, so that the markers of their part are in before they are placed.
//!
//! Launch calls (`Record::Launch`, the driver's `cuLaunchKernel` or, for a program on
//! the CUDA runtime, its `cudaLaunchKernel`) are summed per thread and function and
//! placed in ranges the same way, as [`CallClass::Launch`], keyed by callback id (no
//! name per launch); whether they failed is not recorded.

use std::collections::BTreeMap;

use ahash::AHashMap;
use serde::Serialize;
use wire::{ApiCall, Launch};

use super::chunked_queue::ChunkedQueue;
use super::range_cover::RangeCover;

/// What a traced call does, by its function's name ([`CallClass::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallClass {
    /// Kernel and graph launches: `cuLaunchKernel*`, `cudaLaunchKernel*`,
    /// `cu*LaunchCooperativeKernel*`, `cuGraphLaunch`, `cudaGraphLaunch`.
    Launch,
    /// Waits on the host for the GPU: `cu*Synchronize*`, `cuda*Synchronize*`.
    Synchronize,
    /// `cuMemcpy*`, `cudaMemcpy*`.
    Copy,
    /// `cuMemset*`, `cudaMemset*`.
    Set,
    /// Allocations and frees of device, host and managed memory.
    Memory,
    /// Event records and stream waits (on an event or a memory value): enqueued, the
    /// host does not wait.
    EventWait,
    /// Any other call (`GPUPROF_API=all`).
    Other,
}

impl CallClass {
    /// Every class, in the order of the report's columns.
    pub const ALL: [CallClass; 7] = [
        CallClass::Launch,
        CallClass::Synchronize,
        CallClass::Copy,
        CallClass::Set,
        CallClass::Memory,
        CallClass::EventWait,
        CallClass::Other,
    ];

    /// The class of the call named `name` (driver `cu*` or runtime `cuda*`).
    pub fn of(name: &str) -> CallClass {
        let f = name
            .strip_prefix("cuda")
            .or_else(|| name.strip_prefix("cu"))
            .unwrap_or(name);
        if f == "Launch"
            || f.starts_with("Launch_")
            || f.starts_with("LaunchKernel")
            || f.starts_with("LaunchCooperativeKernel")
            || f.starts_with("GraphLaunch")
        {
            CallClass::Launch
        } else if f.contains("Synchronize") {
            CallClass::Synchronize
        } else if f.starts_with("Memcpy") {
            CallClass::Copy
        } else if f.starts_with("Memset") {
            CallClass::Set
        } else if f.starts_with("MemAlloc")
            || f.starts_with("MemFree")
            || f.starts_with("MemHostAlloc")
            || f.starts_with("Malloc")
            || f.starts_with("Free")
            || f.starts_with("HostAlloc")
        {
            CallClass::Memory
        } else if f.starts_with("EventRecord") || f.starts_with("StreamWait") {
            CallClass::EventWait
        } else {
            CallClass::Other
        }
    }

    /// The report's name for the class.
    pub fn label(self) -> &'static str {
        match self {
            CallClass::Launch => "launch",
            CallClass::Synchronize => "synchronize",
            CallClass::Copy => "copy",
            CallClass::Set => "set",
            CallClass::Memory => "alloc/free",
            CallClass::EventWait => "event/wait",
            CallClass::Other => "other",
        }
    }
}

/// Calls of one kind summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallTally {
    pub calls: u64,
    /// Calls that returned an error (not recorded for launches: 0 there).
    pub failed: u64,
    /// Sum of their durations (API entry to exit).
    pub total_ns: u64,
    pub max_ns: u64,
    /// Bytes copied, set or allocated.
    pub bytes: u64,
}

impl CallTally {
    fn add(&mut self, c: &ApiCall) {
        self.add_span(c.start_ns, c.end_ns, c.ok, c.bytes);
    }

    fn add_span(&mut self, start_ns: u64, end_ns: u64, ok: bool, bytes: u64) {
        let ns = end_ns.saturating_sub(start_ns);
        self.calls += 1;
        self.failed += u64::from(!ok);
        self.total_ns = self.total_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    pub fn merge(&mut self, o: &CallTally) {
        self.calls += o.calls;
        self.failed += o.failed;
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.bytes = self.bytes.saturating_add(o.bytes);
    }
}

/// The totals, keyed by function name.
#[derive(Debug, Default)]
pub struct ApiCallTotals {
    /// Per (process key, thread, function).
    pub by_thread: BTreeMap<(u32, u64, String), CallTally>,
    /// Per (range name index in [`RangeCover::names`], function).
    pub by_range: BTreeMap<(usize, String), CallTally>,
    /// The calls counted, not traced (`ApiTally` records): per (process key, thread,
    /// the function's string id), calls and summed duration. Their names are
    /// resolved at the end; they have no time of their own, so no range.
    pub counted: BTreeMap<(u32, u64, u32), (u64, u64)>,
    /// Launch calls per (process key, thread, cbid, runtime).
    pub launches: AHashMap<(u32, u64, u32, bool), CallTally>,
    /// Launch calls per (range name index, cbid, runtime).
    pub launch_ranges: AHashMap<(usize, u32, bool), CallTally>,
    /// Calls waiting for their part's markers: (part, process key, call).
    waiting: ChunkedQueue<(usize, u32, ApiCall)>,
    /// Launch calls waiting for their part's markers (as many as kernels: kept small).
    waiting_launches: ChunkedQueue<WaitingLaunch>,
    /// The range names enclosing the call being placed (kept from call to call).
    names: Vec<usize>,
}

/// What placing a launch call needs of it.
#[derive(Debug)]
struct WaitingLaunch {
    part: u32,
    pid: u32,
    thread_id: u64,
    start_ns: u64,
    end_ns: u64,
    cbid: u32,
    runtime: bool,
}

impl ApiCallTotals {
    /// A call of part `part`, placed once that part has waited ([`Self::place`]).
    pub fn push(&mut self, part: usize, pid: u32, call: ApiCall) {
        self.waiting.push_back((part, pid, call));
    }

    /// A launch call of part `part`: summed by thread at once, placed in ranges once
    /// that part has waited.
    pub fn launch(&mut self, part: usize, pid: u32, l: &Launch) {
        self.launches
            .entry((pid, l.thread_id, l.cbid, l.runtime))
            .or_default()
            .add_span(l.start_ns, l.end_ns, true, 0);
        self.waiting_launches.push_back(WaitingLaunch {
            part: u32::try_from(part).unwrap_or(u32::MAX),
            pid,
            thread_id: l.thread_id,
            start_ns: l.start_ns,
            end_ns: l.end_ns,
            cbid: l.cbid,
            runtime: l.runtime,
        });
    }

    /// Counted calls of one thread and function.
    pub fn count(&mut self, pid: u32, t: &wire::ApiTally) {
        let e = self.counted.entry((pid, t.thread_id, t.name)).or_default();
        e.0 = e.0.saturating_add(t.calls);
        e.1 = e.1.saturating_add(t.total_ns);
    }

    /// Calls waiting now.
    pub fn held(&self) -> usize {
        self.waiting.len() + self.waiting_launches.len()
    }

    /// The range names enclosing a call's entry, once each, into `self.names`.
    fn place_names(&mut self, ranges: &RangeCover, pid: u32, thread: u64, start_ns: u64) {
        ranges.enclosing_names(pid, Some((thread, start_ns)), start_ns, &mut self.names);
        self.names.sort_unstable();
        self.names.dedup();
    }

    /// Places the waiting calls of the parts for which `ready(part)` holds (every
    /// one when `ready` always does), in arrival order; `name` resolves a call's
    /// interned function name.
    pub fn place(
        &mut self,
        ranges: &RangeCover,
        ready: impl Fn(usize) -> bool,
        name: impl Fn(u32, u32) -> String,
    ) {
        while let Some((part, _, _)) = self.waiting.front() {
            if !ready(*part) {
                break;
            }
            let (_, pid, c) = self.waiting.pop_front().expect("a front call");
            let function = name(pid, c.name);
            self.by_thread
                .entry((pid, c.thread_id, function.clone()))
                .or_default()
                .add(&c);
            self.place_names(ranges, pid, c.thread_id, c.start_ns);
            for &n in &self.names {
                self.by_range
                    .entry((n, function.clone()))
                    .or_default()
                    .add(&c);
            }
        }
        while let Some(l) = self.waiting_launches.front() {
            if !ready(l.part as usize) {
                break;
            }
            let l = self.waiting_launches.pop_front().expect("a front launch");
            self.place_names(ranges, l.pid, l.thread_id, l.start_ns);
            for &n in &self.names {
                self.launch_ranges
                    .entry((n, l.cbid, l.runtime))
                    .or_default()
                    .add_span(l.start_ns, l.end_ns, true, 0);
            }
        }
    }
}

/// One row of the per-thread table: a function's calls on one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadCalls {
    pub pid: u32,
    /// The session the process is in, when several are read together (0 otherwise).
    #[serde(skip)]
    pub session: usize,
    pub thread_id: u64,
    pub function: String,
    pub class: CallClass,
    /// Traced one by one (`false`: counted, so only calls and their time are known).
    pub traced: bool,
    #[serde(flatten)]
    pub tally: CallTally,
}

/// One row of the per-range table: a function's calls inside a range name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeCalls {
    /// Empty for the default domain.
    pub domain: String,
    pub range: String,
    /// The range name's wall time (its closed instances' durations summed).
    pub range_wall_ns: u64,
    pub function: String,
    pub class: CallClass,
    #[serde(flatten)]
    pub tally: CallTally,
}

/// The traced calls as the report shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApiCallSummary {
    /// By process, thread, then total time (longest first) and function.
    pub by_thread: Vec<ThreadCalls>,
    /// By range wall time (longest first), range, then total time and function.
    pub by_range: Vec<RangeCalls>,
}

impl ApiCallSummary {
    /// Whether there is nothing to show: no call at all, or launches only (a session
    /// recorded with `GPUPROF_API=off`, or before other calls were traced).
    pub fn is_empty(&self) -> bool {
        self.by_thread.iter().all(|r| r.class == CallClass::Launch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_function_names() {
        for (name, class) in [
            ("cuLaunchKernel", CallClass::Launch),
            ("cuLaunchKernelEx_ptsz", CallClass::Launch),
            ("cudaLaunchKernel", CallClass::Launch),
            ("cudaLaunchKernelExC", CallClass::Launch),
            ("cudaLaunch", CallClass::Launch),
            ("cudaLaunch_ptsz", CallClass::Launch),
            ("cuLaunchCooperativeKernel", CallClass::Launch),
            ("cuGraphLaunch", CallClass::Launch),
            ("cudaGraphLaunch_ptsz", CallClass::Launch),
            ("cuLaunchHostFunc", CallClass::Other),
            ("cuStreamSynchronize", CallClass::Synchronize),
            ("cuStreamSynchronize_ptsz", CallClass::Synchronize),
            ("cuCtxSynchronize_v2", CallClass::Synchronize),
            ("cuEventSynchronize", CallClass::Synchronize),
            ("cudaDeviceSynchronize", CallClass::Synchronize),
            ("cuMemcpyHtoDAsync_v2", CallClass::Copy),
            ("cudaMemcpyAsync", CallClass::Copy),
            ("cuMemsetD32_v2", CallClass::Set),
            ("cuMemAlloc_v2", CallClass::Memory),
            ("cuMemAllocHost_v2", CallClass::Memory),
            ("cuMemHostAlloc", CallClass::Memory),
            ("cuMemFreeAsync", CallClass::Memory),
            ("cudaMalloc", CallClass::Memory),
            ("cudaFree", CallClass::Memory),
            ("cuEventRecord", CallClass::EventWait),
            ("cuStreamWaitEvent", CallClass::EventWait),
            ("cuStreamWaitValue32_v2", CallClass::EventWait),
            ("cuCtxGetCurrent", CallClass::Other),
            ("", CallClass::Other),
        ] {
            assert_eq!(CallClass::of(name), class, "{name}");
        }
    }
}
