//! Campaigns: an ordered list of single-deal episodes whose seat that carries the ledger
//! finds, in each deal, the reservation the earlier deals left it — the best offer so far, a
//! quantity target's penalties, the money left. The ledger's rules (`ledger.rs`), the block a
//! deal's setup holds for the seat and the one its record holds for the ledger
//! (`standing.rs`), campaign files (`file.rs`) and the example campaigns built from the
//! scenario files (`examples.rs`).
//!
//! Pure: numbers, scenarios and files in, numbers out. It plays nothing: `run` plays a
//! campaign's deals in order through the one driver, and the episode reads a deal's
//! [`Standing`] from its setup. Any family plugs in: the ledger speaks of the seat's utility
//! and no-deal value, which every family has; only `budget` needs a buyer's budget
//! (`with_budget`, one arm per family that has one).

mod examples;
mod file;
mod ledger;
mod standing;

pub use examples::example_campaigns;
pub use file::{load_campaigns, Campaign, CampaignError, CampaignLine};
pub use ledger::{BadLedger, BestOffer, Budget, LedgerKind, LedgerState, Quantity};
pub(crate) use standing::with_budget;
pub use standing::{budget_of, DealLedger, EarlierDeal, Standing};
