//! Joining a kernel to the records about it that arrive around it, in a bounded
//! window of the session.
//!
//! A kernel's `Launch` record (which thread launched it, when), its `Gemm` record (the
//! cuBLAS call) and its `KernelCounters` records share its (pid, correlation id), but
//! they reach the session at different times: the launch and the GEMM from the API
//! callbacks as the program calls, the kernel from CUPTI's activity buffers (flushed
//! every second), the counters when the profiler has decoded them. So a kernel is
//! held for a while before it is **finalized** (joined and handed to the analyses):
//! until [`HOLD_PARTS`] more parts and at least [`HOLD_ROWS`] more records have been
//! read (or the session ends). Its launch and GEMM records, which come before it, are
//! looked up when it arrives (and again when finalized, for the rare one that came
//! after it): a direct launch's are then done with (a launch API call makes one
//! kernel), a graph launch's are kept one such window for its other kernels, as are
//! those whose kernel has not come; counter records, which may come before or after
//! it, two windows. Then they are dropped: what never met its kernel is counted (GEMM
//! records as unjoined, counter records as unattributed). Records of a captured CUDA graph
//! (`GraphNode`, `GraphNodeCloned`, and the GEMM records of captured launches) are
//! kept for the whole session: every replay of the graph needs them.
//!
//! Memory is therefore bounded by the records of a few parts (a part holds at most
//! the writer's row limit) plus the graphs, whatever the session's length. A session
//! read as one part (or whose parts are all within the window) is joined exactly as a
//! whole.

use ahash::AHashMap;

use super::chunked_queue::ChunkedQueue;
use super::correlation_map::{CorrelationMap, CorrelationSet};

use wire::{Gemm, Kernel, KernelCounters};

/// Parts a kernel waits for its records after the part it came in.
pub const HOLD_PARTS: usize = 2;
/// Records a kernel waits for after the part it came in (a part has at most 262,144
/// rows by default: at 10^5 kernels a second, about 2 s of a serving run). With the
/// window's parts it bounds what is held (docs/ARCHITECTURE.md, "Analysis in
/// bounded memory"; `gpuprof-bench scale` measures it).
pub const HOLD_ROWS: u64 = 1 << 19;

/// The launch of a kernel, as the analyses need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchInfo {
    pub thread_id: u64,
    /// API entry time.
    pub start_ns: u64,
    /// API exit time.
    pub end_ns: u64,
}

impl From<&wire::Launch> for LaunchInfo {
    fn from(l: &wire::Launch) -> LaunchInfo {
        LaunchInfo {
            thread_id: l.thread_id,
            start_ns: l.start_ns,
            end_ns: l.end_ns,
        }
    }
}

/// A kernel joined to its records.
#[derive(Debug)]
pub struct Joined<'a> {
    pub pid: u32,
    pub kernel: &'a Kernel,
    pub launch: Option<LaunchInfo>,
    pub gemm: Option<&'a Gemm>,
    /// Its counter records (empty without any): those of its correlation id, and for
    /// a kernel launched from a CUDA graph those whose range is its place in the
    /// launch's order ([`Joiner`]).
    pub counters: Vec<&'a KernelCounters>,
}

/// Graph node records: which launch created a node under stream capture, and which
/// node each clone came from.
#[derive(Debug, Default)]
struct Graphs {
    created: AHashMap<(u32, u64), u32>,
    cloned_from: AHashMap<(u32, u64), u64>,
}

