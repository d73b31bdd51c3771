//! A seat's token trajectory: the one rule that turns the exact ids of a seat's calls into the
//! sequence a multi-turn RL trainer takes — the first call's prompt, then everything after it,
//! sampled ids (mask 1, with their logprobs) and the prompt suffixes the environment wrote
//! between calls (mask 0, logprob 0.0). The ids come only from token-exact turns
//! ([`TurnTokens`]); nothing is re-tokenized from text — a tokenizer run over the text does not
//! give back the ids that were sampled, and a policy gradient on other ids is wrong.
//!
//! Beside it, which turns of a record are a seat's own calls and what each call is paid, for
//! both kinds of record: [`EpisodeRecord::own_calls`] and [`TableRecord::own_calls`],
//! [`EpisodeRecord::call_rewards`] and [`TableRecord::call_rewards`]. Plain types in and out, so
//! every face (the exports, the Python package) builds a trajectory with this one rule.

use crate::game::{Rules, Seat, Turn};
use crate::table::TableTurn;
use crate::vocab::TurnTokens;

use super::{EpisodeRecord, TableRecord, TableTurnRecord, TurnRecord};

/// Why a seat has no trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoTrajectory {
    /// The seat made no call (the episode ended before its first turn).
    #[error("the seat made no call")]
    NoCalls,
    /// A call of the seat has no token ids: it was not played token-exact.
    #[error("call {call} of the seat has no token ids (it was not played token-exact)")]
    NoTokens { call: usize },
    /// A call's logprobs are not one per sampled id.
    #[error("call {call} of the seat has {logprobs} logprobs for {ids} sampled ids")]
    BadLogprobs {
        call: usize,
        logprobs: usize,
        ids: usize,
    },
}

/// A seat's calls, in order, each with its exact ids and one logprob per sampled id: what a
/// [`Trajectory`] is built from. Only [`ExactCalls::of`] makes one, so a trajectory is never
/// built from a call without ids or with logprobs that do not pair up — but for
/// [`ExactCalls::of_sampled`], which admits calls whose logprobs were left out.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactCalls<'a> {
    calls: Vec<&'a TurnTokens>,
    /// Every call carries one logprob per sampled id (always so from [`ExactCalls::of`]).
    logprobs: bool,
}

impl<'a> ExactCalls<'a> {
    /// The calls' ids (`None` for a call played without them), checked in order: the first
    /// call without ids or with unpaired logprobs says why there is no trajectory, and so does
    /// a seat without calls.
    pub fn of(
        calls: impl IntoIterator<Item = Option<&'a TurnTokens>>,
    ) -> Result<ExactCalls<'a>, NoTrajectory> {
        Self::checked(calls, false)
    }

    /// As [`ExactCalls::of`], but a call whose logprobs were left out (a sampler that gave
    /// none, as [`LogprobsMismatch::check`](crate::vocab::LogprobsMismatch::check) admits) is a
    /// call too: the trajectory of such calls has no logprobs ([`ExactCalls::has_logprobs`]).
    /// What a trainer's own rollout takes, whose sampler may not give them.
    pub fn of_sampled(
        calls: impl IntoIterator<Item = Option<&'a TurnTokens>>,
    ) -> Result<ExactCalls<'a>, NoTrajectory> {
        Self::checked(calls, true)
    }

    fn checked(
        calls: impl IntoIterator<Item = Option<&'a TurnTokens>>,
        admit_left_out: bool,
    ) -> Result<ExactCalls<'a>, NoTrajectory> {
        let mut checked = Vec::new();
        let mut logprobs = true;
        for (call, tokens) in calls.into_iter().enumerate() {
            let tokens = tokens.ok_or(NoTrajectory::NoTokens { call })?;
            let left_out = tokens.logprobs.is_empty() && !tokens.completion_ids.is_empty();
            if admit_left_out && left_out {
                logprobs = false;
            } else if tokens.logprobs.len() != tokens.completion_ids.len() {
                return Err(NoTrajectory::BadLogprobs {
                    call,
                    logprobs: tokens.logprobs.len(),
                    ids: tokens.completion_ids.len(),
                });
            }
            checked.push(tokens);
        }
        if checked.is_empty() {
            return Err(NoTrajectory::NoCalls);
        }
        Ok(ExactCalls {
            calls: checked,
            logprobs,
        })
    }

    /// The calls, in order (never empty).
    pub fn calls(&self) -> &[&'a TurnTokens] {
        &self.calls
    }

    /// How many calls the seat made.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Always false: an [`ExactCalls`] holds at least one call.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Whether every call carries its logprobs: always from [`ExactCalls::of`]; from
    /// [`ExactCalls::of_sampled`], not when a call's were left out.
    pub fn has_logprobs(&self) -> bool {
        self.logprobs
    }

    /// The seat's trajectory ([`Trajectory`]); its `logprobs` are empty when a call's were
    /// left out ([`ExactCalls::has_logprobs`]).
    pub fn trajectory(&self) -> Trajectory {
        let calls = &self.calls;
        let first = calls[0];
        let len = calls
            .iter()
            .map(|c| c.prompt_ids.len() + c.completion_ids.len())
            .sum::<usize>()
            - first.prompt_ids.len();
        let mut t = Trajectory {
            prompt_ids: first.prompt_ids.clone(),
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
            // A narrated turn's forced action ids (written, not sampled) are masked out.
            let sampled = call.sampled_len();
            t.mask.extend(std::iter::repeat_n(1, sampled));
            t.mask
                .extend(std::iter::repeat_n(0, call.completion_ids.len() - sampled));
            t.logprobs.extend(&call.logprobs);
        }
        if !self.logprobs {
            t.logprobs = Vec::new();
        }
        t
    }
}

