//! What one seat may know of an episode, as structured data beside its chat messages: the
//! deal space, its own private values (never the other side's), the offer on the table from its
//! side, the turns left, the rules that can end the game, the moves legal now, what became of
//! its last completion and how the episode ended for it (issue 22, item 5).
//!
//! [`SeatState`] is built in one place, [`Episode::seat_state`](crate::game::Episode), and
//! every face shows that one build: `dealgym serve`'s observation and the Python binding's.
//! Prices are in currency units (a price term's cents / 100), as the prompts write them.

mod state;

pub use state::{
    ConstantsParts, EndingRules, IssueView, ItemView, MomentParts, MoveView, OfferView,
    OutcomeView, OwnTurn, PrivateView, PublicView, RegulationView, SeatConstants, SeatMoment,
    SeatState, TermValue, TurnCount, WeightView,
};
