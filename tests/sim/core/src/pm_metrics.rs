//! Which metrics of the cost model NVIDIA's Profiler Host API accepts for PM sampling
//! (`CUPTI_PROFILER_TYPE_PM_SAMPLING` in `cuptiProfilerHostInitialize`, then
//! `cuptiProfilerHostConfigAddMetrics`).
//!
//! Asked of the real 12.6, 12.8, 12.9, 13.0 and 13.1 libraries on TU102, GA100,
//! GA102, AD102, GH100 and GB100, offline (their host API runs without a driver):
//! the answers do not differ by chip. Every other metric of the built-in cost model
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

/// Whether CUPTI `release` (`(major, minor)`, 12.6 or later) accepts `metric` for PM
/// sampling.
pub fn pm_sampling_accepts(metric: &str, release: (u32, u32)) -> bool {
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
        let accepted = |r| model.iter().filter(|m| pm_sampling_accepts(m, r)).count();
        assert_eq!(accepted((12, 6)), 4);
        assert_eq!(accepted((12, 8)), 4);
        assert_eq!(accepted((12, 9)), 6);
        assert_eq!(accepted((13, 5)), 6);
        assert!(!pm_sampling_accepts(
            "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
            (13, 1)
        ));
    }
}
