//! The fault matrix's file rows: what gpuprof writes, where, and with which rights; what
//! it deletes; and what it loads or does when the environment is hostile or odd. Each
//! test runs the real `gpuprof` / `libgpuprof.so` (on the simulated stack where a
//! program runs) and checks that the program's exit status and output are unchanged,
//! that nothing but gpuprof's own files is touched (a planted link's target is
//! byte-identical after, a foreign file survives), and the exact files, modes and
//! messages. Rows that need a second user (uid 65534, `nobody`) run only as root and
//! print why they were skipped otherwise.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use gpuprof_tests::{
    artifact, compile_c, dead_pid, gpuprof_command, read_perfetto_trace, record_on_sim, ring_files,
    sim_cupti, sim_lib_dir, Finished, Injection, Scratch, SimCommand, TimedChild,
    CUDARC_LLM_STDOUT, RUN_LIMIT,
};
use wire::ring::RingReader;
use wire::Record;

/// The other user of the rows that need one.
const NOBODY: u32 = 65534;

const MODEL: &str = gpuprof_tests::DRIVER_WORKLOAD_MODEL;
const WORKLOAD_STDOUT: &str = gpuprof_tests::DRIVER_WORKLOAD_STDOUT;

/// This process's effective uid (`/proc/self/status`, second `Uid:` field).
fn euid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("a Uid: line");
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Whether a row that needs another user can run; says why not when it cannot.
fn can_be_nobody(test: &str) -> bool {
    if euid() == 0 {
        return true;
    }
    gpuprof_tests::skip(
        test,
        &format!("it needs root to act as (or give a directory to) uid {NOBODY}"),
    );
    false
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

fn run(cmd: Command) -> Finished {
    TimedChild::spawn(cmd, RUN_LIMIT).wait()
}

/// [`MODEL`] written into `scratch`.
fn model(scratch: &Scratch) -> PathBuf {
    let f = scratch.join("model.toml");
    std::fs::write(&f, MODEL).unwrap();
    f
}

/// `tests/c/driver_workload.c` on the simulated stack with [`MODEL`], libgpuprof.so
/// injected by the driver, CUPTI 13.4 (`GPUPROF_CUPTI_LIB` replaced by a test when it
/// needs another).
fn workload_injected(scratch: &Scratch) -> Command {
    let mut cmd = SimCommand::new(Command::new(compile_c(
        "driver_workload.c",
        "driver_workload",
        &[],
    )))
    .cupti("13.4")
    .injected(Injection::Driver)
    .command();
    // The test model prices no counters; the rows here are not about them.
    cmd.env("SIMCUDA_COST_MODEL", model(scratch))
        .env("GPUPROF_COUNTERS", "off");
    cmd
}

/// Row: the session file was 0644 (and its directory 0755) while it holds every
/// profiled command line, `--api-token=...` included. Now the output directory
/// `record` makes is 0700, its parts directories too, and every session file 0600.
#[test]
fn record_writes_a_private_session_in_a_private_directory() {
    let scratch = Scratch::new("fault-private");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(compile_c("driver_workload.c", "driver_workload", &[]))
        .arg("--api-token=s3cret")
        .env("SIMCUDA_COST_MODEL", model(&scratch))
        // The test model prices no counters; this row is not about them.
        .env("GPUPROF_COUNTERS", "off");
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended.stdout.starts_with(WORKLOAD_STDOUT),
        "{}",
        ended.stdout
    );
    assert_eq!(names(&out), vec!["index.json", "parts"]);
    assert_eq!(mode(&out), 0o700);
    assert_eq!(mode(&out.join("parts")), 0o700);
    assert_eq!(mode(&out.join("index.json")), 0o600);
    let part = out.join("parts/00000001");
    assert_eq!(mode(&part), 0o700);
    let files = names(&part);
    assert!(
        files.contains(&"processes.parquet".to_string()),
        "{files:?}"
    );
    for f in files {
        assert_eq!(mode(&part.join(&f)), 0o600, "{f}");
    }
    // What the mode protects: the command line is in the file.
    let o = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["processes"][0]["command"][1], "--api-token=s3cret");
}

/// A file the test owns, standing for one an attacker wants overwritten.
fn victim(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("{name}: must stay as it is\n")).unwrap();
    p
}

