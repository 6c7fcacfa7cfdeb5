//! A session reduced to what the analyses need, part by part, in bounded memory.
//!
//! [`Aggregator::add_part`] takes one part's records (in the session's table order)
//! and folds them in: per-process facts, copies and sets, drops, counter plans and
//! samples are summed as they come; kernels go through the join window
//! ([`super::join`]) and, once joined to their launch, GEMM call and counters, are
//! summed into their class ([`super::classes`]), into the NVTX range names covering
//! them ([`super::range_cover`]) and, when the session samples counters, into the
//! attribution of the sampling windows around them ([`super::sampled`]).
//! [`Aggregator::finish`] gives the [`Aggregate`] that
//! [`summarize`](super::summary::summarize_aggregate) and
//! [`efficiency`](crate::analysis::roofline::efficiency::efficiency_of) read.
//!
//! What is held between parts: the session's interned strings, devices, graphs, one
//! entry per class and per range name, and the records of the join window. None of it
//! grows with the number of launches.

use std::collections::{BTreeMap, BTreeSet};

use ahash::AHashMap;

use serde::Serialize;
use wire::{Capture, CounterMode, CounterPlan, CounterSample, DeviceInfo, DropSource, Record};

use super::api_calls::ApiCallTotals;
use super::classes::{ClassKey, Classes};
use super::deconvolve::{ClassSpan, Deconvolver, Fitted};
use super::flop_metrics::{flop_metric, DRAM_READ, DRAM_WRITE};
use super::integrity::{impossible, ImpossibleRecords};
use super::join::{Joined, Joiner, LaunchInfo};
use super::range_cover::RangeCover;
use super::sampled::{consistent, Attribution, Attributor, KernelSpan, Window};
use super::stacks::Stacks;
use super::telemetry::{DeviceTelemetry, TelemetryAggregator};
use crate::store::device_samples::DeviceSample;
use crate::store::tables::TableId;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessSummary {
    pub pid: u32,
    /// The session it was recorded in, when several are read together (index into
    /// [`Aggregate::sessions`]; not shown for the first).
    #[serde(skip_serializing_if = "is_first")]
    pub session: usize,
    /// Whether the process's `Process` record was seen (the fields below are empty
    /// without it).
    pub known: bool,
    pub command: Vec<String>,
    pub host: String,
    pub cupti_api_version: u32,
    pub cupti_layouts: String,
    pub cupti_path: String,
    pub devices: Vec<DeviceSummary>,
    pub kernels: u64,
    pub kernel_ns: u64,
    /// CUPTI's own kernels, left out of `kernels` and every analysis
    /// ([`is_cupti_kernel`]).
    pub cupti_kernels: u64,
    pub cupti_kernel_ns: u64,
    /// Kernels whose record has no timestamps (start and end 0): CUPTI gives none to
    /// a kernel it replays (kernel replay; docs/ARCHITECTURE.md). Their GPU time is
    /// unknown and counts as 0 in `kernel_ns`.
    pub untimed_kernels: u64,
    /// An `End` record was seen.
    pub finished: bool,
    /// The capture window the process recorded in, when one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
}

/// A kernel's static plus dynamic shared memory per block, bytes (a negative size
/// counts as none).
fn shared_memory(k: &wire::Kernel) -> u32 {
    let bytes = |v: i32| u32::try_from(v).unwrap_or(0);
    bytes(k.static_shared_memory).saturating_add(bytes(k.dynamic_shared_memory))
}

/// The kernel CUPTI's range profiler launches for each launch it measures by user
/// replay, on a stream of its own with that launch's correlation id: `WaitNs`, one
/// thread (seen on H100 and H200 with CUPTI 13.0, 80.8 µs each; docs/ARCHITECTURE.md).
/// Not the program's work: counted apart, never joined to the launch's GEMM call or
/// counters.
pub fn is_cupti_kernel(k: &wire::Kernel, name: Option<&String>) -> bool {
    k.grid == [1, 1, 1]
        && k.block == [1, 1, 1]
        && k.graph_node_id == 0
        && name.is_some_and(|n| n == "WaitNs")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceSummary {
    pub id: u32,
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// As NVML and `nvidia-smi` show it ([`super::names::gpu_uuid`]).
    pub uuid: String,
}

/// How one process collects counters on one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    pub pid: u32,
    pub device_id: u32,
    pub chip: String,
    /// "kernel" or "sampling".
    pub mode: String,
    pub policy: String,
    /// Metric names, group by group (a name not interned shows as `#id`).
    pub groups: Vec<Vec<String>>,
}

