//! Time-dependent concession (Faratin et al. 1998): open high, concede toward the reservation
//! value over the rounds, accept any offer at or above the current aspiration.
//!
//! The aspiration after `t` of `T` own moves is `best − (best − reserve) · (t / (T − 1))^(1/e)`:
//! `e < 1` concedes late (boulware, tough), `e = 1` linearly, `e > 1` early (conceder). It
//! never proposes the same terms twice running while it has anything new to offer above its
//! reservation (see [`Stance::decide`]): the reject-loop rule would end the episode on it.

use serde::{Deserialize, Serialize};

use super::bundle::{ina_at_limit, ina_price, ina_rates, BundleStance, TOLERANCE};
use crate::game::mix;
use crate::protocol::{to_cents, Action, TermSpace, Terms};
use crate::scenario::{DealSpace, Role, Scenario};

/// How fast a negotiator concedes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tactic {
    /// Holds out until the last rounds (e = 0.2).
    Boulware,
    /// Concedes the same amount each round (e = 1).
    Linear,
    /// Gives most of the way early (e = 3).
    Conceder,
    /// INA's exponential curves (INA §3.3, eqs. 1–2): each price moves toward the other side's
    /// last price by `1 − e^(−k·t)`, `k` 0.6 for a seller and 0.4 for a buyer
    /// (`negotiator::bundle`); on item and issue games, a share `(1 − e^(−t/2)) / (1 − e^(−(T−1)/2))`
    /// of the way to the reservation.
    Ina,
    /// INA's curves with the released code's rates (0.5 for a seller, 0.2 for a buyer).
    InaCode,
}

impl Tactic {
    pub const ALL: [Tactic; 5] = [
        Tactic::Boulware,
        Tactic::Linear,
        Tactic::Conceder,
        Tactic::Ina,
        Tactic::InaCode,
    ];

    pub(crate) fn exponent(self) -> f64 {
        match self {
            Tactic::Boulware => 0.2,
            Tactic::Linear => 1.0,
            Tactic::Conceder => 3.0,
            Tactic::Ina | Tactic::InaCode => 1.0,
        }
    }

    /// The name [`Tactic::from_name`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            Tactic::Boulware => "boulware",
            Tactic::Linear => "linear",
            Tactic::Conceder => "conceder",
            Tactic::Ina => "ina",
            Tactic::InaCode => "ina-code",
        }
    }

    /// `tough` is accepted as another name for boulware.
    pub fn from_name(name: &str) -> Option<Tactic> {
        match name {
            "boulware" | "tough" => Some(Tactic::Boulware),
            "linear" => Some(Tactic::Linear),
            "conceder" => Some(Tactic::Conceder),
            "ina" | "faratin" => Some(Tactic::Ina),
            "ina-code" | "ina_code" => Some(Tactic::InaCode),
            _ => None,
        }
    }

    /// The share of the way from best to reservation conceded after `t` of `rounds` own moves.
    pub(crate) fn conceded(self, t: u32, rounds: u32) -> f64 {
        if rounds <= 1 {
            return 1.0;
        }
        if matches!(self, Tactic::Ina | Tactic::InaCode) {
            let k = 0.5;
            let reach = 1.0 - (-k * f64::from(rounds - 1)).exp();
            return ((1.0 - (-k * f64::from(t)).exp()) / reach).clamp(0.0, 1.0);
        }
        let x = (f64::from(t) / f64::from(rounds - 1)).clamp(0.0, 1.0);
        x.powf(1.0 / self.exponent())
    }
}

/// A deal a negotiator may propose, with its worth to the negotiator and a tie-breaker.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub(crate) terms: Terms,
    pub utility: f64,
    /// How much the deal leaves the other side, by a public measure (units left to it); used to
    /// choose between deals of equal worth.
    pub(crate) generosity: f64,
}

