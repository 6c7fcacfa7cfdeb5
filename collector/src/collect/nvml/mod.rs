//! Device telemetry from NVIDIA's management library (libnvidia-ml.so.1), read through
//! `nvml-wrapper`, which loads the library at run time: a machine without it still runs
//! everything else. [`Sampler`] reads every device once per [`Sampler::sample`];
//! [`SamplingThread`] does so every interval and keeps the latest readings.

mod sampler;
mod thread;

pub use sampler::{Sampler, LIB_ENV};
pub use thread::{Latest, SamplingThread};
