//! The names in a session directory (see [`super`] for the layout).

use std::ffi::OsStr;

/// The directory of sealed parts in a session directory.
pub const PARTS_DIR: &str = "parts";
/// A part's manifest file.
pub const MANIFEST_FILE: &str = "manifest.json";
/// What a part being written is called in the session directory, before its number.
pub const UNSEALED_PREFIX: &str = ".unsealed-";
/// The session's index ([`super::index`]) in a session directory.
pub const INDEX_FILE: &str = "index.json";

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
