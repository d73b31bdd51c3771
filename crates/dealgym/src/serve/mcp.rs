//! MCP, the Model Context Protocol, over the same sessions: a seat acts through tools —
//! `make_offer`, `accept`, `reject`, `walk_away`, `say` (their argument schemas from the
//! scenario's own terms, [`crate::protocol::tool_specs`]) — after `start_negotiation` (the reset
//! kwargs) and `observe`. Two ways in:
//! - `POST /mcp`: JSON-RPC 2.0 as MCP's streamable HTTP transport carries it, answered with
//!   JSON. `initialize` opens an MCP session (its id in the `Mcp-Session-Id` header, sent back
//!   with every later request) holding one negotiation at a time, like a WebSocket; `DELETE
//!   /mcp` ends it. Without a session, `tools/list` still answers.
//! - OpenEnv's WebSocket message `{"type": "mcp", "data": <JSON-RPC request>}`, acting on the
//!   socket's own episode (OpenEnv's `reset` or `start_negotiation` starts it).
//!
//! A move tool's call becomes the seat's completion — one tool call — and is played by the
//! engine like any other ([`Completion::tool_calls`]): a malformed call (an unknown tool, a
//! missing or extra argument, terms outside the scenario, ACCEPT with nothing on the table)
//! gets the malformed-turn policy, and the call's result says what was wrong (`isError`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::error::ServeError;
use super::held::Held;
use super::hosted::SeatState;
use super::hub::Owner;
use super::openapi::Routes;
use super::session::{ResetArgs, Sampled};
use super::wire::{to_json, Observed};
use super::Shared;
use crate::game::{Completion, ToolCall};
use crate::protocol::{tool_specs_of, TermSpace, ToolSet, TurnFormat, TOOL_NAMES};

/// The MCP revisions this server speaks (the `initialize` handshake's); a client asking for
/// another is answered with the newest.
const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const SESSION_HEADER: &str = "mcp-session-id";

// JSON-RPC 2.0 error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/mcp", http)
        .get("/mcp", no_stream)
        .delete("/mcp", end_session)
}

/// The MCP sessions of `POST /mcp`: each holds one negotiation, as a WebSocket does.
#[derive(Default)]
pub struct McpSessions {
    open: Mutex<HashMap<String, McpSession>>,
}

struct McpSession {
    held: std::sync::Arc<tokio::sync::Mutex<Held>>,
    touched: Instant,
}

impl McpSessions {
    /// Open a session; sessions idle past `idle` are dropped first, and at most `max` stay open.
    fn open(&self, state: &Shared) -> Result<String, ServeError> {
        let idle = state.hub.options.idle_timeout;
        let max = state.hub.options.max_sessions;
        let mut open = self.open.lock().unwrap();
        open.retain(|_, s| {
            let keep = s.touched.elapsed() < idle;
            // An expired session's negotiation goes with it (unless a request holds it now;
            // the hub reclaims it once idle).
            if !keep {
                if let Ok(mut held) = s.held.try_lock() {
                    held.release(state);
                }
            }
            keep
        });
        if open.len() >= max {
            return Err(ServeError::Capacity(max));
        }
        let number: u64 = rand::random();
        // The session id is what a client presents to reach its session: a secret, made where
        // the server's secrets are.
        let id = super::secret::fresh();
        open.insert(
            id.clone(),
            McpSession {
                held: std::sync::Arc::new(tokio::sync::Mutex::new(Held::new(Owner::Mcp(number)))),
                touched: Instant::now(),
            },
        );
        Ok(id)
    }

    fn find(&self, id: &str, idle: Duration) -> Option<std::sync::Arc<tokio::sync::Mutex<Held>>> {
        let mut open = self.open.lock().unwrap();
        let session = open.get_mut(id).filter(|s| s.touched.elapsed() < idle)?;
        session.touched = Instant::now();
        Some(session.held.clone())
    }

    fn close(&self, id: &str) -> Option<std::sync::Arc<tokio::sync::Mutex<Held>>> {
        self.open.lock().unwrap().remove(id).map(|s| s.held)
    }
}

/// A JSON-RPC request as read: its id (absent for a notification), method and params.
struct Request {
    id: Option<Value>,
    method: String,
    params: Map<String, Value>,
}

