//! dealgym: two-party negotiations between language models, turned into data.
//!
//! The engine is Gym-style: an [`game::Episode`] takes one raw model completion per step and
//! answers with the next observation, whether the episode ended, and the outcome. Around it:
//! [`protocol`] (the turn grammar), [`scenario`] (the five dataset families and their utilities),
//! [`score`] (outcome metrics), [`reward`] (reward designs) and [`record`] (the episode log, its
//! reader and writer, and exact replay; [`digest`] fingerprints what replay must match).
//! [`llm`], [`agents`], [`run`] and [`mock`] play episodes against real endpoints; [`replay`]
//! verifies, rescores, renders and branches recorded episodes, [`export`] turns them into
//! trainer data, [`eval`] plays named players against each other into a cross-play matrix
//! and ratings, [`report`] turns records into tables, charts and browsable transcripts, and
//! [`merge`] joins the record files of a run's shards.
//!
//! The grammar in one example: a completion is read tolerantly, and the move is re-rendered
//! canonically for the counterpart, flipped to its side.
//!
//! ```
//! use dealgym::protocol::{parse, render_action, Action, ItemSpec, TermSpace, Terms};
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

pub mod agents;
pub mod annotate;
pub mod cache;
pub mod demo;
pub mod dialogues;
pub mod digest;
pub mod eval;
pub mod export;
#[doc(hidden)]
pub mod fixtures;
pub mod game;
pub mod jsonl;
pub mod limits;
pub mod llm;
pub mod merge;
pub mod mock;
pub mod protocol;
pub mod record;
pub mod replay;
pub mod report;
pub mod reward;
pub mod run;
pub mod scenario;
pub mod score;
pub mod serve;
pub mod template;
pub mod vocab;
