//! Named metric sets a user asks for by name in `GPUPROF_METRICS` (and `gpuprof
//! metrics --metrics`) instead of listing metrics.
//!
//! `dcgm`: exactly the CUPTI metrics behind the DCGM profiling fields that `gpuprof
//! record --serve` exposes under dcgm-exporter's names ([`DCGM_FIELDS`]); for the
//! range profiler (per-kernel counters) without the PCIe and NVLink byte counts,
//! which it refuses beside the others ([`DcgmField::system`]): those come from PM
//! sampling only. Every name
//! was checked with NVIDIA's `libnvperf_host.so` (12.9) on GA100, GH100 and GB100,
//! where the whole set is one pass; AD102 has no NVLink counters (`nvlrx__bytes.sum`
//! is an unknown metric there), so chips without NVLink get the set without them
//! (`tests/tests/it/cupti/metrics_host.rs` checks both with the real library).

/// A DCGM profiling field and the CUPTI metric it is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcgmField {
    /// The DCGM field name (dcgm-exporter's metric name).
    pub name: &'static str,
    /// The CUPTI metric, per kernel.
    pub metric: &'static str,
    /// Whether the metric counts NVLink traffic (absent on chips without NVLink).
    pub nvlink: bool,
    /// Whether it counts traffic outside the GPU's SM and DRAM units (PCIe, NVLink):
    /// NVIDIA's range profiler refuses such a metric in one config beside an SM or
    /// DRAM metric (`cuptiProfilerHostConfigAddMetrics`: `CUPTI_ERROR_NOT_SUPPORTED`,
    /// 12.8-13.1 on every chip; 12.6 took them), where PM sampling takes them
    /// together.
    pub system: bool,
}

const fn field(name: &'static str, metric: &'static str, nvlink: bool) -> DcgmField {
    DcgmField {
        name,
        metric,
        nvlink,
        system: false,
    }
}

const fn system_field(name: &'static str, metric: &'static str, nvlink: bool) -> DcgmField {
    DcgmField {
        system: true,
        ..field(name, metric, nvlink)
    }
}

/// The DCGM profiling fields gpuprof computes, in the order it shows them. Ratio
/// fields come from `.pct_of_peak_sustained_elapsed` metrics (percent of the
/// kernel's elapsed time), byte fields from `.sum` counters.
pub const DCGM_FIELDS: &[DcgmField] = &[
    field(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
        false,
    ),
    field(
        "DCGM_FI_PROF_SM_ACTIVE",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        false,
    ),
    field(
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "sm__warps_active.avg.pct_of_peak_sustained_elapsed",
        false,
    ),
    field(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        false,
    ),
    field(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
        false,
    ),
    system_field("DCGM_FI_PROF_PCIE_TX_BYTES", "pcie__write_bytes.sum", false),
    system_field("DCGM_FI_PROF_PCIE_RX_BYTES", "pcie__read_bytes.sum", false),
    system_field("DCGM_FI_PROF_NVLINK_TX_BYTES", "nvltx__bytes.sum", true),
    system_field("DCGM_FI_PROF_NVLINK_RX_BYTES", "nvlrx__bytes.sum", true),
];

/// Chips whose NVLink counters NVIDIA's host library knows (checked with 12.9).
const NVLINK_CHIPS: &[&str] = &["GA100", "GH100", "GB100"];

/// The preset names, for help texts.
pub const PRESETS: &[&str] = &["dcgm"];

/// The metrics of preset `name` on `chip`, for PM sampling or (`sampling` false) the
/// range profiler, which takes no PCIe or NVLink metric beside the others
/// ([`DcgmField::system`]); `None` when `name` is not a preset.
pub fn preset(name: &str, chip: &str, sampling: bool) -> Option<Vec<String>> {
    match name {
        "dcgm" => Some(
            DCGM_FIELDS
                .iter()
                .filter(|f| !f.nvlink || NVLINK_CHIPS.contains(&chip))
                .filter(|f| sampling || !f.system)
                .map(|f| f.metric.to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// `metrics` with a lone preset name replaced by its metrics on `chip` ([`preset`]).
pub fn expand(metrics: &[String], chip: &str, sampling: bool) -> Vec<String> {
    match metrics {
        [one] => preset(one.trim(), chip, sampling).unwrap_or_else(|| metrics.to_vec()),
        _ => metrics.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcgm_preset_leaves_out_nvlink_where_the_chip_has_none() {
        let h100 = preset("dcgm", "GH100", true).unwrap();
        assert_eq!(h100.len(), DCGM_FIELDS.len());
        let ad102 = preset("dcgm", "AD102", true).unwrap();
        assert_eq!(ad102.len(), DCGM_FIELDS.len() - 2);
        assert!(!ad102.iter().any(|m| m.starts_with("nvl")));
        assert_eq!(preset("roofline", "GH100", true), None);
    }

    #[test]
    fn the_range_profilers_dcgm_preset_has_no_pcie_or_nvlink() {
        let h100 = preset("dcgm", "GH100", false).unwrap();
        assert_eq!(h100.len(), 5);
        assert!(!h100
            .iter()
            .any(|m| m.starts_with("pcie") || m.starts_with("nvl")));
    }

    #[test]
    fn only_a_lone_preset_name_is_expanded() {
        let one = vec!["dcgm".to_string()];
        assert_eq!(
            expand(&one, "GH100", false),
            preset("dcgm", "GH100", false).unwrap()
        );
        let two = vec!["dcgm".to_string(), "dram__bytes_read.sum".to_string()];
        assert_eq!(expand(&two, "GH100", false), two);
    }
}
