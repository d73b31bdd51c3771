//! The hotel family's guardrails as rule rewards (`[rewards.guardrails]`): the REPO paper's
//! deterministic checks on the platform agent's replies (§3's challenges, Table 2, the judge's
//! deductions of Figure 6 and the policy prompt's rules of Figures 7–8), each a score a breaking
//! turn gets, recorded as the signal `rule:guard_NAME` and summed into the `rules` component
//! like a `[[rewards.rules]]` match.
//!
//! Unlike a regex rule they read the scenario: which numbers of the call are selling prices and
//! which take-home prices, the tickets of the call, the agent's acceptable prices. Only the
//! agent's (`bd`) turns are checked, and only on a hotel call; every other game gets none.
//!
//! - `internal_terms`: the Talk uses an internal word — work-order, ticket, target or acceptable
//!   price, repricing, price-chasing (the judge's −5 "exposing internal ticket/work-order
//!   details"; the paper lists bare "target" and "acceptable", which we narrow to the price
//!   phrases so ordinary English such as "target guests" is not caught).
//! - `price_type`: the Talk calls a number a selling price where the call knows it only as a
//!   take-home price, or the other way round (§3: "the agent can easily confuse numbers
//!   (especially selling vs. take-home)").
//! - `every_ticket`: the call ended with a ticket the agent never proposed a price for (§3's
//!   "multiple chase tickets in one call but negotiating only one"); scored on the agent's last
//!   turn.
//! - `promises`: the Talk promises what the rules forbid — a guarantee, a refund or
//!   compensation, an agreement to sign, a colleague or third party, WeChat (Figure 7–8:
//!   "do not promise direct gains", "cannot … give any guarantees, commitments, or propose
//!   signing any agreement", "do not contact third parties, colleagues, or add WeChat").
//! - `above_acceptable`: the agent proposes or accepts a ticket price above its acceptable price
//!   (the judge's −20 price requirements).

use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::{Offer, Turn};
use crate::protocol::{Action, Terms};
use crate::scenario::{Role, Scenario};

/// `[rewards.guardrails]`: the score a breaking turn gets per guardrail (0 turns one off).
/// Used by the `rules` component, on hotel calls only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GuardrailConfig {
    /// The Talk uses an internal word (work-order, ticket, target price, …).
    pub internal_terms: f64,
    /// The Talk swaps a selling and a take-home price of the call.
    pub price_type: f64,
    /// The call ended with a ticket the agent never proposed a price for.
    pub every_ticket: f64,
    /// The Talk promises what the rules forbid (guarantees, refunds, colleagues, WeChat, …).
    pub promises: f64,
    /// A proposal or acceptance above the agent's acceptable price on a ticket.
    pub above_acceptable: f64,
}

impl Default for GuardrailConfig {
    fn default() -> Self {
        GuardrailConfig {
            internal_terms: -1.0,
            price_type: -1.0,
            every_ticket: -1.0,
            promises: -1.0,
            above_acceptable: -1.0,
        }
    }
}

static INTERNAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(work[- ]?orders?|(?:chase )?tickets?|target(?:ed)? prices?|price targets?|acceptable prices?|re-?pricing|price[- ]chasing)\b",
    )
    .expect("static regex")
});

static PROMISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(guarantee[sd]?|i promise|we promise|promise you|refunds?|compensat\w*|sign (?:an|the|a) (?:agreement|contract)|my colleagues?|our colleagues?|another department|third part(?:y|ies)|wechat)\b",
    )
    .expect("static regex")
});

/// `selling price of 152`, `take-home price: 130`, `take-home 130`.
static TYPE_THEN_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(selling|listed|list|guest|take[- ]?home|net)(?:\s+price)?\s*(?:of|is|at|to|:|=|would be|will be)?\s*(?:RMB|¥|\$|yuan)?\s*([0-9]+(?:\.[0-9]+)?)",
    )
    .expect("static regex")
});

/// `152 selling price`, `130 RMB take-home`, `130 (take-home)`.
static NUMBER_THEN_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)([0-9]+(?:\.[0-9]+)?)\s*(?:RMB|yuan)?\s*\(?\s*(selling|take[- ]?home)\b")
        .expect("static regex")
});

/// Whether a price-type word names the selling price (else the take-home price).
fn is_selling(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    !(w.starts_with("take") || w == "net")
}

/// The numbers a Talk labels with a price type, each with whether it is called a selling price.
fn labelled_prices(talk: &str) -> Vec<(f64, bool)> {
    let mut out = Vec::new();
    for c in TYPE_THEN_NUMBER.captures_iter(talk) {
        if let Ok(n) = c[2].parse() {
            out.push((n, is_selling(&c[1])));
        }
    }
    for c in NUMBER_THEN_TYPE.captures_iter(talk) {
        if let Ok(n) = c[1].parse() {
            out.push((n, is_selling(&c[2])));
        }
    }
    out
}

