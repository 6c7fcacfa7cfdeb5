//! The session file: the durable record of a run, written by the collector.
//!
//! Format version 2, what [`SessionWriter`] writes (integers little-endian, CRC-32C as
//! in iSCSI / ext4):
//!
//! ```text
//! header, 20 bytes:
//!    0  magic "GPUPROFS"
//!    8  u32 format version (2)
//!   12  u32 record protocol version (the writer's crate::PROTOCOL_VERSION)
//!   16  u32 CRC-32C of bytes 0..16
//! frames, one after the other, each a 20-byte frame header and its payload:
//!    0  sync marker C1 47 50 46 (0xC1 "GPF")
//!    4  u32 payload length, at most MAX_FRAME
//!    8  u32 producer pid
//!   12  u32 CRC-32C of the payload
//!   16  u32 CRC-32C of frame bytes 0..16 (marker, length, pid, payload CRC)
//!   20  payload: one MessagePack batch (crate::encode_batch)
//! ```
//!
//! Frames are appended as the collector drains rings. What a reader does with each
//! part:
//!
//! - The header: the magic, then (format 2 and later) the header CRC, before either
//!   version is believed: a damaged header is [`SessionError::Corrupt`] at offset 0,
//!   never a misread version. A format newer than [`FORMAT_VERSION`] is
//!   [`SessionError::Version`]; a record protocol newer than [`crate::PROTOCOL_VERSION`]
//!   is [`SessionError::Protocol`] (file, offset 12, value). Every later format keeps
//!   these first 20 bytes, so that any reader can check them.
//! - A frame is believed when its marker and its header CRC match. Its payload CRC then
//!   says whether the payload is intact: if not, the frame (whose length is known to be
//!   right) is skipped as [`SessionError::Damaged`] and reading goes on at the next one.
//! - A frame header that does not verify (a flipped bit in the marker, length, pid or
//!   either CRC) means the length cannot be trusted: the reader scans forward byte by
//!   byte for the next marker whose header CRC verifies, and reports the bytes from
//!   the damaged frame up to that frame (or to the end of the file) as one
//!   [`SessionError::Damaged`] region. A flipped bit therefore costs exactly the frame
//!   it is in. A scan accepts nothing on the marker alone: a candidate needs the marker
//!   and its header CRC (a chance of 2^-64 per offset for bytes that are not a frame
//!   header), and its records are used only when the payload CRC matches too. The one
//!   thing that can pass a scan is a whole, valid frame stored byte for byte inside
//!   another frame's payload (say, in a command-line argument).
//! - A frame whose checksums match and whose payload still does not decode (a record
//!   kind this reader does not know) is skipped as [`SessionError::Damaged`] too.
//! - A file cut short (a collector that died mid-write) reads up to its last whole
//!   frame, then [`SessionError::Truncated`] says where it ends: fewer bytes left than a
//!   frame header, or a frame header that verifies and a payload the file is too short
//!   for.
//!
//! Format version 1 (gpuprof before frame checksums) is still read: a 16-byte header
//! (magic, format, protocol) and frames of `u32 length | u32 pid | payload`, with no
//! marker and no checksum. In such a file only a frame that does not decode is
//! detected (and skipped); a length that cannot be right ends reading there, and a
//! flipped bit that still decodes goes unnoticed.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::record::Record;

/// First bytes of a session file.
pub const MAGIC: [u8; 8] = *b"GPUPROFS";
/// Version of the file framing this gpuprof writes (and the newest it reads).
pub const FORMAT_VERSION: u32 = 2;
/// Bytes of the header (format 2).
pub const HEADER_LEN: u64 = 20;
/// Bytes of a frame header (format 2), before the payload.
pub const FRAME_HEADER_LEN: u64 = 20;
/// First bytes of every frame (format 2). 0xC1 is never a MessagePack type byte and
/// never part of UTF-8 text, so the marker turns up inside payloads only in binary
/// fields (integers, floats); the header CRC rules those out.
pub const SYNC: [u8; 4] = [0xC1, b'G', b'P', b'F'];
/// Largest frame a reader accepts (a corrupt length must not allocate gigabytes).
pub const MAX_FRAME: u32 = 1 << 30;

