//! A completion that cannot be used — unreadable, or a move the rules do not allow — is sent
//! back with the reason and the same seat tries again, up to its retries; one more forfeits the
//! episode (the book's `design/episode.md`, "The malformed-turn policy"). The one home of that
//! policy for every game.

use crate::game::{PromptError, Prompts};
use crate::protocol::{TurnError, TurnFormat};

use super::{Reply, SeatHistory};

/// Corrections a seat gets per turn unless its episode says otherwise (`[episode]
/// format_retries`, a table's `retries`).
pub const DEFAULT_RETRIES: u32 = 1;

/// Whether a completion that could not be used on try `attempt` (0 first) is corrected and
/// asked again, rather than forfeited, when a seat has `retries` corrections per turn.
pub fn may_retry(attempt: u32, retries: u32) -> bool {
    attempt < retries
}

/// What became of a completion that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unusable {
    /// The seat was sent the correction and moves again.
    Retry,
    /// The seat has no retries left: the episode ends as a forfeit, with this reason.
    Forfeit(String),
}

/// Decide what follows a completion that could not be used: with a retry left, the reply goes
/// into its seat's history (its tool calls answered with the error), then the correction
/// rendered by `prompts`; without one, the episode is forfeited with the error's message.
pub(crate) fn after_unusable(
    history: &mut SeatHistory,
    prompts: &Prompts,
    format: TurnFormat,
    reply: Reply<'_>,
    error: &TurnError,
    attempt: u32,
    retries: u32,
) -> Result<Unusable, PromptError> {
    if !may_retry(attempt, retries) {
        // The episode ends here: nothing more is asked of the seat, and its history stays as
        // its last call was sent (what a reward model scores as its conversation); exports
        // write the forfeited reply after it, as they write every seat's last reply.
        return Ok(Unusable::Forfeit(error.message.clone()));
    }
    let correction = prompts.correction(&error.message, format)?;
    history.push_own(reply, Some(&error.message));
    history.push_user(correction);
    Ok(Unusable::Retry)
}