fn assert_untouched(p: &Path) {
    let name = p.file_name().unwrap().to_string_lossy();
    assert_eq!(
        std::fs::read_to_string(p).unwrap(),
        format!("{name}: must stay as it is\n"),
        "{} was written through a link",
        p.display()
    );
}

/// A private output file: a regular file (not the planted link), mode 0600.
fn assert_private_file(p: &Path) {
    let meta = std::fs::symlink_metadata(p).unwrap();
    assert!(meta.is_file(), "{} is not a regular file", p.display());
    assert_eq!(mode(p), 0o600, "{}", p.display());
}

/// Row: `trace` / `roofline` wrote `trace.json` (now `trace.perfetto-trace`) /
/// `roofline.svg` (`.csv`, `.json`)
/// with `File::create` / `fs::write`, which follow a symbolic link planted at the name
/// (a root-owned file was overwritten that way). Now each is written under a new name
/// and renamed over the link: the link's target is byte-identical after, a dangling
/// link creates nothing, and the outputs are regular files, mode 0600. `trace -o FILE`
/// with FILE a link is the same.
#[test]
fn trace_and_roofline_replace_planted_links_not_their_targets() {
    let scratch = Scratch::new("fault-links");
    let out = scratch.join("out");
    let targets = scratch.join("targets");
    std::fs::create_dir(&targets).unwrap();
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended.stdout.starts_with(CUDARC_LLM_STDOUT),
        "{}",
        ended.stdout
    );

    let link = |name: &str, to: &Path| std::os::unix::fs::symlink(to, out.join(name)).unwrap();
    let (t, svg, csv) = (
        victim(&targets, "trace-target"),
        victim(&targets, "svg-target"),
        victim(&targets, "csv-target"),
    );
    link("trace.perfetto-trace", &t);
    link("roofline.svg", &svg);
    link("roofline.csv", &csv);
    let dangling = targets.join("made-through-a-link");
    link("roofline.json", &dangling);

    let o = gpuprof_command().arg("trace").arg(&out).output().unwrap();
    let trace_stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{trace_stderr}");
    let o = gpuprof_command()
        .arg("roofline")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.ends_with(&format!(
            "gpuprof: the points: {} and {}\n",
            out.join("roofline.csv").display(),
            out.join("roofline.json").display()
        )),
        "{stderr}"
    );

    for v in [&t, &svg, &csv] {
        assert_untouched(v);
    }
    assert!(
        !dangling.exists(),
        "a file was created through a dangling link"
    );
    assert_eq!(
        names(&targets),
        vec!["csv-target", "svg-target", "trace-target"]
    );
    assert_eq!(
        names(&out),
        vec![
            "index.json",
            "parts",
            "roofline.csv",
            "roofline.json",
            "roofline.svg",
            "trace.perfetto-trace"
        ]
    );
    for f in [
        "trace.perfetto-trace",
        "roofline.svg",
        "roofline.csv",
        "roofline.json",
    ] {
        assert_private_file(&out.join(f));
    }
    let trace = read_perfetto_trace(&out.join("trace.perfetto-trace"));
    let kernels = trace["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] == "kernel")
        .count();
    assert_eq!(kernels, 107);
    let prefix = format!(
        "gpuprof: trace written to {}: 107 kernels, ",
        out.join("trace.perfetto-trace").display()
    );
    assert!(
        trace_stderr.starts_with(&prefix) && trace_stderr.lines().count() == 1,
        "{trace_stderr}"
    );
    // The same bytes as written where no link was planted.
    let reference = scratch.join("reference");
    std::fs::create_dir(&reference).unwrap();
    let o = gpuprof_command()
        .arg("roofline")
        .arg(&out)
        .arg("-o")
        .arg(reference.join("roofline.svg"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["roofline.svg", "roofline.csv", "roofline.json"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(reference.join(f)).unwrap(),
            "{f}"
        );
    }

    // `trace -o FILE`, FILE a link elsewhere.
    let elsewhere = scratch.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let named = elsewhere.join("mine.perfetto-trace");
    let target = victim(&targets, "named-target");
    std::os::unix::fs::symlink(&target, &named).unwrap();
    let o = gpuprof_command()
        .arg("trace")
        .arg(&out)
        .arg("-o")
        .arg(&named)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_untouched(&target);
    assert_private_file(&named);
    assert_eq!(
        std::fs::read(&named).unwrap(),
        std::fs::read(out.join("trace.perfetto-trace")).unwrap()
    );
    assert_eq!(names(&elsewhere), vec!["mine.perfetto-trace"]);
}

/// Row: `record -o DIR` accepted an existing empty directory owned by someone else
/// (who can then plant links in it). Now it is refused before anything runs, naming
/// the directory and its owner.
#[test]
fn record_refuses_an_output_directory_of_another_user() {
    if !can_be_nobody("record_refuses_an_output_directory_of_another_user") {
        return;
    }
    let scratch = Scratch::new("fault-foreign-out");
    let out = scratch.join("theirs");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    let ran = scratch.join("program-ran");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c", "touch \"$0\""])
        .arg(&ran);
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(2));
    assert_eq!(ended.stdout, "");
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: error: the output directory {} belongs to uid {NOBODY}, not to uid 0 who \
             runs gpuprof; name a directory of your own with -o (or GPUPROF_OUT)\n",
            out.display()
        )
    );
    assert!(!ran.exists(), "the program ran");
    assert_eq!(names(&out), Vec::<String>::new());
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), NOBODY);
}

