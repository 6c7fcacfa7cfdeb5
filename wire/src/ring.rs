//! The shared-memory ring between one profiled process (the producer: its writer
//! thread) and the collector (the consumer).
//!
//! A file of [`HEADER_SIZE`] header bytes followed by `capacity` data bytes
//! (a power of two), mapped by both sides. Positions are monotonic byte counts; the
//! data offset of a position is `pos % capacity`. Frames are a little-endian `u32`
//! payload length followed by the payload; a frame never wraps: when it does not fit
//! before the end of the data area, the producer writes [`WRAP`] as the length (when 4
//! bytes are left) and continues at offset 0. So a frame is at most half the capacity,
//! the most that fits at every offset. The producer publishes `write_pos` with
//! Release after the frame's bytes; the consumer reads it with Acquire, copies the
//! frame out, and publishes `read_pos` with Release; each position has its own cache
//! line. The producer never waits: a frame that does not fit is refused and the
//! caller counts the records as dropped.
//!
//! The consumer trusts nothing: every length and position is checked against the
//! header before use, and a violation is [`RingError::Corrupt`] naming the file and
//! offset.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;

use crate::sigbus::Guard;

/// First bytes of every ring file.
pub const MAGIC: [u8; 8] = *b"GPUPROFR";
/// Version of this layout (header fields and framing).
pub const LAYOUT_VERSION: u32 = 2;
/// Bytes before the data area.
pub const HEADER_SIZE: usize = 4096;
/// Smallest data capacity.
pub const MIN_CAPACITY: usize = 4096;
/// Largest data capacity (frame offsets and lengths are checked as `u32`).
pub const MAX_CAPACITY: usize = 1 << 31;
/// Length value meaning "continue at offset 0".
pub const WRAP: u32 = u32::MAX;

/// The most activity buffers a producer hands CUPTI (`GPUPROF_CUPTI_BUFFERS`).
pub const MAX_CUPTI_BUFFERS: u64 = 1024;
/// The largest activity buffer a producer hands CUPTI (`GPUPROF_CUPTI_BUFFER_SIZE`).
pub const MAX_CUPTI_BUFFER_BYTES: u64 = 1 << 30;
/// The largest channel from CUPTI's thread to the writer (`GPUPROF_CHANNEL_RECORDS`).
pub const MAX_CHANNEL_RECORDS: u64 = 1 << 24;
/// The most kernel records a process can hold in CUPTI's buffers when it ends (its
/// buffers full of kernel records of 64 bytes, fewer than any CUPTI's): a ring
/// header's [`Tally`] claiming more launches without a kernel is not believed.
pub const MAX_IN_CUPTI: u64 = MAX_CUPTI_BUFFERS * MAX_CUPTI_BUFFER_BYTES / 64;
/// The most records a process can have made and not written to its ring when it ends
/// (its channel full, and the writer's batch): a header claiming more is not believed.
pub const MAX_UNWRITTEN: u64 = MAX_CHANNEL_RECORDS + (1 << 16);

/// Producer flag: the producer has started and not finished.
pub const FLAG_ALIVE: u32 = 1;
/// Producer flag: the last frame has been written.
pub const FLAG_FINISHED: u32 = 2;
/// Consumer flag: the collector stopped reading this ring (it was corrupt, forged, or
/// given up on); the producer stops writing to it.
pub const FLAG_READER_GONE: u32 = 4;

// Header layout (byte offsets).
const OFF_MAGIC: usize = 0;
const OFF_LAYOUT: usize = 8;
const OFF_PROTOCOL: usize = 12;
const OFF_CAPACITY: usize = 16;
const OFF_PID: usize = 24;
const OFF_FLAGS: usize = 28;
const OFF_DROPPED_RECORDS: usize = 32;
const OFF_DROPPED_FRAMES: usize = 40;
const OFF_TALLY: usize = 48;
/// Offset in the header of the producer's write position (u64, little-endian): bytes
/// published since the ring was made.
pub const OFF_WRITE_POS: usize = 128;
// The tally fits between its offset and the write position.
const _: () = assert!(OFF_TALLY + std::mem::size_of::<Tally>() <= OFF_WRITE_POS);
/// Offset in the header of the reader's position (u64, little-endian): bytes read.
pub const OFF_READ_POS: usize = 256;

