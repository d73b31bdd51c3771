//! The n-party engine: more than two at the table (the book's `design/episode.md`'s "a game with
//! more parties names its seats by role").
//!
//! A [`TableEpisode`] seats every party of a [`TableScenario`](crate::scenario::TableScenario)
//! by role, plays the schedule drawn from the episode's seed (`schedule.rs`), reads each turn
//! with the two-party grammar plus offer ids, or through the table's tools (`turn.rs`), keeps the offers and who accepts
//! each, ends on the game's agreement rule (`agreement.rs`, the one home of "when is an offer a
//! deal"), a veto party walking out, a forfeit or the end of the schedule, and rebuilds what
//! each seat sees from the turns (`prompt.rs`): the public text, its own confidential block, the
//! others' talk and played moves — never another seat's scores, minimum or thoughts.
//!
//! The two-party engine (`game::Episode`) is untouched: two-party families play and record as
//! before. A table game of two parties (alternation) plays here.

mod agreement;
mod episode;
mod prompt;
mod schedule;
mod state;
mod turn;

#[cfg(test)]
pub(crate) mod tests;

pub use agreement::counts_toward;
pub(crate) use agreement::{is_agreed, rule_met, would_accept};
pub use episode::{
    TableEpisode, TableError, TableOffer, TableOptions, TableOutcome, TableRegulation, TableSeat,
    TableSetup, TableStep, TableTurn,
};
pub use prompt::public_move;
pub use schedule::{Slot, SlotKind};
pub(crate) use state::seat_knowledge;
pub use state::{
    seat_state, PublicOffer, PublicOutcome, TableOwnValues, TableSeatKnowledge, TableSeatState,
};
pub(crate) use turn::accepted_offer;
pub use turn::{accept_line, as_table_tool_turn, table_tools};
