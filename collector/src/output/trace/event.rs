//! What the trace builder hands to a trace format ([`Sink`]): processes, tracks and
//! slices, each declared before anything that refers to it.

use std::io;
use std::sync::Arc;

/// What a slice is, as the trace's category names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Kernel,
    Memcpy,
    Memset,
    /// A launch API call.
    CudaApi,
    /// An NVTX range.
    Nvtx,
    /// A push/pop NVTX range projected onto a GPU stream: from the start of the first
    /// to the end of the last kernel launched inside it (innermost) on that stream.
    /// Only for sinks that ask for them ([`Sink::projects_ranges`]).
    GpuNvtx,
    /// A wait for the GPU (a synchronize call, a stream made to wait for an event)
    /// as the GPU side sees it; only for sinks that ask ([`Sink::wants_syncs`]).
    CudaSync,
    /// A cuBLAS / cuBLASLt GEMM call as the operator PyTorch would have run for it
    /// (`aten::mm`, ...), over its launches; only for sinks that ask
    /// ([`Sink::wants_gemm_ops`]).
    GemmOp,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Kernel,
        Category::Memcpy,
        Category::Memset,
        Category::CudaApi,
        Category::Nvtx,
        Category::GpuNvtx,
        Category::CudaSync,
        Category::GemmOp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Kernel => "kernel",
            Category::Memcpy => "memcpy",
            Category::Memset => "memset",
            Category::CudaApi => "cuda_api",
            Category::Nvtx => "nvtx",
            Category::GpuNvtx => "gpu_nvtx",
            Category::CudaSync => "cuda_sync",
            Category::GemmOp => "gemm_op",
        }
    }

    /// Position in [`Category::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A profiled process, declared before its first track.
#[derive(Debug, Clone, Copy)]
pub struct Process<'a> {
    /// Unique in the trace among processes and tracks, never 0.
    pub id: u64,
    pub pid: u32,
    /// Its command line; empty when the session lost the process's record.
    pub command: &'a [String],
}

/// Where slices go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrackKind {
    /// A CPU thread: its launch calls and push/pop NVTX ranges.
    Thread(u64),
    /// A GPU stream: kernels, copies and sets.
    Stream { device: u32, stream: u32 },
    /// One start/end NVTX range of the process (these may overlap each other, so
    /// each gets a track of its own).
    Range,
}

/// A track, declared before its first slice.
#[derive(Debug, Clone, Copy)]
pub struct Track {
    /// Unique in the trace among processes and tracks, never 0.
    pub id: u64,
    /// The id of its [`Process`].
    pub process: u64,
    pub pid: u32,
    /// Threads and streams: their number in the process (1, 2, ... in the order they
    /// first get a slice); 0 for ranges.
    pub index: u32,
    pub kind: TrackKind,
}

impl Track {
    /// "thread 1234", "GPU 0 stream 7", "NVTX ranges".
    pub fn name(&self) -> String {
        match self.kind {
            TrackKind::Thread(id) => format!("thread {id}"),
            TrackKind::Stream { device, stream } => format!("GPU {device} stream {stream}"),
            TrackKind::Range => "NVTX ranges".to_string(),
        }
    }
}

/// An argument's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
    /// A grid or block size.
    Dim([i32; 3]),
}

/// One argument of a slice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg<'a> {
    pub name: &'static str,
    pub value: Value<'a>,
}

/// The launch a kernel's flow comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowIn {
    /// The launch's [`Slice::flow_out`].
    pub id: u64,
    /// The launch's track.
    pub from_track: u64,
    /// The middle of the launch call, ns.
    pub from_mid_ns: u64,
    /// The kernel was launched from a CUDA graph: the launch may have more kernels.
    pub graph: bool,
}

