//! End-to-end sessions on the simulated CUDA stack: real programs profiled through every
//! way in (`gpuprof record`, env-var-only `CUDA_INJECTION64_PATH`, `LD_PRELOAD`), both
//! CUPTI majors, multi-process programs, CUDA graphs, and the failure paths of
//! docs/SESSION.md and the design's "guest" rules (a collector that dies, no CUPTI, a
//! ring too small for the launch rate, another CUPTI subscriber in the process).
//!
//! Every program runs with a clean environment (no inherited `LD_LIBRARY_PATH`,
//! `LD_PRELOAD`, `CUDA_*`, `GPUPROF_*`, `SIM*`, `NVTX_*`), a hard time limit, and is
//! killed if the test lets go of it. Output goes to files, not pipes: in env-var-only
//! mode the collector the library starts inherits the program's stdout and stderr and
//! outlives it, and a pipe reader would wait for it without a deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, compile_c, cudarc_llm_calls, cupti_major, gpuprof_command, kernel_calls,
    manifest_release, record_session_on_sim as record, report_json, shm_dirs_of, sim_cupti,
    sim_lib_dir, unprofiled_lines, unprofiled_pids, venv_python, Injection, Scratch, SimCommand,
    TimedChild,
};

const LIMIT: Duration = Duration::from_secs(180);

/// The cudarc client's summary with its default shape (tests/tests/it/sim/clients.rs).
const CUDARC_SUMMARY: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";

fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads/python")
        .join(name)
}

/// A program whose stdout and stderr go to files; killed and reaped on drop.
struct Run {
    child: Option<Child>,
    deadline: Instant,
    what: String,
    stdout: PathBuf,
    stderr: PathBuf,
}

/// How a [`Run`] ended, and what it (and anything sharing its output) wrote so far.
#[derive(Debug)]
struct Ended {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Starts `cmd` with output in `dir/<name>.stdout` and `.stderr`.
    fn spawn(mut cmd: Command, dir: &Path, name: &str) -> Run {
        let what = format!("{cmd:?}");
        let stdout = dir.join(format!("{name}.stdout"));
        let stderr = dir.join(format!("{name}.stderr"));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("create stdout file"))
            .stderr(File::create(&stderr).expect("create stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        Run {
            child: Some(child),
            deadline: Instant::now() + LIMIT,
            what,
            stdout,
            stderr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("child").id()
    }

    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_some())
    }

    fn stderr_now(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the exit; panics (after killing it) when the limit passes.
    fn wait(mut self) -> Ended {
        let mut child = self.child.take().expect("child");
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break s;
            }
            if Instant::now() >= self.deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} did not finish in time; killed. stderr:\n{}",
                    self.what,
                    self.stderr_now()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Ended {
            status,
            stdout: std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.stderr).unwrap_or_default(),
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls `cond` until it holds; panics with `what` (and `detail()`) at the deadline.
fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is a live process (a zombie counts as gone: the detached collector
/// is reparented, and whoever reaps it is not us).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` is `gpuprof collect ... --owner-pid <owner>`.
fn is_collector_of(pid: u32, owner: u32) -> bool {
    let args = cmdline(pid);
    args.first().is_some_and(|a| a.ends_with("gpuprof"))
        && args.iter().any(|a| a == "collect")
        && args
            .windows(2)
            .any(|w| w[0] == "--owner-pid" && w[1] == owner.to_string())
}

/// Live `gpuprof collect` processes started for `owner`.
fn collectors_of(owner: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| is_collector_of(*pid, owner) && alive(*pid))
                .collect()
        })
        .unwrap_or_default()
}

/// Sends SIGKILL to `pid` (with `kill(1)`: the test crate has no libc).
fn sigkill(pid: u32) {
    let mut cmd = Command::new("kill");
    cmd.args(["-KILL", &pid.to_string()]);
    let _ = TimedChild::spawn(cmd, Duration::from_secs(10)).wait();
}

/// Kills, on drop, any collector still running for the owner pid: the detached
/// collector of env-var-only mode is not our child, so nothing else would.
struct CollectorGuard(u32);

impl Drop for CollectorGuard {
    fn drop(&mut self) {
        for pid in collectors_of(self.0) {
            sigkill(pid);
        }
    }
}

