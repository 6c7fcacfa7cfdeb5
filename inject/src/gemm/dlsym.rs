//! The `dlsym` the patched objects call: a lookup on a library handle that finds a
//! hooked cuBLAS function returns our hook instead (and remembers the real address
//! for it); every other lookup answers exactly what the real `dlsym` answers.
//!
//! `dlsym(RTLD_DEFAULT, ..)` and `dlsym(RTLD_NEXT, ..)` depend on who calls: glibc
//! searches from the calling object, found by the return address. So the entry is a
//! few instructions of assembly that jump (not call) to the real `dlsym` for those two
//! handles, leaving the application's return address in place; only lookups on a
//! handle reach [`lookup`], where the caller does not matter.

use core::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::hooks;
use crate::guard;

/// The real `dlsym` (libc's), read by the entry's assembly.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// Sets the real `dlsym` before any slot points at [`entry_address`].
pub fn init() {
    REAL_DLSYM.store(real_address(), Ordering::Release);
}

/// libc's `dlsym`.
pub fn real_address() -> usize {
    libc::dlsym as *const () as usize
}

/// The entry's instructions: `RTLD_DEFAULT` (0) and `RTLD_NEXT` (-1) jump straight
/// to the real `dlsym`, any other handle to [`lookup`].
#[cfg(target_arch = "x86_64")]
macro_rules! entry_asm {
    () => {
        core::arch::naked_asm!(
            "test rdi, rdi",
            "je 2f",
            "cmp rdi, -1",
            "je 2f",
            "jmp {lookup}",
            "2:",
            "jmp qword ptr [rip + {real}]",
            lookup = sym lookup,
            real = sym REAL_DLSYM,
        )
    };
}

/// The entry's instructions (see the x86-64 ones).
#[cfg(target_arch = "aarch64")]
macro_rules! entry_asm {
    () => {
        core::arch::naked_asm!(
            "cbz x0, 2f",
            "cmn x0, #1",
            "b.eq 2f",
            "b {lookup}",
            "2:",
            "adrp x16, {real}",
            "ldr x16, [x16, :lo12:{real}]",
            "br x16",
            lookup = sym lookup,
            real = sym REAL_DLSYM,
        )
    };
}

/// The entry patched `dlsym` slots point at.
///
/// # Safety
/// Called only as `dlsym`, with its arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[unsafe(naked)]
unsafe extern "C" fn dlsym_entry(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    entry_asm!()
}

/// Where patched `dlsym` slots point; `None` on architectures without an entry.
pub fn entry_address() -> Option<usize> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return Some(dlsym_entry as *const () as usize);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    None
}

/// `dlsym` on a library handle.
///
/// # Safety
/// The `dlsym` contract: `handle` from `dlopen`, `name` a C string.
unsafe extern "C" fn lookup(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on unchanged.
    let found = unsafe { libc::dlsym(handle, name) };
    if found.is_null() || name.is_null() {
        return found;
    }
    // SAFETY: dlsym found `name`, so it is a C string.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let _errno = guard::Errno::save();
    match guard::guarded("the dlsym hook", None, || {
        hooks::hook_for(name, found as usize)
    }) {
        Some(hook) => hook as *mut c_void,
        None => found,
    }
}
