//! The trace as the PyTorch profiler (Kineto) writes it, so that Holistic Trace
//! Analysis (HTA), TraceLens and the other tools that read PyTorch traces analyse
//! programs that never ran the PyTorch profiler. One JSON file per profiled process
//! (HTA loads a directory of them, one per rank), named `<host>_<pid>.pt.trace.json`
//! as PyTorch's `tensorboard_trace_handler` names a worker's trace, each written
//! event by event as the builder makes them.
//!
//! A file is one object: first `schemaVersion` (1), `deviceProperties` (the
//! process's GPUs from the session's device records: id, name, UUID, memory, SM
//! count, compute capability, clocks, bus width, L2), `distributedInfo` (`rank`,
//! and `world_size`, `local_rank`, `local_world_size` when the process had
//! `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE` set), `gpuprof` (pid, host,
//! command line, where the rank came from), `displayTimeUnit` and
//! `baseTimeNanoseconds`, then `traceEvents`, one event per line. The header comes
//! before the events because HTA's streaming parser stops reading metadata at
//! `traceEvents`, and `"rank": N` is written with a space because HTA finds a file's
//! rank with the regular expression `"rank":\s+(\d+)`.
//!
//! **Ranks.** A process's rank is its `RANK` (kept in its `Process` record from its
//! environment at start-up), unless an earlier process (by start time, then pid) has
//! the same one; every other process gets the lowest number no process has, in that
//! order. HTA keeps one file per rank, so every file's rank differs.
//!
//! **Events**, as Kineto writes them (`ph: "X"`, times in µs with three decimals,
//! from `baseTimeNanoseconds`: exact to the ns, written from integers):
//! - `kernel`, `gpu_memcpy`, `gpu_memset` on `pid` = device index, `tid` = stream,
//!   with Kineto's arguments (`device`, `context`, `stream`, `correlation`, `grid`,
//!   `block`, `registers per thread`, `shared memory`; `bytes`, `memory bandwidth
//!   (GB/s)`; `graph id`, `graph node id`) and gpuprof's (the GEMM shape, model FLOPs,
//!   DRAM bytes, arithmetic intensity, MFU, when known). Copies and sets are named as
//!   Kineto names them: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
//! - `cuda_driver` (`cuda_runtime` for a runtime API launch) on `pid` = the process
//!   id, `tid` = the thread, named by the API (`cuLaunchKernel`, ...), with `cbid`
//!   and `correlation`.
//! - `ac2g` flows keyed by correlation id: an `s` event at the start of a launch call,
//!   an `f` event (`bp: "e"`) at the start of each of its kernels.
//! - `user_annotation`: NVTX ranges on the CPU (push/pop ranges on their thread,
//!   start/end ranges on `tid` 0); `gpu_user_annotation`: push/pop ranges projected
//!   onto the streams their kernels ran on (see `joined.rs`). Neither has a `stream`
//!   argument: HTA takes every event with one for GPU work.
//! - `M` events naming processes ("GPU 0", the command line) and threads.
//!
//! A process with several GPUs is one file (one rank) whose GPU events have several
//! `pid`s, as Kineto writes a process that uses several GPUs.

use std::collections::BTreeMap;

use ahash::AHashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Value as Json};
use wire::{DeviceInfo, ProcessInfo};

use super::event::{
    Category, GemmOp, KernelFacts, Process, Sink, Slice, Source, SyncFacts, Track, TrackKind,
};

/// What a file says about its process, known before the first event is written
/// (from a pass over the session's processes and devices).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessHeader {
    pub pid: u32,
    pub host: String,
    pub command: Vec<String>,
    /// `NAME=value` (see `ProcessInfo::environment`).
    pub environment: Vec<String>,
    /// CLOCK_REALTIME ns when profiling started in it (0 when its record was lost).
    pub start_ns: u64,
    /// Its GPUs, by device index.
    pub devices: BTreeMap<u32, DeviceInfo>,
    /// Set by [`assign_ranks`].
    pub rank: u32,
    /// Whether `rank` is the process's own `RANK`.
    pub rank_from_env: bool,
}

impl ProcessHeader {
    /// A process the session has only a pid of.
    pub fn unknown(pid: u32) -> ProcessHeader {
        ProcessHeader {
            pid,
            host: String::new(),
            command: Vec::new(),
            environment: Vec::new(),
            start_ns: 0,
            devices: BTreeMap::new(),
            rank: 0,
            rank_from_env: false,
        }
    }

