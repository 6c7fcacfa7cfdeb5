//! The "Devices" section: NVML telemetry per device over the run (`device_samples`),
//! as text, JSON and CSV rows. Shown beside the roofline: MFU is measured against the
//! peak at the maximum clock, so a device whose SM clock ran below its maximum (power
//! cap, thermal slowdown) is named with the share of the peak its clocks allowed.

use std::fmt::Write;

use serde_json::{json, Value};

use super::cells::grid;
use crate::analysis::telemetry::DeviceTelemetry;

/// The CSV columns of the `device_telemetry` section (the JSON keys of
/// [`telemetry_json`]).
pub(super) const TELEMETRY_COLUMNS: [&str; 18] = [
    "session",
    "index",
    "uuid",
    "name",
    "pci_bus_id",
    "samples",
    "sm_clock_min_mhz",
    "sm_clock_mean_mhz",
    "sm_clock_max_mhz",
    "max_sm_clock_mhz",
    "below_max_samples",
    "power_mean_w",
    "power_max_w",
    "energy_j",
    "fb_used_max_mib",
    "gpu_util_mean_pct",
    "throttle_reasons",
    "throttle_mask",
];

/// `mJ` as J with three decimals.
fn joules(mj: u64) -> String {
    format!("{}.{:03}", mj / 1000, mj % 1000)
}

fn reasons(d: &DeviceTelemetry) -> String {
    let names = d.reason_names();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The text section.
pub(super) fn devices_table(out: &mut String, devices: &[DeviceTelemetry], several: bool) {
    out.push_str("\nDevices (NVML, over the run)\n");
    let label = |d: &DeviceTelemetry| {
        if several {
            format!("{}:{}", d.session + 1, d.index)
        } else {
            d.index.to_string()
        }
    };
    let rows: Vec<Vec<String>> = devices
        .iter()
        .map(|d| {
            vec![
                label(d),
                d.samples.to_string(),
                format!(
                    "{}/{:.0}/{}",
                    d.sm_clock_min_mhz, d.sm_clock_mean_mhz, d.sm_clock_max_mhz
                ),
                d.max_sm_clock_mhz.to_string(),
                format!("{:.1}/{:.1}", d.power_mean_w, d.power_max_w),
                joules(d.energy_mj),
                d.fb_used_max_mib.to_string(),
                format!("{:.1}", d.gpu_util_mean_pct),
                reasons(d),
            ]
        })
        .collect();
    grid(
        out,
        &[
            "dev",
            "samples",
            "SM MHz min/mean/max",
            "max MHz",
            "power W mean/max",
            "energy J",
            "mem max MiB",
            "util %",
            "clock event reasons",
        ],
        &[false, true, true, true, true, true, true, true, false],
        &rows,
    );
    for d in devices {
        let _ = writeln!(
            out,
            "  dev {}: {} {} at PCI {}",
            label(d),
            d.name,
            d.uuid,
            d.pci_bus_id
        );
    }
    for d in devices.iter().filter(|d| d.below_max_samples > 0) {
        let _ = writeln!(
            out,
            "  dev {}: SM clock below its maximum in {} of {} samples (min {} MHz of {}):\n    \
             MFU is against the peak at {} MHz; at {} MHz the real peak is {:.0}% of it",
            label(d),
            d.below_max_samples,
            d.samples,
            d.sm_clock_min_mhz,
            d.max_sm_clock_mhz,
            d.max_sm_clock_mhz,
            d.sm_clock_min_mhz,
            100.0 * f64::from(d.sm_clock_min_mhz) / f64::from(d.max_sm_clock_mhz.max(1))
        );
    }
}

/// One JSON object per device, keyed as [`TELEMETRY_COLUMNS`].
pub(super) fn telemetry_json(devices: &[DeviceTelemetry]) -> Value {
    Value::Array(
        devices
            .iter()
            .map(|d| {
                json!({
                    "session": d.session + 1,
                    "index": d.index,
                    "uuid": d.uuid,
                    "name": d.name,
                    "pci_bus_id": d.pci_bus_id,
                    "samples": d.samples,
                    "sm_clock_min_mhz": d.sm_clock_min_mhz,
                    "sm_clock_mean_mhz": d.sm_clock_mean_mhz,
                    "sm_clock_max_mhz": d.sm_clock_max_mhz,
                    "max_sm_clock_mhz": d.max_sm_clock_mhz,
                    "below_max_samples": d.below_max_samples,
                    "power_mean_w": d.power_mean_w,
                    "power_max_w": d.power_max_w,
                    "energy_j": d.energy_mj as f64 / 1000.0,
                    "fb_used_max_mib": d.fb_used_max_mib,
                    "gpu_util_mean_pct": d.gpu_util_mean_pct,
                    "throttle_reasons": d.reason_names().join(";"),
                    "throttle_mask": d.throttle_reasons,
                })
            })
            .collect(),
    )
}
