//! Aggregates over many episodes (DESIGN §5): how episodes ended, how well each seat did and how
//! cleanly it played, each with a bootstrap 95% interval.
//!
//! An [`Aggregate`] is fed one episode at a time with what the episode's record already holds —
//! the ending, ρ and the reward per seat, and its [`EpisodeMetrics`] — and never looks at turns,
//! so a run's summary, a report and a rescored log agree by construction. It takes those values
//! rather than a record so that `score` stays below `record`. Group it however a table needs
//! (per family, persona, pair of players) by keeping one aggregate per group;
//! [`Aggregate::absorb`] pools groups. [`Aggregate::figures`] computes every figure at once.
//!
//! Backend errors (`error` endings) are counted apart ([`Aggregate::count`]) and enter no rate
//! and no mean. Every other figure is over the *scored* episodes:
//! - ending rates (deal, walk-away, reject-loop, max-turns, format-forfeit): share of scored
//!   episodes that ended so;
//! - mean ρ and mean reward per seat: over scored episodes (no deal counts with its ρ);
//! - Pareto rate: share of the deals on items and issues that are Pareto-optimal (the episodes
//!   whose metrics carry the flag; price deals have none);
//! - first-bid ratio and sale-to-list per seat: over the episodes where that seat has one (it
//!   was the buyer on a price task and bid, or bought);
//! - mean turns: moves that took effect, both seats together, per episode;
//! - format compliance per seat: format-ok attempts / attempts, pooled over episodes, where
//!   attempts = turns + malformed (every completion the seat was asked for);
//! - malformed rate per seat: malformed attempts / attempts, pooled;
//! - regulation rate per seat: moves regulation replaced / moves that took effect, pooled;
//! - clipped mean ρ per seat: the mean of ρ clipped to [−1, 1] (a deal at an absurd price by an
//!   unregulated seat has ρ far below −1 and would dominate the plain mean; clipped, it counts
//!   as losing the whole bargaining range, and a ρ above 1 as winning all of it);
//! - median ρ per seat: see [`Quantiles`] (exact up to 65,536 episodes, then within 10⁻⁴ while
//!   in [−1, 1]); its interval is the distribution-free order-statistic interval, not a
//!   bootstrap.
//!
//! Each other figure is a ratio of sums Σ numᵢ / Σ denᵢ over the scored episodes i, where an
//! episode that does not bear on the figure gives (0, 0) (a mean has denᵢ = 1 where it applies).
//!
//! Intervals are percentile intervals of a **Poisson bootstrap**, which streams: memory does not
//! grow with the episodes. Each scored episode gets, for each of the [`RESAMPLES`] resamples r, an
//! integer weight wᵢᵣ ~ Poisson(1) — how many times resample r draws it — from a ChaCha8 RNG seeded
//! by the episode's `key` — a record's run and *group* id, hashed (`EpisodeRecord::bootstrap_key`),
//! so the members of a GRPO group, which share one setup, are resampled together (a cluster
//! bootstrap) — so an episode's weights do not depend on when it arrived or which table it is
//! in (records with the same run and group ids get the same weights and move together). The aggregate
//! keeps, per resample and figure, Σᵢ wᵢᵣ·numᵢ and Σᵢ wᵢᵣ·denᵢ; resample r's figure is their ratio;
//! a resample whose Σ wᵢᵣ·denᵢ = 0 for a figure (e.g. no deal on items among its draws) is left out
//! of that figure's list; the 2.5th and 97.5th percentiles of a figure's list (linear interpolation
//! between order statistics, numpy's default) are its bounds. Resampling whole episodes keeps a
//! seat's turns of one episode together. The Poisson bootstrap resamples n episodes only on average
//! (the total weight of a resample is Poisson(n), not exactly n); for ratio figures that is the
//! same to first order, and the intervals agree with the classical bootstrap within its Monte-Carlo
//! noise (the test of the textbook proportion interval below holds it to ±0.02).
//!
//! A weight is drawn by inversion: one `u32` from the RNG against the Poisson(1) distribution
//! function rounded to 2⁻³² (weights 0 to 12: the tail P(Poisson(1) ≥ 12) < 10⁻⁹ is folded into
//! 12).
//!
//! Cost: the weights of an episode are drawn once ([`Weights::of`]) and can serve every group
//! the episode is added to ([`Aggregate::add_weighted`]); an update touches only the figures an
//! episode bears on (non-zero num or den), each a straight loop over the resamples. Memory:
//! (23 figures + 10 denominators) × `RESAMPLES` sums (≈ 260 KB) plus two [`Quantiles`].
//! Measured (`cargo bench --bench engine -- aggregate`, release, a shared 2-core machine): 4.3 to
//! 5.2 µs to add an episode (2.6 to 3.1 µs of it drawing the weights), 1.55 to 1.71 µs per
//! further group.
//!
//! Order: counts (endings, turns, attempts, regulation events, flags) are whole numbers, whose f64
//! sums are exact, so their figures and intervals are the same bits in any arrival order. Sums of
//! real values (ρ, reward, first bid, sale-to-list) can differ in the last bits between orders (by
//! about n·2⁻⁵³ relative to Σ |value|); their figures are equal within 10⁻¹² across orders, which
//! the tests check.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::game::{OutcomeKind, PerSeat, Seat};

