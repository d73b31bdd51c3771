//! A seat's exact token sequence, for the token formats (verl, trl-rollout, tinker). The ids
//! come only from token-exact records (`Turn::tokens` on every turn of the seat): the sequence
//! is the concatenation, over the seat's calls in order, of the prompt ids the call added and
//! the ids the model sampled. Nothing is ever re-tokenized from text — a tokenizer run over the
//! text does not give back the ids that were sampled, and a policy gradient on other ids is
//! wrong.

use crate::game::{Seat, TurnTokens};
use crate::record::{EpisodeRecord, TurnRecord};

/// Why a seat of an episode has nothing to export in a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The seat made no call (the episode ended before its first turn).
    NoTurns,
    /// Some turn of the seat has no token ids: it was not played token-exact.
    NoTokens,
    /// Some turn's logprobs are not one per sampled id.
    BadTokens,
}

/// The exact calls of `seat`, in order, or why there are none to export. A logged prefix's
/// turns ([`Rules::is_logged_turn`](crate::game::Rules::is_logged_turn)) are no calls of the
/// seat: they are context, already in its first call's prompt, so the sequence starts there.
pub(crate) fn seat_calls(record: &EpisodeRecord, seat: Seat) -> Result<Vec<&TurnTokens>, Skip> {
    let mut calls = Vec::new();
    for (_, turn) in own_calls(record, seat) {
        let tokens = turn.tokens.as_ref().ok_or(Skip::NoTokens)?;
        if tokens.logprobs.len() != tokens.completion_ids.len() {
            return Err(Skip::BadTokens);
        }
        calls.push(tokens);
    }
    if calls.is_empty() {
        return Err(Skip::NoTurns);
    }
    Ok(calls)
}

/// The turns of `seat` that its player made (with their indexes in `turns`): every turn of the
/// seat but a logged prefix's.
pub(crate) fn own_calls(
    record: &EpisodeRecord,
    seat: Seat,
) -> impl Iterator<Item = (usize, &TurnRecord)> {
    let rules = &record.setup.rules;
    record
        .turns
        .iter()
        .enumerate()
        .filter(move |(i, t)| t.seat == seat && !rules.is_logged_turn(*i))
}

/// A seat's sequence split the way multi-turn RL trainers take it: the first call's prompt,
/// then everything after it — sampled ids (mask 1, with their logprobs) and the prompt suffixes
/// the environment wrote between calls (mask 0, logprob 0.0).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trajectory<'a> {
    pub prompt_ids: &'a [u32],
    pub response_ids: Vec<u32>,
    pub mask: Vec<u8>,
    pub logprobs: Vec<f64>,
}

impl<'a> Trajectory<'a> {
    pub fn of(calls: &[&'a TurnTokens]) -> Trajectory<'a> {
        let len: usize = calls
            .iter()
            .map(|c| c.prompt_ids.len() + c.completion_ids.len())
            .sum::<usize>()
            - calls[0].prompt_ids.len();
        let mut t = Trajectory {
            prompt_ids: &calls[0].prompt_ids,
            response_ids: Vec::with_capacity(len),
            mask: Vec::with_capacity(len),
            logprobs: Vec::with_capacity(len),
        };
        for (i, call) in calls.iter().enumerate() {
            if i > 0 {
                t.response_ids.extend(&call.prompt_ids);
                t.mask.extend(std::iter::repeat_n(0, call.prompt_ids.len()));
                t.logprobs
                    .extend(std::iter::repeat_n(0.0, call.prompt_ids.len()));
            }
            t.response_ids.extend(&call.completion_ids);
            t.mask
                .extend(std::iter::repeat_n(1, call.completion_ids.len()));
            t.logprobs.extend(&call.logprobs);
        }
        t
    }
}

/// Per call of `seat` ([`own_calls`]), its reward: each turn's own where the record holds
/// per-turn rewards (`[rewards] turn_reward`; with `last_turn` they sum to the seat's per-turn
/// signals plus its episode-level parts once), else 0 on every call but the last, which gets
/// the seat's episode total, so they sum to it.
pub(crate) fn call_rewards(record: &EpisodeRecord, seat: Seat) -> Vec<f64> {
    let calls: Vec<usize> = own_calls(record, seat).map(|(i, _)| i).collect();
    if !record.turn_rewards.is_empty() {
        return calls
            .iter()
            .map(|i| record.turn_reward(*i).unwrap_or(0.0))
            .collect();
    }
    let last = calls.len().saturating_sub(1);
    (0..calls.len())
        .map(|i| if i == last { record.rewards[seat] } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(prompt: &[u32], completion: &[u32], logprobs: &[f64]) -> TurnTokens {
        TurnTokens {
            prompt_ids: prompt.to_vec(),
            completion_ids: completion.to_vec(),
            logprobs: logprobs.to_vec(),
            ..TurnTokens::default()
        }
    }

    #[test]
    fn the_response_interleaves_sampled_ids_and_environment_suffixes() {
        let a = call(&[1, 2, 3], &[10, 11], &[-0.5, -0.25]);
        let b = call(&[4], &[12], &[-1.0]);
        let c = call(&[5, 6], &[13, 14], &[-0.125, 0.0]);
        let t = Trajectory::of(&[&a, &b, &c]);
        assert_eq!(t.prompt_ids, &[1, 2, 3]);
        assert_eq!(t.response_ids, vec![10, 11, 4, 12, 5, 6, 13, 14]);
        assert_eq!(t.mask, vec![1, 1, 0, 1, 0, 0, 1, 1]);
        assert_eq!(
            t.logprobs,
            vec![-0.5, -0.25, 0.0, -1.0, 0.0, 0.0, -0.125, 0.0]
        );
    }

    #[test]
    fn call_rewards_are_the_turns_own_where_the_record_has_them() {
        use crate::fixtures::{casino, learner_first_as, play, record_of, turn};
        use crate::scenario::Role;
        // Learner, opponent, learner, opponent (accepts).
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("Food?", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("No.", "[REJECT_DEAL]"),
                turn("Less food?", "[SUBMIT_DEAL] food:2 water:2 firewood:0"),
                turn("Yes.", "[ACCEPT_DEAL]"),
            ],
        );
        let mut record = record_of(e);
        record.rewards = crate::game::PerSeat::new(0.7, 0.2);
        // No per-turn rewards: 0 then the episode's total on the seat's last call.
        assert_eq!(call_rewards(&record, Seat::Learner), vec![0.0, 0.7]);
        assert_eq!(call_rewards(&record, Seat::Opponent), vec![0.0, 0.2]);
        // Per-turn rewards: each call its own turn's.
        record.turn_rewards = vec![Some(0.5), Some(0.1), Some(0.25), Some(-0.5)];
        assert_eq!(call_rewards(&record, Seat::Learner), vec![0.5, 0.25]);
        assert_eq!(call_rewards(&record, Seat::Opponent), vec![0.1, -0.5]);
    }
}
