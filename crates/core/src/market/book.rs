//! The market's order book: the one home of "what a move does in a market" — a quote (a
//! buyer's bid, a seller's ask) announced to all with an id, a take of a standing quote of the
//! other side that makes a binding trade at the quote's price, a pass, a walk-away — and of
//! when trade is still possible.
//!
//! A move is the grammar's [`Action`]: `SUBMIT` with a price is a quote (its side is the
//! trader's), `ACCEPT` naming an order id is a take, `REJECT` a pass, `TALK` a message,
//! `WALK_AWAY` leaving. Each trader has at most one standing quote: a new one replaces it.
//! A trade uses the buyer's next unit (its highest remaining value) and the seller's next unit
//! (its lowest remaining cost); after a trade both traders' standing quotes are withdrawn (their
//! next unit has another limit), and a trader with no units left leaves the market. Prices are
//! in cents, as [`Terms::Price`] holds them; limits are whole currency units.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{Action, Terms, TurnError};
use crate::scenario::{MarketScenario, Side};

/// A quote in the book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// 1-based, in the order quotes were made.
    pub id: u32,
    /// The quoting seat.
    pub seat: usize,
    pub side: Side,
    /// In cents.
    pub price: i64,
    /// Still standing: not taken, replaced or withdrawn.
    pub live: bool,
}

/// A binding trade of one unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trade {
    pub buyer: usize,
    pub seller: usize,
    /// The order taken.
    pub order: u32,
    /// The seat that took it.
    pub taker: usize,
    /// In cents: the taken order's price.
    pub price: i64,
    /// The buyer's value of the unit it bought (whole units).
    pub value: i64,
    /// The seller's cost of the unit it sold (whole units).
    pub cost: i64,
}

impl Trade {
    /// The buyer's gain (whole currency units).
    pub fn buyer_surplus(&self) -> f64 {
        self.value as f64 - self.price as f64 / 100.0
    }

    /// The seller's gain (whole currency units).
    pub fn seller_surplus(&self) -> f64 {
        self.price as f64 / 100.0 - self.cost as f64
    }
}

/// The book and who is still trading.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MarketBook {
    pub orders: Vec<Order>,
    pub trades: Vec<Trade>,
    /// Units each seat has traded.
    pub traded: Vec<usize>,
    /// Whether each seat is still in the market (not walked away, units left).
    pub present: Vec<bool>,
}

impl MarketBook {
    pub fn new(scenario: &MarketScenario) -> MarketBook {
        let n = scenario.traders.len();
        MarketBook {
            orders: Vec::new(),
            trades: Vec::new(),
            traded: vec![0; n],
            present: vec![true; n],
        }
    }

    /// The limit of `seat`'s next unit (whole units), `None` once it has none left.
    pub fn next_limit(&self, scenario: &MarketScenario, seat: usize) -> Option<i64> {
        scenario.traders[seat]
            .private
            .limits
            .get(self.traded[seat])
            .copied()
    }

    /// The units `seat` may still trade.
    pub fn units_left(&self, scenario: &MarketScenario, seat: usize) -> usize {
        scenario.traders[seat].private.limits.len() - self.traded[seat]
    }

    pub fn order(&self, id: u32) -> Option<&Order> {
        id.checked_sub(1).and_then(|i| self.orders.get(i as usize))
    }

    /// The standing quotes, oldest first.
    pub fn standing(&self) -> impl Iterator<Item = &Order> {
        self.orders.iter().filter(|o| o.live)
    }

    /// The best standing quote of `side` (the highest bid, the lowest ask; the oldest of equals).
    pub fn best(&self, side: Side) -> Option<&Order> {
        self.standing()
            .filter(|o| o.side == side)
            .reduce(|best, o| match side {
                Side::Buyer if o.price > best.price => o,
                Side::Seller if o.price < best.price => o,
                _ => best,
            })
    }

    /// Whether a trade is still possible: a buyer and a seller both still in the market.
    pub fn open(&self, scenario: &MarketScenario) -> bool {
        [Side::Buyer, Side::Seller]
            .iter()
            .all(|&side| scenario.seats_on(side).any(|s| self.present[s]))
    }