    pub fn of(p: &ProcessInfo, pid: u32) -> ProcessHeader {
        ProcessHeader {
            pid,
            host: p.host.clone(),
            command: p.command.clone(),
            environment: p.environment.clone(),
            start_ns: p.start_ns,
            ..ProcessHeader::unknown(pid)
        }
    }

    /// The value of environment variable `name`, when recorded.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.environment.iter().find_map(|e| {
            let (k, v) = e.split_once('=')?;
            (k == name).then_some(v)
        })
    }

    /// An environment variable as a rank-like number.
    fn env_number(&self, name: &str) -> Option<u32> {
        self.env(name)?.trim().parse().ok()
    }

    /// `<host>_<pid>.pt.trace.json`, the host reduced to letters, digits, `-`, `.`
    /// and `_` (at most 64 of them; "host" when none is left).
    pub fn file_name(&self) -> String {
        let host: String = self
            .host
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
            .take(64)
            .collect();
        let host = host.trim_start_matches('.');
        let host = if host.is_empty() { "host" } else { host };
        format!("{host}_{}.pt.trace.json", self.pid)
    }
}

/// Gives every process its rank (see the module documentation).
pub fn assign_ranks(processes: &mut [ProcessHeader]) {
    processes.sort_by_key(|p| (p.start_ns, p.pid));
    let mut taken = std::collections::BTreeSet::new();
    let mut own = vec![false; processes.len()];
    for (i, p) in processes.iter_mut().enumerate() {
        if let Some(r) = p.env_number("RANK") {
            if taken.insert(r) {
                p.rank = r;
                p.rank_from_env = true;
                own[i] = true;
            }
        }
    }
    let mut next = 0u32;
    for (i, p) in processes.iter_mut().enumerate() {
        if own[i] {
            continue;
        }
        while taken.contains(&next) {
            next += 1;
        }
        taken.insert(next);
        p.rank = next;
        p.rank_from_env = false;
    }
}

/// `ns` as µs with three decimals, exactly ("12.345", "-0.001").
pub fn micros(ns: i128) -> String {
    let mut out = String::new();
    push_micros(&mut out, ns);
    out
}

/// Appends [`micros`] of `ns` to `out` (an event is written a few numbers at a time,
/// without `format!`: the events are nearly all of the export's time).
fn push_micros(out: &mut String, ns: i128) {
    if ns < 0 {
        out.push('-');
    }
    let a = ns.unsigned_abs();
    // In 64 bits when it fits (always, for timestamps of this era): 128-bit division
    // is a call.
    let (whole, frac) = match u64::try_from(a) {
        Ok(a) => (u128::from(a / 1000), (a % 1000) as u32),
        Err(_) => (a / 1000, (a % 1000) as u32),
    };
    out.push_str(itoa::Buffer::new().format(whole));
    out.push('.');
    for digit in [frac / 100, frac / 10 % 10, frac % 10] {
        out.push(char::from(b'0' + digit as u8));
    }
}

/// Appends integer `v` to `out`.
fn push_int(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// `CUpti_ActivityMemoryKind` as Kineto names it.
fn memory_kind(kind: u8) -> &'static str {
    match kind {
        0 => "Unknown",
        1 => "Pageable",
        2 => "Pinned",
        3 => "Device",
        4 => "Array",
        5 => "Managed",
        6 => "Device Static",
        7 => "Managed Static",
        _ => "Unrecognized",
    }
}

/// `CUpti_ActivityMemcpyKind` as Kineto names it.
fn copy_kind(kind: u8) -> &'static str {
    match crate::analysis::copy_kind_name(kind) {
        "unknown" => "<unknown>",
        k => k,
    }
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quoted(&mut out, s);
    out
}

