//! The session's tables: one per record kind, each row one record with the pid of the
//! process that produced it. Columns, units and keys are in docs/SESSION.md; this file
//! is where they are defined, and the round-trip tests hold the two directions to each
//! other.
//!
//! Nested values are flattened where a query engine reads them more easily flat
//! (a kernel's grid is `grid_x`, `grid_y`, `grid_z`); a record's list of metric values
//! is two parallel lists, `metric` (string ids) and `value`.

use wire::record::*;

use super::columns::{Kind, RowReader, RowWriter};

/// A table: its file name (without `.parquet`) and columns.
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
}

use Kind::*;

macro_rules! tables {
    ($($id:ident = $name:literal [$($col:literal: $kind:ident),* $(,)?];)*) => {
        /// Which table a record goes to, in the order a part's tables are read.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum TableId { $($id),* }

        /// Every table, in [`TableId`] order.
        pub const TABLES: &[Table] = &[
            $(Table { name: $name, columns: &[$(($col, $kind)),*] }),*
        ];

        /// Every table id, in order.
        pub const TABLE_IDS: &[TableId] = &[$(TableId::$id),*];
    };
}

// The order is the order records of one part are read back in: what later records
// refer to (processes, devices, strings, graph nodes, launches, GEMM calls) first.
tables! {
    Processes = "processes" [
        "pid": U32, "ppid": U32, "command": StrList, "host": Str, "start_ns": U64,
        "profiler_version": Str, "cupti_api_version": U32, "cupti_layouts": Str,
        "cupti_path": Str, "environment": StrList,
    ];
    Devices = "devices" [
        "pid": U32, "device_id": U32, "name": Str, "cc_major": U32, "cc_minor": U32,
        "sm_count": U32, "core_clock_khz": U32, "memory_clock_khz": U32,
        "memory_bus_width_bits": U32, "global_memory_bytes": U64, "l2_cache_bytes": U32,
        "uuid": Uuid,
    ];
    Contexts = "contexts" ["pid": U32, "context_id": U32, "device_id": U32];
    Strings = "strings" ["pid": U32, "id": U32, "text": Str];
    CounterPlans = "counter_plans" [
        "pid": U32, "device_id": U32, "chip": Str, "mode": Str, "groups": U32ListList,
        "policy": Str,
    ];
    CounterStatuses = "counter_statuses" ["pid": U32, "message": Str];
    GemmStatuses = "gemm_statuses" ["pid": U32, "message": Str];
    Captures = "captures" [
        "pid": U32, "range": Str, "delay_ns": U64, "duration_ns": U64, "windows": U64,
        "launches": U64, "captured_launches": U64,
    ];
    GraphNodes = "graph_nodes" ["pid": U32, "node_id": U64, "correlation_id": U32];
    GraphNodeClones = "graph_node_clones" ["pid": U32, "node_id": U64, "original_node_id": U64];
    Launches = "launches" [
        "pid": U32, "correlation_id": U32, "cbid": U32, "runtime": Bool, "thread_id": U64,
        "start_ns": U64, "end_ns": U64,
    ];
    Gemms = "gemms" [
        "pid": U32, "correlation_id": U32, "call": U64, "launch_index": U32, "api": U32,
        "m": U64, "n": U64, "k": U64, "batch": U64, "trans_a": U32, "trans_b": U32,
        "a_type": U32, "b_type": U32, "c_type": U32, "d_type": U32, "compute_type": U32,
    ];
    Kernels = "kernels" [
        "pid": U32, "device_id": U32, "context_id": U32, "stream_id": U32,
        "correlation_id": U32, "start_ns": U64, "end_ns": U64, "name": U32,
        "grid_x": I32, "grid_y": I32, "grid_z": I32, "block_x": I32, "block_y": I32,
        "block_z": I32, "registers_per_thread": U16, "static_shared_memory": I32,
        "dynamic_shared_memory": I32, "graph_id": U32, "graph_node_id": U64,
    ];
    Memcpys = "memcpys" [
        "pid": U32, "device_id": U32, "context_id": U32, "stream_id": U32,
        "correlation_id": U32, "start_ns": U64, "end_ns": U64, "bytes": U64,
        "copy_kind": U8, "src_kind": U8, "dst_kind": U8, "graph_node_id": U64,
    ];
    Memsets = "memsets" [
        "pid": U32, "device_id": U32, "context_id": U32, "stream_id": U32,
        "correlation_id": U32, "start_ns": U64, "end_ns": U64, "bytes": U64, "value": U32,
        "memory_kind": U8, "graph_node_id": U64,
    ];
    Markers = "markers" [
        "pid": U32, "flags": U32, "timestamp_ns": U64, "id": U32, "thread_id": U64,
        "process_id": U32, "name": U32, "domain": U32,
    ];
    Overheads = "overheads" [
        "pid": U32, "kind": U32, "start_ns": U64, "end_ns": U64, "thread_id": U64,
    ];
    KernelCounters = "kernel_counters" [
        "pid": U32, "correlation_id": U32, "group": U32, "metric": U32List, "value": F64List,
        "range": U32,
    ];
    CounterSamples = "counter_samples" [
        "pid": U32, "device_id": U32, "start_ns": U64, "end_ns": U64, "metric": U32List,
        "value": F64List,
    ];
    Dropped = "dropped" ["pid": U32, "source": Str, "records": U64];
    Ends = "ends" ["pid": U32, "records": U64];
    // Not a record of a profiled process: the collector's NVML readings
    // (`super::device_samples`), one row per device per reading, no pid.
    DeviceSamples = "device_samples" [
        "time_ns": U64, "index": U32, "uuid": Str, "name": Str, "pci_bus_id": Str,
        "gpu_util_pct": U32, "mem_util_pct": U32, "power_w": F64, "energy_mj": U64,
        "fb_used_mib": U64, "sm_clock_mhz": U32, "mem_clock_mhz": U32,
        "max_sm_clock_mhz": U32, "temperature_c": U32, "throttle_reasons": U64,
    ];
}

