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
//! - [`manifest`]: a part's manifest;
//! - [`writer`]: filling and sealing parts;
//! - [`reader`]: listing and verifying parts, and reading them back as records.
//!
//! Any engine that reads Parquet reads a session: `parts/*/kernels.parquet` is the
//! kernel table of the whole run.

pub mod columns;
pub mod manifest;
pub mod reader;
pub mod tables;
pub mod writer;

use std::ffi::OsStr;

pub use reader::{Damage, Part, Store};
pub use writer::{write_parts, PartLimits, SealFailure, StoreWriter};

/// The directory of sealed parts in a session directory.
pub const PARTS_DIR: &str = "parts";
/// A part's manifest file.
pub const MANIFEST_FILE: &str = "manifest.json";
/// What a part being written is called in the session directory, before its number.
pub const UNSEALED_PREFIX: &str = ".unsealed-";
/// The reserve file in a session directory.
pub const RESERVE_FILE: &str = ".reserve";
/// The single session file of format 2 and earlier, recognised to say so.
pub const OLD_SESSION_FILE: &str = "session.gpuprof";

/// A part's directory name: its number, 8 digits.
pub fn part_dir_name(n: u64) -> String {
    format!("{n:08}")
}

/// The part number of a part directory's name.
pub fn parse_part_dir_name(name: &OsStr) -> Option<u64> {
    let s = name.to_str()?;
    if s.len() < 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| *n > 0)
}

#[cfg(test)]
mod tests;
