//! `gpuprof trace`: the session as a timeline, in Perfetto's protobuf format (default),
//! Chrome trace-event JSON or the PyTorch profiler's (Kineto's) JSON, one file per
//! process in a directory (`output::trace::kineto`), streamed: the session is read part by part
//! (`store::Store::read_part`) and each part's slices are written before the next
//! part is read (`output::trace::TraceBuilder`; kernels once the report's join
//! window has finalized them, with their GEMM call and roofline numbers), so memory
//! holds one part, the join window and the builder's small state, whatever the
//! length of the run. A session with PM sampling windows first gets the report's
//! analysis (one more pass) for the DRAM bytes fitted to them. A Kineto trace, or a
//! window, first needs the session's first timestamp (and Kineto each process's
//! header): a pass over the columns that give them (`output::trace::prepass`).
//!
//! Damage is handled as `report` handles it: damaged files are skipped, each named
//! on stderr, and the command exits 3 after writing the trace.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use crate::analysis::classes::ClassKey;
use crate::analysis::gemm::GemmShape;
use crate::analysis::integrity::{screen, DamagedFile, Integrity, Unsealed};
use crate::analysis::roles::{shape_roles, ModelConfig};
use crate::analysis::roofline::efficiency::fitted_bytes_per_ns;
use crate::analysis::session::analyse;
use crate::output::gzip_thread::GzipThread;
use crate::output::trace::chrome::ChromeWriter;
use crate::output::trace::event::Sink;
use crate::output::trace::kineto::{Files, KinetoWriter, ProcessHeader};
use crate::output::trace::perfetto::PerfettoWriter;
use crate::output::trace::prepass::prepass;
use crate::output::trace::{TraceBuilder, TraceFormat, TraceStats, Window, HOLD_PARTS};
use crate::store::tables::TableId;
use crate::store::Store;
use anyhow::{bail, Context, Result};
use wire::Record;

use crate::cli::sessions;

#[derive(clap::Args)]
pub struct Args {
    /// A session: the output directory of `gpuprof record` / `collect`.
    #[arg(value_name = "SESSION")]
    session: PathBuf,
    /// Where to write the trace. Default: trace.perfetto-trace (perfetto),
    /// trace.json (chrome) or the directory kineto/ (kineto) in the session
    /// directory. For kineto, a directory: made if missing; one that exists must hold
    /// nothing but a Kineto trace gpuprof wrote before, which the new one replaces
    /// (HTA reads every JSON file in it; another tool's trace there is left alone).
    #[arg(short, long, value_name = "FILE|DIR")]
    output: Option<PathBuf>,
    /// The trace format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Perfetto)]
    format: TraceFormat,
    /// With --format kineto: gzip each file (`*.pt.trace.json.gz`, which HTA reads
    /// as it reads `*.pt.trace.json`), about a tenth of the bytes.
    #[arg(long)]
    gzip: bool,
    /// With --format kineto: each instance of the NVTX range with this message (a
    /// decode step, an iteration) is also written as a `ProfilerStep#N` annotation
    /// (N = 0, 1, ... per process), as the PyTorch profiler marks its steps: HTA then
    /// splits the trace into iterations (it leaves out the last one by default) and
    /// its critical path takes `annotation="ProfilerStep"`.
    #[arg(long, value_name = "RANGE")]
    steps: Option<String>,
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
    /// The model's Hugging Face config.json: each GEMM kernel gets its role in the
    /// model (`gemm_role`: qkv_proj, o_proj, ..., or "(no role)"), as `report
    /// --model` names it. One more pass over the session.
    #[arg(long, value_name = "CONFIG")]
    model: Option<PathBuf>,
    /// The tensor-parallel degree the model ran at (default: the one whose roles
    /// cover the most GEMM time).
    #[arg(long, value_name = "N", requires = "model", value_parser = clap::value_parser!(u64).range(1..=1024))]
    tp: Option<u64>,
}

