//! `libgpuprof.so` (`inject/src`) in programs on the simulated CUDA stack: most tests
//! read the ring a profiled process left in a session directory, without a collector.

mod capture_window;
mod counter_failures;
mod counters;
mod entry;
mod gemm;
mod graph_decode;
mod sampling;
mod stream_capture;
mod tracing;
mod wait_value;
