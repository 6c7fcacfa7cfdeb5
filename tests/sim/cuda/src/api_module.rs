//! Modules (`cuModuleLoadData`, `cuModuleLoadDataEx`, `cuModuleUnload`,
//! `cuModuleGetFunction`), context-independent libraries (`cuLibraryLoadData`,
//! `cuLibraryUnload`, `cuLibraryGetKernel`, `cuKernelGetFunction`) and function
//! attributes (`cuFuncGetAttribute`, `cuFuncSetAttribute`, `cuFuncSetCacheConfig`).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Arc;

use cupti_sys::CUpti_CallbackIdResource::*;
use cupti_sys::CUpti_ModuleResourceData;

use crate::consts::func_attr::*;
use crate::consts::*;
use crate::ffi::{code, out};
use crate::image::{self, KernelInfo};
use crate::registry::{self, Driver, Function, Kernel, Library, Module};
use crate::trace::resource;

/// Dynamic shared memory a kernel may use without opting in (48 KiB).
const DEFAULT_MAX_DYNAMIC_SHARED: u32 = 48 * 1024;
/// The most shared memory a block may opt in to (227 KiB on H100).
const MAX_SHARED_OPTIN: u32 = 227 * 1024;

/// Reads an image: its bytes and kernels, or `CUDA_ERROR_INVALID_IMAGE`.
///
/// # Safety
/// `image` is NULL, NUL-terminated text, or an ELF image.
unsafe fn read_image(image: *const c_void) -> Result<(Arc<Vec<u8>>, Vec<KernelInfo>), CUresult> {
    if image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: per this function's contract.
    let len = unsafe { image::image_len(image.cast()) };
    // SAFETY: `image_len` measured the image.
    let bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), len) }.to_vec();
    let kernels = image::parse(&bytes).ok_or(CUDA_ERROR_INVALID_IMAGE)?;
    Ok((Arc::new(bytes), kernels))
}

/// Loads kernels into context `ctx` as a new module; returns its handle and id.
fn load_module(
    d: &mut Driver,
    ctx: usize,
    image: Arc<Vec<u8>>,
    kernels: &[Arc<KernelInfo>],
    library: Option<usize>,
) -> usize {
    let h = d.new_handle();
    let id = d.new_module_id();
    let functions = kernels
        .iter()
        .map(|k| {
            let f = d.new_handle();
            d.functions.insert(
                f,
                Function {
                    ctx,
                    kernel: k.clone(),
                    max_dynamic_shared: (DEFAULT_MAX_DYNAMIC_SHARED.saturating_sub(k.static_shared))
                        as i32,
                    carveout: -1,
                    cache_config: 0,
                },
            );
            f
        })
        .collect();
    d.modules.insert(
        h,
        Module {
            id,
            ctx,
            functions,
            image,
            library,
        },
    );
    h
}

/// Reports `MODULE_LOADED` / `MODULE_UNLOAD_STARTING` for module `m`.
fn report_module(cbid: u32, m: usize) {
    let (ctx, mut data) = {
        let d = registry::lock();
        let Some(module) = d.modules.get(&m) else {
            return;
        };
        (
            module.ctx,
            CUpti_ModuleResourceData {
                moduleId: module.id,
                cubinSize: module.image.len(),
                pCubin: module.image.as_ptr().cast(),
            },
        )
    };
    // The image stays alive: the module holds it until removed after this call.
    resource(cbid, ctx, 0, std::ptr::from_mut(&mut data).cast());
}

/// # Safety
/// As `read_image`; `module` is NULL or writable.
unsafe fn module_load(module: *mut CUmodule, image: *const c_void) -> Result<(), CUresult> {
    if module.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    registry::lock().current()?;
    // SAFETY: per this function's contract.
    let (bytes, kernels) = unsafe { read_image(image)? };
    let kernels: Vec<_> = kernels.into_iter().map(Arc::new).collect();
    let m = {
        let mut d = registry::lock();
        let ctx = d.current()?;
        load_module(&mut d, ctx, bytes, &kernels, None)
    };
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out(module, m as CUmodule)? };
    report_module(CUPTI_CBID_RESOURCE_MODULE_LOADED, m);
    Ok(())
}

