//! Negotiating a bundle (the INA setting), and INA's exponential concession curves (Priya et al.,
//! INA §3.3, equations 1 and 2, after Faratin et al. 1998).
//!
//! INA's curves move each side's price toward the other side's last price:
//! seller `P_s,t = P_b,t−1 + (P_s,t−1 − P_b,t−1)·e^(−k_s·t)`, buyer
//! `P_b,t = P_s,t−1 − (P_s,t−1 − P_b,t−1)·e^(−k_b·t)`, with the paper's `k_s = 0.6` for the
//! seller and `k_b = 0.4` for the buyer (its Table 4 and text: the customer concedes more slowly).
//! The seller accepts a price at or above `P_s,t − tol·P_s,t`; the buyer walks away (INA's
//! closing Reject) when its last move comes and the seller has not come down to a price it
//! would pay. Neither side ever proposes past its own limit (cost, or worth to the buyer); at
//! it, with nothing left to concede, a side holds its price while the other still moves and
//! leaves once the other holds too (`ina_at_limit`), rather than name the same price again.
//!
//! Bundles: the buyer asks for the parts it wants — those worth to it at least `KEEP_SHARE` of
//! their list price, the least a seller whose cost is at most INA's 0.85 of the list could ask
//! without loss — dropping the others (INA's Negotiate-Remove-X); under INA's curves it first
//! bargains on the price alone for `PRICE_ONLY_MOVES` moves, then drops one part a move. The
//! seller prices whatever bundle the buyer last asked for (its opening: the whole bundle at its
//! list price). A part's price moves with the list prices: a price named for one bundle is
//! carried to another by the ratio of their list prices.

use crate::protocol::{to_cents, Action, BundleChoice, BundleSpec, Terms};
use crate::scenario::BundleValues;

use super::concession::{Decision, Tactic};

/// The concession rates `(k_buyer, k_seller)` of INA's tactics: the paper's (0.4, 0.6) for
/// `rule:ina`, the released code's (0.2, 0.5; `Dialogue_flow_generation/e_commerce_dialogue_flow.py`
/// of zishan-ai/neg) for `rule:ina-code`; `None` for the other tactics.
pub(crate) fn ina_rates(tactic: Tactic) -> Option<(f64, f64)> {
    match tactic {
        Tactic::Ina => Some((0.4, 0.6)),
        Tactic::InaCode => Some((0.2, 0.5)),
        _ => None,
    }
}

/// The seller's acceptance tolerance `tol`: the paper names it without a value; the released
/// code accepts within 5% of the opening price.
pub(crate) const TOLERANCE: f64 = 0.05;
/// Moves on the price alone before the buyer starts dropping parts under INA's curves (the
/// paper's `d`: "we keep the value of d as 2", its appendix A.1).
pub(crate) const PRICE_ONLY_MOVES: u32 = 2;
/// A part worth less to the buyer than this share of its list price is not asked for.
pub(crate) const KEEP_SHARE: f64 = 0.7;

/// INA's player at its limit: its next proposal would repeat its last one, nothing being left
/// to concede on those terms, and no acceptable offer is on the table. Proposing the same terms
/// again would end the episode as a reject loop and tell the other side nothing, so:
/// - while the other side is still moving (a fresh proposal of its is on the table), it holds
///   its price without naming it again (`[REJECT_DEAL]`: INA's Negotiate-Price-NoChange, "I'm
///   sorry I cannot reduce the price", §3.3 and App. A);
/// - once the other side holds too (it answered with no proposal), no deal is left that both
///   would take, and it leaves (`[WALK_AWAY]`) — INA §3.3's closing Reject: "The customer will
///   choose intent 'Reject' when the conversation has crossed the negotiation deadline, and
///   the seller is no more ready to lower the bundle price"; a seller's Reject there is what
///   INA's R3 rewards (§5: a deal below the seller's minimum "should be rejected").
///
/// So a hold is answered by a proposal or by leaving, never by a second hold of its own, and
/// no three rejections run in a row. The one rule for INA's players on prices and bundles.
pub(crate) fn ina_at_limit(offer_on_table: bool) -> Action {
    if offer_on_table {
        Action::Reject
    } else {
        Action::WalkAway
    }
}

