//! What the trace builder hands to a trace format ([`Sink`]): processes, tracks and
//! slices, each declared before anything that refers to it.

use std::io;

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
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Kernel,
        Category::Memcpy,
        Category::Memset,
        Category::CudaApi,
        Category::Nvtx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Kernel => "kernel",
            Category::Memcpy => "memcpy",
            Category::Memset => "memset",
            Category::CudaApi => "cuda_api",
            Category::Nvtx => "nvtx",
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
}

/// A trace format: receives the trace as it is built, in the order the session's
/// records are read, and writes it.
pub trait Sink {
    fn process(&mut self, process: &Process) -> io::Result<()>;
    fn track(&mut self, track: &Track) -> io::Result<()>;
    fn slice(&mut self, slice: &Slice) -> io::Result<()>;
    /// After the last slice.
    fn finish(&mut self) -> io::Result<()>;
}