/// `CUresult cuModuleLoadData(CUmodule *module, const void *image)`: PTX text or a
/// cubin / fatbin ELF image.
///
/// # Safety
/// `module` is NULL or writable; `image` is NULL or a NUL-terminated PTX or ELF image.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) -> CUresult {
    let p = cupti_sys::cuModuleLoadData_params { module, image };
    // SAFETY: per this function's contract.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
        c"cuModuleLoadData",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { module_load(module, image) })
    )
}

/// `CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int
/// numOptions, CUjit_option *options, void **optionValues)`: JIT options are accepted
/// and ignored.
///
/// # Safety
/// As `cuModuleLoadData`.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut CUmodule,
    image: *const c_void,
    num_options: c_uint,
    options: *mut c_uint,
    option_values: *mut *mut c_void,
) -> CUresult {
    let p = cupti_sys::cuModuleLoadDataEx_params {
        module,
        image,
        numOptions: num_options,
        options: options.cast(),
        optionValues: option_values,
    };
    // SAFETY: per this function's contract.
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
        c"cuModuleLoadDataEx",
        p,
        // SAFETY: the caller's pointers are as this function's contract requires.
        code(unsafe { module_load(module, image) })
    )
}

/// Reports the unload of module `m`, then removes it and its functions.
fn unload(m: usize) {
    report_module(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, m);
    let mut d = registry::lock();
    if let Some(module) = d.modules.remove(&m) {
        for f in module.functions {
            d.functions.remove(&f);
        }
    }
}

/// `CUresult cuModuleUnload(CUmodule hmod)`.
#[no_mangle]
pub extern "C" fn cuModuleUnload(hmod: CUmodule) -> CUresult {
    let p = cupti_sys::cuModuleUnload_params { hmod };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuModuleUnload,
        c"cuModuleUnload",
        p,
        {
            let m = hmod as usize;
            match registry::lock().modules.get(&m) {
                Some(module) if module.library.is_none() => {}
                _ => return CUDA_ERROR_INVALID_HANDLE,
            }
            unload(m);
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)`:
/// an unknown name is `CUDA_ERROR_NOT_FOUND`.
///
/// # Safety
/// `hfunc` is NULL or writable; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut CUfunction,
    hmod: CUmodule,
    name: *const c_char,
) -> CUresult {
    let p = cupti_sys::cuModuleGetFunction_params { hfunc, hmod, name };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,
        c"cuModuleGetFunction",
        p,
        code((|| {
            if hfunc.is_null() || name.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: non-NULL and NUL-terminated per this function's contract.
            let name = unsafe { CStr::from_ptr(name) };
            let d = registry::lock();
            let m = d
                .modules
                .get(&(hmod as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            let f = m
                .functions
                .iter()
                .find(|f| d.functions[f].kernel.name.as_c_str() == name)
                .ok_or(CUDA_ERROR_NOT_FOUND)?;
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(hfunc, *f as CUfunction) }
        })())
    )
}

/// `CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option
/// *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption
/// *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)`.
/// Context-independent: each context gets a module of it when a kernel is first used
/// there (`cuKernelGetFunction`, or a launch of the `CUkernel`). Options are ignored.
///
/// # Safety
/// `library` is NULL or writable; `code` is NULL or a PTX / ELF image.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut CUlibrary,
    code_: *const c_void,
    jit_options: *mut c_uint,
    jit_values: *mut *mut c_void,
    num_jit: c_uint,
    lib_options: *mut c_uint,
    lib_values: *mut *mut c_void,
    num_lib: c_uint,
) -> CUresult {
    let p = cupti_sys::cuLibraryLoadData_params {
        library,
        code: code_,
        jitOptions: jit_options.cast(),
        jitOptionsValues: jit_values,
        numJitOptions: num_jit,
        libraryOptions: lib_options.cast(),
        libraryOptionValues: lib_values,
        numLibraryOptions: num_lib,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData,
        c"cuLibraryLoadData",
        p,
        code((|| {
            if library.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: per this function's contract.
            let (image, kernels) = unsafe { read_image(code_)? };
            let mut d = registry::lock();
            let h = d.new_handle();
            let kernel_handles = (0..kernels.len())
                .map(|index| {
                    let k = d.new_handle();
                    d.kernels.insert(k, Kernel { library: h, index });
                    k
                })
                .collect();
            d.libraries.insert(
                h,
                Library {
                    image,
                    kernels: kernels.into_iter().map(Arc::new).collect(),
                    kernel_handles,
                    modules: Default::default(),
                },
            );
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(library, h as CUlibrary) }
        })())
    )
}

