//! Is this file a whole shared object? Checked before `dlopen` of a library a user
//! named, because the loader maps a file's segments without comparing them with the
//! file's size: a truncated `libcupti.so` maps fine and then kills the process with
//! SIGBUS when the loader touches a page past the end of the file.
//!
//! The file is read with `pread` into buffers, never mapped (a mapping would fault
//! the same way). Checked: the ELF header (magic, 64-bit, this machine's byte order,
//! a shared object), the program header table and every `PT_LOAD` segment's file
//! bytes (`p_offset + p_filesz`) within the file, and the section header table within
//! the file. What the loader checks itself (machine, version, symbols) it reports as
//! an error, not a signal, and is left to it.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

const EHDR_SIZE: usize = 64;
const PHDR_SIZE: u64 = 56;
const SHDR_SIZE: u64 = 64;
const ELFCLASS64: u8 = 2;
#[cfg(target_endian = "little")]
const ELFDATA_NATIVE: u8 = 1;
#[cfg(target_endian = "big")]
const ELFDATA_NATIVE: u8 = 2;
const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;
/// `e_phnum` when the real count is elsewhere (never in a shared object we load).
const PN_XNUM: u16 = 0xffff;

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// `Ok` when `path` is a whole 64-bit shared object of this machine's byte order; else
/// what is wrong with it, for a message.
pub fn check_shared_object(path: &Path) -> Result<(), String> {
    // O_NONBLOCK: a FIFO named as a library must not block the open.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    check_file(&file, meta.len())
}

fn check_file(file: &File, size: u64) -> Result<(), String> {
    let read = |buf: &mut [u8], off: u64| {
        file.read_exact_at(buf, off)
            .map_err(|e| format!("cannot read {} bytes at offset {off}: {e}", buf.len()))
    };
    if size < EHDR_SIZE as u64 {
        return Err(format!(
            "a file of {size} bytes is too short for an ELF header ({EHDR_SIZE} bytes)"
        ));
    }
    let mut eh = [0u8; EHDR_SIZE];
    read(&mut eh, 0)?;
    if eh[..4] != *b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if eh[4] != ELFCLASS64 {
        return Err("not a 64-bit ELF file".into());
    }
    if eh[5] != ELFDATA_NATIVE {
        return Err("an ELF file of the other byte order".into());
    }
    let e_type = u16_at(&eh, 16);
    if e_type != ET_DYN {
        return Err(format!("not a shared object (ELF type {e_type})"));
    }
    let (phoff, shoff) = (u64_at(&eh, 32), u64_at(&eh, 40));
    let (phentsize, phnum) = (u16_at(&eh, 54), u16_at(&eh, 56));
    let (shentsize, shnum) = (u16_at(&eh, 58), u16_at(&eh, 60));
    if phnum == 0 || phnum == PN_XNUM || u64::from(phentsize) != PHDR_SIZE {
        return Err(format!(
            "unusable program header table ({phnum} entries of {phentsize} bytes)"
        ));
    }
    let table_end = |off: u64, n: u64, each: u64| off.checked_add(n * each);
    let ph_end = table_end(phoff, u64::from(phnum), PHDR_SIZE);
    if ph_end.is_none_or(|end| end > size) {
        return Err(format!(
            "the program header table (offset {phoff}, {phnum} x {PHDR_SIZE} bytes) ends past \
             the end of the file ({size} bytes)"
        ));
    }
    let mut ph = vec![0u8; usize::from(phnum) * PHDR_SIZE as usize];
    read(&mut ph, phoff)?;
    for (i, p) in ph.chunks_exact(PHDR_SIZE as usize).enumerate() {
        if u32_at(p, 0) != PT_LOAD {
            continue;
        }
        let (offset, filesz) = (u64_at(p, 8), u64_at(p, 32));
        if offset.checked_add(filesz).is_none_or(|end| end > size) {
            return Err(format!(
                "its PT_LOAD segment (program header {i}, file bytes {offset} to {}) ends past \
                 the end of the file ({size} bytes): the file is truncated",
                offset.saturating_add(filesz)
            ));
        }
    }
    if shoff != 0 {
        if u64::from(shentsize) != SHDR_SIZE {
            return Err(format!(
                "unusable section header table (entries of {shentsize} bytes)"
            ));
        }
        // shnum 0 with a table: the count is in entry 0, so at least that one is there.
        let n = u64::from(shnum).max(1);
        if table_end(shoff, n, SHDR_SIZE).is_none_or(|end| end > size) {
            return Err(format!(
                "the section header table (offset {shoff}, {n} x {SHDR_SIZE} bytes) ends past \
                 the end of the file ({size} bytes): the file is truncated"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared object of this machine: libc, as this test binary maps it.
    fn libc_path() -> std::path::PathBuf {
        crate::procmaps::mapped_files()
            .into_iter()
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libc.so") || n.starts_with("libc-"))
            })
            .expect("libc is mapped")
    }

    struct Tmp(std::path::PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(name: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("gpuprof-elf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }

    #[test]
    fn a_whole_library_passes() {
        assert_eq!(check_shared_object(&libc_path()), Ok(()));
    }

    #[test]
    fn truncated_and_foreign_files_are_refused() {
        let bytes = std::fs::read(libc_path()).unwrap();
        let t = scratch("cut");
        let at = |name: &str, b: &[u8]| {
            let p = t.0.join(name);
            std::fs::write(&p, b).unwrap();
            p
        };
        // The last PT_LOAD segment's end, and the section headers' start.
        let size = bytes.len() as u64;
        let cut = at("half", &bytes[..bytes.len() / 2]);
        let e = check_shared_object(&cut).unwrap_err();
        assert!(
            e.starts_with("its PT_LOAD segment (program header ")
                && e.ends_with(&format!(
                    "ends past the end of the file ({} bytes): the file is truncated",
                    size / 2
                )),
            "{e}"
        );
        // Only the section headers missing: the segments are whole.
        let shoff = u64_at(&bytes, 40) as usize;
        let e = check_shared_object(&at("no-sections", &bytes[..shoff + 10])).unwrap_err();
        assert!(
            e.starts_with(&format!("the section header table (offset {shoff}, ")),
            "{e}"
        );
        assert_eq!(
            check_shared_object(&at("tiny", &bytes[..20])),
            Err("a file of 20 bytes is too short for an ELF header (64 bytes)".into())
        );
        assert_eq!(
            check_shared_object(&at("empty", b"")),
            Err("a file of 0 bytes is too short for an ELF header (64 bytes)".into())
        );
        assert_eq!(
            check_shared_object(&at("text", &[b'#'; 100])),
            Err("not an ELF file".into())
        );
        let mut elf32 = bytes.clone();
        elf32[4] = 1;
        assert_eq!(
            check_shared_object(&at("elf32", &elf32)),
            Err("not a 64-bit ELF file".into())
        );
        let mut exec = bytes.clone();
        exec[16..18].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(
            check_shared_object(&at("exec", &exec)),
            Err("not a shared object (ELF type 2)".into())
        );
        let mut far = bytes.clone();
        far[32..40].copy_from_slice(&(size - 10).to_ne_bytes());
        let e = check_shared_object(&at("phoff", &far)).unwrap_err();
        assert!(
            e.starts_with(&format!("the program header table (offset {}, ", size - 10)),
            "{e}"
        );
        assert_eq!(check_shared_object(&t.0), Err("not a regular file".into()));
        let e = check_shared_object(&t.0.join("absent")).unwrap_err();
        assert!(e.starts_with("cannot read it: "), "{e}");
    }
}
