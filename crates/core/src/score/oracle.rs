//! The oracle against a known opponent (issue 44 item 1): the best ρ any play of one seat could
//! reach against a built-in rule player (`rule:NAME`) on a given scenario and setup, and the
//! regret of what that seat reached (oracle ρ − achieved ρ).
//!
//! A rule player is deterministic given its position and sampling seed
//! ([`crate::game::Snapshot`]'s doc), so the search steps the real engine: from a snapshot, play
//! one move of the searched seat, let the rule answer ([`drive_now`] with a [`RuleSeat`]), read
//! the outcome, restore. No second episode loop, no model of the rule: every value is an
//! outcome the engine reached.
//!
//! **The search.** The searched seat's offers are a *ladder*: deals ordered best for it first,
//! each worth more to the rule than the one before, so the rule (which accepts an offer worth
//! at least its current aspiration: `negotiator::concession`) accepts a suffix of the ladder at
//! each turn. Along one line of play, at each of the seat's turns:
//! 1. accept the rule's standing offer (a probe);
//! 2. find the first rung the rule accepts by bisection (⌈log₂ n⌉ + 1 probes), a deal whose ρ
//!    is a candidate; if it is the top rung, no play does better and the search stops;
//! 3. otherwise *hold*: propose the top rung (the second when the top was the seat's last
//!    proposal, so the reject-loop rule never ends the line), which the rule rejects, and go
//!    on to the seat's next turn — where the rule's aspiration has fallen. Where the rule
//!    would take the second rung already and the top was the seat's last proposal, hold by a
//!    REJECT (failing that a TALK, or the top again: `Prober::hold_again`), which keeps the
//!    top open to a later turn.
//!
//! The line ends with the episode (the turn cap; the rule walking away); the oracle is the
//! best candidate, and never less than the no-deal ρ (walking away is always legal).
//!
//! **Bounds.** The time-dependent rules (`boulware`/`tough`, `linear`, `conceder`) choose their
//! proposals from their own moves and earlier proposals alone, so the line loses nothing: the
//! oracle is exact over the ladder. INA's curves (`ina`, `ina-code`) move toward the other
//! side's last price; for them the hold (the seat's best rung, the strongest anchor) is one
//! play among many, and the oracle is a lower bound on the best play. The ladder:
//! - items and issues (CaSiNo, Deal or No Deal, Job Interview): the deal space enumerated and
//!   pruned to its Pareto frontier (the one frontier [`super::is_pareto_optimal`] reads): a
//!   dominated deal is worth no more to the rule and no more to the seat than a frontier deal,
//!   so it is never the better offer. Exhaustive over the space (up to `MAX_OUTCOME_SPACE`
//!   deals; a larger space is refused);
//! - one price (AHP, Craigslist): a grid of whole cents from 0 to [`PRICE_GRID_SPAN`] × the
//!   largest of the listing price, the budget and the cost — the bisection finds the rule's
//!   acceptance threshold to the cent;
//! - bundles and hotel calls: refused ([`OracleError::Family`]): a price per part choice or per
//!   ticket has no single ladder.
//!
//! Depth: the turn cap (`max_rounds`, `max_moves`); probes per turn: at most 2 + ⌈log₂ n⌉, n
//! the ladder's length (a listing of 10,000 makes 2,000,001 cents: 23 probes), and at most
//! three trial moves where the seat holds by a REJECT. A result is
//! cached per (scenario, setup, seat, rule, seed): an eval meets the same setups with every
//! player.

use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::BoundedCache;
use crate::digest::{digest_json, Digest};
use crate::engine::drive_now;
use crate::game::rules::move_cap;
use crate::game::{seat_values, Episode, GameError, OutcomeKind, Seat, Setup, Snapshot};
use crate::limits::MAX_OUTCOME_SPACE;
use crate::negotiator::concession::Decision;
use crate::negotiator::{write_move, Position, RulePlayer, RuleSeat, Tactic, Talking};
use crate::protocol::{to_cents, Action, Terms};
use crate::scenario::{DealSpace, Family, Role, Scenario};

/// The price grid spans whole cents from 0 to this many times the largest of the listing
/// price, the buyer's budget and the seller's cost.
pub(crate) const PRICE_GRID_SPAN: f64 = 2.0;

/// How the oracle searched the seat's offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OracleSearch {
    /// The deal space's Pareto frontier, every deal of it reachable by the bisection (items,
    /// issues).
    Frontier,
    /// The whole-cent price grid (one price).
    PriceGrid,
}

