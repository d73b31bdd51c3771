//! `transitions`: one line per seat and turn, the per-turn transition stream a value-based
//! planner learns from (DialogXpert §3.2 keeps `(state, action, reward, next state)` in a
//! replay buffer; issue 26 part 4): the state text the seat moved in, the candidates it chose
//! from (a planner's; a single candidate, the completion itself, for any other player), the one
//! chosen, the reward, the state text at the seat's next move (or at the end), and the status.
//!
//! States are [`crate::planner::state_text`] — the seat's own view and the moves so far — rebuilt
//! by replaying the record through the engine, so they are exactly what a planner's value model
//! was sent during the run. The reward is sparse, as DialogXpert's negotiation reward is: the
//! seat's episode reward on its last transition, 0 before it; `turn_reward` beside it is the
//! record's per-turn reward for the turn where the config gave one. The status uses the paper's
//! words (§C): `ongoing`, then `completed` for a deal or `failed` for any other ending.
//!
//! Both kinds of record write through the one writer ([`write`]): a two-party seat's lines
//! carry the two-party head, a table seat's the table export's head (`table.rs`); each kind
//! gives its seat's turns as [`SeatTurn`]s and its states from its own replay.

use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;

use crate::game::{OutcomeKind, PerSeat, Prompts, Seat};
use crate::planner::{state_text, Candidate, Planning};
use crate::record::{EpisodeRecord, TableRecord};
use crate::replay::TableSource;
use crate::run::ScenarioSource;

use super::{write_line, ExportError};

/// Each turn's state text (for the seat that made it) and each seat's state at the end
/// (`End`: a [`PerSeat`] for a two-party record, one per seat index for a table).
pub(crate) struct States<End> {
    before: Vec<String>,
    end: End,
}

impl States<PerSeat<String>> {
    /// Replay `record` and take the state texts along the way.
    pub fn of(
        record: &EpisodeRecord,
        scenarios: &mut ScenarioSource,
        prompts: &Arc<Prompts>,
    ) -> Result<Self, ExportError> {
        let scenario = scenarios.find(record)?;
        let mut before = Vec::with_capacity(record.turns.len());
        let episode = record.replay_observing(&scenario, prompts, |episode| {
            let seat = episode.to_move().unwrap_or(Seat::Learner);
            before.push(state_text(episode, seat));
        })?;
        let same_ending = episode.outcome().map(|o| o.kind) == Some(record.kind());
        if before.len() != record.turns.len() || !same_ending {
            return Err(ExportError::ReplayDiffers {
                episode: record.episode_id.clone(),
            });
        }
        let end = PerSeat::from_fn(|seat| state_text(&episode, seat));
        Ok(States { before, end })
    }

    /// `seat`'s transitions in `record`, headed by `head`.
    pub fn seat<'a, H>(
        &'a self,
        head: &'a H,
        record: &'a EpisodeRecord,
        seat: Seat,
        reward: f64,
    ) -> SeatTransitions<'a, H> {
        let turns = record
            .turns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.seat == seat);
        SeatTransitions {
            head,
            turns: turns
                .map(|(index, t)| SeatTurn {
                    index,
                    raw: &t.raw,
                    act: t.parsed.act.as_deref(),
                    planning: t.planning.as_ref(),
                    turn_reward: record.turn_rewards.get(index).copied().flatten(),
                })
                .collect(),
            before: &self.before,
            end: &self.end[seat],
            reward,
            outcome: record.kind(),
        }
    }
}

impl States<Vec<String>> {
    /// Replay the table `record` through the table engine and take the state texts along the
    /// way; a record that does not replay exactly is refused, as the table's other text
    /// formats refuse it.
    pub fn of_table(
        record: &TableRecord,
        scenarios: &mut TableSource,
        prompts: &Arc<Prompts>,
    ) -> Result<Self, ExportError> {
        let scenario = scenarios.find(record)?;
        let seats = scenario.parties.len();
        let mut before = Vec::with_capacity(record.turns.len());
        let episode = record
            .replay_observing(scenario, prompts, |episode| {
                let seat = episode.to_move().unwrap_or_default();
                before.push(state_text(episode, seat));
            })
            .map_err(super::table::refused)?;
        let end = (0..seats).map(|seat| state_text(&episode, seat)).collect();
        Ok(States { before, end })
    }

