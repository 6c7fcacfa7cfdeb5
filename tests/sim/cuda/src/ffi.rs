//! The C ABI boundary: no panic may unwind out of an `extern "C"` function.

use std::panic::{catch_unwind, UnwindSafe};

use crate::consts::{CUresult, CUDA_ERROR_UNKNOWN};

/// Runs the body of an exported function; a panic becomes `CUDA_ERROR_UNKNOWN`.
pub(crate) fn guard(body: impl FnOnce() -> CUresult + UnwindSafe) -> CUresult {
    catch_unwind(body).unwrap_or(CUDA_ERROR_UNKNOWN)
}

/// Stores `value` through a caller's out-pointer, or returns `CUDA_ERROR_INVALID_VALUE`
/// when it is NULL.
///
/// # Safety
/// `out` is NULL or valid for writing a `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) -> CUresult {
    if out.is_null() {
        return crate::consts::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-NULL, and valid for writes per this function's contract.
    unsafe { out.write(value) };
    crate::consts::CUDA_SUCCESS
}

/// The `CUresult` of a body written with `?`.
pub(crate) fn code(r: Result<(), CUresult>) -> CUresult {
    r.err().unwrap_or(crate::consts::CUDA_SUCCESS)
}

/// [`write_out`] as a `Result`.
///
/// # Safety
/// `out` is NULL or valid for writing a `T`.
pub(crate) unsafe fn out<T>(out: *mut T, value: T) -> Result<(), CUresult> {
    // SAFETY: per this function's contract.
    match unsafe { write_out(out, value) } {
        crate::consts::CUDA_SUCCESS => Ok(()),
        e => Err(e),
    }
}
