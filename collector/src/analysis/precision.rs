//! Arithmetic precisions, and which one a GEMM runs at.
//!
//! A GEMM's peak depends on the types its inputs are in and on the compute type cuBLAS
//! was asked for: FP32 inputs with `CUBLAS_COMPUTE_32F` run on CUDA cores at the FP32
//! rate, with `CUBLAS_COMPUTE_32F_FAST_TF32` on tensor cores at the TF32 rate. The
//! enumeration values are those of NVIDIA's `library_types.h` (`cudaDataType_t`) and
//! `cublas_api.h` (`cublasComputeType_t`) in CUDA 12.9 and 13.x.

use std::fmt;

use serde::Serialize;

/// A number format whose peak FLOP/s a GPU's datasheet gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Precision {
    Fp64,
    Fp32,
    Tf32,
    Fp16,
    Bf16,
    Fp8,
    Int8,
    Fp4,
}

impl Precision {
    /// Every precision, widest first.
    pub const ALL: [Precision; 8] = [
        Precision::Fp64,
        Precision::Fp32,
        Precision::Tf32,
        Precision::Fp16,
        Precision::Bf16,
        Precision::Fp8,
        Precision::Int8,
        Precision::Fp4,
    ];

    /// The name datasheets use ("FP64", "BF16", ...).
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp64 => "FP64",
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Fp16 => "FP16",
            Precision::Bf16 => "BF16",
            Precision::Fp8 => "FP8",
            Precision::Int8 => "INT8",
            Precision::Fp4 => "FP4",
        }
    }

    /// The precision named `name`, case-insensitively ("bf16", "FP8", ...).
    pub fn parse(name: &str) -> Option<Precision> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Bits per element (TF32 counts as 32: it is stored as FP32).
    fn bits(self) -> u32 {
        match self {
            Precision::Fp64 => 64,
            Precision::Fp32 | Precision::Tf32 => 32,
            Precision::Fp16 | Precision::Bf16 => 16,
            Precision::Fp8 | Precision::Int8 => 8,
            Precision::Fp4 => 4,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which units do the arithmetic: tensor cores or the SM's CUDA cores (FMA pipes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pipe {
    Tensor,
    Cuda,
}

impl Pipe {
    /// "tensor" or "CUDA cores".
    pub fn name(self) -> &'static str {
        match self {
            Pipe::Tensor => "tensor",
            Pipe::Cuda => "CUDA cores",
        }
    }
}

/// A precision on a pipe: what a peak is looked up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Math {
    pub precision: Precision,
    pub pipe: Pipe,
}

impl Math {
    pub fn tensor(precision: Precision) -> Math {
        Math {
            precision,
            pipe: Pipe::Tensor,
        }
    }

    pub fn cuda(precision: Precision) -> Math {
        Math {
            precision,
            pipe: Pipe::Cuda,
        }
    }
}

impl fmt::Display for Math {
    /// "BF16 tensor", "FP32 CUDA cores".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.precision, self.pipe.name())
    }
}

/// `cudaDataType_t` values (library_types.h, the generated bindings' newest).
pub use cupti_sys::cudaDataType_t as data_type;

/// `cublasComputeType_t` values (cublas_api.h, the generated bindings).
pub use cupti_sys::cublas::cublasComputeType_t as compute_type;

