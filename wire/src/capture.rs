//! The capture window's settings, parsed by one rule on both sides: `gpuprof record
//! --delay / --duration / --capture-range` checks them before the program starts, and
//! `libgpuprof.so` reads the variables they set (`GPUPROF_DELAY`, `GPUPROF_DURATION`,
//! `GPUPROF_CAPTURE_RANGE`; [`crate::env`]), also when a user sets them by hand.

/// The longest delay or duration: 10^7 s (about 116 days).
pub const MAX_SECONDS: f64 = 1e7;

/// A number of seconds (fractions allowed: "1.5", "0.25") as ns. `None` for anything
/// else: empty, negative, not finite, above [`MAX_SECONDS`].
pub fn parse_seconds(value: &str) -> Option<u64> {
    let v = value.trim();
    // Only plain decimals: f64's parser would also take "inf", "NaN" and exponents.
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let s: f64 = v.parse().ok()?;
    (s.is_finite() && (0.0..=MAX_SECONDS).contains(&s)).then(|| (s * 1e9).round() as u64)
}

/// What opens and closes capture windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureRange {
    /// Between `cuProfilerStart` and `cuProfilerStop` (`cudaProfilerStart` / `Stop`
    /// call them).
    ProfilerApi,
    /// While an NVTX range with this message is open: a push/pop range on the
    /// launching thread, or a start/end range on any thread.
    Nvtx(String),
}

/// The word for [`CaptureRange::ProfilerApi`], as nsys spells it.
pub const PROFILER_API: &str = "cudaProfilerApi";

impl CaptureRange {
    /// `cudaProfilerApi` or `nvtx:NAME` (NAME not empty). The error says what is
    /// accepted.
    pub fn parse(value: &str) -> Result<CaptureRange, String> {
        if value == PROFILER_API {
            return Ok(CaptureRange::ProfilerApi);
        }
        match value.strip_prefix("nvtx:") {
            Some("") => Err("nvtx: needs a range name (nvtx:NAME)".into()),
            Some(name) if name.contains('\0') => Err("a range name cannot hold NUL".into()),
            Some(name) => Ok(CaptureRange::Nvtx(name.to_string())),
            None => Err(format!("not {PROFILER_API} or nvtx:NAME")),
        }
    }

    /// As given: `cudaProfilerApi` or `nvtx:NAME`.
    pub fn spec(&self) -> String {
        match self {
            CaptureRange::ProfilerApi => PROFILER_API.to_string(),
            CaptureRange::Nvtx(name) => format!("nvtx:{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0"), Some(0));
        assert_eq!(parse_seconds("1.5"), Some(1_500_000_000));
        assert_eq!(parse_seconds(" 2 "), Some(2_000_000_000));
        assert_eq!(parse_seconds(".25"), Some(250_000_000));
        assert_eq!(parse_seconds("10000000"), Some(10_000_000_000_000_000));
        for bad in [
            "", "-1", "-0.5", "abc", "1e3", "inf", "NaN", "1.2.3", ".", "10000001",
        ] {
            assert_eq!(parse_seconds(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(
            CaptureRange::parse("cudaProfilerApi"),
            Ok(CaptureRange::ProfilerApi)
        );
        assert_eq!(
            CaptureRange::parse("nvtx:decode"),
            Ok(CaptureRange::Nvtx("decode".into()))
        );
        assert_eq!(
            CaptureRange::parse("nvtx:a:b c"),
            Ok(CaptureRange::Nvtx("a:b c".into()))
        );
        assert_eq!(
            CaptureRange::parse("nvtx:"),
            Err("nvtx: needs a range name (nvtx:NAME)".into())
        );
        assert_eq!(
            CaptureRange::parse("foo"),
            Err("not cudaProfilerApi or nvtx:NAME".into())
        );
        assert_eq!(
            CaptureRange::parse("cudaprofilerapi"),
            Err("not cudaProfilerApi or nvtx:NAME".into())
        );
        assert_eq!(CaptureRange::Nvtx("decode".into()).spec(), "nvtx:decode");
        assert_eq!(CaptureRange::ProfilerApi.spec(), "cudaProfilerApi");
    }
}
