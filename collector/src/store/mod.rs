//! The session on disk: a directory of Parquet parts (docs/SESSION.md).
//!
//! ```text
//! <session>/
//!   parts/00000001/manifest.json    what the part holds, with each file's CRC-32C
//!   parts/00000001/kernels.parquet  one file per table that has rows in the part
//!   parts/00000001/launches.parquet ...
//!   parts/00000002/...
//!   .unsealed-00000003/             a part being written (gone once it is sealed)
//!   .reserve                        room kept for the last part when the disk fills
//! ```
//!
//! - [`tables`]: the tables and their columns, and records to rows and back;
//! - [`columns`]: typed column builders and readers;
//! - [`device_samples`]: NVML readings to rows and back;
//! - [`layout`]: the names in a session directory;
//! - [`manifest`]: a part's manifest;
//! - [`writer`]: filling and sealing parts;
//! - [`reader`]: listing and verifying parts, and reading them back as records.
//!
//! Any engine that reads Parquet reads a session: `parts/*/kernels.parquet` is the
//! kernel table of the whole run.

pub mod cells;
pub mod columns;
pub mod device_samples;
pub mod index;
pub mod layout;
pub mod manifest;
pub mod output_file;
pub mod reader;
pub mod tables;
pub mod temp_files;
pub mod writer;

pub use layout::*;
pub use reader::{Damage, Part, Store};
pub use writer::{write_parts, PartLimits, SealFailure, StoreWriter};

#[cfg(test)]
mod tests;
