//! NVML readings (`device_samples`) summed per device over the run: clocks, power,
//! energy, memory, utilisation and the clock event reasons seen. Folded sample by
//! sample, so memory does not grow with the run's length.

use serde::Serialize;

use crate::store::device_samples::DeviceSample;

/// One device over the run (one session's samples of one NVML device).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceTelemetry {
    /// The session it was read in (0 for the first or only one).
    pub session: usize,
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: String,
    pub samples: u64,
    pub sm_clock_min_mhz: u32,
    pub sm_clock_mean_mhz: f64,
    pub sm_clock_max_mhz: u32,
    /// The device's maximum SM clock (the highest any sample gave).
    pub max_sm_clock_mhz: u32,
    /// Samples whose SM clock was below the maximum.
    pub below_max_samples: u64,
    pub power_mean_w: f64,
    pub power_max_w: f64,
    /// Energy used between the first sample and the last, mJ (the counter's increase).
    pub energy_mj: u64,
    pub fb_used_max_mib: u64,
    pub gpu_util_mean_pct: f64,
    /// Every clock event reason any sample gave (`nvmlClocksEventReasons` bits).
    pub throttle_reasons: u64,
    #[serde(skip)]
    last_energy_mj: u64,
    #[serde(skip)]
    sm_clock_sum: u64,
    #[serde(skip)]
    power_sum_w: f64,
    #[serde(skip)]
    util_sum: u64,
}

impl DeviceTelemetry {
    fn new(session: usize, s: &DeviceSample) -> DeviceTelemetry {
        DeviceTelemetry {
            session,
            index: s.index,
            uuid: s.uuid.clone(),
            name: s.name.clone(),
            pci_bus_id: s.pci_bus_id.clone(),
            samples: 0,
            sm_clock_min_mhz: u32::MAX,
            sm_clock_mean_mhz: 0.0,
            sm_clock_max_mhz: 0,
            max_sm_clock_mhz: 0,
            below_max_samples: 0,
            power_mean_w: 0.0,
            power_max_w: 0.0,
            energy_mj: 0,
            fb_used_max_mib: 0,
            gpu_util_mean_pct: 0.0,
            throttle_reasons: 0,
            last_energy_mj: s.energy_mj,
            sm_clock_sum: 0,
            power_sum_w: 0.0,
            util_sum: 0,
        }
    }

    fn add(&mut self, s: &DeviceSample) {
        self.samples += 1;
        let n = self.samples as f64;
        self.sm_clock_min_mhz = self.sm_clock_min_mhz.min(s.sm_clock_mhz);
        self.sm_clock_max_mhz = self.sm_clock_max_mhz.max(s.sm_clock_mhz);
        self.sm_clock_sum += u64::from(s.sm_clock_mhz);
        self.sm_clock_mean_mhz = self.sm_clock_sum as f64 / n;
        self.max_sm_clock_mhz = self.max_sm_clock_mhz.max(s.max_sm_clock_mhz);
        if s.sm_clock_mhz < s.max_sm_clock_mhz {
            self.below_max_samples += 1;
        }
        self.power_sum_w += s.power_w;
        self.power_mean_w = self.power_sum_w / n;
        self.power_max_w = self.power_max_w.max(s.power_w);
        // A counter that went back (the driver was reloaded) restarted from 0.
        self.energy_mj += match s.energy_mj.checked_sub(self.last_energy_mj) {
            Some(d) => d,
            None => s.energy_mj,
        };
        self.last_energy_mj = s.energy_mj;
        self.fb_used_max_mib = self.fb_used_max_mib.max(s.fb_used_mib);
        self.util_sum += u64::from(s.gpu_util_pct);
        self.gpu_util_mean_pct = self.util_sum as f64 / n;
        self.throttle_reasons |= s.throttle_reasons;
    }

    /// The names of [`DeviceTelemetry::throttle_reasons`].
    pub fn reason_names(&self) -> Vec<&'static str> {
        reason_names(self.throttle_reasons)
    }
}

/// `nvmlClocksEventReasons` bits and their names (nvml.h).
pub const REASONS: &[(u64, &str)] = &[
    (0x1, "GPU idle"),
    (0x2, "applications clocks setting"),
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal slowdown"),
    (0x40, "HW thermal slowdown"),
    (0x80, "HW power brake slowdown"),
    (0x100, "display clock setting"),
];

