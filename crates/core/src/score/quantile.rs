//! Quantiles of ρ in bounded memory: the median beside the mean (an unregulated seat's absurd
//! price drags a mean anywhere; a median does not move) and the histogram a report draws.
//!
//! [`Quantiles`] keeps every value exactly while it has at most [`EXACT_LIMIT`] of them; past
//! that it forgets the values and answers from a fixed histogram it kept all along: [`BINS`]
//! equal bins over [−1, 1] (width 10⁻⁴) plus exact counts of the values below −1 and above 1.
//! Memory is at most `EXACT_LIMIT` × 8 bytes + `BINS` × 4 bytes (≈ 600 KB) whatever the count.
//!
//! - **Exact** (≤ `EXACT_LIMIT` values): the q-quantile interpolates linearly between order
//!   statistics (h = (n − 1)·q, numpy's default): the median of 0.2, 0.5, 0.9, −3 is 0.35.
//! - **Sketch** (more values): the order statistic of rank h is found in its bin and placed
//!   within it by spreading the bin's values evenly across it, then interpolated as above.
//!   Error bound: a quantile that lies in [−1, 1] is off by at most one bin width (10⁻⁴); a
//!   quantile below −1 or above 1 reads as −1 or 1 (the sketch only counts those values), so
//!   the sketch's quantile is that of ρ clipped to [−1, 1] — the same thing wherever the true
//!   quantile is inside [−1, 1].
//!
//! [`Quantiles::median`] comes with a distribution-free 95% interval: the order statistics of
//! ranks ⌊n/2 − 1.96·√n/2⌋ and ⌈n/2 + 1.96·√n/2⌉ + 1 (1-based, clamped to [1, n]) — the
//! binomial interval for the median with the normal approximation. It is not a bootstrap: a
//! streaming bootstrap of a median would need a sketch per resample.
//!
//! Pooling two ([`Quantiles::absorb`]) stays exact while the pooled count fits.

use super::Estimate;

/// Values kept exactly before the sketch takes over.
pub(crate) const EXACT_LIMIT: usize = 65_536;

/// Bins of the histogram over [−1, 1].
pub(crate) const BINS: usize = 20_000;

/// z of the two-sided 95% normal interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A histogram bin's range and how many values fell in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    pub low: f64,
    pub high: f64,
    pub count: u64,
}

/// The values of ρ of one seat over many episodes, exact while few, else a histogram (see the
/// module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Quantiles {
    /// Every value while `n ≤ EXACT_LIMIT`; emptied (and unused) after.
    exact: Vec<f64>,
    n: u64,
    below: u64,
    above: u64,
    /// `BINS` counts once a value came in (left empty for an aggregate that has none).
    bins: Vec<u32>,
}

impl Quantiles {
    pub fn add(&mut self, x: f64) {
        self.n += 1;
        if self.n as usize <= EXACT_LIMIT {
            self.exact.push(x);
        } else if !self.exact.is_empty() {
            self.exact = Vec::new();
        }
        self.count(x, 1);
    }

    fn count(&mut self, x: f64, times: u32) {
        if self.bins.is_empty() {
            self.bins = vec![0; BINS];
        }
        if x < -1.0 {
            self.below += u64::from(times);
        } else if x > 1.0 {
            self.above += u64::from(times);
        } else {
            let i = (((x + 1.0) / 2.0) * BINS as f64) as usize;
            self.bins[i.min(BINS - 1)] += times;
        }
    }

    /// Pool another's values into these.
    pub(crate) fn absorb(&mut self, other: &Quantiles) {
        let n = self.n + other.n;
        if (n as usize) <= EXACT_LIMIT {
            self.exact.extend_from_slice(&other.exact);
        } else {
            self.exact = Vec::new();
        }
        self.n = n;
        self.below += other.below;
        self.above += other.above;
        if !other.bins.is_empty() {
            if self.bins.is_empty() {
                self.bins = vec![0; BINS];
            }
            for (mine, theirs) in self.bins.iter_mut().zip(&other.bins) {
                *mine += theirs;
            }
        }
    }

    /// Values added.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether answers are exact (no more than [`EXACT_LIMIT`] values).
    pub(crate) fn is_exact(&self) -> bool {
        self.n as usize <= EXACT_LIMIT
    }

