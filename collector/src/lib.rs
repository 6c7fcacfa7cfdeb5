//! The collector's analysis: pure functions from records to reports, with no I/O, so
//! tests (and benchmarks) can feed them hand-built or recorded data. The `gpuprof`
//! binary (`main.rs`) reads session files, drains rings and prints what these return.

pub mod analysis;
pub mod render;
pub mod roofline_points;
pub mod roofline_svg;
