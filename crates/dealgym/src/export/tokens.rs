//! What the token formats (verl, trl-rollout, tinker) write of one seat of one episode, for
//! either kind of record. The ids come only from token-exact records (a turn's `tokens` on
//! every call of the seat), and the trajectory is built by the core's one rule
//! ([`ExactCalls::trajectory`]); nothing is ever re-tokenized from text.

use serde::Serialize;

use crate::record::{ExactCalls, NoTrajectory};

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

impl From<NoTrajectory> for Skip {
    fn from(why: NoTrajectory) -> Skip {
        match why {
            NoTrajectory::NoCalls => Skip::NoTurns,
            NoTrajectory::NoTokens { .. } => Skip::NoTokens,
            NoTrajectory::BadLogprobs { .. } => Skip::BadTokens,
        }
    }
}

/// One seat of one episode as the token formats write it: its checked calls, each call's
/// reward, the milliseconds its calls took, its reward, and its `head` — the ids, reward and
/// group statistics every line carries, in the shape of its kind of record (two-party or
/// table). One writer per format takes it, whatever the kind.
pub(crate) struct SeatTokens<'a, H: Serialize> {
    pub head: &'a H,
    pub reward: f64,
    pub calls: ExactCalls<'a>,
    /// Per call: each turn's own reward where the record holds per-turn rewards, else 0, …,
    /// 0, the episode's reward (`call_rewards` of the record).
    pub call_rewards: Vec<f64>,
    /// The latency of the seat's calls, summed, where the record has it.
    pub generate_ms: u64,
}
