//! The `gpuprof` binary (`collector/src`), a folder per layer of the collector.

mod analysis;
mod cli;
mod collect;
mod output;
mod store;
