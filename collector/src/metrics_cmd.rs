//! `gpuprof metrics`: metric groups and their passes per chip, computed offline with
//! NVIDIA's `libnvperf_host.so` (no GPU needed).

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::ValueEnum;
use cupti::metrics::{default_set_for, Host, PassGroup, DEFAULT_SETS};
use serde::Serialize;

/// The environment variable holding a metric list, used when `--metrics` is absent.
pub const METRICS_ENV: &str = "GPUPROF_METRICS";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The chip, as NVIDIA's host library names it (GH100, GA100, AD102, GB100, ...;
    /// see --list-chips).
    #[arg(long, value_name = "CHIP", required_unless_present = "list_chips")]
    chip: Option<String>,
    /// Metrics to split into single-pass groups, comma-separated, instead of the
    /// chip's default set. Default: $GPUPROF_METRICS when set.
    #[arg(long, value_name = "A,B,...")]
    metrics: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// List the chips the library knows (and which have a default metric set).
    #[arg(long, conflicts_with_all = ["chip", "metrics"])]
    list_chips: bool,
}

#[derive(Serialize)]
struct GroupOut {
    index: usize,
    metrics: Vec<String>,
    raw_counters: usize,
    passes: usize,
}

#[derive(Serialize)]
struct PlanOut {
    chip: String,
    architecture: Option<&'static str>,
    /// "default" or "user".
    source: &'static str,
    library: String,
    groups: Vec<GroupOut>,
    total_passes: usize,
}

#[derive(Serialize)]
struct ChipOut {
    name: String,
    default_set: Option<&'static str>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let host = Host::discover()?;
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
    let user = args.metrics.clone().or_else(|| {
        std::env::var(METRICS_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    let (source, groups) = match &user {
        Some(list) => {
            let metrics: Vec<&str> = list
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .collect();
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
        architecture: default_set_for(chip).map(|s| s.architecture.name()),
        source,
        library: host.path().display().to_string(),
        groups: groups
            .into_iter()
            .enumerate()
            .map(|(index, g)| GroupOut {
                index,
                raw_counters: g.raw_counters.len(),
                passes: g.passes,
                metrics: g.metrics,
            })
            .collect(),
        total_passes,
    }
}

fn render_table(p: &PlanOut) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let arch = p
        .architecture
        .map(|a| format!(" ({a})"))
        .unwrap_or_default();
    let what = if p.source == "default" {
        "default metric set"
    } else {
        "metrics given"
    };
    let _ = writeln!(s, "chip {}{arch}, {what}; library {}", p.chip, p.library);
    let _ = writeln!(
        s,
        "{:<6} {:>6} {:>12}  metrics",
        "group", "passes", "raw counters"
    );
    for g in &p.groups {
        for (i, m) in g.metrics.iter().enumerate() {
            if i == 0 {
                let _ = writeln!(
                    s,
                    "{:<6} {:>6} {:>12}  {m}",
                    g.index, g.passes, g.raw_counters
                );
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
    let _ = writeln!(
        s,
        "{} groups, {} passes in total; launches of the same kernel rotate through the groups",
        p.groups.len(),
        p.total_passes
    );
    if !multi.is_empty() {
        let _ = writeln!(
            s,
            "needs more than one pass alone (only with kernel replay): {}",
            multi.join(", ")
        );
    }
    s
}
