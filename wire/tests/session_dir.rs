//! The ring-directory contract both sides call (`wire::session_dir`): ring file names
//! round-trip, the collector's pid file, orphan clean-up, sizes and the default output
//! directory's name.

use std::ffi::OsStr;
use std::path::PathBuf;

use gpuprof_wire::session_dir::{self, COLLECTOR_PID};

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

#[test]
fn orphaned_rings_are_removed_by_the_last_one_out() {
    let dir = scratch("orphan");
    let (a, b) = (
        session_dir::ring_path(&dir, 1),
        session_dir::ring_path(&dir, 2),
    );
    std::fs::write(&a, b"").unwrap();
    std::fs::write(&b, b"").unwrap();

    // A live collector: nothing is removed.
    session_dir::write_collector_pid(&dir, std::process::id()).unwrap();
    assert!(!session_dir::remove_if_orphaned(&dir, &a));
    assert!(a.exists());

    // The collector is gone: each producer removes its ring; the last one the
    // directory and the stale pid file.
    session_dir::write_collector_pid(&dir, dead_pid()).unwrap();
    assert!(session_dir::collector_gone(&dir));
    assert!(session_dir::remove_if_orphaned(&dir, &a));
    assert!(!a.exists() && b.exists() && dir.join(COLLECTOR_PID).exists());
    assert!(session_dir::remove_if_orphaned(&dir, &b));
    assert!(!dir.exists());
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
    std::fs::remove_dir(&first).unwrap();
    std::fs::remove_dir(&second).unwrap();
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
