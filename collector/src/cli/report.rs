//! `gpuprof report`: the report of one or more sessions, as a table, CSV (one stream
//! or a file per table) or JSON. The report reads the sessions part by part
//! (`crate::analysis::session::analyse`), in memory bounded whatever their length;
//! damage is handled as [`crate::cli::sessions`] says.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::analysis::aggregate::Aggregate;
use crate::analysis::findings::{findings, with_roles, with_what_if};
use crate::analysis::roofline::peaks::Overrides;
use crate::analysis::Integrity;
use crate::cli::sessions::{
    analyse_with_progress, expand_sessions, finish, load_model, load_peaks, warn_damage,
};
use crate::output::report as render;
use crate::store::output_file;
use anyhow::{bail, Context, Result};

pub use crate::output::report::{CounterView, Format};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Sessions: output directories of `gpuprof record` / `collect`. Several (the ranks
    /// of a distributed run, runs on several hosts) are reported together: processes
    /// are kept apart by (session, pid), so pids that repeat across hosts never mix;
    /// kernel rows merge across them, and the roofline gains a row per session. A
    /// quoted pattern ('runs/rank*') is expanded by gpuprof (*, ?, [...]).
    #[arg(value_name = "SESSION", required = true, num_args = 1..)]
    sessions: Vec<PathBuf>,
    /// Output format. CSV and JSON carry the same tables, with times in integer ns.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// How many rows each of the table's long lists shows (0: all): kernels (longest
    /// total time first), each kernel's launch configurations (most calls first; the
    /// others summed in one row), GEMM shapes, missing roofline values, launch shapes
    /// and CUDA calls. Default: 20 in the table, all in CSV and JSON.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Peak FLOP/s and DRAM bandwidth per GPU model (TOML), overriding the built-in
    /// table and the figures derived from the device; default $GPUPROF_PEAKS. See the
    /// format below.
    #[arg(long, value_name = "FILE")]
    peaks: Option<PathBuf>,
    /// Name kernels by their whole demangled names in the table (default: short
    /// names: return type, namespaces, template arguments and parameters folded,
    /// `gemv2N_kernel<…>`, cut with "…" to fit 120 columns). CSV and JSON always carry
    /// both (`name`, `short_name`).
    #[arg(long)]
    full_names: bool,
    /// Write the report to PATH instead of standard output. With --format csv, PATH
    /// is a directory (made when missing) and each table is a file of its own,
    /// `PATH/<table>.csv` (kernels.csv, kernel_configs.csv, roofline_kernels.csv, ...),
    /// each one header row and its rows, as pandas.read_csv and DuckDB read them.
    /// Files written before are replaced.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// How the table shows kernel counters: pct, one row per kernel with SM active,
    /// tensor pipe, DRAM throughput, L2 hit rate and achieved occupancy as
    /// percentages (formulas below); raw, each metric's mean per kernel, leaving out
    /// metrics that are 0 for every kernel shown; off, no counter sections. CSV and
    /// JSON always carry both the means and the percentages.
    #[arg(long, value_enum, default_value_t = CounterView::Pct)]
    counters: CounterView,
    /// The roofline of every GEMM shape at other token counts: tokens=1,8,64 gives,
    /// beside each shape as it ran, the time per call the roofline allows with cuBLAS's
    /// N (the tokens, as PyTorch calls cuBLAS) set to each, its bound and its MFU
    /// there; a model (each matrix moved once), not a measurement. With --model,
    /// tp=1,2,4 gives each GEMM role's shape at those tensor-parallel degrees (from the
    /// model's dimensions, the tokens as run). Both may be given: --what-if tokens=1,64
    /// --what-if tp=2,8. Table "What-if by GEMM shape", JSON what_if, CSV what_if.
    #[arg(long, value_name = "tokens=N,..|tp=N,..", value_parser = parse_what_if, action = clap::ArgAction::Append)]
    what_if: Vec<WhatIf>,
    /// The model's Hugging Face config.json: names each GEMM shape by its role
    /// (qkv_proj, o_proj, gate_up_proj, down_proj, lm_head, attention, router,
    /// experts) and gives per role and NVTX range its calls, calls per forward pass,
    /// time share, model FLOPs, MFU, MBU, AI and bound. Table "GEMMs by role in the
    /// model", JSON model_roles, CSV model_roles.
    #[arg(long, value_name = "CONFIG")]
    model: Option<PathBuf>,
    /// The tensor-parallel degree the model ran at (default: the one whose roles cover
    /// the most GEMM time, said in the report).
    #[arg(long, value_name = "N", requires = "model", value_parser = clap::value_parser!(u64).range(1..=1024))]
    tp: Option<u64>,
}

/// One `--what-if`: token counts or tensor-parallel degrees.
#[derive(Clone, Debug)]
pub enum WhatIf {
    Tokens(Vec<u64>),
    Degrees(Vec<u64>),
}

/// The most values one `--what-if` takes, and the largest token count and degree.
const WHAT_IF_MAX_COUNTS: usize = 64;
const WHAT_IF_MAX_TOKENS: u64 = 1 << 31;
const WHAT_IF_MAX_DEGREE: u64 = 1024;

/// A [`WhatIf`] of its values.
type MakeWhatIf = fn(Vec<u64>) -> WhatIf;

