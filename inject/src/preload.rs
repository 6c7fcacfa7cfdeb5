//! The `LD_PRELOAD` path. The constructor runs before `main` in every process that
//! preloads us, CUDA user or not, so it only arranges for the CUDA driver to inject
//! us at `cuInit` (by setting `CUDA_INJECTION64_PATH` to this library). Processes
//! that never initialise CUDA never load CUPTI.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::entry::guarded;
use crate::lifecycle;
use crate::log::{debug, warn};
use crate::options::Options;

// SAFETY (of the section): `.init_array` entries are called once by the dynamic
// loader with no arguments, after our relocations are done.
#[used]
#[link_section = ".init_array"]
static PRELOAD_CONSTRUCTOR: extern "C" fn() = on_load;

extern "C" fn on_load() {
    guarded("the library constructor", (), preload_setup);
}

fn preload_setup() {
    let Some(me) = own_path() else { return };
    let preload = std::env::var_os("LD_PRELOAD").unwrap_or_default();
    if !preloads(&preload, &me) {
        // Loaded by dlopen (the CUDA driver, for CUDA_INJECTION64_PATH): nothing to do
        // until InitializeInjection.
        return;
    }
    let opts = Options::load();
    if opts.disabled {
        return;
    }
    match std::env::var_os("CUDA_INJECTION64_PATH") {
        None => {
            // SAFETY-adjacent: constructors of preloaded libraries run before `main`,
            // while the process has one thread, so changing the environment races
            // with nothing.
            std::env::set_var("CUDA_INJECTION64_PATH", &me);
            debug!("LD_PRELOAD: CUDA_INJECTION64_PATH set to {}", me.display());
        }
        Some(v) if v.is_empty() => {
            std::env::set_var("CUDA_INJECTION64_PATH", &me);
        }
        Some(v) if same_file(Path::new(&v), &me) => {}
        Some(v) => {
            lifecycle::disable();
            warn!(
                "CUDA_INJECTION64_PATH={} names another injection library; gpuprof stays off \
                 (one injected tool per process)",
                Path::new(&v).display()
            );
        }
    }
}

/// Whether an `LD_PRELOAD` value (space- or colon-separated) names `me`.
fn preloads(value: &OsStr, me: &Path) -> bool {
    value
        .as_bytes()
        .split(|b| *b == b' ' || *b == b':')
        .filter(|s| !s.is_empty())
        .any(|s| {
            let p = Path::new(OsStr::from_bytes(s));
            same_file(p, me) || (!s.contains(&b'/') && p.file_name() == me.file_name())
        })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The file this library was loaded from.
pub(crate) fn own_path() -> Option<PathBuf> {
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address and fills `info`; the address is a
    // function of this library.
    let rc = unsafe { libc::dladdr(on_load as *const core::ffi::c_void, info.as_mut_ptr()) };
    if rc == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(name.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ld_preload_parsing() {
        let me = std::env::current_exe().unwrap();
        let name = me.file_name().unwrap().to_str().unwrap().to_string();
        let full = me.to_str().unwrap().to_string();
        assert!(preloads(OsStr::new(&full), &me));
        assert!(preloads(
            OsStr::new(&format!("/x/liba.so:{full} /y/libb.so")),
            &me
        ));
        assert!(preloads(OsStr::new(&name), &me));
        assert!(!preloads(OsStr::new("/x/liba.so /y/libb.so"), &me));
        assert!(!preloads(OsStr::new(""), &me));
        // Same file name in another directory is somebody else's library.
        assert!(!preloads(OsStr::new(&format!("/nonexistent/{name}")), &me));
    }
}
