//! dealgym-core: the engine of two-party negotiations, with no async runtime, HTTP or command
//! line in its dependency tree (the book's `architecture.md`'s lower layers; the Python binding builds on it alone).
//!
//! An [`game::Episode`] takes one raw model completion per step and answers with the next
//! observation, whether the episode ended, and the outcome. Around it: [`vocab`] (the words every
//! layer shares), [`protocol`] (the turn grammar), [`scenario`] (the five dataset families and
//! their utilities), [`score`] (outcome metrics), [`reward`] (reward designs) and [`record`] (the
//! episode log, its reader and writer, and exact replay; [`digest`] fingerprints what replay must
//! match). [`limits`] is the one home of every bound a user or a client can set.
//!
//! The grammar in one example: a completion is read tolerantly, and the move is re-rendered
//! canonically for the counterpart, flipped to its side.
//!
//! ```
//! use dealgym_core::protocol::{parse, render_action, Action, ItemSpec, TermSpace, Terms};
//!
//! let items: Vec<ItemSpec> = ["food", "water", "firewood"]
//!     .iter()
//!     .map(|name| ItemSpec { name: name.to_string(), count: 3 })
//!     .collect();
//! let space = TermSpace::Items(&items);
//! let turn = parse("**Thought:** water matters most\n**Talk:** Deal?\n**Action:** [submit_deal] Water=3, food: 1 firewood:0", space, None);
//! assert!(turn.format_ok);
//! assert_eq!(turn.action, Some(Action::Submit(Terms::Items(vec![1, 3, 0]))));
//! let seen_by_counterpart = render_action(turn.action.as_ref().unwrap(), space, false);
//! assert_eq!(seen_by_counterpart, "[SUBMIT_DEAL] food:2 water:0 firewood:3");
//! ```

pub mod cache;
pub mod campaign;
pub mod digest;
pub mod engine;
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod fixtures;
pub mod game;
pub mod jsonl;
pub mod limits;
pub mod market;
pub mod narration;
pub mod negotiator;
pub mod observation;
pub mod planner;
pub mod protocol;
pub mod record;
pub mod reward;
pub mod scenario;
pub mod score;
pub mod table;
pub mod template;
pub mod vocab;
