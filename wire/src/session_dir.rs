//! The ring directory of a session (docs/SESSION.md), the one set of rules both sides
//! follow: where it is made, what its files are called, and the collector's pid file.
//!
//! ```text
//! /dev/shm/gpuprof-<pid>-<n>/      mode 0700; else under $TMPDIR, else /tmp
//!     .gpuprof-ring-dir            the marker: gpuprof made this directory
//!     collector.pid                the draining collector's pid, written atomically
//!     ring-<pid>.ring              one producer's ring (see [`crate::ring`])
//! ```
//! The collector (`gpuprof record`) or, in env-var-only mode, the first profiled
//! process makes the directory; every profiled process creates its ring in it. The
//! collector removes the directory when it is done; a producer that finds the
//! collector gone removes its own ring, and the last one out the directory.
//!
//! Removal never deletes what gpuprof did not make ([`remove_ring_dir`]): only the
//! file names above (and the temporary names they are built under) in a directory
//! that holds the marker and belongs to this user, then `rmdir`, which leaves a
//! directory with anything else in it where it is.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::env;

/// The file in a ring directory holding the draining collector's pid.
pub const COLLECTOR_PID: &str = "collector.pid";

/// The file [`make_ring_dir`] puts in every directory it makes: only a directory with
/// it is ever removed.
pub const MARKER: &str = ".gpuprof-ring-dir";

/// How many `gpuprof-<pid>-<n>` names [`make_ring_dir`] tries.
const MAX_DIRS: u32 = 1000;

/// What a process that turned profiling off writes in the ring directory:
/// `unprofiled-<pid>`, holding why (one line), so that the collector can tell a
/// program that ran unprofiled from one that ran no GPU work.
pub fn unprofiled_file_name(pid: u32) -> String {
    format!("unprofiled-{pid}")
}

/// The longest reason kept in an `unprofiled-<pid>` file.
pub const MAX_UNPROFILED_BYTES: usize = 1024;

/// Says in `dir` that process `pid` runs unprofiled and why (cut to
/// [`MAX_UNPROFILED_BYTES`]): a new regular file, mode 0600, not through a link, and
/// only in a directory gpuprof made (it has the [`MARKER`]): a collector removes it.
pub fn write_unprofiled(dir: &Path, pid: u32, why: &str) -> std::io::Result<()> {
    if !std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file()) {
        return Err(std::io::Error::other("not a ring directory gpuprof made"));
    }
    let mut end = why.len().min(MAX_UNPROFILED_BYTES);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(unprofiled_file_name(pid)))?;
    f.write_all(&why.as_bytes()[..end])
}

/// The processes that said in `dir` that they run unprofiled, by pid, with why: only
/// regular files of this user, each read up to [`MAX_UNPROFILED_BYTES`].
pub fn read_unprofiled(dir: &Path) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = parse_unprofiled_file_name(&name) else {
            continue;
        };
        // The file opened is the file checked: not a link, not a FIFO, ours.
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path())
        else {
            continue;
        };
        let ours = file
            .metadata()
            .is_ok_and(|m| m.file_type().is_file() && foreign_owner(&m).is_none());
        let mut why = Vec::new();
        use std::io::Read;
        if ours
            && file
                .take(MAX_UNPROFILED_BYTES as u64)
                .read_to_end(&mut why)
                .is_ok()
        {
            out.push((pid, String::from_utf8_lossy(&why).trim().to_string()));
        }
    }
    out.sort();
    out
}

fn parse_unprofiled_file_name(name: &std::ffi::OsStr) -> Option<u32> {
    pid_in(name, b"unprofiled-", b"")
}

