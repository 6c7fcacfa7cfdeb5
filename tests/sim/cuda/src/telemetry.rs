//! What the simulated NVML (sim/nvml) learns of this process's devices: each GPU
//! operation's interval and the device memory allocated, written through
//! `sim_core::telemetry` when `$SIMCUDA_TELEMETRY_DIR` is set. Writing is best effort:
//! a directory that cannot be written is named once on stderr and nothing else changes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use sim_core::telemetry::{busy_line, Busy, TelemetryDir, Work};

use crate::registry::Driver;

static DIR: LazyLock<Option<TelemetryDir>> = LazyLock::new(|| {
    let dir = TelemetryDir::from_env()?;
    if dir.loaded_ns(crate::clock::now_ns()).is_none() {
        failed(&dir, "cannot record the driver's load time");
    }
    Some(dir)
});

/// Open busy files by device ordinal.
static WRITERS: LazyLock<Mutex<BTreeMap<u32, File>>> = LazyLock::new(Mutex::default);

fn failed(dir: &TelemetryDir, what: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("simcuda: {}: {what}", dir.path().display());
    }
}

/// Notes the load time (the first `cuInit`).
pub(crate) fn driver_loaded() {
    LazyLock::force(&DIR);
}

/// Device `dev` ran `work` from `start_ns` to `end_ns`.
pub(crate) fn ran(dev: i32, work: Work, start_ns: u64, end_ns: u64) {
    let Some(dir) = DIR.as_ref() else {
        return;
    };
    if end_ns == start_ns {
        return;
    }
    let line = busy_line(&Busy {
        work,
        start_ns,
        end_ns,
    });
    let mut writers = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
    let dev = dev as u32;
    let f = match writers.entry(dev) {
        std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
        std::collections::btree_map::Entry::Vacant(v) => match dir.busy_writer(dev) {
            Ok(f) => v.insert(f),
            Err(e) => return failed(dir, &e.to_string()),
        },
    };
    if let Err(e) = f.write_all(line.as_bytes()) {
        failed(dir, &e.to_string());
    }
}

/// Writes the device memory this process holds, per device, after it changed.
pub(crate) fn memory(d: &Driver) {
    let Some(dir) = DIR.as_ref() else {
        return;
    };
    let mut per_device = vec![0u64; crate::config::get().device_count.max(0) as usize];
    for (ctx, bytes) in d.memory.by_context() {
        let dev = d.contexts.get(&ctx).map_or(0, |c| c.device) as usize;
        if let Some(total) = per_device.get_mut(dev) {
            *total += bytes;
        }
    }
    for (dev, bytes) in per_device.into_iter().enumerate() {
        if let Err(e) = dir.write_memory(dev as u32, std::process::id(), bytes) {
            return failed(dir, &e.to_string());
        }
    }
}
