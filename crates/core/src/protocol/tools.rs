//! Acting through tools: the five tools a seat may call instead of writing the
//! Thought/Talk/Action text — `make_offer(terms)`, `accept()`, `reject()`, `walk_away()`,
//! `say(text)` — defined from a scenario's own terms (JSON Schemas, served as MCP tools and as
//! OpenAI-style tool definitions), and a turn's tool calls read into the same [`Parsed`] a
//! text turn gives, so the same rules apply to both (the book's `design/protocol.md`).
//!
//! A turn is one move: one of the four move tools, or `say` alone (a turn that only talks).
//! What the other side reads goes in the move's `message` (or in `say`); text written beside
//! the calls is the seat's private thought. Every way a turn's calls can be wrong is a `format`
//! error (terms out of range are `illegal`, as in the text), so the malformed-turn policy
//! applies to it as to any unreadable turn.
//!
//! The same five tools serve both rulebooks ([`ToolSet`]): at a table (n parties, numbered
//! proposals) `accept` names the proposal it accepts by its number, and the talk goes to
//! everyone at the table. One reader reads the calls of either; one function writes the call
//! of a move (the inverse of reading it).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::action::{Action, ErrorKind, TurnError};
use super::parse::{normalize_label, split_reasoning, Parsed, TurnFormat, ACTION_TOKEN};
use super::terms::{brief, terms_from_json, IssueRange, TermSpace, TermsError};
use crate::vocab::ToolCall;

/// The tools' names, in the order they are listed.
pub const TOOL_NAMES: [&str; 5] = ["make_offer", "accept", "reject", "walk_away", "say"];

/// Which rulebook a seat's tools play: the bilateral one (`accept` takes the standing offer)
/// or a table's (`accept` names a numbered proposal, the talk goes to every party).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    Bilateral,
    Table,
}

/// One tool: its name, what it does and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

/// The five tools of a two-party scenario, their argument schemas built from its terms.
pub fn tool_specs(space: TermSpace<'_>) -> Vec<ToolSpec> {
    tool_specs_of(space, ToolSet::Bilateral)
}

/// The five tools of `set`'s rulebook over `space`'s terms.
pub fn tool_specs_of(space: TermSpace<'_>, set: ToolSet) -> Vec<ToolSpec> {
    let table = set == ToolSet::Table;
    let message = json!({
        "type": "string",
        "description": if table {
            "What you say to everyone at the table with this move (optional)."
        } else {
            "What you say to the other side with this move (optional)."
        }
    });
    let only_message = || {
        json!({
            "type": "object",
            "properties": {"message": message},
            "additionalProperties": false
        })
    };
    let accept = if table {
        json!({
            "type": "object",
            "properties": {
                "offer": {"type": "integer", "minimum": 1, "description": "The number of the proposal you accept (#1, #2, …)."},
                "message": message
            },
            "required": ["offer"],
            "additionalProperties": false
        })
    } else {
        only_message()
    };
    vec![
        ToolSpec {
            name: "make_offer",
            description: if table {
                "Propose a deal to the table: one option of every issue. It gets a number (#1, #2, …) the others accept it by."
            } else {
                "Propose a deal. It replaces any offer on the table; the other side may accept it on its next turn."
            },
            parameters: json!({
                "type": "object",
                "properties": {"terms": terms_schema(space, set), "message": message},
                "required": ["terms"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "accept",
            description: if table {
                "Accept another party's proposal, named by its number."
            } else {
                "Accept the offer the other side made on its last turn; the deal is exactly that offer. Only allowed right after the other side called make_offer."
            },
            parameters: accept,
        },
        ToolSpec {
            name: "reject",
            description: if table {
                "Turn down the latest proposal (in a vote, the final proposal)."
            } else {
                "Make no proposal this turn; turns down any offer on the table."
            },
            parameters: only_message(),
        },
        ToolSpec {
            name: "walk_away",
            description: "Leave the negotiation without a deal.",
            parameters: only_message(),
        },
        ToolSpec {
            name: "say",
            description: if table {
                "Only talk this turn, with no proposal."
            } else {
                "Only talk this turn, with no move."
            },
            parameters: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": if table {
                    "What you say to everyone at the table."
                } else {
                    "What you say to the other side."
                }}},
                "required": ["text"],
                "additionalProperties": false
            }),
        },
    ]
}

