//! Outcome metrics (the book's `design/metrics.md`): score ratio, first-bid ratio, sale-to-list
//! ratio, Pareto
//! optimality and the per-seat turn counts, from an ended episode. The utilities and ρ of an
//! outcome are the episode's own (`game::seat_values`, re-exported here). Pure functions of the
//! scenario, the setup and the turns: no I/O, so records can be rescored exactly. Two more
//! readings of the turns feed only the aggregates, so records stay as they were: each seat's
//! deal proposals and malformed ones (`proposals`) and the moves the turn cap left the players
//! (`turn_cap`).
//! [`Aggregate`] sums the metrics of many episodes into rates and means with bootstrap
//! intervals, from the metrics alone, in memory that does not grow with the episodes;
//! [`Quantiles`] gives it the median of ρ; [`Comparisons`] rates players (Bradley–Terry, with
//! Poisson-bootstrap intervals) from paired comparisons of their ρ (`rating.rs`), its
//! observations kept behind an [`SampleStore`] so that a caller can keep them on disk.
//! [`Anchoring`] fits the slope of the deal price on the first proposal (`anchoring.rs`), on
//! the same bootstrap.

mod aggregate;
mod anchoring;
mod beliefs;
mod estimate;
mod market;
mod oracle;
mod quantile;
mod rating;
mod table;

pub(crate) use aggregate::LEVEL;
pub use aggregate::{
    mean_over, multi_item_groups, Aggregate, EpisodeValues, FigureId, Figures, MeanEstimate,
    SeatCounts, SeatFigures, Weights, MULTI_ITEM_AVERAGE, RATED_ENDINGS, RESAMPLES,
};
pub(crate) use anchoring::anchor_point;
pub use anchoring::{AnchorPoint, Anchoring};
pub use beliefs::{belief_question, check_probed_family, Belief, BeliefError, Probe, PROBE_MARKER};
pub use estimate::{cell, pct_cell, Estimate};
pub use market::{
    market_metrics, MarketMetrics, MarketSeatFigures, MarketSeatTally, MarketTally, TradeMetrics,
};
pub(crate) use oracle::oracle;
pub use oracle::{Oracle, OracleSearch};
pub use quantile::{Bin, Quantiles};
pub use rating::{Comparisons, Group, InMemory, Leaderboard, Rating, RatingSample, SampleStore};
pub(crate) use table::table_metrics;
pub use table::{
    deliberation_metrics, is_pareto, nash_product, Proposal, TableMetrics, TableTally,
};

use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::BoundedCache;
use crate::digest::{digest_bytes, Digest};
use crate::game::{OutcomeKind, PerSeat, Rules, Seat, Setup, Turn};
use crate::limits::MAX_OUTCOME_SPACE;
use crate::protocol::BundleChoice;
use crate::protocol::{proposes_deal, Action, ParseNote, Terms};
use crate::scenario::{BundleSpace, DealSpace, Role, Scenario};

pub(crate) use crate::game::deal_utilities;
pub use crate::game::seat_values;

/// Tolerance for comparing utilities computed in floating point.
const EPS: f64 = 1e-9;

/// Per-seat metrics of one episode.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SeatMetrics {
    /// u_seat / (u_learner + u_opponent), where the sum is not zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ratio: Option<f64>,
    /// Moves that took effect.
    pub turns: u32,
    /// Share of this seat's attempts that count as format-ok
    /// ([`Parsed::counts_as_format_ok`](crate::protocol::Parsed::counts_as_format_ok): an
    /// illegal move, such as an ACCEPT with nothing to accept, is not), as the format reward
    /// counts them.
    pub format_ok_rate: f64,
    /// Attempts that could not be used (format or illegal).
    pub malformed: u32,
    pub regulation_events: u32,
    /// The buyer's first offer / B (price tasks, buyer seat); on bundle tasks, over the full
    /// bundle's list price (INA's buyer's first offer over the seller's first price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bid_ratio: Option<f64>,
    /// (P − L)/(B − L) for the buyer on a price deal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sale_to_list: Option<f64>,
    /// Attempts decoded under a constraint and checked against it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub constrained: u32,
    /// Constrained attempts the constraint does not admit: the server ignored the constraint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub constraint_violations: u32,
    /// Token-exact attempts whose exact sequence differs from a full re-render of the
    /// conversation (a template that is not append-only; see `TurnTokens::drift`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub token_drift: u32,
    /// Attempts whose Thought or Talk copies the seat's own instructions.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copied_instructions: u32,
    /// Narrated attempts, retries included (a decider's move in a narrator's words).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub narrated: u32,
    /// Narrated attempts whose Talk contradicts their decided move (the turn's
    /// `narration.contradictions`): the seat's consistency is the rest over `narrated`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub contradicted: u32,
    /// The seat's ρ had there been no deal (the no-deal value over its scale), where the setup
    /// gives a no-deal value other than 0; absent where it is 0 (and so is that ρ). What the
    /// report's threshold sensitivity gives a refused deal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_deal_rho: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Metrics of one episode.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct EpisodeMetrics {
    pub seats: PerSeat<SeatMetrics>,
    /// Whether the deal is Pareto-optimal in the enumerated outcome space (items/issues deals),
    /// or, on a bundle deal, whether its bundle has the largest joint surplus (price is a
    /// transfer, so that is Pareto-optimality there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pareto_optimal: Option<bool>,
    /// Bundle deals: how much more the deal's bundle makes for both sides together than the
    /// full bundle would (`joint(S) − joint(full)`, currency units). Positive when dropping
    /// parts grew the pie: against the full bundle, at the price moved by half the dropped
    /// parts' worth plus cost, both surpluses rose by half of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrative_gain: Option<f64>,
    /// Bundle deals: the deal's price over the full bundle's list price (the seller's opening
    /// ask), INA's "final over first price".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_to_list: Option<f64>,
    /// Hotel calls: how each chase ticket ended — its agreed price, success (at or below the
    /// agent's acceptable price, as the REPO paper counts task success per ticket) and ρ per
    /// ticket. Empty for every other family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tickets: Vec<crate::scenario::TicketOutcome>,
}

