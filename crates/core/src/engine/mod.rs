//! The turn mechanics every game shares, whatever its rulebook: a seat's history and exact
//! token sequence (`seat.rs`: what a seat keeps of its own replies — never its reasoning — and
//! of what it was sent), and what happens to a completion that cannot be used (`attempts.rs`:
//! correct and retry, or forfeit). The two rulebooks — the bilateral one of [`crate::game`]
//! (a standing offer, alternation, ACCEPT of the standing offer, reject loops) and the table
//! one of [`crate::table`] (a drawn schedule, numbered offers, the agreement rule, votes) —
//! decide what a move does; how a turn is read, kept, corrected and forfeited is written here,
//! once, and both episodes call it. `drive.rs` is the one loop that plays an episode of either
//! kind: while a seat is to move, ask its player. `seated.rs` is what a face hosting an episode
//! of seats named by role (a table, a market) needs of it, whichever it is ([`Seated`]).

mod attempts;
mod drive;
mod regulation;
mod seat;
mod seated;

pub(crate) use attempts::may_retry;
pub use attempts::DEFAULT_RETRIES;
pub(crate) use attempts::{after_unusable, Unusable};
pub use drive::{drive, drive_now, Players, ToMove};
pub(crate) use regulation::{move_played, regulate};
pub use seat::{own_message, visible_text};
pub(crate) use seat::{Reply, SeatHistory};
pub use seated::{Ending, Seated, SeatedRecord, SeatedRun};

use crate::game::OutcomeKind;

/// Whether an episode that ended as `kind` (`None`: still going) was terminated or truncated,
/// as Gymnasium tells them apart: the turn cap or the end of the schedule truncates, every
/// other ending terminates.
pub fn ending(kind: Option<OutcomeKind>) -> (bool, bool) {
    let truncated = kind.is_some_and(OutcomeKind::is_truncation);
    (kind.is_some() && !truncated, truncated)
}
