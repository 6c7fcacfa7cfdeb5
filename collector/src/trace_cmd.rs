//! `gpuprof trace`: the session as a timeline, in Perfetto's protobuf format (default)
//! or Chrome trace-event JSON, streamed: the session is read part by part
//! (`store::Store::read_part`) and each part's slices are written before the next
//! part is read (`analysis::trace::TraceBuilder`), so memory holds one part and the
//! builder's small state, whatever the length of the run.
//!
//! Damage is handled as `report` handles it: damaged files are skipped, each named
//! on stderr, and the command exits 3 after writing the trace.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use gpuprof_collector::analysis::integrity::{screen, DamagedFile, Integrity, Unsealed};
use gpuprof_collector::analysis::trace::chrome::ChromeWriter;
use gpuprof_collector::analysis::trace::event::Sink;
use gpuprof_collector::analysis::trace::perfetto::PerfettoWriter;
use gpuprof_collector::analysis::trace::{
    first_timestamp, TraceBuilder, TraceFormat, TraceStats, Window, HOLD_PARTS,
};
use gpuprof_collector::store::Store;
use wire::Record;

use crate::report;

#[derive(clap::Args)]
pub struct Args {
    /// A session: the output directory of `gpuprof record` / `collect`.
    #[arg(value_name = "SESSION")]
    session: PathBuf,
    /// Where to write the trace. Default: trace.perfetto-trace (perfetto) or
    /// trace.json (chrome) in the session directory.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The trace format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Perfetto)]
    format: TraceFormat,
    /// Write only what overlaps the window from S seconds after the session's first
    /// timestamp: the earliest start of any kernel, copy, set, launch call or NVTX
    /// marker in the session (time 0 of the Chrome JSON). A slice (kernel, copy, set,
    /// launch call, NVTX range) overlaps the window when it starts at or before its
    /// end and ends at or after its start; it is then written whole. Fractions
    /// allowed: 2.5, 0.001. Default: 0.
    #[arg(long, value_name = "S", value_parser = seconds, allow_hyphen_values = true)]
    from: Option<f64>,
    /// Write only what overlaps the window up to S seconds after the session's first
    /// timestamp (see --from). Default: the end of the session.
    #[arg(long, value_name = "S", value_parser = seconds, allow_hyphen_values = true)]
    to: Option<f64>,
}

impl Args {
    /// `gpuprof trace SESSION` with the default format and output.
    pub fn new(session: PathBuf) -> Args {
        Args {
            session,
            output: None,
            format: TraceFormat::Perfetto,
            from: None,
            to: None,
        }
    }
}

/// A time in seconds from the session's first timestamp: a number, 0 or more.
fn seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() {
        return Err(format!("{s:?} is not a finite number of seconds"));
    }
    if v < 0.0 {
        return Err(format!(
            "{s} s is before the session's first timestamp: a time is counted from it, 0 or more seconds"
        ));
    }
    Ok(v)
}

/// `s` seconds in ns, rounded; saturates.
fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// The default file name of `format`.
pub fn default_name(format: TraceFormat) -> &'static str {
    match format {
        TraceFormat::Perfetto => "trace.perfetto-trace",
        TraceFormat::Chrome => "trace.json",
    }
}

/// An error of reading the session, kept apart from errors of writing the trace.
struct ReadError(anyhow::Error);

/// Part `i` of `store`, what of it verifies, impossible records screened out; what
/// does not verify goes to `integrity`.
fn read(store: &Store, i: usize, integrity: Option<&mut Integrity>) -> Result<Vec<(u32, Record)>> {
    let part = store.read_part(i)?;
    if let Some(integrity) = integrity {
        integrity
            .damaged
            .extend(part.damaged.into_iter().map(|d| DamagedFile {
                file: d.file,
                bytes: d.bytes,
                records: d.records,
                reason: d.reason,
            }));
    }
    Ok(screen(part.records).0)
}

/// The first timestamp of the session (one pass over it).
fn origin(store: &Store) -> Result<Option<u64>> {
    let mut first: Option<u64> = None;
    for i in 0..store.parts.len() {
        let records = read(store, i, None)?;
        if let Some(t) = first_timestamp(&records) {
            first = Some(first.map_or(t, |f| f.min(t)));
        }
    }
    Ok(first)
}