/// Format version 1: a 16-byte header, frames without markers or checksums.
const V1_HEADER_LEN: u64 = 16;
const V1_FRAME_HEADER_LEN: u64 = 8;
/// Where the record protocol version is in the header (every format).
const PROTOCOL_OFFSET: u64 = 12;

/// CRC-32C of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

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
    #[error("{}: record protocol {found} (header offset {offset}) is newer than this gpuprof reads ({expected}); upgrade gpuprof", path.display())]
    Protocol {
        path: PathBuf,
        offset: u64,
        found: u32,
        expected: u32,
    },
    /// A damaged header (nothing can be read), a format 1 frame length that cannot be
    /// right (nothing after it can be framed), or a frame too large to write.
    #[error("{}: corrupt at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// `bytes` bytes from `offset` were skipped; the next call reads on after them.
    #[error("{}: damaged at offset {offset}: {reason}; {bytes} bytes skipped", path.display())]
    Damaged {
        path: PathBuf,
        offset: u64,
        bytes: u64,
        reason: String,
    },
    /// The file ends inside a frame (or its header); asking again gives the same error.
    #[error("{}: truncated at offset {offset}: {reason}", path.display())]
    Truncated {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The file system has no room for the frame; nothing of it was written, and the
    /// writer's reserve still takes one closing frame ([`SessionWriter::append_last`]).
    #[error("{}: no room for a frame of {bytes} bytes at offset {offset}: {source}", path.display())]
    Full {
        path: PathBuf,
        offset: u64,
        bytes: u64,
        source: std::io::Error,
    },
}

/// Bytes kept allocated past the end of a session file for its closing frame.
pub const RESERVE: u64 = 64 << 10;
/// Space is reserved this much at a time.
const RESERVE_STEP: u64 = 8 << 20;

/// The 20-byte frame header of `payload` from `pid`.
fn frame_header(pid: u32, payload: &[u8]) -> [u8; FRAME_HEADER_LEN as usize] {
    let mut h = [0u8; FRAME_HEADER_LEN as usize];
    h[0..4].copy_from_slice(&SYNC);
    h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[8..12].copy_from_slice(&pid.to_le_bytes());
    h[12..16].copy_from_slice(&crc32c(payload).to_le_bytes());
    let own = crc32c(&h[0..16]);
    h[16..20].copy_from_slice(&own.to_le_bytes());
    h
}

