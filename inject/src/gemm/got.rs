//! Redirecting calls an object makes to imported functions, by rewriting the slots of
//! its global offset table that the dynamic loader fills with their addresses
//! (`JUMP_SLOT` relocations: calls through the PLT; `GLOB_DAT`: calls and address-of
//! through the GOT).
//!
//! Which slots belong to which symbol is read from the object's file with the
//! `object` crate. The file is only trusted if its `PT_LOAD` segments are exactly those
//! the loader mapped; a slot is only rewritten if it currently holds what it must hold
//! (the function's address, or, not yet bound, an address inside the object itself:
//! its PLT stub) and lies inside one of the object's mapped segments. A slot in the
//! RELRO range (read-only after relocation) is made writable for the store and
//! read-only again; the store itself is one aligned atomic word, so a thread calling
//! through the slot at that moment gets the old or the new target, both valid.

use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};

use object::{Object as _, ObjectSegment, ObjectSymbol, ObjectSymbolTable, RelocationFlags};
use object::{RelocationTarget, SymbolKind};

use super::loaded::Object;

/// One GOT slot of an object that the loader fills with the address of a wanted symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Runtime address of the slot.
    pub addr: usize,
    /// Index of the symbol in the wanted list.
    pub symbol: usize,
}

/// What an object holds of the wanted symbols.
#[derive(Debug, Default)]
pub struct Scan {
    /// Its GOT slots for them.
    pub slots: Vec<Slot>,
    /// Those it defines (exports): (index in the wanted list, runtime address).
    pub definitions: Vec<(usize, usize)>,
}

fn is_got_relocation(flags: RelocationFlags) -> bool {
    use object::elf::{
        R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT,
    };
    match flags {
        RelocationFlags::Elf { r_type } => {
            if cfg!(target_arch = "x86_64") {
                r_type == R_X86_64_JUMP_SLOT || r_type == R_X86_64_GLOB_DAT
            } else if cfg!(target_arch = "aarch64") {
                r_type == R_AARCH64_JUMP_SLOT || r_type == R_AARCH64_GLOB_DAT
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Reads `obj`'s file: its GOT slots for the `wanted` symbols and its definitions of
/// them. `Err` says why the file cannot be used (unreadable, not ELF, not the file
/// that was loaded).
pub fn scan(obj: &Object, wanted: &[&str]) -> Result<Scan, String> {
    let path = obj.path.display();
    let file = File::open(&obj.path).map_err(|e| format!("{path}: {e}"))?;
    // SAFETY: the mapping is read-only and private; a file truncated under us could
    // fault, but shared objects in use are replaced by rename, not rewritten in place.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{path}: {e}"))?;
    let elf = object::File::parse(&*map).map_err(|e| format!("{path}: {e}"))?;
    let mut on_disk: Vec<(u64, u64, u64)> = elf
        .segments()
        .map(|s| (s.address(), s.size(), s.file_range().0))
        .collect();
    let mut mapped: Vec<(u64, u64, u64)> = obj
        .segments
        .iter()
        .map(|s| (s.vaddr, s.memsz, s.offset))
        .collect();
    on_disk.sort_unstable();
    mapped.sort_unstable();
    if on_disk != mapped {
        return Err(format!(
            "{path}: the file's segments are not those the loader mapped"
        ));
    }
    let mut out = Scan::default();
    // Large libraries hold a hundred thousand dynamic symbols: one hash look-up each.
    // Versioned names ("dlsym@GLIBC_2.34") are not in the dynamic string table; the
    // bare name is.
    let positions: HashMap<&[u8], usize> = wanted
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_bytes(), i))
        .collect();
    let index = |name: &[u8]| positions.get(name).copied();
    for sym in elf.dynamic_symbols() {
        if !sym.is_definition() || sym.kind() != SymbolKind::Text || sym.address() == 0 {
            continue;
        }
        if let Some(i) = sym.name_bytes().ok().and_then(index) {
            out.definitions
                .push((i, obj.base.wrapping_add(sym.address() as usize)));
        }
    }
    let (Some(relocs), Some(symtab)) = (elf.dynamic_relocations(), elf.dynamic_symbol_table())
    else {
        return Ok(out);
    };
    for (offset, r) in relocs {
        if !is_got_relocation(r.flags()) {
            continue;
        }
        let RelocationTarget::Symbol(si) = r.target() else {
            continue;
        };
        let Some(i) = symtab
            .symbol_by_index(si)
            .ok()
            .and_then(|s| s.name_bytes().ok())
            .and_then(index)
        else {
            continue;
        };
        out.slots.push(Slot {
            addr: obj.base.wrapping_add(offset as usize),
            symbol: i,
        });
    }
    Ok(out)
}

/// What [`patch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patched {
    /// The slot now holds the new address; it held the given one.
    Done(usize),
    /// It already held the new address.
    Already,
}

/// Stores `new` in `slot` of `obj` if the slot holds `real` or an address inside
/// `obj` (an unbound PLT stub).
///
/// # Safety
/// `slot` comes from [`scan`] of `obj`, and `new` is the address of a function with
/// the same signature as the slot's symbol, valid for the rest of the process.
pub unsafe fn patch(obj: &Object, slot: usize, real: usize, new: usize) -> Result<Patched, String> {
    let word = std::mem::size_of::<usize>();
    if !slot.is_multiple_of(word) {
        return Err(format!("slot {slot:#x} is not aligned"));
    }
    let Some(seg) = obj.segment_of(slot, word as u64) else {
        return Err(format!("slot {slot:#x} is outside {}", obj.path.display()));
    };
    // SAFETY: the slot is an aligned word inside a mapped segment of `obj`.
    let cell = unsafe { &*(slot as *const AtomicUsize) };
    let current = cell.load(Ordering::Acquire);
    if current == new {
        return Ok(Patched::Already);
    }
    if current != real && !obj.contains(current) {
        return Err(format!(
            "slot {slot:#x} of {} holds {current:#x}, not the expected function",
            obj.path.display()
        ));
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let start = slot & !(page - 1);
    // The loader makes the RELRO range read-only rounded down to whole pages at both
    // ends (glibc's _dl_protect_relro): a page past the last whole one stays writable.
    let read_only = obj
        .relro_pages(page)
        .is_some_and(|(a, b)| start >= a && start < b);
    if !read_only && seg.flags & libc::PF_W == 0 {
        return Err(format!("slot {slot:#x} is in a read-only segment"));
    }
    if read_only {
        // SAFETY: the page is mapped (part of `obj`); only its protection changes.
        if unsafe { libc::mprotect(start as *mut _, page, libc::PROT_READ | libc::PROT_WRITE) } != 0
        {
            return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
        }
    }
    // A stub may have been bound between the load and here; store only over what we saw.
    let stored = cell.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire);
    if read_only {
        // SAFETY: as above; the page was read-only, as the loader left it.
        unsafe { libc::mprotect(start as *mut _, page, libc::PROT_READ) };
    }
    match stored {
        Ok(old) => Ok(Patched::Done(old)),
        Err(now) => Err(format!(
            "slot {slot:#x} changed to {now:#x} while being patched"
        )),
    }
}