/// Whether the turn at `index` of an episode, played by `by`, is `seat`'s own call: its seat's,
/// and not a logged prefix's ([`Rules::is_logged_turn`]: those are context, already in the
/// seat's first call's prompt). The one rule for a record ([`EpisodeRecord::own_calls`]) and for
/// an episode in play ([`episode_calls`]).
fn is_own_call(rules: &Rules, index: usize, by: Seat, seat: Seat) -> bool {
    own_call(rules.is_logged_turn(index), by, seat)
}

/// The rule of [`is_own_call`] for either kind of seat: the seat's turn, not a logged one.
fn own_call<S: PartialEq>(logged: bool, by: S, seat: S) -> bool {
    by == seat && !logged
}

/// The token ids of `seat`'s own calls so far among a two-party episode's `turns` (`None` for
/// a call played without them), by the rule of [`EpisodeRecord::own_calls`]: what
/// [`ExactCalls`] checks for an episode still in play, where there is no record yet.
pub fn episode_calls<'a>(
    turns: &'a [Turn],
    seat: Seat,
    rules: &'a Rules,
) -> impl Iterator<Item = Option<&'a TurnTokens>> + 'a {
    turns
        .iter()
        .enumerate()
        .filter(move |(i, t)| is_own_call(rules, *i, t.seat, seat))
        .map(|(_, t)| t.tokens.as_ref())
}

/// The token ids of the calls so far of the seat at index `seat` among a table's `turns`, by the
/// rule of [`TableRecord::own_calls`] (every attempt, a retried one included).
pub fn table_calls(
    turns: &[TableTurn],
    seat: usize,
) -> impl Iterator<Item = Option<&TurnTokens>> + '_ {
    turns
        .iter()
        .filter(move |t| t.seat == seat)
        .map(|t| t.completion.tokens.as_ref())
}

/// The token ids of the calls so far of the seat at index `seat` among a market's `turns`, by
/// the rule of [`super::MarketRecord::own_calls`] (every attempt, a retried one included): what
/// [`ExactCalls`] checks for a market still in play, and for its record.
pub fn market_calls(
    turns: &[crate::market::MarketTurn],
    seat: usize,
) -> impl Iterator<Item = Option<&TurnTokens>> + '_ {
    turns
        .iter()
        .filter(move |t| own_call(false, t.seat, seat))
        .map(|t| t.completion.tokens.as_ref())
}

/// A seat's sequence split the way multi-turn RL trainers take it: `prompt_ids`, the first
/// call's prompt; `response_ids`, everything after it in order — sampled ids and the prompt
/// suffixes the environment wrote between calls; `mask`, 1 on sampled ids and 0 on the
/// environment's; `logprobs`, each sampled id's, 0.0 on the environment's.
/// `prompt_ids` then `response_ids` is the seat's whole exact sequence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    pub prompt_ids: Vec<u32>,
    pub response_ids: Vec<u32>,
    pub mask: Vec<u8>,
    pub logprobs: Vec<f64>,
}

/// Per call of a seat that made `calls` calls, its reward where the record holds no per-turn
/// rewards: 0 on every call but the last, which gets the seat's episode `total`, so they sum
/// to it.
pub(crate) fn last_call_rewards(calls: usize, total: f64) -> Vec<f64> {
    let last = calls.saturating_sub(1);
    (0..calls)
        .map(|i| if i == last { total } else { 0.0 })
        .collect()
}