/// What gpuprof knows about a kernel launch beyond its record, when the builder joins
/// kernels ([`Sink::joined`]): its GEMM call and the roofline numbers of the launch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelFacts {
    /// Its launch call is in the trace (so a flow from it can be drawn).
    pub launch_written: bool,
    /// The GEMM behind it: shape (M, N, K, batch), its label
    /// ([`crate::analysis::gemm::GemmShape::label`]), which launch of the call it is.
    pub gemm: Option<GemmFacts>,
    /// The GEMM's role in the model (`trace --model`): "qkv_proj", or "(no role)".
    pub role: Option<Arc<str>>,
    /// Model FLOPs credited to this launch (2·M·N·K·batch on a call's first launch).
    pub model_flops: Option<f64>,
    /// DRAM bytes read and written, when this launch measured both counters.
    pub dram_bytes: Option<f64>,
    /// DRAM bytes of a launch without its own: its class's rate fitted to the PM
    /// sampling windows times its duration (`efficiency::fitted_bytes_per_ns`).
    pub fitted_dram_bytes: Option<f64>,
    /// The peak FLOP/s of the GEMM's precision and pipe on this GPU.
    pub peak_flops: Option<f64>,
}

impl KernelFacts {
    /// FLOPs per DRAM byte measured by the launch.
    pub fn arithmetic_intensity(&self) -> Option<f64> {
        intensity(self.model_flops, self.dram_bytes)
    }

    /// FLOPs per DRAM byte fitted to the sampling windows.
    pub fn fitted_intensity(&self) -> Option<f64> {
        intensity(self.model_flops, self.fitted_dram_bytes)
    }

    /// Model FLOPs per second over `dur_ns`, as a fraction of the peak.
    pub fn mfu(&self, dur_ns: u64) -> Option<f64> {
        match (self.model_flops, self.peak_flops) {
            (Some(f), Some(p)) if f > 0.0 && p > 0.0 && dur_ns > 0 => {
                Some(f / (dur_ns as f64 * 1e-9) / p)
            }
            _ => None,
        }
    }

    /// The facts as arguments of a kernel slice of `dur_ns`, those known only: the
    /// GEMM (`gemm` its label, `gemm_m` ... `gemm_call_launch`, `gemm_role`), `model_flops`,
    /// `dram_bytes` and `arithmetic_intensity` when the launch measured its bytes,
    /// else `dram_bytes_fitted` and `arithmetic_intensity_fitted` (its class's rate
    /// fitted to PM sampling), `mfu_pct`.
    pub fn push_args<'a>(&'a self, dur_ns: u64, args: &mut Vec<Arg<'a>>) {
        let mut push = |name, value| args.push(Arg { name, value });
        if let Some(g) = &self.gemm {
            push("gemm", Value::Str(&g.label));
            push("gemm_m", Value::U64(g.m));
            push("gemm_n", Value::U64(g.n));
            push("gemm_k", Value::U64(g.k));
            push("gemm_batch", Value::U64(g.batch));
            push("gemm_call_launch", Value::U64(g.launch_index.into()));
        }
        if let Some(role) = &self.role {
            push("gemm_role", Value::Str(role));
        }
        let numbers = [
            ("model_flops", self.model_flops),
            ("dram_bytes", self.dram_bytes),
            ("arithmetic_intensity", self.arithmetic_intensity()),
            ("dram_bytes_fitted", self.fitted_dram_bytes),
            ("arithmetic_intensity_fitted", self.fitted_intensity()),
            ("mfu_pct", self.mfu(dur_ns).map(|v| v * 100.0)),
        ];
        for (name, v) in numbers {
            if let Some(v) = v {
                push(name, Value::F64(v));
            }
        }
    }
}

fn intensity(flops: Option<f64>, bytes: Option<f64>) -> Option<f64> {
    match (flops, bytes) {
        (Some(f), Some(b)) if f > 0.0 && b > 0.0 => Some(f / b),
        _ => None,
    }
}

/// A GEMM call as a kernel's facts show it.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmFacts {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    pub label: String,
    /// Which launch of the call (0: the first, which carries the FLOPs).
    pub launch_index: u32,
}

