//! Datasheet peaks of known GPUs, matched by the CUDA device name
//! (`cuDeviceGetName`), and the per-SM rates of each architecture that the fallback
//! for other GPUs multiplies by SM count and clock.
//!
//! All FLOP/s figures are dense (without structured sparsity). Where a datasheet gives
//! only the sparse figure, the dense one is half of it. On these parts FP16 = BF16,
//! TF32 = half of BF16, and FP8 = 2 x BF16 where the GPU has FP8 (Hopper, Ada,
//! Blackwell); GeForce parts are the exception, see their source.

use crate::analysis::precision::Precision;

/// One GPU of the table. FLOP/s in TFLOP/s, bandwidth in TB/s (10^12 bytes/s).
pub(super) struct KnownGpu {
    /// Device names as `cuDeviceGetName` reports them (compared case-insensitively,
    /// surrounding spaces ignored).
    pub names: &'static [&'static str],
    /// Where the numbers come from.
    pub source: &'static str,
    /// Dense tensor-core peaks, TFLOP/s (INT8: TOP/s).
    pub tensor: &'static [(Precision, f64)],
    /// Non-tensor FP32 and FP64 peaks, TFLOP/s.
    pub fp32: f64,
    pub fp64: f64,
    /// DRAM bandwidth, TB/s.
    pub dram_tb_s: f64,
}

use Precision::{Bf16, Fp16, Fp4, Fp64, Fp8, Int8, Tf32};

const H100_SXM_TENSOR: &[(Precision, f64)] = &[
    (Fp64, 67.0),
    (Tf32, 494.7),
    (Fp16, 989.4),
    (Bf16, 989.4),
    (Fp8, 1978.8),
    (Int8, 1978.8),
];

const HOPPER_NVL_TENSOR: &[(Precision, f64)] = &[
    (Fp64, 60.0),
    (Tf32, 417.75),
    (Fp16, 835.5),
    (Bf16, 835.5),
    (Fp8, 1671.0),
    (Int8, 1671.0),
];

const A100_TENSOR: &[(Precision, f64)] = &[
    (Fp64, 19.5),
    (Tf32, 156.0),
    (Fp16, 312.0),
    (Bf16, 312.0),
    (Int8, 624.0),
];