fn session_line(out: &Path, processes: usize, kernels: u64, dropped: u64) -> String {
    format!(
        "gpuprof: session written to {o} ({processes} process{s}, {kernels} kernels, {dropped} dropped); gpuprof report {o}\n",
        o = out.display(),
        s = if processes == 1 { "" } else { "es" },
    )
}

fn trace_json(out: &Path, file: &Path) -> serde_json::Value {
    let mut cmd = gpuprof_command();
    cmd.arg("trace")
        .arg(out)
        .args(["--format", "chrome", "-o"])
        .arg(file);
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(o.status.success(), "gpuprof trace: {}", o.stderr);
    serde_json::from_slice(&std::fs::read(file).expect("trace file")).expect("trace JSON")
}

fn dropped_total(v: &serde_json::Value) -> u64 {
    v["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .map(|d| d["records"].as_u64().expect("records"))
        .sum()
}

/// Lines of `stderr` from gpuprof other than the collector's closing "session written"
/// line.
fn gpuprof_warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.starts_with("gpuprof:")
                && !l.starts_with("gpuprof: session written to ")
                && unprofiled_pids(l).is_empty()
                && !l.starts_with("gpuprof: the session holds")
        })
        .collect()
}

/// How a program is profiled without `gpuprof record`.
/// `program` in env-var-only mode: the variable of `mode`, `GPUPROF_OUT=out`, the
/// simulated stack (`lib_dir`) on the loader path and, with `release`, the simulated
/// CUPTI named by `GPUPROF_CUPTI_LIB` impersonating it. Runs in `cwd`.
fn env_only(
    program: &Path,
    args: &[&str],
    mode: Injection,
    release: Option<&str>,
    lib_dir: &Path,
    out: &Path,
    cwd: &Path,
) -> Command {
    let mut sim = SimCommand::new(Command::new(program))
        .libraries(lib_dir)
        .injected(mode);
    if let Some(r) = release {
        sim = sim.cupti(r);
    }
    let mut cmd = sim.command();
    cmd.args(args).current_dir(cwd).env("GPUPROF_OUT", out);
    cmd
}

/// Runs the cudarc client in env-var-only `mode` and waits until its collector has
/// written the session and exited. Returns the client's pid, how it ended, and what
/// the shared stderr held once the collector was done.
fn cudarc_env_only(
    scratch: &Scratch,
    mode: Injection,
    release: Option<&str>,
) -> (u32, Ended, String) {
    let out = scratch.join("out");
    let cwd = scratch.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let cmd = env_only(
        &artifact("cudarc-llm"),
        &[],
        mode,
        release,
        &sim_lib_dir(),
        &out,
        &cwd,
    );
    let run = Run::spawn(cmd, scratch.path(), "client");
    let pid = run.pid();
    let _guard = CollectorGuard(pid);
    let stderr_file = scratch.join("client.stderr");
    let ended = run.wait();
    let session = out.join("parts/00000001/manifest.json");
    wait_until(
        "the env-var-only collector to write the session and exit",
        LIMIT,
        || {
            session.is_file()
                && std::fs::read_to_string(&stderr_file)
                    .is_ok_and(|s| s.contains("gpuprof: session written to "))
                && collectors_of(pid).is_empty()
        },
    );
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    (pid, ended, stderr)
}

// ---------------------------------------------------------------------------------
// 1. Multi-process

