//! The collector's analysis: pure functions from records to reports, with no I/O, so
//! tests (and benchmarks) can feed them hand-built or recorded data; and reading a
//! session ([`session`], stored as [`store`] describes), which every command that analyses one goes through. The
//! `gpuprof` binary (`main.rs`) drains rings and prints what these return.

pub mod analysis;
pub mod live;
pub mod nvml;
pub mod output_file;
pub mod render;
pub mod roofline_points;
pub mod roofline_svg;
pub mod session;
pub mod store;
