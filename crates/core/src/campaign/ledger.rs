//! The three ledger kinds and their arithmetic: what a campaign's ledger holds, the BATNA it
//! gives the next deal, how a deal's outcome moves it, and what the whole campaign is worth.
//! Pure numbers in the seat's own utility units: no scenario, no episode.
//!
//! The BATNA paper (`../shared/papers/batna-aware-reward-design.txt`, §4 and Limitations)
//! leaves "evolving outside options and multi-deal relationships", "where each deal reshapes
//! the next round's outside options", open; these rules are ours:
//!
//! - `best_offer` (a worker interviewing with several employers, each offer held until the
//!   end): the next deal's no-deal value is the best deal utility so far (or `start`);
//!   the campaign is worth the best of them.
//! - `quantity` (buying a target of units from several sellers, as SCML's shortfall and
//!   disposal penalties): each deal that closes supplies `lot` units; at the end each unit
//!   short of `target` costs `shortfall_penalty` and each unit over it `excess_penalty`. A
//!   deal's no-deal value is the penalty its lot would change, taken with the opposite sign:
//!   `penalty(got + lot) − penalty(got)` (negative while units are missing: walking away
//!   leaves them missing; positive once the target is met: walking away avoids the excess).
//!   The campaign is worth the sum of its deals' utilities less the final penalty, which is
//!   `−penalty(0)` plus the sum of every closed deal's gain over its BATNA (the test
//!   `quantity_gains_sum_to_the_campaign_value` works it).
//! - `budget` (a buyer whose money shrinks by what it paid): each deal is played with the
//!   buyer's budget capped at the money left; the no-deal value stays the scenario's. The
//!   campaign is worth the sum of its deals' utilities (each against the budget it was played
//!   with), and the money left is reported beside it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which ledger a campaign keeps, with its parameters (a campaign file's `ledger` object:
/// `{"kind": "quantity", "target": 2, …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LedgerKind {
    /// The best offer so far is the next deal's BATNA.
    BestOffer(BestOffer),
    /// A quantity target, with penalties per unit short of it and per unit over it.
    Quantity(Quantity),
    /// The money left after earlier purchases caps the next deal's budget.
    Budget(Budget),
}

/// `best_offer`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BestOffer {
    /// The BATNA of the first deal (the offer held before the campaign; default 0).
    #[serde(default)]
    pub start: f64,
}

/// `quantity`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quantity {
    /// Units wanted over the whole campaign.
    pub target: u32,
    /// Units each closed deal supplies (default 1).
    #[serde(default = "one")]
    pub lot: u32,
    /// Cost of each unit short of the target at the end (in the seat's utility units).
    pub shortfall_penalty: f64,
    /// Cost of each unit over the target at the end (default 0).
    #[serde(default)]
    pub excess_penalty: f64,
}

/// `budget`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The money the buyer has for the whole campaign.
    pub money: f64,
}

fn one() -> u32 {
    1
}

/// The ledger as a deal finds it or leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LedgerState {
    /// What the kind counts: the best utility so far (`best_offer`), the units bought
    /// (`quantity`), the money left (`budget`).
    pub value: f64,
    /// Deals closed so far.
    pub closed: u32,
    /// The sum of the closed deals' utilities to the seat.
    pub utility: f64,
}

/// A ledger parameter that cannot be used; `field` is its key in the `ledger` object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("ledger.{field}: {message}")]
pub struct BadLedger {
    pub(crate) field: &'static str,
    pub(crate) message: String,
}

/// The most a ledger amount may be (the scenario files' own limit on amounts).
const MAX_AMOUNT: f64 = 1e9;

fn amount(field: &'static str, v: f64, min: f64) -> Result<(), BadLedger> {
    if v.is_finite() && (min..=MAX_AMOUNT).contains(&v) {
        Ok(())
    } else {
        Err(BadLedger {
            field,
            message: format!("must be a finite number from {min} to {MAX_AMOUNT:e}; it is {v}"),
        })
    }
}