pub(super) const KNOWN_GPUS: &[KnownGpu] = &[
    KnownGpu {
        names: &["NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"],
        source: "NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 dense 989.4 TFLOP/s, \
                 FP8 1978.8, TF32 494.7, FP64 tensor 67, FP32 67, FP64 34 TFLOP/s, 3.35 TB/s",
        tensor: H100_SXM_TENSOR,
        fp32: 67.0,
        fp64: 34.0,
        dram_tb_s: 3.35,
    },
    KnownGpu {
        names: &["NVIDIA H100 PCIe"],
        source: "NVIDIA H100 Tensor Core GPU datasheet, PCIe: BF16 dense 756.5 TFLOP/s, \
                 FP8 1513, TF32 378.25, FP64 tensor 51, FP32 51, FP64 26 TFLOP/s, 2 TB/s",
        tensor: &[
            (Fp64, 51.0),
            (Tf32, 378.25),
            (Fp16, 756.5),
            (Bf16, 756.5),
            (Fp8, 1513.0),
            (Int8, 1513.0),
        ],
        fp32: 51.0,
        fp64: 26.0,
        dram_tb_s: 2.0,
    },
    KnownGpu {
        names: &["NVIDIA H100 NVL"],
        source: "NVIDIA H100 NVL datasheet: BF16 dense 835.5 TFLOP/s, FP8 1671, \
                 TF32 417.75, FP64 tensor 60, FP32 60, FP64 30 TFLOP/s, 3.9 TB/s",
        tensor: HOPPER_NVL_TENSOR,
        fp32: 60.0,
        fp64: 30.0,
        dram_tb_s: 3.9,
    },
    KnownGpu {
        names: &["NVIDIA H200"],
        source: "NVIDIA H200 Tensor Core GPU datasheet, SXM: BF16 dense 989.4 TFLOP/s, \
                 FP8 1978.8, TF32 494.7, FP64 tensor 67, FP32 67, FP64 34 TFLOP/s, 4.8 TB/s",
        tensor: H100_SXM_TENSOR,
        fp32: 67.0,
        fp64: 34.0,
        dram_tb_s: 4.8,
    },
    KnownGpu {
        names: &["NVIDIA H200 NVL"],
        source: "NVIDIA H200 Tensor Core GPU datasheet, NVL: BF16 dense 835.5 TFLOP/s, \
                 FP8 1671, TF32 417.75, FP64 tensor 60, FP32 60, FP64 30 TFLOP/s, 4.8 TB/s",
        tensor: HOPPER_NVL_TENSOR,
        fp32: 60.0,
        fp64: 30.0,
        dram_tb_s: 4.8,
    },
    KnownGpu {
        names: &["NVIDIA A100-SXM4-80GB"],
        source: "NVIDIA A100 Tensor Core GPU datasheet, 80GB SXM: BF16 dense 312 TFLOP/s, \
                 INT8 624 TOP/s, TF32 156, FP64 tensor 19.5, FP32 19.5, FP64 9.7 TFLOP/s, \
                 2.039 TB/s",
        tensor: A100_TENSOR,
        fp32: 19.5,
        fp64: 9.7,
        dram_tb_s: 2.039,
    },
    KnownGpu {
        names: &["NVIDIA A100-SXM4-40GB"],
        source: "NVIDIA A100 Tensor Core GPU datasheet, 40GB SXM: BF16 dense 312 TFLOP/s, \
                 INT8 624 TOP/s, TF32 156, FP64 tensor 19.5, FP32 19.5, FP64 9.7 TFLOP/s, \
                 1.555 TB/s",
        tensor: A100_TENSOR,
        fp32: 19.5,
        fp64: 9.7,
        dram_tb_s: 1.555,
    },
    KnownGpu {
        names: &["NVIDIA A100 80GB PCIe"],
        source: "NVIDIA A100 Tensor Core GPU datasheet, 80GB PCIe: BF16 dense 312 TFLOP/s, \
                 INT8 624 TOP/s, TF32 156, FP64 tensor 19.5, FP32 19.5, FP64 9.7 TFLOP/s, \
                 1.935 TB/s",
        tensor: A100_TENSOR,
        fp32: 19.5,
        fp64: 9.7,
        dram_tb_s: 1.935,
    },
    KnownGpu {
        names: &["NVIDIA A100-PCIE-40GB"],
        source: "NVIDIA A100 Tensor Core GPU datasheet, 40GB PCIe: BF16 dense 312 TFLOP/s, \
                 INT8 624 TOP/s, TF32 156, FP64 tensor 19.5, FP32 19.5, FP64 9.7 TFLOP/s, \
                 1.555 TB/s",
        tensor: A100_TENSOR,
        fp32: 19.5,
        fp64: 9.7,
        dram_tb_s: 1.555,
    },
    KnownGpu {
        names: &["NVIDIA L40S"],
        source: "NVIDIA L40S datasheet: BF16 dense 362.05 TFLOP/s, FP8 724.1, TF32 181.025, \
                 FP32 91.6 TFLOP/s, 864 GB/s; FP64 1/64 of FP32 (Ada architecture)",
        tensor: &[
            (Tf32, 181.025),
            (Fp16, 362.05),
            (Bf16, 362.05),
            (Fp8, 724.1),
            (Int8, 724.1),
        ],
        fp32: 91.6,
        fp64: 1.43125,
        dram_tb_s: 0.864,
    },
    KnownGpu {
        names: &["NVIDIA L4"],
        source: "NVIDIA L4 Tensor Core GPU datasheet: BF16 dense 121 TFLOP/s, FP8 242, \
                 TF32 60.5, FP32 30.3 TFLOP/s, 300 GB/s; FP64 1/64 of FP32 (Ada architecture)",
        tensor: &[
            (Tf32, 60.5),
            (Fp16, 121.0),
            (Bf16, 121.0),
            (Fp8, 242.0),
            (Int8, 242.0),
        ],
        fp32: 30.3,
        fp64: 0.4734375,
        dram_tb_s: 0.3,
    },
    KnownGpu {
        names: &["NVIDIA B200"],
        source: "NVIDIA HGX B200 datasheet, per GPU: BF16 dense 2250 TFLOP/s, FP8 4500, \
                 FP4 9000, TF32 1125, FP64 and FP64 tensor 40, FP32 80 TFLOP/s, 8 TB/s",
        tensor: &[
            (Fp64, 40.0),
            (Tf32, 1125.0),
            (Fp16, 2250.0),
            (Bf16, 2250.0),
            (Fp8, 4500.0),
            (Int8, 4500.0),
            (Fp4, 9000.0),
        ],
        fp32: 80.0,
        fp64: 40.0,
        dram_tb_s: 8.0,
    },
    KnownGpu {
        names: &["NVIDIA GeForce RTX 4090"],
        source: "NVIDIA Ada Lovelace architecture whitepaper, RTX 4090, FP32 accumulate: \
                 BF16 dense 165.2 TFLOP/s, FP8 330.3, TF32 82.6, INT8 660.6 TOP/s, \
                 FP32 82.6, FP64 1.29 TFLOP/s, 1008 GB/s",
        tensor: &[
            (Tf32, 82.6),
            (Fp16, 165.2),
            (Bf16, 165.2),
            (Fp8, 330.3),
            (Int8, 660.6),
        ],
        fp32: 82.6,
        fp64: 1.29,
        dram_tb_s: 1.008,
    },
];

