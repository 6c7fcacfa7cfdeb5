//! `gpuprof report` and `gpuprof trace`: read a session file, analyse, print or write.
//!
//! A damaged session file (cut short, or a frame that does not decode) is never a
//! reason to show nothing: what was read before the damage is reported, after a
//! warning naming the file and offset, and the command then fails with the error.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::ValueEnum;
use gpuprof_collector::analysis::efficiency::efficiency;
use gpuprof_collector::analysis::peaks::{parse_overrides, Overrides};
use gpuprof_collector::{analysis, render};
use wire::session::{SessionError, SessionReader};
use wire::Record;

use crate::session_dirs::SESSION_FILE;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for reading.
    Table,
    /// One section per table (`# name`, header row, rows).
    Csv,
    /// One object: {"processes": [...], "kernels": [...], ...}.
    Json,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A session: the output directory of `gpuprof record` / `collect`, or the
    /// session.gpuprof file in it.
    #[arg(value_name = "SESSION")]
    session: PathBuf,
    /// Output format. CSV and JSON carry the same tables, with times in integer ns.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// How many kernels to list, longest total time first (0: all). Default: 20 in
    /// the table, all in CSV and JSON.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Peak FLOP/s and DRAM bandwidth per GPU model (TOML), overriding the built-in
    /// table and the figures derived from the device; default $GPUPROF_PEAKS. See the
    /// format below.
    #[arg(long, value_name = "FILE")]
    peaks: Option<PathBuf>,
}

/// The environment variable naming the default peaks file.
pub const PEAKS_ENV: &str = "GPUPROF_PEAKS";

/// The peaks file `explicit` (`--peaks`), else `$GPUPROF_PEAKS`, parsed; no overrides
/// when neither is given. An unreadable or invalid file is an error naming it.
pub fn load_peaks(explicit: Option<&Path>) -> Result<Overrides> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os(PEAKS_ENV) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => return Ok(Overrides::default()),
        },
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read peaks file {}", path.display()))?;
    Ok(parse_overrides(&text, &path.display().to_string())?)
}

