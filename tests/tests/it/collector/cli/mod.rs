//! `gpuprof`'s subcommands as a user runs them (`collector/src/cli`).

mod demo;
mod doctor;
mod record;
mod report_sessions;