/// Table of `cudaDataType_t`: (value, short name, complex, bits per element: a
/// complex element is two).
const DATA_TYPES: [(u32, &str, bool, u32); 35] = [
    (data_type::CUDA_R_32F, "fp32", false, 32),
    (data_type::CUDA_R_64F, "fp64", false, 64),
    (data_type::CUDA_R_16F, "fp16", false, 16),
    (data_type::CUDA_R_8I, "int8", false, 8),
    (data_type::CUDA_C_32F, "complex fp32", true, 64),
    (data_type::CUDA_C_64F, "complex fp64", true, 128),
    (data_type::CUDA_C_16F, "complex fp16", true, 32),
    (data_type::CUDA_C_8I, "complex int8", true, 16),
    (data_type::CUDA_R_8U, "uint8", false, 8),
    (data_type::CUDA_C_8U, "complex uint8", true, 16),
    (data_type::CUDA_R_32I, "int32", false, 32),
    (data_type::CUDA_C_32I, "complex int32", true, 64),
    (data_type::CUDA_R_32U, "uint32", false, 32),
    (data_type::CUDA_C_32U, "complex uint32", true, 64),
    (data_type::CUDA_R_16BF, "bf16", false, 16),
    (data_type::CUDA_C_16BF, "complex bf16", true, 32),
    (data_type::CUDA_R_4I, "int4", false, 4),
    (data_type::CUDA_C_4I, "complex int4", true, 8),
    (data_type::CUDA_R_4U, "uint4", false, 4),
    (data_type::CUDA_C_4U, "complex uint4", true, 8),
    (data_type::CUDA_R_16I, "int16", false, 16),
    (data_type::CUDA_C_16I, "complex int16", true, 32),
    (data_type::CUDA_R_16U, "uint16", false, 16),
    (data_type::CUDA_C_16U, "complex uint16", true, 32),
    (data_type::CUDA_R_64I, "int64", false, 64),
    (data_type::CUDA_C_64I, "complex int64", true, 128),
    (data_type::CUDA_R_64U, "uint64", false, 64),
    (data_type::CUDA_C_64U, "complex uint64", true, 128),
    (data_type::CUDA_R_8F_E4M3, "fp8 e4m3", false, 8),
    (data_type::CUDA_R_8F_E5M2, "fp8 e5m2", false, 8),
    (data_type::CUDA_R_8F_UE8M0, "fp8 ue8m0", false, 8),
    (data_type::CUDA_R_6F_E2M3, "fp6 e2m3", false, 6),
    (data_type::CUDA_R_6F_E3M2, "fp6 e3m2", false, 6),
    (data_type::CUDA_R_4F_E2M1, "fp4 e2m1", false, 4),
    (data_type::CUDA_R_8F_UE5M3, "fp8 ue5m3", false, 8),
];

/// Bits per element of a `cudaDataType_t` (a complex element is two); `None` for a
/// value the table does not know.
pub fn data_type_bits(t: u32) -> Option<u32> {
    DATA_TYPES
        .iter()
        .find(|(v, ..)| *v == t)
        .map(|&(.., bits)| bits)
}

/// A `cudaDataType_t` for people: `CUDA_R_16BF` -> "bf16", `CUDA_C_32F` -> "complex
/// fp32"; an unknown value as "cudaDataType_t N".
pub fn data_type_name(t: u32) -> String {
    match DATA_TYPES.iter().find(|(v, ..)| *v == t) {
        Some((_, name, ..)) => name.to_string(),
        None => format!("cudaDataType_t {t}"),
    }
}

/// Whether a `cudaDataType_t` is complex (a complex multiply-add is 4 real ones).
pub fn is_complex(t: u32) -> bool {
    DATA_TYPES.iter().any(|&(v, _, c, _)| v == t && c)
}

/// A `cublasComputeType_t` for people: `CUBLAS_COMPUTE_32F_FAST_TF32` -> "fp32 fast
/// tf32". Values below 64 are the `cudaDataType_t` that the pre-11 `cublasGemmEx` ABI
/// passes as its compute type, named as data types.
pub fn compute_type_name(t: u32) -> String {
    use compute_type::*;
    let name = match t {
        CUBLAS_COMPUTE_16F => "fp16",
        CUBLAS_COMPUTE_16F_PEDANTIC => "fp16 pedantic",
        CUBLAS_COMPUTE_32F => "fp32",
        CUBLAS_COMPUTE_32F_PEDANTIC => "fp32 pedantic",
        CUBLAS_COMPUTE_64F => "fp64",
        CUBLAS_COMPUTE_64F_PEDANTIC => "fp64 pedantic",
        CUBLAS_COMPUTE_32I => "int32",
        CUBLAS_COMPUTE_32I_PEDANTIC => "int32 pedantic",
        CUBLAS_COMPUTE_32F_FAST_16F => "fp32 fast fp16",
        CUBLAS_COMPUTE_32F_FAST_16BF => "fp32 fast bf16",
        CUBLAS_COMPUTE_32F_FAST_TF32 => "fp32 fast tf32",
        CUBLAS_COMPUTE_32F_EMULATED_16BFX9 => "fp32 emulated bf16x9",
        t if t < 64 => return data_type_name(t),
        t => return format!("cublasComputeType_t {t}"),
    };
    name.to_string()
}

