//! Aggregates over many episodes (the book's `design/metrics.md`): how episodes ended, how well
//! each seat did and how cleanly it played, each with a bootstrap 95% interval.
//!
//! An [`Aggregate`] is fed one episode at a time with what the episode's record already holds —
//! the ending, ρ, utility and reward per seat, its [`EpisodeMetrics`], each seat's role, the turn
//! cap and each seat's deal proposals ([`EpisodeValues`]) — and never reads turns itself, so a
//! run's summary, a report and a rescored log agree by construction. It takes those values
//! rather than a record so that `score` stays below `record` (`EpisodeRecord::values_from_side_of`
//! builds them). Group it however a table needs (per family, persona, pair of players) by keeping
//! one aggregate per group; [`Aggregate::absorb`] pools groups. [`Aggregate::figures`] computes
//! every figure at once.
//!
//! Backend errors (`error` endings) are counted apart ([`Aggregate::count`]) and enter no rate
//! and no mean. Every other figure is over the *scored* episodes:
//! - ending rates (deal, walk-away, reject-loop, max-turns, format-forfeit): share of scored
//!   episodes that ended so. The deal rate is DialogXpert's success rate SR (§4.3: success within
//!   the turn limit; no deal can be closed past dealgym's cap), so SR has no figure of its own
//!   ([`Figures::success_rate`]);
//! - ρ over deals per seat — the bargained ratio as the papers report it (the BATNA paper's
//!   Tables 1 and 4, with the deal rate beside it): mean ρ over the episodes that ended in a
//!   deal; and its clipped mean (ρ clipped to [−1, 1], for the charts);
//! - ρ per episode (no deal = 0) and mean reward per seat: over scored episodes, an episode with
//!   no deal counting with its ρ (the no-deal value's ρ: 0 unless the setup gives a no-deal
//!   value);
//! - points per seat (the CaSiNo harness paper's "Pts"/"Opp", §4.2 and Table 1): mean utility
//!   over scored episodes, no deal counting with its utility (the no-deal value, 0 by default);
//! - score ratio per seat (the harness's "Ratio"): the seat's points over both seats' points,
//!   Σ u_seat / Σ (u_learner + u_opponent) over scored episodes — the share of the joint score,
//!   as Table 1's figures are (Pts 17.90, Opp 18.44 → .493), not the mean of each episode's
//!   `score_ratio`; over the episodes whose joint utility is not 0 (only they bear on it);
//! - Pareto rate: share of the deals on items and issues that are Pareto-optimal (the episodes
//!   whose metrics carry the flag; price deals have none);
//! - first-bid ratio and sale-to-list over deals per seat: over the episodes where that seat has
//!   one (it was the buyer on a price task and bid, or bought);
//! - SL per seat (DialogXpert §4.3): sale-to-list over the price episodes where the seat was the
//!   buyer, a failed negotiation (any ending but a deal) counting 0;
//! - mean turns: moves that took effect, both seats together, per episode; turns to deal (the
//!   harness's): the same over the episodes that ended in a deal; average moves: the same over
//!   every scored episode, one that did not end in a deal counting at the turn cap (the moves
//!   the cap left the players, [`super::turn_cap`]); average turns AT (DialogXpert §4.3): the
//!   same in the paper's turns ([`exchanges`]: a turn is one exchange, the system's utterance
//!   and the user's reply, so ⌈moves/2⌉), a failure at the cap in turns (⌈cap/2⌉ =
//!   `max_rounds`, 8 under the `dialogxpert` preset, as the paper's "maximum of 8 dialogue
//!   turns", App. C);
//! - format compliance per seat: format-ok attempts / attempts, pooled over episodes, where
//!   attempts = turns + malformed (every completion the seat was asked for);
//! - malformed rate per seat: malformed attempts / attempts, pooled;
//! - malformed-deal rate per seat (the harness's): malformed proposals / proposals, pooled
//!   ([`super::Proposals`]);
//! - regulation rate per seat: moves regulation replaced / moves that took effect, pooled;
//! - clipped mean ρ per seat: the mean of ρ clipped to [−1, 1] (a deal at an absurd price by an
//!   unregulated seat has ρ far below −1 and would dominate the plain mean; clipped, it counts
//!   as losing the whole bargaining range, and a ρ above 1 as winning all of it);
//! - regret per seat (issue 44): the oracle's ρ less the seat's ρ (`score::oracle`), over the
//!   scored episodes whose record has the seat's oracle (it faced a built-in rule);
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
//! [`Aggregate::difference`] subtracts two aggregates resample by resample: over records of
//! different run ids (different keys, so independent weights) that is the two-sample bootstrap
//! of the difference.
//!
//! A weight is drawn by inversion: one `u32` from the RNG against the Poisson(1) distribution
//! function rounded to 2⁻³² (weights 0 to 12: the tail P(Poisson(1) ≥ 12) < 10⁻⁹ is folded into
//! 12).
//!
//! Cost: the weights of an episode are drawn once ([`Weights::of`]) and can serve every group
//! the episode is added to ([`Aggregate::add_weighted`]); an update touches only the figures an
//! episode bears on (non-zero num or den), each a straight loop over the resamples. Memory: up to
//! (45 figures + 20 denominators) × `RESAMPLES` sums (≈ 490 KB), each figure's and denominator's
//! allocated when its first non-zero value arrives (an aggregate of price tasks has no Pareto
//! sums, one fed only endings and ρ few others), plus two [`Quantiles`] (none for
//! [`Aggregate::without_median`]).
//! Measured (`cargo bench --bench engine -- aggregate`, release, a shared 2-core machine): 4.3 to
//! 5.2 µs to add an episode (2.6 to 3.1 µs of it drawing the weights), 1.55 to 1.71 µs per
//! further group, before the figures of issue 19 (ρ over deals, points, score ratio, SL, AT,
//! turns to deal, malformed deals) were added.
//!
//! Order: counts (endings, turns, attempts, regulation events, flags) are whole numbers, whose f64
//! sums are exact, so their figures and intervals are the same bits in any arrival order. Sums of
//! real values (ρ, utility, reward, first bid, sale-to-list) can differ in the last bits between
//! orders (by about n·2⁻⁵³ relative to Σ |value|); their figures are equal within 10⁻¹² across
//! orders, which the tests check.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::game::{OutcomeKind, PerSeat, Seat};

use super::estimate::Estimate;
use super::quantile::Quantiles;
use super::{EpisodeMetrics, Proposals};

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 1000;

/// Coverage of the intervals.
pub(crate) const LEVEL: f64 = 0.95;

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

