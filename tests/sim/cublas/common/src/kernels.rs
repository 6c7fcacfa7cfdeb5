//! Which kernel a GEMM runs, with which launch configuration, and the PTX module that
//! declares every kernel a handle may launch.
//!
//! Every name below is a real kernel name found in NVIDIA's `libcublasLt.so.12`
//! (cuBLAS 12.9.1.4): Hopper (`cc 9.x` and newer) runs `sm90_xmma_*` wgmma kernels,
//! Ampere-class GPUs (`cc 8.x`) the `ampere_*` / `sm80_xmma_*` ones, and a GEMM with
//! `n == 1` on 16-bit or FP32 data the GEMV kernels (`gemv2T_kernel_val` when `op(A)` is
//! transposed, else `gemv2N_kernel`; C++ templates, so their names are mangled, as
//! CUPTI reports them). `{ab}` in a name is the layout of A and B: `n` for
//! `CUBLAS_OP_N`, `t` for `CUBLAS_OP_T` / `CUBLAS_OP_C`.
//!
//! Grids: one CTA per output tile (`ceil(m / tile_m) x ceil(n / tile_n)`), batch in
//! `z`; batches larger than `gridDim.z`'s limit (65535) are split over several launches,
//! as the real library does. GEMVs: `ceil(m / rows per CTA)` CTAs in `x`, batch in `z`.

use std::ffi::c_int;
use std::fmt::Write as _;

use crate::consts::*;

/// What the device is, as far as kernel choice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch {
    pub major: i32,
    pub minor: i32,
    pub sm_count: i32,
}

/// The kernel families the sim has kernels for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// cc 8.x: A100, A10, L4, L40, RTX 30/40.
    Sm80,
    /// cc 9.0 and newer (the sim runs Hopper kernels on later GPUs too).
    Sm90,
}

impl Arch {
    /// The family, or `CUBLAS_STATUS_ARCH_MISMATCH` before Ampere (the sim has no
    /// Volta / Turing kernels).
    pub fn family(&self) -> Result<Family, Status> {
        match self.major {
            8 => Ok(Family::Sm80),
            m if m >= 9 => Ok(Family::Sm90),
            _ => Err(CUBLAS_STATUS_ARCH_MISMATCH),
        }
    }
}

/// The arithmetic a GEMM does, from its data and compute types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// BF16 A, B, C; FP32 accumulate.
    Bf16,
    /// FP16 A, B, C; FP32 accumulate.
    F16,
    /// FP16 A, B, C; FP16 accumulate (`CUBLAS_COMPUTE_16F`, `cublasHgemm`).
    F16Acc16,
    /// FP32 on CUDA cores.
    F32,
    /// FP32 data on tensor cores as TF32.
    Tf32,
    /// FP64.
    F64,
}

impl Kind {
    /// Bytes per element of A and B.
    pub fn elem_bytes(self) -> u32 {
        match self {
            Kind::Bf16 | Kind::F16 | Kind::F16Acc16 => 2,
            Kind::F32 | Kind::Tf32 => 4,
            Kind::F64 => 8,
        }
    }
}

/// The arithmetic of a GEMM with these types, or the status cuBLAS returns.
///
/// `tf32_allowed`: the handle's math mode is `CUBLAS_TF32_TENSOR_OP_MATH` (FP32 data
/// with `CUBLAS_COMPUTE_32F` then runs on tensor cores).
///
/// Combinations cuBLAS documents for `cublasGemmEx` but the sim has no kernels for
/// (integer, complex, FP8, 16-bit inputs with an FP32 C, `CUBLAS_COMPUTE_32F_EMULATED_16BFX9`)
/// are `CUBLAS_STATUS_NOT_SUPPORTED`, as are undocumented ones.
pub fn classify(
    a: c_int,
    b: c_int,
    c: c_int,
    compute: c_int,
    tf32_allowed: bool,
) -> Result<Kind, Status> {
    if a != b {
        return Err(CUBLAS_STATUS_NOT_SUPPORTED);
    }
    match (compute, a, c) {
        (CUBLAS_COMPUTE_16F | CUBLAS_COMPUTE_16F_PEDANTIC, CUDA_R_16F, CUDA_R_16F) => {
            Ok(Kind::F16Acc16)
        }
        (CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16BF, CUDA_R_16BF) => {
            Ok(Kind::Bf16)
        }
        (CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16F, CUDA_R_16F) => Ok(Kind::F16),
        (CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F) if tf32_allowed => Ok(Kind::Tf32),
        (CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, CUDA_R_32F) => Ok(Kind::F32),
        (
            CUBLAS_COMPUTE_32F_FAST_TF32
            | CUBLAS_COMPUTE_32F_FAST_16BF
            | CUBLAS_COMPUTE_32F_FAST_16F,
            CUDA_R_32F,
            CUDA_R_32F,
        ) => Ok(Kind::Tf32),
        (CUBLAS_COMPUTE_64F | CUBLAS_COMPUTE_64F_PEDANTIC, CUDA_R_64F, CUDA_R_64F) => Ok(Kind::F64),
        _ => Err(CUBLAS_STATUS_NOT_SUPPORTED),
    }
}

