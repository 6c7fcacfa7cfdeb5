//! Pointing loaded objects' GOT slots at the hooks: the hooked cuBLAS / cuBLASLt
//! functions at [`super::hooks`], `dlsym` at [`super::dlsym`]'s entry.

use std::sync::atomic::Ordering;

use super::hooks::{hook_address, COUNT, NAMES, REAL};
use super::{dlsym, got, loaded};
use crate::log::debug;

/// Objects never patched: the C library and the loader (they call nothing hooked,
/// and their `dlsym` is the one we forward to).
fn skipped(o: &loaded::Object) -> bool {
    let name = o
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    [
        "libc.so",
        "libc-",
        "ld-linux",
        "ld64.so",
        "libdl.so",
        "libpthread.so",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Points every loaded object's GOT slots for the hooked functions and for `dlsym`
/// at our hooks. Objects that cannot be read or checked are left alone (debug log).
pub fn patch_loaded() {
    let started = std::time::Instant::now();
    let objects = loaded::objects();
    let mut patched = 0usize;
    let me =
        loaded::object_of(&objects, patch_loaded as *const () as usize).map(|o| o.path.clone());
    let dlsym_index = COUNT;
    let wanted: Vec<&str> = NAMES.iter().copied().chain(["dlsym"]).collect();
    let mut scans = Vec::new();
    for o in &objects {
        if Some(&o.path) == me.as_ref() || skipped(o) {
            continue;
        }
        match got::scan(o, &wanted) {
            Ok(s) if s.slots.is_empty() && s.definitions.is_empty() => {}
            Ok(s) => scans.push((o, s)),
            Err(e) => debug!("GEMM hooks: {e}; not patched"),
        }
    }
    // The first library in load order defining a function is the one the loader binds.
    for (_, s) in &scans {
        for &(i, addr) in &s.definitions {
            if i < COUNT {
                let _ = REAL[i].compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire);
            }
        }
    }
    let dlsym_entry = dlsym::entry_address();
    for (o, s) in &scans {
        // Unloaded since it was listed: its slots are gone with it.
        let Some(_pinned) = loaded::pin(o) else {
            continue;
        };
        for slot in &s.slots {
            let (real, hook) = if slot.symbol == dlsym_index {
                match dlsym_entry {
                    Some(e) => (dlsym::real_address(), e),
                    None => continue,
                }
            } else {
                let real = REAL[slot.symbol].load(Ordering::Acquire);
                match hook_address(slot.symbol) {
                    Some(h) if real != 0 => (real, h),
                    _ => continue,
                }
            };
            // SAFETY: the slot comes from scanning `o`; the hook has the C signature
            // of the slot's symbol (the dlsym entry: dlsym's) and lives as long as
            // the process (this library is never unloaded).
            match unsafe { got::patch(o, slot.addr, real, hook) } {
                Ok(p) => {
                    patched += 1;
                    debug!(
                        "GEMM hooks: {} slot {:#x} ({}): {p:?}",
                        o.path.display(),
                        slot.addr,
                        wanted[slot.symbol]
                    )
                }
                Err(e) => debug!("GEMM hooks: {e}; not patched"),
            }
        }
    }
    debug!(
        "GEMM hooks: {} objects scanned, {patched} slots patched in {:.1} ms",
        objects.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
}