/// One ended episode as an aggregate takes it: what its record holds, from one side (the
/// aggregate's "learner" is `learner` here; `EpisodeRecord::values_from_side_of` builds it).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeValues {
    pub(crate) kind: OutcomeKind,
    pub(crate) rho: PerSeat<f64>,
    /// Each seat's utility: its points (no deal: the no-deal value).
    pub(crate) utility: PerSeat<f64>,
    pub(crate) rewards: PerSeat<f64>,
    pub(crate) metrics: EpisodeMetrics,
    /// Whether the seat was the buyer (a price task): SL is over those episodes.
    pub(crate) buyer: PerSeat<bool>,
    /// The moves the turn cap left the players (`super::turn_cap`): AT's value for an episode
    /// that did not end in a deal.
    pub(crate) turn_cap: u32,
    /// Each seat's deal proposals ([`super::proposals`]).
    pub(crate) proposals: PerSeat<Proposals>,
    /// Each seat's regret where the record has its oracle ([`super::Oracle`]).
    pub(crate) regret: PerSeat<Option<f64>>,
}

impl EpisodeValues {
    /// An episode known only by its ending and ρ (the rest zero): what the threshold
    /// sensitivity feeds, whose figures are the deal rate and the learner's ρ.
    pub fn of_ending(kind: OutcomeKind, rho: PerSeat<f64>) -> EpisodeValues {
        EpisodeValues {
            kind,
            rho,
            utility: PerSeat::default(),
            rewards: PerSeat::default(),
            metrics: EpisodeMetrics::default(),
            buyer: PerSeat::default(),
            turn_cap: 0,
            proposals: PerSeat::default(),
            regret: PerSeat::default(),
        }
    }
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
    /// Moves that took effect per deal (the CaSiNo harness's turns to deal).
    pub turns_to_deal: Option<Estimate>,
    /// DialogXpert's AT: the paper's turns (exchanges, `exchanges`) per episode, an episode
    /// without a deal counted at the turn cap in turns (`max_rounds`).
    pub average_turns: Option<Estimate>,
    /// Moves per episode, an episode without a deal counted at the turn cap in moves: what AT
    /// counted before it counted the paper's turns.
    pub average_moves: Option<Estimate>,
    /// Share of bundle deals whose bundle makes more for both sides together than the full
    /// bundle would (dropping parts grew the pie: both sides can be better off).
    pub integrative: Option<Estimate>,
    /// Mean integrative gain per bundle deal, in currency units (`joint(S) − joint(full)`).
    pub integrative_gain: Option<Estimate>,
    /// Mean final price over the full bundle's list price per bundle deal (INA's final over
    /// first price).
    pub price_to_list: Option<Estimate>,
    /// Hotel calls: the share of chase tickets agreed at or below the agent's acceptable price
    /// (the REPO paper's per-ticket task success), over every ticket of the calls.
    pub ticket_success: Option<Estimate>,
    /// Hotel calls: the agent's mean ρ per ticket (0 for a ticket left unchanged).
    pub ticket_rho: Option<Estimate>,
    pub seats: PerSeat<SeatFigures>,
}

impl Figures {
    /// The figure `id` names.
    pub fn get(&self, id: FigureId) -> Option<Estimate> {
        match id {
            FigureId::Rate(kind) => self.rate(kind),
            FigureId::MeanReward(seat) => self.seats[seat].mean_reward,
            FigureId::FormatOk(seat) => self.seats[seat].format_ok,
            FigureId::RhoDeals(seat) => self.seats[seat].rho_deals,
            FigureId::MeanRho(seat) => self.seats[seat].mean_rho,
            FigureId::MeanTurns => self.mean_turns,
        }
    }

    /// Share of scored episodes that ended as `kind`; `None` for `error`, which is no share
    /// of anything here.
    pub fn rate(&self, kind: OutcomeKind) -> Option<Estimate> {
        let i = RATED_ENDINGS.iter().position(|k| *k == kind)?;
        self.endings[i]
    }

    /// DialogXpert's success rate SR (§4.3): the share of dialogues that reached their goal
    /// within the turn limit. In dealgym that is the deal rate (the turn cap ends an episode as
    /// `max_turns`), so this is [`Figures::rate`] of `deal`, not a figure of its own.
    pub fn success_rate(&self) -> Option<Estimate> {
        self.rate(OutcomeKind::Deal)
    }
}

/// One seat's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeatFigures {
    /// Mean ρ over the deals: the bargained ratio as the papers report it.
    pub rho_deals: Option<Estimate>,
    /// Mean of ρ clipped to [−1, 1] over the deals.
    pub clipped_rho_deals: Option<Estimate>,
    /// Mean ρ per scored episode, no deal counting with its ρ (0 unless the setup gives a
    /// no-deal value).
    pub mean_rho: Option<Estimate>,
    /// Mean of ρ clipped to [−1, 1], per scored episode.
    pub clipped_rho: Option<Estimate>,
    /// Median of ρ per scored episode, with the order-statistic interval (see [`Quantiles`]).
    pub median_rho: Option<Estimate>,
    pub mean_reward: Option<Estimate>,
    /// Mean utility per scored episode (the harness's points).
    pub points: Option<Estimate>,
    /// Σ the seat's utility / Σ both seats' utility (the harness's score ratio).
    pub score_ratio: Option<Estimate>,
    /// The buyer's first offer / B, over the episodes where this seat bid as the buyer.
    pub first_bid: Option<Estimate>,
    /// (P − L)/(B − L), over the price deals where this seat was the buyer.
    pub sale_to_list: Option<Estimate>,
    /// DialogXpert's SL: sale-to-list over the price episodes where this seat was the buyer,
    /// 0 for each that did not end in a deal.
    pub sl: Option<Estimate>,
    /// Format-ok attempts / attempts.
    pub format_ok: Option<Estimate>,
    /// Malformed attempts / attempts.
    pub malformed: Option<Estimate>,
    /// Malformed proposals / proposals (the harness's malformed-deal rate).
    pub malformed_deals: Option<Estimate>,
    /// Moves regulation replaced / moves that took effect.
    pub regulated: Option<Estimate>,
    /// The oracle's ρ less the seat's, over the episodes where it faced a built-in rule the
    /// oracle searches; absent (and left out of JSON) where there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regret: Option<Estimate>,
    /// A narrated seat's consistency: narrated attempts whose Talk does not contradict their
    /// decided move / narrated attempts; absent (and left out of JSON) for a seat never
    /// narrated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Estimate>,
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
const TURNS_TO_DEAL: usize = TURNS + 1;
const AVERAGE_TURNS: usize = TURNS_TO_DEAL + 1;
const AVERAGE_MOVES: usize = AVERAGE_TURNS + 1;
/// Bundle deals whose bundle grew the pie (integrative gain > 0).
const INTEGRATIVE: usize = AVERAGE_MOVES + 1;
/// The integrative gain per bundle deal.
const INTEGRATIVE_GAIN: usize = INTEGRATIVE + 1;
/// The final price over the full bundle's list price, per bundle deal.
const PRICE_TO_LIST: usize = INTEGRATIVE_GAIN + 1;
/// Hotel calls: tickets agreed at or below the acceptable price, and the agent's ρ summed
/// over the tickets (both over the tickets of the calls).
const TICKET_SUCCESS: usize = PRICE_TO_LIST + 1;
const TICKET_RHO: usize = TICKET_SUCCESS + 1;
const SEATS: usize = TICKET_RHO + 1;

