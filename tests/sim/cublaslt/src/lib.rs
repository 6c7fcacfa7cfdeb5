//! A simulated cuBLASLt: a `libcublasLt.so` (soname `libcublasLt.so.12`) with the symbol
//! names and C signatures of cuBLAS 12.9's `cublasLt.h`, for testing the profiler
//! without a GPU (docs/ARCHITECTURE.md, "The simulated CUDA stack").
//!
//! Descriptors (`cublasLtMatmulDesc_t`, `cublasLtMatrixLayout_t`,
//! `cublasLtMatmulPreference_t`) hold every attribute of the 12.9 header with its
//! documented size and default; `Set`/`GetAttribute` check sizes as documented.
//! `cublasLtMatmul` reads M, N, K, the batch count, transposes and types from them as the
//! real library does, then launches the same kernels as the simulated cuBLAS (see
//! `sim_blas_common::kernels`) on the given stream, with the GEMM shape announced to the
//! simulated driver. Nothing is computed: D is left unchanged.

#![allow(non_snake_case)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::panic::catch_unwind;
use std::sync::Mutex;

use sim_blas_common::consts::*;
use sim_blas_common::driver::CUstream;
use sim_blas_common::kernels::{self, classify, Problem};
use sim_blas_common::{guard, lock, op_transposed, write_out, Exec, Registry};

/// `cublasLtHandle_t`, `cublasLtMatmulDesc_t`, `cublasLtMatrixLayout_t`,
/// `cublasLtMatmulPreference_t`: opaque pointers.
pub type Opaque = *mut c_void;

/// `cublasLtMatmulAlgo_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct MatmulAlgo {
    pub data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HeuristicResult {
    pub algo: MatmulAlgo,
    pub workspace_size: usize,
    pub state: Status,
    pub waves_count: f32,
    pub reserved: [c_int; 4],
}

/// Tag of the algorithms this library hands out (`data[0]`).
const ALGO_TAG: u64 = u64::from_le_bytes(*b"simcblt\x01");

// ---- attribute stores ---------------------------------------------------------------

/// The attributes of one descriptor: id -> bytes, every known id present.
struct Attrs {
    size_of: fn(c_int) -> Option<usize>,
    values: Mutex<BTreeMap<c_int, Vec<u8>>>,
}

impl Attrs {
    fn new(
        size_of: fn(c_int) -> Option<usize>,
        ids: &[c_int],
        defaults: &[(c_int, Vec<u8>)],
    ) -> Attrs {
        let mut values = BTreeMap::new();
        for &id in ids {
            let size = size_of(id).expect("known attribute");
            values.insert(id, vec![0u8; size]);
        }
        for (id, v) in defaults {
            assert_eq!(Some(v.len()), size_of(*id));
            values.insert(*id, v.clone());
        }
        Attrs {
            size_of,
            values: Mutex::new(values),
        }
    }

    /// `...SetAttribute`: `CUBLAS_STATUS_INVALID_VALUE` for an unknown attribute, a NULL
    /// buffer or a size other than the attribute's.
    ///
    /// # Safety
    /// `buf` is NULL or valid for reading `size` bytes.
    unsafe fn set(&self, attr: c_int, buf: *const c_void, size: usize) -> Status {
        let Some(want) = (self.size_of)(attr) else {
            return CUBLAS_STATUS_INVALID_VALUE;
        };
        if buf.is_null() || size != want {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        // SAFETY: `buf` is readable for `size` bytes per the contract.
        let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) }.to_vec();
        lock(&self.values).insert(attr, bytes);
        CUBLAS_STATUS_SUCCESS
    }

    /// `...GetAttribute`, as `cublasLt.h` documents: with `size` 0 only the needed size
    /// is reported (through a non-NULL `size_written`); otherwise `buf` must be non-NULL
    /// and `size` the attribute's size.
    ///
    /// # Safety
    /// `buf` is NULL or writable for `size` bytes; `size_written` NULL or writable.
    unsafe fn get(
        &self,
        attr: c_int,
        buf: *mut c_void,
        size: usize,
        size_written: *mut usize,
    ) -> Status {
        let Some(want) = (self.size_of)(attr) else {
            return CUBLAS_STATUS_INVALID_VALUE;
        };
        if size == 0 {
            if size_written.is_null() {
                return CUBLAS_STATUS_INVALID_VALUE;
            }
            // SAFETY: non-NULL, writable per the contract.
            unsafe { size_written.write(want) };
            return CUBLAS_STATUS_SUCCESS;
        }
        if buf.is_null() || size != want {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let values = lock(&self.values);
        let v = &values[&attr];
        // SAFETY: `buf` is writable for `size` == `v.len()` bytes per the contract.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cast::<u8>(), v.len()) };
        if !size_written.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { size_written.write(want) };
        }
        CUBLAS_STATUS_SUCCESS
    }

    fn i32(&self, attr: c_int) -> i32 {
        let v = &lock(&self.values)[&attr];
        i32::from_le_bytes(v[..4].try_into().expect("4 bytes"))
    }

    fn u64(&self, attr: c_int) -> u64 {
        let v = &lock(&self.values)[&attr];
        u64::from_le_bytes(v[..8].try_into().expect("8 bytes"))
    }
}

