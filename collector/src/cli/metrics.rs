//! `gpuprof metrics`: metric groups and their passes per chip, computed offline with
//! NVIDIA's `libnvperf_host.so` (no GPU needed), or with `--cupti LIB` through that
//! CUPTI's own Profiler Host API and the planner the injected library runs
//! ([`cupti::plan`]), so a user checks a metric set against their own CUPTI before
//! a run. The CUPTI path runs in a child process: NVIDIA's 13.2 library crashes in
//! `cuptiProfilerHostInitialize` without a driver.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use cupti::metrics::{default_set_for, Host, PassGroup, DEFAULT_SETS};
use cupti::plan::Mode;
use serde::{Deserialize, Serialize};

/// The environment variable holding a metric list, used when `--metrics` is absent.
pub const METRICS_ENV: &str = wire::env::METRICS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// How the range profiler replays a measured kernel: `GPUPROF_REPLAY`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReplayArg {
    /// Pass groups rotated across launches, each one pass (the default).
    #[value(alias = "user")]
    None,
    /// Every metric in one config; CUPTI replays the kernel once per pass.
    Kernel,
}

/// A chip name as NVIDIA's libraries spell it: letters upper case (`gh100`: GH100).
fn chip_name(s: &str) -> Result<String, String> {
    let name = s.trim().to_ascii_uppercase();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!(
            "{s:?} is not a chip name (GH100, GA100, AD102, GB100, ...)"
        ));
    }
    Ok(name)
}

/// How long the child planning through a CUPTI library may take.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(clap::Args)]
pub struct Args {
    /// The chip, as NVIDIA's host library names it (GH100, GA100, AD102, GB100, ...;
    /// see --list-chips).
    #[arg(
        long,
        value_name = "CHIP",
        required_unless_present = "list_chips",
        value_parser = chip_name
    )]
    chip: Option<String>,
    /// Metrics to split into single-pass groups, comma-separated, instead of the
    /// chip's default set, or a preset name (dcgm: the metrics behind the DCGM
    /// fields of `record --serve`). Default: $GPUPROF_METRICS when set.
    #[arg(long, value_name = "A,B,...")]
    metrics: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// List the chips the library knows (and which have a default metric set).
    #[arg(long, conflicts_with_all = ["chip", "metrics", "cupti"])]
    list_chips: bool,
    /// Plan through this libcupti's own Profiler Host API, exactly as the profiler
    /// does in your program: the chip's default groups (or the metrics given, as one
    /// group, like $GPUPROF_METRICS), each config image checked for one pass. Works
    /// offline with CUPTI 12.6 to 13.1; 13.2 and later need a CUDA driver.
    #[arg(long, value_name = "LIB")]
    cupti: Option<PathBuf>,
    /// With --cupti: plan PM sampling (GPUPROF_COUNTERS=sampling) instead of
    /// per-kernel counters.
    #[arg(long, requires = "cupti")]
    sampling: bool,
    /// With --cupti: the replay mode (GPUPROF_REPLAY); `kernel` puts every metric in
    /// one config and reports its passes.
    #[arg(long, value_enum, requires = "cupti", conflicts_with = "sampling")]
    replay: Option<ReplayArg>,
    /// Internal: plan in this process (the child of --cupti).
    #[arg(long, hide = true)]
    in_child: bool,
}

#[derive(Serialize, Deserialize)]
struct GroupOut {
    index: usize,
    metrics: Vec<String>,
    /// Raw counters (libnvperf_host only; CUPTI's Host API does not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_counters: Option<usize>,
    passes: usize,
}

#[derive(Serialize, Deserialize)]
struct PlanOut {
    chip: String,
    architecture: Option<String>,
    /// "default" or "user".
    source: String,
    /// The library that planned: libnvperf_host.so, or the libcupti given.
    library: String,
    /// With --cupti: "kernel" (user replay), "kernel-replay" or "sampling".
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    groups: Vec<GroupOut>,
    total_passes: usize,
    /// With --cupti --sampling: default metrics this CUPTI refused for PM sampling
    /// (replaced by their alternative or left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    refused: Vec<String>,
}