/// Compute the metrics of an ended episode. Per-seat figures count only the turns the seat's
/// player wrote: a continuation's logged prefix (`Rules::is_logged_turn`) is left out.
pub fn episode_metrics(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    kind: OutcomeKind,
    learner_terms: Option<&Terms>,
    utility: &PerSeat<f64>,
) -> EpisodeMetrics {
    let total = utility.learner + utility.opponent;
    let no_deal_rho = Seat::BOTH
        .iter()
        .any(|s| setup.no_deal_value_of(*s) != 0.0)
        .then(|| seat_values(scenario, setup, None).1);
    let seats = PerSeat::from_fn(|seat| {
        // A continuation's logged prefix was someone else's play: never the seat's figures.
        let mine: Vec<&Turn> = turns
            .iter()
            .map(AsRef::as_ref)
            .enumerate()
            .filter(|(i, t)| t.seat == seat && !setup.rules.is_logged_turn(*i))
            .map(|(_, t)| t)
            .collect();
        let attempts = mine.len().max(1) as f64;
        let role = setup.seats[seat].role;
        let mut m = SeatMetrics {
            score_ratio: (total.abs() > EPS).then(|| utility[seat] / total),
            turns: mine.iter().filter(|t| t.played.is_some()).count() as u32,
            format_ok_rate: mine
                .iter()
                .filter(|t| t.parsed.counts_as_format_ok())
                .count() as f64
                / attempts,
            malformed: mine.iter().filter(|t| t.played.is_none()).count() as u32,
            regulation_events: mine.iter().filter(|t| t.regulation.is_some()).count() as u32,
            first_bid_ratio: None,
            sale_to_list: None,
            constrained: mine.iter().filter(|t| t.constraint.is_some()).count() as u32,
            constraint_violations: mine
                .iter()
                .filter(|t| t.constraint.is_some_and(|c| !c.admitted))
                .count() as u32,
            copied_instructions: mine
                .iter()
                .filter(|t| t.parsed.note == Some(ParseNote::CopiedInstructions))
                .count() as u32,
            token_drift: mine
                .iter()
                .filter(|t| t.tokens.as_ref().is_some_and(|k| k.drift.is_some()))
                .count() as u32,
            narrated: mine.iter().filter(|t| t.narration.is_some()).count() as u32,
            contradicted: mine
                .iter()
                .filter(|t| {
                    t.narration
                        .as_ref()
                        .is_some_and(|n| !n.contradictions.is_empty())
                })
                .count() as u32,
            no_deal_rho: no_deal_rho.as_ref().map(|rho| rho[seat]),
        };
        if let (DealSpace::Price { buyer, .. }, Role::Buyer) = (&scenario.game, role) {
            let first_bid = mine.iter().find_map(|t| match &t.played {
                Some(Action::Submit(terms)) => terms.price(),
                _ => None,
            });
            m.first_bid_ratio = first_bid
                .filter(|_| buyer.budget > EPS)
                .map(|p| p / buyer.budget);
            if kind == OutcomeKind::Deal {
                let price = learner_terms.and_then(Terms::price);
                m.sale_to_list = price.and_then(|p| sale_to_list(scenario, role, p));
            }
        }
        if let (DealSpace::Bundle { bundle, .. }, Role::Buyer) = (&scenario.game, role) {
            // INA's "buyer's first offer over the seller's first price": over the full
            // bundle's list price, the seller's public opening ask.
            let list = BundleChoice::full(bundle).list_price(bundle);
            m.first_bid_ratio = mine
                .iter()
                .find_map(|t| match &t.played {
                    Some(Action::Submit(terms)) => terms.price(),
                    _ => None,
                })
                .filter(|_| list > EPS)
                .map(|p| p / list);
        }
        m
    });
    let pareto_optimal = match (kind, learner_terms) {
        (OutcomeKind::Deal, Some(terms)) => is_pareto_optimal(scenario, setup, terms),
        _ => None,
    };
    let bundle_deal = match (kind, learner_terms, BundleSpace::of(scenario)) {
        (OutcomeKind::Deal, Some(terms @ Terms::Bundle { parts, .. }), Some(game)) => {
            let list = BundleChoice::full(game.spec).list_price(game.spec);
            Some((
                game.integrative_gain(parts),
                terms.price().filter(|_| list > EPS).map(|p| p / list),
            ))
        }
        _ => None,
    };
    let deal = (kind == OutcomeKind::Deal)
        .then_some(learner_terms)
        .flatten();
    EpisodeMetrics {
        seats,
        pareto_optimal,
        integrative_gain: bundle_deal.map(|(gain, _)| gain),
        price_to_list: bundle_deal.and_then(|(_, ratio)| ratio),
        tickets: scenario.ticket_outcomes(deal),
    }
}