/// `cublasLtMatmulDescAttributes_t` (12.9): the sizes of the types the header states.
pub mod desc {
    pub const COMPUTE_TYPE: i32 = 0;
    pub const SCALE_TYPE: i32 = 1;
    pub const POINTER_MODE: i32 = 2;
    pub const TRANSA: i32 = 3;
    pub const TRANSB: i32 = 4;
    pub const TRANSC: i32 = 5;
    pub const FILL_MODE: i32 = 6;
    pub const EPILOGUE: i32 = 7;
    pub const EPILOGUE_AUX_DATA_TYPE: i32 = 22;
    pub const BIAS_DATA_TYPE: i32 = 26;

    pub fn size_of(attr: i32) -> Option<usize> {
        Some(match attr {
            0..=7 | 15 | 22 | 26..=28 | 31..=35 | 37 => 4,
            8 | 10..=14 | 17..=21 | 23 | 24 | 29 | 30 | 36 => 8,
            25 => 1,
            _ => return None,
        })
    }

    pub fn ids() -> Vec<i32> {
        (0..=37).filter(|&a| size_of(a).is_some()).collect()
    }
}

/// `cublasLtMatrixLayoutAttribute_t`.
pub mod layout {
    pub const TYPE: i32 = 0;
    pub const ORDER: i32 = 1;
    pub const ROWS: i32 = 2;
    pub const COLS: i32 = 3;
    pub const LD: i32 = 4;
    pub const BATCH_COUNT: i32 = 5;
    pub const STRIDED_BATCH_OFFSET: i32 = 6;

    pub fn size_of(attr: i32) -> Option<usize> {
        Some(match attr {
            0 | 1 | 5 | 8 => 4,
            2..=4 | 6 | 7 => 8,
            _ => return None,
        })
    }

    /// `cublasLtOrder_t`.
    pub const ORDER_COL: i32 = 0;
    pub const ORDER_ROW: i32 = 1;
}

/// `cublasLtMatmulPreferenceAttributes_t`.
pub mod pref {
    pub const MAX_WORKSPACE_BYTES: i32 = 1;

    pub fn size_of(attr: i32) -> Option<usize> {
        Some(match attr {
            0 | 3 | 5..=9 => 4,
            1 | 12 => 8,
            _ => return None,
        })
    }

    pub const IDS: [i32; 9] = [0, 1, 3, 5, 6, 7, 8, 9, 12];
}

fn le4(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

static HANDLES: Registry<Exec> = Registry::new();
static DESCS: Registry<Attrs> = Registry::new();
static LAYOUTS: Registry<Attrs> = Registry::new();
static PREFS: Registry<Attrs> = Registry::new();

// ---- library and handle -------------------------------------------------------------

/// `cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)`.
///
/// # Safety
/// `handle` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtCreate(handle: *mut Opaque) -> Status {
    guard(move || {
        if handle.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        match Exec::create() {
            // SAFETY: non-NULL and writable per the contract.
            Ok(e) => unsafe { write_out(handle, HANDLES.insert(e)) },
            Err(s) => s,
        }
    })
}

/// `cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)`.
#[no_mangle]
pub extern "C" fn cublasLtDestroy(handle: Opaque) -> Status {
    guard(move || match HANDLES.remove(handle) {
        Some(_) => CUBLAS_STATUS_SUCCESS,
        None => CUBLAS_STATUS_NOT_INITIALIZED,
    })
}

