//! A market's metrics (issue 45; the book's `families/market.md`, "Metrics"): the one home of
//! how a market's trades are measured against its competitive equilibrium
//! ([`crate::market::equilibrium`]), per episode and over a set with 95 % intervals.
//!
//! - **Allocative efficiency**: the surplus the trades realised (each trade's buyer value minus
//!   seller cost) over the competitive allocation's maximum surplus (Gode & Sunder 1993's
//!   measure); `None` where the market has no gain from trade.
//! - Each trade's **distance** from the equilibrium price range (0 inside it).
//! - **Price dispersion**: the root-mean-square deviation of the trade prices from the middle
//!   of the equilibrium price range (Smith's α, before it is divided by that middle).
//! - Each seat's **surplus** and **share** of the realised surplus.
//! - **Extra-marginal trades**: trades in which the buyer's or the seller's unit is
//!   extra-marginal ([`Equilibrium::is_extra_marginal`]).
//! - **Anchoring**: the episode's point for the slope of trade prices on first quotes — the
//!   first quote and the mean trade price, each as a position between the market's lowest cost
//!   (0) and its highest value (1) — fitted by [`Anchoring`], the one OLS slope.

use serde::{Deserialize, Serialize};

use crate::market::{equilibrium, Equilibrium, MarketBook, MarketTurn, Trade};
use crate::protocol::Action;
use crate::scenario::{MarketScenario, Side};

use super::aggregate::{MeanEstimate, Weights};
use super::{AnchorPoint, Anchoring, Estimate};

/// One trade as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TradeMetrics {
    /// The price, in currency units.
    pub price: f64,
    /// How far outside the equilibrium price range (0 inside).
    pub distance: f64,
    /// Whether the buyer's or the seller's unit was extra-marginal.
    pub extra_marginal: bool,
}

/// A market episode's metrics (the record's outcome carries them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MarketMetrics {
    pub equilibrium: Equilibrium,
    /// Realised surplus over the maximum; `None` with no gain from trade.
    pub efficiency: Option<f64>,
    pub realized_surplus: f64,
    pub trades: Vec<TradeMetrics>,
    /// RMS deviation of trade prices from the middle of the equilibrium range; `None`
    /// without trades.
    pub price_dispersion: Option<f64>,
    /// Each seat's gain, in the market's order.
    pub surplus: Vec<f64>,
    /// Each seat's share of the realised surplus; `None` where nothing was realised.
    pub share: Option<Vec<f64>>,
    pub extra_marginal_trades: usize,
    /// The anchoring point: `None` without a quote or a trade.
    #[serde(skip)]
    pub anchor: Option<AnchorPoint>,
}

/// The metrics of a market's `book` after its `turns`.
pub fn market_metrics(
    scenario: &MarketScenario,
    book: &MarketBook,
    turns: &[MarketTurn],
) -> MarketMetrics {
    let e = equilibrium(scenario);
    let mut surplus = vec![0.0; scenario.traders.len()];
    let trades: Vec<TradeMetrics> = book
        .trades
        .iter()
        .map(|t| {
            surplus[t.buyer] += t.buyer_surplus();
            surplus[t.seller] += t.seller_surplus();
            let price = t.price as f64 / 100.0;
            TradeMetrics {
                price,
                distance: e.distance(price),
                extra_marginal: e.is_extra_marginal(Side::Buyer, t.value)
                    || e.is_extra_marginal(Side::Seller, t.cost),
            }
        })
        .collect();
    let realized: f64 = book.trades.iter().map(|t| (t.value - t.cost) as f64).sum();
    let middle = (e.price_low + e.price_high) as f64 / 2.0;
    let n = trades.len() as f64;
    let price_dispersion = (!trades.is_empty()).then(|| {
        (trades
            .iter()
            .map(|t| (t.price - middle).powi(2))
            .sum::<f64>()
            / n)
            .sqrt()
    });
    let share = (realized > 0.0).then(|| surplus.iter().map(|s| s / realized).collect());
    let first_quote = turns.iter().find_map(|t| match t.played() {
        Some(Action::Submit(terms)) => crate::market::quote_price(terms),
        _ => None,
    });
    let limits = scenario
        .traders
        .iter()
        .flat_map(|t| t.private.limits.iter().copied());
    let (low, high) = limits.fold((i64::MAX, i64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    let span = (high - low) as f64;
    let anchor = match (first_quote, trades.is_empty()) {
        (Some(first), false) if span > 0.0 => Some(AnchorPoint {
            first: (first as f64 / 100.0 - low as f64) / span,
            deal: (trades.iter().map(|t| t.price).sum::<f64>() / n - low as f64) / span,
        }),
        _ => None,
    };
    MarketMetrics {
        efficiency: (e.max_surplus > 0).then(|| realized / e.max_surplus as f64),
        extra_marginal_trades: trades.iter().filter(|t| t.extra_marginal).count(),
        equilibrium: e,
        realized_surplus: realized,
        trades,
        price_dispersion,
        surplus,
        share,
        anchor,
    }
}

/// Market metrics over a set of episodes: mean efficiency with its bootstrap 95 % interval
/// (the same Poisson weights per episode as every aggregate), extra-marginal trades per
/// episode, and the anchoring slope.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarketTally {
    /// The efficiency of each episode that has one.
    efficiency: MeanEstimate,
    episodes: usize,
    trades: usize,
    extra_marginal: usize,
    anchoring: Anchoring,
}

impl MarketTally {
    /// Add one episode's metrics under bootstrap key `key`.
    pub fn add(&mut self, key: u64, m: &MarketMetrics) {
        let weights = Weights::of(key);
        self.episodes += 1;
        self.trades += m.trades.len();
        self.extra_marginal += m.extra_marginal_trades;
        if let Some(a) = m.anchor {
            self.anchoring.add_weighted(&weights, a);
        }
        if let Some(x) = m.efficiency {
            self.efficiency.add_weighted(&weights, x);
        }
    }

    pub fn episodes(&self) -> usize {
        self.episodes
    }

    /// The trades of every episode added, and how many of them were extra-marginal.
    pub fn trades(&self) -> (usize, usize) {
        (self.trades, self.extra_marginal)
    }

    /// Mean allocative efficiency with its 95 % interval.
    pub fn efficiency(&self) -> Option<Estimate> {
        self.efficiency.estimate()
    }

    /// The slope of trade prices on first quotes, with its interval.
    pub fn anchoring(&self) -> Option<Estimate> {
        self.anchoring.slope()
    }
}

/// One seat's figures over markets (an eval entrant's at the seat it sat, `eval` on market
/// files), each a mean with its bootstrap 95 % interval, an episode's values drawn together by
/// its key: the seat's **profit** (its surplus, currency units), its **share** of the realised
/// surplus (over the markets that realised some), its **trade rate** (the markets in which it
/// traded at least once), the **distance** of its trades from the equilibrium price range
/// (per trade), its **malformed-turn rate** (its attempts that could not be used — unreadable
/// or not allowed — over all its attempts, pooled), and the markets' efficiency
/// ([`MarketTally`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarketSeatTally {
    market: MarketTally,
    profit: MeanEstimate,
    share: MeanEstimate,
    traded: MeanEstimate,
    distance: MeanEstimate,
    malformed: MeanEstimate,
}

