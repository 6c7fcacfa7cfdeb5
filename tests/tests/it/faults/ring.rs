//! The fault matrix, for the ring and the processes around it, on the simulated stack:
//! each test breaks one thing a real machine breaks (a full /dev/shm, a ring truncated
//! under both sides, a program killed or aborted, a collector that cannot start, a
//! termination request, a forged ring) and asserts that the profiled program's exit
//! status and output are unchanged, that nothing is left behind, and the exact count
//! of records lost (docs/ARCHITECTURE.md, "What gpuprof promises").

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, dead_pid, gpuprof_command, record_on_sim, report_json, session_records, shm_dirs_of,
    unprofiled_lines, unprofiled_pids, Finished, Scratch, SimCommand, TimedChild,
};

const LIMIT: Duration = Duration::from_secs(180);

/// The cudarc client's summary line with its default shape.
const SUMMARY: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";

/// The same with `--decode-steps 40`.
const SUMMARY_40: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 40 decode steps: 492 kernel launches, 371 GEMMs\n";

/// `gpuprof record -o OUT -- cudarc-llm ARGS` on the simulated stack.
fn record(out: &Path, args: &[&str]) -> Command {
    let mut c = record_on_sim("13.4");
    c.arg("-o")
        .arg(out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(args);
    c
}

fn dropped(v: &serde_json::Value, source: &str) -> u64 {
    v["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .find(|d| d["source"] == source)
        .and_then(|d| d["records"].as_u64())
        .unwrap_or_else(|| panic!("no {source} in {v}"))
}

fn code(o: &Finished) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    o.status
        .code()
        .or_else(|| o.status.signal().map(|s| 128 + s))
}

/// Whether `pid` runs (a zombie does not: the detached collector is reaped by
/// whoever adopted it, not by us).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The ring file of the program `gpuprof record` (pid `gpuprof`) runs, once it is there.
fn live_ring(gpuprof: u32) -> PathBuf {
    let mut ring = None;
    wait_for("the program's ring", || {
        ring = shm_dirs_of(gpuprof).iter().find_map(|d| {
            std::fs::read_dir(d)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "ring"))
        });
        ring.is_some()
    });
    ring.expect("found")
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kernels of the default shape, from a run that ends normally.
fn kernels_of_a_normal_run(scratch: &Scratch) -> u64 {
    let out = scratch.join("normal");
    let o = TimedChild::spawn(record(&out, &[]), LIMIT).wait();
    assert_eq!(code(&o), Some(0), "{}", o.stderr);
    assert!(o.stdout.starts_with(SUMMARY), "{}", o.stdout);
    let r = report_json(&out);
    let markers = session_records(&out)
        .iter()
        .filter(|(_, r)| matches!(r, wire::Record::Marker(_)))
        .count() as u64;
    assert_eq!(markers, NORMAL_MARKERS);
    // Every NVTX call counted as making a marker made one (else a note says so).
    assert!(!o.stderr.contains("NVTX calls counted"), "{}", o.stderr);
    for source in [
        "cupti",
        "channel",
        "ring",
        "undelivered",
        "unwritten",
        "unsaved",
    ] {
        assert_eq!(dropped(&r, source), 0, "{source}");
    }
    r["kernel_count"].as_u64().expect("kernel_count")
}

/// NVTX markers of the workload's normal run: push and pop of "prefill" and of each of
/// its 4 decode steps.
const NORMAL_MARKERS: u64 = 2 + 2 * 4;

