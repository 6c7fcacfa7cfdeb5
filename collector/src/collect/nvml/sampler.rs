//! [`Sampler`]: opens NVML once and reads every device's telemetry on demand.

use std::ffi::{OsStr, OsString};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};

use crate::store::device_samples::DeviceSample;

/// The variable naming the NVML library to load instead of `libnvidia-ml.so.1`.
pub const LIB_ENV: &str = "GPUPROF_NVML_LIB";

/// What does not change while NVML is open: a device's identity and maximum SM clock.
#[derive(Clone, Debug)]
struct Identity {
    index: u32,
    uuid: String,
    name: String,
    pci_bus_id: String,
    max_sm_clock_mhz: u32,
}

/// An initialised NVML and the devices it reported when opened.
pub struct Sampler {
    nvml: Nvml,
    devices: Vec<Identity>,
}

impl Sampler {
    /// Loads NVML (`$GPUPROF_NVML_LIB`, else `libnvidia-ml.so.1` from the loader's
    /// path), initialises it and reads each device's identity. `Err` says why not.
    pub fn open() -> Result<Sampler> {
        Sampler::open_lib(None)
    }

    /// [`Sampler::open`] with the library `lib` when given.
    pub fn open_lib(lib: Option<&OsStr>) -> Result<Sampler> {
        let lib: Option<OsString> = lib
            .map(OsStr::to_os_string)
            .or_else(|| std::env::var_os(LIB_ENV))
            .filter(|v| !v.is_empty());
        let mut builder = Nvml::builder();
        if let Some(lib) = &lib {
            builder.lib_path(lib);
        }
        let nvml = builder.init().with_context(|| match &lib {
            Some(l) => format!("cannot initialise NVML from {}", l.to_string_lossy()),
            None => "cannot initialise NVML (libnvidia-ml.so.1)".to_string(),
        })?;
        let count = nvml.device_count().context("NVML device count")?;
        let mut devices = Vec::with_capacity(count as usize);
        for index in 0..count {
            let d = nvml
                .device_by_index(index)
                .with_context(|| format!("NVML device {index}"))?;
            devices.push(identity(index, &d).with_context(|| format!("NVML device {index}"))?);
        }
        Ok(Sampler { nvml, devices })
    }

    /// How many devices NVML reported when opened.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// One reading of every device, in NVML index order. A value the device does not
    /// report (NVML refuses the query) reads 0; a device NVML no longer answers for is
    /// left out.
    pub fn sample(&mut self) -> Vec<DeviceSample> {
        let mut out = Vec::with_capacity(self.devices.len());
        for id in &self.devices {
            let Ok(d) = self.nvml.device_by_index(id.index) else {
                continue;
            };
            out.push(read(id, &d));
        }
        out
    }
}

fn identity(index: u32, d: &Device) -> Result<Identity> {
    Ok(Identity {
        index,
        uuid: d.uuid()?,
        name: d.name()?,
        pci_bus_id: d.pci_info()?.bus_id,
        max_sm_clock_mhz: d.max_clock_info(Clock::SM).unwrap_or(0),
    })
}

/// `CLOCK_REALTIME` now, in ns.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn read(id: &Identity, d: &Device) -> DeviceSample {
    let time_ns = now_ns();
    let util = d.utilization_rates().ok();
    DeviceSample {
        time_ns,
        index: id.index,
        uuid: id.uuid.clone(),
        name: id.name.clone(),
        pci_bus_id: id.pci_bus_id.clone(),
        gpu_util_pct: util.as_ref().map_or(0, |u| u.gpu),
        mem_util_pct: util.as_ref().map_or(0, |u| u.memory),
        power_w: d.power_usage().map_or(0.0, |mw| f64::from(mw) / 1000.0),
        energy_mj: d.total_energy_consumption().unwrap_or(0),
        fb_used_mib: d.memory_info().map_or(0, |m| m.used >> 20),
        sm_clock_mhz: d.clock_info(Clock::SM).unwrap_or(0),
        mem_clock_mhz: d.clock_info(Clock::Memory).unwrap_or(0),
        max_sm_clock_mhz: id.max_sm_clock_mhz,
        temperature_c: d.temperature(TemperatureSensor::Gpu).unwrap_or(0),
        throttle_reasons: d.current_throttle_reasons().map_or(0, |r| r.bits()),
    }
}
