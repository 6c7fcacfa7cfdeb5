//! The subcommands of `gpuprof`: each file holds one command's arguments (clap) and
//! its `run`, wiring the layers below; [`sessions`] holds what every command that
//! reads sessions shares (the peaks file, damage warnings, exit status).

pub mod allocator;
pub mod demo;
pub mod doctor;
pub mod doctor_counters;
pub mod metrics;
pub mod pprof;
pub mod record;
pub mod report;
pub mod roofline;
pub mod sessions;
pub mod trace;
pub mod version;
