//! The simulated NVML's own settings, read from the environment on first use; the
//! devices themselves are the simulated driver's (`sim_core::machine`). An unusable
//! value is named once on stderr and the default is used instead.
//!
//! - `SIMNVML_TDP_W` (700): power at full utilisation, W (an H100 SXM's TDP).
//! - `SIMNVML_IDLE_W` (70): power with no kernel running, W; 0 allowed.
//! - `SIMNVML_SAMPLE_PERIOD_MS` (1000): the period utilisation and power are averaged
//!   over.
//! - `SIMNVML_SM_CLOCK_MHZ` (the maximum): the SM clock reported; below the maximum
//!   the device reports the SW power cap as the reason (a power-capped GPU).
//!   Kernel durations do not change: only what NVML reports does.

use std::sync::OnceLock;

use sim_core::machine::{self, non_negative, positive, setting};

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) tdp_mw: u64,
    pub(crate) idle_mw: u64,
    pub(crate) period_ns: u64,
    pub(crate) max_sm_mhz: u32,
    pub(crate) sm_mhz: u32,
    pub(crate) mem_mhz: u32,
    pub(crate) total_mem_bytes: u64,
    pub(crate) temperature_c: u32,
}

pub(crate) fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| from_env(&|k| std::env::var(k).ok()))
}

fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Config {
    let m = machine::get();
    let max_sm_mhz = (m.device.clock_khz / 1000) as u32;
    let tdp_w = setting(var, "SIMNVML_TDP_W", 700, "700", positive);
    let idle_w = setting(var, "SIMNVML_IDLE_W", 70, "70", non_negative).min(tdp_w);
    let below_max = |s: &str| positive(s).filter(|v| *v as u32 <= max_sm_mhz);
    let shown = max_sm_mhz.to_string();
    let sm_mhz = setting(
        var,
        "SIMNVML_SM_CLOCK_MHZ",
        max_sm_mhz as i32,
        &shown,
        below_max,
    );
    Config {
        tdp_mw: tdp_w as u64 * 1000,
        idle_mw: idle_w as u64 * 1000,
        period_ns: setting(var, "SIMNVML_SAMPLE_PERIOD_MS", 1000, "1000", positive) as u64
            * 1_000_000,
        max_sm_mhz,
        sm_mhz: sm_mhz as u32,
        mem_mhz: (m.device.mem_clock_khz / 1000) as u32,
        total_mem_bytes: m.device.total_mem_bytes as u64,
        temperature_c: 40,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_env(&move |k| pairs.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_and_overrides() {
        let c = with(&[]);
        assert_eq!(
            (c.tdp_mw, c.idle_mw, c.period_ns),
            (700_000, 70_000, 1_000_000_000)
        );
        assert_eq!((c.max_sm_mhz, c.sm_mhz, c.mem_mhz), (1980, 1980, 2619));
        let c = with(&[
            ("SIMNVML_IDLE_W", "0"),
            ("SIMNVML_SM_CLOCK_MHZ", "1500"),
            ("SIMNVML_SAMPLE_PERIOD_MS", "100"),
        ]);
        assert_eq!((c.idle_mw, c.sm_mhz, c.period_ns), (0, 1500, 100_000_000));
        let c = with(&[("SIMNVML_SM_CLOCK_MHZ", "2500"), ("SIMNVML_TDP_W", "-1")]);
        assert_eq!((c.sm_mhz, c.tdp_mw), (1980, 700_000));
    }
}
