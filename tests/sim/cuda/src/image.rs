//! Module images: kernel names and resources from PTX text, kernel names from cubin /
//! fatbin ELF symbol tables. Anything else is not an image the sim can load.

use std::ffi::CString;

/// One kernel of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelInfo {
    pub(crate) name: CString,
    pub(crate) registers: u32,
    pub(crate) static_shared: u32,
}

/// Registers per thread when PTX does not say (`.maxnreg`).
pub(crate) const DEFAULT_REGISTERS: u32 = 32;

/// The kernels of an image, or `None` when it is neither PTX nor ELF. `bytes` is the
/// image: for PTX up to (not including) its terminating NUL.
pub(crate) fn parse(bytes: &[u8]) -> Option<Vec<KernelInfo>> {
    if bytes.starts_with(b"\x7fELF") {
        return parse_elf(bytes);
    }
    let text = std::str::from_utf8(bytes).ok()?;
    if !text.lines().any(|l| l.trim_start().starts_with(".version")) {
        return None;
    }
    Some(parse_ptx(text))
}

/// The length of a NUL-terminated PTX image or the size an ELF header declares
/// (`e_shoff + e_shnum * e_shentsize`, the end of the section header table).
///
/// # Safety
/// `image` points to a NUL-terminated text or an ELF file.
pub(crate) unsafe fn image_len(image: *const u8) -> usize {
    // SAFETY: every image is at least 4 bytes (an ELF magic, or text with its NUL is
    // checked byte by byte below).
    let magic = unsafe { std::slice::from_raw_parts(image, 1) };
    if magic[0] == 0x7f {
        // SAFETY: an ELF image has a full 64-byte ELF64 header.
        let h = unsafe { std::slice::from_raw_parts(image, 64) };
        if &h[..4] == b"\x7fELF" && h[4] == 2 {
            let shoff = u64::from_le_bytes(h[0x28..0x30].try_into().unwrap_or_default());
            let shentsize = u16::from_le_bytes([h[0x3a], h[0x3b]]) as u64;
            let shnum = u16::from_le_bytes([h[0x3c], h[0x3d]]) as u64;
            return (shoff + shentsize * shnum) as usize;
        }
        return 4;
    }
    // SAFETY: text images are NUL-terminated per this function's contract.
    unsafe { std::ffi::CStr::from_ptr(image.cast()) }
        .to_bytes()
        .len()
}

fn parse_ptx(text: &str) -> Vec<KernelInfo> {
    let mut kernels: Vec<KernelInfo> = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        let words: Vec<&str> = l.split_whitespace().collect();
        let entry = words
            .iter()
            .position(|w| *w == ".entry" || w.starts_with(".entry"))
            .filter(|&i| words[..i].iter().all(|w| *w == ".visible" || *w == ".weak"));
        if let Some(i) = entry {
            let rest = l.split_once(".entry").map_or("", |(_, r)| r).trim_start();
            let _ = i;
            let name: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '(')
                .collect();
            if let Ok(name) = CString::new(name) {
                if !name.as_bytes().is_empty() {
                    kernels.push(KernelInfo {
                        name,
                        registers: DEFAULT_REGISTERS,
                        static_shared: 0,
                    });
                }
            }
            continue;
        }
        let Some(k) = kernels.last_mut() else {
            continue;
        };
        if let Some(n) = l.strip_prefix(".maxnreg") {
            if let Ok(n) = n.trim().trim_end_matches(';').trim().parse() {
                k.registers = n;
            }
        } else if l.starts_with(".shared") {
            k.static_shared += shared_size(l).unwrap_or(0);
        }
    }
    kernels
}

/// The size of `.shared .align A .b8 NAME[SIZE];` (other element types: element size
/// times count).
fn shared_size(l: &str) -> Option<u32> {
    let elem = l
        .split_whitespace()
        .find_map(|w| {
            let t = w.strip_prefix('.')?;
            let bits: u32 = t.get(1..)?.parse().ok()?;
            matches!(t.as_bytes()[0], b'b' | b'u' | b's' | b'f').then_some(bits / 8)
        })
        .unwrap_or(1);
    let open = l.find('[')?;
    let close = l[open..].find(']')? + open;
    let count: u32 = l[open + 1..close].trim().parse().ok()?;
    count.checked_mul(elem)
}

fn parse_elf(bytes: &[u8]) -> Option<Vec<KernelInfo>> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};
    let file = object::File::parse(bytes).ok()?;
    let mut kernels = Vec::new();
    for sym in file.symbols() {
        if sym.kind() != SymbolKind::Text {
            continue;
        }
        let SymbolSection::Section(idx) = sym.section() else {
            continue;
        };
        let Ok(name) = sym.name() else { continue };
        let Ok(section) = file.section_by_index(idx) else {
            continue;
        };
        if section.name().ok() != Some(&format!(".text.{name}")) {
            continue;
        }
        if let Ok(name) = CString::new(name) {
            kernels.push(KernelInfo {
                name,
                registers: DEFAULT_REGISTERS,
                static_shared: 0,
            });
        }
    }
    Some(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entries_registers_and_shared() {
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .visible .entry add_one(\n.param .u64 p\n)\n.maxnreg 40\n{\n\
            .shared .align 4 .b8 tile[1024];\n.shared .align 8 .b8 more[64];\nret;\n}\n\
            .weak .entry scale(.param .u64 p)\n{\nret;\n}\n\
            .entry plain ( )\n{\n.shared .align 4 .f32 buf[16];\n}\n\
            .func helper()\n{\n}\n";
        let k = parse(ptx.as_bytes()).unwrap();
        let got: Vec<(&str, u32, u32)> = k
            .iter()
            .map(|k| (k.name.to_str().unwrap(), k.registers, k.static_shared))
            .collect();
        assert_eq!(
            got,
            [("add_one", 40, 1088), ("scale", 32, 0), ("plain", 32, 64)]
        );
    }

    #[test]
    fn not_an_image() {
        assert_eq!(parse(b"hello"), None);
        assert_eq!(parse(b"\x7fELFgarbage"), None);
    }
}
