//! The session's tables: one per record kind, each row one record with the pid of the
//! process that produced it. Columns, units and keys are in docs/SESSION.md; this file
//! is where they are defined, and the round-trip tests hold the two directions to each
//! other.
//!
//! Nested values are flattened where a query engine reads them more easily flat
//! (a kernel's grid is `grid_x`, `grid_y`, `grid_z`); a record's list of metric values
//! is two parallel lists, `metric` (string ids) and `value`.

use wire::record::*;

use super::device_samples::DeviceSample;

use super::cells::Cells;
use super::columns::{Kind, RowReader, RowWriter};

/// A table: its file name (without `.parquet`) and columns.
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
}

use Kind::*;

/// [`Cells::CAN_FAIL`] of the field `field` picks out of its record (the type,
/// which the table declaration does not name, is inferred from it).
fn can_fail_of<R, T: Cells>(_field: impl Fn(&R) -> &T) -> bool {
    T::CAN_FAIL
}

/// The session's tables, declared once. Each record table names the [`Record`]
/// variant it holds and, field by field of the record's struct in column order, the
/// columns each field fills (a `pid` column first in each, the producing process's;
/// a struct field named in braces after the type takes the row's pid); then the
/// tables that hold no records. From this come [`TableId`], [`TABLES`],
/// [`table_of`], [`write_row`] and [`read_row`]; every field of a record must be
/// named (a field added to a record and not here does not compile), and docs/SESSION.md
/// lists the same columns (a test compares them).
macro_rules! tables {
    (
        records {$(
            $id:ident = $name:literal, $variant:ident($($ty:ident)::+ $({ $pid_field:ident })?) [
                $($field:ident => $($col:literal: $kind:ident),+;)*
            ];
        )*}
        others {$(
            $other:ident = $other_name:literal, $other_ty:ident [
                $($other_field:ident => $other_col:literal: $other_kind:ident;)*
            ];
        )*}
    ) => {
        /// Which table a record goes to, in the order a part's tables are read.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum TableId { $($id,)* $($other),* }

        /// Every table, in [`TableId`] order.
        pub const TABLES: &[Table] = &[
            $(Table { name: $name, columns: &[("pid", U32), $($(($col, $kind)),+),*] },)*
            $(Table { name: $other_name, columns: &[$(($other_col, $other_kind)),*] }),*
        ];

        $(
            /// The row of a table that holds no records, field by field.
            impl Cells for $other_ty {
                // Read whole in any case (`decode_samples`).
                const CAN_FAIL: bool = true;
                fn write(&self, w: &mut RowWriter) {
                    $(Cells::write(&self.$other_field, w);)*
                }
                fn read(r: &mut RowReader) -> Result<Self, String> {
                    Ok($other_ty { $($other_field: Cells::read(r)?,)* })
                }
            }
        )*

        /// Every table id, in order.
        pub const TABLE_IDS: &[TableId] = &[$(TableId::$id,)* $(TableId::$other),*];

        /// The table `record` belongs to.
        pub fn table_of(record: &Record) -> TableId {
            match record {
                $(Record::$variant(_) => TableId::$id,)*
            }
        }

        /// Appends `record` of process `pid` as one row of its table's writer `w`.
        pub fn write_row(w: &mut RowWriter, pid: u32, record: &Record) {
            w.u32(pid);
            match record {
                $(Record::$variant(_r) => {
                    $(Cells::write(&_r.$field, w);)*
                })*
            }
            w.end_row();
        }

        /// Whether reading a row of table `id` can fail ([`Cells::CAN_FAIL`] of any
        /// of its fields): such a table is read whole before any of its rows is
        /// used, so that a file with one bad row is skipped whole.
        pub fn rows_may_fail(id: TableId) -> bool {
            match id {
                $(TableId::$id => {
                    type R = $($ty)::+;
                    false $(|| can_fail_of(|r: &R| &r.$field))*
                })*
                $(TableId::$other => <$other_ty as Cells>::CAN_FAIL,)*
            }
        }

        /// Reads row `row` of table `id` back as (pid, record). Errors for values no
        /// writer makes (an unknown drop source, metric lists of different lengths).
        pub fn read_row(id: TableId, r: &mut RowReader, row: usize) -> Result<(u32, Record), String> {
            r.seek(row);
            let pid = match id {
                $(TableId::$other => {
                    return Err(format!("table {} holds no records", $other_name));
                })*
                _ => r.u32(),
            };
            let record = match id {
                // `into`: a record boxed in its variant (`Record::Process`) or not.
                $(TableId::$id => Record::$variant($($ty)::+ {
                    $($pid_field: pid,)?
                    $($field: Cells::read(r)?,)*
                }.into()),)*
                $(TableId::$other => unreachable!("refused above"),)*
            };
            Ok((pid, record))
        }
    };
}