#[test]
fn multiprocess_python_program_under_record() {
    let scratch = Scratch::new("e2e-multiproc");
    let out = scratch.join("out");
    let python = venv_python();
    let script = workload("multiproc.py");
    let cmd = record(&out, "13.4", &[], &[python.as_os_str(), script.as_os_str()]);
    let run = Run::spawn(cmd, scratch.path(), "record");
    let pid = run.pid();
    let ended = run.wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    let launched: Vec<&str> = ended
        .stdout
        .lines()
        .filter(|l| l.starts_with("multiproc: pid "))
        .collect();
    assert_eq!(launched.len(), 5, "{}", ended.stdout);
    assert!(
        ended.stderr.ends_with(&session_line(&out, 5, 125, 0)),
        "{}",
        ended.stderr
    );
    assert_eq!(gpuprof_warnings(&ended.stderr), Vec::<&str>::new());
    assert_eq!(
        shm_dirs_of(pid),
        Vec::<PathBuf>::new(),
        "ring directory left"
    );

    let v = report_json(&out);
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 5, "{v:#}");
    assert_eq!(
        kernel_calls(&v),
        BTreeMap::from([
            ("parent_kernel".to_string(), 25),
            ("worker_kernel".to_string(), 100)
        ])
    );
    assert_eq!(v["kernel_count"], 125);
    assert_eq!(dropped_total(&v), 0, "{:#}", v["dropped"]);
    for p in procs {
        assert_eq!(p["finished"], true, "{p:#}");
        assert_eq!(p["known"], true, "{p:#}");
        assert_eq!(p["kernels"], 25, "{p:#}");
        assert_eq!(p["cupti_layouts"], "13.4", "{p:#}");
    }
    assert_eq!(v["unfinished"], serde_json::json!([]));
    // One parent, four workers started by it (their command lines say so).
    let parents = procs
        .iter()
        .filter(|p| {
            p["command"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a.as_str().unwrap().ends_with("multiproc.py"))
        })
        .count();
    assert_eq!(parents, 1, "{v:#}");
}

// ---------------------------------------------------------------------------------
// 2. Env-var-only mode

#[test]
fn env_var_only_mode_starts_its_own_collector() {
    let scratch = Scratch::new("e2e-env-only");
    let out = scratch.join("out");
    let (pid, ended, stderr) = cudarc_env_only(&scratch, Injection::Driver, None);
    assert_eq!(ended.status.code(), Some(0), "{stderr}");
    assert_eq!(ended.stdout, CUDARC_SUMMARY);
    assert_eq!(stderr, session_line(&out, 1, 107, 0));
    assert_eq!(
        shm_dirs_of(pid),
        Vec::<PathBuf>::new(),
        "ring directory left"
    );
    // Nothing else in the output directory, nothing in the working directory.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["index.json", "parts"]);
    assert_eq!(std::fs::read_dir(scratch.join("cwd")).unwrap().count(), 0);

    let v = report_json(&out);
    assert_eq!(kernel_calls(&v), cudarc_llm_calls());
    assert_eq!(v["kernel_count"], 107);
    assert_eq!(v["processes"].as_array().unwrap().len(), 1);
    assert_eq!(v["processes"][0]["pid"], pid);
    assert_eq!(v["processes"][0]["finished"], true);
    assert_eq!(v["processes"][0]["cupti_layouts"], "13.4");
    assert_eq!(dropped_total(&v), 0);
}

// ---------------------------------------------------------------------------------
// 3. CUDA graphs

