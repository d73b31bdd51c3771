//! `dealgym mock`: an OpenAI-compatible server (`/v1/chat/completions`, `/v1/models`) whose
//! "model" is a concession negotiator that reads dealgym's prompts — for tests, benchmarks and
//! the demo, over real HTTP, with no model needed.
//!
//! It also plays an LLM judge and a reward model (`judge.rs`): chat requests made from a
//! built-in judge rubric get verdicts, and vLLM's `/pooling` and `/score` routes and a plain
//! `/reward` route get rewards. And it plays an annotator (`annotate.rs`): requests made from
//! `annotate`'s thought template get a thought that leads to the move shown. Belief probes
//! (`run`'s `[probes]`) get an estimate of the other side's private values read from its
//! proposals, with a confidence (`beliefs.rs`). A narrated seat's brief gets a Thought and Talk
//! that fit the decided move, then the move (`narrator.rs`); every route honours `stop`.
//!
//! Knobs inject what real endpoints do: latency (fixed plus random), 500s and 429s, hangs,
//! unreadable bodies, garbage completions, `<think>` blocks or `reasoning_content`, and fake
//! token ids and logprobs. A prefix cache (`prefix_cache.rs`) reports
//! `usage.prompt_tokens_details.cached_tokens` and can make latency depend on the uncached
//! tokens, so routing over replicas can be measured; a replica can be taken down (every route,
//! `/health` included, answers 503) by [`MockControl`] or after `--fail-after` requests. Everything is deterministic given the mock's seed and the sequence
//! of requests: the n-th arrival of the same request draws from the RNG seeded by
//! (mock seed, request, n), so a retried request can succeed where the first try failed.

mod annotate;
mod beliefs;
pub mod demo;
mod judge;
mod market;
mod narrator;
mod negotiator;
mod prefix_cache;
mod stop;
mod stream;
mod table;
mod tickets;
mod tokens;
mod value;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

use dealgym::agents::Tactic;
use dealgym::cache::BoundedCache;
use dealgym::game::{mix, Message};

pub(crate) use annotate::is_annotate_request;
pub use annotate::thought;
use dealgym::protocol::as_tool_turn;
pub use judge::{conversation_reward, verdict};
pub(crate) use negotiator::{read_prompt, respond_with};
pub use negotiator::{respond, ReadGame, Reading};
pub(crate) use prefix_cache::PrefixCache;
pub use tokens::{render, tokenize, MockTemplate};
pub use value::values as planner_values;

/// How a `<think>` block is returned, if at all; named by [`ThinkMode::name`] (`--think field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkMode {
    #[default]
    None,
    /// `<think>…</think>` at the start of the content.
    Inline,
    /// A separate `reasoning_content` field, as vLLM's reasoning parsers return it.
    Field,
}

impl ThinkMode {
    pub const ALL: [ThinkMode; 3] = [ThinkMode::None, ThinkMode::Inline, ThinkMode::Field];

    pub fn name(self) -> &'static str {
        match self {
            ThinkMode::None => "none",
            ThinkMode::Inline => "inline",
            ThinkMode::Field => "field",
        }
    }
}

impl std::fmt::Display for ThinkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ThinkMode {
    type Err = String;

    fn from_str(name: &str) -> Result<ThinkMode, String> {
        ThinkMode::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| format!("unknown think mode `{name}`: none, inline or field"))
    }
}