/// A seat's figures, at `SEATS + seat·PER_SEAT + F`.
mod seat_figure {
    pub(crate) const RHO: usize = 0;
    pub(crate) const CLIPPED_RHO: usize = 1;
    pub(crate) const REWARD: usize = 2;
    pub(crate) const FIRST_BID: usize = 3;
    pub(crate) const SALE_TO_LIST: usize = 4;
    pub(crate) const FORMAT_OK: usize = 5;
    pub(crate) const MALFORMED: usize = 6;
    pub(crate) const REGULATED: usize = 7;
    pub const RHO_DEALS: usize = 8;
    pub(crate) const CLIPPED_RHO_DEALS: usize = 9;
    pub(crate) const POINTS: usize = 10;
    pub(crate) const SCORE_RATIO: usize = 11;
    pub const SL: usize = 12;
    pub(crate) const MALFORMED_DEALS: usize = 13;
    pub(crate) const REGRET: usize = 14;
    pub(crate) const CONSISTENT: usize = 15;
}
const PER_SEAT: usize = 16;
const FIGURES: usize = SEATS + 2 * PER_SEAT;

// Where each denominator sits: shared by the figures over the same episodes.
/// Every scored episode counts 1 (endings, turns, AT and average moves, ρ per episode, reward,
/// points).
const D_SCORED: usize = 0;
/// Deals that carry a Pareto flag.
const D_PARETO: usize = 1;
/// Deals (ρ over deals, turns to deal).
const D_DEALS: usize = 2;
/// Both seats' utility together (score ratio).
const D_JOINT: usize = 3;
/// Bundle deals (the integrative figures).
const D_BUNDLE: usize = 4;
/// Chase tickets (hotel calls).
const D_TICKETS: usize = 5;
/// A seat's denominators, at `D_SEATS + seat·D_PER_SEAT + D`.
mod seat_den {
    /// Has a first bid.
    pub(crate) const BID: usize = 0;
    /// Has a sale-to-list (a price deal as the buyer).
    pub(crate) const SALE: usize = 1;
    /// Attempts.
    pub(crate) const ATTEMPTS: usize = 2;
    /// Moves that took effect.
    pub(crate) const MOVES: usize = 3;
    /// A price episode as the buyer (SL).
    pub(crate) const BUYER: usize = 4;
    /// Deal proposals.
    pub(crate) const PROPOSALS: usize = 5;
    /// Has an oracle (faced a built-in rule).
    pub(crate) const ORACLE: usize = 6;
    /// Narrated attempts.
    pub(crate) const NARRATED: usize = 7;
}
const D_SEATS: usize = 6;
const D_PER_SEAT: usize = 8;
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

/// The denominator of each figure (`D_SCORED` unless set here).
const DEN_OF: [usize; FIGURES] = {
    use seat_den as d;
    use seat_figure as f;
    let mut of = [D_SCORED; FIGURES];
    of[PARETO] = D_PARETO;
    of[TURNS_TO_DEAL] = D_DEALS;
    of[INTEGRATIVE] = D_BUNDLE;
    of[INTEGRATIVE_GAIN] = D_BUNDLE;
    of[PRICE_TO_LIST] = D_BUNDLE;
    of[TICKET_SUCCESS] = D_TICKETS;
    of[TICKET_RHO] = D_TICKETS;
    let mut seat = 0;
    while seat < 2 {
        let (at, den) = (SEATS + seat * PER_SEAT, D_SEATS + seat * D_PER_SEAT);
        of[at + f::FIRST_BID] = den + d::BID;
        of[at + f::SALE_TO_LIST] = den + d::SALE;
        of[at + f::FORMAT_OK] = den + d::ATTEMPTS;
        of[at + f::MALFORMED] = den + d::ATTEMPTS;
        of[at + f::REGULATED] = den + d::MOVES;
        of[at + f::RHO_DEALS] = D_DEALS;
        of[at + f::CLIPPED_RHO_DEALS] = D_DEALS;
        of[at + f::SCORE_RATIO] = D_JOINT;
        of[at + f::SL] = den + d::BUYER;
        of[at + f::MALFORMED_DEALS] = den + d::PROPOSALS;
        of[at + f::REGRET] = den + d::ORACLE;
        of[at + f::CONSISTENT] = den + d::NARRATED;
        seat += 1;
    }
    of
};

/// DialogXpert's turns in `moves` moves of both seats: a turn is one exchange — "the assistant
/// LLM will generate the appropriate response and this is followed by the user LLM response"
/// (App. C, after PPDPP, whose environment counts one step per such pair and stops at its
/// `max_turn`) — and a move left without its reply still opens a turn: ⌈moves/2⌉. That is
/// dealgym's round (`max_rounds` caps each seat's moves), so a failure's cap in turns is
/// `max_rounds`.
fn exchanges(moves: f64) -> f64 {
    (moves / 2.0).ceil()
}

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

    pub(crate) fn as_slice(&self) -> &[f64] {
        &self.0[..]
    }
}

/// Streaming aggregate of episodes: [`Aggregate::add`] each as it ends, read the counts at any
/// time and [`Aggregate::figures`] when a table is due. Memory does not grow with the
/// episodes (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    endings: BTreeMap<OutcomeKind, usize>,
    totals: PerSeat<SeatCounts>,
    scored: usize,
    /// Σ num and Σ den over the scored episodes (the figures' values).
    num: [f64; FIGURES],
    den: [f64; DENS],
    /// Episodes with a non-zero denominator, per denominator.
    den_count: [usize; DENS],
    /// Per figure, Σ w·num per resample; empty (all zero) until the figure's first non-zero
    /// value, and the outer list empty until an episode is scored.
    boot_num: Vec<Vec<f64>>,
    /// Per denominator, Σ w·den per resample, kept the same way.
    boot_den: Vec<Vec<f64>>,
    rho: PerSeat<Quantiles>,
    /// Whether ρ goes into `rho` (the median, the histogram): not for an aggregate that never
    /// shows them ([`Aggregate::without_median`]).
    medians: bool,
}

impl Default for Aggregate {
    fn default() -> Aggregate {
        Aggregate {
            endings: BTreeMap::new(),
            totals: PerSeat::default(),
            scored: 0,
            num: [0.0; FIGURES],
            den: [0.0; DENS],
            den_count: [0; DENS],
            boot_num: Vec::new(),
            boot_den: Vec::new(),
            rho: PerSeat::default(),
            medians: true,
        }
    }
}

impl Aggregate {
    /// An aggregate that keeps no values of ρ: no median and no histogram (`None` and empty),
    /// every other figure as usual. For tables that show neither, such as the threshold
    /// sensitivity's many aggregates: the quantiles keep up to 65,536 values per seat.
    pub fn without_median() -> Aggregate {
        Aggregate {
            medians: false,
            ..Aggregate::default()
        }
    }