/// What a negotiator knows of a game from its own side.
#[derive(Debug, Clone, PartialEq)]
pub enum Stance {
    /// One price. `open` is the first offer and `reserve` the limit (budget or cost).
    Price {
        buyer: bool,
        open: f64,
        reserve: f64,
    },
    /// A finite outcome space, sorted by the negotiator's utility, best first.
    Discrete {
        candidates: Vec<Candidate>,
        reserve: f64,
    },
    /// A price and a bundle of parts.
    Bundle(Box<BundleStance>),
    /// A price per chase ticket (hotel calls; `tickets.rs`).
    Tickets(super::tickets::TicketStance),
}

/// A decision and the numbers behind it (for the Thought line).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub action: Action,
    /// The least worth it accepts this round, as a utility: its aspiration, or the worth of
    /// its proposal where it conceded below the aspiration rather than repeat itself.
    pub(crate) aspiration: f64,
    /// The worth of the offer on the table, if there is one.
    pub(crate) offered: Option<f64>,
}

impl Stance {
    /// The stance of `role` in a scenario, reading only that role's private block.
    /// `reserve` is the least utility it will agree to (items/issues).
    pub(crate) fn from_scenario(scenario: &Scenario, role: Role, reserve: f64) -> Stance {
        match &scenario.game {
            DealSpace::Price {
                listing_price,
                buyer,
                seller,
            } => {
                if role == Role::Buyer {
                    // A floor other than zero surplus (a campaign's BATNA, below zero on a
                    // quantity ledger's shortfall) moves the limit with it.
                    Stance::price(true, *listing_price, buyer.budget - reserve)
                } else {
                    Stance::price(false, *listing_price, seller.cost + reserve)
                }
            }
            DealSpace::Bundle {
                bundle,
                buyer,
                seller,
            } => {
                let own = if role == Role::Buyer { buyer } else { seller };
                Stance::bundle(role == Role::Buyer, bundle, own, reserve)
            }
            DealSpace::Tickets { .. } => {
                match super::tickets::TicketStance::from_scenario(scenario, role) {
                    Some(stance) => Stance::Tickets(stance),
                    None => Stance::discrete(Vec::new(), reserve),
                }
            }
            _ => Stance::discrete(
                candidates(scenario.term_space(), |terms| scenario.utility(role, terms)),
                reserve,
            ),
        }
    }

    /// A price stance from the public listing price and the side's own limit (budget or cost):
    /// a buyer opens at half the listing (at most 70 % of its budget), a seller at the listing
    /// (at least 120 % of its cost).
    pub fn price(buyer: bool, listing: f64, reserve: f64) -> Stance {
        let open = if buyer {
            (0.5 * listing).min(0.7 * reserve)
        } else {
            listing.max(1.2 * reserve)
        };
        Stance::Price {
            buyer,
            open,
            reserve,
        }
    }

    /// A bundle stance from the public bundle, the side's own number per part (the buyer's
    /// worth, the seller's cost) and the least surplus it takes (`floor`: 0, or a campaign's
    /// BATNA, which a quantity ledger's shortfall puts below zero).
    pub fn bundle(
        buyer: bool,
        spec: &crate::protocol::BundleSpec,
        own: &crate::scenario::BundleValues,
        floor: f64,
    ) -> Stance {
        Stance::Bundle(Box::new(
            BundleStance::new(buyer, spec, own).with_floor(floor),
        ))
    }

    /// A discrete stance from candidates in any order.
    pub fn discrete(mut candidates: Vec<Candidate>, reserve: f64) -> Stance {
        candidates.sort_by(|a, b| {
            b.utility
                .total_cmp(&a.utility)
                .then(b.generosity.total_cmp(&a.generosity))
        });
        Stance::Discrete {
            candidates,
            reserve,
        }
    }

    /// Worth of terms (from this side) to this side.
    fn worth(&self, terms: &Terms) -> f64 {
        match self {
            Stance::Price { buyer, reserve, .. } => {
                let p = terms.price().unwrap_or_default();
                if *buyer {
                    reserve - p
                } else {
                    p - reserve
                }
            }
            Stance::Discrete { candidates, .. } => candidates
                .iter()
                .find(|c| &c.terms == terms)
                .map(|c| c.utility)
                .unwrap_or(f64::NEG_INFINITY),
            Stance::Bundle(stance) => stance.worth(terms),
            Stance::Tickets(stance) => stance.worth(terms),
        }
    }

