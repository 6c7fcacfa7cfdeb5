//! What a [`super::TraceBuilder`] adds for a sink that joins kernels
//! ([`super::event::Sink::joined`], the Kineto format):
//!
//! - each kernel is joined to its launch, its GEMM call and its counter records by
//!   the report's own window ([`crate::analysis::join::Joiner`]) before it is written,
//!   and its [`KernelFacts`] worked out: the GEMM's shape and model FLOPs, DRAM bytes
//!   when the launch measured them (else, when given, its class's rate fitted to the
//!   PM sampling windows times its duration), the peak FLOP/s that applies (the GPU's built-in
//!   or derived peaks, as the report has them without `--peaks`);
//! - push/pop NVTX ranges are projected onto the GPU ([`GpuRanges`]): a kernel
//!   belongs to the innermost push/pop range of the thread that launched it that was
//!   open at the launch call's start, and a range's projection on a stream runs from
//!   the start of its first kernel there to the end of its last. A range's
//!   projections are written once it has closed and every kernel that might belong
//!   to it has been finalized (two join windows after its end was read, or the end of
//!   the session). Start/end ranges belong to no thread, so no launch is inside one:
//!   they are not projected.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};

use wire::{DeviceInfo, Record};

use crate::analysis::classes::ClassKey;
use crate::analysis::flop_metrics::{DRAM_READ, DRAM_WRITE};
use crate::analysis::gemm::GemmShape;
use crate::analysis::join::{self, Joiner, LaunchInfo};
use crate::analysis::range_cover::MAX_OPEN;
use crate::analysis::roofline::peaks::{peaks_for, Overrides, Peaks};

use super::event::{GemmFacts, KernelFacts};

/// The joining state of a builder.
pub(super) struct JoinState {
    pub joiner: Joiner,
    peaks: AHashMap<(u32, u32), Option<Peaks>>,
    pub ranges: GpuRanges,
    /// DRAM bytes per ns fitted to PM sampling windows, per class (empty without).
    pub fitted: HashMap<ClassKey, f64>,
    /// Each GEMM shape's role in the model (`trace --model`; empty without).
    /// Shared, not copied, into each kernel's facts.
    pub roles: HashMap<GemmShape, Arc<str>>,
    /// Kernels waiting in the joiner whose launch the builder did not hold when they
    /// arrived (the launch came [`super::HOLD_PARTS`] parts or more before, or not
    /// at all), by (pid, correlation id, graph node id, start): they get no flow, as
    /// in a build without joining, even where the joiner's longer window finds the
    /// launch. Rare, and each is removed when its kernel is finalized.
    pub unmatched: AHashSet<(u32, u32, u64, u64)>,
}

impl JoinState {
    pub fn new() -> JoinState {
        JoinState {
            joiner: Joiner::default(),
            peaks: AHashMap::new(),
            ranges: GpuRanges::default(),
            fitted: HashMap::new(),
            roles: HashMap::new(),
            unmatched: AHashSet::new(),
        }
    }

    /// Feeds what the joiner needs of `record` (kernels excepted: the builder hands
    /// those over itself).
    pub fn record(&mut self, pid: u32, record: &Record) {
        match record {
            Record::Device(d) => self.device(pid, d),
            Record::Launch(l) => self
                .joiner
                .launch(pid, l.correlation_id, LaunchInfo::from(l)),
            Record::Gemm(g) => self.joiner.gemm(pid, *g),
            Record::GraphNode(n) => self.joiner.graph_node(pid, n.node_id, n.correlation_id),
            Record::GraphNodeCloned(c) => {
                self.joiner
                    .graph_node_cloned(pid, c.node_id, c.original_node_id)
            }
            Record::KernelCounters(c) => self.joiner.kernel_counters(pid, c.clone()),
            _ => {}
        }
    }

    fn device(&mut self, pid: u32, d: &DeviceInfo) {
        self.peaks
            .entry((pid, d.id))
            .or_insert_with(|| peaks_for(d, &Overrides::default()).ok());
    }

