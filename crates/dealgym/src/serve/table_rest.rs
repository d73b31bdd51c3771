//! Native REST for n-party tables and markets, a session per seat: `POST /v1/tables` (start
//! one: the scenario or `family: "market"`, the seed, the options; answers its id and roles), `GET /v1/tables/{id}` (where it
//! stands), `GET /v1/tables/{id}/seats/{role}` (what that seat sees, and only that),
//! `POST /v1/tables/{id}/seats/{role}/step` (`{"message", "reasoning"?}`: the seat's raw
//! completion), `DELETE /v1/tables/{id}` (with a token of the table). A seat stepping out of
//! turn gets a 409 naming the seat whose turn it is; one client may hold several seats' sessions.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::ServeError;
use super::hosted::SeatState;
use super::openapi::{Routes, Schemas};
use super::secret;
use super::table::{TableReset, TableSession};
use super::wire::{Reply, StepAnswer};
use super::{parse_body, Shared};
use crate::engine::{Seated, SeatedRecord};
use crate::game::Completion;
use crate::market::market_seat_state;
use crate::table::TableStep;
use crate::vocab::Message;

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/v1/tables", create)
        .get("/v1/tables/{id}", show)
        .delete("/v1/tables/{id}", delete)
        .get("/v1/tables/{id}/seats/{role}", observe)
        .post("/v1/tables/{id}/seats/{role}/step", step)
}

/// Where a table stands.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct TableStatus {
    pub table_id: String,
    pub scenario_id: String,
    /// Every party's role, in the game's order: the seats a client steps by.
    pub roles: Vec<String>,
    /// The seats played by clients (the others are played in process).
    pub client_roles: Vec<String>,
    /// The role to move; `null` once the table has ended.
    pub to_move: Option<String>,
    pub done: bool,
    /// Once ended: what every party may know of the ending — its kind, the role that ended it,
    /// and at a table the agreed offer and deal, at a market every trade by price. Each
    /// party's score, ρ, surplus and reward are its own: in its seat's view.
    pub outcome: Option<Value>,
    /// Each client seat's secret, by role: only in the answer that made the table. Observing
    /// or stepping as a seat takes its token in the `x-seat-token` header; hand each player
    /// its own seat's token only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat_tokens: Option<BTreeMap<String, String>>,
    /// The creator's secret: only in the answer that made the table. Dropping the table
    /// (`DELETE`) takes it, or a seat's token, in the `x-seat-token` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_token: Option<String>,
}

/// What one seat sees: its own chat and the table's public state.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct SeatView {
    pub table_id: String,
    pub role: String,
    /// The last message (the one to answer when it is this seat's turn).
    pub prompt: String,
    /// The seat's chat, as its model is sent it: its own system prompt (with its own
    /// confidential block), the others' talk and moves, its own replies.
    pub messages: Vec<Message>,
    /// The table's public state from this seat (core's `table::seat_state`), or at a market
    /// the book, the trades and the seat's own units (core's `market::market_seat_state`).
    pub state: SeatState,
    /// At a table played through tools (`format: "tools"`): the table's tools, as an
    /// OpenAI-compatible chat request's `tools`, to send the seat's model with `messages`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Whether it is this seat's turn.
    pub your_turn: bool,
    pub done: bool,
    /// This seat's reward once the table has ended, else `null`.
    pub reward: Option<f64>,
}

/// A seat's turn: its raw completion.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TableAction {
    /// The raw completion (Thought/Talk/Action), as the model wrote it.
    pub message: String,
    /// A reasoning model's separate reasoning, kept in the record, never forwarded.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// At a table played through tools: the calls the model made, as a chat completion's
    /// message holds them; `message` is its text beside them.
    #[serde(default)]
    #[schemars(with = "Option<Vec<crate::vocab::ToolCall>>")]
    pub tool_calls: Option<Vec<Value>>,
}

/// What a step did, and what the stepping seat sees now.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct TableStepAnswer {
    /// The completion could not be played (format or legality: an option not in the game, an
    /// offer that does not exist) and the same seat is asked again, or forfeits once its
    /// retries are spent.
    pub retry: bool,
    /// Why it could not be played.
    pub error: Option<String>,
    /// An agreement, a walk-out or a forfeit ended the table.
    pub terminated: bool,
    /// The schedule ran out.
    pub truncated: bool,
    pub to_move: Option<String>,
    pub view: SeatView,
}

