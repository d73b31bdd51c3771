//! REPO's procedure rules for the hotel family's agent as rule rewards (`[rewards.procedure]`):
//! what its policy prompt tells the platform's agent to do over a call (Figure 7, the system
//! prompt, and Figure 8, the user prompt), checked on the agent's moves with the state of the
//! call they need — the hotel's refusals so far, the agent's own last ask per ticket, the
//! ticket's target price. Each is a score a breaking turn gets, recorded as the signal
//! `rule:procedure_NAME` and summed into the `rules` component like a `[[rewards.rules]]` match
//! or a guardrail (`guardrails.rs`, which checks what a single reply says).
//!
//! - `four_refusals`: "if they continuously give negative replies—four consecutive turns of
//!   refusal with no intent to negotiate—end the call" (Figure 7). A refusal is a hotel move
//!   that is a `[REJECT_DEAL]`: a counter-offer is an intent to negotiate, and a `[TALK]` (the
//!   XML spelling's turn with no offer) is conversation, not a refusal; either ends the run of
//!   refusals. The agent's move after the fourth refusal in a row (or any later one, while the
//!   run lasts) that is not `[WALK_AWAY]` breaks the rule.
//! - `raise_per_ask`: "if you need to propose a higher price than your last quote to secure
//!   agreement, a single increase must not exceed 10%" (Figure 8). The last quote is, per
//!   ticket, the agent's latest earlier proposal with a price for that ticket (`unchanged` is
//!   no quote); a proposal more than 10 % above it on any ticket breaks the rule.
//! - `below_target`: "you must not proactively propose a price lower than a" (Figure 8, a the
//!   target price). A proposal with any ticket below its target selling price breaks it;
//!   accepting the hotel's price below target does not ("if the counterpart proposes a price
//!   lower than a, you must accept immediately").
//!
//! The paper states these rules in the policy's prompt and gives them no point value; the
//! judge's own deductions (Figure 6) are 5 for style, 20 for price requirements and scope, 30
//! for agreement errors. `dealgym`'s default is −1 per breaking move, like the guardrails; the
//! `repo` preset scores each −20, a price requirement's deduction
//! (docs/src/decisions/rewards.md, "REPO's procedure rules").
//!
//! Only the agent's (`bd`) moves are checked, and only on a hotel call; every other game gets
//! none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::Turn;
use crate::protocol::{to_cents, Action, Terms};
use crate::scenario::{DealSpace, Role, Scenario};

/// Refusals in a row after which the agent is to end the call (Figure 7).
pub(crate) const REFUSALS_BEFORE_HANGING_UP: usize = 4;

/// `[rewards.procedure]`: the score a breaking move gets per rule (0 turns one off). Used by
/// the `rules` component, on hotel calls only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProcedureConfig {
    /// The agent plays on after the hotel's fourth refusal in a row instead of hanging up.
    pub four_refusals: f64,
    /// The agent raises its ask on a ticket by more than 10 % over its last quote.
    pub raise_per_ask: f64,
    /// The agent proposes a ticket price below its target price.
    pub below_target: f64,
}

impl Default for ProcedureConfig {
    fn default() -> Self {
        ProcedureConfig {
            four_refusals: -1.0,
            raise_per_ask: -1.0,
            below_target: -1.0,
        }
    }
}