/// The next price under INA's curves: from this side's last price `own` toward the other side's
/// last price `other` (or this side's `limit` where the other has named none), after `t` own
/// moves, at rate `k`. Never past `limit`.
pub(crate) fn ina_price(
    buyer: bool,
    k: f64,
    own: f64,
    other: Option<f64>,
    limit: f64,
    t: u32,
) -> f64 {
    let other = other.unwrap_or(limit);
    let decay = (-k * f64::from(t)).exp();
    let next = other + (own - other) * decay;
    if buyer {
        next.min(limit)
    } else {
        next.max(limit)
    }
}

/// What a bundle negotiator knows from its own side: the public bundle, its own number per part
/// (the buyer's worth, the seller's cost) and the bundle it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleStance {
    pub(crate) buyer: bool,
    pub(crate) spec: BundleSpec,
    pub(crate) own: BundleValues,
    /// The buyer: the parts it wants. The seller: the whole bundle.
    pub(crate) wanted: BundleChoice,
    /// The least surplus it agrees to: 0, or a campaign's BATNA (possibly below zero).
    pub(crate) floor: f64,
}

impl BundleStance {
    pub(crate) fn new(buyer: bool, spec: &BundleSpec, own: &BundleValues) -> BundleStance {
        let mut wanted = BundleChoice::full(spec);
        if buyer {
            for (i, part) in spec.accessories.iter().enumerate() {
                wanted.accessories[i] = own.accessories[i] >= KEEP_SHARE * part.list_price;
            }
            wanted.delivery = own.delivery >= KEEP_SHARE * spec.delivery_fee;
        }
        BundleStance {
            buyer,
            spec: spec.clone(),
            own: own.clone(),
            wanted,
            floor: 0.0,
        }
    }

    /// The stance holding out for at least `floor` of surplus (a campaign's BATNA; below zero
    /// on a quantity ledger's shortfall, where a deal at a loss beats walking away).
    pub(crate) fn with_floor(mut self, floor: f64) -> BundleStance {
        self.floor = floor;
        self
    }

    /// This side's limit on a bundle: the price at which its surplus is its floor (the
    /// buyer's worth less the floor, the seller's cost plus it).
    fn limit(&self, parts: &BundleChoice) -> f64 {
        if self.buyer {
            self.own.total(parts) - self.floor
        } else {
            self.own.total(parts) + self.floor
        }
    }

    /// The worth of bundle terms to this side: its surplus above its floor.
    pub(crate) fn worth(&self, terms: &Terms) -> f64 {
        match terms {
            Terms::Bundle { parts, .. } => {
                let price = terms.price().unwrap_or_default();
                if self.buyer {
                    self.limit(parts) - price
                } else {
                    price - self.limit(parts)
                }
            }
            _ => f64::NEG_INFINITY,
        }
    }

    /// The opening price of a bundle: the seller asks its list price (at least 5% over its
    /// limit), the buyer offers 80% of it (INA's examples open near 0.8), never above its limit.
    fn open(&self, parts: &BundleChoice) -> f64 {
        let list = parts.list_price(&self.spec);
        if self.buyer {
            (0.8 * list).min(self.limit(parts))
        } else {
            list.max(1.05 * self.limit(parts))
        }
    }

    /// The bundle this side proposes at move `t`: the seller follows the buyer's last bundle
    /// (the one on the table, else its own last, else the whole bundle); the buyer asks for the
    /// parts it wants — under INA's curves, after the price-only moves, one more part dropped
    /// a move, the part worth least to it for its list price first.
    fn bundle_at(
        &self,
        tactic: Tactic,
        t: u32,
        offer: Option<&Terms>,
        own_offers: &[Terms],
    ) -> BundleChoice {
        let parts_of = |terms: &Terms| match terms {
            Terms::Bundle { parts, .. } => Some(parts.clone()),
            _ => None,
        };
        if !self.buyer {
            return offer
                .and_then(parts_of)
                .or_else(|| own_offers.last().and_then(parts_of))
                .unwrap_or_else(|| BundleChoice::full(&self.spec));
        }
        if ina_rates(tactic).is_none() {
            return self.wanted.clone();
        }
        let drops = t.saturating_sub(PRICE_ONLY_MOVES - 1) as usize;
        // The unwanted parts, least worth per list price first (delivery as the last index).
        let n = self.spec.accessories.len();
        let mut unwanted: Vec<(usize, f64)> = (0..=n)
            .filter(|&i| {
                if i < n {
                    !self.wanted.accessories[i]
                } else {
                    !self.wanted.delivery
                }
            })
            .map(|i| {
                let (worth, list) = if i < n {
                    (self.own.accessories[i], self.spec.accessories[i].list_price)
                } else {
                    (self.own.delivery, self.spec.delivery_fee)
                };
                (i, worth / list.max(1.0))
            })
            .collect();
        unwanted.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut parts = BundleChoice::full(&self.spec);
        for (i, _) in unwanted.into_iter().take(drops) {
            if i < n {
                parts.accessories[i] = false;
            } else {
                parts.delivery = false;
            }
        }
        parts
    }

