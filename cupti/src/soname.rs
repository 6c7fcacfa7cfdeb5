//! Which CUDA a CUPTI library is built for, known before it is loaded: its
//! `DT_SONAME` (`libcupti.so.12`, `libcupti.so.13`), read from the file's dynamic
//! section (`object`, reading only the headers and sections it needs).
//!
//! CUPTI 13.2 with a CUDA 12 driver crashes the process in its first call
//! (`cuptiGetVersion`), so a CUPTI newer than the driver is refused from its name,
//! without calling into it or running its initialisers.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use object::read::elf::ElfFile64;

/// The `DT_SONAME` of the ELF shared object at `path`; `None` when it has none or the
/// file is not a 64-bit ELF object.
pub fn soname(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let data = object::ReadCache::new(file);
    let elf = ElfFile64::<object::Endianness, _>::parse(&data).ok()?;
    let table = elf
        .elf_section_table()
        .dynamic_table(elf.endian(), &data)
        .ok()?;
    let entry = table.iter().find(|d| d.tag == object::elf::DT_SONAME)?;
    let name = table.string(entry).ok()?;
    String::from_utf8(name.to_vec()).ok()
}

/// The CUDA major version of the CUPTI at `path` (a file, or a bare soname the loader
/// searches for): `N` of its soname `libcupti.so.N`. `None` when the name says nothing.
pub fn cupti_cuda_major(path: &OsStr) -> Option<u32> {
    let name = if path.as_bytes().contains(&b'/') {
        soname(Path::new(path))?
    } else {
        path.to_str()?.to_string()
    };
    name.strip_prefix("libcupti.so.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_soname_names_its_major() {
        assert_eq!(cupti_cuda_major(OsStr::new("libcupti.so.13")), Some(13));
        assert_eq!(cupti_cuda_major(OsStr::new("libcupti.so.12.9")), Some(12));
        assert_eq!(cupti_cuda_major(OsStr::new("libcupti.so")), None);
        assert_eq!(cupti_cuda_major(OsStr::new("libfoo.so.13")), None);
    }

    #[test]
    fn a_file_without_a_soname_or_not_elf_says_nothing() {
        let exe = std::env::current_exe().expect("the test binary");
        assert_eq!(soname(&exe), None);
        assert_eq!(cupti_cuda_major(exe.as_os_str()), None);
        assert_eq!(soname(Path::new("/nonexistent/libcupti.so.13")), None);
    }
}
