//! NVIDIA's perf libraries beside a libcupti, and a libcupti loaded only for its
//! Profiler Host API.
//!
//! libcupti loads `libnvperf_host.so` (and for the target side
//! `libnvperf_target.so`) by bare name. Without the directory on the loader path,
//! NVIDIA's 12.9 library answers `cuptiProfilerHostInitialize` with
//! `CUPTI_ERROR_NOT_INITIALIZED`; with `libnvperf_host.so` from its own directory
//! already loaded (`RTLD_GLOBAL`, the soname is `libnvperf_host.so`) it succeeds
//! (`tests/tests/it/cupti/profiler_host_real.rs`). So gpuprof loads them from the chosen
//! libcupti's directory first, and a user never has to set `LD_LIBRARY_PATH` for
//! counters.

use std::ffi::OsStr;
use std::path::Path;

use cupti_sys::CuptiFns;

/// Loads (`RTLD_NOW | RTLD_GLOBAL`) the nvperf libraries found beside `cupti`, so
/// libcupti's own by-name loads find them. Missing files are skipped; returns the
/// ones loaded. They are never unloaded.
pub fn preload_perf_libraries(cupti: &Path) -> Vec<String> {
    let Some(dir) = cupti.parent() else {
        return Vec::new();
    };
    let mut loaded = Vec::new();
    for name in ["libnvperf_host.so", "libnvperf_target.so"] {
        let path = dir.join(name);
        if !path.is_file() || crate::library::check_before_loading(path.as_os_str()).is_err() {
            // A file that is not a whole library is not loaded; libcupti then says
            // what it misses.
            continue;
        }
        // SAFETY: NVIDIA's perf library from the same installation as the libcupti
        // that would load it anyway; its initialisers are safe to run in any process
        // that uses CUPTI.
        let lib = unsafe {
            libloading::os::unix::Library::open(
                Some(&path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        };
        if let Ok(lib) = lib {
            std::mem::forget(lib);
            loaded.push(name.to_string());
        }
    }
    loaded
}

/// Loads the libcupti at `path` for its Profiler Host API only: the function table,
/// with the nvperf libraries beside it preloaded. Its version is not asked (13.2+
/// cannot answer without a driver). The Host API works without a driver in CUPTI
/// 12.6-13.1; 13.2 and later need one (13.3+ answer `CUPTI_ERROR_UNKNOWN`).
/// The library is never unloaded.
pub fn open_host_api(path: &OsStr) -> Result<&'static CuptiFns, String> {
    crate::library::check_before_loading(path)
        .map_err(|e| format!("{}: {e}", Path::new(path).display()))?;
    preload_perf_libraries(Path::new(path));
    // SAFETY: loading a libcupti runs NVIDIA's initialisers, safe in any process.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
        let msg = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
        format!("cannot load {}: {msg}", Path::new(path).display())
    })?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: a library named by the user as libcupti, whose exports have the
    // prototypes of NVIDIA's CUPTI headers; it is never unloaded.
    let fns = unsafe { CuptiFns::load(lib) };
    if fns.cuptiProfilerHostInitialize.is_none() {
        return Err(format!(
            "{} does not export cuptiProfilerHostInitialize (CUPTI 12.6 or later has it)",
            Path::new(path).display()
        ));
    }
    Ok(Box::leak(Box::new(fns)))
}
