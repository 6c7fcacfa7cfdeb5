//! gpuprof's benchmarks. The speed figures are ratios measured in the same run, so
//! they mean the same on a slow CI machine and a fast workstation; the data-path
//! figures (bytes per kernel, time and memory to read a session) are absolute.
//!
//!   gpuprof-bench pipeline [--records N]   writer -> ring -> collector -> session file
//!   gpuprof-bench launch --flood BIN --sim-dir DIR --lib LIBGPUPROF --baseline TOOL.so
//!                        --gpuprof BIN [--launches N] [--runs N]
//!                                          app-thread cost per kernel launch over a
//!                                          CUPTI tool with the same subscriptions
//!   gpuprof-bench session --kernels N -o DIR [--counter-every N] [--seed N]
//!                                          a generated LLM-serving session
//!   gpuprof-bench sizes DIR [--columns]    a session's bytes per kernel, per table
//!   gpuprof-bench encodings DIR            the same session under other encodings
//!   gpuprof-bench scale --gpuprof BIN [--kernels N,N,..] [--counter-every N]
//!                       [--mem-limit-gb N] generated sessions: bytes, report, trace
//!   gpuprof-bench recorded --gpuprof BIN --workload BIN --sim-dir DIR
//!                          [--decode-steps N] [--mem-limit-gb N]
//!                                          a session recorded on the simulated stack

use anyhow::{bail, Context, Result};

mod encodings;
mod launch;
mod pipeline;
mod scale;
mod session;
mod sizes;

const USAGE: &str = "usage: gpuprof-bench pipeline [--records N] \
    | launch --flood BIN --sim-dir DIR --lib SO --baseline SO --gpuprof BIN [--launches N] [--runs N] \
    | session --kernels N -o DIR [--counter-every N] [--seed N] \
    | sizes DIR [--columns] \
    | encodings DIR \
    | scale --gpuprof BIN [--kernels N,N,..] [--counter-every N] [--mem-limit-gb N] \
    | recorded --gpuprof BIN --workload BIN --sim-dir DIR [--decode-steps N] [--mem-limit-gb N]";

fn main() -> Result<()> {
    // As the gpuprof binary does: the pipeline's figures are the collector's.
    gpuprof_collector::cli::allocator::keep_large_blocks();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("pipeline") => pipeline::run(&args[1..]),
        Some("launch") => launch::run(&args[1..]),
        Some("session") => session::run(&args[1..]),
        Some("sizes") => sizes::run(&args[1..]),
        Some("encodings") => encodings::run(&args[1..]),
        Some("scale") => scale::run(&args[1..]),
        Some("recorded") => scale::recorded(&args[1..]),
        _ => bail!("{USAGE}"),
    }
}

/// The value of `--name` in `args`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let v = args
                .get(i + 1)
                .with_context(|| format!("{name} needs a value"))?;
            v.parse()
                .map(Some)
                .map_err(|e| anyhow::anyhow!("{name} {v}: {e}"))
        }
    }
}
