//! The ring directory of a session (docs/SESSION.md), the one set of rules both sides
//! follow: where it is made, what its files are called, and the collector's pid file.
//!
//! ```text
//! /dev/shm/gpuprof-<pid>-<n>/      mode 0700; else under $TMPDIR, else /tmp
//!     collector.pid                the draining collector's pid, written atomically
//!     ring-<pid>.ring              one producer's ring (see [`crate::ring`])
//! ```
//! The collector (`gpuprof record`) or, in env-var-only mode, the first profiled
//! process makes the directory; every profiled process creates its ring in it. The
//! collector removes the directory when it is done; a producer that finds the
//! collector gone removes its own ring, and the last one out the directory.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::env;

/// The file in a ring directory holding the draining collector's pid.
pub const COLLECTOR_PID: &str = "collector.pid";

/// How many `gpuprof-<pid>-<n>` names [`make_ring_dir`] tries.
const MAX_DIRS: u32 = 1000;

/// The name of `pid`'s ring file: `ring-<pid>.ring`.
pub fn ring_file_name(pid: u32) -> String {
    format!("ring-{pid}.ring")
}

/// The pid a ring file name was made for, or `None` when `name` is not one
/// (`ring-<decimal pid>.ring`, the inverse of [`ring_file_name`]).
pub fn parse_ring_file_name(name: &std::ffi::OsStr) -> Option<u32> {
    let digits = name
        .as_bytes()
        .strip_prefix(b"ring-")?
        .strip_suffix(b".ring")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
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

/// Makes `<base>/gpuprof-<pid>-<n>` (mode 0700) with the first free `n`.
pub fn make_ring_dir(pid: u32) -> Result<PathBuf, RingDirError> {
    let base = ring_dir_base().ok_or(RingDirError::NoBase)?;
    for n in 0..MAX_DIRS {
        let path = base.join(format!("gpuprof-{pid}-{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(RingDirError::Create { path, source }),
        }
    }
    Err(RingDirError::AllTaken { base, pid })
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
/// half-written file.
pub fn write_collector_pid(dir: &Path, pid: u32) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{COLLECTOR_PID}.{pid}"));
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "{pid}")?;
    drop(f);
    std::fs::rename(&tmp, dir.join(COLLECTOR_PID))
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
/// delete `ring`, so delete it, and the directory (with the stale pid file) when it
/// was the last ring. Returns whether the ring was removed.
pub fn remove_if_orphaned(dir: &Path, ring: &Path) -> bool {
    if !collector_gone(dir) {
        return false;
    }
    let _ = std::fs::remove_file(ring);
    let only_pid_left = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().all(|e| e.file_name() == COLLECTOR_PID))
        .unwrap_or(false);
    if only_pid_left {
        let _ = std::fs::remove_file(dir.join(COLLECTOR_PID));
        let _ = std::fs::remove_dir(dir);
    }
    true
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