/// A program that ends without running exit handlers (abort(), _exit(), SIGKILL):
/// the kernels and NVTX markers still in CUPTI's buffers are counted as undelivered,
/// exactly, and records out of CUPTI but not yet in the ring as unwritten: kernels and
/// markers reported + undelivered = those of a normal run when nothing was in flight
/// (an NVTX marker inside CUPTI at an abort went uncounted before). (How many are still
/// in CUPTI depends on when its last periodic flush was; collector/collect/drain.rs's
/// `records_in_flight_when_a_producer_is_killed_are_counted` pins the arithmetic.)
#[test]
fn a_program_that_ends_abruptly_loses_no_kernel_silently() {
    let scratch = Scratch::new("abrupt");
    let normal = kernels_of_a_normal_run(&scratch);
    assert_eq!(normal, 107);
    // The three runs at once: they are independent sessions.
    let runs: Vec<_> = [("abort", 134), ("kill", 137), ("exit", 3)]
        .into_iter()
        .map(|(how, status)| {
            let out = scratch.join(how);
            let run = TimedChild::spawn(
                record(&out, &["--end-by", how, "--linger-ms", "300"]),
                LIMIT,
            );
            (how, status, out, run)
        })
        .collect();
    for (how, status, out, run) in runs {
        let o = run.wait();
        // The program's own status, or 3 for a program that exited 0 when the
        // session is incomplete.
        assert_eq!(code(&o), Some(status), "{how}: {}", o.stderr);
        assert!(o.stdout.starts_with(SUMMARY), "{how}: {}", o.stdout);
        let r = report_json(&out);
        let kernels = r["kernel_count"].as_u64().unwrap();
        let markers = session_records(&out)
            .iter()
            .filter(|(_, r)| matches!(r, wire::Record::Marker(_)))
            .count() as u64;
        let undelivered = dropped(&r, "undelivered");
        let unwritten = dropped(&r, "unwritten");
        // Kernels and NVTX markers still in CUPTI are counted exactly; records out of
        // CUPTI but not yet in the ring may be either or neither, so with some in
        // flight the count is bounded from both sides.
        let made = normal + NORMAL_MARKERS;
        if unwritten == 0 {
            assert_eq!(kernels + markers + undelivered, made, "{how}: {r}");
        } else {
            assert!(kernels + markers + undelivered <= made, "{how}: {r}");
            assert!(
                kernels + markers + undelivered + unwritten >= made,
                "{how}: {r}"
            );
        }
        let pid = r["unfinished"][0].as_u64().expect("an unfinished process");
        let in_cupti = if unwritten > 0 {
            String::new()
        } else {
            let m = NORMAL_MARKERS - markers;
            let and_markers = if m > 0 {
                format!(" and {m} NVTX markers")
            } else {
                String::new()
            };
            format!("{} kernels{and_markers}", undelivered - m)
        };
        assert!(
            undelivered + unwritten == 0
                || o.stderr.contains(&format!(
                "{in_cupti} never left CUPTI, {unwritten} records were not written to the ring\n"
            )),
            "{how}: {}",
            o.stderr
        );
        assert!(
            undelivered + unwritten == 0
                || o.stderr.contains(&format!(
                    "gpuprof: process {pid} ended before its records were delivered: "
                )),
            "{how}: {}",
            o.stderr
        );
        if status == 3 {
            assert!(o
                .stderr
                .ends_with("gpuprof: the session is incomplete (see above); exit status 3\n"));
        }
    }
}

/// GPUPROF_EXIT_TIMEOUT_MS=0: the exit handler does not wait for the writer; what it
/// had not written is counted.
#[test]
fn an_exit_timeout_of_zero_counts_what_it_loses() {
    let scratch = Scratch::new("timeout0");
    let normal = kernels_of_a_normal_run(&scratch);
    let out = scratch.join("out");
    let mut cmd = record(&out, &[]);
    cmd.env("GPUPROF_EXIT_TIMEOUT_MS", "0");
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(o.stdout.starts_with(SUMMARY), "{}", o.stdout);
    let r = report_json(&out);
    let kernels = r["kernel_count"].as_u64().unwrap();
    let lost = dropped(&r, "undelivered") + dropped(&r, "unwritten");
    if r["unfinished"].as_array().unwrap().is_empty() {
        // The writer won the race: a complete stream.
        assert_eq!(
            (kernels, lost, code(&o)),
            (normal, 0, Some(0)),
            "{}",
            o.stderr
        );
    } else {
        assert_eq!(code(&o), Some(3), "{}", o.stderr);
        // Undelivered kernels are exact; unwritten records may be kernels or not.
        assert!(kernels + dropped(&r, "undelivered") <= normal, "{r}");
        assert!(kernels + lost >= normal, "{r}");
    }
}