/// `tokens=1,8,64` -> tokens [1, 8, 64]; `tp=2,4` -> degrees [2, 4].
fn parse_what_if(s: &str) -> Result<WhatIf, String> {
    let (list, max, what, make): (&str, u64, &str, MakeWhatIf) =
        if let Some(l) = s.strip_prefix("tokens=") {
            (l, WHAT_IF_MAX_TOKENS, "a token count", WhatIf::Tokens)
        } else if let Some(l) = s.strip_prefix("tp=") {
            (
                l,
                WHAT_IF_MAX_DEGREE,
                "a tensor-parallel degree",
                WhatIf::Degrees,
            )
        } else {
            return Err(format!(
                "{s:?}: expected tokens=N,N,... (e.g. tokens=1,8,64) or tp=N,N,... (e.g. tp=1,2,8)"
            ));
        };
    let values = list
        .split(',')
        .map(|t| match t.trim().parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "{t:?} in {s:?}: {what} is a whole number from 1 to {max}"
            )),
        })
        .collect::<Result<Vec<u64>, String>>()?;
    if values.len() > WHAT_IF_MAX_COUNTS {
        return Err(format!(
            "{} values in {s:?}: at most {WHAT_IF_MAX_COUNTS}",
            values.len()
        ));
    }
    Ok(make(values))
}

/// What `gpuprof report --help` prints after the options: the counter percentages'
/// formulas, the roofline's marks, the launch shape rules and the peaks file's format.
pub fn long_help() -> String {
    format!(
        "{}\n\n{}\n\n{}\n\n{}\n\n{}",
        render::PCT_HELP,
        render::MARKS_HELP,
        render::VERDICT_HELP,
        render::LAUNCH_SHAPE_HELP,
        crate::analysis::roofline::peaks::PEAKS_FILE_HELP
    )
}

pub fn report(args: &ReportArgs) -> Result<ExitCode> {
    // A bad peaks file fails before any output.
    let peaks = load_peaks(args.peaks.as_deref())?;
    let model = load_model(args.model.as_deref())?;
    if model.is_none() && args.what_if.iter().any(|w| matches!(w, WhatIf::Degrees(_))) {
        bail!(
            "--what-if tp=... needs --model: the model's config gives each GEMM role's shape \
             at another tensor-parallel degree"
        );
    }
    let sessions = expand_sessions(&args.sessions)?;
    let analysed = analyse_with_progress(&sessions)?;
    warn_damage(&analysed, "report");
    let view = render::View {
        full_names: args.full_names,
        counters: args.counters,
    };
    let mut found = findings(&analysed.aggregate, &analysed.integrity, &peaks);
    if let Some(config) = &model {
        found = with_roles(found, &analysed.aggregate, config, args.tp);
    }
    if !args.what_if.is_empty() {
        let (mut tokens, mut degrees) = (Vec::new(), Vec::new());
        for w in &args.what_if {
            match w {
                WhatIf::Tokens(t) => tokens.extend(t),
                WhatIf::Degrees(d) => degrees.extend(d),
            }
        }
        found = with_what_if(found, &tokens, &degrees);
    }
    match (&args.output, args.format) {
        (Some(dir), Format::Csv) => {
            let tables = render::report_csv_tables(&found, args.top);
            write_csv_dir(dir, &tables)?;
            eprintln!(
                "gpuprof: {} CSV tables written to {}",
                tables.tables.len(),
                dir.display()
            );
        }
        (output, format) => {
            let write =
                |w: &mut dyn Write| render::write_report_with(&found, format, args.top, &view, w);
            match output {
                Some(path) => output_file::write_replacing(path, write)
                    .with_context(|| format!("cannot write the report to {}", path.display()))?,
                None => {
                    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                    write(&mut out)
                        .and_then(|_| out.flush())
                        .context("cannot write the report")?;
                }
            }
        }
    }
    Ok(finish(&analysed, "report"))
}

/// Writes each table to `dir/<name>.csv`: `dir` is made when missing, and must
/// otherwise be a directory of the user running gpuprof.
fn write_csv_dir(dir: &Path, tables: &render::CsvTables) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => output_file::make_dir(dir)
            .with_context(|| format!("cannot make the directory {}", dir.display()))?,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
        Ok(meta) if !meta.is_dir() => anyhow::bail!(
            "{} is not a directory: with --format csv, -o names a directory, one file per table",
            dir.display()
        ),
        Ok(meta) => output_file::check_own_dir(dir, &meta)?,
    }
    for (name, table) in &tables.tables {
        let path = dir.join(format!("{name}.csv"));
        output_file::write_replacing(&path, |w| w.write_all(table.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The report of a session's aggregate in `format`, with the peaks of
/// `$GPUPROF_PEAKS` (a bad file is a warning and the built-in peaks are used).
pub fn render_report(
    aggregate: &Aggregate,
    integrity: &Integrity,
    format: Format,
    top: Option<usize>,
) -> String {
    let peaks = load_peaks(None).unwrap_or_else(|e| {
        eprintln!("gpuprof: warning: {e:#}; using the built-in peaks");
        Overrides::default()
    });
    render::report(&findings(aggregate, integrity, &peaks), format, top)
}