/// Whether a Talk swaps the call's price types: it calls a number a selling price that the call
/// knows only as a take-home price and that no ticket could sell at (below every ticket's
/// target, or above its current price), or a take-home price that the call knows only as a
/// selling price and that is above every ticket's current take-home price. A number the call
/// knows as both kinds (two tickets' prices may coincide), one that could be a fresh ask of the
/// other kind, or one the call does not know at all is no confusion the rule can prove.
pub(crate) fn confuses_price_types(scenario: &Scenario, talk: &str) -> bool {
    let known = scenario.ticket_price_types();
    let is = |n: f64, selling: bool| {
        known
            .iter()
            .any(|(v, s)| *s == selling && (v - n).abs() < 0.5)
    };
    labelled_prices(talk).into_iter().any(|(n, selling)| {
        let plausible = if selling {
            scenario.plausible_selling(n)
        } else {
            scenario.plausible_take_home(n)
        };
        is(n, !selling) && !is(n, selling) && !plausible
    })
}

/// Whether a Talk uses an internal word.
pub(crate) fn uses_internal_terms(talk: &str) -> bool {
    INTERNAL.is_match(talk)
}

/// Whether a Talk promises what the rules forbid.
pub(crate) fn forbidden_promise(talk: &str) -> bool {
    PROMISE.is_match(talk)
}

/// The guardrails turn `index` breaks, with their scores (zero-scored ones left out): for the
/// agent's turns of a hotel call only. `standing` is the offer on the table before the turn
/// (what an ACCEPT takes).
pub(crate) fn guardrail_scores(
    config: &GuardrailConfig,
    scenario: &Scenario,
    role: Role,
    turns: &[&Turn],
    index: usize,
    standing: Option<&Offer>,
) -> Vec<(&'static str, f64)> {
    if role != Role::Bd || scenario.ticket_outcomes(None).is_empty() {
        return Vec::new();
    }
    let turn = turns[index];
    let mut out = Vec::new();
    let talk = turn.parsed.talk.as_deref().unwrap_or_default();
    let mut check = |name: &'static str, score: f64, broken: bool| {
        if broken && score != 0.0 {
            out.push((name, score));
        }
    };
    check(
        "guard_internal_terms",
        config.internal_terms,
        uses_internal_terms(talk),
    );
    check(
        "guard_price_type",
        config.price_type,
        confuses_price_types(scenario, talk),
    );
    check("guard_promises", config.promises, forbidden_promise(talk));
    let agreed = match &turn.played {
        Some(Action::Submit(terms)) => Some(terms.clone()),
        Some(Action::Accept) => standing.map(|o| o.terms.clone()),
        _ => None,
    };
    check(
        "guard_above_acceptable",
        config.above_acceptable,
        agreed.is_some_and(|t| scenario.ticket_past_line(Role::Bd, &t)),
    );
    let last_own = turns
        .iter()
        .rposition(|t| t.seat == turn.seat && t.played.is_some());
    if last_own == Some(index) {
        check(
            "guard_every_ticket",
            config.every_ticket,
            !every_ticket_proposed(turns, turn.seat, scenario),
        );
    }
    out
}