/// The tables that hold records of profiled processes (all but `device_samples`).
pub fn is_record_table(id: TableId) -> bool {
    id != TableId::DeviceSamples
}

impl TableId {
    pub fn table(self) -> &'static Table {
        &TABLES[self as usize]
    }

    /// The columns a file of this table must have: the table's, less those added
    /// since the session layout's version (they read as empty from older files).
    /// `processes.environment` came after layout 3's first sessions,
    /// `kernel_counters.range` with record protocol 7 (graph launches measured).
    pub fn required_columns(self) -> usize {
        let all = self.table().columns.len();
        match self {
            TableId::Processes | TableId::KernelCounters => all - 1,
            _ => all,
        }
    }
}

impl Table {
    pub fn kinds(&self) -> Vec<Kind> {
        self.columns.iter().map(|(_, k)| *k).collect()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.columns.iter().map(|(n, _)| *n).collect()
    }
}

/// The table `record` belongs to.
pub fn table_of(record: &Record) -> TableId {
    match record {
        Record::Process(_) => TableId::Processes,
        Record::Device(_) => TableId::Devices,
        Record::Context(_) => TableId::Contexts,
        Record::String(_) => TableId::Strings,
        Record::Kernel(_) => TableId::Kernels,
        Record::Memcpy(_) => TableId::Memcpys,
        Record::Memset(_) => TableId::Memsets,
        Record::Marker(_) => TableId::Markers,
        Record::Launch(_) => TableId::Launches,
        Record::Overhead(_) => TableId::Overheads,
        Record::KernelCounters(_) => TableId::KernelCounters,
        Record::CounterSample(_) => TableId::CounterSamples,
        Record::CounterPlan(_) => TableId::CounterPlans,
        Record::CounterStatus(_) => TableId::CounterStatuses,
        Record::Gemm(_) => TableId::Gemms,
        Record::GraphNode(_) => TableId::GraphNodes,
        Record::GraphNodeCloned(_) => TableId::GraphNodeClones,
        Record::GemmStatus(_) => TableId::GemmStatuses,
        Record::Dropped(_) => TableId::Dropped,
        Record::End(_) => TableId::Ends,
        Record::Capture(_) => TableId::Captures,
    }
}

