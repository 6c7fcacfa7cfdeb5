//! Kernel launches: `cuLaunchKernel`, `cuLaunchKernelEx`, `cuLaunchCooperativeKernel`.
//! `f` may be a `CUfunction` or (as CUDA 12 documents) a `CUkernel`, whose function in
//! the current context is used. Kernels compute nothing; their duration and counters
//! come from the cost model.

use std::ffi::{c_uint, c_void, CString};

use crate::api_module::{kernel_function, max_threads, report_loaded};
use crate::config;
use crate::consts::*;
use crate::ops;
use crate::registry::{self, Driver, LaunchSpec, OpSpec};
use crate::trace;

/// The function a launch handle names (loading a library's module if needed), its
/// name, and a module to report as loaded.
pub(crate) fn resolve(
    d: &mut Driver,
    f: usize,
) -> Result<(usize, CString, Option<usize>), CUresult> {
    let (f, loaded) = if d.functions.contains_key(&f) {
        (f, None)
    } else if d.kernels.contains_key(&f) {
        kernel_function(d, f)?
    } else {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    };
    Ok((f, d.functions[&f].kernel.name.clone(), loaded))
}

/// Checks launch dimensions and shared memory against the device and the function.
pub(crate) fn validate(
    d: &Driver,
    f: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
) -> Result<(), CUresult> {
    let func = &d.functions[&f];
    let grid_ok = (1..=i32::MAX as u32).contains(&grid[0])
        && (1..=65535).contains(&grid[1])
        && (1..=65535).contains(&grid[2]);
    let block_ok = (1..=1024).contains(&block[0])
        && (1..=1024).contains(&block[1])
        && (1..=64).contains(&block[2]);
    let threads = block.iter().map(|&v| u64::from(v)).product::<u64>();
    if !grid_ok || !block_ok || threads > 1024 || shared as i64 > i64::from(func.max_dynamic_shared)
    {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    if threads > max_threads(func.kernel.registers) as u64 {
        return Err(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    }
    Ok(())
}

/// Blocks that fit on the device at once (for cooperative launches): per SM, at most
/// 32 blocks, 2048 threads and 65536 registers.
fn co_resident_blocks(registers: u32, threads: u64) -> u64 {
    let per_sm = 32u64
        .min(2048 / threads)
        .min(65536 / (u64::from(registers.max(1)) * threads).max(1));
    per_sm * config::get().device.sm_count as u64
}

/// One launch, between the tracer's callbacks (with the kernel's name as symbol).
#[allow(clippy::too_many_arguments)]
fn launch(
    cbid: u32,
    name: &'static std::ffi::CStr,
    params: *const c_void,
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: CUstream,
    cooperative: bool,
) -> CUresult {
    if !crate::state::is_initialized() {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    let resolved = resolve(&mut registry::lock(), f as usize);
    let symbol = resolved.as_ref().ok().map(|(_, n, _)| n.clone());
    if let Ok((_, _, loaded)) = &resolved {
        report_loaded(*loaded);
    }
    trace::traced(cbid, name, params, symbol.as_deref(), || {
        let issued = {
            let mut d = registry::lock();
            let r = (|| {
                let (func, _, _) = resolved.clone()?;
                validate(&d, func, grid, block, shared)?;
                if cooperative {
                    let threads = block.iter().map(|&v| u64::from(v)).product::<u64>();
                    let blocks = grid.iter().map(|&v| u64::from(v)).product::<u64>();
                    if blocks > co_resident_blocks(d.functions[&func].kernel.registers, threads) {
                        return Err(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
                    }
                }
                let s = d.stream(stream)?;
                let spec = LaunchSpec {
                    kernel: d.functions[&func].kernel.clone(),
                    grid,
                    block,
                    shared,
                    gemm: crate::export_table::thread_gemm(),
                };
                ops::issue(&mut d, s, OpSpec::Kernel(spec))
            })();
            match r {
                Ok(i) => i,
                Err(e) => return e,
            }
        };
        ops::report(vec![issued]);
        CUDA_SUCCESS
    })
}

/// `CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
/// unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int
/// blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void
/// **extra)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuLaunchKernel(
    f: CUfunction,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    h_stream: CUstream,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let p = cupti_sys::cuLaunchKernel_params {
        f,
        gridDimX: gx,
        gridDimY: gy,
        gridDimZ: gz,
        blockDimX: bx,
        blockDimY: by,
        blockDimZ: bz,
        sharedMemBytes: shared,
        hStream: h_stream,
        kernelParams: kernel_params,
        extra,
    };
    crate::ffi::guard(std::panic::AssertUnwindSafe(|| {
        launch(
            cupti_sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
            c"cuLaunchKernel",
            std::ptr::from_ref(&p).cast(),
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            h_stream,
            false,
        )
    }))
}

/// `CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned
/// int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
/// unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void
/// **kernelParams)`: the grid must fit on the device at once
/// (`CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuLaunchCooperativeKernel(
    f: CUfunction,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    h_stream: CUstream,
    kernel_params: *mut *mut c_void,
) -> CUresult {
    let p = cupti_sys::cuLaunchCooperativeKernel_params {
        f,
        gridDimX: gx,
        gridDimY: gy,
        gridDimZ: gz,
        blockDimX: bx,
        blockDimY: by,
        blockDimZ: bz,
        sharedMemBytes: shared,
        hStream: h_stream,
        kernelParams: kernel_params,
    };
    crate::ffi::guard(std::panic::AssertUnwindSafe(|| {
        launch(
            cupti_sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
            c"cuLaunchCooperativeKernel",
            std::ptr::from_ref(&p).cast(),
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            h_stream,
            true,
        )
    }))
}

/// `CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void
/// **kernelParams, void **extra)`: launch attributes are accepted and not modelled.
///
/// # Safety
/// `config` is NULL or points to a valid `CUlaunchConfig`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const cupti_sys::CUlaunchConfig,
    f: CUfunction,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let p = cupti_sys::cuLaunchKernelEx_params {
        config,
        f,
        kernelParams: kernel_params,
        extra,
    };
    crate::ffi::guard(std::panic::AssertUnwindSafe(|| {
        let cbid =
            cupti_sys::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
        // SAFETY: per this function's contract.
        let Some(c) = (unsafe { config.as_ref() }) else {
            return trace::traced(
                cbid,
                c"cuLaunchKernelEx",
                std::ptr::from_ref(&p).cast(),
                None,
                || CUDA_ERROR_INVALID_VALUE,
            );
        };
        launch(
            cbid,
            c"cuLaunchKernelEx",
            std::ptr::from_ref(&p).cast(),
            f,
            [c.gridDimX, c.gridDimY, c.gridDimZ],
            [c.blockDimX, c.blockDimY, c.blockDimZ],
            c.sharedMemBytes,
            c.hStream,
            false,
        )
    }))
}
