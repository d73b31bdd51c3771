//! Fuzzing `dealgym serve`: near-valid and arbitrary request bodies on every route that reads
//! one (`POST /reset`, `/step`, `/v1/episodes`, `/v1/episodes/{id}/step`, `/v1/rollouts`) and
//! messages on a WebSocket, against a server in the same process. An input "crashes" the
//! server when it answers 5xx (a bug or a panic caught as one), an error that is not the JSON
//! error shape, no answer at all, or when `/health` stops answering. Shared by the suite
//! (`tests/fuzz.rs`) and the soak (`examples/fuzz_serve.rs`).

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::{arbitrary_bytes, mutate_json, DICTIONARY};

/// The surfaces fuzzed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Reset,
    Step,
    Create,
    RestStep,
    Rollouts,
    Socket,
}

impl Route {
    pub const ALL: [Route; 6] = [
        Route::Reset,
        Route::Step,
        Route::Create,
        Route::RestStep,
        Route::Rollouts,
        Route::Socket,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Route::Reset => "POST /reset",
            Route::Step => "POST /step",
            Route::Create => "POST /v1/episodes",
            Route::RestStep => "POST /v1/episodes/{id}/step",
            Route::Rollouts => "POST /v1/rollouts",
            Route::Socket => "WS /ws",
        }
    }
}

const TURN: &str =
    "Thought: fine.\nTalk: How about this?\nAction: [SUBMIT_DEAL] food:2 water:1 firewood:0";

/// Valid bodies of `route`; `endpoint` is an OpenAI-compatible endpoint the server may call.
pub fn seeds(route: Route, endpoint: &str) -> Vec<Value> {
    let resets = vec![
        json!({}),
        json!({"family": "casino", "seed": 3}),
        json!({"family": "dnd", "index": 1, "learner_role": "buyer", "first_mover": "opponent"}),
        json!({"scenario_id": "x", "opponent": "rule:tough", "rules": {"max_rounds": 4, "reject_loop": 2}}),
        json!({"family": "job_interview", "opponent": "external", "episode_id": "e1"}),
        json!({"family": "ahp", "tokens": {"endpoint": endpoint, "model": "mock", "token_api": "llama_cpp"}}),
    ];
    match route {
        Route::Reset | Route::Create => resets,
        Route::Step => resets
            .into_iter()
            .map(|mut r| {
                r["action"] = json!({"message": TURN});
                r
            })
            .collect(),
        Route::RestStep => vec![
            json!({"message": TURN}),
            json!({"message": "Action: [ACCEPT_DEAL]", "seat": "learner"}),
            json!({"message": TURN, "reasoning": "hm", "completion_ids": [1, 2], "logprobs": [-0.1, -0.2]}),
        ],
        Route::Rollouts => vec![
            json!({"scenarios": {"family": "casino", "count": 1}, "group_size": 2, "seed": 1,
                   "learner": {"endpoint": endpoint, "model": "mock", "sampling": {"temperature": 0.7}}}),
            json!({"scenarios": [{"family": "dnd", "count": 1, "offset": 2}], "format": "messages",
                   "learner": {"endpoint": endpoint, "model": "mock"}, "opponent": "rule:linear",
                   "rules": {"first_mover": "learner"}}),
        ],
        Route::Socket => vec![
            json!({"type": "reset", "data": {"family": "casino"}}),
            json!({"type": "step", "data": {"message": TURN}}),
            json!({"type": "state"}),
            json!({"type": "reset", "data": {"family": "ahp", "rules": {"max_rounds": 2}}}),
        ],
    }
}

/// One input for `route`: a fifth arbitrary bytes, the rest a seed with values changed (and
/// a third of those a byte edit or two).
pub fn input(route: Route, endpoint: &str, rng: &mut impl Rng) -> Vec<u8> {
    if rng.random_ratio(1, 5) {
        return arbitrary_bytes(rng, 300);
    }
    let seed = seeds(route, endpoint)
        .choose(rng)
        .expect("seeds")
        .to_string();
    let mut bytes = mutate_json(&seed, rng).unwrap_or(seed).into_bytes();
    // Byte edits on a third of the inputs: the rest stay JSON and reach validation.
    let edits = if rng.random_ratio(1, 3) {
        rng.random_range(1..=2)
    } else {
        0
    };
    for _ in 0..edits {
        let len = bytes.len();
        let at = rng.random_range(0..=len);
        match rng.random_range(0..4) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let token = DICTIONARY.choose(rng).expect("dictionary");
                bytes.splice(at..at, token.bytes());
            }
            2 => bytes.truncate(at),
            _ => {}
        }
    }
    bytes
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Feeds inputs to one running server.
pub struct ServeFuzzer {
    base: String,
    http: reqwest::Client,
    socket: Option<Ws>,
    addr: std::net::SocketAddr,
    /// How the inputs were answered: HTTP statuses, and 0 for a WebSocket reply.
    pub answers: std::collections::BTreeMap<u16, u64>,
}

