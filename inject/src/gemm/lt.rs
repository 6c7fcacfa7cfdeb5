//! A `cublasLtMatmul` call's shape, read from its descriptors with cuBLASLt's own
//! getters (`cublasLtMatmulDescGetAttribute`, `cublasLtMatrixLayoutGetAttribute`,
//! from the library that defines the `cublasLtMatmul` called), as `cublasLt.h`
//! documents them: D is M x N (`ROWS`, `COLS`, uint64), K is A's columns, or its
//! rows when A is transposed; the batch is D's `BATCH_COUNT` (int32); types are each
//! layout's `TYPE` (uint32 `cudaDataType_t`); `TRANSA` / `TRANSB` and `COMPUTE_TYPE`
//! (int32) come from the matmul descriptor.

use core::ffi::{c_uint, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use cupti_sys::cublas::cublasLtMatmulDescAttributes_t::{
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE as DESC_COMPUTE_TYPE,
    CUBLASLT_MATMUL_DESC_TRANSA as DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSB as DESC_TRANSB,
};
use cupti_sys::cublas::cublasLtMatrixLayoutAttribute_t::{
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT as LAYOUT_BATCH_COUNT,
    CUBLASLT_MATRIX_LAYOUT_COLS as LAYOUT_COLS, CUBLASLT_MATRIX_LAYOUT_ROWS as LAYOUT_ROWS,
    CUBLASLT_MATRIX_LAYOUT_TYPE as LAYOUT_TYPE,
};
use cupti_sys::cublas::cublasOperation_t::CUBLAS_OP_N;
use cupti_sys::cublas::cublasStatus_t::{self, CUBLAS_STATUS_SUCCESS};
use cupti_sys::cublas::{cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, pfn};

use super::calls::Shape;

/// `cublasLtMatmulDescGetAttribute` and `cublasLtMatrixLayoutGetAttribute`: (object,
/// attribute, buffer, size, size written).
type Getter<O> =
    unsafe extern "C" fn(O, c_uint, *mut c_void, usize, *mut usize) -> cublasStatus_t::Type;

/// The address of `name` in the library that defines the function at `real`.
pub fn companion(real: usize, name: &CStr) -> Option<usize> {
    // SAFETY: Dl_info is plain data; all-zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; `info` is writable.
    if unsafe { libc::dladdr(real as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: the loader's path of a loaded object; RTLD_NOLOAD never loads anything,
    // it only takes a reference on the loaded object, released below.
    let handle = unsafe { libc::dlopen(info.dli_fname, libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a handle from dlopen and a C string.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    // SAFETY: balances the dlopen above; the object stays loaded (the application
    // holds it).
    unsafe { libc::dlclose(handle) };
    (!p.is_null()).then_some(p as usize)
}

/// The getter `name` of the library defining `real`, cached in `slot`.
fn getter<F: Copy>(slot: &AtomicUsize, real: usize, name: &CStr) -> Option<F> {
    let mut f = slot.load(Ordering::Relaxed);
    if f == 0 {
        f = companion(real, name)?;
        slot.store(f, Ordering::Relaxed);
    }
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
    // SAFETY: `f` is cuBLASLt's function `name`; the callers name it with its header
    // type (`pfn::<name>`), a function pointer the size of `usize`.
    Some(unsafe { std::mem::transmute_copy::<usize, F>(&f) })
}

/// Reads attribute `attr` of `object` as a `T` of exactly the documented size.
fn get<T: Copy + Default, O>(f: Getter<O>, object: O, attr: c_uint) -> Option<T> {
    let mut v = T::default();
    let mut written = 0usize;
    let size = std::mem::size_of::<T>();
    // SAFETY: `v` is writable for `size` bytes; the descriptor is the application's,
    // as passed to cublasLtMatmul.
    let r = unsafe { f(object, attr, (&mut v as *mut T).cast(), size, &mut written) };
    (r == CUBLAS_STATUS_SUCCESS && written == size).then_some(v)
}

/// The shape of `cublasLtMatmul(.., desc, .. [A, B, C, D] layouts ..)`, where
/// `real` is the real `cublasLtMatmul`; `None` when a descriptor cannot be read.
pub fn shape(
    api: usize,
    real: usize,
    desc: cublasLtMatmulDesc_t,
    layouts: [cublasLtMatrixLayout_t; 4],
) -> Option<Shape> {
    static DESC_GET: AtomicUsize = AtomicUsize::new(0);
    static LAYOUT_GET: AtomicUsize = AtomicUsize::new(0);
    if real == 0 || desc.is_null() || layouts.iter().any(|l| l.is_null()) {
        return None;
    }
    let dg: pfn::cublasLtMatmulDescGetAttribute =
        getter(&DESC_GET, real, c"cublasLtMatmulDescGetAttribute")?;
    let lg: pfn::cublasLtMatrixLayoutGetAttribute =
        getter(&LAYOUT_GET, real, c"cublasLtMatrixLayoutGetAttribute")?;
    let [a, b, c, d] = layouts;
    let trans_a = get::<i32, _>(dg, desc, DESC_TRANSA)? as u32;
    let trans_b = get::<i32, _>(dg, desc, DESC_TRANSB)? as u32;
    let compute_type = get::<i32, _>(dg, desc, DESC_COMPUTE_TYPE)? as u32;
    let m = get::<u64, _>(lg, d, LAYOUT_ROWS)?;
    let n = get::<u64, _>(lg, d, LAYOUT_COLS)?;
    let k = if trans_a == CUBLAS_OP_N {
        get::<u64, _>(lg, a, LAYOUT_COLS)?
    } else {
        get::<u64, _>(lg, a, LAYOUT_ROWS)?
    };
    let batch = u64::try_from(get::<i32, _>(lg, d, LAYOUT_BATCH_COUNT)?).ok()?;
    let types = [
        get::<u32, _>(lg, a, LAYOUT_TYPE)?,
        get::<u32, _>(lg, b, LAYOUT_TYPE)?,
        get::<u32, _>(lg, c, LAYOUT_TYPE)?,
        get::<u32, _>(lg, d, LAYOUT_TYPE)?,
    ];
    Some(Shape::new(
        api,
        [m, n, k, batch],
        [trans_a, trans_b],
        types,
        compute_type,
    ))
}