/// The tools as an OpenAI-compatible chat request's `tools` (vLLM's and llama.cpp's tool calling).
pub fn openai_tools(space: TermSpace<'_>) -> Value {
    openai_tools_of(space, ToolSet::Bilateral)
}

/// [`openai_tools`] of `set`'s rulebook.
pub(crate) fn openai_tools_of(space: TermSpace<'_>, set: ToolSet) -> Value {
    Value::Array(
        tool_specs_of(space, set)
            .into_iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters
                }})
            })
            .collect(),
    )
}

/// The schema of a deal's terms in a space, from the side of the seat that offers them.
fn terms_schema(space: TermSpace<'_>, set: ToolSet) -> Value {
    let (terms, description) = term_schemas(space, set);
    let properties: Map<String, Value> = terms.into_iter().collect();
    let required: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// Each term of a space with its JSON Schema, in the order the grammar writes them, and what
/// the terms are as a whole (for a table, one deal for the whole table): the `terms` argument
/// of `make_offer` is these as one object. Faces that present the terms as separate arguments
/// (the Python binding's TRL tools) read them here, in order, rather than from the object,
/// whose keys are sorted.
pub fn term_schemas(space: TermSpace<'_>, set: ToolSet) -> (Vec<(String, Value)>, &'static str) {
    match space {
        TermSpace::Price => (
            [(
                "price".to_string(),
                json!({"type": "number", "minimum": 0, "description": "The price, in currency units."}),
            )]
            .into_iter()
            .collect(),
            "The price of the deal.",
        ),
        TermSpace::Items(items) => (
            items
                .iter()
                .map(|item| {
                    (
                        item.name.clone(),
                        json!({
                            "type": "integer", "minimum": 0, "maximum": item.count,
                            "description": format!("Units of {} you get, of {}.", item.name, item.count)
                        }),
                    )
                })
                .collect(),
            "What YOU get of each item; the other side gets the rest.",
        ),
        TermSpace::Issues(issues) => (
            issues
                .iter()
                .map(|issue| {
                    let schema = match &issue.range {
                        IssueRange::Integer { min, max } => json!({
                            "type": "integer", "minimum": min, "maximum": max, "description": issue.label
                        }),
                        IssueRange::Discrete { options } => json!({
                            "type": "string", "enum": options, "description": issue.label
                        }),
                    };
                    (issue.key.clone(), schema)
                })
                .collect(),
            if set == ToolSet::Table {
                "One deal for the whole table: an option of every issue."
            } else {
                "One contract for both of you: a value for every issue."
            },
        ),
        TermSpace::Bundle(spec) => (
            std::iter::once((
                "price".to_string(),
                json!({"type": "number", "minimum": 0, "description": "The price of the bundle, in currency units."}),
            ))
            .chain(spec.accessories.iter().map(|part| {
                (
                    part.key.clone(),
                    json!({"type": "string", "enum": ["in", "out"],
                           "description": format!("Whether {} is in the deal.", part.name)}),
                )
            }))
            .chain(std::iter::once((
                super::bundle::DELIVERY.to_string(),
                json!({"type": "string", "enum": ["in", "out"],
                       "description": "Whether delivery is in the deal."}),
            )))
            .collect(),
            "One deal for both of you: the price and which parts of the bundle are in it.",
        ),
        TermSpace::Tickets(tickets) => (
            tickets
                .iter()
                .map(|t| {
                    (
                        t.key.clone(),
                        json!({
                            "anyOf": [
                                {"type": "number", "exclusiveMinimum": 0, "maximum": t.selling},
                                {"type": "string", "enum": [super::UNCHANGED]}
                            ],
                            "description": format!(
                                "{} on {}: a new selling price (now {}), or \"{}\" to keep it.",
                                t.room, t.date, t.selling, super::UNCHANGED
                            )
                        }),
                    )
                })
                .collect(),
            "Every room of the call: a selling price each, or \"unchanged\".",
        ),
    }
}

/// The one call that makes `action` with `talk` (the inverse of reading a call): `make_offer`
/// with the terms from the mover's side, `say` for a turn that only talks, the talk as the
/// move's `message`; an acceptance at a table names the proposal it accepts (`accepts`).
pub(crate) fn tool_call_for(
    action: &Action,
    accepts: Option<u32>,
    talk: &str,
    space: TermSpace<'_>,
    id: String,
) -> ToolCall {
    let (name, arguments) = match action {
        Action::Submit(terms) => (
            "make_offer",
            json!({"terms": terms.named(space), "message": talk}),
        ),
        Action::Accept => match accepts {
            Some(offer) => ("accept", json!({"offer": offer, "message": talk})),
            None => ("accept", json!({"message": talk})),
        },
        Action::Reject => ("reject", json!({"message": talk})),
        Action::WalkAway => ("walk_away", json!({"message": talk})),
        Action::Talk => ("say", json!({"text": talk})),
    };
    ToolCall::new(id, name, arguments.to_string())
}

/// A turn written as text (Thought / Talk / Action, as the built-in players and the mock write
/// it) as a seat acting through tools makes it: the Thought as the text beside one call. A
/// text with no readable move makes a `reject` call.
pub fn as_tool_turn(text: &str, space: TermSpace<'_>, id: String) -> (String, ToolCall) {
    let turn = super::parse::parse(text, space, None);
    let action = turn.action.unwrap_or(Action::Reject);
    let mut call = tool_call_for(&action, None, turn.talk.as_deref().unwrap_or(""), space, id);
    if let Some(act) = &turn.act {
        // The text's `#label` becomes the call's `act` argument.
        call.function.arguments = with_act_argument(&call.function.arguments, act);
    }
    (turn.thought.unwrap_or_default(), call)
}

/// A tool call's JSON arguments with `"act": label` added (a dialogue-act label given through
/// tools); arguments that are not a JSON object are returned as they are.
pub(crate) fn with_act_argument(arguments: &str, label: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut map)) => {
            map.insert("act".into(), Value::String(label.into()));
            Value::Object(map).to_string()
        }
        _ => arguments.to_string(),
    }
}