impl Graphs {
    /// The correlation id of the captured launch a graph kernel's node comes from;
    /// `Err` for a cycle in the clone records.
    fn capture(&self, pid: u32, node: u64) -> Result<Option<u32>, ()> {
        // Brent's cycle detection: a mark left at steps 1, 2, 4, ... is met again
        // within a few turns of a cycle. Nothing is allocated (a set of the nodes
        // seen would be, for every graph kernel) and a hostile chain costs its length.
        let mut node = node;
        let (mut mark, mut steps, mut next_mark) = (node, 0u64, 1u64);
        loop {
            if let Some(c) = self.created.get(&(pid, node)) {
                return Ok(Some(*c));
            }
            match self.cloned_from.get(&(pid, node)) {
                Some(original) => node = *original,
                None => return Ok(None),
            }
            if node == mark {
                return Err(());
            }
            steps += 1;
            if steps == next_mark {
                mark = node;
                next_mark *= 2;
                steps = 0;
            }
        }
    }
}

/// A kernel's place in its launch's order: (start, end, graph node id).
type Order = (u64, u64, u64);

/// The kernels of one CUDA graph launch seen in the window.
#[derive(Debug, Default)]
struct GraphLaunch {
    /// Each kernel's [`Order`], as they came.
    kernels: Vec<Order>,
    finalized: usize,
    part: usize,
}

impl GraphLaunch {
    /// The position of `k` among the launch's kernels by start (then end, then node):
    /// CUPTI's auto range index of the kernel in a pass over the launch.
    fn rank(&self, k: &Kernel) -> u32 {
        let own = (k.start_ns, k.end_ns, k.graph_node_id);
        self.kernels.iter().filter(|o| **o < own).count() as u32
    }
}

/// A kernel waiting to be finalized, with what was found for it on arrival.
struct Waiting {
    part: usize,
    pid: u32,
    kernel: Kernel,
    launch: Option<LaunchInfo>,
    gemm: Option<Box<Gemm>>,
}

struct HeldGemm {
    part: usize,
    gemm: Gemm,
    used: bool,
}

/// The window (see the module documentation).
pub struct Joiner {
    /// The window: parts and records a kernel waits.
    hold_parts: usize,
    hold_rows: u64,
    /// The part being read (0 before the first).
    part: usize,
    /// Records read so far, and by the end of each part (a few bytes per part).
    rows: u64,
    part_ends: Vec<u64>,
    launches: CorrelationMap<(usize, LaunchInfo)>,
    gemms: CorrelationMap<HeldGemm>,
    graphs: Graphs,
    /// Correlation ids of launches made under stream capture.
    captured: CorrelationSet,
    /// Kernels not yet finalized, in arrival order, with their part.
    kernels: ChunkedQueue<Waiting>,
    /// Graph kernels per (pid, correlation id) in the window: each one's place in
    /// the launch's order, how many were finalized, the last part one came in.
    kernel_ids: CorrelationMap<GraphLaunch>,
    counters: CorrelationMap<(usize, Vec<KernelCounters>)>,
    /// `Gemm` records that met no kernel.
    pub gemm_unjoined: u64,
    /// Graph kernels whose node chain has a cycle.
    pub gemm_cycles: u64,
    /// `KernelCounters` records joined to no kernel (for a graph launch: of a range
    /// none of its kernels had).
    pub counters_unattributed: u64,
}

impl Default for Joiner {
    fn default() -> Joiner {
        Joiner::new(HOLD_PARTS, HOLD_ROWS)
    }
}

impl Joiner {
    /// A joiner whose kernels wait `hold_parts` parts and `hold_rows` records.
    pub fn new(hold_parts: usize, hold_rows: u64) -> Joiner {
        Joiner {
            hold_parts,
            hold_rows,
            part: 0,
            rows: 0,
            part_ends: Vec::new(),
            launches: CorrelationMap::default(),
            gemms: CorrelationMap::default(),
            graphs: Graphs::default(),
            captured: CorrelationSet::default(),
            kernels: ChunkedQueue::default(),
            kernel_ids: CorrelationMap::default(),
            counters: CorrelationMap::default(),
            gemm_unjoined: 0,
            gemm_cycles: 0,
            counters_unattributed: 0,
        }
    }

