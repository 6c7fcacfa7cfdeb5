//! Kernel counters as percentages of peak: the compact table of the report's
//! `Counters by kernel` section, the JSON `counters.kernels[].pct` and the CSV
//! `counter_pct` section.
//!
//! Each figure comes from the means per measured launch of metrics the default sets
//! collect ([`super::counters`] merges them per kernel name; the metrics of one
//! formula are in one pass group, except the L2 lookups, whose hit and miss parts
//! come from different launches of the same kernel):
//!
//! - SM active % = 100 x `sm__cycles_active.avg` / (`gpu__time_duration.sum` x the
//!   device's core clock). The clock is the one the `Device` record holds (CUDA's
//!   `CLOCK_RATE`, the maximum); a GPU running slower makes the figure low.
//! - tensor pipe % = `sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active`.
//! - DRAM % = 100 x (`dram__bytes_read.sum` + `dram__bytes_write.sum`) /
//!   (`gpu__time_duration.sum` x the peak DRAM bandwidth the roofline uses), or
//!   `dram__throughput.avg.pct_of_peak_sustained_elapsed` when that was collected
//!   instead.
//! - L2 hit % = `lts__t_sector_hit_rate.pct` when collected, else 100 x
//!   `lts__t_sectors_lookup_hit.sum` / (`..._hit.sum` + `lts__t_sectors_lookup_miss.sum`).
//! - occupancy % = `sm__warps_active.avg.pct_of_peak_sustained_active` (achieved
//!   occupancy).
//!
//! A figure whose metrics the kernel lacks is [`Pct::Lacking`]; one whose metrics are
//! there but whose device facts are not (no device record, no clock, no peak
//! bandwidth, GPU models that disagree) is [`Pct::Unknown`] with the reason: nothing
//! is guessed.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::aggregate::Aggregate;
use crate::analysis::roofline::peaks::{peaks_for, Overrides};

/// A kernel's merged metric means per measured launch, by metric name.
pub type Means<'a> = BTreeMap<&'a str, f64>;

pub const SM_CYCLES_ACTIVE: &str = "sm__cycles_active.avg";
pub const GPU_TIME: &str = "gpu__time_duration.sum";
pub const TENSOR_PIPE: &str = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
pub const DRAM_READ: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
pub const DRAM_THROUGHPUT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
pub const L2_HIT_RATE: &str = "lts__t_sector_hit_rate.pct";
pub const L2_HIT: &str = "lts__t_sectors_lookup_hit.sum";
pub const L2_MISS: &str = "lts__t_sectors_lookup_miss.sum";
pub const OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";

/// One percentage of one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Pct {
    Value(f64),
    /// The kernel has no value of a metric the figure needs.
    Lacking,
    /// The metrics are there; this is why the figure cannot be made from them.
    Unknown(String),
}

impl Pct {
    pub fn value(&self) -> Option<f64> {
        match self {
            Pct::Value(v) => Some(*v),
            _ => None,
        }
    }
}

/// The percentages of one kernel name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelPct {
    /// As recorded.
    pub mangled: String,
    pub sm_active: Pct,
    pub tensor_pipe: Pct,
    pub dram_throughput: Pct,
    pub l2_hit_rate: Pct,
    pub achieved_occupancy: Pct,
}