/// Read a two-party turn played through tools: its `calls`, and the `content` the model wrote
/// beside them (its private thought), with the endpoint's own reasoning if it returned one.
pub fn read_tool_calls(
    calls: &[ToolCall],
    content: &str,
    space: TermSpace<'_>,
    server_reasoning: Option<&str>,
) -> Parsed {
    read_tool_turn(calls, content, space, server_reasoning, ToolSet::Bilateral).0
}

/// Read a turn played through `set`'s tools, as [`read_tool_calls`] does, with the proposal an
/// acceptance names (a table's `accept(offer)`; `None` for the bilateral tools).
pub(crate) fn read_tool_turn(
    calls: &[ToolCall],
    content: &str,
    space: TermSpace<'_>,
    server_reasoning: Option<&str>,
    set: ToolSet,
) -> (Parsed, Option<u32>) {
    let (body, think) = split_reasoning(content);
    let reasoning: Vec<String> = server_reasoning
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .into_iter()
        .chain(think)
        .collect();
    let body = body.trim();
    let mut parsed = Parsed {
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        thought: (!body.is_empty()).then(|| body.to_string()),
        ..Parsed::default()
    };
    let mut accepts = None;
    match read_calls(calls, body, space, set) {
        Ok(read) => {
            parsed.action = Some(read.action);
            parsed.talk = read.talk;
            parsed.act = read.act.as_deref().map(normalize_label);
            parsed.format_ok = true;
            accepts = read.accepts;
        }
        Err(error) => parsed.error = Some(error),
    }
    (parsed, accepts)
}

/// What a turn's calls make: the move, its talk, the dialogue-act label (any call's optional
/// `act`) and the proposal a table's acceptance names.
struct ReadCalls {
    action: Action,
    talk: Option<String>,
    act: Option<String>,
    accepts: Option<u32>,
}

/// Judge a turn by the way its seat was asked to act: a completion is read whichever way it
/// came (a reply without a call is read as text, calls as calls), but it is format-ok only in
/// the mode asked for, and a tools seat whose text cannot be read is told it made no call.
pub(crate) fn judge_mode(parsed: &mut Parsed, asked: TurnFormat, called: bool) {
    let tools = asked == TurnFormat::Tools;
    if tools != called {
        parsed.format_ok = false;
    }
    if tools && !called {
        if let Some(error) = parsed
            .error
            .as_mut()
            .filter(|e| e.kind == ErrorKind::Format)
        {
            error.message = format!(
                "no tool call: call one of the tools ({}), not text ({})",
                TOOL_NAMES.join(", "),
                error.message
            );
        }
    }
}

