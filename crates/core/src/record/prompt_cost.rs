//! What the calls cost the model: per family and seat, the prompt tokens sent, the tokens the
//! server took from its prefix cache, the tokens it evaluated (prompt − cached), and the
//! *minimum* — the tokens new since that seat's last call — with the ratio evaluated/minimum.
//!
//! A seat's conversation only grows (the book's `design/protocol.md`), so a server that keeps the
//! seat's earlier prompt and reply in its cache needs to read only what was added since: the
//! counterpart's forwarded turn and the template's markers around it. A ratio near 1 says it did;
//! above 1, the model re-read what it had seen (a cache lost to other conversations, a routing that
//! sends the seat to another replica, a template that rewrites an earlier turn, a reply
//! re-tokenized differently from how it was sampled). Below 1 is possible too: the first call's
//! minimum is its whole prompt, and a server may hold a system prompt another episode sent.
//!
//! Computed from what the record keeps per turn, nothing else: `call.usage.prompt_tokens`,
//! `call.usage.completion_tokens`, `call.usage.prompt_tokens_details.cached_tokens` (absent
//! when the server does not say: such calls count in `prompt` but not in the ratio) and, in
//! token-exact mode, the turn's `tokens.prompt_ids` (exactly the ids the call added).

use std::collections::BTreeMap;

use crate::game::Seat;
use crate::scenario::Family;

use super::{EpisodeRecord, TurnRecord};

/// One call's prompt, as far as the record tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCost {
    /// Prompt tokens of the call.
    pub(crate) prompt: u64,
    /// Of these, the tokens the server took from its cache, when it said (at most `prompt`).
    pub(crate) cached: Option<u64>,
    /// The tokens new since the seat's previous call.
    pub minimum: u64,
    /// Whether this is the seat's first call of the episode (its minimum is its whole prompt,
    /// of which a server may hold a part another episode sent: a shared system prompt).
    pub first: bool,
}

impl CallCost {
    /// Prompt tokens the model had to evaluate, when the server said what it had cached.
    pub fn evaluated(&self) -> Option<u64> {
        self.cached.map(|c| self.prompt - c)
    }
}

/// The calls of one seat in one episode, in order, each with its minimum. The one rule:
/// - a token-exact call's minimum is the ids it added (`tokens.prompt_ids`: the whole prompt
///   on the seat's first call, the new messages' ids after);
/// - otherwise the seat's first call's minimum is its whole prompt, and a later call's is its
///   prompt less the previous call's prompt and completion (what the server already holds if
///   it kept the seat's sequence); a prompt shorter than that (the conversation was not
///   extended) counts 0;
/// - a turn without token counts (a built-in or scripted player, a failed call) is not a call.
pub fn seat_calls<'a>(turns: impl IntoIterator<Item = &'a TurnRecord>) -> Vec<CallCost> {
    let mut calls = Vec::new();
    let mut before: Option<u64> = None;
    for turn in turns {
        let Some(usage) = turn.call.as_ref().and_then(|c| c.usage) else {
            continue;
        };
        let prompt = usage.prompt_tokens;
        let minimum = match (&turn.tokens, before) {
            (Some(tokens), _) => tokens.prompt_ids.len() as u64,
            (None, None) => prompt,
            (None, Some(held)) => prompt.saturating_sub(held),
        };
        calls.push(CallCost {
            prompt,
            cached: usage.cached_tokens().map(|c| c.min(prompt)),
            minimum,
            first: before.is_none(),
        });
        before = Some(prompt + usage.completion_tokens);
    }
    calls
}

/// The sums over many calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCost {
    /// Calls with token counts.
    pub calls: u64,
    /// Prompt tokens of every call.
    pub prompt: u64,
    /// Calls whose server said what it took from its cache: the rest of the figures are theirs.
    pub reported: u64,
    pub cached: u64,
    pub evaluated: u64,
    pub minimum: u64,
    /// `evaluated` and `minimum` of the calls after each seat's first: what a server that keeps
    /// a conversation re-reads of it, apart from what it shares between episodes.
    pub(crate) later_evaluated: u64,
    pub(crate) later_minimum: u64,
}

impl PromptCost {
    pub(crate) fn add(&mut self, call: &CallCost) {
        self.calls += 1;
        self.prompt += call.prompt;
        if let Some(cached) = call.cached {
            self.reported += 1;
            self.cached += cached;
            self.evaluated += call.prompt - cached;
            self.minimum += call.minimum;
            if !call.first {
                self.later_evaluated += call.prompt - cached;
                self.later_minimum += call.minimum;
            }
        }
    }

    pub(crate) fn merge(&mut self, other: &PromptCost) {
        self.calls += other.calls;
        self.prompt += other.prompt;
        self.reported += other.reported;
        self.cached += other.cached;
        self.evaluated += other.evaluated;
        self.minimum += other.minimum;
        self.later_evaluated += other.later_evaluated;
        self.later_minimum += other.later_minimum;
    }

    /// Evaluated over minimum, over the calls that reported their cache; `None` without any.
    pub fn ratio(&self) -> Option<f64> {
        (self.reported > 0 && self.minimum > 0).then(|| self.evaluated as f64 / self.minimum as f64)
    }