/// The `source` column's words for each [`DropSource`].
pub const DROP_SOURCES: &[(DropSource, &str)] = &[
    (DropSource::Cupti, "cupti"),
    (DropSource::Channel, "channel"),
    (DropSource::Ring, "ring"),
    (DropSource::Undelivered, "undelivered"),
    (DropSource::Unwritten, "unwritten"),
    (DropSource::Unsaved, "unsaved"),
];

fn source_word(s: DropSource) -> &'static str {
    DROP_SOURCES
        .iter()
        .find(|(x, _)| *x == s)
        .map(|(_, w)| *w)
        .unwrap_or("ring")
}

/// Appends `record` of process `pid` as one row of its table's writer `w`.
pub fn write_row(w: &mut RowWriter, pid: u32, record: &Record) {
    w.u32(pid);
    match record {
        Record::Process(p) => {
            w.u32(p.ppid);
            w.strs(&p.command);
            w.str(&p.host);
            w.u64(p.start_ns);
            w.str(&p.profiler_version);
            w.u32(p.cupti_api_version);
            w.str(&p.cupti_layouts);
            w.str(&p.cupti_path);
            w.strs(&p.environment);
        }
        Record::Device(d) => {
            w.u32(d.id);
            w.str(&d.name);
            w.u32(d.compute_capability.0);
            w.u32(d.compute_capability.1);
            w.u32(d.sm_count);
            w.u32(d.core_clock_khz);
            w.u32(d.memory_clock_khz);
            w.u32(d.memory_bus_width_bits);
            w.u64(d.global_memory_bytes);
            w.u32(d.l2_cache_bytes);
            w.uuid(&d.uuid);
        }
        Record::Context(c) => {
            w.u32(c.context_id);
            w.u32(c.device_id);
        }
        Record::String(s) => {
            w.u32(s.id);
            w.str(&s.text);
        }
        Record::CounterPlan(p) => {
            w.u32(p.device_id);
            w.str(&p.chip);
            w.str(&p.mode);
            w.u32_lists(&p.groups);
            w.str(&p.policy);
        }
        Record::CounterStatus(s) => w.str(&s.message),
        Record::GemmStatus(s) => w.str(&s.message),
        Record::Capture(c) => {
            w.str(&c.range);
            w.u64(c.delay_ns);
            w.u64(c.duration_ns);
            w.u64(c.windows);
            w.u64(c.launches);
            w.u64(c.captured_launches);
        }
        Record::GraphNode(g) => {
            w.u64(g.node_id);
            w.u32(g.correlation_id);
        }
        Record::GraphNodeCloned(g) => {
            w.u64(g.node_id);
            w.u64(g.original_node_id);
        }
        Record::Launch(l) => {
            w.u32(l.correlation_id);
            w.u32(l.cbid);
            w.bool(l.runtime);
            w.u64(l.thread_id);
            w.u64(l.start_ns);
            w.u64(l.end_ns);
        }
        Record::Gemm(g) => {
            w.u32(g.correlation_id);
            w.u64(g.call);
            w.u32(g.launch_index);
            w.u32(g.api);
            w.u64(g.m);
            w.u64(g.n);
            w.u64(g.k);
            w.u64(g.batch);
            w.u32(g.trans_a);
            w.u32(g.trans_b);
            w.u32(g.a_type);
            w.u32(g.b_type);
            w.u32(g.c_type);
            w.u32(g.d_type);
            w.u32(g.compute_type);
        }
        Record::Kernel(k) => {
            w.u32(k.device_id);
            w.u32(k.context_id);
            w.u32(k.stream_id);
            w.u32(k.correlation_id);
            w.u64(k.start_ns);
            w.u64(k.end_ns);
            w.u32(k.name);
            for v in k.grid.iter().chain(&k.block) {
                w.i32(*v);
            }
            w.u16(k.registers_per_thread);
            w.i32(k.static_shared_memory);
            w.i32(k.dynamic_shared_memory);
            w.u32(k.graph_id);
            w.u64(k.graph_node_id);
        }
        Record::Memcpy(m) => {
            w.u32(m.device_id);
            w.u32(m.context_id);
            w.u32(m.stream_id);
            w.u32(m.correlation_id);
            w.u64(m.start_ns);
            w.u64(m.end_ns);
            w.u64(m.bytes);
            w.u8(m.copy_kind);
            w.u8(m.src_kind);
            w.u8(m.dst_kind);
            w.u64(m.graph_node_id);
        }
        Record::Memset(m) => {
            w.u32(m.device_id);
            w.u32(m.context_id);
            w.u32(m.stream_id);
            w.u32(m.correlation_id);
            w.u64(m.start_ns);
            w.u64(m.end_ns);
            w.u64(m.bytes);
            w.u32(m.value);
            w.u8(m.memory_kind);
            w.u64(m.graph_node_id);
        }
        Record::Marker(m) => {
            w.u32(m.flags);
            w.u64(m.timestamp_ns);
            w.u32(m.id);
            w.u64(m.thread_id);
            w.u32(m.process_id);
            w.u32(m.name);
            w.u32(m.domain);
        }
        Record::Overhead(o) => {
            w.u32(o.kind);
            w.u64(o.start_ns);
            w.u64(o.end_ns);
            w.u64(o.thread_id);
        }
        Record::KernelCounters(c) => {
            w.u32(c.correlation_id);
            w.u32(c.group);
            w.u32s(c.metrics.iter().map(|m| m.name));
            w.f64s(c.metrics.iter().map(|m| m.value));
            w.u32(c.range);
        }
        Record::CounterSample(s) => {
            w.u32(s.device_id);
            w.u64(s.start_ns);
            w.u64(s.end_ns);
            w.u32s(s.metrics.iter().map(|m| m.name));
            w.f64s(s.metrics.iter().map(|m| m.value));
        }
        Record::Dropped(d) => {
            w.str(source_word(d.source));
            w.u64(d.records);
        }
        Record::End(e) => w.u64(e.records),
    }
    w.end_row();
}