/// Row: a set-user-ID root program, run by another user with libgpuprof.so injected,
/// started `GPUPROF_COLLECTOR` with root's rights (no `AT_SECURE` check), and would
/// write where `GPUPROF_OUT` / `GPUPROF_SESSION_DIR` say. Now the profiler is off in
/// such a process with one warning: no collector, no ring, no output directory, and
/// the program's output is unchanged.
#[test]
fn a_setuid_program_is_not_profiled() {
    if !can_be_nobody("a_setuid_program_is_not_profiled") {
        return;
    }
    let scratch = Scratch::new("fault-setuid");
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The loader ignores LD_LIBRARY_PATH in a set-user-ID program: the simulated
    // driver is found through the program's own RPATH.
    let rpath = format!("-Wl,--disable-new-dtags,-rpath,{}", sim_lib_dir().display());
    let built = compile_c("driver_workload.c", "driver_workload_rpath", &[&rpath]);
    let program = scratch.join("setuid_workload");
    std::fs::copy(&built, &program).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o4755)).unwrap();
    assert_eq!(std::fs::metadata(&program).unwrap().uid(), 0);
    // Where a collector started by the program would leave its mark.
    let marks = scratch.join("marks");
    std::fs::create_dir(&marks).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let collector = scratch.join("collector.sh");
    std::fs::write(
        &collector,
        format!(
            "#!/bin/sh\necho \"$@\" > {}/collector-ran\n",
            marks.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&collector, std::fs::Permissions::from_mode(0o755)).unwrap();
    let session_dir = scratch.join("session");
    std::fs::create_dir(&session_dir).unwrap();
    std::fs::set_permissions(&session_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let model = model(&scratch);
    std::fs::set_permissions(&model, std::fs::Permissions::from_mode(0o644)).unwrap();

    let warning = "gpuprof: this process runs with privileges its user does not have (AT_SECURE: \
                   setuid, setgid or file capabilities); gpuprof does not act on its environment \
                   (GPUPROF_COLLECTOR, GPUPROF_OUT, GPUPROF_SESSION_DIR, GPUPROF_CUPTI_LIB); \
                   profiling is off, the program runs unprofiled\n";
    // Env-var-only mode (the collector and GPUPROF_OUT), then a session directory.
    for session in [None, Some(&session_dir)] {
        let mut cmd = SimCommand::new(Command::new(&program))
            .cupti("13.4")
            .injected(Injection::Driver)
            .command();
        cmd.env("SIMCUDA_COST_MODEL", &model)
            .env("GPUPROF_COLLECTOR", &collector)
            .env("GPUPROF_OUT", marks.join("out"))
            .uid(NOBODY)
            .gid(NOBODY);
        if let Some(dir) = session {
            cmd.env("GPUPROF_SESSION_DIR", dir);
        }
        let child = TimedChild::spawn(cmd, RUN_LIMIT);
        let ended = child.wait();
        assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
        assert_eq!(ended.stdout, WORKLOAD_STDOUT);
        assert_eq!(ended.stderr, warning);
        // A collector would have been started as soon as profiling began.
        assert_eq!(names(&marks), Vec::<String>::new(), "session {session:?}");
        assert_eq!(names(&session_dir), Vec::<String>::new());
    }
}

/// Row: `gpuprof collect --session-dir DIR --owner-pid <dead pid>` deleted DIR
/// recursively, unrelated files and all (exit 0). Now a directory gpuprof did not make
/// (no marker) keeps everything but the collector's own `collector.pid`, and a
/// directory it made keeps what it did not make (and the marker); a warning names what
/// stayed and why.
#[test]
fn collect_deletes_nothing_it_did_not_make() {
    let scratch = Scratch::new("fault-collect");
    let dir = scratch.join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"unrelated\n").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/data"), b"more\n").unwrap();
    let collect = |dir: &Path, out: &Path| {
        let mut cmd = gpuprof_command();
        cmd.arg("collect")
            .arg("--session-dir")
            .arg(dir)
            .arg("--out")
            .arg(out)
            .arg("--owner-pid")
            .arg(dead_pid().to_string());
        run(cmd)
    };
    let out = scratch.join("out");
    let ended = collect(&dir, &out);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: warning: left {d} in place: gpuprof did not make it (it has no \
             .gpuprof-ring-dir)\ngpuprof: session written to {o} (0 processes, 0 kernels, 0 \
             dropped); gpuprof report {o}\n",
            d = dir.display(),
            o = out.display()
        )
    );
    assert_eq!(names(&dir), vec!["notes.txt", "sub"]);
    assert_eq!(
        std::fs::read(dir.join("notes.txt")).unwrap(),
        b"unrelated\n"
    );
    assert_eq!(std::fs::read(dir.join("sub/data")).unwrap(), b"more\n");
    assert_eq!(names(&out), vec!["index.json", "parts"]);

    // A ring directory gpuprof made, with a file of someone else's in it: a ring
    // being built and the pid file go, the rest stays.
    let made = wire::session_dir::make_ring_dir(std::process::id()).unwrap();
    std::fs::write(made.join("keep.txt"), b"keep\n").unwrap();
    std::fs::write(made.join(".ring-7.ring.7.new"), b"").unwrap();
    let out = scratch.join("out-2");
    let ended = collect(&made, &out);
    let kept = names(&made);
    let _ = std::fs::remove_dir_all(&made);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(kept, vec![wire::session_dir::MARKER, "keep.txt"]);
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: warning: left {m} in place: it holds files gpuprof did not make: \
             keep.txt\ngpuprof: session written to {o} (0 processes, 0 kernels, 0 dropped); \
             gpuprof report {o}\n",
            m = made.display(),
            o = out.display()
        )
    );
}

