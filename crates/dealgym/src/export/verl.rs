//! `verl`: one line per seat and episode with the fields of verl's `AgentLoopOutput` (the
//! output of a multi-turn agent loop), so a custom agent loop or dataset reader can build it
//! with `AgentLoopOutput(**line)`: `prompt_ids` is the seat's first call's prompt,
//! `response_ids` everything after it (sampled ids and the environment's prompt suffixes, in
//! order), `response_mask` 1 on sampled ids, `response_logprobs` their logprobs (0.0 on
//! environment ids), `metrics` (verl requires it: the seconds the seat's calls took, from the
//! record's timing). The ids, the seat's reward and its group's statistics go in
//! `extra_fields`.

use std::io::{self, Write};

use serde::Serialize;

use crate::game::TurnTokens;
use crate::record::EpisodeRecord;

use super::tokens::{call_rewards, own_calls, Trajectory};
use super::{write_line, Head};

#[derive(Serialize)]
struct Line<'a> {
    prompt_ids: &'a [u32],
    response_ids: Vec<u32>,
    response_mask: Vec<u8>,
    response_logprobs: Vec<f64>,
    reward_score: f64,
    /// Chat turns, counting the seat's received and its own messages: two per call.
    num_turns: usize,
    metrics: Metrics,
    extra_fields: Extra<'a>,
}

/// verl's `AgentLoopMetrics`: time spent generating and in tools, in seconds.
#[derive(Serialize)]
struct Metrics {
    generate_sequences: f64,
    tool_calls: f64,
}

#[derive(Serialize)]
struct Extra<'a> {
    #[serde(flatten)]
    head: &'a Head<'a>,
    /// Per call: each turn's own reward where the record holds per-turn rewards, else 0, …,
    /// 0, the episode's reward ([`call_rewards`]).
    turn_rewards: Vec<f64>,
}

pub fn write(
    head: &Head,
    record: &EpisodeRecord,
    calls: &[&TurnTokens],
    out: &mut dyn Write,
) -> io::Result<usize> {
    let t = Trajectory::of(calls);
    // The latency of each of the seat's calls, where the record has it (a logged prefix's
    // turns are no calls of this episode).
    let generate_ms: u64 = own_calls(record, head.seat)
        .filter_map(|(i, _)| record.timing.turn_ms.get(i))
        .sum();
    let line = Line {
        prompt_ids: t.prompt_ids,
        response_ids: t.response_ids,
        response_mask: t.mask,
        response_logprobs: t.logprobs,
        reward_score: head.reward,
        num_turns: 2 * calls.len(),
        metrics: Metrics {
            generate_sequences: generate_ms as f64 / 1000.0,
            tool_calls: 0.0,
        },
        extra_fields: Extra {
            head,
            turn_rewards: call_rewards(record, head.seat),
        },
    };
    write_line(out, &line)?;
    Ok(1)
}
