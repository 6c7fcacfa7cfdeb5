//! The C boundary: no unwinding out of an export, and `cuptiGetLastError` bookkeeping.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use cupti_sys::CUptiResult::{self, CUPTI_ERROR_UNKNOWN, CUPTI_SUCCESS};

thread_local! {
    static LAST_ERROR: Cell<CUptiResult::Type> = const { Cell::new(CUPTI_SUCCESS) };
}

/// Runs an export's body. A panic becomes `CUPTI_ERROR_UNKNOWN` (and one line on
/// stderr); every error result is remembered for `cuptiGetLastError`.
pub fn guard(f: impl FnOnce() -> CUptiResult::Type) -> CUptiResult::Type {
    let r = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("simcupti: internal panic, returning CUPTI_ERROR_UNKNOWN");
            CUPTI_ERROR_UNKNOWN
        }
    };
    if r != CUPTI_SUCCESS {
        LAST_ERROR.with(|e| e.set(r));
    }
    r
}

/// Runs a callback from C (the driver's tracer calls) with no unwinding out of it.
pub fn guard_void(f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        eprintln!("simcupti: internal panic in a driver notification, ignored");
    }
}

/// The last error of this thread, reset to success (the `cuptiGetLastError` contract:
/// "Returns the last error from a cupti call or callback").
pub fn take_last_error() -> CUptiResult::Type {
    LAST_ERROR.with(|e| e.replace(CUPTI_SUCCESS))
}

/// Writes `value` to `out`, or fails with `CUPTI_ERROR_INVALID_PARAMETER` if null.
///
/// # Safety
/// `out` is null or valid for writing a `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T) -> CUptiResult::Type {
    if out.is_null() {
        return CUptiResult::CUPTI_ERROR_INVALID_PARAMETER;
    }
    // SAFETY: non-null, and the caller promises it is writable.
    unsafe { out.write(value) };
    CUPTI_SUCCESS
}
