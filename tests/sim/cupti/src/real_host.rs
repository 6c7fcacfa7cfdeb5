//! NVIDIA's real Profiler Host API, which the sim's host API asks what only NVIDIA's
//! library knows: which chips a release supports, which metrics it accepts on a chip
//! for each profiler type (derived metrics included), and how many passes a config
//! needs. So the sim answers those as NVIDIA's library does, by construction.
//!
//! The library is the `libcupti.so` named by [`HOST_LIBRARY_ENV`]: NVIDIA's CUPTI of
//! 12.6, 12.8, 12.9, 13.0 or 13.1, whose host API runs without a driver (13.2 and
//! later need one). Whoever starts the sim picks it: the release the sim impersonates
//! where that is one of those, else 13.1, the newest that runs offline
//! (`gpuprof_tests::SimCommand::cupti`, `gpuprof demo --sim`). It is loaded once per
//! process, `RTLD_LOCAL | RTLD_DEEPBIND` so that its calls to its own exports bind to
//! itself and not to the sim's `libcupti` of the same names, after the
//! `libnvperf_host.so` beside it (`RTLD_GLOBAL`: NVIDIA's libcupti loads it by that
//! name). Without the variable, or when the library does not load, every host API
//! call answers `CUPTI_ERROR_NOT_INITIALIZED` and the reason is printed once.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use cupti_sys::CUptiResult::{self, *};
use cupti_sys::*;

type R = CUptiResult::Type;

/// The path of NVIDIA's `libcupti.so` the host API answers from.
pub const HOST_LIBRARY_ENV: &str = "SIMCUPTI_HOST_LIBRARY";

// The params structs' sizes in 12.6-13.1 (the first release that has them; 13.2
// grew Initialize's to 56, which those releases refuse).
const INITIALIZE_SIZE: usize = 48;
const DEINITIALIZE_SIZE: usize = 24;
const GET_SUPPORTED_CHIPS_SIZE: usize = 32;
const ADD_METRICS_SIZE: usize = 40;
const CONFIG_IMAGE_SIZE_SIZE: usize = 32;
const CONFIG_IMAGE_SIZE: usize = 40;
const NUM_OF_PASSES_SIZE: usize = 40;

type Call<T> = unsafe extern "C" fn(*mut T) -> R;

/// The real library's host API.
struct Real {
    /// Kept loaded for the process's life.
    _lib: libloading::os::unix::Library,
    initialize: Call<CUpti_Profiler_Host_Initialize_Params>,
    deinitialize: Call<CUpti_Profiler_Host_Deinitialize_Params>,
    supported_chips: Call<CUpti_Profiler_Host_GetSupportedChips_Params>,
    add_metrics: Call<CUpti_Profiler_Host_ConfigAddMetrics_Params>,
    config_image_size: Call<CUpti_Profiler_Host_GetConfigImageSize_Params>,
    config_image: Call<CUpti_Profiler_Host_GetConfigImage_Params>,
    num_of_passes: Call<CUpti_Profiler_Host_GetNumOfPasses_Params>,
}

static REAL: OnceLock<Option<Real>> = OnceLock::new();

/// The real host API, loaded on first use; `None` (said once on stderr) without it.
fn real() -> Result<&'static Real, R> {
    REAL.get_or_init(|| match load() {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!(
                "simcupti: the Profiler Host API answers from NVIDIA's libcupti 12.6-13.1 \
                 ({HOST_LIBRARY_ENV}): {e}; every host call answers CUPTI_ERROR_NOT_INITIALIZED"
            );
            None
        }
    })
    .as_ref()
    .ok_or(CUPTI_ERROR_NOT_INITIALIZED)
}

