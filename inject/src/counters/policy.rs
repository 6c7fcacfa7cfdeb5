//! Which launches are measured, and with which pass group.
//!
//! A kernel key is (name, grid, block, GEMM shape): the launches of one cuBLAS kernel
//! for two GEMM shapes are two keys, each measured with every group (the collector's
//! classes, whose counters scale to their launches, hold one shape each). Of the launches of a key, every `every`-th
//! (the 1st, the `every+1`-th, ...) is a candidate, and the first `launches` candidates
//! are measured (`launches` 0: all of them). The i-th measured launch of a key
//! (from 0) measures group `i % groups`, so successive measured launches rotate
//! through the groups.
//!
//! Memory is bounded: at most [`MAX_KEYS`] keys are tracked; launches of further keys
//! are not measured.

use std::collections::HashMap;

use super::budget::Admit;

/// Keys tracked at most.
pub const MAX_KEYS: usize = 1 << 16;

/// Grid, block and a hash of the GEMM call's shape (0 outside a GEMM call).
type Dims = ([u32; 3], [u32; 3], u64);

#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    launches: u64,
    measured: u64,
    /// Never measured again ([`Policy::exclude`]).
    excluded: bool,
}

/// The launch policy and what it has seen.
#[derive(Debug)]
pub struct Policy {
    launches: u64,
    every: u64,
    /// By launch dimensions, then by name (looked up by `&str`, no allocation).
    keys: HashMap<Dims, HashMap<Box<str>, Seen>>,
    nkeys: usize,
}

impl Policy {
    /// `launches` measured per key at most (0: no limit), every `every`-th launch
    /// (0 counts as 1).
    pub fn new(launches: u64, every: u64) -> Policy {
        Policy {
            launches,
            every: every.max(1),
            keys: HashMap::new(),
            nkeys: 0,
        }
    }

    /// Counts a launch of (`name`, `grid`, `block`, `shape`); `Some(group)` if it is
    /// measured. `admit` is what the time budget allows now: with
    /// [`Admit::FirstRound`] only a key not yet measured with every group is.
    pub fn decide(
        &mut self,
        name: &str,
        grid: [u32; 3],
        block: [u32; 3],
        shape: u64,
        groups: usize,
        admit: Admit,
    ) -> Option<u32> {
        if groups == 0 {
            return None;
        }
        let dims = (grid, block, shape);
        let known = self.keys.get(&dims).is_some_and(|m| m.contains_key(name));
        if !known {
            if self.nkeys >= MAX_KEYS {
                return None;
            }
            self.keys
                .entry(dims)
                .or_default()
                .insert(name.into(), Seen::default());
            self.nkeys += 1;
        }
        let seen = self.keys.get_mut(&dims)?.get_mut(name)?;
        let index = seen.launches;
        seen.launches += 1;
        if seen.excluded
            || index % self.every != 0
            || (self.launches != 0 && seen.measured >= self.launches)
            || admit == Admit::Nothing
            || (admit == Admit::FirstRound && seen.measured >= groups as u64)
        {
            return None;
        }
        let group = seen.measured % groups as u64;
        seen.measured += 1;
        Some(group as u32)
    }

    /// Takes back the last measurement [`Policy::decide`] gave (`name`, `grid`,
    /// `block`, `shape`): the launch could not be measured after all, and its group goes to
    /// the key's next measured launch.
    pub fn undo(&mut self, name: &str, grid: [u32; 3], block: [u32; 3], shape: u64) {
        if let Some(seen) = self
            .keys
            .get_mut(&(grid, block, shape))
            .and_then(|m| m.get_mut(name))
        {
            seen.measured = seen.measured.saturating_sub(1);
        }
    }

    /// Whether no launch of (`name`, `grid`, `block`, `shape`) will be measured again, unless
    /// [`Policy::undo`] takes a measurement back: the key has had its measurements or
    /// is excluded, or it is one too many to track.
    pub fn finished(&self, name: &str, grid: [u32; 3], block: [u32; 3], shape: u64) -> bool {
        match self
            .keys
            .get(&(grid, block, shape))
            .and_then(|m| m.get(name))
        {
            Some(seen) => seen.excluded || (self.launches != 0 && seen.measured >= self.launches),
            None => self.nkeys >= MAX_KEYS,
        }
    }

    /// Launches of (`name`, `grid`, `block`, `shape`) are not measured again.
    pub fn exclude(&mut self, name: &str, grid: [u32; 3], block: [u32; 3], shape: u64) {
        if let Some(seen) = self
            .keys
            .get_mut(&(grid, block, shape))
            .and_then(|m| m.get_mut(name))
        {
            seen.excluded = true;
        }
    }

    /// The policy in words, for the report.
    pub fn describe(&self, groups: usize) -> String {
        let which = match (self.launches, self.every) {
            (0, 1) => "every launch of each kernel".to_string(),
            (0, n) => format!("every {} launch of each kernel", ordinal(n)),
            (1, 1) => "the first launch of each kernel".to_string(),
            (l, 1) => format!("the first {l} launches of each kernel"),
            (l, n) => format!(
                "every {} launch of each kernel, at most {l} per kernel",
                ordinal(n)
            ),
        };
        let groups = if groups == 1 {
            "one pass group".to_string()
        } else {
            format!("successive measured launches rotate through {groups} pass groups")
        };
        format!("{which} (name, grid, block, GEMM shape); {groups}")
    }
}

fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: [u32; 3] = [4, 1, 1];
    const B: [u32; 3] = [128, 1, 1];

    #[test]
    fn an_undone_measurement_goes_to_the_next_launch() {
        let mut p = Policy::new(2, 1);
        assert_eq!(p.decide("k", G, B, 0, 3, Admit::All), Some(0));
        assert_eq!(p.decide("k", G, B, 0, 3, Admit::All), Some(1));
        p.undo("k", G, B, 0);
        assert_eq!(p.decide("k", G, B, 0, 3, Admit::All), Some(1));
        assert_eq!(p.decide("k", G, B, 0, 3, Admit::All), None);
        // Same name and configuration, another GEMM shape: another key.
        assert_eq!(p.decide("k", G, B, 7, 3, Admit::All), Some(0));
    }

    #[test]
    fn a_key_is_finished_once_it_had_its_measurements() {
        let mut p = Policy::new(2, 3);
        assert!(!p.finished("k", G, B, 0));
        let got: Vec<_> = (0..4)
            .map(|_| p.decide("k", G, B, 0, 2, Admit::All))
            .collect();
        assert_eq!(got, [Some(0), None, None, Some(1)]);
        assert!(p.finished("k", G, B, 0));
        p.undo("k", G, B, 0);
        assert!(!p.finished("k", G, B, 0));
        assert!(!p.finished("k", [8, 1, 1], B, 0));
        // No limit: finished only when excluded.
        let mut all = Policy::new(0, 1);
        assert_eq!(all.decide("k", G, B, 0, 1, Admit::All), Some(0));
        assert!(!all.finished("k", G, B, 0));
        all.exclude("k", G, B, 0);
        assert!(all.finished("k", G, B, 0));
    }

    #[test]
    fn the_budget_admits_first_rounds_before_more_of_a_measured_key() {
        let mut p = Policy::new(0, 1);
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::All), Some(0));
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::FirstRound), Some(1));
        // "k" had every group: no more while the budget admits first rounds only.
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::FirstRound), None);
        assert_eq!(p.decide("late", G, B, 0, 2, Admit::FirstRound), Some(0));
        assert_eq!(p.decide("late", G, B, 0, 2, Admit::Nothing), None);
        // Launches passed over for the budget are not measurements taken.
        assert!(!p.finished("late", G, B, 0));
        assert_eq!(p.decide("late", G, B, 0, 2, Admit::All), Some(1));
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::All), Some(0));
    }

    #[test]
    fn an_excluded_key_is_not_measured_again() {
        let mut p = Policy::new(0, 1);
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::All), Some(0));
        assert_eq!(p.decide("other", G, B, 0, 2, Admit::All), Some(0));
        p.exclude("k", G, B, 0);
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::All), None);
        assert_eq!(p.decide("k", G, B, 0, 2, Admit::All), None);
        assert_eq!(p.decide("other", G, B, 0, 2, Admit::All), Some(1));
    }

    fn run(p: &mut Policy, name: &str, n: usize, groups: usize) -> Vec<Option<u32>> {
        (0..n)
            .map(|_| p.decide(name, G, B, 0, groups, Admit::All))
            .collect()
    }

    #[test]
    fn first_n_rotating_through_groups() {
        let mut p = Policy::new(5, 1);
        assert_eq!(
            run(&mut p, "k", 7, 3),
            [Some(0), Some(1), Some(2), Some(0), Some(1), None, None]
        );
        // Another key has its own count and rotation.
        assert_eq!(run(&mut p, "other", 2, 3), [Some(0), Some(1)]);
        // Same name, other launch configuration: another key.
        assert_eq!(p.decide("k", [8, 1, 1], B, 0, 3, Admit::All), Some(0));
        assert_eq!(p.decide("k", G, [64, 1, 1], 0, 3, Admit::All), Some(0));
        assert_eq!(p.decide("k", G, B, 0, 3, Admit::All), None);
        // Same name and configuration, another GEMM shape: another key.
        assert_eq!(p.decide("k", G, B, 7, 3, Admit::All), Some(0));
    }

    #[test]
    fn every_nth_up_to_the_limit() {
        let mut p = Policy::new(3, 2);
        assert_eq!(
            run(&mut p, "k", 8, 2),
            [Some(0), None, Some(1), None, Some(0), None, None, None]
        );
    }

    #[test]
    fn zero_means_all() {
        let mut p = Policy::new(0, 1);
        let got = run(&mut p, "k", 100, 4);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, g)| *g == Some((i % 4) as u32)));
    }

    #[test]
    fn one_group_and_no_groups() {
        let mut p = Policy::new(2, 1);
        assert_eq!(run(&mut p, "k", 3, 1), [Some(0), Some(0), None]);
        assert_eq!(p.decide("z", G, B, 0, 0, Admit::All), None);
    }

    #[test]
    fn keys_are_bounded() {
        let mut p = Policy::new(1, 1);
        for i in 0..MAX_KEYS {
            assert_eq!(p.decide(&i.to_string(), G, B, 0, 1, Admit::All), Some(0));
        }
        assert_eq!(p.decide("one too many", G, B, 0, 1, Admit::All), None);
        assert_eq!(p.decide("0", G, B, 0, 1, Admit::All), None);
        assert!(p.finished("one too many", G, B, 0));
    }

    #[test]
    fn described_in_words() {
        assert_eq!(
            Policy::new(64, 1).describe(5),
            "the first 64 launches of each kernel (name, grid, block, GEMM shape); \
             successive measured launches rotate through 5 pass groups"
        );
        assert_eq!(
            Policy::new(0, 1).describe(1),
            "every launch of each kernel (name, grid, block, GEMM shape); one pass group"
        );
        assert_eq!(
            Policy::new(10, 2).describe(1),
            "every 2nd launch of each kernel, at most 10 per kernel (name, grid, block, GEMM shape); \
             one pass group"
        );
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(21), "21st");
        assert_eq!(ordinal(3), "3rd");
    }
}