    /// Decide the next move after `t` own moves of `rounds`, given the counterpart's offer on
    /// the table (seen from this side) and this side's earlier offers. `seed` (the seat's
    /// sampling seed in an episode) breaks ties between deals of equal worth, so the same
    /// episode always gets the same move.
    ///
    /// A time-dependent tactic offers at its aspiration level (Faratin, Sierra & Jennings
    /// 1998); where the aspiration has not moved far enough to reach a deal it has not proposed
    /// yet (a boulware's early rounds), it concedes to the next such deal rather than propose
    /// the same terms again, which the reject-loop rule would end the episode on. It accepts an
    /// offer worth at least what it would propose itself (the same paper's acceptance rule).
    pub fn decide(
        &self,
        tactic: Tactic,
        t: u32,
        rounds: u32,
        offer: Option<&Terms>,
        own_offers: &[Terms],
        seed: u64,
    ) -> Decision {
        let conceded = tactic.conceded(t, rounds);
        let offered = offer.map(|o| self.worth(o));
        let (proposal, aspiration) = match self {
            Stance::Bundle(stance) => return stance.decide(tactic, t, rounds, offer, own_offers),
            Stance::Price {
                buyer,
                open,
                reserve,
            } if ina_rates(tactic).is_some() => {
                let (k_buyer, k_seller) = ina_rates(tactic).unwrap_or_default();
                let k = if *buyer { k_buyer } else { k_seller };
                return ina_price_decision(
                    *buyer, k, *open, *reserve, t, rounds, offer, own_offers,
                );
            }
            Stance::Tickets(stance) => return stance.decide(tactic, t, rounds, offer, own_offers),
            Stance::Price { open, reserve, .. } => {
                let target = round_price(open + (reserve - open) * conceded, *open);
                let price = past_last_offer(target, *open, *reserve, own_offers);
                let proposal = Terms::Price(to_cents(price));
                let aspiration = self.worth(&proposal);
                (proposal, aspiration)
            }
            Stance::Discrete {
                candidates,
                reserve,
            } => {
                if candidates.is_empty() {
                    return Decision {
                        action: Action::Reject,
                        aspiration: 0.0,
                        offered,
                    };
                }
                let best = candidates[0].utility;
                let aspiration = best - (best - reserve) * conceded;
                let draw = mix(&[seed, u64::from(t)]);
                let pick = pick_discrete(candidates, aspiration, *reserve, own_offers, draw);
                (pick.terms.clone(), aspiration.min(pick.utility))
            }
        };
        let action = match offered {
            Some(v) if v >= aspiration - 1e-9 => Action::Accept,
            _ => Action::Submit(proposal),
        };
        Decision {
            action,
            aspiration,
            offered,
        }
    }
}

/// INA's curves on a price task (`negotiator::bundle::ina_price`): open at the stance's opening
/// price, then move toward the other side's last price; a seller accepts within INA's
/// tolerance of its next price, a buyer at or below its next price; a buyer walks away at its
/// last move if nothing it would pay is on the table. At its limit, where it would name its
/// last price again, it holds or leaves by [`ina_at_limit`] instead of repeating it.
#[allow(clippy::too_many_arguments)]
fn ina_price_decision(
    buyer: bool,
    k: f64,
    open: f64,
    reserve: f64,
    t: u32,
    rounds: u32,
    offer: Option<&Terms>,
    own_offers: &[Terms],
) -> Decision {
    let worth = |price: f64| {
        if buyer {
            reserve - price
        } else {
            price - reserve
        }
    };
    let target = match own_offers.iter().rev().find_map(Terms::price) {
        None => open,
        Some(own) => ina_price(buyer, k, own, offer.and_then(Terms::price), reserve, t),
    };
    let price = past_last_offer(round_price(target, open), open, reserve, own_offers);
    let aspiration = worth(price);
    let offered = offer.and_then(Terms::price).map(worth);
    let tolerance = if buyer { 0.0 } else { TOLERANCE * price };
    let proposal = Terms::Price(to_cents(price));
    let action = match offered {
        Some(v) if v >= 0.0 && v >= aspiration - tolerance - 1e-9 => Action::Accept,
        _ if buyer && t + 1 >= rounds => Action::WalkAway,
        _ if own_offers.last() == Some(&proposal) => ina_at_limit(offer.is_some()),
        _ => Action::Submit(proposal),
    };
    Decision {
        action,
        aspiration,
        offered,
    }
}