/// The names of the bits of `mask`; a bit nvml.h does not name is shown in hex.
pub fn reason_names(mask: u64) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    let known = REASONS.iter().fold(0, |m, (bit, _)| m | bit);
    if mask & !known != 0 {
        names.push("other");
    }
    names
}

/// Folds samples into per-device summaries, in the order devices first appear.
#[derive(Debug, Default)]
pub struct TelemetryAggregator {
    devices: Vec<DeviceTelemetry>,
}

impl TelemetryAggregator {
    /// Adds samples read in session `session`, in the order taken.
    pub fn add(&mut self, session: usize, samples: &[DeviceSample]) {
        for s in samples {
            let i = match self
                .devices
                .iter()
                .position(|d| d.session == session && d.uuid == s.uuid && d.index == s.index)
            {
                Some(i) => i,
                None => {
                    self.devices.push(DeviceTelemetry::new(session, s));
                    self.devices.len() - 1
                }
            };
            self.devices[i].add(s);
        }
    }

    /// Per device, in order of first appearance.
    pub fn finish(self) -> Vec<DeviceTelemetry> {
        self.devices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time_ns: u64, sm: u32, power_w: f64, energy_mj: u64, util: u32) -> DeviceSample {
        DeviceSample {
            time_ns,
            index: 0,
            uuid: "GPU-a".into(),
            name: "NVIDIA H100 80GB HBM3".into(),
            pci_bus_id: "00000000:01:00.0".into(),
            gpu_util_pct: util,
            mem_util_pct: 0,
            power_w,
            energy_mj,
            fb_used_mib: u64::from(util) * 10,
            sm_clock_mhz: sm,
            mem_clock_mhz: 2619,
            max_sm_clock_mhz: 1980,
            temperature_c: 40,
            throttle_reasons: if sm < 1980 { 0x4 } else { 0 },
        }
    }

    #[test]
    fn a_device_over_the_run() {
        let mut a = TelemetryAggregator::default();
        a.add(
            0,
            &[
                sample(1, 1980, 70.0, 1_000, 0),
                sample(2, 1500, 400.0, 2_000, 50),
            ],
        );
        a.add(0, &[sample(3, 1980, 100.0, 2_500, 10)]);
        let d = &a.finish()[0];
        assert_eq!(d.samples, 3);
        assert_eq!((d.sm_clock_min_mhz, d.sm_clock_max_mhz), (1500, 1980));
        assert_eq!(d.sm_clock_mean_mhz, 5460.0 / 3.0);
        assert_eq!((d.max_sm_clock_mhz, d.below_max_samples), (1980, 1));
        assert_eq!((d.power_mean_w, d.power_max_w), (190.0, 400.0));
        assert_eq!(d.energy_mj, 1_500);
        assert_eq!(d.fb_used_max_mib, 500);
        assert_eq!(d.gpu_util_mean_pct, 20.0);
        assert_eq!(d.reason_names(), ["SW power cap"]);
    }

    #[test]
    fn devices_and_sessions_are_kept_apart_and_a_reset_counter_restarts() {
        let mut a = TelemetryAggregator::default();
        let mut other = sample(1, 1980, 70.0, 5, 0);
        other.uuid = "GPU-b".into();
        other.index = 1;
        a.add(0, &[sample(1, 1980, 70.0, 100, 0), other.clone()]);
        a.add(
            0,
            &[sample(2, 1980, 70.0, 300, 0), sample(3, 1980, 70.0, 50, 0)],
        );
        a.add(1, &[sample(1, 1980, 70.0, 7, 0)]);
        let d = a.finish();
        assert_eq!(d.len(), 3);
        // 100 -> 300 is 200; the counter then restarts at 50: 200 + 50.
        assert_eq!((d[0].uuid.as_str(), d[0].energy_mj), ("GPU-a", 250));
        assert_eq!((d[1].uuid.as_str(), d[1].samples), ("GPU-b", 1));
        assert_eq!((d[2].session, d[2].energy_mj), (1, 0));
        assert_eq!(
            reason_names(0x4 | 0x40 | 0x8000),
            ["SW power cap", "HW thermal slowdown", "other"]
        );
    }
}