/// Per-SM, per-clock rates of an architecture (compute capability).
pub(super) struct ArchRates {
    pub capability: (u32, u32),
    /// FP32 lanes per SM (one FMA = 2 FLOP each per clock).
    pub fp32_lanes: u32,
    /// FP64 lanes per SM.
    pub fp64_lanes: u32,
    /// Dense BF16/FP16 tensor FMAs per SM per clock.
    pub tensor_fma: u32,
    /// Dense FP64 tensor FMAs per SM per clock (0: no FP64 tensor cores).
    pub fp64_tensor_fma: u32,
    /// FP8 rate as a multiple of BF16 (0: no FP8).
    pub fp8_factor: u32,
    /// FP4 rate as a multiple of BF16 (0: no FP4).
    pub fp4_factor: u32,
}

/// INT8 runs at 2 x BF16 on every architecture below.
pub(super) const INT8_FACTOR: u32 = 2;

pub(super) const ARCH_RATES: &[ArchRates] = &[
    ArchRates {
        capability: (8, 0),
        fp32_lanes: 64,
        fp64_lanes: 32,
        tensor_fma: 1024,
        fp64_tensor_fma: 64,
        fp8_factor: 0,
        fp4_factor: 0,
    },
    ArchRates {
        capability: (8, 6),
        fp32_lanes: 128,
        fp64_lanes: 2,
        tensor_fma: 512,
        fp64_tensor_fma: 0,
        fp8_factor: 0,
        fp4_factor: 0,
    },
    ArchRates {
        capability: (8, 9),
        fp32_lanes: 128,
        fp64_lanes: 2,
        tensor_fma: 512,
        fp64_tensor_fma: 0,
        fp8_factor: 2,
        fp4_factor: 0,
    },
    ArchRates {
        capability: (9, 0),
        fp32_lanes: 128,
        fp64_lanes: 64,
        tensor_fma: 2048,
        fp64_tensor_fma: 128,
        fp8_factor: 2,
        fp4_factor: 0,
    },
    ArchRates {
        capability: (10, 0),
        fp32_lanes: 128,
        fp64_lanes: 64,
        tensor_fma: 4096,
        fp64_tensor_fma: 64,
        fp8_factor: 2,
        fp4_factor: 4,
    },
];