#[derive(Serialize)]
struct ChipOut {
    name: String,
    default_set: Option<&'static str>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    if let Some(lib) = &args.cupti {
        let out = if args.in_child {
            let out = plan_with_cupti(args, lib)?;
            println!("{}", serde_json::to_string(&out)?);
            return Ok(ExitCode::SUCCESS);
        } else {
            // The child reads the same list; a warning about it is said here.
            user_metrics(args);
            plan_in_child(lib)?
        };
        match args.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&out)?),
            Format::Table => print!("{}", render_table(&out)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let host = discover_host()?;
    if args.list_chips {
        let chips: Vec<ChipOut> = host
            .supported_chips()?
            .into_iter()
            .map(|name| {
                let default_set = default_set_for(&name).map(|s| s.architecture.name());
                ChipOut { name, default_set }
            })
            .collect();
        match args.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&chips)?),
            Format::Table => {
                for c in chips {
                    match c.default_set {
                        Some(a) => println!("{}  (default metric set: {a})", c.name),
                        None => println!("{}", c.name),
                    }
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(chip) = args.chip.as_deref() else {
        bail!("--chip is required (see --list-chips)");
    };
    let user = user_metrics(args);
    let (source, groups) = match &user {
        Some(list) => {
            let given: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect();
            let expanded = cupti::metrics::presets::expand(&given, chip, args.sampling);
            let metrics: Vec<&str> = expanded.iter().map(String::as_str).collect();
            if metrics.is_empty() {
                bail!("no metrics given");
            }
            ("user", host.plan(chip, &metrics)?)
        }
        None => {
            // Checks the chip first, so an unknown chip lists the supported ones.
            host.check_chip(chip)?;
            let Some(set) = default_set_for(chip) else {
                let with: Vec<&str> = DEFAULT_SETS.iter().flat_map(|s| s.chips).copied().collect();
                bail!(
                    "no default metric set for chip {chip} (there are default sets for {}); pass --metrics",
                    with.join(", ")
                );
            };
            ("default", host.measure_groups(chip, set.groups)?)
        }
    };
    let out = plan_out(chip, source, &host, groups);
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&out)?),
        Format::Table => print!("{}", render_table(&out)),
    }
    Ok(ExitCode::SUCCESS)
}

fn plan_out(chip: &str, source: &'static str, host: &Host, groups: Vec<PassGroup>) -> PlanOut {
    let total_passes = groups.iter().map(|g| g.passes).sum();
    PlanOut {
        chip: chip.to_string(),
        architecture: architecture(chip),
        source: source.to_string(),
        library: host.path().display().to_string(),
        mode: None,
        refused: Vec::new(),
        groups: groups
            .into_iter()
            .enumerate()
            .map(|(index, g)| GroupOut {
                index,
                raw_counters: Some(g.raw_counters.len()),
                passes: g.passes,
                metrics: g.metrics,
            })
            .collect(),
        total_passes,
    }
}

fn architecture(chip: &str) -> Option<String> {
    default_set_for(chip).map(|s| s.architecture.name().to_string())
}

/// The metric list of --metrics or $GPUPROF_METRICS, if any. A variable that is not
/// UTF-8 text is a warning (printed by the process the user started, not by the
/// planning child) and the default set applies.
fn user_metrics(args: &Args) -> Option<String> {
    if let Some(m) = &args.metrics {
        return Some(m.clone());
    }
    match std::env::var_os(METRICS_ENV)?.into_string() {
        Ok(v) => Some(v).filter(|v| !v.trim().is_empty()),
        Err(v) => {
            if !args.in_child {
                eprintln!(
                    "gpuprof: warning: {METRICS_ENV}={v:?} is not UTF-8 text; using the default set"
                );
            }
            None
        }
    }
}