/// Every part of `store` through `builder`.
fn stream<S: Sink>(
    store: &Store,
    mut builder: TraceBuilder<S>,
    integrity: &mut Integrity,
    failed: &mut Option<ReadError>,
) -> std::io::Result<TraceStats> {
    for i in 0..store.parts.len() {
        let records = match read(store, i, Some(integrity)) {
            Ok(r) => r,
            Err(e) => {
                let message = format!("{e:#}");
                *failed = Some(ReadError(e));
                return Err(std::io::Error::other(message));
            }
        };
        builder.part(&records)?;
    }
    Ok(builder.finish()?.1)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn run(args: &Args) -> Result<ExitCode> {
    if let (Some(from), Some(to)) = (args.from, args.to) {
        if from > to {
            bail!("--from {from} is after --to {to}: the window would hold nothing");
        }
    }
    let store = Store::open(&args.session)?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None => store.dir.join(default_name(args.format)),
    };
    let windowed = args.from.is_some() || args.to.is_some();
    let origin = if windowed || args.format == TraceFormat::Chrome {
        origin(&store)?
    } else {
        None
    };
    let window = match (windowed, origin) {
        (true, Some(o)) => Some(Window {
            from_ns: o.saturating_add(args.from.map_or(0, ns)),
            to_ns: args.to.map_or(u64::MAX, |t| o.saturating_add(ns(t))),
        }),
        // A session without a timestamp has nothing to write either way.
        _ => None,
    };

    let mut integrity = Integrity::default();
    let mut failed = None;
    let mut stats = TraceStats::default();
    let written = gpuprof_collector::output_file::write_replacing(&output, |w| {
        stats = match args.format {
            TraceFormat::Perfetto => stream(
                &store,
                TraceBuilder::new(PerfettoWriter::new(w), window),
                &mut integrity,
                &mut failed,
            )?,
            TraceFormat::Chrome => stream(
                &store,
                TraceBuilder::new(ChromeWriter::new(w, origin.unwrap_or(0))?, window),
                &mut integrity,
                &mut failed,
            )?,
        };
        Ok(())
    });
    if let Some(ReadError(e)) = failed {
        return Err(e);
    }
    written.with_context(|| format!("cannot write {}", output.display()))?;
    integrity.unsealed = store
        .unsealed
        .iter()
        .map(|(dir, bytes)| Unsealed {
            dir: dir.clone(),
            bytes: *bytes,
        })
        .collect();

    report::warn_damage_of(&store.dir, &integrity, "trace");
    summary(&output, args, &stats);
    Ok(report::finish_of(
        &store.dir,
        &integrity,
        store.parts.len(),
        "trace",
    ))
}

/// What was written, on stderr.
fn summary(output: &Path, args: &Args, s: &TraceStats) {
    let window = match (args.from, args.to) {
        (None, None) => String::new(),
        (from, to) => format!(
            " (what overlaps {} s to {} after the session's first timestamp)",
            from.unwrap_or(0.0),
            to.map_or("its end".to_string(), |t| format!("{t} s"))
        ),
    };
    let viewer = match args.format {
        TraceFormat::Perfetto => "open it in ui.perfetto.dev",
        TraceFormat::Chrome => "open it in ui.perfetto.dev or chrome://tracing",
    };
    eprintln!(
        "gpuprof: trace written to {}: {}, {}, {}, {}, {}, {} from launch to kernel{window}; {viewer}",
        output.display(),
        plural(s.kernels, "kernel", "kernels"),
        plural(s.memcpys, "copy", "copies"),
        plural(s.memsets, "set", "sets"),
        plural(s.launches, "launch call", "launch calls"),
        plural(s.ranges, "NVTX range", "NVTX ranges"),
        plural(s.flows, "flow", "flows"),
    );
    if s.launches_without_kernel > 0 {
        eprintln!(
            "gpuprof: {} no kernel in their part of the session or the {HOLD_PARTS} after it \
             (captured into a CUDA graph, failed, or the kernel's record was lost): no flow from them",
            plural(s.launches_without_kernel, "launch call has", "launch calls have"),
        );
    }
    for (n, one, many, what) in [
        (
            s.ranges_never_closed,
            "NVTX range",
            "NVTX ranges",
            "never closed: not in the trace",
        ),
        (
            s.range_ends_without_start,
            "NVTX range end",
            "NVTX range ends",
            "without a start: ignored",
        ),
        (
            s.ranges_ending_before_start,
            "NVTX range",
            "NVTX ranges",
            "ending before their start: not in the trace",
        ),
    ] {
        if n > 0 {
            eprintln!("gpuprof: {} {what}", plural(n, one, many));
        }
    }
}