use super::quantile::Quantiles;
use super::EpisodeMetrics;

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 1000;

/// Coverage of the intervals.
pub const LEVEL: f64 = 0.95;

/// Mixed into every episode's key before it seeds the weights' RNG: fixed, so intervals are
/// reproducible.
const BOOTSTRAP_SEED: u64 = 0xdea1_6e3d_b007_5eed;

/// P(Poisson(1) ≤ k)·2³² rounded, k = 0, 1, …, 11: a uniform `u32` u gives the weight
/// #{k : u ≥ T_k}.
const POISSON_1_CDF: [u32; 12] = [
    1_580_030_169,
    3_160_060_337,
    3_950_075_422,
    4_213_413_783,
    4_279_248_374,
    4_292_415_292,
    4_294_609_778,
    4_294_923_276,
    4_294_962_463,
    4_294_966_817,
    4_294_967_253,
    4_294_967_292,
];

/// The endings that are rates of the scored episodes (all but `error`), in table order.
pub const RATED_ENDINGS: [OutcomeKind; 5] = [
    OutcomeKind::Deal,
    OutcomeKind::WalkAway,
    OutcomeKind::RejectLoop,
    OutcomeKind::MaxTurns,
    OutcomeKind::FormatForfeit,
];

/// A figure with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The figure on all its episodes.
    pub value: f64,
    /// Lower and upper bounds of the 95% interval.
    pub low: f64,
    pub high: f64,
    /// Episodes the figure is over.
    pub n: usize,
}

impl Estimate {
    /// The same estimate in other units (e.g. 100 for percent).
    pub fn scaled(self, factor: f64) -> Estimate {
        Estimate {
            value: self.value * factor,
            low: self.low * factor,
            high: self.high * factor,
            n: self.n,
        }
    }
}

/// `value [low, high]` with `digits` decimals, or `–` for no estimate: how every table
/// (the run summary, reports) writes a figure.
pub fn cell(e: Option<Estimate>, digits: usize) -> String {
    match e {
        Some(e) => format!(
            "{:.d$} [{:.d$}, {:.d$}]",
            e.value,
            e.low,
            e.high,
            d = digits
        ),
        None => "–".to_string(),
    }
}

/// A share as a percentage cell (one decimal).
pub fn pct_cell(e: Option<Estimate>) -> String {
    cell(e.map(|e| e.scaled(100.0)), 1)
}

/// Every figure of an aggregate; `None` where no scored episode gives it. Shares are
/// fractions (multiply by 100 for percent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// Share of scored episodes per ending, in [`RATED_ENDINGS`] order.
    pub endings: [Option<Estimate>; 5],
    /// Share of items/issues deals that are Pareto-optimal.
    pub pareto: Option<Estimate>,
    /// Moves that took effect per episode, both seats together.
    pub mean_turns: Option<Estimate>,
    pub seats: PerSeat<SeatFigures>,
}

impl Figures {
    /// Share of scored episodes that ended as `kind`; `None` for `error`, which is no share
    /// of anything here.
    pub fn rate(&self, kind: OutcomeKind) -> Option<Estimate> {
        let i = RATED_ENDINGS.iter().position(|k| *k == kind)?;
        self.endings[i]
    }
}

/// One seat's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeatFigures {
    pub mean_rho: Option<Estimate>,
    /// Mean of ρ clipped to [−1, 1].
    pub clipped_rho: Option<Estimate>,
    /// Median of ρ, with the order-statistic interval (see [`Quantiles`]).
    pub median_rho: Option<Estimate>,
    pub mean_reward: Option<Estimate>,
    /// The buyer's first offer / B, over the episodes where this seat bid as the buyer.
    pub first_bid: Option<Estimate>,
    /// (P − L)/(B − L), over the price deals where this seat was the buyer.
    pub sale_to_list: Option<Estimate>,
    /// Format-ok attempts / attempts.
    pub format_ok: Option<Estimate>,
    /// Malformed attempts / attempts.
    pub malformed: Option<Estimate>,
    /// Moves regulation replaced / moves that took effect.
    pub regulated: Option<Estimate>,
}

/// One seat's attempt counts, summed over the scored episodes of an aggregate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SeatCounts {
    /// Completions the seat was asked for (moves that took effect + malformed attempts).
    pub attempts: usize,
    pub format_ok: usize,
    /// Attempts decoded under a constraint and checked against it.
    pub constrained: usize,
    /// Constrained attempts the constraint does not admit.
    pub constraint_violations: usize,
    /// Token-exact attempts whose sequence drifted from a full re-render.
    pub token_drift: usize,
}

impl SeatCounts {
    fn absorb(&mut self, other: &SeatCounts) {
        self.attempts += other.attempts;
        self.format_ok += other.format_ok;
        self.constrained += other.constrained;
        self.constraint_violations += other.constraint_violations;
        self.token_drift += other.token_drift;
    }

    /// Format-ok attempts in percent (`None` for a seat that never played).
    pub fn format_ok_pct(&self) -> Option<f64> {
        (self.attempts > 0).then(|| 100.0 * self.format_ok as f64 / self.attempts as f64)
    }
}