/// What went wrong with a ring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a gpuprof ring (bad magic)", path.display())]
    BadMagic { path: PathBuf },
    #[error("{}: ring layout {found}, this gpuprof reads layout {expected}", path.display())]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{}: record protocol {found}, this gpuprof speaks {expected}", path.display())]
    Protocol {
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
    #[error("ring capacity {0} is outside {MIN_CAPACITY}..={MAX_CAPACITY}")]
    Capacity(usize),
}

/// Why a frame was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Not enough free space now; the consumer is behind.
    #[error("ring full: {needed} bytes needed, {free} free")]
    Full { needed: usize, free: usize },
    /// The frame can never fit.
    #[error("frame of {0} bytes is larger than the ring")]
    TooLarge(usize),
    /// The ring file was truncated under the mapping: nothing written reaches the
    /// collector any more.
    #[error("the ring file was truncated by another process")]
    Lost,
}

/// Whether an error creating a ring means the file system has no room for it.
fn no_room(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EFBIG | libc::ENOMEM | libc::EDQUOT)
    )
}

/// What the producer made, counted in the header as it happens, so the count
/// survives the producer (killed, `abort()`, `_exit()`): the consumer compares it
/// with what reached the ring.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Tally {
    /// Kernel launches that each make one kernel record.
    pub launches: AtomicU64,
    /// Kernel records that left CUPTI.
    pub kernels: AtomicU64,
    /// Records produced (the stream's `End.records` when it ends).
    pub produced: AtomicU64,
    /// NVTX calls that each make one marker record (a mark, a push, a pop that popped
    /// a range, a range start, the end of a range started in this process).
    pub markers: AtomicU64,
    /// Marker records that left CUPTI. The two marker counts sit in header bytes that
    /// producers before them left zero: their rings read as no marker made, none lost.
    pub markers_done: AtomicU64,
}

impl Tally {
    pub const fn new() -> Tally {
        Tally {
            launches: AtomicU64::new(0),
            kernels: AtomicU64::new(0),
            produced: AtomicU64::new(0),
            markers: AtomicU64::new(0),
            markers_done: AtomicU64::new(0),
        }
    }
}

/// A snapshot of the header, as the consumer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderInfo {
    pub protocol_version: u32,
    pub capacity: u64,
    pub producer_pid: u32,
    pub flags: u32,
    pub dropped_records: u64,
    pub dropped_frames: u64,
    /// The producer's [`Tally`], as plain numbers.
    pub launches: u64,
    pub kernels: u64,
    pub produced: u64,
    pub markers: u64,
    pub markers_done: u64,
    pub write_pos: u64,
    pub read_pos: u64,
}

struct Shared {
    /// Declared before `map`: unregistered before the pages are unmapped.
    guard: Guard,
    map: MmapMut,
    capacity: usize,
}

impl Shared {
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is a 4-aligned offset inside the header (the map is page
        // aligned and at least HEADER_SIZE long); the header is only ever accessed
        // through atomics once the ring is published.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU32) }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as in `u32_at`, with an 8-aligned offset.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU64) }
    }

    fn tally(&self) -> &Tally {
        // SAFETY: `Tally` is five 8-aligned AtomicU64 at an 8-aligned header offset,
        // OFF_TALLY + 40 <= OFF_WRITE_POS; accessed only through atomics.
        unsafe { &*(self.map.as_ptr().add(OFF_TALLY) as *const Tally) }
    }

    fn data_ptr(&self) -> *mut u8 {
        // SAFETY: the data area starts HEADER_SIZE bytes into a map of
        // HEADER_SIZE + capacity bytes.
        unsafe { self.map.as_ptr().add(HEADER_SIZE) as *mut u8 }
    }
}

/// The producer side.
pub struct RingWriter {
    shared: Shared,
    path: PathBuf,
    /// The producer's own copy of `write_pos` (only it writes the field).
    write_pos: u64,
}