impl ProcedureConfig {
    /// Each rule's signal name with its score.
    pub(crate) fn scores(&self) -> [(&'static str, f64); 3] {
        [
            ("procedure_four_refusals", self.four_refusals),
            ("procedure_raise_per_ask", self.raise_per_ask),
            ("procedure_below_target", self.below_target),
        ]
    }
}

/// The procedure rules turn `index` breaks, with their scores (zero-scored ones left out): for
/// the agent's moves on a hotel call only (a turn that could not be used is no move).
pub(crate) fn procedure_scores(
    config: &ProcedureConfig,
    scenario: &Scenario,
    role: Role,
    turns: &[&Turn],
    index: usize,
) -> Vec<(&'static str, f64)> {
    let DealSpace::Tickets { .. } = &scenario.game else {
        return Vec::new();
    };
    if role != Role::Bd || turns[index].played.is_none() {
        return Vec::new();
    }
    let broken = [
        plays_on_after_refusals(turns, index),
        raises_too_much(turns, index),
        asks_below_target(scenario, turns[index]),
    ];
    config
        .scores()
        .into_iter()
        .zip(broken)
        .filter(|((_, score), broken)| *broken && *score != 0.0)
        .map(|(named, _)| named)
        .collect()
}

/// The counterpart's refusals in a row just before turn `index`: its `[REJECT_DEAL]` moves,
/// counted back from `index` over the mover's own turns and any turn that was no move, up to
/// its first move of another kind.
pub(crate) fn refusals_in_a_row(turns: &[&Turn], index: usize) -> usize {
    let mover = turns[index].seat;
    turns[..index]
        .iter()
        .rev()
        .filter(|t| t.seat != mover)
        .filter_map(|t| t.played.as_ref())
        .take_while(|a| **a == Action::Reject)
        .count()
}

/// Figure 7: after four refusals in a row the agent ends the call; any other move breaks it.
fn plays_on_after_refusals(turns: &[&Turn], index: usize) -> bool {
    refusals_in_a_row(turns, index) >= REFUSALS_BEFORE_HANGING_UP
        && turns[index].played != Some(Action::WalkAway)
}

/// Figure 8: a proposal more than 10 % above the agent's last quote on some ticket. In cents,
/// `new > 1.1 · last` is `10 · new > 11 · last`, exact.
fn raises_too_much(turns: &[&Turn], index: usize) -> bool {
    let turn = turns[index];
    let Some(Action::Submit(Terms::Tickets(asks))) = &turn.played else {
        return false;
    };
    asks.iter().enumerate().any(|(i, ask)| {
        let Some(new) = ask else {
            return false;
        };
        let last = turns[..index]
            .iter()
            .rev()
            .filter(|t| t.seat == turn.seat)
            .find_map(|t| match &t.played {
                Some(Action::Submit(Terms::Tickets(prices))) => prices.get(i).copied().flatten(),
                _ => None,
            });
        last.is_some_and(|last| 10 * i128::from(*new) > 11 * i128::from(last))
    })
}

/// Figure 8: a proposal with a ticket below its target selling price `a`.
fn asks_below_target(scenario: &Scenario, turn: &Turn) -> bool {
    let (DealSpace::Tickets { bd, .. }, Some(Action::Submit(Terms::Tickets(asks)))) =
        (&scenario.game, &turn.played)
    else {
        return false;
    };
    asks.iter()
        .zip(bd)
        .any(|(ask, b)| ask.is_some_and(|cents| cents < to_cents(b.target.selling)))
}

#[cfg(test)]
mod tests {
    //! On the fixture call: t1 Comfort King Room today, selling 168, target a = 140, acceptable
    //! b = 152, the hotel's floor 145; t2 Twin Room tomorrow, selling 120, a = 97, b = 105,
    //! floor 110. The agent moves first. Each test works the paper's rule by hand, with the
    //! `repo` preset's −20 per breaking move.

    use super::*;
    use crate::fixtures::{hotel, learner_first_as, play, setup_with, turn};
    use crate::game::{EpisodeConfig, FirstMover, Seat, Setup};

    /// The agent first, the hotel unregulated (so it may offer below the agent's target).
    fn agent_first(s: &Scenario) -> Setup {
        setup_with(
            s,
            &EpisodeConfig {
                learner_role: Some(Role::Bd),
                first_mover: FirstMover::Learner,
                regulate_opponent: false,
                ..EpisodeConfig::default()
            },
        )
    }

    /// The preset's scores: −20 each.
    fn repo() -> ProcedureConfig {
        ProcedureConfig {
            four_refusals: -20.0,
            raise_per_ask: -20.0,
            below_target: -20.0,
        }
    }