    /// The same over the calls after each seat's first.
    pub fn later_ratio(&self) -> Option<f64> {
        (self.later_minimum > 0).then(|| self.later_evaluated as f64 / self.later_minimum as f64)
    }
}

/// [`PromptCost`] per family and seat, taken in record by record (constant memory per key).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptCosts {
    by: BTreeMap<(Family, Seat), PromptCost>,
}

impl PromptCosts {
    pub fn add(&mut self, record: &EpisodeRecord) {
        for seat in Seat::BOTH {
            let calls = seat_calls(record.turns.iter().filter(|t| t.seat == seat));
            if calls.is_empty() {
                continue;
            }
            let sum = self.by.entry((record.family, seat)).or_default();
            calls.iter().for_each(|c| sum.add(c));
        }
    }

    /// Whether any call said what its server took from the cache (else there is no ratio).
    pub fn any_reported(&self) -> bool {
        self.by.values().any(|c| c.reported > 0)
    }

    /// Per family and seat, in that order.
    pub fn by_seat(&self) -> impl Iterator<Item = (Family, Seat, &PromptCost)> {
        self.by.iter().map(|((f, s), c)| (*f, *s, c))
    }

    /// Per family, both seats summed.
    pub fn by_family(&self) -> BTreeMap<Family, PromptCost> {
        let mut out: BTreeMap<Family, PromptCost> = BTreeMap::new();
        for ((family, _), cost) in &self.by {
            out.entry(*family).or_default().merge(cost);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{Call, PromptTokensDetails, TurnTokens, Usage};

    fn turn(seat: Seat, prompt: u64, completion: u64, cached: Option<u64>) -> TurnRecord {
        let line = serde_json::json!({"seat": seat, "attempt": 0, "raw": "x", "format_ok": false});
        let t: TurnRecord = serde_json::from_value(line).unwrap();
        TurnRecord::new(
            t.turn,
            Some(Call {
                usage: Some(Usage {
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    prompt_tokens_details: cached.map(|c| PromptTokensDetails {
                        cached_tokens: Some(c),
                    }),
                }),
                ..Call::default()
            }),
        )
    }

    /// Three calls of a seat whose server keeps all but the last sampled token (llama.cpp's
    /// slot): the first reads its whole prompt; then 40 new tokens cost 41.
    #[test]
    fn the_minimum_is_what_was_added_since_the_seats_last_call() {
        let turns = [
            turn(Seat::Learner, 100, 20, Some(0)),
            turn(Seat::Learner, 160, 10, Some(119)),
            turn(Seat::Learner, 210, 5, Some(169)),
        ];
        let calls = seat_calls(&turns);
        assert_eq!(
            calls.iter().map(|c| c.minimum).collect::<Vec<_>>(),
            [100, 40, 40]
        );
        assert_eq!(
            calls.iter().map(|c| c.evaluated()).collect::<Vec<_>>(),
            [Some(100), Some(41), Some(41)]
        );
        let mut sum = PromptCost::default();
        calls.iter().for_each(|c| sum.add(c));
        assert_eq!(
            (sum.prompt, sum.cached, sum.evaluated, sum.minimum),
            (470, 288, 182, 180)
        );
        assert_eq!(sum.ratio(), Some(182.0 / 180.0));
        assert_eq!((sum.later_evaluated, sum.later_minimum), (82, 80));
        assert_eq!(sum.later_ratio(), Some(82.0 / 80.0));
        assert_eq!(
            calls.iter().map(|c| c.first).collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn a_call_whose_server_does_not_say_counts_only_in_the_prompt() {
        let turns = [
            turn(Seat::Learner, 100, 20, None),
            turn(Seat::Learner, 150, 10, Some(64)),
        ];
        let mut sum = PromptCost::default();
        seat_calls(&turns).iter().for_each(|c| sum.add(c));
        assert_eq!((sum.calls, sum.reported, sum.prompt), (2, 1, 250));
        // 150 − (100 + 20) = 30 new; 86 read.
        assert_eq!((sum.minimum, sum.evaluated), (30, 86));
        assert_eq!(PromptCost::default().ratio(), None);
    }

    #[test]
    fn a_conversation_that_was_not_extended_has_no_minimum_and_cached_is_capped() {
        let turns = [
            turn(Seat::Learner, 100, 20, Some(0)),
            turn(Seat::Learner, 90, 5, Some(500)),
        ];
        let calls = seat_calls(&turns);
        assert_eq!(calls[1].minimum, 0);
        assert_eq!(calls[1].cached, Some(90));
        assert_eq!(calls[1].evaluated(), Some(0));
    }

    #[test]
    fn a_token_exact_call_s_minimum_is_the_ids_it_added() {
        let mut first = turn(Seat::Opponent, 50, 8, Some(0));
        let mut second = turn(Seat::Opponent, 70, 8, Some(57));
        for (t, added) in [(&mut first, 50), (&mut second, 12)] {
            t.turn.tokens = Some(TurnTokens {
                prompt_ids: vec![1; added],
                completion_ids: vec![2; 8],
                logprobs: vec![0.0; 8],
                finish_reason: None,
                drift: None,
                forced_from: None,
            });
        }
        let calls = seat_calls([&first, &second]);
        assert_eq!(calls[1].minimum, 12);
        assert_eq!(calls[1].evaluated(), Some(13));
    }
}