/// The precision of one input type, before the compute type is considered.
fn input_precision(t: u32) -> Option<Precision> {
    use data_type::*;
    Some(match t {
        CUDA_R_64F | CUDA_C_64F => Precision::Fp64,
        CUDA_R_32F | CUDA_C_32F => Precision::Fp32,
        CUDA_R_16F | CUDA_C_16F => Precision::Fp16,
        CUDA_R_16BF | CUDA_C_16BF => Precision::Bf16,
        // FP6 runs at the FP8 rate on the GPUs that support it (Blackwell).
        CUDA_R_8F_E4M3 | CUDA_R_8F_E5M2 | CUDA_R_6F_E2M3 | CUDA_R_6F_E3M2 => Precision::Fp8,
        CUDA_R_8I | CUDA_C_8I | CUDA_R_8U | CUDA_C_8U => Precision::Int8,
        CUDA_R_4F_E2M1 => Precision::Fp4,
        _ => return None,
    })
}

/// The precision and pipe whose peak applies to a GEMM with A and B in `a_type` and
/// `b_type` (`cudaDataType_t`) and `compute` (`cublasComputeType_t`, or a
/// `cudaDataType_t` below 64 for the pre-11 ABI).
///
/// - FP32 inputs: `CUBLAS_COMPUTE_32F_FAST_TF32` -> TF32 tensor, `_FAST_16F` -> FP16
///   tensor, `_FAST_16BF` -> BF16 tensor, anything else (`CUBLAS_COMPUTE_32F`, pedantic, the
///   BF16x9 emulation, which delivers FP32 results) -> FP32 on CUDA cores.
/// - FP64 inputs: FP64 tensor (cuBLAS uses DMMA where the GPU has it; a GPU without
///   FP64 tensor cores falls back to its CUDA-core FP64 peak, see `Peaks::flops`).
/// - FP16, BF16, FP8 (E4M3, E5M2; FP6 counts as FP8), INT8, FP4: tensor.
/// - A and B of different precisions: the wider one (the narrower input is widened).
///
/// Errors name the type no precision is known for.
pub fn gemm_math(a_type: u32, b_type: u32, compute: u32) -> Result<Math, String> {
    let a = input_precision(a_type)
        .ok_or_else(|| format!("no peak precision for A type {}", data_type_name(a_type)))?;
    let b = input_precision(b_type)
        .ok_or_else(|| format!("no peak precision for B type {}", data_type_name(b_type)))?;
    let wide = if b.bits() > a.bits() { b } else { a };
    Ok(match wide {
        Precision::Fp32 => match compute {
            compute_type::CUBLAS_COMPUTE_32F_FAST_TF32 => Math::tensor(Precision::Tf32),
            compute_type::CUBLAS_COMPUTE_32F_FAST_16F => Math::tensor(Precision::Fp16),
            compute_type::CUBLAS_COMPUTE_32F_FAST_16BF => Math::tensor(Precision::Bf16),
            _ => Math::cuda(Precision::Fp32),
        },
        p => Math::tensor(p),
    })
}

#[cfg(test)]
mod tests {
    use super::compute_type::*;
    use super::data_type::*;
    use super::*;