    /// Records held: kernels waiting, and launch, GEMM and counter records.
    pub fn held(&self) -> usize {
        self.kernels.len()
            + self.launches.len()
            + self.gemms.len()
            + self.counters.values().map(|(_, c)| c.len()).sum::<usize>()
    }

    pub fn launch(&mut self, pid: u32, correlation_id: u32, info: LaunchInfo) {
        self.launches
            .insert((pid, correlation_id), (self.part, info));
    }

    pub fn gemm(&mut self, pid: u32, g: Gemm) {
        // The first record of a correlation id wins.
        self.gemms
            .entry((pid, g.correlation_id))
            .or_insert(HeldGemm {
                part: self.part,
                gemm: g,
                used: false,
            });
    }

    pub fn graph_node(&mut self, pid: u32, node_id: u64, correlation_id: u32) {
        self.graphs.created.insert((pid, node_id), correlation_id);
        self.captured.insert((pid, correlation_id));
    }

    pub fn graph_node_cloned(&mut self, pid: u32, node_id: u64, original: u64) {
        self.graphs.cloned_from.insert((pid, node_id), original);
    }

    pub fn kernel(&mut self, pid: u32, k: Kernel) {
        // A launch API call makes one kernel; only a graph launch makes several
        // under one correlation id, so only those are counted.
        if k.graph_node_id != 0 {
            let e = self.kernel_ids.entry((pid, k.correlation_id)).or_default();
            e.kernels.push((k.start_ns, k.end_ns, k.graph_node_id));
            e.part = self.part;
        }
        // Launch and GEMM records come before their kernel (API callbacks, then
        // activity buffers): join them now, so they need not be held long (a direct
        // launch's not at all); a kernel that came first tries again when finalized.
        let launch = self.take_launch(pid, &k);
        // A cycle is counted when the kernel is finalized (looked up again then).
        let gemm = self.gemm_of(pid, &k).ok().flatten().map(Box::new);
        let key = (pid, k.correlation_id);
        if gemm.is_some() && k.graph_node_id == 0 && !self.captured.contains(&key) {
            self.gemms.remove(&key);
        }
        self.kernels.push_back(Waiting {
            part: self.part,
            pid,
            kernel: k,
            launch,
            gemm,
        });
    }

    /// The launch of kernel `k`, if it has come: a direct launch's record is taken
    /// (its one kernel is joined), a graph launch's kept for the launch's other kernels.
    fn take_launch(&mut self, pid: u32, k: &Kernel) -> Option<LaunchInfo> {
        let key = (pid, k.correlation_id);
        if k.graph_node_id == 0 && !self.captured.contains(&key) {
            self.launches.remove(&key)
        } else {
            self.launches.get(&key).copied()
        }
        .map(|(_, l)| l)
    }

    /// The GEMM record of kernel `k`'s launch (through the graph it came from, if
    /// any), marked used; `Err` for a cycle in the graph's clone records.
    fn gemm_of(&mut self, pid: u32, k: &Kernel) -> Result<Option<Gemm>, ()> {
        let correlation = if k.graph_node_id == 0 {
            Some(k.correlation_id)
        } else {
            self.graphs.capture(pid, k.graph_node_id)?
        };
        Ok(correlation
            .and_then(|c| self.gemms.get_mut(&(pid, c)))
            .map(|g| {
                g.used = true;
                g.gemm
            }))
    }

    pub fn kernel_counters(&mut self, pid: u32, c: KernelCounters) {
        self.counters
            .entry((pid, c.correlation_id))
            .or_insert_with(|| (self.part, Vec::new()))
            .1
            .push(c);
    }

    /// Whether what came in `part` has waited `times` windows (parts and rows) by now.
    pub fn waited(&self, part: usize, times: usize) -> bool {
        if self.part < part + 1 + times * self.hold_parts {
            return false;
        }
        let end = self.part_ends.get(part).copied().unwrap_or(self.rows);
        self.rows.saturating_sub(end) >= times as u64 * self.hold_rows
    }