impl KernelPct {
    /// `(column key, value)` in table order.
    pub fn columns(&self) -> [(&'static str, &Pct); 5] {
        [
            ("sm_active", &self.sm_active),
            ("tensor_pipe", &self.tensor_pipe),
            ("dram_throughput", &self.dram_throughput),
            ("l2_hit_rate", &self.l2_hit_rate),
            ("achieved_occupancy", &self.achieved_occupancy),
        ]
    }
}

/// What the percentages need of the GPU a kernel ran on.
#[derive(Debug, Clone, PartialEq)]
struct Gpu {
    /// Core clock in Hz, or why there is none.
    clock_hz: Result<f64, String>,
    /// Peak DRAM bytes/s, or why there is none.
    bandwidth: Result<f64, String>,
}

/// The percentages of each of `kernels` (mangled name and metric means, as
/// [`super::counters::Counters::kernels`] holds them), with the peak bandwidth of
/// `overrides` or the built-in table, as the roofline takes it.
pub fn counter_pct(
    a: &Aggregate,
    kernels: &[(&str, Means)],
    overrides: &Overrides,
) -> Vec<KernelPct> {
    let mut devices: BTreeMap<&str, BTreeSet<(u32, u32)>> = BTreeMap::new();
    for c in &a.classes.list {
        devices
            .entry(c.mangled.as_str())
            .or_default()
            .insert((c.key.pid, c.key.device_id));
    }
    let mut gpus: BTreeMap<(u32, u32), Gpu> = BTreeMap::new();
    kernels
        .iter()
        .map(|k| {
            let on: Vec<Gpu> = devices
                .get(k.0)
                .into_iter()
                .flatten()
                .map(|&(pid, dev)| {
                    gpus.entry((pid, dev))
                        .or_insert_with(|| gpu(a, pid, dev, overrides))
                        .clone()
                })
                .collect();
            kernel_pct(k.0, &k.1, &on)
        })
        .collect()
}

fn gpu(a: &Aggregate, pid: u32, device: u32, overrides: &Overrides) -> Gpu {
    let Some(d) = a.devices.get(&(pid, device)) else {
        let why = format!("no device record for device {device} of pid {}", a.pid(pid));
        return Gpu {
            clock_hz: Err(why.clone()),
            bandwidth: Err(why),
        };
    };
    Gpu {
        clock_hz: if d.core_clock_khz > 0 {
            Ok(f64::from(d.core_clock_khz) * 1000.0)
        } else {
            Err(format!("{} reports no core clock", d.name.trim()))
        },
        bandwidth: match peaks_for(d, overrides) {
            Ok(p) => p.bandwidth().ok_or_else(|| {
                format!(
                    "no peak DRAM bandwidth for {} ({})",
                    d.name.trim(),
                    p.source
                )
            }),
            Err(e) => Err(e),
        },
    }
}

/// The one value of `f` over `gpus`, or why there is none.
fn common(
    gpus: &[Gpu],
    what: &str,
    f: impl Fn(&Gpu) -> &Result<f64, String>,
) -> Result<f64, String> {
    let mut out: Option<f64> = None;
    for g in gpus {
        let v = f(g).clone()?;
        match out {
            Some(o) if o != v => return Err(format!("ran on GPUs with different {what}s")),
            _ => out = Some(v),
        }
    }
    out.ok_or_else(|| "no kernel record".to_string())
}

/// The percentages of one kernel from its merged `metrics` and the GPUs it ran on.
fn kernel_pct(mangled: &str, means: &Means, gpus: &[Gpu]) -> KernelPct {
    let mean = |name: &str| means.get(name).copied();
    let direct = |name: &str| mean(name).map_or(Pct::Lacking, Pct::Value);
    // A share of the kernel's duration at a device rate.
    let share = |amount: Option<f64>, rate: Result<f64, String>| -> Pct {
        let (Some(amount), Some(ns)) = (amount, mean(GPU_TIME)) else {
            return Pct::Lacking;
        };
        if ns <= 0.0 {
            return Pct::Unknown(format!("{GPU_TIME} is 0"));
        }
        match rate {
            Ok(rate) => Pct::Value(100.0 * amount / (ns * rate / 1e9)),
            Err(why) => Pct::Unknown(why),
        }
    };
    let sm_active = share(
        mean(SM_CYCLES_ACTIVE),
        common(gpus, "core clock", |g| &g.clock_hz),
    );
    let bytes = match (mean(DRAM_READ), mean(DRAM_WRITE)) {
        (Some(r), Some(w)) => Some(r + w),
        _ => None,
    };
    let dram_throughput = match (bytes, mean(DRAM_THROUGHPUT)) {
        (None, Some(pct)) => Pct::Value(pct),
        _ => share(bytes, common(gpus, "peak DRAM bandwidth", |g| &g.bandwidth)),
    };
    let l2_hit_rate = match (mean(L2_HIT_RATE), mean(L2_HIT), mean(L2_MISS)) {
        (Some(pct), _, _) => Pct::Value(pct),
        (None, Some(hit), Some(miss)) if hit + miss > 0.0 => Pct::Value(100.0 * hit / (hit + miss)),
        (None, Some(_), Some(_)) => Pct::Unknown("no L2 sector lookups counted".to_string()),
        _ => Pct::Lacking,
    };
    KernelPct {
        mangled: mangled.to_string(),
        sm_active,
        tensor_pipe: direct(TENSOR_PIPE),
        dram_throughput,
        l2_hit_rate,
        achieved_occupancy: direct(OCCUPANCY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mean of `sum` over `launches`.
    fn m(metric: &str, launches: u64, sum: f64) -> (&str, f64) {
        (metric, sum / launches as f64)
    }

    fn gpu_2ghz_2tbs() -> Gpu {
        Gpu {
            clock_hz: Ok(2e9),
            bandwidth: Ok(2e12),
        }
    }

    fn sorted(v: Vec<(&str, f64)>) -> Means<'_> {
        v.into_iter().collect()
    }

    #[test]
    fn every_figure_from_its_metrics() {
        // 2 launches of 10 µs: 10000 active cycles of 20000 elapsed at 2 GHz; 10 MB
        // in 10 µs of 2 TB/s; hit 300 of 400 lookups (hit and miss from different
        // launches).
        let metrics = sorted(vec![
            m(GPU_TIME, 2, 20_000.0),
            m(SM_CYCLES_ACTIVE, 2, 20_000.0),
            m(TENSOR_PIPE, 1, 42.5),
            m(DRAM_READ, 2, 16_000_000.0),
            m(DRAM_WRITE, 2, 4_000_000.0),
            m(L2_HIT, 2, 600.0),
            m(L2_MISS, 1, 100.0),
            m(OCCUPANCY, 2, 75.0),
        ]);
        let p = kernel_pct("k", &metrics, &[gpu_2ghz_2tbs(), gpu_2ghz_2tbs()]);
        assert_eq!(p.sm_active, Pct::Value(50.0));
        assert_eq!(p.tensor_pipe, Pct::Value(42.5));
        assert_eq!(p.dram_throughput, Pct::Value(50.0));
        assert_eq!(p.l2_hit_rate, Pct::Value(75.0));
        assert_eq!(p.achieved_occupancy, Pct::Value(37.5));
    }

    #[test]
    fn a_missing_metric_is_lacking_a_missing_device_fact_is_unknown() {
        let metrics = sorted(vec![
            m(GPU_TIME, 1, 1000.0),
            m(SM_CYCLES_ACTIVE, 1, 990.0),
            m(DRAM_READ, 1, 10.0),
            m(L2_HIT, 1, 0.0),
            m(L2_MISS, 1, 0.0),
        ]);
        let no_device = Gpu {
            clock_hz: Err("no device record for device 0 of pid 7".into()),
            bandwidth: Err("no device record for device 0 of pid 7".into()),
        };
        let p = kernel_pct("k", &metrics, &[no_device]);
        assert_eq!(
            p.sm_active,
            Pct::Unknown("no device record for device 0 of pid 7".into())
        );
        assert_eq!(p.tensor_pipe, Pct::Lacking);
        assert_eq!(p.dram_throughput, Pct::Lacking, "no write bytes");
        assert_eq!(
            p.l2_hit_rate,
            Pct::Unknown("no L2 sector lookups counted".into())
        );
        assert_eq!(p.achieved_occupancy, Pct::Lacking);

        let slower = Gpu {
            clock_hz: Ok(1e9),
            bandwidth: Ok(2e12),
        };
        let p = kernel_pct("k", &metrics, &[gpu_2ghz_2tbs(), slower]);
        assert_eq!(
            p.sm_active,
            Pct::Unknown("ran on GPUs with different core clocks".into())
        );
    }

    #[test]
    fn collected_percentages_are_taken_as_they_are() {
        let metrics = sorted(vec![m(DRAM_THROUGHPUT, 2, 130.0), m(L2_HIT_RATE, 1, 88.5)]);
        let p = kernel_pct("k", &metrics, &[]);
        assert_eq!(p.dram_throughput, Pct::Value(65.0));
        assert_eq!(p.l2_hit_rate, Pct::Value(88.5));
        assert_eq!(p.sm_active, Pct::Lacking);
    }
}
