//! The competitive equilibrium of a market: what its trades are measured against (the book's
//! `families/market.md`, "Metrics"). The one home of the demand and supply schedules, the
//! equilibrium quantity and price range, the competitive allocation's surplus and which units
//! are extra-marginal.
//!
//! Every unit of every buyer is a step of the demand schedule (values sorted high to low),
//! every unit of every seller a step of the supply schedule (costs sorted low to high). The
//! competitive quantity `q*` is the most units for which the q-th value is at least the q-th
//! cost; the competitive allocation trades those units and its surplus, `Σ_{q ≤ q*} (d_q − s_q)`,
//! is the most any allocation of the market reaches. A price clears the market when, at it,
//! `q*` units are demanded and supplied: the closed range
//! `[max(s_{q*}, d_{q*+1}), min(d_{q*}, s_{q*+1})]`, a missing step read as no bound (with no
//! trade, `[d_1, s_1]`). Ties (a value equal to a cost) trade in the allocation and add nothing
//! to its surplus.

use serde::{Deserialize, Serialize};

use crate::scenario::{MarketScenario, Side};

/// A market's competitive equilibrium, in whole currency units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Equilibrium {
    /// The competitive quantity `q*`: units the competitive allocation trades.
    pub quantity: usize,
    /// The lowest price that clears the market.
    pub price_low: i64,
    /// The highest price that clears the market.
    pub price_high: i64,
    /// The competitive allocation's total surplus: the most the market can realise.
    pub max_surplus: i64,
    /// The lowest value among the units the allocation trades (`d_{q*}`; `None` with no
    /// trade): a buyer's unit worth less is extra-marginal.
    pub marginal_value: Option<i64>,
    /// The highest cost among the units the allocation trades (`s_{q*}`): a seller's unit
    /// costing more is extra-marginal.
    pub marginal_cost: Option<i64>,
}

/// Every unit limit on `side`, in the schedule's order (values high to low, costs low to high).
fn schedule(scenario: &MarketScenario, side: Side) -> Vec<i64> {
    let mut limits: Vec<i64> = scenario
        .seats_on(side)
        .flat_map(|s| scenario.traders[s].private.limits.iter().copied())
        .collect();
    match side {
        Side::Buyer => limits.sort_unstable_by(|a, b| b.cmp(a)),
        Side::Seller => limits.sort_unstable(),
    }
    limits
}

/// The competitive equilibrium of `scenario` (see the module doc).
pub fn equilibrium(scenario: &MarketScenario) -> Equilibrium {
    let demand = schedule(scenario, Side::Buyer);
    let supply = schedule(scenario, Side::Seller);
    let quantity = demand
        .iter()
        .zip(&supply)
        .take_while(|(d, s)| d >= s)
        .count();
    let max_surplus = demand
        .iter()
        .zip(&supply)
        .take(quantity)
        .map(|(d, s)| d - s)
        .sum();
    // Step q (1-based) of a schedule; `None` past either end.
    let step = |schedule: &[i64], q: usize| q.checked_sub(1).and_then(|i| schedule.get(i).copied());
    let (d_q, s_q) = (step(&demand, quantity), step(&supply, quantity));
    let (d_next, s_next) = (step(&demand, quantity + 1), step(&supply, quantity + 1));
    let price_low = [s_q, d_next].into_iter().flatten().max().unwrap_or(0);
    let price_high = [d_q, s_next]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(price_low);
    Equilibrium {
        quantity,
        price_low,
        price_high,
        max_surplus,
        marginal_value: d_q,
        marginal_cost: s_q,
    }
}

impl Equilibrium {
    /// Whether a unit of limit `limit` on `side` is extra-marginal: worse than the worst unit
    /// the competitive allocation trades (every unit, where it trades none).
    pub fn is_extra_marginal(&self, side: Side, limit: i64) -> bool {
        match side {
            Side::Buyer => self.marginal_value.is_none_or(|m| limit < m),
            Side::Seller => self.marginal_cost.is_none_or(|m| limit > m),
        }
    }

