//! `gpuprof record` and `gpuprof collect` with stand-in producers: the profiled
//! program `fake_producer` (`tests/src/bin/fake_producer.rs`) writes rings with the
//! real `RingWriter` the way libgpuprof.so does. Exit codes, signals, several
//! processes, producers that die, a full small ring, and nothing left on tmpfs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use gpuprof_tests::{artifact, gpuprof_command, Scratch};

const SCENARIO: &str = "COLLECTOR_TEST_SCENARIO";
const NOTES: &str = "COLLECTOR_TEST_NOTES";

// ---------------------------------------------------------------- helpers

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A child process killed (and reaped) on drop, waited for with a deadline. Its
/// output must fit in the pipes (a report does).
struct Running(Option<Child>);

impl Running {
    fn new(child: Child) -> Running {
        Running(Some(child))
    }

    fn id(&self) -> u32 {
        self.0.as_ref().expect("running").id()
    }

    fn wait(mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        let child = self.0.as_mut().expect("running");
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        self.0.take().expect("running").wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The stand-in profiled program (`tests/src/bin/fake_producer.rs`).
fn producer_args() -> Vec<String> {
    vec![artifact("fake_producer").display().to_string()]
}

/// `gpuprof record -o OUT -- <this binary as producer>`, started.
fn record(scratch: &Scratch, scenario: &str, extra: &[&str], wrap: Option<&str>) -> Running {
    let notes = scratch.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let mut cmd = gpuprof_command();
    cmd.arg("record")
        .arg("-o")
        .arg(scratch.join("out"))
        .args(extra)
        .arg("--");
    let producer = producer_args();
    match wrap {
        // A shell that ignores SIGINT, then becomes the producer (ignored stays
        // ignored across exec), with its output away from gpuprof's pipes: it outlives
        // gpuprof, and the test reads those pipes to their end.
        Some(shell) => cmd
            .args([
                "sh",
                "-c",
                &format!("{shell}; exec \"$@\" >/dev/null 2>&1"),
                "sh",
            ])
            .args(&producer),
        None => cmd.args(&producer),
    };
    cmd.env(SCENARIO, scenario)
        .env(NOTES, &notes)
        .env("GPUPROF_LIB", std::env::current_exe().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Running::new(cmd.spawn().unwrap())
}

/// The notes each producer left: (pid, session dir, injection path, ring size).
fn notes(scratch: &Scratch) -> Vec<(u32, String, String, String)> {
    let mut v: Vec<_> = std::fs::read_dir(scratch.join("notes"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
        .map(|e| {
            let pid = e
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".txt")
                .parse()
                .unwrap();
            let t = std::fs::read_to_string(e.path()).unwrap();
            let l: Vec<&str> = t.lines().collect();
            (
                pid,
                l[0].to_string(),
                l[1].to_string(),
                l.get(2).unwrap_or(&"").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Whether a `wait` producer has written all its records.
fn ready(scratch: &Scratch) -> bool {
    std::fs::read_dir(scratch.join("notes"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".ready"))
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ring directories a collector with `pid` may have made.
fn shm_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("gpuprof-{pid}-");
    ["/dev/shm"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn report_json(session: &Path) -> serde_json::Value {
    let out = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(session)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn code(s: &ExitStatus) -> Option<i32> {
    s.code()
}

const LIMIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- record

#[test]
fn record_passes_the_exit_code_and_cleans_up() {
    let scratch = Scratch::new("drain-exit3");
    let run = record(&scratch, "exit3", &["--ring-size", "4K"], None);
    let gpuprof_pid = run.id();
    let out = run.wait(LIMIT);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out.status), Some(3), "{stderr}");
    let n = notes(&scratch);
    assert_eq!(n.len(), 1);
    let (pid, ring_dir, lib, ring_size) = &n[0];
    assert!(
        ring_dir.starts_with(&format!("/dev/shm/gpuprof-{gpuprof_pid}-")),
        "{ring_dir}"
    );
    assert_eq!(lib, &std::env::current_exe().unwrap().display().to_string());
    assert_eq!(ring_size, "4K");
    assert!(!Path::new(ring_dir).exists(), "{ring_dir} left behind");
    assert!(shm_dirs_of(gpuprof_pid).is_empty());
    let out_dir = scratch.join("out");
    assert_eq!(
        stderr.lines().last().unwrap(),
        format!(
            "gpuprof: session written to {o} (1 process, 50 kernels, 10 dropped); gpuprof report {o}",
            o = out_dir.display()
        )
    );
    // The report on stdout, after the producer's own test-harness lines.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("  pid {pid}: fake-producer exit3\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("Kernels by GPU time (50 kernels, 2.500 µs)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  channel            3\n  ring               7\n  undelivered        0\n  unwritten          0\n  unsaved            0\n"),
        "{stdout}"
    );
    // 50 kernels in 4 KiB of ring: the collector kept up through many wrap-arounds.
    let v = report_json(&out_dir);
    assert_eq!(v["kernels"][0]["calls"], 50);
    assert_eq!(v["unfinished"], serde_json::json!([]));
}

#[test]
fn record_follows_every_process_of_the_program() {
    let scratch = Scratch::new("drain-parent");
    let run = record(&scratch, "parent", &[], None);
    let out = run.wait(LIMIT);
    assert_eq!(code(&out.status), Some(0), "{}", text(&out.stderr));
    assert_eq!(notes(&scratch).len(), 3);
    let v = report_json(&scratch.join("out"));
    assert_eq!(v["processes"].as_array().unwrap().len(), 3);
    assert_eq!(v["kernel_count"], 150);
    assert!(
        text(&out.stderr).contains("(3 processes, 150 kernels, 30 dropped)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn record_reports_a_producer_that_died_and_passes_its_signal() {
    let scratch = Scratch::new("drain-die");
    let out = record(&scratch, "die", &[], None).wait(LIMIT);
    assert_eq!(code(&out.status), Some(128 + 9), "{}", text(&out.stderr));
    let pid = notes(&scratch)[0].0;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "gpuprof: process {pid} ended without finishing its stream\n"
        )),
        "{stderr}"
    );
    let v = report_json(&scratch.join("out"));
    assert_eq!(v["kernel_count"], 50);
    assert_eq!(v["unfinished"], serde_json::json!([pid]));
    assert!(!Path::new(&notes(&scratch)[0].1).exists());
}

/// A producer killed with records in flight: the ring header's tally counts them.
#[test]
fn records_in_flight_when_a_producer_is_killed_are_counted() {
    let scratch = Scratch::new("drain-tally");
    let out = record(&scratch, "tally", &[], None).wait(LIMIT);
    assert_eq!(code(&out.status), Some(128 + 9), "{}", text(&out.stderr));
    let pid = notes(&scratch)[0].0;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "gpuprof: process {pid} ended before its records were delivered: 20 kernels never left CUPTI, 15 records were not written to the ring\n"
        )),
        "{stderr}"
    );
    let v = report_json(&scratch.join("out"));
    assert_eq!(v["kernel_count"], 50);
    let dropped: Vec<(String, u64)> = v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_string(),
                d["records"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        dropped,
        [
            ("cupti", 0),
            ("channel", 0),
            ("ring", 0),
            ("undelivered", 20),
            ("unwritten", 15),
            ("unsaved", 0)
        ]
        .map(|(s, n)| (s.to_string(), n))
    );
    assert!(
        stderr.contains("(1 process, 50 kernels, 35 dropped)"),
        "{stderr}"
    );
}

#[test]
fn record_passes_a_termination_signal_as_128_plus_n() {
    let scratch = Scratch::new("drain-signal");
    let out = record(&scratch, "signal", &[], None).wait(LIMIT);
    assert_eq!(code(&out.status), Some(128 + 15), "{}", text(&out.stderr));
}

#[test]
fn sigint_to_gpuprof_is_forwarded_to_the_program() {
    let scratch = Scratch::new("drain-sigint");
    let run = record(&scratch, "wait", &[], None);
    let gpuprof_pid = run.id();
    wait_for("the producer", LIMIT, || ready(&scratch));
    Command::new("kill")
        .args(["-INT", &gpuprof_pid.to_string()])
        .status()
        .unwrap();
    let out = run.wait(LIMIT);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out.status), Some(128 + 2), "{stderr}");
    let pid = notes(&scratch)[0].0;
    assert!(
        stderr.contains(&format!(
            "gpuprof: process {pid} ended without finishing its stream\n"
        )),
        "{stderr}"
    );
    assert!(shm_dirs_of(gpuprof_pid).is_empty());
    assert_eq!(report_json(&scratch.join("out"))["kernel_count"], 50);
}

#[test]
fn second_sigint_stops_the_collector_and_keeps_what_it_has() {
    let scratch = Scratch::new("drain-sigint2");
    let run = record(&scratch, "wait", &[], Some("trap '' INT"));
    let gpuprof_pid = run.id();
    wait_for("the producer", LIMIT, || ready(&scratch));
    let producer = notes(&scratch)[0].0;
    for _ in 0..2 {
        Command::new("kill")
            .args(["-INT", &gpuprof_pid.to_string()])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = run.wait(LIMIT);
    let _ = Command::new("kill")
        .args(["-KILL", &producer.to_string()])
        .status();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out.status), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "gpuprof: process {producer} was still running when the collector stopped; its later records are lost\n"
        )),
        "{stderr}"
    );
    assert!(stderr.contains(
        "gpuprof: interrupted: the collector stopped before the program's processes finished\n"
    ));
    assert!(shm_dirs_of(gpuprof_pid).is_empty());
    assert!(
        text(&out.stdout).contains("Processes whose stream did not finish: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn record_without_a_command_or_with_a_missing_one() {
    let out = gpuprof_command().arg("record").output().unwrap();
    assert_eq!(code(&out.status), Some(2));
    assert!(text(&out.stderr)
        .starts_with("error: the following required arguments were not provided:\n  <CMD>...\n"));

    let scratch = Scratch::new("drain-missing");
    let out_dir = scratch.join("out");
    let child = gpuprof_command()
        .arg("record")
        .arg("-o")
        .arg(&out_dir)
        .args(["--", "/nonexistent/program", "arg"])
        .env("GPUPROF_LIB", std::env::current_exe().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = Running::new(child).wait(LIMIT);
    assert_eq!(code(&out.status), Some(127));
    assert_eq!(
        text(&out.stderr),
        "gpuprof: error: cannot run /nonexistent/program: No such file or directory (os error 2)\n"
    );
    assert!(!out_dir.exists(), "the output directory it made is removed");
    assert!(shm_dirs_of(pid).is_empty());
}

#[test]
fn record_refuses_bad_set_ups_before_running_anything() {
    let scratch = Scratch::new("drain-bad");
    let out = gpuprof_command()
        .args(["record", "--", "true"])
        .env("GPUPROF_LIB", "/nonexistent/libgpuprof.so")
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert_eq!(code(&out.status), Some(2));
    assert_eq!(
        text(&out.stderr),
        "gpuprof: error: GPUPROF_LIB=/nonexistent/libgpuprof.so is not a file\n"
    );

    let busy = scratch.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("x"), "").unwrap();
    let out = gpuprof_command()
        .arg("record")
        .arg("-o")
        .arg(&busy)
        .args(["--", "true"])
        .env("GPUPROF_LIB", std::env::current_exe().unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&out.status), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: the output directory {} already exists and is not empty; name another one with -o (or \
             GPUPROF_OUT)\n",
            busy.display()
        )
    );

    let out = gpuprof_command()
        .args(["record", "--ring-size", "12Q", "--", "true"])
        .env("GPUPROF_LIB", std::env::current_exe().unwrap())
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert_eq!(code(&out.status), Some(2));
    assert_eq!(
        text(&out.stderr),
        "gpuprof: error: --ring-size 12Q: not a size (bytes, or a number with K, M or G, e.g. 64M)\n"
    );
}