/// What OpenEnv answers for the seat its client plays at a table (`/ws`, `/reset`, `/step`):
/// the seat's view, as `GET /v1/tables/{id}/seats/{role}` answers it, and what the client's
/// last step did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "TableObservation")]
pub(super) struct TableObservation {
    #[serde(flatten)]
    pub view: SeatView,
    /// The role to move; `null` once the table has ended (between the client's turns the
    /// scripted seats have moved, so it is the client's role while the table goes on).
    pub to_move: Option<String>,
    /// The client's last completion could not be played and its seat is asked again.
    pub retry: bool,
    /// Why it could not be played.
    pub error: Option<String>,
    /// An agreement, a walk-out or a forfeit ended the table.
    pub terminated: bool,
    /// The schedule ran out.
    pub truncated: bool,
}

/// OpenEnv's answer for seat `role` of `session`, after the client's `step` (`None`: its
/// reset). The reward is OpenEnv's: `null` on a reset, 0 after a step until the table ends,
/// then the seat's reward as the logged record holds it.
pub(super) fn single_seat_answer(
    session: &TableSession,
    role: &str,
    step: Option<&TableStep>,
) -> Result<StepAnswer<TableObservation>, ServeError> {
    let seat = session.seat(role)?;
    let view = view(session, seat);
    let (terminated, truncated) = crate::engine::ending(session.episode.ending().map(|o| o.kind));
    let done = view.done;
    let reward = match (done, step) {
        (true, _) => view.reward,
        (false, Some(_)) => Some(0.0),
        (false, None) => None,
    };
    Ok(StepAnswer {
        observation: TableObservation {
            view,
            to_move: session.to_move(),
            retry: step.is_some_and(|s| s.retry),
            error: step.and_then(|s| s.error.as_ref()).map(|e| e.to_string()),
            terminated,
            truncated,
        },
        reward,
        done,
    })
}

fn status(session: &TableSession) -> TableStatus {
    let record = session.ended_record();
    TableStatus {
        table_id: session.id.clone(),
        scenario_id: session.episode.scenario_id().to_string(),
        roles: session.roles(),
        client_roles: session.client_roles(),
        to_move: session.to_move(),
        done: record.is_some(),
        outcome: record.as_ref().map(|record| match record {
            SeatedRecord::Table(r) => {
                let o = &r.outcome.outcome;
                json!({
                    "kind": o.kind,
                    "by": o.by.map(|seat| session.episode.role(seat).to_string()),
                    "offer": o.offer,
                    "deal_text": r.outcome.deal_text,
                })
            }
            SeatedRecord::Market(r) => {
                let o = &r.outcome.outcome;
                let trades = match &session.episode {
                    super::hosted::Hosted::Market { episode, .. } => {
                        market_seat_state(episode, 0).trades
                    }
                    super::hosted::Hosted::Table { .. } => Vec::new(),
                };
                json!({
                    "kind": o.kind,
                    "by": o.by.map(|seat| session.episode.role(seat).to_string()),
                    "trades": trades,
                })
            }
        }),
        seat_tokens: None,
        table_token: None,
    }
}

pub(super) fn view(session: &TableSession, seat: usize) -> SeatView {
    let messages = session.episode.view(seat).to_vec();
    let reward = session.reward(seat);
    SeatView {
        table_id: session.id.clone(),
        role: session.episode.role(seat).to_string(),
        prompt: messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default(),
        messages,
        state: session.episode.seat_state(seat),
        tools: session.episode.tools(),
        your_turn: crate::engine::ToMove::to_move(&session.episode) == Some(seat),
        done: session.episode.ending().is_some(),
        reward,
    }
}

