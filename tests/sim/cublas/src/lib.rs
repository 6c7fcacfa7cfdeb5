//! A simulated cuBLAS: a `libcublas.so` (soname `libcublas.so.12`) with the symbol names
//! and C signatures of cuBLAS 12.9's `cublas_api.h`, for testing the profiler without a
//! GPU (docs/ARCHITECTURE.md, "The simulated CUDA stack").
//!
//! A handle lives in the context current at `cublasCreate_v2` (the primary context of
//! device 0 when none is) and loads one PTX module with every kernel it may launch. Each
//! GEMM checks its arguments as NVIDIA documents, picks a real cuBLAS kernel for the data
//! type, shape and GPU ([`sim_blas_common::kernels`]), announces the GEMM shape to the
//! simulated driver and launches the kernel with `cuLaunchKernel` on the handle's stream.
//! Nothing is computed: C is left unchanged.
//!
//! Exports: handle management (`cublasCreate_v2`, `cublasDestroy_v2`, `cublasSetStream_v2`,
//! `cublasGetStream_v2`, `cublasSetMathMode`, `cublasGetMathMode`, `cublasSetWorkspace_v2`,
//! `cublasSetPointerMode_v2`, `cublasGetPointerMode_v2`, `cublasSetAtomicsMode`,
//! `cublasGetAtomicsMode`), library information (`cublasGetVersion_v2`, `cublasGetProperty`,
//! `cublasGetCudartVersion`, `cublasGetStatusName`, `cublasGetStatusString`), and the
//! GEMMs (`cublasSgemm_v2`, `cublasDgemm_v2`, `cublasHgemm`, `cublasGemmEx`,
//! `cublasGemmStridedBatchedEx`, `cublasGemmBatchedEx`, `cublasSgemmStridedBatched`,
//! `cublasDgemmStridedBatched`, `cublasHgemmStridedBatched`, `cublasSgemv_v2`).

use std::ffi::{c_char, c_int, c_longlong, c_void};
use std::panic::catch_unwind;

use sim_blas_common::consts::*;
use sim_blas_common::driver::CUstream;
use sim_blas_common::kernels::{classify, Kind, Problem};
use sim_blas_common::{check_gemm_args, guard, lock, write_out, Exec, Registry};

/// `cublasHandle_t`.
pub type Handle = *mut c_void;

struct State {
    stream: usize,
    math_mode: c_int,
    pointer_mode: c_int,
    atomics_mode: c_int,
    workspace: (usize, usize),
}

struct Context {
    exec: Exec,
    state: std::sync::Mutex<State>,
}

static HANDLES: Registry<Context> = Registry::new();

fn with_handle(h: Handle, f: impl FnOnce(&Context) -> Status) -> Status {
    match HANDLES.get(h) {
        Some(c) => f(&c),
        None => CUBLAS_STATUS_NOT_INITIALIZED,
    }
}

/// `cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)`.
///
/// # Safety
/// `handle` is NULL or valid for writing a handle.
#[no_mangle]
pub unsafe extern "C" fn cublasCreate_v2(handle: *mut Handle) -> Status {
    guard(move || {
        if handle.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let exec = match Exec::create() {
            Ok(e) => e,
            Err(s) => return s,
        };
        let h = HANDLES.insert(Context {
            exec,
            state: std::sync::Mutex::new(State {
                stream: 0,
                math_mode: CUBLAS_DEFAULT_MATH,
                pointer_mode: CUBLAS_POINTER_MODE_HOST,
                atomics_mode: CUBLAS_ATOMICS_NOT_ALLOWED,
                workspace: (0, 0),
            }),
        });
        // SAFETY: non-NULL and writable per the contract.
        unsafe { write_out(handle, h) }
    })
}

/// `cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)`.
#[no_mangle]
pub extern "C" fn cublasDestroy_v2(handle: Handle) -> Status {
    guard(move || match HANDLES.remove(handle) {
        Some(_) => CUBLAS_STATUS_SUCCESS,
        None => CUBLAS_STATUS_NOT_INITIALIZED,
    })
}

/// `cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)`.
#[no_mangle]
pub extern "C" fn cublasSetStream_v2(handle: Handle, stream: CUstream) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            lock(&c.state).stream = stream as usize;
            CUBLAS_STATUS_SUCCESS
        })
    })
}

