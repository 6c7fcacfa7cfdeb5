//! A simulated CUDA runtime (`libcudart.so.12`): the functions of `cuda_runtime_api.h`
//! an inference program's hot path calls (allocation, copies and sets, streams and
//! events, synchronisation, kernel launch, graph launch), each made of the driver calls
//! the real runtime makes for it through the driver's public entry points.
//!
//! Like the real runtime, it reports each of its calls to CUPTI's runtime API domain
//! (`CUPTI_CB_DOMAIN_RUNTIME_API`, with the real `cuda*_params` structs and callback
//! ids), through the driver; the driver calls it makes inside one come between that
//! call's entry and exit, and share its correlation id (`tests/sim/cupti/src/tracer.rs`).
//!
//! Not simulated: fat binaries registered by `nvcc`-built host code
//! (`__cudaRegisterFatBinary`); kernels come from `cudaLibraryLoadData`.

mod api_device;
mod api_launch;
mod api_memory;
mod api_stream;
mod context;
mod driver;
mod trace;
