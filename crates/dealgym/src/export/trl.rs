//! `trl-rollout`: one line per seat and episode with the keys a TRL `GRPOTrainer`
//! `rollout_func` returns for one sample — `prompt_ids` (the seat's first call's prompt),
//! `completion_ids` (everything after it: sampled ids and the environment's prompt suffixes, in
//! order), `logprobs` (0.0 on environment ids) and `env_mask` (1 on sampled ids, 0 on ids the
//! environment wrote; TRL multiplies it into the loss mask) — and, beside them, the reward
//! columns a reward function receives as keyword arguments.

use std::io::{self, Write};

use serde::Serialize;

use super::tokens::SeatTokens;
use super::write_line;

#[derive(Serialize)]
struct Line<'a, H: Serialize> {
    prompt_ids: Vec<u32>,
    completion_ids: Vec<u32>,
    logprobs: Vec<f64>,
    env_mask: Vec<u8>,
    #[serde(flatten)]
    head: &'a H,
}

pub fn write<H: Serialize>(seat: &SeatTokens<H>, out: &mut dyn Write) -> io::Result<usize> {
    let t = seat.calls.trajectory();
    let line = Line {
        prompt_ids: t.prompt_ids,
        completion_ids: t.response_ids,
        logprobs: t.logprobs,
        env_mask: t.mask,
        head: seat.head,
    };
    write_line(out, &line)?;
    Ok(1)
}
