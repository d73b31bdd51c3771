//! The five moves of the grammar and the kinds of turn errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::parse::TurnFormat;
use super::terms::Terms;

/// A move, as the grammar spells it: `[SUBMIT_DEAL] terms`, `[ACCEPT_DEAL]`, `[REJECT_DEAL]`,
/// `[WALK_AWAY]` or `[TALK]`. Submitted terms are from the mover's own point of view.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "terms", rename_all = "snake_case")]
pub enum Action {
    Submit(Terms),
    Accept,
    Reject,
    WalkAway,
    Talk,
}

/// The action tokens without their terms: what the parser finds in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Submit,
    Accept,
    Reject,
    WalkAway,
    Talk,
}

impl ActionKind {
    /// The moves a seat may make now, in the order a decoding constraint lists them: ACCEPT
    /// only when an offer is open to it (`Episode::offer_to_accept`), TALK only in the XML
    /// format and through tools (`say`; the tagged format's prompt has no conversational move).
    pub fn legal(format: TurnFormat, can_accept: bool) -> Vec<ActionKind> {
        let mut kinds = Vec::with_capacity(5);
        if can_accept {
            kinds.push(ActionKind::Accept);
        }
        kinds.extend([ActionKind::Reject, ActionKind::WalkAway]);
        if matches!(format, TurnFormat::Xml | TurnFormat::Tools) {
            kinds.push(ActionKind::Talk);
        }
        kinds.push(ActionKind::Submit);
        kinds
    }

    /// The kind's name as records and observations write it (`submit`, `walk_away`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Submit => "submit",
            ActionKind::Accept => "accept",
            ActionKind::Reject => "reject",
            ActionKind::WalkAway => "walk_away",
            ActionKind::Talk => "talk",
        }
    }

    /// The token exactly as the grammar writes it.
    pub fn token(self) -> &'static str {
        match self {
            ActionKind::Submit => "[SUBMIT_DEAL]",
            ActionKind::Accept => "[ACCEPT_DEAL]",
            ActionKind::Reject => "[REJECT_DEAL]",
            ActionKind::WalkAway => "[WALK_AWAY]",
            ActionKind::Talk => "[TALK]",
        }
    }
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Submit(_) => ActionKind::Submit,
            Action::Accept => ActionKind::Accept,
            Action::Reject => ActionKind::Reject,
            Action::WalkAway => ActionKind::WalkAway,
            Action::Talk => ActionKind::Talk,
        }
    }

    pub(crate) fn terms(&self) -> Option<&Terms> {
        match self {
            Action::Submit(t) => Some(t),
            _ => None,
        }
    }
}

/// The three kinds of turn error, never mixed (the book's `design/protocol.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The text cannot be read as a move.
    Format,
    /// Readable, but not allowed now (ACCEPT with no standing offer, out-of-range terms).
    Illegal,
    /// The endpoint failed after its retries. Never turned into a move.
    Backend,
}

/// A turn error: its kind and a message saying what was wrong, for the record and for the
/// correction sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error, JsonSchema)]
#[error("{kind:?} error: {message}")]
pub struct TurnError {
    pub kind: ErrorKind,
    pub message: String,
}

impl TurnError {
    pub(crate) fn format(message: impl Into<String>) -> Self {
        TurnError {
            kind: ErrorKind::Format,
            message: message.into(),
        }
    }

    pub(crate) fn illegal(message: impl Into<String>) -> Self {
        TurnError {
            kind: ErrorKind::Illegal,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_name_is_the_one_records_write() {
        for kind in [
            ActionKind::Submit,
            ActionKind::Accept,
            ActionKind::Reject,
            ActionKind::WalkAway,
            ActionKind::Talk,
        ] {
            let written = serde_json::to_value(kind).expect("serializes");
            assert_eq!(written, kind.name(), "{kind:?}");
        }
    }
}
