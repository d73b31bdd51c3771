//! The turn grammar: text in, [`Action`] out, and actions back to text for a given viewer.
//!
//! This module is dealgym's wire protocol and nothing else: it knows the two spellings of a turn
//! (tagged and XML) and the tool calls a seat may act through, the action tokens, and how terms of each domain are written. It does no I/O,
//! knows nothing of episodes, and never decides whether a move is *legal now* — only whether it
//! can be read and whether its terms are in range (the book's `design/protocol.md`).

mod action;
mod bundle;
pub mod constraint;
mod parse;
mod render;
mod terms;
mod tickets;
mod tools;

pub use action::{Action, ActionKind, ErrorKind, TurnError};
pub use bundle::{part_keys, BundleChoice, BundlePart, BundleSpec, OfferChange, DELIVERY};
pub(crate) use parse::proposes_deal;
pub use parse::{
    after_think, copies_instructions, label_regex, labelled_parts, normalize_for_copy,
    normalize_label, parse, read_move, split_act, ParseNote, Parsed, TurnFormat,
};
pub(crate) use render::render_forwarded;
pub use render::{render_action, render_turn};
pub use terms::{
    format_cents, parse_terms, terms_from_json, to_cents, IssueRange, IssueSpec, IssueValue,
    ItemSpec, TermSpace, TermValue, Terms, TermsError, TermsView,
};
pub use tickets::{ticket_template, TicketSpec, UNCHANGED};
pub use tools::{
    as_tool_turn, judge_mode, openai_tools, read_tool_calls, tool_call_for, tool_specs,
    with_act_argument, ToolSpec, TOOL_NAMES,
};