#[test]
fn graph_replays_are_attributed_per_node() {
    let scratch = Scratch::new("e2e-graphs");
    let out = scratch.join("out");
    let python = venv_python();
    let script = workload("llm_driver.py");
    let cmd = record(&out, "13.4", &[], &[python.as_os_str(), script.as_os_str()]);
    let run = Run::spawn(cmd, scratch.path(), "record");
    let pid = run.pid();
    let ended = run.wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended.stdout.starts_with(
            "llm_driver: ok: 2 layers, prompt 128, 4 decode steps (graph replays): 24 launches captured or issued, "
        ),
        "{}",
        ended.stdout
    );
    assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());

    // Prefill: 2 layers x 6 launches; decode: 2 layers x 6 kernels, replayed 4 times.
    let v = report_json(&out);
    assert_eq!(
        kernel_calls(&v),
        BTreeMap::from([
            ("rms_norm_kernel".to_string(), 4 + 4 * 4),
            ("flash_fwd_kernel".to_string(), 2),
            ("paged_attention_v1_kernel".to_string(), 2 * 4),
            ("silu_and_mul_kernel".to_string(), 2 + 2 * 4),
            ("add_residual_kernel".to_string(), 4 + 4 * 4),
        ])
    );
    assert_eq!(v["kernel_count"], 12 + 48);
    assert_eq!(dropped_total(&v), 0);

    let t = trace_json(&out, &scratch.join("t.json"));
    let events = t["traceEvents"].as_array().unwrap();
    let graph_launches: BTreeSet<u64> = events
        .iter()
        .filter(|e| e["cat"] == "cuda_api" && e["name"] == "cuGraphLaunch")
        .map(|e| e["args"]["correlation_id"].as_u64().unwrap())
        .collect();
    assert_eq!(graph_launches.len(), 4, "cuGraphLaunch calls in the trace");
    let kernels: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "kernel").collect();
    assert_eq!(kernels.len(), 60);
    // Per replay (graph launch correlation id): the node ids of its kernels.
    let mut replays: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for k in &kernels {
        let corr = k["args"]["correlation_id"].as_u64().unwrap();
        let node = k["args"]["graph_node_id"].as_u64().unwrap();
        let graph = k["args"]["graph_id"].as_u64().unwrap();
        if graph_launches.contains(&corr) {
            assert_ne!(node, 0, "replayed kernel without a graph node id: {k}");
            assert_ne!(graph, 0, "replayed kernel without a graph id: {k}");
            replays.entry(corr).or_default().push(node);
        } else {
            assert_eq!(
                (graph, node),
                (0, 0),
                "a kernel outside the graph launches carries graph ids: {k}"
            );
        }
    }
    assert_eq!(
        replays.keys().copied().collect::<BTreeSet<u64>>(),
        graph_launches,
        "every graph launch's correlation id is on its kernels"
    );
    let node_sets: Vec<BTreeSet<u64>> = replays
        .values()
        .map(|nodes| {
            assert_eq!(nodes.len(), 12, "kernels per replay");
            let set: BTreeSet<u64> = nodes.iter().copied().collect();
            assert_eq!(set.len(), 12, "distinct nodes per replay: {nodes:?}");
            set
        })
        .collect();
    assert!(
        node_sets.windows(2).all(|w| w[0] == w[1]),
        "replays ran different nodes: {node_sets:?}"
    );
    // The decode kernels by name, per replay: the same 12 every time.
    let names_of = |corr: u64| -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for k in kernels
            .iter()
            .filter(|k| k["args"]["correlation_id"].as_u64() == Some(corr))
        {
            *m.entry(k["name"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
        m
    };
    for corr in &graph_launches {
        assert_eq!(
            names_of(*corr),
            BTreeMap::from([
                ("add_residual_kernel".to_string(), 4),
                ("paged_attention_v1_kernel".to_string(), 2),
                ("rms_norm_kernel".to_string(), 4),
                ("silu_and_mul_kernel".to_string(), 2),
            ])
        );
    }
}

// ---------------------------------------------------------------------------------
// 4. Both injection modes, both CUPTI majors

#[test]
fn same_kernels_under_every_mode_and_cupti_major() {
    for release in ["12.9", "13.4"] {
        let scratch = Scratch::new(&format!("e2e-modes-record-{release}"));
        let out = scratch.join("out");
        let client = artifact("cudarc-llm");
        let run = Run::spawn(
            record(&out, release, &[], &[client.as_os_str()]),
            scratch.path(),
            "record",
        );
        let pid = run.pid();
        let ended = run.wait();
        assert_eq!(ended.status.code(), Some(0), "{release}: {}", ended.stderr);
        assert!(
            ended.stdout.starts_with(CUDARC_SUMMARY),
            "{release}: {}",
            ended.stdout
        );
        assert_eq!(
            ended.stderr,
            session_line(&out, 1, 107, 0),
            "record, CUPTI {release}"
        );
        assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());
        let v = report_json(&out);
        assert_eq!(
            kernel_calls(&v),
            cudarc_llm_calls(),
            "record, CUPTI {release}"
        );
        assert_eq!(v["processes"][0]["cupti_layouts"], release);
        assert_eq!(v["processes"][0]["finished"], true);
    }
    for release in ["12.9", "13.4"] {
        let scratch = Scratch::new(&format!("e2e-modes-preload-{release}"));
        let out = scratch.join("out");
        let (pid, ended, stderr) = cudarc_env_only(&scratch, Injection::Preload, Some(release));
        assert_eq!(ended.status.code(), Some(0), "{release}: {stderr}");
        assert_eq!(ended.stdout, CUDARC_SUMMARY, "LD_PRELOAD, CUPTI {release}");
        assert_eq!(
            stderr,
            session_line(&out, 1, 107, 0),
            "LD_PRELOAD, CUPTI {release}"
        );
        assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());
        let v = report_json(&out);
        assert_eq!(
            kernel_calls(&v),
            cudarc_llm_calls(),
            "LD_PRELOAD, CUPTI {release}"
        );
        assert_eq!(v["processes"][0]["cupti_layouts"], release);
        assert_eq!(v["processes"][0]["finished"], true);
    }
}

