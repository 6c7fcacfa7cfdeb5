//! The session file: the durable record of a run, written by the collector.
//!
//! ```text
//! header:  magic "GPUPROFS" | u32 LE format version | u32 LE record protocol version
//! frames:  u32 LE payload length | u32 LE producer pid | payload (a MessagePack batch)
//! ```
//! Frames are appended as the collector drains rings; a file cut short (a collector
//! that died mid-write) reads up to its last whole frame and then reports where it
//! ends. Readers accept every format version up to their own.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::record::Record;

/// First bytes of a session file.
pub const MAGIC: [u8; 8] = *b"GPUPROFS";
/// Version of the file framing.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER_LEN: u64 = 16;
/// Largest frame a reader accepts (a corrupt length must not allocate gigabytes).
pub const MAX_FRAME: u32 = 1 << 30;

/// What went wrong with a session file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a gpuprof session file (bad magic at offset 0)", path.display())]
    BadMagic { path: PathBuf },
    #[error("{}: session format {found} is newer than this gpuprof reads ({expected}); upgrade gpuprof", path.display())]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{}: corrupt at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error("{}: truncated at offset {offset}: {reason}", path.display())]
    Truncated {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
}

/// Appends frames to a new session file.
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    offset: u64,
}

impl SessionWriter {
    /// Creates `path` (it must not exist, and a symbolic link there is not followed:
    /// `O_EXCL`, `O_NOFOLLOW`), mode 0600 as the collector's own output files are,
    /// and writes the header.
    pub fn create(path: &Path) -> Result<SessionWriter, SessionError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|source| SessionError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        SessionWriter::new(file, path)
    }

    /// Writes the header into `file`, a new empty file the caller created at `path`
    /// (the collector creates its output files in one place, `output_file.rs`).
    pub fn new(file: File, path: &Path) -> Result<SessionWriter, SessionError> {
        let io = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&MAGIC).map_err(io)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes()).map_err(io)?;
        out.write_all(&crate::PROTOCOL_VERSION.to_le_bytes())
            .map_err(io)?;
        Ok(SessionWriter {
            out,
            path: path.to_path_buf(),
            offset: HEADER_LEN,
        })
    }

    /// Appends one frame: `payload` is a batch as [`crate::encode_batch`] makes it.
    pub fn append(&mut self, pid: u32, payload: &[u8]) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|l| *l <= MAX_FRAME)
            .ok_or_else(|| SessionError::Corrupt {
                path: self.path.clone(),
                offset: self.offset,
                reason: format!(
                    "frame of {} bytes exceeds the {MAX_FRAME}-byte limit",
                    payload.len()
                ),
            })?;
        self.out.write_all(&len.to_le_bytes()).map_err(io)?;
        self.out.write_all(&pid.to_le_bytes()).map_err(io)?;
        self.out.write_all(payload).map_err(io)?;
        self.offset += 8 + payload.len() as u64;
        Ok(())
    }

    /// Bytes written so far, header included.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// Whether only the header has been written.
    pub fn is_empty(&self) -> bool {
        self.offset == HEADER_LEN
    }

    /// Flushes buffered frames to the file and the file to disk.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        self.out.flush().map_err(io)?;
        self.out.get_ref().sync_data().map_err(io)
    }
}

/// One frame of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The producing process.
    pub pid: u32,
    /// Where the frame starts in the file.
    pub offset: u64,
    pub records: Vec<Record>,
}

/// Reads a session file frame by frame.
pub struct SessionReader {
    input: BufReader<File>,
    path: PathBuf,
    offset: u64,
    len: u64,
}

impl SessionReader {
    /// Opens `path` and checks its header.
    pub fn open(path: &Path) -> Result<SessionReader, SessionError> {
        let io = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut input = BufReader::with_capacity(1 << 20, file);
        let mut header = [0u8; HEADER_LEN as usize];
        let have = len.min(HEADER_LEN) as usize;
        input.read_exact(&mut header[..have]).map_err(io)?;
        // A short file that is not the start of a session file is not one.
        if header[..have.min(8)] != MAGIC[..have.min(8)] {
            return Err(SessionError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        if len < HEADER_LEN {
            return Err(SessionError::Truncated {
                path: path.to_path_buf(),
                offset: 0,
                reason: format!("the {HEADER_LEN}-byte header is cut short at {len} bytes"),
            });
        }
        let format = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        if format == 0 {
            return Err(SessionError::Corrupt {
                path: path.to_path_buf(),
                offset: 8,
                reason: "session format version 0".into(),
            });
        }
        if format > FORMAT_VERSION {
            return Err(SessionError::Version {
                path: path.to_path_buf(),
                found: format,
                expected: FORMAT_VERSION,
            });
        }
        Ok(SessionReader {
            input,
            path: path.to_path_buf(),
            offset: HEADER_LEN,
            len,
        })
    }

    /// The next frame, `None` at the end of the file.
    ///
    /// After a [`SessionError::Truncated`] or an oversized frame length, the reader stays
    /// at the frame that failed (calling again gives the same error); after a frame that
    /// does not decode, it continues with the next frame.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, SessionError> {
        if self.offset == self.len {
            return Ok(None);
        }
        let start = self.offset;
        if self.len - start < 8 {
            return Err(SessionError::Truncated {
                path: self.path.clone(),
                offset: start,
                reason: format!("{} bytes left, a frame header is 8", self.len - start),
            });
        }
        let mut head = [0u8; 8];
        self.input
            .read_exact(&mut head)
            .map_err(|source| SessionError::Io {
                path: self.path.clone(),
                source,
            })?;
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        let pid = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        let err = if len > MAX_FRAME {
            Some(SessionError::Corrupt {
                path: self.path.clone(),
                offset: start,
                reason: format!("frame length {len} exceeds the {MAX_FRAME}-byte limit"),
            })
        } else if self.len - start - 8 < len as u64 {
            Some(SessionError::Truncated {
                path: self.path.clone(),
                offset: start,
                reason: format!(
                    "frame of {len} bytes, only {} left in the file",
                    self.len - start - 8
                ),
            })
        } else {
            None
        };
        if let Some(err) = err {
            // Stay at the frame's start, in step with `self.offset`.
            self.input
                .seek_relative(-8)
                .map_err(|source| SessionError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            return Err(err);
        }
        let mut payload = vec![0u8; len as usize];
        self.input
            .read_exact(&mut payload)
            .map_err(|source| SessionError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.offset = start + 8 + len as u64;
        let records = crate::decode_batch(&payload).map_err(|e| SessionError::Corrupt {
            path: self.path.clone(),
            offset: start,
            reason: format!("frame does not decode: {e}"),
        })?;
        Ok(Some(Frame {
            pid,
            offset: start,
            records,
        }))
    }
}
