//! Added cost per kernel launch on the application's thread: the same launch flood
//! (tests/c/launch_flood.c, timing its own launch loop) on the simulated stack,
//! unprofiled and under `gpuprof record`, alternating runs, medians compared.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

pub fn run(args: &[String]) -> Result<()> {
    let need = |name: &str| -> Result<PathBuf> {
        crate::flag::<PathBuf>(args, name)?.with_context(|| format!("{name} is required"))
    };
    let flood = need("--flood")?;
    let sim_dir = need("--sim-dir")?;
    let lib = need("--lib")?;
    let gpuprof = need("--gpuprof")?;
    let launches: u64 = crate::flag(args, "--launches")?.unwrap_or(200_000);
    let runs: usize = crate::flag(args, "--runs")?.unwrap_or(5);
    let out_root =
        std::env::temp_dir().join(format!("gpuprof-bench-launch-{}", std::process::id()));

    let mut plain = Vec::new();
    let mut profiled = Vec::new();
    for i in 0..runs {
        plain.push(one(Command::new(&flood), &sim_dir, launches)?);
        let mut cmd = Command::new(&gpuprof);
        let out = out_root.join(format!("run{i}"));
        cmd.arg("record").arg("-o").arg(&out).arg("--").arg(&flood);
        cmd.env("GPUPROF_LIB", &lib)
            .env("GPUPROF_CUPTI_LIB", sim_dir.join("libcupti.so.13"));
        profiled.push(one(cmd, &sim_dir, launches)?);
    }
    let _ = std::fs::remove_dir_all(&out_root);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (p, q) = (median(&mut plain), median(&mut profiled));
    println!(
        "launch: {launches} launches of one tiny kernel, {runs} alternating runs each, medians"
    );
    println!("  unprofiled: {p:.0} ns per launch (app thread)");
    println!("  profiled:   {q:.0} ns per launch (app thread, gpuprof record, all hooks on)");
    println!("  added: {:.0} ns per launch, ratio {:.2}x", q - p, q / p);
    Ok(())
}

/// Runs the flood and returns its ns per launch.
fn one(mut cmd: Command, sim_dir: &std::path::Path, launches: u64) -> Result<f64> {
    cmd.arg(launches.to_string());
    cmd.env("LD_LIBRARY_PATH", sim_dir);
    let out = cmd.output().context("running the launch flood")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "launch flood failed: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("launches="))
        .context("no result line from the flood")?;
    let v = line
        .rsplit("ns_per_launch=")
        .next()
        .context("no ns_per_launch")?;
    v.trim()
        .parse()
        .with_context(|| format!("bad ns_per_launch in {line:?}"))
}