// ---------------------------------------------------------------------------------
// 5. Failure paths

/// (a) The collector of an env-var-only session is SIGKILLed while the program runs:
/// the program finishes normally and leaves nothing in tmpfs.
#[test]
fn collector_killed_mid_run() {
    let scratch = Scratch::new("e2e-collector-killed");
    let out = scratch.join("out");
    let cwd = scratch.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let cmd = env_only(
        &artifact("cudarc-llm"),
        &["--decode-steps", "200"],
        Injection::Driver,
        Some("13.4"),
        &sim_lib_dir(),
        &out,
        &cwd,
    );
    let mut run = Run::spawn(cmd, scratch.path(), "client");
    let pid = run.pid();
    let _guard = CollectorGuard(pid);

    // The ring directory is /dev/shm/gpuprof-<program pid>-<n>, and the collector
    // writes its pid there.
    let mut collector = None;
    wait_until("the collector's pid in the ring directory", LIMIT, || {
        collector = shm_dirs_of(pid).iter().find_map(|d| {
            std::fs::read_to_string(d.join("collector.pid"))
                .ok()?
                .trim()
                .parse::<u32>()
                .ok()
        });
        collector.is_some() || run.exited()
    });
    let collector = collector.unwrap_or_else(|| {
        panic!(
            "the program exited before a collector was seen; stderr:\n{}",
            run.stderr_now()
        )
    });
    assert!(
        is_collector_of(collector, pid),
        "collector.pid names {collector}, which is not `gpuprof collect --owner-pid {pid}`: {:?}",
        cmdline(collector)
    );
    assert!(
        !run.exited(),
        "the program ended before the collector could be killed; make the run longer"
    );
    sigkill(collector);
    wait_until("the collector to die", LIMIT, || !alive(collector));
    assert!(
        !run.exited(),
        "the program ended before the collector died; the kill was not mid-run"
    );

    let ended = run.wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended
            .stdout
            .starts_with("cudarc-llm: ok: 2 layers, prompt 128, 200 decode steps: "),
        "{}",
        ended.stdout
    );
    assert_eq!(ended.stdout.lines().count(), 1, "{}", ended.stdout);
    assert_eq!(
        shm_dirs_of(pid),
        Vec::<PathBuf>::new(),
        "the producer must delete its ring (and the directory) when the collector is dead"
    );
    // Design, section 2: "a collector that dies mid-run: one clear warning, the app
    // runs on unprofiled".
    let warnings = gpuprof_warnings(&ended.stderr);
    assert!(
        warnings.len() == 1 && warnings[0].contains("collector"),
        "expected exactly one gpuprof warning about the dead collector; stderr was:\n{}",
        ended.stderr
    );
}

/// A directory with the simulated driver, cuBLAS and NVTX but no libcupti.
fn lib_dir_without_cupti(scratch: &Scratch) -> PathBuf {
    let dir = scratch.join("lib");
    std::fs::create_dir_all(&dir).unwrap();
    let sim = sim_lib_dir();
    let mut n = 0;
    for e in std::fs::read_dir(&sim).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains("cupti") {
            continue;
        }
        let target = std::fs::read_link(e.path()).unwrap_or_else(|_| e.path());
        std::os::unix::fs::symlink(target, dir.join(&name)).unwrap();
        n += 1;
    }
    assert!(dir.join("libcuda.so.1").exists() && n >= 6, "{n} links");
    dir
}

