//! A part's manifest (`manifest.json`): what the part holds and the checksum of each
//! file, written last, so that a part directory with a manifest that verifies is
//! whole.
//!
//! ```text
//! {"format":"gpuprof-session-part","version":3,"part":1,"records":12345,"files":[
//!   {"table":"kernels","file":"kernels.parquet","rows":5000,"bytes":81234,"crc32c":305419896}, ...]}
//! crc32c 1234abcd
//! ```
//!
//! The first line is JSON; the second is the CRC-32C of the first line's bytes
//! (without its newline), in hex. A manifest whose checksum does not match is not
//! believed at all; a file whose length or checksum is not the manifest's is damaged.

use serde::{Deserialize, Serialize};

/// The `format` of every manifest.
pub const FORMAT: &str = "gpuprof-session-part";
/// Version of the session layout this gpuprof writes (and the newest it reads).
/// Version 2 and earlier were a single framed file, `session.gpuprof`; version 4 added
/// the session's index (`super::index`), which a version 3 session does not have.
pub const VERSION: u32 = 4;

/// The first layout version that is a directory of Parquet parts.
pub const FIRST_DIRECTORY_VERSION: u32 = 3;

/// The first layout version whose sessions keep an index.
pub const INDEXED_VERSION: u32 = 4;
/// A manifest larger than this is not a manifest (there are at most a few dozen files).
pub const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// The table (`kernels`).
    pub table: String,
    /// The file name in the part directory (`kernels.parquet`).
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    pub crc32c: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    /// The part's number, from 1.
    pub part: u64,
    /// Rows in all the part's tables.
    pub records: u64,
    pub files: Vec<FileEntry>,
}

impl Manifest {
    pub fn to_bytes(&self) -> Vec<u8> {
        with_checksum(&serde_json::to_string(self).expect("a manifest serializes"))
    }

    /// Parses and verifies a manifest's bytes; the error says what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let json = checked_json(bytes)?;
        let m: Manifest =
            serde_json::from_str(json).map_err(|e| format!("not a part manifest: {e}"))?;
        if m.format != FORMAT {
            return Err(format!("format is {:?}, not {FORMAT:?}", m.format));
        }
        Ok(m)
    }
}

/// `json` (one line) followed by the line `crc32c <its CRC-32C in hex>`: how a
/// manifest and the session's index are stored.
pub fn with_checksum(json: &str) -> Vec<u8> {
    let crc = crc32c::crc32c(json.as_bytes());
    format!("{json}\ncrc32c {crc:08x}\n").into_bytes()
}

/// The JSON line of bytes written by [`with_checksum`], verified; the error says what
/// is wrong.
pub fn checked_json(bytes: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let mut lines = text.split('\n');
    let json = lines.next().unwrap_or("");
    let sum = lines
        .next()
        .and_then(|l| l.strip_prefix("crc32c "))
        .ok_or_else(|| "no checksum line".to_string())?;
    if lines.any(|l| !l.is_empty()) {
        return Err("text after the checksum line".into());
    }
    // Exactly as written: 8 lowercase hex digits (a flipped case bit is damage too).
    if sum.len() != 8 || !sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!("checksum {sum:?} is not 8 lowercase hex digits"));
    }
    let want = u32::from_str_radix(sum, 16).expect("8 hex digits");
    let got = crc32c::crc32c(json.as_bytes());
    if got != want {
        return Err(format!(
            "checksum mismatch (stored {sum}, computed {got:08x})"
        ));
    }
    Ok(json)
}
