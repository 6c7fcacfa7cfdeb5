//! A simulated CUDA driver: a `libcuda.so.1` with the real symbol names and C ABI of
//! `cuda.h`, describing GPUs that do not exist, for testing the profiler on machines
//! without one. It behaves as NVIDIA documents the driver; see docs/ARCHITECTURE.md, "The
//! simulated CUDA stack".
//!
//! Modules: [`consts`] (the `cuda.h` values the sim needs), [`config`] (the simulated
//! devices, from `SIMCUDA_*`), [`state`] (initialisation and `CUDA_INJECTION64_PATH`),
//! [`ffi`] (no unwinding across the C ABI), [`registry`] (the driver's objects behind
//! one lock), [`context`] (per-thread context stacks), [`memory`] (the simulated device
//! address space), [`image`] (PTX / ELF module images), [`model`] (operation
//! durations), [`clock`], [`trace`] and [`export_table`] (the `sim_abi` interface to
//! the simulated CUPTI), [`proc_address`] and [`proc_table`] (`cuGetProcAddress`), and
//! one `api_*` module per group of exports.

mod clock;
pub(crate) use sim_core::machine as config;
mod consts;
mod context;
mod error_names;
mod errors;
mod export_table;
mod ffi;
mod image;
mod memory;
mod model;
mod ops;
mod proc_address;
mod proc_table;
mod registry;
mod state;
mod telemetry;
#[macro_use]
mod trace;

mod api_capture;
mod api_context;
mod api_device;
mod api_event;
mod api_graph;
mod api_init;
mod api_launch;
mod api_memcpy;
mod api_memory;
mod api_module;
mod api_stream;
mod api_stream_memop;
