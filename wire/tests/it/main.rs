//! The wire crate's integration tests, one test binary: `cargo test -p gpuprof-wire
//! --test it` (a module: `... --test it -- ring_corrupt::`). A file per part of the
//! crate (`wire/src`); `common` holds what they share.

mod common;
mod encoding;
mod fast_decode;
mod ring;
mod ring_corrupt;
mod session_dir;
mod throughput;