/// In the child: plans through `lib`'s Profiler Host API with [`cupti::plan::plan`].
fn plan_with_cupti(args: &Args, lib: &std::path::Path) -> Result<PlanOut> {
    let Some(chip) = args.chip.as_deref() else {
        bail!("--chip is required with --cupti");
    };
    let mode = if args.sampling {
        Mode::Sampling
    } else if args.replay == Some(ReplayArg::Kernel) {
        Mode::KernelReplay
    } else {
        Mode::UserReplay
    };
    let user: Option<Vec<String>> = user_metrics(args).map(|list| {
        list.split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect()
    });
    if user.as_ref().is_some_and(Vec::is_empty) {
        bail!("no metrics given");
    }
    let fns = cupti::open_host_api(lib.as_os_str()).map_err(anyhow::Error::msg)?;
    // 13.2 crashes and 13.3+ answer CUPTI_ERROR_UNKNOWN without a driver: say so
    // instead of calling them.
    if fns.cuptiActivityGetStructSize.is_some() {
        if let Err(e) = cupti::driver_version(true) {
            bail!(
                "{}: CUPTI 13.2 and later need a CUDA driver for their Profiler Host API, \
                 and this machine has none ({e}); plan with a CUPTI 12.6 to 13.1 offline, or \
                 run this where the driver is installed",
                lib.display()
            );
        }
    }
    let plan = cupti::plan::plan(fns, chip, mode, user.as_deref()).map_err(|e| {
        let mut msg = e.describe(chip);
        if matches!(e, cupti::plan::PlanError::NoDefaults) {
            let with: Vec<&str> = DEFAULT_SETS.iter().flat_map(|s| s.chips).copied().collect();
            msg = format!("{msg} (there are default sets for {})", with.join(", "));
        }
        if let Some(known) = unknown_chip(fns, chip) {
            msg = format!("{msg}: this CUPTI does not know {chip} (it knows {known})");
        }
        anyhow::anyhow!("{msg}")
    })?;
    let total_passes = plan.total_passes();
    Ok(PlanOut {
        chip: chip.to_string(),
        architecture: architecture(chip),
        source: if user.is_some() { "user" } else { "default" }.to_string(),
        library: lib.display().to_string(),
        mode: Some(
            match mode {
                Mode::UserReplay => "kernel",
                Mode::KernelReplay => "kernel-replay",
                Mode::Sampling => "sampling",
            }
            .to_string(),
        ),
        refused: plan.refused.clone(),
        groups: plan
            .groups
            .iter()
            .enumerate()
            .map(|(index, g)| GroupOut {
                index,
                metrics: g.metrics().to_strings(),
                raw_counters: None,
                passes: g.passes(),
            })
            .collect(),
        total_passes,
    })
}

/// The chips the library's own host API knows (`cuptiProfilerHostGetSupportedChips`),
/// comma-separated, when `chip` is not among them (`None` when it is, or the library
/// cannot say).
fn unknown_chip(fns: &cupti_sys::CuptiFns, chip: &str) -> Option<String> {
    let chips = cupti::profiler::supported_chips(fns).ok()?;
    (!chips.iter().any(|c| c == chip)).then(|| chips.join(", "))
}

/// NVIDIA's `libnvperf_host.so` as the library finds CUPTI (`Host::discover`: the
/// variable, then beside each CUPTI candidate, then the loader path), else the newest
/// one the repository's `scripts/nvidia-wheels.py` fetched (the manifest beside this
/// binary's `target/` folder), so `gpuprof metrics` works in a checkout without a GPU.
/// The error lists every place tried.
fn discover_host() -> Result<Host, cupti::metrics::MetricError> {
    let mut tried = match Host::discover() {
        Err(cupti::metrics::MetricError::NotFound { tried }) => tried,
        found => return found,
    };
    let manifest = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("../nvidia/manifest.json")));
    let fetched = manifest.as_ref().and_then(|m| {
        let releases: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(m).ok()?).ok()?;
        releases
            .iter()
            .rev()
            .filter_map(|r| r["libnvperf_host"].as_str().map(std::path::PathBuf::from))
            .find(|p| p.is_file())
    });
    match fetched {
        Some(path) => Host::open(&path),
        None => {
            if let Some(m) = manifest {
                tried.push(m);
            }
            Err(cupti::metrics::MetricError::NotFound { tried })
        }
    }
}

