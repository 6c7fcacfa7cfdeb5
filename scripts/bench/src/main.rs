//! gpuprof's benchmarks. Every figure is a ratio measured in the same run, so it
//! means the same on a slow CI machine and a fast workstation.
//!
//!   gpuprof-bench pipeline [--records N]   writer -> ring -> collector -> session file
//!   gpuprof-bench launch --flood BIN --sim-dir DIR --lib LIBGPUPROF --baseline TOOL.so
//!                        --gpuprof BIN [--launches N] [--runs N]
//!                                          app-thread cost per kernel launch over a
//!                                          CUPTI tool with the same subscriptions

use anyhow::{bail, Context, Result};

mod launch;
mod pipeline;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("pipeline") => pipeline::run(&args[1..]),
        Some("launch") => launch::run(&args[1..]),
        _ => bail!("usage: gpuprof-bench pipeline [--records N] | launch --flood BIN --sim-dir DIR --lib SO --baseline SO --gpuprof BIN [--launches N] [--runs N]"),
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