/// `size_t cublasLtGetVersion(void)`: 120901.
#[no_mangle]
pub extern "C" fn cublasLtGetVersion() -> usize {
    CUBLAS_VERSION as usize
}

/// `size_t cublasLtGetCudartVersion(void)`.
#[no_mangle]
pub extern "C" fn cublasLtGetCudartVersion() -> usize {
    CUDART_VERSION
}

/// `cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value)`.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtGetProperty(kind: c_int, value: *mut c_int) -> Status {
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

/// `const char *cublasLtGetStatusName(cublasStatus_t status)`.
#[no_mangle]
pub extern "C" fn cublasLtGetStatusName(status: Status) -> *const c_char {
    catch_unwind(|| status_name(status).as_ptr().cast()).unwrap_or(std::ptr::null())
}

/// `const char *cublasLtGetStatusString(cublasStatus_t status)`.
#[no_mangle]
pub extern "C" fn cublasLtGetStatusString(status: Status) -> *const c_char {
    catch_unwind(|| status_string(status).as_ptr().cast()).unwrap_or(std::ptr::null())
}

/// `cublasStatus_t cublasLtLoggerSetLevel(int level)`: levels 0 (off) to 5. The sim
/// logs nothing.
#[no_mangle]
pub extern "C" fn cublasLtLoggerSetLevel(level: c_int) -> Status {
    if (0..=5).contains(&level) {
        CUBLAS_STATUS_SUCCESS
    } else {
        CUBLAS_STATUS_INVALID_VALUE
    }
}

/// `cublasStatus_t cublasLtLoggerSetMask(int mask)`: the sim logs nothing.
#[no_mangle]
pub extern "C" fn cublasLtLoggerSetMask(_mask: c_int) -> Status {
    CUBLAS_STATUS_SUCCESS
}

/// `cublasStatus_t cublasLtLoggerOpenFile(const char *logFile)`: opens (creates) the
/// file for appending, as the real logger does; the sim writes nothing to it.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cublasLtLoggerOpenFile(path: *const c_char) -> Status {
    guard(move || {
        if path.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        // SAFETY: NUL-terminated per the contract.
        let p = unsafe { std::ffi::CStr::from_ptr(path) };
        let Ok(p) = p.to_str() else {
            return CUBLAS_STATUS_INVALID_VALUE;
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            Ok(_) => CUBLAS_STATUS_SUCCESS,
            Err(_) => CUBLAS_STATUS_INVALID_VALUE,
        }
    })
}

/// `cublasStatus_t cublasLtLoggerForceDisable()`.
#[no_mangle]
pub extern "C" fn cublasLtLoggerForceDisable() -> Status {
    CUBLAS_STATUS_SUCCESS
}

// ---- descriptors --------------------------------------------------------------------

/// `cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
/// cublasComputeType_t computeType, cudaDataType_t scaleType)`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescCreate(
    out: *mut Opaque,
    compute_type: c_int,
    scale_type: c_int,
) -> Status {
    guard(move || {
        if out.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let a = Attrs::new(
            desc::size_of,
            &desc::ids(),
            &[
                (desc::COMPUTE_TYPE, le4(compute_type)),
                (desc::SCALE_TYPE, le4(scale_type)),
                (desc::FILL_MODE, le4(CUBLAS_FILL_MODE_FULL)),
                (desc::EPILOGUE, le4(1)),
                (desc::EPILOGUE_AUX_DATA_TYPE, le4(-1)),
                (desc::BIAS_DATA_TYPE, le4(-1)),
            ],
        );
        // SAFETY: non-NULL and writable per the contract.
        unsafe { write_out(out, DESCS.insert(a)) }
    })
}

