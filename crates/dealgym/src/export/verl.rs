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

use super::tokens::SeatTokens;
use super::write_line;

#[derive(Serialize)]
struct Line<'a, H: Serialize> {
    prompt_ids: Vec<u32>,
    response_ids: Vec<u32>,
    response_mask: Vec<u8>,
    response_logprobs: Vec<f64>,
    reward_score: f64,
    /// Chat turns, counting the seat's received and its own messages: two per call.
    num_turns: usize,
    metrics: Metrics,
    extra_fields: Extra<'a, H>,
}

/// verl's `AgentLoopMetrics`: time spent generating and in tools, in seconds.
#[derive(Serialize)]
struct Metrics {
    generate_sequences: f64,
    tool_calls: f64,
}

#[derive(Serialize)]
struct Extra<'a, H: Serialize> {
    #[serde(flatten)]
    head: &'a H,
    /// Per call: each turn's own reward where the record holds per-turn rewards, else 0, …,
    /// 0, the episode's reward ([`SeatTokens::call_rewards`]).
    turn_rewards: &'a [f64],
}

pub fn write<H: Serialize>(seat: &SeatTokens<H>, out: &mut dyn Write) -> io::Result<usize> {
    let t = seat.calls.trajectory();
    let line = Line {
        prompt_ids: t.prompt_ids,
        response_ids: t.response_ids,
        response_mask: t.mask,
        response_logprobs: t.logprobs,
        reward_score: seat.reward,
        num_turns: 2 * seat.calls.len(),
        metrics: Metrics {
            generate_sequences: seat.generate_ms as f64 / 1000.0,
            tool_calls: 0.0,
        },
        extra_fields: Extra {
            head: seat.head,
            turn_rewards: &seat.call_rewards,
        },
    };
    write_line(out, &line)?;
    Ok(1)
}
