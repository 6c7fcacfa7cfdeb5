//! From a session's records to the numbers a report shows.
//!
//! A session is read part by part and folded into an [`aggregate::Aggregate`]
//! ([`aggregate`]): records in the session's order, each with the pid of the process
//! that produced it. Ids inside records (interned strings, correlation ids, NVTX
//! marker ids) are per process, so every lookup is keyed by pid as well. Kernels are
//! joined to their launch, GEMM call and counters in a bounded window ([`join`]),
//! summed by class ([`classes`]) and by the NVTX range names covering them
//! ([`range_cover`]); every table is computed from those sums, so memory does not
//! grow with the session's length. The functions that take `&[(u32, Record)]` read
//! those records as one part.
//!
//! - [`integrity`]: records whose values cannot be true, screened out and counted, and
//!   the damage of the session file, for the report to state;
//! - [`summary`]: per-process facts, kernel and copy aggregation, drops, processes
//!   whose stream did not end;
//! - [`counters`](mod@counters): counter plans and statuses, kernel counters merged per kernel,
//!   sampling windows per metric;
//! - [`counter_pct`]: kernel counters as percentages of peak (SM active, tensor pipe,
//!   DRAM throughput, L2 hit rate, achieved occupancy);
//! - [`gpu_activity`]: DCGM's profiling fields per GPU over the run, as DCGM defines
//!   them (wall clock, idle included);
//! - [`telemetry`]: NVML device readings per device over the run (clocks, power,
//!   energy, memory, utilisation, clock event reasons);
//! - [`sampled`]: sampling windows attributed to kernels by overlap time;
//! - [`nvtx`]: NVTX range pairing and the GPU time attributed to each range;
//! - [`stacks`]: launches summed by class and by the NVTX ranges enclosing them, for
//!   the flame graph (`gpuprof pprof`, [`pprof`]);
//! - [`trace`]: the timeline, built part by part, as a Perfetto trace or Chrome JSON;
//! - [`precision`], [`peaks`], [`roofline`], [`family`], [`gemm`], [`efficiency`](mod@efficiency): the
//!   roofline analysis: GEMM shapes joined to kernels, per-GPU peaks, and per kernel,
//!   GEMM shape, family, NVTX range and run: FLOPs, bytes, AI, MFU, MBU, bound.

pub mod aggregate;
pub mod api_calls;
pub mod chunked_queue;
pub mod classes;
pub mod correlation_map;
pub mod counter_pct;
pub mod counters;
pub mod deconvolve;
pub mod durations;
pub mod family;
pub mod findings;
pub mod fitted;
pub mod flop_metrics;
pub mod follow;
pub mod gemm;
pub mod gpu_activity;
pub mod integrity;
pub mod join;
pub mod launch_shape;
pub mod live;
pub mod names;
pub mod nvtx;
pub mod occupancy;
pub mod precision;
pub mod range_cover;
pub mod roles;
pub mod rollup;
pub mod roofline;
pub mod sampled;
pub mod session;
pub mod short_name;
pub mod stacks;
pub mod summary;
pub mod telemetry;

pub use counters::{
    counters, ConfigCounterStats, Counters, KernelCounterStats, MetricStats, PlanSummary,
    SampleStats, StatusSummary,
};
pub use family::Family;
pub use integrity::{screen, DamagedFile, ImpossibleRecords, Integrity, Unsealed};
pub use names::{copy_kind_name, demangle, dims, launch_api_name, lookup, percent, strings};
pub use nvtx::{pair_ranges, Range, RangeKind, RangeStats, RangeTotals, Ranges};
pub use precision::{Math, Pipe, Precision};
pub use roofline::efficiency::{
    efficiency, Efficiency, GpuPeaks, KernelRow, Missing, Rollup, ShapeRow,
};
pub use roofline::peaks::{parse_overrides, Overrides, Peaks, PEAKS_FILE_HELP};
pub use roofline::{Bound, Point};
pub use sampled::{Attribution, SampleIdle, SampledKernel, SampledMetric};
pub use summary::{
    range_stats, summarize, ConfigStats, DeviceSummary, DroppedStats, KernelStats, ProcessSummary,
    Summary, TransferStats,
};

#[cfg(test)]
mod counter_tests;
#[cfg(test)]
mod record_tests;
#[cfg(test)]
mod sampled_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_half_up_to_two_decimals() {
        assert_eq!(percent(1, 3), 33.33);
        assert_eq!(percent(2, 3), 66.67);
        assert_eq!(percent(1, 8), 12.5);
        assert_eq!(percent(1, 20_000), 0.01);
        assert_eq!(percent(1, 20_001), 0.0);
        assert_eq!(percent(5, 5), 100.0);
        assert_eq!(percent(5, 0), 0.0);
        assert_eq!(percent(u64::MAX, u64::MAX), 100.0);
    }

    #[test]
    fn demangles_itanium_names_and_keeps_others() {
        assert_eq!(
            demangle("_Z6matmulPfS_S_i"),
            "matmul(float*, float*, float*, int)"
        );
        assert_eq!(demangle("rmsnorm_kernel"), "rmsnorm_kernel");
        assert_eq!(demangle("_Znot-a-valid-name"), "_Znot-a-valid-name");
    }

    #[test]
    fn names_launch_apis() {
        assert_eq!(launch_api_name(307, false), "cuLaunchKernel");
        assert_eq!(launch_api_name(514, false), "cuGraphLaunch");
        assert_eq!(launch_api_name(211, true), "cudaLaunchKernel");
        assert_eq!(launch_api_name(9999, false), "driver API cbid 9999");
    }
}
