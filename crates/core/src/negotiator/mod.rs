//! The built-in concession negotiators (`rule:NAME`): time-dependent tactics for every domain
//! that read the scenario from their own side only — their seat's private block, the public
//! space and the offer on the table — and write a normal completion the engine parses. In the
//! core so every face plays them: the runtime's players, and the Python package's opponents.

pub mod bundle;
pub mod concession;
pub mod deliberation;
mod driven;
pub mod market;
mod rule;
mod speech;
mod tickets;

pub use concession::{Stance, Tactic};
pub use driven::{RuleSeat, ScriptedSeats};
pub(crate) use rule::write_move;
pub use rule::{Position, RulePlayer, FIXED_CONCESSION};
pub(crate) use speech::Talking;
pub use speech::{speak, speak_with_act};
pub use tickets::TicketStance;