/// Why counters are unavailable or stopped in a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusSummary {
    pub pid: u32,
    pub message: String,
}

fn is_first(session: &usize) -> bool {
    *session == 0
}

/// The first process key of a session after the first: keys of the first session
/// are its pids (below 2^22 on Linux), the others' are numbered from here.
const OTHER_SESSIONS: u32 = 1 << 31;

/// Everything the analyses read (see the module documentation).
#[derive(Debug, Default)]
pub struct Aggregate {
    /// The sessions read, by their name (their directory), in order; one when a
    /// single session is read.
    pub sessions: Vec<String>,
    /// Processes of sessions after the first are keyed by a number of their own
    /// (see [`Aggregate::pid`]): key -> (session, pid).
    pub others: AHashMap<u32, (usize, u32)>,
    /// Interned strings: (pid, id) -> text.
    pub strings: AHashMap<(u32, u32), String>,
    /// In order of first appearance.
    pub processes: Vec<ProcessSummary>,
    /// The first `Device` record of each (pid, device id).
    pub devices: AHashMap<(u32, u32), DeviceInfo>,
    pub kernel_count: u64,
    pub kernel_ns: u64,
    pub classes: Classes,
    /// (is a set, copy kind) -> (count, bytes, ns).
    pub transfers: BTreeMap<(bool, u8), (u64, u64, u64)>,
    /// Records lost, per [`DropSource`] in declaration order.
    pub dropped: [u64; DropSource::ALL.len()],
    pub plans: Vec<PlanSummary>,
    pub counter_statuses: Vec<StatusSummary>,
    /// The FLOP counters each process's kernel-mode plans collect.
    pub planned_flops: AHashMap<u32, BTreeSet<String>>,
    /// (pid, device, metric) -> (windows, sum).
    pub samples: BTreeMap<(u32, u32, String), (u64, f64)>,
    /// The sampling windows attributed to kernels; `None` without windows.
    pub sampled: Option<Attribution>,
    /// Per-class rates fitted to the sampling windows ([`super::deconvolve`]); `None`
    /// without windows.
    pub fitted: Option<Fitted>,
    pub counters_unattributed: u64,
    /// `GemmStatus` messages (pid, message) in session order.
    pub gemm_statuses: Vec<(u32, String)>,
    /// NVML readings per device (the `device_samples` table).
    pub telemetry: Vec<DeviceTelemetry>,
    pub gemm_unjoined: u64,
    pub gemm_cycles: u64,
    pub ranges: RangeCover,
    /// CPU time in the CUDA calls traced one by one ([`super::api_calls`]).
    pub api_calls: ApiCallTotals,
    /// (pid, device) -> (earliest kernel start, latest kernel end), ns of the
    /// session's clock; kernels without timestamps left out.
    pub kernel_spans: AHashMap<(u32, u32), (u64, u64)>,
    /// Launches by class and enclosing NVTX ranges; `None` unless asked for
    /// ([`Aggregator::with_stacks`]).
    pub stacks: Option<Stacks>,
    /// The names of the counter metrics the classes hold, by id.
    pub metrics: MetricNames,
    /// Records left out because a value cannot be true: (kind, reason) -> records.
    pub impossible: BTreeMap<(&'static str, &'static str), u64>,
}

impl Aggregate {
    /// The pid of the process keyed `key` (every `pid` field of the aggregate is
    /// such a key: the pid itself for the first session).
    pub fn pid(&self, key: u32) -> u32 {
        self.others.get(&key).map_or(key, |(_, pid)| *pid)
    }

    /// The session of the process keyed `key`.
    pub fn session(&self, key: u32) -> usize {
        self.others.get(&key).map_or(0, |(session, _)| *session)
    }

    /// The text of interned string `id` of `pid`; `None` for id 0 or an unknown id.
    pub fn string(&self, pid: u32, id: u32) -> Option<&str> {
        if id == 0 {
            return None;
        }
        self.strings.get(&(pid, id)).map(String::as_str)
    }

    /// A metric's name, or `#id` when not interned.
    pub fn metric_name(&self, pid: u32, id: u32) -> String {
        match self.string(pid, id) {
            Some(s) => s.to_string(),
            None => format!("#{id}"),
        }
    }

    /// Records left out as impossible, by kind then reason.
    pub fn impossible_records(&self) -> Vec<ImpossibleRecords> {
        self.impossible
            .iter()
            .map(|((kind, reason), records)| ImpossibleRecords {
                kind: kind.to_string(),
                reason: reason.to_string(),
                records: *records,
            })
            .collect()
    }
}

