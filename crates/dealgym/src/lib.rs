//! dealgym: two-party negotiations between language models, turned into data.
//!
//! The engine lives in [`dealgym_core`] and is re-exported here under the same names
//! ([`game`], [`protocol`], [`scenario`], [`score`], [`reward`], [`record`], …), so
//! `dealgym::game::Episode` is the engine's episode. This crate is the runtime around it:
//! [`llm`], [`agents`] and [`run`] play episodes against real endpoints; [`replay`] verifies,
//! rescores, renders and branches recorded episodes, [`export`] turns them into trainer data,
//! [`eval`] plays named players against each other into a cross-play matrix and ratings,
//! [`report`] turns records into tables, charts and browsable transcripts, [`serve`] is the
//! environment server (OpenEnv's protocol, REST episodes, rollouts), [`dialogues`] and
//! [`annotate`] turn the datasets' human dialogues into records, and [`merge`] joins the record
//! files of a run's shards.
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

pub use dealgym_core::{
    cache, campaign, digest, engine, game, jsonl, limits, market, narration, negotiator,
    observation, planner, protocol, record, reward, scenario, score, table, template, vocab,
};

#[cfg(test)]
pub(crate) use dealgym_core::fixtures;

pub mod agents;
pub mod annotate;
pub mod dialogues;
pub mod docs;
pub mod eval;
pub mod export;
pub mod llm;
pub mod merge;
pub mod replay;
pub mod report;
pub mod run;
pub mod serve;
