//! OpenEnv's protocol, as its `http_server.py` and `types.py` define it, so OpenEnv's
//! `GenericEnvClient` plays dealgym unchanged. The stateful path is the WebSocket (`/ws`): one
//! episode per connection, `reset` starts a new one. `POST /reset` and `POST /step` are
//! stateless, as in OpenEnv: each builds a fresh episode (`/step` resets with the kwargs sent
//! beside the action, then plays the action as the learner's first turn).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::FutureExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::ServeError;
use super::hub::Owner;
use super::session::{ResetArgs, Sampled};
use super::{parse_body, Shared};
use crate::game::{Completion, Seat};

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/ws", get(upgrade))
        .route("/reset", post(reset))
        .route("/step", post(step))
        .route("/state", get(state_stateless))
        .route("/schema", get(schema))
        .route("/metadata", get(metadata))
}

pub(super) async fn health() -> Json<Value> {
    Json(json!({"status": "healthy"}))
}

/// The action: the raw completion, and for self-play the seat it is for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Action {
    pub message: String,
    /// The seat this completion is for; default the seat to move.
    #[serde(default)]
    pub seat: Option<Seat>,
    /// The model's separate reasoning, if the endpoint returned it apart.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Token-exact mode: the ids the model sampled after the observation's `token_ids`.
    #[serde(default)]
    pub completion_ids: Option<Vec<u32>>,
    /// Token-exact mode: the sampling logprob of each completion id.
    #[serde(default)]
    pub logprobs: Option<Vec<f64>>,
    /// Token-exact mode: why sampling stopped (`stop`, `length`).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// OpenEnv's base `Action` field; accepted and ignored.
    #[serde(default)]
    #[allow(dead_code)]
    pub metadata: Option<Value>,
}

impl Action {
    /// The completion, and what the client sampled (token-exact mode).
    pub fn completion(self) -> (Completion, Sampled) {
        (
            Completion {
                text: self.message,
                reasoning: self.reasoning,
                ..Completion::default()
            },
            Sampled {
                completion_ids: self.completion_ids,
                logprobs: self.logprobs,
                finish_reason: self.finish_reason,
            },
        )
    }
}

async fn reset(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    let limit = state.hub.options.body_limit;
    let result = async {
        let args: ResetArgs = parse_body(body, limit)?;
        let (session, record) = state.hub.start(&args).await?;
        if let Some(record) = record {
            state.hub.log(&record)?;
        }
        Ok::<_, ServeError>(session.observe(session.to_move().unwrap_or(Seat::Learner)))
    }
    .await;
    respond(result)
}

/// OpenEnv's `StepRequest`: the action, its optional timeout and request id, and (here) the
/// reset kwargs of the fresh episode the action is played in.
#[derive(Debug, Deserialize)]
struct StepRequest {
    action: Value,
    #[serde(default)]
    #[allow(dead_code)]
    timeout_s: Option<f64>,
    #[serde(default)]
    #[allow(dead_code)]
    request_id: Option<String>,
    #[serde(flatten)]
    reset: serde_json::Map<String, Value>,
}

async fn step(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    let limit = state.hub.options.body_limit;
    let result = async {
        let request: StepRequest = parse_body(body, limit)?;
        let action: Action = serde_json::from_value(request.action)
            .map_err(|e| ServeError::Validation(format!("action: {e}")))?;
        let args: ResetArgs = serde_json::from_value(Value::Object(request.reset))
            .map_err(|e| ServeError::Validation(e.to_string()))?;
        let (mut session, record) = state.hub.start(&args).await?;
        if record.is_some() {
            return Err(ServeError::Ended(session.id));
        }
        let seat = action.seat;
        let (completion, sampled) = action.completion();
        let record = session.step(seat, completion, sampled).await?;
        if let Some(record) = &record {
            state.hub.log(record)?;
        }
        let viewer = session.to_move().or(seat).unwrap_or(Seat::Learner);
        Ok(session.observe(viewer))
    }
    .await;
    respond(result)
}

