//! How an episode ended, and what each seat got.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::Terms;
use crate::scenario::{bargained_ratio, Scenario};

use super::setup::Setup;
use crate::vocab::{PerSeat, Seat};

/// The endings of the book's `design/episode.md`. `max_turns` is a truncation; the others are
/// terminations.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// What went wrong, for `error` and `format_forfeit` endings; which rule ended a
    /// `reject_loop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What an `error` ending's error was: the endpoint's (`backend`), a bug in dealgym
    /// (`internal`), a server's limit (`limit`) or a client that dropped it unfinished
    /// (`abandoned`), so a user filtering errors never mistakes one for another. Absent on other endings, and on error records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorCause>,
}

/// The cause of an `error` ending ([`Outcome::error_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCause {
    /// A player's endpoint failed (after its retries): a property of the run's backends.
    Backend,
    /// The code playing the episode panicked: a bug in dealgym, counted apart, and the
    /// command's exit status says so.
    Internal,
    /// A limit of the server playing it ended the episode (its text past
    /// `--max-episode-bytes`, a model's completion past `--max-completion-bytes`); the detail
    /// names the limit, its value and the flag.
    Limit,
    /// A client of the server dropped the episode before it ended (`DELETE`); the detail
    /// says `abandoned:` and why. Its turns are kept, so it replays as far as it went.
    Abandoned,
}

/// Each seat's utility for a deal written from the learner's side (the opponent reads it
/// flipped: [`Terms::flipped`]).
pub(crate) fn deal_utilities(
    scenario: &Scenario,
    setup: &Setup,
    learner_terms: &Terms,
) -> PerSeat<f64> {
    let space = scenario.term_space();
    PerSeat::new(
        scenario.utility(setup.seats.learner.role, learner_terms),
        scenario.utility(
            setup.seats.opponent.role,
            &learner_terms.seen_by_other(space),
        ),
    )
}

/// Utilities and ρ per seat for a deal (terms from the learner's side) or, with `None`, for no
/// deal (each side gets the no-deal value).
pub fn seat_values(
    scenario: &Scenario,
    setup: &Setup,
    learner_terms: Option<&Terms>,
) -> (PerSeat<f64>, PerSeat<f64>) {
    let utility = match learner_terms {
        Some(terms) => deal_utilities(scenario, setup, terms),
        None => PerSeat::from_fn(|seat| setup.no_deal_value_of(seat)),
    };
    let rho = utility.map(|seat, u| bargained_ratio(scenario, setup.seats[seat].role, *u));
    (utility, rho)
}
