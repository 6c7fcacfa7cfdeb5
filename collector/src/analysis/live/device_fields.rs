//! dcgm-exporter's `DCGM_FI_DEV_*` series from NVML readings ([`crate::collect::nvml`]): the
//! latest reading of each GPU, in the units of dcgm-exporter's default counter list
//! (W, mJ, MiB, MHz, °C, %). A GPU is matched to the session's by UUID;
//! NVML's index, name and PCI bus id become its labels, as dcgm-exporter's are.

use crate::store::device_samples::DeviceSample;

use super::snapshot::{Gpu, Totals};

/// The NVML fields, in the order they are shown: (DCGM field, help).
pub const DEVICE_FIELDS: &[(&str, &str)] = &[
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since boot (in mJ).",
    ),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "Current clock throttle reasons (bitmask of nvmlClocksEventReasons).",
    ),
];

/// The values of [`DEVICE_FIELDS`] in one reading.
fn values(s: &DeviceSample) -> [f64; 9] {
    [
        s.gpu_util_pct as f64,
        s.mem_util_pct as f64,
        s.power_w,
        s.energy_mj as f64,
        s.fb_used_mib as f64,
        s.sm_clock_mhz as f64,
        s.mem_clock_mhz as f64,
        s.temperature_c as f64,
        s.throttle_reasons as f64,
    ]
}

/// Adds the latest reading of each GPU in `samples` (the last one per UUID wins) to
/// `gpus`: a GPU of the session gets NVML's labels and fields, a GPU the program did
/// not use is added with its fields only. `hostname` is this machine's.
pub fn add_readings(gpus: &mut Vec<Gpu>, samples: &[DeviceSample], hostname: &str) {
    for s in samples {
        let fields = DEVICE_FIELDS
            .iter()
            .zip(values(s))
            .map(|((name, _), v)| (*name, v));
        let gpu = match gpus.iter_mut().position(|g| g.uuid == s.uuid) {
            Some(i) => &mut gpus[i],
            None => {
                gpus.push(Gpu {
                    gpu: s.index,
                    uuid: s.uuid.clone(),
                    model: String::new(),
                    pci_bus_id: String::new(),
                    hostname: hostname.to_string(),
                    totals: Totals::default(),
                    fields: Vec::new(),
                });
                gpus.last_mut().expect("just pushed")
            }
        };
        gpu.gpu = s.index;
        gpu.model = s.name.trim().to_string();
        gpu.pci_bus_id = s.pci_bus_id.clone();
        gpu.fields.retain(|(n, _)| !n.starts_with("DCGM_FI_DEV_"));
        gpu.fields.extend(fields);
    }
    gpus.sort_by_key(|g| g.gpu);
}
