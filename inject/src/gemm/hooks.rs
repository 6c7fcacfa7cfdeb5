//! The hooked cuBLAS / cuBLASLt functions: each has the C signature NVIDIA's headers
//! declare (`cupti_sys::cublas_hooked!`, generated from the pinned cuBLAS 12.9
//! `cublas_api.h` and `cublasLt.h`), records the call's shape ([`calls::call`]) and
//! forwards every argument to the real function.
//!
//! Hooked: `cublas{S,D,C,Z}gemm_v2`, `cublasHgemm`, their `StridedBatched` and
//! `Batched` forms, `cublasSgemmEx`, `cublasGemmEx`, `cublasGemmStridedBatchedEx`,
//! `cublasGemmBatchedEx`, the `_64` (64-bit size) variant of each, and
//! `cublasLtMatmul`.

use core::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use cupti_sys::cublas::cublasComputeType_t::{
    self as compute, CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
    CUBLAS_COMPUTE_64F,
};
use cupti_sys::cublas::cudaDataType_t::{
    CUDA_C_32F as C_32F, CUDA_C_64F as C_64F, CUDA_R_16F as R_16F, CUDA_R_32F as R_32F,
    CUDA_R_64F as R_64F,
};
use cupti_sys::cublas::{
    cublasHandle_t, cublasMath_t, cublasOperation_t, cublasStatus_t, cudaDataType, pfn,
};

use super::calls::{self, Shape};
use super::lt;

macro_rules! hooks {
    ($( fn $name:ident ( $($a:ident : $t:ty),* $(,)? ) -> $ret:ty; )*) => {
        /// The hooked functions, in [`NAMES`] order.
        #[allow(non_camel_case_types, clippy::enum_variant_names)]
        #[derive(Clone, Copy)]
        enum Id { $($name),* }

        /// How many functions are hooked.
        pub const COUNT: usize = [$(stringify!($name)),*].len();

        /// Their names.
        pub static NAMES: [&str; COUNT] = [$(stringify!($name)),*];

        /// Their names as C strings.
        pub static C_NAMES: [&CStr; COUNT] = [$(
            match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(c) => c,
                Err(_) => panic!("a name holds a NUL byte"),
            }
        ),*];

        /// The real functions' addresses, 0 until known.
        pub(super) static REAL: [AtomicUsize; COUNT] = [const { AtomicUsize::new(0) }; COUNT];

        /// Address of the hook for function `i` of [`NAMES`].
        pub(super) fn hook_address(i: usize) -> Option<usize> {
            let all: [usize; COUNT] = [$($name as *const () as usize),*];
            all.get(i).copied()
        }

        $(
            #[allow(non_snake_case, clippy::too_many_arguments)]
            unsafe extern "C" fn $name($($a: $t),*) -> $ret {
                let real = REAL[Id::$name as usize].load(Ordering::Acquire);
                if real == 0 {
                    return cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED;
                }
                // SAFETY: REAL holds the address of the real function of this name,
                // whose C signature is `pfn::$name` (the same header declaration this
                // hook's signature comes from).
                let f = unsafe { std::mem::transmute::<usize, pfn::$name>(real) };
                let api = Id::$name as usize;
                // SAFETY: the application's arguments, passed on unchanged.
                calls::call(|| shape!($name; api, $($a),*), || unsafe { f($($a),*) })
            }
        )*
    };
}

