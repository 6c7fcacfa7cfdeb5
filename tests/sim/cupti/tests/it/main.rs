//! The simulated CUPTI's integration tests, one test binary: `cargo test -p sim-cupti
//! --test it`. Each drives a C client of `tests/c/` (compiled against each release's
//! CUPTI headers) on the simulated stack; `common` holds what they share.

mod common;
mod graph_callbacks;
mod nvtx_callbacks;