/// Counter metric names interned once for the whole session: a class holds a
/// metric's sums under its id, not its name.
#[derive(Debug, Default)]
pub struct MetricNames {
    names: Vec<String>,
    ids: AHashMap<String, u32>,
}

impl MetricNames {
    /// The id of `name`, given one when new.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// The id of `name`, when it has one.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of metric `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// What a counter metric counts towards, besides its own sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetricRole {
    DramRead,
    DramWrite,
    /// A FLOP metric ([`flop_metric`]).
    Flop,
    Other,
}

/// The session-wide id and role of metric string `name` of `pid`, from `roles` (kept
/// per (pid, string id), dropped when the string is redefined) or found by its
/// name; `None` for a metric whose name is not interned (yet).
fn metric_role(
    roles: &mut AHashMap<(u32, u32), (u32, MetricRole)>,
    metrics: &mut MetricNames,
    strings: &AHashMap<(u32, u32), String>,
    pid: u32,
    name: u32,
) -> Option<(u32, MetricRole)> {
    if let Some(&known) = roles.get(&(pid, name)) {
        return Some(known);
    }
    let text = strings.get(&(pid, name)).filter(|_| name != 0)?;
    let role = match text.as_str() {
        DRAM_READ => MetricRole::DramRead,
        DRAM_WRITE => MetricRole::DramWrite,
        t if flop_metric(t).is_some() => MetricRole::Flop,
        _ => MetricRole::Other,
    };
    let known = (metrics.id(text), role);
    roles.insert((pid, name), known);
    Some(known)
}

/// Where some finalized kernel time fell: process, device, class and time bin (the
/// bin's index: its start over the bin length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BinKey {
    pub pid: u32,
    pub device_id: u32,
    pub class: usize,
    pub bin: u64,
}

/// Bins a kernel's time is split into at most: a longer kernel's time is split into
/// this many equal parts, each in the bin where it starts (the total is kept).
const MAX_BINS_PER_KERNEL: u64 = 64;

/// `[start, end)` as (bin index, ns in it) for bins of `bin_ns` (at most
/// [`MAX_BINS_PER_KERNEL`] of them).
pub fn split_into_bins(start: u64, end: u64, bin_ns: u64) -> Vec<(u64, u64)> {
    let ns = end.saturating_sub(start);
    let (first, last) = (start / bin_ns, end.saturating_sub(1) / bin_ns);
    if ns == 0 {
        return Vec::new();
    }
    if last - first < MAX_BINS_PER_KERNEL {
        return (first..=last)
            .map(|b| {
                let (lo, hi) = (b * bin_ns, (b + 1).saturating_mul(bin_ns));
                (b, end.min(hi) - start.max(lo))
            })
            .collect();
    }
    let part = ns / MAX_BINS_PER_KERNEL;
    (0..MAX_BINS_PER_KERNEL)
        .map(|i| {
            let at = start + i * part;
            let len = if i + 1 == MAX_BINS_PER_KERNEL {
                ns - part * i
            } else {
                part
            };
            (at / bin_ns, len)
        })
        .collect()
}

/// A finalized launch kept for the sampling attribution.
struct Span {
    part: usize,
    pid: u32,
    device_id: u32,
    start_ns: u64,
    end_ns: u64,
    class: usize,
}

/// Folds a session in, part by part (see the module documentation).
#[derive(Default)]
pub struct Aggregator {
    out: Aggregate,
    process_index: AHashMap<u32, usize>,
    /// The last process looked up in `process_index`, and its index.
    last_process: Option<(u32, usize)>,
    /// Counter metrics by (pid, string id): their id and role ([`metric_role`]).
    metric_roles: AHashMap<(u32, u32), (u32, MetricRole)>,
    joiner: Joiner,
    /// The part being read, and its records so far.
    part: usize,
    rows: u64,
    /// The session being read (0 until [`Aggregator::next_session`]), and the keys of
    /// its processes when it is not the first.
    session: usize,
    keys: AHashMap<u32, u32>,
    /// Whether the session samples counters (a sampling plan or a window seen): only
    /// then are launches kept for the attribution.
    sampling: bool,
    spans: Vec<Span>,
    /// Sampling windows not yet attributed, with their part.
    windows: Vec<(usize, u32, CounterSample)>,
    /// Counter plans, names resolved at the end.
    plans: Vec<(u32, CounterPlan)>,
    /// (pid, device, metric id) -> (windows, sum), names resolved at the end.
    samples: BTreeMap<(u32, u32, u32), (u64, f64)>,
    attributor: Option<Attributor>,
    deconvolver: Option<Deconvolver>,
    /// Kernel time finalized since [`Aggregator::take_binned`] was last called, per
    /// (pid, device, class, time bin): kept only once [`Aggregator::bin_kernel_time`]
    /// asked for it, with that bin length.
    binned_since: Option<(u64, AHashMap<BinKey, u64>)>,
    telemetry: TelemetryAggregator,
    /// Tables not read ([`Aggregator::kernel_rows_only`]).
    skip: &'static [TableId],
    /// Whether the sums only the report prints are left out: each class's duration
    /// histogram (`Class::durations`: the median and standard deviation) and the
    /// kernels' NVTX range totals (`RangeCover::cover`). `pprof` and `roofline`
    /// read neither ([`Aggregator::with_stacks`], [`Aggregator::kernel_rows_only`]).
    without_report_sums: bool,
}