/// The mock's behaviour. Rates are probabilities per request, drawn in this order: 500, 429,
/// hang, unreadable body, garbage completion. `dealgym mock`'s flags set each of these (the
/// binary's `flags/mock.rs`, with these defaults and each rate checked to be from 0 to 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    /// Seed of the mock's own randomness (faults, latency jitter, sampling).
    pub seed: u64,
    /// Fixed latency per request, in ms.
    pub latency_ms: u64,
    /// Extra random latency, drawn uniformly up to this many ms.
    pub jitter_ms: u64,
    /// Share of requests answered with HTTP 500.
    pub error_rate: f64,
    /// Share of requests answered with HTTP 429.
    pub rate_limit_rate: f64,
    /// Share of requests that hang (to exercise timeouts).
    pub hang_rate: f64,
    /// How long a hang lasts before the mock answers anyway, in ms.
    pub hang_ms: u64,
    /// Share of requests answered with a body that is not JSON.
    pub malformed_rate: f64,
    /// Share of completions that are chat without any action.
    pub garbage_rate: f64,
    /// Return reasoning inline (`<think>`) or as reasoning_content.
    pub think: ThinkMode,
    /// Return fake token ids and logprobs with every completion.
    pub logprobs: bool,
    /// The chat template of the token routes: chatml (append-only) or drops-earlier-thoughts.
    pub template: MockTemplate,
    /// How the mock negotiator concedes: boulware, linear or conceder.
    pub tactic: Tactic,
    /// Share of judge requests answered with prose that is not a verdict.
    pub judge_unreadable_rate: f64,
    /// Share of annotation requests answered with a move that is not the person's.
    pub annotate_unusable_rate: f64,
    /// Share of narrated turns whose Talk contradicts the decided move (`narrator.rs`).
    pub narrate_unfaithful_rate: f64,
    /// Share of reward-model requests (/pooling, /score, /reward) answered with HTTP 500.
    pub reward_model_error_rate: f64,
    /// Model a prefix cache of this many tokens (0: none): chat answers report
    /// usage.prompt_tokens_details.cached_tokens, prompts counted in the mock's tokenization.
    pub prefix_cache_tokens: u64,
    /// Prefill cost per prompt token not served from the prefix cache, in microseconds (added
    /// to the latency), so a warm cache answers faster, as a real server does.
    pub prefill_us_per_token: u64,
    /// After this many chat requests, answer 503 on every route, /health included (0: never):
    /// a replica that goes down.
    pub fail_after: u64,
    /// Keep every request body (for tests that inspect what the endpoint received).
    pub record_requests: bool,
}

impl Default for MockConfig {
    /// A well-behaved mock: no latency, no faults, no reasoning, the append-only template and a
    /// linear concession; a hang (when asked for) lasts ten minutes. `dealgym mock`'s defaults.
    fn default() -> Self {
        MockConfig {
            seed: 0,
            latency_ms: 0,
            jitter_ms: 0,
            error_rate: 0.0,
            rate_limit_rate: 0.0,
            hang_rate: 0.0,
            hang_ms: 600_000,
            malformed_rate: 0.0,
            garbage_rate: 0.0,
            think: ThinkMode::None,
            logprobs: false,
            template: MockTemplate::Chatml,
            tactic: Tactic::Linear,
            judge_unreadable_rate: 0.0,
            annotate_unusable_rate: 0.0,
            narrate_unfaithful_rate: 0.0,
            reward_model_error_rate: 0.0,
            prefix_cache_tokens: 0,
            prefill_us_per_token: 0,
            fail_after: 0,
            record_requests: false,
        }
    }
}

/// Counts of what the mock did.
#[derive(Debug, Default)]
pub struct MockStats {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub rate_limited: AtomicU64,
    pub hangs: AtomicU64,
    pub malformed: AtomicU64,
    pub garbage: AtomicU64,
    /// Chat requests made from a judge rubric (also counted in `requests`).
    pub judge_requests: AtomicU64,
    /// Chat requests made from `annotate`'s thought template (also counted in `requests`),
    /// and those answered unusably (`annotate_unusable_rate`).
    pub annotate_requests: AtomicU64,
    pub annotate_unusable: AtomicU64,
    /// Requests to the reward-model routes (not counted in `requests`).
    pub reward_model_requests: AtomicU64,
    /// `{"authorization": header, "body": request}` per request, when `record_requests` is on.
    pub bodies: Mutex<Vec<serde_json::Value>>,
    /// Chat requests being answered now, and the most at once.
    pub in_flight: AtomicU64,
    pub peak_in_flight: AtomicU64,
    /// Prompt tokens of chat requests and those served from the prefix cache (with
    /// `prefix_cache_tokens` on).
    pub prompt_tokens: AtomicU64,
    pub cached_tokens: AtomicU64,
    /// `GET /health` requests, and requests answered 503 because the mock was down.
    pub health_checks: AtomicU64,
    pub refused_down: AtomicU64,
}

/// A switch library users of [`MockServer`] hold: take the server down (every route answers
/// 503, `/health` included, as a replica that died) and bring it back.
#[derive(Debug, Default)]
pub struct MockControl {
    down: AtomicBool,
}

impl MockControl {
    pub fn take_down(&self) {
        self.down.store(true, Ordering::SeqCst);
    }

