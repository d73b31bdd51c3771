//! The episode: a Gym-style state machine over the turn protocol (the book's `design/episode.md`).
//!
//! [`Episode`] applies one completion per step: it parses it, checks it against the rules
//! (`rules.rs`: accept legality, regulation, reject loops, the turn cap), forwards the Talk and the
//! re-rendered action to the counterpart, and ends the episode when a rule says so. Setup and
//! randomness live in `setup.rs`; prompts in `prompt.rs`. This module does no I/O beyond reading
//! prompt templates, so the same setup and completions always give the same episode.

mod campaign_prompt;
mod episode;
mod hotel_prompt;
mod outcome;
mod prompt;
pub mod rules;
mod setup;
mod snapshot;

pub use crate::engine::{own_message, visible_text};
pub use crate::vocab::{Drift, Message, MessageRole, PerSeat, Seat, ToolCall, TurnTokens};
pub(crate) use episode::Leftover;
pub use episode::{token_sequence, Completion, Episode, GameError, Step, Turn};
pub(crate) use outcome::deal_utilities;
pub use outcome::{seat_values, ErrorCause, Outcome, OutcomeKind};
pub use prompt::{PromptError, Prompts, SystemPrompt};
pub(crate) use rules::standing_after;
pub use rules::{Move, Offer, RegulationEvent};
pub use setup::{
    mix, mix_text, Continuation, CraigslistBudget, EpisodeConfig, EpisodeSeed, FirstMover, Persona,
    Rules, SeatSetup, Seatings, Setup, SetupError, Talk,
};
pub use snapshot::Snapshot;

#[cfg(test)]
mod tests;
