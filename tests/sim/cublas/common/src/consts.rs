//! The values of NVIDIA's headers the simulated libraries use, as the C `int`s they
//! pass: those the generated bindings declare (`cupti_sys::cublas`, from
//! `cublas_api.h` / `cublasLt.h` of cuBLAS 12.9.1.4, and `cupti_sys::cudaDataType_t`)
//! are taken from them; the rest are copied from the same headers.

use std::ffi::c_int;

/// `cublasStatus_t`.
pub type Status = c_int;
pub const CUBLAS_STATUS_SUCCESS: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS as Status;
pub const CUBLAS_STATUS_NOT_INITIALIZED: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED as Status;
pub const CUBLAS_STATUS_ALLOC_FAILED: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED as Status;
pub const CUBLAS_STATUS_INVALID_VALUE: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE as Status;
pub const CUBLAS_STATUS_ARCH_MISMATCH: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_ARCH_MISMATCH as Status;
pub const CUBLAS_STATUS_MAPPING_ERROR: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_MAPPING_ERROR as Status;
pub const CUBLAS_STATUS_EXECUTION_FAILED: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_EXECUTION_FAILED as Status;
pub const CUBLAS_STATUS_INTERNAL_ERROR: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_INTERNAL_ERROR as Status;
pub const CUBLAS_STATUS_NOT_SUPPORTED: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED as Status;
pub const CUBLAS_STATUS_LICENSE_ERROR: Status =
    cupti_sys::cublas::cublasStatus_t::CUBLAS_STATUS_LICENSE_ERROR as Status;

/// The version impersonated: `CUBLAS_VER_MAJOR` . `MINOR` . `PATCH` (. `BUILD` 4).
pub const VER_MAJOR: c_int = 12;
pub const VER_MINOR: c_int = 9;
pub const VER_PATCH: c_int = 1;
/// `CUBLAS_VERSION` = major * 10000 + minor * 100 + patch.
pub const CUBLAS_VERSION: c_int = VER_MAJOR * 10000 + VER_MINOR * 100 + VER_PATCH;
/// `CUDART_VERSION` the impersonated release was built with (CUDA 12.9).
pub const CUDART_VERSION: usize = 12090;

/// `cublasOperation_t`.
pub const CUBLAS_OP_N: c_int = cupti_sys::cublas::cublasOperation_t::CUBLAS_OP_N as c_int;
pub const CUBLAS_OP_T: c_int = cupti_sys::cublas::cublasOperation_t::CUBLAS_OP_T as c_int;
pub const CUBLAS_OP_C: c_int = cupti_sys::cublas::cublasOperation_t::CUBLAS_OP_C as c_int;

/// `cublasPointerMode_t`.
pub const CUBLAS_POINTER_MODE_HOST: c_int = 0;
pub const CUBLAS_POINTER_MODE_DEVICE: c_int = 1;

/// `cublasAtomicsMode_t`.
pub const CUBLAS_ATOMICS_NOT_ALLOWED: c_int = 0;
pub const CUBLAS_ATOMICS_ALLOWED: c_int = 1;

/// `cublasMath_t` (the low four bits; `CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION`
/// = 16 may be or-ed in).
pub const CUBLAS_DEFAULT_MATH: c_int =
    cupti_sys::cublas::cublasMath_t::CUBLAS_DEFAULT_MATH as c_int;
pub const CUBLAS_TENSOR_OP_MATH: c_int =
    cupti_sys::cublas::cublasMath_t::CUBLAS_TENSOR_OP_MATH as c_int;
pub const CUBLAS_PEDANTIC_MATH: c_int =
    cupti_sys::cublas::cublasMath_t::CUBLAS_PEDANTIC_MATH as c_int;
pub const CUBLAS_TF32_TENSOR_OP_MATH: c_int =
    cupti_sys::cublas::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH as c_int;
pub const CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: c_int =
    cupti_sys::cublas::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION as c_int;

/// `cublasFillMode_t`.
pub const CUBLAS_FILL_MODE_FULL: c_int = 2;

/// `cublasGemmAlgo_t`: `CUBLAS_GEMM_DEFAULT` (-1), `ALGO0..ALGO23` (0..=23),
/// `CUBLAS_GEMM_DEFAULT_TENSOR_OP` (99), `ALGO0_TENSOR_OP..ALGO15_TENSOR_OP` (100..=115).
pub fn is_gemm_algo(algo: c_int) -> bool {
    matches!(algo, -1 | 0..=23 | 99..=115)
}

/// `cudaDataType_t` (library_types.h), from the generated bindings, as C `int`s.
pub const CUDA_R_16F: c_int = cupti_sys::cudaDataType_t::CUDA_R_16F as c_int;
pub const CUDA_C_16F: c_int = cupti_sys::cudaDataType_t::CUDA_C_16F as c_int;
pub const CUDA_R_16BF: c_int = cupti_sys::cudaDataType_t::CUDA_R_16BF as c_int;
pub const CUDA_C_16BF: c_int = cupti_sys::cudaDataType_t::CUDA_C_16BF as c_int;
pub const CUDA_R_32F: c_int = cupti_sys::cudaDataType_t::CUDA_R_32F as c_int;
pub const CUDA_C_32F: c_int = cupti_sys::cudaDataType_t::CUDA_C_32F as c_int;
pub const CUDA_R_64F: c_int = cupti_sys::cudaDataType_t::CUDA_R_64F as c_int;
pub const CUDA_C_64F: c_int = cupti_sys::cudaDataType_t::CUDA_C_64F as c_int;
pub const CUDA_R_8I: c_int = cupti_sys::cudaDataType_t::CUDA_R_8I as c_int;
pub const CUDA_R_8U: c_int = cupti_sys::cudaDataType_t::CUDA_R_8U as c_int;
pub const CUDA_R_32I: c_int = cupti_sys::cudaDataType_t::CUDA_R_32I as c_int;
pub const CUDA_R_8F_E4M3: c_int = cupti_sys::cudaDataType_t::CUDA_R_8F_E4M3 as c_int;
pub const CUDA_R_8F_E5M2: c_int = cupti_sys::cudaDataType_t::CUDA_R_8F_E5M2 as c_int;

