//! A loaded CUPTI library: its function table, version and record layouts.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cupti_sys::records::Release;
use cupti_sys::CuptiFns;

use crate::error::CuptiError;
use crate::version::{release_for_api_version, release_name_of, ApiVersion};

/// The functions without which tracing cannot work at all. Everything else in the
/// table is optional and checked where it is used.
const REQUIRED: &[&str] = &[
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiGetTimestamp",
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiEnableDomain",
    "cuptiEnableCallback",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords",
];

/// A CUPTI library that passed every check: loaded, exports what tracing needs,
/// answers a version whose record layouts this build has.
pub struct Cupti {
    /// Kept loaded for the life of the process: CUPTI is never unloaded, function
    /// pointers from [`Cupti::fns`] stay valid.
    _lib: &'static libloading::Library,
    path: PathBuf,
    fns: CuptiFns,
    api_version: ApiVersion,
    release: &'static Release,
}

impl std::fmt::Debug for Cupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cupti")
            .field("path", &self.path)
            .field("api_version", &self.api_version)
            .field("release", &self.release.name)
            .finish()
    }
}

impl Cupti {
    /// Loads `path` (a file path, or a bare soname searched on the loader path) and
    /// checks it. `driver_version` is `cuDriverGetVersion`'s answer when known: a
    /// CUPTI newer than the driver's CUDA major cannot work and is rejected.
    pub fn open(path: &OsStr, driver_version: Option<i32>) -> Result<Cupti, String> {
        check_before_loading(path)?;
        // Before loading it: CUPTI 13.2 with a CUDA 12 driver crashes in its first call.
        if let (Some(drv), Some(major)) = (driver_version, crate::soname::cupti_cuda_major(path)) {
            if drv > 0 && major > (drv / 1000) as u32 {
                return Err(format!(
                    "not loaded: a CUPTI for CUDA {major} (libcupti.so.{major}) needs a CUDA \
                     {major} driver; the loaded driver supports CUDA {}.{}",
                    drv / 1000,
                    (drv % 1000) / 10
                ));
            }
        }
        // SAFETY: loading a shared library runs its initialisers. libcupti's are
        // NVIDIA's own and safe to run in any process that may use CUDA.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load: {}", dl_error(&e)))?;
        // Never dlclose CUPTI (it may have registered exit handlers and callbacks):
        // leak the handle, also when rejected below.
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: `lib` is a library named libcupti*, whose exported functions have
        // the prototypes of NVIDIA's CUPTI headers; it is never unloaded.
        let fns = unsafe { CuptiFns::load(lib) };
        let get_version = fns
            .cuptiGetVersion
            .ok_or("does not export cuptiGetVersion (not a CUPTI library?)")?;
        let missing = missing_required(&fns);
        if !missing.is_empty() {
            return Err(format!(
                "missing required functions: {}",
                missing.join(", ")
            ));
        }
        // CUPTI 13.3+ answers CUPTI_ERROR_UNKNOWN without a driver, and 13.2 recurses
        // until the stack overflows: never ask without libcuda.so.1 in the process.
        if !driver_loaded() {
            return Err("not asked for its version: no CUDA driver (libcuda.so.1) is loaded in this process, \
                        and CUPTI 13.2+ cannot answer without one"
                .into());
        }
        let mut v: u32 = 0;
        // SAFETY: cuptiGetVersion writes one u32 through the pointer it is given.
        let rc = unsafe { get_version(&mut v) };
        CuptiError::check(rc).map_err(|e| format!("cuptiGetVersion failed: {e}"))?;
        let api_version = ApiVersion(v);
        let release = release_for_api_version(api_version).ok_or_else(|| {
            format!(
                "CUPTI {} is not a release this gpuprof has record layouts for (supported: {})",
                release_name_of(api_version),
                supported_releases()
            )
        })?;
        if let (Some(drv), Some((major, _))) = (driver_version, api_version.major_minor()) {
            let drv_major = (drv / 1000) as u32;
            if drv > 0 && major > drv_major {
                return Err(format!(
                    "CUPTI {} needs a CUDA {major} driver; the loaded driver supports CUDA {}.{}",
                    release_name_of(api_version),
                    drv / 1000,
                    (drv % 1000) / 10
                ));
            }
        }
        Ok(Cupti {
            _lib: lib,
            path: resolved_path(path, get_version as *const core::ffi::c_void),
            fns,
            api_version,
            release,
        })
    }