/// `cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)`.
///
/// # Safety
/// `stream` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetStream_v2(handle: Handle, stream: *mut CUstream) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            let s = lock(&c.state).stream as CUstream;
            // SAFETY: NULL or writable per the contract.
            unsafe { write_out(stream, s) }
        })
    })
}

/// `cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)`.
#[no_mangle]
pub extern "C" fn cublasSetMathMode(handle: Handle, mode: c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            let base = mode & !CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
            if !(CUBLAS_DEFAULT_MATH..=CUBLAS_TF32_TENSOR_OP_MATH).contains(&base) {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            lock(&c.state).math_mode = mode;
            CUBLAS_STATUS_SUCCESS
        })
    })
}

/// `cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)`.
///
/// # Safety
/// `mode` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetMathMode(handle: Handle, mode: *mut c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            let m = lock(&c.state).math_mode;
            // SAFETY: NULL or writable per the contract.
            unsafe { write_out(mode, m) }
        })
    })
}

/// `cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)`.
#[no_mangle]
pub extern "C" fn cublasSetPointerMode_v2(handle: Handle, mode: c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            if mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            lock(&c.state).pointer_mode = mode;
            CUBLAS_STATUS_SUCCESS
        })
    })
}

/// `cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)`.
///
/// # Safety
/// `mode` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetPointerMode_v2(handle: Handle, mode: *mut c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            let m = lock(&c.state).pointer_mode;
            // SAFETY: NULL or writable per the contract.
            unsafe { write_out(mode, m) }
        })
    })
}

/// `cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)`.
#[no_mangle]
pub extern "C" fn cublasSetAtomicsMode(handle: Handle, mode: c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            if mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            lock(&c.state).atomics_mode = mode;
            CUBLAS_STATUS_SUCCESS
        })
    })
}

/// `cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)`.
///
/// # Safety
/// `mode` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetAtomicsMode(handle: Handle, mode: *mut c_int) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            let m = lock(&c.state).atomics_mode;
            // SAFETY: NULL or writable per the contract.
            unsafe { write_out(mode, m) }
        })
    })
}

/// `cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
/// size_t workspaceSizeInBytes)`: the workspace must be 256-byte aligned. The sim's
/// kernels need none; it is recorded only.
#[no_mangle]
pub extern "C" fn cublasSetWorkspace_v2(
    handle: Handle,
    workspace: *mut c_void,
    size: usize,
) -> Status {
    guard(move || {
        with_handle(handle, |c| {
            if workspace as usize & 0xff != 0 {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            lock(&c.state).workspace = (workspace as usize, size);
            CUBLAS_STATUS_SUCCESS
        })
    })
}

/// `cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)`:
/// `CUBLAS_VERSION` (120901); the handle is not used.
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetVersion_v2(_handle: Handle, version: *mut c_int) -> Status {
    // SAFETY: NULL or writable per the contract.
    guard(move || unsafe { write_out(version, CUBLAS_VERSION) })
}

/// `cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)`.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasGetProperty(kind: c_int, value: *mut c_int) -> Status {
    guard(move || {
        let v = match kind {
            MAJOR_VERSION => VER_MAJOR,
            MINOR_VERSION => VER_MINOR,
            PATCH_LEVEL => VER_PATCH,
            _ => return CUBLAS_STATUS_INVALID_VALUE,
        };
        // SAFETY: NULL or writable per the contract.
        unsafe { write_out(value, v) }
    })
}

/// `size_t cublasGetCudartVersion(void)`.
#[no_mangle]
pub extern "C" fn cublasGetCudartVersion() -> usize {
    CUDART_VERSION
}

/// `const char *cublasGetStatusName(cublasStatus_t status)`.
#[no_mangle]
pub extern "C" fn cublasGetStatusName(status: Status) -> *const c_char {
    catch_unwind(|| status_name(status).as_ptr().cast()).unwrap_or(std::ptr::null())
}

/// `const char *cublasGetStatusString(cublasStatus_t status)`.
#[no_mangle]
pub extern "C" fn cublasGetStatusString(status: Status) -> *const c_char {
    catch_unwind(|| status_string(status).as_ptr().cast()).unwrap_or(std::ptr::null())
}

