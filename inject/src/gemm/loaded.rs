//! The ELF objects loaded in this process, as the dynamic loader reports them
//! (`dl_iterate_phdr`): where each is mapped and from which file.

use core::ffi::{c_int, c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One `PT_LOAD` segment as mapped: link-time address and size, file offset, flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    /// `PF_X` / `PF_W` / `PF_R`.
    pub flags: u32,
}

/// A loaded object.
#[derive(Debug, Clone)]
pub struct Object {
    /// The file it was loaded from (`/proc/self/exe` for the main program).
    pub path: PathBuf,
    /// Load bias: runtime address = `base` + link-time address.
    pub base: usize,
    pub segments: Vec<Segment>,
    /// The `PT_GNU_RELRO` range (link-time address, size): read-only after relocation.
    pub relro: Option<(u64, u64)>,
}

impl Object {
    /// Whether runtime address `addr` lies inside one of the object's segments.
    pub fn contains(&self, addr: usize) -> bool {
        let a = (addr as u64).wrapping_sub(self.base as u64);
        self.segments
            .iter()
            .any(|s| a >= s.vaddr && a - s.vaddr < s.memsz)
    }

    /// The segment holding the `len` bytes at runtime address `addr`, if one does.
    pub fn segment_of(&self, addr: usize, len: u64) -> Option<&Segment> {
        let a = (addr as u64).wrapping_sub(self.base as u64);
        self.segments
            .iter()
            .find(|s| a >= s.vaddr && a - s.vaddr + len <= s.memsz)
    }

    /// The runtime pages the loader made read-only after relocation: the RELRO range
    /// with both ends rounded down to a page boundary, as glibc protects it.
    pub fn relro_pages(&self, page: usize) -> Option<(usize, usize)> {
        let (v, n) = self.relro?;
        let start = self.base.wrapping_add(v as usize) & !(page - 1);
        let end = self.base.wrapping_add((v + n) as usize) & !(page - 1);
        (end > start).then_some((start, end))
    }
}

/// How many objects the loader has loaded so far (`dlpi_adds`): changes when one is
/// loaded.
pub fn generation() -> u64 {
    let mut adds: u64 = 0;
    // SAFETY: the callback only writes through `data`, which points at `adds`, alive
    // for the call; it returns 1 to stop after the first object.
    unsafe { libc::dl_iterate_phdr(Some(first_adds), (&mut adds as *mut u64).cast()) };
    adds
}

unsafe extern "C" fn first_adds(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the loader passes a valid info; `data` is the u64 of `generation`.
    unsafe { *(data as *mut u64) = (*info).dlpi_adds };
    1
}

/// Every loaded object with a file (the vDSO and nameless objects other than the main
/// program are left out).
pub fn objects() -> Vec<Object> {
    let mut out: Vec<Object> = Vec::new();
    // SAFETY: the callback only reads the loader's info for the duration of the call
    // and pushes copies into `out`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(collect), (&mut out as *mut Vec<Object>).cast()) };
    out
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the Vec of `objects`; `info` is valid during the call.
    let (out, info) = unsafe { (&mut *(data as *mut Vec<Object>), &*info) };
    // Nothing may unwind into the loader.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Some(o) = describe(info, out.is_empty()) {
            out.push(o);
        }
    }));
    0
}

fn describe(info: &libc::dl_phdr_info, first: bool) -> Option<Object> {
    let name = if info.dlpi_name.is_null() {
        &[][..]
    } else {
        // SAFETY: the loader's NUL-terminated object name.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let path = if name.is_empty() {
        // The main program is the first object and has no name.
        if !first {
            return None;
        }
        PathBuf::from("/proc/self/exe")
    } else if name.starts_with(b"/") {
        PathBuf::from(std::ffi::OsStr::from_bytes(name))
    } else {
        // The vDSO ("linux-vdso.so.1") has no file.
        return None;
    };
    let phdrs = if info.dlpi_phdr.is_null() {
        &[][..]
    } else {
        // SAFETY: the loader's program headers, dlpi_phnum of them.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    let mut segments = Vec::new();
    let mut relro = None;
    for p in phdrs {
        match p.p_type {
            libc::PT_LOAD => segments.push(Segment {
                vaddr: p.p_vaddr,
                memsz: p.p_memsz,
                offset: p.p_offset,
                flags: p.p_flags,
            }),
            libc::PT_GNU_RELRO => relro = Some((p.p_vaddr, p.p_memsz)),
            _ => {}
        }
    }
    Some(Object {
        path,
        base: info.dlpi_addr as usize,
        segments,
        relro,
    })
}

/// A reference on a loaded object, so it cannot be unloaded while held
/// (`dlopen(RTLD_NOLOAD)`, released with `dlclose`).
pub struct Pinned(*mut c_void);

impl Drop for Pinned {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a handle dlopen returned, released once.
            unsafe { libc::dlclose(self.0) };
        }
    }
}

/// Pins `o` while it is still loaded; `None` when it is gone (or cannot be named).
/// The main program is never unloaded and needs no reference.
pub fn pin(o: &Object) -> Option<Pinned> {
    if o.path.as_os_str() == "/proc/self/exe" {
        return Some(Pinned(std::ptr::null_mut()));
    }
    let name = std::ffi::CString::new(o.path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a C string; RTLD_NOLOAD loads nothing, it only takes a reference on an
    // object already loaded under that name.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    (!h.is_null()).then_some(Pinned(h))
}

/// The object containing runtime address `addr`.
pub fn object_of(objects: &[Object], addr: usize) -> Option<&Object> {
    objects.iter().find(|o| o.contains(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_test_program_and_libc() {
        let objs = objects();
        assert!(objs[0].path.ends_with("exe"));
        let here = finds_the_test_program_and_libc as *const () as usize;
        let me = object_of(&objs, here).expect("this function is in a loaded object");
        assert_eq!(me.path, PathBuf::from("/proc/self/exe"));
        let dlsym = libc::dlsym as *const () as usize;
        let libc_obj = object_of(&objs, dlsym).expect("dlsym is in a loaded object");
        assert!(libc_obj.path.to_string_lossy().contains("libc"));
        assert!(generation() >= objs.len() as u64);
    }
}