/// The decimal pid between `prefix` and `suffix` that make up `name`.
fn pid_in(name: &std::ffi::OsStr, prefix: &[u8], suffix: &[u8]) -> Option<u32> {
    let digits = name.as_bytes().strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The name of `pid`'s ring file: `ring-<pid>.ring`.
pub fn ring_file_name(pid: u32) -> String {
    format!("ring-{pid}.ring")
}

/// The pid a ring file name was made for, or `None` when `name` is not one
/// (`ring-<decimal pid>.ring`, the inverse of [`ring_file_name`]).
pub fn parse_ring_file_name(name: &std::ffi::OsStr) -> Option<u32> {
    pid_in(name, b"ring-", b".ring")
}

/// Whether `name` is one of the files gpuprof puts in a ring directory: a ring
/// (`ring-<pid>.ring`), a ring being built (`.ring-<pid>.ring.<pid>.new`, see
/// [`crate::ring::RingWriter::create`]), `collector.pid` or the temporary name it is
/// written under (`.collector.pid.<pid>`), an `unprofiled-<pid>` note, or the marker.
pub fn is_gpuprof_file(name: &std::ffi::OsStr) -> bool {
    fn digits(b: &[u8]) -> bool {
        !b.is_empty() && b.iter().all(u8::is_ascii_digit)
    }
    let b = name.as_bytes();
    if parse_ring_file_name(name).is_some()
        || parse_unprofiled_file_name(name).is_some()
        || name == COLLECTOR_PID
        || name == MARKER
    {
        return true;
    }
    if let Some(pid) = b
        .strip_prefix(b".")
        .and_then(|r| r.strip_prefix(COLLECTOR_PID.as_bytes()))
        .and_then(|r| r.strip_prefix(b"."))
    {
        return digits(pid);
    }
    // .ring-<pid>.ring.<pid>.new
    let Some(rest) = b.strip_prefix(b".").and_then(|r| r.strip_suffix(b".new")) else {
        return false;
    };
    match rest.iter().rposition(|c| *c == b'.') {
        Some(dot) => {
            digits(&rest[dot + 1..])
                && parse_ring_file_name(std::ffi::OsStr::from_bytes(&rest[..dot])).is_some()
        }
        None => false,
    }
}

/// `dir/ring-<pid>.ring`.
pub fn ring_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(ring_file_name(pid))
}

/// Why no ring directory could be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RingDirError {
    #[error("no writable /dev/shm, $TMPDIR or /tmp for the ring directory")]
    NoBase,
    #[error("cannot create the ring directory {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create a ring directory under {}: gpuprof-{pid}-0 to -{} all exist", base.display(), MAX_DIRS - 1)]
    AllTaken { base: PathBuf, pid: u32 },
}

/// A ring directory (or part of one) that a clean-up left where it is, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("left {} in place: {why}", dir.display())]
pub struct Kept {
    pub dir: PathBuf,
    pub why: String,
}

