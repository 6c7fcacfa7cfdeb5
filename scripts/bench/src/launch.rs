//! Added cost per kernel launch on the application's thread: the same launch flood
//! (tests/c/launch_flood.c, timing its own launch loop in wall time and in the
//! launching thread's CPU time) on the simulated stack, twelve ways, in alternating
//! runs: unprofiled; under the baseline tool (scripts/bench/baseline-tool: CUPTI
//! with libgpuprof.so's subscriptions and nothing done with them); under the baseline
//! tool with a range profiler enabled on the context as libgpuprof.so enables one for
//! per-kernel counters (and never started); under `gpuprof record` with counters off;
//! under `gpuprof record` with its defaults (tracing, per-kernel counters, GEMM
//! hooks); under `gpuprof record`, counters off, with `GPUPROF_API=off` (launches the
//! only calls traced, as before gpuprof traced others: the launch path's figure
//! before and after); and the baseline tool and `gpuprof record` (counters off) with
//! a `cuEventRecord` after each launch, a call traced by default: what gpuprof adds
//! per traced call; and the two with the kernel launched through the CUDA runtime
//! (`cudaLaunchKernel`, whose driver launch inside gpuprof follows too): what gpuprof
//! adds per runtime launch. gpuprof's own cost is the difference of the medians against the baseline
//! that pays what CUPTI charges for the same setup: counters off against the plain
//! baseline, default counters against the baseline with a range profiler.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// One run's figures: ns per launch, wall and the launching thread's CPU; the
/// program's peak resident set, and of its resident set at the end NVIDIA's
/// libnvperf_host's (the Profiler Host library; its static data), kB.
#[derive(Debug, Clone, Copy)]
struct PerLaunch {
    wall: f64,
    cpu: f64,
    rss_kb: f64,
    nvperf_host_kb: f64,
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

    // The ways the flood runs, each `runs` times, alternating (see `Way`).
    let ways = Way::ALL;
    let mut runs_of: Vec<Vec<PerLaunch>> = vec![Vec::new(); ways.len()];
    for i in 0..runs {
        for (w, way) in ways.iter().enumerate() {
            let mut cmd = match way.tool {
                Tool::None => Command::new(&flood),
                Tool::Baseline { range_profiler } => {
                    let mut cmd = Command::new(&flood);
                    cmd.env("CUDA_INJECTION64_PATH", &baseline)
                        .env("GPUPROF_CUPTI_LIB", &cupti);
                    if range_profiler {
                        cmd.env("GPUPROF_BASELINE_RANGE_PROFILER", "1");
                    }
                    cmd
                }
                Tool::Gpuprof { counters, api } => {
                    let mut cmd = Command::new(&gpuprof);
                    let out = out_root.join(format!("run{i}-{w}"));
                    cmd.arg("record").arg("-o").arg(&out).arg("--").arg(&flood);
                    cmd.env("GPUPROF_LIB", &lib)
                        .env("GPUPROF_CUPTI_LIB", &cupti)
                        .env("GPUPROF_COUNTERS", counters)
                        .env("GPUPROF_API", api);
                    cmd
                }
            };
            cmd.arg(launches.to_string());
            if let Some(call) = way.then {
                cmd.arg(call);
            }
            runs_of[w].push(one(cmd, &sim_dir)?);
        }
    }
    let _ = std::fs::remove_dir_all(&out_root);
    let m: Vec<PerLaunch> = runs_of.iter().map(|r| median(r)).collect();
    let [p, b, br, off, on, off_no_api, b_ev, off_ev, b_q, off_q, b_rt, off_rt, sampling] = m[..]
    else {
        unreachable!("one median per way")
    };
    println!(
        "launch: {launches} launches of one tiny kernel, {runs} alternating runs of each, medians, ns per launch"
    );
    println!("                                                   wall     thread CPU   program's peak RSS");
    let row = |v: PerLaunch, what: &str| {
        println!(
            "  {what:<47} {:>6.0}   {:>6.0}       {:>6.1} MiB",
            v.wall,
            v.cpu,
            v.rss_kb / 1024.0
        )
    };
    for (v, way) in m.iter().zip(&ways) {
        row(*v, way.what);
    }
    let added = |what: &str, q: PerLaunch, base: PerLaunch| {
        println!(
            "  added by gpuprof, {what}: {:+.0} ns wall, {:+.0} ns thread CPU per launch, \
             {:+.1} MiB of the program's peak RSS",
            q.wall - base.wall,
            q.cpu - base.cpu,
            (q.rss_kb - base.rss_kb) / 1024.0
        )
    };
    added("counters off, over the baseline tool", off, b);
    added(
        "counters off and GPUPROF_API=off (launches alone traced, as before other calls were), over the baseline tool",
        off_no_api,
        b,
    );
    added(
        "default counters, over the baseline with a range profiler",
        on,
        br,
    );
    // A cuEventRecord after each launch: what gpuprof adds per traced call is what it
    // adds per iteration then, less what it adds per launch alone.
    println!(
        "  added by gpuprof per traced call (a cuEventRecord after each launch; counters off, over the baseline tool, less the launch's): {:+.0} ns wall, {:+.0} ns thread CPU",
        (off_ev.wall - b_ev.wall) - (off.wall - b.wall),
        (off_ev.cpu - b_ev.cpu) - (off.cpu - b.cpu)
    );
    println!(
        "  added by gpuprof per counted call (a cuCtxGetCurrent after each launch; counters off, over the baseline tool, less the launch's): {:+.0} ns wall, {:+.0} ns thread CPU",
        (off_q.wall - b_q.wall) - (off.wall - b.wall),
        (off_q.cpu - b_q.cpu) - (off.cpu - b.cpu)
    );
    added(
        "per runtime launch (cudaLaunchKernel), counters off, over the baseline tool",
        off_rt,
        b_rt,
    );
    // The baseline tool samples nothing: this includes what the simulated PM sampler
    // charges per kernel (a GPU's sampler charges launches nothing).
    added(
        "PM sampling (GPUPROF_COUNTERS=sampling), over the baseline tool, the simulated sampler's cost in it",
        sampling,
        b,
    );
    // Per-kernel counters build their configurations and evaluate their metrics
    // through CUPTI's Profiler Host API, which loads NVIDIA's libnvperf_host: its
    // static data is resident from then on, on a GPU as on the simulated stack
    // (which runs NVIDIA's own host library); the baselines never load it.
    println!(
        "  of the program's RSS with default counters, NVIDIA's libnvperf_host (the Profiler Host library's static data): {:.1} MiB",
        on.nvperf_host_kb / 1024.0
    );
    println!(
        "  (CUPTI's own cost, the simulated one: subscriptions {:+.0} ns wall, {:+.0} ns CPU; \
         an enabled range profiler {:+.0} ns wall, {:+.0} ns CPU more)",
        b.wall - p.wall,
        b.cpu - p.cpu,
        br.wall - b.wall,
        br.cpu - b.cpu
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
        rss_kb: mid(|r| r.rss_kb),
        nvperf_host_kb: mid(|r| r.nvperf_host_kb),
    }
}

