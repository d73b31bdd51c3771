//! A turn as the record keeps it: the engine's turn ([`game::Turn`]: the completion and what the
//! engine made of it) and what the layers above add — the endpoint's account of the call, the
//! per-turn reward signals, the judge's labels, a dataset's own labels and an annotation.
//!
//! On disk a turn is one flat JSON object, its fields in the order records have always had
//! them (the engine's, then `call`, then the exact-tokens fields, then the rest); `TurnLine`
//! and `TurnLineRef` are that object, read and written, so the two types stay apart in code
//! while the JSON stays what it was.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::game::{self, RegulationEvent, Seat, TurnTokens};
use crate::narration::Narration;
use crate::planner::{Candidate, Planning};
use crate::protocol::constraint::ConstraintCheck;
use crate::protocol::{Action, Parsed};
use crate::vocab::{Call, ToolCall};

/// One attempt at a turn, as the record keeps it. Reads as the engine's turn (`turn.seat`,
/// `turn.played`: it dereferences to [`game::Turn`]) with the record's own fields beside.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// What the engine was given and decided.
    pub turn: game::Turn,
    /// What the endpoint said about the call (usage, logprobs, token ids), if any.
    pub call: Option<Call>,
    /// The per-turn reward signals of the seat that moved, by name (`format`, `length`,
    /// `points`, `strategic`, `judge` for a per-turn judge, `reward_model` for a per-response
    /// reward model, and `rule:NAME` for each rule that matched), unweighted
    /// (`reward::turn::turn_signals`); empty under the terminal reward alone.
    pub rewards: BTreeMap<String, f64>,
    /// The judge's annotation of this turn: label-set name → label.
    pub labels: BTreeMap<String, String>,
    /// The dataset's own labels of a people's turn (`dealgym dialogues import`): label kind
    /// (`strategy` for CaSiNo, `dialogue_act` for Craigslist) → one value per message the turn
    /// joins, in order, `""` for a message the dataset left unlabelled. Kept as the data has
    /// them; the engine never reads them.
    pub dataset_labels: BTreeMap<String, Vec<String>>,
    /// Where this turn's Thought came from when `dealgym annotate` wrote it (a person's turn
    /// given private reasoning by a model). Absent from every turn a player wrote itself.
    pub annotation: Option<Annotation>,
    /// For a propose-then-commit seat (a planner): the candidate completions it chose this
    /// turn's from and which it committed. Absent from every other turn.
    pub planning: Option<Planning>,
}

/// How a person's turn was annotated: the model asked, the fingerprint of the template it was
/// asked with, and, when its answer could not be used (the Thought is then left empty), why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Annotation {
    pub model: String,
    pub template: Digest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

impl TurnRecord {
    /// The engine's turn with the endpoint's account of its call, and nothing else yet.
    pub(crate) fn new(turn: game::Turn, call: Option<Call>) -> TurnRecord {
        TurnRecord {
            turn,
            call,
            rewards: BTreeMap::new(),
            labels: BTreeMap::new(),
            dataset_labels: BTreeMap::new(),
            annotation: None,
            planning: None,
        }
    }
}

impl Deref for TurnRecord {
    type Target = game::Turn;

    fn deref(&self) -> &game::Turn {
        &self.turn
    }
}

impl DerefMut for TurnRecord {
    fn deref_mut(&mut self) -> &mut game::Turn {
        &mut self.turn
    }
}

impl AsRef<game::Turn> for TurnRecord {
    fn as_ref(&self) -> &game::Turn {
        &self.turn
    }
}