/// How a GEMM entry point states its types.
#[derive(Clone, Copy)]
enum Types {
    /// `cublasGemmEx` family: A, B, C data types and the compute type.
    Ex(c_int, c_int, c_int, c_int),
    /// A typed routine (`cublasSgemm`, ...): its data and compute types; the handle's
    /// math mode may turn FP32 into TF32.
    Typed(c_int, c_int),
}

/// One GEMM call's arguments after the entry point.
struct Gemm {
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: u64,
    lda: c_int,
    b: u64,
    ldb: c_int,
    beta: *const c_void,
    c: u64,
    ldc: c_int,
    batch: c_int,
    types: Types,
    algo: c_int,
    pointer_array: bool,
}

/// The shared body of every GEMM: handle, arguments, types, then the launches.
fn gemm(handle: Handle, g: Gemm) -> Status {
    with_handle(handle, |ctx| {
        let (ta, tb) = match check_gemm_args(g.transa, g.transb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc)
        {
            Ok(t) => t,
            Err(s) => return s,
        };
        if g.batch < 0 || g.alpha.is_null() || g.beta.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let (math_mode, stream) = {
            let s = lock(&ctx.state);
            (s.math_mode, s.stream)
        };
        let tf32 = math_mode & 0xf == CUBLAS_TF32_TENSOR_OP_MATH;
        let kind = match g.types {
            Types::Ex(a, b, c, compute) => classify(a, b, c, compute, tf32),
            Types::Typed(t, compute) => classify(t, t, t, compute, tf32),
        };
        let kind: Kind = match kind {
            Ok(k) => k,
            Err(s) => return s,
        };
        if !is_gemm_algo(g.algo) {
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
        if let Err(s) = ctx.exec.family() {
            return s;
        }
        let p = Problem {
            kind,
            trans_a: ta,
            trans_b: tb,
            m: g.m as u64,
            n: g.n as u64,
            k: g.k as u64,
            batch: g.batch as u64,
            pointer_array: g.pointer_array,
        };
        match ctx.exec.run(&p, stream, [g.a, g.b, g.c]) {
            Ok(()) => CUBLAS_STATUS_SUCCESS,
            Err(s) => s,
        }
    })
}

/// `cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
/// cublasOperation_t transb, int m, int n, int k, const float *alpha, const float *A,
/// int lda, const float *B, int ldb, const float *beta, float *C, int ldc)`.
#[no_mangle]
pub extern "C" fn cublasSgemm_v2(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *const f32,
    ldb: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha: alpha.cast(),
                a: a as u64,
                lda,
                b: b as u64,
                ldb,
                beta: beta.cast(),
                c: c as u64,
                ldc,
                batch: 1,
                types: Types::Typed(CUDA_R_32F, CUBLAS_COMPUTE_32F),
                algo: -1,
                pointer_array: false,
            },
        )
    })
}

/// `cublasStatus_t cublasDgemm_v2(...)`: as [`cublasSgemm_v2`] with `double`.
#[no_mangle]
pub extern "C" fn cublasDgemm_v2(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    beta: *const f64,
    c: *mut f64,
    ldc: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha: alpha.cast(),
                a: a as u64,
                lda,
                b: b as u64,
                ldb,
                beta: beta.cast(),
                c: c as u64,
                ldc,
                batch: 1,
                types: Types::Typed(CUDA_R_64F, CUBLAS_COMPUTE_64F),
                algo: -1,
                pointer_array: false,
            },
        )
    })
}

/// `cublasStatus_t cublasHgemm(...)`: as [`cublasSgemm_v2`] with `__half` (FP16
/// accumulation, `CUBLAS_COMPUTE_16F`).
#[no_mangle]
pub extern "C" fn cublasHgemm(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const u16,
    a: *const u16,
    lda: c_int,
    b: *const u16,
    ldb: c_int,
    beta: *const u16,
    c: *mut u16,
    ldc: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha: alpha.cast(),
                a: a as u64,
                lda,
                b: b as u64,
                ldb,
                beta: beta.cast(),
                c: c as u64,
                ldc,
                batch: 1,
                types: Types::Typed(CUDA_R_16F, CUBLAS_COMPUTE_16F),
                algo: -1,
                pointer_array: false,
            },
        )
    })
}