/// A price past this side's last proposal: `target` when it is, else one step (a whole unit
/// for prices of 20 and more, a cent below) further toward `reserve` than the last proposal;
/// where a step would pass `reserve`, `reserve` itself, and the last proposal again once it is
/// there. A boulware's aspiration hardly moves in its first rounds, and rounded to the unit it
/// would otherwise name the same price again.
fn past_last_offer(target: f64, open: f64, reserve: f64, own_offers: &[Terms]) -> f64 {
    let Some(last) = own_offers.iter().rev().find_map(Terms::price) else {
        return target;
    };
    let rising = reserve >= open;
    // Whether price `a` is further than `b` on the way from the opening offer to the limit.
    let beyond = |a: f64, b: f64| {
        let (a, b) = (to_cents(a), to_cents(b));
        if rising {
            a > b
        } else {
            a < b
        }
    };
    if beyond(target, last) {
        return target;
    }
    let step = if open >= 20.0 { 1.0 } else { 0.01 };
    let next = round_price(if rising { last + step } else { last - step }, open);
    if !beyond(next, reserve) {
        next
    } else if beyond(reserve, last) {
        reserve
    } else {
        last
    }
}

/// The deal a discrete stance proposes at `aspiration`, of the candidates (best first):
/// 1. of the deals at or above the aspiration not proposed yet, the least worth (a concession
///    exactly to the aspiration);
/// 2. else, of the deals not proposed yet at or above the reservation, the most worth (the
///    smallest concession that is not a repetition);
/// 3. else (it has proposed every deal it would make), the deal at or above the aspiration —
///    failing that, the reservation — proposed longest ago, other than its last proposal;
/// 4. else (a single deal is acceptable at all) that deal.
///
/// Within the chosen worth, the most generous deals (most units left to the other side) are
/// preferred and `draw` picks one of those that remain.
fn pick_discrete<'a>(
    candidates: &'a [Candidate],
    aspiration: f64,
    reserve: f64,
    own_offers: &[Terms],
    draw: u64,
) -> &'a Candidate {
    const EPS: f64 = 1e-9;
    let fresh = |c: &&Candidate| !own_offers.contains(&c.terms);
    let above = |floor: f64| move |c: &&Candidate| c.utility >= floor - EPS;
    let tier = |worth: f64| move |c: &&'a Candidate| (c.utility - worth).abs() <= EPS;
    let among = |pool: Vec<&'a Candidate>| -> Option<&'a Candidate> {
        let most = pool
            .iter()
            .map(|c| c.generosity)
            .fold(f64::NEG_INFINITY, f64::max);
        let ties: Vec<&Candidate> = pool
            .into_iter()
            .filter(|c| c.generosity >= most - EPS)
            .collect();
        let n = ties.len() as u64;
        (n > 0).then(|| ties[(mix(&[draw, n]) % n) as usize])
    };
    // 1: the least worth of the fresh deals at or above the aspiration.
    if let Some(least) = candidates.iter().filter(above(aspiration)).rfind(fresh) {
        let pool = candidates
            .iter()
            .filter(fresh)
            .filter(tier(least.utility))
            .collect();
        if let Some(pick) = among(pool) {
            return pick;
        }
    }
    // 2: the most worth of the fresh deals still at or above the reservation.
    if let Some(most) = candidates.iter().filter(above(reserve)).find(fresh) {
        let pool = candidates
            .iter()
            .filter(fresh)
            .filter(tier(most.utility))
            .collect();
        if let Some(pick) = among(pool) {
            return pick;
        }
    }
    // 3: every acceptable deal was proposed: the one proposed longest ago, not the last.
    let last_proposed = |c: &Candidate| own_offers.iter().rposition(|o| o == &c.terms);
    let last = own_offers.last();
    for floor in [aspiration, reserve] {
        let oldest = candidates
            .iter()
            .filter(above(floor))
            .filter(|c| Some(&c.terms) != last)
            .min_by_key(|c| last_proposed(c));
        if let Some(pick) = oldest {
            return pick;
        }
    }
    // 4: the one acceptable deal (or, with none above the reservation, the best).
    &candidates[0]
}

