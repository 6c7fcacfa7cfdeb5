//! `libgpuprof.so`: the profiler that runs inside the profiled process.
//!
//! Two ways in, one start-up:
//! - `CUDA_INJECTION64_PATH=libgpuprof.so`: the CUDA driver loads us during `cuInit` and
//!   calls `InitializeInjection`.
//! - `LD_PRELOAD=libgpuprof.so`: our ELF constructor runs before `main`. It does not
//!   load CUPTI into a process that may never use CUDA; it points
//!   `CUDA_INJECTION64_PATH` at this library, so the driver calls
//!   `InitializeInjection` when (and only if) the process initialises CUDA.
//!
//! The profiler is a guest: no entry point lets a panic escape, every failure becomes
//! one `gpuprof:` warning on stderr and the profiler turns itself off.

mod activity;
mod api_calls;
mod api_tally;
mod callbacks;
mod capture_window;
mod counters;
mod decode;
mod device;
mod driver_args;
mod entry;
mod exit;
mod exit_order;
mod gemm;
mod guard;
mod handoff;
mod log;
mod nvtx_markers;
mod nvtx_ranges;
mod options;
mod preload;
mod runtime_args;
mod runtime_calls;
mod session;
mod startup;
mod state;
mod tally;
mod this_library;
mod thread;
mod tracer;
mod tracing;
mod writer;

pub use state::{state, State};