impl RingWriter {
    /// Creates the ring file at `path` (it must not exist; mode 0600) with `capacity`
    /// data bytes rounded up to a power of two, every byte of it reserved on the file
    /// system (a full tmpfs refuses it here, with `ENOSPC`, instead of faulting a write
    /// later), and marks the producer alive.
    pub fn create(
        path: &Path,
        capacity: usize,
        producer_pid: u32,
    ) -> Result<RingWriter, RingError> {
        let capacity = capacity
            .max(MIN_CAPACITY)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        if capacity > MAX_CAPACITY {
            return Err(RingError::Capacity(capacity));
        }
        let io = |source| RingError::Io {
            path: path.to_path_buf(),
            source,
        };
        if path.exists() {
            return Err(io(std::io::Error::from(std::io::ErrorKind::AlreadyExists)));
        }
        // Built under a hidden name and published with a hard link (which, unlike a
        // rename, fails if the name exists), so a consumer never sees a ring whose
        // header or size is not yet written.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let staging = path.with_file_name(format!(".{name}.{producer_pid}.new"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&staging)
            .map_err(io)?;
        let published = Self::init(file, capacity, producer_pid).and_then(|shared| {
            std::fs::hard_link(&staging, path)?;
            Ok(shared)
        });
        // Whatever happened, the staging name goes; a ring that cannot be set up is
        // not left behind.
        let _ = std::fs::remove_file(&staging);
        let shared = published.map_err(io)?;
        Ok(RingWriter {
            shared,
            path: path.to_path_buf(),
            write_pos: 0,
        })
    }

    /// [`RingWriter::create`], halving the capacity while the file system has no room
    /// for it, down to `min_capacity`. The caller compares [`RingWriter::capacity`]
    /// with what it asked for to say the ring is smaller.
    pub fn create_fitting(
        path: &Path,
        capacity: usize,
        min_capacity: usize,
        producer_pid: u32,
    ) -> Result<RingWriter, RingError> {
        let mut cap = capacity
            .max(MIN_CAPACITY)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        loop {
            match Self::create(path, cap, producer_pid) {
                Err(RingError::Io { source, .. })
                    if no_room(&source) && cap / 2 >= min_capacity.max(MIN_CAPACITY) =>
                {
                    cap /= 2;
                }
                r => return r,
            }
        }
    }

    fn init(mut file: File, capacity: usize, producer_pid: u32) -> std::io::Result<Shared> {
        let mut header = vec![0u8; HEADER_SIZE];
        header[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&MAGIC);
        header[OFF_LAYOUT..OFF_LAYOUT + 4].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        header[OFF_PROTOCOL..OFF_PROTOCOL + 4]
            .copy_from_slice(&crate::PROTOCOL_VERSION.to_le_bytes());
        header[OFF_CAPACITY..OFF_CAPACITY + 8].copy_from_slice(&(capacity as u64).to_le_bytes());
        header[OFF_PID..OFF_PID + 4].copy_from_slice(&producer_pid.to_le_bytes());
        header[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&FLAG_ALIVE.to_le_bytes());
        file.write_all(&header)?;
        let len = (HEADER_SIZE + capacity) as libc::off_t;
        // SAFETY: reserving blocks for a file we own; posix_fallocate returns the error
        // number instead of setting errno.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        // SAFETY: the file was just created by us with O_EXCL and mode 0600; only the
        // collector maps it besides us, and both sides access shared fields through
        // atomics and the data area under the ring protocol.
        let map = unsafe { MmapMut::map_mut(&file) }?;
        let guard = Guard::register(map.as_ptr(), map.len())?;
        Ok(Shared {
            guard,
            map,
            capacity,
        })
    }

    /// The ring file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Data capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// Bytes free now.
    pub fn free_bytes(&self) -> usize {
        let read = self.shared.u64_at(OFF_READ_POS).load(Ordering::Acquire);
        self.shared.capacity
            - (self.write_pos.wrapping_sub(read) as usize).min(self.shared.capacity)
    }

