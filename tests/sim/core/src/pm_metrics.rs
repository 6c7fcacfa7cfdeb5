//! Which metrics of the cost model NVIDIA's Profiler Host API accepts for PM sampling
//! (`CUPTI_PROFILER_TYPE_PM_SAMPLING` in `cuptiProfilerHostInitialize`, then
//! `cuptiProfilerHostConfigAddMetrics`).
//!
//! Asked of the real 12.6, 12.8, 12.9, 13.0 and 13.1 libraries on TU102, GA100,
//! GA102, AD102, GH100 and GB100, offline (their host API runs without a driver):
//! the answers do not differ by chip, except for the metrics of the `dcgm` preset
//! ([`PM_SAMPLING_DCGM_METRICS`]): AD102 refuses the NVLink byte counts (it has no
//! NVLink) and GB100 the PCIe ones. Every other metric of the built-in cost model
//! (tensor ops `sm__ops_path_tensor_*`, L2 lookups `lts__t_sectors_lookup_*`, SASS
//! instruction counts `smsp__sass_*`, ...) is refused with
//! `CUPTI_ERROR_INVALID_PARAMETER`. 12.6 and 12.8 refuse the DRAM byte counts too.
//! Releases after 13.1 need a driver to be asked; the simulated CUPTI gives them
//! 13.1's answers. `tests/tests/profiler_host_real.rs` checks these lists against the
//! real libraries for every metric of the cost model.

/// The cost-model metrics the host API accepts for PM sampling (12.9 to 13.1), sorted.
pub const PM_SAMPLING_METRICS: [&str; 6] = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "sm__cycles_active.avg",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
];

/// Those of [`PM_SAMPLING_METRICS`] that 12.6 and 12.8 refuse: accepted from 12.9.
pub const PM_SAMPLING_METRICS_FROM_12_9: [&str; 2] =
    ["dram__bytes_read.sum", "dram__bytes_write.sum"];

/// The `dcgm` preset's metrics, accepted for PM sampling by every offline release
/// on every chip but the ones listed with each.
pub const PM_SAMPLING_DCGM_METRICS: [(&str, &[&str]); 9] = [
    ("dram__cycles_active.avg.pct_of_peak_sustained_elapsed", &[]),
    ("gr__cycles_active.avg.pct_of_peak_sustained_elapsed", &[]),
    ("nvlrx__bytes.sum", &["AD102"]),
    ("nvltx__bytes.sum", &["AD102"]),
    ("pcie__read_bytes.sum", &["GB100"]),
    ("pcie__write_bytes.sum", &["GB100"]),
    ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", &[]),
    (
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        &[],
    ),
    ("sm__warps_active.avg.pct_of_peak_sustained_elapsed", &[]),
];

/// Whether CUPTI `release` (`(major, minor)`, 12.6 or later) accepts `metric` for PM
/// sampling on `chip`.
pub fn pm_sampling_accepts(metric: &str, release: (u32, u32), chip: &str) -> bool {
    if let Some((_, refused)) = PM_SAMPLING_DCGM_METRICS.iter().find(|(m, _)| *m == metric) {
        return !refused.contains(&chip);
    }
    PM_SAMPLING_METRICS.contains(&metric)
        && (release >= (12, 9) || !PM_SAMPLING_METRICS_FROM_12_9.contains(&metric))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptance_by_release() {
        let model = crate::CostModel::builtin().counter_names();
        for m in PM_SAMPLING_METRICS {
            assert!(model.iter().any(|n| n == m), "{m} is not in the cost model");
        }
        for (m, _) in PM_SAMPLING_DCGM_METRICS {
            assert!(model.iter().any(|n| n == m), "{m} is not in the cost model");
        }
        let accepted = |r, chip| {
            model
                .iter()
                .filter(|m| pm_sampling_accepts(m, r, chip))
                .count()
        };
        assert_eq!(accepted((12, 6), "GH100"), 4 + 9);
        assert_eq!(accepted((12, 8), "GH100"), 4 + 9);
        assert_eq!(accepted((12, 9), "GH100"), 6 + 9);
        assert_eq!(accepted((13, 5), "GH100"), 6 + 9);
        assert_eq!(accepted((13, 5), "AD102"), 6 + 7);
        assert_eq!(accepted((13, 5), "GB100"), 6 + 7);
        assert!(!pm_sampling_accepts(
            "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
            (13, 1),
            "GH100"
        ));
    }
}