/// `CUresult cuLibraryUnload(CUlibrary library)`: unloads its modules in every context.
#[no_mangle]
pub extern "C" fn cuLibraryUnload(library: CUlibrary) -> CUresult {
    let p = cupti_sys::cuLibraryUnload_params { library };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload,
        c"cuLibraryUnload",
        p,
        {
            let Some(lib) = registry::lock().libraries.remove(&(library as usize)) else {
                return CUDA_ERROR_INVALID_HANDLE;
            };
            for m in lib.modules.values() {
                unload(*m);
            }
            let mut d = registry::lock();
            for k in lib.kernel_handles {
                d.kernels.remove(&k);
            }
            CUDA_SUCCESS
        }
    )
}

/// `CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)`.
///
/// # Safety
/// `p_kernel` is NULL or writable; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    p_kernel: *mut CUkernel,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    let p = cupti_sys::cuLibraryGetKernel_params {
        pKernel: p_kernel,
        library,
        name,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
        c"cuLibraryGetKernel",
        p,
        code((|| {
            if p_kernel.is_null() || name.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: non-NULL and NUL-terminated per this function's contract.
            let name = unsafe { CStr::from_ptr(name) };
            let d = registry::lock();
            let lib = d
                .libraries
                .get(&(library as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            let i = lib
                .kernels
                .iter()
                .position(|k| k.name.as_c_str() == name)
                .ok_or(CUDA_ERROR_NOT_FOUND)?;
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(p_kernel, lib.kernel_handles[i] as CUkernel) }
        })())
    )
}

/// The function of kernel handle `k` in the current context, loading the library's
/// module there first if needed. Returns the function and, when a module was loaded,
/// its handle (to report `MODULE_LOADED` after unlocking).
pub(crate) fn kernel_function(
    d: &mut Driver,
    k: usize,
) -> Result<(usize, Option<usize>), CUresult> {
    let kernel = d.kernels.get(&k).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
    let (lib_h, index) = (kernel.library, kernel.index);
    let ctx = d.current()?;
    let lib = &d.libraries[&lib_h];
    if let Some(m) = lib.modules.get(&ctx) {
        return Ok((d.modules[m].functions[index], None));
    }
    let (image, kernels) = (lib.image.clone(), lib.kernels.clone());
    let m = load_module(d, ctx, image, &kernels, Some(lib_h));
    d.libraries
        .get_mut(&lib_h)
        .expect("live")
        .modules
        .insert(ctx, m);
    Ok((d.modules[&m].functions[index], Some(m)))
}

/// Reports `MODULE_LOADED` for a module `kernel_function` loaded.
pub(crate) fn report_loaded(m: Option<usize>) {
    if let Some(m) = m {
        report_module(CUPTI_CBID_RESOURCE_MODULE_LOADED, m);
    }
}

