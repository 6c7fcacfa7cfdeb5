//! What NVML reports, from the operations the simulated driver ran
//! (`sim_core::telemetry`). Pure functions of those intervals and the time asked.
//!
//! - Utilisation (`nvmlUtilization_t::gpu`): the percent (rounded down) of the last
//!   complete sample period during which a kernel ran. Periods are fixed slices of
//!   `CLOCK_REALTIME` (`[k·P, (k+1)·P)`); asked at `t`, the period is the one ending at
//!   `⌊t/P⌋·P`. `memory` is the same for copies and sets.
//! - Power (`nvmlDeviceGetPowerUsage`, mW): `idle + (TDP − idle) × busy / P` over the
//!   same period (rounded down), as Ampere and later average power over a period.
//! - Energy (`nvmlDeviceGetTotalEnergyConsumption`, mJ): the integral of that power
//!   from the driver's load to `t`: `(idle × (t − loaded) + (TDP − idle) × kernel time
//!   up to t) / 10⁹` with powers in mW and times in ns, rounded down.
//!
//! Overlapping intervals (processes sharing a device) count once.

use sim_core::telemetry::{Busy, Work};

/// Powers, mW.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Power {
    pub(crate) idle_mw: u64,
    pub(crate) tdp_mw: u64,
}

/// The last complete period before `now`: `[start, end)`.
pub(crate) fn period(now: u64, period_ns: u64) -> (u64, u64) {
    let end = now / period_ns * period_ns;
    (end.saturating_sub(period_ns), end)
}

/// How long `work` ran within `[from, to)`, overlaps counted once.
pub(crate) fn busy_in(ops: &[Busy], work: Work, from: u64, to: u64) -> u64 {
    let mut spans: Vec<(u64, u64)> = ops
        .iter()
        .filter(|b| b.work == work)
        .map(|b| (b.start_ns.max(from), b.end_ns.min(to)))
        .filter(|(s, e)| s < e)
        .collect();
    spans.sort_unstable();
    let (mut total, mut reach) = (0, 0);
    for (s, e) in spans {
        let s = s.max(reach);
        if e > s {
            total += e - s;
            reach = e;
        }
    }
    total
}

/// `busy` of `period_ns` as a percent, rounded down.
pub(crate) fn percent(busy: u64, period_ns: u64) -> u32 {
    (u128::from(busy) * 100 / u128::from(period_ns)) as u32
}

/// Average power over a period with `busy` ns of kernels, mW.
pub(crate) fn power_mw(p: Power, busy: u64, period_ns: u64) -> u64 {
    p.idle_mw + ((p.tdp_mw - p.idle_mw) as u128 * busy as u128 / period_ns as u128) as u64
}

/// Energy from `loaded` to `now`, mJ.
pub(crate) fn energy_mj(p: Power, ops: &[Busy], loaded: u64, now: u64) -> u64 {
    let kernels = busy_in(ops, Work::Kernel, 0, now) as u128;
    let idle = p.idle_mw as u128 * now.saturating_sub(loaded) as u128;
    ((idle + (p.tdp_mw - p.idle_mw) as u128 * kernels) / 1_000_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(start_ns: u64, end_ns: u64) -> Busy {
        Busy {
            work: Work::Kernel,
            start_ns,
            end_ns,
        }
    }

    #[test]
    fn period_is_the_last_complete_slice() {
        assert_eq!(period(2_500, 1_000), (1_000, 2_000));
        assert_eq!(period(2_000, 1_000), (1_000, 2_000));
        assert_eq!(period(500, 1_000), (0, 0));
    }

    #[test]
    fn busy_time_clips_and_merges() {
        let ops = [
            k(100, 300),
            k(250, 400),
            Busy {
                work: Work::Transfer,
                start_ns: 0,
                end_ns: 1000,
            },
            k(900, 1200),
        ];
        assert_eq!(busy_in(&ops, Work::Kernel, 0, 1000), 300 + 100);
        assert_eq!(busy_in(&ops, Work::Kernel, 200, 950), 200 + 50);
        assert_eq!(busy_in(&ops, Work::Transfer, 500, 2000), 500);
        assert_eq!(percent(400, 1000), 40);
        assert_eq!(percent(999, 1000), 99);
    }

    #[test]
    fn power_and_energy() {
        let p = Power {
            idle_mw: 70_000,
            tdp_mw: 700_000,
        };
        // A quarter of the period busy: 70 W + 630 W / 4.
        assert_eq!(power_mw(p, 250, 1000), 227_500);
        // 2 s since load, 0.5 s of kernels: 70 W × 2 s + 630 W × 0.5 s = 455 J.
        let ops = [k(1_000_000_000, 1_500_000_000)];
        assert_eq!(energy_mj(p, &ops, 0, 2_000_000_000), 455_000);
        // Only what has run by `now` counts.
        assert_eq!(energy_mj(p, &ops, 0, 1_250_000_000), 87_500 + 157_500);
    }
}
