//! `prompt-completion`: one line per seat and turn, `{"prompt": [...], "completion": [...]}` —
//! the messages the turn's call was sent and what the seat answered, in TRL's conversational
//! prompt-completion shape (SFT with completion-only loss; the prompts of GRPO). Each line
//! carries the turn's own reward (its own where `[rewards] turn_reward` gave turns their own,
//! else the episode's) and its own signals: its reward signals by name, whether it was
//! well-formed, its error kind, and what regulation did to it.
//!
//! `reward` and the group statistics are the episode's, except for a record scored per turn
//! (`turn_reward = "every_turn"`, [`scored_per_turn`]): there each row is a GRPO sample of its
//! own, as the CaSiNo harness's rows are (§3.3.2–3.3.3), so `reward` is the turn's and
//! `advantage` is measured in its turn group (the same turn number of the same seat across the
//! GRPO group, [`GroupTable::turn_stats`]); the episode's reward and statistics stay beside
//! them as `episode_reward`, `episode_advantage`, `episode_group_…` and `episode_role_…`.
//!
//! `--last-k N` cuts each prompt to the system prompt and the last N messages the seat
//! received, with its own replies between them. Counting received messages (not all messages)
//! keeps every prompt starting with a user message after the system prompt, which templates
//! that insist on alternating roles require.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::game::{Message, MessageRole, RegulationEvent};
use crate::protocol::{render_action, ErrorKind, TermSpace};
use crate::record::EpisodeRecord;

use super::groups::{scored_per_turn, turn_group_key, GroupStats, GroupTable};
use super::views::{own_message, Replayed};
use super::{write_line, Head};

#[derive(Serialize)]
struct Line<'a> {
    prompt: Vec<&'a Message>,
    completion: [Message; 1],
    /// The turn's position among all the episode's turns (both seats, retries included).
    turn_index: usize,
    /// The turn's position among this seat's turns.
    seat_turn: usize,
    /// 0 for a first try, 1… after a correction.
    attempt: u32,
    format_ok: bool,
    error_kind: Option<ErrorKind>,
    /// The action that took effect, as the mover would write it; null for an unusable turn.
    played: Option<String>,
    regulation: Option<Regulation>,
    /// What this turn is worth ([`EpisodeRecord::turn_reward`]): its own reward where the
    /// record holds per-turn rewards (null for a logged prefix's turn), else the episode's.
    turn_reward: Option<f64>,
    /// The turn's reward signals by name, unweighted (`format`, `length`, …, `rule:NAME`, a
    /// per-turn `judge`); empty under the terminal reward alone.
    turn_signals: &'a BTreeMap<String, f64>,
    #[serde(flatten)]
    head: Columns<'a>,
}

/// What a row says about its seat, episode, reward and group.
#[derive(Serialize)]
#[serde(untagged)]
enum Columns<'a> {
    /// The episode's reward and group statistics (every record not scored per turn).
    Episode(&'a Head<'a>),
    /// A record scored per turn: [`turn_columns`].
    Turn(Map<String, Value>),
}

/// The columns of a row of a record scored per turn: the head's, with `reward` and the group
/// statistics made the turn's — its `reward` and its statistics in its turn group, both null
/// for a logged prefix's turn (no reward: no sample of the policy) — and the episode's kept
/// under the same names prefixed `episode_`.
fn turn_columns(
    episode: &Map<String, Value>,
    reward: Option<f64>,
    stats: Option<GroupStats>,
) -> Map<String, Value> {
    let mut columns = episode.clone();
    let turn = match stats {
        Some(stats) => serde_json::to_value(stats).unwrap_or_default(),
        None => Value::Null,
    };
    for key in reward_keys(episode) {
        if let Some(value) = columns.remove(&key) {
            columns.insert(format!("episode_{key}"), value);
        }
        let value = if key == "reward" {
            reward.map_or(Value::Null, Value::from)
        } else {
            turn.get(&key).cloned().unwrap_or(Value::Null)
        };
        columns.insert(key, value);
    }
    columns
}