// A turn's JSON object, read; its doc comments are the record schema's (`dealgym docs record`).
/// One attempt at a turn, as the record keeps it.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "Turn")]
struct TurnLine {
    seat: Seat,
    /// 0 for a first try; 1, 2, … for tries after a correction.
    attempt: u32,
    raw: String,
    /// The tool calls of a turn played through tools (the seat's `format` is `tools`), in
    /// the OpenAI shape, as the model made them; `raw` is the text written beside them.
    /// Absent from a turn played as text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    /// The endpoint's separate `reasoning_content`, as received (also merged into
    /// `reasoning`); kept apart so replay feeds the engine exactly what it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(flatten)]
    parsed: Parsed,
    /// The action that took effect (after regulation); none for a turn that could not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    played: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    regulation: Option<RegulationEvent>,
    /// Exactly what the counterpart was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forwarded: Option<String>,
    /// What the endpoint said about the call (usage, logprobs, token ids), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<Call>,
    /// For a constrained call: whether the completion is one the constraint admits. `false`
    /// means the server ignored the constraint (counted as `constraint_violations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    constraint: Option<ConstraintCheck>,
    /// The exact token ids of the call (token-exact mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<TurnTokens>,
    /// A narrated turn: the decided move, the brief its narrator was sent, how the action
    /// line was held to the move, and where its Talk contradicts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    narration: Option<Narration>,
    /// The per-turn reward signals of the seat that moved, by name (`format`, `length`,
    /// `points`, `strategic`, `judge` for a per-turn judge, `reward_model` for a per-response
    /// reward model, and `rule:NAME` for each rule that matched), unweighted. Set when the
    /// record is made (`reward::turn::turn_signals`); empty under the terminal reward alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    rewards: BTreeMap<String, f64>,
    /// The judge's annotation of this turn: label-set name → label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    /// The dataset's own labels of a people's turn (`dealgym dialogues import`): label kind
    /// (`strategy` for CaSiNo, `dialogue_act` for Craigslist) → one value per message the
    /// turn joins, in order, `""` for a message the dataset left unlabelled. Kept as the data
    /// has them; the engine never reads them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    dataset_labels: BTreeMap<String, Vec<String>>,
    /// Where this turn's Thought came from when `dealgym annotate` wrote it (a person's turn
    /// given private reasoning by a model). Absent from every turn a player wrote itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotation: Option<Annotation>,
    /// A planner's turn (a propose-then-commit seat): the candidate completions it proposed,
    /// each with its dialogue act and the value model's score where there was one. Absent
    /// from every other turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    candidates: Vec<Candidate>,
    /// A planner's turn: the index into `candidates` of the one committed (the turn's `raw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chosen: Option<usize>,
}

/// A turn's JSON object, written: [`TurnLine`]'s fields in its order, borrowed (a record is
/// written without copying its turns).
#[derive(Serialize)]
struct TurnLineRef<'a> {
    seat: Seat,
    attempt: u32,
    raw: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: &'a Vec<ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: &'a Option<String>,
    #[serde(flatten)]
    parsed: &'a Parsed,
    #[serde(skip_serializing_if = "Option::is_none")]
    played: &'a Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regulation: &'a Option<RegulationEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    forwarded: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: &'a Option<Call>,
    #[serde(skip_serializing_if = "Option::is_none")]
    constraint: &'a Option<ConstraintCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: &'a Option<TurnTokens>,
    #[serde(skip_serializing_if = "Option::is_none")]
    narration: &'a Option<Narration>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    rewards: &'a BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    dataset_labels: &'a BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotation: &'a Option<Annotation>,
    #[serde(skip_serializing_if = "<[Candidate]>::is_empty")]
    candidates: &'a [Candidate],
    #[serde(skip_serializing_if = "Option::is_none")]
    chosen: Option<usize>,
}