/// /dev/shm of 8 MiB (a private mount namespace; needs root): the 64 MiB ring does
/// not fit, a 4 MiB one is taken and said so; the program and its profile are whole.
/// With 128 KiB not even the smallest ring fits: profiling is off with one warning.
#[test]
fn a_small_dev_shm_gives_a_smaller_ring_never_a_fault() {
    if !can_mount_privately("a_small_dev_shm_gives_a_smaller_ring_never_a_fault") {
        return;
    }
    let scratch = Scratch::new("small-shm");
    for (size, fits) in [("8m", true), ("128k", false)] {
        let out = scratch.join(size);
        let cmd = in_private_mount(
            &format!("mount -t tmpfs -o size={size} tmpfs /dev/shm && exec \"$@\""),
            &record(&out, &[]),
        );
        let o = TimedChild::spawn(cmd, LIMIT).wait();
        // Without a ring nothing is profiled: exit status 4, the process named.
        assert_eq!(
            code(&o),
            Some(if fits { 0 } else { 4 }),
            "{size}: {}",
            o.stderr
        );
        assert!(o.stdout.starts_with(SUMMARY), "{size}: {}", o.stdout);
        let pids = unprofiled_pids(&o.stderr);
        let warnings: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("gpuprof:") && !l.starts_with("gpuprof: session written"))
            .filter(|l| unprofiled_pids(l).is_empty() && !l.starts_with("gpuprof: the session"))
            .collect();
        assert_eq!(warnings.len(), 1, "{size}: {}", o.stderr);
        let r = report_json(&out);
        if fits {
            assert!(
                warnings[0].starts_with("gpuprof: /dev/shm/gpuprof-")
                    && warnings[0].ends_with(
                        " has no room for a ring of 64M; using 4M (more records are dropped if the collector falls behind)"
                    ),
                "{}",
                warnings[0]
            );
            assert_eq!(r["kernel_count"], 107);
            for source in [
                "cupti",
                "channel",
                "ring",
                "undelivered",
                "unwritten",
                "unsaved",
            ] {
                assert_eq!(dropped(&r, source), 0, "{source}");
            }
        } else {
            assert!(
                warnings[0].contains("cannot create the ring")
                    && warnings[0].contains("No space left on device")
                    && warnings[0].ends_with("profiling is off, the program runs unprofiled"),
                "{}",
                warnings[0]
            );
            assert_eq!(pids.len(), 1, "{}", o.stderr);
            assert!(o
                .stderr
                .ends_with(&unprofiled_lines(&pids, warnings[0], true)));
            assert_eq!(r["kernel_count"], 0);
        }
    }
}

/// A ring truncated to 0 bytes while both sides have it mapped: neither the program
/// nor the collector faults; the program says how many of its records were lost and
/// runs on unprofiled; the collector stops reading the ring and says the session is
/// incomplete. Truncated to its header alone, the collector says so too (it called it
/// "a stale or forged ring"). The session holds the loss: `report` names it under
/// "Session damage" (how many records: unknown) and exits 3.
#[test]
fn a_ring_truncated_while_live_faults_neither_side() {
    for size in [0, wire::ring::HEADER_SIZE as u64] {
        let o = truncated_run(size);
        assert_eq!(code(&o.run), Some(3), "{size}: {}", o.run.stderr);
        assert!(o.run.stdout.starts_with(SUMMARY_40), "{}", o.run.stdout);
        let stderr = &o.run.stderr;
        assert!(
            stderr.contains(&format!(
                "gpuprof: {} was truncated by another process; profiling is off, the program runs unprofiled\n",
                o.ring.display()
            )),
            "{size}: {stderr}"
        );
        assert!(!stderr.contains("stale or forged"), "{size}: {stderr}");
        let collector_says = if size == 0 {
            "truncated while it was read; its records are lost".to_string()
        } else {
            format!(
                "another process truncated {} to {size} bytes; what the process made after \
                 that is lost",
                o.ring.display()
            )
        };
        assert!(stderr.contains(&collector_says), "{size}: {stderr}");
        assert!(stderr.contains(" records of this process were lost with its truncated ring "));
        let report = report_of(&o.out);
        assert_eq!(code(&report), Some(3), "{size}: {}", report.stderr);
        assert!(
            report
                .stdout
                .lines()
                .any(|l| l.starts_with("  lost, uncounted: ") && l.contains(&collector_says)),
            "{size}: {}",
            report.stdout
        );
        assert!(
            report
                .stderr
                .lines()
                .any(|l| l.contains(": records lost, uncounted: ") && l.contains(&collector_says)),
            "{size}: {}",
            report.stderr
        );
        assert!(
            shm_dirs_of(o.gpuprof).is_empty(),
            "ring directory left behind"
        );
    }
}

