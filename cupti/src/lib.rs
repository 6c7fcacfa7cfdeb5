//! The thin safe layer over `cupti-sys`: finds the user's CUPTI, loads it, asks its
//! version and picks the matching activity record layouts. The only caller of the raw
//! function table besides the code that handles CUPTI callbacks in `inject`.
//!
//! Nothing here panics on a missing library or symbol: every failure is a value that
//! names what was tried and why it was rejected, because this code runs inside
//! someone else's process.

mod discovery;
mod error;
mod library;
pub mod metrics;
mod procmaps;
mod version;

pub use discovery::{candidates, discover, Candidate, Inputs, Rejection, Source};
pub use error::{CuptiError, LoadError};
pub use library::{driver_loaded, driver_version, required_functions, Cupti};
pub use procmaps::mapped_files;
pub use version::{release_for_api_version, release_name_of, ApiVersion};
