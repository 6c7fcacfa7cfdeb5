//! `gpuprof record` killed with SIGKILL while the program runs: the program, which
//! `record` started and which outlives it (same process group, nothing forwards a
//! SIGKILL), finishes normally with at most one warning and leaves nothing in
//! /dev/shm; the parts sealed before the kill read whole; a part that was being sealed
//! is reported as never sealed (exit 3); and the report's figures are those the sealed
//! parts hold, counted independently with DuckDB.
//!
//! The test makes its process a child subreaper (`PR_SET_CHILD_SUBREAPER`): the
//! program, orphaned by the kill, is re-parented to it, so its exit status is read with
//! `waitpid` rather than guessed. That is why it runs in a process of its own
//! (`gpuprof_tests::in_own_process`): in the test binary's, every orphan of the tests
//! beside it (the detached collectors of env-var-only mode) would be adopted too, and
//! stay a zombie that nobody reaps.
//!
//! No racing sleeps: every wait polls a condition with a deadline. To kill the
//! collector in the middle of sealing a part, the test watches for `.unsealed-<n>`,
//! stops the collector (SIGSTOP), and kills it if the directory is still there;
//! otherwise it lets it go on and tries again, and after a few seconds kills it
//! between two seals. Either way the assertions are exact for what the kill left.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, duckdb, gpuprof_command, kernel_calls, record_on_sim, shm_dirs_of, Scratch,
    TimedChild,
};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(180);
/// How long the test tries to catch the collector mid-seal before killing it anyway.
const CATCH_MID_SEAL: Duration = Duration::from_secs(4);
/// Decode steps: the program must run on well past the kill.
const DECODE_STEPS: &str = "3000";

/// Polls `cond` every millisecond until it holds; panics naming `what` at the deadline.
fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// (state, parent pid) of process `pid` from /proc, if it exists.
fn stat(pid: u32) -> Option<(char, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = s.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// The processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| stat(*pid).is_some_and(|(_, ppid)| ppid == parent))
                .collect()
        })
        .unwrap_or_default()
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill takes no pointers; `pid` is a child of this process (or a process
    // it adopted) that has not been reaped, so it names the process meant.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// The sealed parts' numbers, and the `.unsealed-<n>` directories, of a session.
fn parts(out: &Path) -> (Vec<u64>, Vec<String>) {
    let mut sealed: Vec<u64> = std::fs::read_dir(out.join("parts"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    (name.len() == 8).then(|| name.parse().ok()).flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    sealed.sort_unstable();
    let mut unsealed: Vec<String> = std::fs::read_dir(out)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(".unsealed-"))
                .collect()
        })
        .unwrap_or_default();
    unsealed.sort();
    (sealed, unsealed)
}

