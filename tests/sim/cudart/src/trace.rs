//! Every exported function runs through [`api`]: its entry and exit reported to CUPTI's
//! runtime API domain (through the driver), panics kept from unwinding into C, the
//! driver's `CUresult` turned into a `cudaError_t`, and the thread's last error kept
//! for `cudaGetLastError`.

use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use sim_abi::{ApiCall, SITE_ENTER, SITE_EXIT};

use crate::driver::{self, CUresult, Driver};

#[allow(non_camel_case_types)]
pub type cudaError_t = c_int;

pub const SUCCESS: cudaError_t = 0;
/// `cudaErrorInvalidValue`.
pub const INVALID_VALUE: cudaError_t = 1;
/// `cudaErrorInsufficientDriver`.
pub const INSUFFICIENT_DRIVER: cudaError_t = 35;
/// `cudaErrorUnknown`.
pub const UNKNOWN: cudaError_t = 999;

thread_local! {
    /// The last error a call on this thread returned (`cudaGetLastError`).
    static LAST_ERROR: Cell<cudaError_t> = const { Cell::new(SUCCESS) };
}

/// The runtime's error for a driver result. The runtime's codes equal the driver's
/// for every error the simulated driver returns (cuda_runtime_api.h and cuda.h give
/// both the same numbers); anything else is `cudaErrorUnknown`.
pub fn from_driver(r: CUresult) -> cudaError_t {
    match r {
        0..=3 | 100 | 101 | 200 | 201 | 400 | 500 | 600 | 700 | 701 | 801 | 900..=907 => r,
        _ => UNKNOWN,
    }
}

/// `Ok` for `CUDA_SUCCESS`, else the runtime's error.
pub fn check(r: CUresult) -> Result<(), cudaError_t> {
    if r == 0 {
        Ok(())
    } else {
        Err(from_driver(r))
    }
}

/// Takes (`reset`) or reads the thread's last error.
pub fn last_error(reset: bool) -> cudaError_t {
    LAST_ERROR.with(|e| if reset { e.replace(SUCCESS) } else { e.get() })
}

/// Runs `body`, the work of runtime function `name` (`cbid`, a
/// `CUpti_runtime_api_trace_cbid`), between its entry and exit callbacks, with `params`
/// its `cuda*_params` struct (or none) and `symbol` the kernel name of a launch.
pub fn api<P>(
    cbid: u32,
    name: &'static CStr,
    params: Option<&P>,
    symbol: Option<&CStr>,
    body: impl FnOnce(&'static Driver) -> Result<(), cudaError_t>,
) -> cudaError_t {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let Some(drv) = driver::get() else {
            return INSUFFICIENT_DRIVER;
        };
        let mut call = ApiCall {
            site: SITE_ENTER,
            cbid,
            function_name: name.as_ptr(),
            params: params.map_or(std::ptr::null(), |p| std::ptr::from_ref(p).cast::<c_void>()),
            context: std::ptr::null_mut(),
            context_id: 0,
            symbol_name: symbol.map_or(std::ptr::null(), CStr::as_ptr),
            result: 0,
            correlation_id: 0,
        };
        report(drv, &mut call);
        let result = body(drv).err().unwrap_or(SUCCESS);
        if call.correlation_id != 0 {
            call.site = SITE_EXIT;
            call.result = result;
            report(drv, &mut call);
        }
        result
    }))
    .unwrap_or(UNKNOWN);
    if result != SUCCESS {
        LAST_ERROR.with(|e| e.set(result));
    }
    result
}

fn report(drv: &Driver, call: &mut ApiCall) {
    if let Some(t) = &drv.table {
        // SAFETY: the table's functions are valid for the life of the process; `call`
        // is a live, exclusive ApiCall.
        unsafe { (t.runtime_api)(call) };
    }
}

/// Stores `value` through a caller's out-pointer, or `cudaErrorInvalidValue` when it
/// is NULL.
///
/// # Safety
/// `out` is NULL or valid for writing a `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T) -> Result<(), cudaError_t> {
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-NULL, and valid for writes per this function's contract.
    unsafe { out.write(value) };
    Ok(())
}
