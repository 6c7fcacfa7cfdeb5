//! Configuration: `GPUPROF_*` environment variables, read once at start-up. An invalid
//! value gets a warning naming the variable and the value used instead.
//!
//! Every variable is read as the bytes the environment holds (`OsString`). Paths
//! (`GPUPROF_SESSION_DIR`, `GPUPROF_COLLECTOR`, `GPUPROF_OUT`) are taken as they are;
//! any other value that is not UTF-8 is a warning naming the variable, and the
//! default applies, except where the default would do what the user asked to limit:
//! `GPUPROF_DISABLE` then turns profiling off, and `GPUPROF_COUNTER_RANGE` (a range
//! name no NVTX message can match) turns per-kernel counters off rather than measuring
//! everywhere.
//!
//! Hardware counters (see `counters.rs`):
//! - `GPUPROF_COUNTERS`: `kernel` (default): per-kernel counters from CUPTI's range
//!   profiler, one pass group per measured launch; `sampling`: GPU-wide counter
//!   samples from CUPTI's PM sampling (`counters/sampling.rs`); `off`: none.
//! - `GPUPROF_SAMPLE_INTERVAL_US`: the PM sampling interval in µs (default 100).
//! - `GPUPROF_COUNTER_LAUNCHES`: how many launches of each kernel (name, grid, block, GEMM shape)
//!   are measured (default 64; 0 = every one).
//! - `GPUPROF_COUNTER_EVERY`: measure every Nth launch of a kernel (default 1: each
//!   one, until `GPUPROF_COUNTER_LAUNCHES` are measured).
//! - `GPUPROF_COUNTER_BUDGET`: percent of the run's time (after the first 2 s)
//!   measured launches may take on the launching threads (default 10; 100: no limit;
//!   `counters/budget.rs`).
//! - `GPUPROF_GRAPH_REPLAY`: `on` measures the first launches of each CUDA graph by
//!   kernel replay (default `off`: docs/ARCHITECTURE.md says why).
//! - `GPUPROF_METRICS`: a comma-separated list of metric names replacing the default
//!   set of the chip (it is then one group, which must fit in one pass), or a preset
//!   name (`dcgm`), expanded for the chip when the counters are planned
//!   (`cupti::metrics::presets`).
//! - `GPUPROF_API`: which CUDA API calls (driver and runtime) other than launches are
//!   traced one by one (`api_calls.rs`): `sync` (default: those that copy, set,
//!   allocate, free, record or wait for events and synchronise; the others are
//!   counted, `api_tally.rs`), `all` (every call), or `off` (none traced or counted).
//!
//! The capture window (`capture_window.rs`): `GPUPROF_DELAY` and `GPUPROF_DURATION`
//! (seconds, fractions allowed) and `GPUPROF_CAPTURE_RANGE` (`cudaProfilerApi` or
//! `nvtx:NAME`), parsed by `wire::capture` as `gpuprof record` checks them. A value
//! it refuses is one warning and the setting is ignored.
//!
//! A measured launch is serialised with the rest of the GPU's work (the range
//! profiler brackets it); the launch policy bounds how many are.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::log::{self, Level};