    /// The function table. Optional entries are `None` where this release lacks them.
    pub fn fns(&self) -> &CuptiFns {
        &self.fns
    }

    /// Where the library was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `cuptiGetVersion` answered.
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }

    /// The release whose record layouts apply.
    pub fn release(&self) -> &'static Release {
        self.release
    }

    /// `cuptiGetResultString` for `code`, or the symbolic name this build knows.
    pub fn result_string(&self, code: u32) -> String {
        if let Some(f) = self.fns.cuptiGetResultString {
            let mut s: *const core::ffi::c_char = core::ptr::null();
            // SAFETY: cuptiGetResultString stores a pointer to a static string.
            let rc = unsafe { f(code, &mut s) };
            if rc == 0 && !s.is_null() {
                // SAFETY: CUPTI returns a NUL-terminated static string.
                return unsafe { core::ffi::CStr::from_ptr(s) }
                    .to_string_lossy()
                    .into_owned();
            }
        }
        CuptiError(code).to_string()
    }
}

fn missing_required(fns: &CuptiFns) -> Vec<&'static str> {
    let present: [(&str, bool); 13] = [
        ("cuptiGetVersion", fns.cuptiGetVersion.is_some()),
        ("cuptiGetResultString", fns.cuptiGetResultString.is_some()),
        ("cuptiGetTimestamp", fns.cuptiGetTimestamp.is_some()),
        ("cuptiSubscribe", fns.cuptiSubscribe.is_some()),
        ("cuptiUnsubscribe", fns.cuptiUnsubscribe.is_some()),
        ("cuptiEnableDomain", fns.cuptiEnableDomain.is_some()),
        ("cuptiEnableCallback", fns.cuptiEnableCallback.is_some()),
        ("cuptiActivityEnable", fns.cuptiActivityEnable.is_some()),
        ("cuptiActivityDisable", fns.cuptiActivityDisable.is_some()),
        (
            "cuptiActivityRegisterCallbacks",
            fns.cuptiActivityRegisterCallbacks.is_some(),
        ),
        ("cuptiActivityFlushAll", fns.cuptiActivityFlushAll.is_some()),
        (
            "cuptiActivityGetNextRecord",
            fns.cuptiActivityGetNextRecord.is_some(),
        ),
        (
            "cuptiActivityGetNumDroppedRecords",
            fns.cuptiActivityGetNumDroppedRecords.is_some(),
        ),
    ];
    debug_assert!(present.iter().map(|p| p.0).eq(REQUIRED.iter().copied()));
    present.iter().filter(|p| !p.1).map(|p| p.0).collect()
}

/// The functions tracing cannot do without.
pub fn required_functions() -> &'static [&'static str] {
    REQUIRED
}

fn supported_releases() -> String {
    cupti_sys::records::RELEASES
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The file the loader loaded `requested` from: as given when it is a path, else the
/// file that defines `symbol` (the loader's own answer, through `dladdr`).
fn resolved_path(requested: &OsStr, symbol: *const core::ffi::c_void) -> PathBuf {
    let p = Path::new(requested);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address and fills `info`.
    let rc = unsafe { libc::dladdr(symbol, info.as_mut_ptr()) };
    if rc == 0 {
        return p.to_path_buf();
    }
    // SAFETY: dladdr succeeded, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return p.to_path_buf();
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { core::ffi::CStr::from_ptr(info.dli_fname) };
    PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()))
}

/// For a library named by a path (not a bare name the loader searches for): that it
/// is a whole shared object ([`crate::check_shared_object`]), so that `dlopen` of a
/// truncated file is a message, not SIGBUS in the loader. A path that names nothing
/// is left to `dlopen`, whose message says so.
pub(crate) fn check_before_loading(path: &OsStr) -> Result<(), String> {
    if !path.as_bytes().contains(&b'/') || std::fs::metadata(path).is_err() {
        return Ok(());
    }
    crate::elf_check::check_shared_object(Path::new(path)).map_err(|e| format!("not loaded: {e}"))
}

