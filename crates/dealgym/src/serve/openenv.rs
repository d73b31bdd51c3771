//! OpenEnv's protocol, as its `http_server.py` and `types.py` define it, so OpenEnv's
//! `GenericEnvClient` plays dealgym unchanged. The stateful path is the WebSocket (`/ws`): one
//! episode per connection, `reset` starts a new one. `POST /reset` and `POST /step` are
//! stateless, as in OpenEnv: each builds a fresh episode (`/step` resets with the kwargs sent
//! beside the action, then plays the action as the learner's first turn).
//!
//! A reset naming an n-party table (a table scenario's id, or the family `deliberation`) plays
//! it as OpenEnv's single-agent environment: the client is the seat its `learner_role` names,
//! every other seat is played in process by `rule:deliberation`, and each step plays the
//! client's turn, then the scripted seats up to its next turn or the end. The table lives in
//! the hub's one registry and is stepped by the code `/v1/tables` steps it with. A reset naming
//! a market (a market's id, or the family `market`) plays it the same way, every other trader
//! played by `rule:zic`, or by the scripted trader its `opponent` names.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::error::ServeError;
use super::held::Held;
use super::hub::Owner;
use super::mcp;
use super::openapi::Routes;
use super::session::ResetArgs;
use super::table::single_seat_turn;
use super::wire::{
    to_json, Action, EnvState, Health, HealthStatus, Metadata, Observed, OpenEnvSchema, Reply,
    WsReply,
};
use super::{parse_body, Shared};
use crate::game::Seat;

pub(super) fn routes() -> Routes {
    Routes::new()
        .get("/ws", upgrade)
        .post("/reset", reset)
        .post("/step", step)
        .get("/state", state_stateless)
        .get("/schema", schema)
        .get("/metadata", metadata)
}

pub(super) async fn health() -> Reply<Health> {
    Reply::ok(Health {
        status: HealthStatus::Healthy,
    })
}

async fn reset(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    let limit = state.hub.options.body_limit;
    let result = async {
        let args: ResetArgs = parse_body(body, limit)?;
        if state.hub.names_table(&args) {
            return Ok(Observed::Table(state.hub.table_once(&args, None).await?));
        }
        let (session, record) = state.hub.start(&args).await?;
        if let Some(record) = record {
            state.hub.log(&record)?;
        }
        let seat = session.to_move().unwrap_or(Seat::Learner);
        Ok::<_, ServeError>(Observed::Episode(session.observe(seat)))
    }
    .await;
    respond(result)
}

/// OpenEnv's `StepRequest`: the action, its optional timeout and request id, and (here) the
/// reset kwargs of the fresh episode the action is played in.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct StepRequest {
    #[schemars(with = "Action")]
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
        if state.hub.names_table(&args) {
            let seat = action.seat;
            let (completion, sampled) = action.completion();
            let completion = single_seat_turn(seat, completion, &sampled)?;
            let answer = state.hub.table_once(&args, Some(completion)).await?;
            return Ok(Observed::Table(answer));
        }
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
        Ok(Observed::Episode(session.observe(viewer)))
    }
    .await;
    respond(result)
}

/// Stateless HTTP has no episode to describe: OpenEnv answers a fresh environment's state.
async fn state_stateless() -> Reply<EnvState> {
    Reply::ok(EnvState::fresh())
}

fn respond(result: Result<Observed, ServeError>) -> Response {
    match result {
        Ok(answer) => Reply::ok(answer).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn metadata() -> Reply<Metadata> {
    Reply::ok(Metadata {
            name: "dealgym",
            description: "Two-party negotiations (AHP, Craigslist, CaSiNo, Deal or No Deal, Job Interview): \
                send the learner's raw completion as {\"message\": …}; the opponent is played by the server.",
            version: env!("CARGO_PKG_VERSION"),
            author: None,
            documentation_url: None,
            readme_content: None,
        },
    )
}

/// The schema is derived from the types once.
async fn schema() -> Reply<&'static OpenEnvSchema> {
    static SCHEMA: std::sync::LazyLock<OpenEnvSchema> =
        std::sync::LazyLock::new(OpenEnvSchema::derived);
    Reply::ok(&SCHEMA)
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
    let mut held = Held::new(Owner::Socket(
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    ));
    let idle = state.hub.options.idle_timeout;
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
                        &mut held,
                        kind,
                        message.get("data").cloned(),
                    ))
                    .catch_unwind()
                    .await;
                    handled.unwrap_or_else(|panic| {
                        held.release(&state);
                        Err(ServeError::Execution(format!(
                            "{}: {}",
                            crate::run::INTERNAL_ERROR,
                            crate::run::panic_message(panic.as_ref())
                        )))
                    })
                }
                None => Err(ServeError::Validation(
                    "a message needs a string `type` (reset, step, state, mcp or close)".into(),
                )),
            },
        };
        let out = match reply {
            Ok(Some(reply)) => to_json(&reply),
            // An MCP notification: no answer.
            Ok(None) => continue,
            Err(e) => to_json(&e.ws_message()),
        };
        if socket
            .send(WsMessage::Text(out.to_string().into()))
            .await
            .is_err()
        {
            break;
        }
    }
    held.release(&state);
}

async fn handle(
    state: &Shared,
    held: &mut Held,
    kind: &str,
    data: Option<Value>,
) -> Result<Option<WsReply>, ServeError> {
    let reply = match kind {
        "reset" => {
            let args: ResetArgs =
                serde_json::from_value(data.unwrap_or_else(|| Value::Object(Default::default())))
                    .map_err(|e| ServeError::Validation(e.to_string()))?;
            WsReply::Observation(held.reset(state, &args).await?)
        }
        "step" => {
            held.current.as_ref().ok_or(ServeError::NoSession)?;
            let action: Action = serde_json::from_value(data.unwrap_or(Value::Null))
                .map_err(|e| ServeError::Validation(format!("step data: {e}")))?;
            let seat = action.seat;
            let (completion, sampled) = action.completion();
            WsReply::Observation(held.step(state, seat, completion, sampled).await?)
        }
        "state" => WsReply::State(held.state(state).await?),
        // OpenEnv's `mcp` message: a JSON-RPC request for this connection's episode.
        "mcp" => match mcp::answer(state, held, data.unwrap_or(Value::Null)).await {
            Some(answer) => WsReply::Mcp(answer),
            None => return Ok(None),
        },
        other => return Err(ServeError::UnknownType(other.to_string())),
    };
    Ok(Some(reply))
}