use wire::capture::{parse_seconds, CaptureRange, MAX_SECONDS};
use wire::env;
use wire::session_dir::{parse_size, show_size};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The profiler's settings for this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `GPUPROF_LOG`: off, error, warn (default), info, debug.
    pub log: Level,
    /// `GPUPROF_DISABLE=1`: load nothing, profile nothing.
    pub disabled: bool,
    /// `GPUPROF_CUPTI_BUFFER_SIZE`: bytes per CUPTI activity buffer (default 8M).
    pub cupti_buffer_size: usize,
    /// `GPUPROF_CUPTI_BUFFERS`: buffers in the pool handed to CUPTI (default 8).
    pub cupti_buffers: usize,
    /// `GPUPROF_CHANNEL_RECORDS`: capacity of the channel to the writer thread
    /// (default 65536 records).
    pub channel_records: usize,
    /// `GPUPROF_RING_SIZE`: data bytes of this process's ring (default 64M).
    pub ring_size: usize,
    /// `GPUPROF_EXIT_TIMEOUT_MS`: how long exit waits for the writer (default 2000).
    pub exit_timeout_ms: u64,
    /// `GPUPROF_SESSION_DIR`: the session's ring directory, when a collector made it.
    pub session_dir: Option<PathBuf>,
    /// `GPUPROF_COLLECTOR`: the `gpuprof` binary to start in env-var-only mode.
    pub collector: Option<PathBuf>,
    /// `GPUPROF_OUT`: the output directory the started collector writes.
    pub out: Option<PathBuf>,
    /// `GPUPROF_COUNTERS`: off, kernel (default) or sampling.
    pub counters: CounterMode,
    /// `GPUPROF_COUNTER_LAUNCHES`: launches measured per kernel key (0 = all).
    pub counter_launches: u64,
    /// `GPUPROF_COUNTER_EVERY`: measure every Nth launch of a kernel key.
    pub counter_every: u64,
    /// `GPUPROF_COUNTER_BUDGET`: percent of the run's time measurements may take
    /// after the first 2 s (default 10; 100: no limit).
    pub counter_budget_pct: u32,
    /// `GPUPROF_METRICS`: metric names replacing the default set (one group).
    pub metrics: Option<Vec<String>>,
    /// `GPUPROF_SAMPLE_INTERVAL_US`: PM sampling interval in µs.
    pub sample_interval_us: u64,
    /// `GPUPROF_REPLAY`: none (default: pass groups rotate across launches) or kernel
    /// (every group on every measured launch, CUPTI replaying the kernel per pass).
    pub replay: Replay,
    /// `GPUPROF_GRAPH_REPLAY`: off (default) or on: measure the first launches of each
    /// CUDA graph by kernel replay.
    pub graph_replay: bool,
    /// `GPUPROF_COUNTER_RANGE`: measure only launches made inside an NVTX range with
    /// this message (on the launching thread, or a process-wide start/end range).
    pub counter_range: Option<String>,
    /// `GPUPROF_GEMM`: on (default) or off: record cuBLAS / cuBLASLt GEMM shapes.
    pub gemm: bool,
    /// `GPUPROF_API`: sync (default), all or off.
    pub api: ApiTrace,
    /// `GPUPROF_DELAY`: record only from this long after the process started (ns).
    pub delay_ns: u64,
    /// `GPUPROF_DURATION`: record only for this long after the delay (ns; 0: to the
    /// end).
    pub duration_ns: u64,
    /// `GPUPROF_CAPTURE_RANGE`: record only inside these ranges
    /// (`capture_window.rs`).
    pub capture_range: Option<CaptureRange>,
}

/// `GPUPROF_API`: which API calls other than launches are traced one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiTrace {
    /// None: only launches.
    Off,
    /// The calls that copy, set, allocate, free, record or wait for events and
    /// synchronise (`api_calls::TRACED`, `TRACED_RUNTIME`); the other calls counted.
    Sync,
    /// Every driver and runtime API call.
    All,
}

/// `GPUPROF_REPLAY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// No replay: successive launches of a kernel rotate through the pass groups.
    None,
    /// CUPTI kernel replay: all groups on each measured launch.
    Kernel,
}

/// `GPUPROF_COUNTERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterMode {
    Off,
    /// Per-kernel counters (range profiler).
    Kernel,
    /// GPU-wide samples at a fixed interval (PM sampling).
    Sampling,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            log: Level::Warn,
            disabled: false,
            cupti_buffer_size: 8 * MIB as usize,
            cupti_buffers: 8,
            channel_records: 65536,
            ring_size: 64 * MIB as usize,
            exit_timeout_ms: 2000,
            session_dir: None,
            collector: None,
            out: None,
            counters: CounterMode::Kernel,
            counter_launches: 64,
            counter_every: 1,
            counter_budget_pct: 10,
            metrics: None,
            sample_interval_us: 100,
            replay: Replay::None,
            graph_replay: false,
            counter_range: None,
            gemm: true,
            api: ApiTrace::Sync,
            delay_ns: 0,
            duration_ns: 0,
            capture_range: None,
        }
    }
}

struct Reader<'a, F: Fn(&str) -> Option<OsString>> {
    get: &'a F,
    warnings: Vec<String>,
}

/// A variable's value as text.
enum Text {
    Unset,
    Utf8(String),
    /// Not UTF-8 (already warned about).
    Invalid,
}

