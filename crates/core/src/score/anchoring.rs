//! Anchoring (the book's `guide/eval.md`, "Anchoring"): how much the first proposal of an
//! episode moves the price it closes at, as the slope of the deal price on the first proposal
//! across setups (an ordinary least-squares slope), with a bootstrap 95% interval. Magentic
//! Marketplace (2025) found models anchor on the first proposal far more than they should; a
//! slope near 1 says the deal lands wherever the first proposal put it, near 0 that the first
//! proposal does not move it.
//!
//! Prices of different scenarios are on different scales, so both prices are read as a position
//! before the slope is fitted: on a price family, within the bargaining range, `(p − C)/(B − C)`
//! (0 at the seller's cost, 1 at the buyer's budget; B and C are the deal's own, `B = P + u_buyer`,
//! `C = P − u_seller`, so older records give them too); on the bundle family, over the full
//! bundle's list price (`p / L`, `L` from the deal's `price_to_list`). Only deals have a deal
//! price; other endings and families without a price give no point.
//!
//! The interval is [`Aggregate`](super::Aggregate)'s bootstrap: the same Poisson weights per
//! episode ([`Weights`], keyed by run and group), the slope refitted on each resample from its
//! weighted sums, and the same percentile interval; memory does not grow with the episodes.

use crate::game::{Outcome, OutcomeKind, PerSeat, Rules, Seat, Turn};
use crate::protocol::{Action, Terms};
use crate::scenario::Role;

use super::aggregate::{interval, Weights, RESAMPLES};
use super::{EpisodeMetrics, Estimate};

/// One deal's anchoring point: where the first proposal and the deal price sat, each as a
/// position (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnchorPoint {
    /// The first proposal's price, as a position.
    pub first: f64,
    /// The deal price, as a position.
    pub deal: f64,
}

/// The anchoring point of an ended episode: the first proposal the players made (either seat,
/// after regulation; a logged prefix's turns left out) and the deal price, both as positions.
/// `None` unless it ended in a deal on a price or a bundle.
pub(crate) fn anchor_point(
    turns: &[impl AsRef<Turn>],
    rules: &Rules,
    outcome: &Outcome,
    metrics: &EpisodeMetrics,
    roles: PerSeat<Role>,
) -> Option<AnchorPoint> {
    if outcome.kind != OutcomeKind::Deal {
        return None;
    }
    let deal = outcome.terms.as_ref()?;
    let first = turns
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(i, _)| !rules.is_logged_turn(*i))
        .find_map(|(_, t)| match &t.played {
            Some(Action::Submit(terms)) => terms.price(),
            _ => None,
        })?;
    let price = deal.price()?;
    let (zero, unit) = match deal {
        Terms::Price(_) => {
            let buyer = Seat::BOTH.into_iter().find(|s| roles[*s] == Role::Buyer)?;
            let seller = buyer.other();
            let cost = price - outcome.utility[seller];
            (cost, outcome.utility[buyer] + outcome.utility[seller])
        }
        Terms::Bundle { .. } => (0.0, price / metrics.price_to_list?),
        _ => return None,
    };
    (unit.is_finite() && unit > super::EPS).then(|| AnchorPoint {
        first: (first - zero) / unit,
        deal: (price - zero) / unit,
    })
}

/// Σw, Σw·x, Σw·y, Σw·x², Σw·x·y.
type Sums = [f64; 5];

/// The streaming slope of the deal position on the first proposal's: feed it each deal's
/// [`AnchorPoint`] with its episode's bootstrap weights, read [`Anchoring::slope`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Anchoring {
    sums: Sums,
    /// Per resample, the weighted sums; empty until the first point.
    resampled: Vec<Sums>,
    points: usize,
}

impl Anchoring {
    /// Add one deal's point, with its episode's weights ([`Weights::of`] its bootstrap key).
    pub fn add_weighted(&mut self, weights: &Weights, point: AnchorPoint) {
        self.points += 1;
        add(&mut self.sums, 1.0, point);
        if self.resampled.is_empty() {
            self.resampled = vec![[0.0; 5]; RESAMPLES];
        }
        for (sums, w) in self.resampled.iter_mut().zip(weights.as_slice()) {
            add(sums, *w, point);
        }
    }