/// What a turn's calls make under `set`'s tools, or why they cannot be used.
fn read_calls(
    calls: &[ToolCall],
    body: &str,
    space: TermSpace<'_>,
    set: ToolSet,
) -> Result<ReadCalls, TurnError> {
    if ACTION_TOKEN.is_match(body) {
        return Err(TurnError::format(
            "a tool call and a text action in one turn: act through the tools only",
        ));
    }
    let mut moves: Vec<(&str, Action, Option<String>)> = Vec::new();
    let mut said: Vec<String> = Vec::new();
    let mut act: Option<String> = None;
    let mut accepts: Option<u32> = None;
    for call in calls {
        let name = call.function.name.as_str();
        let mut args = arguments(call)?;
        let allowed: &[&str] = match name {
            "make_offer" => &["terms", "message", "act"],
            "accept" if set == ToolSet::Table => &["offer", "message", "act"],
            "accept" | "reject" | "walk_away" => &["message", "act"],
            "say" => &["text", "act"],
            other => {
                return Err(TurnError::format(format!(
                    "unknown tool `{}`; the tools are {}",
                    brief(other),
                    TOOL_NAMES.join(", ")
                )))
            }
        };
        if let Some(extra) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(TurnError::format(format!(
                "`{name}` takes no argument `{}` (its arguments: {})",
                brief(extra),
                allowed.join(", ")
            )));
        }
        let message = text_argument(name, &mut args, "message")?;
        if let Some(label) = text_argument(name, &mut args, "act")? {
            act.get_or_insert(label);
        }
        match name {
            "say" => said.push(text_argument(name, &mut args, "text")?.ok_or_else(|| {
                TurnError::format("`say` needs `text`: what you say to the other side")
            })?),
            "make_offer" => {
                let terms = match args.remove("terms") {
                    Some(Value::Object(terms)) => terms,
                    Some(other) => {
                        return Err(TurnError::format(format!(
                            "`make_offer` `terms` must be an object of terms, got {}",
                            brief(&other.to_string())
                        )))
                    }
                    None => {
                        return Err(TurnError::format(
                            "`make_offer` needs `terms`: the deal you propose",
                        ))
                    }
                };
                let terms = terms_from_json(&terms, space).map_err(|e| match e {
                    TermsError::OutOfRange(_) => TurnError::illegal(e.to_string()),
                    _ => TurnError::format(e.to_string()),
                })?;
                moves.push((name, Action::Submit(terms), message));
            }
            "accept" => {
                if set == ToolSet::Table {
                    accepts = Some(offer_argument(&mut args)?);
                }
                moves.push((name, Action::Accept, message))
            }
            "reject" => moves.push((name, Action::Reject, message)),
            _ => moves.push((name, Action::WalkAway, message)),
        }
    }
    if moves.len() > 1 {
        let names: Vec<&str> = moves.iter().map(|(n, _, _)| *n).collect();
        return Err(TurnError::format(format!(
            "{} moves in one turn ({}): call one of them",
            moves.len(),
            names.join(", ")
        )));
    }
    if said.len() > 1 {
        return Err(TurnError::format(
            "`say` called more than once: say it in one call",
        ));
    }
    let talk = said.pop();
    let (action, talk) = match moves.pop() {
        Some((name, _, Some(_))) if talk.is_some() => {
            return Err(TurnError::format(format!(
                "the talk is given twice (`say` and `{name}`'s `message`): give it once"
            )))
        }
        Some((_, action, message)) => (action, message.or(talk)),
        None => match talk {
            Some(talk) => (Action::Talk, Some(talk)),
            None => return Err(TurnError::format("no tool call")),
        },
    };
    Ok(ReadCalls {
        action,
        talk,
        act,
        accepts,
    })
}

