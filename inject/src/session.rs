//! Joining or starting a profiling session (docs/SESSION.md is the contract): the
//! ring directory, this process's ring file, and in env-var-only mode the collector.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wire::ring::RingWriter;
use wire::ProcessInfo;

use crate::log::info;
use crate::options::Options;

/// This process's place in a session.
pub struct Session {
    pub dir: PathBuf,
    pub ring: RingWriter,
}

/// The ring file of `pid` in a session directory.
pub fn ring_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("ring-{pid}.ring"))
}

/// Creates this process's ring in `GPUPROF_SESSION_DIR`, or, when it is unset, makes
/// a ring directory, starts the collector on it and exports the variable so the
/// processes this one starts join the same session.
pub fn open(opts: &Options, pid: u32) -> Result<Session, String> {
    if let Some(dir) = &opts.session_dir {
        let ring = create_ring(dir, opts, pid)?;
        return Ok(Session {
            dir: dir.clone(),
            ring,
        });
    }
    let collector = collector_binary(opts)?;
    let dir = make_ring_dir(pid)?;
    let ring = match create_ring(&dir, opts, pid) {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
    };
    let out = match &opts.out {
        Some(o) => absolute(o),
        None => absolute(Path::new(&format!("gpuprof-{}-{pid}", local_timestamp()))),
    };
    if let Err(e) = spawn_collector(&collector, &dir, &out, pid) {
        let _ = std::fs::remove_file(ring.path());
        let _ = std::fs::remove_dir(&dir);
        return Err(format!(
            "cannot start the collector {}: {e}",
            collector.display()
        ));
    }
    // Children started from here on join this session. This runs inside cuInit, the
    // way every injected tool's start-up does; it is the only channel to children.
    std::env::set_var("GPUPROF_SESSION_DIR", &dir);
    info!(
        "session {}; the collector writes {}",
        dir.display(),
        out.display()
    );
    Ok(Session { dir, ring })
}

fn create_ring(dir: &Path, opts: &Options, pid: u32) -> Result<RingWriter, String> {
    RingWriter::create(&ring_path(dir, pid), opts.ring_size, pid)
        .map_err(|e| format!("cannot create the ring: {e}"))
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// `GPUPROF_COLLECTOR`, else `gpuprof` beside this library.
fn collector_binary(opts: &Options) -> Result<PathBuf, String> {
    let path = match &opts.collector {
        Some(p) => p.clone(),
        None => crate::preload::own_path()
            .and_then(|me| Some(me.parent()?.join("gpuprof")))
            .ok_or("cannot tell where libgpuprof.so is, to find the gpuprof collector beside it; set GPUPROF_COLLECTOR")?,
    };
    if !path.is_file() {
        return Err(format!(
            "no collector: {} does not exist (set GPUPROF_COLLECTOR, or run under `gpuprof record`)",
            path.display()
        ));
    }
    Ok(path)
}

/// `/dev/shm/gpuprof-<pid>-<n>` (else under `$TMPDIR` or /tmp), mode 0700.
fn make_ring_dir(pid: u32) -> Result<PathBuf, String> {
    let base = [
        Some(PathBuf::from("/dev/shm")),
        std::env::var_os("TMPDIR").map(PathBuf::from),
        Some("/tmp".into()),
    ]
    .into_iter()
    .flatten()
    .find(|d| d.is_dir() && writable(d))
    .ok_or("no writable /dev/shm, $TMPDIR or /tmp for the ring directory")?;
    let mut last = None;
    for n in 0..1000 {
        let dir = base.join(format!("gpuprof-{pid}-{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!(
        "cannot create a ring directory under {}: {last:?}",
        base.display()
    ))
}

fn writable(d: &Path) -> bool {
    let Ok(c) = CString::new(d.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Our stdout / stderr for the collector, unless it is a pipe or socket: a parent
/// that reads our output to EOF before reaping us (`subprocess.run(capture_output=..)`,
/// `Command::output`) would wait for the collector, which waits for our exit to be
/// reaped: a deadlock. Terminals and files are shared; pipes get /dev/null.
fn shared_or_null(fd: libc::c_int) -> Stdio {
    let mut st = core::mem::MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: fstat writes into `st`; an invalid fd is an error return.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return Stdio::null();
    }
    // SAFETY: fstat succeeded, so `st` is initialised.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    if mode == libc::S_IFIFO || mode == libc::S_IFSOCK {
        Stdio::null()
    } else {
        Stdio::inherit()
    }
}

/// Starts `gpuprof collect` detached: a new session (it survives our process group's
/// signals), reparented to init at once (a double fork, so it never lingers as our
/// zombie), stdin from /dev/null, stdout and stderr shared with us unless they are
/// pipes (see [`shared_or_null`]).
fn spawn_collector(bin: &Path, dir: &Path, out: &Path, pid: u32) -> std::io::Result<()> {
    let mut cmd = Command::new(bin);
    cmd.arg("collect")
        .arg("--session-dir")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .arg("--owner-pid")
        .arg(pid.to_string())
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(shared_or_null(libc::STDOUT_FILENO))
        .stderr(shared_or_null(libc::STDERR_FILENO));
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (setsid, fork, _exit).
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => Ok(()),
                _ => libc::_exit(0),
            }
        });
    }
    let mut child = cmd.spawn()?;
    // The intermediate process exits at once; reap it.
    child.wait()?;
    Ok(())
}

/// `YYYYmmdd-HHMMSS` in local time.
fn local_timestamp() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes into `tm`.
    unsafe {
        let t = libc::time(core::ptr::null_mut());
        let mut tm: libc::tm = core::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
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
}

/// `CLOCK_REALTIME` now, ns.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The first record of the ring.
pub fn process_info(cupti: &cupti::Cupti, pid: u32, start_ns: u64) -> ProcessInfo {
    let command = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    ProcessInfo {
        pid,
        // SAFETY: getppid has no preconditions.
        ppid: unsafe { libc::getppid() } as u32,
        command,
        host: hostname(),
        start_ns,
        profiler_version: env!("CARGO_PKG_VERSION").to_string(),
        cupti_api_version: cupti.api_version().0,
        cupti_layouts: cupti.release().name.to_string(),
        cupti_path: cupti.path().display().to_string(),
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len() - 1) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    OsStr::from_bytes(&buf[..end])
        .to_string_lossy()
        .into_owned()
}

/// At exit: when `collector.pid` names a process that is gone, nobody will drain or
/// delete our ring: delete it, and the directory if we were the last one out.
pub fn remove_if_orphaned(dir: &Path, ring: &Path) {
    let Ok(text) = std::fs::read_to_string(dir.join("collector.pid")) else {
        return;
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        return;
    };
    if alive(pid) {
        return;
    }
    let _ = std::fs::remove_file(ring);
    // Fails while other rings (or collector.pid) remain; the last one out also
    // removes the stale pid file.
    let only_pid_left = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().all(|e| e.file_name() == "collector.pid"))
        .unwrap_or(false);
    if only_pid_left {
        let _ = std::fs::remove_file(dir.join("collector.pid"));
        let _ = std::fs::remove_dir(dir);
    }
}

/// Whether the session's collector is known to be gone (no one will drain the ring).
pub fn collector_gone(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("collector.pid"))
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
    {
        Some(pid) => !alive(pid),
        None => false,
    }
}

/// Whether `pid` is a live process: it exists and is not a zombie (a killed collector
/// reparented to an init that does not reap stays a zombie).
fn alive(pid: u32) -> bool {
    if !wire::ring::process_alive(pid) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may hold spaces.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| !rest.starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}
