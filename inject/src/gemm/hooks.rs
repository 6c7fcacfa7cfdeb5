//! The hooked cuBLAS / cuBLASLt functions: each has the exact C signature of
//! NVIDIA's header (cuBLAS 12.9 `cublas_api.h`, `cublasLt.h`), records the call's
//! shape ([`super::call`]) and forwards every argument to the real function.
//!
//! Hooked: `cublas{S,D,C,Z}gemm_v2`, `cublasHgemm`, their `StridedBatched` and
//! `Batched` forms, `cublasSgemmEx`, `cublasGemmEx`, `cublasGemmStridedBatchedEx`,
//! `cublasGemmBatchedEx`, the `_64` (64-bit size) variant of each, and
//! `cublasLtMatmul`.

use core::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::calls::{self, Shape};
use super::lt;

/// `cublasStatus_t`.
type Status = c_int;
/// Handles and descriptors.
type H = *mut c_void;
/// Data and scalar pointers.
type P = *const c_void;
/// `int` sizes (and enums).
type I = c_int;
/// `int64_t` sizes of the `_64` API.
type L = i64;

/// `CUBLAS_STATUS_NOT_INITIALIZED`: what a hook answers if its real function is
/// unknown (never, by construction: a hook is only handed out once it is known).
const NOT_INITIALIZED: Status = 1;

// library_types.h: cudaDataType_t.
const R_32F: u32 = 0;
const R_64F: u32 = 1;
const R_16F: u32 = 2;
const C_32F: u32 = 4;
const C_64F: u32 = 5;
// cublas_api.h: cublasComputeType_t.
const COMPUTE_16F: u32 = 64;
const COMPUTE_32F: u32 = 68;
const COMPUTE_64F: u32 = 70;
const COMPUTE_32F_FAST_TF32: u32 = 77;
// cublas_api.h: cublasMath_t.
const TF32_TENSOR_OP_MATH: c_int = 3;

macro_rules! hooks {
    ($( $name:ident ( $($a:ident : $t:ty),* $(,)? ) => |$api:ident| $shape:expr; )*) => {
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
            unsafe extern "C" fn $name($($a: $t),*) -> Status {
                type F = unsafe extern "C" fn($($t),*) -> Status;
                let real = REAL[Id::$name as usize].load(Ordering::Acquire);
                if real == 0 {
                    return NOT_INITIALIZED;
                }
                // SAFETY: REAL holds the address of the real function of this name,
                // whose C signature is this hook's (NVIDIA's header).
                let f = unsafe { std::mem::transmute::<usize, F>(real) };
                let $api = Id::$name as usize;
                // SAFETY: the application's arguments, passed on unchanged.
                calls::call(|| $shape, || unsafe { f($($a),*) })
            }
        )*
    };
}

