//! How much of the program's time counter measurements may take.
//!
//! On a real GPU a measured launch costs the launching thread tens of milliseconds
//! (CUPTI 13.0 on H100 and H200: about 35 ms in `cuptiRangeProfilerStart` and 6.5 ms
//! in `cuptiRangeProfilerStop` for each launch; docs/ARCHITECTURE.md), so measuring
//! the first launches of every kernel key of a serving engine, with its thousands of
//! keys, would stall it for minutes. The time the launching threads spend measuring
//! is charged here, and a launch is measured only while that total stays under
//! `fraction` of the time since start-up plus [`GRACE`]. Keys not yet measured with
//! every pass group keep the first half of the budget to themselves: once more than
//! half is spent, only they are measured, so a kernel seen late still gets counters
//! before the early ones get more.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Measurement time allowed on top of the fraction: the first launches of a short
/// program.
pub const GRACE: Duration = Duration::from_secs(2);

/// What the budget admits now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Any launch the policy measures.
    All,
    /// Only launches of keys not yet measured with every group.
    FirstRound,
    /// None.
    Nothing,
}

/// Measurement time spent against the time elapsed.
#[derive(Debug)]
pub struct Budget {
    spent_ns: AtomicU64,
    /// Start-up, and the share of the elapsed time measurements may take (`None`:
    /// no limit).
    set: OnceLock<(Instant, Option<f64>)>,
}

impl Budget {
    pub const fn new() -> Budget {
        Budget {
            spent_ns: AtomicU64::new(0),
            set: OnceLock::new(),
        }
    }

    /// `percent` of the elapsed time (100 or more: no limit), counted from now.
    pub fn start(&self, percent: u32) {
        let fraction = (percent < 100).then(|| f64::from(percent) / 100.0);
        let _ = self.set.set((Instant::now(), fraction));
    }

    /// What may be measured at `now`.
    pub fn admit(&self, now: Instant) -> Admit {
        let Some(&(start, Some(fraction))) = self.set.get() else {
            return Admit::All;
        };
        let elapsed = now.saturating_duration_since(start);
        let allowed = GRACE.as_secs_f64() + fraction * elapsed.as_secs_f64();
        let spent = self.spent_ns.load(Ordering::Relaxed) as f64 / 1e9;
        if spent >= allowed {
            Admit::Nothing
        } else if spent >= allowed / 2.0 {
            Admit::FirstRound
        } else {
            Admit::All
        }
    }

    /// A measurement took `d` of a launching thread's time.
    pub fn charge(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.spent_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Measurement time charged so far.
    pub fn spent(&self) -> Duration {
        Duration::from_nanos(self.spent_ns.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_its_fraction_of_the_elapsed_time_plus_the_grace() {
        let b = Budget::new();
        b.start(10);
        let t0 = b.set.get().unwrap().0;
        assert_eq!(b.admit(t0), Admit::All);
        // 1.5 s spent at start: over half of the 2 s grace, under all of it.
        b.charge(Duration::from_millis(1500));
        assert_eq!(b.admit(t0), Admit::FirstRound);
        b.charge(Duration::from_millis(500));
        assert_eq!(b.admit(t0), Admit::Nothing);
        // 2 s spent: 10 s later 3 s are allowed (2 s grace + 1 s), half of it 1.5 s.
        assert_eq!(b.admit(t0 + Duration::from_secs(10)), Admit::FirstRound);
        // 40 s later, 6 s allowed: 2 s spent is under half.
        assert_eq!(b.admit(t0 + Duration::from_secs(40)), Admit::All);
        assert_eq!(b.spent(), Duration::from_secs(2));
    }

    #[test]
    fn a_hundred_percent_or_more_is_no_limit() {
        let b = Budget::new();
        b.start(100);
        b.charge(Duration::from_secs(3600));
        assert_eq!(b.admit(Instant::now()), Admit::All);
    }
}
