//! The spread of a kernel's durations in bounded memory: count, sum and sum of squares
//! (exact, in 128-bit integers) for the mean and standard deviation, and a histogram
//! for the median.
//!
//! The histogram holds each distinct duration exactly while there are at most
//! [`EXACT_VALUES`] of them, so the median is exact for the kernels of almost every
//! program (a kernel's durations repeat to the nanosecond far more often than not).
//! Past that it is coarsened once and for all into buckets that keep the
//! [`BUCKET_BITS`] leading bits of a duration: a bucket is at most 1/128 of its lower
//! bound wide, the median is reported as its bucket's midpoint, so it is within 0.4%
//! of the exact one, and `median_exact` says so. A histogram then holds at most 128
//! buckets per power of two: a few thousand for any range of durations.

use ahash::AHashMap;

/// Distinct durations held exactly before the histogram is coarsened.
pub const EXACT_VALUES: usize = 256;

/// Leading bits of a duration a coarse bucket keeps (the first is always 1).
pub const BUCKET_BITS: u32 = 8;

/// The durations of one set of launches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations {
    pub count: u64,
    /// Sums, saturating (only durations near 2^64 ns can reach the limit).
    pub sum: u128,
    pub sum_sq: u128,
    /// Duration (exact) or bucket lower bound (coarse) -> launches; put in order only
    /// for the median (a kernel's launches are added one by one, its median is
    /// asked for once).
    hist: AHashMap<u64, u64>,
    coarse: bool,
}

/// The lower bound of the coarse bucket of `ns`.
fn bucket(ns: u64) -> u64 {
    let bits = 64 - ns.leading_zeros();
    if bits <= BUCKET_BITS {
        return ns;
    }
    let shift = bits - BUCKET_BITS;
    (ns >> shift) << shift
}

/// The width of the coarse bucket whose lower bound is `lower`.
fn bucket_width(lower: u64) -> u64 {
    let bits = 64 - lower.leading_zeros();
    if bits <= BUCKET_BITS {
        1
    } else {
        1 << (bits - BUCKET_BITS)
    }
}

impl Durations {
    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(ns as u128);
        self.sum_sq = self.sum_sq.saturating_add((ns as u128) * (ns as u128));
        let key = if self.coarse { bucket(ns) } else { ns };
        *self.hist.entry(key).or_default() += 1;
        if !self.coarse && self.hist.len() > EXACT_VALUES {
            self.coarsen();
        }
    }

    fn coarsen(&mut self) {
        let exact = std::mem::take(&mut self.hist);
        for (ns, n) in exact {
            *self.hist.entry(bucket(ns)).or_default() += n;
        }
        self.coarse = true;
    }

    pub fn merge(&mut self, o: &Durations) {
        self.count += o.count;
        self.sum = self.sum.saturating_add(o.sum);
        self.sum_sq = self.sum_sq.saturating_add(o.sum_sq);
        if o.coarse && !self.coarse {
            self.coarsen();
        }
        for (&k, &n) in &o.hist {
            let key = if self.coarse { bucket(k) } else { k };
            *self.hist.entry(key).or_default() += n;
        }
        if !self.coarse && self.hist.len() > EXACT_VALUES {
            self.coarsen();
        }
    }

    /// Whether [`Durations::median`] is exact.
    pub fn median_exact(&self) -> bool {
        !self.coarse
    }

    /// The median, ns: the middle duration, or the mean of the two middle ones
    /// (rounded down) for an even count; 0 when empty. Coarse: the midpoint of the
    /// middle buckets.
    pub fn median(&self) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // 1-based ranks of the two middle launches (the same one for an odd count).
        let lo = self.count.div_ceil(2);
        let hi = self.count / 2 + 1;
        let mut sorted: Vec<(u64, u64)> = self.hist.iter().map(|(&k, &n)| (k, n)).collect();
        sorted.sort_unstable();
        let (a, b) = (self.nth(&sorted, lo), self.nth(&sorted, hi));
        ((a as u128 + b as u128) / 2) as u64
    }

    /// The value of the launch of 1-based rank `rank` in duration order, of the
    /// histogram in order.
    fn nth(&self, sorted: &[(u64, u64)], rank: u64) -> u64 {
        let mut seen = 0u64;
        for &(k, n) in sorted {
            seen += n;
            if seen >= rank {
                return if self.coarse {
                    k + bucket_width(k) / 2
                } else {
                    k
                };
            }
        }
        sorted.last().map_or(0, |&(k, _)| k)
    }

    /// The mean, ns (rounded down); 0 when empty.
    pub fn mean(&self) -> u64 {
        if self.count == 0 {
            return 0;
        }
        (self.sum / self.count as u128) as u64
    }

    /// The sample standard deviation (n - 1 in the denominator, as pandas and
    /// `statistics.stdev` compute it), ns; 0 for fewer than two launches. The
    /// variance's numerator n·Σx² − (Σx)² is exact in integers.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as u128;
        let exact = n
            .checked_mul(self.sum_sq)
            .zip(self.sum.checked_mul(self.sum))
            .filter(|_| self.sum_sq < u128::MAX && self.sum < u128::MAX);
        match exact {
            Some((a, b)) => (a.saturating_sub(b) as f64 / (n * (n - 1)) as f64).sqrt(),
            // Durations near 2^64 ns (impossible ones a hostile file can hold): as
            // floating point, which cannot overflow.
            None => {
                let (n, sum, sum_sq) = (n as f64, self.sum as f64, self.sum_sq as f64);
                ((sum_sq - sum * sum / n).max(0.0) / (n - 1.0)).sqrt()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> Durations {
        let mut d = Durations::default();
        for &v in values {
            d.add(v);
        }
        d
    }

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(of(&[5, 1, 3]).median(), 3);
        assert_eq!(of(&[4, 1, 3, 10]).median(), 3); // (3 + 4) / 2 rounded down
        assert_eq!(of(&[2, 2, 2, 9]).median(), 2);
        assert_eq!(of(&[]).median(), 0);
        assert!(of(&[1, 2]).median_exact());
    }

    #[test]
    fn stddev_is_the_sample_one() {
        // statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9]) == 2.138089935299395
        let d = of(&[2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!(d.stddev(), 2.138089935299395);
        assert_eq!(d.mean(), 5);
        assert_eq!(of(&[7]).stddev(), 0.0);
    }

    #[test]
    fn coarse_median_is_within_the_bound() {
        // 1000 distinct durations: 10_000, 10_007, ... ; the exact median is the mean
        // of the 500th and 501st.
        let values: Vec<u64> = (0..1000).map(|i| 10_000 + 7 * i).collect();
        let d = of(&values);
        assert!(!d.median_exact());
        let exact = (values[499] + values[500]) / 2;
        let got = d.median();
        assert!(
            (got as f64 - exact as f64).abs() <= exact as f64 / 256.0,
            "{got} vs {exact}"
        );
        assert!(d.hist.len() <= 128 * 2, "{} buckets", d.hist.len());
    }

    #[test]
    fn merge_equals_adding_all() {
        let (a, b) = (
            (0..200).collect::<Vec<u64>>(),
            (150..400).collect::<Vec<u64>>(),
        );
        let mut m = of(&a);
        m.merge(&of(&b));
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let whole = of(&all);
        assert_eq!(m.count, whole.count);
        assert_eq!(m.sum_sq, whole.sum_sq);
        assert_eq!(m.median(), whole.median());
        // Small values keep their exact bucket even when coarse.
        let mut few = of(&[1, 2, 3]);
        few.merge(&of(&(1000..1300).collect::<Vec<u64>>()));
        assert!(!few.median_exact());
    }
}