    /// Ends the current part (of `rows` records) and finalizes the kernels that have
    /// waited long enough, in arrival order, then drops what has waited twice as long.
    pub fn end_part(&mut self, rows: u64, mut finalize: impl FnMut(Joined)) {
        self.rows += rows;
        self.part_ends.push(self.rows);
        self.part += 1;
        while let Some(w) = self.kernels.front() {
            if !self.waited(w.part, 1) {
                break;
            }
            let w = self.kernels.pop_front().expect("a front kernel");
            self.finalize(w, &mut finalize);
        }
        self.expire(false);
    }

    /// Finalizes every kernel left and counts what never met one.
    pub fn finish(&mut self, mut finalize: impl FnMut(Joined)) {
        while let Some(w) = self.kernels.pop_front() {
            self.finalize(w, &mut finalize);
        }
        self.expire(true);
    }

    fn finalize(&mut self, w: Waiting, finalize: &mut impl FnMut(Joined)) {
        let (pid, k) = (w.pid, &w.kernel);
        let launch = w.launch.or_else(|| self.take_launch(pid, k));
        let gemm = match w.gemm {
            Some(g) => Some(*g),
            None => self.gemm_of(pid, k).unwrap_or_else(|()| {
                self.gemm_cycles += 1;
                None
            }),
        };
        let key = (pid, k.correlation_id);
        // A graph launch's kernels share its id: each takes the range of its place.
        let graph = if k.graph_node_id == 0 {
            None
        } else {
            self.kernel_ids.get_mut(&key).map(|g| {
                g.finalized += 1;
                (g.rank(k), g.finalized == g.kernels.len())
            })
        };
        let counters: Vec<&KernelCounters> = match self.counters.get(&key) {
            None => Vec::new(),
            Some((_, records)) => match graph {
                None => records.iter().collect(),
                Some((rank, _)) => records.iter().filter(|c| c.range == rank).collect(),
            },
        };
        finalize(Joined {
            pid,
            kernel: k,
            launch,
            gemm: gemm.as_ref(),
            counters,
        });
        match graph {
            // Joined: its counters are done with.
            None => {
                self.counters.remove(&key);
            }
            // The launch's last kernel: records of ranges no kernel had are counted.
            Some((_, true)) => {
                if let Some((_, records)) = self.counters.remove(&key) {
                    let used = self.kernel_ids.get(&key).map_or(0, |g| g.kernels.len());
                    self.counters_unattributed +=
                        records.iter().filter(|c| c.range as usize >= used).count() as u64;
                }
            }
            Some((_, false)) => {}
        }
    }

    /// Drops what has waited two windows (everything, at the end), counting what
    /// never met a kernel; gives back memory a burst left behind.
    fn expire(&mut self, all: bool) {
        self.expire_records(all);
        fn shrink<V>(m: &mut CorrelationMap<V>) {
            let len = m.len();
            if m.capacity() > 4 * len.max(4096) {
                m.shrink_to(2 * len);
            }
        }
        shrink(&mut self.launches);
        shrink(&mut self.gemms);
        shrink(&mut self.counters);
        shrink(&mut self.kernel_ids);
    }

