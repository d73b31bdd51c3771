//! The bundle family's private blocks and the rules of what a bundle deal is worth
//! (the INA setting: a price and which parts of the seller's bundle are in the deal).
//!
//! The buyer's worth of a bundle is the sum of what its parts are worth to the buyer; the
//! seller's cost of a bundle is the sum of what its parts cost the seller. Buyer surplus
//! `worth(S) − p`, seller surplus `p − cost(S)`. Price is a transfer between the two, so a deal is
//! Pareto-optimal exactly when its bundle has the largest joint surplus `worth(S) − cost(S)`;
//! dropping a part the buyer values below its cost raises the joint surplus — the integrative
//! gain the family is built to measure.

use serde::{Deserialize, Serialize};

use crate::protocol::{BundleChoice, BundleSpec};

use super::{DealSpace, Role, Scenario};

/// One side's private numbers per part of a bundle: what each part is worth to the buyer, or
/// what it costs the seller. Accessories in the scenario's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleValues {
    pub main: f64,
    pub accessories: Vec<f64>,
    pub delivery: f64,
}

impl BundleValues {
    /// The sum over the parts in `choice`: the buyer's worth or the seller's cost of the bundle.
    pub(crate) fn total(&self, choice: &BundleChoice) -> f64 {
        self.main
            + self
                .accessories
                .iter()
                .zip(&choice.accessories)
                .filter(|(_, kept)| **kept)
                .map(|(v, _)| v)
                .sum::<f64>()
            + if choice.delivery { self.delivery } else { 0.0 }
    }
}

/// A bundle scenario's public spec and both private blocks, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct BundleSpace<'a> {
    pub spec: &'a BundleSpec,
    /// What each part is worth to the buyer.
    pub(crate) worth: &'a BundleValues,
    /// What each part costs the seller.
    pub(crate) cost: &'a BundleValues,
}

impl<'a> BundleSpace<'a> {
    pub fn of(scenario: &'a Scenario) -> Option<BundleSpace<'a>> {
        match &scenario.game {
            DealSpace::Bundle {
                bundle,
                buyer,
                seller,
            } => Some(BundleSpace {
                spec: bundle,
                worth: buyer,
                cost: seller,
            }),
            _ => None,
        }
    }

    /// Buyer surplus `worth(S) − p`, seller surplus `p − cost(S)`; 0 for another role.
    pub(crate) fn utility(&self, role: Role, price: f64, choice: &BundleChoice) -> f64 {
        match role {
            Role::Buyer => self.worth.total(choice) - price,
            Role::Seller => price - self.cost.total(choice),
            _ => 0.0,
        }
    }

    /// `worth(S) − cost(S)`: what a deal on this bundle makes for both sides together.
    pub fn joint(&self, choice: &BundleChoice) -> f64 {
        self.worth.total(choice) - self.cost.total(choice)
    }

    /// The bundle with the largest joint surplus (the first such in `BundleChoice::all`'s
    /// order, so the full bundle wins a tie), and that surplus.
    pub fn best(&self) -> (BundleChoice, f64) {
        BundleChoice::all(self.spec)
            .into_iter()
            .map(|c| {
                let j = self.joint(&c);
                (c, j)
            })
            .fold(None::<(BundleChoice, f64)>, |best, (c, j)| match best {
                Some((b, bj)) if bj >= j => Some((b, bj)),
                _ => Some((c, j)),
            })
            .unwrap_or_else(|| {
                (
                    BundleChoice::full(self.spec),
                    self.joint(&BundleChoice::full(self.spec)),
                )
            })
    }

    /// The scale ρ is measured on: the largest joint surplus over all bundles where some bundle
    /// has a zone of agreement, so that ρ_buyer + ρ_seller = 1 only on the best bundle; otherwise
    /// the largest gap |worth(S) − cost(S)|. At least 1, as for price tasks.
    pub(crate) fn scale(&self) -> f64 {
        let (_, best) = self.best();
        let scale = if best > 0.0 {
            best
        } else {
            BundleChoice::all(self.spec)
                .iter()
                .map(|c| self.joint(c).abs())
                .fold(0.0, f64::max)
        };
        scale.max(1.0)
    }

    /// Whether any bundle has a zone of agreement (worth above cost).
    pub(crate) fn has_zone(&self) -> bool {
        self.best().1 > 0.0
    }

    /// The integrative gain of a deal: how much more its bundle makes for both sides together
    /// than the full bundle would (`joint(S) − joint(full)`). Positive when dropping parts the
    /// buyer values below their cost grew the pie: then, against the full bundle at the price
    /// moved by half the dropped parts' worth plus cost, both surpluses rose by half the gain.
    pub fn integrative_gain(&self, choice: &BundleChoice) -> f64 {
        self.joint(choice) - self.joint(&BundleChoice::full(self.spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bundle;

    #[test]
    fn surpluses_follow_the_parts_in_the_deal() {
        let s = bundle();
        let g = BundleSpace::of(&s).unwrap();
        let full = BundleChoice::full(g.spec);
        // Worth 58000 + 0 + 700 + 0; cost 45000 + 1100 + 600 + 400.
        assert_eq!(g.utility(Role::Buyer, 55000.0, &full), 58700.0 - 55000.0);
        assert_eq!(g.utility(Role::Seller, 55000.0, &full), 55000.0 - 47100.0);
        // The stand is worth nothing to the buyer and costs the seller 1100; delivery is worth
        // nothing and costs 400: dropping both grows the pie by 1500.
        let (best, joint) = g.best();
        assert_eq!(
            best,
            BundleChoice {
                accessories: vec![false, true],
                delivery: false
            }
        );
        assert_eq!(joint, 58700.0 - 45600.0);
        assert_eq!(g.integrative_gain(&best), 1500.0);
        assert_eq!(g.scale(), joint);
        assert!(g.has_zone());
    }
}
