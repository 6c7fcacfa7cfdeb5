//! `gpuprof`: the command-line side of the profiler. Everything that runs outside the
//! profiled process lives here; the injected library is `libgpuprof.so`. The analysis
//! is the `gpuprof_collector` library (`lib.rs`); this binary reads, drains, prints.

#![warn(clippy::too_many_lines)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use gpuprof_collector::cli::{
    allocator, demo, doctor, metrics, pprof, record, report, roofline, trace, version,
};

/// A per-kernel GPU profiler for NVIDIA GPUs: timing, counters, GEMM shapes,
/// roofline, MFU and MBU, for unmodified CUDA programs.
#[derive(Parser)]
#[command(name = "gpuprof", version = version::LINE, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program under the profiler and report its kernels
    ///
    /// Starts CMD with CUDA_INJECTION64_PATH naming libgpuprof.so ($GPUPROF_LIB, else
    /// the one beside this binary) and GPUPROF_SESSION_DIR naming a fresh ring
    /// directory on /dev/shm ($TMPDIR without /dev/shm). Every CUDA process CMD starts
    /// writes its own ring there; gpuprof drains them into the session in DIR (Parquet
    /// parts, sealed every few seconds) while CMD runs, prints the report when CMD and its profiled processes have ended,
    /// removes the ring directory and exits with CMD's exit status (128 + N when
    /// signal N ended it; 127 when CMD is not found).
    ///
    /// Ctrl+C reaches CMD as usual (a SIGINT sent to gpuprof alone is forwarded to
    /// it); a second Ctrl+C stops collecting, and what was collected is still written
    /// and reported.
    ///
    /// Example: gpuprof record -o run1 -- python infer.py --steps 4
    Record(record::RecordArgs),
    /// Print the report of a recorded session: processes, kernels by GPU time, counters,
    /// the roofline (FLOPs, DRAM bytes, arithmetic intensity, MFU, MBU per kernel, GEMM
    /// shape, kernel family, NVTX range and run) with the peaks used, memory copies and
    /// sets, CPU time in CUDA calls (blocked in synchronize, copies, sets, allocations)
    /// per thread and NVTX range, NVTX ranges, dropped records.
    ///
    /// SESSION is the output directory of `gpuprof record`. Damaged files of the
    /// session are skipped and everything else is reported; the report lists what was
    /// skipped (files, records, bytes), a warning names each damaged file, and the
    /// command exits with status 3 (also when a part was never sealed because the
    /// collector was killed). A session that cannot be read at all (not a session, the
    /// old single-file format, a newer version) and a peaks file that cannot be read
    /// or is invalid are errors (exit status 2).
    #[command(after_long_help = report::long_help())]
    Report(report::ReportArgs),
    /// Write a session as a timeline for Perfetto (ui.perfetto.dev): kernels, copies
    /// and sets per (process, GPU, stream), NVTX ranges and launch calls per thread,
    /// and a flow arrow from each launch to its kernels
    ///
    /// Perfetto's protobuf trace format by default (trace.perfetto-trace in the
    /// session directory), or Chrome trace-event JSON with --format chrome
    /// (trace.json; for small runs: about 1 KB per kernel). The session is read part
    /// by part and the trace written as it is read, so memory stays bounded whatever
    /// the length of the run. --from and --to write only what overlaps a time window.
    /// Exits with status 3 after writing it when the session is damaged (as
    /// `report`).
    ///
    /// Example: gpuprof trace run1 --from 2 --to 2.5
    Trace(trace::Args),
    /// Profile the built-in LLM-shaped workload: report, roofline and trace
    ///
    /// Runs `gpuprof record` on cudarc-llm (built beside this binary: prefill GEMMs,
    /// decode GEMVs, attention-like and elementwise kernels, cuBLAS / cuBLASLt, NVTX
    /// ranges "prefill" and "decode"), prints the report, and writes the roofline
    /// (SVG, CSV, JSON) and the Perfetto trace into the output directory. Runs on this
    /// machine's GPU when `gpuprof doctor` finds a usable driver and CUPTI; otherwise
    /// (or with --sim) on the simulated H100 (A100, L40S or B200 with --chip) of the
    /// repository's test stack, built beside this binary, through the real injection
    /// path (its NVTX library comes from $GPUPROF_NVTX_LIB or the repository's
    /// target/nvidia/extras.json).
    ///
    /// Example: gpuprof demo -o demo1 -- --layers 4 --decode-steps 16
    Demo(demo::Args),
    /// Write a session as a pprof profile: GPU time as a flame graph for `go tool
    /// pprof`, Pyroscope and Grafana
    ///
    /// One gzipped profile.proto (gpu.pb.gz in the session directory by default) with
    /// four sample types: gpu_time (nanoseconds), launches (count), flops (model FLOPs
    /// from GEMM shapes, count) and dram (DRAM bytes, bytes). Each stack, root first:
    /// the process ("python [pid 1234]"), the NVTX ranges enclosing the kernel's
    /// launch (outermost first; a range still open at the end of the session
    /// included), the kernel family, the kernel (function name; the full demangled
    /// name is the function's system name and the sample label kernel_name; labels
    /// grid, block and gpu). Totals are the report's. Exits with status 3 after
    /// writing it when the session is damaged (as `report`).
    ///
    /// Example: gpuprof pprof run1 && go tool pprof -top -sample_index=gpu_time run1/gpu.pb.gz
    Pprof(pprof::Args),
    /// Draw the roofline of a recorded session (SVG) and write its points (CSV, JSON)
    ///
    /// One point per kernel name: x its arithmetic intensity (model FLOPs from GEMM
    /// shapes, else hardware FLOPs from counters, per DRAM byte), y its achieved FLOP/s,
    /// area its GPU time, colour its family; the DRAM bandwidth slope and the compute
    /// peaks of the data types used. Kernels without FLOPs or DRAM bytes are in the
    /// CSV / JSON with the reason, not on the chart. Exits with status 3 after writing
    /// them when the session is damaged (as `report`).
    ///
    /// Example: gpuprof roofline run1 -o run1/roofline.svg
    #[command(after_long_help = gpuprof_collector::analysis::roofline::peaks::PEAKS_FILE_HELP)]
    Roofline(roofline::Args),
    /// Show which CUDA driver and CUPTI library the profiler would use, and why other
    /// candidates were rejected. Exits 1 when no usable CUPTI is found.
    Doctor(doctor::Args),
    /// Show how metrics split into single-pass groups on a chip, offline
    ///
    /// Uses NVIDIA's libnvperf_host.so ($GPUPROF_NVPERF_HOST_LIB, else the one next to
    /// the CUPTI library doctor would find); no GPU is needed. Without --metrics (or
    /// $GPUPROF_METRICS) prints the chip's default metric groups. Exits 2 for an
    /// unknown chip or metric.
    ///
    /// Example: gpuprof metrics --chip GH100 --metrics dram__bytes_read.sum,sm__cycles_active.avg
    Metrics(metrics::Args),
    /// The collector of env-var-only mode, started by libgpuprof.so itself (not meant
    /// to be run by hand).
    ///
    /// When a program runs with only CUDA_INJECTION64_PATH=libgpuprof.so, its first
    /// profiled process makes the ring directory and starts
    /// `gpuprof collect --session-dir DIR --out OUT --owner-pid PID`, which drains the
    /// rings into the session in OUT until PID has exited and every ring is done,
    /// removes DIR (only gpuprof's own files in it, and DIR itself when libgpuprof.so
    /// made it and nothing else is in it), and prints where the session is.
    #[command(hide = true)]
    Collect(record::CollectArgs),
}

fn main() -> ExitCode {
    allocator::keep_large_blocks();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Doctor(args) => doctor::run(&args),
        Command::Metrics(args) => metrics::run(&args),
        Command::Record(args) => record::record(&args),
        Command::Collect(args) => record::collect(&args),
        Command::Report(args) => report::report(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Roofline(args) => roofline::run(&args),
        Command::Pprof(args) => pprof::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpuprof: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
