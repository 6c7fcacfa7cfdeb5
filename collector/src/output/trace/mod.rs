//! The session as a timeline: built while the session is read part by part, written
//! as it is built, in Perfetto's protobuf trace format ([`perfetto`]) or as Chrome
//! trace-event JSON ([`chrome`]).
//!
//! Tracks: each profiled process; in it every CPU thread that launched work or made
//! a push/pop NVTX range, and every `(device, stream)` the GPU ran work on; each
//! start/end NVTX range on a track of its own (such ranges may overlap). A process or
//! track is declared with its first slice, so only what the trace shows appears.
//!
//! Slices: kernels, copies and sets on their stream; launch calls and push/pop NVTX
//! ranges on their thread; start/end ranges on their own track. Flows: from each
//! launch call to the kernels it launched, matched by (process, correlation id).
//!
//! What is held in memory besides the part being read ([`TraceBuilder::part`]): the
//! strings of each process (kernel names demangled once), the tracks, the NVTX ranges
//! opened and not yet closed, and the launch calls waiting for their kernel. A launch
//! waits for the part it is in and [`HOLD_PARTS`] more (a kernel's record reaches the
//! session after its launch's, usually in the same part or the next); a launch of a
//! CUDA graph waits that long for all of its kernels, any other launch until its
//! kernel. Launches no kernel was found for are counted
//! ([`TraceStats::launches_without_kernel`]): a launch captured into a graph or one
//! that failed runs no kernel.
//!
//! With a [`Window`], only slices that overlap it are written, whole; a flow is
//! written when both its launch and its kernel are.

pub mod api_calls;
pub mod chrome;
pub mod event;
mod gemm_ops;
mod joined;
pub mod kineto;
pub mod perfetto;
pub mod prepass;
mod proto;
mod proto_writer;

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ahash::AHashMap;
use std::io::{self, Write};

use wire::{marker_flags, Record};

use crate::analysis::classes::ClassKey;
use crate::analysis::correlation_map::CorrelationMap;
use crate::analysis::gemm::GemmShape;
use crate::analysis::join;
use crate::analysis::names::{copy_kind_name, demangle, launch_api_name};
use event::{Arg, Category, FlowIn, Process, Sink, Slice, Source, Track, TrackKind, Value};
use joined::JoinState;

/// Parts a launch waits for its kernel after the part it is in.
pub const HOLD_PARTS: u64 = 2;

/// The trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Perfetto's protobuf trace (TracePacket / TrackEvent): open it in
    /// ui.perfetto.dev or query it with Perfetto's trace processor.
    Perfetto,
    /// Chrome trace-event JSON, for chrome://tracing and small runs (about 1 KB per
    /// kernel).
    Chrome,
    /// The PyTorch profiler's (Kineto's) JSON, one file per process, for Holistic
    /// Trace Analysis, TraceLens and the other tools that read PyTorch traces.
    Kineto,
}

/// A time span, absolute ns (the session's `CLOCK_REALTIME` timebase), both ends
/// included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from_ns: u64,
    pub to_ns: u64,
}

impl Window {
    /// Whether `[start, end]` overlaps the window.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        start <= self.to_ns && end >= self.from_ns
    }
}

/// What a trace holds, and what could not be put in it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceStats {
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub launches: u64,
    /// Closed NVTX ranges written.
    pub ranges: u64,
    /// Flows from a launch to a kernel written.
    pub flows: u64,
    /// Launch calls no kernel was found for in their part and the [`HOLD_PARTS`]
    /// after it.
    pub launches_without_kernel: u64,
    /// NVTX ranges opened and never closed (not written).
    pub ranges_never_closed: u64,
    /// NVTX range ends without an open start.
    pub range_ends_without_start: u64,
    /// NVTX ranges ending before they start (not written).
    pub ranges_ending_before_start: u64,
    /// Push/pop NVTX ranges projected onto a GPU stream (joined builds only).
    pub gpu_ranges: u64,
    /// CUDA calls traced one by one (not launches) written.
    pub api_calls: u64,
    /// Waits written as the GPU sees them ([`event::Sink::wants_syncs`]).
    pub syncs: u64,
    /// GEMM calls written as operators ([`event::Sink::wants_gemm_ops`]).
    pub gemm_ops: u64,
}

