//! `tinker`: one line per seat and episode holding its transitions in the shape of the Tinker
//! cookbook's `Transition` — `ob` (the full prompt of the call as ids: every earlier call's
//! prompt and completion, then this call's prompt), `ac` (`tokens` sampled and their
//! `maybe_logprobs`; a narrated turn's forced action ids are left to the next `ob`), `reward` (each turn's own where the record holds per-turn rewards, else
//! the episode's reward on the last transition, 0 before) and `episode_done` (on the last). A trajectory's `final_ob` is not written: a seat's episode
//! ends with its own last action.

use std::io::{self, Write};

use serde::Serialize;

use super::tokens::SeatTokens;
use super::write_line;

#[derive(Serialize)]
struct Line<'a, H: Serialize> {
    transitions: Vec<Transition<'a>>,
    #[serde(flatten)]
    head: &'a H,
}

#[derive(Serialize)]
struct Transition<'a> {
    ob: Vec<u32>,
    ac: Action<'a>,
    reward: f64,
    episode_done: bool,
}

#[derive(Serialize)]
struct Action<'a> {
    tokens: &'a [u32],
    maybe_logprobs: &'a [f64],
}

pub fn write<H: Serialize>(seat: &SeatTokens<H>, out: &mut dyn Write) -> io::Result<usize> {
    let calls = seat.calls.calls();
    let mut context: Vec<u32> = Vec::new();
    let mut transitions = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        context.extend(&call.prompt_ids);
        // A narrated turn's forced action ids were written, not sampled: they are not the
        // action, and the next observation holds them.
        let sampled = call.sampled_len();
        transitions.push(Transition {
            ob: context.clone(),
            ac: Action {
                tokens: &call.completion_ids[..sampled],
                maybe_logprobs: &call.logprobs[..call.logprobs.len().min(sampled)],
            },
            reward: seat.call_rewards[i],
            episode_done: i + 1 == calls.len(),
        });
        context.extend(&call.completion_ids);
    }
    write_line(
        out,
        &Line {
            transitions,
            head: seat.head,
        },
    )?;
    Ok(1)
}