#[derive(clap::Args)]
pub struct TraceArgs {
    /// A session: the output directory of `gpuprof record` / `collect`, or the
    /// session.gpuprof file in it.
    #[arg(value_name = "SESSION")]
    session: PathBuf,
    /// Where to write the trace (Chrome trace event JSON). Default: trace.json beside
    /// the session file.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

impl TraceArgs {
    /// `gpuprof trace SESSION` with the default output.
    pub fn new(session: PathBuf) -> TraceArgs {
        TraceArgs {
            session,
            output: None,
        }
    }
}

/// The records of a session file, and the damage that stopped reading, if any.
pub struct Loaded {
    pub path: PathBuf,
    pub records: Vec<(u32, Record)>,
    pub frames: usize,
    pub damage: Option<SessionError>,
}

/// The session file of `session` (a directory or the file itself).
pub fn session_file(session: &Path) -> PathBuf {
    if session.is_dir() {
        session.join(SESSION_FILE)
    } else {
        session.to_path_buf()
    }
}

/// Reads every frame up to the end or the first damage. Errors only when nothing can
/// be read (missing file, not a session file, header cut short).
pub fn load(session: &Path) -> Result<Loaded> {
    let path = session_file(session);
    if !path.exists() {
        if session.is_dir() {
            anyhow::bail!("{}: no {SESSION_FILE} in this directory", session.display());
        }
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    // The session errors name the file; their text already includes the I/O cause.
    let mut reader = SessionReader::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut records = Vec::new();
    let mut frames = 0;
    let damage = loop {
        match reader.next_frame() {
            Ok(Some(frame)) => {
                frames += 1;
                records.extend(frame.records.into_iter().map(|r| (frame.pid, r)));
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    Ok(Loaded {
        path,
        records,
        frames,
        damage,
    })
}

/// Where the damage is, for the warning.
fn damage_offset(e: &SessionError) -> Option<u64> {
    match e {
        SessionError::Corrupt { offset, .. } | SessionError::Truncated { offset, .. } => {
            Some(*offset)
        }
        _ => None,
    }
}

/// Warns on stderr that what follows covers only part of the file.
pub fn warn_damage(loaded: &Loaded, what: &str) {
    if let Some(e) = &loaded.damage {
        let at = damage_offset(e)
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        eprintln!(
            "gpuprof: warning: {} is damaged{at}; the {what} covers only the {} frame{} before it",
            loaded.path.display(),
            loaded.frames,
            if loaded.frames == 1 { "" } else { "s" }
        );
    }
}

/// Turns the damage into the command's error, after the output was written.
pub fn fail_on_damage(loaded: Loaded) -> Result<()> {
    match loaded.damage {
        Some(e) => Err(anyhow::anyhow!("{e}")),
        None => Ok(()),
    }
}

/// The report of `records` in `format`, with the peaks of `$GPUPROF_PEAKS` (a bad file
/// is a warning and the built-in peaks are used).
pub fn render_report(records: &[(u32, Record)], format: Format, top: Option<usize>) -> String {
    let peaks = load_peaks(None).unwrap_or_else(|e| {
        eprintln!("gpuprof: warning: {e:#}; using the built-in peaks");
        Overrides::default()
    });
    render_report_with(records, format, top, &peaks)
}

/// The report of `records` in `format`, with `peaks` overriding the built-in peaks.
pub fn render_report_with(
    records: &[(u32, Record)],
    format: Format,
    top: Option<usize>,
    peaks: &Overrides,
) -> String {
    let summary = analysis::summarize(records);
    let roofline = efficiency(records, peaks);
    match format {
        Format::Table => render::table_with(&summary, Some(&roofline), Some(top.unwrap_or(20))),
        Format::Csv => render::csv_with(&summary, Some(&roofline), top),
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&render::json_with(&summary, Some(&roofline), top))
                    .expect("JSON values serialise");
            s.push('\n');
            s
        }
    }
}

pub fn report(args: &ReportArgs) -> Result<()> {
    // A bad peaks file fails before any output.
    let peaks = load_peaks(args.peaks.as_deref())?;
    let loaded = load(&args.session)?;
    warn_damage(&loaded, "report");
    let text = render_report_with(&loaded.records, args.format, args.top, &peaks);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("cannot write the report")?;
    fail_on_damage(loaded)
}

pub fn trace(args: &TraceArgs) -> Result<()> {
    let loaded = load(&args.session)?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None => loaded.path.with_file_name("trace.json"),
    };
    warn_damage(&loaded, "trace");
    let trace = analysis::chrome_trace(&loaded.records);
    let events = trace["traceEvents"].as_array().map_or(0, Vec::len);
    crate::output_file::write_replacing(&output, |w| {
        serde_json::to_writer(&mut *w, &trace)?;
        w.write_all(b"\n")
    })
    .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "gpuprof: trace written to {} ({events} events); open it in Perfetto (ui.perfetto.dev) or chrome://tracing",
        output.display()
    );
    fail_on_damage(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_file_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("gpuprof-peaks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(&good, "[[gpu]]\nname = \"NVIDIA L4\"\nfp8 = 200\n").unwrap();
        let o = load_peaks(Some(&good)).unwrap();
        assert_eq!(o.entries.len(), 1);
        assert_eq!(o.file, good.display().to_string());

        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[[gpu]]\nname = \"NVIDIA L4\"\nfp9 = 200\n").unwrap();
        let e = format!("{:#}", load_peaks(Some(&bad)).unwrap_err());
        assert!(
            e.starts_with(&format!(
                "peaks file {}, line 3, [[gpu]] entry 1 (\"NVIDIA L4\"), key `fp9`: unknown key",
                bad.display()
            )),
            "{e}"
        );

        let none = dir.join("none.toml");
        let e = format!("{:#}", load_peaks(Some(&none)).unwrap_err());
        assert!(
            e.starts_with(&format!("cannot read peaks file {}: ", none.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
