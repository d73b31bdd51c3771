//! Planner hooks (the DialogXpert setting, issue 26 part 4): what a planner that proposes a few
//! candidate turns, scores them with a value model and commits one needs from the engine —
//! without copying its rules.
//!
//! - [`state_text`]: the deterministic text of an episode as one seat knows it, the `s_t` a
//!   value model scores candidates against (DialogXpert §3.2 serializes the dialogue state
//!   into its Q-network's input) — one rule over both kinds of episode, each of which says
//!   what its seat knows ([`Known`]);
//! - [`ValueModel`]: scoring (state text, candidate), the in-process hook; [`choose`]: the one
//!   selection rule (the highest value, the first of equals);
//! - [`Planning`]: the candidates a turn was chosen from and which was committed, as a record's
//!   turn keeps them;
//! - snapshots of an episode for look-ahead are [`Episode::snapshot`] and
//!   [`Episode::restore`].
//!
//! Nothing here does I/O: the HTTP value model and the planner player are the runtime's.
//!
//! [`Episode::snapshot`]: crate::game::Episode::snapshot
//! [`Episode::restore`]: crate::game::Episode::restore

mod state_text;
mod value;

pub use state_text::{state_text, Known, SeenMove};
pub use value::{choose, Candidate, Planning, ValueModel};