// Where each figure's numerator sits.
const PARETO: usize = RATED_ENDINGS.len();
const TURNS: usize = PARETO + 1;
const SEATS: usize = TURNS + 1;
/// Per seat, after `SEATS + seat·PER_SEAT`: ρ, clipped ρ, reward, first bid, sale-to-list,
/// format-ok, malformed, regulated.
const PER_SEAT: usize = 8;
const FIGURES: usize = SEATS + 2 * PER_SEAT;

// Where each denominator sits: shared by the figures over the same episodes.
/// Every scored episode counts 1 (endings, turns, ρ, clipped ρ, reward).
const D_SCORED: usize = 0;
/// Deals that carry a Pareto flag.
const D_PARETO: usize = 1;
/// Per seat, after `D_SEATS + seat·D_PER_SEAT`: has a first bid, has a sale-to-list,
/// attempts, moves that took effect.
const D_SEATS: usize = 2;
const D_PER_SEAT: usize = 4;
const DENS: usize = D_SEATS + 2 * D_PER_SEAT;

fn seat_offset(seat: Seat) -> usize {
    SEATS + seat_index(seat) * PER_SEAT
}

fn den_offset(seat: Seat) -> usize {
    D_SEATS + seat_index(seat) * D_PER_SEAT
}

fn seat_index(seat: Seat) -> usize {
    match seat {
        Seat::Learner => 0,
        Seat::Opponent => 1,
    }
}

/// The denominator of each figure.
const DEN_OF: [usize; FIGURES] = {
    let mut d = [D_SCORED; FIGURES];
    d[PARETO] = D_PARETO;
    let mut seat = 0;
    while seat < 2 {
        let (at, den) = (SEATS + seat * PER_SEAT, D_SEATS + seat * D_PER_SEAT);
        // ρ, clipped ρ and reward are over every scored episode.
        d[at + 3] = den;
        d[at + 4] = den + 1;
        d[at + 5] = den + 2;
        d[at + 6] = den + 2;
        d[at + 7] = den + 3;
        seat += 1;
    }
    d
};

/// One episode's bootstrap weights: how many times each resample draws it (Poisson(1), from
/// its key; see the module doc). Draw them once per episode and add the episode to each of
/// its groups with [`Aggregate::add_weighted`].
#[derive(Debug, Clone)]
pub struct Weights(Box<[f64; RESAMPLES]>);

impl Weights {
    /// The weights of the episode with this key.
    pub fn of(key: u64) -> Weights {
        let mut rng = ChaCha8Rng::seed_from_u64(key ^ BOOTSTRAP_SEED);
        let mut raw = [0u32; RESAMPLES];
        rng.fill(&mut raw[..]);
        let mut w = Box::new([0.0; RESAMPLES]);
        for (w, u) in w.iter_mut().zip(raw) {
            *w = POISSON_1_CDF
                .iter()
                .map(|t| u32::from(u >= *t))
                .sum::<u32>() as f64;
        }
        Weights(w)
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.0[..]
    }
}

/// Streaming aggregate of episodes: [`Aggregate::add`] each as it ends, read the counts at any
/// time and [`Aggregate::figures`] when a table is due. Memory does not grow with the
/// episodes (see the module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Aggregate {
    endings: BTreeMap<OutcomeKind, usize>,
    totals: PerSeat<SeatCounts>,
    scored: usize,
    /// Σ num and Σ den over the scored episodes (the figures' values).
    num: [f64; FIGURES],
    den: [f64; DENS],
    /// Episodes with a non-zero denominator, per denominator.
    den_count: [usize; DENS],
    /// Σ w·num per figure, then resample (`FIGURES` × `RESAMPLES`); empty until an episode
    /// is scored.
    boot_num: Vec<f64>,
    /// Σ w·den per denominator, then resample (`DENS` × `RESAMPLES`).
    boot_den: Vec<f64>,
    rho: PerSeat<Quantiles>,
}

impl Aggregate {
    /// Add one ended episode: the key it is resampled by (`EpisodeRecord::key`), its ending, ρ
    /// and reward per seat, and its metrics (all as its record holds them). An `error` ending
    /// is only counted.
    pub fn add(
        &mut self,
        key: u64,
        kind: OutcomeKind,
        rho: &PerSeat<f64>,
        rewards: &PerSeat<f64>,
        metrics: &EpisodeMetrics,
    ) {
        // An error is only counted: no weights needed.
        if kind == OutcomeKind::Error {
            *self.endings.entry(kind).or_default() += 1;
            return;
        }
        self.add_weighted(&Weights::of(key), kind, rho, rewards, metrics);
    }