    /// Add one ended episode: the key it is resampled by (`EpisodeRecord::bootstrap_key`) and
    /// its values (as its record holds them). An `error` ending is only counted.
    pub fn add(&mut self, key: u64, episode: &EpisodeValues) {
        // An error is only counted: no weights needed.
        if episode.kind == OutcomeKind::Error {
            *self.endings.entry(episode.kind).or_default() += 1;
            return;
        }
        self.add_weighted(&Weights::of(key), episode);
    }

    /// [`Aggregate::add`] with the episode's weights already drawn ([`Weights::of`] its key).
    pub fn add_weighted(&mut self, weights: &Weights, episode: &EpisodeValues) {
        use seat_den as d;
        use seat_figure as f;
        let EpisodeValues {
            kind,
            rho,
            utility,
            rewards,
            metrics,
            buyer,
            turn_cap,
            proposals,
            regret,
        } = episode;
        let kind = *kind;
        *self.endings.entry(kind).or_default() += 1;
        if kind == OutcomeKind::Error {
            return;
        }
        self.scored += 1;
        let deal = kind == OutcomeKind::Deal;
        let mut num = [0.0; FIGURES];
        let mut den = [0.0; DENS];
        den[D_SCORED] = 1.0;
        den[D_DEALS] = indicator(deal);
        den[D_JOINT] = utility.learner + utility.opponent;
        if let Some(i) = RATED_ENDINGS.iter().position(|k| *k == kind) {
            num[i] = 1.0;
        }
        if let Some(optimal) = metrics.pareto_optimal {
            num[PARETO] = indicator(optimal);
            den[D_PARETO] = 1.0;
        }
        if let Some(gain) = metrics.integrative_gain {
            num[INTEGRATIVE] = indicator(gain > 1e-9);
            num[INTEGRATIVE_GAIN] = gain;
            num[PRICE_TO_LIST] = metrics.price_to_list.unwrap_or(0.0);
            den[D_BUNDLE] = 1.0;
        }
        let turns = f64::from(metrics.seats.learner.turns + metrics.seats.opponent.turns);
        num[TURNS] = turns;
        num[TURNS_TO_DEAL] = if deal { turns } else { 0.0 };
        let moves = if deal { turns } else { f64::from(*turn_cap) };
        num[AVERAGE_MOVES] = moves;
        num[AVERAGE_TURNS] = exchanges(moves);
        for ticket in &metrics.tickets {
            num[TICKET_SUCCESS] += indicator(ticket.success);
            num[TICKET_RHO] += ticket.rho_bd;
            den[D_TICKETS] += 1.0;
        }
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
            if self.medians {
                self.rho[seat].add(rho[seat]);
            }
            let (at, dn) = (seat_offset(seat), den_offset(seat));
            num[at + f::RHO] = rho[seat];
            num[at + f::CLIPPED_RHO] = clip_rho(rho[seat]);
            num[at + f::REWARD] = rewards[seat];
            if deal {
                num[at + f::RHO_DEALS] = rho[seat];
                num[at + f::CLIPPED_RHO_DEALS] = clip_rho(rho[seat]);
            }
            num[at + f::POINTS] = utility[seat];
            num[at + f::SCORE_RATIO] = utility[seat];
            if let Some(bid) = m.first_bid_ratio {
                num[at + f::FIRST_BID] = bid;
                den[dn + d::BID] = 1.0;
            }
            if let Some(sale) = m.sale_to_list {
                num[at + f::SALE_TO_LIST] = sale;
                den[dn + d::SALE] = 1.0;
            }
            // A failed negotiation is SL 0; a deal without a sale-to-list (no spread between
            // budget and listing price) bears on neither.
            if buyer[seat] && (!deal || m.sale_to_list.is_some()) {
                num[at + f::SL] = m.sale_to_list.unwrap_or(0.0);
                den[dn + d::BUYER] = 1.0;
            }
            num[at + f::FORMAT_OK] = f64::from(format_ok);
            num[at + f::MALFORMED] = f64::from(m.malformed);
            den[dn + d::ATTEMPTS] = f64::from(attempts);
            num[at + f::REGULATED] = f64::from(m.regulation_events);
            den[dn + d::MOVES] = f64::from(m.turns);
            num[at + f::MALFORMED_DEALS] = f64::from(proposals[seat].malformed);
            den[dn + d::PROPOSALS] = f64::from(proposals[seat].made);
            if let Some(regret) = regret[seat] {
                num[at + f::REGRET] = regret;
                den[dn + d::ORACLE] = 1.0;
            }
            num[at + f::CONSISTENT] = f64::from(m.narrated.saturating_sub(m.contradicted));
            den[dn + d::NARRATED] = f64::from(m.narrated);
        }
        for (sum, x) in self.num.iter_mut().zip(num) {
            *sum += x;
        }
        for ((sum, count), x) in self.den.iter_mut().zip(&mut self.den_count).zip(den) {
            *sum += x;
            *count += usize::from(x != 0.0);
        }
        if self.boot_num.is_empty() {
            self.boot_num = vec![Vec::new(); FIGURES];
            self.boot_den = vec![Vec::new(); DENS];
        }
        let w = weights.as_slice();
        for (sums, x) in self.boot_num.iter_mut().zip(num) {
            accumulate(sums, w, x);
        }
        for (sums, x) in self.boot_den.iter_mut().zip(den) {
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
        if other.boot_num.is_empty() {
            return;
        }
        if self.boot_num.is_empty() {
            self.boot_num = other.boot_num.clone();
            self.boot_den = other.boot_den.clone();
            return;
        }
        let pairs = self
            .boot_num
            .iter_mut()
            .zip(&other.boot_num)
            .chain(self.boot_den.iter_mut().zip(&other.boot_den));
        for (mine, theirs) in pairs {
            if theirs.is_empty() {
                continue;
            }
            if mine.is_empty() {
                mine.clone_from(theirs);
            } else {
                for (a, b) in mine.iter_mut().zip(theirs) {
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
        use seat_figure as f;
        let estimates: [Option<Estimate>; FIGURES] = std::array::from_fn(|f| self.estimate(f));
        let seat = |seat: Seat| {
            let at = seat_offset(seat);
            SeatFigures {
                rho_deals: estimates[at + f::RHO_DEALS],
                clipped_rho_deals: estimates[at + f::CLIPPED_RHO_DEALS],
                mean_rho: estimates[at + f::RHO],
                clipped_rho: estimates[at + f::CLIPPED_RHO],
                median_rho: self.rho[seat].median(),
                mean_reward: estimates[at + f::REWARD],
                points: estimates[at + f::POINTS],
                score_ratio: estimates[at + f::SCORE_RATIO],
                first_bid: estimates[at + f::FIRST_BID],
                sale_to_list: estimates[at + f::SALE_TO_LIST],
                sl: estimates[at + f::SL],
                format_ok: estimates[at + f::FORMAT_OK],
                malformed: estimates[at + f::MALFORMED],
                malformed_deals: estimates[at + f::MALFORMED_DEALS],
                regulated: estimates[at + f::REGULATED],
                regret: estimates[at + f::REGRET],
                consistency: estimates[at + f::CONSISTENT],
            }
        };
        Figures {
            endings: std::array::from_fn(|i| estimates[i]),
            pareto: estimates[PARETO],
            mean_turns: estimates[TURNS],
            turns_to_deal: estimates[TURNS_TO_DEAL],
            average_turns: estimates[AVERAGE_TURNS],
            average_moves: estimates[AVERAGE_MOVES],
            integrative: estimates[INTEGRATIVE],
            integrative_gain: estimates[INTEGRATIVE_GAIN],
            price_to_list: estimates[PRICE_TO_LIST],
            ticket_success: estimates[TICKET_SUCCESS],
            ticket_rho: estimates[TICKET_RHO],
            seats: PerSeat::from_fn(seat),
        }
    }

    /// Figure `f`: Σ num / Σ den with its percentile interval over the resamples; `None` where
    /// Σ den ≤ 0.
    fn estimate(&self, f: usize) -> Option<Estimate> {
        let (value, resamples) = self.resampled(f)?;
        let mut list: Vec<f64> = resamples.flatten().collect();
        Some(interval(value, &mut list, self.den_count[DEN_OF[f]]))
    }

    /// Figure `f`'s value and its value in each resample (`None` in a resample that drew none
    /// of its episodes); `None` where Σ den ≤ 0.
    fn resampled(&self, f: usize) -> Option<(f64, impl Iterator<Item = Option<f64>> + '_)> {
        let d = DEN_OF[f];
        let (num, den) = (self.num[f], self.den[d]);
        if den <= 0.0 {
            return None;
        }
        let nums = resample_sums(&self.boot_num, f, &NO_SUMS);
        let dens = resample_sums(&self.boot_den, d, &NO_SUMS);
        let values = nums
            .iter()
            .zip(dens)
            .map(|(num, den)| (*den > 0.0).then(|| num / den));
        Some((num / den, values))
    }

    /// `figure` here minus `figure` in `other`, with the percentile interval of the
    /// resamples' differences: resample r of each side is its own Poisson draw, so for two
    /// aggregates over different bootstrap keys (records of different run ids) the pairs are
    /// independent draws of the two samples, the two-sample bootstrap. An interval that leaves
    /// out 0 is a difference beyond the bootstrap's noise at 95%. `n` is the smaller side's
    /// count. `None` where either side has no such figure.
    ///
    /// Over aggregates that share keys (one a subset of the other, or records given the same
    /// run id) the resamples are not independent and the interval is not this one's. Two runs
    /// over the same seeds are paired by design; resampling them independently ignores the
    /// pairing, so the interval is wider than a paired one would be (conservative).
    pub fn difference(&self, other: &Aggregate, figure: FigureId) -> Option<Estimate> {
        let f = figure.index()?;
        let (a, ours) = self.resampled(f)?;
        let (b, theirs) = other.resampled(f)?;
        let mut list: Vec<f64> = ours
            .zip(theirs)
            .filter_map(|(x, y)| Some(x? - y?))
            .collect();
        let d = DEN_OF[f];
        let n = self.den_count[d].min(other.den_count[d]);
        Some(interval(a - b, &mut list, n))
    }
}

/// A figure named from outside, for [`Aggregate::difference`]: the share of an ending, or a
/// seat's mean reward or format compliance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureId {
    /// The share of scored episodes that ended so (one of [`RATED_ENDINGS`]).
    Rate(OutcomeKind),
    /// A seat's mean reward per scored episode.
    MeanReward(Seat),
    /// A seat's format-ok attempts over its attempts.
    FormatOk(Seat),
    /// A seat's mean ρ over deals: the bargained ratio as the papers report it.
    RhoDeals(Seat),
    /// A seat's mean ρ per scored episode (an episode without a deal at its no-deal ρ).
    MeanRho(Seat),
    /// Moves that took effect per episode, both seats together.
    MeanTurns,
}

impl FigureId {
    /// Where the figure sits; `None` for the rate of `error`, which is no share of anything.
    fn index(self) -> Option<usize> {
        match self {
            FigureId::Rate(kind) => RATED_ENDINGS.iter().position(|k| *k == kind),
            FigureId::MeanReward(seat) => Some(seat_offset(seat) + seat_figure::REWARD),
            FigureId::FormatOk(seat) => Some(seat_offset(seat) + seat_figure::FORMAT_OK),
            FigureId::RhoDeals(seat) => Some(seat_offset(seat) + seat_figure::RHO_DEALS),
            FigureId::MeanRho(seat) => Some(seat_offset(seat) + seat_figure::RHO),
            FigureId::MeanTurns => Some(TURNS),
        }
    }
}

/// The label of the row a table gives over the multi-item families ([`multi_item_groups`]) in
/// place of a pool of every family.
pub const MULTI_ITEM_AVERAGE: &str = "multi-item average";

/// The aggregates of the multi-item families among `families`
/// (`Domain::is_multi_item`: CaSiNo, Deal or No Deal,
/// Job Interview), whose [`mean_over`] is the BATNA paper's Table 4 "Avg" (App. C); `None` with
/// fewer than two of them, where the average would only repeat a family's own row. The price
/// families are never in it: their figures are reported apart (the paper's §3 gives "price
/// tasks" and "multi-item tasks" as two averages), and a pool of every family would mix
/// dollars with points.
pub fn multi_item_groups<'a>(
    families: impl IntoIterator<Item = (crate::scenario::Family, &'a Aggregate)>,
) -> Option<Vec<&'a Aggregate>> {
    let groups: Vec<&Aggregate> = families
        .into_iter()
        .filter(|(family, _)| family.domain().is_multi_item())
        .map(|(_, a)| a)
        .collect();
    (groups.len() >= 2).then_some(groups)
}

/// The unweighted mean of `figure` over `groups` — each group (a family) counting once, however
/// many episodes it holds, as the BATNA paper averages its datasets (App. C, Table 4's "Avg"
/// row over CaSiNo, DnD and JI: Deal% (76 + 77 + 83)/3 ≈ 79, BR (.58 + .71 + .70)/3 ≈ .66 at
/// τ = 0.2) — with the percentile interval of the same mean taken resample by resample: the
/// groups' resamples are their own Poisson draws (keyed by their records, as everywhere), so
/// resample r of the mean is the mean of each group's resample r; a resample in which some
/// group has no value for the figure is left out. `n` is the groups' counts summed. `None`
/// where `groups` is empty or any group has no such figure (a family without a deal has no ρ
/// over deals, and an average without it would be another average).
pub fn mean_over(groups: &[&Aggregate], figure: FigureId) -> Option<Estimate> {
    let f = figure.index()?;
    if groups.is_empty() {
        return None;
    }
    let mut value = 0.0;
    let mut sums = vec![Some(0.0); RESAMPLES];
    let mut n = 0;
    for group in groups {
        let (v, resamples) = group.resampled(f)?;
        value += v;
        n += group.den_count[DEN_OF[f]];
        for (sum, r) in sums.iter_mut().zip(resamples) {
            *sum = match (*sum, r) {
                (Some(s), Some(r)) => Some(s + r),
                _ => None,
            };
        }
    }
    let k = groups.len() as f64;
    let mut list: Vec<f64> = sums.into_iter().flatten().map(|s| s / k).collect();
    Some(interval(value / k, &mut list, n))
}

/// A mean with [`Aggregate`]'s bootstrap interval: each value added with its
/// episode's [`Weights`], the mean refitted on each resample, the same percentile interval.
/// The one mean with an interval over episodes' values: the probes' accuracy, confidence and error
/// (eval and report), a market's efficiency ([`MarketTally`](super::MarketTally)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeanEstimate {
    /// Σx and the count.
    sum: f64,
    n: usize,
    /// Per resample, Σw and Σw·x; empty until the first value.
    resampled: Vec<[f64; 2]>,
}