impl EpisodeRecord {
    /// The turns of `seat` that its player made (with their indexes in `turns`): every turn of
    /// the seat, a retried attempt included, but a logged prefix's
    /// ([`Rules::is_logged_turn`](crate::game::Rules::is_logged_turn)): those are context,
    /// already in the seat's first call's prompt, so its sequence starts there.
    pub fn own_calls(&self, seat: Seat) -> impl Iterator<Item = (usize, &TurnRecord)> {
        let rules = &self.setup.rules;
        self.turns
            .iter()
            .enumerate()
            .filter(move |(i, t)| is_own_call(rules, *i, t.seat, seat))
    }

    /// The exact ids of `seat`'s own calls ([`EpisodeRecord::own_calls`]), checked.
    pub fn exact_calls(&self, seat: Seat) -> Result<ExactCalls<'_>, NoTrajectory> {
        ExactCalls::of(self.own_calls(seat).map(|(_, t)| t.tokens.as_ref()))
    }

    /// Per own call of `seat`, its reward: each turn's own where the record holds per-turn
    /// rewards (`[rewards] turn_reward`; with `last_turn` they sum to the seat's per-turn
    /// signals plus its episode-level parts once), else `last_call_rewards`.
    pub fn call_rewards(&self, seat: Seat) -> Vec<f64> {
        let calls: Vec<usize> = self.own_calls(seat).map(|(i, _)| i).collect();
        if !self.turn_rewards.is_empty() {
            return calls
                .iter()
                .map(|i| self.turn_reward(*i).unwrap_or(0.0))
                .collect();
        }
        last_call_rewards(calls.len(), self.rewards[seat])
    }
}

impl TableRecord {
    /// The turns of the seat at index `seat` (with their indexes in `turns`): every attempt it
    /// made, a retried one included, and none of a logged prefix's
    /// ([`TableRecord::is_logged_turn`]), as a two-party seat's own calls are.
    pub fn own_calls(&self, seat: usize) -> impl Iterator<Item = (usize, &TableTurnRecord)> {
        self.turns
            .iter()
            .enumerate()
            .filter(move |(i, t)| own_call(self.is_logged_turn(*i), t.turn.seat, seat))
    }

    /// The exact ids of the calls of the seat at index `seat` ([`TableRecord::own_calls`]),
    /// checked.
    pub fn exact_calls(&self, seat: usize) -> Result<ExactCalls<'_>, NoTrajectory> {
        ExactCalls::of(
            self.own_calls(seat)
                .map(|(_, t)| t.turn.completion.tokens.as_ref()),
        )
    }

    /// Per call of the seat at index `seat`, its reward, by the two-party rule: each call's
    /// own turn reward where the record holds them (`turn_reward` not `episode`), else
    /// `last_call_rewards` of the seat's role's reward.
    pub fn call_rewards(&self, seat: usize) -> Vec<f64> {
        if !self.turn_rewards.is_empty() {
            return self
                .own_calls(seat)
                .map(|(i, _)| self.turn_reward(i).unwrap_or(0.0))
                .collect();
        }
        let total = self
            .seats
            .get(seat)
            .and_then(|s| self.rewards.get(&s.role))
            .copied()
            .unwrap_or(0.0);
        last_call_rewards(self.own_calls(seat).count(), total)
    }
}

impl super::MarketRecord {
    /// The turns of the seat at index `seat` (with their indexes in `turns`): every attempt it
    /// made, a retried one included, as a table seat's own calls are.
    pub fn own_calls(
        &self,
        seat: usize,
    ) -> impl Iterator<Item = (usize, &crate::market::MarketTurn)> {
        self.turns
            .iter()
            .enumerate()
            .filter(move |(_, t)| own_call(false, t.seat, seat))
    }