impl<F: Fn(&str) -> Option<OsString>> Reader<'_, F> {
    fn raw(&self, key: &str) -> Option<OsString> {
        (self.get)(key).filter(|v| !v.is_empty())
    }

    /// The value as text; one not UTF-8 is a warning ending with `instead`, what
    /// is used in its place.
    fn text(&mut self, key: &str, instead: &str) -> Text {
        match self.raw(key).map(OsString::into_string) {
            None => Text::Unset,
            Some(Ok(v)) => Text::Utf8(v),
            Some(Err(v)) => {
                self.warnings
                    .push(format!("{key}={v:?} is not UTF-8 text; {instead}"));
                Text::Invalid
            }
        }
    }

    /// The value as text, `None` when unset or not UTF-8 (then the default applies,
    /// `instead` describing it).
    fn value(&mut self, key: &str, instead: &str) -> Option<String> {
        match self.text(key, instead) {
            Text::Utf8(v) => Some(v),
            Text::Unset | Text::Invalid => None,
        }
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.raw(key).map(PathBuf::from)
    }

    /// A byte size in `min..=max`.
    fn size(&mut self, key: &str, default: u64, min: u64, max: u64) -> u64 {
        let Some(v) = self.value(key, &format!("using {}", show_size(default))) else {
            return default;
        };
        match parse_size(&v) {
            Some(n) if (min..=max).contains(&n) => n,
            _ => {
                self.warnings.push(format!(
                    "{key}={v:?} is not a size from {} to {} (bytes, or with suffix K, M, G); using {}",
                    show_size(min),
                    show_size(max),
                    show_size(default)
                ));
                default
            }
        }
    }

    /// A plain integer in `min..=max`.
    fn count(&mut self, key: &str, default: u64, min: u64, max: u64) -> u64 {
        let Some(v) = self.value(key, &format!("using {default}")) else {
            return default;
        };
        match v.trim().parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => n,
            _ => {
                self.warnings.push(format!(
                    "{key}={v:?} is not a whole number from {min} to {max}; using {default}"
                ));
                default
            }
        }
    }
}

impl<F: Fn(&str) -> Option<OsString>> Reader<'_, F> {
    /// A number of seconds as ns (`wire::capture::parse_seconds`); at least 1 ns
    /// unless `zero_ok`. Anything else is a warning and 0 (the setting ignored).
    fn seconds(&mut self, key: &str, zero_ok: bool) -> u64 {
        const IGNORED: &str = "ignoring it: recording everything it would limit";
        let Some(v) = self.value(key, IGNORED) else {
            return 0;
        };
        match parse_seconds(&v) {
            Some(ns) if zero_ok || ns > 0 => ns,
            _ => {
                self.warnings.push(format!(
                    "{key}={v:?} is not a number of seconds from {} to {MAX_SECONDS}; {IGNORED}",
                    if zero_ok { "0" } else { "0.000000001" }
                ));
                0
            }
        }
    }
}