    #[test]
    fn names_and_parsing() {
        assert_eq!(Precision::Bf16.to_string(), "BF16");
        assert_eq!(Precision::parse("bf16"), Some(Precision::Bf16));
        assert_eq!(Precision::parse(" Fp8 "), Some(Precision::Fp8));
        assert_eq!(Precision::parse("INT8"), Some(Precision::Int8));
        assert_eq!(Precision::parse("fp12"), None);
        for p in Precision::ALL {
            assert_eq!(Precision::parse(&p.name().to_lowercase()), Some(p));
        }
        assert_eq!(Math::tensor(Precision::Bf16).to_string(), "BF16 tensor");
        assert_eq!(Math::cuda(Precision::Fp32).to_string(), "FP32 CUDA cores");
    }

    /// Element sizes the what-if's bytes use; a complex element is two.
    #[test]
    fn type_bits() {
        assert_eq!(data_type_bits(CUDA_R_16BF), Some(16));
        assert_eq!(data_type_bits(CUDA_C_32F), Some(64));
        assert_eq!(data_type_bits(CUDA_R_8F_E4M3), Some(8));
        assert_eq!(data_type_bits(CUDA_R_4F_E2M1), Some(4));
        assert_eq!(data_type_bits(CUDA_R_6F_E3M2), Some(6));
        assert_eq!(data_type_bits(9999), None);
    }

    #[test]
    fn type_names() {
        assert_eq!(data_type_name(CUDA_R_16BF), "bf16");
        assert_eq!(data_type_name(CUDA_R_16F), "fp16");
        assert_eq!(data_type_name(CUDA_C_32F), "complex fp32");
        assert_eq!(data_type_name(CUDA_R_8F_E4M3), "fp8 e4m3");
        assert_eq!(data_type_name(CUDA_R_4F_E2M1), "fp4 e2m1");
        assert_eq!(data_type_name(99), "cudaDataType_t 99");
        assert_eq!(
            compute_type_name(CUBLAS_COMPUTE_32F_FAST_TF32),
            "fp32 fast tf32"
        );
        assert_eq!(compute_type_name(CUBLAS_COMPUTE_32F), "fp32");
        assert_eq!(compute_type_name(CUDA_R_32F), "fp32");
        assert_eq!(compute_type_name(90), "cublasComputeType_t 90");
        assert!(is_complex(CUDA_C_64F) && is_complex(CUDA_C_16BF));
        assert!(!is_complex(CUDA_R_64F) && !is_complex(77));
    }

    #[test]
    fn gemm_precisions() {
        let t = |p| Ok(Math::tensor(p));
        assert_eq!(
            gemm_math(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F),
            t(Precision::Bf16)
        );
        assert_eq!(
            gemm_math(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F),
            t(Precision::Fp16)
        );
        assert_eq!(
            gemm_math(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F),
            t(Precision::Fp16)
        );
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
            t(Precision::Tf32)
        );
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F),
            Ok(Math::cuda(Precision::Fp32))
        );
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC),
            Ok(Math::cuda(Precision::Fp32))
        );
        // The pre-11 ABI: compute type CUDA_R_32F.
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F),
            Ok(Math::cuda(Precision::Fp32))
        );
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F),
            t(Precision::Fp16)
        );
        assert_eq!(
            gemm_math(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF),
            t(Precision::Bf16)
        );
        assert_eq!(
            gemm_math(CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F),
            Ok(Math::cuda(Precision::Fp32))
        );
        assert_eq!(
            gemm_math(CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F),
            t(Precision::Fp64)
        );
        assert_eq!(
            gemm_math(CUDA_C_64F, CUDA_C_64F, CUBLAS_COMPUTE_64F),
            t(Precision::Fp64)
        );
        assert_eq!(
            gemm_math(CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUBLAS_COMPUTE_32F),
            t(Precision::Fp8)
        );
        assert_eq!(
            gemm_math(CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I),
            t(Precision::Int8)
        );
        assert_eq!(
            gemm_math(CUDA_R_4F_E2M1, CUDA_R_4F_E2M1, CUBLAS_COMPUTE_32F),
            t(Precision::Fp4)
        );
        // Mixed inputs: the wider one.
        assert_eq!(
            gemm_math(CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F),
            t(Precision::Bf16)
        );
        assert_eq!(
            gemm_math(CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I),
            Err("no peak precision for A type int32".to_string())
        );
    }
}
