//! The market's prompts (`prompts/market.j2`, `prompts/market_turn.j2`, our own words, rendered
//! by the episode's [`Prompts`], so `--prompts-dir` replaces them): a trader's system prompt
//! holds the public rules — every ending rule among them — and only its own values or costs;
//! the message before each of its turns holds the others' public talk, talk addressed to it,
//! quotes and trades since its last turn, and the standing quotes. Never another trader's
//! limits or thoughts.

use crate::game::{PromptError, Prompts};
use crate::protocol::{format_cents, TurnFormat};
use crate::scenario::{MarketScenario, MarketVariant, Side};

use super::episode::MarketEpisode;

fn format_name(format: TurnFormat) -> &'static str {
    match format {
        TurnFormat::Tagged => "tagged",
        TurnFormat::Xml => "xml",
        TurnFormat::Tools => "tools",
    }
}

fn roles(scenario: &MarketScenario, side: Side) -> String {
    scenario
        .seats_on(side)
        .map(|s| scenario.traders[s].role.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The system prompt of `seat`.
pub(crate) fn system_prompt(
    prompts: &Prompts,
    scenario: &MarketScenario,
    seat: usize,
    regulated: bool,
    format: TurnFormat,
) -> Result<String, PromptError> {
    let trader = &scenario.traders[seat];
    let input = serde_json::json!({
        "role": trader.role,
        "side": trader.side.name(),
        "good": scenario.good,
        "buyers": scenario.seats_on(Side::Buyer).count(),
        "sellers": scenario.seats_on(Side::Seller).count(),
        "buyer_roles": roles(scenario, Side::Buyer),
        "seller_roles": roles(scenario, Side::Seller),
        "units": trader.private.limits.len(),
        "limits": trader.private.limits,
        "regulated": regulated,
        "multi": scenario.variant == MarketVariant::MultiUnit,
        "rounds": scenario.rules.rounds,
        "format": format_name(format),
    });
    prompts.render_input("market.j2", &input)
}

/// The message before `seat`'s turn, with `news` since its last one.
pub(crate) fn turn_prompt(
    episode: &MarketEpisode,
    seat: usize,
    news: &[String],
) -> Result<String, PromptError> {
    let scenario = episode.scenario();
    let book = episode.book();
    let quotes: Vec<serde_json::Value> = book
        .standing()
        .map(|o| {
            serde_json::json!({
                "id": o.id,
                "who": scenario.traders[o.seat].role,
                "kind": match o.side { Side::Buyer => "bid", Side::Seller => "ask" },
                "price": format_cents(o.price),
            })
        })
        .collect();
    let left = book.units_left(scenario, seat);
    let input = serde_json::json!({
        "news": news,
        "book": quotes,
        "round": episode.round(),
        "rounds": scenario.rules.rounds,
        "side": scenario.traders[seat].side.name(),
        "multi": episode.multi_unit(),
        "units_left": left,
        "next_limit": book.next_limit(scenario, seat),
    });
    episode.prompts().render_input("market_turn.j2", &input)
}
