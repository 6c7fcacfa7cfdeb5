//! Diagnostics on stderr, one line each, prefixed `gpuprof:`. Never the host's stdout.
//! Level from `GPUPROF_LOG` (default `warn`).

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Off = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "0" => Level::Off,
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" | "trace" => Level::Debug,
            _ => return None,
        })
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Warn as u8);

pub fn set_level(l: Level) {
    LEVEL.store(l as u8, Ordering::Relaxed);
}

pub fn enabled(l: Level) -> bool {
    l != Level::Off && (l as u8) <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line to stderr if `l` is enabled. Errors writing are ignored: a closed
/// stderr must not hurt the host.
pub fn emit(l: Level, args: std::fmt::Arguments<'_>) {
    if !enabled(l) {
        return;
    }
    let line = format!("gpuprof: {args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

macro_rules! log_warn {
    ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Warn, format_args!($($t)*)) };
}
macro_rules! log_info {
    ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Info, format_args!($($t)*)) };
}
macro_rules! log_debug {
    ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Debug, format_args!($($t)*)) };
}
pub(crate) use {log_debug as debug, log_info as info, log_warn as warn};