fn load() -> Result<Real, String> {
    let path: PathBuf = std::env::var_os(HOST_LIBRARY_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("{HOST_LIBRARY_ENV} is not set"))?;
    preload_nvperf_host(&path)?;
    let flags = libloading::os::unix::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
    // SAFETY: NVIDIA's libcupti; its initialisers run no user code (the offline tests
    // load it the same way).
    let lib = unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: each symbol is the export of that name in cupti_profiler_host.h, of
    // the type `Call<its params struct>`.
    unsafe {
        Ok(Real {
            initialize: symbol(&lib, b"cuptiProfilerHostInitialize\0")?,
            deinitialize: symbol(&lib, b"cuptiProfilerHostDeinitialize\0")?,
            supported_chips: symbol(&lib, b"cuptiProfilerHostGetSupportedChips\0")?,
            add_metrics: symbol(&lib, b"cuptiProfilerHostConfigAddMetrics\0")?,
            config_image_size: symbol(&lib, b"cuptiProfilerHostGetConfigImageSize\0")?,
            config_image: symbol(&lib, b"cuptiProfilerHostGetConfigImage\0")?,
            num_of_passes: symbol(&lib, b"cuptiProfilerHostGetNumOfPasses\0")?,
            _lib: lib,
        })
    }
}

/// `libnvperf_host.so` from `cupti`'s directory, `RTLD_GLOBAL`, where it is.
fn preload_nvperf_host(cupti: &Path) -> Result<(), String> {
    let Some(dir) = cupti.parent() else {
        return Ok(());
    };
    let nvperf = dir.join("libnvperf_host.so");
    if !nvperf.exists() {
        return Ok(());
    }
    let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
    // SAFETY: NVIDIA's libnvperf_host, beside the libcupti that loads it; kept loaded
    // for the process's life (leaked below).
    let lib = unsafe { libloading::os::unix::Library::open(Some(OsString::from(&nvperf)), flags) }
        .map_err(|e| format!("{}: {e}", nvperf.display()))?;
    std::mem::forget(lib);
    Ok(())
}

/// # Safety
/// `name` is a C name whose symbol has type `T`.
unsafe fn symbol<T: Copy>(lib: &libloading::os::unix::Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: per the caller.
    unsafe { lib.get::<T>(name) }
        .map(|s| *s)
        .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(name)))
}

fn ok(r: R) -> Result<(), R> {
    if r == CUPTI_SUCCESS {
        Ok(())
    } else {
        Err(r)
    }
}

/// A params struct of `size` bytes, zeroed (`T` is a plain C struct).
fn params<T>(size: usize) -> T {
    // SAFETY: the profiling params structs are integers and pointers: all-zero is valid.
    let mut p: T = unsafe { std::mem::zeroed() };
    // SAFETY: every params struct starts with `size_t structSize`.
    unsafe { (&mut p as *mut T as *mut usize).write(size) };
    p
}

/// A real host object for `chip` and the profiler type: its handle, or the real
/// library's error.
pub fn initialize(chip: &CStr, pm_sampling: bool) -> Result<usize, R> {
    let real = real()?;
    let mut p: CUpti_Profiler_Host_Initialize_Params = params(INITIALIZE_SIZE);
    p.profilerType = if pm_sampling {
        CUpti_ProfilerType::CUPTI_PROFILER_TYPE_PM_SAMPLING
    } else {
        CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER
    };
    p.pChipName = chip.as_ptr();
    // SAFETY: a valid params struct of the 12.6-13.1 size; the chip name outlives it.
    ok(unsafe { (real.initialize)(&mut p) })?;
    Ok(p.pHostObject as usize)
}

/// Destroys real host object `host`.
pub fn deinitialize(host: usize) {
    let Ok(real) = real() else {
        return;
    };
    let mut p: CUpti_Profiler_Host_Deinitialize_Params = params(DEINITIALIZE_SIZE);
    p.pHostObject = host as *mut CUpti_Profiler_Host_Object;
    // SAFETY: `host` came from `initialize` and is destroyed once (the sim's host
    // object owns it).
    let _ = unsafe { (real.deinitialize)(&mut p) };
}