impl Request {
    fn read(message: Value) -> Result<Request, Value> {
        let Value::Object(mut message) = message else {
            return Err(failure(
                Value::Null,
                INVALID_REQUEST,
                "a JSON-RPC request is an object (batches are not supported)",
            ));
        };
        let id = message.remove("id");
        let reply_id = id.clone().unwrap_or(Value::Null);
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(failure(
                reply_id,
                INVALID_REQUEST,
                "not a JSON-RPC 2.0 request: it needs \"jsonrpc\": \"2.0\" and a `method`",
            ));
        }
        let Some(Value::String(method)) = message.remove("method") else {
            return Err(failure(
                reply_id,
                INVALID_REQUEST,
                "a request needs a string `method`",
            ));
        };
        let params = match message.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => {
                return Err(failure(
                    reply_id,
                    INVALID_PARAMS,
                    "`params` must be an object",
                ))
            }
        };
        Ok(Request { id, method, params })
    }
}

fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn failure(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Answer one JSON-RPC request on OpenEnv's WebSocket (the `mcp` message): `None` for a
/// notification.
pub(super) async fn answer(state: &Shared, held: &mut Held, message: Value) -> Option<Value> {
    let request = match Request::read(message) {
        Ok(request) => request,
        Err(refusal) => return Some(refusal),
    };
    let id = request.id.clone()?;
    if request.method == "initialize" {
        return Some(success(id, initialized(&request.params)));
    }
    Some(dispatch(state, Some(held), request, id).await)
}

/// `POST /mcp`.
async fn http(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let message = match body
        .map_err(|e| e.body_text())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(message) => message,
        Err(e) => {
            return Json(failure(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ))
            .into_response()
        }
    };
    let request = match Request::read(message) {
        Ok(request) => request,
        Err(refusal) => return Json(refusal).into_response(),
    };
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    if request.method == "initialize" {
        let id = request.id.clone().unwrap_or(Value::Null);
        return match state.mcp.open(&state) {
            Ok(session) => {
                let mut response = Json(success(id, initialized(&request.params))).into_response();
                if let Ok(value) = HeaderValue::from_str(&session) {
                    response.headers_mut().insert(SESSION_HEADER, value);
                }
                response
            }
            Err(e) => (
                e.status(),
                Json(failure(id, INVALID_REQUEST, &e.to_string())),
            )
                .into_response(),
        };
    }
    let held = match session {
        None => None,
        Some(session) => match state.mcp.find(session, state.hub.options.idle_timeout) {
            Some(held) => Some(held),
            // MCP's answer to an unknown session: 404, and the client starts a new one.
            None => {
                let id = request.id.clone().unwrap_or(Value::Null);
                return (
                    StatusCode::NOT_FOUND,
                    Json(failure(
                        id,
                        INVALID_REQUEST,
                        "unknown or expired MCP session: send initialize again",
                    )),
                )
                    .into_response();
            }
        },
    };
    // A notification (`notifications/initialized`, …): accepted, nothing to answer.
    let Some(id) = request.id.clone() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let answer = match held {
        Some(held) => {
            let mut held = held.lock().await;
            dispatch(&state, Some(&mut held), request, id).await
        }
        None => dispatch(&state, None, request, id).await,
    };
    Json(answer).into_response()
}

/// `GET /mcp` would open a stream of server messages; this server sends none.
async fn no_stream() -> Response {
    ServeError::MethodNotAllowed(
        "/mcp sends no server-initiated messages: POST requests to it".into(),
    )
    .into_response()
}

/// `DELETE /mcp`: end the session named by `Mcp-Session-Id` and drop its negotiation.
async fn end_session(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let Some(session) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return ServeError::Validation("DELETE /mcp needs the Mcp-Session-Id header".into())
            .into_response();
    };
    match state.mcp.close(session) {
        Some(held) => {
            held.lock().await.release(&state);
            StatusCode::NO_CONTENT.into_response()
        }
        None => ServeError::UnknownEpisode(format!("MCP session {session}")).into_response(),
    }
}

/// The `initialize` result: the revision agreed, the server's capabilities (tools), its name.
fn initialized(params: &Map<String, Value>) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "dealgym", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Negotiate through tools: call start_negotiation (optionally with a scenario_id, family, seed or opponent), then one move tool per turn — make_offer, accept, reject, walk_away or say — until the result says done. Each result is what your side sees: the other side's reply, your structured state (the offer on the table, your values, turns left, the rules) and, at the end, the outcome and your reward."
    })
}