/// Row: `collect --session-dir` on a ring directory where someone planted entries
/// named as rings (a FIFO, a symbolic link to a file, a file of another user) opened
/// the link's target read-write and deleted all three. Now none is opened as a ring
/// or deleted, the target is unchanged, and a warning names each.
#[test]
fn collect_neither_opens_nor_deletes_planted_rings() {
    let scratch = Scratch::new("fault-collect-planted");
    let target = scratch.join("target.txt");
    std::fs::write(&target, b"not a ring\n").unwrap();
    let made = wire::session_dir::make_ring_dir(std::process::id()).unwrap();
    let fifo = std::ffi::CString::new(made.join("ring-11.ring").as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink(&target, made.join("ring-12.ring")).unwrap();
    let others = can_be_nobody("collect_neither_opens_nor_deletes_planted_rings");
    if others {
        std::fs::write(made.join("ring-13.ring"), vec![0u8; 8192]).unwrap();
        std::os::unix::fs::chown(made.join("ring-13.ring"), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let out = scratch.join("out");
    let mut cmd = gpuprof_command();
    cmd.arg("collect")
        .arg("--session-dir")
        .arg(&made)
        .arg("--out")
        .arg(&out)
        .arg("--owner-pid")
        .arg(dead_pid().to_string());
    let ended = run(cmd);
    let kept = names(&made);
    let _ = std::fs::remove_dir_all(&made);
    assert_eq!(std::fs::read(&target).unwrap(), b"not a ring\n");
    let mut want = vec![wire::session_dir::MARKER, "ring-11.ring", "ring-12.ring"];
    if others {
        want.push("ring-13.ring");
    }
    assert_eq!(kept, want);
    // Rings that cannot be read: the session is incomplete.
    assert_eq!(ended.status.code(), Some(3), "{}", ended.stderr);
    let (m, o) = (made.display(), out.display());
    let skipped = |n: u32, why: &str, kept: &str| {
        format!("gpuprof: skipped a ring that cannot be read: {m}/ring-{n}.ring: {why} (left in place: {kept})")
    };
    let mut want = vec![
        skipped(11, "not a regular file", "not a regular file"),
        skipped(12, "a symbolic link, not followed", "not a regular file"),
        format!(
            "gpuprof: warning: left {m} in place: it holds files gpuprof did not make: \
             ring-11.ring (not a regular file), ring-12.ring (not a regular file){}",
            if others { ", ring-13.ring (owned by uid 65534)" } else { "" }
        ),
        format!(
            "gpuprof: session written to {o} (0 processes, 0 kernels, 0 dropped); gpuprof report {o}"
        ),
        "gpuprof: the session is incomplete (see above); exit status 3".to_string(),
    ];
    if others {
        let uid = wire::session_dir::euid();
        let why = format!("owned by uid 65534, not by this user (uid {uid})");
        want.push(skipped(13, &why, "owned by uid 65534"));
    }
    want.sort();
    let mut got: Vec<String> = ended.stderr.lines().map(str::to_string).collect();
    got.sort();
    assert_eq!(got, want);
}

/// Row: a directory of another user is never touched: `collect` refuses it before
/// reading, writing or deleting anything in it.
#[test]
fn collect_refuses_a_directory_of_another_user() {
    if !can_be_nobody("collect_refuses_a_directory_of_another_user") {
        return;
    }
    let scratch = Scratch::new("fault-collect-foreign");
    let dir = scratch.join("theirs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("ring-1.ring"), b"theirs\n").unwrap();
    std::fs::write(dir.join("collector.pid"), b"1\n").unwrap();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = scratch.join("out");
    let mut cmd = gpuprof_command();
    cmd.arg("collect")
        .arg("--session-dir")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .arg("--owner-pid")
        .arg(dead_pid().to_string());
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(2));
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: error: --session-dir {}: belongs to uid {NOBODY}, not to uid 0 who runs \
             gpuprof; gpuprof collects only from ring directories of its own user\n",
            dir.display()
        )
    );
    assert_eq!(names(&dir), vec!["collector.pid", "ring-1.ring"]);
    assert_eq!(std::fs::read(dir.join("ring-1.ring")).unwrap(), b"theirs\n");
    assert_eq!(std::fs::read(dir.join("collector.pid")).unwrap(), b"1\n");
    assert!(!out.exists());
}

/// Row: `gpuprof record` removed its ring directory with everything in it. Now a file
/// another process put there stays, with the directory and its marker, and a warning.
#[test]
fn record_leaves_a_foreign_file_in_its_ring_directory() {
    let scratch = Scratch::new("fault-record-ring");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o").arg(&out).args([
        "--",
        "sh",
        "-c",
        "echo unrelated > \"$GPUPROF_SESSION_DIR/keep.txt\"; echo \"$GPUPROF_SESSION_DIR\"",
    ]);
    let ended = run(cmd);
    let ring_dir = PathBuf::from(ended.stdout.lines().next().unwrap_or_default());
    let kept = ring_dir.is_dir().then(|| names(&ring_dir));
    let content = std::fs::read(ring_dir.join("keep.txt"));
    if ring_dir.starts_with("/dev/shm") {
        let _ = std::fs::remove_dir_all(&ring_dir);
    }
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(
        kept,
        Some(vec![
            wire::session_dir::MARKER.to_string(),
            "keep.txt".into()
        ])
    );
    assert_eq!(content.unwrap(), b"unrelated\n");
    assert!(
        ended.stderr.starts_with(&format!(
            "gpuprof: warning: left {} in place: it holds files gpuprof did not make: keep.txt\n",
            ring_dir.display()
        )),
        "{}",
        ended.stderr
    );
}