/// `cublasComputeType_t`, from the generated bindings, as C `int`s.
pub const CUBLAS_COMPUTE_16F: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_16F as c_int;
pub const CUBLAS_COMPUTE_16F_PEDANTIC: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_16F_PEDANTIC as c_int;
pub const CUBLAS_COMPUTE_32F: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F as c_int;
pub const CUBLAS_COMPUTE_32F_PEDANTIC: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F_PEDANTIC as c_int;
pub const CUBLAS_COMPUTE_32F_FAST_16F: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_16F as c_int;
pub const CUBLAS_COMPUTE_32F_FAST_16BF: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_16BF as c_int;
pub const CUBLAS_COMPUTE_32F_FAST_TF32: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32 as c_int;
pub const CUBLAS_COMPUTE_32F_EMULATED_16BFX9: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F_EMULATED_16BFX9 as c_int;
pub const CUBLAS_COMPUTE_64F: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_64F as c_int;
pub const CUBLAS_COMPUTE_64F_PEDANTIC: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_64F_PEDANTIC as c_int;
pub const CUBLAS_COMPUTE_32I: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32I as c_int;
pub const CUBLAS_COMPUTE_32I_PEDANTIC: c_int =
    cupti_sys::cublas::cublasComputeType_t::CUBLAS_COMPUTE_32I_PEDANTIC as c_int;

/// `libraryPropertyType`.
pub const MAJOR_VERSION: c_int = 0;
pub const MINOR_VERSION: c_int = 1;
pub const PATCH_LEVEL: c_int = 2;

/// The `cublasGetStatusName` string of a status.
pub fn status_name(s: Status) -> &'static str {
    match s {
        CUBLAS_STATUS_SUCCESS => "CUBLAS_STATUS_SUCCESS\0",
        CUBLAS_STATUS_NOT_INITIALIZED => "CUBLAS_STATUS_NOT_INITIALIZED\0",
        CUBLAS_STATUS_ALLOC_FAILED => "CUBLAS_STATUS_ALLOC_FAILED\0",
        CUBLAS_STATUS_INVALID_VALUE => "CUBLAS_STATUS_INVALID_VALUE\0",
        CUBLAS_STATUS_ARCH_MISMATCH => "CUBLAS_STATUS_ARCH_MISMATCH\0",
        CUBLAS_STATUS_MAPPING_ERROR => "CUBLAS_STATUS_MAPPING_ERROR\0",
        CUBLAS_STATUS_EXECUTION_FAILED => "CUBLAS_STATUS_EXECUTION_FAILED\0",
        CUBLAS_STATUS_INTERNAL_ERROR => "CUBLAS_STATUS_INTERNAL_ERROR\0",
        CUBLAS_STATUS_NOT_SUPPORTED => "CUBLAS_STATUS_NOT_SUPPORTED\0",
        CUBLAS_STATUS_LICENSE_ERROR => "CUBLAS_STATUS_LICENSE_ERROR\0",
        _ => "CUBLAS_STATUS_UNKNOWN\0",
    }
}

/// The `cublasGetStatusString` text of a status, as the real `libcublasLt.so.12`
/// (12.9.1.4) holds them.
pub fn status_string(s: Status) -> &'static str {
    match s {
        CUBLAS_STATUS_SUCCESS => "success\0",
        CUBLAS_STATUS_NOT_INITIALIZED => "the library was not initialized\0",
        CUBLAS_STATUS_ALLOC_FAILED => "the resource allocation failed\0",
        CUBLAS_STATUS_INVALID_VALUE => {
            "an unsupported value or parameter was passed to the function\0"
        }
        CUBLAS_STATUS_ARCH_MISMATCH => {
            "the function requires an architectural feature absent from the device\0"
        }
        CUBLAS_STATUS_MAPPING_ERROR => "an access to GPU memory space failed\0",
        CUBLAS_STATUS_EXECUTION_FAILED => "the function failed to launch on the GPU\0",
        CUBLAS_STATUS_INTERNAL_ERROR => "an internal operation failed\0",
        CUBLAS_STATUS_NOT_SUPPORTED => "the requested functionality is not supported\0",
        CUBLAS_STATUS_LICENSE_ERROR => "the license check failed\0",
        _ => "unknown error\0",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_strings() {
        assert_eq!(CUBLAS_VERSION, 120901);
        assert_eq!(status_name(7), "CUBLAS_STATUS_INVALID_VALUE\0");
        assert_eq!(status_string(99), "unknown error\0");
        assert!(is_gemm_algo(-1) && is_gemm_algo(99) && is_gemm_algo(115));
        assert!(!is_gemm_algo(24) && !is_gemm_algo(-2) && !is_gemm_algo(116));
    }
}
