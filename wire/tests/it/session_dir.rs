//! The ring-directory contract both sides call (`wire::session_dir`): ring file names
//! round-trip, the collector's pid file, orphan clean-up (only gpuprof's own files, only
//! in a directory gpuprof made), sizes and the default output directory's name.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use gpuprof_wire::session_dir::{self, Kept, COLLECTOR_PID, MARKER};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wire-session-dir-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn ring_file_names_round_trip() {
    for pid in [1, 42, 4_194_304, u32::MAX] {
        let name = session_dir::ring_file_name(pid);
        assert_eq!(
            session_dir::parse_ring_file_name(OsStr::new(&name)),
            Some(pid)
        );
    }
    assert_eq!(session_dir::ring_file_name(42), "ring-42.ring");
    assert_eq!(
        session_dir::ring_path(std::path::Path::new("/dev/shm/s"), 7),
        PathBuf::from("/dev/shm/s/ring-7.ring")
    );
    for name in [
        "ring-.ring",
        "ring-12",
        "ring-12.ring.tmp",
        "ring--3.ring",
        "ring-+3.ring",
        "ring-1x.ring",
        "ring-4294967296.ring",
        COLLECTOR_PID,
        ".collector.pid.12",
    ] {
        assert_eq!(
            session_dir::parse_ring_file_name(OsStr::new(name)),
            None,
            "{name}"
        );
    }
}

