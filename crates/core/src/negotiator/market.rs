//! The scripted market traders (`rule:zic`, `rule:sniper`, `rule:truthful` at a market seat):
//! baselines from the double-auction literature that read only their own seat's limits, the
//! public book and the round, and write a normal completion the engine parses.
//!
//! - **ZI-C** (Gode & Sunder 1993, JPE 101(1), "zero-intelligence constrained"): each turn a
//!   price drawn uniformly from what cannot lose — a buyer `U{1..value}`, a seller
//!   `U{cost..max(cost, 200)}` (their markets' price ceiling of 200) — from the episode's
//!   seeded RNG (the seed, the seat and the turn: replay draws the same). A drawn price that
//!   crosses the best standing quote of the other side takes that quote (their markets' rule:
//!   a crossing bid trades at the standing ask); otherwise it is quoted.
//! - **Sniper** (after Kaplan's winning strategy in the Santa Fe double-auction tournament,
//!   Rust, Miller & Palmer 1993): passes, letting the others quote, and takes the best quote of
//!   the other side when it gains by it and either the market is in its last two rounds or the
//!   spread between the best bid and the best ask is under 10 % of the ask.
//! - **Truthful**: takes the best quote of the other side when it gains by it, otherwise quotes
//!   its own limit (a bid of its value, an ask of its cost).

use std::convert::Infallible;
use std::future::{ready, Future};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::engine::Players;
use crate::game::Completion;
use crate::market::{gains, is_loss, MarketEpisode, Order};
use crate::scenario::Side;
use crate::table::TableError;

/// Gode & Sunder's price ceiling: a ZI-C seller asks at most this (or its cost, if higher).
const ZIC_CEILING: i64 = 200;

/// A scripted trader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarketRule {
    Zic,
    Sniper,
    Truthful,
}

impl MarketRule {
    pub const ALL: [MarketRule; 3] = [MarketRule::Zic, MarketRule::Sniper, MarketRule::Truthful];

    /// The rule `rule:NAME` names at a market seat.
    pub fn from_name(name: &str) -> Option<MarketRule> {
        match name.strip_prefix("rule:").unwrap_or(name) {
            "zic" => Some(MarketRule::Zic),
            "sniper" => Some(MarketRule::Sniper),
            "truthful" => Some(MarketRule::Truthful),
            _ => None,
        }
    }

    /// The rule a player spec names at a market seat (`rule:zic`, `rule:sniper`,
    /// `rule:truthful`), as a run's `--seat ROLE=SPEC` and a Python game's `players` read it;
    /// `None` for any other spec.
    pub fn from_spec(spec: &str) -> Option<MarketRule> {
        spec.trim()
            .strip_prefix("rule:")
            .and_then(MarketRule::from_name)
    }

    pub fn name(self) -> &'static str {
        match self {
            MarketRule::Zic => "zic",
            MarketRule::Sniper => "sniper",
            MarketRule::Truthful => "truthful",
        }
    }

    /// Its player spec, as records name it (`rule:zic`, …).
    pub fn spec(self) -> &'static str {
        match self {
            MarketRule::Zic => "rule:zic",
            MarketRule::Sniper => "rule:sniper",
            MarketRule::Truthful => "rule:truthful",
        }
    }

    /// The rule's turn at `seat` of `episode` (the seat to move).
    pub fn completion(self, episode: &MarketEpisode, seat: usize) -> Completion {
        let scenario = episode.scenario();
        let book = episode.book();
        let side = scenario.traders[seat].side;
        let Some(limit) = book.next_limit(scenario, seat) else {
            return text((
                "I have nothing left to trade.".into(),
                "[REJECT_DEAL]".into(),
            ));
        };
        // The best standing quote of the other side.
        let other = book.best(side.other());
        let take = |o: &Order| text(take_move(o.id));
        let quote = |price: i64| text(quote_move(side, price));
        match self {
            MarketRule::Zic => {
                let mut rng = ChaCha8Rng::seed_from_u64(episode.setup().seed);
                rng.set_stream(((seat as u64) << 32) | episode.turns().len() as u64);
                let price = match side {
                    Side::Buyer => rng.random_range(1..=limit),
                    Side::Seller => rng.random_range(limit..=limit.max(ZIC_CEILING)),
                };
                // A standing quote the drawn price would not lose on crosses it.
                let crosses = other.filter(|o| !is_loss(side, price, o.price));
                match crosses {
                    Some(o) => take(o),
                    None => quote(price),
                }
            }
            MarketRule::Sniper => {
                let late = episode.round() + 1 >= scenario.rules.rounds;
                let narrow = match (book.best(Side::Buyer), book.best(Side::Seller)) {
                    (Some(bid), Some(ask)) => (ask.price - bid.price) * 10 < ask.price,
                    _ => false,
                };
                match other.filter(|o| gains(side, limit, o.price) && (late || narrow)) {
                    Some(o) => take(o),
                    None => text(("I wait.".into(), "[REJECT_DEAL]".into())),
                }
            }
            MarketRule::Truthful => {
                text(truthful_move(side, limit, other.map(|o| (o.id, o.price))))
            }
        }
    }
}

/// The truthful trader's move — the one home of its policy, for `rule:truthful` and the mock's
/// market seat: take the other side's best quote (`(id, cents)`) when the trader gains by it,
/// else quote its own limit (whole units). Its talk and action lines.
pub fn truthful_move(side: Side, limit: i64, best_other: Option<(u32, i64)>) -> (String, String) {
    match best_other.filter(|&(_, price)| gains(side, limit, price)) {
        Some((id, _)) => take_move(id),
        None => quote_move(side, limit),
    }
}

/// Taking quote `id`: its talk and action lines.
fn take_move(id: u32) -> (String, String) {
    (
        "That quote works for me.".to_string(),
        crate::table::accept_line(id),
    )
}

/// Quoting `price` (whole units) on `side`: its talk and action lines.
fn quote_move(side: Side, price: i64) -> (String, String) {
    let word = match side {
        Side::Buyer => "bid",
        Side::Seller => "ask",
    };
    (
        format!("I {word} {price}."),
        format!("[SUBMIT_DEAL] price: {price}"),
    )
}

fn text((talk, action): (String, String)) -> Completion {
    Completion {
        text: format!("Thought: scripted trader.\nTalk: {talk}\nAction: {action}"),
        ..Completion::default()
    }
}

/// The scripted traders of a market: a rule at each seat that has one; the others are played
/// from outside (a model, a client).
pub struct MarketTraders(pub Vec<Option<MarketRule>>);

impl Players<MarketEpisode> for MarketTraders {
    type Answer = Completion;
    type Failure = Infallible;
    type Error = TableError;

    fn in_process(&self, seat: usize) -> bool {
        self.0.get(seat).is_some_and(Option::is_some)
    }

    fn ask<'a>(
        &'a self,
        episode: &'a MarketEpisode,
        seat: usize,
    ) -> impl Future<Output = Result<Completion, Infallible>> + 'a {
        let rule = self.0[seat].expect("asked only of a scripted seat");
        ready(Ok(rule.completion(episode, seat)))
    }

    fn take(
        &mut self,
        episode: &mut MarketEpisode,
        seat: usize,
        answer: Completion,
    ) -> Result<(), TableError> {
        episode.step(seat, answer).map(drop)
    }

    fn fail(
        &mut self,
        _: &mut MarketEpisode,
        _: usize,
        failure: Infallible,
    ) -> Result<(), TableError> {
        match failure {}
    }
}