/// The chips the real library supports: its own array of its own strings.
pub fn supported_chips() -> Result<(usize, *const *const c_char), R> {
    let real = real()?;
    let mut p: CUpti_Profiler_Host_GetSupportedChips_Params = params(GET_SUPPORTED_CHIPS_SIZE);
    // SAFETY: a valid params struct.
    ok(unsafe { (real.supported_chips)(&mut p) })?;
    Ok((p.numChips, p.ppChipNames))
}

/// Adds `metrics` to real host object `host` in one call: the real library's answer.
pub fn add_metrics(host: usize, metrics: &[CString]) -> Result<(), R> {
    let real = real()?;
    let names: Vec<*const c_char> = metrics.iter().map(|m| m.as_ptr()).collect();
    let mut p: CUpti_Profiler_Host_ConfigAddMetrics_Params = params(ADD_METRICS_SIZE);
    p.pHostObject = host as *mut CUpti_Profiler_Host_Object;
    p.ppMetricNames = names.as_ptr() as *mut *const c_char;
    p.numMetrics = names.len();
    // SAFETY: `host` is live; `names` holds `numMetrics` C strings that outlive the call.
    ok(unsafe { (real.add_metrics)(&mut p) })
}

/// The passes of real host object `host`'s config: the real library builds its
/// config image and counts them.
pub fn passes(host: usize) -> Result<usize, R> {
    let real = real()?;
    let mut size: CUpti_Profiler_Host_GetConfigImageSize_Params = params(CONFIG_IMAGE_SIZE_SIZE);
    size.pHostObject = host as *mut CUpti_Profiler_Host_Object;
    // SAFETY: `host` is live.
    ok(unsafe { (real.config_image_size)(&mut size) })?;
    let mut image = vec![0u8; size.configImageSize];
    let mut get: CUpti_Profiler_Host_GetConfigImage_Params = params(CONFIG_IMAGE_SIZE);
    get.pHostObject = host as *mut CUpti_Profiler_Host_Object;
    get.configImageSize = image.len();
    get.pConfigImage = image.as_mut_ptr();
    // SAFETY: `image` holds `configImageSize` bytes.
    ok(unsafe { (real.config_image)(&mut get) })?;
    let mut n: CUpti_Profiler_Host_GetNumOfPasses_Params = params(NUM_OF_PASSES_SIZE);
    n.configImageSize = image.len();
    n.pConfigImage = image.as_mut_ptr();
    // SAFETY: the real library's own image, `configImageSize` bytes.
    ok(unsafe { (real.num_of_passes)(&mut n) })?;
    Ok(n.numOfPasses)
}

/// Whether NVIDIA's library accepts `metrics` on `chip` for the profiler type (added
/// in one call to a scratch host object): `CUPTI_ERROR_INVALID_METRIC_NAME` when it
/// refuses them, its error when it makes no host object for the chip. Answers are
/// kept per (chip, type, names): the target side asks for every image it lays out
/// and every evaluation.
pub fn check_metrics(chip: &str, pm_sampling: bool, metrics: &[String]) -> Result<(), R> {
    type Key = (String, bool, Vec<String>);
    static KNOWN: Mutex<Option<HashMap<Key, Result<(), R>>>> = Mutex::new(None);
    let key = (chip.to_string(), pm_sampling, metrics.to_vec());
    if let Some(r) = KNOWN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return *r;
    }
    let chip_c = CString::new(chip).map_err(|_| CUPTI_ERROR_INVALID_PARAMETER)?;
    let names: Vec<CString> = metrics
        .iter()
        .map(|m| CString::new(m.as_str()).map_err(|_| CUPTI_ERROR_INVALID_METRIC_NAME))
        .collect::<Result<_, _>>()?;
    let host = initialize(&chip_c, pm_sampling)?;
    let answer = add_metrics(host, &names).map_err(|_| CUPTI_ERROR_INVALID_METRIC_NAME);
    deinitialize(host);
    KNOWN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, answer);
    answer
}