/// `record` of the LLM workload whose ring the test truncates to `size` bytes while
/// both sides have it mapped, between its prefill and its decode steps.
struct Truncated {
    run: Finished,
    out: PathBuf,
    /// Holds `out` until the test is done with it.
    _scratch: Scratch,
    ring: PathBuf,
    gpuprof: u32,
}

/// Whether ring `path` has had its read position at its write position for `time`.
fn drained_for(path: &Path, time: Duration) -> bool {
    let positions = || -> Option<(u64, u64)> {
        let mut header = vec![0u8; wire::ring::HEADER_SIZE];
        std::io::Read::read_exact(&mut std::fs::File::open(path).ok()?, &mut header).ok()?;
        let at = |off: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                header.get(off..off + 8)?.try_into().ok()?,
            ))
        };
        Some((
            at(wire::ring::OFF_WRITE_POS)?,
            at(wire::ring::OFF_READ_POS)?,
        ))
    };
    let Some(first) = positions().filter(|(w, r)| w == r) else {
        return false;
    };
    std::thread::sleep(time);
    positions() == Some(first)
}

fn truncated_run(size: u64) -> Truncated {
    let scratch = Scratch::new("truncated");
    let out = scratch.join("out");
    let flag = scratch.join("truncated");
    // The program waits for the test to truncate its ring before its decode steps.
    let mut cmd = record(&out, &["--decode-steps", "40"]);
    cmd.env("CUDARC_LLM_WAIT_FOR", &flag);
    let run = TimedChild::spawn(cmd, LIMIT);
    let gpuprof = run.id();
    let ring = live_ring(gpuprof);
    // Some frames first, so both sides have used the mapping; then all of them read
    // (for 100 ms), so that what the collector meets is the truncation, not a frame
    // it was reading when the file was cut (a race the test would otherwise lose
    // now and then, the collector then rightly saying "truncated while it was read").
    std::thread::sleep(Duration::from_millis(300));
    wait_for("the collector to read the ring up to its producer", || {
        drained_for(&ring, Duration::from_millis(100))
    });
    std::fs::OpenOptions::new()
        .write(true)
        .open(&ring)
        .unwrap()
        .set_len(size)
        .unwrap();
    std::fs::write(&flag, "").unwrap();
    Truncated {
        run: run.wait(),
        out,
        _scratch: scratch,
        ring,
        gpuprof,
    }
}

/// The first SIGTERM to `gpuprof record` goes to the program, which shuts down its
/// own way; record waits for it and exits with its status. Nothing is left running.
#[test]
fn sigterm_to_record_is_passed_to_the_program() {
    let scratch = Scratch::new("sigterm");
    let out = scratch.join("out");
    let ready = scratch.join("ready");
    let script = format!(
        "trap 'echo terminated; exit 7' TERM; echo $$ > {r}.tmp; mv {r}.tmp {r}; while :; do sleep 0.05; done",
        r = ready.display()
    );
    let mut cmd = gpuprof_command();
    cmd.arg("record")
        .arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c", &script]);
    let run = TimedChild::spawn(cmd, LIMIT);
    wait_for("the program to start", || ready.exists());
    let program: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
    let o = run.wait();
    assert_eq!(code(&o), Some(7), "{}", o.stderr);
    assert_eq!(o.stdout.lines().next(), Some("terminated"), "{}", o.stdout);
    assert!(!alive(program as u32), "the program {program} still runs");
}