    /// The q-quantile (0 ≤ q ≤ 1); `None` without values.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let h = (self.n - 1) as f64 * q.clamp(0.0, 1.0);
        let (below, above) = (h.floor() as u64, h.ceil() as u64);
        if self.is_exact() {
            let sorted = self.sorted();
            let (lo, hi) = (sorted[below as usize], sorted[above as usize]);
            return Some(lo + (h - below as f64) * (hi - lo));
        }
        let (lo, hi) = (self.sketch_rank(below), self.sketch_rank(above));
        Some(lo + (h - below as f64) * (hi - lo))
    }

    /// The median with its distribution-free 95% interval (see the module doc).
    pub(crate) fn median(&self) -> Option<Estimate> {
        let value = self.quantile(0.5)?;
        let n = self.n as f64;
        let half = Z95 * n.sqrt() / 2.0;
        // 1-based ranks, clamped into the sample.
        let low_rank = ((n / 2.0 - half).floor() as u64).clamp(1, self.n);
        let high_rank = ((n / 2.0 + half).ceil() as u64 + 1).clamp(1, self.n);
        let at = |rank: u64| {
            if self.is_exact() {
                self.sorted()[rank as usize - 1]
            } else {
                self.sketch_rank(rank - 1)
            }
        };
        Some(Estimate {
            value,
            low: at(low_rank).min(value),
            high: at(high_rank).max(value),
            n: self.n as usize,
        })
    }

    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.exact.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    /// The sketch's estimate of the order statistic of 0-based rank `rank`.
    fn sketch_rank(&self, rank: u64) -> f64 {
        if rank < self.below {
            return -1.0;
        }
        let mut seen = self.below;
        let width = 2.0 / BINS as f64;
        for (i, &count) in self.bins.iter().enumerate() {
            let count = u64::from(count);
            if rank < seen + count {
                // The bin's values spread evenly: the j-th of c sits at (j + ½)/c of the bin.
                let j = (rank - seen) as f64;
                return -1.0 + width * (i as f64 + (j + 0.5) / count as f64);
            }
            seen += count;
        }
        1.0
    }

    /// The histogram of the values clipped to [−1, 1] in `bins` equal bins (`bins` must divide
    /// `BINS`); the values below −1 count in the first bin, those above 1 in the last.
    pub fn histogram(&self, bins: usize) -> Vec<Bin> {
        assert!(
            bins > 0 && BINS.is_multiple_of(bins),
            "{bins} bins do not divide {BINS}"
        );
        let per = BINS / bins;
        let width = 2.0 / bins as f64;
        (0..bins)
            .map(|b| {
                let mut count: u64 = self
                    .bins
                    .get(b * per..(b + 1) * per)
                    .map_or(0, |s| s.iter().map(|&c| u64::from(c)).sum());
                if b == 0 {
                    count += self.below;
                }
                if b == bins - 1 {
                    count += self.above;
                }
                Bin {
                    low: -1.0 + width * b as f64,
                    high: -1.0 + width * (b + 1) as f64,
                    count,
                }
            })
            .collect()
    }

    /// Values below −1 and above 1.
    pub fn outside(&self) -> (u64, u64) {
        (self.below, self.above)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[f64]) -> Quantiles {
        let mut q = Quantiles::default();
        for &v in values {
            q.add(v);
        }
        q
    }

    #[test]
    fn few_values_give_exact_quantiles() {
        // Sorted −3, 0.2, 0.5, 0.9: h = 3·0.5 = 1.5 → (0.2 + 0.5)/2 = 0.35.
        let q = of(&[0.2, 0.5, 0.9, -3.0]);
        assert!(q.is_exact());
        assert_eq!(q.quantile(0.5), Some((0.2 + 0.5) / 2.0));
        assert_eq!(q.quantile(0.0), Some(-3.0));
        assert_eq!(q.quantile(1.0), Some(0.9));
        assert_eq!(Quantiles::default().quantile(0.5), None);
        assert_eq!(Quantiles::default().median(), None);
    }

    #[test]
    fn the_median_interval_is_between_order_statistics() {
        // n = 4: ranks ⌊2 − 1.96⌋ = 0 → 1 and ⌈2 + 1.96⌉ + 1 = 5 → 4: the extremes.
        let m = of(&[0.2, 0.5, 0.9, -3.0]).median().unwrap();
        assert_eq!((m.low, m.value, m.high, m.n), (-3.0, 0.35, 0.9, 4));
        // n = 100 values 0..99: half-width 1.96·10/2 = 9.8 → ranks 40 and 61 → values 39, 60.
        let values: Vec<f64> = (0..100).map(f64::from).collect();
        let m = of(&values).median().unwrap();
        assert_eq!((m.low, m.value, m.high), (39.0, 49.5, 60.0));
    }

    #[test]
    fn past_the_limit_the_sketch_is_within_one_bin() {
        // EXACT_LIMIT + 4 values spread evenly over [−0.9, 0.9], plus a few absurd ones.
        let n = EXACT_LIMIT + 4;
        let mut values: Vec<f64> = (0..n)
            .map(|i| -0.9 + 1.8 * i as f64 / (n - 1) as f64)
            .collect();
        values.extend([-1000.0, -50.0, 2.0]);
        let q = of(&values);
        assert!(!q.is_exact());
        assert_eq!(q.outside(), (2, 1));
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for p in [0.1, 0.25, 0.5, 0.75, 0.9] {
            let h = (sorted.len() - 1) as f64 * p;
            let exact = sorted[h.floor() as usize]
                + h.fract() * (sorted[h.ceil() as usize] - sorted[h.floor() as usize]);
            let sketch = q.quantile(p).unwrap();
            assert!(
                (sketch - exact).abs() <= 2.0 / BINS as f64,
                "{p}: {sketch} vs {exact}"
            );
        }
        // Below −1 reads as −1.
        assert_eq!(q.quantile(0.0), Some(-1.0));
        assert!(q.median().unwrap().low < q.median().unwrap().high);
    }

    #[test]
    fn absorb_pools_exactly_while_the_pool_fits() {
        let mut a = of(&[0.2, 0.9]);
        a.absorb(&of(&[0.5, -3.0]));
        assert_eq!(a.quantile(0.5), of(&[0.2, 0.5, 0.9, -3.0]).quantile(0.5));
        assert_eq!(a.histogram(4), of(&[0.2, 0.5, 0.9, -3.0]).histogram(4));
        let mut big = of(&vec![0.5; EXACT_LIMIT]);
        big.absorb(&of(&[0.1]));
        assert!(!big.is_exact());
        assert!((big.quantile(0.5).unwrap() - 0.5).abs() <= 1e-4);
    }

    #[test]
    fn the_histogram_clips_into_its_end_bins() {
        // 4 bins of width 0.5: −3 → first, 0.2 → [0, 0.5), 0.5 and 0.9 → [0.5, 1].
        let h = of(&[0.2, 0.5, 0.9, -3.0]).histogram(4);
        let counts: Vec<u64> = h.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![1, 0, 1, 2]);
        assert_eq!((h[0].low, h[3].high), (-1.0, 1.0));
    }
}
