//! The default metric groups per architecture, each one pass on its chip.
//!
//! Made with [`Host::split_into_groups`](super::Host::split_into_groups) over one
//! ordered list per architecture (what arithmetic intensity and MFU need first: DRAM
//! read/write bytes, tensor-pipe ops by data type, FP32/FP16/FP64 FMA/ADD/MUL thread
//! instruction counts; then SM activity, tensor-pipe activity, achieved occupancy, L2
//! lookups, GPU time; last the metrics of DCGM's SM, occupancy, DRAM, graphics-engine
//! and tensor-pipe activity fields, which fit into groups already there) with the
//! 13.4 `libnvperf_host`, and checked by `tests/tests/it/cupti/metrics_host.rs`:
//! every group is exactly one pass, and splitting the concatenated groups again gives
//! the same groups.
//!
//! Where the chip forces it, a metric is replaced by parts that each fit in one pass
//! (sums of the parts are the metric):
//! - `lts__t_sector_hit_rate.pct` needs 2 passes on every chip: its two raw counters
//!   are `lts__t_sectors_lookup_hit.sum` and `lts__t_sectors_lookup_miss.sum`, which
//!   land in different groups (hit rate = hit / (hit + miss)).
//! - GH100: `sm__ops_path_tensor_src_fp16.sum` needs 2 passes; it is the sum of
//!   `sm__ops_path_tensor_op_hgmma_src_fp16`, `..._op_hmma_src_fp16_dst_fp32` and
//!   `..._op_hmma_src_fp16_dst_fp16` (same raw counters).
//! - GB100: `sm__ops_path_tensor_src_fp16_dst_fp16`, `..._src_tf32_dst_fp32` and
//!   `..._src_fp4_fp6_fp8_dst_fp32` need 2 passes; each is the HMMA part plus the
//!   tcgen05 (UTC*MMA) part, and the UTC part is split into `_sparsity_off` and
//!   `_sparsity_on` (one pass each).
//!
//! The chip has no `sm__ops_path_tensor_src_fp8` before Ada, and on Blackwell FP8 is
//! counted inside `src_fp4_fp6_fp8_*`.

/// A GPU architecture with a default metric set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    /// GA100 (A100).
    Ampere,
    /// AD102 (L40, RTX 4090).
    Ada,
    /// GH100 (H100, H200).
    Hopper,
    /// GB100 (B200).
    Blackwell,
}

impl Architecture {
    /// The name as NVIDIA spells it.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Ampere => "Ampere",
            Architecture::Ada => "Ada",
            Architecture::Hopper => "Hopper",
            Architecture::Blackwell => "Blackwell",
        }
    }
}

/// One single-pass group of a default set: metric names.
pub type DefaultGroup = &'static [&'static str];

/// The default groups of an architecture, and the chips they were checked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultSet {
    pub architecture: Architecture,
    /// Chip names as `NVPW_GetSupportedChipNames` spells them.
    pub chips: &'static [&'static str],
    /// Group 0 holds DRAM read/write bytes and BF16 tensor ops (AI and MFU).
    pub groups: &'static [DefaultGroup],
    /// What PM sampling collects (`GPUPROF_COUNTERS=sampling`): only metrics the
    /// Profiler Host API accepts for `CUPTI_PROFILER_TYPE_PM_SAMPLING` on the chip,
    /// together one pass; per slot, the first alternative the library accepts.
    pub sampling: &'static [SamplingSlot],
}