impl Args {
    /// `gpuprof trace SESSION` with the default format and output.
    pub fn new(session: PathBuf) -> Args {
        Args {
            session,
            output: None,
            format: TraceFormat::Perfetto,
            gzip: false,
            steps: None,
            from: None,
            to: None,
            model: None,
            tp: None,
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
        TraceFormat::Kineto => "kineto",
    }
}

/// An error of reading the session, kept apart from errors of writing the trace.
struct ReadError(anyhow::Error);

/// Part `i` of `store`, what of it verifies, impossible records screened out; what
/// does not verify goes to `integrity`.
fn read(store: &Store, i: usize, integrity: Option<&mut Integrity>) -> Result<Vec<(u32, Record)>> {
    let part = store.read_part(i)?;
    let (kept, impossible) = screen(part.records);
    if let Some(integrity) = integrity {
        integrity
            .damaged
            .extend(part.damaged.into_iter().map(DamagedFile::from));
        integrity.add_impossible(impossible);
    }
    Ok(kept)
}

/// The first timestamp of the session (one pass over it).
fn origin(store: &Store) -> Result<Option<u64>> {
    Ok(prepass(store)?.first)
}

/// What the trace takes from the analysis `report` makes (one more pass over the
/// session, made only when needed): the DRAM bytes per ns each kernel class's
/// launches moved, fitted to the session's PM sampling windows (for the launches
/// without counters of their own), and, with `--model`, each GEMM shape's role. A
/// failed pass costs the fitted bytes only, with a warning; the roles were asked for,
/// so it is an error there.
fn from_analysis(
    args: &Args,
    store: &Store,
    model: Option<&ModelConfig>,
) -> Result<(HashMap<ClassKey, f64>, HashMap<GemmShape, String>)> {
    let sampled = store.holds_rows_of(TableId::CounterSamples);
    if !sampled && model.is_none() {
        return Ok((HashMap::new(), HashMap::new()));
    }
    let analysed = match analyse(&args.session, |_, _| {}) {
        Ok(a) => a,
        Err(e) if model.is_none() => {
            eprintln!(
                "gpuprof: warning: {e:#}; the trace gives no DRAM bytes fitted to PM sampling"
            );
            return Ok((HashMap::new(), HashMap::new()));
        }
        Err(e) => return Err(e.context("the GEMM roles (--model) need the session's analysis")),
    };
    let fitted = if sampled {
        fitted_bytes_per_ns(&analysed.aggregate)
    } else {
        HashMap::new()
    };
    let roles = model
        .map(|c| shape_roles(&analysed.aggregate, c, args.tp))
        .unwrap_or_default();
    Ok((fitted, roles))
}

/// The Kineto trace's files, written under temporary names in the output directory
/// (made when the first is) and renamed into place once all are whole.
struct DirFiles {
    dir: PathBuf,
    made: bool,
    /// Each file gzip-compressed, named `*.pt.trace.json.gz`.
    gzip: bool,
    /// (temporary name, final name), shared with the caller, who renames or removes
    /// them.
    files: Rc<RefCell<Vec<(PathBuf, PathBuf)>>>,
}

/// A Kineto file as written: plain, or gzip-compressed on a second thread (the
/// export's own work and the compression then take about as long as each other).
enum KinetoOut {
    Plain(std::io::BufWriter<std::fs::File>),
    Gzip(GzipThread),
}

impl std::io::Write for KinetoOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            KinetoOut::Plain(w) => w.write(buf),
            KinetoOut::Gzip(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            KinetoOut::Plain(w) => w.flush(),
            KinetoOut::Gzip(w) => w.flush(),
        }
    }
}

impl Files for DirFiles {
    type W = KinetoOut;
    fn create(&mut self, name: &str) -> std::io::Result<Self::W> {
        if !self.made {
            if !self.dir.is_dir() {
                crate::store::output_file::make_dir(&self.dir)?;
            }
            self.made = true;
        }
        let name = kineto_file_name(name, self.gzip);
        let path = self.dir.join(&name);
        let (tmp, file) = crate::store::output_file::temp_beside(&path, &name)?;
        self.files.borrow_mut().push((tmp, path));
        Ok(if self.gzip {
            KinetoOut::Gzip(GzipThread::new(file, flate2::Compression::fast())?)
        } else {
            KinetoOut::Plain(std::io::BufWriter::with_capacity(1 << 16, file))
        })
    }

