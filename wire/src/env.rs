//! The environment variables of the contract: each is set by one side (the user, the
//! `gpuprof` collector or a profiled process) and read by the other, so both name it
//! through these constants. docs/SESSION.md describes each.

/// The session's ring directory. Set by `gpuprof record` for its command, and by the
/// first profiled process in env-var-only mode for the processes it starts.
pub const SESSION_DIR: &str = "GPUPROF_SESSION_DIR";
/// The data bytes of each process's ring (`K`, `M`, `G` suffixes; see
/// [`crate::session_dir::parse_size`]). Set from `gpuprof record --ring-size`.
pub const RING_SIZE: &str = "GPUPROF_RING_SIZE";
/// The output directory, read by `gpuprof record` and by a profiled process that
/// starts the collector itself.
pub const OUT: &str = "GPUPROF_OUT";
/// The `gpuprof` binary a profiled process starts in env-var-only mode.
pub const COLLECTOR: &str = "GPUPROF_COLLECTOR";
/// The `libgpuprof.so` that `gpuprof record` injects.
pub const LIB: &str = "GPUPROF_LIB";
/// The libcupti to load instead of searching for one.
pub const CUPTI_LIB: &str = "GPUPROF_CUPTI_LIB";
/// Counter mode: `kernel`, `sampling` or `off`.
pub const COUNTERS: &str = "GPUPROF_COUNTERS";
/// Metric names replacing the default set.
pub const METRICS: &str = "GPUPROF_METRICS";
/// Counter replay: `none` or `kernel`.
pub const REPLAY: &str = "GPUPROF_REPLAY";
/// Per-kernel counters of CUDA graph launches by kernel replay: `on` or `off`
/// (default; docs/ARCHITECTURE.md, "CUDA graphs and the range profiler", says why).
pub const GRAPH_REPLAY: &str = "GPUPROF_GRAPH_REPLAY";
/// Record only from this many seconds after the process starts (fractions allowed).
/// Set from `gpuprof record --delay`.
pub const DELAY: &str = "GPUPROF_DELAY";
/// Record only for this many seconds (after the delay). Set from `gpuprof record
/// --duration`.
pub const DURATION: &str = "GPUPROF_DURATION";
/// Record only inside a capture range: `cudaProfilerApi` or `nvtx:NAME`. Set from
/// `gpuprof record --capture-range`.
pub const CAPTURE_RANGE: &str = "GPUPROF_CAPTURE_RANGE";
/// The NVTX injection library the demo's workload loads.
pub const NVTX_LIB: &str = "GPUPROF_NVTX_LIB";
/// The temporary directory, a fallback for the ring directory.
pub const TMPDIR: &str = "TMPDIR";

/// The variables of a profiled process's own environment that its `Process` record
/// keeps (`ProcessInfo::environment`): what distributed launchers (torchrun,
/// `torch.distributed.launch`, DeepSpeed, Slurm wrappers that export them) set for
/// each rank. `gpuprof trace --format kineto` names each process's trace file's rank
/// from them. Nothing else of the environment is kept: it holds tokens and keys.
pub const RECORDED_ENVIRONMENT: &[&str] = &["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"];