/// What the record keeps of the oracle: the seat searched (the one facing the rule), the best
/// ρ any of its plays could reach, its regret (that ρ − the ρ it reached; a failure at its
/// no-deal value) and how the oracle searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Oracle {
    /// The seat searched: the one that faced the rule (the learner where both seats did).
    pub seat: Seat,
    /// The best ρ any play of the seat could reach against the rule (never below its no-deal
    /// ρ: walking away is always legal).
    pub rho: f64,
    /// `rho` less the seat's ρ in the outcome (a failure at its no-deal value): 0 for best play.
    pub regret: f64,
    /// How the seat's offers were searched.
    pub search: OracleSearch,
}

impl Oracle {
    /// The oracle of `seat` and its regret, for an episode in which the seat reached
    /// `achieved` (its ρ in the outcome).
    pub(crate) fn new(seat: Seat, best: OracleValue, achieved: f64) -> Oracle {
        Oracle {
            seat,
            rho: best.rho,
            regret: regret(best.rho, achieved),
            search: best.search,
        }
    }
}

/// Regret: the oracle's ρ less the ρ reached. The one home of the figure.
pub(crate) fn regret(oracle_rho: f64, achieved_rho: f64) -> f64 {
    oracle_rho - achieved_rho
}

/// The best ρ reachable and how it was searched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OracleValue {
    pub(crate) rho: f64,
    pub(crate) search: OracleSearch,
}

/// Why no oracle could be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum OracleError {
    #[error(
        "the oracle does not search {0} scenarios: a price per part choice or per ticket has \
         no single ladder of offers (it searches items, issues and one price)"
    )]
    Family(Family),
    #[error(
        "the oracle does not search a deal space of {0} deals (more than {MAX_OUTCOME_SPACE})"
    )]
    Space(u64),
    #[error("the oracle does not search a continuation: its logged prefix is not the seat's play")]
    Continuation,
    #[error("the oracle could not play the episode: {0}")]
    Game(String),
}

impl From<GameError> for OracleError {
    fn from(e: GameError) -> OracleError {
        OracleError::Game(e.to_string())
    }
}

/// Results already searched, by the digest of (scenario, setup, seat, rule, seed).
static ORACLES: LazyLock<BoundedCache<Digest, Result<OracleValue, OracleError>>> =
    LazyLock::new(|| BoundedCache::new(4096));

/// The best ρ any play of `seat` could reach against `tactic` playing the other seat with
/// sampling seed `rule_seed`, on `scenario` under `setup` (see the module doc for the search
/// and its bounds). Cached.
pub(crate) fn oracle(
    scenario: &Arc<Scenario>,
    setup: &Setup,
    seat: Seat,
    tactic: Tactic,
    rule_seed: u64,
) -> Result<OracleValue, OracleError> {
    let key = digest_json(&(scenario.digest(), setup, seat, tactic.name(), rule_seed));
    ORACLES.get_or_insert_with(key, || search(scenario, setup, seat, tactic, rule_seed))
}

fn search(
    scenario: &Arc<Scenario>,
    setup: &Setup,
    seat: Seat,
    tactic: Tactic,
    rule_seed: u64,
) -> Result<OracleValue, OracleError> {
    if setup.rules.continuation.is_some() {
        return Err(OracleError::Continuation);
    }
    let (ladder, search) = Ladder::of(scenario, setup, seat)?;
    let rule = rule_player(tactic);
    let mut rules = RuleSeat {
        seat: seat.other(),
        rule,
        seed: rule_seed,
    };
    let mut episode = Episode::new(scenario.clone(), setup.clone())?;
    let mut scratch = episode.clone();
    let mut best = seat_values(episode.scenario(), setup, None).1[seat];
    let mut prober = Prober {
        seat,
        rules: &mut rules,
    };
    // Each pass is one of the seat's moves: the turn cap bounds them.
    for _ in 0..=move_cap(&setup.rules) {
        prober.answer(&mut episode)?;
        if let Some(outcome) = episode.outcome() {
            best = best.max(outcome.rho[seat]);
            break;
        }
        let here = episode.snapshot();
        if episode.offer_to_accept(seat).is_some() {
            if let Some(rho) = prober.probe(&here, &mut scratch, Action::Accept)? {
                best = best.max(rho);
            }
        }
        let first = prober.first_accepted(&here, &mut scratch, &ladder)?;
        if let Some((i, rho)) = first {
            best = best.max(rho);
            if i == 0 {
                break;
            }
        }
        let accepted_from = first.map_or(ladder.len(), |(i, _)| i);
        let last = Position::of(&episode, seat, 0).own_offers.last().cloned();
        let hold = (0..accepted_from.min(2))
            .map(|i| ladder.rung(i))
            .find(|t| Some(t) != last.as_ref());
        let hold = match hold {
            Some(terms) => Action::Submit(terms),
            // The rule accepts every rung but the top, which was the seat's last proposal:
            // hold the position another way, or the line would stop a turn early.
            None => match prober.hold_again(&here, &mut scratch, ladder.rung(0))? {
                Some(action) => action,
                None => break,
            },
        };
        let step = episode.step(prober.write(&episode, hold))?;
        if step.played.is_none() {
            break;
        }
    }
    Ok(OracleValue { rho: best, search })
}