impl Options {
    /// Reads the environment. Problems are returned as warnings to print once the log
    /// level is known.
    pub fn from_env(get: impl Fn(&str) -> Option<OsString>) -> (Options, Vec<String>) {
        let d = Options::default();
        let mut r = Reader {
            get: &get,
            warnings: Vec::new(),
        };
        let log = match r.value("GPUPROF_LOG", "using warn") {
            None => Level::Warn,
            Some(v) => Level::parse(&v).unwrap_or_else(|| {
                r.warnings.push(format!(
                    "GPUPROF_LOG={v:?} is not one of off, error, warn, info, debug; using warn"
                ));
                Level::Warn
            }),
        };
        // Whoever sets the variable means to turn profiling off: a value not understood
        // turns it off too, with a warning, rather than leaving it on.
        let disabled = match r.text("GPUPROF_DISABLE", "taking it as 1") {
            Text::Unset => false,
            Text::Invalid => true,
            Text::Utf8(v) => match v.trim().to_ascii_lowercase().as_str() {
                "0" | "false" | "no" | "off" => false,
                "1" | "true" | "yes" | "on" => true,
                _ => {
                    r.warnings.push(format!(
                        "GPUPROF_DISABLE={v:?} is not 1 / true / yes / on or 0 / false / no / off; \
                         taking it as 1"
                    ));
                    true
                }
            },
        };
        let cupti_buffer_size = r.size(
            "GPUPROF_CUPTI_BUFFER_SIZE",
            d.cupti_buffer_size as u64,
            64 * KIB,
            wire::ring::MAX_CUPTI_BUFFER_BYTES,
        ) as usize;
        let cupti_buffers = r.count(
            "GPUPROF_CUPTI_BUFFERS",
            d.cupti_buffers as u64,
            1,
            wire::ring::MAX_CUPTI_BUFFERS,
        ) as usize;
        let channel_records = r.count(
            "GPUPROF_CHANNEL_RECORDS",
            d.channel_records as u64,
            16,
            wire::ring::MAX_CHANNEL_RECORDS,
        ) as usize;
        let ring_size = r.size(
            env::RING_SIZE,
            d.ring_size as u64,
            wire::ring::MIN_CAPACITY as u64,
            wire::ring::MAX_CAPACITY as u64,
        ) as usize;
        let exit_timeout_ms = r.count("GPUPROF_EXIT_TIMEOUT_MS", d.exit_timeout_ms, 0, 600_000);
        let counters = match r.value(env::COUNTERS, "using kernel") {
            None => CounterMode::Kernel,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "off" => CounterMode::Off,
                "kernel" => CounterMode::Kernel,
                "sampling" => CounterMode::Sampling,
                _ => {
                    r.warnings.push(format!(
                        "GPUPROF_COUNTERS={v:?} is not one of off, kernel, sampling; using kernel"
                    ));
                    CounterMode::Kernel
                }
            },
        };
        let counter_launches = r.count("GPUPROF_COUNTER_LAUNCHES", d.counter_launches, 0, u64::MAX);
        let counter_every = r.count("GPUPROF_COUNTER_EVERY", d.counter_every, 1, u64::MAX);
        let counter_budget_pct = r.count(
            "GPUPROF_COUNTER_BUDGET",
            u64::from(d.counter_budget_pct),
            1,
            100,
        ) as u32;
        let sample_interval_us = r.count(
            "GPUPROF_SAMPLE_INTERVAL_US",
            d.sample_interval_us,
            1,
            10_000_000,
        );
        let metrics = r
            .value(env::METRICS, "using the default set")
            .and_then(|v| {
                let names: Vec<String> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned)
                    .collect();
                if names.is_empty() || names.iter().any(|m| m.contains('\0')) {
                    r.warnings.push(format!(
                        "GPUPROF_METRICS={v:?} names no metrics; using the default set"
                    ));
                    return None;
                }
                Some(names)
            });
        let replay = match r.value(env::REPLAY, "using none") {
            None => Replay::None,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "none" => Replay::None,
                "kernel" => Replay::Kernel,
                _ => {
                    r.warnings.push(format!(
                        "GPUPROF_REPLAY={v:?} is not one of none, kernel; using none"
                    ));
                    Replay::None
                }
            },
        };
        let graph_replay = match r
            .value(env::GRAPH_REPLAY, "using off")
            .as_deref()
            .map(str::trim)
        {
            None | Some("off") | Some("0") => false,
            Some("on") | Some("1") => true,
            Some(v) => {
                r.warnings.push(format!(
                    "{}={v:?} is not on or off; using off",
                    env::GRAPH_REPLAY
                ));
                false
            }
        };
        let api = match r
            .value("GPUPROF_API", "using sync")
            .as_deref()
            .map(str::trim)
        {
            None | Some("sync") => ApiTrace::Sync,
            Some("all") => ApiTrace::All,
            Some("off") | Some("0") => ApiTrace::Off,
            Some(v) => {
                r.warnings.push(format!(
                    "GPUPROF_API={v:?} is not one of sync, all, off; using sync"
                ));
                ApiTrace::Sync
            }
        };
        let gemm = match r
            .value("GPUPROF_GEMM", "using on")
            .as_deref()
            .map(str::trim)
        {
            None | Some("on") | Some("1") => true,
            Some("off") | Some("0") => false,
            Some(v) => {
                r.warnings
                    .push(format!("GPUPROF_GEMM={v:?} is not on or off; using on"));
                true
            }
        };
        // A range name that is not UTF-8 matches no NVTX message gpuprof reads:
        // measuring everywhere instead would be the opposite of what was asked.
        let range_instead = match counters {
            CounterMode::Kernel => "no NVTX range can match it; per-kernel counters are off",
            CounterMode::Sampling | CounterMode::Off => "ignoring it",
        };
        let (counter_range, counters) = match r.text("GPUPROF_COUNTER_RANGE", range_instead) {
            Text::Unset => (None, counters),
            Text::Utf8(v) => (Some(v), counters),
            Text::Invalid if counters == CounterMode::Kernel => (None, CounterMode::Off),
            Text::Invalid => (None, counters),
        };
        let delay_ns = r.seconds(env::DELAY, true);
        let duration_ns = r.seconds(env::DURATION, false);
        let capture_range = r
            .value(env::CAPTURE_RANGE, "ignoring it: recording everything")
            .and_then(|v| match CaptureRange::parse(&v) {
                Ok(range) => Some(range),
                Err(e) => {
                    r.warnings.push(format!(
                        "{}={v:?}: {e}; ignoring it: recording everything",
                        env::CAPTURE_RANGE
                    ));
                    None
                }
            });
        let opts = Options {
            log,
            disabled,
            cupti_buffer_size,
            cupti_buffers,
            channel_records,
            ring_size,
            exit_timeout_ms,
            session_dir: r.path(env::SESSION_DIR),
            collector: r.path(env::COLLECTOR),
            out: r.path(env::OUT),
            counters,
            counter_launches,
            counter_every,
            counter_budget_pct,
            metrics,
            sample_interval_us,
            replay,
            graph_replay,
            counter_range,
            gemm,
            api,
            delay_ns,
            duration_ns,
            capture_range,
        };
        (opts, r.warnings)
    }

    /// Reads the process environment and applies the log level.
    pub fn load() -> Options {
        let (opts, warnings) = Options::from_env(|k: &str| std::env::var_os(k));
        log::set_level(opts.log);
        for w in warnings {
            log::warn!("{w}");
        }
        opts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.into())
    }

    /// An environment of raw bytes.
    fn env_bytes<'a>(pairs: &'a [(&'a str, &'a [u8])]) -> impl Fn(&str) -> Option<OsString> + 'a {
        use std::os::unix::ffi::OsStrExt;
        move |k| {
            pairs
                .iter()
                .find(|p| p.0 == k)
                .map(|p| std::ffi::OsStr::from_bytes(p.1).to_os_string())
        }
    }

    #[test]
    fn defaults() {
        let (o, w) = Options::from_env(env(&[]));
        assert_eq!(o, Options::default());
        assert_eq!(o.cupti_buffer_size, 8 << 20);
        assert_eq!(o.ring_size, 64 << 20);
        assert!(w.is_empty());
    }

    #[test]
    fn valid_values() {
        let (o, w) = Options::from_env(env(&[
            ("GPUPROF_LOG", "INFO"),
            ("GPUPROF_DISABLE", "1"),
            ("GPUPROF_RING_SIZE", "4K"),
            ("GPUPROF_CUPTI_BUFFER_SIZE", "1m"),
            ("GPUPROF_CUPTI_BUFFERS", "3"),
            ("GPUPROF_CHANNEL_RECORDS", "1024"),
            ("GPUPROF_EXIT_TIMEOUT_MS", "50"),
            ("GPUPROF_SESSION_DIR", "/dev/shm/s"),
        ]));
        assert_eq!(
            o,
            Options {
                log: Level::Info,
                disabled: true,
                cupti_buffer_size: 1 << 20,
                cupti_buffers: 3,
                channel_records: 1024,
                ring_size: 4096,
                exit_timeout_ms: 50,
                session_dir: Some(PathBuf::from("/dev/shm/s")),
                ..Options::default()
            }
        );
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn counter_options() {
        let (o, w) = Options::from_env(env(&[
            ("GPUPROF_COUNTERS", "off"),
            ("GPUPROF_COUNTER_LAUNCHES", "0"),
            ("GPUPROF_COUNTER_EVERY", "10"),
            ("GPUPROF_COUNTER_BUDGET", "25"),
            (
                "GPUPROF_METRICS",
                " dram__bytes_read.sum, sm__cycles_active.avg ,",
            ),
        ]));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(o.counters, CounterMode::Off);
        assert_eq!(o.counter_launches, 0);
        assert_eq!(o.counter_every, 10);
        assert_eq!(o.counter_budget_pct, 25);
        assert_eq!(
            o.metrics,
            Some(vec![
                "dram__bytes_read.sum".to_string(),
                "sm__cycles_active.avg".to_string()
            ])
        );
        let (o, w) = Options::from_env(env(&[
            ("GPUPROF_COUNTERS", "sampling"),
            ("GPUPROF_COUNTER_EVERY", "0"),
            ("GPUPROF_METRICS", " , "),
            ("GPUPROF_SAMPLE_INTERVAL_US", "250"),
        ]));
        assert_eq!(o.counters, CounterMode::Sampling);
        assert_eq!(o.sample_interval_us, 250);
        assert_eq!(
            Options {
                counters: CounterMode::Kernel,
                sample_interval_us: 100,
                ..o
            },
            Options::default()
        );
        assert_eq!(
            w,
            vec![
                "GPUPROF_COUNTER_EVERY=\"0\" is not a whole number from 1 to 18446744073709551615; using 1"
                    .to_string(),
                "GPUPROF_METRICS=\" , \" names no metrics; using the default set".to_string(),
            ]
        );
        let (_, w) = Options::from_env(env(&[("GPUPROF_COUNTERS", "all")]));
        assert_eq!(
            w,
            vec![
                "GPUPROF_COUNTERS=\"all\" is not one of off, kernel, sampling; using kernel"
                    .to_string()
            ]
        );
    }

    #[test]
    fn disable_takes_the_usual_spellings() {
        for (v, disabled) in [
            ("1", true),
            ("true", true),
            (" Yes ", true),
            ("ON", true),
            ("0", false),
            ("false", false),
            ("no", false),
            ("Off", false),
        ] {
            let (o, w) = Options::from_env(env(&[("GPUPROF_DISABLE", v)]));
            assert_eq!((o.disabled, w), (disabled, vec![]), "GPUPROF_DISABLE={v:?}");
        }
    }

    #[test]
    fn invalid_values_warn_with_name_and_fallback() {
        let (o, w) = Options::from_env(env(&[
            ("GPUPROF_LOG", "loud"),
            ("GPUPROF_DISABLE", "maybe"),
            ("GPUPROF_RING_SIZE", "1K"),
            ("GPUPROF_CUPTI_BUFFERS", "many"),
        ]));
        assert_eq!(
            o,
            Options {
                disabled: true,
                ..Options::default()
            }
        );
        assert_eq!(
            w,
            vec![
                "GPUPROF_LOG=\"loud\" is not one of off, error, warn, info, debug; using warn".to_string(),
                "GPUPROF_DISABLE=\"maybe\" is not 1 / true / yes / on or 0 / false / no / off; taking it as 1".to_string(),
                "GPUPROF_CUPTI_BUFFERS=\"many\" is not a whole number from 1 to 1024; using 8".to_string(),
                "GPUPROF_RING_SIZE=\"1K\" is not a size from 4K to 2G (bytes, or with suffix K, M, G); using 64M"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn values_that_are_not_utf8_warn_and_take_the_safe_default() {
        let (o, w) = Options::from_env(env_bytes(&[
            ("GPUPROF_LOG", b"in\xfffo"),
            ("GPUPROF_RING_SIZE", b"4\xffK"),
            ("GPUPROF_COUNTER_LAUNCHES", b"\xff"),
            ("GPUPROF_METRICS", b"dram__bytes_read.sum\xff"),
            ("GPUPROF_GEMM", b"o\xfff"),
            ("GPUPROF_COUNTER_RANGE", b"dec\xffode"),
            // Paths are bytes on Unix: taken as they are.
            ("GPUPROF_OUT", b"/tmp/out-\xff"),
        ]));
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(
            o,
            Options {
                counters: CounterMode::Off,
                out: Some(PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/out-\xff"))),
                ..Options::default()
            }
        );
        assert_eq!(
            w,
            vec![
                r#"GPUPROF_LOG="in\xFFfo" is not UTF-8 text; using warn"#.to_string(),
                r#"GPUPROF_RING_SIZE="4\xFFK" is not UTF-8 text; using 64M"#.to_string(),
                r#"GPUPROF_COUNTER_LAUNCHES="\xFF" is not UTF-8 text; using 64"#.to_string(),
                r#"GPUPROF_METRICS="dram__bytes_read.sum\xFF" is not UTF-8 text; using the default set"#
                    .to_string(),
                r#"GPUPROF_GEMM="o\xFFf" is not UTF-8 text; using on"#.to_string(),
                r#"GPUPROF_COUNTER_RANGE="dec\xFFode" is not UTF-8 text; no NVTX range can match it; per-kernel counters are off"#
                    .to_string(),
            ]
        );
        // Under PM sampling the range does not apply: ignored, sampling stays on.
        let (o, w) = Options::from_env(env_bytes(&[
            ("GPUPROF_COUNTERS", b"sampling"),
            ("GPUPROF_COUNTER_RANGE", b"\xfe"),
        ]));
        assert_eq!((o.counters, o.counter_range), (CounterMode::Sampling, None));
        assert_eq!(
            w,
            vec![r#"GPUPROF_COUNTER_RANGE="\xFE" is not UTF-8 text; ignoring it"#.to_string()]
        );
        // Whoever sets GPUPROF_DISABLE means to turn profiling off.
        let (o, w) = Options::from_env(env_bytes(&[("GPUPROF_DISABLE", b"\xff")]));
        assert!(o.disabled);
        assert_eq!(
            w,
            vec![r#"GPUPROF_DISABLE="\xFF" is not UTF-8 text; taking it as 1"#.to_string()]
        );
    }
}