impl MeanEstimate {
    /// Add one value with its episode's weights ([`Weights::of`] its bootstrap key).
    pub fn add_weighted(&mut self, weights: &Weights, x: f64) {
        self.sum += x;
        self.n += 1;
        if self.resampled.is_empty() {
            self.resampled = vec![[0.0; 2]; RESAMPLES];
        }
        for (s, w) in self.resampled.iter_mut().zip(weights.as_slice()) {
            s[0] += w;
            s[1] += w * x;
        }
    }

    /// The values added.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The mean with its 95% interval; `None` before any value.
    pub fn estimate(&self) -> Option<Estimate> {
        if self.n == 0 {
            return None;
        }
        let value = self.sum / self.n as f64;
        let mut list: Vec<f64> = self
            .resampled
            .iter()
            .filter(|s| s[0] > 0.0)
            .map(|s| s[1] / s[0])
            .collect();
        Some(interval(value, &mut list, self.n))
    }
}

/// The percentile interval of `list` (the resamples' values, sorted here) around `value`, with
/// `n`; where every resample missed the figure's episodes (only possible when they are a
/// sliver), the value itself.
pub(crate) fn interval(value: f64, list: &mut [f64], n: usize) -> Estimate {
    list.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    let (low, high) = if list.is_empty() {
        (value, value)
    } else {
        (percentile(list, tail), percentile(list, 1.0 - tail))
    };
    Estimate {
        value,
        low,
        high,
        n,
    }
}