/// (b) No CUPTI anywhere: one warning, the program runs unprofiled, and `record` still
/// passes the exit code through and writes an empty session.
#[test]
fn no_cupti_found() {
    let scratch = Scratch::new("e2e-no-cupti");
    let lib = lib_dir_without_cupti(&scratch);
    let cwd = scratch.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();

    // Env-var-only: no collector is started for a process that cannot be traced.
    let out = scratch.join("out-env");
    let cmd = env_only(
        &artifact("cudarc-llm"),
        &[],
        Injection::Driver,
        None,
        &lib,
        &out,
        &cwd,
    );
    let run = Run::spawn(cmd, scratch.path(), "env-only");
    let pid = run.pid();
    let _guard = CollectorGuard(pid);
    let ended = run.wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, CUDARC_SUMMARY);
    let lines: Vec<&str> = ended.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", ended.stderr);
    assert!(
        lines[0].starts_with("gpuprof: ") && lines[0].contains("CUPTI"),
        "{}",
        ended.stderr
    );
    assert!(!out.exists(), "a collector ran for an untraceable process");
    assert_eq!(collectors_of(pid), Vec::<u32>::new());
    assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);

    // Under record, with a failing exit code of the command around the client.
    for (script_tail, code) in [("", 0), (" && exit 3", 3)] {
        let out = scratch.join(format!("out-record-{code}"));
        let client = artifact("cudarc-llm");
        let script = format!("'{}'{script_tail}", client.display());
        let mut cmd = gpuprof_command();
        cmd.arg("record")
            .arg("-o")
            .arg(&out)
            .args(["--", "sh", "-c", &script])
            .current_dir(&cwd)
            .env("LD_LIBRARY_PATH", &lib);
        let run = Run::spawn(cmd, scratch.path(), &format!("record-{code}"));
        let pid = run.pid();
        let ended = run.wait();
        // The program ran GPU work and none was profiled: exit status 4 in place of
        // its success.
        let want = if code == 0 { 4 } else { code };
        assert_eq!(ended.status.code(), Some(want), "{}", ended.stderr);
        assert!(ended.stdout.starts_with(CUDARC_SUMMARY), "{}", ended.stdout);
        let warnings = gpuprof_warnings(&ended.stderr);
        assert_eq!(warnings.len(), 1, "{}", ended.stderr);
        assert!(warnings[0].contains("CUPTI"), "{}", ended.stderr);
        let pids = unprofiled_pids(&ended.stderr);
        assert_eq!(pids.len(), 1, "{}", ended.stderr);
        let tail = session_line(&out, 0, 0, 0) + &unprofiled_lines(&pids, warnings[0], code == 0);
        assert!(ended.stderr.ends_with(&tail), "{}", ended.stderr);
        assert!(out.join("parts").is_dir());
        assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());
        let v = report_json(&out);
        assert_eq!(v["kernel_count"], 0);
        assert_eq!(v["kernels"], serde_json::json!([]));
        assert_eq!(dropped_total(&v), 0);
    }
}

/// (c) A 4K ring under a flood of 20000 launches: the program is never blocked and
/// completes; every record is either in the session or counted as dropped.
#[test]
fn tiny_ring_under_a_launch_flood() {
    const LAUNCHES: u64 = 20_000;
    let flood = compile_c("launch_flood.c", "launch_flood", &["-O2"]);
    let scratch = Scratch::new("e2e-flood");
    let out = scratch.join("out");
    let n = LAUNCHES.to_string();
    let mut cmd = record(
        &out,
        "13.4",
        &["--ring-size", "4K"],
        &[flood.as_os_str(), n.as_ref()],
    );
    // Launch and kernel records only, so every record lost is one of the two.
    cmd.env("GPUPROF_COUNTERS", "off");
    cmd.env("GPUPROF_API", "off");
    let run = Run::spawn(cmd, scratch.path(), "record");
    let pid = run.pid();
    let ended = run.wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);
    assert!(
        ended
            .stdout
            .starts_with(&format!("launches={LAUNCHES} loop_ns=")),
        "{}",
        ended.stdout
    );
    assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());

    let v = report_json(&out);
    let kernels = v["kernel_count"].as_u64().unwrap();
    let dropped = dropped_total(&v);
    assert!(dropped > 0, "a 4K ring held 20000 launches: {v:#}");
    assert!(kernels < LAUNCHES, "{kernels}");
    assert_eq!(
        kernel_calls(&v).keys().collect::<Vec<_>>(),
        ["tiny_elementwise_kernel"]
    );
    // Every launch produces two records, its Launch (callback API) and its Kernel
    // (activity API); each of them is either in the session or counted as dropped.
    let t = trace_json(&out, &scratch.join("t.json"));
    let launches = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "cuda_api")
        .count() as u64;
    assert_eq!(
        kernels + launches + dropped,
        2 * LAUNCHES,
        "kernels {kernels} + launch records {launches} + dropped {dropped}"
    );
    assert!(
        ended
            .stderr
            .ends_with(&session_line(&out, 1, kernels, dropped)),
        "{}",
        ended.stderr
    );
}