/// Runs this command again with `--in-child` and reads its plan: a library that
/// crashes without a driver (NVIDIA's 13.2) takes down the child, not gpuprof.
fn plan_in_child(lib: &std::path::Path) -> Result<PlanOut> {
    let args = std::env::args_os()
        .skip(1)
        .chain(std::iter::once("--in-child".into()));
    let o = crate::collect::child::run_self(args, CHILD_TIMEOUT)
        .map_err(|e| anyhow::anyhow!("planning with {}: {e}", lib.display()))?;
    if o.status.success() {
        return serde_json::from_str(o.stdout.trim())
            .with_context(|| format!("the planning process printed {:?}", o.stdout));
    }
    if let Some(sig) = o.signal() {
        bail!(
            "{} crashed ({sig}) while planning; its Profiler Host API needs a CUDA \
             driver from CUPTI 13.2 on (use a CUPTI 12.6-13.1 library offline)",
            lib.display()
        );
    }
    let msg = o
        .stderr
        .lines()
        .map(|l| {
            l.strip_prefix("gpuprof: error: ")
                .or_else(|| l.strip_prefix("gpuprof: "))
                .unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join("; ");
    bail!("{msg}")
}

fn render_table(p: &PlanOut) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let arch = p
        .architecture
        .as_ref()
        .map(|a| format!(" ({a})"))
        .unwrap_or_default();
    let what = match (p.source.as_str(), p.mode.as_deref()) {
        ("default", Some("sampling")) => "default PM sampling set",
        ("default", _) => "default metric set",
        _ => "metrics given",
    };
    let mode = match p.mode.as_deref() {
        Some("kernel") => ", per-kernel counters (user replay)",
        Some("kernel-replay") => ", per-kernel counters (kernel replay)",
        _ => "",
    };
    let _ = writeln!(
        s,
        "chip {}{arch}, {what}{mode}; library {}",
        p.chip, p.library
    );
    let _ = writeln!(
        s,
        "{:<6} {:>6} {:>12}  metrics",
        "group", "passes", "raw counters"
    );
    for g in &p.groups {
        let raw = g.raw_counters.map_or("-".to_string(), |n| n.to_string());
        for (i, m) in g.metrics.iter().enumerate() {
            if i == 0 {
                let _ = writeln!(s, "{:<6} {:>6} {:>12}  {m}", g.index, g.passes, raw);
            } else {
                let _ = writeln!(s, "{:<6} {:>6} {:>12}  {m}", "", "", "");
            }
        }
    }
    let multi: Vec<String> = p
        .groups
        .iter()
        .filter(|g| g.passes > 1)
        .map(|g| format!("group {} ({} passes)", g.index, g.passes))
        .collect();
    let tail = match p.mode.as_deref() {
        Some("sampling") => "PM sampling takes one pass",
        Some("kernel-replay") => "each measured kernel runs once per pass",
        _ => "launches of the same kernel rotate through the groups",
    };
    let _ = writeln!(
        s,
        "{} groups, {} passes in total; {tail}",
        p.groups.len(),
        p.total_passes
    );
    if !p.refused.is_empty() {
        let _ = writeln!(
            s,
            "not accepted for PM sampling by this CUPTI (replaced or left out): {}",
            p.refused.join(", ")
        );
    }
    if !multi.is_empty() {
        let _ = writeln!(
            s,
            "needs more than one pass alone (only with kernel replay): {}",
            multi.join(", ")
        );
    }
    s
}