    /// [`Aggregate::add`] with the episode's weights already drawn ([`Weights::of`] its key).
    pub fn add_weighted(
        &mut self,
        weights: &Weights,
        kind: OutcomeKind,
        rho: &PerSeat<f64>,
        rewards: &PerSeat<f64>,
        metrics: &EpisodeMetrics,
    ) {
        *self.endings.entry(kind).or_default() += 1;
        if kind == OutcomeKind::Error {
            return;
        }
        self.scored += 1;
        let mut num = [0.0; FIGURES];
        let mut den = [0.0; DENS];
        den[D_SCORED] = 1.0;
        if let Some(i) = RATED_ENDINGS.iter().position(|k| *k == kind) {
            num[i] = 1.0;
        }
        if let Some(optimal) = metrics.pareto_optimal {
            num[PARETO] = indicator(optimal);
            den[D_PARETO] = 1.0;
        }
        let turns = metrics.seats.learner.turns + metrics.seats.opponent.turns;
        num[TURNS] = f64::from(turns);
        for seat in Seat::BOTH {
            let m = &metrics.seats[seat];
            let attempts = m.turns + m.malformed;
            // The record keeps the share; the count it came from is a whole number.
            let format_ok = (m.format_ok_rate * f64::from(attempts)).round() as u32;
            let total = &mut self.totals[seat];
            total.attempts += attempts as usize;
            total.format_ok += format_ok as usize;
            total.constrained += m.constrained as usize;
            total.constraint_violations += m.constraint_violations as usize;
            total.token_drift += m.token_drift as usize;
            self.rho[seat].add(rho[seat]);
            let (at, d) = (seat_offset(seat), den_offset(seat));
            num[at] = rho[seat];
            num[at + 1] = clip_rho(rho[seat]);
            num[at + 2] = rewards[seat];
            if let Some(bid) = m.first_bid_ratio {
                num[at + 3] = bid;
                den[d] = 1.0;
            }
            if let Some(sale) = m.sale_to_list {
                num[at + 4] = sale;
                den[d + 1] = 1.0;
            }
            num[at + 5] = f64::from(format_ok);
            num[at + 6] = f64::from(m.malformed);
            den[d + 2] = f64::from(attempts);
            num[at + 7] = f64::from(m.regulation_events);
            den[d + 3] = f64::from(m.turns);
        }
        for (sum, x) in self.num.iter_mut().zip(num) {
            *sum += x;
        }
        for ((sum, count), x) in self.den.iter_mut().zip(&mut self.den_count).zip(den) {
            *sum += x;
            *count += usize::from(x != 0.0);
        }
        if self.boot_num.is_empty() {
            self.boot_num = vec![0.0; FIGURES * RESAMPLES];
            self.boot_den = vec![0.0; DENS * RESAMPLES];
        }
        let w = weights.as_slice();
        for (sums, x) in self.boot_num.chunks_exact_mut(RESAMPLES).zip(num) {
            accumulate(sums, w, x);
        }
        for (sums, x) in self.boot_den.chunks_exact_mut(RESAMPLES).zip(den) {
            accumulate(sums, w, x);
        }
    }

    /// Pool another aggregate's episodes into this one (e.g. every family into "all").
    pub fn absorb(&mut self, other: &Aggregate) {
        for (kind, n) in &other.endings {
            *self.endings.entry(*kind).or_default() += n;
        }
        for seat in Seat::BOTH {
            self.totals[seat].absorb(&other.totals[seat]);
            self.rho[seat].absorb(&other.rho[seat]);
        }
        self.scored += other.scored;
        for (a, b) in self.num.iter_mut().zip(other.num) {
            *a += b;
        }
        for (a, b) in self.den.iter_mut().zip(other.den) {
            *a += b;
        }
        for (a, b) in self.den_count.iter_mut().zip(other.den_count) {
            *a += b;
        }
        if !other.boot_num.is_empty() {
            if self.boot_num.is_empty() {
                self.boot_num = other.boot_num.clone();
                self.boot_den = other.boot_den.clone();
            } else {
                for (a, b) in self.boot_num.iter_mut().zip(&other.boot_num) {
                    *a += b;
                }
                for (a, b) in self.boot_den.iter_mut().zip(&other.boot_den) {
                    *a += b;
                }
            }
        }
    }

    /// Every episode added, errors included.
    pub fn episodes(&self) -> usize {
        self.endings.values().sum()
    }

    /// Episodes per ending, errors included.
    pub fn endings(&self) -> &BTreeMap<OutcomeKind, usize> {
        &self.endings
    }

    /// Episodes that ended so (errors included, as a count).
    pub fn count(&self, kind: OutcomeKind) -> usize {
        self.endings.get(&kind).copied().unwrap_or(0)
    }

    /// Episodes that count for rates and means (all but backend errors).
    pub fn scored(&self) -> usize {
        self.scored
    }

    /// Attempt counts per seat over the scored episodes.
    pub fn seats(&self) -> PerSeat<SeatCounts> {
        self.totals
    }

    /// The values of ρ per seat over the scored episodes: the median, a histogram.
    pub fn rho_quantiles(&self) -> &PerSeat<Quantiles> {
        &self.rho
    }

