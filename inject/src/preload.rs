//! The `LD_PRELOAD` path. The constructor runs before `main` in every process that
//! preloads us, CUDA user or not, so it only arranges for the CUDA driver to inject
//! us at `cuInit` (by setting `CUDA_INJECTION64_PATH` to this library). Processes
//! that never initialise CUDA never load CUPTI.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::guard::guarded;
use crate::log::{debug, warn};
use crate::options::Options;
use crate::state;
use crate::this_library;

// SAFETY (of the section): `.init_array` entries are called once by the dynamic
// loader with no arguments, after our relocations are done.
#[used]
#[link_section = ".init_array"]
static PRELOAD_CONSTRUCTOR: extern "C" fn() = on_load;

extern "C" fn on_load() {
    guarded("the library constructor", (), preload_setup);
}

fn preload_setup() {
    let Some(me) = this_library::path() else {
        return;
    };
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
            state::disable();
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
