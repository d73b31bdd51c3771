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
pub use bundle::DELIVERY;
pub(crate) use bundle::{part_keys, OfferChange};
pub use bundle::{BundleChoice, BundlePart, BundleSpec};
pub use parse::{
    action_text, after_think, copies_instructions, label_regex, labelled_parts, normalize_for_copy,
    parse, read_move, Instructions, ParseNote, Parsed, TurnFormat,
};
pub(crate) use parse::{normalize_label, proposes_deal, split_act};
pub(crate) use render::render_forwarded;
pub use render::{action_part, render_action, render_turn};
pub use terms::{
    format_cents, money, parse_terms, terms_from_json, to_cents, IssueRange, IssueSpec, IssueValue,
    ItemSpec, TermSpace, TermValue, Terms, TermsError,
};
pub(crate) use terms::{read_number, TermsView};
pub(crate) use tickets::ticket_template;
pub use tickets::{TicketSpec, UNCHANGED};
pub use tools::{
    as_tool_turn, openai_tools, read_tool_calls, term_schemas, tool_specs, tool_specs_of, ToolSet,
    ToolSpec, TOOL_NAMES,
};
pub(crate) use tools::{
    judge_mode, openai_tools_of, read_tool_turn, tool_call_for, with_act_argument,
};