/// `cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
/// cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A,
/// cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb,
/// const void *beta, void *C, cudaDataType Ctype, int ldc,
/// cublasComputeType_t computeType, cublasGemmAlgo_t algo)`.
#[no_mangle]
pub extern "C" fn cublasGemmEx(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    a_type: c_int,
    lda: c_int,
    b: *const c_void,
    b_type: c_int,
    ldb: c_int,
    beta: *const c_void,
    c: *mut c_void,
    c_type: c_int,
    ldc: c_int,
    compute_type: c_int,
    algo: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a: a as u64,
                lda,
                b: b as u64,
                ldb,
                beta,
                c: c as u64,
                ldc,
                batch: 1,
                types: Types::Ex(a_type, b_type, c_type, compute_type),
                algo,
                pointer_array: false,
            },
        )
    })
}

/// `cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t
/// transa, cublasOperation_t transb, int m, int n, int k, const void *alpha,
/// const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B,
/// cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
/// cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
/// cublasComputeType_t computeType, cublasGemmAlgo_t algo)`.
#[no_mangle]
pub extern "C" fn cublasGemmStridedBatchedEx(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    a_type: c_int,
    lda: c_int,
    _stride_a: c_longlong,
    b: *const c_void,
    b_type: c_int,
    ldb: c_int,
    _stride_b: c_longlong,
    beta: *const c_void,
    c: *mut c_void,
    c_type: c_int,
    ldc: c_int,
    _stride_c: c_longlong,
    batch_count: c_int,
    compute_type: c_int,
    algo: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a: a as u64,
                lda,
                b: b as u64,
                ldb,
                beta,
                c: c as u64,
                ldc,
                batch: batch_count,
                types: Types::Ex(a_type, b_type, c_type, compute_type),
                algo,
                pointer_array: false,
            },
        )
    })
}

/// `cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
/// cublasOperation_t transb, int m, int n, int k, const void *alpha,
/// const void *const Aarray[], cudaDataType Atype, int lda, const void *const Barray[],
/// cudaDataType Btype, int ldb, const void *beta, void *const Carray[],
/// cudaDataType Ctype, int ldc, int batchCount, cublasComputeType_t computeType,
/// cublasGemmAlgo_t algo)`. The pointer arrays live in device memory and are passed to
/// the kernel as they are.
#[no_mangle]
pub extern "C" fn cublasGemmBatchedEx(
    handle: Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a_array: *const *const c_void,
    a_type: c_int,
    lda: c_int,
    b_array: *const *const c_void,
    b_type: c_int,
    ldb: c_int,
    beta: *const c_void,
    c_array: *const *mut c_void,
    c_type: c_int,
    ldc: c_int,
    batch_count: c_int,
    compute_type: c_int,
    algo: c_int,
) -> Status {
    guard(move || {
        gemm(
            handle,
            Gemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                a: a_array as u64,
                lda,
                b: b_array as u64,
                ldb,
                beta,
                c: c_array as u64,
                ldc,
                batch: batch_count,
                types: Types::Ex(a_type, b_type, c_type, compute_type),
                algo,
                pointer_array: true,
            },
        )
    })
}

macro_rules! strided_batched {
    ($(#[$doc:meta])* $name:ident, $t:ty, $dtype:expr, $compute:expr) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name(
            handle: Handle,
            transa: c_int,
            transb: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: *const $t,
            a: *const $t,
            lda: c_int,
            _stride_a: c_longlong,
            b: *const $t,
            ldb: c_int,
            _stride_b: c_longlong,
            beta: *const $t,
            c: *mut $t,
            ldc: c_int,
            _stride_c: c_longlong,
            batch_count: c_int,
        ) -> Status {
            guard(move || {
                gemm(
                    handle,
                    Gemm {
                        transa,
                        transb,
                        m,
                        n,
                        k,
                        alpha: alpha.cast(),
                        a: a as u64,
                        lda,
                        b: b as u64,
                        ldb,
                        beta: beta.cast(),
                        c: c as u64,
                        ldc,
                        batch: batch_count,
                        types: Types::Typed($dtype, $compute),
                        algo: -1,
                        pointer_array: false,
                    },
                )
            })
        }
    };
}