/// DialogXpert's sale-to-list ratio SL (§4.3 and App. E, after Zhou et al. 2019) of a deal
/// at `price` on a price task, for the seat that plays `role`: the buyer's `(P − L)/(B − L)`
/// (the book's `design/metrics.md`), L the listing price (the seller's asking price, PPDPP's
/// `seller_price`) and B
/// the buyer's budget (its target, PPDPP's `buyer_price`) — 0 at the asking price, 1 at the
/// buyer's target. The paper defines SL "from the buyer's perspective" only; a seller's SL is
/// its mirror, `(P − B)/(L − B)` = 1 − the buyer's: 1 at the asking price, 0 at the buyer's
/// target. `None` on any other task (no listing price to measure against) and where B = L
/// (no range between them). The one home of SL: the metric and the `sale_to_list` reward
/// both read it.
pub(crate) fn sale_to_list(scenario: &Scenario, role: Role, price: f64) -> Option<f64> {
    let DealSpace::Price {
        listing_price,
        buyer,
        ..
    } = &scenario.game
    else {
        return None;
    };
    let spread = buyer.budget - listing_price;
    if spread.abs() <= EPS {
        return None;
    }
    let buyers = (price - listing_price) / spread;
    match role {
        Role::Buyer => Some(buyers),
        Role::Seller => Some(1.0 - buyers),
        _ => None,
    }
}

/// One seat's deal proposals in an episode: the harness paper's malformed-deal rate is
/// `malformed / made`, pooled (CaSiNo self-play harness §4.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Proposals {
    /// Attempts that propose a deal (`[SUBMIT_DEAL]`), usable or not.
    pub(crate) made: u32,
    /// Of those, the ones that could not be used: terms unreadable, incomplete or out of range
    /// (the paper's "deal arithmetic"), or the token written beside another.
    pub(crate) malformed: u32,
}

/// Each seat's deal proposals, from an episode's turns as its record holds them (so older
/// records count them too). Only the turns the seat's player wrote count, as in
/// [`episode_metrics`]. A turn read as a `[SUBMIT_DEAL]` is a proposal; a turn that could not be
/// read is one when its action part writes `[SUBMIT_DEAL]` (`proposes_deal`). A readable
/// proposal that breaks the layout (say, no Thought) is not malformed: format compliance counts
/// that.
pub(crate) fn proposals(turns: &[impl AsRef<Turn>], rules: &Rules) -> PerSeat<Proposals> {
    let mut counts = PerSeat::<Proposals>::default();
    for (_, t) in turns
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(i, _)| !rules.is_logged_turn(*i))
    {
        let (proposed, malformed) = match &t.parsed.action {
            Some(action) => (matches!(action, Action::Submit(_)), false),
            None => {
                let proposed = if t.tool_calls.is_empty() {
                    proposes_deal(&t.raw)
                } else {
                    t.tool_calls.iter().any(|c| c.function.name == "make_offer")
                };
                (proposed, proposed)
            }
        };
        counts[t.seat].made += u32::from(proposed);
        counts[t.seat].malformed += u32::from(malformed);
    }
    counts
}

/// The moves the turn cap left the players, both seats together: `max_rounds` each
/// (`game::rules::rounds_exhausted`), or `max_moves` where the rules set it lower, less the
/// moves of a logged prefix, and at most a continuation's `moves`. DialogXpert's average turns
/// (AT, §4.3) counts a failed dialogue at this cap.
pub(crate) fn turn_cap(rules: &Rules, turns: &[impl AsRef<Turn>]) -> u32 {
    let cap = crate::game::rules::move_cap(rules);
    let logged = turns
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(i, t)| rules.is_logged_turn(*i) && t.played.is_some())
        .count() as u32;
    let left = cap.saturating_sub(logged);
    match rules.continuation.and_then(|c| c.moves) {
        Some(k) => left.min(k),
        None => left,
    }
}