/// The loader's message for a failed dlopen (libloading keeps it in the source).
fn dl_error(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(src) => src.to_string(),
        None => e.to_string(),
    }
}

/// Whether libcuda.so.1 is loaded in this process.
pub fn driver_loaded() -> bool {
    // SAFETY: with RTLD_NOLOAD, dlopen only looks up an already-loaded library and
    // runs no initialisers.
    unsafe {
        libloading::os::unix::Library::open(
            Some("libcuda.so.1"),
            libloading::os::unix::RTLD_NOW | libc::RTLD_NOLOAD,
        )
    }
    .is_ok()
}

/// `cuDriverGetVersion` from the CUDA driver. With `load_if_absent` false, only a
/// driver the process has already loaded is asked (inside an application we never
/// load the driver ourselves); with true, `libcuda.so.1` is loaded from the loader path.
pub fn driver_version(load_if_absent: bool) -> Result<(i32, PathBuf), String> {
    let flags = libloading::os::unix::RTLD_NOW | if load_if_absent { 0 } else { libc::RTLD_NOLOAD };
    // SAFETY: libcuda.so.1 is NVIDIA's driver library (or one already in the process);
    // loading it runs its initialisers, which do not touch the GPU before cuInit.
    let lib = unsafe { libloading::os::unix::Library::open(Some("libcuda.so.1"), flags) }.map_err(
        |e| {
            if load_if_absent {
                format!("cannot load libcuda.so.1: {}", dl_error(&e))
            } else {
                "libcuda.so.1 is not loaded".into()
            }
        },
    )?;
    let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
    // SAFETY: cuDriverGetVersion has this prototype in every CUDA release.
    let f = unsafe { lib.get::<unsafe extern "C" fn(*mut i32) -> u32>(b"cuDriverGetVersion\0") }
        .map_err(|e| format!("libcuda.so.1 has no cuDriverGetVersion: {e}"))?;
    let mut v = 0i32;
    // SAFETY: cuDriverGetVersion writes one int; it may be called before cuInit.
    let rc = unsafe { f(&mut v) };
    if rc != 0 {
        return Err(format!("cuDriverGetVersion failed with CUresult {rc}"));
    }
    Ok((
        v,
        resolved_path(OsStr::new("libcuda.so.1"), *f as *const core::ffi::c_void),
    ))
}

/// `cuInit(0)` and `cuDeviceGetCount` of the driver already loaded in the process
/// (by [`driver_version`]): the number of GPUs. For tools outside the application
/// (`gpuprof doctor`); the injected library never initialises the driver itself.
pub fn driver_init() -> Result<u32, String> {
    // SAFETY: only finds the libcuda.so.1 this process already loaded.
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some("libcuda.so.1"),
            libloading::os::unix::RTLD_NOW | libc::RTLD_NOLOAD,
        )
    }
    .map_err(|e| format!("libcuda.so.1 is not loaded: {e}"))?;
    // SAFETY: cuInit and cuDeviceGetCount have these prototypes in every CUDA release.
    let (init, count) = unsafe {
        (
            lib.get::<unsafe extern "C" fn(core::ffi::c_uint) -> core::ffi::c_int>(b"cuInit\0"),
            lib.get::<unsafe extern "C" fn(*mut core::ffi::c_int) -> core::ffi::c_int>(
                b"cuDeviceGetCount\0",
            ),
        )
    };
    let (init, count) = match (init, count) {
        (Ok(i), Ok(c)) => (i, c),
        _ => return Err("the CUDA driver lacks cuInit or cuDeviceGetCount".into()),
    };
    // SAFETY: plain call; 0 is the only documented flag value.
    let rc = unsafe { init(0) };
    if rc != 0 {
        return Err(format!("cuInit failed (CUresult {rc})"));
    }
    let mut n: core::ffi::c_int = 0;
    // SAFETY: `n` is valid for writing.
    let rc = unsafe { count(&mut n) };
    if rc != 0 {
        return Err(format!("cuDeviceGetCount failed (CUresult {rc})"));
    }
    std::mem::forget(lib);
    Ok(n.max(0) as u32)
}
