//! Joining or starting a profiling session (docs/SESSION.md is the contract): the
//! ring directory, this process's ring file, and in env-var-only mode the collector.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wire::ring::RingWriter;
use wire::{session_dir, ProcessInfo};

use crate::log::{debug, info, warn};
use crate::options::Options;

/// This process's place in a session.
pub struct Session {
    pub dir: PathBuf,
    pub ring: RingWriter,
}

/// Tells the collector of `GPUPROF_SESSION_DIR` (when set: a `gpuprof record` or a
/// child of a profiled process) that this process runs unprofiled, and why, so that
/// the session can say so (`wire::session_dir::write_unprofiled`). Best effort: a
/// directory that cannot take the note is left alone.
pub fn say_unprofiled(why: &str) {
    let Some(dir) = std::env::var_os(wire::env::SESSION_DIR).filter(|d| !d.is_empty()) else {
        return;
    };
    let (dir, pid) = (PathBuf::from(dir), std::process::id());
    if let Err(e) = session_dir::write_unprofiled(&dir, pid, why) {
        debug!("cannot tell the collector in {}: {e}", dir.display());
    }
}

/// Creates this process's ring in `GPUPROF_SESSION_DIR`, or, when it is unset, makes
/// a ring directory, starts the collector on it and exports the variable so the
/// processes this one starts join the same session.
pub fn open(opts: &Options, pid: u32) -> Result<Session, String> {
    if let Some(dir) = &opts.session_dir {
        if session_dir::collector_gone(dir) {
            return Err(format!(
                "{}={} has no running collector (its {} is missing or names a process that has exited)",
                wire::env::SESSION_DIR,
                dir.display(),
                session_dir::COLLECTOR_PID
            ));
        }
        let ring = create_ring(dir, opts, pid)?;
        return Ok(Session {
            dir: dir.clone(),
            ring,
        });
    }
    let collector = collector_binary(opts)?;
    // Ring directories of ended runs (killed before they could clean up) hold tmpfs.
    let (removed, _) = session_dir::remove_stale_ring_dirs();
    for d in removed {
        debug!(
            "removed {}, the ring directory of an ended run",
            d.display()
        );
    }
    let dir = session_dir::make_ring_dir(pid).map_err(|e| e.to_string())?;
    let ring = match create_ring(&dir, opts, pid) {
        Ok(r) => r,
        Err(e) => {
            let _ = session_dir::remove_ring_dir(&dir);
            return Err(e);
        }
    };
    let out = match &opts.out {
        Some(o) => absolute(o),
        None => absolute(&session_dir::default_out_dir(pid)),
    };
    if let Err(e) = spawn_collector(&collector, &dir, &out, pid) {
        let _ = std::fs::remove_file(ring.path());
        let _ = session_dir::remove_ring_dir(&dir);
        return Err(format!(
            "cannot start the collector {}: {e}",
            collector.display()
        ));
    }
    // Children started from here on join this session. This runs inside cuInit, the
    // way every injected tool's start-up does; it is the only channel to children.
    std::env::set_var(wire::env::SESSION_DIR, &dir);
    info!(
        "session {}; the collector writes {}",
        dir.display(),
        out.display()
    );
    Ok(Session { dir, ring })
}

/// Smallest ring taken when the file system has no room for the one asked for.
const MIN_RING: usize = 256 << 10;

/// This process's ring, smaller than asked (and said so) when the ring directory's
/// file system cannot reserve the full size: a full tmpfs must never fault a write.
fn create_ring(dir: &Path, opts: &Options, pid: u32) -> Result<RingWriter, String> {
    let path = session_dir::ring_path(dir, pid);
    let ring = RingWriter::create_fitting(&path, opts.ring_size, MIN_RING.min(opts.ring_size), pid)
        .map_err(|e| format!("cannot create the ring: {e}"))?;
    if ring.capacity() < opts.ring_size {
        warn!(
            "{} has no room for a ring of {}; using {} (more records are dropped if the collector falls behind)",
            dir.display(),
            session_dir::show_size(opts.ring_size as u64),
            session_dir::show_size(ring.capacity() as u64)
        );
    }
    Ok(ring)
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
        None => crate::this_library::path()
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

/// How long a starting collector may take to write its pid file.
const COLLECTOR_START: Duration = Duration::from_secs(10);

/// Starts `gpuprof collect` detached: a new session (it survives our process group's
/// signals), reparented to init at once (a double fork, so it never lingers as our
/// zombie), stdin from /dev/null, stdout and stderr shared with us unless they are
/// pipes (see [`shared_or_null`]). Returns once the collector has written its pid
/// file (it is draining); an error when it exits first (it says why on its stderr)
/// or takes longer than [`COLLECTOR_START`].
///
/// The collector inherits the write end of a pipe and never writes to it: the read
/// end here sees end-of-file exactly when the collector has exited.
fn spawn_collector(bin: &Path, dir: &Path, out: &Path, pid: u32) -> std::io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe2 and are owned here alone.
    let (alive_rd, alive_wr) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let wr = alive_wr.as_raw_fd();
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
    // async-signal-safe calls (setsid, fork, fcntl, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => {
                    // The collector keeps the pipe's write end across exec.
                    if libc::fcntl(wr, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                }
                _ => libc::_exit(0),
            }
        });
    }
    let spawned = cmd.spawn();
    drop(alive_wr);
    let mut child = spawned?;
    // The intermediate process exits at once; reap it.
    child.wait()?;
    wait_until_draining(&alive_rd, dir)
}

/// Waits for the collector's pid file, or for the collector's end of the pipe to
/// close (it exited), or for [`COLLECTOR_START`].
fn wait_until_draining(alive: &OwnedFd, dir: &Path) -> std::io::Result<()> {
    let deadline = Instant::now() + COLLECTOR_START;
    loop {
        if session_dir::read_collector_pid(dir).is_some() {
            return Ok(());
        }
        let mut p = libc::pollfd {
            fd: alive.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a 5 ms timeout.
        let n = unsafe { libc::poll(&mut p, 1, 5) };
        if n > 0 {
            // Nothing is ever written: readable or hung up means the collector exited.
            if session_dir::read_collector_pid(dir).is_some() {
                return Ok(());
            }
            return Err(std::io::Error::other(
                "it exited during start-up (its error is on stderr, unless that is a pipe)",
            ));
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::other(format!(
                "it did not start draining within {} s",
                COLLECTOR_START.as_secs()
            )));
        }
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
        environment: recorded_environment(),
    }
}

/// `NAME=value` of each variable of [`wire::env::RECORDED_ENVIRONMENT`] that is set
/// (and is text).
fn recorded_environment() -> Vec<String> {
    wire::env::RECORDED_ENVIRONMENT
        .iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok()?;
            Some(format!("{name}={value}"))
        })
        .collect()
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