    /// The rules each turn breaks, with the preset's scores, and each turn's seat.
    fn scored(raws: &[String]) -> Vec<(Seat, Vec<(&'static str, f64)>)> {
        let s = hotel();
        let e = play(&s, agent_first(&s), raws);
        let turns: Vec<&Turn> = e.turns().iter().collect();
        (0..turns.len())
            .map(|i| {
                let role = e.setup().seats[turns[i].seat].role;
                (
                    turns[i].seat,
                    procedure_scores(&repo(), &s, role, &turns, i),
                )
            })
            .collect()
    }

    fn ask(t1: &str, t2: &str) -> String {
        turn(
            "Could the Comfort King Room today and the Twin Room tomorrow come down?",
            &format!("[SUBMIT_DEAL] t1:{t1} t2:{t2}"),
        )
    }

    fn no() -> String {
        turn("No, we will not change our prices.", "[REJECT_DEAL]")
    }

    #[test]
    fn the_agent_who_plays_on_after_four_refusals_loses_20() {
        // Asks at 140/97, 142/99, 144/101, 146/103, each refused (every raise under 10 %:
        // 142/140 = 1.014 …); after the fourth refusal a fifth ask breaks the rule, −20.
        let mut raws = Vec::new();
        for (t1, t2) in [("140", "97"), ("142", "99"), ("144", "101"), ("146", "103")] {
            raws.push(ask(t1, t2));
            raws.push(no());
        }
        raws.push(ask("148", "104"));
        let got = scored(&raws);
        for (seat, rules) in &got[..8] {
            assert!(rules.is_empty(), "{seat:?}: {rules:?}");
        }
        assert_eq!(
            got[8],
            (Seat::Learner, vec![("procedure_four_refusals", -20.0)])
        );
        // Hanging up there is what the prompt asks: nothing.
        raws[8] = turn(
            "I understand. Thank you for your time, goodbye.",
            "[WALK_AWAY]",
        );
        assert_eq!(scored(&raws)[8].1, []);
        // Three refusals are not four: the fourth ask plays on freely.
        assert_eq!(scored(&raws[..7])[6].1, []);
    }

    #[test]
    fn a_counter_offer_or_talk_ends_the_run_of_refusals() {
        // Three refusals, a counter-offer (an intent to negotiate), one more refusal: one in a
        // row, not four.
        let counter = turn("150 and 112 at most.", "[SUBMIT_DEAL] t1:150 t2:112");
        let raws = [
            ask("140", "97"),
            no(),
            ask("142", "99"),
            no(),
            ask("144", "101"),
            no(),
            ask("146", "103"),
            counter,
            ask("148", "104"),
            no(),
            ask("150", "104"),
        ];
        let s = hotel();
        let e = play(&s, agent_first(&s), &raws);
        let turns: Vec<&Turn> = e.turns().iter().collect();
        assert_eq!(refusals_in_a_row(&turns, 6), 3);
        assert_eq!(refusals_in_a_row(&turns, 10), 1);
        assert!(scored(&raws).iter().all(|(_, r)| r.is_empty()));
    }

    #[test]
    fn a_raise_over_ten_percent_of_the_last_quote_loses_20() {
        // t2: the last quote 97, the next 107: 107 > 1.1 · 97 = 106.7, −20 (107 is also above
        // b = 105, which is the guardrails' to score, not this rule's). 106 ≤ 106.7 passes.
        let raws = [ask("140", "97"), no(), ask("142", "107")];
        assert_eq!(scored(&raws)[2].1, [("procedure_raise_per_ask", -20.0)]);
        let raws = [ask("140", "97"), no(), ask("142", "106")];
        assert_eq!(scored(&raws)[2].1, []);
        // Exactly 10 % is allowed: 140 → 154 (1.1 · 140 = 154).
        let raws = [ask("140", "97"), no(), ask("154", "97")];
        assert_eq!(scored(&raws)[2].1, []);
        // The last quote is per ticket, over an `unchanged` in between: t1 140, then
        // unchanged, then 155 > 154, −20.
        let raws = [
            ask("140", "97"),
            no(),
            ask("unchanged", "98"),
            no(),
            ask("155", "98"),
        ];
        assert_eq!(scored(&raws)[4].1, [("procedure_raise_per_ask", -20.0)]);
    }

    #[test]
    fn an_ask_below_the_target_loses_20_but_taking_the_hotels_lower_price_does_not() {
        // t1 at 139 < a = 140: −20; and the next ask back up at 150 is 150/139 = 1.079, no raise
        // fault.
        let raws = [ask("139", "97"), no(), ask("150", "100")];
        let got = scored(&raws);
        assert_eq!(got[0].1, [("procedure_below_target", -20.0)]);
        assert_eq!(got[2].1, []);
        // Both faults at once: 130 < 140 and 97 → 110 is 110 > 106.7 (and 110 ≥ 97): t2 raised
        // too far while t1 is below target, −40 in all.
        let raws = [ask("140", "97"), no(), ask("130", "110")];
        assert_eq!(
            scored(&raws)[2].1,
            [
                ("procedure_raise_per_ask", -20.0),
                ("procedure_below_target", -20.0)
            ]
        );
        // The hotel offers 138 on t1, below a: accepting is what the prompt asks, no fault.
        let offer = turn(
            "138 for the king room, the twin stays.",
            "[SUBMIT_DEAL] t1:138 t2:unchanged",
        );
        let accept = turn("Thank you, 138 it is.", "[ACCEPT_DEAL]");
        let raws = [ask("140", "97"), offer, accept];
        assert!(scored(&raws).iter().all(|(_, r)| r.is_empty()));
    }

    #[test]
    fn the_hotels_moves_and_other_games_are_never_checked() {
        // The hotel asking below the agent's target is none of these rules' business.
        let raws = [
            ask("140", "97"),
            turn("How about 120?", "[SUBMIT_DEAL] t1:120 t2:unchanged"),
        ];
        assert_eq!(scored(&raws)[1], (Seat::Opponent, vec![]));
        let s = crate::fixtures::price();
        let e = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[turn("Ten?", "[SUBMIT_DEAL] price:10")],
        );
        let turns: Vec<&Turn> = e.turns().iter().collect();
        assert!(procedure_scores(&repo(), &s, Role::Bd, &turns, 0).is_empty());
        // A rule scored 0 is off.
        let off = ProcedureConfig {
            below_target: 0.0,
            ..repo()
        };
        let s = hotel();
        let e = play(&s, agent_first(&s), &[ask("139", "97")]);
        let turns: Vec<&Turn> = e.turns().iter().collect();
        assert!(procedure_scores(&off, &s, Role::Bd, &turns, 0).is_empty());
    }
}
