//! Raw FFI to NVIDIA CUPTI and the nvperf host library. No logic.
//!
//! Everything under [`generated`] is produced by `scripts/regen-bindings.sh` from
//! NVIDIA's own headers (the pinned `nvidia-cuda-cupti*` and `nvidia-cuda-runtime*`
//! wheels) and committed:
//! - shared declarations (result codes, callback ids and data, profiler parameter
//!   structs) from the newest pinned release, re-exported at the crate root;
//! - [`CuptiFns`] and [`NvperfHostFns`]: the functions the profiler calls, resolved at
//!   run time with libloading, never linked;
//! - [`cublas`]: the cuBLAS / cuBLASLt types and function-pointer types of the GEMM
//!   functions `libgpuprof.so` hooks and calls, and [`cublas_hooked!`], which hands the
//!   hooked functions' signatures to a macro (from the pinned `nvidia-cublas-cu12`
//!   headers);
//! - [`records`]: one module per CUPTI release with the activity record layouts that
//!   release writes. Which one applies is decided at run time from
//!   `cuptiGetVersion`, because the user's CUPTI decides, not our build.
//!
//! bindgen's layout assertions are kept: every struct's size, alignment and field
//! offsets are checked at compile time against what clang computed from the headers.

#![no_std]

#[rustfmt::skip]
#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    unnecessary_transmutes,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    rustdoc::all
)]
pub mod generated {
    pub mod common;
    pub mod cublas;
    pub mod cupti_fns;
    pub mod nvperf_host_fns;
    pub mod records;
}

pub use generated::common::*;
pub use generated::cublas;
pub use generated::cupti_fns::{CuptiFns, CUPTI_FN_NAMES};
pub use generated::nvperf_host_fns::{NvperfHostFns, NVPERF_HOST_FN_NAMES};
pub use generated::records;
