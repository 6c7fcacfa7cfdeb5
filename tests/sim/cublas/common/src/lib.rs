//! Shared code of the simulated cuBLAS (`tests/sim/cublas`) and cuBLASLt
//! (`tests/sim/cublaslt`): the header values ([`consts`]), the CUDA driver as a client
//! library sees it ([`driver`]), kernel choice ([`kernels`]), and what a handle does on
//! the GPU ([`Exec`]).
//!
//! The GEMMs compute nothing: C / D are left unchanged. What the sim reproduces is what
//! a profiler sees of them: the kernels launched (names, grids, blocks, registers,
//! shared memory) on the caller's stream, each with its GEMM shape announced to the
//! simulated driver, and the API's results (status codes, descriptor attributes).

pub mod consts;
pub mod driver;
pub mod kernels;

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void, CString};
use std::panic::{catch_unwind, UnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use consts::*;
use driver::{CUcontext, CUfunction, CUmodule, CUstream, Driver, CUDA_SUCCESS};
use kernels::{Arch, Family, Problem};

/// Runs the body of an exported function; a panic becomes
/// `CUBLAS_STATUS_INTERNAL_ERROR` instead of unwinding into C.
pub fn guard(body: impl FnOnce() -> Status + UnwindSafe) -> Status {
    catch_unwind(body).unwrap_or(CUBLAS_STATUS_INTERNAL_ERROR)
}

/// Stores `value` through an out-pointer, or returns `CUBLAS_STATUS_INVALID_VALUE`
/// when it is NULL.
///
/// # Safety
/// `out` is NULL or valid for writing a `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T) -> Status {
    if out.is_null() {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { out.write(value) };
    CUBLAS_STATUS_SUCCESS
}

/// Locks a mutex, ignoring poisoning (state stays consistent: every update is a
/// single assignment).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Live opaque handles of one type. A handle is the address of its object; an address
/// not in the registry (NULL, destroyed, garbage) is never dereferenced.
pub struct Registry<T> {
    map: Mutex<BTreeMap<usize, Arc<T>>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
        Registry {
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// Registers `v`; returns its handle.
    pub fn insert(&self, v: T) -> *mut c_void {
        let a = Arc::new(v);
        let key = Arc::as_ptr(&a) as usize;
        lock(&self.map).insert(key, a);
        key as *mut c_void
    }

    /// The object of a live handle.
    pub fn get(&self, h: *const c_void) -> Option<Arc<T>> {
        lock(&self.map).get(&(h as usize)).cloned()
    }

    /// Unregisters a live handle.
    pub fn remove(&self, h: *const c_void) -> Option<Arc<T>> {
        lock(&self.map).remove(&(h as usize))
    }
}

/// `op` of a `cublasOperation_t`: `Some(transposed)`, or `None` when invalid.
pub fn op_transposed(op: c_int) -> Option<bool> {
    match op {
        CUBLAS_OP_N => Some(false),
        CUBLAS_OP_T | CUBLAS_OP_C => Some(true),
        _ => None,
    }
}

/// The argument checks `cublas<t>gemm` / `cublasGemmEx` document for
/// `CUBLAS_STATUS_INVALID_VALUE`: operations, sizes, leading dimensions. Returns
/// `(op(A) transposed, op(B) transposed)`.
#[allow(clippy::too_many_arguments)]
pub fn check_gemm_args(
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    lda: c_int,
    ldb: c_int,
    ldc: c_int,
) -> Result<(bool, bool), Status> {
    let ta = op_transposed(transa).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    let tb = op_transposed(transb).ok_or(CUBLAS_STATUS_INVALID_VALUE)?;
    if m < 0 || n < 0 || k < 0 {
        return Err(CUBLAS_STATUS_INVALID_VALUE);
    }
    let a_rows = if ta { k } else { m };
    let b_rows = if tb { n } else { k };
    if lda < a_rows.max(1) || ldb < b_rows.max(1) || ldc < m.max(1) {
        return Err(CUBLAS_STATUS_INVALID_VALUE);
    }
    Ok((ta, tb))
}

/// What a handle holds on the GPU: its context, device description and the module of
/// its kernels.
pub struct Exec {
    driver: &'static Driver,
    pub context: CUcontext,
    pub arch: Arch,
    module: Result<(CUmodule, Family), Status>,
    functions: Mutex<BTreeMap<String, usize>>,
}

// SAFETY: the context and module handles are opaque driver handles, valid from any
// thread; the function cache is behind a mutex.
unsafe impl Send for Exec {}
// SAFETY: as above.
unsafe impl Sync for Exec {}

impl Exec {
    /// Binds the calling thread's context (the primary context of device 0 when none is
    /// current, as the CUDA runtime does), reads the device's compute capability and SM
    /// count, and loads the module of kernels for it. Failures are
    /// `CUBLAS_STATUS_NOT_INITIALIZED`, as `cublasCreate` documents for a failed CUDA
    /// initialisation. On a GPU older than the sim's kernels the handle is created and
    /// each GEMM returns `CUBLAS_STATUS_ARCH_MISMATCH`.
    pub fn create() -> Result<Exec, Status> {
        let d = driver::get().ok_or(CUBLAS_STATUS_NOT_INITIALIZED)?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is writable for the call.
        let r = unsafe { (d.ctx_get_current)(&mut ctx) };
        if r != CUDA_SUCCESS || ctx.is_null() {
            // SAFETY: plain driver calls with valid out-pointers.
            let ok = unsafe {
                (d.init)(0) == CUDA_SUCCESS
                    && (d.primary_ctx_retain)(&mut ctx, 0) == CUDA_SUCCESS
                    && (d.ctx_set_current)(ctx) == CUDA_SUCCESS
            };
            if !ok || ctx.is_null() {
                return Err(CUBLAS_STATUS_NOT_INITIALIZED);
            }
        }
        let mut dev = 0;
        // SAFETY: `dev` is writable for the call.
        if unsafe { (d.ctx_get_device)(&mut dev) } != CUDA_SUCCESS {
            return Err(CUBLAS_STATUS_NOT_INITIALIZED);
        }
        let attr = |a: c_int| {
            let mut v = 0;
            // SAFETY: `v` is writable for the call.
            let r = unsafe { (d.device_get_attribute)(&mut v, a, dev) };
            (r == CUDA_SUCCESS).then_some(v)
        };
        let arch = Arch {
            major: attr(driver::ATTR_CC_MAJOR).ok_or(CUBLAS_STATUS_NOT_INITIALIZED)?,
            minor: attr(driver::ATTR_CC_MINOR).ok_or(CUBLAS_STATUS_NOT_INITIALIZED)?,
            sm_count: attr(driver::ATTR_SM_COUNT).ok_or(CUBLAS_STATUS_NOT_INITIALIZED)?,
        };
        let module = match arch.family() {
            Ok(family) => {
                let ptx = kernels::module_ptx(family);
                let mut module: CUmodule = std::ptr::null_mut();
                // SAFETY: `ptx` is NUL-terminated PTX text alive for the call.
                let r = unsafe { (d.module_load_data)(&mut module, ptx.as_ptr().cast()) };
                if r != CUDA_SUCCESS {
                    return Err(CUBLAS_STATUS_NOT_INITIALIZED);
                }
                Ok((module, family))
            }
            Err(e) => Err(e),
        };
        Ok(Exec {
            driver: d,
            context: ctx,
            arch,
            module,
            functions: Mutex::new(BTreeMap::new()),
        })
    }

    /// The kernel family of the device, or the status every GEMM returns.
    pub fn family(&self) -> Result<Family, Status> {
        self.module.map(|(_, f)| f)
    }

    fn function(&self, module: CUmodule, k: &kernels::Kernel) -> Result<CUfunction, Status> {
        let mut cache = lock(&self.functions);
        if let Some(f) = cache.get(&k.name) {
            return Ok(*f as CUfunction);
        }
        let name = CString::new(k.name.as_str()).map_err(|_| CUBLAS_STATUS_INTERNAL_ERROR)?;
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: `module` is this handle's loaded module, `name` NUL-terminated.
        let r = unsafe { (self.driver.module_get_function)(&mut f, module, name.as_ptr()) };
        if r != CUDA_SUCCESS {
            return Err(CUBLAS_STATUS_EXECUTION_FAILED);
        }
        if k.shared_mem > 48 * 1024 {
            if let Some(set) = self.driver.func_set_attribute {
                // SAFETY: `f` is a function of this handle's module. A failure shows up
                // as a failed launch.
                unsafe {
                    set(
                        f,
                        driver::FUNC_ATTR_MAX_DYNAMIC_SHARED,
                        k.shared_mem as c_int,
                    )
                };
            }
        }
        cache.insert(k.name.clone(), f as usize);
        Ok(f)
    }

    /// Launches the kernels of a GEMM on `stream`; nothing for an empty one
    /// (`m`, `n`, `k` or `batch` 0). `ptrs` are the A, B and D device pointers, passed
    /// as the kernels' parameters; `stream` is the `CUstream` (0: the NULL stream). A
    /// failed launch is `CUBLAS_STATUS_EXECUTION_FAILED`.
    pub fn run(&self, p: &Problem, stream: usize, ptrs: [u64; 3]) -> Result<(), Status> {
        let (module, family) = self.module?;
        if p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0 {
            return Ok(());
        }
        for l in kernels::plan(family, p) {
            let f = self.function(module, &l.kernel)?;
            let shape = sim_abi::GemmShape {
                m: p.m,
                n: p.n,
                k: p.k,
                batch: u64::from(l.grid[2]),
                elem_bytes: p.kind.elem_bytes(),
            };
            let mut args = ptrs;
            let mut params: [*mut c_void; 3] = [
                std::ptr::addr_of_mut!(args[0]).cast(),
                std::ptr::addr_of_mut!(args[1]).cast(),
                std::ptr::addr_of_mut!(args[2]).cast(),
            ];
            self.driver.set_thread_gemm(Some(&shape));
            let [gx, gy, gz] = l.grid;
            let [bx, by, bz] = l.kernel.block;
            // SAFETY: `f` is a function of this handle's module taking three u64
            // parameters, `params` points to them; the stream is the caller's.
            let r = unsafe {
                (self.driver.launch_kernel)(
                    f,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    l.kernel.shared_mem,
                    stream as CUstream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            self.driver.set_thread_gemm(None);
            if r != CUDA_SUCCESS {
                return Err(CUBLAS_STATUS_EXECUTION_FAILED);
            }
        }
        Ok(())
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        if let Ok((module, _)) = self.module {
            // SAFETY: the module was loaded by this handle and is unloaded once.
            unsafe { (self.driver.module_unload)(module) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_argument_checks() {
        assert_eq!(check_gemm_args(1, 0, 4, 5, 6, 6, 6, 4), Ok((true, false)));
        assert_eq!(
            check_gemm_args(0, 0, 4, 5, 6, 3, 6, 4),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        assert_eq!(
            check_gemm_args(0, 1, 4, 5, 6, 4, 4, 4),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        assert_eq!(
            check_gemm_args(0, 0, 4, 5, 6, 4, 6, 3),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        assert_eq!(
            check_gemm_args(3, 0, 4, 5, 6, 6, 6, 4),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        assert_eq!(
            check_gemm_args(0, 0, -1, 5, 6, 6, 6, 4),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        // lda >= max(1, rows): 0 is never valid, even for an empty matrix.
        assert_eq!(
            check_gemm_args(0, 0, 0, 0, 0, 0, 1, 1),
            Err(CUBLAS_STATUS_INVALID_VALUE)
        );
        assert_eq!(check_gemm_args(0, 0, 0, 0, 0, 1, 1, 1), Ok((false, false)));
    }

    #[test]
    fn registry_only_knows_live_handles() {
        let r = Registry::new();
        let h = r.insert(5u32);
        assert_eq!(r.get(h).as_deref(), Some(&5));
        assert!(r.get(std::ptr::null()).is_none());
        assert!(r.remove(h).is_some());
        assert!(r.get(h).is_none());
    }
}