/// [`MarketSeatTally`]'s figures, each `None` before a value bears on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MarketSeatFigures {
    pub markets: usize,
    pub profit: Option<Estimate>,
    pub share: Option<Estimate>,
    pub trade_rate: Option<Estimate>,
    pub distance: Option<Estimate>,
    pub efficiency: Option<Estimate>,
    pub malformed: Option<Estimate>,
}

impl MarketSeatTally {
    /// Add `seat`'s part of one market under bootstrap key `key`: its metrics, its trades (the
    /// record's, in the book's order, as `m.trades` measures them) and its turns.
    pub fn add(
        &mut self,
        key: u64,
        m: &MarketMetrics,
        trades: &[Trade],
        turns: &[MarketTurn],
        seat: usize,
    ) {
        self.market.add(key, m);
        let weights = Weights::of(key);
        if let Some(&profit) = m.surplus.get(seat) {
            self.profit.add_weighted(&weights, profit);
        }
        if let Some(share) = m.share.as_ref().and_then(|s| s.get(seat)) {
            self.share.add_weighted(&weights, *share);
        }
        let mut traded = false;
        for (t, measured) in trades.iter().zip(&m.trades) {
            if t.buyer == seat || t.seller == seat {
                traded = true;
                self.distance.add_weighted(&weights, measured.distance);
            }
        }
        self.traded
            .add_weighted(&weights, if traded { 1.0 } else { 0.0 });
        for t in turns.iter().filter(|t| t.seat == seat) {
            let malformed = t
                .error
                .as_ref()
                .is_some_and(|e| e.kind != crate::protocol::ErrorKind::Backend);
            self.malformed
                .add_weighted(&weights, if malformed { 1.0 } else { 0.0 });
        }
    }

