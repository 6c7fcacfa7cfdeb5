//! A simulated CUPTI: a `libcupti.so` with the real symbol names and C ABI of NVIDIA's
//! CUPTI headers, for testing the profiler on machines without a GPU
//! (docs/ARCHITECTURE.md, "The simulated CUDA stack").
//!
//! It impersonates one CUPTI release, chosen at run time by `SIMCUPTI_VERSION`
//! ([`release`]): `cuptiGetVersion` answers that release's `CUPTI_API_VERSION`,
//! activity records are written in that release's struct layouts ([`layouts`], from
//! `cupti_sys::records`), and release-specific API rules apply (one subscriber in 12.x,
//! `cuptiSubscribe_v2` from 13.0, multiple subscribers from 13.2, ...).
//!
//! It learns what happens on the "GPU" from the simulated driver through the private
//! [`sim_abi`] interface ([`driver`]): the driver reports every API call, resource event
//! and executed GPU operation to the [`tracer`], which assigns correlation ids, fires
//! the subscribers' callbacks ([`subscribers`]) and writes activity records into the
//! client's buffers ([`activity`], [`buffers`]), which a CUPTI-owned worker thread hands
//! back ([`worker`]).
//!
//! Exports live in the `api_*` modules. Each runs inside [`ffi::guard`]: no panic
//! unwinds into C; a panic becomes `CUPTI_ERROR_UNKNOWN`.
//!
//! NVTX reaches it as it reaches real CUPTI, through `NVTX_INJECTION64_PATH` and
//! `InitializeInjectionNvtx2` ([`nvtx`]), and becomes MARKER, MARKER_DATA and NAME
//! records and `CUPTI_CB_DOMAIN_NVTX` callbacks ([`nvtx_meta`]).
//!
//! Not simulated: overhead records (CUPTI_ACTIVITY_KIND_OVERHEAD can be enabled but
//! produces no record: the sim has no CUPTI overhead to report), runtime API
//! records (there is no simulated runtime), user-defined record layouts (13.2+ field
//! selection), the legacy event / metric APIs and the legacy `cuptiProfiler*` session
//! API (BeginSession, passes, ...).
//!
//! The profiling APIs of 12.6 on ([`profiling`]): the profiler host
//! (`cuptiProfilerHost*`: config images, evaluation), the range profiler
//! (`cuptiRangeProfiler*`, [`range_profiler`]) and PM sampling (`cuptiPmSampling*`,
//! [`pm_sampling`]), plus `cuptiProfilerInitialize`, `cuptiDeviceGetChipName` and
//! counter availability. Which metrics a chip accepts and how many passes a config
//! needs are NVIDIA's real library's answers ([`real_host`]); counter values are the
//! cost model's, carried by the driver's GPU operations; counter data and config
//! images are the sim's own layouts ([`counter_data`]).

pub mod activity;
pub mod buffers;
pub mod counter_data;
pub mod device;
pub mod driver;
pub mod ffi;
pub mod layouts;
pub mod names;
pub mod nvtx;
pub mod nvtx_meta;
pub mod pm_sampling;
pub mod profiling;
pub mod range_profiler;
pub mod real_host;
pub mod registry;
pub mod release;
pub mod results;
pub mod subscribers;
pub mod tracer;
pub mod worker;

mod api_activity;
mod api_attributes;
mod api_callbacks;
mod api_misc;
mod api_pm_sampling;
mod api_profiler_host;
mod api_profiler_target;
mod api_range_profiler;

#[cfg(test)]
mod tests;