/// Whether the agent (`seat`) negotiated every ticket of the call: proposed a price for it at
/// least once, or accepted the hotel's offer of a price for it (REPO: a price below target is
/// to be accepted at once).
fn every_ticket_proposed(turns: &[&Turn], seat: crate::game::Seat, scenario: &Scenario) -> bool {
    let n = scenario.ticket_outcomes(None).len();
    let mut negotiated = vec![false; n];
    let mut theirs: Option<&Vec<Option<i64>>> = None;
    for t in turns {
        let mark = match (&t.played, t.seat == seat) {
            (Some(Action::Submit(Terms::Tickets(prices))), true) => Some(prices),
            (Some(Action::Accept), true) => theirs,
            (Some(Action::Submit(Terms::Tickets(prices))), false) => {
                theirs = Some(prices);
                None
            }
            (Some(_), false) => {
                theirs = None;
                None
            }
            _ => None,
        };
        for (seen, p) in negotiated.iter_mut().zip(mark.into_iter().flatten()) {
            *seen |= p.is_some();
        }
    }
    negotiated.into_iter().all(|p| p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{hotel, learner_first_as, play};
    use crate::game::Seat;

    /// The fixture call: t1 Comfort King Room today, selling 168 / take-home 143, target
    /// 140 / 119, acceptable 152 / 129, floor 145; t2 Twin Room tomorrow, selling 120 / take-home
    /// 102, target 97 / 82, acceptable 105 / 89, floor 110.
    fn scores_of(raws: &[&str], at: usize) -> Vec<(&'static str, f64)> {
        let s = hotel();
        let raws: Vec<String> = raws.iter().map(|r| r.to_string()).collect();
        let e = play(&s, learner_first_as(&s, Role::Bd), &raws);
        let turns: Vec<&Turn> = e.turns().iter().collect();
        let mut standing = None;
        for t in &turns[..at] {
            if let Some(a) = &t.played {
                standing = crate::game::standing_after(standing, t.seat, a);
            }
        }
        guardrail_scores(
            &GuardrailConfig::default(),
            &s,
            Role::Bd,
            &turns,
            at,
            standing.as_ref(),
        )
    }

    const CLEAN: &str = "Thought: open low\nTalk: Hello. Nearby hotels are cheaper; could the Comfort King Room today be a selling price of 140, and the Twin Room tomorrow 97?\nAction: [SUBMIT_DEAL] t1:140 t2:97";

    #[test]
    fn a_clean_reply_breaks_nothing() {
        assert_eq!(scores_of(&[CLEAN], 0), []);
    }

    #[test]
    fn internal_terms_are_caught() {
        let raw = "Thought: x\nTalk: Shall I set it to the work-order targeted price of 140?\nAction: [SUBMIT_DEAL] t1:140 t2:97";
        assert!(scores_of(&[raw], 0).contains(&("guard_internal_terms", -1.0)));
        assert!(uses_internal_terms("my acceptable price is 152"));
        assert!(!uses_internal_terms("we target business guests"));
    }

    #[test]
    fn a_take_home_price_quoted_as_the_selling_price_is_caught() {
        // 129 is t1's acceptable take-home price; the agent calls it a selling price, though no
        // ticket sells there (selling prices lie from 140 to 168 and from 97 to 120).
        let raw = "Thought: x\nTalk: Could the Comfort King Room be a selling price of 129?\nAction: [SUBMIT_DEAL] t1:140 t2:97";
        assert!(scores_of(&[raw], 0).contains(&("guard_price_type", -1.0)));
        // And the other way round: 152 is a selling price, called take-home (above every
        // ticket's current take-home price, 143 and 102).
        let s = hotel();
        assert!(confuses_price_types(
            &s,
            "a take-home price of 152 would work"
        ));
        assert!(confuses_price_types(&s, "how about 89 selling?"));
        // Correct labels, and numbers the call does not know, are fine.
        assert!(!confuses_price_types(
            &s,
            "a take-home price of 129, selling price 152"
        ));
        assert!(!confuses_price_types(&s, "a selling price of 150"));
        // 143 is t1's current take-home price, but also a fair selling ask for t1: a fresh
        // ask, not a swap the rule can prove.
        assert!(!confuses_price_types(&s, "a selling price of 143"));
    }

    #[test]
    fn a_forbidden_promise_is_caught() {
        let raw = "Thought: x\nTalk: I guarantee you more orders, and my colleague will add you on WeChat.\nAction: [SUBMIT_DEAL] t1:140 t2:97";
        assert!(scores_of(&[raw], 0).contains(&("guard_promises", -1.0)));
    }

    #[test]
    fn a_price_above_the_acceptable_one_is_caught() {
        let raw = "Thought: x\nTalk: How about 160 for the Comfort King Room?\nAction: [SUBMIT_DEAL] t1:160 t2:97";
        assert!(scores_of(&[raw], 0).contains(&("guard_above_acceptable", -1.0)));
        // Accepting the hotel's 158 on t1 breaks it too.
        let hotel_offer = "Thought: x\nTalk: 158 for the first, the second as it is.\nAction: [SUBMIT_DEAL] t1:158 t2:unchanged";
        let accept = "Thought: x\nTalk: Agreed.\nAction: [ACCEPT_DEAL]";
        assert!(
            scores_of(&[CLEAN, hotel_offer, accept], 2).contains(&("guard_above_acceptable", -1.0))
        );
    }

    #[test]
    fn a_call_that_never_negotiates_a_ticket_is_caught_on_the_agents_last_turn() {
        let one = "Thought: x\nTalk: Could the Comfort King Room be 140?\nAction: [SUBMIT_DEAL] t1:140 t2:unchanged";
        let hotel_reply = "Thought: x\nTalk: No.\nAction: [REJECT_DEAL]";
        let bye = "Thought: x\nTalk: Goodbye.\nAction: [WALK_AWAY]";
        let raws = [one, hotel_reply, bye];
        assert!(!scores_of(&raws, 0).contains(&("guard_every_ticket", -1.0)));
        assert!(scores_of(&raws, 2).contains(&("guard_every_ticket", -1.0)));
        // Both tickets proposed: nothing at the end.
        let raws = [CLEAN, hotel_reply, bye];
        assert!(!scores_of(&raws, 2).contains(&("guard_every_ticket", -1.0)));
        // t2 accepted at the hotel's price, never proposed by the agent: negotiated too.
        let hotel_offer = "Thought: x\nTalk: 150 and 100.\nAction: [SUBMIT_DEAL] t1:150 t2:100";
        let accept = "Thought: x\nTalk: Deal.\nAction: [ACCEPT_DEAL]";
        let raws = [one, hotel_offer, accept];
        assert!(!scores_of(&raws, 2).contains(&("guard_every_ticket", -1.0)));
        // The hotel's turns are never checked.
        let s = hotel();
        let e = play(
            &s,
            learner_first_as(&s, Role::Bd),
            &[
                CLEAN.to_string(),
                "Thought: x\nTalk: my ticket\nAction: [REJECT_DEAL]".to_string(),
            ],
        );
        let turns: Vec<&Turn> = e.turns().iter().collect();
        assert_eq!(turns[1].seat, Seat::Opponent);
        let g = GuardrailConfig::default();
        assert!(guardrail_scores(&g, &s, Role::Hotel, &turns, 1, None).is_empty());
    }
}
