//! Numbers to bytes, one folder or file per format: the report as text, CSV and JSON
//! ([`report`]), the roofline chart and points ([`roofline`]), timelines for Perfetto,
//! Chrome and Kineto ([`trace`]), pprof profiles ([`pprof`]) and the Prometheus text
//! format ([`prometheus`]). What is written here was computed in `analysis`.

pub mod gzip_thread;
pub mod pprof;
pub mod prometheus;
pub mod report;
pub mod roofline;
pub mod trace;