    /// The writer flushed the file before: a gzipped one also needs its trailer.
    fn close(&mut self, w: &mut Self::W) -> std::io::Result<()> {
        match w {
            KinetoOut::Gzip(gz) => gz.finish(),
            KinetoOut::Plain(_) => Ok(()),
        }
    }
}

/// Removes the files of an earlier Kineto trace gpuprof wrote in `dir` that this one
/// (`files`: temporary and final names) does not replace, then renames this one's
/// into place. A file gpuprof did not write is never removed.
fn commit(dir: &Path, files: &[(PathBuf, PathBuf)]) -> std::io::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let new: Vec<&PathBuf> = files.iter().map(|(_, path)| path).collect();
    for old in kineto_files(dir)? {
        if !new.contains(&&old) && written_by_gpuprof(&old) {
            std::fs::remove_file(&old)?;
        }
    }
    for (tmp, path) in files {
        std::fs::rename(tmp, path)?;
    }
    Ok(())
}

/// What a Kineto file gpuprof writes holds near its start: its top-level `gpuprof`
/// object (`kineto.rs`, the header), which the PyTorch profiler's files lack.
const GPUPROF_HEADER_KEY: &[u8] = b"\n  \"gpuprof\": {";
/// How much of a file's start is searched for it (the header precedes the events).
const HEADER_BYTES: u64 = 1 << 16;

/// Whether `path` is a regular file (not followed if a link) that gpuprof's Kineto
/// writer wrote ([`GPUPROF_HEADER_KEY`] in its first [`HEADER_BYTES`], decompressed
/// for a `.gz`).
fn written_by_gpuprof(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::new();
    // A gzipped one is read through the decompressor, its first bytes only.
    let read = if path.to_string_lossy().ends_with(".gz") {
        flate2::read::GzDecoder::new(file)
            .take(HEADER_BYTES)
            .read_to_end(&mut head)
    } else {
        file.take(HEADER_BYTES).read_to_end(&mut head)
    };
    if read.is_err() {
        return false;
    }
    head.windows(GPUPROF_HEADER_KEY.len())
        .any(|w| w == GPUPROF_HEADER_KEY)
}

/// The name a process's Kineto file (`name`, `*.pt.trace.json`) is written under.
fn kineto_file_name(name: &str, gzip: bool) -> String {
    if gzip {
        format!("{name}.gz")
    } else {
        name.to_string()
    }
}

/// Whether `name` is a Kineto trace file's: `*.pt.trace.json`, or gzipped
/// `*.pt.trace.json.gz`.
fn kineto_name(name: &str) -> bool {
    name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz")
}

/// The `*.pt.trace.json` and `*.pt.trace.json.gz` files in `dir`.
fn kineto_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if kineto_name(&e.file_name().to_string_lossy()) && e.file_type()?.is_file() {
            out.push(e.path());
        }
    }
    Ok(out)
}

/// Refuses an output directory for the Kineto trace that is not a directory of the
/// user's own holding nothing but an earlier Kineto trace (and our temporary files).
fn check_kineto_dir(dir: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("{}: {e}", dir.display()),
    };
    if !meta.is_dir() {
        bail!(
            "{} is not a directory: the Kineto trace is a directory of files, one per process (name a new or empty one with -o)",
            dir.display()
        );
    }
    crate::store::output_file::check_own_dir(dir, &meta)?;
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let kineto = kineto_name(&name) && e.file_type().is_ok_and(|t| t.is_file());
        if kineto && !written_by_gpuprof(&e.path()) {
            bail!(
                "{} holds {name:?}, a Kineto trace gpuprof did not write (the PyTorch profiler's?): HTA reads every JSON file of the directory it is given, and gpuprof neither mixes its trace with it nor removes it (name a new or empty directory with -o)",
                dir.display()
            );
        }
        if !kineto {
            let what = match e.file_type() {
                Ok(t) if t.is_symlink() => "a symbolic link, not a trace file".to_string(),
                Ok(t) if !t.is_file() => "not a regular file".to_string(),
                _ if kineto_name(&name) => "not a regular file".to_string(),
                _ => "not a Kineto trace file (*.pt.trace.json or .json.gz)".to_string(),
            };
            bail!(
                "{} holds {name:?}, {what}: HTA reads every JSON file of the directory it is given, so gpuprof writes the trace only into a new or empty directory, or over an earlier Kineto trace it wrote (name one with -o)",
                dir.display()
            );
        }
    }
    Ok(())
}

