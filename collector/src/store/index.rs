//! The session's index (`index.json` in the session directory): every part the
//! collector sealed, with its record count and its manifest's checksum, and whether
//! the session was finished. A part directory alone cannot say that a sibling is
//! missing, or that it was copied in from elsewhere; the index can. It is written at
//! the session's start, before each part is renamed into `parts/` (so a part in
//! `parts/` is always listed), and once more, finished, at the end.
//!
//! ```text
//! {"format":"gpuprof-session-index","version":4,"parts":[{"part":1,"records":12345,"manifest_crc32c":305419896}],"finished":true}
//! crc32c 1234abcd
//! ```
//!
//! Stored as a manifest is ([`super::manifest::with_checksum`]). A reader checks the
//! part directories against it: one listed and absent is missing, one present and not
//! listed (or with another manifest) is not this session's, and an unfinished index
//! means the collector stopped before the end of the run.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::layout::INDEX_FILE;
use super::manifest::{checked_json, with_checksum, VERSION};
use super::output_file;

/// The `format` of every index.
pub const FORMAT: &str = "gpuprof-session-index";

/// An index larger than this is not believed: at 40 bytes a part, a million parts.
pub const MAX_BYTES: u64 = 64 << 20;
/// Uncounted losses an index lists one by one; the collector's last entry counts
/// the rest. An index listing more is not one a collector wrote.
pub const MAX_LOST: usize = 64;
/// The longest entry of [`Index::lost`] a collector writes (a message with a path).
pub const MAX_LOST_BYTES: usize = 8192;

/// One sealed part, as the collector wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedPart {
    pub part: u64,
    /// Rows in all its tables (its manifest's `records`).
    pub records: u64,
    /// CRC-32C of its whole `manifest.json`.
    pub manifest_crc32c: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub format: String,
    pub version: u32,
    pub parts: Vec<IndexedPart>,
    /// The collector wrote the session's last part and ended.
    pub finished: bool,
    /// Losses the collector saw and could not count, in words (a ring another
    /// process truncated, one it could not read to its end, a producer it stopped
    /// following): a session with any is incomplete. Absent from indexes without
    /// any, and from those of earlier releases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
}

impl Default for Index {
    fn default() -> Index {
        Index {
            format: FORMAT.into(),
            version: VERSION,
            parts: Vec::new(),
            finished: false,
            lost: Vec::new(),
        }
    }
}

impl Index {
    pub fn to_bytes(&self) -> Vec<u8> {
        with_checksum(&serde_json::to_string(self).expect("an index serializes"))
    }

    /// Parses and verifies an index's bytes; the error says what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Index, String> {
        let index: Index = serde_json::from_str(checked_json(bytes)?)
            .map_err(|e| format!("not a session index: {e}"))?;
        if index.format != FORMAT {
            return Err(format!("format is {:?}, not {FORMAT:?}", index.format));
        }
        if index.lost.len() > MAX_LOST || index.lost.iter().any(|l| l.len() > MAX_LOST_BYTES) {
            return Err(format!(
                "{} uncounted losses listed, or one over {MAX_LOST_BYTES} bytes: not as a \
                 collector writes them (at most {MAX_LOST})",
                index.lost.len()
            ));
        }
        // As the collector writes them: in increasing order, each once.
        if let Some(w) = index.parts.windows(2).find(|w| w[0].part >= w[1].part) {
            return Err(format!(
                "part {} listed after part {}: not in increasing order",
                w[1].part, w[0].part
            ));
        }
        Ok(index)
    }

    /// The entry of part `n` (by binary search: the parts are in order).
    pub fn part(&self, n: u64) -> Option<&IndexedPart> {
        let at = self.parts.binary_search_by_key(&n, |p| p.part).ok()?;
        self.parts.get(at)
    }

    /// Writes the index into the session directory `dir`, replacing the one there
    /// (a temporary file beside it, synced, then renamed, and the directory synced):
    /// a reader finds the old index or the new one, whole.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(INDEX_FILE);
        let (tmp, mut file) = output_file::temp_beside(&path, INDEX_FILE)?;
        let written = file
            .write_all(&self.to_bytes())
            .and_then(|_| file.sync_all())
            .and_then(|_| std::fs::rename(&tmp, &path))
            .and_then(|_| File::open(dir)?.sync_all());
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        super::temp_files::forget(&tmp);
        written
    }
}