    /// The deals it holds.
    pub fn points(&self) -> usize {
        self.points
    }

    /// The OLS slope with its bootstrap 95% interval; `None` where the first proposals do not
    /// vary (fewer than two distinct ones), so no slope is defined.
    pub fn slope(&self) -> Option<Estimate> {
        let value = slope(&self.sums)?;
        let mut list: Vec<f64> = self.resampled.iter().filter_map(slope).collect();
        Some(interval(value, &mut list, self.points))
    }
}

fn add(sums: &mut Sums, w: f64, p: AnchorPoint) {
    if w == 0.0 {
        return;
    }
    sums[0] += w;
    sums[1] += w * p.first;
    sums[2] += w * p.deal;
    sums[3] += w * p.first * p.first;
    sums[4] += w * p.first * p.deal;
}

/// The weighted least-squares slope of y on x; `None` where x does not vary.
fn slope(s: &Sums) -> Option<f64> {
    let [w, x, y, xx, xy] = *s;
    let spread = w * xx - x * x;
    (w > 0.0 && spread > 1e-12 * w * w).then(|| (w * xy - x * y) / spread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};

    fn point(first: f64, deal: f64) -> AnchorPoint {
        AnchorPoint { first, deal }
    }

    #[test]
    fn the_slope_of_points_on_a_line_is_its_slope_and_its_interval_is_tight() {
        let mut a = Anchoring::default();
        // deal = 0.2 + 0.6·first exactly, over 40 setups.
        for i in 0..40u64 {
            let first = f64::from(i as u32) / 40.0;
            a.add_weighted(&Weights::of(i), point(first, 0.2 + 0.6 * first));
        }
        let s = a.slope().unwrap();
        assert!((s.value - 0.6).abs() < 1e-9, "{s:?}");
        assert!(
            (s.low - 0.6).abs() < 1e-9 && (s.high - 0.6).abs() < 1e-9,
            "{s:?}"
        );
        assert_eq!((s.n, a.points()), (40, 40));
    }

    #[test]
    fn noisy_points_give_an_interval_around_the_slope_and_no_spread_gives_none() {
        let mut a = Anchoring::default();
        // Slope 0.5 with alternating noise ±0.05: the OLS slope is near 0.5, the interval
        // around it and wider than a point.
        for i in 0..200u64 {
            let first = f64::from((i % 20) as u32) / 20.0;
            let noise = if i % 2 == 0 { 0.05 } else { -0.05 };
            a.add_weighted(&Weights::of(i), point(first, 0.1 + 0.5 * first + noise));
        }
        let s = a.slope().unwrap();
        assert!((s.value - 0.5).abs() < 0.02, "{s:?}");
        assert!(
            s.low < s.value && s.value < s.high && s.high - s.low < 0.1,
            "{s:?}"
        );
        let mut flat = Anchoring::default();
        for i in 0..5 {
            flat.add_weighted(&Weights::of(i), point(0.3, 0.1 * i as f64));
        }
        assert_eq!(flat.slope(), None);
    }

    #[test]
    fn a_price_deal_is_read_within_its_bargaining_range() {
        // B = 100, C = 60: the learner (buyer) opens at 70 (0.25 of the range), the seller
        // counters at 90 and the learner accepts it: the deal at 0.75.
        let s = price_task(125.0, 100.0, 60.0);
        let moves = [
            turn("Offer.", "[SUBMIT_DEAL] price:70"),
            turn("Counter.", "[SUBMIT_DEAL] price:90"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ];
        let r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        let p = r.anchor_point().unwrap();
        assert!(
            (p.first - 0.25).abs() < 1e-12 && (p.deal - 0.75).abs() < 1e-12,
            "{p:?}"
        );
    }
}
