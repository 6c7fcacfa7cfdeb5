//! The device and context the runtime's calls use: the calling thread's current
//! context when it has one (as after a driver API program made one current), else the
//! primary context of the thread's device (`cudaSetDevice`, device 0 by default),
//! retained and made current at the first call that needs it.

use std::cell::Cell;
use std::ffi::c_int;

use crate::driver::{Driver, Handle};
use crate::trace::{check, cudaError_t};

thread_local! {
    static DEVICE: Cell<c_int> = const { Cell::new(0) };
}

/// Makes `device`'s primary context current on this thread.
pub fn set_device(drv: &Driver, device: c_int) -> Result<(), cudaError_t> {
    // SAFETY: `cuInit(unsigned int)`.
    check(unsafe { (drv.init)(0) })?;
    let mut ctx: Handle = std::ptr::null_mut();
    // SAFETY: `ctx` is writable; the device ordinal is checked by the driver.
    check(unsafe { (drv.primary_ctx_retain)(&mut ctx, device) })?;
    // SAFETY: `ctx` is a live context the driver just returned.
    check(unsafe { (drv.ctx_set_current)(ctx) })?;
    DEVICE.with(|d| d.set(device));
    Ok(())
}

/// Ensures a context is current on this thread (the runtime's lazy initialisation).
pub fn ensure(drv: &Driver) -> Result<(), cudaError_t> {
    // SAFETY: `cuInit(unsigned int)`; idempotent.
    check(unsafe { (drv.init)(0) })?;
    let mut ctx: Handle = std::ptr::null_mut();
    // SAFETY: `ctx` is writable.
    check(unsafe { (drv.ctx_get_current)(&mut ctx) })?;
    if ctx.is_null() {
        set_device(drv, DEVICE.with(Cell::get))?;
    }
    Ok(())
}

/// The device of the current context (after [`ensure`]).
pub fn device(drv: &Driver) -> Result<c_int, cudaError_t> {
    ensure(drv)?;
    let mut dev: c_int = 0;
    // SAFETY: `dev` is writable.
    check(unsafe { (drv.ctx_get_device)(&mut dev) })?;
    Ok(dev)
}