/// A ring file that names a live process that is not its producer (pid 1) is read
/// until it is found out, then left: the session ends when the program does. Its
/// header's counts (1000 kernels still in CUPTI) are not believed; nor is a header of
/// a process that has exited claiming 10^18 records never written.
#[test]
fn a_forged_ring_does_not_hold_the_session_open() {
    use std::sync::atomic::Ordering::Relaxed;
    let scratch = Scratch::new("forged");
    let forged = scratch.join("ring-1.ring");
    let dead = dead_pid();
    let claims = scratch.join(format!("ring-{dead}.ring"));
    for (path, pid, launches, produced) in
        [(&forged, 1, 1000, 0), (&claims, dead, 0, 10u64.pow(18))]
    {
        let mut w = wire::ring::RingWriter::create(path, 4096, pid).unwrap();
        w.try_write(&wire::encode_batch(&[]).unwrap()).unwrap();
        w.tally().launches.store(launches, Relaxed);
        w.tally().produced.store(produced, Relaxed);
        std::mem::forget(w);
    }
    let out = scratch.join("out");
    let mut cmd = gpuprof_command();
    cmd.arg("record").arg("-o").arg(&out).args([
        "--",
        "sh",
        "-c",
        &format!(
            "cp {} {} \"$GPUPROF_SESSION_DIR\"/; echo planted",
            forged.display(),
            claims.display()
        ),
    ]);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.stdout.lines().next(), Some("planted"));
    assert_eq!(code(&o), Some(3), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("gpuprof: process 1 runs but does not map ")
            && o.stderr.contains(
                "ring-1.ring: not its producer (a stale or forged ring); stopped reading it, its \
                 header's counts not believed\n"
            ),
        "{}",
        o.stderr
    );
    let claim = format!(
        "gpuprof: process {dead}: its ring's header claims 0 kernels and 0 NVTX markers still \
         in CUPTI and 1000000000000000000 records not written to the ring, more than a process \
         can hold \
         ({} and {}): not counted\n",
        wire::ring::MAX_IN_CUPTI,
        wire::ring::MAX_UNWRITTEN
    );
    assert!(o.stderr.contains(&claim), "{}", o.stderr);
    let r = report_json(&out);
    for source in ["ring", "undelivered", "unwritten"] {
        assert_eq!(dropped(&r, source), 0, "{source}");
    }
}

/// Env-var-only mode with a collector that exits at once: one warning, nothing left
/// in /dev/shm, the program's output and status unchanged.
#[test]
fn a_collector_that_cannot_start_leaves_nothing_behind() {
    let scratch = Scratch::new("no-collector");
    for (collector, out) in [
        ("/bin/true", scratch.join("out-true")),
        // An output directory that cannot be made: the real collector fails.
        (
            artifact("gpuprof").to_str().unwrap(),
            PathBuf::from("/dev/null/out"),
        ),
    ] {
        let mut cmd = SimCommand::new(Command::new(artifact("cudarc-llm")))
            .cupti("13.4")
            .injected(gpuprof_tests::Injection::Driver)
            .command();
        cmd.env("GPUPROF_COLLECTOR", collector)
            .env("GPUPROF_OUT", &out);
        let run = TimedChild::spawn(cmd, LIMIT);
        let pid = run.id();
        let o = run.wait();
        assert_eq!(code(&o), Some(0), "{collector}: {}", o.stderr);
        assert_eq!(o.stdout, SUMMARY);
        let ours: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("gpuprof: ") && !l.starts_with("gpuprof: error: "))
            .collect();
        assert_eq!(
            ours,
            [format!(
                "gpuprof: cannot start the collector {collector}: it exited during start-up (its error is on stderr, unless that is a pipe); profiling is off, the program runs unprofiled"
            )],
            "{}",
            o.stderr
        );
        assert!(shm_dirs_of(pid).is_empty(), "{collector}: left in /dev/shm");
    }
}

/// `unshare -m sh -c SCRIPT sh INNER...`: `script` runs in a private mount namespace
/// with `inner`'s program and arguments as `"$@"`, and `inner`'s environment only.
fn in_private_mount(script: &str, inner: &Command) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", script, "sh"])
        .arg(inner.get_program())
        .args(inner.get_args());
    cmd.env_clear();
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd
}

/// Whether this test process may mount a private tmpfs (root, unshare(1)); says why
/// not.
fn can_mount_privately(test: &str) -> bool {
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"])
        .output();
    let ok = probe.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        gpuprof_tests::skip(
            test,
            &format!(
                "cannot mount a private tmpfs (needs root and unshare(1)): {:?}",
                probe.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            ),
        );
    }
    ok
}