/// Every part of `store` through `builder`; what was written, and the sink.
fn stream<S: Sink>(
    store: &Store,
    mut builder: TraceBuilder<S>,
    integrity: &mut Integrity,
    failed: &mut Option<ReadError>,
) -> std::io::Result<(TraceStats, S)> {
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
    let (sink, stats) = builder.finish()?;
    Ok((stats, sink))
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
    let model = sessions::load_model(args.model.as_deref())?;
    let store = Store::open(&args.session)?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None => store.dir.join(default_name(args.format)),
    };
    if args.format == TraceFormat::Kineto {
        check_kineto_dir(&output)?;
    } else if args.gzip {
        anyhow::bail!("--gzip is for --format kineto (a Perfetto trace is compact already)");
    } else if args.steps.is_some() {
        anyhow::bail!(
            "--steps is for --format kineto (ProfilerStep annotations are the PyTorch profiler's)"
        );
    }
    let windowed = args.from.is_some() || args.to.is_some();
    let mut headers = Vec::new();
    let (fitted, roles) = from_analysis(args, &store, model.as_ref())?;
    let origin = match args.format {
        TraceFormat::Kineto => {
            let p = prepass(&store)?;
            headers = p.headers;
            p.first
        }
        TraceFormat::Chrome => origin(&store)?,
        TraceFormat::Perfetto if windowed => origin(&store)?,
        TraceFormat::Perfetto => None,
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
    if args.format == TraceFormat::Kineto {
        let temps = Rc::new(RefCell::new(Vec::new()));
        let files = DirFiles {
            dir: output.clone(),
            made: false,
            gzip: args.gzip,
            files: Rc::clone(&temps),
        };
        let writer = KinetoWriter::new(files, origin.unwrap_or(0), headers.clone())
            .with_steps(args.steps.clone());
        let streamed = stream(
            &store,
            TraceBuilder::new(writer, window)
                .with_fitted(fitted)
                .with_roles(roles),
            &mut integrity,
            &mut failed,
        );
        let committed = streamed.and_then(|(s, writer)| {
            stats = s;
            // Each file is flushed (finish) and closed before the renames.
            let files = writer.into_files();
            drop(files);
            commit(&output, &temps.borrow())
        });
        for (tmp, _) in temps.borrow().iter() {
            if committed.is_err() {
                let _ = std::fs::remove_file(tmp);
            }
            crate::store::temp_files::forget(tmp);
        }
        if let Some(ReadError(e)) = failed {
            return Err(e);
        }
        committed
            .with_context(|| format!("cannot write the Kineto trace in {}", output.display()))?;
        if temps.borrow().is_empty() {
            bail!(
                "{}: the session has no kernel, copy, set, launch call or NVTX range{}: no Kineto trace written",
                store.dir.display(),
                if window.is_some() { " in the window" } else { "" }
            );
        }
        // The processes that have a file.
        let written: Vec<ProcessHeader> = headers
            .into_iter()
            .filter(|h| {
                let path = output.join(kineto_file_name(&h.file_name(), args.gzip));
                temps.borrow().iter().any(|(_, p)| *p == path)
            })
            .collect();
        return Ok(finish(
            &store,
            &output,
            args,
            &stats,
            integrity,
            &written,
            temps.borrow().len(),
        ));
    }
    let written = crate::store::output_file::write_replacing(&output, |w| {
        stats = match args.format {
            TraceFormat::Perfetto => {
                stream(
                    &store,
                    TraceBuilder::new(PerfettoWriter::new(w), window)
                        .with_fitted(fitted)
                        .with_roles(roles),
                    &mut integrity,
                    &mut failed,
                )?
                .0
            }
            TraceFormat::Chrome => {
                stream(
                    &store,
                    TraceBuilder::new(ChromeWriter::new(w, origin.unwrap_or(0))?, window)
                        .with_fitted(fitted)
                        .with_roles(roles),
                    &mut integrity,
                    &mut failed,
                )?
                .0
            }
            TraceFormat::Kineto => unreachable!("written above"),
        };
        Ok(())
    });
    if let Some(ReadError(e)) = failed {
        return Err(e);
    }
    written.with_context(|| format!("cannot write {}", output.display()))?;
    Ok(finish(&store, &output, args, &stats, integrity, &[], 0))
}

