//! The figures of the roofline's tables: numbers with SI prefixes, intensities and
//! percentages, and the marks on values made from bytes fitted to PM sampling windows.

use serde_json::{json, Value};

use super::cells::value;
use crate::analysis::rollup::BytesSource;

/// A large number with an SI prefix and two decimals ("137.44G"); below 1000 at most
/// three decimals.
pub fn si(v: f64) -> String {
    const PREFIXES: [&str; 6] = ["k", "M", "G", "T", "P", "E"];
    if !v.is_finite() || v.abs() < 1000.0 {
        return value(v);
    }
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1000.0 && i < PREFIXES.len() {
        x /= 1000.0;
        i += 1;
    }
    format!("{x:.2}{}", PREFIXES[i - 1])
}

/// Arithmetic intensity, FLOP/byte: two decimals, four below 1.
pub fn intensity(v: f64) -> String {
    if v.abs() < 1.0 {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

pub fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".to_string())
}

/// A fraction as a percentage with one decimal.
pub fn pct_of(f: Option<f64>) -> String {
    or_dash(f.map(|f| format!("{:.1}", f * 100.0)))
}

/// What ends a utilization (MFU, HFU, MBU) over 100%: more work was counted than the
/// peak allows in the time measured ([`OVER_PEAK_LEGEND`]).
const OVER_PEAK_MARK: &str = "!";

/// The legend of [`OVER_PEAK_MARK`], under the roofline's first title.
pub const OVER_PEAK_LEGEND: &str =
    "  (!: over 100% of the peak: the peak is too low for these kernels (a \
    2:4-sparse GEMM runs at up to twice\n   the dense peak; another clock or GPU model: --peaks) \
    or more FLOPs or bytes were counted than ran)\n";

/// A utilization (MFU, HFU, MBU) as [`pct_of`] does, marked [`OVER_PEAK_MARK`] over
/// 100%.
pub fn utilization_of(f: Option<f64>) -> String {
    match f {
        Some(u) if u > 1.0 => format!("{}{OVER_PEAK_MARK}", pct_of(f)),
        _ => pct_of(f),
    }
}

/// A fraction as a percentage rounded to two decimals, for CSV and JSON.
pub fn pct_value(f: Option<f64>) -> Value {
    json!(f.map(|f| (f * 10_000.0).round() / 100.0))
}

/// What the roofline's and the fitted table's marks mean (`report --help`).
pub const MARKS_HELP: &str = "\
Marks on DRAM bytes, AI, MFU, HFU and MBU (the roofline) and on fitted values:
  ~       fitted to PM sampling windows (GPUPROF_COUNTERS=sampling, or CUDA graph
          launches after the hand-over), not measured per kernel
  !       over 100% of the peak: the peak is too low for those kernels (a 2:4-sparse
          GEMM runs at up to twice the dense peak; another clock or GPU model:
          --peaks) or more FLOPs or bytes were counted than ran
  ≥ ≤     the windows determined a class's DRAM reads and not its writes: bytes and
          MBU count the reads alone (a lower bound), AI is an upper bound
  ± x     in \"Counter samples fitted by kernel class\": 2 standard errors of the fit
          (a floor on the error: caches and write-backs are not independent noise);
          a class whose 2 standard errors exceed half its value is not given (\"not
          determined\", with why)";

/// What ends a figure made from bytes fitted to PM sampling windows.
const SAMPLED_MARK: &str = "~";

/// The legend of [`SAMPLED_MARK`], under a section's title.
const SAMPLED_LEGEND: &str =
    "  (~: DRAM bytes fitted to PM sampling windows, not measured per kernel)\n";

/// The legend of the bounds from fitted reads alone ([`BytesSource::SampledReads`]).
const READS_ONLY_LEGEND: &str = "  (≥, ≤: the windows did not determine DRAM writes: bytes \
    and MBU count reads alone, a lower bound; AI an upper bound)\n";

/// The legends the sources of a section's rows need.
pub fn legend(sources: impl Iterator<Item = Option<BytesSource>> + Clone) -> String {
    let mut out = String::new();
    if any_sampled(sources.clone()) {
        out.push_str(SAMPLED_LEGEND);
    }
    if sources
        .into_iter()
        .any(|s| s == Some(BytesSource::SampledReads))
    {
        out.push_str(READS_ONLY_LEGEND);
    }
    out
}

/// `cell` with [`SAMPLED_MARK`] when `source` is sampled or mixed and it is a number.
pub fn marked(cell: String, source: Option<BytesSource>) -> String {
    match source {
        Some(BytesSource::Sampled | BytesSource::Mixed) if cell != "-" => cell + SAMPLED_MARK,
        Some(BytesSource::SampledReads) if cell != "-" => format!("≥{cell}{SAMPLED_MARK}"),
        _ => cell,
    }
}

/// [`marked`] for AI, which fitted reads alone bound from above.
pub fn marked_ai(cell: String, source: Option<BytesSource>) -> String {
    match source {
        Some(BytesSource::SampledReads) if cell != "-" => format!("≤{cell}{SAMPLED_MARK}"),
        _ => marked(cell, source),
    }
}

/// Whether any of `sources` is sampled, mixed or sampled reads (the section then has a
/// legend).
fn any_sampled(mut sources: impl Iterator<Item = Option<BytesSource>>) -> bool {
    sources.any(|s| {
        matches!(
            s,
            Some(BytesSource::Sampled | BytesSource::Mixed | BytesSource::SampledReads)
        )
    })
}
