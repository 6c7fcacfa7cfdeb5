//! Contexts: primary contexts (`cuDevicePrimaryCtx*`), `cuCtxCreate` (`_v2`, `_v3`,
//! `_v4`), `cuCtxDestroy_v2`, the per-thread context stack, and context queries.

use std::ffi::{c_int, c_uint};

use cupti_sys::CUpti_CallbackIdResource::*;

use crate::api_device::device;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::registry::{self, Driver};
use crate::trace::resource;
use crate::{clock, context};

/// `cuCtxGetApiVersion`'s answer: the API version of contexts made by the `_v2`
/// entry points ("3020", the version `cuda.h` names as an example).
const CONTEXT_API_VERSION: c_uint = 3020;

/// Creates a context on `dev`, reports `CONTEXT_CREATED`, returns its handle.
fn create(dev: CUdevice, flags: c_uint, push: bool) -> Result<usize, CUresult> {
    device(dev)?;
    if flags & !CU_CTX_FLAGS_MASK != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let h = registry::lock().create_context(dev, flags, false, None);
    if push {
        context::push(h);
    }
    resource(
        CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        h,
        0,
        std::ptr::null_mut(),
    );
    Ok(h)
}

/// Reports `CONTEXT_DESTROY_STARTING`, then destroys the context.
fn destroy(h: usize) {
    resource(
        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        h,
        0,
        std::ptr::null_mut(),
    );
    registry::lock().remove_context(h);
}

/// # Safety
/// `pctx` is NULL or writable.
unsafe fn ctx_create(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice) -> CUresult {
    if pctx.is_null() {
        return CUDA_ERROR_INVALID_VALUE;
    }
    match create(dev, flags, true) {
        // SAFETY: non-NULL and writable per this function's contract.
        Ok(h) => code(unsafe { out(pctx, h as CUcontext) }),
        Err(e) => e,
    }
}

/// `CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)`:
/// creates a context and makes it current (pushes it).
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    let p = cupti_sys::cuCtxCreate_v2_params { pctx, flags, dev };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2,
        c"cuCtxCreate_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { ctx_create(pctx, flags, dev) }
    )
}

/// `CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int
/// numParams, unsigned int flags, CUdevice dev)`. Execution affinity is accepted and
/// not modelled.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v3(
    pctx: *mut CUcontext,
    params_array: *mut cupti_sys::CUexecAffinityParam,
    num_params: c_int,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    let p = cupti_sys::cuCtxCreate_v3_params {
        pctx,
        paramsArray: params_array,
        numParams: num_params,
        flags,
        dev,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3,
        c"cuCtxCreate_v3",
        p,
        {
            if num_params < 0 || (num_params > 0 && params_array.is_null()) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            // SAFETY: the caller's pointer is NULL or writable.
            unsafe { ctx_create(pctx, flags, dev) }
        }
    )
}

/// `CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
/// unsigned int flags, CUdevice dev)` (`cuCtxCreate` in CUDA 13's `cuda.h`).
/// Execution affinity and CIG parameters are accepted and not modelled.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v4(
    pctx: *mut CUcontext,
    params: *mut cupti_sys::CUctxCreateParams,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    let p = cupti_sys::cuCtxCreate_v4_params {
        pctx,
        ctxCreateParams: params,
        flags,
        dev,
    };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4,
        c"cuCtxCreate_v4",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { ctx_create(pctx, flags, dev) }
    )
}