/// The output file system fills (a 96 KiB tmpfs: the 64 KiB reserve file, and less
/// than a part of the run's 15 tables needs, a page per file): the part that does
/// not fit is removed, its records counted in a last part written in the reserve's
/// room; the session reads without damage, the program's output is unchanged, record
/// exits 3.
#[test]
fn a_full_disk_for_the_session_is_counted_in_the_session() {
    if !can_mount_privately("a_full_disk_for_the_session_is_counted_in_the_session") {
        return;
    }
    let scratch = Scratch::new("disk-full");
    let disk = scratch.join("disk");
    std::fs::create_dir(&disk).unwrap();
    let report = scratch.join("report.json");
    let cmd = in_private_mount(
        &format!(
            "mount -t tmpfs -o size=96k tmpfs {d} || exit 99; \"$@\"; rc=$?; \
             {gpuprof} report --format json {d}/out > {r}; echo report=$? >&2; exit $rc",
            d = disk.display(),
            gpuprof = artifact("gpuprof").display(),
            r = report.display()
        ),
        &record(&disk.join("out"), &[]),
    );
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(code(&o), Some(3), "{}", o.stderr);
    assert!(o.stdout.starts_with(SUMMARY), "{}", o.stdout);
    assert!(o.stderr.contains(" is full ("), "{}", o.stderr);
    let unsaved: u64 = o
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("gpuprof: ")?
                .strip_suffix(" records could not be written to the session")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no count of unsaved records: {}", o.stderr));
    assert!(unsaved > 0);
    assert!(o.stderr.contains("report=0\n"), "{}", o.stderr);
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).expect("report JSON");
    assert_eq!(dropped(&r, "unsaved"), unsaved, "{r}");
    assert!(r.get("session_damage").is_none_or(|d| d.is_null()), "{r}");
    let kernels = r["kernel_count"].as_u64().unwrap();
    assert!(kernels < 107);
    // The summary line says what the session holds, and the end of each process's
    // stream is in it (owed to the last part with the drop counts).
    let summary = o
        .stderr
        .lines()
        .find(|l| l.starts_with("gpuprof: session written to "))
        .unwrap_or_else(|| panic!("no summary line: {}", o.stderr));
    assert!(
        summary.contains(&format!(" process, {kernels} kernels, ")),
        "{summary} / {kernels}"
    );
    let processes = r["processes"].as_array().unwrap();
    assert!(!processes.is_empty());
    assert!(processes.iter().all(|p| p["finished"] == true), "{r}");
    assert_eq!(r["unfinished"], serde_json::json!([]), "{r}");
}

/// Env-var-only mode with the collector stopped (SIGSTOP) mid-run: the program never
/// waits for it beyond its exit timeout, its output and status are unchanged; once the
/// collector runs again it writes the session, every loss counted, and leaves nothing
/// in /dev/shm.
#[test]
fn a_stopped_collector_never_holds_up_the_program() {
    let scratch = Scratch::new("stopped-collector");
    let out = scratch.join("out");
    let mut cmd = SimCommand::new(Command::new(artifact("cudarc-llm")))
        .cupti("13.4")
        .injected(gpuprof_tests::Injection::Driver)
        .command();
    let flag = scratch.join("stopped");
    cmd.env("GPUPROF_OUT", &out)
        .env("GPUPROF_COLLECTOR", artifact("gpuprof"))
        .env("GPUPROF_RING_SIZE", "16K")
        .env("GPUPROF_EXIT_TIMEOUT_MS", "1000")
        .env("CUDARC_LLM_WAIT_FOR", &flag)
        .args(["--decode-steps", "40"]);
    let run = TimedChild::spawn(cmd, LIMIT);
    let program = run.id();
    let mut collector = None;
    wait_for("the collector's pid", || {
        collector = shm_dirs_of(program).iter().find_map(|d| {
            std::fs::read_to_string(d.join("collector.pid"))
                .ok()?
                .trim()
                .parse::<i32>()
                .ok()
        });
        collector.is_some()
    });
    let collector = collector.unwrap();
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(collector, libc::SIGSTOP) };
    std::fs::write(&flag, "").unwrap();
    let started = Instant::now();
    let o = run.wait();
    let took = started.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(collector, libc::SIGCONT) };
    assert_eq!(code(&o), Some(0), "{}", o.stderr);
    assert_eq!(o.stdout, SUMMARY_40);
    assert!(took < Duration::from_secs(60), "the program took {took:?}");
    wait_for("the collector to finish", || !alive(collector as u32));
    assert!(shm_dirs_of(program).is_empty(), "left in /dev/shm");
    let r = report_json(&out);
    let lost: u64 = [
        "cupti",
        "channel",
        "ring",
        "undelivered",
        "unwritten",
        "unsaved",
    ]
    .iter()
    .map(|s| dropped(&r, s))
    .sum();
    let kernels = r["kernel_count"].as_u64().unwrap();
    assert!(lost > 0, "a 16K ring with nobody draining it fills: {r}");
    assert!(kernels + lost >= 863, "{r}");
}

