//! From a running program to a session on disk and the live feed: the child process
//! and signals ([`child`], [`signals`]), the ring directory and output names
//! ([`session_dirs`], [`output_name`]), draining rings into parts ([`drain`]) while
//! following the program ([`supervise`]) and saying how far it is ([`progress`]), the
//! `--serve` HTTP server holding the live aggregate ([`serve`], [`metrics_http`]) and
//! NVML sampling ([`nvml`]).

pub mod child;
pub mod drain;
pub mod metrics_http;
pub mod nvml;
pub mod output_name;
pub mod progress;
pub mod serve;
pub mod session_dirs;
pub mod signals;
pub mod supervise;
