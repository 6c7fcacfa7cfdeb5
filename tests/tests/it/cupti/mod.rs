//! The `cupti` and `cupti-sys` crates against NVIDIA's real CUPTI and nvperf libraries
//! and headers (the pinned wheels of `python3 scripts/nvidia-wheels.py fetch`).

mod cuda_12_6_ga;
mod cuda_12_9_ga;
mod metrics_host;
mod newer_than_driver;
mod nvidia_libraries;
mod params_sizes;
mod profiler_host_real;
