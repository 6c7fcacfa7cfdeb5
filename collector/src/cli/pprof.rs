//! `gpuprof pprof`: a session's GPU time as a pprof profile (gzipped profile.proto)
//! for `go tool pprof`, Pyroscope and Grafana: one flame graph frame per process, NVTX
//! range, kernel family and kernel ([`crate::output::pprof`]). The
//! session is read part by part as `report` reads it, with launches also summed by the
//! NVTX ranges enclosing them, so memory stays bounded whatever the length of the run.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::analysis::roofline::efficiency::efficiency_of;
use crate::analysis::session::analyse_stacks;
use crate::analysis::summary::summarize_aggregate;
use crate::output::pprof::{profile, write_gzipped};
use anyhow::{bail, Context, Result};

use crate::cli::sessions;

/// The file written in the session directory when no `-o` is given.
pub const DEFAULT_NAME: &str = "gpu.pb.gz";

#[derive(clap::Args)]
pub struct Args {
    /// Sessions: output directories of `gpuprof record` / `collect` (a quoted pattern
    /// is expanded, as for `report`). Several are written as one profile, each process
    /// frame naming its session.
    #[arg(value_name = "SESSION", required = true, num_args = 1..)]
    sessions: Vec<PathBuf>,
    /// Where to write the profile. Default: gpu.pb.gz in the session directory
    /// (required with several sessions).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let sessions = sessions::expand_sessions(&args.sessions)?;
    let output = match (&args.output, &sessions[..]) {
        (Some(o), _) => o.clone(),
        (None, [one]) => one.join(DEFAULT_NAME),
        (None, _) => bail!(
            "{} sessions given and no -o FILE: say where to write their profile",
            sessions.len()
        ),
    };
    // The per-class values (family, DRAM bytes of launches that measured none) do
    // not depend on peaks: the built-in table serves.
    let analysed = sessions::progress_of(&sessions, |s, p| analyse_stacks(s, p))?;
    let e = efficiency_of(&analysed.aggregate, &Default::default());
    let comment = format!(
        "gpuprof pprof {}",
        sessions
            .iter()
            .map(|s| s.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let summary = summarize_aggregate(&analysed.aggregate);
    let (p, stats) = profile(&analysed.aggregate, &summary, &e, &comment);
    crate::store::output_file::write_replacing(&output, |w| write_gzipped(&p, w))
        .with_context(|| format!("cannot write {}", output.display()))?;
    sessions::warn_damage(&analysed, "profile");
    sessions::warn_impossible(&analysed, "profile");
    eprintln!(
        "gpuprof: profile written to {}: {} launch{}, {} ns of GPU time, {} sample{}, {} frames; \
         view it with `go tool pprof -http=: {}` or send it to Pyroscope",
        output.display(),
        stats.launches,
        if stats.launches == 1 { "" } else { "es" },
        stats.gpu_ns,
        stats.samples,
        if stats.samples == 1 { "" } else { "s" },
        stats.frames,
        output.display(),
    );
    Ok(sessions::finish(&analysed, "profile"))
}