/// What runs the flood.
#[derive(Clone, Copy)]
enum Tool {
    None,
    Baseline {
        range_profiler: bool,
    },
    Gpuprof {
        counters: &'static str,
        api: &'static str,
    },
}

/// One way the flood runs: under what, with a call after each launch (the flood's
/// `event`: a traced call; `query`: a counted one) or none, and its row's label.
struct Way {
    tool: Tool,
    then: Option<&'static str>,
    what: &'static str,
}

impl Way {
    const ALL: [Way; 13] = [
        Way::of(Tool::None, None, "unprofiled"),
        Way::of(
            Tool::Baseline {
                range_profiler: false,
            },
            None,
            "baseline tool (same subscriptions)",
        ),
        Way::of(
            Tool::Baseline {
                range_profiler: true,
            },
            None,
            "baseline tool + a range profiler enabled",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "off",
                api: "sync",
            },
            None,
            "gpuprof record, GPUPROF_COUNTERS=off",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "kernel",
                api: "sync",
            },
            None,
            "gpuprof record (defaults: per-kernel counters)",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "off",
                api: "off",
            },
            None,
            "gpuprof record, counters off, GPUPROF_API=off",
        ),
        Way::of(
            Tool::Baseline {
                range_profiler: false,
            },
            Some("event"),
            "baseline tool, a cuEventRecord per launch",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "off",
                api: "sync",
            },
            Some("event"),
            "gpuprof, counters off, a cuEventRecord per launch",
        ),
        Way::of(
            Tool::Baseline {
                range_profiler: false,
            },
            Some("query"),
            "baseline tool, a cuCtxGetCurrent per launch",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "off",
                api: "sync",
            },
            Some("query"),
            "gpuprof, counters off, a cuCtxGetCurrent per launch",
        ),
        Way::of(
            Tool::Baseline {
                range_profiler: false,
            },
            Some("runtime"),
            "baseline tool, runtime launches",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "off",
                api: "sync",
            },
            Some("runtime"),
            "gpuprof, counters off, runtime launches",
        ),
        Way::of(
            Tool::Gpuprof {
                counters: "sampling",
                api: "sync",
            },
            None,
            "gpuprof record, GPUPROF_COUNTERS=sampling",
        ),
    ];

    const fn of(tool: Tool, then: Option<&'static str>, what: &'static str) -> Way {
        Way { tool, then, what }
    }
}

/// Runs the flood (its arguments given) and returns its figures.
fn one(mut cmd: Command, sim_dir: &Path) -> Result<PerLaunch> {
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
        rss_kb: field("peak_rss_kb")?,
        nvperf_host_kb: field("nvperf_host_rss_kb")?,
    })
}