/// Stateless HTTP has no episode to describe: OpenEnv answers a fresh environment's state.
async fn state_stateless() -> Json<Value> {
    Json(json!({"episode_id": null, "step_count": 0}))
}

fn respond(result: Result<Value, ServeError>) -> Response {
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn metadata() -> Json<Value> {
    Json(json!({
        "name": "dealgym",
        "description": "Two-party negotiations (AHP, Craigslist, CaSiNo, Deal or No Deal, Job Interview): \
            send the learner's raw completion as {\"message\": …}; the opponent is played by the server.",
        "version": env!("CARGO_PKG_VERSION"),
        "author": null,
        "documentation_url": null,
        "readme_content": null,
    }))
}

async fn schema() -> Json<Value> {
    let message = json!({"type": "object", "properties": {
        "role": {"type": "string", "enum": ["system", "user", "assistant"]},
        "content": {"type": "string"}}, "required": ["role", "content"]});
    let seat = json!({"type": "string", "enum": ["learner", "opponent"]});
    Json(json!({
        "action": {
            "title": "DealAction", "type": "object", "additionalProperties": false,
            "properties": {
                "message": {"type": "string", "description": "The raw completion (Thought/Talk/Action)"},
                "seat": {"anyOf": [seat, {"type": "null"}], "description": "For self-play: the seat this completion is for"},
                "reasoning": {"type": ["string", "null"]},
                "completion_ids": {"type": ["array", "null"], "items": {"type": "integer"}, "description": "Token-exact mode: the ids the model sampled"},
                "logprobs": {"type": ["array", "null"], "items": {"type": "number"}, "description": "Token-exact mode: the logprob of each sampled id"},
                "finish_reason": {"type": ["string", "null"]},
                "metadata": {"type": "object"}
            },
            "required": ["message"]
        },
        "observation": {
            "title": "DealObservation", "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The last message the seat is to answer"},
                "messages": {"type": "array", "items": message},
                "seat": seat,
                "role": {"type": "string"},
                "turn": {"type": "integer", "description": "Turns (attempts) played so far"},
                "to_move": {"anyOf": [seat, {"type": "null"}]},
                "done": {"type": "boolean"},
                "reward": {"type": "number"},
                "token_ids": {"type": ["object", "null"], "description": "Token-exact mode (the `tokens` reset kwarg): {prompt_ids: the ids to append before sampling, drift}"},
                "info": {"type": "object", "description": "episode_id, scenario_id, family, last_turn (the parse of the seat's last completion), regulation, outcome and rewards at the end"}
            },
            "required": ["prompt", "messages", "seat", "role", "turn", "done", "info"]
        },
        "state": {
            "title": "DealState", "type": "object",
            "properties": {
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer", "minimum": 0},
                "scenario_id": {"type": "string"},
                "family": {"type": "string"},
                "to_move": {"anyOf": [seat, {"type": "null"}]},
                "done": {"type": "boolean"},
                "outcome": {"type": ["object", "null"]},
                "rewards": {"type": ["object", "null"]}
            }
        }
    }))
}

async fn upgrade(State(state): State<Shared>, ws: WebSocketUpgrade) -> Response {
    let limit = state.hub.options.body_limit;
    // As many sockets at once as HTTP connections: an upgraded socket leaves that count.
    let Ok(permit) = state.sockets.clone().try_acquire_owned() else {
        return ServeError::Connections(state.max_sockets).into_response();
    };
    ws.max_message_size(limit)
        .on_upgrade(move |socket| async move {
            connection(state, socket).await;
            drop(permit);
        })
}