/// Row: `GPUPROF_SESSION_DIR` naming a directory of the user's that holds a stale
/// `collector.pid` (a dead pid): the program's exit removed the pid file and the
/// directory. Now the process does not join a session without a live collector: one
/// warning, nothing made, nothing removed.
#[test]
fn a_stale_collector_pid_in_a_users_directory_deletes_nothing_else() {
    let scratch = Scratch::new("fault-stale-pid");
    let dir = scratch.join("session");
    std::fs::create_dir(&dir).unwrap();
    let pid_file = format!("{}\n", dead_pid());
    std::fs::write(dir.join("collector.pid"), &pid_file).unwrap();
    let mut cmd = workload_injected(&scratch);
    cmd.env("GPUPROF_SESSION_DIR", &dir);
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, WORKLOAD_STDOUT);
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: GPUPROF_SESSION_DIR={d} has no running collector (its collector.pid is \
             missing or names a process that has exited); profiling is off, the program runs \
             unprofiled\n",
            d = dir.display()
        )
    );
    assert_eq!(names(&dir), vec!["collector.pid"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("collector.pid")).unwrap(),
        pid_file
    );
}

/// The records of the one ring in `dir`.
fn ring_records(dir: &Path) -> Vec<Record> {
    let rings = ring_files(dir);
    assert_eq!(rings.len(), 1, "{rings:?}");
    let mut reader = RingReader::open(&rings[0]).unwrap();
    let mut records = Vec::new();
    while let Some(frame) = reader.try_read().unwrap() {
        records.extend(wire::decode_batch(&frame).unwrap());
    }
    records
}