/// Appends `s` as a JSON string literal, escaped as serde_json escapes it: the quote,
/// the backslash and the control characters below U+0020 (`\b`, `\t`, `\n`, `\f`, `\r` by
/// name, the others as `\u00XX`); nothing else.
fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    // Nearly every string needs no escape: found without a branch per byte (the
    // fold vectorises), and copied whole.
    let escapes = s
        .bytes()
        .fold(false, |e, b| e | (b < 0x20) | (b == b'"') | (b == b'\\'));
    if !escapes {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut clean = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        // Only ASCII bytes are escaped: `i` is a character boundary.
        out.push_str(&s[clean..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        clean = i + 1;
    }
    out.push_str(&s[clean..]);
    out.push('"');
}

/// Where the files go: one writer per file name.
pub trait Files {
    type W: Write;
    fn create(&mut self, name: &str) -> io::Result<Self::W>;
    /// Ends a file once its last bytes are written and flushed (a compressed one
    /// writes its trailer here).
    fn close(&mut self, _w: &mut Self::W) -> io::Result<()> {
        Ok(())
    }
}

/// Files kept in memory (tests, small sessions).
#[derive(Debug, Default)]
pub struct MemoryFiles;

impl Files for MemoryFiles {
    type W = Vec<u8>;
    fn create(&mut self, _name: &str) -> io::Result<Vec<u8>> {
        Ok(Vec::new())
    }
}

struct OpenFile<W> {
    name: String,
    out: W,
    events: u64,
}

/// Writes one Kineto JSON file per process.
pub struct KinetoWriter<F: Files> {
    files: F,
    base_ns: u64,
    headers: AHashMap<u32, ProcessHeader>,
    /// By pid, in the order they were opened.
    open: Vec<(u32, OpenFile<F::W>)>,
    index: AHashMap<u32, usize>,
    /// Track id -> (pid, kind).
    tracks: AHashMap<u64, (u32, TrackKind)>,
    /// Devices named so far, per process.
    named_devices: AHashMap<u32, Vec<u32>>,
    line: String,
    /// The args of the event being written (reused, as `line`).
    args: String,
    /// The NVTX range name whose instances are also written as `ProfilerStep#N`
    /// ([`KinetoWriter::with_steps`]), and each process's next N.
    steps: Option<String>,
    step_numbers: AHashMap<u32, u64>,
}

impl<F: Files> KinetoWriter<F> {
    /// Times are written relative to `base_ns` (the file's `baseTimeNanoseconds`);
    /// `headers` says what each process's file starts with (a pid without one gets
    /// [`ProcessHeader::unknown`]'s, rank 0).
    pub fn new(files: F, base_ns: u64, headers: Vec<ProcessHeader>) -> KinetoWriter<F> {
        KinetoWriter {
            files,
            base_ns,
            headers: headers.into_iter().map(|h| (h.pid, h)).collect(),
            open: Vec::new(),
            index: AHashMap::new(),
            tracks: AHashMap::new(),
            named_devices: AHashMap::new(),
            line: String::with_capacity(1024),
            args: String::with_capacity(512),
            steps: None,
            step_numbers: AHashMap::new(),
        }
    }

    /// Each instance of the NVTX range named `name` (its message) is also written as
    /// a `ProfilerStep#N` annotation (N = 0, 1, ... per process, in the order they
    /// close), the name the PyTorch profiler gives its steps and HTA splits a trace
    /// into iterations by.
    pub fn with_steps(mut self, name: Option<String>) -> KinetoWriter<F> {
        self.steps = name;
        self
    }

    /// The files written, by file name, in the order they were opened.
    pub fn into_files(self) -> Vec<(String, F::W)> {
        self.open
            .into_iter()
            .map(|(_, f)| (f.name, f.out))
            .collect()
    }

    /// Appends `, "pid": P, "tid": T, "ts": TS` for session time `t` (µs from the
    /// trace's base), the fields every event has in that order.
    fn push_place(&self, out: &mut String, (pid, tid): (u64, u64), t: u64) {
        out.push_str(", \"pid\": ");
        push_int(out, pid);
        out.push_str(", \"tid\": ");
        push_int(out, tid);
        out.push_str(", \"ts\": ");
        push_micros(out, i128::from(t) - i128::from(self.base_ns));
    }

    fn header(&self, h: &ProcessHeader) -> String {
        let devices: Vec<Json> = h
            .devices
            .values()
            .map(|d| {
                json!({
                    "id": d.id,
                    "name": d.name,
                    "uuid": crate::analysis::names::gpu_uuid(&d.uuid),
                    "totalGlobalMem": d.global_memory_bytes,
                    "computeMajor": d.compute_capability.0,
                    "computeMinor": d.compute_capability.1,
                    "numSms": d.sm_count,
                    "clockRate": d.core_clock_khz,
                    "memoryClockRate": d.memory_clock_khz,
                    "memoryBusWidth": d.memory_bus_width_bits,
                    "l2CacheSize": d.l2_cache_bytes,
                })
            })
            .collect();
        let mut dist = format!("{{\"rank\": {}", h.rank);
        for (key, var) in [
            ("world_size", "WORLD_SIZE"),
            ("local_rank", "LOCAL_RANK"),
            ("local_world_size", "LOCAL_WORLD_SIZE"),
        ] {
            if let Some(v) = h.env_number(var) {
                let _ = write!(dist, ", \"{key}\": {v}");
            }
        }
        dist.push('}');
        let gpuprof = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "pid": h.pid,
            "host": h.host,
            "command": h.command.join(" "),
            "rank_source": if h.rank_from_env { "RANK" } else { "assigned by gpuprof" },
        });
        format!(
            "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": {},\n  \"distributedInfo\": {dist},\n  \"gpuprof\": {gpuprof},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [\n",
            Json::Array(devices),
            self.base_ns
        )
    }

    /// The file of `pid`, opened (header written) the first time.
    fn file(&mut self, pid: u32) -> io::Result<&mut OpenFile<F::W>> {
        if let Some(&i) = self.index.get(&pid) {
            return Ok(&mut self.open[i].1);
        }
        let h = self
            .headers
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| ProcessHeader::unknown(pid));
        let name = h.file_name();
        let mut out = self.files.create(&name)?;
        out.write_all(self.header(&h).as_bytes())?;
        self.index.insert(pid, self.open.len());
        self.open.push((
            pid,
            OpenFile {
                name,
                out,
                events: 0,
            },
        ));
        let i = self.open.len() - 1;
        Ok(&mut self.open[i].1)
    }

    /// Writes `self.line` (one event) to the file of `pid`.
    fn emit(&mut self, pid: u32) -> io::Result<()> {
        let line = std::mem::take(&mut self.line);
        let f = self.file(pid)?;
        if f.events > 0 {
            f.out.write_all(b",\n")?;
        }
        f.events += 1;
        let r = f.out.write_all(line.as_bytes());
        self.line = line;
        self.line.clear();
        r
    }

    fn metadata(
        &mut self,
        file_pid: u32,
        name: &str,
        pid: u64,
        tid: u64,
        key: &str,
        value: &str,
    ) -> io::Result<()> {
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"ph\": \"M\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"{key}\": {}}}}}",
            quoted(value)
        );
        self.emit(file_pid)
    }

    /// A complete event; `args` is the inside of the args object.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        file_pid: u32,
        cat: &str,
        name: &str,
        (pid, tid): (u64, u64),
        (start_ns, end_ns): (u64, u64),
        args: &str,
    ) -> io::Result<()> {
        let mut l = std::mem::take(&mut self.line);
        l.clear();
        l.push_str("{\"ph\": \"X\", \"cat\": \"");
        l.push_str(cat);
        l.push_str("\", \"name\": ");
        push_quoted(&mut l, name);
        self.push_place(&mut l, (pid, tid), start_ns);
        l.push_str(", \"dur\": ");
        push_micros(&mut l, i128::from(end_ns.saturating_sub(start_ns)));
        l.push_str(", \"args\": {");
        l.push_str(args);
        l.push_str("}}");
        self.line = l;
        self.emit(file_pid)
    }

    /// [`KinetoWriter::complete`] with the args `fill` writes into the writer's
    /// reused buffer (empty when `fill` gets it).
    fn complete_with(
        &mut self,
        file_pid: u32,
        cat: &str,
        name: &str,
        at: (u64, u64),
        span: (u64, u64),
        fill: impl FnOnce(&mut String),
    ) -> io::Result<()> {
        let mut args = std::mem::take(&mut self.args);
        args.clear();
        fill(&mut args);
        let written = self.complete(file_pid, cat, name, at, span, &args);
        self.args = args;
        written
    }

    /// A copy or set (`cat`, `name`) on its stream with Kineto's arguments, and the
    /// end of the flow from its call when the call is in the trace.
    fn transfer(
        &mut self,
        s: &Slice,
        pid: u32,
        (cat, name): (&str, &str),
        at: (u64, u64),
        (device, context, stream, correlation): (u32, u32, u32, u32),
        bytes: u64,
    ) -> io::Result<()> {
        let dur = s.end_ns.saturating_sub(s.start_ns);
        let args = transfer_args(device, context, stream, correlation, bytes, dur);
        self.complete(pid, cat, name, at, (s.start_ns, s.end_ns), &args)?;
        if s.flow_in.is_some() {
            self.flow(pid, true, correlation, at, s.start_ns)?;
        }
        Ok(())
    }

    /// A CUDA API call (a launch, or another traced call moving `bytes`, 0 for
    /// none) as a `cuda_runtime` / `cuda_driver` event, and the start of its flow.
    fn api_call(
        &mut self,
        s: &Slice,
        pid: u32,
        at: (u64, u64),
        (runtime, cbid, correlation): (bool, u32, u32),
        bytes: u64,
    ) -> io::Result<()> {
        let cat = if runtime {
            "cuda_runtime"
        } else {
            "cuda_driver"
        };
        self.complete_with(pid, cat, s.name, at, (s.start_ns, s.end_ns), |a| {
            a.push_str("\"cbid\": ");
            push_int(a, cbid);
            a.push_str(", \"correlation\": ");
            push_int(a, correlation);
            // No `stream`: HTA takes every event with one for GPU work.
            if bytes > 0 {
                a.push_str(", \"bytes\": ");
                push_int(a, bytes);
            }
        })?;
        if s.flow_out.is_some() {
            self.flow(pid, false, correlation, at, s.start_ns)?;
        }
        Ok(())
    }

    /// A wait as Kineto writes CUPTI's synchronization record: on the GPU (`pid` the
    /// device), `tid` its stream (1 for a wait without one: Kineto's -1 made
    /// positive), with Kineto's arguments.
    fn sync(&mut self, f: &SyncFacts, span: (u64, u64)) -> io::Result<()> {
        let stream = f.stream.map_or(-1, i64::from);
        let at = (u64::from(f.device), stream.unsigned_abs());
        self.complete_with(f.pid, "cuda_sync", f.kind, at, span, |a| {
            a.push_str("\"cuda_sync_kind\": ");
            a.push_str(&quoted(f.kind));
            if f.event != 0 {
                let (on_stream, on_correlation) = f
                    .waits_on
                    .map_or((-1, -1), |(s, c)| (i64::from(s), i64::from(c)));
                let _ = write!(
                    a,
                    ", \"wait_on_stream\": {on_stream}, \"wait_on_cuda_event_record_corr_id\": {on_correlation}, \"wait_on_cuda_event_id\": {}",
                    f.event
                );
            }
            let _ = write!(
                a,
                ", \"stream\": {stream}, \"correlation\": {}, \"device\": {}, \"context\": {}",
                f.correlation, f.device, f.context
            );
        })
    }

    fn flow(
        &mut self,
        file_pid: u32,
        end: bool,
        id: u32,
        (pid, tid): (u64, u64),
        t: u64,
    ) -> io::Result<()> {
        let mut l = std::mem::take(&mut self.line);
        l.clear();
        l.push_str(if end {
            "{\"ph\": \"f\", \"id\": "
        } else {
            "{\"ph\": \"s\", \"id\": "
        });
        push_int(&mut l, id);
        self.push_place(&mut l, (pid, tid), t);
        l.push_str(", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
        l.push_str(if end { ", \"bp\": \"e\"}" } else { "}" });
        self.line = l;
        self.emit(file_pid)
    }
}