/// The proposal a table's `accept` names, taken out of its arguments: a whole number from 1
/// (`#3` and `"3"` are read too, as the text's `[ACCEPT_DEAL] #3` is).
fn offer_argument(args: &mut Map<String, Value>) -> Result<u32, TurnError> {
    let value = args.remove("offer").ok_or_else(|| {
        TurnError::format("`accept` needs `offer`: the number of the proposal you accept")
    })?;
    let id = match &value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().trim_start_matches('#').trim().parse::<u64>().ok(),
        _ => None,
    };
    id.and_then(|id| u32::try_from(id).ok())
        .filter(|&id| id >= 1)
        .ok_or_else(|| {
            TurnError::format(format!(
                "`accept` `offer` must be a proposal's number (1, 2, …), got {}",
                brief(&value.to_string())
            ))
        })
}

/// A call's arguments as an object (empty text is no arguments).
fn arguments(call: &ToolCall) -> Result<Map<String, Value>, TurnError> {
    let text = call.function.arguments.trim();
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(TurnError::format(format!(
            "the arguments of `{}` must be a JSON object, got {}",
            brief(&call.function.name),
            brief(&other.to_string())
        ))),
        Err(e) => Err(TurnError::format(format!(
            "the arguments of `{}` are not JSON ({e})",
            brief(&call.function.name)
        ))),
    }
}

