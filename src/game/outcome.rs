//! How an episode ended, and what each seat got.

use serde::{Deserialize, Serialize};

use crate::protocol::Terms;

use super::seat::{PerSeat, Seat};

/// The endings of DESIGN §4. `max_turns` is a truncation; the others are terminations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    Deal,
    WalkAway,
    RejectLoop,
    MaxTurns,
    FormatForfeit,
    /// The endpoint failed after its retries: excluded from metrics and reported apart.
    Error,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 6] = [
        OutcomeKind::Deal,
        OutcomeKind::WalkAway,
        OutcomeKind::RejectLoop,
        OutcomeKind::MaxTurns,
        OutcomeKind::FormatForfeit,
        OutcomeKind::Error,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Deal => "deal",
            OutcomeKind::WalkAway => "walk_away",
            OutcomeKind::RejectLoop => "reject_loop",
            OutcomeKind::MaxTurns => "max_turns",
            OutcomeKind::FormatForfeit => "format_forfeit",
            OutcomeKind::Error => "error",
        }
    }

    /// Gym's "truncated": the episode was cut off rather than ended by a player.
    pub fn is_truncation(self) -> bool {
        self == OutcomeKind::MaxTurns
    }
}

/// The end of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub kind: OutcomeKind,
    /// The seat that ended it, where one did (the acceptor, the walker, the forfeiter, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Seat>,
    /// The agreed terms, from the learner's side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<Terms>,
    /// The agreed terms in the grammar's canonical text, from the learner's side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms_text: Option<String>,
    pub utility: PerSeat<f64>,
    /// Bargained ratio ρ per seat.
    pub rho: PerSeat<f64>,
    /// What went wrong, for `error` endings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
