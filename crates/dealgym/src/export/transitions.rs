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

use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;

use crate::game::{OutcomeKind, Prompts, Seat};
use crate::planner::{state_text, Candidate};
use crate::record::EpisodeRecord;
use crate::run::ScenarioSource;

use super::{write_line, ExportError, Head};

/// Each turn's state text (for the seat that made it) and each seat's state at the end.
pub(crate) struct States {
    before: Vec<String>,
    end: crate::game::PerSeat<String>,
}

impl States {
    /// Replay `record` and take the state texts along the way.
    pub fn of(
        record: &EpisodeRecord,
        scenarios: &mut ScenarioSource,
        prompts: &Arc<Prompts>,
    ) -> Result<States, ExportError> {
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
        let end = crate::game::PerSeat::from_fn(|seat| state_text(&episode, seat));
        Ok(States { before, end })
    }
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    head: &'a Head<'a>,
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

pub fn write(
    head: &Head,
    record: &EpisodeRecord,
    states: &States,
    out: &mut dyn Write,
) -> io::Result<usize> {
    let seat = head.seat;
    let mine: Vec<usize> = (0..record.turns.len())
        .filter(|&i| record.turns[i].seat == seat)
        .collect();
    for (n, &i) in mine.iter().enumerate() {
        let turn = &record.turns[i];
        let last = n + 1 == mine.len();
        let (candidates, chosen) = match &turn.planning {
            Some(p) => (p.candidates.clone(), p.chosen),
            None => (
                vec![Candidate {
                    raw: turn.raw.clone(),
                    act: turn.parsed.act.clone(),
                    value: None,
                }],
                0,
            ),
        };
        let next_state = match mine.get(n + 1) {
            Some(&next) => &states.before[next],
            None => &states.end[seat],
        };
        let status = match (last, record.kind()) {
            (false, _) => "ongoing",
            (true, OutcomeKind::Deal) => "completed",
            (true, _) => "failed",
        };
        write_line(
            out,
            &Line {
                head,
                turn: i,
                state: &states.before[i],
                candidates,
                chosen,
                action: &turn.raw,
                act: turn.parsed.act.as_deref(),
                reward: if last { head.reward } else { 0.0 },
                turn_reward: record.turn_rewards.get(i).copied().flatten(),
                next_state,
                status,
                done: last,
            },
        )?;
    }
    Ok(mine.len())
}