/// `CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)`: the kernel's
/// function in the current context.
///
/// # Safety
/// `p_func` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(
    p_func: *mut CUfunction,
    kernel: CUkernel,
) -> CUresult {
    let p = cupti_sys::cuKernelGetFunction_params {
        pFunc: p_func,
        kernel,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
        c"cuKernelGetFunction",
        p,
        code((|| {
            if p_func.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let (f, loaded) = kernel_function(&mut registry::lock(), kernel as usize)?;
            report_loaded(loaded);
            // SAFETY: non-NULL and writable per this function's contract.
            unsafe { out(p_func, f as CUfunction) }
        })())
    )
}

/// Maximum threads per block of a kernel using `registers` per thread: 65536
/// registers per SM, allocated per warp in units of 256 (8 per thread), capped at 1024.
pub(crate) fn max_threads(registers: u32) -> i32 {
    let per_thread = registers.max(1).div_ceil(8) * 8;
    let warps = 65536 / (per_thread * 32);
    (warps * 32).min(1024) as i32
}

/// `CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)`.
///
/// # Safety
/// `pi` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    hfunc: CUfunction,
) -> CUresult {
    let p = cupti_sys::cuFuncGetAttribute_params {
        pi,
        attrib: attrib as _,
        hfunc,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
        c"cuFuncGetAttribute",
        p,
        code((|| {
            let d = registry::lock();
            let f = d
                .functions
                .get(&(hfunc as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            let (cc_major, cc_minor) = {
                let c = &crate::config::get().device;
                (c.cc_major, c.cc_minor)
            };
            let v = match attrib {
                MAX_THREADS_PER_BLOCK => max_threads(f.kernel.registers),
                SHARED_SIZE_BYTES => f.kernel.static_shared as i32,
                CONST_SIZE_BYTES | LOCAL_SIZE_BYTES | CACHE_MODE_CA => 0,
                NUM_REGS => f.kernel.registers as i32,
                PTX_VERSION | BINARY_VERSION => cc_major * 10 + cc_minor,
                MAX_DYNAMIC_SHARED_SIZE_BYTES => f.max_dynamic_shared,
                PREFERRED_SHARED_MEMORY_CARVEOUT => f.carveout,
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            };
            // SAFETY: the caller's pointer is NULL or writable.
            unsafe { out(pi, v) }
        })())
    )
}

/// `CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int
/// value)`: `MAX_DYNAMIC_SHARED_SIZE_BYTES` (up to the opt-in limit less static shared
/// memory) and `PREFERRED_SHARED_MEMORY_CARVEOUT` (-1 or 0..=100).
#[no_mangle]
pub extern "C" fn cuFuncSetAttribute(hfunc: CUfunction, attrib: c_int, value: c_int) -> CUresult {
    let p = cupti_sys::cuFuncSetAttribute_params {
        hfunc,
        attrib: attrib as _,
        value,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute,
        c"cuFuncSetAttribute",
        p,
        code((|| {
            let mut d = registry::lock();
            let f = d
                .functions
                .get_mut(&(hfunc as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            match attrib {
                MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                    let limit = MAX_SHARED_OPTIN.saturating_sub(f.kernel.static_shared) as i32;
                    if !(0..=limit).contains(&value) {
                        return Err(CUDA_ERROR_INVALID_VALUE);
                    }
                    f.max_dynamic_shared = value;
                }
                PREFERRED_SHARED_MEMORY_CARVEOUT if (-1..=100).contains(&value) => {
                    f.carveout = value
                }
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            }
            Ok(())
        })())
    )
}

/// `CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)`.
#[no_mangle]
pub extern "C" fn cuFuncSetCacheConfig(hfunc: CUfunction, config: c_uint) -> CUresult {
    let p = cupti_sys::cuFuncSetCacheConfig_params {
        hfunc,
        config: config as _,
    };
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuFuncSetCacheConfig,
        c"cuFuncSetCacheConfig",
        p,
        code((|| {
            if config > 3 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            let mut d = registry::lock();
            let f = d
                .functions
                .get_mut(&(hfunc as usize))
                .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            f.cache_config = config;
            Ok(())
        })())
    )
}