    /// The exact ids of the calls of the seat at index `seat` ([`super::MarketRecord::own_calls`]),
    /// checked.
    pub fn exact_calls(&self, seat: usize) -> Result<ExactCalls<'_>, NoTrajectory> {
        ExactCalls::of(market_calls(&self.turns, seat))
    }

    /// The reward of the seat at index `seat`: its surplus, the gain from its trades
    /// (`outcome.metrics.surplus`, in currency units; 0 without a trade).
    pub fn reward(&self, seat: usize) -> f64 {
        self.outcome
            .metrics
            .surplus
            .get(seat)
            .copied()
            .unwrap_or(0.0)
    }

    /// Per call of the seat at index `seat`, its reward by the two-party rule
    /// (`last_call_rewards` of [`super::MarketRecord::reward`]): a market records no per-turn
    /// rewards.
    pub fn call_rewards(&self, seat: usize) -> Vec<f64> {
        last_call_rewards(self.own_calls(seat).count(), self.reward(seat))
    }
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
        let t = ExactCalls::of([Some(&a), Some(&b), Some(&c)])
            .unwrap()
            .trajectory();
        assert_eq!(t.prompt_ids, vec![1, 2, 3]);
        assert_eq!(t.response_ids, vec![10, 11, 4, 12, 5, 6, 13, 14]);
        assert_eq!(t.mask, vec![1, 1, 0, 1, 0, 0, 1, 1]);
        assert_eq!(
            t.logprobs,
            vec![-0.5, -0.25, 0.0, -1.0, 0.0, 0.0, -0.125, 0.0]
        );
        // The prompt then the response is the seat's whole sequence, call after call.
        assert_eq!(whole(&t), vec![1, 2, 3, 10, 11, 4, 12, 5, 6, 13, 14]);
    }

    /// A trajectory's prompt then its response: the seat's whole sequence.
    fn whole(t: &Trajectory) -> Vec<u32> {
        t.prompt_ids
            .iter()
            .chain(&t.response_ids)
            .copied()
            .collect()
    }

    #[test]
    fn one_call_is_its_prompt_and_its_sampled_ids() {
        let a = call(&[1, 2], &[7, 8, 9], &[-0.5, -0.25, -1.0]);
        let t = ExactCalls::of([Some(&a)]).unwrap().trajectory();
        assert_eq!(t.prompt_ids, vec![1, 2]);
        assert_eq!(t.response_ids, vec![7, 8, 9]);
        assert_eq!(t.mask, vec![1, 1, 1]);
        assert_eq!(t.logprobs, vec![-0.5, -0.25, -1.0]);
    }

    #[test]
    fn no_trajectory_without_calls_without_ids_or_with_unpaired_logprobs() {
        let good = call(&[1], &[2], &[-0.5]);
        let unpaired = call(&[1], &[2, 3], &[-0.5]);
        assert_eq!(
            ExactCalls::of(std::iter::empty()).unwrap_err(),
            NoTrajectory::NoCalls
        );
        assert_eq!(
            ExactCalls::of([Some(&good), None]).unwrap_err(),
            NoTrajectory::NoTokens { call: 1 }
        );
        // The first call that fails says why, in order.
        assert_eq!(
            ExactCalls::of([Some(&unpaired), None]).unwrap_err(),
            NoTrajectory::BadLogprobs {
                call: 0,
                logprobs: 1,
                ids: 2
            }
        );
    }

    #[test]
    fn of_sampled_admits_calls_whose_logprobs_were_left_out() {
        let with = call(&[1], &[2], &[-0.5]);
        let without = call(&[3], &[4, 5], &[]);
        // The exports' rule refuses them; a rollout's takes them, without logprobs.
        assert_eq!(
            ExactCalls::of([Some(&with), Some(&without)]).unwrap_err(),
            NoTrajectory::BadLogprobs {
                call: 1,
                logprobs: 0,
                ids: 2
            }
        );
        let calls = ExactCalls::of_sampled([Some(&with), Some(&without)]).unwrap();
        assert!(!calls.has_logprobs());
        let t = calls.trajectory();
        assert_eq!(t.response_ids, vec![2, 3, 4, 5]);
        assert_eq!(t.mask, vec![1, 0, 1, 1]);
        assert!(t.logprobs.is_empty());
        // Given, they still pair up; and with every call's, the trajectory is `of`'s.
        let unpaired = call(&[1], &[2, 3], &[-0.5]);
        assert!(ExactCalls::of_sampled([Some(&unpaired)]).is_err());
        let both = ExactCalls::of_sampled([Some(&with)]).unwrap();
        assert!(both.has_logprobs());
        assert_eq!(
            both.trajectory(),
            ExactCalls::of([Some(&with)]).unwrap().trajectory()
        );
    }

    #[test]
    fn an_episode_in_play_has_its_records_calls() {
        let record = table_with_ids(|_| true);
        let turns: Vec<TableTurn> = record.turns.iter().map(|t| t.turn.clone()).collect();
        for seat in 0..record.seats.len() {
            assert_eq!(
                ExactCalls::of(table_calls(&turns, seat)),
                record.exact_calls(seat),
                "seat {seat}"
            );
        }
        use crate::fixtures::{casino, learner_first_as, play, record_of, turn};
        use crate::scenario::Role;
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("Food?", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("Yes.", "[ACCEPT_DEAL]"),
            ],
        );
        let record = record_of(e.clone());
        for seat in Seat::BOTH {
            let calls: Vec<_> = episode_calls(e.turns(), seat, &e.setup().rules).collect();
            let from_record: Vec<_> = record
                .own_calls(seat)
                .map(|(_, t)| t.tokens.as_ref())
                .collect();
            assert_eq!(calls, from_record);
            assert_eq!(calls.len(), 1);
        }
    }

    #[test]
    fn without_per_turn_rewards_the_last_call_gets_the_total() {
        assert_eq!(last_call_rewards(3, 0.7), vec![0.0, 0.0, 0.7]);
        assert_eq!(last_call_rewards(1, -1.0), vec![-1.0]);
        assert!(last_call_rewards(0, 0.7).is_empty());
    }

    /// A table played to its end, every attempt with ids of its own (`[100 + i]` then
    /// `[i]`), every fourth attempt unreadable so that its seat retries.
    fn table_with_ids(tokens_on: impl Fn(usize) -> bool) -> TableRecord {
        use crate::game::{Completion, EpisodeSeed};
        use crate::table::TableOptions;
        let options = TableOptions::default();
        let seeds = EpisodeSeed {
            run: 3,
            group: 0,
            member: 0,
        };
        let mut ep = crate::table::tests::episode(seeds.table_seed(), &options);
        let s = ep.scenario().clone();
        let mut i = 0usize;
        while let Some(seat) = ep.to_move() {
            i += 1;
            let text = if i.is_multiple_of(4) {
                "Thought: no\nTalk: oops".to_string()
            } else {
                let deal = s.all_deals().nth(i * 53 % 100).unwrap();
                format!(
                    "Thought: t{i}\nTalk: how about\nAction: [SUBMIT_DEAL] {}",
                    s.render_deal(&deal)
                )
            };
            let completion = Completion {
                tokens: tokens_on(seat).then(|| TurnTokens {
                    prompt_ids: vec![100 + i as u32],
                    completion_ids: vec![i as u32],
                    logprobs: vec![-0.5],
                    ..TurnTokens::default()
                }),
                ..Completion::from(text.as_str())
            };
            ep.step(seat, completion).unwrap();
        }
        TableRecord::of("run", seeds, &ep, &options, &[], &[])
    }

    #[test]
    fn a_table_seats_calls_are_all_its_attempts_retries_included() {
        let record = table_with_ids(|_| true);
        let seat = record.turns[3].turn.seat;
        assert!(
            record.turns[3].turn.error.is_some(),
            "the fourth attempt is retried"
        );
        let attempts: Vec<usize> = (0..record.turns.len())
            .filter(|i| record.turns[*i].turn.seat == seat)
            .collect();
        assert!(attempts.contains(&3));
        let calls = record.exact_calls(seat).unwrap();
        assert_eq!(calls.len(), attempts.len());
        let t = calls.trajectory();
        // Prompt then response: each attempt's prompt ids and sampled ids, in order.
        let whole = whole(&t);
        let expected: Vec<u32> = attempts
            .iter()
            .flat_map(|i| [101 + *i as u32, 1 + *i as u32])
            .collect();
        assert_eq!(whole, expected);
        assert_eq!(t.mask.iter().filter(|m| **m == 1).count(), attempts.len());
        // No per-turn rewards at a table: the seat's reward on its last call.
        let rewards = record.call_rewards(seat);
        assert_eq!(rewards.len(), attempts.len());
        assert_eq!(
            rewards.last().copied(),
            record.rewards.get(&record.seats[seat].role).copied()
        );
        assert!(rewards[..rewards.len() - 1].iter().all(|r| *r == 0.0));
    }

    #[test]
    fn a_table_seat_played_without_ids_has_no_trajectory() {
        let record = table_with_ids(|seat| seat != 0);
        assert_eq!(
            record.exact_calls(0).unwrap_err(),
            NoTrajectory::NoTokens { call: 0 }
        );
        let other = record.turns.iter().find(|t| t.turn.seat != 0).unwrap();
        assert!(record.exact_calls(other.turn.seat).is_ok());
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
        assert_eq!(record.call_rewards(Seat::Learner), vec![0.0, 0.7]);
        assert_eq!(record.call_rewards(Seat::Opponent), vec![0.0, 0.2]);
        // Per-turn rewards: each call its own turn's.
        record.turn_rewards = vec![Some(0.5), Some(0.1), Some(0.25), Some(-0.5)];
        assert_eq!(record.call_rewards(Seat::Learner), vec![0.5, 0.25]);
        assert_eq!(record.call_rewards(Seat::Opponent), vec![0.1, -0.5]);
    }
}