    pub fn bring_up(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

/// Counts a chat request in flight while it lives (a handler may be dropped mid-way).
struct InFlight<'a>(&'a MockStats);

impl<'a> InFlight<'a> {
    fn enter(stats: &'a MockStats) -> Self {
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.peak_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

struct AppState {
    config: MockConfig,
    stats: Arc<MockStats>,
    control: Arc<MockControl>,
    prefix_cache: Option<PrefixCache>,
    arrivals: Mutex<HashMap<u64, u64>>,
    /// System prompts already read, by hash: a seat's prompt is the same every turn.
    readings: BoundedCache<u64, Option<Arc<Reading>>>,
}

/// A running mock server.
pub struct MockServer {
    pub addr: SocketAddr,
    pub stats: Arc<MockStats>,
    /// Take the server down and bring it back.
    pub control: Arc<MockControl>,
    handle: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// Bind to `addr` (use port 0 for a free port) and serve in the background.
    pub async fn start(addr: SocketAddr, config: MockConfig) -> std::io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(MockStats::default());
        let control = Arc::new(MockControl::default());
        let app = router(config, stats.clone(), control.clone());
        let handle = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockServer {
            addr,
            stats,
            control,
            handle,
        })
    }

    /// The base URL to give players: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn stop(self) {
        self.handle.abort();
    }
}

/// Serve until the process ends (the `dealgym mock` command).
pub async fn serve(addr: SocketAddr, config: MockConfig) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("mock endpoint on http://{}/v1", listener.local_addr()?);
    let app = router(
        config,
        Arc::new(MockStats::default()),
        Arc::new(MockControl::default()),
    );
    axum::serve(listener, app).await
}

fn router(config: MockConfig, stats: Arc<MockStats>, control: Arc<MockControl>) -> Router {
    let state = Arc::new(AppState {
        prefix_cache: PrefixCache::new(config.prefix_cache_tokens),
        config,
        stats,
        control,
        arrivals: Mutex::new(HashMap::new()),
        readings: BoundedCache::new(4096),
    });
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/v1/completions", post(tokens::completions_route))
        .route("/completion", post(tokens::completion_route))
        .route("/tokenize", post(tokens::tokenize_route))
        .route("/apply-template", post(tokens::apply_template_route))
        .route("/pooling", post(judge::pooling_route))
        .route("/v1/pooling", post(judge::pooling_route))
        .route("/score", post(judge::score_route))
        .route("/v1/score", post(judge::score_route))
        .route("/reward", post(judge::plain_route))
        .route("/v1/value", post(value::value_route))
        .route("/health", get(health))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            when_down,
        ))
        .with_state(state)
}

async fn health(State(state): State<Arc<AppState>>) -> &'static str {
    state.stats.health_checks.fetch_add(1, Ordering::Relaxed);
    "ok"
}

/// A mock taken down answers every route with 503 (and counts it).
async fn when_down(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if state.control.is_down() {
        state.stats.refused_down.fetch_add(1, Ordering::Relaxed);
        if request.uri().path() == "/health" {
            state.stats.health_checks.fetch_add(1, Ordering::Relaxed);
        }
        return error(StatusCode::SERVICE_UNAVAILABLE, "mock replica is down");
    }
    next.run(request).await
}

async fn models() -> Json<serde_json::Value> {
    Json(
        json!({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "dealgym"}]}),
    )
}

#[derive(Deserialize)]
struct ChatBody {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    logprobs: Option<bool>,
    #[serde(default)]
    return_token_ids: Option<bool>,
    /// Tools the model may call (the request of a seat that acts through tools): the
    /// negotiator then answers with one call.
    #[serde(default)]
    tools: Option<serde_json::Value>,
    /// Answer as server-sent events, as OpenAI's API and vLLM do (`stream.rs`).
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    /// Stop strings: the answer ends where the first begins (not kept), as servers do.
    #[serde(default)]
    stop: stop::Stop,
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

/// FNV-1a 64 of `bytes` (the digest the records use), as a number to draw from.
fn fnv(bytes: &[u8]) -> u64 {
    dealgym::digest::digest_bytes(bytes).0
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": "mock_error"}})),
    )
        .into_response()
}

