//! Which metrics NVIDIA's Profiler Host API accepts for PM sampling
//! (`CUPTI_PROFILER_TYPE_PM_SAMPLING`), for the metrics of the simulated cost model:
//! each with the first release that accepts it. Every other metric of the cost model
//! (tensor ops `sm__ops_path_tensor_*`, L2 lookups `lts__t_sectors_lookup_*`, SASS
//! instruction counts `smsp__sass_*`) is refused by 12.6-13.1 on every chip.
//!
//! Asked of the real 12.6, 12.8, 12.9, 13.0 and 13.1 libraries on TU102, GA100,
//! GA102, AD102, GH100 and GB100 (the answers do not differ by chip), and checked
//! against them by `tests/tests/profiler_host_real.rs`. Releases after 13.1 cannot be
//! asked offline; the sim gives them 13.1's answers.

/// (metric, (major, minor) of the first release accepting it for PM sampling).
pub const PM_SAMPLING_METRICS: [(&str, (u32, u32)); 6] = [
    ("dram__bytes_read.sum", (12, 9)),
    ("dram__bytes_write.sum", (12, 9)),
    ("gpu__time_duration.sum", (12, 6)),
    ("sm__cycles_active.avg", (12, 6)),
    (
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        (12, 6),
    ),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", (12, 6)),
];