    /// `seat`'s transitions in the table `record`, headed by `head`.
    pub fn seat<'a, H>(
        &'a self,
        head: &'a H,
        record: &'a TableRecord,
        seat: usize,
        reward: f64,
    ) -> SeatTransitions<'a, H> {
        let turns = record
            .turns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.turn.seat == seat);
        SeatTransitions {
            head,
            turns: turns
                .map(|(index, t)| SeatTurn {
                    index,
                    raw: &t.turn.completion.text,
                    act: t.turn.parsed.act.as_deref(),
                    planning: t.planning.as_ref(),
                    turn_reward: record.turn_rewards.get(index).copied().flatten(),
                })
                .collect(),
            before: &self.before,
            end: &self.end[seat],
            reward,
            outcome: record.outcome.outcome.kind,
        }
    }
}

/// One of a seat's turns as its transition reads it, from either kind of record.
pub(crate) struct SeatTurn<'a> {
    /// The turn's index in the record's `turns`.
    index: usize,
    /// The completion played.
    raw: &'a str,
    act: Option<&'a str>,
    /// A planner's candidates and the one committed.
    planning: Option<&'a Planning>,
    /// The record's per-turn reward for the turn, where the config gave one.
    turn_reward: Option<f64>,
}

/// What one seat's transition lines are written from.
pub(crate) struct SeatTransitions<'a, H> {
    head: &'a H,
    /// The seat's turns, in order.
    turns: Vec<SeatTurn<'a>>,
    /// Every turn's state text, by its index in the record's `turns`.
    before: &'a [String],
    /// The seat's state text at the end.
    end: &'a str,
    /// The seat's episode reward, given on its last transition.
    reward: f64,
    outcome: OutcomeKind,
}

impl<H> SeatTransitions<'_, H> {
    /// Whether the seat made no turn (it gives no line).
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }
}

#[derive(Serialize)]
struct Line<'a, H> {
    #[serde(flatten)]
    head: &'a H,
    /// The turn's index in the record's `turns`.
    turn: usize,
    state: &'a str,
    candidates: Vec<Candidate>,
    chosen: usize,
    /// The completion played (the chosen candidate).
    action: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    act: Option<&'a str>,
    reward: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_reward: Option<f64>,
    next_state: &'a str,
    status: &'static str,
    done: bool,
}

/// Write one line per turn of the seat: the one transitions rule of both kinds of record.
pub fn write<H: Serialize>(seat: &SeatTransitions<H>, out: &mut dyn Write) -> io::Result<usize> {
    let mine = &seat.turns;
    for (n, turn) in mine.iter().enumerate() {
        let last = n + 1 == mine.len();
        let (candidates, chosen) = match turn.planning {
            Some(p) => (p.candidates.clone(), p.chosen),
            None => (
                vec![Candidate {
                    raw: turn.raw.to_string(),
                    act: turn.act.map(str::to_string),
                    value: None,
                }],
                0,
            ),
        };
        let next_state = match mine.get(n + 1) {
            Some(next) => &seat.before[next.index],
            None => seat.end,
        };
        let status = match (last, seat.outcome) {
            (false, _) => "ongoing",
            (true, OutcomeKind::Deal) => "completed",
            (true, _) => "failed",
        };
        write_line(
            out,
            &Line {
                head: seat.head,
                turn: turn.index,
                state: &seat.before[turn.index],
                candidates,
                chosen,
                action: turn.raw,
                act: turn.act,
                reward: if last { seat.reward } else { 0.0 },
                turn_reward: turn.turn_reward,
                next_state,
                status,
                done: last,
            },
        )?;
    }
    Ok(mine.len())
}