/// Answer a request other than `initialize`, with the session's negotiation if there is one.
async fn dispatch(state: &Shared, held: Option<&mut Held>, request: Request, id: Value) -> Value {
    match request.method.as_str() {
        "ping" => success(id, json!({})),
        "tools/list" => {
            let moves = match &held {
                Some(held) => session_tools(state, held).await,
                None => None,
            };
            success(id, json!({"tools": tools(moves)}))
        }
        "tools/call" => {
            let Some(Value::String(name)) = request.params.get("name").cloned() else {
                return failure(id, INVALID_PARAMS, "tools/call needs a string `name`");
            };
            let arguments = match request.params.get("arguments") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(arguments) => arguments.clone(),
            };
            let Some(held) = held else {
                return success(
                    id,
                    tool_error(
                        "no negotiation: open an MCP session (initialize; send its Mcp-Session-Id header back) and call start_negotiation",
                    ),
                );
            };
            match call(state, held, &name, arguments).await {
                Ok(result) => success(id, result),
                Err(Refused::Protocol(message)) => failure(id, INVALID_PARAMS, &message),
                Err(Refused::Tool(e)) => success(id, tool_error(&e.to_string())),
            }
        }
        other => failure(
            id,
            METHOD_NOT_FOUND,
            &format!("method not found: {other} (this server answers initialize, ping, tools/list and tools/call)"),
        ),
    }
}

/// Why a tool call was not played: not a request this server can take (a JSON-RPC error), or
/// a refusal the caller can act on (a tool result with `isError`).
enum Refused {
    Protocol(String),
    Tool(ServeError),
}

impl From<ServeError> for Refused {
    fn from(e: ServeError) -> Refused {
        Refused::Tool(e)
    }
}

async fn call(
    state: &Shared,
    held: &mut Held,
    name: &str,
    arguments: Value,
) -> Result<Value, Refused> {
    let answer = match name {
        "start_negotiation" => {
            let mut args: ResetArgs = serde_json::from_value(arguments)
                .map_err(|e| ServeError::Validation(format!("start_negotiation: {e}")))?;
            // The learner acts through these tools: its instructions say so, and its record
            // (`setup.seats.learner.format`), unless the client asks for another format.
            args.rules
                .get_or_insert_with(Map::new)
                .entry("learner_format")
                .or_insert_with(|| json!("tools"));
            // A reset naming an n-party table starts it with the client as the seat
            // `learner_role` names, as OpenEnv's does ([`Held::reset`]).
            held.reset(state, &args).await?
        }
        "observe" => held.observe(state).await?,
        // Every other name is the seat's move: the engine reads it (an unknown tool is a
        // malformed turn, corrected like any other), once a negotiation is on.
        _ => {
            if held.current.is_none() {
                if !TOOL_NAMES.contains(&name) {
                    return Err(Refused::Protocol(format!("unknown tool `{name}`")));
                }
                return Err(ServeError::NoSession.into());
            }
            // A seat prompted for text (an OpenEnv `reset` without the tools format) is not
            // one whose calls can be format-ok: say how to start one that acts through tools.
            if let Some(format) = held.format_to_move(state).await? {
                if format != TurnFormat::Tools {
                    return Err(ServeError::Validation(format!(
                        "the seat to move was asked for the {} text format, not tools: start a negotiation with start_negotiation, or reset with rules {{\"learner_format\": \"tools\"}}",
                        serde_json::to_value(format).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
                    ))
                    .into());
                }
            }
            let completion = Completion {
                tool_calls: vec![ToolCall::new(
                    format!("mcp_{}", held.state(state).await?.step_count),
                    name,
                    arguments.to_string(),
                )],
                ..Completion::default()
            };
            held.step(state, None, completion, Sampled::default())
                .await?
        }
    };
    Ok(tool_result(&answer))
}