/// Waits for the adopted process `pid` to exit, at most until `deadline`; its status.
fn wait_adopted(pid: u32, deadline: Instant) -> libc::c_int {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid out-pointer for the call's duration; WNOHANG
        // makes it return at once.
        let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        assert!(
            rc >= 0,
            "waitpid({pid}): {} (the program was not re-parented to the test)",
            std::io::Error::last_os_error()
        );
        if rc as u32 == pid {
            return status;
        }
        if Instant::now() >= deadline {
            signal(pid, libc::SIGKILL);
            panic!("the program (pid {pid}) did not finish in time after the collector's death; killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `record` and the program it started, killed and reaped if the test fails midway.
struct Processes {
    record: Option<Child>,
    program: Option<u32>,
}

impl Drop for Processes {
    fn drop(&mut self) {
        if let Some(c) = &mut self.record {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(pid) = self.program.take() {
            if stat(pid).is_some_and(|(s, _)| s != 'Z') {
                // SAFETY: as in `signal`; errors are ignored while unwinding.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            let mut status = 0;
            // SAFETY: as in `wait_adopted`; blocks until the killed program is reaped.
            unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        }
    }
}

#[test]
fn record_killed_mid_run_leaves_sealed_parts_that_read_whole() {
    if !gpuprof_tests::in_own_process(
        module_path!(),
        "record_killed_mid_run_leaves_sealed_parts_that_read_whole",
    ) {
        return;
    }
    let on: libc::c_ulong = 1;
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes no pointers; orphaned descendants
    // of this process are re-parented to it from now on.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on, 0 as libc::c_ulong) };
    assert_eq!(
        rc,
        0,
        "PR_SET_CHILD_SUBREAPER: {}",
        std::io::Error::last_os_error()
    );

    let scratch = Scratch::new("record-sigkill");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.args(["--part-rows", "64", "-o"])
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(["--decode-steps", DECODE_STEPS])
        .stdin(Stdio::null())
        .stdout(File::create(scratch.join("stdout")).unwrap())
        .stderr(File::create(scratch.join("stderr")).unwrap());
    let stderr = || std::fs::read_to_string(scratch.join("stderr")).unwrap_or_default();
    let mut procs = Processes {
        record: Some(cmd.spawn().expect("spawn gpuprof record")),
        program: None,
    };
    let record_pid = procs.record.as_ref().unwrap().id();
    let mut record_exited = || {
        procs
            .record
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_some())
    };

    // The program record started, and its ring directory.
    let mut program = None;
    wait_until("record to start the program", LIMIT, || {
        program = children_of(record_pid).first().copied();
        program.is_some() || record_exited()
    });
    let program = program.unwrap_or_else(|| panic!("record exited: {}", stderr()));
    // Kernel records come out of CUPTI's buffers a while after the first launches:
    // wait for sealed kernels too, so that the figures compared below are not zeros.
    let has_kernels = |part: &u64| {
        out.join(format!("parts/{part:08}/kernels.parquet"))
            .is_file()
    };
    wait_until("two sealed parts, with kernels", LIMIT, || {
        let sealed = parts(&out).0;
        (sealed.len() >= 2 && sealed.iter().any(has_kernels)) || record_exited()
    });
    assert!(!record_exited(), "record exited early: {}", stderr());
    let ring_dirs = shm_dirs_of(record_pid);
    assert_eq!(ring_dirs.len(), 1, "{ring_dirs:?}");

    // Kill the collector, mid-seal if it can be caught there.
    let record_running = || stat(record_pid).is_some_and(|(s, _)| s != 'Z');
    let mut mid_seal = false;
    let catch_until = Instant::now() + CATCH_MID_SEAL;
    while Instant::now() < catch_until && record_running() {
        if !parts(&out).1.is_empty() {
            signal(record_pid, libc::SIGSTOP);
            wait_until("record to stop", LIMIT, || {
                stat(record_pid).is_some_and(|(s, _)| s == 'T' || s == 'Z')
            });
            if !parts(&out).1.is_empty() {
                mid_seal = true;
                break;
            }
            signal(record_pid, libc::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        record_running(),
        "record ended before it could be killed (make the run longer): {}",
        stderr()
    );
    signal(record_pid, libc::SIGKILL);
    let status = procs
        .record
        .take()
        .unwrap()
        .wait()
        .expect("wait for record");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let (sealed, unsealed) = parts(&out);
    eprintln!(
        "record killed {}: {} sealed parts, unsealed {unsealed:?}",
        if mid_seal {
            "mid-seal"
        } else {
            "between seals"
        },
        sealed.len()
    );

    // The program outlived the collector and is now ours; it ends normally.
    procs.program = Some(program);
    assert!(
        stat(program).is_some_and(|(s, ppid)| s != 'Z' && ppid == std::process::id()),
        "the program ended before the collector was killed (or was not adopted: {:?}); \
         make the run longer",
        stat(program)
    );
    let status = wait_adopted(program, Instant::now() + LIMIT);
    procs.program = None;
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the program's status {status:#x}; stderr:\n{}",
        stderr()
    );
    let stdout = std::fs::read_to_string(scratch.join("stdout")).unwrap();
    assert!(
        stdout.starts_with(&format!(
            "cudarc-llm: ok: 2 layers, prompt 128, {DECODE_STEPS} decode steps: "
        )) && stdout.lines().count() == 1,
        "{stdout}"
    );
    // At most one warning: the collector is gone (the program may end before its
    // writer looks).
    let gone = format!(
        "gpuprof: the collector ({}) is gone, or its session directory was removed; profiling is off, the program runs unprofiled\n",
        ring_dirs[0].join("collector.pid").display()
    );
    let err = stderr();
    assert!(err.is_empty() || err == gone, "stderr:\n{err}");
    assert_eq!(
        shm_dirs_of(record_pid),
        Vec::<PathBuf>::new(),
        "left in /dev/shm"
    );

    // The parts: 1..=n sealed, and at most the next one unsealed (certainly, when the
    // collector was stopped with it there).
    let n = *sealed.last().unwrap();
    assert_eq!(sealed, (1..=n).collect::<Vec<u64>>());
    assert!(n >= 2);
    let expected_unsealed = format!(".unsealed-{:08}", n + 1);
    assert!(
        unsealed.is_empty() || unsealed == std::slice::from_ref(&expected_unsealed),
        "{unsealed:?}"
    );
    if mid_seal {
        assert_eq!(unsealed, std::slice::from_ref(&expected_unsealed));
    }

    // The report: every sealed part whole, the unsealed one stated, exit 3 for it.
    let mut cmd = gpuprof_command();
    cmd.args(["report", "--format", "json"]).arg(&out);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    let v: Value = serde_json::from_str(&o.stdout).expect("report JSON");
    if unsealed.is_empty() {
        assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
        assert_eq!(o.stderr, "");
        assert_eq!(v.get("session_damage"), None, "{v:#}");
    } else {
        let dir = out.join(&expected_unsealed);
        let bytes: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        assert_eq!(o.status.code(), Some(3), "{}", o.stderr);
        let p = out.display();
        assert_eq!(
            o.stderr,
            format!(
                "gpuprof: warning: {p}: {expected_unsealed} was never sealed (the collector stopped while writing it); its records are not in the report\n\
                 gpuprof: error: {p}: 1 part was never sealed; the report covers the {n} sealed parts\n"
            )
        );
        assert_eq!(
            v["session_damage"],
            json!({
                "damaged_files": 0,
                "damaged_records": 0,
                "lost": [],
                "damaged_files_of_unknown_records": 0,
                "damaged_bytes": 0,
                "damaged": [],
                "unsealed": [{"dir": expected_unsealed, "bytes": bytes}],
            })
        );
    }
    assert_eq!(v.get("impossible_records"), None, "{v:#}");
    // The program's stream did not end in the session: its End was never collected.
    assert_eq!(v["processes"].as_array().unwrap().len(), 1);
    assert_eq!(v["processes"][0]["pid"], program);
    assert_eq!(v["processes"][0]["finished"], false);
    assert_eq!(v["unfinished"], json!([program]));

    // What the sealed parts hold, read with DuckDB: every file of every manifest, with
    // the rows the manifest gives; the kernels by name.
    let mut files: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for part in &sealed {
        let dir = out.join("parts").join(format!("{part:08}"));
        let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        let manifest: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        for f in manifest["files"].as_array().unwrap() {
            let path = dir.join(f["file"].as_str().unwrap());
            files
                .entry(f["table"].as_str().unwrap().to_string())
                .or_default()
                .push((
                    path.to_str().unwrap().to_string(),
                    f["rows"].as_u64().unwrap(),
                ));
        }
    }
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut queries: Vec<String> = files
        .values()
        .map(|list| {
            let paths: Vec<String> = list.iter().map(|(p, _)| quoted(p)).collect();
            format!(
                "SELECT filename AS file, count(*) AS rows FROM read_parquet([{}], filename = true) \
                 GROUP BY filename ORDER BY filename",
                paths.join(", ")
            )
        })
        .collect();
    let glob = |table: &str| quoted(&format!("{}/parts/*/{table}.parquet", out.display()));
    queries.push(format!(
        "SELECT s.text AS mangled, count(*) AS calls FROM read_parquet({}) k \
         JOIN read_parquet({}) s ON s.pid = k.pid AND s.id = k.name GROUP BY s.text",
        glob("kernels"),
        glob("strings")
    ));
    queries.push(format!(
        "SELECT count(*) AS n FROM read_parquet({})",
        glob("kernels")
    ));
    let query_refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let results = duckdb(&[], &query_refs);
    for ((table, list), rows) in files.iter().zip(&results) {
        let mut want: Vec<(String, u64)> = list.clone();
        want.sort();
        let got: Vec<(String, u64)> = rows
            .iter()
            .map(|r| {
                (
                    r["file"].as_str().unwrap().to_string(),
                    r["rows"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got, want,
            "{table}: rows per file, by DuckDB and by the manifests"
        );
    }
    let by_name: BTreeMap<String, u64> = results[files.len()]
        .iter()
        .map(|r| {
            (
                r["mangled"].as_str().unwrap().to_string(),
                r["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    let total = results[files.len() + 1][0]["n"].as_u64().unwrap();
    assert!(total > 0);
    assert_eq!(v["kernel_count"], total);
    assert_eq!(kernel_calls(&v), by_name);
    assert_eq!(
        by_name.values().sum::<u64>(),
        total,
        "every kernel has its name"
    );
}
