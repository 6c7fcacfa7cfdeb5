//! A simulated NVIDIA management library (`libnvidia-ml.so.1`): the C API that
//! `nvml-wrapper` and NVIDIA's `nvidia-ml-py` call, with `nvml.h`'s layouts and return
//! codes, reporting the simulated driver's devices (`sim_core::machine`: count, name,
//! UUID, PCI location) and telemetry computed from the work the simulated driver ran
//! (`sim_core::telemetry`, `model`). docs/ARCHITECTURE.md, "The simulated CUDA stack",
//! describes the model.

mod config;
mod consts;
mod devices;
mod ffi;
mod model;
mod state;

mod api_device;
mod api_system;
