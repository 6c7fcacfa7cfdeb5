//! What the workload does through the CUDA runtime API (cudarc's `runtime` bindings,
//! `libcudart.so`), as a PyTorch program does: its own kernels loaded with
//! `cudaLibraryLoadData` and launched with `cudaLaunchKernel`, and each decode step's
//! token read back with `cudaMemcpyAsync` and `cudaStreamSynchronize`. cuBLAS and
//! cuBLASLt, and everything cudarc's safe API does, stay on the driver API.

use std::ffi::{c_void, CString};

use anyhow::{bail, Context, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use cudarc::runtime::sys as rt;
use half::bf16;

/// The workload's kernels, loaded through the runtime.
pub struct Kernels {
    kernels: Vec<(&'static str, rt::cudaKernel_t)>,
}

fn check(r: rt::cudaError_t, what: &str) -> Result<()> {
    if r != rt::cudaError_t::cudaSuccess {
        bail!("{what}: {r:?}");
    }
    Ok(())
}

fn runtime_stream(stream: &CudaStream) -> rt::cudaStream_t {
    stream.cu_stream() as rt::cudaStream_t
}

impl Kernels {
    /// Loads `ptx` and looks up each of `names`.
    pub fn load(ptx: &str, names: &[&'static str]) -> Result<Kernels> {
        // SAFETY: only asks whether libcudart can be loaded.
        if !unsafe { rt::is_culib_present() } {
            bail!("libcudart.so not found on the loader path");
        }
        let code = CString::new(ptx).context("PTX with a NUL byte")?;
        let mut lib: rt::cudaLibrary_t = std::ptr::null_mut();
        // SAFETY: `lib` is writable and `code` a NUL-terminated PTX image; no options.
        let r = unsafe {
            rt::cudaLibraryLoadData(
                &mut lib,
                code.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        check(r, "cudaLibraryLoadData")?;
        let mut kernels = Vec::new();
        for &name in names {
            let c = CString::new(name)?;
            let mut k: rt::cudaKernel_t = std::ptr::null_mut();
            // SAFETY: `k` is writable, `lib` loaded above and `c` a C string.
            let r = unsafe { rt::cudaLibraryGetKernel(&mut k, lib, c.as_ptr()) };
            check(r, &format!("cudaLibraryGetKernel {name}"))?;
            kernels.push((name, k));
        }
        Ok(Kernels { kernels })
    }

    /// Launches kernel `name` (parameters: pointer, pointer, u32) over `grid` blocks
    /// of `block` threads, with `x` as both pointers.
    pub fn launch(
        &self,
        stream: &CudaStream,
        name: &str,
        grid: u32,
        block: u32,
        x: &CudaSlice<bf16>,
        n: u32,
    ) -> Result<()> {
        let Some(&(_, kernel)) = self.kernels.iter().find(|(k, _)| *k == name) else {
            bail!("kernel {name} not loaded");
        };
        let (ptr, _sync) = x.device_ptr(stream);
        let (mut a, mut b, mut n) = (ptr, ptr, n);
        let mut args: [*mut c_void; 3] = [
            (&mut a as *mut u64).cast(),
            (&mut b as *mut u64).cast(),
            (&mut n as *mut u32).cast(),
        ];
        let dim = |x| rt::dim3 { x, y: 1, z: 1 };
        // SAFETY: the kernel takes (pointer, pointer, u32), which `args` points to;
        // `kernel` came from `cudaLibraryGetKernel`; the stream is live.
        let r = unsafe {
            rt::cudaLaunchKernel(
                kernel as *const c_void,
                dim(grid.max(1)),
                dim(block),
                args.as_mut_ptr(),
                0,
                runtime_stream(stream),
            )
        };
        check(r, &format!("cudaLaunchKernel {name}"))
    }
}

/// Copies the first element of `x` to pageable host memory and waits for it, as
/// PyTorch's `.item()` does.
pub fn read_first(stream: &CudaStream, x: &CudaSlice<bf16>) -> Result<bf16> {
    let mut host = bf16::ZERO;
    let (ptr, sync) = x.device_ptr(stream);
    // SAFETY: `host` is writable for one element; `ptr` is a live device allocation
    // of at least one element.
    let r = unsafe {
        rt::cudaMemcpyAsync(
            (&mut host as *mut bf16).cast(),
            ptr as *const c_void,
            std::mem::size_of::<bf16>(),
            rt::cudaMemcpyKind::cudaMemcpyDeviceToHost,
            runtime_stream(stream),
        )
    };
    drop(sync);
    check(r, "cudaMemcpyAsync")?;
    // SAFETY: the stream is live.
    let r = unsafe { rt::cudaStreamSynchronize(runtime_stream(stream)) };
    check(r, "cudaStreamSynchronize")?;
    Ok(host)
}
