//! Reading a session file for every command that analyses one (`report`, `trace`,
//! `roofline`, and the report `record` prints): every frame that verifies is read,
//! damaged regions are skipped and noted with their offsets and sizes, a cut tail is
//! noted, and records whose values cannot be true are screened out
//! ([`crate::analysis::integrity`]). Whoever prints the result says what was left out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use wire::session::{SessionError, SessionReader};
use wire::Record;

use crate::analysis::integrity::{screen, DamagedRegion, Integrity, Truncation};

/// The session file's name in a session's output directory.
pub const SESSION_FILE: &str = "session.gpuprof";

/// The records of a session file and what could not be read.
#[derive(Debug)]
pub struct Loaded {
    pub path: PathBuf,
    /// In file order, with the producer's pid; impossible records left out.
    pub records: Vec<(u32, Record)>,
    /// Frames read.
    pub frames: usize,
    pub integrity: Integrity,
    /// The error that ended reading before the end of the file (the file is cut short,
    /// or could not be read on), as the reader gave it.
    pub stopped: Option<SessionError>,
}

/// The session file of `session` (a directory or the file itself).
pub fn session_file(session: &Path) -> PathBuf {
    if session.is_dir() {
        session.join(SESSION_FILE)
    } else {
        session.to_path_buf()
    }
}

/// Reads every frame that verifies, skipping damaged ones. Errors only when nothing can
/// be read (missing file, not a session file, a damaged header, a newer format or
/// record protocol).
pub fn load(session: &Path) -> Result<Loaded> {
    let path = session_file(session);
    if !path.exists() {
        if session.is_dir() {
            anyhow::bail!("{}: no {SESSION_FILE} in this directory", session.display());
        }
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    // The session errors name the file; their text already includes the I/O cause.
    let mut reader = SessionReader::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let file_len = reader.file_len();
    let mut records = Vec::new();
    let mut frames = 0;
    let mut integrity = Integrity::default();
    let stopped = loop {
        match reader.next_frame() {
            Ok(Some(frame)) => {
                frames += 1;
                records.extend(frame.records.into_iter().map(|r| (frame.pid, r)));
            }
            Ok(None) => break None,
            Err(SessionError::Damaged {
                offset,
                bytes,
                reason,
                ..
            }) => integrity.damaged.push(DamagedRegion {
                offset,
                bytes,
                reason,
            }),
            // Format 1 only: a frame length that cannot be right, read no further.
            Err(SessionError::Corrupt { offset, reason, .. }) => {
                integrity.damaged.push(DamagedRegion {
                    offset,
                    bytes: file_len.saturating_sub(offset),
                    reason,
                })
            }
            Err(e) => {
                let (offset, reason) = match &e {
                    SessionError::Truncated { offset, reason, .. } => (*offset, reason.clone()),
                    other => (reader.offset(), other.to_string()),
                };
                integrity.truncated = Some(Truncation {
                    offset,
                    bytes: file_len.saturating_sub(offset),
                    reason,
                });
                break Some(e);
            }
        }
    };
    let (records, impossible) = screen(records);
    integrity.impossible = impossible;
    Ok(Loaded {
        path,
        records,
        frames,
        integrity,
        stopped,
    })
}