impl TraceStats {
    /// Slices written.
    pub fn slices(&self) -> u64 {
        self.kernels
            .saturating_add(self.memcpys)
            .saturating_add(self.memsets)
            .saturating_add(self.launches)
            .saturating_add(self.api_calls)
            .saturating_add(self.ranges)
    }
}

/// The earliest timestamp of a kernel, copy, set, launch, CUDA or GEMM call or NVTX
/// marker in
/// `records`: the origin of [`Window`]s given in seconds, and time 0 of the Chrome
/// JSON.
pub fn first_timestamp(records: &[(u32, Record)]) -> Option<u64> {
    records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Kernel(k) => Some(k.start_ns),
            Record::Memcpy(m) => Some(m.start_ns),
            Record::Memset(m) => Some(m.start_ns),
            Record::Launch(l) => Some(l.start_ns),
            Record::ApiCall(c) => Some(c.start_ns),
            Record::GemmCall(c) => Some(c.start_ns),
            Record::Marker(m) => Some(m.timestamp_ns),
            _ => None,
        })
        .min()
}

/// The id of the flow from the launch with `correlation_id` in `pid`.
pub fn flow_id(pid: u32, correlation_id: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(correlation_id)
}

struct ProcessState {
    id: u64,
    command: Vec<String>,
    declared: bool,
    /// Threads and streams declared so far.
    tracks: u32,
}

/// A copy's or set's call waiting for its copy or set: the part it was read in, and
/// its track and the middle of the call when it was written.
type PendingCall = (u64, Option<(u64, u64)>);

/// A GEMM call whose kernels are still coming (`gemm_ops.rs`): its record, the span
/// of its launches so far, and how many.
#[derive(Debug, Clone, Copy)]
struct OpenGemmCall {
    gemm: wire::Gemm,
    start_ns: u64,
    end_ns: u64,
    launches: u32,
}

struct PendingLaunch {
    /// The part it was read in.
    part: u64,
    /// Its track and the middle of the call, when it was written.
    written: Option<(u64, u64)>,
    matched: bool,
}

struct OpenRange {
    thread_id: u64,
    name: String,
    domain: String,
    start_ns: u64,
    /// Its instance in the joined build's [`joined::GpuRanges`].
    gpu: Option<u64>,
}

/// Builds the trace from a session's records, part by part, into a [`Sink`].
pub struct TraceBuilder<S: Sink> {
    sink: S,
    window: Option<Window>,
    part: u64,
    next_id: u64,
    processes: AHashMap<u32, ProcessState>,
    tracks: AHashMap<(u32, TrackKind), Track>,
    strings: AHashMap<(u32, u32), String>,
    kernel_names: AHashMap<(u32, u32), String>,
    launch_names: AHashMap<(u32, bool), String>,
    pending: CorrelationMap<PendingLaunch>,
    /// Copy and set calls waiting for their copy or set (`api_calls.rs`).
    pending_calls: AHashMap<(u32, u32), PendingCall>,
    /// Per process: each event handle's last record (stream, correlation id).
    event_records: AHashMap<u32, AHashMap<u64, (u32, u32)>>,
    /// (pid, context id) -> device.
    context_devices: AHashMap<(u32, u32), u32>,
    /// Per (pid, thread): the GEMM call whose kernels are coming (`gemm_ops.rs`).
    gemm_calls: AHashMap<(u32, u64), OpenGemmCall>,
    /// Per process: the operators written so far.
    gemm_op_ids: AHashMap<u32, u64>,
    /// (pid, call) -> the GEMM call's own span, until its operator is written
    /// (`gemm_ops.rs`, which bounds how many are held: the lowest call numbers, the
    /// oldest, go first).
    gemm_spans: BTreeMap<(u32, u64), (u64, u64)>,
    open_ranges: AHashMap<(u32, u32), OpenRange>,
    stats: TraceStats,
    /// When the sink joins kernels ([`Sink::joined`]).
    join: Option<JoinState>,
}