/// The resample sums of a figure or denominator that has none kept (all zero).
static NO_SUMS: [f64; RESAMPLES] = [0.0; RESAMPLES];

/// The resample sums at `i` of `list`, or `zeros` where none were kept (all zero).
fn resample_sums<'a>(list: &'a [Vec<f64>], i: usize, zeros: &'a [f64]) -> &'a [f64] {
    match list.get(i) {
        Some(sums) if !sums.is_empty() => sums,
        _ => zeros,
    }
}

/// ρ clipped to [−1, 1], the clipped mean's values (see the module doc).
pub(crate) fn clip_rho(rho: f64) -> f64 {
    rho.clamp(-1.0, 1.0)
}

/// `sums[r] += w[r]·x` for every resample r; nothing for x = 0. An empty `sums` (all zero so
/// far) is allocated here. A straight loop the compiler vectorizes.
fn accumulate(sums: &mut Vec<f64>, w: &[f64], x: f64) {
    if x == 0.0 {
        return;
    }
    if sums.is_empty() {
        sums.resize(RESAMPLES, 0.0);
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
    use crate::score::{Proposals, SeatMetrics};

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
            ..EpisodeMetrics::default()
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
        a.add(key, &values(kind, rho, m));
    }

    /// An episode with this ending, ρ (its reward too) and metrics; no points, no buyer, no
    /// proposals, a turn cap of 0.
    fn values(kind: OutcomeKind, rho: (f64, f64), m: &EpisodeMetrics) -> EpisodeValues {
        let rho = PerSeat::new(rho.0, rho.1);
        EpisodeValues {
            rewards: rho,
            metrics: m.clone(),
            ..EpisodeValues::of_ending(kind, rho)
        }
    }

    /// Add `episode` under the next key.
    fn add_values(a: &mut Aggregate, episode: EpisodeValues) {
        a.add(a.episodes() as u64, &episode);
    }

    #[test]
    fn the_mean_over_families_counts_each_family_once_as_table_4_does() {
        // BATNA App. C, Table 4: "Avg" is the mean of the datasets' figures, not a pool of
        // their episodes. Family A: deals at ρ 0.2 and 0.4 → deal rate 1, BR 0.3. Family B
        // (keys apart): a deal at ρ 0.9 and two walk-aways → deal rate 1/3, BR 0.9.
        //   mean over families: deal rate (1 + 1/3)/2 = 2/3, BR (0.3 + 0.9)/2 = 0.6;
        //   pooled episodes would say 3/5 = 0.6 and (0.2 + 0.4 + 0.9)/3 = 0.5.
        let (mut a, mut b) = (Aggregate::default(), Aggregate::default());
        add_keyed(&mut a, 1, OutcomeKind::Deal, (0.2, 0.8), &plain());
        add_keyed(&mut a, 2, OutcomeKind::Deal, (0.4, 0.6), &plain());
        add_keyed(&mut b, 11, OutcomeKind::Deal, (0.9, 0.1), &plain());
        add_keyed(&mut b, 12, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        add_keyed(&mut b, 13, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        let deal = mean_over(&[&a, &b], FigureId::Rate(OutcomeKind::Deal)).unwrap();
        close(deal.value, 2.0 / 3.0);
        let br = mean_over(&[&a, &b], FigureId::RhoDeals(Seat::Learner)).unwrap();
        close(br.value, 0.6);
        assert_eq!(br.n, 3, "the deals of both families");
        assert!(br.low <= br.value && br.value <= br.high, "{br:?}");
        let mut pooled = a.clone();
        pooled.absorb(&b);
        close(value(pooled.figures().seats.learner.rho_deals), 0.5);
        // One family: its own figure. A family without a deal has no BR: no average.
        close(
            mean_over(&[&a], FigureId::RhoDeals(Seat::Learner))
                .unwrap()
                .value,
            0.3,
        );
        let mut none = Aggregate::default();
        add_keyed(&mut none, 21, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        assert!(mean_over(&[&a, &none], FigureId::RhoDeals(Seat::Learner)).is_none());
        assert!(mean_over(&[], FigureId::MeanTurns).is_none());
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
            let episode = EpisodeValues {
                rewards: PerSeat::new(r, 0.0),
                ..values(OutcomeKind::Deal, (0.0, 0.0), &plain())
            };
            a.add(key as u64, &episode);
        }
        close(
            value(a.figures().seats[Seat::Learner].mean_reward),
            0.5 / 3.0,
        );
        close(value(a.figures().seats[Seat::Learner].mean_rho), 0.0);
    }

    #[test]
    fn regret_is_over_the_episodes_whose_seat_faced_a_rule() {
        // Learner regrets 0.5 and 0.1 where it faced a rule, none in a third episode (another
        // opponent): the mean is 0.3, over two episodes; the opponent seat has none.
        let mut a = Aggregate::default();
        for regret in [Some(0.5), Some(0.1), None] {
            add_values(
                &mut a,
                EpisodeValues {
                    regret: PerSeat::new(regret, None),
                    ..values(OutcomeKind::Deal, (0.2, 0.8), &plain())
                },
            );
        }
        let f = a.figures();
        let regret = f.seats[Seat::Learner].regret.unwrap();
        close(regret.value, 0.3);
        assert_eq!(regret.n, 2);
        assert!(regret.low <= regret.value && regret.value <= regret.high);
        assert_eq!(f.seats[Seat::Opponent].regret, None);
    }

    #[test]
    fn rho_over_deals_leaves_the_episodes_without_a_deal_out() {
        // Learner ρ: deals 0.8 and 0.4; a walk-away (ρ 0); a reject loop whose setup gives a
        // no-deal value worth ρ 0.1; an error (0.9, counted apart).
        //   ρ over deals (0.8 + 0.4)/2 = 0.6, n = 2, beside the deal rate 2/4 = 0.5
        //   ρ per episode (0.8 + 0.4 + 0 + 0.1)/4 = 0.325, n = 4
        // (BATNA paper, Table 1: an all-episode mean cannot exceed the deal rate when ρ ≤ 1;
        // the mean over deals can: 0.6 > 0.5.) Opponent: deals 0.2 and 1.5 → clipped over
        // deals (0.2 + 1)/2 = 0.6, plain 0.85.
        let mut a = Aggregate::default();
        add(&mut a, OutcomeKind::Deal, (0.8, 0.2), &plain());
        add(&mut a, OutcomeKind::Deal, (0.4, 1.5), &plain());
        add(&mut a, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        add(&mut a, OutcomeKind::RejectLoop, (0.1, 0.1), &plain());
        add(&mut a, OutcomeKind::Error, (0.9, 0.9), &plain());
        let f = a.figures();
        let deals = f.seats.learner.rho_deals.unwrap();
        close(deals.value, 0.6);
        assert_eq!(deals.n, 2);
        assert!(
            deals.low >= 0.4 - TOL && deals.high <= 0.8 + TOL,
            "{deals:?}"
        );
        close(value(f.rate(OutcomeKind::Deal)), 0.5);
        let per_episode = f.seats.learner.mean_rho.unwrap();
        close(per_episode.value, 0.325);
        assert_eq!(per_episode.n, 4);
        close(value(f.seats.opponent.rho_deals), 0.85);
        close(value(f.seats.opponent.clipped_rho_deals), 0.6);
        // No deal at all: no ρ over deals, while the per-episode mean is 0.
        let mut none = Aggregate::default();
        add(&mut none, OutcomeKind::WalkAway, (0.0, 0.0), &plain());
        assert_eq!(none.figures().seats.learner.rho_deals, None);
        close(value(none.figures().seats.learner.mean_rho), 0.0);
    }

    #[test]
    fn points_per_seat_and_the_score_ratio_are_over_the_joint_score() {
        // CaSiNo points (learner, opponent): deal (20, 16), deal (18, 6), walk-away (0, 0).
        //   points learner (20 + 18 + 0)/3 = 38/3, opponent (16 + 6 + 0)/3 = 22/3
        //   score ratio learner Σ u_l / Σ (u_l + u_o) = 38/(36 + 24) = 38/60 = 0.6333…,
        //   opponent 22/60; n = 2 (the walk-away's joint score is 0: it bears on neither sum).
        //   Not the mean of each episode's ratio, (20/36 + 18/24)/2 = 0.6528.
        // The harness paper's Table 1 is read the same way: Pts 17.90, Opp 18.44 give
        // 17.90/36.34 = .493, its Ratio.
        let mut a = Aggregate::default();
        for (kind, u) in [
            (OutcomeKind::Deal, (20.0, 16.0)),
            (OutcomeKind::Deal, (18.0, 6.0)),
            (OutcomeKind::WalkAway, (0.0, 0.0)),
        ] {
            let episode = EpisodeValues {
                utility: PerSeat::new(u.0, u.1),
                ..values(kind, (0.5, 0.5), &plain())
            };
            add_values(&mut a, episode);
        }
        let f = a.figures();
        close(value(f.seats.learner.points), 38.0 / 3.0);
        close(value(f.seats.opponent.points), 22.0 / 3.0);
        let ratio = f.seats.learner.score_ratio.unwrap();
        close(ratio.value, 38.0 / 60.0);
        assert_eq!(ratio.n, 2);
        // Resamples draw (20, 16) and (18, 6) in any mix: the bounds lie between 18/24 and
        // 20/36.
        assert!(
            ratio.low >= 20.0 / 36.0 - TOL && ratio.high <= 0.75 + TOL,
            "{ratio:?}"
        );
        close(value(f.seats.opponent.score_ratio), 22.0 / 60.0);
        let mut paper = Aggregate::default();
        let episode = EpisodeValues {
            utility: PerSeat::new(17.90, 18.44),
            ..values(OutcomeKind::Deal, (0.5, 0.5), &plain())
        };
        add_values(&mut paper, episode);
        let ratio = value(paper.figures().seats.learner.score_ratio);
        assert_eq!(format!("{ratio:.3}"), "0.493");
    }

    #[test]
    fn sl_counts_a_failed_negotiation_as_zero() {
        // The learner buys: deals with sale-to-list 0.6 and 0.2, a walk-away and a max-turns
        // ending; a deal with no sale-to-list (budget = listing price) bears on neither; an
        // episode where the learner sold is not its SL's.
        //   SL (DialogXpert) (0.6 + 0.2 + 0 + 0)/4 = 0.2, n = 4
        //   sale-to-list over deals (0.6 + 0.2)/2 = 0.4, n = 2
        let buyer = |kind: OutcomeKind, sale: Option<f64>, is_buyer: bool| {
            let learner = SeatMetrics {
                sale_to_list: sale,
                ..seat(3, 0, 3)
            };
            EpisodeValues {
                buyer: PerSeat::new(is_buyer, !is_buyer),
                ..values(kind, (0.5, 0.5), &metrics(learner, seat(3, 0, 3)))
            }
        };
        let mut a = Aggregate::default();
        for episode in [
            buyer(OutcomeKind::Deal, Some(0.6), true),
            buyer(OutcomeKind::Deal, Some(0.2), true),
            buyer(OutcomeKind::WalkAway, None, true),
            buyer(OutcomeKind::MaxTurns, None, true),
            buyer(OutcomeKind::Deal, None, true),
            buyer(OutcomeKind::WalkAway, None, false),
        ] {
            add_values(&mut a, episode);
        }
        let f = a.figures();
        let sl = f.seats.learner.sl.unwrap();
        close(sl.value, 0.2);
        assert_eq!(sl.n, 4);
        let deals = f.seats.learner.sale_to_list.unwrap();
        close(deals.value, 0.4);
        assert_eq!(deals.n, 2);
        // The opponent bought once, and walked away from it: SL 0 over 1.
        let opponent = f.seats.opponent.sl.unwrap();
        assert_eq!((opponent.value, opponent.n), (0.0, 1));
    }

    #[test]
    fn average_turns_counts_a_failure_at_the_cap_and_turns_to_deal_only_deals() {
        // Moves (both seats) and endings, turn cap 12 moves (max_rounds 6): a deal in 4
        // (2 + 2), a deal in 5 (3 + 2: the last move, an accept, opens a third exchange), a
        // walk-away after 1 (1 + 0), a max-turns ending at 12 (6 + 6).
        //   turns to deal (4 + 5)/2 = 4.5, n = 2
        //   average moves (4 + 5 + 12 + 12)/4 = 8.25 (the walk-away counts 12, not 1)
        //   AT in DialogXpert's turns, one exchange each (App. C): deals ⌈4/2⌉ = 2 and
        //   ⌈5/2⌉ = 3, each failure at the cap in turns, 6: (2 + 3 + 6 + 6)/4 = 4.25
        //   mean turns (4 + 5 + 1 + 12)/4 = 5.5
        //   SR = the deal rate, 2/4
        let mut a = Aggregate::default();
        for (kind, l, o) in [
            (OutcomeKind::Deal, 2, 2),
            (OutcomeKind::Deal, 3, 2),
            (OutcomeKind::WalkAway, 1, 0),
            (OutcomeKind::MaxTurns, 6, 6),
        ] {
            let episode = EpisodeValues {
                turn_cap: 12,
                ..values(kind, (0.0, 0.0), &metrics(seat(l, 0, l), seat(o, 0, o)))
            };
            add_values(&mut a, episode);
        }
        let f = a.figures();
        let to_deal = f.turns_to_deal.unwrap();
        close(to_deal.value, 4.5);
        assert_eq!(to_deal.n, 2);
        close(value(f.average_turns), 4.25);
        close(value(f.average_moves), 8.25);
        close(value(f.mean_turns), 5.5);
        close(value(f.success_rate()), 0.5);
        assert_eq!(f.success_rate(), f.rate(OutcomeKind::Deal));
    }

    #[test]
    fn the_malformed_deal_rate_is_pooled_over_proposals() {
        // Learner proposals (made, malformed): (4, 1), (2, 0), (0, 0) → 1/6, n = 2 (the third
        // episode proposed nothing); the opponent never proposed: no rate.
        let mut a = Aggregate::default();
        for (made, malformed) in [(4, 1), (2, 0), (0, 0)] {
            let episode = EpisodeValues {
                proposals: PerSeat::new(Proposals { made, malformed }, Proposals::default()),
                ..values(OutcomeKind::Deal, (0.5, 0.5), &plain())
            };
            add_values(&mut a, episode);
        }
        let f = a.figures();
        let rate = f.seats.learner.malformed_deals.unwrap();
        close(rate.value, 1.0 / 6.0);
        assert_eq!(rate.n, 2);
        assert_eq!(f.seats.opponent.malformed_deals, None);
    }

    #[test]
    fn an_aggregate_fed_only_endings_and_rho_keeps_sums_for_those_figures_alone() {
        // The sensitivity's aggregates: a deal and a walk-away with no metrics allocate the
        // resample sums of the endings and ρ (and their denominators), not the others', and
        // keep no values of ρ.
        let mut a = Aggregate::without_median();
        a.add(
            1,
            &EpisodeValues::of_ending(OutcomeKind::Deal, PerSeat::new(0.5, 0.0)),
        );
        a.add(
            2,
            &EpisodeValues::of_ending(OutcomeKind::WalkAway, PerSeat::new(0.0, 0.0)),
        );
        let allocated = a.boot_num.iter().filter(|s| !s.is_empty()).count();
        // deal, walk-away; learner ρ, clipped ρ, ρ over deals, clipped ρ over deals.
        assert_eq!(allocated, 6);
        close(value(a.figures().seats.learner.rho_deals), 0.5);
        close(value(a.figures().seats.learner.mean_rho), 0.25);
        assert_eq!(a.figures().seats.learner.points.map(|e| e.value), Some(0.0));
        assert_eq!(a.figures().seats.learner.median_rho, None);
        assert!(a.rho_quantiles().learner.is_empty());
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
        near(p.seats.learner.rho_deals, q.seats.learner.rho_deals);
        assert_eq!(p.average_turns, q.average_turns);
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
    fn a_difference_of_proportions_gets_about_the_textbook_interval() {
        // 60 deals in 100 against 40 in 100, independent episodes: the difference 0.2 has
        // standard error √(2·0.6·0.4/100) ≈ 0.0693, so about 0.2 ± 0.136 = [0.064, 0.336].
        let sample = |deals: usize, first_key: u64| {
            let mut a = Aggregate::default();
            for i in 0..100 {
                let kind = if i < deals {
                    OutcomeKind::Deal
                } else {
                    OutcomeKind::WalkAway
                };
                add_keyed(&mut a, first_key + i as u64, kind, (0.5, 0.5), &plain());
            }
            a
        };
        let (high, low) = (sample(60, 0), sample(40, 1_000));
        let d = high
            .difference(&low, FigureId::Rate(OutcomeKind::Deal))
            .unwrap();
        close(d.value, 0.2);
        assert!((d.low - 0.064).abs() < 0.025, "{d:?}");
        assert!((d.high - 0.336).abs() < 0.025, "{d:?}");
        assert_eq!(d.n, 100);
        // The other way round: the negation, its bounds swapped.
        let e = low
            .difference(&high, FigureId::Rate(OutcomeKind::Deal))
            .unwrap();
        close(e.value, -0.2);
        close(e.low, -d.high);
        close(e.high, -d.low);
        // Equal samples on different episodes: an interval around 0 that holds it.
        let same = sample(50, 0).difference(&sample(50, 5_000), FigureId::Rate(OutcomeKind::Deal));
        let same = same.unwrap();
        close(same.value, 0.0);
        assert!(same.low < 0.0 && same.high > 0.0, "{same:?}");
        // A figure one side lacks, and the rate of `error`, have no difference.
        let empty = Aggregate::default();
        assert!(high
            .difference(&empty, FigureId::MeanReward(Seat::Learner))
            .is_none());
        assert!(high
            .difference(&low, FigureId::Rate(OutcomeKind::Error))
            .is_none());
        // The mean reward of the same samples: 0.5 on every episode, so no difference at all.
        let r = high
            .difference(&low, FigureId::MeanReward(Seat::Learner))
            .unwrap();
        close(r.value, 0.0);
        close(r.low, 0.0);
        close(r.high, 0.0);
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

    #[test]
    fn a_mean_has_the_bootstrap_interval_around_it() {
        let mut m = MeanEstimate::default();
        assert_eq!(m.estimate(), None);
        for i in 0..100u64 {
            m.add_weighted(&Weights::of(i), if i % 2 == 0 { 0.2 } else { 0.8 });
        }
        let e = m.estimate().unwrap();
        assert!(
            (e.value - 0.5).abs() < 1e-12 && e.low < 0.5 && e.high > 0.5,
            "{e:?}"
        );
        assert_eq!(e.n, 100);
    }
}