/// One slot of a PM sampling set: alternatives in order of preference, the first
/// that CUPTI accepts is collected.
pub type SamplingSlot = &'static [&'static [&'static str]];

/// The PM sampling set. What NVIDIA's Host API accepts for PM sampling depends on
/// the release (`tests/tests/it/cupti/profiler_host_real.rs` asks each one): every
/// `sm__ops_path_tensor_*`, `lts__t_sectors_lookup_*` and `smsp__sass_*` metric is
/// refused on GA100, AD102, GH100 and GB100 by 12.6-13.1; DRAM bytes are accepted
/// from 12.9 on, while 12.6 and 12.8 accept only DRAM throughput. Tensor-pipe
/// activity stands in for tensor ops: a utilisation, not a FLOP count.
const SAMPLING: &[SamplingSlot] = &[
    &[
        &["dram__bytes_read.sum", "dram__bytes_write.sum"],
        &["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
    ],
    &[&["sm__cycles_active.avg"]],
    &[&["sm__warps_active.avg.pct_of_peak_sustained_active"]],
    &[&["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]],
    &[&["gpu__time_duration.sum"]],
];

// DCGM's profiling fields SM active, SM occupancy, DRAM active, graphics engine
// active and tensor pipe active (`super::DCGM_FIELDS`), last in the ordered list:
// each joins a group that stays one pass, so they cost no launch of their own.
const SM_ACTIVE_ELAPSED: &str = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
const WARPS_ACTIVE_ELAPSED: &str = "sm__warps_active.avg.pct_of_peak_sustained_elapsed";
const DRAM_ACTIVE_ELAPSED: &str = "dram__cycles_active.avg.pct_of_peak_sustained_elapsed";
const GR_ACTIVE_ELAPSED: &str = "gr__cycles_active.avg.pct_of_peak_sustained_elapsed";
const TENSOR_ACTIVE_ELAPSED: &str =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";

const FP_INST: [&str; 9] = [
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
];

/// Group 0 on Ampere and Ada.
const GA_AD_GROUP0: DefaultGroup = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__cycles_active.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "lts__t_sectors_lookup_hit.sum",
    "gpu__time_duration.sum",
    SM_ACTIVE_ELAPSED,
    WARPS_ACTIVE_ELAPSED,
    DRAM_ACTIVE_ELAPSED,
    GR_ACTIVE_ELAPSED,
];

const AMPERE: &[DefaultGroup] = &[
    GA_AD_GROUP0,
    &[
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "lts__t_sectors_lookup_miss.sum",
    ],
    &[
        "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp64.sum",
    ],
    &["sm__ops_path_tensor_src_tf32_dst_fp32.sum"],
    &FP_INST,
    &[
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        TENSOR_ACTIVE_ELAPSED,
    ],
];

const ADA: &[DefaultGroup] = &[
    GA_AD_GROUP0,
    &[
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "lts__t_sectors_lookup_miss.sum",
    ],
    &[
        "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp64.sum",
    ],
    &["sm__ops_path_tensor_src_tf32_dst_fp32.sum"],
    &[
        "sm__ops_path_tensor_src_fp8.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        TENSOR_ACTIVE_ELAPSED,
    ],
    &FP_INST,
];

const HOPPER: &[DefaultGroup] = &[
    &[
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        "sm__ops_path_tensor_op_hgmma_src_fp16.sum",
        "sm__ops_path_tensor_src_fp8.sum",
        "sm__cycles_active.avg",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "lts__t_sectors_lookup_hit.sum",
        "gpu__time_duration.sum",
        SM_ACTIVE_ELAPSED,
        WARPS_ACTIVE_ELAPSED,
        DRAM_ACTIVE_ELAPSED,
        GR_ACTIVE_ELAPSED,
    ],
    &[
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
        "lts__t_sectors_lookup_miss.sum",
    ],
    &[
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp64.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        TENSOR_ACTIVE_ELAPSED,
    ],
    &["sm__ops_path_tensor_src_tf32_dst_fp32.sum"],
    &FP_INST,
];

const BLACKWELL: &[DefaultGroup] = &[
    &[
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        "sm__ops_path_tensor_op_utchmma_src_fp16_dst_fp16_sparsity_off.sum",
        "sm__cycles_active.avg",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "lts__t_sectors_lookup_hit.sum",
        "gpu__time_duration.sum",
        SM_ACTIVE_ELAPSED,
        WARPS_ACTIVE_ELAPSED,
        DRAM_ACTIVE_ELAPSED,
        GR_ACTIVE_ELAPSED,
    ],
    &[
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_op_utchmma_src_fp16_dst_fp16_sparsity_on.sum",
        "lts__t_sectors_lookup_miss.sum",
    ],
    &[
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_op_utchmma_src_tf32_dst_fp32_sparsity_off.sum",
        "sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp64.sum",
    ],
    &[
        "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum",
        "sm__ops_path_tensor_op_utchmma_src_tf32_dst_fp32_sparsity_on.sum",
        "sm__ops_path_tensor_src_fp4_dst_fp32.sum",
    ],
    &[
        "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_off.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        TENSOR_ACTIVE_ELAPSED,
    ],
    &["sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_on.sum"],
    &[
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
        // Blackwell's paired FP32 instructions (two operations per thread instruction).
        "smsp__sass_thread_inst_executed_op_ffma2_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd2_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul2_pred_on.sum",
    ],
];

/// Every default set.
pub static DEFAULT_SETS: &[DefaultSet] = &[
    DefaultSet {
        architecture: Architecture::Ampere,
        chips: &["GA100"],
        groups: AMPERE,
        sampling: SAMPLING,
    },
    DefaultSet {
        architecture: Architecture::Ada,
        chips: &["AD102"],
        groups: ADA,
        sampling: SAMPLING,
    },
    DefaultSet {
        architecture: Architecture::Hopper,
        chips: &["GH100"],
        groups: HOPPER,
        sampling: SAMPLING,
    },
    DefaultSet {
        architecture: Architecture::Blackwell,
        chips: &["GB100"],
        groups: BLACKWELL,
        sampling: SAMPLING,
    },
];

/// The default set checked on `chip`, if there is one.
pub fn default_set_for(chip: &str) -> Option<&'static DefaultSet> {
    DEFAULT_SETS.iter().find(|s| s.chips.contains(&chip))
}

/// The PM sampling set of `chip`, if it has a default set.
pub fn sampling_metrics(chip: &str) -> Option<&'static [SamplingSlot]> {
    default_set_for(chip).map(|s| s.sampling)
}

/// The default groups of `chip`, if it has a default set.
pub fn default_groups(chip: &str) -> Option<&'static [DefaultGroup]> {
    default_set_for(chip).map(|s| s.groups)
}