impl<S: Sink> TraceBuilder<S> {
    /// DRAM bytes per ns fitted to PM sampling windows, per class
    /// (`efficiency::fitted_bytes_per_ns`), for the launches that measured none (a
    /// sink that joins kernels only).
    pub fn with_fitted(mut self, fitted: HashMap<ClassKey, f64>) -> TraceBuilder<S> {
        if let Some(j) = &mut self.join {
            j.fitted = fitted;
        }
        self
    }

    /// Each GEMM shape's role in the model (`trace --model`), given to its kernels.
    pub fn with_roles(mut self, roles: HashMap<GemmShape, String>) -> TraceBuilder<S> {
        if let Some(j) = &mut self.join {
            j.roles = roles.into_iter().map(|(s, r)| (s, Arc::from(r))).collect();
        }
        self
    }

    pub fn new(sink: S, window: Option<Window>) -> TraceBuilder<S> {
        let join = sink.joined().then(JoinState::new);
        TraceBuilder {
            sink,
            window,
            part: 0,
            next_id: 1,
            processes: AHashMap::new(),
            tracks: AHashMap::new(),
            strings: AHashMap::new(),
            kernel_names: AHashMap::new(),
            launch_names: AHashMap::new(),
            pending: CorrelationMap::default(),
            pending_calls: AHashMap::new(),
            event_records: AHashMap::new(),
            context_devices: AHashMap::new(),
            gemm_calls: AHashMap::new(),
            gemm_op_ids: AHashMap::new(),
            gemm_spans: BTreeMap::new(),
            open_ranges: AHashMap::new(),
            stats: TraceStats::default(),
            join,
        }
    }

    fn keep(&self, start: u64, end: u64) -> bool {
        self.window.is_none_or(|w| w.overlaps(start, end))
    }

    /// The track `kind` of `pid`, declared (with its process) the first time.
    fn track(&mut self, pid: u32, kind: TrackKind) -> io::Result<u64> {
        if kind != TrackKind::Range {
            if let Some(t) = self.tracks.get(&(pid, kind)) {
                return Ok(t.id);
            }
        }
        let next_id = &mut self.next_id;
        let p = self.processes.entry(pid).or_insert_with(|| ProcessState {
            id: take_id(next_id),
            command: Vec::new(),
            declared: false,
            tracks: 0,
        });
        if !p.declared {
            p.declared = true;
            self.sink.process(&Process {
                id: p.id,
                pid,
                command: &p.command,
            })?;
        }
        let index = if kind == TrackKind::Range {
            0
        } else {
            p.tracks += 1;
            p.tracks
        };
        let track = Track {
            id: take_id(&mut self.next_id),
            process: p.id,
            pid,
            index,
            kind,
        };
        self.sink.track(&track)?;
        if kind != TrackKind::Range {
            self.tracks.insert((pid, kind), track);
        }
        Ok(track.id)
    }

    /// Adds one part's records (in the store's table order).
    pub fn part(&mut self, records: &[(u32, Record)]) -> io::Result<()> {
        for (pid, record) in records {
            self.record(*pid, record)?;
        }
        // Launches that have waited long enough for their kernels.
        let part = self.part;
        let mut lost = 0u64;
        self.pending.retain(|_, l| {
            let keep = l.part + HOLD_PARTS > part;
            if !keep && !l.matched {
                lost += 1;
            }
            keep
        });
        self.stats.launches_without_kernel += lost;
        self.expire_calls();
        if self.join.is_some() {
            self.end_joined_part(records.len() as u64, false)?;
        }
        self.part += 1;
        Ok(())
    }

    /// Writes the kernels the joiner finalizes at the end of this part (or, at the
    /// end, all of them) and the NVTX ranges' GPU projections that are done.
    fn end_joined_part(&mut self, rows: u64, last: bool) -> io::Result<()> {
        let Some(mut join) = self.join.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        let mut joiner = std::mem::take(&mut join.joiner);
        let mut each = |j: join::Joined| {
            if result.is_ok() {
                result = self.joined_kernel(&mut join, &j);
            }
        };
        if last {
            joiner.finish(&mut each);
        } else {
            joiner.end_part(rows, &mut each);
        }
        let done = if last {
            join.ranges.take_done(|_| true)
        } else {
            join.ranges.take_done(|part| joiner.waited(part, 2))
        };
        join.joiner = joiner;
        self.join = Some(join);
        result?;
        for r in done {
            self.gpu_range(&r)?;
        }
        Ok(())
    }