impl Aggregator {
    /// An aggregator whose join window is `hold_parts` parts and `hold_rows` records
    /// (the default: [`super::join::HOLD_PARTS`], [`super::join::HOLD_ROWS`]).
    pub fn with_window(hold_parts: usize, hold_rows: u64) -> Aggregator {
        Aggregator {
            joiner: Joiner::new(hold_parts, hold_rows),
            ..Aggregator::default()
        }
    }

    /// An aggregator that also sums launches by the NVTX ranges enclosing them
    /// ([`Aggregate::stacks`]), for the flame graph: without the sums only the report
    /// prints (no class's duration histogram, no range's kernel totals, no CPU time in
    /// CUDA calls: the `api_calls`, `api_tallies` and `gemm_calls` tables are not
    /// read).
    pub fn with_stacks() -> Aggregator {
        let mut a = Aggregator::default();
        a.out.stacks = Some(Stacks::default());
        a.without_report_sums = true;
        // Nothing of the CUDA calls but launches is in a profile.
        a.skip = &[TableId::ApiCalls, TableId::ApiTallies, TableId::GemmCalls];
        a
    }

    /// An aggregator for the kernel rows alone (classes, their counters and fitted
    /// rates): the `launches` and `markers` tables are not read (nor the CUDA calls'
    /// and GEMM calls' spans), so
    /// [`Aggregate::ranges`] is empty and no kernel has its launch; every other
    /// table is read and joined as for the report, and the skipped tables' records
    /// still count towards the join window ([`Aggregator::add_skipped_rows`]), so the
    /// classes are the report's, less the durations' histograms (which only the report
    /// prints).
    pub fn kernel_rows_only(mut self) -> Aggregator {
        self.skip = &[
            TableId::Launches,
            TableId::Markers,
            TableId::ApiCalls,
            TableId::ApiTallies,
            TableId::GemmCalls,
        ];
        self.without_report_sums = true;
        self
    }