    /// The figures over the markets added.
    pub fn figures(&self) -> MarketSeatFigures {
        MarketSeatFigures {
            markets: self.market.episodes(),
            profit: self.profit.estimate(),
            share: self.share.estimate(),
            trade_rate: self.traded.estimate(),
            distance: self.distance.estimate(),
            efficiency: self.market.efficiency(),
            malformed: self.malformed.estimate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Terms;
    use crate::scenario::market::tests::unit_market;

    fn quote(p: i64) -> Action {
        Action::Submit(Terms::Price(p * 100))
    }

    #[test]
    fn a_market_with_an_extra_marginal_trade_worked_by_hand() {
        // Values 100, 60; costs 40, 90: one unit trades at equilibrium, prices [60, 90]
        // (max(s1 = 40, d2 = 60), min(d1 = 100, s2 = 90)), max surplus 60.
        let s = unit_market(&[100, 60], &[40, 90]);
        let mut book = MarketBook::new(&s);
        // The extra-marginal buyer (60) buys from the cheap seller at 50; the intra-marginal
        // buyer (100) is left with the dear seller (90) and buys at 95.
        book.play(&s, 2, &quote(50), None);
        book.play(&s, 1, &Action::Accept, Some(1));
        book.play(&s, 3, &quote(95), None);
        book.play(&s, 0, &Action::Accept, Some(2));
        let m = market_metrics(&s, &book, &[]);
        assert_eq!(
            (m.equilibrium.price_low, m.equilibrium.price_high),
            (60, 90)
        );
        // Realised (60 − 40) + (100 − 90) = 30 of 60.
        assert_eq!(m.realized_surplus, 30.0);
        assert_eq!(m.efficiency, Some(0.5));
        assert_eq!(
            m.extra_marginal_trades, 2,
            "buyer 60 and seller 90 are both extra-marginal"
        );
        assert_eq!(
            m.trades.iter().map(|t| t.distance).collect::<Vec<_>>(),
            vec![10.0, 5.0]
        );
        // Middle of the range 75: deviations −25 and +20, RMS √((625 + 400) / 2).
        assert!((m.price_dispersion.unwrap() - (1025.0f64 / 2.0).sqrt()).abs() < 1e-12);
        assert_eq!(m.surplus, vec![5.0, 10.0, 10.0, 5.0]);
        assert_eq!(
            m.share,
            Some(vec![5.0 / 30.0, 10.0 / 30.0, 10.0 / 30.0, 5.0 / 30.0])
        );
    }

    #[test]
    fn no_trade_gives_no_dispersion_share_or_anchor_and_the_tally_skips_no_gain_markets() {
        let s = unit_market(&[100, 60], &[40, 90]);
        let m = market_metrics(&s, &MarketBook::new(&s), &[]);
        assert_eq!(m.efficiency, Some(0.0));
        assert_eq!(
            (m.price_dispersion, m.share.clone(), m.anchor),
            (None, None, None)
        );
        let none = market_metrics(
            &unit_market(&[30, 20], &[40, 50]),
            &MarketBook::new(&unit_market(&[30, 20], &[40, 50])),
            &[],
        );
        assert_eq!(none.efficiency, None, "no gain from trade: no efficiency");
        let mut tally = MarketTally::default();
        tally.add(1, &m);
        tally.add(2, &none);
        assert_eq!(tally.episodes(), 2);
        assert_eq!(tally.efficiency().map(|e| (e.value, e.n)), Some((0.0, 1)));
    }

    #[test]
    fn a_seats_profit_share_trades_distance_and_malformed_turns_over_two_markets() {
        // The hand-worked market above: seat 2 (the seller of cost 40) sells at 50 to the
        // extra-marginal buyer (distance 10 below the range [60, 90]); seat 3 (cost 90) sells
        // at 95 (distance 5).
        let s = unit_market(&[100, 60], &[40, 90]);
        let mut book = MarketBook::new(&s);
        book.play(&s, 2, &quote(50), None);
        book.play(&s, 1, &Action::Accept, Some(1));
        book.play(&s, 3, &quote(95), None);
        book.play(&s, 0, &Action::Accept, Some(2));
        let m = market_metrics(&s, &book, &[]);
        let turn = |seat: usize, malformed: bool| -> MarketTurn {
            let mut t = serde_json::json!({
                "seat": seat, "slot": 0, "completion": {"text": "x"}, "parsed": {"format_ok": true}
            });
            if malformed {
                t["error"] = serde_json::json!({"kind": "format", "message": "unreadable"});
            }
            serde_json::from_value(t).unwrap()
        };
        let turns = [turn(2, true), turn(2, false), turn(3, true), turn(2, false)];
        let mut seller = MarketSeatTally::default();
        seller.add(1, &m, &book.trades, &turns, 2);
        // A second market where nothing traded: profit 0, no share, no trade, no distance.
        let idle = market_metrics(&s, &MarketBook::new(&s), &[]);
        seller.add(2, &idle, &[], &[turn(2, false)], 2);
        let f = seller.figures();
        assert_eq!(f.markets, 2);
        let value = |e: Option<Estimate>| e.map(|e| (e.value, e.n));
        assert_eq!(value(f.profit), Some((5.0, 2)), "(10 + 0) / 2");
        assert_eq!(
            value(f.share),
            Some((10.0 / 30.0, 1)),
            "only where surplus was realised"
        );
        assert_eq!(value(f.trade_rate), Some((0.5, 2)));
        assert_eq!(value(f.distance), Some((10.0, 1)), "its own trade only");
        assert_eq!(
            value(f.malformed),
            Some((0.25, 4)),
            "one of its four attempts"
        );
        assert_eq!(
            value(f.efficiency),
            Some((0.25, 2)),
            "the markets': (0.5 + 0) / 2"
        );
        let e = f.profit.unwrap();
        assert!(e.low <= e.value && e.value <= e.high);
    }
}
