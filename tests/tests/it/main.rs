//! gpuprof's integration tests, one test binary: `cargo test -p gpuprof-tests --test it`
//! (a single test: `... --test it -- collector::collect::drain::`, a module path or part
//! of one). Each file was once a test binary of its own, and each linked Arrow and
//! Parquet; one binary links them once.
//!
//! The folders follow what is tested, the part of the repository and then its modules:
//!
//! - [`inject`]: `libgpuprof.so` (`inject/src`) inside programs on the simulated CUDA
//!   stack: entry points, tracing, counters, PM sampling, GEMM shapes, capture windows;
//! - [`collector`]: the `gpuprof` binary (`collector/src`), a folder per layer of the
//!   collector: `cli` (a subcommand as a user runs it), `collect` (a program run to a
//!   session, draining, serving), `output` (the formats, read by their real readers),
//!   `analysis` (the numbers of a report), `store` (the session's files on disk);
//! - [`faults`]: the fault matrix (docs/ARCHITECTURE.md, "What gpuprof promises"), rows
//!   that cross the layers: files and rights, the ring and the processes around it;
//! - [`cupti`]: the `cupti` and `cupti-sys` crates against NVIDIA's real libraries and
//!   headers (the pinned wheels), offline;
//! - [`sim`]: the simulated CUDA stack itself (`tests/sim`), seen by real clients;
//! - [`scripts`]: the checkers of `scripts/`.
//!
//! The shared helpers are the `gpuprof_tests` library (`tests/src`).
//!
//! Every test runs in this one process, on the harness's threads, beside tests of every
//! other folder: a test must not change what the process shares (environment, current
//! directory, signal dispositions, resource limits it lowers, the subreaper flag). A
//! test that needs to runs in a process of its own
//! ([`gpuprof_tests::in_own_process`]).

mod collector;
mod cupti;
mod faults;
mod inject;
mod scripts;
mod sim;
