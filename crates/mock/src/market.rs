//! The mock's seat in a market (issue 45): it reads its side and its own limits from its system
//! prompt (`prompts/market.j2`), the standing quotes and, in a multi-unit market, its next
//! unit's limit from the turn's message (`prompts/market_turn.j2`), and answers with the
//! truthful trader's move ([`truthful_move`], the one home of that policy): a valid turn in the
//! grammar.

use std::sync::LazyLock;

use regex::Regex;

use dealgym::game::{Message, MessageRole};
use dealgym_core::negotiator::market::truthful_move;
use dealgym_core::scenario::Side;

static WHO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"You are (\S+), a (buyer|seller) in a market for").expect("static regex")
});
static FIRST_UNIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^- unit 1: (\d+)$").expect("static regex"));
static NEXT_UNIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"your next unit's (?:worth|cost) is (\d+)").expect("static regex")
});
static QUOTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"#(\d+) (\S+) (bid|ask) (\d+(?:\.\d{2})?)").expect("static regex")
});

/// The mock's turn at a market seat, or `None` when the chat is not a market trader's.
pub fn respond_market(messages: &[Message]) -> Option<String> {
    let system = messages.iter().find(|m| m.role == MessageRole::System)?;
    let who = WHO.captures(&system.content)?;
    let side = if &who[2] == "buyer" {
        Side::Buyer
    } else {
        Side::Seller
    };
    let last = messages.last().filter(|m| m.role == MessageRole::User)?;
    let limit: i64 = match NEXT_UNIT.captures(&last.content) {
        Some(c) => c[1].parse().ok()?,
        None => FIRST_UNIT.captures(&system.content)?[1].parse().ok()?,
    };
    let standing = last
        .content
        .lines()
        .find(|l| l.starts_with("Standing quotes:"))
        .unwrap_or("");
    let wanted = match side {
        Side::Buyer => "ask",
        Side::Seller => "bid",
    };
    let best = QUOTE
        .captures_iter(standing)
        .filter(|c| &c[3] == wanted)
        .filter_map(|c| {
            let cents = (c[4].parse::<f64>().ok()? * 100.0).round() as i64;
            Some((c[1].parse::<u32>().ok()?, cents))
        })
        .reduce(|best, q| match side {
            Side::Buyer if q.1 < best.1 => q,
            Side::Seller if q.1 > best.1 => q,
            _ => best,
        });
    let (talk, action) = truthful_move(side, limit, best);
    Some(format!(
        "Thought: I trade at my limit or better.\nTalk: {talk}\nAction: {action}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use dealgym_core::engine::drive_now;
    use dealgym_core::game::{Completion, Prompts};
    use dealgym_core::market::{MarketEpisode, MarketOptions, MarketSetup};
    use dealgym_core::negotiator::market::{MarketRule, MarketTraders};
    use dealgym_core::scenario::generate::generate_markets;

    /// The mock at buyer_1 of real markets (unit and multi-unit), the others ZI-C: every one of
    /// its turns is read and played, and it trades.
    #[test]
    fn the_mock_plays_a_buyer_seat_with_valid_turns() {
        let prompts = Prompts::builtin();
        let mut traded = 0;
        for m in generate_markets(None, Some(12)) {
            let setup = MarketSetup::new(&m, &MarketOptions::default(), 3, &prompts).unwrap();
            let mut e = MarketEpisode::new(Arc::new(m.clone()), setup, prompts.clone()).unwrap();
            let mut rules = vec![Some(MarketRule::Zic); m.traders.len()];
            rules[0] = None;
            let mut traders = MarketTraders(rules);
            while let Some(seat) = drive_now(&mut e, &mut traders).unwrap() {
                assert_eq!(seat, 0);
                let text = respond_market(e.view(0)).expect("a market seat");
                e.step(
                    0,
                    Completion {
                        text,
                        ..Completion::default()
                    },
                )
                .unwrap();
            }
            let mine: Vec<_> = e.turns().iter().filter(|t| t.seat == 0).collect();
            assert!(!mine.is_empty());
            assert!(mine.iter().all(|t| t.error.is_none()), "{:?}", mine);
            traded += usize::from(e.book().trades.iter().any(|t| t.buyer == 0));
        }
        assert!(traded >= 6, "{traded} of 12");
    }
}
