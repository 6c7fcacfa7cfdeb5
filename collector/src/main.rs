//! `gpuprof`: the command-line side of the profiler. Everything that runs outside the
//! profiled process lives here; the injected library is `libgpuprof.so`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod doctor;

/// A per-kernel GPU profiler for NVIDIA GPUs: timing, counters, GEMM shapes,
/// roofline, MFU and MBU, for unmodified CUDA programs.
#[derive(Parser)]
#[command(name = "gpuprof", version = version_line(), about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show which CUDA driver and CUPTI library the profiler would use, and why other
    /// candidates were rejected. Exits 1 when no usable CUPTI is found.
    Doctor(doctor::Args),
}

fn version_line() -> &'static str {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (record protocol ",
        protocol_version!(),
        ")"
    )
}

/// The protocol version as a literal, checked against the wire crate at compile time.
macro_rules! protocol_version {
    () => {
        "1"
    };
}
use protocol_version;
const _: () = assert!(
    wire::PROTOCOL_VERSION == 1,
    "update protocol_version!() in main.rs"
);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Doctor(args) => doctor::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpuprof: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
