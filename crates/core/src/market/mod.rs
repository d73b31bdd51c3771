//! Markets (issue 45): several buyers and several sellers of one good at once — the third
//! rulebook of the one engine (the book's `architecture.md`, "One engine, several rulebooks").
//!
//! The engine's turn mechanics are not repeated here: a market's episode (`episode.rs`) reads a
//! completion with the two-party grammar (a quote is a `[SUBMIT_DEAL]` with a price, a take an
//! `[ACCEPT_DEAL] #N` read by the table's rule), keeps each seat's history and tokens, corrects
//! or forfeits, regulates and ends through [`crate::engine`], and seats its traders with the
//! table's seat and slot types. What is the market's own: the order book (`book.rs`, the one
//! home of what a quote and a take do and when trade is still possible), the competitive
//! equilibrium it is measured against (`equilibrium.rs`), the prompts (`prompt.rs`) and what a
//! trader knows of the market beside its chat (`state.rs`). The
//! scripted traders are [`crate::negotiator`]'s, the metrics [`crate::score`]'s.

mod book;
mod episode;
pub mod equilibrium;
mod prompt;
mod state;

pub(crate) use book::{gains, is_loss, quote_price};
pub use book::{MarketBook, MarketRegulation, Order, Trade};
pub use episode::{MarketEpisode, MarketOptions, MarketOutcome, MarketSetup, MarketTurn};
pub use equilibrium::{equilibrium, Equilibrium};
pub use state::{
    market_seat_state, MarketSeatState, PublicMarketOutcome, PublicQuote, PublicTrade,
};

#[cfg(test)]
mod tests;
