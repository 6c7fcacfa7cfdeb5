//! The C ABI boundary: no panic unwinds out of an exported function, and results
//! written with `?` become `nvmlReturn_t`.

use std::ffi::c_char;
use std::panic::{catch_unwind, UnwindSafe};

use crate::consts::*;

/// Runs an exported function's body; a panic is `NVML_ERROR_UNKNOWN`.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), nvmlReturn_t> + UnwindSafe) -> nvmlReturn_t {
    match catch_unwind(body) {
        Ok(Ok(())) => NVML_SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => NVML_ERROR_UNKNOWN,
    }
}

/// Stores `value` through a caller's out-pointer; NULL is `NVML_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `out` is NULL or valid for writing a `T`.
pub(crate) unsafe fn out<T>(out: *mut T, value: T) -> Result<(), nvmlReturn_t> {
    if out.is_null() {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: non-NULL, and valid for writes per this function's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Copies `s` and its NUL into the caller's `length`-byte buffer: NULL is
/// `NVML_ERROR_INVALID_ARGUMENT`, too small `NVML_ERROR_INSUFFICIENT_SIZE`.
///
/// # Safety
/// `buf` is NULL or valid for writing `length` bytes.
pub(crate) unsafe fn out_str(buf: *mut c_char, length: u32, s: &str) -> Result<(), nvmlReturn_t> {
    if buf.is_null() {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (length as usize) < s.len() + 1 {
        return Err(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    // SAFETY: `buf` holds `length >= s.len() + 1` bytes; the source is a distinct
    // Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        buf.add(s.len()).write(0);
    }
    Ok(())
}

/// `s` and a NUL in a fixed C array (the caller makes sure it fits).
pub(crate) fn c_array<const N: usize>(s: &str) -> [c_char; N] {
    let mut a = [0 as c_char; N];
    for (d, b) in a.iter_mut().zip(s.bytes().take(N - 1)) {
        *d = b as c_char;
    }
    a
}