impl ServeFuzzer {
    pub fn new(addr: std::net::SocketAddr) -> ServeFuzzer {
        ServeFuzzer {
            base: format!("http://{addr}"),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("a client"),
            socket: None,
            addr,
            answers: Default::default(),
        }
    }

    /// Send `body` to `route`; a description of the crash if it made one.
    pub async fn send(&mut self, route: Route, body: Vec<u8>) -> Option<String> {
        if route == Route::Socket {
            return self.send_socket(body).await;
        }
        let mut stepped = None;
        let path = match route {
            Route::Reset => "/reset".to_string(),
            Route::Step => "/step".to_string(),
            Route::Create => "/v1/episodes".to_string(),
            Route::Rollouts => "/v1/rollouts".to_string(),
            Route::RestStep => match self.live_episode().await {
                Ok(episode) => {
                    let path = format!("/v1/episodes/{}/step", episode.0);
                    stepped = Some(episode);
                    path
                }
                Err(crash) => return Some(crash),
            },
            Route::Socket => unreachable!("handled above"),
        };
        let response = match self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => return Some(format!("no answer: {e}")),
        };
        let status = response.status().as_u16();
        *self.answers.entry(status).or_default() += 1;
        if route == Route::Rollouts && status == 200 {
            // Dropping the stream cancels the request's episodes: the status is the answer.
            return None;
        }
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Some(format!("{status} with an unreadable body: {e}")),
        };
        // The sessions an input made are deleted (with their tokens), so the table never fills
        // up.
        let created = (status == 201)
            .then(|| serde_json::from_str::<Value>(&text).ok())
            .flatten()
            .and_then(|v| episode_of(&v));
        for (id, token) in stepped.into_iter().chain(created) {
            let _ = self
                .http
                .delete(format!("{}/v1/episodes/{id}", self.base))
                .header("x-seat-token", token)
                .send()
                .await;
        }
        judge(status, &text)
    }

    /// A live REST episode to step (made with a valid create).
    async fn live_episode(&self) -> Result<(String, String), String> {
        let created = self
            .http
            .post(format!("{}/v1/episodes", self.base))
            .json(&json!({"family": "casino", "first_mover": "learner"}))
            .send()
            .await
            .map_err(|e| format!("no answer to a valid create: {e}"))?;
        let body: Value = created
            .json()
            .await
            .map_err(|e| format!("a valid create answered no JSON: {e}"))?;
        episode_of(&body).ok_or_else(|| format!("a valid create was refused: {body}"))
    }

    async fn send_socket(&mut self, body: Vec<u8>) -> Option<String> {
        if self.socket.is_none() {
            match tokio_tungstenite::connect_async(format!("ws://{}/ws", self.addr)).await {
                Ok((ws, _)) => self.socket = Some(ws),
                Err(e) => return Some(format!("no WebSocket: {e}")),
            }
        }
        let ws = self.socket.as_mut().expect("connected above");
        let message = match String::from_utf8(body) {
            Ok(text) => WsMessage::text(text),
            Err(e) => WsMessage::binary(e.into_bytes()),
        };
        let closes = matches!(&message, WsMessage::Text(t) if t.contains("\"close\""));
        if ws.send(message).await.is_err() {
            self.socket = None;
            return None;
        }
        let reply = tokio::time::timeout(Duration::from_secs(20), ws.next()).await;
        match reply {
            Err(_) if closes => {
                self.socket = None;
                None
            }
            Err(_) => Some("no WebSocket reply in 20 s".into()),
            Ok(None) | Ok(Some(Ok(WsMessage::Close(_)))) | Ok(Some(Err(_))) => {
                // A `close` message, or one over the size limit: the server ends the socket.
                self.socket = None;
                None
            }
            Ok(Some(Ok(WsMessage::Text(text)))) => {
                *self.answers.entry(0).or_default() += 1;
                let reply: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(_) => return Some(format!("a WebSocket reply that is not JSON: {text}")),
                };
                let internal = reply["type"] == "error"
                    && reply["data"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(dealgym::run::INTERNAL_ERROR));
                internal.then(|| format!("an internal error: {text}"))
            }
            Ok(Some(Ok(_))) => None,
        }
    }

    /// `/health` still answers.
    pub async fn healthy(&self) -> bool {
        self.http
            .get(format!("{}/health", self.base))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }
}

/// A 5xx is a crash (but 502, a server the input named failing, and 503, the server full);
/// so is a refusal whose body is not `{"error": {"code", "message"}}`.
fn judge(status: u16, text: &str) -> Option<String> {
    if status >= 500 && status != 502 && status != 503 {
        return Some(format!("{status}: {text}"));
    }
    if status >= 400 {
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        if !(body["error"]["code"].is_string() && body["error"]["message"].is_string()) {
            return Some(format!("{status} without a JSON error: {text}"));
        }
    }
    None
}

/// The id and the token a create answered.
fn episode_of(created: &Value) -> Option<(String, String)> {
    Some((
        created["episode_id"].as_str()?.to_string(),
        created["episode_token"].as_str()?.to_string(),
    ))
}
