//! Kernel launches summed by class and by the NVTX ranges enclosing them: what a
//! flame graph of the session's GPU time needs (`gpuprof pprof`), in bounded memory.
//!
//! A kernel's **path** is the names of the range instances enclosing it when it is
//! finalized ([`super::range_cover::RangeCover::enclosing`]), outermost first:
//! push/pop ranges of its launching thread around its launch, start/end ranges of its
//! process around its GPU start. Its launch is added to the [`Tally`] of (its class,
//! its path). Paths are interned, so what is held is one entry per distinct path and
//! one per (class, path): the number of distinct kernels times the number of distinct
//! places they are launched from, not the number of launches.
//!
//! Each launch is in exactly one (class, path), so the sums over all paths of a class
//! are the class's own: the totals of a flame graph are those of the report.

use ahash::AHashMap;

use super::classes::Tally;
use super::range_cover::RangeCover;

/// Range paths (range name indices of [`super::range_cover::RangeCover::names`],
/// outermost first) and the launches of each class under each.
#[derive(Debug, Default)]
pub struct Stacks {
    /// Interned paths; path 0 is the empty one once any kernel outside every range
    /// has been added.
    pub paths: Vec<Vec<usize>>,
    index: AHashMap<Vec<usize>, usize>,
    /// (class, path) -> the launches of that class under that path.
    pub sums: AHashMap<(usize, usize), Tally>,
    /// The instances enclosing the kernel being added, and its path: kept from
    /// kernel to kernel ([`Stacks::add_enclosed`]).
    found: Vec<(u64, u64, usize)>,
    path: Vec<usize>,
}

impl Stacks {
    /// One launch of `class` under `path`, of `ns` and DRAM bytes `bytes`.
    pub fn add(&mut self, class: usize, path: &[usize], ns: u64, bytes: Option<f64>) {
        let p = match self.index.get(path) {
            Some(&p) => p,
            None => {
                self.paths.push(path.to_vec());
                self.index.insert(path.to_vec(), self.paths.len() - 1);
                self.paths.len() - 1
            }
        };
        self.sums.entry((class, p)).or_default().add(ns, bytes);
    }

    /// One launch of `class` under the ranges of `ranges` enclosing it (its process,
    /// its launch's thread and time, its GPU start: [`RangeCover::enclosing`]); no
    /// allocation but for a path not seen before.
    pub fn add_enclosed(
        &mut self,
        ranges: &RangeCover,
        (pid, launch, gpu_start_ns): (u32, Option<(u64, u64)>, u64),
        class: usize,
        ns: u64,
        bytes: Option<f64>,
    ) {
        let (mut found, mut path) = (
            std::mem::take(&mut self.found),
            std::mem::take(&mut self.path),
        );
        ranges.enclosing(pid, launch, gpu_start_ns, &mut found, &mut path);
        self.add(class, &path, ns, bytes);
        (self.found, self.path) = (found, path);
    }

    /// The sums in a stable order: by class, then path.
    pub fn sorted(&self) -> Vec<(usize, usize, Tally)> {
        let mut out: Vec<(usize, usize, Tally)> =
            self.sums.iter().map(|(&(c, p), t)| (c, p, *t)).collect();
        out.sort_unstable_by_key(|&(c, p, _)| (c, p));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_are_summed_per_class_and_path_and_paths_are_interned() {
        let mut s = Stacks::default();
        s.add(0, &[1, 2], 10, Some(100.0));
        s.add(0, &[1, 2], 5, None);
        s.add(0, &[], 7, None);
        s.add(1, &[1, 2], 3, Some(1.0));
        assert_eq!(s.paths, vec![vec![1, 2], vec![]]);
        let got: Vec<(usize, usize, u64, u64, f64)> = s
            .sorted()
            .into_iter()
            .map(|(c, p, t)| (c, p, t.calls, t.ns, t.bytes))
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 2, 15, 100.0), (0, 1, 1, 7, 0.0), (1, 0, 1, 3, 1.0)]
        );
    }
}