/// A live ring whose header is overwritten with garbage (its write position far
/// ahead): the collector stops reading it and tells the producer so through the
/// header; the program stops profiling with one warning instead of filling the ring
/// and waiting for space at exit, and its output and status are unchanged.
#[test]
fn a_ring_corrupted_while_live_is_given_up_on_both_sides() {
    use std::os::unix::fs::FileExt;
    let scratch = Scratch::new("corrupted");
    let out = scratch.join("out");
    let flag = scratch.join("corrupted");
    let mut cmd = record(&out, &["--decode-steps", "40"]);
    cmd.env("CUDARC_LLM_WAIT_FOR", &flag)
        .env("GPUPROF_RING_SIZE", "256K");
    let run = TimedChild::spawn(cmd, LIMIT);
    let gpuprof = run.id();
    let ring = live_ring(gpuprof);
    let file = std::fs::OpenOptions::new().write(true).open(&ring).unwrap();
    // The write position (header offset 128), a terabyte ahead; again and again for
    // a while, as the producer writes its own value back with its next frame.
    for _ in 0..60 {
        let _ = file.write_at(&(1u64 << 40).to_le_bytes(), 128);
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&flag, "").unwrap();
    let o = run.wait();
    assert_eq!(code(&o), Some(3), "{}", o.stderr);
    assert!(o.stdout.starts_with(SUMMARY_40), "{}", o.stdout);
    assert!(
        o.stderr.contains("is not within one capacity"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!(
            "gpuprof: the collector stopped reading {} (its own output says why: a damaged ring, or it was stopped); profiling is off, the program runs unprofiled\n",
            ring.display()
        )),
        "{}",
        o.stderr
    );
    assert!(
        shm_dirs_of(gpuprof).is_empty(),
        "ring directory left behind"
    );
}

/// Row: one flipped bit in a ring's frame made a 2 µs kernel last 9.8 hours (GPU
/// time and MFU changed, exit 0). A batch ends with its CRC-32C: the frame is skipped
/// and named, the other frames are read, and the session is incomplete (exit 3).
#[test]
fn a_flipped_bit_in_a_ring_frame_is_skipped_and_named() {
    use wire::testing::{k, process, string};
    let pid = dead_pid();
    let dir = wire::session_dir::make_ring_dir(std::process::id()).unwrap();
    let ring = dir.join(wire::session_dir::ring_file_name(pid));
    let first = wire::encode_batch(&[
        process(pid, "./app"),
        string(1, "gemm"),
        k(1, 1, 1_000, 3_000),
    ])
    .unwrap();
    let second = wire::encode_batch(&[k(1, 2, 4_000, 6_000)]).unwrap();
    {
        let mut w = wire::ring::RingWriter::create(&ring, 4096, pid).unwrap();
        w.try_write(&first).unwrap();
        w.try_write(&second).unwrap();
        w.finish();
        std::mem::forget(w);
    }
    // A bit of the second kernel's end time: the frame's second 4-byte length, its
    // payload's last record.
    let at = wire::ring::HEADER_SIZE + 4 + first.len() + 4 + second.len() - 6;
    let mut bytes = std::fs::read(&ring).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(&ring, &bytes).unwrap();
    let scratch = Scratch::new("flipped-frame");
    let out = scratch.join("out");
    let mut cmd = gpuprof_command();
    cmd.arg("collect")
        .arg("--session-dir")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .arg("--owner-pid")
        .arg(pid.to_string());
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code(&o), Some(3), "{}", o.stderr);
    let skipped = format!(
        "gpuprof: process {pid}: skipped a frame of {} bytes that does not decode: checksum \
         mismatch (stored ",
        second.len()
    );
    assert!(o.stderr.contains(&skipped), "{}", o.stderr);
    let r = report_json(&out);
    assert_eq!(r["kernel_count"], 1, "{r}");
    assert_eq!(r["kernel_ns"], 2_000, "{r}");
}

/// `gpuprof report SESSION` (the table), run to its end.
fn report_of(session: &Path) -> Finished {
    let mut cmd = gpuprof_command();
    cmd.arg("report").arg(session);
    TimedChild::spawn(cmd, LIMIT).wait()
}