impl LedgerKind {
    /// The kind's name, as the file spells it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            LedgerKind::BestOffer(_) => "best_offer",
            LedgerKind::Quantity(_) => "quantity",
            LedgerKind::Budget(_) => "budget",
        }
    }

    /// Check what serde cannot: every amount finite and in range, a lot of at least one unit.
    pub(crate) fn validate(&self) -> Result<(), BadLedger> {
        match *self {
            LedgerKind::BestOffer(BestOffer { start }) => amount("start", start, -MAX_AMOUNT),
            LedgerKind::Quantity(Quantity {
                lot,
                shortfall_penalty,
                excess_penalty,
                ..
            }) => {
                if lot == 0 {
                    return Err(BadLedger {
                        field: "lot",
                        message: "a closed deal must supply at least 1 unit; it is 0".into(),
                    });
                }
                amount("shortfall_penalty", shortfall_penalty, 0.0)?;
                amount("excess_penalty", excess_penalty, 0.0)
            }
            LedgerKind::Budget(Budget { money }) => amount("money", money, 0.0),
        }
    }

    /// The ledger before the first deal.
    pub fn opening(&self) -> LedgerState {
        let value = match *self {
            LedgerKind::BestOffer(BestOffer { start }) => start,
            LedgerKind::Quantity(_) => 0.0,
            LedgerKind::Budget(Budget { money }) => money,
        };
        LedgerState {
            value,
            closed: 0,
            utility: 0.0,
        }
    }

    /// The end-of-campaign penalty of holding `units` (`quantity`; 0 for the other kinds).
    pub(crate) fn penalty(&self, units: f64) -> f64 {
        match *self {
            LedgerKind::Quantity(Quantity {
                target,
                shortfall_penalty,
                excess_penalty,
                ..
            }) => {
                let target = f64::from(target);
                shortfall_penalty * (target - units).max(0.0)
                    + excess_penalty * (units - target).max(0.0)
            }
            _ => 0.0,
        }
    }

    /// The seat's no-deal value in the next deal, given the ledger `before` it and the
    /// scenario's own no-deal value (what `budget` keeps).
    pub fn batna(&self, before: &LedgerState, scenario_no_deal: f64) -> f64 {
        match *self {
            LedgerKind::BestOffer(_) => before.value,
            LedgerKind::Quantity(Quantity { lot, .. }) => {
                self.penalty(before.value + f64::from(lot)) - self.penalty(before.value)
            }
            LedgerKind::Budget(_) => scenario_no_deal,
        }
    }

    /// The budget the next deal is played with (`budget`: the lesser of the scenario's and the
    /// money left, never below 0); `None` for the other kinds.
    pub fn budget_cap(&self, before: &LedgerState, scenario_budget: f64) -> Option<f64> {
        match self {
            LedgerKind::Budget(_) => Some(scenario_budget.min(before.value).max(0.0)),
            _ => None,
        }
    }

    /// The ledger after a deal: `closed` is `Some((utility, price))` when the deal closed (the
    /// seat's utility, and the price paid where the deal has one), `None` when it did not (the
    /// ledger is unchanged).
    pub(crate) fn settle(
        &self,
        before: &LedgerState,
        closed: Option<(f64, Option<f64>)>,
    ) -> LedgerState {
        let Some((utility, price)) = closed else {
            return *before;
        };
        let value = match *self {
            LedgerKind::BestOffer(_) => before.value.max(utility),
            LedgerKind::Quantity(Quantity { lot, .. }) => before.value + f64::from(lot),
            LedgerKind::Budget(_) => before.value - price.unwrap_or(0.0),
        };
        LedgerState {
            value,
            closed: before.closed + 1,
            utility: before.utility + utility,
        }
    }

    /// What a campaign that ended with `last` is worth to the seat: the best offer held
    /// (`best_offer`), the deals' utilities less the final penalty (`quantity`), the deals'
    /// utilities (`budget`).
    pub fn campaign_value(&self, last: &LedgerState) -> f64 {
        match self {
            LedgerKind::BestOffer(_) => last.value,
            LedgerKind::Quantity(_) => last.utility - self.penalty(last.value),
            LedgerKind::Budget(_) => last.utility,
        }
    }
}