hooks! {
    cublasSgemm_v2(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_32F, COMPUTE_32F);
    cublasSgemm_v2_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_32F, COMPUTE_32F);
    cublasDgemm_v2(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_64F, COMPUTE_64F);
    cublasDgemm_v2_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_64F, COMPUTE_64F);
    cublasCgemm_v2(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I)
        => |api| typed(api, h, ta, tb, m, n, k, 1, C_32F, COMPUTE_32F);
    cublasCgemm_v2_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L)
        => |api| typed(api, h, ta, tb, m, n, k, 1, C_32F, COMPUTE_32F);
    cublasZgemm_v2(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I)
        => |api| typed(api, h, ta, tb, m, n, k, 1, C_64F, COMPUTE_64F);
    cublasZgemm_v2_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L)
        => |api| typed(api, h, ta, tb, m, n, k, 1, C_64F, COMPUTE_64F);
    cublasHgemm(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_16F, COMPUTE_16F);
    cublasHgemm_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L)
        => |api| typed(api, h, ta, tb, m, n, k, 1, R_16F, COMPUTE_16F);

    cublasSgemmStridedBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, sa: L, b: P, ldb: I, sb: L, be: P, c: P, ldc: I, sc: L, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_32F, COMPUTE_32F);
    cublasSgemmStridedBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, sa: L, b: P, ldb: L, sb: L, be: P, c: P, ldc: L, sc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_32F, COMPUTE_32F);
    cublasDgemmStridedBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, sa: L, b: P, ldb: I, sb: L, be: P, c: P, ldc: I, sc: L, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_64F, COMPUTE_64F);
    cublasDgemmStridedBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, sa: L, b: P, ldb: L, sb: L, be: P, c: P, ldc: L, sc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_64F, COMPUTE_64F);
    cublasCgemmStridedBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, sa: L, b: P, ldb: I, sb: L, be: P, c: P, ldc: I, sc: L, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_32F, COMPUTE_32F);
    cublasCgemmStridedBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, sa: L, b: P, ldb: L, sb: L, be: P, c: P, ldc: L, sc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_32F, COMPUTE_32F);
    cublasZgemmStridedBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, sa: L, b: P, ldb: I, sb: L, be: P, c: P, ldc: I, sc: L, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_64F, COMPUTE_64F);
    cublasZgemmStridedBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, sa: L, b: P, ldb: L, sb: L, be: P, c: P, ldc: L, sc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_64F, COMPUTE_64F);
    cublasHgemmStridedBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, sa: L, b: P, ldb: I, sb: L, be: P, c: P, ldc: I, sc: L, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_16F, COMPUTE_16F);
    cublasHgemmStridedBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, sa: L, b: P, ldb: L, sb: L, be: P, c: P, ldc: L, sc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_16F, COMPUTE_16F);

    cublasSgemmBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_32F, COMPUTE_32F);
    cublasSgemmBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_32F, COMPUTE_32F);
    cublasDgemmBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_64F, COMPUTE_64F);
    cublasDgemmBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_64F, COMPUTE_64F);
    cublasCgemmBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_32F, COMPUTE_32F);
    cublasCgemmBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_32F, COMPUTE_32F);
    cublasZgemmBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_64F, COMPUTE_64F);
    cublasZgemmBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, C_64F, COMPUTE_64F);
    cublasHgemmBatched(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, lda: I, b: P, ldb: I, be: P, c: P, ldc: I, batch: I)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_16F, COMPUTE_16F);
    cublasHgemmBatched_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, lda: L, b: P, ldb: L, be: P, c: P, ldc: L, batch: L)
        => |api| typed(api, h, ta, tb, m, n, k, batch, R_16F, COMPUTE_16F);

    cublasSgemmEx(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, at: I, lda: I, b: P, bt: I, ldb: I, be: P, c: P, ct: I, ldc: I)
        => |api| ex(api, h, ta, tb, m, n, k, 1, [at, bt, ct], COMPUTE_32F as I);
    cublasSgemmEx_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, at: I, lda: L, b: P, bt: I, ldb: L, be: P, c: P, ct: I, ldc: L)
        => |api| ex(api, h, ta, tb, m, n, k, 1, [at, bt, ct], COMPUTE_32F as I);
    cublasGemmEx(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, at: I, lda: I, b: P, bt: I, ldb: I, be: P, c: P, ct: I, ldc: I, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, 1, [at, bt, ct], ctype);
    cublasGemmEx_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, at: I, lda: L, b: P, bt: I, ldb: L, be: P, c: P, ct: I, ldc: L, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, 1, [at, bt, ct], ctype);
    cublasGemmStridedBatchedEx(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, at: I, lda: I, sa: L, b: P, bt: I, ldb: I, sb: L, be: P, c: P, ct: I, ldc: I, sc: L, batch: I, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, batch, [at, bt, ct], ctype);
    cublasGemmStridedBatchedEx_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, at: I, lda: L, sa: L, b: P, bt: I, ldb: L, sb: L, be: P, c: P, ct: I, ldc: L, sc: L, batch: L, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, batch, [at, bt, ct], ctype);
    cublasGemmBatchedEx(h: H, ta: I, tb: I, m: I, n: I, k: I, al: P, a: P, at: I, lda: I, b: P, bt: I, ldb: I, be: P, c: P, ct: I, ldc: I, batch: I, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, batch, [at, bt, ct], ctype);
    cublasGemmBatchedEx_64(h: H, ta: I, tb: I, m: L, n: L, k: L, al: P, a: P, at: I, lda: L, b: P, bt: I, ldb: L, be: P, c: P, ct: I, ldc: L, batch: L, ctype: I, algo: I)
        => |api| ex(api, h, ta, tb, m, n, k, batch, [at, bt, ct], ctype);

    cublasLtMatmul(lt: H, desc: H, al: P, a: P, ad: H, b: P, bd: H, be: P, c: P, cd: H, d: P, dd: H, algo: P, ws: P, wss: usize, stream: H)
        => |api| lt::shape(api, real_of(Id::cublasLtMatmul), desc, [ad, bd, cd, dd]);
}