/// The record behind a slice, for formats that write a record's fields their own way
/// (Kineto's argument names).
#[derive(Debug, Clone, Copy, Default)]
pub enum Source<'a> {
    #[default]
    None,
    Kernel(&'a wire::Kernel, Option<&'a KernelFacts>),
    Memcpy(&'a wire::Memcpy),
    Memset(&'a wire::Memset),
    Launch(&'a wire::Launch),
    /// A CUDA call traced one by one (not a launch).
    ApiCall(&'a wire::ApiCall),
    /// A wait ([`Category::CudaSync`]).
    Sync(&'a SyncFacts),
    /// A GEMM call as an operator ([`Category::GemmOp`]).
    GemmOp(&'a GemmOp),
}

/// A GEMM call as the operator PyTorch would have run for it (`gemm_ops.rs`), with
/// the arguments PyTorch's profiler records for one.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmOp {
    /// `aten::mm`, `aten::bmm` or `aten::_scaled_mm`.
    pub name: &'static str,
    /// PyTorch's `Input Dims`: A then B, `[M, K], [K, N]` (batched: `[B, M, K], [B, K,
    /// N]`).
    pub dims: [Vec<u64>; 2],
    /// PyTorch's `Input type` of A and B (`c10::BFloat16`, ...).
    pub types: [&'static str; 2],
    /// Numbers the process's operators (Kineto's `External id`).
    pub external_id: u64,
    /// The call's id in the session (`gemms.call`).
    pub call: u64,
    /// The shape as the report labels it.
    pub label: String,
    /// 2·M·N·K·batch.
    pub model_flops: f64,
    /// The kernels it launched.
    pub launches: u32,
}

/// A wait as the trace shows it ([`Sink::wants_syncs`], made in `api_calls.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncFacts {
    /// The process (its file, for Kineto).
    pub pid: u32,
    /// Kineto's name of CUPTI's synchronization type.
    pub kind: &'static str,
    pub device: u32,
    /// The stream synchronised or made to wait; `None` for context and event syncs.
    pub stream: Option<u32>,
    pub context: u32,
    pub correlation: u32,
    /// For an event: its last record before the wait (stream, correlation id), when
    /// the trace holds it.
    pub waits_on: Option<(u32, u32)>,
    /// The event's handle, for an event.
    pub event: u64,
}

/// A span of time on a track.
#[derive(Debug, Clone, Copy)]
pub struct Slice<'a> {
    pub track: u64,
    pub category: Category,
    pub name: &'a str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub args: &'a [Arg<'a>],
    /// A launch call: the id of the flow to its kernels (from the process and the
    /// correlation id), whether or not a kernel is found.
    pub flow_out: Option<u64>,
    /// A kernel whose launch call is in the trace.
    pub flow_in: Option<FlowIn>,
    /// The record it was made from.
    pub source: Source<'a>,
}

/// A trace format: receives the trace as it is built, in the order the session's
/// records are read, and writes it.
pub trait Sink {
    fn process(&mut self, process: &Process) -> io::Result<()>;
    fn track(&mut self, track: &Track) -> io::Result<()>;
    fn slice(&mut self, slice: &Slice) -> io::Result<()>;
    /// After the last slice.
    fn finish(&mut self) -> io::Result<()>;
    /// Whether kernels are to be joined to their GEMM call and counters before they
    /// are written ([`KernelFacts`], also given as the slice's arguments): they then
    /// come a few parts after they were read, `launch_written` saying whether their
    /// launch is in the trace.
    fn joined(&self) -> bool {
        false
    }
    /// Whether push/pop NVTX ranges also come projected onto the GPU streams their
    /// kernels ran on ([`Category::GpuNvtx`]); only for a sink that joins kernels.
    fn projects_ranges(&self) -> bool {
        false
    }
    /// Whether waits also come as [`Category::CudaSync`] slices (`api_calls.rs`);
    /// such a slice has no track (0): the sink places it from its
    /// [`Source::Sync`] facts.
    fn wants_syncs(&self) -> bool {
        false
    }
    /// Whether each cuBLAS / cuBLASLt GEMM call also comes as a
    /// [`Category::GemmOp`] slice on its thread, once its last kernel is finalized
    /// (a sink that joins kernels only).
    fn wants_gemm_ops(&self) -> bool {
        false
    }
}