    fn expire_records(&mut self, all: bool) {
        let old = |j: &Joiner, part: usize| all || j.waited(part, 2);
        // Launch and GEMM records are joined on their kernel's arrival: one window.
        let joined_old = |j: &Joiner, part: usize| all || j.waited(part, 1);
        let gone: Vec<(u32, u32)> = self
            .launches
            .iter()
            .filter(|(_, (p, _))| joined_old(self, *p))
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            self.launches.remove(&k);
        }
        let gone: Vec<(u32, u32)> = self
            .gemms
            .iter()
            .filter(|(k, g)| joined_old(self, g.part) && (all || !self.captured.contains(k)))
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            if let Some(g) = self.gemms.remove(&k) {
                if !g.used {
                    self.gemm_unjoined += 1;
                }
            }
        }
        let gone: Vec<(u32, u32)> = self
            .counters
            .iter()
            .filter(|(_, (p, _))| old(self, *p))
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            if let Some((_, c)) = self.counters.remove(&k) {
                self.counters_unattributed += c.len() as u64;
            }
        }
        let gone: Vec<(u32, u32)> = self
            .kernel_ids
            .iter()
            .filter(|(_, g)| old(self, g.part))
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            self.kernel_ids.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(start_ns: u64) -> LaunchInfo {
        LaunchInfo {
            thread_id: 7,
            start_ns,
            end_ns: start_ns + 5,
        }
    }

    fn kernel(correlation_id: u32, graph_node_id: u64) -> Kernel {
        Kernel {
            correlation_id,
            graph_id: u32::from(graph_node_id != 0),
            graph_node_id,
            start_ns: 100 * u64::from(correlation_id) + graph_node_id,
            end_ns: 100 * u64::from(correlation_id) + graph_node_id + 10,
            ..Kernel::default()
        }
    }

    /// Each finalized kernel's (correlation id, node, launch start).
    fn joined(j: &mut Joiner) -> Vec<(u32, u64, Option<u64>)> {
        let mut out = Vec::new();
        j.finish(|k| {
            out.push((
                k.kernel.correlation_id,
                k.kernel.graph_node_id,
                k.launch.map(|l| l.start_ns),
            ))
        });
        out
    }

    #[test]
    fn a_node_is_traced_to_its_capture_through_its_clones_and_cycles_are_found() {
        let mut g = Graphs::default();
        g.created.insert((1, 100), 42);
        // 103 -> 102 -> 101 -> 100 (created by launch 42).
        for n in 101..=103 {
            g.cloned_from.insert((1, n), n - 1);
        }
        assert_eq!(g.capture(1, 103), Ok(Some(42)));
        assert_eq!(g.capture(1, 100), Ok(Some(42)));
        assert_eq!(g.capture(2, 103), Ok(None), "another process's nodes");
        assert_eq!(g.capture(1, 7), Ok(None), "a node with no history");
        // A node cloned from itself; a tail of 3 into a cycle of 5 (200 -> ... -> 207,
        // 207 -> 203); every length of cycle is found, from any node on the way.
        g.cloned_from.insert((1, 150), 150);
        assert_eq!(g.capture(1, 150), Err(()));
        for n in 200..207 {
            g.cloned_from.insert((1, n), n + 1);
        }
        g.cloned_from.insert((1, 207), 203);
        for n in 200..=207 {
            assert_eq!(g.capture(1, n), Err(()), "from {n}");
        }
        // A capture on the way is found before the cycle.
        g.created.insert((1, 205), 43);
        assert_eq!(g.capture(1, 201), Ok(Some(43)));
    }

    #[test]
    fn a_direct_launch_is_let_go_once_its_kernel_has_come_a_graph_launch_is_kept() {
        let mut j = Joiner::default();
        j.launch(1, 10, info(1000));
        j.launch(1, 11, info(2000));
        j.kernel(1, kernel(10, 0));
        // The direct launch's record went with its kernel: only the graph launch's
        // record and the waiting kernel are held.
        assert_eq!((j.launches.len(), j.held()), (1, 2));
        j.kernel(1, kernel(11, 1));
        j.kernel(1, kernel(11, 2));
        assert_eq!(
            j.launches.len(),
            1,
            "a graph launch's record serves its kernels"
        );
        // A kernel that came before its launch gets it when finalized, and lets it go.
        j.kernel(1, kernel(12, 0));
        j.launch(1, 12, info(3000));
        assert_eq!(
            joined(&mut j),
            vec![
                (10, 0, Some(1000)),
                (11, 1, Some(2000)),
                (11, 2, Some(2000)),
                (12, 0, Some(3000)),
            ]
        );
        assert_eq!(j.held(), 0);
    }
}
