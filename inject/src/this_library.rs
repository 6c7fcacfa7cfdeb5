//! Where `libgpuprof.so` itself was loaded from.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The file this library was loaded from.
pub(crate) fn path() -> Option<PathBuf> {
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address and fills `info`; the address is a
    // function of this library.
    let rc = unsafe { libc::dladdr(path as *const core::ffi::c_void, info.as_mut_ptr()) };
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