    /// Every figure with its bootstrap interval (see the module doc).
    pub fn figures(&self) -> Figures {
        let estimates: [Option<Estimate>; FIGURES] = std::array::from_fn(|f| self.estimate(f));
        let seat = |seat: Seat| {
            let at = seat_offset(seat);
            SeatFigures {
                mean_rho: estimates[at],
                clipped_rho: estimates[at + 1],
                median_rho: self.rho[seat].median(),
                mean_reward: estimates[at + 2],
                first_bid: estimates[at + 3],
                sale_to_list: estimates[at + 4],
                format_ok: estimates[at + 5],
                malformed: estimates[at + 6],
                regulated: estimates[at + 7],
            }
        };
        Figures {
            endings: std::array::from_fn(|i| estimates[i]),
            pareto: estimates[PARETO],
            mean_turns: estimates[TURNS],
            seats: PerSeat::from_fn(seat),
        }
    }

    /// Figure `f`: Σ num / Σ den with its percentile interval over the resamples; `None` where
    /// Σ den = 0.
    fn estimate(&self, f: usize) -> Option<Estimate> {
        let d = DEN_OF[f];
        let (num, den) = (self.num[f], self.den[d]);
        if den <= 0.0 {
            return None;
        }
        let value = num / den;
        let nums = &self.boot_num[f * RESAMPLES..(f + 1) * RESAMPLES];
        let dens = &self.boot_den[d * RESAMPLES..(d + 1) * RESAMPLES];
        let mut list: Vec<f64> = nums
            .iter()
            .zip(dens)
            .filter(|(_, den)| **den > 0.0)
            .map(|(num, den)| num / den)
            .collect();
        list.sort_by(f64::total_cmp);
        let tail = (1.0 - LEVEL) / 2.0;
        // Every resample missed the figure's episodes: only possible when they are a sliver.
        let (low, high) = if list.is_empty() {
            (value, value)
        } else {
            (percentile(&list, tail), percentile(&list, 1.0 - tail))
        };
        Some(Estimate {
            value,
            low,
            high,
            n: self.den_count[d],
        })
    }
}

/// ρ clipped to [−1, 1], the clipped mean's values (see the module doc).
pub fn clip_rho(rho: f64) -> f64 {
    rho.clamp(-1.0, 1.0)
}

/// `sums[r] += w[r]·x` for every resample r; nothing for x = 0. A straight loop the compiler
/// vectorizes.
fn accumulate(sums: &mut [f64], w: &[f64], x: f64) {
    if x == 0.0 {
        return;
    }
    for (s, w) in sums.iter_mut().zip(w) {
        *s += w * x;
    }
}