/// One player per rule, shared by every search: a player keeps the stances it built (a Job
/// Interview stance enumerates the contracts), and every probe asks it again.
fn rule_player(tactic: Tactic) -> &'static RulePlayer {
    static PLAYERS: LazyLock<Vec<RulePlayer>> =
        LazyLock::new(|| Tactic::ALL.into_iter().map(RulePlayer::new).collect());
    let i = Tactic::ALL.iter().position(|t| *t == tactic).unwrap_or(0);
    &PLAYERS[i]
}

/// Plays the searched seat's probes against the rule.
struct Prober<'r, 'a> {
    seat: Seat,
    rules: &'r mut RuleSeat<'a>,
}

impl Prober<'_, '_> {
    /// The rule's moves until the searched seat is to move or the episode ends.
    fn answer(&mut self, episode: &mut Episode) -> Result<(), OracleError> {
        drive_now(episode, self.rules)?;
        Ok(())
    }

    /// `action` written as the searched seat would write it.
    fn write(&self, episode: &Episode, action: Action) -> crate::game::Completion {
        let decision = Decision {
            action,
            aspiration: 0.0,
            offered: None,
        };
        write_move(
            &Position::of(episode, self.seat, 0),
            &decision,
            Talking::Spoken,
        )
    }

    /// Play `action` from `at` (on `scratch`, restored to it) and the rule's answer: the
    /// seat's ρ where the episode ended in a deal, `None` where it goes on or ended otherwise.
    fn probe(
        &mut self,
        at: &Snapshot,
        scratch: &mut Episode,
        action: Action,
    ) -> Result<Option<f64>, OracleError> {
        scratch.restore(at);
        let completion = self.write(scratch, action);
        scratch.step(completion)?;
        self.answer(scratch)?;
        Ok(scratch
            .outcome()
            .filter(|o| o.kind == OutcomeKind::Deal)
            .map(|o| o.rho[self.seat]))
    }

    /// The first rung of `ladder` the rule accepts from `at`, with the deal's ρ, by bisection
    /// (the rule accepts a suffix of the ladder); `None` when it accepts none.
    fn first_accepted(
        &mut self,
        at: &Snapshot,
        scratch: &mut Episode,
        ladder: &Ladder,
    ) -> Result<Option<(usize, f64)>, OracleError> {
        let n = ladder.len();
        if n == 0 {
            return Ok(None);
        }
        let Some(mut rho) = self.deal(at, scratch, ladder.rung(n - 1))? else {
            return Ok(None);
        };
        let (mut lo, mut hi) = (0, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.deal(at, scratch, ladder.rung(mid))? {
                Some(r) => {
                    hi = mid;
                    rho = r;
                }
                None => lo = mid + 1,
            }
        }
        Ok(Some((hi, rho)))
    }

    /// A move that holds the seat's position when its last proposal was already `top` (the
    /// ladder's top rung, which the rule rejects) and every other rung would be accepted: a
    /// REJECT, failing that a TALK, failing that `top` again — the first the engine plays
    /// without ending the episode. The REJECT comes first because it breaks the seat's run of
    /// one proposal (`rules::reject_loop`), so `top` stays open to it at a later turn; it ends
    /// the line only under a rejection streak of 1, and a TALK is not in every turn format. A
    /// time-dependent rule answers all three alike: it meets no offer it accepts and proposes
    /// by its own clock. `None` when none of them is played.
    fn hold_again(
        &mut self,
        at: &Snapshot,
        scratch: &mut Episode,
        top: Terms,
    ) -> Result<Option<Action>, OracleError> {
        for action in [Action::Reject, Action::Talk, Action::Submit(top)] {
            scratch.restore(at);
            let completion = self.write(scratch, action.clone());
            let step = scratch.step(completion)?;
            if step.played.as_ref() == Some(&action) && scratch.outcome().is_none() {
                return Ok(Some(action));
            }
        }
        Ok(None)
    }

    fn deal(
        &mut self,
        at: &Snapshot,
        scratch: &mut Episode,
        terms: Terms,
    ) -> Result<Option<f64>, OracleError> {
        self.probe(at, scratch, Action::Submit(terms))
    }
}