#[test]
fn record_output_defaults_to_gpuprof_out() {
    let scratch = Scratch::new("drain-env-out");
    let out_dir = scratch.join("from-env");
    // Without NVML's one line where there is none (collect/nvml_telemetry.rs has it).
    let out = gpuprof_command()
        .args(["record", "--no-nvml", "--", "true"])
        .env("GPUPROF_LIB", std::env::current_exe().unwrap())
        .env("GPUPROF_OUT", &out_dir)
        .output()
        .unwrap();
    assert_eq!(code(&out.status), Some(0), "{}", text(&out.stderr));
    // No records, no part; the session is there and reads.
    assert_eq!(std::fs::read_dir(out_dir.join("parts")).unwrap().count(), 0);
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: session written to {o} (0 processes, 0 kernels, 0 dropped); gpuprof report {o}\n",
            o = out_dir.display()
        )
    );
}

// ---------------------------------------------------------------- collect

/// The owner of an env-var-only session (it makes its own ring in `dir`).
fn owner(scratch: &Scratch, dir: &Path, scenario: &str) -> Child {
    let args = producer_args();
    Command::new(&args[0])
        .args(&args[1..])
        .env(SCENARIO, scenario)
        .env("GPUPROF_SESSION_DIR", dir)
        .env(NOTES, {
            let n = scratch.join("notes");
            std::fs::create_dir_all(&n).unwrap();
            n
        })
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn collect(dir: &Path, out: &Path, owner: u32) -> Running {
    Running::new(
        gpuprof_command()
            .arg("collect")
            .arg("--session-dir")
            .arg(dir)
            .arg("--out")
            .arg(out)
            .arg("--owner-pid")
            .arg(owner.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn collect_drains_until_the_owner_is_gone_and_removes_the_ring_dir() {
    let scratch = Scratch::new("collect-ok");
    let dir = scratch.join("ring-dir");
    std::fs::create_dir(&dir).unwrap();
    // As the first profiled process makes it: gpuprof removes only directories it
    // marked as its own.
    std::fs::write(dir.join(wire::session_dir::MARKER), "").unwrap();
    let mut own = owner(&scratch, &dir, "parent");
    let out_dir = scratch.join("out");
    let coll = collect(&dir, &out_dir, own.id());
    assert!(own.wait().unwrap().success());
    let out = coll.wait(LIMIT);
    assert_eq!(code(&out.status), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: session written to {o} (3 processes, 150 kernels, 30 dropped); gpuprof report {o}\n",
            o = out_dir.display()
        )
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert_eq!(report_json(&out_dir)["kernel_count"], 150);
}

#[test]
fn collect_ends_on_its_own_when_the_owner_dies() {
    let scratch = Scratch::new("collect-die");
    let dir = scratch.join("ring-dir");
    std::fs::create_dir(&dir).unwrap();
    // As the first profiled process makes it: gpuprof removes only directories it
    // marked as its own.
    std::fs::write(dir.join(wire::session_dir::MARKER), "").unwrap();
    let mut own = owner(&scratch, &dir, "die");
    let out_dir = scratch.join("out");
    let coll = collect(&dir, &out_dir, own.id());
    let pid = own.id();
    assert!(!own.wait().unwrap().success());
    let out = coll.wait(LIMIT);
    // A stream that did not end: the session is incomplete.
    assert_eq!(code(&out.status), Some(3), "{}", text(&out.stderr));
    // Records the process had counted but not delivered when it died, if any, are
    // reported first, in their own line.
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l == format!("gpuprof: process {pid} ended without finishing its stream")),
        "{stderr}"
    );
    assert!(text(&out.stderr)
        .ends_with("gpuprof: the session is incomplete (see above); exit status 3\n"));
    assert!(!dir.exists());
    assert_eq!(
        report_json(&out_dir)["unfinished"],
        serde_json::json!([pid])
    );
}

#[test]
fn collect_names_a_missing_session_dir() {
    let scratch = Scratch::new("collect-missing");
    let dir = scratch.join("nope");
    let out = collect(&dir, &scratch.join("out"), 1).wait(LIMIT);
    assert_eq!(code(&out.status), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: error: --session-dir {}: not a directory\n",
            dir.display()
        )
    );
}