impl Serialize for TurnRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Taken apart whole, so a field added to the engine's turn cannot be left unwritten.
        let game::Turn {
            seat,
            attempt,
            raw,
            reasoning_content,
            parsed,
            played,
            regulation,
            forwarded,
            constraint,
            tokens,
            tool_calls,
            narration,
        } = &self.turn;
        TurnLineRef {
            seat: *seat,
            attempt: *attempt,
            raw,
            tool_calls,
            reasoning_content,
            parsed,
            played,
            regulation,
            forwarded,
            call: &self.call,
            constraint,
            tokens,
            narration,
            rewards: &self.rewards,
            labels: &self.labels,
            dataset_labels: &self.dataset_labels,
            annotation: &self.annotation,
            candidates: self
                .planning
                .as_ref()
                .map_or(&[], |p| p.candidates.as_slice()),
            chosen: self.planning.as_ref().map(|p| p.chosen),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TurnRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let line = TurnLine::deserialize(deserializer)?;
        let planning = match (line.candidates.is_empty(), line.chosen) {
            (true, None) => None,
            (false, Some(chosen)) if chosen < line.candidates.len() => Some(Planning {
                candidates: line.candidates,
                chosen,
            }),
            _ => {
                return Err(D::Error::custom(
                    "`chosen` must name one of the turn's `candidates` (both or neither)",
                ))
            }
        };
        Ok(TurnRecord {
            turn: game::Turn {
                seat: line.seat,
                attempt: line.attempt,
                raw: line.raw,
                reasoning_content: line.reasoning_content,
                parsed: line.parsed,
                played: line.played,
                regulation: line.regulation,
                forwarded: line.forwarded,
                constraint: line.constraint,
                tokens: line.tokens,
                tool_calls: line.tool_calls,
                narration: line.narration,
            },
            call: line.call,
            rewards: line.rewards,
            labels: line.labels,
            dataset_labels: line.dataset_labels,
            annotation: line.annotation,
            planning,
        })
    }
}

impl JsonSchema for TurnRecord {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        TurnLine::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        TurnLine::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TurnLine::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn with the record's own fields and most of the engine's, in the order written:
    /// reading and writing back gives the same bytes, and the engine's fields land in the
    /// engine's turn.
    #[test]
    fn a_turn_reads_into_the_engines_turn_and_the_records_fields_and_writes_back_the_same() {
        let line = r#"{"seat":"learner","attempt":1,"raw":"Thought: t\nTalk: hi\nAction: <accept>","reasoning_content":"r","reasoning":"r","thought":"t","talk":"hi","action":{"type":"accept"},"format_ok":true,"played":{"type":"accept"},"forwarded":"hi <accept>","call":{"finish_reason":"stop","usage":{"completion_tokens":4,"prompt_tokens":9}},"constraint":{"via":"vllm","admitted":true},"tokens":{"prompt_ids":[1],"completion_ids":[2],"logprobs":[-0.5]},"rewards":{"format":1.0,"rule:polite":0.5},"labels":{"tactic":"anchor"},"dataset_labels":{"strategy":["small-talk",""]},"annotation":{"model":"m","template":"0000000000000001"}}"#;
        let turn: TurnRecord = serde_json::from_str(line).unwrap();
        assert_eq!(turn.seat, Seat::Learner);
        assert_eq!(turn.played, Some(Action::Accept));
        assert_eq!(
            turn.tokens.as_ref().map(|t| t.completion_ids.clone()),
            Some(vec![2])
        );
        assert_eq!(
            turn.call
                .as_ref()
                .and_then(|c| c.usage)
                .map(|u| u.prompt_tokens),
            Some(9)
        );
        assert_eq!(turn.rewards["rule:polite"], 0.5);
        assert_eq!(serde_json::to_string(&turn).unwrap(), line);

        let planned = r#"{"seat":"learner","attempt":0,"raw":"b","format_ok":false,"act":"agree","candidates":[{"raw":"a","value":0.25},{"raw":"b","act":"agree","value":0.5}],"chosen":1}"#;
        let turn: TurnRecord = serde_json::from_str(planned).unwrap();
        assert_eq!(turn.planning.as_ref().map(|p| p.chosen), Some(1));
        assert_eq!(turn.parsed.act.as_deref(), Some("agree"));
        assert_eq!(serde_json::to_string(&turn).unwrap(), planned);
        let dangling = planned.replace(r#""chosen":1"#, r#""chosen":2"#);
        assert!(serde_json::from_str::<TurnRecord>(&dangling).is_err());

        let bare = r#"{"seat":"opponent","attempt":0,"raw":"x","format_ok":false}"#;
        let turn: TurnRecord = serde_json::from_str(bare).unwrap();
        assert_eq!(turn, TurnRecord::new(turn.turn.clone(), None));
        assert_eq!(serde_json::to_string(&turn).unwrap(), bare);
    }
}