async fn create(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    match start(&state, body).await {
        Ok(body) => Reply(StatusCode::CREATED, body).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn start(
    state: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<TableStatus, ServeError> {
    let reset: TableReset = parse_body(body, state.hub.options.body_limit)?;
    let slot = state.hub.start_table(&reset).await?;
    let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
    Ok(TableStatus {
        seat_tokens: Some(session.seat_tokens()),
        table_token: Some(session.table_token().to_string()),
        ..status(&session)
    })
}

async fn show(State(state): State<Shared>, Path(id): Path<String>) -> Response {
    match state.hub.find_table(&id) {
        Ok(slot) => {
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            Reply::ok(status(&session)).into_response()
        }
        Err(e) => e.into_response(),
    }
}

async fn delete(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match state.hub.drop_table(&id, secret::presented(&headers)).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn observe(
    State(state): State<Shared>,
    Path((id, role)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let result = state.hub.find_table(&id).and_then(|slot| {
        let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
        let seat = session.seat_for(&role, secret::presented(&headers))?;
        Ok(view(&session, seat))
    });
    match result {
        Ok(body) => Reply::ok(body).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn step(
    State(state): State<Shared>,
    Path((id, role)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match play(&state, &id, &role, secret::presented(&headers), body).await {
        Ok(body) => Reply::ok(body).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn play(
    state: &Shared,
    id: &str,
    role: &str,
    token: Option<&str>,
    body: Result<Bytes, BytesRejection>,
) -> Result<TableStepAnswer, ServeError> {
    let action: TableAction = parse_body(body, state.hub.options.body_limit)?;
    let completion = Completion {
        text: action.message,
        reasoning: action.reasoning,
        tool_calls: action
            .tool_calls
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, call)| crate::vocab::ToolCall::read(call, i))
            .collect(),
        ..Completion::default()
    };
    let (slot, step) = state.hub.step_table(id, role, token, completion).await?;
    let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
    let (terminated, truncated) = crate::engine::ending(session.episode.ending().map(|o| o.kind));
    Ok(TableStepAnswer {
        retry: step.retry,
        error: step.error.map(|e| e.to_string()),
        terminated,
        truncated,
        to_move: session.to_move(),
        view: view(&session, step.seat),
    })
}

/// The table routes in `/openapi.json`.
pub(super) fn describe(s: &mut Schemas, error: &Value) -> Vec<(&'static str, Value)> {
    use super::openapi::operation;
    let table_id = json!({
        "name": "id", "in": "path", "required": true,
        "description": "The table's id, as its create answered it.",
        "schema": {"type": "string"},
    });
    let role = json!({
        "name": "role", "in": "path", "required": true,
        "description": "A party's role (one of the table's `roles`).",
        "schema": {"type": "string"},
    });
    vec![
        (
            "/v1/tables",
            json!({"post": operation(
                "Start an n-party table (the deliberation family) or a market (`family: \"market\"`, or a market scenario's id) kept by the server; the scripted seats have moved up to a client's turn.",
                Some(s.body::<TableReset>("The scenario or family, the seed, the table's options, each seat's player.")),
                json!({"201": s.answer::<TableStatus>("The table's id, its roles and the role to move.")}), error)}),
        ),
        (
            "/v1/tables/{id}",
            json!({
                "parameters": [table_id.clone()],
                "get": operation("Where the table stands (and its outcome and rewards once ended).", None,
                    json!({"200": s.answer::<TableStatus>("The table.")}), error),
                "delete": operation("Drop the table: takes a token of it in `x-seat-token` (the `table_token` its creation answered, or one of its `seat_tokens`; else 403). An unfinished table is logged as abandoned (an `error` ending saying so).", None,
                    json!({"204": {"description": "Dropped."}}), error),
            }),
        ),
        (
            "/v1/tables/{id}/seats/{role}",
            json!({
                "parameters": [table_id.clone(), role.clone()],
                "get": operation("What one seat sees: its own chat and the table's public state (at a market: the book, the trades and its own units), nothing of another seat's scores, minimum, values, costs, instructions or thoughts.", None,
                    json!({"200": s.answer::<SeatView>("The seat's view.")}), error),
            }),
        ),
        (
            "/v1/tables/{id}/seats/{role}/step",
            json!({
                "parameters": [table_id, role],
                "post": operation("Play the seat's raw completion. Out of turn: 409 WRONG_SEAT naming the seat to move. A turn the game cannot play (an option not in the game, an offer or order that does not exist) is a turn error under the malformed-turn policy, answered 200 with `retry`.",
                    Some(s.body::<TableAction>("The raw completion.")),
                    json!({"200": s.answer::<TableStepAnswer>("What the step did and what the seat sees now.")}), error),
            }),
        ),
    ]
}