/// The searched seat's offers, best for it first, each worth more to the rule than the one
/// before (see the module doc).
enum Ladder {
    /// Deals in the seat's own terms.
    Deals(Vec<Terms>),
    /// Whole cents, `len` of them, counting up from 0 for a buyer and down from the top for a
    /// seller.
    Cents { buyer: bool, len: i64 },
}

impl Ladder {
    fn of(
        scenario: &Scenario,
        setup: &Setup,
        seat: Seat,
    ) -> Result<(Ladder, OracleSearch), OracleError> {
        match &scenario.game {
            DealSpace::Price {
                listing_price,
                buyer,
                seller,
            } => {
                let top = PRICE_GRID_SPAN * listing_price.max(buyer.budget).max(seller.cost);
                let len = to_cents(top.max(0.0)) + 1;
                let buyer = setup.seats[seat].role == Role::Buyer;
                Ok((Ladder::Cents { buyer, len }, OracleSearch::PriceGrid))
            }
            DealSpace::Items { .. } | DealSpace::Issues { .. } => {
                let size = scenario.term_space().size().unwrap_or(u64::MAX);
                if size > MAX_OUTCOME_SPACE {
                    return Err(OracleError::Space(size));
                }
                let frontier = super::pareto_frontier(scenario, setup);
                let space = scenario.term_space();
                let deals: Vec<Terms> = match seat {
                    Seat::Learner => frontier.iter().map(|d| d.terms.clone()).collect(),
                    Seat::Opponent => frontier
                        .iter()
                        .rev()
                        .map(|d| d.terms.flipped(space))
                        .collect(),
                };
                Ok((Ladder::Deals(deals), OracleSearch::Frontier))
            }
            DealSpace::Bundle { .. } | DealSpace::Tickets { .. } => {
                Err(OracleError::Family(scenario.family))
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Ladder::Deals(deals) => deals.len(),
            Ladder::Cents { len, .. } => *len as usize,
        }
    }

    /// The `i`th offer, best for the seat first.
    fn rung(&self, i: usize) -> Terms {
        match self {
            Ladder::Deals(deals) => deals[i].clone(),
            Ladder::Cents { buyer: true, .. } => Terms::Price(i as i64),
            Ladder::Cents { buyer: false, len } => Terms::Price(len - 1 - i as i64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{bundle, casino, hotel, learner_first_as, price, price_task, setup_with};
    use crate::game::{EpisodeConfig, FirstMover};

    const RULES: [Tactic; 3] = [Tactic::Boulware, Tactic::Linear, Tactic::Conceder];

    /// `setup` with the rule's seat (the opponent) holding out for `floor`.
    fn floored(mut setup: Setup, floor: f64) -> Setup {
        setup.seats.opponent.floor = floor;
        setup
    }

    /// L = 200, B = 180, C = 100; the rule sells with a floor of 20, so its reservation is
    /// 120. A time-dependent seller's aspiration reaches its reservation at its last move
    /// (`conceded(T − 1, T)` = 1) and it accepts any price at or above its aspiration then:
    /// the best any buyer can do is to hold until then and offer 120 — ρ = (180 − 120) / 80
    /// = 0.75, whichever of the rules, whoever moves first (moving second, the buyer's offer
    /// before the seller's last move is the one it accepts; moving first, the same).
    #[test]
    fn a_time_dependent_seller_is_met_at_its_reservation_on_its_last_move() {
        let s = price();
        for first_mover in [FirstMover::Learner, FirstMover::Opponent] {
            let config = EpisodeConfig {
                learner_role: Some(Role::Buyer),
                first_mover,
                ..EpisodeConfig::default()
            };
            let setup = floored(setup_with(&s, &config), 20.0);
            for tactic in RULES {
                let best = oracle(&s, &setup, Seat::Learner, tactic, 7).unwrap();
                assert_eq!(best.search, OracleSearch::PriceGrid);
                assert!(
                    (best.rho - 0.75).abs() < 1e-9,
                    "{} ({first_mover:?} first): {}",
                    tactic.name(),
                    best.rho
                );
            }
        }
    }

    /// The seat searched can be either: the rule as the buyer (budget 180, floor 0) pays up to
    /// its budget at its last move, so the seller (C = 100) gets 180 — ρ = 80 / 80 = 1.
    #[test]
    fn the_opponent_seat_is_searched_against_a_rule_in_the_learner_seat() {
        let s = price();
        let setup = learner_first_as(&s, Role::Buyer);
        let best = oracle(&s, &setup, Seat::Opponent, Tactic::Linear, 3).unwrap();
        assert!((best.rho - 1.0).abs() < 1e-9, "{}", best.rho);
    }

    /// With no zone of agreement (B = 90 < C = 100) the seller never accepts a price the buyer
    /// gains by: the best play is no deal, ρ 0.
    #[test]
    fn without_a_zone_of_agreement_the_best_play_is_no_deal() {
        let s = price_task(120.0, 90.0, 100.0);
        let setup = learner_first_as(&s, Role::Buyer);
        let best = oracle(&s, &setup, Seat::Learner, Tactic::Boulware, 1).unwrap();
        assert_eq!(best.rho, 0.0);
    }

    /// CaSiNo, 3 units each of food, water, firewood; the learner (agent_1) values them 5/4/3,
    /// the rule (agent_2) 3/4/5 and holds out for 20 points. At its last move it accepts any
    /// split worth 20 to it, so the learner keeps the most it can while leaving agent_2 ≥ 20:
    /// give it (food, water, firewood) = (y_f, y_w, y_fw) minimising the learner's loss
    /// 5y_f + 4y_w + 3y_fw subject to 3y_f + 4y_w + 5y_fw ≥ 20. Firewood is the cheapest
    /// way to give (5 for 3): all 3 firewood (15) and 2 water (8) make 23 ≥ 20 for a loss of
    /// 17; every other way to reach 20 loses more (3 firewood + 1 water + 1 food: 18; 2
    /// firewood + 3 water: 18; 3 firewood + 2 food: 19). The learner keeps 36 − 17 = 19:
    /// ρ = 19/36.
    #[test]
    fn on_items_the_learner_keeps_the_most_the_rules_floor_leaves_it() {
        let s = casino();
        let setup = floored(learner_first_as(&s, Role::Agent1), 20.0);
        for tactic in RULES {
            let best = oracle(&s, &setup, Seat::Learner, tactic, 11).unwrap();
            assert_eq!(best.search, OracleSearch::Frontier);
            assert!(
                (best.rho - 19.0 / 36.0).abs() < 1e-9,
                "{}: {}",
                tactic.name(),
                best.rho
            );
        }
    }

    /// Two books, worth 1 each to both sides (Deal or No Deal); the learner moves first, three
    /// rounds each, the same-offer loop at 3. The ladder is: keep both (rung 0), keep one, keep
    /// none. A linear rule's aspiration over its own moves t = 0, 1, 2 is 2, 1, 0 books (a
    /// conceder's 2, 0.59, 0), so it answers the learner's t-th proposal by accepting "keep
    /// none" only, then "keep one" too, then any. The learner holds with its top rung at turn
    /// 0; at turn 1 the rule would take "keep one" (ρ 1/2), and the top rung was the learner's
    /// last proposal. Holding once more (a REJECT, which also breaks the run of one proposal)
    /// lets the learner propose "keep both" at turn 2, which the rule accepts at its last move:
    /// ρ = 2/2 = 1. The search that stopped at turn 1 found 1/2.
    #[test]
    fn the_search_holds_on_when_the_rule_takes_every_rung_but_the_last_proposal() {
        let values = |values: Vec<u32>| crate::scenario::ItemValues {
            values,
            reasons: vec![],
        };
        let s = crate::fixtures::items_scenario(
            crate::fixtures::dnd_items(&[2]),
            values(vec![1]),
            values(vec![1]),
        );
        let mut setup = learner_first_as(&s, Role::Agent1);
        setup.rules.max_rounds = 3;
        for tactic in [Tactic::Linear, Tactic::Conceder] {
            let best = oracle(&s, &setup, Seat::Learner, tactic, 5).unwrap();
            assert!(
                (best.rho - 1.0).abs() < 1e-9,
                "{}: {}",
                tactic.name(),
                best.rho
            );
        }
    }

    #[test]
    fn bundles_and_hotel_calls_are_refused_by_name() {
        for (s, family) in [(bundle(), Family::Bundle), (hotel(), Family::Hotel)] {
            let setup = setup_with(&s, &EpisodeConfig::default());
            let refused = oracle(&s, &setup, Seat::Learner, Tactic::Boulware, 0).unwrap_err();
            assert_eq!(refused, OracleError::Family(family));
            assert!(refused.to_string().contains(family.name()), "{refused}");
        }
    }

    #[test]
    fn regret_is_the_oracle_less_what_was_reached() {
        let best = OracleValue {
            rho: 0.75,
            search: OracleSearch::PriceGrid,
        };
        let o = Oracle::new(Seat::Learner, best, 0.5);
        assert_eq!((o.rho, o.regret), (0.75, 0.25));
        assert_eq!(regret(0.75, 0.0), 0.75);
    }
}
