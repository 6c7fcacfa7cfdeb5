//! The data path at scale: what a session costs on disk and what reading it costs.
//!
//!   gpuprof-bench scale --gpuprof BIN [--kernels N,N,..] [--counter-every N]
//!                       [--mem-limit-gb N] [--duckdb-python PY]
//!       sessions from the generator (`gpuprof-bench session`), 10^5, 10^6 and 10^7
//!       kernels by default: bytes per kernel, then `gpuprof report --format json`,
//!       `pprof`, `roofline`, `trace` (Perfetto) and the Kineto export (plain and
//!       gzipped) on each, and with PY (a Python with the duckdb module), from the
//!       same Parquet files on one thread, DuckDB's per-kernel group-by (`duckdb`)
//!       and the SQL docs/SESSION.md gives for the report's whole kernel table
//!       (`duckdb.doc`: views, peaks, kernel query), the two baselines each row's
//!       last columns divide by;
//!   gpuprof-bench recorded --gpuprof BIN --workload BIN --sim-dir DIR
//!                          [--decode-steps N] [--mem-limit-gb N]
//!       `gpuprof record` of the LLM workload (`cudarc-llm`) on the simulated stack
//!       (4750 decode steps: about 10^5 kernels): the session's bytes per kernel, per
//!       table, record's peak RSS, then report and trace on it.
//!
//! Each command runs as a child: its wall time, kernels per second, and its peak RSS
//! (`ru_maxrss` from `wait4`: the largest of the child and the children it waited
//! for). Children run with their address space limited (`RLIMIT_AS`, by default
//! three quarters of the machine's memory) so that a command that needs more fails
//! on its own, "out of memory", instead of taking the machine with it.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{session, sizes};

/// A child's run.
struct Run {
    wall: f64,
    /// User and system CPU seconds of the child (and the children it waited for).
    cpu: f64,
    max_rss_kib: u64,
    /// Why it failed, if it did.
    failed: Option<String>,
}

/// The machine's memory, bytes (`MemTotal`).
fn mem_total() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").context("/proc/meminfo")?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no MemTotal in /proc/meminfo")?;
    Ok(kib * 1024)
}

fn mem_limit(args: &[String]) -> Result<u64> {
    match crate::flag::<f64>(args, "--mem-limit-gb")? {
        Some(gb) if gb > 0.0 => Ok((gb * (1u64 << 30) as f64) as u64),
        Some(gb) => bail!("--mem-limit-gb {gb}: needs a positive number"),
        None => Ok(mem_total()? / 4 * 3),
    }
}