/// `, "key": value` for a finite number.
fn push_number(args: &mut String, key: &str, v: f64) {
    if let Some(n) = serde_json::Number::from_f64(v) {
        let _ = write!(args, ", \"{key}\": {n}");
    }
}

/// Appends a kernel's args (the inside of its args object) to `a`.
fn kernel_args(a: &mut String, k: &wire::Kernel, facts: Option<&KernelFacts>) {
    for (key, v) in [
        ("\"device\": ", i64::from(k.device_id)),
        (", \"context\": ", i64::from(k.context_id)),
        (", \"stream\": ", i64::from(k.stream_id)),
        (", \"correlation\": ", i64::from(k.correlation_id)),
        (
            ", \"registers per thread\": ",
            i64::from(k.registers_per_thread),
        ),
        (
            ", \"shared memory\": ",
            i64::from(k.static_shared_memory) + i64::from(k.dynamic_shared_memory),
        ),
    ] {
        a.push_str(key);
        push_int(a, v);
    }
    for (key, d) in [(", \"grid\": [", k.grid), (", \"block\": [", k.block)] {
        a.push_str(key);
        push_int(a, d[0]);
        a.push_str(", ");
        push_int(a, d[1]);
        a.push_str(", ");
        push_int(a, d[2]);
        a.push(']');
    }
    if k.graph_id != 0 {
        let _ = write!(
            a,
            ", \"graph id\": {}, \"graph node id\": {}",
            k.graph_id, k.graph_node_id
        );
    }
    let Some(f) = facts else { return };
    if let Some(g) = &f.gemm {
        let _ = write!(
            a,
            ", \"GEMM M\": {}, \"GEMM N\": {}, \"GEMM K\": {}, \"GEMM batch\": {}, \"GEMM\": {}, \"GEMM call launch\": {}",
            g.m,
            g.n,
            g.k,
            g.batch,
            quoted(&g.label),
            g.launch_index
        );
    }
    if let Some(role) = &f.role {
        let _ = write!(a, ", \"GEMM role\": {}", quoted(role));
    }
    let dur = k.end_ns.saturating_sub(k.start_ns);
    if let Some(v) = f.model_flops {
        push_number(a, "model FLOPs", v);
    }
    if let Some(v) = f.dram_bytes {
        push_number(a, "DRAM bytes", v);
    }
    if let Some(v) = f.arithmetic_intensity() {
        push_number(a, "arithmetic intensity (FLOP/byte)", v);
    }
    // Not measured by this launch: its class's rate fitted to PM sampling windows.
    if let Some(v) = f.fitted_dram_bytes {
        push_number(a, "DRAM bytes (fitted to PM sampling)", v);
    }
    if let Some(v) = f.fitted_intensity() {
        push_number(a, "arithmetic intensity (FLOP/byte, fitted bytes)", v);
    }
    if let Some(v) = f.mfu(dur) {
        push_number(a, "MFU (%)", v * 100.0);
    }
}

