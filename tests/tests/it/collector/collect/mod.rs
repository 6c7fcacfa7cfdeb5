//! A program run to a session on disk, and the live feed (`collector/src/collect`):
//! draining, signals, several processes, serving metrics, NVML telemetry.

mod drain;
mod e2e_sessions;
mod nvml_telemetry;
mod output_name;
mod record_sigkill;
mod serve;
