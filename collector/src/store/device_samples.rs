//! The `device_samples` table: [`DeviceSample`]s (NVML readings) to rows and back.

use super::cells::Cells;
use super::columns::{RowReader, RowWriter};

/// One NVML reading of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSample {
    /// `CLOCK_REALTIME` ns when read.
    pub time_ns: u64,
    /// NVML index.
    pub index: u32,
    /// "GPU-xxxxxxxx-xxxx-..."
    pub uuid: String,
    /// "NVIDIA H100 80GB HBM3"
    pub name: String,
    /// "00000000:01:00.0"
    pub pci_bus_id: String,
    pub gpu_util_pct: u32,
    pub mem_util_pct: u32,
    pub power_w: f64,
    /// Total energy since the driver was loaded, millijoules.
    pub energy_mj: u64,
    pub fb_used_mib: u64,
    pub sm_clock_mhz: u32,
    pub mem_clock_mhz: u32,
    pub max_sm_clock_mhz: u32,
    pub temperature_c: u32,
    /// `nvmlClocksEventReasons` bitmask.
    pub throttle_reasons: u64,
}

/// Appends `s` as one row of the `device_samples` writer `w` (its columns:
/// [`super::tables::TABLES`]).
pub fn write_sample(w: &mut RowWriter, s: &DeviceSample) {
    s.write(w);
    w.end_row();
}

/// Reads row `row` of a `device_samples` batch.
pub fn read_sample(r: &mut RowReader, row: usize) -> Result<DeviceSample, String> {
    r.seek(row);
    DeviceSample::read(r)
}