    /// The facts of a finalized kernel; `launch_written` says whether its launch
    /// call is in the trace.
    pub fn facts(
        &self,
        j: &join::Joined,
        strings: &AHashMap<(u32, u32), String>,
        launch_written: bool,
    ) -> KernelFacts {
        let k = j.kernel;
        let gemm = j.gemm.map(|g| (GemmShape::of(g), g.launch_index));
        let peaks = self
            .peaks
            .get(&(j.pid, k.device_id))
            .and_then(Option::as_ref);
        let peak_flops = gemm.as_ref().and_then(|(shape, _)| {
            let math = shape.math().ok()?;
            peaks?.flops(math)
        });
        let dram_bytes = dram_bytes(j.pid, &j.counters, strings);
        let fitted_dram_bytes = match dram_bytes {
            Some(_) => None,
            None => {
                let ns = k.end_ns.saturating_sub(k.start_ns);
                self.fitted
                    .get(&ClassKey::of(j))
                    .map(|per_ns| per_ns * ns as f64)
            }
        };
        let role = gemm
            .as_ref()
            .and_then(|(shape, _)| self.roles.get(shape).cloned());
        KernelFacts {
            launch_written,
            role,
            model_flops: gemm
                .as_ref()
                .map(|(shape, i)| if *i == 0 { shape.model_flops() } else { 0.0 }),
            gemm: gemm.map(|(shape, launch_index)| GemmFacts {
                m: shape.m,
                n: shape.n,
                k: shape.k,
                batch: shape.batch,
                label: shape.label(),
                launch_index,
            }),
            dram_bytes,
            fitted_dram_bytes,
            peak_flops,
        }
    }
}

/// DRAM bytes read plus written, when the launch's counter records hold both.
fn dram_bytes(
    pid: u32,
    counters: &[&wire::KernelCounters],
    strings: &AHashMap<(u32, u32), String>,
) -> Option<f64> {
    let (mut read, mut write) = (None, None);
    for m in counters.iter().flat_map(|c| &c.metrics) {
        match strings.get(&(pid, m.name)).map(String::as_str) {
            Some(DRAM_READ) => read = Some(m.value),
            Some(DRAM_WRITE) => write = Some(m.value),
            _ => {}
        }
    }
    Some(read? + write?)
}

/// One push/pop range instance.
#[derive(Debug)]
pub struct Instance {
    pub pid: u32,
    thread: u64,
    pub name: String,
    pub domain: String,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    /// The part its end was read in.
    closed_in: usize,
    /// The ranges of its thread open when it started, innermost first.
    enclosing: Vec<u64>,
    /// Per (device, stream): the first start and last end of its kernels there.
    pub extents: BTreeMap<(u32, u32), (u64, u64)>,
}

/// Push/pop range instances, open or recently closed (see the module documentation).
#[derive(Debug, Default)]
pub struct GpuRanges {
    instances: AHashMap<u64, Instance>,
    by_thread: AHashMap<(u32, u64), ThreadRanges>,
    next: u64,
}

/// The instances of one thread.
#[derive(Debug, Default)]
struct ThreadRanges {
    /// (start, id) of each instance held, sorted: the innermost range open at a time
    /// is found by binary search, then through [`Instance::enclosing`], not by a scan.
    by_start: Vec<(u64, u64)>,
    /// The ids of the ranges started and not yet ended, outermost first: push/pop
    /// ranges of one thread nest, so this is a stack.
    open: Vec<u64>,
}

impl ThreadRanges {
    fn remove(&mut self, ids: &AHashSet<u64>) {
        self.by_start.retain(|(_, id)| !ids.contains(id));
        self.open.retain(|id| !ids.contains(id));
    }
}

