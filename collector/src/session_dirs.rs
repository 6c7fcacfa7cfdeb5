//! The directories and files of a session (docs/SESSION.md): the ring directory on
//! tmpfs with `collector.pid`, the output directory, and the library to inject.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The name of the session file inside an output directory.
pub const SESSION_FILE: &str = "session.gpuprof";

/// Makes `gpuprof-<pid>-<n>` (mode 0700) under `/dev/shm`, or under `$TMPDIR` (else
/// `/tmp`) where there is no `/dev/shm`, with the first free `n`, and writes
/// `collector.pid` in it.
pub fn make_ring_dir() -> Result<PathBuf> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() && writable(shm) {
        shm.to_path_buf()
    } else {
        std::env::var_os("TMPDIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| "/tmp".into())
    };
    let pid = std::process::id();
    for n in 0..1000 {
        let dir = base.join(format!("gpuprof-{pid}-{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                if let Err(e) = write_collector_pid(&dir) {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create the ring directory {}", dir.display()))
            }
        }
    }
    bail!(
        "cannot create a ring directory under {}: gpuprof-{pid}-0 to -999 all exist",
        base.display()
    )
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Writes this process's pid to `dir/collector.pid`, atomically (a producer never reads
/// a half-written file).
pub fn write_collector_pid(dir: &Path) -> Result<()> {
    let tmp = dir.join(format!(".collector.pid.{}", std::process::id()));
    let dest = dir.join("collector.pid");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{}", std::process::id())?;
        std::fs::rename(&tmp, &dest)
    };
    write().with_context(|| format!("cannot write {}", dest.display()))
}

/// The output directory: `explicit`, else `$GPUPROF_OUT`, else
/// `./gpuprof-<YYYYmmdd-HHMMSS>-<pid>`. Created if missing; an existing directory must
/// be empty. Returns it and whether it was created here.
pub fn make_out_dir(explicit: Option<&Path>) -> Result<(PathBuf, bool)> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => match std::env::var_os("GPUPROF_OUT").filter(|v| !v.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(format!(
                "gpuprof-{}-{}",
                local_timestamp(),
                std::process::id()
            )),
        },
    };
    prepare_out_dir(&dir)
}

/// Creates `dir` or accepts it when it is an empty directory.
pub fn prepare_out_dir(dir: &Path) -> Result<(PathBuf, bool)> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "the output directory {} already exists and is not empty; name another one with -o (or GPUPROF_OUT)",
                    dir.display()
                );
            }
            Ok((dir.to_path_buf(), false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
            Ok((dir.to_path_buf(), true))
        }
        Err(e) if dir.exists() && !dir.is_dir() => Err(e).with_context(|| {
            format!(
                "the output path {} exists and is not a directory",
                dir.display()
            )
        }),
        Err(e) => {
            Err(e).with_context(|| format!("cannot use the output directory {}", dir.display()))
        }
    }
}

/// `YYYYmmdd-HHMMSS` in local time.
fn local_timestamp() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only into `tm`.
    let tm = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
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

/// The library to inject: `$GPUPROF_LIB`, else `libgpuprof.so` beside this binary.
/// Absolute, and it must exist.
pub fn injection_library() -> Result<PathBuf> {
    if let Some(lib) = std::env::var_os("GPUPROF_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&lib);
        if !p.is_file() {
            bail!("GPUPROF_LIB={} is not a file", p.display());
        }
        return std::path::absolute(&p).with_context(|| format!("GPUPROF_LIB={}", p.display()));
    }
    let exe = std::env::current_exe().context("cannot find the gpuprof binary's own path")?;
    let lib = exe.with_file_name("libgpuprof.so");
    if !lib.is_file() {
        bail!(
            "{} is missing: libgpuprof.so must be beside the gpuprof binary (build it with cargo build), or set \
             GPUPROF_LIB to its path",
            lib.display()
        );
    }
    Ok(lib)
}

/// Checks a `--ring-size` value (bytes, with an optional K, M or G suffix, powers of
/// 1024) and returns it unchanged for `GPUPROF_RING_SIZE`.
pub fn check_ring_size(value: &str) -> Result<OsString> {
    let v = value.trim();
    let (digits, mult) = match v.chars().last() {
        Some('k' | 'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&v[..v.len() - 1], 1 << 20),
        Some('g' | 'G') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    let bytes = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(mult));
    match bytes {
        Some(b)
            if (wire::ring::MIN_CAPACITY as u64..=wire::ring::MAX_CAPACITY as u64).contains(&b) =>
        {
            Ok(value.into())
        }
        Some(_) => bail!(
            "--ring-size {value}: must be between {}K and {}G",
            wire::ring::MIN_CAPACITY >> 10,
            wire::ring::MAX_CAPACITY >> 30
        ),
        None => {
            bail!("--ring-size {value}: not a size (bytes, or a number with K, M or G, e.g. 64M)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes() {
        assert_eq!(check_ring_size("64M").unwrap(), OsString::from("64M"));
        assert_eq!(check_ring_size("4096").unwrap(), OsString::from("4096"));
        assert_eq!(check_ring_size("2g").unwrap(), OsString::from("2g"));
        assert_eq!(
            check_ring_size("4095").unwrap_err().to_string(),
            "--ring-size 4095: must be between 4K and 2G"
        );
        assert_eq!(
            check_ring_size("3G").unwrap_err().to_string(),
            "--ring-size 3G: must be between 4K and 2G"
        );
        assert_eq!(
            check_ring_size("lots").unwrap_err().to_string(),
            "--ring-size lots: not a size (bytes, or a number with K, M or G, e.g. 64M)"
        );
    }

    #[test]
    fn timestamp_shape() {
        let t = local_timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(&t[8..9], "-");
        assert!(
            t.chars().filter(|c| *c != '-').all(|c| c.is_ascii_digit()),
            "{t}"
        );
    }
}