// The order is the order records of one part are read back in: what later records
// refer to (processes, devices, strings, graph nodes, launches, GEMM calls) first.
tables! {
    records {
    Processes = "processes", Process(ProcessInfo { pid }) [
        ppid => "ppid": U32;
        command => "command": StrList;
        host => "host": Str;
        start_ns => "start_ns": U64;
        profiler_version => "profiler_version": Str;
        cupti_api_version => "cupti_api_version": U32;
        cupti_layouts => "cupti_layouts": Str;
        cupti_path => "cupti_path": Str;
        environment => "environment": StrList;
    ];
    Devices = "devices", Device(DeviceInfo) [
        id => "device_id": U32;
        name => "name": Str;
        compute_capability => "cc_major": U32, "cc_minor": U32;
        sm_count => "sm_count": U32;
        core_clock_khz => "core_clock_khz": U32;
        memory_clock_khz => "memory_clock_khz": U32;
        memory_bus_width_bits => "memory_bus_width_bits": U32;
        global_memory_bytes => "global_memory_bytes": U64;
        l2_cache_bytes => "l2_cache_bytes": U32;
        uuid => "uuid": Uuid;
    ];
    Contexts = "contexts", Context(ContextInfo) [
        context_id => "context_id": U32;
        device_id => "device_id": U32;
    ];
    Strings = "strings", String(InternedString) [
        id => "id": U32;
        text => "text": Str;
    ];
    CounterPlans = "counter_plans", CounterPlan(CounterPlan) [
        device_id => "device_id": U32;
        chip => "chip": Str;
        mode => "mode": Str;
        groups => "groups": U32ListList;
        policy => "policy": Str;
    ];
    CounterStatuses = "counter_statuses", CounterStatus(CounterStatus) [
        message => "message": Str;
    ];
    GemmStatuses = "gemm_statuses", GemmStatus(GemmStatus) [
        message => "message": Str;
    ];
    Captures = "captures", Capture(Capture) [
        range => "range": Str;
        delay_ns => "delay_ns": U64;
        duration_ns => "duration_ns": U64;
        windows => "windows": U64;
        launches => "launches": U64;
        captured_launches => "captured_launches": U64;
    ];
    GraphNodes = "graph_nodes", GraphNode(GraphNode) [
        node_id => "node_id": U64;
        correlation_id => "correlation_id": U32;
    ];
    GraphNodeClones = "graph_node_clones", GraphNodeCloned(GraphNodeCloned) [
        node_id => "node_id": U64;
        original_node_id => "original_node_id": U64;
    ];
    Launches = "launches", Launch(Launch) [
        correlation_id => "correlation_id": U32;
        cbid => "cbid": U32;
        runtime => "runtime": Bool;
        thread_id => "thread_id": U64;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
    ];
    ApiCalls = "api_calls", ApiCall(ApiCall) [
        correlation_id => "correlation_id": U32;
        cbid => "cbid": U32;
        runtime => "runtime": Bool;
        name => "name": U32;
        context_id => "context_id": U32;
        thread_id => "thread_id": U64;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        bytes => "bytes": U64;
        stream_id => "stream_id": U32;
        event => "event": U64;
        ok => "ok": Bool;
    ];
    ApiTallies = "api_tallies", ApiTally(ApiTally) [
        thread_id => "thread_id": U64;
        cbid => "cbid": U32;
        runtime => "runtime": Bool;
        name => "name": U32;
        calls => "calls": U64;
        total_ns => "total_ns": U64;
    ];
    GemmCalls = "gemm_calls", GemmCall(GemmCall) [
        call => "call": U64;
        thread_id => "thread_id": U64;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
    ];
    Gemms = "gemms", Gemm(Gemm) [
        correlation_id => "correlation_id": U32;
        call => "call": U64;
        launch_index => "launch_index": U32;
        api => "api": U32;
        m => "m": U64;
        n => "n": U64;
        k => "k": U64;
        batch => "batch": U64;
        trans_a => "trans_a": U32;
        trans_b => "trans_b": U32;
        a_type => "a_type": U32;
        b_type => "b_type": U32;
        c_type => "c_type": U32;
        d_type => "d_type": U32;
        compute_type => "compute_type": U32;
    ];
    Kernels = "kernels", Kernel(Kernel) [
        device_id => "device_id": U32;
        context_id => "context_id": U32;
        stream_id => "stream_id": U32;
        correlation_id => "correlation_id": U32;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        name => "name": U32;
        grid => "grid_x": I32, "grid_y": I32, "grid_z": I32;
        block => "block_x": I32, "block_y": I32, "block_z": I32;
        registers_per_thread => "registers_per_thread": U16;
        static_shared_memory => "static_shared_memory": I32;
        dynamic_shared_memory => "dynamic_shared_memory": I32;
        graph_id => "graph_id": U32;
        graph_node_id => "graph_node_id": U64;
    ];
    Memcpys = "memcpys", Memcpy(Memcpy) [
        device_id => "device_id": U32;
        context_id => "context_id": U32;
        stream_id => "stream_id": U32;
        correlation_id => "correlation_id": U32;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        bytes => "bytes": U64;
        copy_kind => "copy_kind": U8;
        src_kind => "src_kind": U8;
        dst_kind => "dst_kind": U8;
        graph_node_id => "graph_node_id": U64;
    ];
    Memsets = "memsets", Memset(Memset) [
        device_id => "device_id": U32;
        context_id => "context_id": U32;
        stream_id => "stream_id": U32;
        correlation_id => "correlation_id": U32;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        bytes => "bytes": U64;
        value => "value": U32;
        memory_kind => "memory_kind": U8;
        graph_node_id => "graph_node_id": U64;
    ];
    Markers = "markers", Marker(Marker) [
        flags => "flags": U32;
        timestamp_ns => "timestamp_ns": U64;
        id => "id": U32;
        thread_id => "thread_id": U64;
        process_id => "process_id": U32;
        name => "name": U32;
        domain => "domain": U32;
    ];
    Overheads = "overheads", Overhead(Overhead) [
        kind => "kind": U32;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        thread_id => "thread_id": U64;
    ];
    KernelCounters = "kernel_counters", KernelCounters(wire::KernelCounters) [
        correlation_id => "correlation_id": U32;
        group => "group": U32;
        metrics => "metric": U32List, "value": F64List;
        range => "range": U32;
    ];
    CounterSamples = "counter_samples", CounterSample(CounterSample) [
        device_id => "device_id": U32;
        start_ns => "start_ns": U64;
        end_ns => "end_ns": U64;
        metrics => "metric": U32List, "value": F64List;
    ];
    Dropped = "dropped", Dropped(wire::Dropped) [
        source => "source": Str;
        records => "records": U64;
    ];
    Ends = "ends", End(End) [
        records => "records": U64;
    ];
    }
    others {
    // Not a record of a profiled process: the collector's NVML readings
    // (`super::device_samples`), one row per device per reading, no pid.
    DeviceSamples = "device_samples", DeviceSample [
        time_ns => "time_ns": U64;
        index => "index": U32;
        uuid => "uuid": Str;
        name => "name": Str;
        pci_bus_id => "pci_bus_id": Str;
        gpu_util_pct => "gpu_util_pct": U32;
        mem_util_pct => "mem_util_pct": U32;
        power_w => "power_w": F64;
        energy_mj => "energy_mj": U64;
        fb_used_mib => "fb_used_mib": U64;
        sm_clock_mhz => "sm_clock_mhz": U32;
        mem_clock_mhz => "mem_clock_mhz": U32;
        max_sm_clock_mhz => "max_sm_clock_mhz": U32;
        temperature_c => "temperature_c": U32;
        throttle_reasons => "throttle_reasons": U64;
    ];
    }
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