/// A deal is Pareto-optimal when no other deal in the outcome space is at least as good for
/// both seats and better for one. The space is enumerated (items: every split; issues: every
/// contract). `None` where that cannot be said: a price task (no finite space), or a space
/// whose size is unknown or past [`MAX_OUTCOME_SPACE`] (only a scenario built in code, not
/// loaded, can have one) — never `true` for want of deals to compare with.
pub(crate) fn is_pareto_optimal(
    scenario: &Scenario,
    setup: &Setup,
    learner_terms: &Terms,
) -> Option<bool> {
    if let (Some(game), Terms::Bundle { parts, .. }) = (BundleSpace::of(scenario), learner_terms) {
        return Some(game.joint(parts) >= game.best().1 - EPS);
    }
    let size = scenario.term_space().size()?;
    if size > MAX_OUTCOME_SPACE {
        return None;
    }
    let this = deal_utilities(scenario, setup, learner_terms);
    let (ul, uo) = (this.learner, this.opponent);
    Some(!pareto_frontier(scenario, setup).iter().any(|d| {
        let (l, o) = (d.learner, d.opponent);
        l >= ul - EPS && o >= uo - EPS && (l > ul + EPS || o > uo + EPS)
    }))
}

/// The deal space's Pareto frontier for the setup's learner role, computed once per space
/// and role: the deals no other deal dominates, best for the learner first (each worth more
/// to the opponent than the one before). The one frontier: [`is_pareto_optimal`] and the
/// oracle's ladder (`oracle.rs`) read it. Only for a finite space (the caller checks its size
/// against [`MAX_OUTCOME_SPACE`]).
pub(crate) fn pareto_frontier(scenario: &Scenario, setup: &Setup) -> Arc<Frontier> {
    // The scenario's deal space and values (its `game` block) and the learner's role decide
    // the frontier. Found by the scenario's id and the role, and kept with the deal space it
    // was computed for, which must equal the scenario's: a scenario of a user's own file with
    // a catalog's id never reads another's frontier. Comparing the space costs a small part
    // of digesting it (a third of a Job Interview outcome's cost, at every episode's end).
    let key = (
        digest_bytes(scenario.id.as_bytes()),
        setup.seats.learner.role,
    );
    if let Some(found) = FRONTIERS.get(&key).filter(|f| f.game == scenario.game) {
        return Arc::clone(&found.deals);
    }
    let deals = Arc::new(frontier(scenario, setup));
    FRONTIERS.insert(
        key,
        Arc::new(KeptFrontier {
            game: scenario.game.clone(),
            deals: Arc::clone(&deals),
        }),
    );
    deals
}

/// Each deal space's Pareto frontier, per scenario id and learner role: computed once (a Job
/// Interview space has 9,920 contracts, enumerated at every deal's end before), the answer
/// unchanged.
static FRONTIERS: LazyLock<BoundedCache<(Digest, Role), Arc<KeptFrontier>>> =
    LazyLock::new(|| BoundedCache::new(4096));

/// A frontier as [`FRONTIERS`] keeps it: with the deal space it was computed for.
struct KeptFrontier {
    game: DealSpace,
    deals: Arc<Frontier>,
}

/// A deal of the frontier: its terms (from the learner's side) and each seat's utility.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FrontierDeal {
    pub(crate) terms: Terms,
    pub(crate) learner: f64,
    pub(crate) opponent: f64,
}

/// Frontier deals, best for the learner first.
type Frontier = Vec<FrontierDeal>;

/// The deals no other deal dominates, best for the learner first (of deals worth the same to
/// both, the first enumerated). Every deal is weakly dominated by one of them, so a deal is
/// dominated (with `EPS`) by some deal exactly when it is by a frontier deal.
fn frontier(scenario: &Scenario, setup: &Setup) -> Frontier {
    let mut deals: Vec<FrontierDeal> = scenario
        .all_deals()
        .map(|terms| {
            let u = deal_utilities(scenario, setup, &terms);
            FrontierDeal {
                terms,
                learner: u.learner,
                opponent: u.opponent,
            }
        })
        .collect();
    deals.sort_by(|a, b| {
        b.learner
            .total_cmp(&a.learner)
            .then(b.opponent.total_cmp(&a.opponent))
    });
    let mut kept: Frontier = Vec::new();
    for d in deals {
        if kept.last().is_none_or(|k| d.opponent > k.opponent) {
            kept.push(d);
        }
    }
    kept
}

#[cfg(test)]
mod tests;