strided_batched!(
    /// `cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t
    /// transa, cublasOperation_t transb, int m, int n, int k, const float *alpha,
    /// const float *A, int lda, long long int strideA, const float *B, int ldb,
    /// long long int strideB, const float *beta, float *C, int ldc,
    /// long long int strideC, int batchCount)`.
    cublasSgemmStridedBatched, f32, CUDA_R_32F, CUBLAS_COMPUTE_32F
);
strided_batched!(
    /// `cublasDgemmStridedBatched`: as [`cublasSgemmStridedBatched`] with `double`.
    cublasDgemmStridedBatched, f64, CUDA_R_64F, CUBLAS_COMPUTE_64F
);
strided_batched!(
    /// `cublasHgemmStridedBatched`: as [`cublasSgemmStridedBatched`] with `__half`.
    cublasHgemmStridedBatched, u16, CUDA_R_16F, CUBLAS_COMPUTE_16F
);

/// `cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m,
/// int n, const float *alpha, const float *A, int lda, const float *x, int incx,
/// const float *beta, float *y, int incy)`: `y = alpha op(A) x + beta y` with A `m x n`,
/// i.e. a GEMM of `op(A)` (rows x cols) by a one-column x; it runs the GEMV kernels.
#[no_mangle]
pub extern "C" fn cublasSgemv_v2(
    handle: Handle,
    trans: c_int,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    x: *const f32,
    incx: c_int,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
) -> Status {
    guard(move || {
        with_handle(handle, |ctx| {
            let Some(t) = sim_blas_common::op_transposed(trans) else {
                return CUBLAS_STATUS_INVALID_VALUE;
            };
            if m < 0 || n < 0 || lda < m.max(1) || incx == 0 || incy == 0 {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            if alpha.is_null() || beta.is_null() {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            let (rows, cols) = if t { (n, m) } else { (m, n) };
            let stream = lock(&ctx.state).stream;
            let p = Problem {
                kind: Kind::F32,
                trans_a: t,
                trans_b: false,
                m: rows as u64,
                n: 1,
                k: cols as u64,
                batch: 1,
                pointer_array: false,
            };
            match ctx.exec.run(&p, stream, [a as u64, x as u64, y as u64]) {
                Ok(()) => CUBLAS_STATUS_SUCCESS,
                Err(s) => s,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn s(p: *const c_char) -> &'static str {
        // SAFETY: the library returns static NUL-terminated strings.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap()
    }

    #[test]
    fn information_without_a_device() {
        let mut v = 0;
        // SAFETY: valid out-pointers.
        unsafe {
            assert_eq!(cublasGetVersion_v2(std::ptr::null_mut(), &mut v), 0);
            assert_eq!(v, 120901);
            assert_eq!(cublasGetProperty(MINOR_VERSION, &mut v), 0);
            assert_eq!(v, 9);
            assert_eq!(cublasGetProperty(3, &mut v), CUBLAS_STATUS_INVALID_VALUE);
            assert_eq!(
                cublasGetProperty(0, std::ptr::null_mut()),
                CUBLAS_STATUS_INVALID_VALUE
            );
        }
        assert_eq!(s(cublasGetStatusName(15)), "CUBLAS_STATUS_NOT_SUPPORTED");
        assert_eq!(
            s(cublasGetStatusString(1)),
            "the library was not initialized"
        );
        assert_eq!(cublasGetCudartVersion(), 12090);
    }

    #[test]
    fn bad_handles_are_not_initialized() {
        let bogus = 0x1000 as Handle;
        let one = 1.0f32;
        assert_eq!(
            cublasDestroy_v2(std::ptr::null_mut()),
            CUBLAS_STATUS_NOT_INITIALIZED
        );
        assert_eq!(cublasDestroy_v2(bogus), CUBLAS_STATUS_NOT_INITIALIZED);
        assert_eq!(
            cublasSetStream_v2(bogus, std::ptr::null_mut()),
            CUBLAS_STATUS_NOT_INITIALIZED
        );
        assert_eq!(cublasSetMathMode(bogus, 0), CUBLAS_STATUS_NOT_INITIALIZED);
        let r = cublasSgemm_v2(
            bogus,
            0,
            0,
            -1,
            1,
            1,
            &one,
            std::ptr::null(),
            1,
            std::ptr::null(),
            1,
            &one,
            std::ptr::null_mut(),
            1,
        );
        assert_eq!(r, CUBLAS_STATUS_NOT_INITIALIZED);
        // SAFETY: NULL is allowed and rejected.
        let r = unsafe { cublasCreate_v2(std::ptr::null_mut()) };
        assert_eq!(r, CUBLAS_STATUS_INVALID_VALUE);
    }
}