    /// The tables this aggregator does not need read.
    pub fn skipped_tables(&self) -> &'static [TableId] {
        self.skip
    }

    /// Counts `rows` records of skipped tables of the current part towards the join
    /// window, as if they had been read.
    pub fn add_skipped_rows(&mut self, rows: u64) {
        self.rows += rows;
    }

    /// Records the join window holds now.
    pub fn held(&self) -> usize {
        self.joiner.held() + self.spans.len() + self.windows.len() + self.out.api_calls.held()
    }

    /// Folds in NVML readings of the session being read, in the order taken.
    pub fn add_device_samples(&mut self, samples: &[DeviceSample]) {
        self.telemetry.add(self.session, samples);
    }

    /// Folds in one part's records.
    pub fn add_part(&mut self, records: Vec<(u32, Record)>) {
        self.add_records(records.into_iter());
        self.end_part();
    }

    /// Starts reading another session, named `name`: what is still waiting in the
    /// join window is finalized first (sessions do not share kernels), and its
    /// processes get keys of their own, so that pids that repeat across machines
    /// never mix.
    pub fn next_session(&mut self, name: String) {
        if self.out.sessions.is_empty() {
            self.out.sessions.push(name);
            return;
        }
        let mut joiner = std::mem::take(&mut self.joiner);
        joiner.finish(|j| self.finalize(j));
        self.joiner = joiner;
        self.place_calls(|_| true);
        self.attribute(true);
        self.session = self.out.sessions.len();
        self.out.sessions.push(name);
        self.keys.clear();
    }

    /// The key of `pid` of the session being read.
    fn key(&mut self, pid: u32) -> u32 {
        if self.session == 0 {
            return pid;
        }
        let next = OTHER_SESSIONS + self.out.others.len() as u32;
        let session = self.session;
        let others = &mut self.out.others;
        *self.keys.entry(pid).or_insert_with(|| {
            others.insert(next, (session, pid));
            next
        })
    }

    /// Folds in some of the current part's records (a part may come table by table).
    pub fn add_records(&mut self, records: impl ExactSizeIterator<Item = (u32, Record)>) {
        self.rows += records.len() as u64;
        for (pid, record) in records {
            let pid = self.key(pid);
            if let Some(key) = impossible(&record) {
                *self.out.impossible.entry(key).or_default() += 1;
                continue;
            }
            self.record(pid, record);
        }
    }

    /// [`Aggregator::add_records`] of records screened already: `read` records were
    /// read, of which `screened` were impossible ((pid, [`impossible`]'s kind and
    /// reason) each, counted here) and `records` are the others, in order.
    pub fn add_screened(
        &mut self,
        records: impl Iterator<Item = (u32, Record)>,
        read: u64,
        screened: &[(u32, (&'static str, &'static str))],
    ) {
        self.rows += read;
        for &(pid, key) in screened {
            self.key(pid);
            *self.out.impossible.entry(key).or_default() += 1;
        }
        for (pid, record) in records {
            let pid = self.key(pid);
            self.record(pid, record);
        }
    }

    /// Ends the current part: finalizes the kernels that have waited long enough.
    pub fn end_part(&mut self) {
        let rows = std::mem::take(&mut self.rows);
        let mut joiner = std::mem::take(&mut self.joiner);
        joiner.end_part(rows, |j| self.finalize(j));
        self.part += 1;
        self.place_calls(|p| joiner.waited(p, 1));
        self.joiner = joiner;
        let joiner = &self.joiner;
        self.out.ranges.forget(|p| joiner.waited(p, 2));
        self.attribute(false);
    }

    /// The aggregate of the kernels finalized so far (a live view between parts; what
    /// [`Aggregator::finish`] completes: counter plans are resolved as far as the
    /// FLOP counters they plan, sampling windows and unjoined counts are not).
    pub fn so_far(&mut self) -> &Aggregate {
        for (pid, plan) in &self.plans {
            if plan.counter_mode() != Some(CounterMode::Kernel) {
                continue;
            }
            for id in plan.groups.iter().flatten() {
                let out = &mut self.out;
                if let Some(name) = out.string(*pid, *id).filter(|n| flop_metric(n).is_some()) {
                    let name = name.to_string();
                    out.planned_flops.entry(*pid).or_default().insert(name);
                }
            }
        }
        &self.out
    }

    /// Finalizes every kernel waiting in the join window now, as the end of the
    /// session would (a live view at the end of a run), and completes the sampling
    /// windows' attribution and fit: nothing more is added after this.
    pub fn flush(&mut self) {
        let mut joiner = std::mem::take(&mut self.joiner);
        joiner.finish(|j| self.finalize(j));
        self.joiner = joiner;
        self.place_calls(|_| true);
        self.attribute(true);
        if let Some(a) = self.attributor.take() {
            self.out.sampled = Some(a.finish());
        }
        if let Some(d) = self.deconvolver.take() {
            self.out.fitted = Some(d.finish());
        }
    }

    /// From now on, the GPU time of finalized kernels is also kept per (pid, device,
    /// class) and bin of `bin_ns` of the session's clock, until taken
    /// ([`Aggregator::take_binned`]): what a wall-clock window needs of them.
    pub fn bin_kernel_time(&mut self, bin_ns: u64) {
        self.binned_since = Some((bin_ns.max(1), AHashMap::new()));
    }

    /// The kernel time binned since the previous call (see
    /// [`Aggregator::bin_kernel_time`]; empty unless asked for).
    pub fn take_binned(&mut self) -> AHashMap<BinKey, u64> {
        match &mut self.binned_since {
            Some((_, m)) => std::mem::take(m),
            None => AHashMap::new(),
        }
    }

    /// The aggregate of every part added.
    pub fn finish(mut self) -> Aggregate {
        let mut joiner = std::mem::take(&mut self.joiner);
        joiner.finish(|j| self.finalize(j));
        self.place_calls(|_| true);
        self.attribute(true);
        self.out.gemm_unjoined = joiner.gemm_unjoined;
        self.out.gemm_cycles = joiner.gemm_cycles;
        self.out.counters_unattributed = joiner.counters_unattributed;
        self.out.sampled = self.attributor.map(Attributor::finish);
        self.out.fitted = self.deconvolver.map(Deconvolver::finish);
        self.out.telemetry = self.telemetry.finish();
        for ((pid, device, id), (n, sum)) in self.samples {
            let name = self.out.metric_name(pid, id);
            let e = self.out.samples.entry((pid, device, name)).or_default();
            e.0 += n;
            e.1 += sum;
        }
        for (pid, plan) in self.plans {
            let out = &mut self.out;
            let groups: Vec<Vec<String>> = plan
                .groups
                .iter()
                .map(|g| g.iter().map(|&m| out.metric_name(pid, m)).collect())
                .collect();
            if plan.counter_mode() == Some(CounterMode::Kernel) {
                for id in plan.groups.iter().flatten() {
                    if let Some(name) = out.string(pid, *id).filter(|n| flop_metric(n).is_some()) {
                        let name = name.to_string();
                        out.planned_flops.entry(pid).or_default().insert(name);
                    }
                }
            }
            out.plans.push(PlanSummary {
                pid: out.pid(pid),
                device_id: plan.device_id,
                chip: plan.chip,
                mode: plan.mode,
                policy: plan.policy,
                groups,
            });
        }
        self.out
    }

    fn process(&mut self, pid: u32) -> &mut ProcessSummary {
        // Records come in runs of one process: its index is kept from the last one.
        if let Some((last, i)) = self.last_process {
            if last == pid {
                return &mut self.out.processes[i];
            }
        }
        let processes = &mut self.out.processes;
        let others = &self.out.others;
        let i = *self.process_index.entry(pid).or_insert_with(|| {
            let (session, real) = others.get(&pid).copied().unwrap_or((0, pid));
            processes.push(ProcessSummary {
                pid: real,
                session,
                known: false,
                command: Vec::new(),
                host: String::new(),
                cupti_api_version: 0,
                cupti_layouts: String::new(),
                cupti_path: String::new(),
                devices: Vec::new(),
                kernels: 0,
                kernel_ns: 0,
                cupti_kernels: 0,
                cupti_kernel_ns: 0,
                untimed_kernels: 0,
                finished: false,
                capture: None,
            });
            processes.len() - 1
        });
        self.last_process = Some((pid, i));
        &mut processes[i]
    }

    fn record(&mut self, pid: u32, record: Record) {
        let p = self.process(pid);
        match record {
            Record::Process(info) => {
                p.known = true;
                p.command = info.command;
                p.host = info.host;
                p.cupti_api_version = info.cupti_api_version;
                p.cupti_layouts = info.cupti_layouts;
                p.cupti_path = info.cupti_path;
            }
            Record::Device(d) => {
                if !p.devices.iter().any(|x| x.id == d.id) {
                    p.devices.push(DeviceSummary {
                        id: d.id,
                        name: d.name.clone(),
                        compute_capability: d.compute_capability,
                        sm_count: d.sm_count,
                        uuid: super::names::gpu_uuid(&d.uuid),
                    });
                }
                self.out.devices.entry((pid, d.id)).or_insert(d);
            }
            Record::String(s) => {
                self.metric_roles.remove(&(pid, s.id));
                self.out.strings.insert((pid, s.id), s.text);
            }
            Record::Kernel(k) => {
                if is_cupti_kernel(&k, self.out.strings.get(&(pid, k.name))) {
                    let p = self.process(pid);
                    p.cupti_kernels += 1;
                    p.cupti_kernel_ns = p
                        .cupti_kernel_ns
                        .saturating_add(k.end_ns.saturating_sub(k.start_ns));
                } else {
                    if k.start_ns == 0 && k.end_ns == 0 {
                        self.process(pid).untimed_kernels += 1;
                    }
                    self.joiner.kernel(pid, k)
                }
            }
            Record::Launch(l) => {
                if !self.without_report_sums {
                    self.out.api_calls.launch(self.part, pid, &l);
                }
                self.joiner
                    .launch(pid, l.correlation_id, LaunchInfo::from(&l))
            }
            Record::Gemm(g) => self.joiner.gemm(pid, g),
            Record::GraphNode(n) => self.joiner.graph_node(pid, n.node_id, n.correlation_id),
            Record::GraphNodeCloned(c) => {
                self.joiner
                    .graph_node_cloned(pid, c.node_id, c.original_node_id)
            }
            Record::KernelCounters(c) => self.joiner.kernel_counters(pid, c),
            Record::Memcpy(m) => {
                let t = self.out.transfers.entry((false, m.copy_kind)).or_default();
                t.0 += 1;
                t.1 = t.1.saturating_add(m.bytes);
                t.2 = t.2.saturating_add(m.end_ns.saturating_sub(m.start_ns));
            }
            Record::Memset(m) => {
                let t = self.out.transfers.entry((true, 0)).or_default();
                t.0 += 1;
                t.1 = t.1.saturating_add(m.bytes);
                t.2 = t.2.saturating_add(m.end_ns.saturating_sub(m.start_ns));
            }
            Record::Marker(m) => {
                let name = self.out.string(pid, m.name).unwrap_or("").to_string();
                let domain = self.out.string(pid, m.domain).unwrap_or("").to_string();
                self.out.ranges.marker(pid, &m, &name, &domain, self.part);
            }
            Record::Dropped(d) => {
                let i = d.source.index();
                self.out.dropped[i] = self.out.dropped[i].saturating_add(d.records);
            }
            Record::End(_) => p.finished = true,
            Record::Capture(c) => p.capture = Some(c),
            Record::CounterPlan(plan) => {
                if plan.counter_mode() == Some(CounterMode::Sampling) {
                    self.sampling = true;
                }
                self.plans.push((pid, *plan));
            }
            Record::CounterStatus(s) => {
                let pid = self.out.pid(pid);
                self.out.counter_statuses.push(StatusSummary {
                    pid,
                    message: s.message,
                })
            }
            Record::CounterSample(s) => {
                self.sampling = true;
                for m in &s.metrics {
                    let e = self.samples.entry((pid, s.device_id, m.name)).or_default();
                    e.0 += 1;
                    e.1 += m.value;
                }
                self.windows.push((self.part, pid, s));
            }
            Record::GemmStatus(s) => {
                let pid = self.out.pid(pid);
                self.out.gemm_statuses.push((pid, s.message))
            }
            Record::ApiCall(c) => self.out.api_calls.push(self.part, pid, c),
            Record::ApiTally(t) => self.out.api_calls.count(pid, &t),
            // A GEMM call's span is for traces (`output/trace/gemm_ops.rs`).
            Record::Context(_) | Record::Overhead(_) | Record::GemmCall(_) => {}
        }
    }

    /// Places the traced API calls of the parts `ready` accepts among the threads and
    /// NVTX ranges (after the kernels of the same parts, before their ranges go).
    fn place_calls(&mut self, ready: impl Fn(usize) -> bool) {
        let Aggregate {
            api_calls,
            ranges,
            strings,
            ..
        } = &mut self.out;
        api_calls.place(ranges, ready, |pid, id| {
            strings
                .get(&(pid, id))
                .cloned()
                .unwrap_or_else(|| format!("#{id}"))
        });
    }

    /// One joined kernel into its class, its ranges and the sampling spans.
    fn finalize(&mut self, j: Joined) {
        let k = j.kernel;
        let pid = j.pid;
        let ns = k.end_ns.saturating_sub(k.start_ns);
        if k.start_ns != 0 || k.end_ns != 0 {
            let span = self
                .out
                .kernel_spans
                .entry((pid, k.device_id))
                .or_insert((k.start_ns, k.end_ns));
            span.0 = span.0.min(k.start_ns);
            span.1 = span.1.max(k.end_ns);
        }
        let key = ClassKey::of(&j);
        let strings = &self.out.strings;
        let class = self.out.classes.of(key, || {
            if k.name == 0 {
                String::new()
            } else {
                strings.get(&(pid, k.name)).cloned().unwrap_or_default()
            }
        });

        // Counters: every record's metrics; FLOP metrics and DRAM bytes once per
        // launch.
        let mut read = None;
        let mut write = None;
        let metrics = &mut self.out.metrics;
        let roles = &mut self.metric_roles;
        let c = &mut self.out.classes.list[class];
        if !j.counters.is_empty() {
            let records = j.counters;
            c.with_counters += 1;
            let mut seen: Vec<u32> = Vec::new();
            for r in records {
                for m in &r.metrics {
                    let Some((id, role)) = metric_role(roles, metrics, strings, pid, m.name) else {
                        let id = metrics.id(&format!("#{}", m.name));
                        let e = c.metrics.entry(id).or_default();
                        e.0 += 1;
                        e.1 += m.value;
                        continue;
                    };
                    let e = c.metrics.entry(id).or_default();
                    e.0 += 1;
                    e.1 += m.value;
                    if seen.contains(&id) {
                        continue;
                    }
                    seen.push(id);
                    match role {
                        MetricRole::DramRead => read = Some(m.value),
                        MetricRole::DramWrite => write = Some(m.value),
                        MetricRole::Flop => {
                            let e = c.flop_metrics.entry(id).or_default();
                            e.0 += 1;
                            e.1 += m.value;
                        }
                        MetricRole::Other => {}
                    }
                }
            }
        }
        let bytes = match (read, write) {
            (None, None) => None,
            (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        };
        c.tally.add(ns, bytes);
        if k.graph_node_id != 0 {
            c.graph_calls += 1;
        }
        c.registers_per_thread = c.registers_per_thread.max(k.registers_per_thread);
        let shared = shared_memory(k);
        c.shared_memory = (c.shared_memory.0.min(shared), c.shared_memory.1.max(shared));
        c.min_ns = c.min_ns.min(ns);
        c.max_ns = c.max_ns.max(ns);
        if !self.without_report_sums {
            c.durations.add(ns);
        }

        if let Some((bin_ns, bins)) = &mut self.binned_since {
            for (bin, ns) in split_into_bins(k.start_ns, k.end_ns, *bin_ns) {
                let key = BinKey {
                    pid,
                    device_id: k.device_id,
                    class,
                    bin,
                };
                *bins.entry(key).or_default() += ns;
            }
        }
        self.out.kernel_count += 1;
        self.out.kernel_ns = self.out.kernel_ns.saturating_add(ns);
        let p = self.process(pid);
        p.kernels += 1;
        p.kernel_ns = p.kernel_ns.saturating_add(ns);

        let launch = j.launch.map(|l| (l.thread_id, l.start_ns));
        if let Some(stacks) = &mut self.out.stacks {
            stacks.add_enclosed(
                &self.out.ranges,
                (pid, launch, k.start_ns),
                class,
                ns,
                bytes,
            );
        }
        if !self.without_report_sums {
            self.out
                .ranges
                .cover(pid, launch, k.start_ns, class, ns, bytes);
        }
        if self.sampling {
            self.spans.push(Span {
                part: self.part,
                pid,
                device_id: k.device_id,
                start_ns: k.start_ns,
                end_ns: k.end_ns,
                class,
            });
        }
    }

    /// Attributes the sampling windows whose launches have all been finalized (all of
    /// them at the end), then forgets the launches no later window can overlap.
    fn attribute(&mut self, all: bool) {
        let joiner = &self.joiner;
        let ready: Vec<Window> = {
            let mut ready = Vec::new();
            let mut keep = Vec::new();
            for (part, pid, w) in std::mem::take(&mut self.windows) {
                if all || joiner.waited(part, 2) {
                    ready.push(Window {
                        pid,
                        device_id: w.device_id,
                        start_ns: w.start_ns,
                        end_ns: w.end_ns,
                        metrics: w
                            .metrics
                            .iter()
                            .map(|m| (self.out.metric_name(pid, m.name), m.value))
                            .collect(),
                    });
                } else {
                    keep.push((part, pid, w));
                }
            }
            self.windows = keep;
            ready
        };
        let before = ready.len();
        let ready: Vec<Window> = ready.into_iter().filter(consistent).collect();
        let inconsistent = (before - ready.len()) as u64;
        if inconsistent > 0 {
            self.deconvolver
                .get_or_insert_with(Deconvolver::default)
                .leave_out_inconsistent(inconsistent);
        }
        if !ready.is_empty() {
            let classes = &self.out.classes.list;
            let spans: Vec<KernelSpan> = self
                .spans
                .iter()
                .map(|s| KernelSpan {
                    pid: s.pid,
                    device_id: s.device_id,
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    mangled: &classes[s.class].mangled,
                })
                .collect();
            self.attributor
                .get_or_insert_with(Attributor::default)
                .add(&spans, &ready);
            let spans: Vec<ClassSpan> = self
                .spans
                .iter()
                .map(|s| ClassSpan {
                    pid: s.pid,
                    device_id: s.device_id,
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    class: s.class,
                })
                .collect();
            self.deconvolver
                .get_or_insert_with(Deconvolver::default)
                .add(&spans, &ready);
        }
        let oldest = self.windows.iter().map(|(p, _, _)| *p).min();
        self.spans
            .retain(|s| !joiner.waited(s.part, 3) || oldest.is_some_and(|p| p <= s.part));
    }
}

/// The aggregate of `records` read as one part: every join is made over the whole.
pub fn aggregate(records: &[(u32, Record)]) -> Aggregate {
    let mut a = Aggregator::default();
    a.add_part(records.to_vec());
    a.finish()
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