/// Row: a `GPUPROF_COUNTER_RANGE` that is not UTF-8 was dropped silently, and every
/// launch was then measured. Now it is one warning naming the variable, and per-kernel
/// counters are off (no range name can match it); tracing goes on.
#[test]
fn a_counter_range_that_is_not_utf8_turns_counters_off() {
    let scratch = Scratch::new("fault-range-bytes");
    let dir = scratch.join("session");
    std::fs::create_dir(&dir).unwrap();
    let mut cmd = SimCommand::new(Command::new(artifact("cudarc-llm")))
        .cupti("13.4")
        .injected(Injection::Driver)
        .session_dir(&dir)
        .command();
    cmd.env("GPUPROF_COUNTER_RANGE", OsStr::from_bytes(b"dec\xffode"));
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, CUDARC_LLM_STDOUT);
    assert_eq!(
        ended.stderr,
        "gpuprof: GPUPROF_COUNTER_RANGE=\"dec\\xFFode\" is not UTF-8 text; no NVTX range can \
         match it; per-kernel counters are off\n"
    );
    let records = ring_records(&dir);
    let count = |f: fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
    assert_eq!(count(|r| matches!(r, Record::Kernel(_))), 107);
    assert_eq!(count(|r| matches!(r, Record::CounterPlan(_))), 0);
    assert_eq!(count(|r| matches!(r, Record::KernelCounters(_))), 0);
    assert!(matches!(records.last(), Some(Record::End(_))));
}

/// Row: `GPUPROF_CUPTI_LIB` naming a directory without libcupti fell back silently to
/// the loader path (where the simulated CUPTI is here). Now it is one warning and the
/// profiler is off: no ring.
#[test]
fn a_cupti_directory_without_cupti_turns_profiling_off() {
    let scratch = Scratch::new("fault-cupti-dir");
    let empty = scratch.join("no-cupti-here");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("README"), b"not a library\n").unwrap();
    let dir = scratch.join("session");
    std::fs::create_dir(&dir).unwrap();
    let mut cmd = workload_injected(&scratch);
    cmd.env("GPUPROF_CUPTI_LIB", &empty)
        .env("GPUPROF_SESSION_DIR", &dir);
    let ended = run(cmd);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, WORKLOAD_STDOUT);
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: GPUPROF_CUPTI_LIB={}: the directory holds no libcupti.so* file; \
             profiling is off, the program runs unprofiled\n",
            empty.display()
        )
    );
    assert_eq!(names(&dir), Vec::<String>::new());
    assert!(sim_lib_dir().join("libcupti.so.13").exists());
}

/// `(program header index, p_offset, p_filesz)` of every PT_LOAD segment of an ELF64
/// little-endian file.
fn load_segments(elf: &[u8]) -> Vec<(usize, u64, u64)> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (phoff, phnum) = (u64_at(32) as usize, u16_at(56) as usize);
    (0..phnum)
        .map(|i| phoff + 56 * i)
        .enumerate()
        .filter(|(_, p)| u32_at(*p) == 1)
        .map(|(i, p)| (i, u64_at(p + 8), u64_at(p + 32)))
        .collect()
}