/// Every deal of a finite space with its worth to one side, by `utility`.
pub fn candidates(space: TermSpace<'_>, utility: impl Fn(&Terms) -> f64) -> Vec<Candidate> {
    space
        .all_terms()
        .map(|terms| Candidate {
            utility: utility(&terms),
            generosity: generosity(&terms, space),
            terms,
        })
        .collect()
}

/// Whole currency units for prices of 20 and more, cents below.
fn round_price(price: f64, scale: f64) -> f64 {
    if scale >= 20.0 {
        price.round()
    } else {
        (price * 100.0).round() / 100.0
    }
}

/// Units left to the other side (items); 0 for contracts, which both sides share.
pub(crate) fn generosity(terms: &Terms, space: TermSpace<'_>) -> f64 {
    match terms.flipped(space) {
        Terms::Items(theirs) => theirs.iter().map(|x| f64::from(*x)).sum(),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tactics_concede_at_their_pace() {
        for tactic in Tactic::ALL {
            assert_eq!(tactic.conceded(0, 6), 0.0);
            assert_eq!(tactic.conceded(5, 6), 1.0);
        }
        let mid = |t: Tactic| t.conceded(2, 6);
        assert!(
            mid(Tactic::Boulware) < mid(Tactic::Linear)
                && mid(Tactic::Linear) < mid(Tactic::Conceder)
        );
    }

    #[test]
    fn price_buyer_opens_low_and_accepts_at_aspiration() {
        let s = Stance::Price {
            buyer: true,
            open: 50.0,
            reserve: 100.0,
        };
        let d = s.decide(Tactic::Linear, 0, 6, None, &[], 0);
        assert_eq!(d.action, Action::Submit(Terms::Price(5000)));
        // Last round: aspiration is the reservation (budget), so any price up to it is taken.
        let d = s.decide(Tactic::Linear, 5, 6, Some(&Terms::Price(9900)), &[], 0);
        assert_eq!(d.action, Action::Accept);
        let d = s.decide(Tactic::Linear, 1, 6, Some(&Terms::Price(9900)), &[], 0);
        assert_eq!(d.action, Action::Submit(Terms::Price(6000)));
    }

    #[test]
    fn inas_price_player_at_its_limit_holds_then_leaves_instead_of_repeating_its_price() {
        // A seller of cost 100 that has come down to it. Its curve's next price,
        // 90 + (100 − 90)·e^(−0.6·4) ≈ 90.9, is below its cost, so it would name 100 again —
        // the second identical proposal of three that end the episode as a reject loop.
        let seller = Stance::price(false, 200.0, 100.0);
        let at_cost = [Terms::Price(12000), Terms::Price(10000)];
        // While the buyer still moves (its 90 on the table), it holds: INA's
        // Negotiate-Price-NoChange, a [REJECT_DEAL].
        let d = seller.decide(Tactic::Ina, 4, 6, Some(&Terms::Price(9000)), &at_cost, 0);
        assert_eq!(d.action, Action::Reject);
        // Once the buyer holds too (nothing on the table), it leaves: INA's closing Reject.
        let d = seller.decide(Tactic::Ina, 4, 6, None, &at_cost, 0);
        assert_eq!(d.action, Action::WalkAway);
        // The customer at its budget of 80 likewise: it holds while the seller's 100 is a
        // fresh proposal, and leaves once the seller holds.
        let buyer = Stance::price(true, 200.0, 80.0);
        let at_budget = [Terms::Price(5600), Terms::Price(8000)];
        let d = buyer.decide(Tactic::Ina, 2, 6, Some(&Terms::Price(10000)), &at_budget, 0);
        assert_eq!(d.action, Action::Reject);
        let d = buyer.decide(Tactic::Ina, 2, 6, None, &at_budget, 0);
        assert_eq!(d.action, Action::WalkAway);
        // Short of its limit it keeps conceding: the buyer's next price past 56.
        let d = buyer.decide(
            Tactic::Ina,
            1,
            6,
            Some(&Terms::Price(10000)),
            &at_budget[..1],
            0,
        );
        assert!(
            matches!(d.action, Action::Submit(Terms::Price(p)) if p > 5600),
            "{d:?}"
        );
    }

    #[test]
    fn discrete_concedes_and_avoids_repeating_itself() {
        let c = |u: f64, n: u32| Candidate {
            terms: Terms::Items(vec![n]),
            utility: u,
            generosity: 0.0,
        };
        let s = Stance::discrete(vec![c(1.0, 3), c(10.0, 0), c(5.0, 2), c(10.0, 1)], 0.0);
        let first = s.decide(Tactic::Boulware, 0, 6, None, &[], 0);
        let Action::Submit(t) = &first.action else {
            panic!()
        };
        let second = s.decide(Tactic::Boulware, 1, 6, None, std::slice::from_ref(t), 0);
        assert_ne!(
            first.action, second.action,
            "another deal of the same worth"
        );
        assert_eq!(
            s.decide(Tactic::Boulware, 1, 6, Some(&Terms::Items(vec![0])), &[], 0)
                .action,
            Action::Accept
        );
        assert_eq!(
            s.decide(Tactic::Conceder, 5, 6, Some(&Terms::Items(vec![3])), &[], 0)
                .action,
            Action::Accept,
            "at the end anything above the reservation"
        );
    }

    /// The offers a stance makes over `rounds` own moves when nothing acceptable is offered.
    fn proposals(s: &Stance, tactic: Tactic, rounds: u32, seed: u64) -> Vec<Terms> {
        let mut own = Vec::new();
        for t in 0..rounds {
            match s.decide(tactic, t, rounds, None, &own, seed).action {
                Action::Submit(terms) => own.push(terms),
                other => panic!("round {t}: {other:?}"),
            }
        }
        own
    }

    fn three_in_a_row(offers: &[Terms]) -> Option<&Terms> {
        offers
            .windows(3)
            .find(|w| w[0] == w[1] && w[1] == w[2])
            .map(|w| &w[0])
    }

    #[test]
    fn boulware_does_not_propose_the_same_casino_terms_three_times_running() {
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("scenarios/casino.jsonl");
        let scenarios = crate::scenario::load_scenarios(&file, Default::default())
            .unwrap()
            .scenarios;
        for scenario in scenarios.iter().take(40) {
            for role in [Role::Agent1, Role::Agent2] {
                let s = Stance::from_scenario(scenario, role, scenario.no_deal_value);
                for rounds in [6, 10] {
                    let offers = proposals(&s, Tactic::Boulware, rounds, 7);
                    assert_eq!(
                        three_in_a_row(&offers),
                        None,
                        "{} {role:?} over {rounds} rounds: {offers:?}",
                        scenario.id
                    );
                }
            }
        }
    }

    #[test]
    fn a_boulware_price_moves_at_least_a_unit_a_round_and_never_past_its_limit() {
        let buyer = Stance::price(true, 200.0, 150.0);
        let prices: Vec<f64> = proposals(&buyer, Tactic::Boulware, 6, 0)
            .iter()
            .map(|t| t.price().unwrap())
            .collect();
        // Opens at 100; its aspiration is 100.016, 100.512, 103.888, 116.384, 150 after that.
        assert_eq!(prices, [100.0, 101.0, 102.0, 104.0, 116.0, 150.0]);
        let seller = Stance::Price {
            buyer: false,
            open: 100.0,
            reserve: 98.5,
        };
        let prices: Vec<f64> = proposals(&seller, Tactic::Boulware, 6, 0)
            .iter()
            .map(|t| t.price().unwrap())
            .collect();
        // A step past the cost stops at the cost; there, repeating is all a seller can do.
        assert_eq!(prices, [100.0, 99.0, 98.5, 98.5, 98.5, 98.5]);
        let cents = Stance::Price {
            buyer: false,
            open: 12.0,
            reserve: 11.98,
        };
        let prices: Vec<f64> = proposals(&cents, Tactic::Boulware, 4, 0)
            .iter()
            .map(|t| t.price().unwrap())
            .collect();
        assert_eq!(
            prices,
            [12.0, 11.99, 11.98, 11.98],
            "a cent a round below 20"
        );
    }

    #[test]
    fn with_nothing_new_above_its_aspiration_it_concedes_one_step_and_accepts_as_much() {
        let c = |u: f64, n: u32| Candidate {
            terms: Terms::Items(vec![n]),
            utility: u,
            generosity: 0.0,
        };
        let s = Stance::discrete(vec![c(10.0, 0), c(8.0, 1), c(5.0, 2), c(1.0, 3)], 0.0);
        let best = [Terms::Items(vec![0])];
        // Round 1 of 6: aspiration 10 − 10 · 0.2^5 = 9.9968; only 10 is above it, proposed.
        let d = s.decide(Tactic::Boulware, 1, 6, None, &best, 0);
        assert_eq!(d.action, Action::Submit(Terms::Items(vec![1])));
        assert_eq!(d.aspiration, 8.0);
        let d = s.decide(
            Tactic::Boulware,
            1,
            6,
            Some(&Terms::Items(vec![1])),
            &best,
            0,
        );
        assert_eq!(d.action, Action::Accept, "an offer worth its own proposal");
        // Everything above the reservation proposed: the oldest above the aspiration but the last.
        let all: Vec<Terms> = [0, 1, 2, 3].map(|n| Terms::Items(vec![n])).to_vec();
        let d = s.decide(Tactic::Boulware, 1, 6, None, &all, 0);
        assert_eq!(d.action, Action::Submit(Terms::Items(vec![0])));
        let last_best = [1, 2, 3, 0].map(|n| Terms::Items(vec![n])).to_vec();
        let d = s.decide(Tactic::Boulware, 1, 6, None, &last_best, 0);
        assert_eq!(
            d.action,
            Action::Submit(Terms::Items(vec![1])),
            "not its last proposal again: the oldest at or above the reservation"
        );
    }

    #[test]
    fn ties_are_broken_by_the_seed_and_the_same_seed_gives_the_same_move() {
        let c = |n: u32| Candidate {
            terms: Terms::Items(vec![n]),
            utility: 10.0,
            generosity: 1.0,
        };
        let s = Stance::discrete((0..4).map(c).collect(), 0.0);
        let first = |seed| s.decide(Tactic::Linear, 0, 6, None, &[], seed).action;
        let picks: std::collections::BTreeSet<String> =
            (0..32).map(|seed| format!("{:?}", first(seed))).collect();
        assert!(picks.len() > 1, "one tie-break for every seed: {picks:?}");
        assert_eq!(first(5), first(5));
        let generous = Candidate {
            terms: Terms::Items(vec![9]),
            utility: 10.0,
            generosity: 2.0,
        };
        let s = Stance::discrete((0..4).map(c).chain([generous]).collect(), 0.0);
        for seed in 0..8 {
            assert_eq!(
                s.decide(Tactic::Linear, 0, 6, None, &[], seed).action,
                Action::Submit(Terms::Items(vec![9])),
                "of equal worth, the deal that leaves the other side most"
            );
        }
    }
}