fn real_of(id: Id) -> usize {
    REAL[id as usize].load(Ordering::Acquire)
}

/// A size argument as u64: `None` when negative (cuBLAS rejects the call).
fn size(v: impl Into<i64>) -> Option<u64> {
    u64::try_from(v.into()).ok()
}

/// The handle's math mode asks for TF32 tensor cores in single-precision GEMMs
/// (`cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)`).
fn tf32_math(h: H) -> bool {
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
    type F = unsafe extern "C" fn(H, *mut c_int) -> Status;
    // SAFETY: `f` is cuBLAS's `cublasGetMathMode` (cublas_api.h signature).
    let f = unsafe { std::mem::transmute::<usize, F>(f) };
    let mut mode: c_int = 0;
    // SAFETY: the application's handle, as it passes it to the GEMM; `mode` is writable.
    let ok = unsafe { f(h, &mut mode) } == 0;
    ok && mode & 0xf == TF32_TENSOR_OP_MATH
}

/// The shape of a typed GEMM (`cublas<t>gemm*`): one data type throughout.
#[allow(clippy::too_many_arguments)]
fn typed(
    api: usize,
    h: H,
    ta: I,
    tb: I,
    m: impl Into<i64>,
    n: impl Into<i64>,
    k: impl Into<i64>,
    batch: impl Into<i64>,
    dtype: u32,
    compute: u32,
) -> Option<Shape> {
    let compute = if compute == COMPUTE_32F && tf32_math(h) {
        COMPUTE_32F_FAST_TF32
    } else {
        compute
    };
    Some(Shape {
        api,
        m: size(m)?,
        n: size(n)?,
        k: size(k)?,
        batch: size(batch)?,
        trans_a: ta as u32,
        trans_b: tb as u32,
        a_type: dtype,
        b_type: dtype,
        c_type: dtype,
        d_type: dtype,
        compute_type: compute,
    })
}

/// The shape of a mixed-type GEMM (`cublasGemmEx`, `cublasSgemmEx` and forms).
#[allow(clippy::too_many_arguments)]
fn ex(
    api: usize,
    h: H,
    ta: I,
    tb: I,
    m: impl Into<i64>,
    n: impl Into<i64>,
    k: impl Into<i64>,
    batch: impl Into<i64>,
    [at, bt, ct]: [I; 3],
    compute: I,
) -> Option<Shape> {
    let compute = compute as u32;
    let compute = if compute == COMPUTE_32F && at as u32 == R_32F && tf32_math(h) {
        COMPUTE_32F_FAST_TF32
    } else {
        compute
    };
    Some(Shape {
        api,
        m: size(m)?,
        n: size(n)?,
        k: size(k)?,
        batch: size(batch)?,
        trans_a: ta as u32,
        trans_b: tb as u32,
        a_type: at as u32,
        b_type: bt as u32,
        c_type: ct as u32,
        d_type: ct as u32,
        compute_type: compute,
    })
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