/// The keys of the head that are about the reward: `reward` and every group statistic
/// ([`GroupStats`]'s fields, as the head serializes them).
fn reward_keys(episode: &Map<String, Value>) -> Vec<String> {
    let stats = serde_json::to_value(GroupStats::default()).unwrap_or_default();
    std::iter::once("reward".to_string())
        .chain(
            stats
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().cloned()),
        )
        .filter(|k| episode.contains_key(k))
        .collect()
}

/// What regulation replaced, written as action lines.
#[derive(Serialize)]
struct Regulation {
    original: String,
    replacement: String,
    utility: f64,
    floor: f64,
}

impl Regulation {
    fn of(event: &RegulationEvent, space: TermSpace<'_>) -> Regulation {
        Regulation {
            original: render_action(&event.original, space, true),
            replacement: render_action(&event.replacement, space, true),
            utility: event.utility,
            floor: event.floor,
        }
    }
}

/// `prompt` cut to its system message and the last `k` user messages, with everything after
/// the first of them.
pub fn last_k(prompt: &[Message], k: Option<usize>) -> Vec<&Message> {
    let Some(k) = k else {
        return prompt.iter().collect();
    };
    let received: Vec<usize> = prompt
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, m)| m.role == MessageRole::User)
        .map(|(i, _)| i)
        .collect();
    if received.len() <= k {
        return prompt.iter().collect();
    }
    let start = received[received.len() - k];
    prompt[..1].iter().chain(&prompt[start..]).collect()
}

pub fn write(
    head: &Head,
    record: &EpisodeRecord,
    replayed: &Replayed,
    table: &GroupTable,
    k: Option<usize>,
    out: &mut dyn Write,
) -> io::Result<usize> {
    let space = replayed.episode.scenario().term_space();
    let turn_reward = record.reward_config.as_ref().map(|c| c.turn_reward);
    let per_turn = scored_per_turn(turn_reward, &record.turn_rewards);
    let episode = match serde_json::to_value(head)? {
        Value::Object(map) if per_turn => map,
        _ => Map::new(),
    };
    let numbers = turn_group_key(record.turns.iter().map(|t| t.seat));
    let mut lines = 0;
    for (turn_index, turn) in record.turns.iter().enumerate() {
        if turn.seat != head.seat {
            continue;
        }
        let columns = if per_turn {
            let reward = record.turn_rewards.get(turn_index).copied().flatten();
            let stats = reward.and_then(|reward| {
                table.turn_stats(
                    &record.run_id,
                    &record.group_id,
                    head.seat,
                    numbers[turn_index].1,
                    head.role,
                    head.self_play,
                    reward,
                )
            });
            Columns::Turn(turn_columns(&episode, reward, stats))
        } else {
            Columns::Episode(head)
        };
        let line = Line {
            prompt: last_k(replayed.prompt(record, turn_index), k),
            completion: [own_message(turn)],
            turn_index,
            seat_turn: lines,
            attempt: turn.attempt,
            format_ok: turn.parsed.format_ok,
            error_kind: turn.parsed.error.as_ref().map(|e| e.kind),
            played: turn.played.as_ref().map(|a| render_action(a, space, true)),
            regulation: turn.regulation.as_ref().map(|e| Regulation::of(e, space)),
            turn_reward: record.turn_reward(turn_index),
            turn_signals: &turn.rewards,
            head: columns,
        };
        write_line(out, &line)?;
        lines += 1;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: MessageRole, content: &str) -> Message {
        Message::new(role, content)
    }

    #[test]
    fn last_k_keeps_the_system_prompt_and_the_last_k_received_messages() {
        use MessageRole::*;
        let prompt = [
            m(System, "s"),
            m(User, "u1"),
            m(Assistant, "a1"),
            m(User, "u2"),
            m(Assistant, "a2"),
            m(User, "u3"),
        ];
        fn contents(v: Vec<&Message>) -> Vec<&str> {
            v.into_iter().map(|m| m.content.as_str()).collect()
        }
        assert_eq!(contents(last_k(&prompt, Some(1))), ["s", "u3"]);
        assert_eq!(contents(last_k(&prompt, Some(2))), ["s", "u2", "a2", "u3"]);
        assert_eq!(
            contents(last_k(&prompt, Some(3))),
            contents(last_k(&prompt, None))
        );
        assert_eq!(contents(last_k(&prompt, Some(9))).len(), 6);
    }
}
