//! Where and how `gpuprof` writes its output: every file (the session's parts,
//! the trace, `roofline.svg` / `.csv` / `.json`) is created here, and every output
//! directory is made or accepted here.
//!
//! The rules, for a collector that may run as root in a directory another user can
//! write to, or be given a path another user chose:
//! - A file is never opened through a symbolic link at its final component, and never
//!   opened when it exists: `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600 (the session
//!   holds every profiled command line, tokens in arguments included; a user who wants
//!   to share a file changes its mode afterwards).
//! - The session's files are new, in a new or empty directory ([`create_new`]). Files a
//!   user re-writes (`gpuprof trace`, `gpuprof roofline` run again) are written whole
//!   under a fresh temporary name in the same directory and renamed over the final
//!   name ([`write_replacing`]): `rename` replaces a symbolic link planted at that
//!   name rather than writing through it, and nobody ever reads a half-written file.
//!   A replaced file is a new file (mode 0600, hard links to the old one keep the old
//!   contents).
//! - An output directory gpuprof creates is mode 0700 ([`DIR_MODE`]: the session in
//!   it is nobody else's business; the parents it may need are made as `mkdir -p`
//!   makes them). An existing one must be empty and belong to the user running
//!   gpuprof ([`check_own_dir`]): a directory of someone else's is where a symbolic
//!   link can be planted between our check and our write.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use wire::session_dir::{euid, foreign_owner};

use super::temp_files;

/// The mode of every file gpuprof writes.
pub const FILE_MODE: u32 = 0o600;
/// The mode of an output directory gpuprof creates.
pub const DIR_MODE: u32 = 0o700;

/// How many temporary names [`write_replacing`] tries.
const TEMP_NAMES: u32 = 100;

fn new_file_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

/// Creates `path`, which must not exist (a symbolic link there, dangling or not, is
/// "exists"), mode 0600.
pub fn create_new(path: &Path) -> io::Result<File> {
    new_file_options().open(path)
}

/// Writes the file `path` whole with `fill`, replacing what is there: `fill` writes
/// into a new temporary file beside it (`.<name>.<pid>.<n>.tmp`, created as
/// [`create_new`] creates), which is then renamed to `path`. On any error the
/// temporary file is removed and `path` is as it was.
pub fn write_replacing(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file (it ends in `..` or `/`)",
        )
    })?;
    let (tmp, file) = temp_beside(path, &name.to_string_lossy())?;
    let written = (|| {
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        w.flush()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    temp_files::forget(&tmp);
    written
}

/// A new file beside `path` under the first free temporary name.
pub fn temp_beside(path: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    temp_files::install();
    for n in 0..TEMP_NAMES {
        let tmp = path.with_file_name(format!(".{name}.{pid}.{n}.tmp"));
        match create_new(&tmp) {
            Ok(f) => {
                temp_files::remember(&tmp);
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "no free temporary name beside it (.{name}.{pid}.0.tmp to .{TEMP_NAMES}.tmp exist)"
        ),
    ))
}

/// Makes the output directory `dir` (mode 0700), its missing parents as `mkdir -p`
/// does. Fails when `dir` exists.
pub fn make_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::DirBuilder::new().mode(DIR_MODE).create(dir)
}

/// Makes the directory `dir` inside a directory of ours (mode 0700); fails when it
/// exists (a symbolic link there included).
pub fn make_dir_new(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(DIR_MODE).create(dir)
}

/// `Err` naming the owner when the existing directory `dir` (`meta`: its metadata,
/// symbolic links followed) belongs to another user than the one running gpuprof.
pub fn check_own_dir(dir: &Path, meta: &std::fs::Metadata) -> anyhow::Result<()> {
    if let Some(uid) = foreign_owner(meta) {
        anyhow::bail!(
            "the output directory {} belongs to uid {uid}, not to uid {} who runs gpuprof; \
             name a directory of your own with -o (or GPUPROF_OUT)",
            dir.display(),
            euid()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(name: &str) -> Tmp {
            let d = std::env::temp_dir()
                .join(format!("gpuprof-output-file-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Tmp(d)
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn new_files_are_private_and_never_opened_through_a_link() {
        let t = Tmp::new("new");
        let victim = t.0.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, t.0.join("link")).unwrap();
        std::os::unix::fs::symlink(t.0.join("nowhere"), t.0.join("dangling")).unwrap();
        for name in ["link", "dangling", "victim"] {
            let e = create_new(&t.0.join(name)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{name}");
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(!t.0.join("nowhere").exists());
        let mut f = create_new(&t.0.join("fresh")).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(mode(&t.0.join("fresh")), 0o600);
    }

    #[test]
    fn a_replaced_file_replaces_a_link_not_its_target() {
        let t = Tmp::new("replace");
        let victim = t.0.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = t.0.join("trace.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_replacing(&out, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(mode(&out), 0o600);
        // Again, over the file it wrote: replaced, and no temporary file stays.
        write_replacing(&out, |w| w.write_all(b"newer")).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"newer");
        assert_eq!(names(&t.0), vec!["trace.json", "victim"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_one() {
        let t = Tmp::new("fail");
        let out = t.0.join("roofline.csv");
        std::fs::write(&out, b"old").unwrap();
        let e = write_replacing(&out, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("encoding failed"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "encoding failed");
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert_eq!(names(&t.0), vec!["roofline.csv"]);
        // A directory at the name is not replaced.
        let dir = t.0.join("a-dir");
        std::fs::create_dir(&dir).unwrap();
        assert!(write_replacing(&dir, |w| w.write_all(b"x")).is_err());
        assert!(dir.is_dir());
        assert_eq!(names(&t.0), vec!["a-dir", "roofline.csv"]);
    }

    #[test]
    fn made_directories_are_private() {
        let t = Tmp::new("dirs");
        let d = t.0.join("a/b/out");
        make_dir(&d).unwrap();
        assert_eq!(mode(&d) & 0o777, DIR_MODE);
        assert_eq!(
            make_dir(&d).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let meta = std::fs::metadata(&d).unwrap();
        check_own_dir(&d, &meta).unwrap();
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        if euid() != 0 {
            println!("skipped: giving a directory to another user needs root");
            return;
        }
        let t = Tmp::new("foreign");
        let d = t.0.join("theirs");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        let meta = std::fs::metadata(&d).unwrap();
        assert_eq!(
            check_own_dir(&d, &meta).unwrap_err().to_string(),
            format!(
                "the output directory {} belongs to uid 65534, not to uid 0 who runs gpuprof; \
                 name a directory of your own with -o (or GPUPROF_OUT)",
                d.display()
            )
        );
    }
}