fn transfer_args(
    device: u32,
    context: u32,
    stream: u32,
    correlation: u32,
    bytes: u64,
    dur_ns: u64,
) -> String {
    let mut a = format!(
        "\"device\": {device}, \"context\": {context}, \"stream\": {stream}, \"correlation\": {correlation}, \"bytes\": {bytes}"
    );
    if dur_ns > 0 {
        // Bytes per ns are GB/s.
        push_number(
            &mut a,
            "memory bandwidth (GB/s)",
            bytes as f64 / dur_ns as f64,
        );
    }
    a
}

impl<F: Files> Sink for KinetoWriter<F> {
    fn process(&mut self, p: &Process) -> io::Result<()> {
        let name = if p.command.is_empty() {
            format!("pid {}", p.pid)
        } else {
            p.command.join(" ")
        };
        self.metadata(p.pid, "process_name", p.pid.into(), 0, "name", &name)
    }

    fn track(&mut self, t: &Track) -> io::Result<()> {
        self.tracks.insert(t.id, (t.pid, t.kind));
        match t.kind {
            TrackKind::Thread(tid) => self.metadata(
                t.pid,
                "thread_name",
                t.pid.into(),
                tid,
                "name",
                &format!("thread {tid}"),
            ),
            TrackKind::Stream { device, stream } => {
                let named = self.named_devices.entry(t.pid).or_default();
                if !named.contains(&device) {
                    named.push(device);
                    let label = self
                        .headers
                        .get(&t.pid)
                        .and_then(|h| h.devices.get(&device))
                        .map(|d| d.name.clone())
                        .unwrap_or_default();
                    self.metadata(
                        t.pid,
                        "process_name",
                        device.into(),
                        0,
                        "name",
                        &format!("GPU {device}"),
                    )?;
                    self.metadata(t.pid, "process_labels", device.into(), 0, "labels", &label)?;
                }
                self.metadata(
                    t.pid,
                    "thread_name",
                    device.into(),
                    stream.into(),
                    "name",
                    &format!("stream {stream}"),
                )
            }
            TrackKind::Range => Ok(()),
        }
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        if let (Category::CudaSync, Source::Sync(f)) = (s.category, s.source) {
            return self.sync(f, (s.start_ns, s.end_ns));
        }
        let Some(&(pid, kind)) = self.tracks.get(&s.track) else {
            return Ok(());
        };
        let at = match kind {
            TrackKind::Thread(tid) => (u64::from(pid), tid),
            TrackKind::Stream { device, stream } => (device.into(), stream.into()),
            TrackKind::Range => (u64::from(pid), 0),
        };
        let span = (s.start_ns, s.end_ns);
        match (s.category, s.source) {
            (Category::Kernel, Source::Kernel(k, facts)) => {
                self.complete_with(pid, "kernel", s.name, at, span, |a| {
                    kernel_args(a, k, facts)
                })?;
                if facts.is_some_and(|f| f.launch_written) {
                    self.flow(pid, true, k.correlation_id, at, s.start_ns)?;
                }
                Ok(())
            }
            (Category::Memcpy, Source::Memcpy(m)) => {
                let name = format!(
                    "Memcpy {} ({} -> {})",
                    copy_kind(m.copy_kind),
                    memory_kind(m.src_kind),
                    memory_kind(m.dst_kind)
                );
                let ids = (m.device_id, m.context_id, m.stream_id, m.correlation_id);
                self.transfer(s, pid, ("gpu_memcpy", &name), at, ids, m.bytes)
            }
            (Category::Memset, Source::Memset(m)) => {
                let name = format!("Memset ({})", memory_kind(m.memory_kind));
                let ids = (m.device_id, m.context_id, m.stream_id, m.correlation_id);
                self.transfer(s, pid, ("gpu_memset", &name), at, ids, m.bytes)
            }
            (Category::CudaApi, Source::ApiCall(c)) => {
                self.api_call(s, pid, at, (c.runtime, c.cbid, c.correlation_id), c.bytes)
            }
            (Category::CudaApi, Source::Launch(l)) => {
                self.api_call(s, pid, at, (l.runtime, l.cbid, l.correlation_id), 0)
            }
            (Category::Nvtx, _) => {
                self.complete(pid, "user_annotation", s.name, at, span, "")?;
                if self.steps.as_deref() == Some(s.name) {
                    let n = self.step_numbers.entry(pid).or_insert(0);
                    let name = format!("ProfilerStep#{n}");
                    *n += 1;
                    self.complete(pid, "user_annotation", &name, at, span, "")?;
                }
                Ok(())
            }
            (Category::GemmOp, Source::GemmOp(op)) => {
                self.complete_with(pid, "cpu_op", s.name, at, span, |a| gemm_op_args(a, op))
            }
            (Category::GpuNvtx, _) => {
                self.complete(pid, "gpu_user_annotation", s.name, at, span, "")
            }
            // A slice without its record (not something the builder makes).
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        for (_, f) in &mut self.open {
            f.out.write_all(b"\n  ]\n}\n")?;
            f.out.flush()?;
            self.files.close(&mut f.out)?;
        }
        Ok(())
    }

    fn joined(&self) -> bool {
        true
    }
    fn projects_ranges(&self) -> bool {
        true
    }
    fn wants_syncs(&self) -> bool {
        true
    }
    fn wants_gemm_ops(&self) -> bool {
        true
    }
}

/// A GEMM operator's arguments as PyTorch's profiler writes an `aten::mm`'s
/// (`External id`, `Input Dims`, `Input type`), then gpuprof's.
fn gemm_op_args(a: &mut String, op: &GemmOp) {
    // Written a piece at a time, as the kernels' args are (no `format!` per operator).
    let mut int = itoa::Buffer::new();
    a.push_str("\"External id\": ");
    a.push_str(int.format(op.external_id));
    a.push_str(", \"Input Dims\": [");
    for (i, dims) in op.dims.iter().enumerate() {
        a.push_str(if i == 0 { "[" } else { ", [" });
        for (j, d) in dims.iter().enumerate() {
            if j > 0 {
                a.push_str(", ");
            }
            a.push_str(int.format(*d));
        }
        a.push(']');
    }
    a.push_str("], \"Input type\": [");
    push_quoted(a, op.types[0]);
    a.push_str(", ");
    push_quoted(a, op.types[1]);
    a.push_str("], \"GEMM\": ");
    push_quoted(a, &op.label);
    a.push_str(", \"GEMM call\": ");
    a.push_str(int.format(op.call));
    a.push_str(", \"launches\": ");
    a.push_str(int.format(op.launches));
    push_number(a, "model FLOPs", op.model_flops);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_ascii: String = (0u8..0x80).map(char::from).collect();
        every_ascii.push_str("é中😀\u{7f}\u{2028}");
        for s in [
            every_ascii.as_str(),
            "",
            "void gemm<128, 64>(float const*, \"x\")",
            "a\\b",
            "\u{1}end",
            "start\u{1f}",
        ] {
            assert_eq!(quoted(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }
}
