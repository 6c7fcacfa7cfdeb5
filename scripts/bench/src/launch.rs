//! Added cost per kernel launch on the application's thread: the same launch flood
//! (tests/c/launch_flood.c, timing its own launch loop in wall time and in the
//! launching thread's CPU time) on the simulated stack, three ways, in alternating
//! runs: unprofiled; under the baseline tool (scripts/bench/baseline-tool: CUPTI
//! with libgpuprof.so's subscriptions and nothing done with them); and under
//! `gpuprof record` with every hook on (tracing, per-kernel counters, GEMM hooks).
//! gpuprof's cost is the difference of the medians, gpuprof minus the baseline tool.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// One run's figures: ns per launch, wall and the launching thread's CPU.
#[derive(Debug, Clone, Copy)]
struct PerLaunch {
    wall: f64,
    cpu: f64,
}

pub fn run(args: &[String]) -> Result<()> {
    let need = |name: &str| -> Result<PathBuf> {
        crate::flag::<PathBuf>(args, name)?.with_context(|| format!("{name} is required"))
    };
    let flood = need("--flood")?;
    let sim_dir = need("--sim-dir")?;
    let lib = need("--lib")?;
    let baseline = need("--baseline")?;
    let gpuprof = need("--gpuprof")?;
    let launches: u64 = crate::flag(args, "--launches")?.unwrap_or(200_000);
    let runs: usize = crate::flag(args, "--runs")?.unwrap_or(5);
    let out_root =
        std::env::temp_dir().join(format!("gpuprof-bench-launch-{}", std::process::id()));
    let cupti = sim_dir.join("libcupti.so.13");

    let (mut plain, mut base, mut profiled) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        plain.push(one(Command::new(&flood), &sim_dir, launches)?);
        let mut cmd = Command::new(&flood);
        cmd.env("CUDA_INJECTION64_PATH", &baseline)
            .env("GPUPROF_CUPTI_LIB", &cupti);
        base.push(one(cmd, &sim_dir, launches)?);
        let mut cmd = Command::new(&gpuprof);
        let out = out_root.join(format!("run{i}"));
        cmd.arg("record").arg("-o").arg(&out).arg("--").arg(&flood);
        cmd.env("GPUPROF_LIB", &lib)
            .env("GPUPROF_CUPTI_LIB", &cupti);
        profiled.push(one(cmd, &sim_dir, launches)?);
    }
    let _ = std::fs::remove_dir_all(&out_root);
    let (p, b, q) = (median(&plain), median(&base), median(&profiled));
    println!(
        "launch: {launches} launches of one tiny kernel, {runs} alternating runs of each, medians, ns per launch"
    );
    println!("                                        wall     thread CPU");
    let row = |what: &str, v: PerLaunch| println!("  {what:<36} {:>6.0}   {:>6.0}", v.wall, v.cpu);
    row("unprofiled", p);
    row("baseline tool (same subscriptions)", b);
    row("gpuprof record (all hooks on)", q);
    println!(
        "  added by gpuprof over the baseline tool: {:+.0} ns wall, {:+.0} ns thread CPU per launch",
        q.wall - b.wall,
        q.cpu - b.cpu
    );
    println!(
        "  (the baseline tool over unprofiled, the simulated CUPTI's own cost: {:+.0} ns wall, {:+.0} ns CPU)",
        b.wall - p.wall,
        b.cpu - p.cpu
    );
    Ok(())
}

fn median(v: &[PerLaunch]) -> PerLaunch {
    let mid = |f: fn(&PerLaunch) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    PerLaunch {
        wall: mid(|r| r.wall),
        cpu: mid(|r| r.cpu),
    }
}

/// Runs the flood and returns its figures.
fn one(mut cmd: Command, sim_dir: &Path, launches: u64) -> Result<PerLaunch> {
    cmd.arg(launches.to_string());
    cmd.env("LD_LIBRARY_PATH", sim_dir);
    let out = cmd.output().context("running the launch flood")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stderr.contains("not started") {
        bail!("launch flood failed: {}\n{stdout}{stderr}", out.status);
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("launches="))
        .context("no result line from the flood")?;
    let field = |key: &str| -> Result<f64> {
        let v = line
            .split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .with_context(|| format!("no {key} in {line:?}"))?;
        v.trim()
            .parse()
            .with_context(|| format!("bad {key} in {line:?}"))
    };
    Ok(PerLaunch {
        wall: field("ns_per_launch")?,
        cpu: field("cpu_ns_per_launch")?,
    })
}