/// Runs `cmd` (stdout discarded, stderr to `log`) with its address space limited to
/// `limit` bytes, and waits for it with `wait4`.
fn measured(cmd: &mut Command, limit: u64, log: &Path) -> Result<Run> {
    cmd.stdout(Stdio::null())
        .stderr(File::create(log).with_context(|| format!("{}", log.display()))?);
    let rlimit = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: the closure runs in the child between fork and exec; it only calls
    // setrlimit (async-signal-safe) with a value copied in, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // SAFETY: setrlimit reads the rlimit it is given, which lives on this stack.
            if libc::setrlimit(libc::RLIMIT_AS, &rlimit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let started = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is a C struct of integers, for which all zero bytes is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child and nothing else waits for it (`child` is never
        // waited on, and dropping a Child does not wait); both pointers are to locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
    let wall = started.elapsed().as_secs_f64();
    drop(child);
    let failed = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        None
    } else {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let how = if libc::WIFSIGNALED(status) {
            format!("signal {}", libc::WTERMSIG(status))
        } else {
            format!("exit {}", libc::WEXITSTATUS(status))
        };
        Some(if text.contains("memory allocation of") {
            format!("out of memory ({how})")
        } else {
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            format!("{how}: {last}")
        })
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Run {
        wall,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        failed,
    })
}

fn mib(kib: u64) -> String {
    if kib >= 1 << 20 {
        format!("{:.1} GiB", kib as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} MiB", kib >> 10)
    }
}

/// The per-kernel table of `report` (launches, total, mean, min and max duration by
/// process and kernel name) as DuckDB computes it from the same Parquet parts, one
/// thread: the baseline the analysis is measured against.
const DUCKDB_SQL: &str = "SET threads = 1; \
    CREATE TABLE per_kernel AS SELECT pid, name, count(*) AS launches, \
    sum(end_ns - start_ns) AS total_ns, avg(end_ns - start_ns) AS mean_ns, \
    min(end_ns - start_ns) AS min_ns, max(end_ns - start_ns) AS max_ns \
    FROM read_parquet('{dir}/parts/*/kernels.parquet') GROUP BY pid, name; \
    SELECT count(*) FROM per_kernel;";

/// The SQL blocks of docs/SESSION.md ("Reading a session with SQL"): the tables as
/// views (with `'DIR'` for the session), the peaks, the report's kernel table, the
/// roofline. The kernel table is what `report` computes for its table (medians,
/// standard deviations, the common launch configuration), joined as the report
/// joins it: the second baseline.
const SESSION_DOC: &str = include_str!("../../../docs/SESSION.md");

/// The first three ```sql blocks of [`SESSION_DOC`] (views, peaks, kernel table).
fn documented_kernel_sql() -> Result<[String; 3]> {
    let mut blocks = gpuprof_tests::sql_blocks(SESSION_DOC)
        .map_err(|e| anyhow::anyhow!("docs/SESSION.md: {e}"))?;
    let firsts: Vec<&str> = blocks.iter().filter_map(|b| b.lines().next()).collect();
    if firsts.get(..3)
        != Some(&[
            "-- The session's tables as views.",
            "-- Peaks, FLOP/s and bytes/s.",
            "-- Kernels by GPU time.",
        ])
    {
        bail!("docs/SESSION.md's SQL blocks are not views, peaks, kernels: {firsts:?}");
    }
    blocks.truncate(3);
    Ok(blocks.try_into().expect("three blocks"))
}

/// Where a DuckDB script named `name` leaves its query's seconds.
fn seconds_file(name: &str) -> String {
    format!("{name}-seconds")
}

/// The commands measured on a session in `dir`, each as (name, program, arguments):
/// gpuprof's `report`, `pprof`, `roofline`, Perfetto `trace` and the Kineto export
/// (plain and `--gzip`), then, when `python` (with the duckdb module) is given,
/// DuckDB's per-kernel group-by and the documented SQL of the report's kernel table.
fn commands(
    gpuprof: &Path,
    python: Option<&Path>,
    dir: &Path,
) -> Vec<(&'static str, PathBuf, Vec<String>)> {
    let d = dir.display().to_string();
    let out = |name: &str| dir.join(name).display().to_string();
    let g = |args: Vec<String>| (gpuprof.to_path_buf(), args);
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let mut all = vec![
        ("report", g(s(&["report", &d, "--format", "json"]))),
        ("pprof", g(s(&["pprof", &d, "-o", &out("profile.pb.gz")]))),
        (
            "roofline",
            g(s(&["roofline", &d, "-o", &out("roofline.svg")])),
        ),
        (
            "trace",
            g(s(&["trace", &d, "-o", &out("trace.perfetto-trace")])),
        ),
        (
            "kineto",
            g(s(&[
                "trace",
                &d,
                "--format",
                "kineto",
                "-o",
                &out("kineto"),
            ])),
        ),
        (
            "kineto.gz",
            g(s(&[
                "trace",
                &d,
                "--format",
                "kineto",
                "--gzip",
                "-o",
                &out("kineto"),
            ])),
        ),
    ];
    if let Some(py) = python {
        // The query's own time goes to a file: Python's start-up is not DuckDB's.
        let sql = DUCKDB_SQL.replace("{dir}", &d);
        let script = format!(
            "import duckdb, time\nc = duckdb.connect()\nt = time.perf_counter()\n\
             c.execute({sql:?}).fetchall()\n\
             open({:?}, 'w').write(str(time.perf_counter() - t))\n",
            out(&seconds_file("duckdb"))
        );
        all.push(("duckdb", (py.to_path_buf(), s(&["-c", &script]))));
        // The documented SQL of the report's whole kernel table: views, peaks and the
        // query, timed together, on one thread.
        match documented_kernel_sql() {
            Err(e) => eprintln!("scale: no duckdb.doc row: {e:#}"),
            Ok([views, peaks, kernels]) => {
                let views = views.replace("'DIR'", &format!("'{}'", d.replace('\'', "''")));
                let script = format!(
                    "import duckdb, time\nc = duckdb.connect()\nc.execute('SET threads = 1')\n\
                 t = time.perf_counter()\nc.execute({views:?})\nc.execute({peaks:?})\n\
                 c.sql({kernels:?}).fetchall()\n\
                 open({:?}, 'w').write(str(time.perf_counter() - t))\n",
                    out(&seconds_file("duckdb.doc"))
                );
                all.push(("duckdb.doc", (py.to_path_buf(), s(&["-c", &script]))));
            }
        }
    }
    all.into_iter().map(|(n, (p, a))| (n, p, a)).collect()
}

/// Each of [`commands`] on the session in `dir` of `kernels` kernels: a row each of
/// wall time (DuckDB's: its query's, without Python's start-up), kernels per second,
/// CPU time (user and system; DuckDB's: its query's wall time, on one thread) in all
/// and per kernel, peak RSS, and wall and CPU time over DuckDB's.
fn read_commands(
    gpuprof: &Path,
    python: Option<&Path>,
    dir: &Path,
    kernels: u64,
    limit: u64,
) -> Result<Vec<String>> {
    let mut runs = Vec::new();
    for (name, program, args) in commands(gpuprof, python, dir) {
        let log = dir.join(format!("{name}.log"));
        let mut run = measured(Command::new(program).args(args), limit, &log)?;
        if name.starts_with("duckdb") && run.failed.is_none() {
            // The query alone, on one thread: its wall time is its CPU time. Its
            // peak RSS stays the whole process's.
            let text = std::fs::read_to_string(dir.join(seconds_file(name))).unwrap_or_default();
            match text.trim().parse::<f64>() {
                Ok(secs) => (run.wall, run.cpu) = (secs, secs),
                Err(_) => run.failed = Some("no query time written".into()),
            }
        }
        for f in [
            "profile.pb.gz",
            "roofline.svg",
            "roofline.csv",
            "roofline.json",
            "trace.perfetto-trace",
        ] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let _ = std::fs::remove_dir_all(dir.join("kineto"));
        runs.push((name, run));
    }
    let baseline = |of: &str| {
        runs.iter()
            .find(|(n, r)| *n == of && r.failed.is_none())
            .map(|(_, r)| (r.wall, r.cpu))
    };
    let (duckdb, documented) = (baseline("duckdb"), baseline("duckdb.doc"));
    Ok(runs
        .iter()
        .map(|(name, run)| {
            let vs = |base: Option<(f64, f64)>| {
                let x = |of: f64, d: f64| format!("{:.1}x", of / d);
                base.map_or(("-".into(), "-".into()), |(w, c)| {
                    (x(run.wall, w), x(run.cpu, c))
                })
            };
            let ((wall_vs, cpu_vs), (doc_wall_vs, doc_cpu_vs)) = (vs(duckdb), vs(documented));
            let how = run
                .failed
                .as_ref()
                .map_or(String::new(), |why| format!("  (failed: {why})"));
            format!(
                "{:>10} {:>8.2} {:>11.0} {:>7.2} {:>7.2} {:>10} {:>6} {:>6} {:>6} {:>6}{how}",
                name,
                run.wall,
                kernels as f64 / run.wall,
                run.cpu,
                run.cpu * 1e6 / kernels as f64,
                mib(run.max_rss_kib),
                wall_vs,
                cpu_vs,
                doc_wall_vs,
                doc_cpu_vs
            )
        })
        .collect())
}

/// The header of [`read_commands`]' rows.
fn header() -> String {
    format!(
        "{:>10} {:>8} {:>11} {:>7} {:>7} {:>10} {:>13} {:>13}",
        "command",
        "wall s",
        "kernels/s",
        "CPU s",
        "µs/k",
        "peak RSS",
        "vs DuckDB w/c",
        "vs doc SQL"
    )
}

/// A directory of ours under the temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Result<Scratch> {
        let d = std::env::temp_dir().join(format!("gpuprof-bench-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        Ok(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let gpuprof: PathBuf = crate::flag(args, "--gpuprof")?.context("--gpuprof BIN is required")?;
    let list: String =
        crate::flag(args, "--kernels")?.unwrap_or_else(|| "100000,1000000,10000000".into());
    let sizes_wanted: Vec<u64> = list
        .split(',')
        .map(|s| s.trim().parse::<u64>().ok().filter(|n| *n > 0))
        .collect::<Option<_>>()
        .with_context(|| format!("--kernels {list}: needs positive numbers separated by commas"))?;
    let every: u64 = crate::flag(args, "--counter-every")?.unwrap_or(10);
    if every == 0 {
        bail!("--counter-every 0: needs a positive number");
    }
    let limit = mem_limit(args)?;
    let scratch = Scratch::new("scale")?;
    println!(
        "scale: generated LLM-serving sessions (gpuprof-bench session, counters on {} of \
         a kernel); commands limited to {:.1} GiB of address space",
        session::every_nth(every),
        limit as f64 / (1u64 << 30) as f64
    );
    let python: Option<PathBuf> = crate::flag(args, "--duckdb-python")?;
    if python.is_none() {
        println!("  (no --duckdb-python: DuckDB's baseline is not run)");
    }
    println!(
        "  {:>9} {:>7} {:>9} {}",
        "kernels",
        "gen s",
        "B/kernel",
        header()
    );
    for n in sizes_wanted {
        let dir = scratch.0.join(n.to_string());
        let g = session::generate(&dir, n, every, 1)?;
        let s = sizes::measure(&dir)?;
        let rows = read_commands(&gpuprof, python.as_deref(), &dir, g.kernels, limit)?;
        for (i, row) in rows.iter().enumerate() {
            if i == 0 {
                println!(
                    "  {:>9} {:>7.1} {:>9.2} {row}",
                    g.kernels,
                    g.seconds,
                    s.per_kernel()
                );
            } else {
                println!("  {:>9} {:>7} {:>9} {row}", "", "", "");
            }
        }
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

pub fn recorded(args: &[String]) -> Result<()> {
    let need = |name: &str| -> Result<PathBuf> {
        crate::flag::<PathBuf>(args, name)?.with_context(|| format!("{name} is required"))
    };
    let gpuprof = need("--gpuprof")?;
    let workload = need("--workload")?;
    let sim = need("--sim-dir")?;
    let steps: u64 = crate::flag(args, "--decode-steps")?.unwrap_or(4750);
    let limit = mem_limit(args)?;
    let scratch = Scratch::new("recorded")?;
    let dir = scratch.0.join("session");
    let on_sim = |cmd: &mut Command| {
        cmd.env("LD_LIBRARY_PATH", &sim)
            .env("GPUPROF_CUPTI_LIB", sim.join("libcupti.so.13"));
    };
    let steps_arg = steps.to_string();
    let mut plain = Command::new(&workload);
    plain.args(["--decode-steps", &steps_arg]);
    on_sim(&mut plain);
    let alone = measured(&mut plain, limit, &scratch.0.join("workload.log"))?;
    let mut rec = Command::new(&gpuprof);
    rec.arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&workload)
        .args(["--decode-steps", &steps_arg]);
    on_sim(&mut rec);
    let run = measured(&mut rec, limit, &scratch.0.join("record.log"))?;
    if let Some(why) = alone.failed.or(run.failed) {
        bail!(
            "the workload on the simulated stack failed: {why} (logs were in {})",
            scratch.0.display()
        );
    }
    let s = sizes::measure(&dir)?;
    println!(
        "recorded: gpuprof record of cudarc-llm --decode-steps {steps} on the simulated H100 \
         (default counters: the first 64 launches of each kernel)"
    );
    println!(
        "  gpuprof record: {:.1} s, peak RSS {} (the larger of gpuprof and the program; the \
         program unprofiled: {}, {:.1} s)",
        run.wall,
        mib(run.max_rss_kib),
        mib(alone.max_rss_kib),
        alone.wall
    );
    sizes::print(&s, false);
    println!("  {:>9} {:>9} {}", "kernels", "B/kernel", header());
    let python: Option<PathBuf> = crate::flag(args, "--duckdb-python")?;
    for (i, row) in read_commands(&gpuprof, python.as_deref(), &dir, s.kernels, limit)?
        .iter()
        .enumerate()
    {
        if i == 0 {
            println!("  {:>9} {:>9.2} {row}", s.kernels, s.per_kernel());
        } else {
            println!("  {:>9} {:>9} {row}", "", "");
        }
    }
    Ok(())
}
