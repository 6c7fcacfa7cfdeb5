//! `gpuprof record --serve` and `GPUPROF_SERVE` (`collector/src/collect/serve.rs`),
//! read by real clients.

mod aiperf;
mod env_only;
mod hostile;
mod prometheus;