    /// A price named for `from` carried to bundle `to` by the ratio of their list prices.
    fn carried(&self, price: f64, from: &BundleChoice, to: &BundleChoice) -> f64 {
        let (a, b) = (from.list_price(&self.spec), to.list_price(&self.spec));
        if a > 0.0 {
            price * b / a
        } else {
            price
        }
    }

    /// Decide the next move after `t` own moves of `rounds`: a time-dependent tactic offers on
    /// its bundle at `open + (limit − open)·conceded(t)`; INA's tactic by its curves. Either
    /// accepts an offer worth to it at least what its own proposal is worth (INA's seller: less
    /// its tolerance), and never proposes the same terms twice running while it can still move.
    pub(crate) fn decide(
        &self,
        tactic: Tactic,
        t: u32,
        rounds: u32,
        offer: Option<&Terms>,
        own_offers: &[Terms],
    ) -> Decision {
        let parts = self.bundle_at(tactic, t, offer, own_offers);
        let limit = self.limit(&parts);
        let open = self.open(&parts);
        let offered = offer.map(|o| self.worth(o));
        let rates = ina_rates(tactic);
        let mut price = if let Some((k_buyer, k_seller)) = rates {
            let k = if self.buyer { k_buyer } else { k_seller };
            let last = own_offers.iter().rev().find_map(|o| match o {
                Terms::Bundle { parts: p, .. } => o.price().map(|price| (price, p.clone())),
                _ => None,
            });
            match last {
                None => open,
                Some((own, from)) => {
                    let own = self.carried(own, &from, &parts);
                    let other = offer.and_then(|o| match o {
                        Terms::Bundle { parts: p, .. } => {
                            o.price().map(|price| self.carried(price, p, &parts))
                        }
                        _ => None,
                    });
                    ina_price(self.buyer, k, own, other, limit, t)
                }
            }
        } else {
            open + (limit - open) * tactic.conceded(t, rounds)
        };
        price = price.round();
        // Not the same terms twice running: one unit further toward the limit, if there is room.
        let same = |price: f64| {
            own_offers.last()
                == Some(&Terms::Bundle {
                    price: to_cents(price),
                    parts: parts.clone(),
                })
        };
        if same(price) {
            let step = if self.buyer { 1.0 } else { -1.0 };
            let next = price + step;
            if (self.buyer && next <= limit) || (!self.buyer && next >= limit) {
                price = next;
            }
        }
        let proposal = Terms::Bundle {
            price: to_cents(price),
            parts,
        };
        let aspiration = self.worth(&proposal);
        let tolerance = if rates.is_some() && !self.buyer {
            TOLERANCE * price
        } else {
            0.0
        };
        let last_move = t + 1 >= rounds;
        let repeats = own_offers.last() == Some(&proposal);
        let action = match offered {
            // `worth` is the surplus above the floor: never below it.
            Some(v) if v >= 0.0 && v >= aspiration - tolerance - 1e-9 => Action::Accept,
            // INA's buyer ends it when its deadline comes and the seller has not come down.
            _ if rates.is_some() && self.buyer && last_move => Action::WalkAway,
            // At its limit with nothing left to concede on this bundle: INA's players hold or
            // leave as the paper's do (`ina_at_limit`); the others hold their position without
            // proposing the same terms again (the reject-loop rule would end it).
            _ if repeats && rates.is_some() => ina_at_limit(offer.is_some()),
            _ if repeats => Action::Reject,
            _ => Action::Submit(proposal),
        };
        Decision {
            action,
            aspiration,
            offered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::bundle;
    use crate::scenario::DealSpace;

    fn stances() -> (BundleStance, BundleStance) {
        let s = bundle();
        let DealSpace::Bundle {
            bundle,
            buyer,
            seller,
        } = &s.game
        else {
            unreachable!()
        };
        (
            BundleStance::new(true, bundle, buyer),
            BundleStance::new(false, bundle, seller),
        )
    }

    #[test]
    fn inas_curves_close_the_gap_by_e_to_the_minus_kt() {
        // Seller at 100, buyer at 80, move 1: 80 + 20·e^−0.6.
        let s = ina_price(false, 0.6, 100.0, Some(80.0), 50.0, 1);
        assert!((s - (80.0 + 20.0 * (-0.6f64).exp())).abs() < 1e-9);
        let b = ina_price(true, 0.4, 80.0, Some(100.0), 120.0, 1);
        assert!((b - (100.0 - 20.0 * (-0.4f64).exp())).abs() < 1e-9);
        // Never past the limit.
        assert_eq!(ina_price(false, 0.6, 100.0, Some(10.0), 90.0, 5), 90.0);
        assert_eq!(ina_price(true, 0.4, 80.0, Some(100.0), 85.0, 5), 85.0);
        assert_eq!(ina_rates(Tactic::InaCode), Some((0.2, 0.5)));
        assert_eq!(ina_rates(Tactic::Linear), None);
    }

    #[test]
    fn the_buyer_drops_what_it_does_not_want_and_the_seller_follows() {
        let (buyer, seller) = stances();
        // The stand is worth nothing, delivery nothing, the cord 700 of its 800 list (≥ 0.7).
        assert_eq!(
            buyer.wanted,
            BundleChoice {
                accessories: vec![false, true],
                delivery: false
            }
        );
        let d = buyer.decide(Tactic::Linear, 0, 6, None, &[]);
        let Action::Submit(terms @ Terms::Bundle { parts, .. }) = &d.action else {
            panic!("{d:?}")
        };
        assert_eq!(parts, &buyer.wanted);
        // 80% of the list price of TV and cord: 0.8 · 60800.
        assert_eq!(terms.price(), Some(48640.0));
        let s = seller.decide(Tactic::Linear, 0, 6, Some(terms), &[]);
        let Action::Submit(Terms::Bundle { parts: sp, .. }) = &s.action else {
            panic!("{s:?}")
        };
        assert_eq!(sp, &buyer.wanted, "the seller prices the buyer's bundle");
        // Under INA's curves the buyer bargains on the full bundle first, then drops parts.
        let mut own = vec![];
        let mut sizes = vec![];
        for t in 0..5 {
            let d = buyer.decide(Tactic::Ina, t, 6, None, &own);
            let Action::Submit(terms @ Terms::Bundle { .. }) = d.action else {
                panic!()
            };
            if let Terms::Bundle { parts, .. } = &terms {
                sizes.push(parts.size());
            }
            own.push(terms);
        }
        assert_eq!(sizes, [4, 4, 3, 2, 2]);
    }

    #[test]
    fn ina_seller_accepts_within_its_tolerance_and_ina_buyer_walks_at_its_deadline() {
        let (buyer, seller) = stances();
        let parts = buyer.wanted.clone();
        let at = |price: f64| Terms::Bundle {
            price: to_cents(price),
            parts: parts.clone(),
        };
        let opening = seller.decide(Tactic::Ina, 0, 6, Some(&at(40000.0)), &[]);
        assert!(matches!(opening.action, Action::Submit(_)));
        let Action::Submit(own) = opening.action else {
            unreachable!()
        };
        let ask = own.price().unwrap();
        assert_eq!(ask, 60800.0, "the list price of TV and cord");
        // Its next price moves from the ask toward the buyer's: p + (ask − p)·e^−0.6. It takes
        // a price within 5% of that: from about 56,000 up, for an ask of 60,800.
        let next = |p: f64| ina_price(false, 0.6, ask, Some(p), 45600.0, 1);
        assert!(57000.0 >= 0.95 * next(57000.0) && 55000.0 < 0.95 * next(55000.0));
        let d = seller.decide(
            Tactic::Ina,
            1,
            6,
            Some(&at(57000.0)),
            std::slice::from_ref(&own),
        );
        assert_eq!(d.action, Action::Accept);
        let d = seller.decide(
            Tactic::Ina,
            1,
            6,
            Some(&at(55000.0)),
            std::slice::from_ref(&own),
        );
        assert_eq!(
            d.action,
            Action::Submit(at(next(55000.0).round())),
            "a counter on INA's curve"
        );
        // Below its cost never, whatever the tolerance.
        let d = seller.decide(Tactic::Ina, 5, 6, Some(&at(45000.0)), &[own]);
        assert!(matches!(d.action, Action::Submit(_)));
        // The buyer's last move with a price above its worth on the table: it walks away.
        let d = buyer.decide(Tactic::Ina, 5, 6, Some(&at(70000.0)), &[at(40000.0)]);
        assert_eq!(d.action, Action::WalkAway);
    }
}
