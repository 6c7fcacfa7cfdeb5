//! The temporary files this process has open (`.<name>.<pid>.<n>.tmp`, see
//! [`super::output_file::temp_beside`]), removed if SIGINT, SIGTERM or SIGHUP ends the
//! process before they are renamed into place: an interrupted `gpuprof trace` would
//! otherwise leave a hidden file as large as the trace.
//!
//! The signal handler does only what is async-signal-safe: it reads a fixed table of
//! C strings made beforehand and calls `unlink` on each, then restores the default
//! action and raises the signal again, so that the process ends as the signal says.
//! The handler is installed only where the signal's action is the default one: a
//! command with handlers of its own (`record`, `collect`) keeps them, and ends its
//! temporary files itself. A path is freed only after it left the table, by the
//! thread that took it out; the commands that rely on the handler write their output
//! from one thread, so the handler never reads a path being freed.

use std::ffi::{c_char, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// Temporary files open at once at most that a signal removes (a Kineto trace has one
/// per process; a file beyond this is left to the normal clean-up).
const SLOTS: usize = 256;

static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

static INSTALL: Once = Once::new();

/// Removes `path` if a termination signal ends the process before [`forget`].
pub fn remember(path: &Path) {
    install();
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let raw = c.into_raw();
    for slot in &PATHS {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            return;
        }
    }
    // SAFETY: `raw` came from `CString::into_raw` above and was stored nowhere.
    drop(unsafe { CString::from_raw(raw) });
}

/// `path` was renamed into place or removed: a signal leaves it alone.
pub fn forget(path: &Path) {
    let bytes = path.as_os_str().as_bytes();
    for slot in &PATHS {
        let p = slot.load(Ordering::Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: a non-null slot holds a pointer from `CString::into_raw`, freed only
        // by whoever takes it out of the slot (below).
        let same = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes() == bytes;
        if same
            && slot
                .compare_exchange(p, std::ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // SAFETY: taken out of its slot by this call alone; from `into_raw`.
            drop(unsafe { CString::from_raw(p) });
            return;
        }
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    for slot in &PATHS {
        let p = slot.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `p` is a NUL-terminated path; unlink is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: signal and raise are async-signal-safe; the default action ends the
    // process as the signal would have.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Installs [`on_signal`] (once) for each termination signal whose action is the
/// default. Call before a temporary file is created.
pub fn install() {
    INSTALL.call_once(install_handlers);
}

fn install_handlers() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid out-parameter; querying with a null
        // new action changes nothing.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            continue;
        }
        // SAFETY: zeroed, then the handler and an empty mask set: a valid sigaction.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        // SAFETY: `new.sa_mask` is a valid sigset_t to empty.
        unsafe { libc::sigemptyset(&mut new.sa_mask) };
        // SAFETY: `new` is a valid sigaction whose handler is async-signal-safe.
        unsafe { libc::sigaction(signal, &new, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(base: &Path) -> usize {
        let base = base.as_os_str().as_bytes();
        PATHS
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .filter(|p| !p.is_null())
            .filter(|p| {
                // SAFETY: a held path is a valid C string until it leaves the table.
                let path = unsafe { std::ffi::CStr::from_ptr(*p) };
                path.to_bytes().starts_with(base)
            })
            .count()
    }

    #[test]
    fn remembered_paths_are_held_until_forgotten() {
        let base = std::env::temp_dir().join(format!("gpuprof-temp-files-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        remember(&a);
        remember(&b);
        assert_eq!(held(&base), 2);
        forget(&a);
        assert_eq!(held(&base), 1);
        forget(&a);
        forget(&b);
        assert_eq!(held(&base), 0);
    }
}
