//! The thin safe layer over `cupti-sys`: finds the user's CUPTI, loads it, asks its
//! version and picks the matching activity record layouts; and every call gpuprof
//! makes into CUPTI, as small wrappers returning `Result` with owning handles
//! ([`callback`], [`activity`], [`profiler`], [`pm_sampling`]), the one rule for
//! params struct sizes ([`params`]) and counter planning ([`plan`], [`metrics`]).
//! This crate is the only caller of the raw function table.
//!
//! Nothing here panics on a missing library or symbol: every failure is a value that
//! names what was tried and why it was rejected, because this code runs inside
//! someone else's process.

pub mod activity;
pub mod callback;
mod candidate;
pub mod cbids;
mod discovery;
mod elf_check;
mod error;
mod host_library;
mod library;
pub mod metrics;
pub mod params;
pub mod plan;
pub mod pm_sampling;
mod procmaps;
pub mod profiler;
pub mod soname;
mod version;

pub use discovery::{candidates, discover, Candidate, Inputs, Rejection, Source};
pub use elf_check::check_shared_object;
pub use error::{CuptiError, LoadError, HARDWARE_BUSY_EXPLAINED};
pub use host_library::{open_host_api, preload_perf_libraries};
pub use library::{driver_init, driver_loaded, driver_version, required_functions, Cupti};
pub use procmaps::mapped_files;
pub use version::{release_for_api_version, release_name_of, ApiVersion};
