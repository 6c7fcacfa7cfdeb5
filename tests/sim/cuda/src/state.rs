//! Driver initialisation: whether `cuInit` has succeeded, and the injection it performs
//! once per process. As NVIDIA documents for CUPTI injection, the first successful
//! `cuInit` reads `CUDA_INJECTION64_PATH`, loads that library and calls its
//! `int InitializeInjection(void)`; later `cuInit` calls do not.

use std::sync::atomic::{AtomicBool, Ordering};

static INITIALIZED: AtomicBool = AtomicBool::new(false);
static INJECTION_CLAIMED: AtomicBool = AtomicBool::new(false);

/// Whether a `cuInit` has succeeded in this process.
pub(crate) fn is_initialized() -> bool {
    INITIALIZED.load(Ordering::Acquire)
}

/// Marks the driver initialised, then performs the injection if no earlier `cuInit`
/// did. The driver counts as initialised before `InitializeInjection` runs, so the
/// injected library may call the driver (and `cuInit` again) from it.
pub(crate) fn initialize() {
    INITIALIZED.store(true, Ordering::Release);
    if !INJECTION_CLAIMED.swap(true, Ordering::AcqRel) {
        inject();
    }
}

/// Loads `$CUDA_INJECTION64_PATH` and calls its `InitializeInjection`. A library that
/// cannot be loaded, or lacks the symbol, is skipped silently (NVIDIA does not document
/// an error for this case; `cuInit` still succeeds). The return value is ignored. The
/// library stays loaded for the life of the process.
fn inject() {
    let Some(path) = std::env::var_os("CUDA_INJECTION64_PATH") else {
        return;
    };
    if path.is_empty() {
        return;
    }
    // SAFETY: loading a library runs its initialisers; loading the library named by
    // CUDA_INJECTION64_PATH into the process is exactly what the variable asks for.
    let Ok(lib) = (unsafe { libloading::Library::new(&path) }) else {
        return;
    };
    // SAFETY: NVIDIA documents the injection entry point as `int InitializeInjection(void)`.
    let entry =
        unsafe { lib.get::<unsafe extern "C" fn() -> std::ffi::c_int>(b"InitializeInjection\0") };
    if let Ok(entry) = entry {
        let entry = *entry;
        // Keep the library (and so `entry`) loaded for the life of the process.
        std::mem::forget(lib);
        // SAFETY: the symbol has the documented signature and its library stays loaded.
        let _ = unsafe { entry() };
    }
}
