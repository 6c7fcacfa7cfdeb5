//! A `cublasLtMatmul` call's shape, read from its descriptors with cuBLASLt's own
//! getters (`cublasLtMatmulDescGetAttribute`, `cublasLtMatrixLayoutGetAttribute`,
//! from the library that defines the `cublasLtMatmul` called), as `cublasLt.h`
//! documents them: D is M x N (`ROWS`, `COLS`, uint64), K is A's columns, or its
//! rows when A is transposed; the batch is D's `BATCH_COUNT` (int32); types are each
//! layout's `TYPE` (uint32 `cudaDataType_t`); `TRANSA` / `TRANSB` and `COMPUTE_TYPE`
//! (int32) come from the matmul descriptor.

use core::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::calls::Shape;

type Status = c_int;
type Getter = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, usize, *mut usize) -> Status;

// cublasLt.h: cublasLtMatmulDescAttributes_t.
const DESC_COMPUTE_TYPE: c_int = 0;
const DESC_TRANSA: c_int = 3;
const DESC_TRANSB: c_int = 4;
// cublasLt.h: cublasLtMatrixLayoutAttribute_t.
const LAYOUT_TYPE: c_int = 0;
const LAYOUT_ROWS: c_int = 2;
const LAYOUT_COLS: c_int = 3;
const LAYOUT_BATCH_COUNT: c_int = 5;
// cublas_api.h: cublasOperation_t.
const OP_N: u32 = 0;

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

fn getter(slot: &AtomicUsize, real: usize, name: &CStr) -> Option<Getter> {
    let mut f = slot.load(Ordering::Relaxed);
    if f == 0 {
        f = companion(real, name)?;
        slot.store(f, Ordering::Relaxed);
    }
    // SAFETY: `f` is cuBLASLt's getter of this name, whose signature (cublasLt.h) is
    // (object, attribute, buffer, size, size written).
    Some(unsafe { std::mem::transmute::<usize, Getter>(f) })
}

/// Reads attribute `attr` of `object` as a `T` of exactly the documented size.
fn get<T: Copy + Default>(f: Getter, object: *mut c_void, attr: c_int) -> Option<T> {
    let mut v = T::default();
    let mut written = 0usize;
    let size = std::mem::size_of::<T>();
    // SAFETY: `v` is writable for `size` bytes; the descriptor is the application's,
    // as passed to cublasLtMatmul.
    let r = unsafe { f(object, attr, (&mut v as *mut T).cast(), size, &mut written) };
    (r == 0 && written == size).then_some(v)
}

/// The shape of `cublasLtMatmul(.., desc, .. [A, B, C, D] layouts ..)`, where
/// `real` is the real `cublasLtMatmul`; `None` when a descriptor cannot be read.
pub fn shape(
    api: usize,
    real: usize,
    desc: *mut c_void,
    layouts: [*mut c_void; 4],
) -> Option<Shape> {
    static DESC_GET: AtomicUsize = AtomicUsize::new(0);
    static LAYOUT_GET: AtomicUsize = AtomicUsize::new(0);
    if real == 0 || desc.is_null() || layouts.iter().any(|l| l.is_null()) {
        return None;
    }
    let dg = getter(&DESC_GET, real, c"cublasLtMatmulDescGetAttribute")?;
    let lg = getter(&LAYOUT_GET, real, c"cublasLtMatrixLayoutGetAttribute")?;
    let [a, b, c, d] = layouts;
    let trans_a = get::<i32>(dg, desc, DESC_TRANSA)? as u32;
    let trans_b = get::<i32>(dg, desc, DESC_TRANSB)? as u32;
    let compute_type = get::<i32>(dg, desc, DESC_COMPUTE_TYPE)? as u32;
    let m = get::<u64>(lg, d, LAYOUT_ROWS)?;
    let n = get::<u64>(lg, d, LAYOUT_COLS)?;
    let k = if trans_a == OP_N {
        get::<u64>(lg, a, LAYOUT_COLS)?
    } else {
        get::<u64>(lg, a, LAYOUT_ROWS)?
    };
    let batch = u64::try_from(get::<i32>(lg, d, LAYOUT_BATCH_COUNT)?).ok()?;
    Some(Shape {
        api,
        m,
        n,
        k,
        batch,
        trans_a,
        trans_b,
        a_type: get::<u32>(lg, a, LAYOUT_TYPE)?,
        b_type: get::<u32>(lg, b, LAYOUT_TYPE)?,
        c_type: get::<u32>(lg, c, LAYOUT_TYPE)?,
        d_type: get::<u32>(lg, d, LAYOUT_TYPE)?,
        compute_type,
    })
}