/// The shape of a call, from its arguments in the order the header declares them.
macro_rules! shape {
    // cublas<t>gemm: (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
    (@gemm $dt:expr, $ct:expr; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $_lda:ident, $_b:ident, $_ldb:ident, $_be:ident, $_c:ident, $_ldc:ident) => {
        typed($api, $h, $ta, $tb, $m, $n, $k, 1, $dt, $ct)
    };
    // ..StridedBatched: .. A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount)
    (@strided $dt:expr, $ct:expr; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $_lda:ident, $_sa:ident, $_b:ident, $_ldb:ident, $_sb:ident, $_be:ident,
        $_c:ident, $_ldc:ident, $_sc:ident, $batch:ident) => {
        typed($api, $h, $ta, $tb, $m, $n, $k, $batch, $dt, $ct)
    };
    // ..Batched: .. Aarray, lda, Barray, ldb, beta, Carray, ldc, batchCount)
    (@batched $dt:expr, $ct:expr; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $_lda:ident, $_b:ident, $_ldb:ident, $_be:ident, $_c:ident, $_ldc:ident,
        $batch:ident) => {
        typed($api, $h, $ta, $tb, $m, $n, $k, $batch, $dt, $ct)
    };
    // cublasSgemmEx: .. A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc)
    (@sgemm_ex; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $at:ident, $_lda:ident, $_b:ident, $bt:ident, $_ldb:ident, $_be:ident,
        $_c:ident, $ct:ident, $_ldc:ident) => {
        ex($api, $h, $ta, $tb, $m, $n, $k, 1, [$at, $bt, $ct], CUBLAS_COMPUTE_32F)
    };
    // cublasGemmEx: .. C, Ctype, ldc, computeType, algo)
    (@gemm_ex; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $at:ident, $_lda:ident, $_b:ident, $bt:ident, $_ldb:ident, $_be:ident,
        $_c:ident, $ct:ident, $_ldc:ident, $compute:ident, $_algo:ident) => {
        ex($api, $h, $ta, $tb, $m, $n, $k, 1, [$at, $bt, $ct], $compute)
    };
    // cublasGemmStridedBatchedEx: .. A, Atype, lda, strideA, .., strideC, batchCount,
    // computeType, algo)
    (@strided_ex; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $at:ident, $_lda:ident, $_sa:ident, $_b:ident, $bt:ident, $_ldb:ident,
        $_sb:ident, $_be:ident, $_c:ident, $ct:ident, $_ldc:ident, $_sc:ident, $batch:ident,
        $compute:ident, $_algo:ident) => {
        ex($api, $h, $ta, $tb, $m, $n, $k, $batch, [$at, $bt, $ct], $compute)
    };
    // cublasGemmBatchedEx: .. Aarray, Atype, lda, .., ldc, batchCount, computeType, algo)
    (@batched_ex; $api:ident, $h:ident, $ta:ident, $tb:ident, $m:ident, $n:ident, $k:ident,
        $_al:ident, $_a:ident, $at:ident, $_lda:ident, $_b:ident, $bt:ident, $_ldb:ident, $_be:ident,
        $_c:ident, $ct:ident, $_ldc:ident, $batch:ident, $compute:ident, $_algo:ident) => {
        ex($api, $h, $ta, $tb, $m, $n, $k, $batch, [$at, $bt, $ct], $compute)
    };
    // cublasLtMatmul: (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C,
    // Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream)
    (cublasLtMatmul; $api:ident, $_lt:ident, $desc:ident, $_al:ident, $_a:ident, $ad:ident, $_b:ident,
        $bd:ident, $_be:ident, $_c:ident, $cd:ident, $_d:ident, $dd:ident, $($_rest:ident),*) => {
        lt::shape($api, real_of(Id::cublasLtMatmul), $desc, [$ad, $bd, $cd, $dd])
    };
    (cublasSgemm_v2; $($a:tt)*) => { shape!(@gemm R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasSgemm_v2_64; $($a:tt)*) => { shape!(@gemm R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasDgemm_v2; $($a:tt)*) => { shape!(@gemm R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasDgemm_v2_64; $($a:tt)*) => { shape!(@gemm R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasCgemm_v2; $($a:tt)*) => { shape!(@gemm C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasCgemm_v2_64; $($a:tt)*) => { shape!(@gemm C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasZgemm_v2; $($a:tt)*) => { shape!(@gemm C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasZgemm_v2_64; $($a:tt)*) => { shape!(@gemm C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasHgemm; $($a:tt)*) => { shape!(@gemm R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasHgemm_64; $($a:tt)*) => { shape!(@gemm R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasSgemmStridedBatched; $($a:tt)*) => { shape!(@strided R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasSgemmStridedBatched_64; $($a:tt)*) => { shape!(@strided R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasDgemmStridedBatched; $($a:tt)*) => { shape!(@strided R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasDgemmStridedBatched_64; $($a:tt)*) => { shape!(@strided R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasCgemmStridedBatched; $($a:tt)*) => { shape!(@strided C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasCgemmStridedBatched_64; $($a:tt)*) => { shape!(@strided C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasZgemmStridedBatched; $($a:tt)*) => { shape!(@strided C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasZgemmStridedBatched_64; $($a:tt)*) => { shape!(@strided C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasHgemmStridedBatched; $($a:tt)*) => { shape!(@strided R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasHgemmStridedBatched_64; $($a:tt)*) => { shape!(@strided R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasSgemmBatched; $($a:tt)*) => { shape!(@batched R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasSgemmBatched_64; $($a:tt)*) => { shape!(@batched R_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasDgemmBatched; $($a:tt)*) => { shape!(@batched R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasDgemmBatched_64; $($a:tt)*) => { shape!(@batched R_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasCgemmBatched; $($a:tt)*) => { shape!(@batched C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasCgemmBatched_64; $($a:tt)*) => { shape!(@batched C_32F, CUBLAS_COMPUTE_32F; $($a)*) };
    (cublasZgemmBatched; $($a:tt)*) => { shape!(@batched C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasZgemmBatched_64; $($a:tt)*) => { shape!(@batched C_64F, CUBLAS_COMPUTE_64F; $($a)*) };
    (cublasHgemmBatched; $($a:tt)*) => { shape!(@batched R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasHgemmBatched_64; $($a:tt)*) => { shape!(@batched R_16F, CUBLAS_COMPUTE_16F; $($a)*) };
    (cublasSgemmEx; $($a:tt)*) => { shape!(@sgemm_ex; $($a)*) };
    (cublasSgemmEx_64; $($a:tt)*) => { shape!(@sgemm_ex; $($a)*) };
    (cublasGemmEx; $($a:tt)*) => { shape!(@gemm_ex; $($a)*) };
    (cublasGemmEx_64; $($a:tt)*) => { shape!(@gemm_ex; $($a)*) };
    (cublasGemmStridedBatchedEx; $($a:tt)*) => { shape!(@strided_ex; $($a)*) };
    (cublasGemmStridedBatchedEx_64; $($a:tt)*) => { shape!(@strided_ex; $($a)*) };
    (cublasGemmBatchedEx; $($a:tt)*) => { shape!(@batched_ex; $($a)*) };
    (cublasGemmBatchedEx_64; $($a:tt)*) => { shape!(@batched_ex; $($a)*) };
}

cupti_sys::cublas_hooked!(hooks);

fn real_of(id: Id) -> usize {
    REAL[id as usize].load(Ordering::Acquire)
}

/// A size argument as u64: `None` when negative (cuBLAS rejects the call).
fn size(v: impl Into<i64>) -> Option<u64> {
    u64::try_from(v.into()).ok()
}

/// The handle's math mode asks for TF32 tensor cores in single-precision GEMMs
/// (`cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)`).
fn tf32_math(h: cublasHandle_t) -> bool {
    static GET_MATH_MODE: AtomicUsize = AtomicUsize::new(0);
    let mut f = GET_MATH_MODE.load(Ordering::Relaxed);
    if f == 0 {
        // Any hooked cuBLAS (not Lt) function's library exports it.
        let Some(real) = REAL[..Id::cublasLtMatmul as usize]
            .iter()
            .map(|r| r.load(Ordering::Acquire))
            .find(|&r| r != 0)
        else {
            return false;
        };
        let Some(g) = lt::companion(real, c"cublasGetMathMode") else {
            return false;
        };
        GET_MATH_MODE.store(g, Ordering::Relaxed);
        f = g;
    }
    // SAFETY: `f` is cuBLAS's `cublasGetMathMode`, of the header's signature.
    let f = unsafe { std::mem::transmute::<usize, pfn::cublasGetMathMode>(f) };
    let mut mode: cublasMath_t::Type = 0;
    // SAFETY: the application's handle, as it passes it to the GEMM; `mode` is writable.
    let ok = unsafe { f(h, &mut mode) } == cublasStatus_t::CUBLAS_STATUS_SUCCESS;
    ok && mode & 0xf == cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
}

/// The shape of a typed GEMM (`cublas<t>gemm*`): one data type throughout.
#[allow(clippy::too_many_arguments)]
fn typed(
    api: usize,
    h: cublasHandle_t,
    ta: cublasOperation_t::Type,
    tb: cublasOperation_t::Type,
    m: impl Into<i64>,
    n: impl Into<i64>,
    k: impl Into<i64>,
    batch: impl Into<i64>,
    dtype: cudaDataType,
    compute: compute::Type,
) -> Option<Shape> {
    ex(api, h, ta, tb, m, n, k, batch, [dtype; 3], compute)
}

/// The shape of a GEMM with A, B and C (= D) types; single-precision compute becomes
/// TF32 when A is FP32 and the handle's math mode asks for TF32 tensor cores.
#[allow(clippy::too_many_arguments)]
fn ex(
    api: usize,
    h: cublasHandle_t,
    ta: cublasOperation_t::Type,
    tb: cublasOperation_t::Type,
    m: impl Into<i64>,
    n: impl Into<i64>,
    k: impl Into<i64>,
    batch: impl Into<i64>,
    [at, bt, ct]: [cudaDataType; 3],
    compute: compute::Type,
) -> Option<Shape> {
    let compute = if compute == CUBLAS_COMPUTE_32F && at == R_32F && tf32_math(h) {
        CUBLAS_COMPUTE_32F_FAST_TF32
    } else {
        compute
    };
    let dims = [size(m)?, size(n)?, size(k)?, size(batch)?];
    Some(Shape::new(api, dims, [ta, tb], [at, bt, ct, ct], compute))
}

/// The hook to hand out for `name` found at `real` by `dlsym`: `None` when `name` is
/// not hooked, shapes are off, or another library's function of that name is
/// already the one hooked.
pub fn hook_for(name: &[u8], real: usize) -> Option<usize> {
    if !name.starts_with(b"cublas") || !calls::on() {
        return None;
    }
    let i = NAMES.iter().position(|n| n.as_bytes() == name)?;
    match REAL[i].compare_exchange(0, real, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(known) if known == real => {}
        Err(_) => return None,
    }
    hook_address(i)
}
