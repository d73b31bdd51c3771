//! What a trader knows of a market besides its chat, as a table seat's
//! [`TableSeatState`](crate::table::TableSeatState) says it of a table: whose turn it is, the
//! standing quotes and the trades (every one announced to all), who is still trading, how it
//! ended — and the seat's own units left and next limit, which its own prompt tells it. Never
//! another trader's values, costs or thoughts (a trade's value and cost are its two traders'
//! own, so a trade is shown by its price). `dealgym serve`'s seat view hands it out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::OutcomeKind;
use crate::scenario::Side;

use super::episode::MarketEpisode;

/// A standing quote, as every trader sees it in the book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicQuote {
    /// The order id a take names (`[ACCEPT_DEAL] #id`).
    pub id: u32,
    /// The quoting trader's role.
    pub role: String,
    /// `buyer` (a bid) or `seller` (an ask).
    pub side: Side,
    /// In currency units (the book's cents / 100), as the prompts write prices.
    pub price: f64,
}

/// A trade, as every trader saw it announced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicTrade {
    /// The order taken.
    pub order: u32,
    pub buyer: String,
    pub seller: String,
    /// The taken order's price, in currency units.
    pub price: f64,
}

/// How the market ended, as every trader saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicMarketOutcome {
    pub kind: OutcomeKind,
    /// The role that ended it, where one did.
    pub by: Option<String>,
}

/// The market's public state, from one trader's side, with its own units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketSeatState {
    /// The seat's own role and side.
    pub role: String,
    pub side: Side,
    /// The role to move; none once the market has ended.
    pub to_move: Option<String>,
    /// The round being played (1-based) and the cap on rounds.
    pub round: u32,
    pub rounds: u32,
    /// Attempts at a turn so far (played or not).
    pub turns: usize,
    /// The seat's own units it may still trade, and its next unit's limit (its value or its
    /// cost, whole currency units; none once it has no unit left).
    pub units_left: usize,
    pub next_limit: Option<i64>,
    /// The standing quotes, oldest first.
    pub book: Vec<PublicQuote>,
    /// Every trade so far, in order.
    pub trades: Vec<PublicTrade>,
    /// The roles still in the market.
    pub present: Vec<String>,
    pub outcome: Option<PublicMarketOutcome>,
}

/// The public state of `episode` from `seat`'s side.
pub fn market_seat_state(episode: &MarketEpisode, seat: usize) -> MarketSeatState {
    let scenario = episode.scenario();
    let book = episode.book();
    let role = |s: usize| scenario.traders[s].role.clone();
    MarketSeatState {
        role: role(seat),
        side: scenario.traders[seat].side,
        to_move: episode.to_move().map(role),
        round: episode.round(),
        rounds: scenario.rules.rounds,
        turns: episode.turns().len(),
        units_left: book.units_left(scenario, seat),
        next_limit: book.next_limit(scenario, seat),
        book: book
            .standing()
            .map(|o| PublicQuote {
                id: o.id,
                role: role(o.seat),
                side: o.side,
                price: o.price as f64 / 100.0,
            })
            .collect(),
        trades: book
            .trades
            .iter()
            .map(|t| PublicTrade {
                order: t.order,
                buyer: role(t.buyer),
                seller: role(t.seller),
                price: t.price as f64 / 100.0,
            })
            .collect(),
        present: (0..scenario.traders.len())
            .filter(|&s| book.present[s])
            .map(role)
            .collect(),
        outcome: episode.outcome().map(|o| PublicMarketOutcome {
            kind: o.kind,
            by: o.by.map(role),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::{Completion, Prompts};
    use crate::market::{MarketOptions, MarketSetup};

    /// A quote and a take show in every seat's state as the book announced them, by price —
    /// never a trader's value or cost — and the takers' units go down by one.
    #[test]
    fn a_seat_state_shows_the_book_and_trades_and_no_ones_limits() {
        let m = Arc::new(crate::scenario::market::tests::unit_market(
            &[100, 90],
            &[40, 50],
        ));
        let prompts = Prompts::builtin();
        let setup = MarketSetup::new(&m, &MarketOptions::default(), 1, &prompts).unwrap();
        let mut e = MarketEpisode::new(m.clone(), setup, prompts).unwrap();
        let say = |text: &str| Completion {
            text: format!("Thought: t\nTalk: hi\nAction: {text}"),
            ..Completion::default()
        };
        let first = e.to_move().unwrap();
        e.step(first, say("[SUBMIT_DEAL] $70")).unwrap();
        let s = market_seat_state(&e, first);
        assert_eq!(s.book.len(), 1);
        assert_eq!((s.book[0].id, s.book[0].price), (1, 70.0));
        assert_eq!(s.book[0].role, m.traders[first].role);
        assert_eq!(
            (s.units_left, s.next_limit),
            (1, Some(m.traders[first].private.limits[0]))
        );
        // Whoever moves next passes on the quoter's side and takes it on the other.
        while let Some(seat) = e.to_move().filter(|_| e.book().trades.is_empty()) {
            let side = m.traders[seat].side;
            let action = if side == m.traders[first].side {
                "[REJECT_DEAL]"
            } else {
                "[ACCEPT_DEAL] #1"
            };
            e.step(seat, say(action)).unwrap();
        }
        let s = market_seat_state(&e, first);
        assert_eq!(s.trades.len(), 1);
        assert_eq!((s.trades[0].order, s.trades[0].price), (1, 70.0));
        assert_eq!((s.units_left, s.next_limit), (0, None));
        assert!(s.book.is_empty(), "the taken quote no longer stands");
        assert!(
            !s.present.contains(&m.traders[first].role),
            "out of units, out of the market"
        );
        let line = serde_json::to_string(&market_seat_state(&e, 0)).unwrap();
        for private in ["100", "90", "40", "50"] {
            assert!(!line.contains(&format!(":{private}")), "{line}");
        }
    }
}