async fn chat(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let config = &state.config;
    let stats = &state.stats;
    let served = stats.requests.fetch_add(1, Ordering::Relaxed) + 1;
    if config.fail_after > 0 && served > config.fail_after {
        state.control.take_down();
        stats.refused_down.fetch_add(1, Ordering::Relaxed);
        return error(StatusCode::SERVICE_UNAVAILABLE, "mock replica is down");
    }
    let _in_flight = InFlight::enter(stats);
    let parsed: ChatBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("invalid request: {e}")),
    };
    if config.record_requests {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if let (Ok(value), Ok(mut bodies)) = (
            serde_json::from_slice::<serde_json::Value>(&body),
            stats.bodies.lock(),
        ) {
            bodies.push(json!({"authorization": auth, "body": value}));
        }
    }
    let key = fnv(&body);
    let (arrival, mut rng) = arrival(&state, &body);
    let latency = config.latency_ms
        + if config.jitter_ms > 0 {
            rng.random_range(0..=config.jitter_ms)
        } else {
            0
        };
    let roll: f64 = rng.random();
    let mut edge = 0.0;
    let mut hit = |rate: f64| {
        let lo = edge;
        edge += rate;
        roll >= lo && roll < edge
    };
    if hit(config.error_rate) {
        stats.errors.fetch_add(1, Ordering::Relaxed);
        sleep_ms(latency).await;
        return error(StatusCode::INTERNAL_SERVER_ERROR, "injected server error");
    }
    if hit(config.rate_limit_rate) {
        stats.rate_limited.fetch_add(1, Ordering::Relaxed);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("0"));
        return (
            StatusCode::TOO_MANY_REQUESTS,
            headers,
            Json(json!({"error": {"message": "injected rate limit"}})),
        )
            .into_response();
    }
    if hit(config.hang_rate) {
        stats.hangs.fetch_add(1, Ordering::Relaxed);
        sleep_ms(config.hang_ms).await;
    }
    let malformed = hit(config.malformed_rate);
    let garbage = hit(config.garbage_rate);
    sleep_ms(latency).await;
    if malformed {
        stats.malformed.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::OK, "{\"choices\": [ this is not json").into_response();
    }
    let judging = judge::is_judge_request(&parsed.messages);
    if judging {
        stats.judge_requests.fetch_add(1, Ordering::Relaxed);
    }
    let annotating = !judging && is_annotate_request(&parsed.messages);
    let mut tool_calls = Vec::new();
    let content = if annotating {
        stats.annotate_requests.fetch_add(1, Ordering::Relaxed);
        let unusable = rng.random::<f64>() < config.annotate_unusable_rate;
        if unusable {
            stats.annotate_unusable.fetch_add(1, Ordering::Relaxed);
        }
        let prompt: Vec<&str> = parsed.messages.iter().map(|m| m.content.as_str()).collect();
        let prompt = prompt.join("\n");
        thought(&prompt, fnv(prompt.as_bytes()), unusable)
    } else if judging {
        let prompt: Vec<&str> = parsed.messages.iter().map(|m| m.content.as_str()).collect();
        if rng.random::<f64>() < config.judge_unreadable_rate {
            judge::UNREADABLE_VERDICT.to_string()
        } else {
            judge::verdict(&prompt.join("\n"))
        }
    } else if beliefs::is_probe(&parsed.messages) {
        match reading(&state, &parsed.messages) {
            Some(reading) => beliefs::answer(&reading, &parsed.messages, parsed.seed.unwrap_or(0)),
            None => "Estimate: I do not recognise this task.\nConfidence: 0".to_string(),
        }
    } else if garbage {
        stats.garbage.fetch_add(1, Ordering::Relaxed);
        "Sure! As an AI language model I would be happy to help you negotiate.".to_string()
    } else if let Some(narrated) = narrator::narrate(
        &parsed.messages,
        rng.random::<f64>() < config.narrate_unfaithful_rate,
    ) {
        narrated
    } else {
        match reading(&state, &parsed.messages) {
            Some(reading) => {
                let reply = respond_with(
                    &reading,
                    &parsed.messages,
                    config.tactic,
                    parsed.seed.unwrap_or(0),
                );
                if parsed.tools.is_some() {
                    let id = format!("call_{}", parsed.messages.len());
                    let (thought, call) = as_tool_turn(&reply, reading.game.space(), id);
                    tool_calls = vec![call];
                    thought
                } else {
                    reply
                }
            }
            None => {
                let call_id = parsed
                    .tools
                    .is_some()
                    .then(|| format!("call_{}", parsed.messages.len()));
                match table::respond_table(&parsed.messages, call_id) {
                    Some((text, calls)) => {
                        tool_calls = calls;
                        text
                    }
                    None => market::respond_market(&parsed.messages).unwrap_or_else(|| {
                        "Thought: I do not recognise this task.\nTalk: Hello.\nAction: [REJECT_DEAL]"
                            .to_string()
                    }),
                }
            }
        }
    };
    let (mut content, _) = stop::cut_at_stop(&content, &parsed.stop.strings(), false);
    let reasoning = format!(
        "Thinking about turn {} (seed {:?}).",
        parsed.messages.len(),
        parsed.seed
    );
    let mut message = json!({"role": "assistant"});
    match config.think {
        ThinkMode::None => {}
        ThinkMode::Inline => content = format!("<think>{reasoning}</think>\n{content}"),
        ThinkMode::Field => message["reasoning_content"] = json!(reasoning),
    }
    message["content"] = json!(content);
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    let words: Vec<&str> = content.split_whitespace().collect();
    // With a prefix cache, prompts and replies are counted in the mock's own tokenization (the
    // one its token routes use; a reply is its text and the end-of-turn token, as the next
    // prompt renders it); without, as a rough estimate (as records have always had it).
    let (prompt_tokens, cached, completion_tokens) = match &state.prefix_cache {
        Some(cache) => {
            let ids = tokenize(&render(&parsed.messages, MockTemplate::Chatml, true));
            let mut reply = tokenize(&content);
            reply.push(tokens::IM_END);
            let cached = cache.serve(&ids, &reply);
            let uncached = ids.len() as u64 - cached.min(ids.len() as u64);
            stats
                .prompt_tokens
                .fetch_add(ids.len() as u64, Ordering::Relaxed);
            stats.cached_tokens.fetch_add(cached, Ordering::Relaxed);
            sleep_ms(uncached * config.prefill_us_per_token / 1000).await;
            (ids.len(), Some(cached), reply.len())
        }
        None => (
            parsed
                .messages
                .iter()
                .map(|m| m.content.len() / 4 + 4)
                .sum(),
            None,
            words.len(),
        ),
    };
    let finish = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut choice = json!({"index": 0, "message": message, "finish_reason": finish});
    let logprobs = config.logprobs || parsed.logprobs == Some(true);
    let token_ids = parsed.return_token_ids == Some(true);
    if logprobs {
        let tokens: Vec<serde_json::Value> = words
            .iter()
            .map(|w| json!({"token": w, "logprob": -((fnv(w.as_bytes()) % 2000) as f64) / 1000.0}))
            .collect();
        choice["logprobs"] = json!({"content": tokens});
    }
    if logprobs || token_ids {
        choice["token_ids"] = json!(words
            .iter()
            .map(|w| fnv(w.as_bytes()) % 50_000)
            .collect::<Vec<_>>());
    }
    let mut response = json!({
        "id": format!("mock-{key:016x}-{arrival}"),
        "object": "chat.completion",
        "created": 0,
        "model": parsed.model.unwrap_or_else(|| "mock".into()),
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    });
    if let Some(cached) = cached {
        response["usage"]["prompt_tokens_details"] = json!({ "cached_tokens": cached });
    }
    if token_ids {
        // As vLLM answers `return_token_ids`: the prompt's ids at the top level.
        response["prompt_token_ids"] = json!(parsed
            .messages
            .iter()
            .flat_map(|m| m.content.split_whitespace())
            .map(|w| fnv(w.as_bytes()) % 50_000)
            .collect::<Vec<_>>());
    }
    if parsed.stream == Some(true) {
        let usage = parsed.stream_options.is_some_and(|o| o.include_usage);
        return stream::events(&response, usage);
    }
    Json(response).into_response()
}

/// How many times this exact body has arrived (1 for the first) and the RNG for this
/// arrival, seeded by (mock seed, body, arrival): a retried request draws afresh.
fn arrival(state: &AppState, body: &[u8]) -> (u64, ChaCha8Rng) {
    let key = fnv(body);
    let n = {
        let mut arrivals = state.arrivals.lock().unwrap_or_else(|e| e.into_inner());
        if arrivals.len() > 100_000 {
            arrivals.clear();
        }
        let n = arrivals.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    (
        n,
        ChaCha8Rng::seed_from_u64(mix(&[state.config.seed, key, n])),
    )
}

fn arrival_rng(state: &AppState, body: &[u8]) -> ChaCha8Rng {
    arrival(state, body).1
}

/// The reading of the chat's system prompt, from the cache when this seat was seen before.
fn reading(state: &AppState, messages: &[Message]) -> Option<Arc<Reading>> {
    let system = messages
        .iter()
        .find(|m| m.role == dealgym::game::MessageRole::System)?;
    let key = fnv(system.content.as_bytes());
    state
        .readings
        .get_or_insert_with(key, || read_prompt(&system.content).map(Arc::new))
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