/// Where ring directories go: the first writable directory of `/dev/shm`, `$TMPDIR`
/// (when set and not empty) and `/tmp`. Rings want tmpfs; the others are fallbacks
/// for containers without `/dev/shm`.
pub fn ring_dir_base() -> Option<PathBuf> {
    [
        Some(PathBuf::from("/dev/shm")),
        std::env::var_os(env::TMPDIR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        Some("/tmp".into()),
    ]
    .into_iter()
    .flatten()
    .find(|d| d.is_dir() && writable(d))
}

/// Makes `<base>/gpuprof-<pid>-<n>` (mode 0700) with the first free `n`, and the
/// [`MARKER`] in it.
pub fn make_ring_dir(pid: u32) -> Result<PathBuf, RingDirError> {
    let base = ring_dir_base().ok_or(RingDirError::NoBase)?;
    for n in 0..MAX_DIRS {
        let path = base.join(format!("gpuprof-{pid}-{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(RingDirError::Create { path, source }),
        }
        // The directory is new and ours (mkdir does not reuse a name), so the marker
        // cannot exist; O_EXCL and O_NOFOLLOW say so to the kernel all the same.
        let marked = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path.join(MARKER))
            .and_then(|mut f| writeln!(f, "gpuprof ring directory, made by process {pid}"));
        return match marked {
            Ok(()) => Ok(path),
            Err(source) => {
                let _ = std::fs::remove_file(path.join(MARKER));
                let _ = std::fs::remove_dir(&path);
                Err(RingDirError::Create { path, source })
            }
        };
    }
    Err(RingDirError::AllTaken { base, pid })
}

/// Removes the ring directories of ended runs under [`ring_dir_base`]: a run killed
/// before it could clean up (SIGKILL, a crash, a power cut of the container) leaves
/// its directory in tmpfs, holding memory. A directory is stale when its creator (the
/// pid in `gpuprof-<pid>-<n>`), its collector and every producer named by a ring file
/// in it have all exited; it is then removed by [`remove_ring_dir`]'s rules (ours,
/// marked, nothing foreign in it). Returns the directories removed and those left.
pub fn remove_stale_ring_dirs() -> (Vec<PathBuf>, Vec<Kept>) {
    let (mut removed, mut kept) = (Vec::new(), Vec::new());
    let Some(base) = ring_dir_base() else {
        return (removed, kept);
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return (removed, kept);
    };
    for entry in entries.flatten() {
        let Some(creator) = parse_ring_dir_name(&entry.file_name()) else {
            continue;
        };
        let dir = entry.path();
        if !stale(&dir, creator) {
            continue;
        }
        match remove_ring_dir(&dir) {
            Ok(()) => removed.push(dir),
            Err(k) => kept.push(k),
        }
    }
    (removed, kept)
}

/// The creator pid of a ring directory name `gpuprof-<pid>-<n>`.
pub fn parse_ring_dir_name(name: &std::ffi::OsStr) -> Option<u32> {
    let rest = name.as_bytes().strip_prefix(b"gpuprof-")?;
    let dash = rest.iter().position(|b| *b == b'-')?;
    let (pid, n) = (&rest[..dash], &rest[dash + 1..]);
    let digits = |b: &[u8]| !b.is_empty() && b.len() <= 10 && b.iter().all(u8::is_ascii_digit);
    if !digits(pid) || !digits(n) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

fn stale(dir: &Path, creator: u32) -> bool {
    use crate::ring::process_alive;
    // Only directories of this user, marked as gpuprof's (checked again on removal).
    let ours = std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && foreign_owner(&m).is_none())
        && std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file());
    if !ours || process_alive(creator) || !collector_gone(dir) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|e| parse_ring_file_name(&e.file_name()))
        .all(|pid| !process_alive(pid))
}

pub use crate::user::{euid, foreign_owner};

/// Removes `path` when it is a regular file of this user (not followed when it is a
/// symbolic link); anything else is left, with an error saying why. What gpuprof
/// deletes in a directory others may write to.
pub fn remove_own_file(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if let Some(uid) = foreign_owner(&meta) {
        return Err(std::io::Error::other(format!("owned by uid {uid}")));
    }
    std::fs::remove_file(path)
}

/// Removes a ring directory and the gpuprof files in it, and nothing else:
/// - a path that is not a directory (a symbolic link included) or a directory of
///   another user is not touched;
/// - a directory without the [`MARKER`] was not made by gpuprof: it stays, with all
///   it holds (the caller removes its own files first);
/// - otherwise the files [`is_gpuprof_file`] recognises go, and when nothing else is
///   left the marker and the directory; a directory holding anything else stays,
///   marker included, and the names found are in the answer.
///
/// A directory already gone is `Ok`.
pub fn remove_ring_dir(dir: &Path) -> Result<(), Kept> {
    let kept = |why: String| Kept {
        dir: dir.to_path_buf(),
        why,
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(kept(format!("cannot look at it: {e}"))),
    };
    if !meta.is_dir() {
        return Err(kept("it is not a directory".into()));
    }
    if let Some(uid) = foreign_owner(&meta) {
        return Err(kept(format!(
            "it belongs to uid {uid}, not to uid {}",
            euid()
        )));
    }
    match std::fs::symlink_metadata(dir.join(MARKER)) {
        Ok(m) if m.is_file() => {}
        _ => {
            return Err(kept(format!(
                "gpuprof did not make it (it has no {MARKER})"
            )))
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|e| kept(format!("cannot list it: {e}")))?;
    let mut foreign = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == MARKER {
            continue;
        }
        if !is_gpuprof_file(&name) {
            foreign.push(name.to_string_lossy().into_owned());
            continue;
        }
        if let Err(e) = remove_own_file(&entry.path()) {
            if e.kind() != std::io::ErrorKind::NotFound {
                foreign.push(format!("{} ({e})", name.to_string_lossy()));
            }
        }
    }
    if !foreign.is_empty() {
        foreign.sort();
        return Err(kept(format!(
            "it holds files gpuprof did not make: {}",
            foreign.join(", ")
        )));
    }
    let _ = std::fs::remove_file(dir.join(MARKER));
    std::fs::remove_dir(dir).map_err(|e| kept(format!("cannot remove it: {e}")))
}