/// One client connection: at most one episode at a time, reachable from this connection
/// only; closing the connection drops an unfinished episode (only finished ones are logged).
/// A socket with no message for `--idle-timeout-s` is closed (pings keep no socket open).
/// The connection holds its episode's id only: a session reaped while idle is gone.
async fn connection(state: Shared, mut socket: WebSocket) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let owner = Owner::Socket(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let idle = state.hub.options.idle_timeout;
    let mut current: Option<String> = None;
    let mut shutdown = state.shutdown.clone();
    let mut last_message = tokio::time::Instant::now();
    loop {
        let incoming = tokio::select! {
            m = tokio::time::timeout_at(last_message + idle, socket.recv()) => match m {
                Ok(m) => m,
                Err(_) => break,
            },
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let text = match incoming {
            Some(Ok(WsMessage::Text(t))) => t.to_string(),
            Some(Ok(WsMessage::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
            Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => continue,
        };
        last_message = tokio::time::Instant::now();
        let reply = match serde_json::from_str::<Value>(&text) {
            Err(e) => Err(ServeError::InvalidJson(e.to_string())),
            Ok(message) => match message.get("type").and_then(Value::as_str) {
                Some("close") => break,
                Some(kind) => {
                    // A bug while a message is handled is an error message naming it, and the
                    // socket lives on (its session is dropped: it may be half-stepped).
                    let handled = std::panic::AssertUnwindSafe(handle(
                        &state,
                        owner,
                        &mut current,
                        kind,
                        message.get("data").cloned(),
                    ))
                    .catch_unwind()
                    .await;
                    handled.unwrap_or_else(|panic| {
                        if let Some(id) = current.take() {
                            state.hub.remove(&id, owner);
                        }
                        Err(ServeError::Execution(format!(
                            "{}: {}",
                            crate::run::INTERNAL_ERROR,
                            crate::run::panic_message(panic.as_ref())
                        )))
                    })
                }
                None => Err(ServeError::Validation(
                    "a message needs a string `type` (reset, step, state or close)".into(),
                )),
            },
        };
        let out = match reply {
            Ok(v) => v,
            Err(e) => e.ws_message(),
        };
        if socket
            .send(WsMessage::Text(out.to_string().into()))
            .await
            .is_err()
        {
            break;
        }
    }
    if let Some(id) = current {
        state.hub.remove(&id, owner);
    }
}

async fn handle(
    state: &Shared,
    owner: Owner,
    current: &mut Option<String>,
    kind: &str,
    data: Option<Value>,
) -> Result<Value, ServeError> {
    match kind {
        "reset" => {
            let args: ResetArgs = serde_json::from_value(data.unwrap_or_else(|| json!({})))
                .map_err(|e| ServeError::Validation(e.to_string()))?;
            if let Some(old) = current.take() {
                state.hub.remove(&old, owner);
            }
            state.hub.check_room()?;
            let (session, record) = state.hub.start(&args).await?;
            if let Some(record) = &record {
                state.hub.log(record)?;
            }
            let observation = session.observe(session.to_move().unwrap_or(Seat::Learner));
            let id = session.id.clone();
            state.hub.admit(session, owner)?;
            *current = Some(id);
            Ok(json!({"type": "observation", "data": observation}))
        }
        "step" => {
            let id = current.as_ref().ok_or(ServeError::NoSession)?;
            let slot = state.hub.find(id, owner).map_err(|_| {
                ServeError::UnknownEpisode(format!("{id} (reclaimed after sitting idle)"))
            })?;
            let action: Action = serde_json::from_value(data.unwrap_or(Value::Null))
                .map_err(|e| ServeError::Validation(format!("step data: {e}")))?;
            let seat = action.seat;
            let (completion, sampled) = action.completion();
            let observation = state.hub.step(&slot, seat, completion, sampled).await?;
            Ok(json!({"type": "observation", "data": observation}))
        }
        "state" => {
            let Some(id) = current.as_ref() else {
                return Ok(json!({"type": "state", "data": {"episode_id": null, "step_count": 0}}));
            };
            let slot = state.hub.find(id, owner)?;
            let session = slot.session.lock().await;
            Ok(json!({"type": "state", "data": session.state()}))
        }
        other => Err(ServeError::UnknownType(other.to_string())),
    }
}