/// `cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)`.
#[no_mangle]
pub extern "C" fn cublasLtMatmulDescDestroy(d: Opaque) -> Status {
    guard(move || match DESCS.remove(d) {
        Some(_) => CUBLAS_STATUS_SUCCESS,
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
/// cublasLtMatmulDescAttributes_t attr, const void *buf, size_t sizeInBytes)`.
///
/// # Safety
/// `buf` is NULL or readable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescSetAttribute(
    d: Opaque,
    attr: c_int,
    buf: *const c_void,
    size: usize,
) -> Status {
    guard(move || match DESCS.get(d) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.set(attr, buf, size) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
/// cublasLtMatmulDescAttributes_t attr, void *buf, size_t sizeInBytes,
/// size_t *sizeWritten)`.
///
/// # Safety
/// `buf` is NULL or writable for `size` bytes; `written` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescGetAttribute(
    d: Opaque,
    attr: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> Status {
    guard(move || match DESCS.get(d) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.get(attr, buf, size, written) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
/// cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutCreate(
    out: *mut Opaque,
    data_type: c_int,
    rows: u64,
    cols: u64,
    ld: i64,
) -> Status {
    guard(move || {
        if out.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let a = Attrs::new(
            layout::size_of,
            &[0, 1, 2, 3, 4, 5, 6, 7, 8],
            &[
                (layout::TYPE, le4(data_type)),
                (layout::ROWS, rows.to_le_bytes().to_vec()),
                (layout::COLS, cols.to_le_bytes().to_vec()),
                (layout::LD, ld.to_le_bytes().to_vec()),
                (layout::BATCH_COUNT, le4(1)),
            ],
        );
        // SAFETY: non-NULL and writable per the contract.
        unsafe { write_out(out, LAYOUTS.insert(a)) }
    })
}

/// `cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)`.
#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutDestroy(l: Opaque) -> Status {
    guard(move || match LAYOUTS.remove(l) {
        Some(_) => CUBLAS_STATUS_SUCCESS,
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
/// cublasLtMatrixLayoutAttribute_t attr, const void *buf, size_t sizeInBytes)`.
///
/// # Safety
/// `buf` is NULL or readable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutSetAttribute(
    l: Opaque,
    attr: c_int,
    buf: *const c_void,
    size: usize,
) -> Status {
    guard(move || match LAYOUTS.get(l) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.set(attr, buf, size) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
/// cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t sizeInBytes,
/// size_t *sizeWritten)`.
///
/// # Safety
/// `buf` is NULL or writable for `size` bytes; `written` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutGetAttribute(
    l: Opaque,
    attr: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> Status {
    guard(move || match LAYOUTS.get(l) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.get(attr, buf, size, written) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceCreate(out: *mut Opaque) -> Status {
    guard(move || {
        if out.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let a = Attrs::new(
            pref::size_of,
            &pref::IDS,
            &[
                (3, le4(0x7)),
                (5, le4(256)),
                (6, le4(256)),
                (7, le4(256)),
                (8, le4(256)),
                (12, u64::MAX.to_le_bytes().to_vec()),
            ],
        );
        // SAFETY: non-NULL and writable per the contract.
        unsafe { write_out(out, PREFS.insert(a)) }
    })
}

/// `cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)`.
#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceDestroy(p: Opaque) -> Status {
    guard(move || match PREFS.remove(p) {
        Some(_) => CUBLAS_STATUS_SUCCESS,
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
/// cublasLtMatmulPreferenceAttributes_t attr, const void *buf, size_t sizeInBytes)`.
///
/// # Safety
/// `buf` is NULL or readable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceSetAttribute(
    p: Opaque,
    attr: c_int,
    buf: *const c_void,
    size: usize,
) -> Status {
    guard(move || match PREFS.get(p) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.set(attr, buf, size) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

/// `cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
/// cublasLtMatmulPreferenceAttributes_t attr, void *buf, size_t sizeInBytes,
/// size_t *sizeWritten)`.
///
/// # Safety
/// `buf` is NULL or writable for `size` bytes; `written` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceGetAttribute(
    p: Opaque,
    attr: c_int,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> Status {
    guard(move || match PREFS.get(p) {
        // SAFETY: forwarded contract.
        Some(a) => unsafe { a.get(attr, buf, size, written) },
        None => CUBLAS_STATUS_INVALID_VALUE,
    })
}

// ---- matmul -------------------------------------------------------------------------

/// A matrix as its layout describes it.
struct Matrix {
    data_type: c_int,
    rows: u64,
    cols: u64,
    batch: i32,
}

fn matrix(l: Opaque) -> Result<Matrix, Status> {
    let a = LAYOUTS.get(l).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    let (rows, cols, ld) = (
        a.u64(layout::ROWS),
        a.u64(layout::COLS),
        a.u64(layout::LD) as i64,
    );
    let min_ld = match a.i32(layout::ORDER) {
        layout::ORDER_COL => rows,
        layout::ORDER_ROW => cols,
        _ => return Err(CUBLAS_STATUS_NOT_SUPPORTED),
    };
    if ld < 0 || (ld as u64) < min_ld.max(1) {
        return Err(CUBLAS_STATUS_INVALID_VALUE);
    }
    Ok(Matrix {
        data_type: a.i32(layout::TYPE),
        rows,
        cols,
        batch: a.i32(layout::BATCH_COUNT),
    })
}

/// The problem `D = alpha op(A) op(B) + beta C` the descriptors describe, or the
/// status `cublasLtMatmul` returns for them.
fn problem(desc_h: Opaque, a: Opaque, b: Opaque, c: Opaque, d: Opaque) -> Result<Problem, Status> {
    let desc = DESCS.get(desc_h).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    let ta = op_transposed(desc.i32(desc::TRANSA)).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    let tb = op_transposed(desc.i32(desc::TRANSB)).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    if desc.i32(desc::TRANSC) != CUBLAS_OP_N {
        return Err(CUBLAS_STATUS_NOT_SUPPORTED);
    }
    let (a, b, c, d) = (matrix(a)?, matrix(b)?, matrix(c)?, matrix(d)?);
    let (m, n) = (d.rows, d.cols);
    let (a_m, k) = if ta {
        (a.cols, a.rows)
    } else {
        (a.rows, a.cols)
    };
    let (b_k, b_n) = if tb {
        (b.cols, b.rows)
    } else {
        (b.rows, b.cols)
    };
    if a_m != m || b_k != k || b_n != n || c.rows != m || c.cols != n {
        return Err(CUBLAS_STATUS_INVALID_VALUE);
    }
    let batch = d.batch;
    if batch < 1 || a.batch != batch || b.batch != batch || c.batch != batch {
        return Err(CUBLAS_STATUS_INVALID_VALUE);
    }
    let compute = desc.i32(desc::COMPUTE_TYPE);
    let scale = desc.i32(desc::SCALE_TYPE);
    let scale_ok = match compute {
        CUBLAS_COMPUTE_16F | CUBLAS_COMPUTE_16F_PEDANTIC => {
            scale == CUDA_R_16F || scale == CUDA_R_32F
        }
        CUBLAS_COMPUTE_64F | CUBLAS_COMPUTE_64F_PEDANTIC => scale == CUDA_R_64F,
        _ => scale == CUDA_R_32F,
    };
    if !scale_ok || c.data_type != d.data_type {
        return Err(CUBLAS_STATUS_NOT_SUPPORTED);
    }
    let kind = classify(a.data_type, b.data_type, c.data_type, compute, false)?;
    Ok(Problem {
        kind,
        trans_a: ta,
        trans_b: tb,
        m,
        n,
        k,
        batch: batch as u64,
        pointer_array: false,
    })
}

/// `cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
/// cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
/// cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
/// cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
/// int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
/// int *returnAlgoCount)`: one algorithm (the kernel [`cublasLtMatmul`] will launch),
/// needing no workspace.
///
/// # Safety
/// `results` is NULL or writable for `requested` elements; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulAlgoGetHeuristic(
    handle: Opaque,
    desc_h: Opaque,
    a: Opaque,
    b: Opaque,
    c: Opaque,
    d: Opaque,
    preference: Opaque,
    requested: c_int,
    results: *mut HeuristicResult,
    count: *mut c_int,
) -> Status {
    guard(move || {
        let Some(exec) = HANDLES.get(handle) else {
            return CUBLAS_STATUS_NOT_INITIALIZED;
        };
        if requested <= 0 || results.is_null() || count.is_null() || PREFS.get(preference).is_none()
        {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let p = match problem(desc_h, a, b, c, d) {
            Ok(p) => p,
            Err(s) => return s,
        };
        let family = match exec.family() {
            Ok(f) => f,
            Err(s) => return s,
        };
        let k = kernels::kernel_for(family, &p);
        let ctas = p.m.div_ceil(k.tile.0) * p.n.div_ceil(k.tile.1) * p.batch;
        let r = HeuristicResult {
            algo: MatmulAlgo {
                data: [ALGO_TAG, 0, 0, 0, 0, 0, 0, 0],
            },
            workspace_size: 0,
            state: CUBLAS_STATUS_SUCCESS,
            waves_count: ctas as f32 / exec.arch.sm_count.max(1) as f32,
            reserved: [0; 4],
        };
        // SAFETY: both non-NULL and writable per the contract (requested >= 1).
        unsafe {
            results.write(r);
            count.write(1);
        }
        CUBLAS_STATUS_SUCCESS
    })
}

/// `cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
/// cublasLtMatmulDesc_t computeDesc, const void *alpha, const void *A,
/// cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
/// const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
/// cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
/// size_t workspaceSizeInBytes, cudaStream_t stream)`. `algo` may be NULL (the
/// library's own choice); any algorithm runs the same kernel, and none needs workspace.
#[no_mangle]
pub extern "C" fn cublasLtMatmul(
    handle: Opaque,
    desc_h: Opaque,
    alpha: *const c_void,
    a: *const c_void,
    a_desc: Opaque,
    b: *const c_void,
    b_desc: Opaque,
    beta: *const c_void,
    _c: *const c_void,
    c_desc: Opaque,
    d: *mut c_void,
    d_desc: Opaque,
    _algo: *const MatmulAlgo,
    _workspace: *mut c_void,
    _workspace_size: usize,
    stream: CUstream,
) -> Status {
    guard(move || {
        let Some(exec) = HANDLES.get(handle) else {
            return CUBLAS_STATUS_NOT_INITIALIZED;
        };
        if alpha.is_null() || beta.is_null() {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
        let p = match problem(desc_h, a_desc, b_desc, c_desc, d_desc) {
            Ok(p) => p,
            Err(s) => return s,
        };
        match exec.run(&p, stream as usize, [a as u64, b as u64, d as u64]) {
            Ok(()) => CUBLAS_STATUS_SUCCESS,
            Err(s) => s,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_attributes_round_trip_with_documented_sizes() {
        let mut l: Opaque = std::ptr::null_mut();
        // SAFETY: valid pointers and sizes throughout.
        unsafe {
            assert_eq!(
                cublasLtMatrixLayoutCreate(&mut l, CUDA_R_16BF, 64, 32, 64),
                0
            );
            let batch: i32 = 8;
            assert_eq!(
                cublasLtMatrixLayoutSetAttribute(
                    l,
                    layout::BATCH_COUNT,
                    (&batch as *const i32).cast(),
                    4
                ),
                0
            );
            assert_eq!(
                cublasLtMatrixLayoutSetAttribute(
                    l,
                    layout::BATCH_COUNT,
                    (&batch as *const i32).cast(),
                    8
                ),
                CUBLAS_STATUS_INVALID_VALUE
            );
            assert_eq!(
                cublasLtMatrixLayoutSetAttribute(l, 9, (&batch as *const i32).cast(), 4),
                CUBLAS_STATUS_INVALID_VALUE
            );
            assert_eq!(
                cublasLtMatrixLayoutSetAttribute(l, layout::BATCH_COUNT, std::ptr::null(), 4),
                CUBLAS_STATUS_INVALID_VALUE
            );
            let stride: i64 = 4096;
            assert_eq!(
                cublasLtMatrixLayoutSetAttribute(
                    l,
                    layout::STRIDED_BATCH_OFFSET,
                    (&stride as *const i64).cast(),
                    8
                ),
                0
            );
            let (mut v32, mut v64, mut written) = (0i32, 0u64, 0usize);
            assert_eq!(
                cublasLtMatrixLayoutGetAttribute(
                    l,
                    layout::BATCH_COUNT,
                    (&mut v32 as *mut i32).cast(),
                    4,
                    &mut written
                ),
                0
            );
            assert_eq!((v32, written), (8, 4));
            assert_eq!(
                cublasLtMatrixLayoutGetAttribute(
                    l,
                    layout::ROWS,
                    (&mut v64 as *mut u64).cast(),
                    8,
                    std::ptr::null_mut()
                ),
                0
            );
            assert_eq!(v64, 64);
            assert_eq!(
                cublasLtMatrixLayoutGetAttribute(
                    l,
                    layout::TYPE,
                    (&mut v32 as *mut i32).cast(),
                    4,
                    &mut written
                ),
                0
            );
            assert_eq!(v32, CUDA_R_16BF);
            assert_eq!(
                cublasLtMatrixLayoutGetAttribute(
                    l,
                    layout::LD,
                    std::ptr::null_mut(),
                    0,
                    &mut written
                ),
                0
            );
            assert_eq!(written, 8);
            assert_eq!(
                cublasLtMatrixLayoutGetAttribute(
                    l,
                    layout::LD,
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut()
                ),
                CUBLAS_STATUS_INVALID_VALUE
            );
            assert_eq!(cublasLtMatrixLayoutDestroy(l), 0);
            assert_eq!(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_INVALID_VALUE);
        }
    }

    #[test]
    fn matmul_desc_defaults_and_sizes() {
        let mut d: Opaque = std::ptr::null_mut();
        // SAFETY: valid pointers and sizes throughout.
        unsafe {
            assert_eq!(
                cublasLtMatmulDescCreate(&mut d, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                0
            );
            let get = |attr: c_int| {
                let mut v = 0i32;
                assert_eq!(
                    cublasLtMatmulDescGetAttribute(
                        d,
                        attr,
                        (&mut v as *mut i32).cast(),
                        4,
                        std::ptr::null_mut()
                    ),
                    0
                );
                v
            };
            assert_eq!(get(desc::COMPUTE_TYPE), CUBLAS_COMPUTE_32F);
            assert_eq!(get(desc::TRANSA), CUBLAS_OP_N);
            assert_eq!(get(desc::EPILOGUE), 1);
            assert_eq!(get(desc::FILL_MODE), 2);
            let t = CUBLAS_OP_T;
            assert_eq!(
                cublasLtMatmulDescSetAttribute(d, desc::TRANSA, (&t as *const i32).cast(), 4),
                0
            );
            assert_eq!(get(desc::TRANSA), CUBLAS_OP_T);
            let fast: i8 = 1;
            assert_eq!(
                cublasLtMatmulDescSetAttribute(d, 25, (&fast as *const i8).cast(), 1),
                0
            );
            let p: u64 = 0xdead_0000;
            assert_eq!(
                cublasLtMatmulDescSetAttribute(d, 8, (&p as *const u64).cast(), 8),
                0
            );
            assert_eq!(
                cublasLtMatmulDescSetAttribute(d, 9, (&p as *const u64).cast(), 8),
                CUBLAS_STATUS_INVALID_VALUE
            );
            assert_eq!(
                cublasLtMatmulDescSetAttribute(d, 8, (&p as *const u64).cast(), 4),
                CUBLAS_STATUS_INVALID_VALUE
            );
            assert_eq!(cublasLtMatmulDescDestroy(d), 0);
        }
    }

    #[test]
    fn preference_defaults() {
        let mut p: Opaque = std::ptr::null_mut();
        // SAFETY: valid pointers and sizes throughout.
        unsafe {
            assert_eq!(cublasLtMatmulPreferenceCreate(&mut p), 0);
            let ws: usize = 32 << 20;
            assert_eq!(
                cublasLtMatmulPreferenceSetAttribute(
                    p,
                    pref::MAX_WORKSPACE_BYTES,
                    (&ws as *const usize).cast(),
                    8
                ),
                0
            );
            let mut v = 0u32;
            assert_eq!(
                cublasLtMatmulPreferenceGetAttribute(
                    p,
                    5,
                    (&mut v as *mut u32).cast(),
                    4,
                    std::ptr::null_mut()
                ),
                0
            );
            assert_eq!(v, 256);
            assert_eq!(cublasLtMatmulPreferenceDestroy(p), 0);
        }
    }

    #[test]
    fn bad_handles() {
        let one = 1.0f32;
        let null = std::ptr::null_mut();
        let r = cublasLtMatmul(
            0x10 as Opaque,
            null,
            (&one as *const f32).cast(),
            null,
            null,
            null,
            null,
            (&one as *const f32).cast(),
            null,
            null,
            null,
            null,
            std::ptr::null(),
            null,
            0,
            null,
        );
        assert_eq!(r, CUBLAS_STATUS_NOT_INITIALIZED);
        assert_eq!(cublasLtDestroy(null), CUBLAS_STATUS_NOT_INITIALIZED);
        assert_eq!(cublasLtGetVersion(), 120901);
    }
}