/// The 20-byte file header this gpuprof writes.
fn file_header() -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&crate::PROTOCOL_VERSION.to_le_bytes());
    let crc = crc32c(&h[0..16]);
    h[16..20].copy_from_slice(&crc.to_le_bytes());
    h
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Appends frames to a new session file.
///
/// Space is reserved before it is written (`fallocate` with `FALLOC_FL_KEEP_SIZE`,
/// [`RESERVE_STEP`] at a time): a frame is written only when the blocks for it and for
/// [`RESERVE`] more bytes are allocated, so a full file system refuses a whole frame
/// ([`SessionError::Full`]) rather than cutting one short, and the closing frame that
/// counts what was refused still fits. On a file system without `fallocate` the
/// writer writes plainly (no such promise).
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    offset: u64,
    /// Blocks are allocated up to here; `None` when the file system cannot reserve.
    reserved: Option<u64>,
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
        out.write_all(&file_header()).map_err(io)?;
        let mut w = SessionWriter {
            out,
            path: path.to_path_buf(),
            offset: HEADER_LEN,
            reserved: Some(0),
        };
        w.reserve(0).map_err(io)?;
        Ok(w)
    }

    /// Makes sure blocks are allocated through `offset + bytes + RESERVE`.
    fn reserve(&mut self, bytes: u64) -> std::io::Result<()> {
        let Some(done) = self.reserved else {
            return Ok(());
        };
        let need = self.offset + bytes + RESERVE;
        if need <= done {
            return Ok(());
        }
        let to = need.max(done + RESERVE_STEP);
        // SAFETY: fallocate on a file we own; KEEP_SIZE allocates without changing
        // the file's size.
        let rc = unsafe {
            libc::fallocate(
                self.out.get_ref().as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                done as libc::off_t,
                (to - done) as libc::off_t,
            )
        };
        if rc == 0 {
            self.reserved = Some(to);
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP | libc::ENOSYS) => {
                self.reserved = None;
                Ok(())
            }
            // Less than a step may still fit: take exactly what is needed.
            _ if to > need => {
                // SAFETY: as above.
                let rc = unsafe {
                    libc::fallocate(
                        self.out.get_ref().as_raw_fd(),
                        libc::FALLOC_FL_KEEP_SIZE,
                        done as libc::off_t,
                        (need - done) as libc::off_t,
                    )
                };
                if rc == 0 {
                    self.reserved = Some(need);
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
            _ => Err(e),
        }
    }

    /// Appends one frame: `payload` is a batch as [`crate::encode_batch`] makes it.
    pub fn append(&mut self, pid: u32, payload: &[u8]) -> Result<(), SessionError> {
        if u32::try_from(payload.len()).map_or(true, |l| l > MAX_FRAME) {
            return Err(SessionError::Corrupt {
                path: self.path.clone(),
                offset: self.offset,
                reason: format!(
                    "frame of {} bytes exceeds the {MAX_FRAME}-byte limit",
                    payload.len()
                ),
            });
        }
        let bytes = FRAME_HEADER_LEN + payload.len() as u64;
        if let Err(source) = self.reserve(bytes) {
            return Err(SessionError::Full {
                path: self.path.clone(),
                offset: self.offset,
                bytes,
                source,
            });
        }
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        self.out
            .write_all(&frame_header(pid, payload))
            .map_err(io)?;
        self.out.write_all(payload).map_err(io)?;
        self.offset += bytes;
        Ok(())
    }

    /// Appends a closing frame of at most [`RESERVE`] bytes into the reserve, after
    /// [`SessionError::Full`]: the frame that counts what could not be written.
    pub fn append_last(&mut self, pid: u32, payload: &[u8]) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        let bytes = FRAME_HEADER_LEN + payload.len() as u64;
        if bytes > RESERVE {
            return Err(SessionError::Corrupt {
                path: self.path.clone(),
                offset: self.offset,
                reason: format!(
                    "a closing frame of {bytes} bytes exceeds the {RESERVE}-byte reserve"
                ),
            });
        }
        self.out
            .write_all(&frame_header(pid, payload))
            .map_err(io)?;
        self.out.write_all(payload).map_err(io)?;
        self.offset += bytes;
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

/// A format 2 frame header that verified.
#[derive(Debug, Clone, Copy)]
struct FrameHead {
    len: u32,
    pid: u32,
    payload_crc: u32,
}

/// Why the bytes at a frame's start are not a frame header that verifies.
#[derive(Debug, Clone, Copy)]
enum BadHead {
    NoMarker,
    Checksum,
    Length(u32),
}

impl BadHead {
    fn reason(self) -> String {
        match self {
            BadHead::NoMarker => "no frame marker".into(),
            BadHead::Checksum => "frame header checksum mismatch".into(),
            BadHead::Length(len) => {
                format!("frame length {len} exceeds the {MAX_FRAME}-byte limit")
            }
        }
    }
}

/// Reads a session file frame by frame.
pub struct SessionReader {
    file: File,
    path: PathBuf,
    format: u32,
    protocol: u32,
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
        let corrupt = |offset: u64, reason: String| SessionError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        let truncated = |reason: String| SessionError::Truncated {
            path: path.to_path_buf(),
            offset: 0,
            reason,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut header = [0u8; HEADER_LEN as usize];
        let have = len.min(HEADER_LEN) as usize;
        file.read_exact_at(&mut header[..have], 0).map_err(io)?;
        // A short file that is not the start of a session file is not one.
        if header[..have.min(8)] != MAGIC[..have.min(8)] {
            return Err(SessionError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        if have < 12 {
            return Err(truncated(format!(
                "the {HEADER_LEN}-byte header is cut short at {len} bytes"
            )));
        }
        let format = u32_at(&header, 8);
        let header_len = if format == 1 {
            V1_HEADER_LEN
        } else {
            HEADER_LEN
        };
        if len < header_len {
            return Err(truncated(format!(
                "the {header_len}-byte header is cut short at {len} bytes"
            )));
        }
        if format != 1 {
            // Nothing in the header is believed before its checksum.
            let stored = u32_at(&header, 16);
            let computed = crc32c(&header[..16]);
            if stored != computed {
                return Err(corrupt(
                    0,
                    format!(
                        "header checksum mismatch (stored {stored:#010x}, computed \
                         {computed:#010x}): the format and protocol versions cannot be trusted"
                    ),
                ));
            }
            if format == 0 {
                return Err(corrupt(8, "session format version 0".into()));
            }
            if format > FORMAT_VERSION {
                return Err(SessionError::Version {
                    path: path.to_path_buf(),
                    found: format,
                    expected: FORMAT_VERSION,
                });
            }
        }
        let protocol = u32_at(&header, PROTOCOL_OFFSET as usize);
        if protocol == 0 {
            return Err(corrupt(PROTOCOL_OFFSET, "record protocol version 0".into()));
        }
        if protocol > crate::PROTOCOL_VERSION {
            return Err(SessionError::Protocol {
                path: path.to_path_buf(),
                offset: PROTOCOL_OFFSET,
                found: protocol,
                expected: crate::PROTOCOL_VERSION,
            });
        }
        Ok(SessionReader {
            file,
            path: path.to_path_buf(),
            format,
            protocol,
            offset: header_len,
            len,
        })
    }

    /// The file's format version (1 or 2).
    pub fn format_version(&self) -> u32 {
        self.format
    }

    /// The record protocol version the writer spoke.
    pub fn protocol_version(&self) -> u32 {
        self.protocol
    }

    /// The file's length when it was opened.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Where the next frame is read from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next frame, `None` at the end of the file.
    ///
    /// After [`SessionError::Damaged`] the reader has moved past the damaged bytes (call
    /// again for the frames after them). After [`SessionError::Truncated`] it stays at
    /// the frame that failed (calling again gives the same error). After
    /// [`SessionError::Corrupt`] (format 1 only: a frame length over the limit) it is at
    /// the end of the file.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, SessionError> {
        if self.offset >= self.len {
            return Ok(None);
        }
        if self.format == 1 {
            return self.next_frame_v1();
        }
        let start = self.offset;
        let left = self.len - start;
        if left < FRAME_HEADER_LEN {
            return Err(self.truncated(
                start,
                format!("{left} bytes left, a frame header is {FRAME_HEADER_LEN}"),
            ));
        }
        let head = match self.read_head(start)? {
            Ok(head) => head,
            Err(bad) => {
                // The length cannot be trusted: find the next frame that verifies.
                let next = self.scan(start + 1)?;
                let end = next.unwrap_or(self.len);
                self.offset = end;
                let to = if next.is_some() {
                    "the next intact frame"
                } else {
                    "the end of the file (no intact frame follows)"
                };
                return Err(self.damaged(
                    start,
                    end - start,
                    format!("{}; skipped to {to}", bad.reason()),
                ));
            }
        };
        let len = head.len as u64;
        if left - FRAME_HEADER_LEN < len {
            return Err(self.truncated(
                start,
                format!(
                    "frame of {len} bytes, only {} left in the file",
                    left - FRAME_HEADER_LEN
                ),
            ));
        }
        let mut payload = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut payload, start + FRAME_HEADER_LEN)
            .map_err(|source| self.io(source))?;
        let frame_len = FRAME_HEADER_LEN + len;
        self.offset = start + frame_len;
        if crc32c(&payload) != head.payload_crc {
            return Err(self.damaged(start, frame_len, "payload checksum mismatch".into()));
        }
        match crate::decode_batch(&payload) {
            Ok(records) => Ok(Some(Frame {
                pid: head.pid,
                offset: start,
                records,
            })),
            Err(e) => Err(self.damaged(start, frame_len, format!("frame does not decode: {e}"))),
        }
    }

    /// A format 1 frame: no marker, no checksum.
    fn next_frame_v1(&mut self) -> Result<Option<Frame>, SessionError> {
        let start = self.offset;
        let left = self.len - start;
        if left < V1_FRAME_HEADER_LEN {
            return Err(self.truncated(
                start,
                format!("{left} bytes left, a frame header is {V1_FRAME_HEADER_LEN}"),
            ));
        }
        let mut head = [0u8; V1_FRAME_HEADER_LEN as usize];
        self.file
            .read_exact_at(&mut head, start)
            .map_err(|source| self.io(source))?;
        let len = u32_at(&head, 0);
        let pid = u32_at(&head, 4);
        if len > MAX_FRAME {
            // Nothing to resynchronise on in format 1.
            self.offset = self.len;
            return Err(SessionError::Corrupt {
                path: self.path.clone(),
                offset: start,
                reason: format!(
                    "frame length {len} exceeds the {MAX_FRAME}-byte limit (format 1 has no \
                     frame markers to read on from)"
                ),
            });
        }
        let len = len as u64;
        if left - V1_FRAME_HEADER_LEN < len {
            return Err(self.truncated(
                start,
                format!(
                    "frame of {len} bytes, only {} left in the file",
                    left - V1_FRAME_HEADER_LEN
                ),
            ));
        }
        let mut payload = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut payload, start + V1_FRAME_HEADER_LEN)
            .map_err(|source| self.io(source))?;
        let frame_len = V1_FRAME_HEADER_LEN + len;
        self.offset = start + frame_len;
        match crate::decode_batch(&payload) {
            Ok(records) => Ok(Some(Frame {
                pid,
                offset: start,
                records,
            })),
            Err(e) => Err(self.damaged(start, frame_len, format!("frame does not decode: {e}"))),
        }
    }

    /// The frame header at `at` (which has [`FRAME_HEADER_LEN`] bytes before the end),
    /// if it verifies.
    fn read_head(&self, at: u64) -> Result<Result<FrameHead, BadHead>, SessionError> {
        let mut h = [0u8; FRAME_HEADER_LEN as usize];
        self.file
            .read_exact_at(&mut h, at)
            .map_err(|source| self.io(source))?;
        if h[0..4] != SYNC {
            return Ok(Err(BadHead::NoMarker));
        }
        if crc32c(&h[0..16]) != u32_at(&h, 16) {
            return Ok(Err(BadHead::Checksum));
        }
        let len = u32_at(&h, 4);
        if len > MAX_FRAME {
            // Only a writer that ignored the limit, or a checksum collision.
            return Ok(Err(BadHead::Length(len)));
        }
        Ok(Ok(FrameHead {
            len,
            pid: u32_at(&h, 8),
            payload_crc: u32_at(&h, 12),
        }))
    }

    /// The offset of the first frame header at or after `from` that verifies.
    fn scan(&self, from: u64) -> Result<Option<u64>, SessionError> {
        const CHUNK: usize = 1 << 16;
        let mut buf = vec![0u8; CHUNK];
        let mut pos = from;
        while self.len.saturating_sub(pos) >= FRAME_HEADER_LEN {
            let n = (self.len - pos).min(CHUNK as u64) as usize;
            self.file
                .read_exact_at(&mut buf[..n], pos)
                .map_err(|source| self.io(source))?;
            for (i, w) in buf[..n].windows(SYNC.len()).enumerate() {
                if w != SYNC {
                    continue;
                }
                let at = pos + i as u64;
                if self.len - at < FRAME_HEADER_LEN {
                    // No whole frame header fits after this one either.
                    return Ok(None);
                }
                if self.read_head(at)?.is_ok() {
                    return Ok(Some(at));
                }
            }
            if pos + n as u64 == self.len {
                break;
            }
            // The last SYNC.len() - 1 bytes again: a marker may straddle the chunks.
            pos += (n - (SYNC.len() - 1)) as u64;
        }
        Ok(None)
    }

    fn io(&self, source: std::io::Error) -> SessionError {
        SessionError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn truncated(&self, offset: u64, reason: String) -> SessionError {
        SessionError::Truncated {
            path: self.path.clone(),
            offset,
            reason,
        }
    }

    fn damaged(&self, offset: u64, bytes: u64, reason: String) -> SessionError {
        SessionError::Damaged {
            path: self.path.clone(),
            offset,
            bytes,
            reason,
        }
    }
}