fn indicator(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// The q-th quantile of sorted values, interpolating linearly between order statistics
/// (h = (len − 1)·q), numpy's default. `sorted` must not be empty.
pub(super) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let (below, above) = (h.floor() as usize, h.ceil() as usize);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    //! Aggregates worked by hand from metrics written out directly (the aggregate reads nothing
    //! else), and the bootstrap's properties.

    use super::*;
    use crate::score::SeatMetrics;

    const TOL: f64 = 1e-9;

    fn close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < TOL,
            "{actual} is not {expected}"
        );
    }

    fn value(e: Option<Estimate>) -> f64 {
        e.expect("an estimate").value
    }

    /// A seat that made `turns` moves and `malformed` unusable attempts, `format_ok` of all
    /// its attempts well-formed.
    fn seat(turns: u32, malformed: u32, format_ok: u32) -> SeatMetrics {
        SeatMetrics {
            turns,
            malformed,
            format_ok_rate: f64::from(format_ok) / f64::from((turns + malformed).max(1)),
            ..SeatMetrics::default()
        }
    }

    fn metrics(learner: SeatMetrics, opponent: SeatMetrics) -> EpisodeMetrics {
        EpisodeMetrics {
            seats: PerSeat::new(learner, opponent),
            pareto_optimal: None,
        }
    }

    fn plain() -> EpisodeMetrics {
        metrics(seat(3, 0, 3), seat(3, 0, 3))
    }

    /// Add an episode keyed by what it holds and how many the aggregate has: distinct keys,
    /// the same in every test run.
    fn add(a: &mut Aggregate, kind: OutcomeKind, rho: (f64, f64), m: &EpisodeMetrics) {
        add_keyed(a, a.episodes() as u64, kind, rho, m);
    }

    fn add_keyed(
        a: &mut Aggregate,
        key: u64,
        kind: OutcomeKind,
        rho: (f64, f64),
        m: &EpisodeMetrics,
    ) {
        let rho = PerSeat::new(rho.0, rho.1);
        a.add(key, kind, &rho, &rho, m);
    }

    #[test]
    fn ending_rates_are_over_scored_episodes_and_errors_are_counted_apart() {
        // deal, deal, walk-away, error: 3 scored. deal 2/3, walk-away 1/3, the rest 0.
        let mut a = Aggregate::default();
        add(&mut a, OutcomeKind::Deal, (0.75, 0.25), &plain());
        add(&mut a, OutcomeKind::Deal, (0.25, 0.75), &plain());
        add(&mut a, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        add(&mut a, OutcomeKind::Error, (0.9, 0.9), &plain());
        assert_eq!((a.episodes(), a.scored()), (4, 3));
        assert_eq!(a.count(OutcomeKind::Error), 1);
        close(value(a.figures().rate(OutcomeKind::Deal)), 2.0 / 3.0);
        close(value(a.figures().rate(OutcomeKind::WalkAway)), 1.0 / 3.0);
        close(value(a.figures().rate(OutcomeKind::RejectLoop)), 0.0);
        close(value(a.figures().rate(OutcomeKind::MaxTurns)), 0.0);
        close(value(a.figures().rate(OutcomeKind::FormatForfeit)), 0.0);
        assert_eq!(a.figures().rate(OutcomeKind::Error), None);
        // The error's turns are no attempts: 3 scored episodes × 3 per seat.
        assert_eq!(a.seats().learner.attempts, 9);

        // Only errors: nothing to rate, but they are counted.
        let mut a = Aggregate::default();
        add(&mut a, OutcomeKind::Error, (0.0, 0.0), &plain());
        assert_eq!((a.episodes(), a.scored()), (1, 0));
        assert_eq!(a.figures().rate(OutcomeKind::Deal), None);
        assert_eq!(a.figures().seats[Seat::Learner].mean_rho, None);
    }

    #[test]
    fn mean_rho_and_reward_per_seat_leave_errors_out() {
        // ρ learner 0.75, 0.25, 0 → mean 1/3; opponent 0.25, 0.75, 0.5 → 0.5.
        // The error's 0.9 does not count.
        let mut a = Aggregate::default();
        add(&mut a, OutcomeKind::Deal, (0.75, 0.25), &plain());
        add(&mut a, OutcomeKind::Deal, (0.25, 0.75), &plain());
        add(&mut a, OutcomeKind::WalkAway, (0.0, 0.5), &plain());
        add(&mut a, OutcomeKind::Error, (0.9, 0.9), &plain());
        close(value(a.figures().seats[Seat::Learner].mean_rho), 1.0 / 3.0);
        close(value(a.figures().seats[Seat::Opponent].mean_rho), 0.5);
        // Rewards are passed apart from ρ: learner 1, −1, 0.5 → mean 0.5/3.
        let mut a = Aggregate::default();
        for (key, r) in [1.0, -1.0, 0.5].into_iter().enumerate() {
            a.add(
                key as u64,
                OutcomeKind::Deal,
                &PerSeat::new(0.0, 0.0),
                &PerSeat::new(r, 0.0),
                &plain(),
            );
        }
        close(
            value(a.figures().seats[Seat::Learner].mean_reward),
            0.5 / 3.0,
        );
        close(value(a.figures().seats[Seat::Learner].mean_rho), 0.0);
    }

    #[test]
    fn pareto_rate_is_over_flagged_deals_only() {
        // Items/issues deals flagged optimal, dominated, optimal; a price deal and a walk-away
        // carry no flag → 2 of 3 = 2/3, n = 3.
        let mut a = Aggregate::default();
        for flag in [Some(true), Some(false), Some(true), None] {
            let m = EpisodeMetrics {
                pareto_optimal: flag,
                ..plain()
            };
            add(&mut a, OutcomeKind::Deal, (0.5, 0.5), &m);
        }
        add(&mut a, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        let p = a.figures().pareto.unwrap();
        close(p.value, 2.0 / 3.0);
        assert_eq!(p.n, 3);
    }

    #[test]
    fn first_bid_and_sale_to_list_are_over_the_episodes_that_have_them() {
        // The learner bid 0.5 and 0.7 of its budget as buyer, and sold once (no bid):
        // first bid (0.5 + 0.7)/2 = 0.6; sale-to-list only on the first: 2.4.
        let mut a = Aggregate::default();
        for (bid, sale) in [(Some(0.5), Some(2.4)), (Some(0.7), None), (None, None)] {
            let learner = SeatMetrics {
                first_bid_ratio: bid,
                sale_to_list: sale,
                ..seat(2, 0, 2)
            };
            add(
                &mut a,
                OutcomeKind::Deal,
                (0.5, 0.5),
                &metrics(learner, seat(2, 0, 2)),
            );
        }
        let bid = a.figures().seats[Seat::Learner].first_bid.unwrap();
        close(bid.value, 0.6);
        assert_eq!(bid.n, 2);
        close(value(a.figures().seats[Seat::Learner].sale_to_list), 2.4);
        assert_eq!(a.figures().seats[Seat::Opponent].first_bid, None);
    }

    #[test]
    fn format_malformed_and_regulation_rates_are_pooled_over_attempts() {
        // Learner: episode 1 made 3 moves and 1 malformed attempt, 2 of 4 format-ok; episode 2
        // made 5 moves, 5 of 5 format-ok.
        //   format-ok (2 + 5)/(4 + 5) = 7/9 (not the mean of shares (0.5 + 1)/2 = 0.75)
        //   malformed (1 + 0)/9 = 1/9
        // Opponent: 3 moves with 1 regulated, then 5 moves with 2 regulated → 3/8.
        let mut a = Aggregate::default();
        let reg = |turns, events| SeatMetrics {
            regulation_events: events,
            constrained: turns,
            constraint_violations: events,
            ..seat(turns, 0, turns)
        };
        add(
            &mut a,
            OutcomeKind::Deal,
            (0.5, 0.5),
            &metrics(seat(3, 1, 2), reg(3, 1)),
        );
        add(
            &mut a,
            OutcomeKind::MaxTurns,
            (0.0, 0.0),
            &metrics(seat(5, 0, 5), reg(5, 2)),
        );
        close(value(a.figures().seats[Seat::Learner].format_ok), 7.0 / 9.0);
        close(value(a.figures().seats[Seat::Learner].malformed), 1.0 / 9.0);
        close(value(a.figures().seats[Seat::Learner].regulated), 0.0);
        close(
            value(a.figures().seats[Seat::Opponent].regulated),
            3.0 / 8.0,
        );
        close(value(a.figures().seats[Seat::Opponent].format_ok), 1.0);
        // Totals: learner 9 attempts, 7 format-ok → 77.8 %; opponent 8 constrained, 3 outside.
        let totals = a.seats();
        assert_eq!((totals.learner.attempts, totals.learner.format_ok), (9, 7));
        close(totals.learner.format_ok_pct().unwrap(), 700.0 / 9.0);
        assert_eq!(
            (
                totals.opponent.constrained,
                totals.opponent.constraint_violations
            ),
            (8, 3)
        );
        // Mean turns: (3 + 3) + (5 + 5) over 2 episodes = 8.
        close(value(a.figures().mean_turns), 8.0);
    }

    #[test]
    fn a_seat_that_never_played_has_no_rate() {
        // The first mover walked away at once: the other seat made no attempt.
        let mut a = Aggregate::default();
        add(
            &mut a,
            OutcomeKind::WalkAway,
            (0.0, 0.0),
            &metrics(seat(1, 0, 1), seat(0, 0, 0)),
        );
        assert_eq!(a.figures().seats[Seat::Opponent].format_ok, None);
        assert_eq!(a.seats().opponent.format_ok_pct(), None);
        close(value(a.figures().seats[Seat::Learner].format_ok), 1.0);
    }

    #[test]
    fn absorb_pools_the_episodes_of_two_aggregates() {
        let (mut a, mut b, mut all) = Default::default();
        for (i, kind) in [OutcomeKind::Deal, OutcomeKind::WalkAway, OutcomeKind::Error]
            .into_iter()
            .cycle()
            .take(9)
            .enumerate()
        {
            let rho = (i as f64 / 10.0, 0.0);
            let key = 1000 + i as u64;
            add_keyed(
                if i % 2 == 0 { &mut a } else { &mut b },
                key,
                kind,
                rho,
                &plain(),
            );
            add_keyed(&mut all, key, kind, rho, &plain());
        }
        let mut pooled: Aggregate = a.clone();
        pooled.absorb(&b);
        assert_eq!(pooled.episodes(), 9);
        assert_eq!(pooled.endings(), all.endings());
        assert_eq!(pooled.seats(), all.seats());
        let (p, q) = (pooled.figures(), all.figures());
        // Counts are exact in any order; sums of real values agree within 10⁻¹².
        assert_eq!(p.endings, q.endings);
        assert_eq!(p.mean_turns, q.mean_turns);
        assert_eq!(p.seats.learner.median_rho, q.seats.learner.median_rho);
        near(p.seats.learner.mean_rho, q.seats.learner.mean_rho);
        near(p.seats.learner.clipped_rho, q.seats.learner.clipped_rho);
    }

    /// Two estimates equal within 10⁻¹² (sums of reals in another order).
    fn near(a: Option<Estimate>, b: Option<Estimate>) {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.n, b.n);
        for (x, y) in [(a.value, b.value), (a.low, b.low), (a.high, b.high)] {
            assert!((x - y).abs() <= 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn one_episode_gives_a_point_interval() {
        // Every resample that draws the one episode w times gives 3w/4w = 3/4; those that miss
        // it are left out: 3/4 with bounds 3/4.
        let mut a = Aggregate::default();
        let learner = seat(3, 1, 3);
        add(
            &mut a,
            OutcomeKind::Deal,
            (0.5, 0.5),
            &metrics(learner, seat(3, 0, 3)),
        );
        let e = a.figures().seats.learner.format_ok.unwrap();
        assert_eq!((e.value, e.low, e.high, e.n), (0.75, 0.75, 0.75, 1));
        assert_eq!(Aggregate::default().figures().mean_turns, None);
    }

    #[test]
    fn the_interval_brackets_the_value_and_ignores_arrival_order() {
        // 40 values 0, 0.025, …, 0.975: mean 0.4875; keys are the values' indexes.
        let (mut forward, mut backward) = (Aggregate::default(), Aggregate::default());
        for i in 0..40u32 {
            let j = 39 - i;
            for (a, k) in [(&mut forward, i), (&mut backward, j)] {
                add_keyed(
                    a,
                    u64::from(k),
                    OutcomeKind::Deal,
                    (f64::from(k) / 40.0, 0.0),
                    &plain(),
                );
            }
        }
        let (f, b) = (forward.figures(), backward.figures());
        near(f.seats.learner.mean_rho, b.seats.learner.mean_rho);
        assert_eq!(f.seats.learner.median_rho, b.seats.learner.median_rho);
        let rho = f.seats.learner.mean_rho.unwrap();
        close(rho.value, 0.4875);
        assert!(rho.low < rho.value && rho.value < rho.high);
        assert_eq!(rho.n, 40);
        // The classical bootstrap's interval is about 0.4875 ± 1.96·0.2886/√40 = ± 0.0894.
        assert!((rho.high - rho.low - 2.0 * 0.0894).abs() < 0.03, "{rho:?}");
    }

    #[test]
    fn a_figure_over_a_few_episodes_is_resampled_with_the_rest() {
        // The deal rate is over all 10 episodes (0 or 1); the first bid only over the 2
        // episodes that have one, both 0.5: its value and both bounds are 0.5, over n = 2;
        // resamples that drew neither are left out of its list. Sale-to-list: no episode.
        let mut a = Aggregate::default();
        for i in 0..10 {
            let learner = SeatMetrics {
                first_bid_ratio: (i < 2).then_some(0.5),
                ..seat(2, 0, 2)
            };
            let kind = if i % 2 == 0 {
                OutcomeKind::Deal
            } else {
                OutcomeKind::WalkAway
            };
            add(&mut a, kind, (0.0, 0.0), &metrics(learner, seat(2, 0, 2)));
        }
        let f = a.figures();
        close(value(f.rate(OutcomeKind::Deal)), 0.5);
        let bid = f.seats.learner.first_bid.unwrap();
        assert_eq!((bid.value, bid.low, bid.high, bid.n), (0.5, 0.5, 0.5, 2));
        assert_eq!(f.seats.learner.sale_to_list, None);
    }

    #[test]
    fn clipped_mean_and_median_tame_an_absurd_price() {
        // ρ 0.2, 0.5, 0.9, −3: mean (0.2 + 0.5 + 0.9 − 3)/4 = −0.35; clipped to [−1, 1] the −3
        // counts −1: (0.2 + 0.5 + 0.9 − 1)/4 = 0.15; median (0.2 + 0.5)/2 = 0.35.
        let mut a = Aggregate::default();
        for rho in [0.2, 0.5, 0.9, -3.0] {
            add(&mut a, OutcomeKind::Deal, (rho, 0.0), &plain());
        }
        let f = a.figures().seats.learner;
        close(value(f.mean_rho), -0.35);
        close(value(f.clipped_rho), 0.15);
        close(value(f.median_rho), 0.35);
        let clipped = f.clipped_rho.unwrap();
        assert!(clipped.low >= -1.0 && clipped.high <= 1.0);
        assert_eq!(a.rho_quantiles().learner.len(), 4);
    }

    #[test]
    fn weights_are_poisson_1_and_fixed_by_the_key() {
        // Mean and variance of Poisson(1) are 1; over 1000 draws both within ±0.15.
        let w = Weights::of(7);
        let xs = w.as_slice();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!(
            (mean - 1.0).abs() < 0.15 && (var - 1.0).abs() < 0.15,
            "{mean} {var}"
        );
        assert!(xs
            .iter()
            .all(|x| x.fract() == 0.0 && *x >= 0.0 && *x <= 12.0));
        assert_eq!(Weights::of(7).as_slice(), xs);
        assert_ne!(Weights::of(8).as_slice(), xs);
        // The table is P(Poisson(1) ≤ k)·2³².
        let mut cdf = 0.0;
        for (k, t) in POISSON_1_CDF.iter().enumerate() {
            cdf += (-1.0f64).exp() / (1..=k).map(|i| i as f64).product::<f64>();
            assert!((f64::from(*t) - cdf * 2f64.powi(32)).abs() <= 1.0, "{k}");
        }
    }

    #[test]
    fn a_proportion_gets_about_the_textbook_interval() {
        // 50 deals in 100: p = 0.5, standard error √(0.5·0.5/100) = 0.05, so the 95% interval
        // is about 0.5 ± 1.96·0.05 = [0.402, 0.598]; the bootstrap's bounds sit within ±0.02.
        let mut a = Aggregate::default();
        for i in 0..100 {
            let kind = if i % 2 == 0 {
                OutcomeKind::Deal
            } else {
                OutcomeKind::WalkAway
            };
            add(&mut a, kind, (0.0, 0.0), &plain());
        }
        let deal = a.figures().rate(OutcomeKind::Deal).unwrap();
        close(deal.value, 0.5);
        assert!((deal.low - 0.402).abs() < 0.02, "{deal:?}");
        assert!((deal.high - 0.598).abs() < 0.02, "{deal:?}");
        // In percent.
        let pct = deal.scaled(100.0);
        close(pct.value, 50.0);
        close(pct.low, deal.low * 100.0);
    }

    #[test]
    fn percentiles_interpolate_between_order_statistics() {
        // h = (5 − 1)·q: q = 0.5 → 2; q = 0.1 → h = 0.4 → 0 + 0.4·(1 − 0) = 0.4;
        // q = 0.975 → h = 3.9 → 3 + 0.9·(4 − 3) = 3.9.
        let s = [0.0, 1.0, 2.0, 3.0, 4.0];
        close(percentile(&s, 0.5), 2.0);
        close(percentile(&s, 0.1), 0.4);
        close(percentile(&s, 0.975), 3.9);
        close(percentile(&[7.0], 0.025), 7.0);
    }
}