    /// A finalized kernel, with its facts.
    fn joined_kernel(&mut self, join: &mut JoinState, j: &join::Joined) -> io::Result<()> {
        let k = j.kernel;
        if let Some(l) = j.launch {
            join.ranges
                .kernel(j.pid, l, (k.device_id, k.stream_id), (k.start_ns, k.end_ns));
        }
        // As a build without joining draws flows: from a launch the builder held.
        let held = join.unmatched.is_empty() || !join.unmatched.remove(&unmatched_key(j.pid, k));
        if !self.keep(k.start_ns, k.end_ns) {
            return Ok(());
        }
        let launch_written = held && j.launch.is_some_and(|l| self.keep(l.start_ns, l.end_ns));
        let facts = join.facts(j, &self.strings, launch_written);
        let flow_in = match j.launch {
            Some(l) if launch_written => Some(FlowIn {
                id: flow_id(j.pid, k.correlation_id),
                // Declared when the launch call was written.
                from_track: self.track(j.pid, TrackKind::Thread(l.thread_id))?,
                from_mid_ns: mid(l.start_ns, l.end_ns),
                graph: k.graph_id != 0,
            }),
            _ => None,
        };
        self.write_kernel(j.pid, k, flow_in, Some(&facts))?;
        if launch_written {
            self.stats.flows += 1;
        }
        if self.sink.wants_gemm_ops() {
            self.gemm_kernel(j)?;
        }
        Ok(())
    }

    /// A push/pop range's projections onto the streams its kernels ran on.
    fn gpu_range(&mut self, r: &joined::Instance) -> io::Result<()> {
        for (&(device, stream), &(start_ns, end_ns)) in &r.extents {
            if !self.keep(start_ns, end_ns) {
                continue;
            }
            let track = self.track(r.pid, TrackKind::Stream { device, stream })?;
            let args = [arg("domain", Value::Str(&r.domain))];
            self.sink.slice(&Slice {
                track,
                category: Category::GpuNvtx,
                name: if r.name.is_empty() {
                    "(unnamed range)"
                } else {
                    &r.name
                },
                start_ns,
                end_ns,
                args: &args,
                flow_out: None,
                flow_in: None,
                source: Source::None,
            })?;
            self.stats.gpu_ranges += 1;
        }
        Ok(())
    }

    fn record(&mut self, pid: u32, record: &Record) -> io::Result<()> {
        if let Some(join) = &mut self.join {
            join.record(pid, record);
        }
        match record {
            Record::Process(p) => {
                let next_id = &mut self.next_id;
                let state = self.processes.entry(pid).or_insert_with(|| ProcessState {
                    id: take_id(next_id),
                    command: Vec::new(),
                    declared: false,
                    tracks: 0,
                });
                if !state.declared && state.command.is_empty() {
                    state.command = p.command.clone();
                }
            }
            Record::String(s) => {
                self.strings.insert((pid, s.id), s.text.clone());
            }
            Record::Context(c) => {
                self.context_devices
                    .insert((pid, c.context_id), c.device_id);
            }
            Record::Launch(l) => self.launch(pid, l)?,
            Record::ApiCall(c) => self.api_call(pid, c)?,
            Record::GemmCall(c) => self.gemm_call_span(pid, c),
            Record::Kernel(k) => self.kernel(pid, k)?,
            Record::Memcpy(m) => {
                let args = [
                    arg("correlation_id", Value::U64(m.correlation_id.into())),
                    arg("bytes", Value::U64(m.bytes)),
                    arg("copy_kind", Value::U64(m.copy_kind.into())),
                    arg("src_kind", Value::U64(m.src_kind.into())),
                    arg("dst_kind", Value::U64(m.dst_kind.into())),
                    arg("graph_node_id", Value::U64(m.graph_node_id)),
                ];
                let stream = (pid, m.device_id, m.stream_id);
                let name = memcpy_name(m.copy_kind);
                let flow_in = self.transfer_flow(pid, m.correlation_id);
                if self.transfer(
                    stream,
                    (Category::Memcpy, name),
                    (m.start_ns, m.end_ns),
                    &args,
                    (Source::Memcpy(m), flow_in),
                )? {
                    self.stats.memcpys += 1;
                }
            }
            Record::Memset(m) => {
                let args = [
                    arg("correlation_id", Value::U64(m.correlation_id.into())),
                    arg("bytes", Value::U64(m.bytes)),
                    arg("value", Value::U64(m.value.into())),
                    arg("memory_kind", Value::U64(m.memory_kind.into())),
                    arg("graph_node_id", Value::U64(m.graph_node_id)),
                ];
                let stream = (pid, m.device_id, m.stream_id);
                let span = (m.start_ns, m.end_ns);
                let source = (Source::Memset(m), self.transfer_flow(pid, m.correlation_id));
                if self.transfer(stream, (Category::Memset, "memset"), span, &args, source)? {
                    self.stats.memsets += 1;
                }
            }
            Record::Marker(m) => self.marker(pid, m)?,
            _ => {}
        }
        Ok(())
    }