    /// Appends one frame. Never blocks: a frame that does not fit now is refused.
    ///
    /// A frame (4 + `payload.len()` bytes) larger than half the capacity is
    /// [`WriteError::TooLarge`]: a frame never wraps, so only up to half the capacity
    /// fits at every position once the consumer has drained the ring. Any smaller frame
    /// refused as [`WriteError::Full`] fits once the consumer has caught up.
    pub fn try_write(&mut self, payload: &[u8]) -> Result<(), WriteError> {
        if self.shared.guard.hit() {
            return Err(WriteError::Lost);
        }
        let cap = self.shared.capacity;
        let frame = 4 + payload.len();
        if frame > cap / 2 {
            return Err(WriteError::TooLarge(payload.len()));
        }
        let off = (self.write_pos % cap as u64) as usize;
        let tail = cap - off;
        // A frame that does not fit before the end skips the tail.
        let skip = if frame > tail { tail } else { 0 };
        let needed = skip + frame;
        let free = self.free_bytes();
        if needed > free {
            return Err(WriteError::Full { needed, free });
        }
        let data = self.shared.data_ptr();
        let mut pos = off;
        if skip > 0 {
            if tail >= 4 {
                // SAFETY: `pos + 4 <= cap`; these bytes are free (checked above).
                unsafe {
                    std::ptr::copy_nonoverlapping(WRAP.to_le_bytes().as_ptr(), data.add(pos), 4)
                };
            }
            pos = 0;
        }
        // SAFETY: `pos + frame <= cap` (the frame fits before the end by construction)
        // and these bytes are free: the consumer does not read past `write_pos`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (payload.len() as u32).to_le_bytes().as_ptr(),
                data.add(pos),
                4,
            );
            std::ptr::copy_nonoverlapping(payload.as_ptr(), data.add(pos + 4), payload.len());
        }
        self.write_pos += needed as u64;
        self.shared
            .u64_at(OFF_WRITE_POS)
            .store(self.write_pos, Ordering::Release);
        if self.shared.guard.hit() {
            return Err(WriteError::Lost);
        }
        Ok(())
    }

    /// Whether the ring file was truncated under the mapping (see [`crate::sigbus`]).
    pub fn is_lost(&self) -> bool {
        self.shared.guard.hit()
    }

    /// The header's [`Tally`], for the producer's threads to count into. The
    /// reference lives as long as the mapping: a producer that hands it out keeps the
    /// ring mapped until the process exits ([`std::mem::forget`]).
    pub fn tally(&self) -> &Tally {
        self.shared.tally()
    }

    /// Adds to the header's dropped counters (records lost before reaching the ring,
    /// or refused by it), which the collector reports.
    pub fn add_dropped(&self, records: u64, frames: u64) {
        self.shared
            .u64_at(OFF_DROPPED_RECORDS)
            .fetch_add(records, Ordering::Relaxed);
        self.shared
            .u64_at(OFF_DROPPED_FRAMES)
            .fetch_add(frames, Ordering::Relaxed);
    }

    /// Whether the collector stopped reading this ring ([`RingReader::give_up`]).
    pub fn reader_gone(&self) -> bool {
        self.shared.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_READER_GONE != 0
    }

    /// Marks the stream complete: no frame follows.
    pub fn finish(&mut self) {
        self.shared
            .u32_at(OFF_FLAGS)
            .store(FLAG_FINISHED, Ordering::Release);
    }
}

/// The consumer side.
pub struct RingReader {
    shared: Shared,
    path: PathBuf,
    read_pos: u64,
    /// The ring file's device and inode.
    id: (u64, u64),
    _file: File,
}

