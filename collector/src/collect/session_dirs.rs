//! The directories and files of a session (docs/SESSION.md): the ring directory on
//! tmpfs with `collector.pid`, the output directory, and the library to inject.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use wire::{env, session_dir};

use crate::store::output_file;

/// Makes the session's ring directory (`wire::session_dir::make_ring_dir`) and writes
/// `collector.pid` in it. Ring directories of ended runs (killed before they could
/// clean up) are removed first.
pub fn make_ring_dir() -> Result<PathBuf> {
    let _ = session_dir::remove_stale_ring_dirs();
    let pid = std::process::id();
    let dir = session_dir::make_ring_dir(pid)?;
    if let Err(e) = write_collector_pid(&dir) {
        let _ = session_dir::remove_ring_dir(&dir);
        return Err(e);
    }
    Ok(dir)
}

/// Writes this process's pid to `dir/collector.pid`.
pub fn write_collector_pid(dir: &Path) -> Result<()> {
    session_dir::write_collector_pid(dir, std::process::id()).with_context(|| {
        format!(
            "cannot write {}",
            dir.join(session_dir::COLLECTOR_PID).display()
        )
    })
}

/// The output directory: `explicit`, else `$GPUPROF_OUT`, else
/// `./gpuprof-<YYYYmmdd-HHMMSS>-<pid>`. Created if missing (mode 0700); an existing
/// directory must be empty and ours ([`prepare_out_dir`]). Returns it and whether it
/// was created here.
pub fn make_out_dir(explicit: Option<&Path>) -> Result<(PathBuf, bool)> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => match std::env::var_os(env::OUT).filter(|v| !v.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => session_dir::default_out_dir(std::process::id()),
        },
    };
    prepare_out_dir(&dir)
}

/// Creates `dir` (mode 0700, `output_file::make_dir`) or accepts it when it is an
/// empty directory of the user running gpuprof (`output_file::check_own_dir`).
pub fn prepare_out_dir(dir: &Path) -> Result<(PathBuf, bool)> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            output_file::check_own_dir(dir, &meta)?;
            let mut entries = std::fs::read_dir(dir)
                .with_context(|| format!("cannot use the output directory {}", dir.display()))?;
            if entries.next().is_some() {
                bail!(
                    "the output directory {} already exists and is not empty; name another one with -o (or GPUPROF_OUT)",
                    dir.display()
                );
            }
            Ok((dir.to_path_buf(), false))
        }
        Ok(_) => bail!(
            "the output path {} exists and is not a directory",
            dir.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            output_file::make_dir(dir)
                .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
            Ok((dir.to_path_buf(), true))
        }
        Err(e) => {
            Err(e).with_context(|| format!("cannot use the output directory {}", dir.display()))
        }
    }
}

/// The library to inject: `$GPUPROF_LIB`, else `libgpuprof.so` beside this binary.
/// Absolute, and it must exist.
pub fn injection_library() -> Result<PathBuf> {
    if let Some(lib) = std::env::var_os(env::LIB).filter(|v| !v.is_empty()) {
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

/// Checks a `--ring-size` value (`wire::session_dir::parse_size`) and returns it
/// unchanged for `GPUPROF_RING_SIZE`, where the library reads it the same way.
pub fn check_ring_size(value: &str) -> Result<OsString> {
    let (min, max) = (
        wire::ring::MIN_CAPACITY as u64,
        wire::ring::MAX_CAPACITY as u64,
    );
    match session_dir::parse_size(value) {
        Some(b) if (min..=max).contains(&b) => Ok(value.into()),
        Some(_) => bail!(
            "--ring-size {value}: must be between {} and {}",
            session_dir::show_size(min),
            session_dir::show_size(max)
        ),
        None => {
            bail!("--ring-size {value}: not a size (bytes, or a number with K, M or G, e.g. 64M)")
        }
    }
}

/// Renames `from` to `to`, which must not exist (`RENAME_NOREPLACE`: nothing
/// planted at `to` is replaced or followed).
pub fn rename_new(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path")
        })
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated strings that outlive the call; renameat2 only
    // reads them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
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
}