/// Row: a truncated `libcupti.so` named by `GPUPROF_CUPTI_LIB` killed the program with
/// SIGBUS inside `dlopen` (the loader maps segments past the end of the file). Now the
/// file is checked with plain reads first and refused with one warning; the program
/// runs unprofiled.
#[test]
fn a_truncated_cupti_is_refused_before_it_is_loaded() {
    let scratch = Scratch::new("fault-cupti-cut");
    let whole = std::fs::read(std::fs::canonicalize(sim_cupti(13)).unwrap()).unwrap();
    let segments = load_segments(&whole);
    let end = segments.iter().map(|(_, o, s)| o + s).max().unwrap();
    // Three quarters of the mapped bytes: the cut falls inside a segment.
    let cut = end * 3 / 4;
    let (index, offset, size) = *segments
        .iter()
        .find(|(_, o, s)| o + s > cut)
        .expect("a segment past the cut");
    let lib = scratch.join("libcupti.so.13");
    std::fs::write(&lib, &whole[..cut as usize]).unwrap();
    let dir = scratch.join("session");
    std::fs::create_dir(&dir).unwrap();
    let mut cmd = workload_injected(&scratch);
    cmd.env("GPUPROF_CUPTI_LIB", &lib)
        .env("GPUPROF_SESSION_DIR", &dir);
    let ended = run(cmd);
    assert_eq!(
        ended.status.code(),
        Some(0),
        "{:?}: {}",
        ended.status,
        ended.stderr
    );
    assert_eq!(ended.stdout, WORKLOAD_STDOUT);
    assert_eq!(
        ended.stderr,
        format!(
            "gpuprof: GPUPROF_CUPTI_LIB={}: not loaded: its PT_LOAD segment (program header \
             {index}, file bytes {offset} to {}) ends past the end of the file ({cut} bytes): \
             the file is truncated; profiling is off, the program runs unprofiled\n",
            lib.display(),
            offset + size
        )
    );
    assert_eq!(names(&dir), Vec::<String>::new());
}

/// Row: an interrupted `trace` left its hidden temporary file behind (253 MB after a
/// SIGTERM; a Kineto temporary grows to the trace's size). Now SIGTERM (Kineto into a
/// directory) and SIGINT (Perfetto beside the session) remove it, and the command
/// still ends by the signal.
#[test]
fn an_interrupted_trace_leaves_no_temporary_file() {
    use wire::testing::{k, launch, process, string};
    let scratch = Scratch::new("fault-trace-signal");
    let session = scratch.join("session");
    std::fs::create_dir(&session).unwrap();
    // Enough kernels that the trace is still being written when the signal comes.
    let frames: Vec<(u32, Vec<Record>)> = (0..4u32)
        .map(|part| {
            let mut records = vec![process(3, "./app"), string(1, "gemm")];
            for i in 0..50_000u32 {
                let corr = part * 50_000 + i + 1;
                let t = u64::from(corr) * 1_000;
                records.push(launch(corr, 1, t, t + 100));
                records.push(k(1, corr, t + 200, t + 700));
            }
            (3, records)
        })
        .collect();
    gpuprof_collector::store::write_parts(&session, &frames).unwrap();
    let hidden = |dir: &Path| -> Vec<String> {
        names(dir)
            .into_iter()
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    };
    for (signal, args, dir) in [
        (
            libc::SIGTERM,
            vec!["--format", "kineto", "-o"],
            scratch.join("kineto"),
        ),
        (libc::SIGINT, vec![], session.clone()),
    ] {
        let mut cmd = gpuprof_command();
        cmd.arg("trace").args(&args);
        if dir != session {
            cmd.arg(&dir);
        }
        let mut child = cmd
            .arg(&session)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        // Until the temporary file holds bytes: it is being written.
        let writing = |dir: &Path| {
            hidden(dir)
                .iter()
                .any(|n| std::fs::metadata(dir.join(n)).is_ok_and(|m| m.len() > 0))
        };
        while (!dir.is_dir() || !writing(&dir)) && started.elapsed() < RUN_LIMIT {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(hidden(&dir).len(), 1, "{signal}: no temporary file seen");
        // SAFETY: kill has no memory-safety preconditions; the child is not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert_eq!(hidden(&dir), Vec::<String>::new(), "{signal}");
    }
}