    /// A copy or set on its stream's track, when it overlaps the window, with the
    /// flow from its call when that was written; whether it was written.
    fn transfer(
        &mut self,
        (pid, device, stream): (u32, u32, u32),
        (category, name): (Category, &str),
        (start_ns, end_ns): (u64, u64),
        args: &[Arg],
        (source, flow_in): (Source, Option<FlowIn>),
    ) -> io::Result<bool> {
        if !self.keep(start_ns, end_ns) {
            return Ok(false);
        }
        let track = self.track(pid, TrackKind::Stream { device, stream })?;
        self.sink.slice(&Slice {
            track,
            category,
            name,
            start_ns,
            end_ns,
            args,
            flow_out: None,
            flow_in,
            source,
        })?;
        if flow_in.is_some() {
            self.stats.flows += 1;
        }
        Ok(true)
    }

    fn launch(&mut self, pid: u32, l: &wire::Launch) -> io::Result<()> {
        let key = (pid, l.correlation_id);
        // A second launch with the same id (not something CUPTI does) gets no flow.
        let first = !self.pending.contains_key(&key);
        let mut written = None;
        if self.keep(l.start_ns, l.end_ns) {
            let track = self.track(pid, TrackKind::Thread(l.thread_id))?;
            let name = self
                .launch_names
                .entry((l.cbid, l.runtime))
                .or_insert_with(|| launch_api_name(l.cbid, l.runtime));
            let args = [
                arg("correlation_id", Value::U64(l.correlation_id.into())),
                arg("cbid", Value::U64(l.cbid.into())),
                arg("runtime", Value::Bool(l.runtime)),
            ];
            self.sink.slice(&Slice {
                track,
                category: Category::CudaApi,
                name,
                start_ns: l.start_ns,
                end_ns: l.end_ns,
                args: &args,
                flow_out: first.then(|| flow_id(pid, l.correlation_id)),
                flow_in: None,
                source: Source::Launch(l),
            })?;
            self.stats.launches += 1;
            written = Some((track, mid(l.start_ns, l.end_ns)));
        }
        if first {
            self.pending.insert(
                key,
                PendingLaunch {
                    part: self.part,
                    written,
                    matched: false,
                },
            );
        }
        Ok(())
    }

    fn kernel(&mut self, pid: u32, k: &wire::Kernel) -> io::Result<()> {
        let key = (pid, k.correlation_id);
        let written = self.keep(k.start_ns, k.end_ns);
        let graph = k.graph_id != 0;
        let mut flow_in = None;
        // One lookup: kernels arrive in nearly launch order, the map keeps neighbouring
        // ids in neighbouring buckets (`correlation_map.rs`).
        match self.pending.entry(key) {
            Entry::Occupied(mut launch) => {
                let l = launch.get_mut();
                l.matched = true;
                if let (true, Some((from_track, from_mid_ns))) = (written, l.written) {
                    flow_in = Some(FlowIn {
                        id: flow_id(pid, k.correlation_id),
                        from_track,
                        from_mid_ns,
                        graph,
                    });
                }
                // A launch of one kernel is done; a graph's may have more to come.
                if !graph {
                    launch.remove();
                }
            }
            Entry::Vacant(_) => {
                if let Some(join) = &mut self.join {
                    join.unmatched.insert(unmatched_key(pid, k));
                }
            }
        }
        if let Some(join) = &mut self.join {
            // Written when the joiner finalizes it (see `joined_kernel`).
            join.joiner.kernel(pid, k.clone());
            return Ok(());
        }
        if !written {
            return Ok(());
        }
        self.write_kernel(pid, k, flow_in, None)?;
        if flow_in.is_some() {
            self.stats.flows += 1;
        }
        Ok(())
    }

