//! `gpuprof roofline`: the roofline chart of a session (SVG) and the points behind it
//! (CSV and JSON), from the same analysis as the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::analysis::roofline::efficiency::efficiency_of;
use crate::analysis::session::analyse_kernel_rows;
use crate::output::roofline::layout::layout;
use crate::output::roofline::points::{charts, points, points_csv, points_json};
use crate::output::roofline::svg::render_svg;
use anyhow::{Context, Result};

use crate::cli::sessions;

#[derive(clap::Args)]
pub struct Args {
    /// A session: the output directory of `gpuprof record` / `collect`.
    #[arg(value_name = "SESSION")]
    session: PathBuf,
    /// The chart (SVG). The points are written beside it, with the extensions .csv and
    /// .json. With kernels on several GPU models, one chart per model:
    /// NAME-1.svg, NAME-2.svg, ... Default: roofline.svg in the session directory.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Peak FLOP/s and DRAM bandwidth per GPU model (TOML), overriding the built-in
    /// table; default $GPUPROF_PEAKS (see `gpuprof report --help`).
    #[arg(long, value_name = "FILE")]
    peaks: Option<PathBuf>,
}

impl Args {
    /// `gpuprof roofline SESSION` with the default output and peaks.
    pub fn new(session: PathBuf) -> Args {
        Args {
            session,
            output: None,
            peaks: None,
        }
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    crate::store::output_file::write_replacing(path, |w| w.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `base` with `-n` before its extension.
fn numbered(base: &Path, n: usize) -> PathBuf {
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "roofline".into());
    base.with_file_name(format!("{stem}-{n}.svg"))
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let peaks = sessions::load_peaks(args.peaks.as_deref())?;
    // The chart and its points are kernel rows: launches and NVTX ranges are not read.
    let loaded = sessions::progress_of(std::slice::from_ref(&args.session), |s, p| {
        analyse_kernel_rows(s, p)
    })?;
    sessions::warn_damage(&loaded, "roofline");
    sessions::warn_impossible(&loaded, "roofline");
    let svg = match &args.output {
        Some(o) => o.clone(),
        None => loaded.dir.join("roofline.svg"),
    };
    let e = efficiency_of(&loaded.aggregate, &peaks);
    let rows = points(&e);
    let csv = svg.with_extension("csv");
    let json = svg.with_extension("json");
    write(&csv, &points_csv(&rows))?;
    let mut text =
        serde_json::to_string_pretty(&points_json(&rows)).context("encoding the points")?;
    text.push('\n');
    write(&json, &text)?;
    let charts = charts(&e);
    for (i, (gpu, chart)) in charts.iter().enumerate() {
        let path = if charts.len() == 1 {
            svg.clone()
        } else {
            numbered(&svg, i + 1)
        };
        write(&path, &render_svg(chart))?;
        let l = layout(chart);
        eprintln!(
            "gpuprof: roofline of {gpu} written to {} ({} of {} points plotted)",
            path.display(),
            l.points.len(),
            chart.points.len()
        );
    }
    eprintln!(
        "gpuprof: the points: {} and {}",
        csv.display(),
        json.display()
    );
    let no_peaks: Vec<String> = e
        .gpus
        .iter()
        .filter(|g| g.peaks.is_none())
        .map(|g| {
            format!(
                "{}: {}",
                g.gpu,
                g.error.as_deref().unwrap_or("no peaks known")
            )
        })
        .collect();
    if charts.is_empty() {
        let why = if no_peaks.is_empty() {
            "the session has no kernels".to_string()
        } else {
            format!("no GPU has known peaks ({})", no_peaks.join("; "))
        };
        anyhow::bail!("no roofline chart drawn: {why}; give peaks with --peaks FILE");
    }
    for g in &no_peaks {
        eprintln!("gpuprof: warning: no chart for {g}; give peaks with --peaks FILE");
    }
    Ok(sessions::finish(&loaded, "roofline"))
}
