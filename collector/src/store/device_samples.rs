//! The `device_samples` table: [`DeviceSample`]s to rows and back.

use crate::nvml::DeviceSample;

use super::columns::{RowReader, RowWriter};

/// Appends `s` as one row of the `device_samples` writer `w`.
pub fn write_sample(w: &mut RowWriter, s: &DeviceSample) {
    w.u64(s.time_ns);
    w.u32(s.index);
    w.str(&s.uuid);
    w.str(&s.name);
    w.str(&s.pci_bus_id);
    w.u32(s.gpu_util_pct);
    w.u32(s.mem_util_pct);
    w.f64(s.power_w);
    w.u64(s.energy_mj);
    w.u64(s.fb_used_mib);
    w.u32(s.sm_clock_mhz);
    w.u32(s.mem_clock_mhz);
    w.u32(s.max_sm_clock_mhz);
    w.u32(s.temperature_c);
    w.u64(s.throttle_reasons);
    w.end_row();
}

/// Reads row `row` of a `device_samples` batch.
pub fn read_sample(r: &mut RowReader, row: usize) -> DeviceSample {
    r.seek(row);
    DeviceSample {
        time_ns: r.u64(),
        index: r.u32(),
        uuid: r.str(),
        name: r.str(),
        pci_bus_id: r.str(),
        gpu_util_pct: r.u32(),
        mem_util_pct: r.u32(),
        power_w: r.f64(),
        energy_mj: r.u64(),
        fb_used_mib: r.u64(),
        sm_clock_mhz: r.u32(),
        mem_clock_mhz: r.u32(),
        max_sm_clock_mhz: r.u32(),
        temperature_c: r.u32(),
        throttle_reasons: r.u64(),
    }
}