    /// Kernel `k` of `pid` on its stream.
    fn write_kernel(
        &mut self,
        pid: u32,
        k: &wire::Kernel,
        flow_in: Option<FlowIn>,
        facts: Option<&event::KernelFacts>,
    ) -> io::Result<()> {
        let track = self.track(
            pid,
            TrackKind::Stream {
                device: k.device_id,
                stream: k.stream_id,
            },
        )?;
        let name: &str = match self.kernel_names.get(&(pid, k.name)) {
            Some(n) => n,
            None => {
                let n = match self.strings.get(&(pid, k.name)) {
                    Some(text) if k.name != 0 => demangle(text),
                    _ => "(unnamed)".to_string(),
                };
                self.kernel_names.entry((pid, k.name)).or_insert(n)
            }
        };
        let mut args = vec![
            arg("correlation_id", Value::U64(k.correlation_id.into())),
            arg("device", Value::U64(k.device_id.into())),
            arg("context", Value::U64(k.context_id.into())),
            arg("stream", Value::U64(k.stream_id.into())),
            arg("grid", Value::Dim(k.grid)),
            arg("block", Value::Dim(k.block)),
            arg(
                "registers_per_thread",
                Value::U64(k.registers_per_thread.into()),
            ),
            arg(
                "static_shared_memory",
                Value::I64(k.static_shared_memory.into()),
            ),
            arg(
                "dynamic_shared_memory",
                Value::I64(k.dynamic_shared_memory.into()),
            ),
            arg("graph_id", Value::U64(k.graph_id.into())),
            arg("graph_node_id", Value::U64(k.graph_node_id)),
        ];
        if let Some(f) = facts {
            f.push_args(k.end_ns.saturating_sub(k.start_ns), &mut args);
        }
        self.sink.slice(&Slice {
            track,
            category: Category::Kernel,
            name,
            start_ns: k.start_ns,
            end_ns: k.end_ns,
            args: &args,
            flow_out: None,
            flow_in,
            source: Source::Kernel(k, facts),
        })?;
        self.stats.kernels += 1;
        Ok(())
    }

    fn marker(&mut self, pid: u32, m: &wire::Marker) -> io::Result<()> {
        let text = |id: u32| -> String {
            if id == 0 {
                return String::new();
            }
            self.strings.get(&(pid, id)).cloned().unwrap_or_default()
        };
        if m.flags & marker_flags::START != 0 {
            let (name, domain) = (text(m.name), text(m.domain));
            let gpu = match &mut self.join {
                Some(join) if m.thread_id != 0 && self.sink.projects_ranges() => {
                    Some(join.ranges.start(
                        pid,
                        m.thread_id,
                        name.clone(),
                        domain.clone(),
                        m.timestamp_ns,
                    ))
                }
                _ => None,
            };
            let range = OpenRange {
                thread_id: m.thread_id,
                name,
                domain,
                start_ns: m.timestamp_ns,
                gpu,
            };
            // A second start under an id still open leaves the first one unclosed.
            if let Some(old) = self.open_ranges.insert((pid, m.id), range) {
                self.stats.ranges_never_closed += 1;
                self.discard_gpu_range(old.gpu);
            }
            return Ok(());
        }
        if m.flags & marker_flags::END == 0 {
            return Ok(());
        }
        let Some(r) = self.open_ranges.remove(&(pid, m.id)) else {
            self.stats.range_ends_without_start += 1;
            return Ok(());
        };
        let end_ns = m.timestamp_ns;
        if end_ns < r.start_ns {
            self.stats.ranges_ending_before_start += 1;
            self.discard_gpu_range(r.gpu);
            return Ok(());
        }
        if let (Some(join), Some(id)) = (&mut self.join, r.gpu) {
            join.ranges.close(id, end_ns, self.part as usize);
        }
        if !self.keep(r.start_ns, end_ns) {
            return Ok(());
        }
        // A range naming a thread is a push/pop range of that thread; one without
        // is a start/end range of the process.
        let kind = if r.thread_id != 0 {
            TrackKind::Thread(r.thread_id)
        } else {
            TrackKind::Range
        };
        let track = self.track(pid, kind)?;
        let args = [
            arg("domain", Value::Str(&r.domain)),
            arg("marker_id", Value::U64(m.id.into())),
        ];
        self.sink.slice(&Slice {
            track,
            category: Category::Nvtx,
            name: if r.name.is_empty() {
                "(unnamed range)"
            } else {
                &r.name
            },
            start_ns: r.start_ns,
            end_ns,
            args: &args,
            flow_out: None,
            flow_in: None,
            source: Source::None,
        })?;
        self.stats.ranges += 1;
        Ok(())
    }