/// A string argument, taken out of `args`; an argument of another type is a format error.
fn text_argument(
    tool: &str,
    args: &mut Map<String, Value>,
    name: &str,
) -> Result<Option<String>, TurnError> {
    match args.remove(name) {
        None | Some(Value::Null) => Ok(None),
        // An empty message is no message (beside `say`, it is not the talk given twice).
        Some(Value::String(text)) => Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty())),
        Some(other) => Err(TurnError::format(format!(
            "`{tool}` `{name}` must be a string, got {}",
            brief(&other.to_string())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino_items, job_issues};
    use crate::protocol::{ErrorKind, Terms};

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall::new(format!("call_{name}"), name, arguments)
    }

    fn read(calls: &[ToolCall], content: &str) -> Parsed {
        read_tool_calls(calls, content, TermSpace::Price, None)
    }

    #[test]
    fn each_tool_reads_as_its_move_with_the_talk_it_carries() {
        let p = read(
            &[call(
                "make_offer",
                r#"{"terms": {"price": 120.5}, "message": "Fair?"}"#,
            )],
            "I can go a bit higher.",
        );
        assert_eq!(p.action, Some(Action::Submit(Terms::Price(12050))));
        assert_eq!(p.talk.as_deref(), Some("Fair?"));
        assert_eq!(p.thought.as_deref(), Some("I can go a bit higher."));
        assert!(p.format_ok && p.error.is_none());
        for (name, action) in [
            ("accept", Action::Accept),
            ("reject", Action::Reject),
            ("walk_away", Action::WalkAway),
        ] {
            let p = read(&[call(name, "{}")], "");
            assert_eq!(p.action, Some(action), "{name}");
            assert!(p.format_ok && p.thought.is_none(), "{name}");
        }
        // No arguments at all is no arguments; `say` alone is a turn that only talks.
        assert_eq!(read(&[call("accept", "")], "").action, Some(Action::Accept));
        let p = read(&[call("say", r#"{"text": "Hello"}"#)], "");
        assert_eq!(
            (p.action, p.talk.as_deref()),
            (Some(Action::Talk), Some("Hello"))
        );
        // `say` beside a move gives the move its talk.
        let p = read(
            &[call("say", r#"{"text":"Deal."}"#), call("accept", "{}")],
            "",
        );
        assert_eq!(
            (p.action, p.talk.as_deref()),
            (Some(Action::Accept), Some("Deal."))
        );
    }

    #[test]
    fn term_schemas_list_the_terms_in_the_grammars_order() {
        // The object's keys are sorted (firewood, food, water); the list keeps the order a
        // seat writes them in, which the Python binding's tool arguments follow.
        let items = casino_items();
        let (terms, _) = term_schemas(TermSpace::Items(&items), ToolSet::Bilateral);
        let keys: Vec<&str> = terms.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["food", "water", "firewood"]);
        let issues = job_issues();
        let (terms, _) = term_schemas(TermSpace::Issues(&issues), ToolSet::Bilateral);
        let keys: Vec<&str> = terms.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["salary", "company", "position", "holiday"]);
    }

    #[test]
    fn a_hotel_offer_is_a_price_or_unchanged_per_ticket() {
        let hotel = crate::fixtures::hotel();
        let space = hotel.term_space();
        let p = read_tool_calls(
            &[call(
                "make_offer",
                r#"{"terms": {"t1": 150, "t2": "unchanged"}, "message": "Today's room?"}"#,
            )],
            "",
            space,
            None,
        );
        assert_eq!(
            p.action,
            Some(Action::Submit(Terms::Tickets(vec![Some(15000), None])))
        );
        // The schema names each ticket, a price up to its current one or "unchanged".
        let schema = &tool_specs(space)[0].parameters["properties"]["terms"];
        assert_eq!(schema["required"], json!(["t1", "t2"]));
        assert_eq!(
            schema["properties"]["t1"]["anyOf"][0]["maximum"],
            json!(168.0)
        );
        assert_eq!(
            schema["properties"]["t2"]["anyOf"][1]["enum"],
            json!(["unchanged"])
        );
        // A ticket the call does not have, or above its price, is no offer.
        for bad in [
            r#"{"terms": {"t1": 150, "t2": 90, "t3": 80}}"#,
            r#"{"terms": {"t1": 190, "t2": 90}}"#,
        ] {
            let p = read_tool_calls(&[call("make_offer", bad)], "", space, None);
            assert_eq!(p.action, None, "{bad}");
            assert!(p.error.is_some(), "{bad}");
        }
    }

    #[test]
    fn terms_are_read_in_the_scenarios_own_space() {
        let items = casino_items();
        let p = read_tool_calls(
            &[call(
                "make_offer",
                r#"{"terms": {"Food": 2, "waters": 1, "firewood": 0}}"#,
            )],
            "",
            TermSpace::Items(&items),
            None,
        );
        assert_eq!(p.action, Some(Action::Submit(Terms::Items(vec![2, 1, 0]))));
        let issues = job_issues();
        let Some(Action::Submit(Terms::Issues(values))) = read_tool_calls(
            &[call(
                "make_offer",
                &serde_json::to_string(
                    &json!({"terms": issues.iter().map(|is| (is.key.clone(), match &is.range {
                    IssueRange::Integer { min, .. } => json!(min),
                    IssueRange::Discrete { options } => json!(options[0].to_uppercase()),
                })).collect::<Map<String, Value>>()}),
                )
                .unwrap(),
            )],
            "",
            TermSpace::Issues(&issues),
            None,
        )
        .action
        else {
            panic!("an issue contract");
        };
        assert_eq!(values.len(), issues.len());
    }

    /// Every malformed turn is an error of its kind with a message that says what to change,
    /// never a move.
    #[test]
    fn every_malformed_call_is_an_error_that_says_what_is_wrong() {
        let items = casino_items();
        let space = TermSpace::Items(&items);
        for (calls, content, kind, says) in [
            (
                vec![call("bid", "{}")],
                "",
                ErrorKind::Format,
                "unknown tool `bid`",
            ),
            (
                vec![call("make_offer", "{}")],
                "",
                ErrorKind::Format,
                "needs `terms`",
            ),
            (
                vec![call("say", "{}")],
                "",
                ErrorKind::Format,
                "`say` needs `text`",
            ),
            (
                vec![call("accept", r#"{"terms": {}}"#)],
                "",
                ErrorKind::Format,
                "`accept` takes no argument `terms`",
            ),
            (
                vec![call(
                    "make_offer",
                    r#"{"terms": {"food": 1, "water": 1, "firewood": 1}, "price": 3}"#,
                )],
                "",
                ErrorKind::Format,
                "takes no argument `price`",
            ),
            (
                vec![call("make_offer", "{not json")],
                "",
                ErrorKind::Format,
                "not JSON",
            ),
            (
                vec![call("make_offer", "[1]")],
                "",
                ErrorKind::Format,
                "must be a JSON object",
            ),
            (
                vec![call("make_offer", r#"{"terms": "food:1"}"#)],
                "",
                ErrorKind::Format,
                "must be an object",
            ),
            (
                vec![call("make_offer", r#"{"terms": {"food": 1, "water": 1}}"#)],
                "",
                ErrorKind::Format,
                "missing firewood",
            ),
            (
                vec![call(
                    "make_offer",
                    r#"{"terms": {"food": 1, "water": 1, "firewood": 1, "gold": 2}}"#,
                )],
                "",
                ErrorKind::Format,
                "unknown item `gold`",
            ),
            (
                vec![call(
                    "make_offer",
                    r#"{"terms": {"food": 9, "water": 1, "firewood": 1}}"#,
                )],
                "",
                ErrorKind::Illegal,
                "from 0 to 3",
            ),
            (
                vec![call(
                    "make_offer",
                    r#"{"terms": {"food": [1], "water": 1, "firewood": 1}}"#,
                )],
                "",
                ErrorKind::Format,
                "must be a number or a string",
            ),
            (
                vec![call("accept", r#"{"message": 3}"#)],
                "",
                ErrorKind::Format,
                "must be a string",
            ),
            (
                vec![call("accept", "{}"), call("walk_away", "{}")],
                "",
                ErrorKind::Format,
                "2 moves in one turn (accept, walk_away)",
            ),
            (
                vec![
                    call("say", r#"{"text":"a"}"#),
                    call("say", r#"{"text":"b"}"#),
                ],
                "",
                ErrorKind::Format,
                "more than once",
            ),
            (
                vec![
                    call("say", r#"{"text":"a"}"#),
                    call("accept", r#"{"message":"b"}"#),
                ],
                "",
                ErrorKind::Format,
                "the talk is given twice",
            ),
            (
                vec![call("accept", "{}")],
                "Thought: yes\nTalk: ok\nAction: [ACCEPT_DEAL]",
                ErrorKind::Format,
                "a tool call and a text action in one turn",
            ),
            (vec![], "", ErrorKind::Format, "no tool call"),
        ] {
            let p = read_tool_calls(&calls, content, space, None);
            let error = p
                .error
                .unwrap_or_else(|| panic!("{calls:?} was read as {:?}", p.action));
            assert_eq!(error.kind, kind, "{calls:?}: {error:?}");
            assert!(error.message.contains(says), "{calls:?}: {}", error.message);
            assert!(p.action.is_none() && !p.format_ok, "{calls:?}");
        }
        // What a client sent comes back cut short, however large.
        let huge = format!(
            r#"{{"terms": {{"price": [{}]}}}}"#,
            vec!["1"; 100_000].join(",")
        );
        let p = read(&[call("make_offer", &huge)], "");
        assert!(p.error.unwrap().message.len() < 300);
        let p = read(&[call(&"x".repeat(100_000), "{}")], "");
        assert!(p.error.unwrap().message.len() < 300);
        // An empty message beside `say` is no second talk.
        let p = read(
            &[
                call("say", r#"{"text":"Deal."}"#),
                call("accept", r#"{"message":" "}"#),
            ],
            "",
        );
        assert_eq!(
            (p.action, p.talk.as_deref()),
            (Some(Action::Accept), Some("Deal."))
        );
        // A price deal names its price and nothing else.
        let p = read(&[call("make_offer", r#"{"terms": {"cost": 3}}"#)], "");
        assert!(p.error.unwrap().message.contains("unknown term `cost`"));
    }

    #[test]
    fn the_definitions_give_each_space_its_own_terms() {
        let items = casino_items();
        let tools = openai_tools(TermSpace::Items(&items));
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, TOOL_NAMES);
        let terms = &tools[0]["function"]["parameters"]["properties"]["terms"];
        assert_eq!(terms["properties"]["food"]["maximum"], 3);
        assert_eq!(terms["required"], json!(["firewood", "food", "water"]));
        let issues = job_issues();
        let specs = tool_specs(TermSpace::Issues(&issues));
        let terms = &specs[0].parameters["properties"]["terms"];
        assert_eq!(terms["properties"].as_object().unwrap().len(), issues.len());
        assert_eq!(
            tool_specs(TermSpace::Price)[0].parameters["properties"]["terms"]["required"],
            json!(["price"])
        );
    }

    #[test]
    fn a_tables_tools_are_the_same_five_with_accept_naming_a_proposal() {
        let s = crate::table::tests::six_party();
        let space = TermSpace::Issues(&s.issues);
        let specs = tool_specs_of(space, ToolSet::Table);
        let names: Vec<&str> = specs.iter().map(|t| t.name).collect();
        assert_eq!(names, TOOL_NAMES);
        // The terms are the table's issues, each an option of the game.
        let terms = &specs[0].parameters["properties"]["terms"];
        assert_eq!(terms["required"], json!(["A", "B", "C", "D", "E"]));
        assert_eq!(
            terms["properties"]["E"]["enum"],
            json!(["E1", "E2", "E3", "E4", "E5"])
        );
        assert_eq!(specs[1].parameters["required"], json!(["offer"]));
        assert_eq!(
            specs[1].parameters["properties"]["offer"]["type"],
            json!("integer")
        );
        // The two-party accept takes no offer: it accepts the standing one.
        assert!(tool_specs(space)[1].parameters["properties"]
            .get("offer")
            .is_none());
        assert_eq!(
            openai_tools_of(space, ToolSet::Table)[1]["function"]["parameters"],
            specs[1].parameters
        );
    }

    #[test]
    fn a_tables_calls_read_with_the_proposal_an_acceptance_names() {
        let s = crate::table::tests::six_party();
        let space = TermSpace::Issues(&s.issues);
        let table = |calls: &[ToolCall]| read_tool_turn(calls, "", space, None, ToolSet::Table);
        let (p, accepts) = table(&[call("accept", r##"{"offer": "#3", "message": "yes"}"##)]);
        assert_eq!(
            (p.action, accepts, p.talk.as_deref()),
            (Some(Action::Accept), Some(3), Some("yes"))
        );
        let (p, accepts) = table(&[call(
            "make_offer",
            r#"{"terms": {"A": "a1", "B": "B2", "C": "C4", "D": "D1", "E": "E5"}}"#,
        )]);
        let terms = p.action.as_ref().and_then(Action::terms).unwrap();
        assert_eq!(
            crate::scenario::TableScenario::deal_of(terms),
            Some(vec![0, 1, 3, 0, 4])
        );
        assert_eq!(accepts, None);
        for (calls, kind, says) in [
            (
                vec![call("accept", "{}")],
                ErrorKind::Format,
                "needs `offer`",
            ),
            (
                vec![call("accept", r#"{"offer": 0}"#)],
                ErrorKind::Format,
                "must be a proposal's number",
            ),
            (
                vec![call("accept", r#"{"offer": [1]}"#)],
                ErrorKind::Format,
                "must be a proposal's number",
            ),
            (
                vec![call(
                    "make_offer",
                    r#"{"terms": {"A": "A7", "B": "B2", "C": "C4", "D": "D1", "E": "E5"}}"#,
                )],
                ErrorKind::Illegal,
                "A7",
            ),
            (
                vec![call("accept", r#"{"offer": 1}"#), call("reject", "{}")],
                ErrorKind::Format,
                "2 moves in one turn",
            ),
        ] {
            let (p, _) = table(&calls);
            let error = p.error.unwrap_or_else(|| panic!("{calls:?} was read"));
            assert_eq!(error.kind, kind, "{calls:?}: {error:?}");
            assert!(error.message.contains(says), "{}", error.message);
        }
        // A two-party accept names no proposal.
        let p = read_tool_calls(&[call("accept", r#"{"offer": 1}"#)], "", space, None);
        assert!(p
            .error
            .unwrap()
            .message
            .contains("takes no argument `offer`"));
    }

    #[test]
    fn a_table_move_and_its_call_are_inverses() {
        let s = crate::table::tests::six_party();
        let text = "Thought: mine\nTalk: take it\nAction: [ACCEPT_DEAL] #4";
        let (thought, c) = crate::table::as_table_tool_turn(&s.issues, text, "c".into());
        assert_eq!(thought, "mine");
        assert_eq!(c.function.name, "accept");
        let (p, accepts) = read_tool_turn(
            &[c],
            &thought,
            TermSpace::Issues(&s.issues),
            None,
            ToolSet::Table,
        );
        assert_eq!((p.action, accepts), (Some(Action::Accept), Some(4)));
        assert_eq!(p.talk.as_deref(), Some("take it"));
    }
}
