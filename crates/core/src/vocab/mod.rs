//! The shared vocabulary: the two seats of an episode, a value per seat, chat messages, what an
//! endpoint said about a call and the exact tokens of a call.
//! A leaf module: it imports nothing from the rest of the crate, so every layer (the episode,
//! scoring, the HTTP client, the runner, the surfaces) can speak of seats and messages without
//! importing one another.

mod call;
mod message;
mod seat;
mod tokens;

pub use call::{Call, PromptTokensDetails, Usage};
pub use message::{FunctionCall, Message, MessageRole, ToolCall};
pub use seat::{PerSeat, Seat};
pub use tokens::{continued_prefix, extend, Drift, LogprobsMismatch, NextPrompt, TurnTokens};