// ---------------------------------------------------------------------------------
// 6. A second CUPTI user in the process

fn second_subscriber() -> PathBuf {
    let rel = manifest_release("13.4");
    let includes: Vec<String> = rel
        .include_dirs
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    let args: Vec<&str> = includes.iter().map(String::as_str).collect();
    compile_c("second_subscriber.c", "second_subscriber", &args)
}

/// The program subscribes to CUPTI before cuInit, so before gpuprof starts. CUPTI
/// 12.9 allows one subscriber: the program keeps its callbacks, gpuprof says who holds
/// CUPTI and stays off. CUPTI 13.4 allows several when all ask: both work.
#[test]
fn second_cupti_subscriber() {
    let program = second_subscriber();
    for (release, api, kernels) in [("12.9", "v1", 0u64), ("13.4", "v2", 10)] {
        let scratch = Scratch::new(&format!("e2e-second-subscriber-{release}"));
        let out = scratch.join("out");
        let cupti = sim_cupti(cupti_major(release));
        let cmd = record(
            &out,
            release,
            &[],
            &[program.as_os_str(), cupti.as_os_str(), api.as_ref()],
        );
        let run = Run::spawn(cmd, scratch.path(), "record");
        let pid = run.pid();
        let ended = run.wait();
        // Under 12.9 nothing was profiled: exit status 4.
        let want = if kernels == 0 { 4 } else { 0 };
        assert_eq!(
            ended.status.code(),
            Some(want),
            "{release}: {}",
            ended.stderr
        );
        assert!(
            ended.stdout.starts_with(&format!(
                "second_subscriber: subscribed ({api})\nsecond_subscriber: 10 launches, 10 launch callbacks\n"
            )),
            "CUPTI {release}: the program's own callbacks: {}",
            ended.stdout
        );
        assert_eq!(shm_dirs_of(pid), Vec::<PathBuf>::new());
        let warnings = gpuprof_warnings(&ended.stderr);
        let v = report_json(&out);
        if kernels == 0 {
            assert_eq!(
                warnings,
                ["gpuprof: CUPTI is already in use by another CUPTI client, which does not share it \
                  (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)); profiling is off, the program runs \
                  unprofiled"],
                "CUPTI {release}: {}",
                ended.stderr
            );
            let pids = unprofiled_pids(&ended.stderr);
            assert_eq!(pids.len(), 1, "{}", ended.stderr);
            assert!(
                ended
                    .stderr
                    .ends_with(&unprofiled_lines(&pids, warnings[0], true)),
                "{}",
                ended.stderr
            );
            assert_eq!(v["kernel_count"], 0, "CUPTI {release}");
        } else {
            assert_eq!(
                warnings,
                Vec::<&str>::new(),
                "CUPTI {release}: {}",
                ended.stderr
            );
            assert_eq!(
                kernel_calls(&v),
                BTreeMap::from([("second_subscriber_kernel".to_string(), 10)]),
                "CUPTI {release}"
            );
            assert_eq!(v["processes"][0]["finished"], true);
        }
        let session = session_line(&out, usize::from(kernels > 0), kernels, 0);
        assert!(
            ended.stderr.contains(&session),
            "CUPTI {release}: {}",
            ended.stderr
        );
        let after = &ended.stderr[ended.stderr.find(&session).unwrap() + session.len()..];
        if kernels > 0 {
            assert_eq!(after, "", "CUPTI {release}");
        }
    }
}