fn metrics(names: Vec<u32>, values: Vec<f64>) -> Result<Vec<MetricValue>, String> {
    if names.len() != values.len() {
        return Err(format!(
            "{} metric names but {} values",
            names.len(),
            values.len()
        ));
    }
    Ok(names
        .into_iter()
        .zip(values)
        .map(|(name, value)| MetricValue { name, value })
        .collect())
}

/// Reads row `row` of table `id` back as (pid, record). Errors for values no writer
/// makes (an unknown drop source, metric lists of different lengths).
pub fn read_row(id: TableId, r: &mut RowReader, row: usize) -> Result<(u32, Record), String> {
    if !is_record_table(id) {
        return Err(format!("table {} holds no records", id.table().name));
    }
    r.seek(row);
    let pid = r.u32();
    let record = match id {
        TableId::Processes => Record::Process(ProcessInfo {
            pid,
            ppid: r.u32(),
            command: r.strs(),
            host: r.str(),
            start_ns: r.u64(),
            profiler_version: r.str(),
            cupti_api_version: r.u32(),
            cupti_layouts: r.str(),
            cupti_path: r.str(),
            environment: r.strs(),
        }),
        TableId::Devices => Record::Device(DeviceInfo {
            id: r.u32(),
            name: r.str(),
            compute_capability: (r.u32(), r.u32()),
            sm_count: r.u32(),
            core_clock_khz: r.u32(),
            memory_clock_khz: r.u32(),
            memory_bus_width_bits: r.u32(),
            global_memory_bytes: r.u64(),
            l2_cache_bytes: r.u32(),
            uuid: r.uuid(),
        }),
        TableId::Contexts => Record::Context(ContextInfo {
            context_id: r.u32(),
            device_id: r.u32(),
        }),
        TableId::Strings => Record::String(InternedString {
            id: r.u32(),
            text: r.str(),
        }),
        TableId::CounterPlans => Record::CounterPlan(CounterPlan {
            device_id: r.u32(),
            chip: r.str(),
            mode: r.str(),
            groups: r.u32_lists(),
            policy: r.str(),
        }),
        TableId::CounterStatuses => Record::CounterStatus(CounterStatus { message: r.str() }),
        TableId::GemmStatuses => Record::GemmStatus(GemmStatus { message: r.str() }),
        TableId::Captures => Record::Capture(Capture {
            range: r.str(),
            delay_ns: r.u64(),
            duration_ns: r.u64(),
            windows: r.u64(),
            launches: r.u64(),
            captured_launches: r.u64(),
        }),
        TableId::GraphNodes => Record::GraphNode(GraphNode {
            node_id: r.u64(),
            correlation_id: r.u32(),
        }),
        TableId::GraphNodeClones => Record::GraphNodeCloned(GraphNodeCloned {
            node_id: r.u64(),
            original_node_id: r.u64(),
        }),
        TableId::Launches => Record::Launch(Launch {
            correlation_id: r.u32(),
            cbid: r.u32(),
            runtime: r.bool(),
            thread_id: r.u64(),
            start_ns: r.u64(),
            end_ns: r.u64(),
        }),
        TableId::Gemms => Record::Gemm(Gemm {
            correlation_id: r.u32(),
            call: r.u64(),
            launch_index: r.u32(),
            api: r.u32(),
            m: r.u64(),
            n: r.u64(),
            k: r.u64(),
            batch: r.u64(),
            trans_a: r.u32(),
            trans_b: r.u32(),
            a_type: r.u32(),
            b_type: r.u32(),
            c_type: r.u32(),
            d_type: r.u32(),
            compute_type: r.u32(),
        }),
        TableId::Kernels => Record::Kernel(Kernel {
            device_id: r.u32(),
            context_id: r.u32(),
            stream_id: r.u32(),
            correlation_id: r.u32(),
            start_ns: r.u64(),
            end_ns: r.u64(),
            name: r.u32(),
            grid: [r.i32(), r.i32(), r.i32()],
            block: [r.i32(), r.i32(), r.i32()],
            registers_per_thread: r.u16(),
            static_shared_memory: r.i32(),
            dynamic_shared_memory: r.i32(),
            graph_id: r.u32(),
            graph_node_id: r.u64(),
        }),
        TableId::Memcpys => Record::Memcpy(Memcpy {
            device_id: r.u32(),
            context_id: r.u32(),
            stream_id: r.u32(),
            correlation_id: r.u32(),
            start_ns: r.u64(),
            end_ns: r.u64(),
            bytes: r.u64(),
            copy_kind: r.u8(),
            src_kind: r.u8(),
            dst_kind: r.u8(),
            graph_node_id: r.u64(),
        }),
        TableId::Memsets => Record::Memset(Memset {
            device_id: r.u32(),
            context_id: r.u32(),
            stream_id: r.u32(),
            correlation_id: r.u32(),
            start_ns: r.u64(),
            end_ns: r.u64(),
            bytes: r.u64(),
            value: r.u32(),
            memory_kind: r.u8(),
            graph_node_id: r.u64(),
        }),
        TableId::Markers => Record::Marker(Marker {
            flags: r.u32(),
            timestamp_ns: r.u64(),
            id: r.u32(),
            thread_id: r.u64(),
            process_id: r.u32(),
            name: r.u32(),
            domain: r.u32(),
        }),
        TableId::Overheads => Record::Overhead(Overhead {
            kind: r.u32(),
            start_ns: r.u64(),
            end_ns: r.u64(),
            thread_id: r.u64(),
        }),
        TableId::KernelCounters => Record::KernelCounters(wire::KernelCounters {
            correlation_id: r.u32(),
            group: r.u32(),
            metrics: metrics(r.u32s(), r.f64s())?,
            range: r.u32(),
        }),
        TableId::CounterSamples => Record::CounterSample(CounterSample {
            device_id: r.u32(),
            start_ns: r.u64(),
            end_ns: r.u64(),
            metrics: metrics(r.u32s(), r.f64s())?,
        }),
        TableId::Dropped => {
            let word = r.str();
            let source = DROP_SOURCES
                .iter()
                .find(|(_, w)| *w == word)
                .map(|(s, _)| *s)
                .ok_or_else(|| format!("unknown drop source {word:?}"))?;
            Record::Dropped(wire::Dropped {
                source,
                records: r.u64(),
            })
        }
        TableId::Ends => Record::End(End { records: r.u64() }),
        TableId::DeviceSamples => unreachable!("refused above"),
    };
    Ok((pid, record))
}