    /// Whether `action` (taking `order` where it is an ACCEPT; talking to `to` where that is
    /// set) is allowed to `seat` now.
    pub fn check(
        &self,
        scenario: &MarketScenario,
        seat: usize,
        action: &Action,
        order: Option<u32>,
        to: Option<usize>,
    ) -> Result<(), TurnError> {
        if let Some(to) = to {
            if to == seat || to >= self.present.len() || !self.present[to] {
                return Err(TurnError::illegal(
                    "a private message goes to another trader still in the market",
                ));
            }
        }
        match action {
            Action::Submit(terms) => match quote_price(terms) {
                Some(p) if p > 0 && (p as f64) < crate::limits::MAX_AMOUNT * 100.0 => Ok(()),
                _ => Err(TurnError::illegal(
                    "a quote is one positive price: `[SUBMIT_DEAL] price: 45`",
                )),
            },
            Action::Accept => {
                let id = order.unwrap_or(0);
                let Some(o) = self.order(id) else {
                    return Err(TurnError::illegal(format!(
                        "there is no order #{id} in the book"
                    )));
                };
                if o.seat == seat {
                    return Err(TurnError::illegal(format!("order #{id} is your own quote")));
                }
                if !o.live {
                    return Err(TurnError::illegal(format!(
                        "order #{id} no longer stands (taken, replaced or withdrawn)"
                    )));
                }
                if o.side == scenario.traders[seat].side {
                    return Err(TurnError::illegal(format!(
                        "order #{id} is another {}'s quote: you take quotes of the other side",
                        o.side.name()
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// What regulation makes of a regulated `seat`'s move (the engine's one home,
    /// `engine::regulate`): a quote or a take at a price that would make its next
    /// unit's trade a loss becomes a pass. The loss is measured on the price in cents
    /// against the unit's limit.
    pub fn regulate(
        &self,
        scenario: &MarketScenario,
        seat: usize,
        on: bool,
        action: &Action,
        order: Option<u32>,
    ) -> Option<MarketRegulation> {
        let limit = self.next_limit(scenario, seat)?;
        let side = scenario.traders[seat].side;
        let (replacement, price) = crate::engine::regulate(
            on,
            action,
            |action| match action {
                Action::Submit(terms) => quote_price(terms),
                Action::Accept => self.order(order?).map(|o| o.price),
                _ => None,
            },
            |&price| is_loss(side, limit, price),
        )?;
        Some(MarketRegulation {
            original: action.clone(),
            replacement,
            price,
            limit,
        })
    }

    /// Play `action` (already checked and regulated) as `seat`'s move: the trade it made, if
    /// any, and the id of the quote it made, if any.
    pub fn play(
        &mut self,
        scenario: &MarketScenario,
        seat: usize,
        action: &Action,
        order: Option<u32>,
    ) -> (Option<u32>, Option<Trade>) {
        match action {
            Action::Submit(terms) => {
                let price = quote_price(terms).expect("checked: a quote has a price");
                self.withdraw(seat);
                let id = self.orders.len() as u32 + 1;
                self.orders.push(Order {
                    id,
                    seat,
                    side: scenario.traders[seat].side,
                    price,
                    live: true,
                });
                (Some(id), None)
            }
            Action::Accept => {
                let id = order.expect("checked: a take names its order");
                let o = self.order(id).expect("checked: the order stands").clone();
                let (buyer, seller) = match o.side {
                    Side::Buyer => (o.seat, seat),
                    Side::Seller => (seat, o.seat),
                };
                let trade = Trade {
                    buyer,
                    seller,
                    order: id,
                    taker: seat,
                    price: o.price,
                    value: self.next_limit(scenario, buyer).unwrap_or(0),
                    cost: self.next_limit(scenario, seller).unwrap_or(0),
                };
                for s in [buyer, seller] {
                    self.withdraw(s);
                    self.traded[s] += 1;
                    if self.next_limit(scenario, s).is_none() {
                        self.present[s] = false;
                    }
                }
                self.trades.push(trade.clone());
                (None, Some(trade))
            }
            Action::WalkAway => {
                self.withdraw(seat);
                self.present[seat] = false;
                (None, None)
            }
            Action::Reject | Action::Talk => (None, None),
        }
    }

    /// Withdraw `seat`'s standing quote.
    fn withdraw(&mut self, seat: usize) {
        for o in self.orders.iter_mut().filter(|o| o.seat == seat) {
            o.live = false;
        }
    }
}

/// A regulated seat's move that was replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketRegulation {
    pub original: Action,
    pub replacement: Action,
    /// The price (cents) it would have traded at.
    pub price: i64,
    /// Its next unit's limit (whole units).
    pub limit: i64,
}

/// The price of a quote, in cents.
pub(crate) fn quote_price(terms: &Terms) -> Option<i64> {
    match terms {
        Terms::Price(cents) => Some(*cents),
        _ => None,
    }
}

/// Whether trading a unit of limit `limit` (whole units) at `price` (cents) is a loss for a
/// trader on `side`: a buyer paying more than its value, a seller selling below its cost.
pub(crate) fn is_loss(side: Side, limit: i64, price: i64) -> bool {
    match side {
        Side::Buyer => price > limit * 100,
        Side::Seller => price < limit * 100,
    }
}

/// Whether trading a unit of limit `limit` at `price` (cents) gains a trader on `side`
/// something: neither a loss ([`is_loss`]) nor a trade at the limit itself.
pub(crate) fn gains(side: Side, limit: i64, price: i64) -> bool {
    !is_loss(side, limit, price) && price != limit * 100
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::market::tests::{market, unit_market};
    use crate::scenario::MarketVariant;

    fn quote(p: i64) -> Action {
        Action::Submit(Terms::Price(p * 100))
    }

    #[test]
    fn a_bid_taken_makes_a_trade_and_both_unit_traders_leave() {
        let s = unit_market(&[100, 80], &[50, 70]);
        let mut b = MarketBook::new(&s);
        assert_eq!(b.play(&s, 0, &quote(60), None), (Some(1), None));
        assert_eq!(b.check(&s, 2, &Action::Accept, Some(1), None), Ok(()));
        let (_, trade) = b.play(&s, 2, &Action::Accept, Some(1));
        let trade = trade.unwrap();
        assert_eq!((trade.buyer, trade.seller, trade.price), (0, 2, 6000));
        assert_eq!((trade.value, trade.cost), (100, 50));
        assert_eq!(trade.buyer_surplus() + trade.seller_surplus(), 50.0);
        assert_eq!(b.present, vec![false, true, false, true]);
        assert!(b.open(&s));
        assert!(b.check(&s, 3, &Action::Accept, Some(1), None).is_err());
        // The other two trade: nobody is left to trade with.
        b.play(&s, 3, &quote(75), None);
        b.play(&s, 1, &Action::Accept, Some(2));
        assert!(!b.open(&s));
    }

    #[test]
    fn a_take_of_ones_own_side_or_own_quote_is_illegal() {
        let s = unit_market(&[100, 80], &[50, 70]);
        let mut b = MarketBook::new(&s);
        b.play(&s, 0, &quote(60), None);
        assert!(b.check(&s, 0, &Action::Accept, Some(1), None).is_err());
        let e = b.check(&s, 1, &Action::Accept, Some(1), None).unwrap_err();
        assert!(e.message.contains("other side"), "{e:?}");
        assert!(b.check(&s, 2, &Action::Accept, Some(9), None).is_err());
        // A new quote replaces the old one.
        b.play(&s, 0, &quote(65), None);
        assert!(b.check(&s, 2, &Action::Accept, Some(1), None).is_err());
        assert_eq!(b.best(Side::Buyer).map(|o| o.id), Some(2));
    }

    #[test]
    fn a_regulated_seat_is_refused_a_loss_making_trade() {
        let s = unit_market(&[100, 80], &[50, 70]);
        let mut b = MarketBook::new(&s);
        b.play(&s, 2, &quote(120), None);
        // Buyer 0 values the unit at 100: taking the ask at 120 loses, so it becomes a pass.
        let r = b.regulate(&s, 0, true, &Action::Accept, Some(1)).unwrap();
        assert_eq!(r.replacement, Action::Reject);
        assert_eq!((r.price, r.limit), (12000, 100));
        assert_eq!(b.regulate(&s, 0, false, &Action::Accept, Some(1)), None);
        // A bid above its value is a loss if taken: regulated too; one at its value stands.
        assert!(b.regulate(&s, 0, true, &quote(101), None).is_some());
        assert_eq!(b.regulate(&s, 0, true, &quote(100), None), None);
        // A seller may not ask below its cost.
        assert!(b.regulate(&s, 3, true, &quote(69), None).is_some());
    }

    #[test]
    fn walking_away_withdraws_the_quote_and_can_close_the_market() {
        let s = unit_market(&[100, 80], &[50, 70]);
        let mut b = MarketBook::new(&s);
        b.play(&s, 0, &quote(60), None);
        b.play(&s, 0, &Action::WalkAway, None);
        assert!(b.check(&s, 2, &Action::Accept, Some(1), None).is_err());
        assert!(b.open(&s));
        b.play(&s, 1, &Action::WalkAway, None);
        assert!(!b.open(&s), "no buyer is left");
    }

    #[test]
    fn a_multi_unit_trader_trades_its_units_in_order() {
        let s = market(
            MarketVariant::MultiUnit,
            vec![vec![100, 70], vec![90]],
            vec![vec![20, 60], vec![30]],
        );
        let mut b = MarketBook::new(&s);
        b.play(&s, 2, &quote(50), None);
        let (_, t) = b.play(&s, 0, &Action::Accept, Some(1));
        assert_eq!(t.map(|t| (t.value, t.cost)), Some((100, 20)));
        assert!(b.present[0] && b.present[2], "each has a unit left");
        assert_eq!(b.next_limit(&s, 0), Some(70));
        assert_eq!(b.next_limit(&s, 2), Some(60));
        b.play(&s, 2, &quote(65), None);
        let (_, t) = b.play(&s, 0, &Action::Accept, Some(2));
        assert_eq!(t.map(|t| (t.value, t.cost)), Some((70, 60)));
        assert!(!b.present[0] && !b.present[2]);
    }
}