impl GpuRanges {
    /// A range of `thread` (not 0) started; its id.
    pub fn start(
        &mut self,
        pid: u32,
        thread: u64,
        name: String,
        domain: String,
        start_ns: u64,
    ) -> u64 {
        self.next += 1;
        let id = self.next;
        let list = self.by_thread.entry((pid, thread)).or_default();
        let enclosing = list.open.iter().rev().copied().collect();
        let at = list.by_start.partition_point(|&k| k <= (start_ns, id));
        list.by_start.insert(at, (start_ns, id));
        list.open.push(id);
        self.instances.insert(
            id,
            Instance {
                pid,
                thread,
                name,
                domain,
                start_ns,
                end_ns: None,
                closed_in: 0,
                enclosing,
                extents: BTreeMap::new(),
            },
        );
        // A thread that starts ranges and never ends them: the oldest goes.
        if list.by_start.len() > MAX_OPEN {
            let (_, oldest) = list.by_start[0];
            list.remove(&AHashSet::from([oldest]));
            self.instances.remove(&oldest);
        }
        id
    }

    /// Range `id` ended at `end_ns`, read in `part`.
    pub fn close(&mut self, id: u64, end_ns: u64, part: usize) {
        if let Some(i) = self.instances.get_mut(&id) {
            i.end_ns = Some(end_ns);
            i.closed_in = part;
            if let Some(list) = self.by_thread.get_mut(&(i.pid, i.thread)) {
                if let Some(at) = list.open.iter().rposition(|x| *x == id) {
                    list.open.remove(at);
                }
            }
        }
    }

    /// Range `id` will never be written (it ended before its start, or never ended).
    pub fn discard(&mut self, id: u64) {
        if let Some(i) = self.instances.remove(&id) {
            self.unlist(i.pid, i.thread, &AHashSet::from([id]));
        }
    }

    fn unlist(&mut self, pid: u32, thread: u64, ids: &AHashSet<u64>) {
        if let Some(list) = self.by_thread.get_mut(&(pid, thread)) {
            list.remove(ids);
            if list.by_start.is_empty() && list.open.is_empty() {
                self.by_thread.remove(&(pid, thread));
            }
        }
    }

    /// The innermost range of `pid`'s thread `thread` open at `t` (started at or
    /// before it, not ended before it): the last one started by then, or the nearest
    /// of the ranges enclosing it that is.
    fn innermost_at(&self, pid: u32, thread: u64, t: u64) -> Option<u64> {
        let list = self.by_thread.get(&(pid, thread))?;
        let started = list.by_start.partition_point(|&(start, _)| start <= t);
        let (_, last) = *list.by_start.get(started.checked_sub(1)?)?;
        let enclosing = &self.instances.get(&last)?.enclosing;
        std::iter::once(last)
            .chain(enclosing.iter().copied())
            .find(|id| {
                self.instances
                    .get(id)
                    .is_some_and(|i| i.start_ns <= t && i.end_ns.is_none_or(|e| e >= t))
            })
    }

    /// A kernel of `pid` on (`device`, `stream`) from `start_ns` to `end_ns`, launched
    /// by `launch`: added to the innermost range of the launching thread open at the
    /// launch's start. Whether one was found.
    pub fn kernel(
        &mut self,
        pid: u32,
        launch: LaunchInfo,
        (device, stream): (u32, u32),
        (start_ns, end_ns): (u64, u64),
    ) -> bool {
        let innermost = self.innermost_at(pid, launch.thread_id, launch.start_ns);
        let Some(i) = innermost.and_then(|id| self.instances.get_mut(&id)) else {
            return false;
        };
        let e = i
            .extents
            .entry((device, stream))
            .or_insert((start_ns, end_ns));
        e.0 = e.0.min(start_ns);
        e.1 = e.1.max(end_ns);
        true
    }

