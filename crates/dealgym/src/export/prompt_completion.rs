//! `prompt-completion`: one line per seat and turn, `{"prompt": [...], "completion": [...]}` —
//! the messages the turn's call was sent and what the seat answered, in TRL's conversational
//! prompt-completion shape (SFT with completion-only loss; the prompts of GRPO). Each line
//! carries the episode's reward and group statistics, the turn's own reward (its own where
//! `[rewards] turn_reward` gave turns their own, else the episode's) and its own signals:
//! its reward signals by name, whether it was well-formed, its error kind, and what regulation
//! did to it.
//!
//! `--last-k N` cuts each prompt to the system prompt and the last N messages the seat
//! received, with its own replies between them. Counting received messages (not all messages)
//! keeps every prompt starting with a user message after the system prompt, which templates
//! that insist on alternating roles require.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use crate::game::{Message, MessageRole, RegulationEvent};
use crate::protocol::{render_action, ErrorKind, TermSpace};
use crate::record::EpisodeRecord;

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
    head: &'a Head<'a>,
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
    k: Option<usize>,
    out: &mut dyn Write,
) -> io::Result<usize> {
    let space = replayed.episode.scenario().term_space();
    let mut lines = 0;
    for (turn_index, turn) in record.turns.iter().enumerate() {
        if turn.seat != head.seat {
            continue;
        }
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
            head,
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