/// One GEMM (or a batch of equal ones) as the kernel choice sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    pub kind: Kind,
    /// `op(A)` / `op(B)` transposed (`CUBLAS_OP_T` or `CUBLAS_OP_C`).
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Batched through arrays of pointers (`cublasGemmBatchedEx`) rather than strides.
    pub pointer_array: bool,
}

/// A kernel of the module: name, threads per CTA, registers per thread, dynamic
/// shared memory per CTA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub block: [u32; 3],
    pub registers: u32,
    pub shared_mem: u32,
    /// Output tile (rows, columns) of one CTA; GEMV: (rows, 1).
    pub tile: (u64, u64),
}

/// One launch: the kernel and its grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub kernel: Kernel,
    pub grid: [u32; 3],
}

/// `gridDim.z` limit: larger batches take several launches.
pub const MAX_GRID_Z: u64 = 65535;

fn ab(ta: bool, tb: bool) -> String {
    format!(
        "{}{}",
        if ta { 't' } else { 'n' },
        if tb { 't' } else { 'n' }
    )
}

fn gemm_kernel(family: Family, kind: Kind, ta: bool, tb: bool) -> Kernel {
    let ab = ab(ta, tb);
    let k =
        |name: String, threads: u32, registers: u32, shared_mem: u32, tile: (u64, u64)| Kernel {
            name,
            block: [threads, 1, 1],
            registers,
            shared_mem,
            tile,
        };
    const SM90_SMEM: u32 = 6 * 32768;
    match (family, kind) {
        (Family::Sm90, Kind::Bf16) => k(
            format!("sm90_xmma_gemm_bf16bf16_bf16f32_f32_{ab}_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas"),
            384, 168, SM90_SMEM, (128, 128),
        ),
        (Family::Sm90, Kind::F16) => k(
            format!("sm90_xmma_gemm_f16f16_f16f32_f32_{ab}_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas"),
            384, 168, SM90_SMEM, (128, 128),
        ),
        (Family::Sm90, Kind::F16Acc16) => k(
            format!("sm90_xmma_gemm_f16f16_f16f16_f16_{ab}_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas"),
            384, 168, SM90_SMEM, (128, 128),
        ),
        (Family::Sm90, Kind::Tf32) => k(
            format!("sm90_xmma_gemm_f32f32_tf32f32_f32_{ab}_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
            384, 168, SM90_SMEM, (128, 128),
        ),
        (Family::Sm90, Kind::F32) => k(
            format!("sm80_xmma_gemm_f32f32_f32f32_f32_{ab}_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"),
            128, 128, 3 * 2 * 128 * 8 * 4, (128, 128),
        ),
        (Family::Sm90, Kind::F64) => k(
            format!("sm90_xmma_gemm_f64f64_f64f64_f64_{ab}_n_tilesize128x128x16_stage3_warpsize4x2x1_tensor16x8x16_aligna8_alignc8_execute_kernel__5x_cublas"),
            256, 232, 3 * 2 * 128 * 16 * 8, (128, 128),
        ),
        (Family::Sm80, Kind::Bf16) => k(
            format!("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_{ab}"),
            128, 230, 3 * 2 * 128 * 64 * 2, (128, 128),
        ),
        (Family::Sm80, Kind::F16) => k(
            format!("sm80_xmma_gemm_f16f16_f16f32_f32_{ab}_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_execute_kernel__5x_cublas"),
            128, 230, 4 * 2 * 128 * 32 * 2, (128, 128),
        ),
        (Family::Sm80, Kind::F16Acc16) => k(
            format!("ampere_h16816gemm_128x128_ldg8_stages_64x3_{ab}"),
            128, 230, 3 * 2 * 128 * 64 * 2, (128, 128),
        ),
        (Family::Sm80, Kind::Tf32) => k(
            format!("sm80_xmma_gemm_f32f32_tf32f32_f32_{ab}_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_aligna4_alignc4_execute_kernel__5x_cublas"),
            128, 230, 4 * 2 * 128 * 16 * 4, (128, 128),
        ),
        (Family::Sm80, Kind::F32) => k(format!("ampere_sgemm_128x128_{ab}"), 256, 122, 0, (128, 128)),
        (Family::Sm80, Kind::F64) => k(
            format!("sm80_xmma_gemm_f64f64_f64f64_f64_{ab}_n_tilesize128x64x16_stage3_warpsize4x2x1_tensor8x8x4_execute_kernel__5x_cublas"),
            256, 232, 3 * (128 + 64) * 16 * 8, (128, 64),
        ),
    }
}

/// The mangled C++ type of a GEMV element, and how the rest of the mangled name refers
/// back to it.
fn gemv_kernel(kind: Kind, trans_a: bool, pointer_array: bool) -> Option<Kernel> {
    let tensor = if pointer_array {
        "23cublasGemvTensorBatched"
    } else {
        "30cublasGemvTensorStridedBatched"
    };
    let (head, tail_t, tail_n) = match kind {
        Kind::Bf16 => (
            "13__nv_bfloat16S0_S0_f",
            format!("E18cublasGemvParamsExIi{tensor}IKS0_ES4_S2_IS0_EfEEvT11_T4_S8_"),
            format!("E18cublasGemvParamsExIi{tensor}IKS0_ES4_S2_IS0_EfEEvT11_"),
        ),
        Kind::F16 => (
            "6__halfS0_S0_f",
            format!("E18cublasGemvParamsExIi{tensor}IKS0_ES4_S2_IS0_EfEEvT11_T4_S8_"),
            format!("E18cublasGemvParamsExIi{tensor}IKS0_ES4_S2_IS0_EfEEvT11_"),
        ),
        Kind::F32 => (
            "ffff",
            format!("E18cublasGemvParamsExIi{tensor}IKfES3_S1_IfEfEEvT11_T4_S7_"),
            format!("E18cublasGemvParamsExIi{tensor}IKfES3_S1_IfEfEEvT11_"),
        ),
        _ => return None,
    };
    Some(if trans_a {
        Kernel {
            name: format!("_Z17gemv2T_kernel_valIii{head}Li128ELi16ELi4ELi4ELb0ELb0{tail_t}"),
            block: [128, 1, 1],
            registers: 32,
            shared_mem: 0,
            tile: (16, 1),
        }
    } else {
        Kernel {
            name: format!("_Z13gemv2N_kernelIii{head}Li128ELi1ELi2ELi2ELi11ELb0{tail_n}"),
            block: [128, 1, 1],
            registers: 40,
            shared_mem: 0,
            tile: (256, 1),
        }
    })
}

/// The kernel a problem runs on `family`.
pub fn kernel_for(family: Family, p: &Problem) -> Kernel {
    if p.n == 1 {
        if let Some(k) = gemv_kernel(p.kind, p.trans_a, p.pointer_array) {
            return k;
        }
    }
    gemm_kernel(family, p.kind, p.trans_a, p.trans_b)
}

/// The launches of a non-empty problem (`m`, `n`, `k`, `batch` all > 0).
pub fn plan(family: Family, p: &Problem) -> Vec<Launch> {
    let kernel = kernel_for(family, p);
    let gx = p.m.div_ceil(kernel.tile.0);
    let gy = p.n.div_ceil(kernel.tile.1);
    let mut launches = Vec::new();
    let mut left = p.batch;
    while left > 0 {
        let z = left.min(MAX_GRID_Z);
        launches.push(Launch {
            kernel: kernel.clone(),
            grid: [clamp(gx), clamp(gy), z as u32],
        });
        left -= z;
    }
    launches
}

fn clamp(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Every kernel a handle on `family` may launch.
pub fn all_kernels(family: Family) -> Vec<Kernel> {
    let kinds = [
        Kind::Bf16,
        Kind::F16,
        Kind::F16Acc16,
        Kind::F32,
        Kind::Tf32,
        Kind::F64,
    ];
    let mut out = Vec::new();
    for kind in kinds {
        for ta in [false, true] {
            for tb in [false, true] {
                out.push(gemm_kernel(family, kind, ta, tb));
            }
            for pa in [false, true] {
                out.extend(gemv_kernel(kind, ta, pa));
            }
        }
    }
    out
}

/// The PTX text of the module holding [`all_kernels`] (NUL-terminated, as
/// `cuModuleLoadData` takes PTX). Each entry takes the A, B and D pointers.
pub fn module_ptx(family: Family) -> String {
    let target = match family {
        Family::Sm80 => "sm_80",
        Family::Sm90 => "sm_90a",
    };
    let mut s = format!(
        "//\n// gpuprof simulated cuBLAS {VER_MAJOR}.{VER_MINOR}.{VER_PATCH}: kernel stubs\n//\n\n\
         .version 8.8\n.target {target}\n.address_size 64\n"
    );
    for k in all_kernels(family) {
        let n = &k.name;
        let _ = write!(
            s,
            "\n.visible .entry {n}(\n\t.param .u64 {n}_param_0,\n\t.param .u64 {n}_param_1,\n\t.param .u64 {n}_param_2\n)\n.maxnreg {}\n{{\n\tret;\n}}\n",
            k.registers
        );
    }
    s.push('\0');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(kind: Kind, m: u64, n: u64, k: u64, batch: u64) -> Problem {
        Problem {
            kind,
            trans_a: true,
            trans_b: false,
            m,
            n,
            k,
            batch,
            pointer_array: false,
        }
    }

    #[test]
    fn types_classify_as_documented() {
        assert_eq!(
            classify(
                CUDA_R_16BF,
                CUDA_R_16BF,
                CUDA_R_16BF,
                CUBLAS_COMPUTE_32F,
                false
            ),
            Ok(Kind::Bf16)
        );
        assert_eq!(
            classify(
                CUDA_R_16F,
                CUDA_R_16F,
                CUDA_R_16F,
                CUBLAS_COMPUTE_16F,
                false
            ),
            Ok(Kind::F16Acc16)
        );
        assert_eq!(
            classify(
                CUDA_R_32F,
                CUDA_R_32F,
                CUDA_R_32F,
                CUBLAS_COMPUTE_32F,
                false
            ),
            Ok(Kind::F32)
        );
        assert_eq!(
            classify(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true),
            Ok(Kind::Tf32)
        );
        assert_eq!(
            classify(
                CUDA_R_32F,
                CUDA_R_32F,
                CUDA_R_32F,
                CUBLAS_COMPUTE_32F_PEDANTIC,
                true
            ),
            Ok(Kind::F32)
        );
        assert_eq!(
            classify(
                CUDA_R_32F,
                CUDA_R_32F,
                CUDA_R_32F,
                CUBLAS_COMPUTE_32F_FAST_TF32,
                false
            ),
            Ok(Kind::Tf32)
        );
        assert_eq!(
            classify(
                CUDA_R_16BF,
                CUDA_R_16F,
                CUDA_R_16BF,
                CUBLAS_COMPUTE_32F,
                false
            ),
            Err(CUBLAS_STATUS_NOT_SUPPORTED)
        );
        assert_eq!(
            classify(
                CUDA_R_16BF,
                CUDA_R_16BF,
                CUDA_R_16BF,
                CUBLAS_COMPUTE_16F,
                false
            ),
            Err(CUBLAS_STATUS_NOT_SUPPORTED)
        );
        assert_eq!(
            classify(CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, false),
            Err(CUBLAS_STATUS_NOT_SUPPORTED)
        );
    }

    #[test]
    fn hopper_bf16_prefill_gemm() {
        let l = plan(Family::Sm90, &problem(Kind::Bf16, 4096, 4096, 4096, 1));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].kernel.name, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas");
        assert_eq!(l[0].grid, [32, 32, 1]);
        assert_eq!(l[0].kernel.block, [384, 1, 1]);
    }

    #[test]
    fn ampere_and_gemv_and_big_batches() {
        let l = plan(Family::Sm80, &problem(Kind::Bf16, 1000, 200, 64, 3));
        assert_eq!(
            l[0].kernel.name,
            "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
        );
        assert_eq!(l[0].grid, [8, 2, 3]);
        let l = plan(Family::Sm90, &problem(Kind::Bf16, 4096, 1, 4096, 1));
        assert_eq!(l[0].kernel.name, "_Z17gemv2T_kernel_valIii13__nv_bfloat16S0_S0_fLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKS0_ES4_S2_IS0_EfEEvT11_T4_S8_");
        assert_eq!(l[0].grid, [256, 1, 1]);
        let l = plan(Family::Sm90, &problem(Kind::F32, 10, 10, 10, 70000));
        assert_eq!(
            l.iter().map(|l| l.grid[2]).collect::<Vec<_>>(),
            [65535, 4465]
        );
    }

    #[test]
    fn module_declares_every_kernel_once() {
        for f in [Family::Sm80, Family::Sm90] {
            let ptx = module_ptx(f);
            for k in all_kernels(f) {
                let decl = format!(".visible .entry {}(", k.name);
                assert_eq!(ptx.matches(&decl).count(), 1, "{}", k.name);
            }
            assert!(ptx.ends_with('\0'));
        }
    }
}