/// The damage warnings, the summary and the exit code.
fn finish(
    store: &Store,
    output: &Path,
    args: &Args,
    stats: &TraceStats,
    mut integrity: Integrity,
    headers: &[ProcessHeader],
    files: usize,
) -> ExitCode {
    integrity
        .damaged
        .extend(store.damaged.iter().cloned().map(DamagedFile::from));
    integrity.lost.extend(store.lost().iter().cloned());
    integrity.unsealed = store
        .unsealed
        .iter()
        .map(|(dir, bytes)| Unsealed {
            dir: dir.clone(),
            bytes: *bytes,
        })
        .collect();
    sessions::warn_damage_of(&store.dir, &integrity, "trace");
    sessions::warn_impossible_of(&store.dir, &integrity, "trace");
    summary(output, args, stats, headers, files);
    sessions::finish_of(&store.dir, &integrity, store.parts.len(), "trace")
}

/// What was written, on stderr.
fn summary(output: &Path, args: &Args, s: &TraceStats, headers: &[ProcessHeader], files: usize) {
    let window = match (args.from, args.to) {
        (None, None) => String::new(),
        (from, to) => format!(
            " (what overlaps {} s to {} after the session's first timestamp)",
            from.unwrap_or(0.0),
            to.map_or("its end".to_string(), |t| format!("{t} s"))
        ),
    };
    let viewer = match args.format {
        TraceFormat::Perfetto => "open it in ui.perfetto.dev".to_string(),
        TraceFormat::Chrome => "open it in ui.perfetto.dev or chrome://tracing".to_string(),
        TraceFormat::Kineto => format!(
            "analyse it with HTA: TraceAnalysis(trace_dir={:?})",
            output.display().to_string()
        ),
    };
    let what = match args.format {
        TraceFormat::Kineto => {
            let assigned = headers.iter().filter(|h| !h.rank_from_env).count();
            let ranks = if assigned == 0 {
                "each rank from its process's RANK".to_string()
            } else if assigned == headers.len() {
                "ranks numbered by gpuprof: no process had RANK set".to_string()
            } else {
                format!(
                    "{} numbered by gpuprof, the others from RANK",
                    plural(assigned as u64, "rank", "ranks")
                )
            };
            format!(
                "Kineto trace written to {} ({}, one per process; {ranks})",
                output.display(),
                plural(files as u64, "file", "files")
            )
        }
        _ => format!("trace written to {}", output.display()),
    };
    let gpu_ranges = if args.format == TraceFormat::Kineto {
        format!(
            ", {}, {}",
            plural(
                s.gpu_ranges,
                "NVTX range on the GPU",
                "NVTX ranges on the GPU"
            ),
            plural(
                s.gemm_ops,
                "GEMM call as an operator",
                "GEMM calls as operators"
            )
        )
    } else {
        String::new()
    };
    // Calls other than launches (copies, sets, waits...) only when the session has them.
    let calls = if s.api_calls > 0 {
        let syncs = if args.format == TraceFormat::Kineto {
            format!(" ({} on the GPU)", plural(s.syncs, "wait", "waits"))
        } else {
            String::new()
        };
        format!(
            ", {}{syncs}",
            plural(s.api_calls, "other CUDA call", "other CUDA calls")
        )
    } else {
        String::new()
    };
    let flows_from = if s.api_calls > 0 {
        "from CPU call to GPU work"
    } else {
        "from launch to kernel"
    };
    eprintln!(
        "gpuprof: {what}: {}, {}, {}, {}{calls}, {}{gpu_ranges}, {} {flows_from}{window}; {viewer}",
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