/// Whether this process may create files in `dir`.
fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Writes `pid` to `dir/collector.pid`, atomically: a producer never reads a
/// half-written file. The temporary name is created new (`O_EXCL`, not through a
/// symbolic link), mode 0600.
pub fn write_collector_pid(dir: &Path, pid: u32) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{COLLECTOR_PID}.{pid}"));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut f| writeln!(f, "{pid}"))
        .and_then(|()| std::fs::rename(&tmp, dir.join(COLLECTOR_PID)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Removes `dir/collector.pid` when it names `pid` (the collector's own file, at its
/// end; another collector's is left alone).
pub fn remove_collector_pid(dir: &Path, pid: u32) {
    if read_collector_pid(dir) == Some(pid) {
        let _ = std::fs::remove_file(dir.join(COLLECTOR_PID));
    }
}

/// The pid in `dir/collector.pid`, when the file is there and holds one. The file is
/// read with a bound: a hostile file cannot make a producer read gigabytes.
pub fn read_collector_pid(dir: &Path) -> Option<u32> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(dir.join(COLLECTOR_PID))
        .ok()?
        .take(32)
        .read_to_string(&mut text)
        .ok()?;
    text.trim().parse().ok()
}

/// Whether the session's collector is gone: `collector.pid` is missing or unreadable,
/// or names a process that has exited. A collector writes the file before any
/// producer joins (`gpuprof record` before starting the program; `gpuprof collect`
/// before the process that started it goes on), so a missing file means the
/// collector removed the directory, or never ran.
pub fn collector_gone(dir: &Path) -> bool {
    read_collector_pid(dir).is_none_or(|pid| !crate::ring::process_alive(pid))
}

/// A producer's clean-up at exit: when the collector is gone nobody will drain or
/// delete `ring` (this producer's own), so delete it; when no other ring (or ring
/// being built) is left, remove the directory with [`remove_ring_dir`]'s rules.
/// `Ok(false)`: the collector is not gone, nothing was done; `Ok(true)`: the ring was
/// removed (and the directory, when this was the last); `Err`: the ring was removed,
/// and what was left in place and why.
pub fn remove_if_orphaned(dir: &Path, ring: &Path) -> Result<bool, Kept> {
    if !collector_gone(dir) {
        return Ok(false);
    }
    let _ = std::fs::remove_file(ring);
    let others = std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name();
                is_gpuprof_file(&n)
                    && n != COLLECTOR_PID
                    && n != MARKER
                    && parse_unprofiled_file_name(&n).is_none()
            })
        })
        .unwrap_or(false);
    if others {
        return Ok(true);
    }
    remove_ring_dir(dir).map(|()| true)
}

/// The output directory when none is named: `gpuprof-<YYYYmmdd-HHMMSS>-<pid>`
/// (relative: below the current directory).
pub fn default_out_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("gpuprof-{}-{pid}", local_timestamp()))
}

/// `YYYYmmdd-HHMMSS` in local time (the seconds since the epoch when the local time
/// cannot be had).
pub fn local_timestamp() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only into `tm`,
    // which is a plain C struct for which all-zero bytes are a valid value.
    let (t, tm, ok) = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = !libc::localtime_r(&t, &mut tm).is_null();
        (t, tm, ok)
    };
    if !ok {
        return t.to_string();
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Parses a byte size: decimal digits with an optional K, M or G suffix (powers of
/// 1024), as `GPUPROF_RING_SIZE` and `--ring-size` take it. `None` when it is not one
/// or does not fit in a `u64`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// A size the way [`parse_size`] reads it: the largest unit that divides it.
pub fn show_size(v: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        let unit = 1u64 << shift;
        if v >= unit && v & (unit - 1) == 0 {
            return format!("{}{suffix}", v / unit);
        }
    }
    v.to_string()
}
