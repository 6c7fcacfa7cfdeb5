//! gpuprof's collector, in five layers, each a folder, imports pointing down only
//! (`scripts/module-graph.py --layers` checks it; docs/ARCHITECTURE.md walks a kernel
//! record through them):
//!
//! - [`cli`]: one file per subcommand, its arguments and the wiring of the layers below;
//! - [`collect`]: a program run to a session on disk and the live feed (child, signals,
//!   ring directories, draining, the HTTP server, NVML sampling);
//! - [`output`]: numbers to bytes, a folder per format (report, roofline, traces, pprof,
//!   Prometheus); rendering never computes;
//! - [`analysis`]: records to numbers, no I/O but reading a session through [`store`];
//! - [`store`]: the session's files on disk (Parquet parts, manifests) and how every
//!   output file is created.
//!
//! The `gpuprof` binary (`main.rs`) parses the command line and calls [`cli`].

#![warn(clippy::too_many_lines)]

pub mod analysis;
pub mod cli;
pub mod collect;
pub mod output;
pub mod store;