    /// The closed instances `done` says no kernel can still be added to (by the part
    /// their end was read in), removed, in the order they started.
    pub fn take_done(&mut self, done: impl Fn(usize) -> bool) -> Vec<Instance> {
        let mut ids: Vec<u64> = self
            .instances
            .iter()
            .filter(|(_, i)| i.end_ns.is_some() && done(i.closed_in))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        let mut by_thread: AHashMap<(u32, u64), AHashSet<u64>> = AHashMap::new();
        for id in ids {
            if let Some(i) = self.instances.remove(&id) {
                by_thread.entry((i.pid, i.thread)).or_default().insert(id);
                out.push(i);
            }
        }
        for ((pid, thread), ids) in by_thread {
            self.unlist(pid, thread, &ids);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(thread_id: u64, start_ns: u64) -> LaunchInfo {
        LaunchInfo {
            thread_id,
            start_ns,
            end_ns: start_ns + 1,
        }
    }

    #[test]
    fn a_kernel_belongs_to_the_innermost_range_open_at_its_launch() {
        let mut r = GpuRanges::default();
        let outer = r.start(1, 7, "step".into(), String::new(), 100);
        let inner = r.start(1, 7, "attention".into(), String::new(), 200);
        r.close(inner, 300, 0);
        // Launched inside the inner range, after it (still in the outer), on another
        // thread, and before both.
        assert!(r.kernel(1, launch(7, 250), (0, 1), (1000, 1100)));
        assert!(r.kernel(1, launch(7, 250), (0, 1), (900, 950)));
        assert!(r.kernel(1, launch(7, 350), (0, 2), (1200, 1300)));
        assert!(!r.kernel(1, launch(8, 250), (0, 1), (1400, 1500)));
        assert!(!r.kernel(1, launch(7, 50), (0, 1), (1400, 1500)));
        assert!(!r.kernel(2, launch(7, 250), (0, 1), (1400, 1500)));
        // Only closed ones are done.
        let done = r.take_done(|_| true);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].name, "attention");
        assert_eq!(done[0].extents, BTreeMap::from([((0, 1), (900, 1100))]));
        r.close(outer, 400, 3);
        assert!(r.take_done(|part| part < 3).is_empty());
        let done = r.take_done(|_| true);
        assert_eq!(done[0].extents, BTreeMap::from([((0, 2), (1200, 1300))]));
        assert!(r.by_thread.is_empty() && r.instances.is_empty());
    }

    #[test]
    fn a_kernel_arriving_after_later_ranges_started_finds_its_own() {
        // A decode loop: one range per token inside "decode"; the kernels' records
        // arrive after the later tokens' ranges were read.
        let mut r = GpuRanges::default();
        let decode = r.start(1, 7, "decode".into(), String::new(), 0);
        let tokens: Vec<u64> = (0..3)
            .map(|n| {
                let id = r.start(1, 7, format!("token {n}"), String::new(), 10 + 20 * n);
                r.close(id, 20 + 20 * n, 0);
                id
            })
            .collect();
        let owner = |r: &GpuRanges, t| r.innermost_at(1, 7, t);
        assert_eq!(owner(&r, 35), Some(tokens[1]));
        assert_eq!(owner(&r, 10), Some(tokens[0]));
        assert_eq!(owner(&r, 20), Some(tokens[0]));
        // Between tokens, and after the last: the enclosing range.
        assert_eq!(owner(&r, 45), Some(decode));
        assert_eq!(owner(&r, 1000), Some(decode));
        r.close(decode, 100, 0);
        assert_eq!(owner(&r, 1000), None);
        assert_eq!(r.by_thread[&(1, 7)].open, Vec::<u64>::new());
    }

    #[test]
    fn a_thread_keeps_at_most_max_open_ranges() {
        let mut r = GpuRanges::default();
        for i in 0..(MAX_OPEN as u64 + 10) {
            r.start(1, 7, format!("r{i}"), String::new(), i);
        }
        assert_eq!(r.instances.len(), MAX_OPEN);
        assert_eq!(r.by_thread[&(1, 7)].by_start.len(), MAX_OPEN);
        assert_eq!(r.by_thread[&(1, 7)].open.len(), MAX_OPEN);
    }
}
