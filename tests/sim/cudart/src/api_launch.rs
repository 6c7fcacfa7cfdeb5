//! Libraries, kernels and launches (`cuda_runtime_api.h`): `cudaLibraryLoadData` /
//! `cudaLibraryGetKernel` give a `cudaKernel_t` that `cudaLaunchKernel` takes as its
//! function (CUDA 12's context-independent loading), and `cudaGraphLaunch`.

use std::collections::HashMap;
use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::sync::Mutex;

use cupti_sys::CUpti_runtime_api_trace_cbid_enum as cb;
use cupti_sys::{
    cudaGraphExec_t, cudaGraphLaunch_v10000_params, cudaKernel_t, cudaLaunchKernel_v7000_params,
    cudaLibraryGetKernel_v12060_params, cudaLibraryLoadData_v12060_params, cudaLibrary_t,
    cudaStream_t, dim3,
};

use crate::context;
use crate::driver::Handle;
use crate::trace::{api, check, cudaError_t, INVALID_VALUE};

/// Kernel names by `cudaKernel_t`, for the launch callbacks' `symbolName`.
static KERNEL_NAMES: Mutex<Option<HashMap<usize, CString>>> = Mutex::new(None);

/// # Safety
/// `library` is NULL or writable; `code` a PTX / ELF image; option arrays valid for
/// their counts.
#[no_mangle]
pub unsafe extern "C" fn cudaLibraryLoadData(
    library: *mut cudaLibrary_t,
    code: *const c_void,
    jit_options: *mut u32,
    jit_values: *mut *mut c_void,
    num_jit: c_uint,
    lib_options: *mut u32,
    lib_values: *mut *mut c_void,
    num_lib: c_uint,
) -> cudaError_t {
    let p = cudaLibraryLoadData_v12060_params {
        library,
        code,
        jitOptions: jit_options,
        jitOptionsValues: jit_values,
        numJitOptions: num_jit,
        libraryOptions: lib_options,
        libraryOptionValues: lib_values,
        numLibraryOptions: num_lib,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaLibraryLoadData_v12060,
        c"cudaLibraryLoadData",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: per this function's contract; the driver checks the rest.
            check(unsafe {
                (drv.library_load_data)(
                    library.cast::<Handle>(),
                    code,
                    jit_options,
                    jit_values,
                    num_jit,
                    lib_options,
                    lib_values,
                    num_lib,
                )
            })
        },
    )
}

/// # Safety
/// `kernel` is NULL or writable; `name` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn cudaLibraryGetKernel(
    kernel: *mut cudaKernel_t,
    library: cudaLibrary_t,
    name: *const c_char,
) -> cudaError_t {
    let p = cudaLibraryGetKernel_v12060_params {
        pKernel: kernel,
        library,
        name,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaLibraryGetKernel_v12060,
        c"cudaLibraryGetKernel",
        Some(&p),
        None,
        |drv| {
            if kernel.is_null() || name.is_null() {
                return Err(INVALID_VALUE);
            }
            // SAFETY: checked non-NULL; the driver checks the library.
            check(unsafe {
                (drv.library_get_kernel)(kernel.cast::<Handle>(), library.cast(), name)
            })?;
            // SAFETY: written by the driver just now; `name` is a C string per the contract.
            let (k, n) = unsafe { (kernel.read() as usize, CStr::from_ptr(name).to_owned()) };
            let mut names = KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner());
            names.get_or_insert_with(HashMap::new).insert(k, n);
            Ok(())
        },
    )
}

/// `cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void
/// **args, size_t sharedMem, cudaStream_t stream)`, `func` a `cudaKernel_t`.
///
/// # Safety
/// `args` holds the kernel's parameters, as with the real runtime.
#[no_mangle]
pub unsafe extern "C" fn cudaLaunchKernel(
    func: *const c_void,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared_mem: usize,
    stream: cudaStream_t,
) -> cudaError_t {
    let p = cudaLaunchKernel_v7000_params {
        func,
        gridDim: grid,
        blockDim: block,
        args,
        sharedMem: shared_mem,
        stream,
    };
    let name = KERNEL_NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&(func as usize)).cloned());
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        c"cudaLaunchKernel",
        Some(&p),
        name.as_deref(),
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the function and the stream; `args` per the
            // contract.
            check(unsafe {
                (drv.launch_kernel)(
                    func.cast_mut(),
                    grid.x,
                    grid.y,
                    grid.z,
                    block.x,
                    block.y,
                    block.z,
                    shared_mem as c_uint,
                    stream.cast(),
                    args,
                    std::ptr::null_mut(),
                )
            })
        },
    )
}

#[no_mangle]
pub extern "C" fn cudaGraphLaunch(exec: cudaGraphExec_t, stream: cudaStream_t) -> cudaError_t {
    let p = cudaGraphLaunch_v10000_params {
        graphExec: exec,
        stream,
    };
    api(
        cb::CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
        c"cudaGraphLaunch",
        Some(&p),
        None,
        |drv| {
            context::ensure(drv)?;
            // SAFETY: the driver checks the handles.
            check(unsafe { (drv.graph_launch)(exec.cast(), stream.cast()) })
        },
    )
}