/// `CUresult cuCtxDestroy_v2(CUcontext ctx)`: pops it if current on this thread.
/// A primary context cannot be destroyed this way (`CUDA_ERROR_INVALID_CONTEXT`).
#[no_mangle]
pub extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxDestroy_v2_params { ctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
        c"cuCtxDestroy_v2",
        p,
        {
            let h = ctx as usize;
            match registry::lock().ctx(h) {
                Ok(c) if !c.primary => {}
                _ => return CUDA_ERROR_INVALID_CONTEXT,
            }
            context::pop_if_current(h);
            destroy(h);
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`: creates the
/// device's primary context on first retain; does not make it current.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    let p = cupti_sys::cuDevicePrimaryCtxRetain_params { pctx, dev };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain,
        c"cuDevicePrimaryCtxRetain",
        p,
        code((|| {
            device(dev)?;
            if pctx.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let (h, created) = {
                let mut d = registry::lock();
                let d: &mut Driver = &mut d;
                if !d.primaries.contains_key(&dev) {
                    let handle = d.new_handle();
                    d.primaries.insert(
                        dev,
                        registry::Primary {
                            handle,
                            refcount: 0,
                            flags: 0,
                        },
                    );
                }
                let pr = d.primaries.get_mut(&dev).expect("inserted above");
                pr.refcount += 1;
                let (h, flags) = (pr.handle, pr.flags);
                let created = !d.contexts.contains_key(&h);
                if created {
                    d.create_context(dev, flags, true, Some(h));
                }
                (h, created)
            };
            if created {
                resource(
                    CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
                    h,
                    0,
                    std::ptr::null_mut(),
                );
            }
            // SAFETY: non-NULL, and writable per this function's contract.
            unsafe { out(pctx, h as CUcontext) }
        })())
    )
}

/// Drops the primary context of `dev` when active: `release` decrements the count
/// (destroying at zero), otherwise (reset) destroys it outright.
fn primary_drop(dev: CUdevice, release: bool) -> Result<(), CUresult> {
    device(dev)?;
    let to_destroy = {
        let mut d = registry::lock();
        let active = d
            .primaries
            .get(&dev)
            .map(|p| d.contexts.contains_key(&p.handle));
        let Some(pr) = d.primaries.get_mut(&dev) else {
            return if release {
                Err(CUDA_ERROR_INVALID_CONTEXT)
            } else {
                Ok(())
            };
        };
        if release {
            if pr.refcount == 0 {
                return Err(CUDA_ERROR_INVALID_CONTEXT);
            }
            pr.refcount -= 1;
            (pr.refcount == 0 && active == Some(true)).then_some(pr.handle)
        } else {
            pr.refcount = 0;
            (active == Some(true)).then_some(pr.handle)
        }
    };
    if let Some(h) = to_destroy {
        destroy(h);
    }
    Ok(())
}

/// `CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    let p = cupti_sys::cuDevicePrimaryCtxRelease_v2_params { dev };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2,
        c"cuDevicePrimaryCtxRelease_v2",
        p,
        code(primary_drop(dev, true))
    )
}

/// `CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)`: destroys the primary context
/// and all its allocations; the next retain creates a new one.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    let p = cupti_sys::cuDevicePrimaryCtxReset_v2_params { dev };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
        c"cuDevicePrimaryCtxReset_v2",
        p,
        code(primary_drop(dev, false))
    )
}

/// `CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)`.
///
/// # Safety
/// `flags` and `active` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    let p = cupti_sys::cuDevicePrimaryCtxGetState_params { dev, flags, active };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
        c"cuDevicePrimaryCtxGetState",
        p,
        code((|| {
            device(dev)?;
            if flags.is_null() || active.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let d = registry::lock();
            let (f, a) = d.primaries.get(&dev).map_or((0, false), |p| {
                (p.flags, d.contexts.contains_key(&p.handle))
            });
            // SAFETY: both non-NULL and writable per this function's contract.
            unsafe {
                out(flags, f)?;
                out(active, c_int::from(a))
            }
        })())
    )
}

/// `CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) -> CUresult {
    let p = cupti_sys::cuDevicePrimaryCtxSetFlags_v2_params { dev, flags };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxSetFlags_v2,
        c"cuDevicePrimaryCtxSetFlags_v2",
        p,
        code((|| {
            device(dev)?;
            if flags & !CU_CTX_FLAGS_MASK != 0 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let mut d = registry::lock();
            if !d.primaries.contains_key(&dev) {
                let handle = d.new_handle();
                d.primaries.insert(
                    dev,
                    registry::Primary {
                        handle,
                        refcount: 0,
                        flags: 0,
                    },
                );
            }
            let pr = d.primaries.get_mut(&dev).expect("inserted above");
            pr.flags = flags;
            let h = pr.handle;
            if let Some(c) = d.contexts.get_mut(&h) {
                c.flags = flags;
            }
            Ok(())
        })())
    )
}

/// `CUresult cuCtxGetCurrent(CUcontext *pctx)`: NULL when none is current.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxGetCurrent_params { pctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
        c"cuCtxGetCurrent",
        p,
        {
            let c = context::current().unwrap_or(0);
            // SAFETY: the caller's pointer is NULL or writable.
            code(unsafe { out(pctx, c as CUcontext) })
        }
    )
}

