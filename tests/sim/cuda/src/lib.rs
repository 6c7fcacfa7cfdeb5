//! A simulated CUDA driver: a `libcuda.so.1` with the real symbol names and C ABI of
//! `cuda.h`, describing GPUs that do not exist, for testing the profiler on machines
//! without one. It behaves as NVIDIA documents the driver; see DESIGN.md section 5.
//!
//! Modules: [`consts`] (the `cuda.h` values the sim needs), [`config`] (the simulated
//! devices, from `SIMCUDA_*`), [`state`] (initialisation and `CUDA_INJECTION64_PATH`),
//! [`ffi`] (no unwinding across the C ABI), and one module per group of exports.

mod config;
mod consts;
mod error_names;
mod errors;
mod ffi;
mod proc_address;
mod state;

mod api_device;
mod api_init;