    fn discard_gpu_range(&mut self, id: Option<u64>) {
        if let (Some(join), Some(id)) = (&mut self.join, id) {
            join.ranges.discard(id);
        }
    }

    /// After the last part: counts what was left waiting, finishes the output.
    pub fn finish(mut self) -> io::Result<(S, TraceStats)> {
        self.end_joined_part(0, true)?;
        self.finish_gemm_ops()?;
        self.stats.launches_without_kernel +=
            self.pending.values().filter(|l| !l.matched).count() as u64;
        self.stats.ranges_never_closed += self.open_ranges.len() as u64;
        self.sink.finish()?;
        Ok((self.sink, self.stats))
    }
}

/// A kernel's key in [`joined::JoinState::unmatched`].
fn unmatched_key(pid: u32, k: &wire::Kernel) -> (u32, u32, u64, u64) {
    (pid, k.correlation_id, k.graph_node_id, k.start_ns)
}

/// `*next` (then one more).
fn take_id(next: &mut u64) -> u64 {
    let id = *next;
    *next += 1;
    id
}

fn arg<'a>(name: &'static str, value: Value<'a>) -> Arg<'a> {
    Arg { name, value }
}

fn mid(start: u64, end: u64) -> u64 {
    start + end.saturating_sub(start) / 2
}

/// "memcpy HtoD", ...
fn memcpy_name(kind: u8) -> &'static str {
    match copy_kind_name(kind) {
        "HtoD" => "memcpy HtoD",
        "DtoH" => "memcpy DtoH",
        "HtoA" => "memcpy HtoA",
        "AtoH" => "memcpy AtoH",
        "AtoA" => "memcpy AtoA",
        "AtoD" => "memcpy AtoD",
        "DtoA" => "memcpy DtoA",
        "DtoD" => "memcpy DtoD",
        "HtoH" => "memcpy HtoH",
        "PtoP" => "memcpy PtoP",
        _ => "memcpy unknown",
    }
}

/// Writes the trace of `records` (one part) in `format`: for tests and small
/// sessions held in memory.
pub fn write_trace<W: Write>(
    records: &[(u32, Record)],
    format: TraceFormat,
    window: Option<Window>,
    out: W,
) -> io::Result<TraceStats> {
    match format {
        TraceFormat::Perfetto => {
            let mut b = TraceBuilder::new(perfetto::PerfettoWriter::new(out), window);
            b.part(records)?;
            Ok(b.finish()?.1)
        }
        TraceFormat::Chrome => {
            let origin = first_timestamp(records).unwrap_or(0);
            let mut b = TraceBuilder::new(chrome::ChromeWriter::new(out, origin)?, window);
            b.part(records)?;
            Ok(b.finish()?.1)
        }
        TraceFormat::Kineto => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the Kineto format is a directory of files: see kineto::write_kineto",
        )),
    }
}

/// The Chrome trace-event JSON of `records` as one object (`traceEvents`,
/// `displayTimeUnit`, `otherData`).
pub fn chrome_trace(records: &[(u32, Record)]) -> serde_json::Value {
    let mut out = Vec::new();
    // Writing to memory does not fail, and the writer writes JSON.
    match write_trace(records, TraceFormat::Chrome, None, &mut out) {
        Ok(_) => serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null),
        Err(_) => serde_json::Value::Null,
    }
}