/// `CUresult cuCtxSetCurrent(CUcontext ctx)`: replaces the top of the stack; NULL pops.
#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxSetCurrent_params { ctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent,
        c"cuCtxSetCurrent",
        p,
        {
            let h = ctx as usize;
            if h == 0 {
                context::set(None);
                return CUDA_SUCCESS;
            }
            if let Err(e) = registry::lock().ctx(h) {
                return e;
            }
            context::set(Some(h));
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuCtxPushCurrent_v2(CUcontext ctx)`.
#[no_mangle]
pub extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxPushCurrent_v2_params { ctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2,
        c"cuCtxPushCurrent_v2",
        p,
        {
            let h = ctx as usize;
            if let Err(e) = registry::lock().ctx(h) {
                return e;
            }
            context::push(h);
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuCtxPopCurrent_v2(CUcontext *pctx)`: `pctx` may be NULL.
///
/// # Safety
/// `pctx` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxPopCurrent_v2_params { pctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2,
        c"cuCtxPopCurrent_v2",
        p,
        {
            let Some(h) = context::pop() else {
                return CUDA_ERROR_INVALID_CONTEXT;
            };
            if !pctx.is_null() {
                // SAFETY: non-NULL and writable per this function's contract.
                unsafe { pctx.write(h as CUcontext) };
            }
            CUDA_SUCCESS
        }
    )
}

/// The context `ctx` names, or the current one for NULL.
fn ctx_or_current(d: &Driver, ctx: CUcontext) -> Result<usize, CUresult> {
    match ctx as usize {
        0 => d.current(),
        h => d.ctx(h).map(|_| h),
    }
}

/// # Safety
/// `device` is NULL or writable.
unsafe fn get_device(device: *mut CUdevice, ctx: CUcontext) -> CUresult {
    let d = registry::lock();
    let dev = match ctx_or_current(&d, ctx) {
        Ok(h) => d.contexts[&h].device,
        Err(e) => return e,
    };
    // SAFETY: per this function's contract.
    code(unsafe { out(device, dev) })
}

/// `CUresult cuCtxGetDevice(CUdevice *device)`.
///
/// # Safety
/// `device` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    let p = cupti_sys::cuCtxGetDevice_params { device };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
        c"cuCtxGetDevice",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { get_device(device, std::ptr::null_mut()) }
    )
}

/// `CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)` (CUDA 13): NULL
/// `ctx` is the current context.
///
/// # Safety
/// `device` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice_v2(device: *mut CUdevice, ctx: CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxGetDevice_v2_params { device, ctx };
    // SAFETY: the caller's pointer is NULL or writable.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
        c"cuCtxGetDevice_v2",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        unsafe { get_device(device, ctx) }
    )
}

/// Waits in real time until all work of the context ends.
fn synchronize(ctx: CUcontext) -> CUresult {
    let h = {
        let d = registry::lock();
        match ctx_or_current(&d, ctx) {
            Ok(h) => h,
            Err(e) => return e,
        }
    };
    clock::wait_for(|| registry::lock().context_ready(h));
    CUDA_SUCCESS
}

/// `CUresult cuCtxSynchronize(void)`.
#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
        c"cuCtxSynchronize",
        (),
        { synchronize(std::ptr::null_mut()) }
    )
}

/// `CUresult cuCtxSynchronize_v2(CUcontext ctx)` (CUDA 13): NULL is the current context.
#[no_mangle]
pub extern "C" fn cuCtxSynchronize_v2(ctx: CUcontext) -> CUresult {
    let p = cupti_sys::cuCtxSynchronize_v2_params { ctx };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
        c"cuCtxSynchronize_v2",
        p,
        { synchronize(ctx) }
    )
}

/// `CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)`: NULL `ctx` is the
/// current context.
///
/// # Safety
/// `ctx_id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetId(ctx: CUcontext, ctx_id: *mut u64) -> CUresult {
    let p = cupti_sys::cuCtxGetId_params { ctx, ctxId: ctx_id };
    api!(CUPTI_DRIVER_TRACE_CBID_cuCtxGetId, c"cuCtxGetId", p, {
        let d = registry::lock();
        match ctx_or_current(&d, ctx) {
            // SAFETY: the caller's pointer is NULL or writable.
            Ok(h) => code(unsafe { out(ctx_id, u64::from(d.contexts[&h].id)) }),
            Err(e) => e,
        }
    })
}

/// `CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)`: NULL `ctx` is
/// the current context.
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut c_uint) -> CUresult {
    let p = cupti_sys::cuCtxGetApiVersion_params { ctx, version };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetApiVersion,
        c"cuCtxGetApiVersion",
        p,
        {
            let d = registry::lock();
            match ctx_or_current(&d, ctx) {
                // SAFETY: the caller's pointer is NULL or writable.
                Ok(_) => code(unsafe { out(version, CONTEXT_API_VERSION) }),
                Err(e) => e,
            }
        }
    )
}
