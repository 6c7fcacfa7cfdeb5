//! Configuration: `GPUPROF_*` environment variables, read once at start-up. An invalid
//! value gets a warning naming the variable and the value used instead.

use crate::log::{self, Level};

/// The profiler's settings for this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `GPUPROF_LOG`: off, error, warn (default), info, debug.
    pub log: Level,
    /// `GPUPROF_DISABLE=1`: load nothing, profile nothing.
    pub disabled: bool,
}

impl Options {
    /// Reads the environment. Problems are returned as warnings to print once the log
    /// level is known.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> (Options, Vec<String>) {
        let mut warnings = Vec::new();
        let log = match get("GPUPROF_LOG") {
            None => Level::Warn,
            Some(v) if v.is_empty() => Level::Warn,
            Some(v) => Level::parse(&v).unwrap_or_else(|| {
                warnings.push(format!(
                    "GPUPROF_LOG={v:?} is not one of off, error, warn, info, debug; using warn"
                ));
                Level::Warn
            }),
        };
        let disabled = match get("GPUPROF_DISABLE").as_deref() {
            None | Some("") | Some("0") => false,
            Some("1") => true,
            Some(v) => {
                warnings.push(format!("GPUPROF_DISABLE={v:?} is not 0 or 1; using 0"));
                false
            }
        };
        (Options { log, disabled }, warnings)
    }

    /// Reads the process environment and applies the log level.
    pub fn load() -> Options {
        let (opts, warnings) = Options::from_env(|k| std::env::var(k).ok());
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

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
    }

    #[test]
    fn defaults() {
        let (o, w) = Options::from_env(env(&[]));
        assert_eq!(
            o,
            Options {
                log: Level::Warn,
                disabled: false
            }
        );
        assert!(w.is_empty());
    }

    #[test]
    fn valid_values() {
        let (o, w) = Options::from_env(env(&[("GPUPROF_LOG", "INFO"), ("GPUPROF_DISABLE", "1")]));
        assert_eq!(
            o,
            Options {
                log: Level::Info,
                disabled: true
            }
        );
        assert!(w.is_empty());
    }

    #[test]
    fn invalid_values_warn_with_name_and_fallback() {
        let (o, w) = Options::from_env(env(&[("GPUPROF_LOG", "loud"), ("GPUPROF_DISABLE", "yes")]));
        assert_eq!(
            o,
            Options {
                log: Level::Warn,
                disabled: false
            }
        );
        assert_eq!(
            w,
            vec![
                "GPUPROF_LOG=\"loud\" is not one of off, error, warn, info, debug; using warn"
                    .to_string(),
                "GPUPROF_DISABLE=\"yes\" is not 0 or 1; using 0".to_string(),
            ]
        );
    }
}