impl RingReader {
    /// Maps an existing ring and validates its header against the file.
    pub fn open(path: &Path) -> Result<RingReader, RingError> {
        let io = |source| RingError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Not through a symbolic link, and without waiting on a FIFO planted in its
        // place: a ring is a regular file of this user, checked before it is mapped
        // (the reader writes its cursor into the header).
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => io(std::io::Error::other("a symbolic link, not followed")),
                _ => io(e),
            })?;
        let meta = file.metadata().map_err(io)?;
        let len = meta.len();
        let corrupt = |offset: u64, reason: String| RingError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        if !meta.file_type().is_file() {
            return Err(io(std::io::Error::other("not a regular file")));
        }
        if let Some(uid) = crate::user::foreign_owner(&meta) {
            let me = crate::user::euid();
            let why = format!("owned by uid {uid}, not by this user (uid {me})");
            return Err(io(std::io::Error::other(why)));
        }
        if len < HEADER_SIZE as u64 {
            return Err(corrupt(
                len,
                format!("file of {len} bytes is shorter than the {HEADER_SIZE}-byte header"),
            ));
        }
        // SAFETY: the producer created this file for exactly this sharing; all shared
        // fields are read through atomics and every value is validated before use.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(io)?;
        // Before the first access: the file may shrink under us at any time.
        let guard = Guard::register(map.as_ptr(), map.len()).map_err(io)?;
        if map[OFF_MAGIC..OFF_MAGIC + 8] != MAGIC {
            return Err(RingError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        let layout =
            u32::from_le_bytes(map[OFF_LAYOUT..OFF_LAYOUT + 4].try_into().expect("4 bytes"));
        if layout != LAYOUT_VERSION {
            return Err(RingError::Version {
                path: path.to_path_buf(),
                found: layout,
                expected: LAYOUT_VERSION,
            });
        }
        let protocol = u32::from_le_bytes(
            map[OFF_PROTOCOL..OFF_PROTOCOL + 4]
                .try_into()
                .expect("4 bytes"),
        );
        if protocol != crate::PROTOCOL_VERSION {
            return Err(RingError::Protocol {
                path: path.to_path_buf(),
                found: protocol,
                expected: crate::PROTOCOL_VERSION,
            });
        }
        let capacity = u64::from_le_bytes(
            map[OFF_CAPACITY..OFF_CAPACITY + 8]
                .try_into()
                .expect("8 bytes"),
        );
        if !(MIN_CAPACITY as u64..=MAX_CAPACITY as u64).contains(&capacity)
            || !capacity.is_power_of_two()
        {
            return Err(corrupt(
                OFF_CAPACITY as u64,
                format!("capacity {capacity} is not a power of two in range"),
            ));
        }
        if HEADER_SIZE as u64 + capacity != len {
            return Err(corrupt(
                OFF_CAPACITY as u64,
                format!("capacity {capacity} does not match the file size {len}"),
            ));
        }
        if guard.hit() {
            return Err(corrupt(
                0,
                "the file was truncated while its header was read".into(),
            ));
        }
        let shared = Shared {
            guard,
            map,
            capacity: capacity as usize,
        };
        let read_pos = shared.u64_at(OFF_READ_POS).load(Ordering::Acquire);
        Ok(RingReader {
            shared,
            path: path.to_path_buf(),
            read_pos,
            id: (meta.dev(), meta.ino()),
            _file: file,
        })
    }

    /// The ring file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether process `pid` maps this ring file, per `/proc/<pid>/maps`: a live
    /// producer always does (it never unmaps its ring). `None` when /proc cannot tell
    /// (not mounted, the process gone).
    pub fn mapped_by(&self, pid: u32) -> Option<bool> {
        let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(m) => m,
            // A process whose maps this user may not read (another user's, or one
            // that made itself undumpable) is not a producer: a producer loaded
            // libgpuprof.so as this user and is dumpable.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Some(false),
            Err(_) => return None,
        };
        let (dev, ino) = self.id;
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        let want_dev = format!("{major:02x}:{minor:02x}");
        Some(maps.lines().any(|l| {
            // address perms offset dev inode path
            let mut f = l.split_ascii_whitespace().skip(3);
            f.next() == Some(want_dev.as_str())
                && f.next().and_then(|i| i.parse::<u64>().ok()) == Some(ino)
        }))
    }

    /// The header as it is now.
    pub fn header(&self) -> HeaderInfo {
        let s = &self.shared;
        HeaderInfo {
            protocol_version: crate::PROTOCOL_VERSION,
            capacity: s.capacity as u64,
            producer_pid: s.u32_at(OFF_PID).load(Ordering::Relaxed),
            flags: s.u32_at(OFF_FLAGS).load(Ordering::Acquire),
            dropped_records: s.u64_at(OFF_DROPPED_RECORDS).load(Ordering::Relaxed),
            dropped_frames: s.u64_at(OFF_DROPPED_FRAMES).load(Ordering::Relaxed),
            launches: s.tally().launches.load(Ordering::Relaxed),
            kernels: s.tally().kernels.load(Ordering::Relaxed),
            produced: s.tally().produced.load(Ordering::Relaxed),
            markers: s.tally().markers.load(Ordering::Relaxed),
            markers_done: s.tally().markers_done.load(Ordering::Relaxed),
            write_pos: s.u64_at(OFF_WRITE_POS).load(Ordering::Acquire),
            read_pos: self.read_pos,
        }
    }

    /// How full the ring is now: bytes written and not yet read, in whole percent of
    /// the capacity (rounded down).
    pub fn fill_pct(&self) -> u32 {
        let write = self.shared.u64_at(OFF_WRITE_POS).load(Ordering::Acquire);
        let used = write.saturating_sub(self.read_pos) as u128;
        (used * 100 / self.shared.capacity.max(1) as u128).min(100) as u32
    }

    /// Whether the ring file was truncated while mapped: what is in it is gone.
    pub fn is_lost(&self) -> bool {
        self.shared.guard.hit()
    }

    /// Tells the producer that nothing it writes will be read
    /// ([`RingWriter::reader_gone`]), so it stops instead of filling the ring and
    /// waiting for space at exit.
    pub fn give_up(&self) {
        self.shared
            .u32_at(OFF_FLAGS)
            .fetch_or(FLAG_READER_GONE, Ordering::AcqRel);
    }

    /// Whether the producer has written its last frame.
    pub fn is_finished(&self) -> bool {
        self.shared.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_FINISHED != 0
    }

    /// The next complete frame's payload, or `None` when the ring is empty now.
    pub fn try_read(&mut self) -> Result<Option<Vec<u8>>, RingError> {
        let mut out = Vec::new();
        Ok(self.try_read_into(&mut out)?.then_some(out))
    }

    /// [`RingReader::try_read`] into `out` (its contents replaced; its allocation kept
    /// for the next frame): `false` when the ring is empty now, `out` then empty.
    pub fn try_read_into(&mut self, out: &mut Vec<u8>) -> Result<bool, RingError> {
        out.clear();
        let cap = self.shared.capacity as u64;
        let write = self.shared.u64_at(OFF_WRITE_POS).load(Ordering::Acquire);
        if self.shared.guard.hit() {
            return Err(RingError::Corrupt {
                path: self.path.clone(),
                offset: 0,
                reason: "the file was truncated while it was read; its records are lost".into(),
            });
        }
        let corrupt = |offset: u64, reason: String| RingError::Corrupt {
            path: self.path.clone(),
            offset,
            reason,
        };
        if write < self.read_pos || write - self.read_pos > cap {
            return Err(corrupt(
                OFF_WRITE_POS as u64,
                format!("write position {write} is not within one capacity ({cap}) ahead of read position {}", self.read_pos),
            ));
        }
        // Bytes published and not yet read. All arithmetic below stays within
        // `read_pos..=write`, so no position near `u64::MAX` can overflow.
        let mut available = write - self.read_pos;
        if available == 0 {
            return Ok(false);
        }
        let data = self.shared.data_ptr();
        let mut skipped = 0;
        let mut off = self.read_pos % cap;
        let tail = cap - off;
        let read_len = |at: u64| -> u32 {
            let mut b = [0u8; 4];
            // SAFETY: `at + 4 <= cap`, inside the data area.
            unsafe { std::ptr::copy_nonoverlapping(data.add(at as usize), b.as_mut_ptr(), 4) };
            u32::from_le_bytes(b)
        };
        if tail < 4 || read_len(off) == WRAP {
            // The producer skips the tail only to write a frame at offset 0.
            if tail >= available {
                return Err(corrupt(
                    HEADER_SIZE as u64 + off,
                    format!(
                        "wrap to offset 0 with only {available} bytes written, the tail is {tail}"
                    ),
                ));
            }
            skipped = tail;
            available -= tail;
            off = 0;
        }
        let len = read_len(off) as u64;
        if len == WRAP as u64 || 4 + len > cap - off || 4 + len > available {
            return Err(corrupt(
                HEADER_SIZE as u64 + off,
                format!("frame length {len} does not fit: {} bytes to the end of the data area, {available} written", cap - off),
            ));
        }
        // SAFETY: `off + 4 + len <= cap` and those bytes were published by the producer
        // (`4 + len <= available`, `write` read with Acquire), which does not write them
        // again before `read_pos` passes them (below, after the copy).
        let frame = unsafe { std::slice::from_raw_parts(data.add(off as usize + 4), len as usize) };
        out.extend_from_slice(frame);
        if self.shared.guard.hit() {
            return Err(corrupt(
                0,
                "the file was truncated while it was read; its records are lost".into(),
            ));
        }
        self.read_pos += skipped + 4 + len;
        self.shared
            .u64_at(OFF_READ_POS)
            .store(self.read_pos, Ordering::Release);
        Ok(true)
    }
}

/// Whether a process with `pid` exists and has not exited. A zombie (exited, not yet
/// reaped by its parent) counts as gone: it will never write again.
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for the process's existence.
    let rc = unsafe { libc::kill(pid as i32, 0) };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !is_zombie(pid)
}

/// Whether /proc says `pid` is a zombie (state `Z`) or dead (`X`).
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ...": comm may contain spaces and parentheses; the state follows
    // the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}