    /// How far `price` lies outside the equilibrium price range (0 inside it).
    pub fn distance(&self, price: f64) -> f64 {
        if price < self.price_low as f64 {
            self.price_low as f64 - price
        } else if price > self.price_high as f64 {
            price - self.price_high as f64
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::market::tests::{market, unit_market};
    use crate::scenario::MarketVariant;

    fn ce(values: &[i64], costs: &[i64]) -> Equilibrium {
        equilibrium(&unit_market(values, costs))
    }

    #[test]
    fn a_unit_market_worked_by_hand() {
        // Demand 100 80 60, supply 40 70 90: two units trade (80 ≥ 70, 60 < 90); the price
        // clears between max(s2 = 70, d3 = 60) and min(d2 = 80, s3 = 90).
        let e = ce(&[60, 100, 80], &[90, 40, 70]);
        assert_eq!(e.quantity, 2);
        assert_eq!((e.price_low, e.price_high), (70, 80));
        assert_eq!(e.max_surplus, (100 - 40) + (80 - 70));
        assert!(e.is_extra_marginal(Side::Buyer, 60));
        assert!(!e.is_extra_marginal(Side::Buyer, 80));
        assert!(e.is_extra_marginal(Side::Seller, 90));
        assert!(!e.is_extra_marginal(Side::Seller, 70));
        assert_eq!(e.distance(75.0), 0.0);
        assert_eq!(e.distance(85.0), 5.0);
        assert_eq!(e.distance(62.0), 8.0);
    }

    #[test]
    fn a_marginal_value_equal_to_its_cost_trades_for_nothing() {
        // d = 10 8, s = 5 8: both units trade, the second adds nothing; one price clears.
        let e = ce(&[10, 8], &[5, 8]);
        assert_eq!(e.quantity, 2);
        assert_eq!(e.max_surplus, 5);
        assert_eq!((e.price_low, e.price_high), (8, 8));
        // d = 10 8, s = 8 12: one unit; the price range is [max(8, 8), min(10, 12)].
        let e = ce(&[10, 8], &[8, 12]);
        assert_eq!(e.quantity, 1);
        assert_eq!((e.price_low, e.price_high), (8, 10));
        assert_eq!(e.max_surplus, 2);
        // Two buyers tie at the margin: either may trade, neither is extra-marginal.
        let e = ce(&[10, 8, 8], &[5, 7, 20]);
        assert_eq!(e.quantity, 2);
        assert!(!e.is_extra_marginal(Side::Buyer, 8));
        assert_eq!((e.price_low, e.price_high), (8, 8));
    }

    #[test]
    fn a_market_with_no_gain_from_trade_trades_nothing() {
        // Every value below every cost: no unit trades, any price in [d1, s1] clears.
        let e = ce(&[30, 20], &[40, 50]);
        assert_eq!(e.quantity, 0);
        assert_eq!(e.max_surplus, 0);
        assert_eq!((e.price_low, e.price_high), (30, 40));
        assert!(e.is_extra_marginal(Side::Buyer, 30));
        assert!(e.is_extra_marginal(Side::Seller, 40));
    }

    #[test]
    fn every_unit_trades_when_every_value_beats_every_cost() {
        let e = ce(&[100, 90], &[10, 20]);
        assert_eq!(e.quantity, 2);
        // No third step on either side: the range is [s2, d2].
        assert_eq!((e.price_low, e.price_high), (20, 90));
        assert_eq!(e.max_surplus, 160);
    }

    #[test]
    fn a_multi_unit_market_worked_by_hand() {
        // Buyer 1 values 100, 70, 40; buyer 2 values 90, 50. Seller 1 costs 20, 60; seller 2
        // costs 30, 80. Demand 100 90 70 50 40, supply 20 30 60 80: three units trade
        // (70 ≥ 60; 50 < 80), the price clears in [max(60, 50), min(70, 80)] = [60, 70].
        let s = market(
            MarketVariant::MultiUnit,
            vec![vec![100, 70, 40], vec![90, 50]],
            vec![vec![20, 60], vec![30, 80]],
        );
        let e = equilibrium(&s);
        assert_eq!(e.quantity, 3);
        assert_eq!((e.price_low, e.price_high), (60, 70));
        assert_eq!(e.max_surplus, (100 - 20) + (90 - 30) + (70 - 60));
        assert!(e.is_extra_marginal(Side::Buyer, 50));
        assert!(e.is_extra_marginal(Side::Seller, 80));
    }
}