#[test]
fn collector_pid_file() {
    let dir = scratch("pid");
    assert_eq!(session_dir::read_collector_pid(&dir), None);
    // Collectors write the file before any producer joins: none means none runs.
    assert!(session_dir::collector_gone(&dir), "no pid file is gone");
    session_dir::write_collector_pid(&dir, std::process::id()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("collector.pid")).unwrap(),
        format!("{}\n", std::process::id())
    );
    assert_eq!(
        session_dir::read_collector_pid(&dir),
        Some(std::process::id())
    );
    assert!(!session_dir::collector_gone(&dir));
    // Only the pid file is left: the temporary one was renamed over it.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![COLLECTOR_PID]);
    // A hostile pid file: too long to be a pid, or not a number.
    std::fs::write(dir.join(COLLECTOR_PID), "1".repeat(100_000)).unwrap();
    assert_eq!(session_dir::read_collector_pid(&dir), None);
    assert!(session_dir::collector_gone(&dir));
    std::fs::write(dir.join(COLLECTOR_PID), "init\n").unwrap();
    assert_eq!(session_dir::read_collector_pid(&dir), None);
    assert!(session_dir::collector_gone(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A pid that names no process: one above the kernel's pid_max.
fn dead_pid() -> u32 {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    max + 1
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
fn gpuprof_file_names_are_recognised_and_nothing_else() {
    for name in [
        "ring-1.ring",
        "ring-4294967295.ring",
        ".ring-12.ring.12.new",
        "collector.pid",
        ".collector.pid.77",
        MARKER,
    ] {
        assert!(session_dir::is_gpuprof_file(OsStr::new(name)), "{name}");
    }
    for name in [
        "keep.txt",
        "ring-1.ring~",
        ".ring-12.ring.new",
        ".ring-12.ring.x.new",
        ".ring-x.ring.12.new",
        ".collector.pid.",
        ".collector.pid.1x",
        "collector.pid.old",
        ".gpuprof-ring-dir.bak",
        "session.gpuprof",
    ] {
        assert!(!session_dir::is_gpuprof_file(OsStr::new(name)), "{name}");
    }
}

#[test]
fn a_ring_directory_is_made_with_its_marker_and_removed_with_it() {
    let pid = dead_pid() + 1;
    let dir = session_dir::make_ring_dir(pid).unwrap();
    assert_eq!(names(&dir), vec![MARKER]);
    assert_eq!(
        std::fs::read_to_string(dir.join(MARKER)).unwrap(),
        format!("gpuprof ring directory, made by process {pid}\n")
    );
    std::fs::write(session_dir::ring_path(&dir, 5), b"").unwrap();
    std::fs::write(dir.join(".ring-6.ring.6.new"), b"").unwrap();
    session_dir::write_collector_pid(&dir, 9).unwrap();
    assert_eq!(session_dir::remove_ring_dir(&dir), Ok(()));
    assert!(!dir.exists());
    // Gone already: nothing to do.
    assert_eq!(session_dir::remove_ring_dir(&dir), Ok(()));
}

#[test]
fn removal_leaves_what_gpuprof_did_not_make() {
    // Made by gpuprof, with a file of someone else's in it: gpuprof's files go, the
    // directory, its marker and the other file stay.
    let dir = session_dir::make_ring_dir(dead_pid() + 2).unwrap();
    std::fs::write(dir.join("keep.txt"), b"mine").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(session_dir::ring_path(&dir, 5), b"").unwrap();
    session_dir::write_collector_pid(&dir, 9).unwrap();
    assert_eq!(
        session_dir::remove_ring_dir(&dir),
        Err(Kept {
            dir: dir.clone(),
            why: "it holds files gpuprof did not make: keep.txt, sub".into()
        })
    );
    assert_eq!(names(&dir), vec![MARKER, "keep.txt", "sub"]);
    assert_eq!(std::fs::read(dir.join("keep.txt")).unwrap(), b"mine");
    std::fs::remove_dir_all(&dir).unwrap();

    // Not made by gpuprof (no marker): nothing in it is touched.
    let dir = scratch("no-marker");
    std::fs::write(session_dir::ring_path(&dir, 5), b"").unwrap();
    session_dir::write_collector_pid(&dir, 9).unwrap();
    let err = session_dir::remove_ring_dir(&dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "left {} in place: gpuprof did not make it (it has no .gpuprof-ring-dir)",
            dir.display()
        )
    );
    assert_eq!(names(&dir), vec!["collector.pid", "ring-5.ring"]);

    // A symbolic link to a ring directory is not followed.
    let real = session_dir::make_ring_dir(dead_pid() + 3).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        session_dir::remove_ring_dir(&link),
        Err(Kept {
            dir: link.clone(),
            why: "it is not a directory".into()
        })
    );
    assert_eq!(names(&real), vec![MARKER]);
    assert_eq!(session_dir::remove_ring_dir(&real), Ok(()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_of_another_user_is_not_touched() {
    if session_dir::euid() != 0 {
        println!("skipped: giving a directory to another user needs root");
        return;
    }
    let dir = session_dir::make_ring_dir(dead_pid() + 4).unwrap();
    std::fs::write(session_dir::ring_path(&dir, 5), b"").unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    assert_eq!(
        session_dir::remove_ring_dir(&dir),
        Err(Kept {
            dir: dir.clone(),
            why: "it belongs to uid 65534, not to uid 0".into()
        })
    );
    assert_eq!(names(&dir), vec![MARKER, "ring-5.ring"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn orphaned_rings_are_removed_by_the_last_one_out() {
    let dir = session_dir::make_ring_dir(dead_pid() + 5).unwrap();
    let (a, b) = (
        session_dir::ring_path(&dir, 1),
        session_dir::ring_path(&dir, 2),
    );
    std::fs::write(&a, b"").unwrap();
    std::fs::write(&b, b"").unwrap();

    // A live collector: nothing is removed.
    session_dir::write_collector_pid(&dir, std::process::id()).unwrap();
    assert_eq!(session_dir::remove_if_orphaned(&dir, &a), Ok(false));
    assert!(a.exists());

    // The collector is gone: each producer removes its ring; the last one the
    // directory, its marker and the stale pid file.
    session_dir::write_collector_pid(&dir, dead_pid()).unwrap();
    assert!(session_dir::collector_gone(&dir));
    assert_eq!(session_dir::remove_if_orphaned(&dir, &a), Ok(true));
    assert!(!a.exists() && b.exists() && dir.join(COLLECTOR_PID).exists());
    assert_eq!(session_dir::remove_if_orphaned(&dir, &b), Ok(true));
    assert!(!dir.exists());
}

#[test]
fn an_orphaned_ring_in_a_directory_gpuprof_did_not_make_goes_alone() {
    // GPUPROF_SESSION_DIR named a directory of the user's with a stale pid file in it.
    let dir = scratch("orphan-foreign");
    std::fs::write(dir.join("keep.txt"), b"mine").unwrap();
    let a = session_dir::ring_path(&dir, 1);
    std::fs::write(&a, b"").unwrap();
    session_dir::write_collector_pid(&dir, dead_pid()).unwrap();
    assert_eq!(
        session_dir::remove_if_orphaned(&dir, &a),
        Err(Kept {
            dir: dir.clone(),
            why: "gpuprof did not make it (it has no .gpuprof-ring-dir)".into()
        })
    );
    assert_eq!(names(&dir), vec!["collector.pid", "keep.txt"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_collector_removes_only_its_own_pid_file() {
    let dir = scratch("own-pid");
    session_dir::write_collector_pid(&dir, 41).unwrap();
    session_dir::remove_collector_pid(&dir, 42);
    assert_eq!(names(&dir), vec!["collector.pid"]);
    session_dir::remove_collector_pid(&dir, 41);
    assert_eq!(names(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ring_dirs_are_private_and_numbered() {
    use std::os::unix::fs::PermissionsExt;
    let base = session_dir::ring_dir_base().expect("a writable /dev/shm, $TMPDIR or /tmp");
    let pid = dead_pid();
    let first = session_dir::make_ring_dir(pid).unwrap();
    let second = session_dir::make_ring_dir(pid).unwrap();
    assert_eq!(first, base.join(format!("gpuprof-{pid}-0")));
    assert_eq!(second, base.join(format!("gpuprof-{pid}-1")));
    let mode = std::fs::metadata(&first).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let marker = std::fs::metadata(first.join(MARKER)).unwrap();
    assert_eq!(marker.permissions().mode() & 0o777, 0o600);
    assert_eq!(session_dir::remove_ring_dir(&first), Ok(()));
    assert_eq!(session_dir::remove_ring_dir(&second), Ok(()));
}

#[test]
fn sizes() {
    assert_eq!(session_dir::parse_size("4096"), Some(4096));
    assert_eq!(session_dir::parse_size("64M"), Some(64 << 20));
    assert_eq!(session_dir::parse_size(" 2g "), Some(2 << 30));
    assert_eq!(session_dir::parse_size("4k"), Some(4096));
    for bad in ["M", "1.5M", "-1", "+1", "", "16E", "99999999999999999999"] {
        assert_eq!(session_dir::parse_size(bad), None, "{bad}");
    }
    assert_eq!(
        session_dir::parse_size("17179869184G"),
        None,
        "overflows u64"
    );
    assert_eq!(session_dir::show_size(4096), "4K");
    assert_eq!(session_dir::show_size(64 << 20), "64M");
    assert_eq!(session_dir::show_size(1 << 31), "2G");
    assert_eq!(session_dir::show_size(4097), "4097");
}

#[test]
fn default_out_dir_names_time_and_pid() {
    let dir = session_dir::default_out_dir(77);
    let name = dir.to_str().unwrap();
    // gpuprof-YYYYmmdd-HHMMSS-77
    let t = name
        .strip_prefix("gpuprof-")
        .and_then(|r| r.strip_suffix("-77"))
        .unwrap_or_else(|| panic!("{name}"));
    assert_eq!(t.len(), 15, "{t}");
    assert_eq!(&t[8..9], "-");
    assert!(
        t.chars().filter(|c| *c != '-').all(|c| c.is_ascii_digit()),
        "{t}"
    );
}

/// Ring directories of ended runs are removed at the next start; a live session's,
/// an unmarked one and one holding foreign files are not.
#[test]
fn stale_ring_dirs_of_ended_runs_are_removed() {
    let Some(base) = session_dir::ring_dir_base() else {
        return;
    };
    let dead = dead_pid();
    let me = std::process::id();
    let make = |creator: u32, n: u32, marked: bool, collector: u32, rings: &[u32]| {
        let dir = base.join(format!("gpuprof-{creator}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        if marked {
            std::fs::write(dir.join(session_dir::MARKER), "").unwrap();
        }
        session_dir::write_collector_pid(&dir, collector).unwrap();
        for pid in rings {
            std::fs::write(dir.join(session_dir::ring_file_name(*pid)), "").unwrap();
        }
        dir
    };
    let stale = make(dead, 900_001, true, dead, &[dead]);
    let creator_alive = make(me, 900_002, true, dead, &[dead]);
    let producer_alive = make(dead, 900_003, true, dead, &[me]);
    let collector_alive = make(dead, 900_004, true, me, &[]);
    let unmarked = make(dead, 900_005, false, dead, &[]);
    let foreign_file = make(dead, 900_006, true, dead, &[]);
    std::fs::write(foreign_file.join("notes.txt"), "mine").unwrap();

    let (removed, kept) = session_dir::remove_stale_ring_dirs();
    assert!(removed.contains(&stale), "{removed:?}");
    assert!(!stale.exists());
    for d in [&creator_alive, &producer_alive, &collector_alive, &unmarked] {
        assert!(d.exists(), "{} removed", d.display());
        assert!(!removed.contains(d));
    }
    assert!(foreign_file.join("notes.txt").exists());
    assert!(kept.iter().any(|k| k.dir == foreign_file), "{kept:?}");
    for d in [
        creator_alive,
        producer_alive,
        collector_alive,
        unmarked,
        foreign_file,
    ] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn ring_dir_names_parse() {
    use std::ffi::OsStr;
    assert_eq!(
        session_dir::parse_ring_dir_name(OsStr::new("gpuprof-42-0")),
        Some(42)
    );
    assert_eq!(
        session_dir::parse_ring_dir_name(OsStr::new("gpuprof-42-17")),
        Some(42)
    );
    for bad in [
        "gpuprof-42",
        "gpuprof--0",
        "gpuprof-x-0",
        "gpuprof-42-",
        "gpuprof-42-0x",
        "other-42-0",
        "gpuprof-99999999999-0",
    ] {
        assert_eq!(
            session_dir::parse_ring_dir_name(OsStr::new(bad)),
            None,
            "{bad}"
        );
    }
}

#[test]
fn an_unprofiled_note_is_written_only_in_a_ring_directory_and_read_back_bounded() {
    let plain = scratch("unprofiled-plain");
    assert!(session_dir::write_unprofiled(&plain, 7, "no CUPTI").is_err());
    assert_eq!(std::fs::read_dir(&plain).unwrap().count(), 0);

    let dir = session_dir::make_ring_dir(std::process::id()).unwrap();
    session_dir::write_unprofiled(&dir, 7, "no usable CUPTI library found").unwrap();
    let long = "é".repeat(session_dir::MAX_UNPROFILED_BYTES);
    session_dir::write_unprofiled(&dir, 9, &long).unwrap();
    // A second note of one process is refused, the first kept.
    assert!(session_dir::write_unprofiled(&dir, 7, "again").is_err());
    // Not a note: a link under a note's name is not read.
    std::os::unix::fs::symlink("/etc/hostname", dir.join("unprofiled-11")).unwrap();
    let notes = session_dir::read_unprofiled(&dir);
    let cut = "é".repeat(session_dir::MAX_UNPROFILED_BYTES / 2);
    assert_eq!(
        notes,
        vec![(7, "no usable CUPTI library found".to_string()), (9, cut)]
    );
    // The notes are gpuprof's files: removed with the directory; the link is not.
    let kept = session_dir::remove_ring_dir(&dir).unwrap_err();
    assert!(
        kept.to_string()
            .contains("unprofiled-11 (not a regular file)"),
        "{kept}"
    );
    std::fs::remove_file(dir.join("unprofiled-11")).unwrap();
    session_dir::remove_ring_dir(&dir).unwrap();
    std::fs::remove_dir(&plain).unwrap();
}
