//! The record schema: raw facts as the injected library saw them.
//!
//! Timestamps are CUPTI's (ns, the host's `CLOCK_REALTIME` timebase). Ids are CUPTI's
//! (device ordinal, context id, stream id, correlation id, graph and graph node ids).
//! Strings that repeat (kernel names, NVTX messages and domains) are sent once as
//! [`Record::String`] and referred to by id, per process.

use serde::{Deserialize, Serialize};

/// One fact. On the wire each record is tagged by its variant's index in this enum
/// (`crate::encode_batch`), so variants are only ever added at the end; an unknown
/// index from a newer writer is an error the reader reports with the file offset.
/// Fields, likewise, are only ever added at the end of their struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Record {
    /// First record of every process (boxed, as [`Record::CounterPlan`]: the two
    /// largest records, rare, would otherwise make every record their size; a
    /// record is 96 bytes, not 168, wherever records are moved in bulk).
    Process(Box<ProcessInfo>),
    /// A GPU, when a context is first created on it.
    Device(DeviceInfo),
    /// A context and the device it is on.
    Context(ContextInfo),
    /// An interned string: `id` is unique per process.
    String(InternedString),
    /// A kernel execution (CUPTI concurrent-kernel activity).
    Kernel(Kernel),
    /// A memory copy.
    Memcpy(Memcpy),
    /// A memory set.
    Memset(Memset),
    /// An NVTX marker or range endpoint (CUPTI marker activity), unpaired.
    Marker(Marker),
    /// A launch API call seen by the callback API: which thread launched what.
    Launch(Launch),
    /// CUPTI's own overhead (buffer flushes, instrumentation).
    Overhead(Overhead),
    /// Hardware counter values of one kernel launch (range profiler, one pass group).
    KernelCounters(KernelCounters),
    /// Hardware counter values of one PM sampling window, GPU-wide.
    CounterSample(CounterSample),
    /// How a process collects counters: chip, mode, pass groups, sampling policy.
    CounterPlan(Box<CounterPlan>),
    /// Counters are unavailable or stopped in a process, and why.
    CounterStatus(CounterStatus),
    /// A GEMM call in cuBLAS / cuBLASLt, tied to one kernel launch it made.
    Gemm(Gemm),
    /// A CUDA graph node created by a launch API call (stream capture).
    GraphNode(GraphNode),
    /// A CUDA graph node cloned from another (graph instantiation clones every node;
    /// kernels of the executable graph carry the clone's id).
    GraphNodeCloned(GraphNodeCloned),
    /// GEMM shapes are unavailable in a process, and why.
    GemmStatus(GemmStatus),
    /// Records lost, and where.
    Dropped(Dropped),
    /// The process's stream is complete: nothing follows.
    End(End),
    /// What a capture window let through in a process (`gpuprof record --delay,
    /// --duration, --capture-range`), sent once before [`Record::End`].
    Capture(Capture),
    /// A CUDA API call other than a kernel launch, traced one by one: it copies,
    /// sets, allocates or frees memory, records or waits for an event, or waits for
    /// the GPU.
    ApiCall(ApiCall),
    /// CUDA API calls of one function on one thread not traced one by one, counted
    /// since the process's last such record.
    ApiTally(ApiTally),
    /// A GEMM call in cuBLAS / cuBLASLt that launched kernels: its thread and span
    /// (its launches are [`Record::Gemm`] with the same call number).
    GemmCall(GemmCall),
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    /// The command line, one entry per argument.
    pub command: Vec<String>,
    pub host: String,
    /// `CLOCK_REALTIME` ns when profiling started in this process.
    pub start_ns: u64,
    /// gpuprof's version.
    pub profiler_version: String,
    /// What `cuptiGetVersion` answered.
    pub cupti_api_version: u32,
    /// The CUPTI release whose record layouts were used ("13.4").
    pub cupti_layouts: String,
    /// Where CUPTI was loaded from.
    pub cupti_path: String,
    /// The variables of [`crate::env::RECORDED_ENVIRONMENT`] (a distributed launcher's
    /// rank and world size) that the process had set at start-up, as `NAME=value`, in
    /// that list's order.
    #[serde(default)]
    pub environment: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub id: u32,
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// Core clock, kHz.
    pub core_clock_khz: u32,
    /// Memory clock, kHz.
    pub memory_clock_khz: u32,
    pub memory_bus_width_bits: u32,
    pub global_memory_bytes: u64,
    pub l2_cache_bytes: u32,
    pub uuid: [u8; 16],
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextInfo {
    pub context_id: u32,
    pub device_id: u32,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternedString {
    pub id: u32,
    pub text: String,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// [`InternedString`] id of the kernel's (mangled) name.
    pub name: u32,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub registers_per_thread: u16,
    pub static_shared_memory: i32,
    pub dynamic_shared_memory: i32,
    /// Set when launched from a CUDA graph, else 0.
    pub graph_id: u32,
    /// Set when launched from a CUDA graph, else 0.
    pub graph_node_id: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memcpy {
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    /// `CUpti_ActivityMemcpyKind` (1 HtoD, 2 DtoH, 8 DtoD, ...).
    pub copy_kind: u8,
    /// `CUpti_ActivityMemoryKind` of source and destination.
    pub src_kind: u8,
    pub dst_kind: u8,
    pub graph_node_id: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memset {
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    pub value: u32,
    pub memory_kind: u8,
    pub graph_node_id: u64,
}

/// `CUpti_ActivityFlag` marker flags, as recorded.
pub mod marker_flags {
    pub const INSTANTANEOUS: u32 = 1 << 0;
    pub const START: u32 = 1 << 1;
    pub const END: u32 = 1 << 2;
    pub const SYNC_ACQUIRE: u32 = 1 << 3;
    pub const SYNC_ACQUIRE_SUCCESS: u32 = 1 << 4;
    pub const SYNC_ACQUIRE_FAILED: u32 = 1 << 5;
    pub const SYNC_RELEASE: u32 = 1 << 6;
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// [`marker_flags`] (CUPTI_ACTIVITY_FLAG_MARKER_*).
    pub flags: u32,
    pub timestamp_ns: u64,
    /// CUPTI's marker id: a range's start and end share it.
    pub id: u32,
    /// The thread (for push/pop ranges and marks), or 0.
    pub thread_id: u64,
    pub process_id: u32,
    /// [`InternedString`] id of the message, 0 for none (end markers carry none).
    pub name: u32,
    /// [`InternedString`] id of the NVTX domain, 0 for the default domain.
    pub domain: u32,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub correlation_id: u32,
    /// `CUpti_driver_api_trace_cbid` (or runtime cbid when `runtime`).
    pub cbid: u32,
    pub runtime: bool,
    pub thread_id: u64,
    /// CUPTI timestamps at API entry and exit.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// [`ApiCall::stream_id`] of a call that names no stream (context or event
/// synchronisation, allocation).
pub const NO_STREAM: u32 = u32::MAX;

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiCall {
    pub correlation_id: u32,
    /// `CUpti_driver_api_trace_cbid` (or runtime cbid when `runtime`).
    pub cbid: u32,
    pub runtime: bool,
    /// [`InternedString`] id of the function's name as CUPTI gives it.
    pub name: u32,
    /// CUPTI's id of the context the call ran in (see [`ContextInfo`]).
    pub context_id: u32,
    pub thread_id: u64,
    /// CUPTI timestamps at API entry and exit.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Bytes the call copies, sets or allocates; 0 for other calls.
    pub bytes: u64,
    /// CUPTI's id of the stream the call enqueues on or waits for ([`NO_STREAM`]
    /// when it names none).
    pub stream_id: u32,
    /// The event the call records or waits for: its handle, a number unique among
    /// the process's live events; 0 when the call names none.
    pub event: u64,
    /// Whether the call returned success.
    pub ok: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiTally {
    /// The thread; 0 for the threads past the per-thread tables ("other threads").
    pub thread_id: u64,
    /// `CUpti_driver_api_trace_cbid` (or runtime cbid when `runtime`).
    pub cbid: u32,
    pub runtime: bool,
    /// [`InternedString`] id of the function's name.
    pub name: u32,
    /// Calls counted since the last record of this thread and function.
    pub calls: u64,
    /// Their summed duration (CUPTI timestamps at entry and exit).
    pub total_ns: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmCall {
    /// Per-process number of the call ([`Gemm::call`]).
    pub call: u64,
    /// The calling thread (its kernel id, as [`Launch::thread_id`]).
    pub thread_id: u64,
    /// CUPTI timestamps when the hooked function was entered and returned.
    pub start_ns: u64,
    pub end_ns: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    /// `CUpti_ActivityOverheadKind`.
    pub kind: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub thread_id: u64,
}

/// One metric's value: [`InternedString`] id of the metric name, and the value as
/// NVIDIA's metrics evaluation gives it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub name: u32,
    pub value: f64,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCounters {
    /// The launch's correlation id (the [`Kernel`] record with the same id).
    pub correlation_id: u32,
    /// Index of the pass group in the process's [`CounterPlan`].
    pub group: u32,
    pub metrics: Vec<MetricValue>,
    /// The range's index in its pass: 0 for a kernel launch (its only range); for a
    /// CUDA graph launch, the position of the kernel in the launch's execution order
    /// (CUPTI's auto ranges "0", "1", ... of the graph's kernel nodes), which the
    /// collector matches to the launch's kernels ordered by start time.
    #[serde(default)]
    pub range: u32,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSample {
    pub device_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub metrics: Vec<MetricValue>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPlan {
    pub device_id: u32,
    /// NVIDIA's chip name ("GH100").
    pub chip: String,
    /// [`CounterMode::name`]: "kernel" (range profiler per launch) or "sampling" (PM
    /// sampling). A word, not the enum, so that a mode added later reads back.
    pub mode: String,
    /// The pass groups: [`InternedString`] ids of metric names, group by group.
    pub groups: Vec<Vec<u32>>,
    /// The sampling policy in words, for the report ("first 64 launches of each kernel").
    pub policy: String,
}

impl CounterPlan {
    /// Its [`CounterPlan::mode`], `None` for a word this release does not know.
    pub fn counter_mode(&self) -> Option<CounterMode> {
        CounterMode::from_name(&self.mode)
    }
}

/// How a [`CounterPlan`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CounterMode {
    /// The range profiler, per kernel launch.
    Kernel,
    /// PM sampling, GPU-wide windows.
    Sampling,
}

impl CounterMode {
    pub const ALL: [CounterMode; 2] = [CounterMode::Kernel, CounterMode::Sampling];

    /// The word a plan's `mode` holds.
    pub fn name(self) -> &'static str {
        match self {
            CounterMode::Kernel => "kernel",
            CounterMode::Sampling => "sampling",
        }
    }

    /// The mode [`CounterMode::name`] names.
    pub fn from_name(name: &str) -> Option<CounterMode> {
        CounterMode::ALL.into_iter().find(|m| m.name() == name)
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterStatus {
    /// Why counters are unavailable or stopped ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
    /// from cuptiRangeProfilerEnable: another tool holds the counters"); tracing goes on.
    pub message: String,
}

/// A GEMM call's shape and types, as the application passed them to cuBLAS or
/// cuBLASLt, for one kernel launch the call made. A call that launches several
/// kernels (split-K reduction, ...) gives one record per launch, sharing `call`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gemm {
    /// The launch's correlation id (the [`Kernel`] record with the same id, or the
    /// [`GraphNode`] the launch created under stream capture).
    pub correlation_id: u32,
    /// Per-process number of the GEMM call, from 1.
    pub call: u64,
    /// Which launch of the call this is (0: the first).
    pub launch_index: u32,
    /// [`InternedString`] id of the API function ("cublasGemmEx", "cublasLtMatmul").
    pub api: u32,
    /// Rows of op(A) and C.
    pub m: u64,
    /// Columns of op(B) and C.
    pub n: u64,
    /// Columns of op(A), rows of op(B).
    pub k: u64,
    /// Number of GEMMs in the call (1 unless batched).
    pub batch: u64,
    /// `cublasOperation_t` of A and B (0 N, 1 T, 2 C).
    pub trans_a: u32,
    pub trans_b: u32,
    /// `cudaDataType_t` of A, B, C and D (D = C outside cuBLASLt).
    pub a_type: u32,
    pub b_type: u32,
    pub c_type: u32,
    pub d_type: u32,
    /// `cublasComputeType_t` (`cudaDataType_t` for the pre-11 `cublasGemmEx` ABI).
    pub compute_type: u32,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// `cuptiGetGraphNodeId` of the node.
    pub node_id: u64,
    /// Correlation id of the launch API call that created it.
    pub correlation_id: u32,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNodeCloned {
    /// `cuptiGetGraphNodeId` of the clone.
    pub node_id: u64,
    /// `cuptiGetGraphNodeId` of the node it was cloned from.
    pub original_node_id: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmStatus {
    /// Why GEMM shapes are unavailable ("cannot patch ...: ..."); tracing goes on.
    pub message: String,
}

/// Where records were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DropSource {
    /// CUPTI could not buffer them (`cuptiActivityGetNumDroppedRecords`).
    Cupti,
    /// The in-process channel to the writer thread was full.
    Channel,
    /// The shared-memory ring was full.
    Ring,
    /// Kernels launched and NVTX markers made whose records never left CUPTI: still
    /// in its buffers when the process was killed, called `abort()` or `_exit()`, or
    /// ran out of `GPUPROF_EXIT_TIMEOUT_MS`. Counted by the collector from the ring
    /// header's tally (`wire::ring::Tally`).
    Undelivered,
    /// Records made in the process but not yet written to the ring when it ended
    /// that way. Counted by the collector from the ring header's tally.
    Unwritten,
    /// Records the collector read but could not write to the session file (its file
    /// system was full); counted in a closing frame the file keeps room for.
    Unsaved,
}

impl DropSource {
    /// Every source, in declaration order: the order of the report's rows.
    pub const ALL: [DropSource; 6] = [
        DropSource::Cupti,
        DropSource::Channel,
        DropSource::Ring,
        DropSource::Undelivered,
        DropSource::Unwritten,
        DropSource::Unsaved,
    ];

    /// The word a source is stored (the session's `dropped.source`) and reported under.
    pub fn name(self) -> &'static str {
        match self {
            DropSource::Cupti => "cupti",
            DropSource::Channel => "channel",
            DropSource::Ring => "ring",
            DropSource::Undelivered => "undelivered",
            DropSource::Unwritten => "unwritten",
            DropSource::Unsaved => "unsaved",
        }
    }

    /// The source [`DropSource::name`] names.
    pub fn from_name(name: &str) -> Option<DropSource> {
        DropSource::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Its place in [`DropSource::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub source: DropSource,
    pub records: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Records this process produced, including dropped ones.
    pub records: u64,
}

/// The capture window of a process and what it let through. Only launches made inside
/// the window have `Launch`, `Gemm`, `KernelCounters`, kernel, copy and set records.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    /// The capture range as given: "" (none), "cudaProfilerApi" or "nvtx:NAME".
    pub range: String,
    /// `GPUPROF_DELAY` in ns after the process started (0: none).
    pub delay_ns: u64,
    /// `GPUPROF_DURATION` in ns (0: until the end).
    pub duration_ns: u64,
    /// Windows opened: successful `cuProfilerStart` calls that started one, and NVTX
    /// ranges named NAME opened, while the time window was open; with a time window
    /// alone, 1 once its start was reached.
    pub windows: u64,
    /// Kernel launch API calls made (graph launches included).
    pub launches: u64,
    /// Of those, the ones made inside a window.
    pub captured_launches: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_drop_source_and_counter_mode_has_one_name_that_reads_back() {
        for (i, s) in DropSource::ALL.into_iter().enumerate() {
            assert_eq!(s.index(), i);
            assert_eq!(DropSource::from_name(s.name()), Some(s));
        }
        let names: std::collections::BTreeSet<_> = DropSource::ALL.map(DropSource::name).into();
        assert_eq!(names.len(), DropSource::ALL.len());
        for m in CounterMode::ALL {
            assert_eq!(CounterMode::from_name(m.name()), Some(m));
        }
        assert_eq!(DropSource::from_name("disk"), None);
        assert_eq!(CounterMode::from_name("Kernel"), None);
    }
}