/// A deal's gain over its BATNA: the seat's utility less its no-deal value on a deal, 0
/// without one (no deal leaves the seat exactly its BATNA).
pub(crate) fn gain(utility: f64, batna: f64, closed: bool) -> f64 {
    if closed {
        utility - batna
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-9;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < TOL, "{a} is not {b}");
    }

    #[test]
    fn a_best_offer_becomes_the_next_batna_and_a_worse_one_does_not() {
        let k = LedgerKind::BestOffer(BestOffer { start: 10.0 });
        let s0 = k.opening();
        close(k.batna(&s0, 0.0), 10.0);
        let s1 = k.settle(&s0, Some((62.5, None)));
        close(k.batna(&s1, 0.0), 62.5);
        // A worse deal later is held beside the better one: the BATNA stays.
        let s2 = k.settle(&s1, Some((40.0, None)));
        close(k.batna(&s2, 0.0), 62.5);
        // No deal leaves the ledger as it was.
        assert_eq!(k.settle(&s2, None), s2);
        assert_eq!(s2.closed, 2);
        close(k.campaign_value(&s2), 62.5);
        close(gain(40.0, 62.5, true), -22.5);
        close(gain(0.0, 62.5, false), 0.0);
    }

    #[test]
    fn quantity_batna_is_the_penalty_the_lot_changes() {
        // Target 3, lots of 2, shortfall 10 and excess 4 per unit.
        let k = LedgerKind::Quantity(Quantity {
            target: 3,
            lot: 2,
            shortfall_penalty: 10.0,
            excess_penalty: 4.0,
        });
        let s0 = k.opening();
        close(k.penalty(0.0), 30.0);
        // 0 → 2 units: the penalty falls from 30 to 10, so walking away is worth −20.
        close(k.batna(&s0, 0.0), -20.0);
        let s1 = k.settle(&s0, Some((5.0, Some(95.0))));
        close(s1.value, 2.0);
        // 2 → 4 units: from 10 (1 short) to 4 (1 over): −6.
        close(k.batna(&s1, 0.0), -6.0);
        let s2 = k.settle(&s1, Some((3.0, Some(97.0))));
        // 4 → 6: from 4 to 12: +8, walking away now avoids the excess.
        close(k.batna(&s2, 0.0), 8.0);
        close(k.campaign_value(&s2), 5.0 + 3.0 - 4.0);
    }

    #[test]
    fn quantity_gains_sum_to_the_campaign_value() {
        let k = LedgerKind::Quantity(Quantity {
            target: 2,
            lot: 1,
            shortfall_penalty: 7.0,
            excess_penalty: 2.5,
        });
        // Deals: closed 4, none, closed −1, closed 6.
        let outcomes = [Some(4.0), None, Some(-1.0), Some(6.0)];
        let mut state = k.opening();
        let mut gains = 0.0;
        for o in outcomes {
            let batna = k.batna(&state, 0.0);
            gains += gain(o.unwrap_or(batna), batna, o.is_some());
            state = k.settle(&state, o.map(|u| (u, None)));
        }
        close(k.campaign_value(&state), -k.penalty(0.0) + gains);
        close(k.campaign_value(&state), 4.0 - 1.0 + 6.0 - 2.5);
    }

    #[test]
    fn the_budget_shrinks_by_what_was_paid_and_caps_the_next_budget() {
        let k = LedgerKind::Budget(Budget { money: 300.0 });
        let s0 = k.opening();
        assert_eq!(k.budget_cap(&s0, 250.0), Some(250.0));
        close(k.batna(&s0, 0.0), 0.0);
        let s1 = k.settle(&s0, Some((30.0, Some(220.0))));
        close(s1.value, 80.0);
        assert_eq!(k.budget_cap(&s1, 250.0), Some(80.0));
        // Money cannot go below nothing as a budget.
        let s2 = k.settle(&s1, Some((-40.0, Some(120.0))));
        close(s2.value, -40.0);
        assert_eq!(k.budget_cap(&s2, 250.0), Some(0.0));
        close(k.campaign_value(&s2), -10.0);
        assert_eq!(
            LedgerKind::BestOffer(BestOffer { start: 0.0 }).budget_cap(&s0, 9.0),
            None
        );
    }

    #[test]
    fn bad_parameters_are_refused_by_key() {
        let bad = |k: LedgerKind| k.validate().unwrap_err().to_string();
        assert!(bad(LedgerKind::Budget(Budget { money: -1.0 })).starts_with("ledger.money: "));
        assert!(
            bad(LedgerKind::BestOffer(BestOffer { start: f64::NAN })).starts_with("ledger.start: ")
        );
        let q = |lot, s, e| {
            LedgerKind::Quantity(Quantity {
                target: 1,
                lot,
                shortfall_penalty: s,
                excess_penalty: e,
            })
        };
        assert!(bad(q(0, 1.0, 1.0)).starts_with("ledger.lot: "));
        assert!(bad(q(1, -1.0, 1.0)).starts_with("ledger.shortfall_penalty: "));
        assert!(bad(q(1, 1.0, f64::INFINITY)).starts_with("ledger.excess_penalty: "));
        assert_eq!(q(1, 1.0, 0.0).validate(), Ok(()));
    }
}