/// A tool's result: the seat's answer as structured content, and as text what it is to answer
/// (the other side's reply or the correction) or, once it is over, how it ended — a two-party
/// episode's or a table's seat alike.
fn tool_result(answer: &Observed) -> Value {
    // How it ended (the outcome's name, the deal as the seat reads it), the prompt, whether
    // the seat's last call was malformed, and the reward.
    let (ended, prompt, malformed, reward) = match answer {
        Observed::Episode(answer) => {
            let observation = &answer.observation;
            let ended = observation.info.outcome.as_ref().map(|outcome| {
                let terms = outcome
                    .outcome
                    .terms_text
                    .as_ref()
                    .map(|t| format!(" ({t}, from the learner's side)"));
                (outcome.outcome.kind.name(), terms)
            });
            let malformed = observation
                .state
                .last_turn
                .as_ref()
                .is_some_and(|t| t.error.is_some());
            (ended, &observation.prompt, malformed, answer.reward)
        }
        Observed::Table(answer) => {
            let observation = &answer.observation;
            let ended = match &observation.view.state {
                SeatState::Table(state) => state.outcome.as_ref().map(|outcome| {
                    let deal = match (outcome.offer, &outcome.deal) {
                        (Some(offer), Some(deal)) => Some(format!(" (offer #{offer}: {deal})")),
                        _ => None,
                    };
                    (outcome.kind.name(), deal)
                }),
                SeatState::Market(state) => state
                    .outcome
                    .as_ref()
                    .map(|outcome| (outcome.kind.name(), None)),
            };
            let malformed = observation.error.is_some();
            (ended, &observation.view.prompt, malformed, answer.reward)
        }
    };
    let text = match ended {
        Some((kind, terms)) => format!(
            "The negotiation is over: {kind}{}; your reward: {}.",
            terms.unwrap_or_default(),
            reward.unwrap_or_default()
        ),
        None => prompt.clone(),
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": to_json(answer),
        "isError": malformed,
    })
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// The move tools of the negotiation a session holds, if any: a table's (`accept` names an
/// offer) or its scenario's term space's.
async fn session_tools(state: &Shared, held: &Held) -> Option<Vec<Value>> {
    if let Some(id) = held.table_id() {
        let slot = state.hub.find_table(id).ok()?;
        let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
        // A market reads text turns: MCP (the tools format) never holds one.
        return Some(specs(
            session.episode.table()?.scenario().term_space(),
            ToolSet::Table,
        ));
    }
    let OwnedSpace(scenario) = scenario_space(state, held).await?;
    Some(specs(scenario.term_space(), ToolSet::Bilateral))
}

/// The term space of the two-party negotiation a session holds, if any, for its tools' schemas.
async fn scenario_space(state: &Shared, held: &Held) -> Option<OwnedSpace> {
    let scenario_id = held.state(state).await.ok()?.episode?.scenario_id;
    let index = state
        .hub
        .catalog
        .pick(Some(&scenario_id), None, None, 0)
        .ok()?;
    Some(OwnedSpace(state.hub.catalog.scenarios[index].clone()))
}

/// A scenario kept for its term space.
struct OwnedSpace(std::sync::Arc<crate::scenario::Scenario>);

/// The tools, as `tools/list` gives them: the session's own move tools once a negotiation is
/// on, else terms as an open object (its keys are the scenario's: `observe` shows them).
fn tools(moves: Option<Vec<Value>>) -> Vec<Value> {
    let mut tools: Vec<Value> = match moves {
        Some(moves) => moves,
        None => {
            let mut specs = specs(TermSpace::Price, ToolSet::Bilateral);
            specs[0]["inputSchema"]["properties"]["terms"] = json!({
                "type": "object",
                "description": "The deal: a price (`{\"price\": 120}`), what YOU get of each item (`{\"food\": 2, \"water\": 1, \"firewood\": 0}`), or a value for every issue. start_negotiation's result lists the scenario's terms."
            });
            specs
        }
    };
    tools.push(json!({
        "name": "start_negotiation",
        "description": "Start a new negotiation (dropping the one in progress): every argument is optional.",
        "inputSchema": to_json(&schemars::schema_for!(ResetArgs)),
    }));
    tools.push(json!({
        "name": "observe",
        "description": "What your side sees now, without making a move.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
    }));
    tools
}

fn specs(space: TermSpace<'_>, set: ToolSet) -> Vec<Value> {
    tool_specs_of(space, set)
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.parameters}))
        .collect()
}
