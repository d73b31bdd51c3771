//! `dealgym serve`: the environment as a service. One session layer ([`session`]) holds live
//! episodes — each a [`Driver`](crate::run::Driver) whose learner seat (and, for self-play, the
//! opponent's) is fed by a client while the other seat is played in-process — and three
//! surfaces share it: OpenEnv's protocol ([`openenv`]: `WS /ws`, `/reset`, `/step`, `/health`,
//! `/schema`, `/metadata`), native REST ([`rest`]: `/v1/episodes…`), and the rollout service
//! ([`rollouts`]: `POST /v1/rollouts`, whole episodes against the caller's endpoint, streamed).
//! Every finished episode is appended to one JSONL log with the record writer `run` uses, so
//! `dealgym replay --verify` reads it.
//!
//! This module does I/O only: the rules of a negotiation stay in `game/`, episodes are driven
//! only through `run`'s driver.

mod error;
mod ids;
mod listen;
mod openenv;
mod policy;
mod rest;
mod rollouts;
mod session;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::de::DeserializeOwned;
use tokio::sync::{watch, Semaphore};

use crate::agents::{PersonaConfig, PlayerConfig, SamplingConfig};
use crate::game::{EpisodeConfig, Prompts};
use crate::limits::{
    check_count, check_seconds, MAX_BODY_BYTES, MAX_CONCURRENCY, MAX_CONNECTIONS, MAX_SESSIONS,
};
use crate::record::RecordWriter;
use crate::reward::RewardConfig;
use crate::run::{load_all, FileConfig, Selection};

pub use error::ServeError;
pub use listen::ConnectionLimits;
pub use policy::ClientPolicy;
pub use session::{Catalog, Hub, Owner, ResetArgs, EXTERNAL};

/// The flags of `dealgym serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeFlags {
    #[arg(long, default_value_t = 8100)]
    pub port: u16,
    /// Address to bind (loopback by default). Any other address needs --token-env, or
    /// --allow-public-without-token to serve everyone who can reach the port.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// TOML config as for `dealgym run`: [episode] rules, [rewards], [personas], [sampling],
    /// [players.NAME]. Its values go over the preset's.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A paper's settings by name (see `dealgym presets list`), under --config.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Scenario file(s) (default: every scenarios/*.jsonl that exists).
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    /// The JSONL log finished episodes are appended to.
    #[arg(long, default_value = "runs/serve.jsonl")]
    pub log: PathBuf,
    /// Live sessions at most (and as many ended ones kept for GET); beyond, a reset gets
    /// CAPACITY_REACHED / 503.
    #[arg(long, default_value_t = 1024)]
    pub max_sessions: u64,
    /// Seconds a session (or a WebSocket without a message) may sit unused before it is
    /// reclaimed (above 0, at most a day).
    #[arg(long, default_value_t = 600.0)]
    pub idle_timeout_s: f64,
    /// The opponent when a reset names none: rule:NAME, script:FILE or a [players.NAME].
    #[arg(long, default_value = "rule:boulware")]
    pub opponent: String,
    /// Require `Authorization: Bearer <value of this environment variable>` (not on /health).
    #[arg(long)]
    pub token_env: Option<String>,
    /// Serve a non-loopback --host without a token (anyone who reaches the port drives it).
    #[arg(long)]
    pub allow_public_without_token: bool,
    /// An endpoint a client may have the server call (a rollout learner, the token-exact
    /// policy server, an `openai:` opponent): an origin with an optional path prefix, such as
    /// http://127.0.0.1:8000; `*` for any. Repeatable. None by default.
    #[arg(long, value_name = "URL")]
    pub allow_endpoint: Vec<String>,
    /// Let clients name `script:FILE` opponents (files on this machine).
    #[arg(long)]
    pub allow_client_scripts: bool,
    /// A browser origin allowed to call the server (requests with any other `Origin` header
    /// are refused). Repeatable. None by default.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Largest request body accepted, in bytes (at most 64 MiB).
    #[arg(long, default_value_t = 1 << 20)]
    pub body_limit: u64,
    /// Rollout episodes in flight at once, shared by all rollout requests (default: the
    /// config's concurrency, else 64).
    #[arg(long)]
    pub concurrency: Option<u64>,
    /// HTTP connections at once (more wait to be accepted), and WebSockets at once.
    #[arg(long, default_value_t = 512)]
    pub max_connections: u64,
    /// Seconds a client has to send a request's headers (and that an idle keep-alive
    /// connection stays open).
    #[arg(long, default_value_t = 10.0)]
    pub header_timeout_s: f64,
    /// Seconds a client has to send a request's body.
    #[arg(long, default_value_t = 30.0)]
    pub body_timeout_s: f64,
}

/// Everything the server needs, after the config file and the flags are merged.
#[derive(Clone)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    pub scenarios: Vec<PathBuf>,
    pub log: PathBuf,
    pub max_sessions: usize,
    pub idle_timeout_s: f64,
    pub opponent: String,
    pub token: Option<String>,
    pub body_limit: usize,
    pub concurrency: usize,
    /// What a client may choose (`policy.rs`).
    pub policy: ClientPolicy,
    pub connections: ConnectionLimits,
    pub body_timeout: Duration,
    /// The preset the config was built on, named in every record.
    pub preset: Option<String>,
    pub episode: EpisodeConfig,
    pub rewards: RewardConfig,
    pub personas: PersonaConfig,
    pub sampling: SamplingConfig,
    pub players: BTreeMap<String, PlayerConfig>,
    pub prompts: Arc<Prompts>,
}

impl ServeOptions {
    /// Defaults for a server on `addr` over `scenarios`, logging to `log`.
    pub fn new(addr: SocketAddr, scenarios: Vec<PathBuf>, log: PathBuf) -> ServeOptions {
        ServeOptions {
            addr,
            scenarios,
            log,
            max_sessions: 1024,
            idle_timeout_s: 600.0,
            opponent: "rule:boulware".into(),
            token: None,
            body_limit: 1 << 20,
            concurrency: 64,
            policy: ClientPolicy::default(),
            connections: ConnectionLimits {
                max_connections: 512,
                header_timeout: Duration::from_secs(10),
            },
            body_timeout: Duration::from_secs(30),
            preset: None,
            episode: EpisodeConfig::default(),
            rewards: RewardConfig::default(),
            personas: PersonaConfig::default(),
            sampling: SamplingConfig::default(),
            players: BTreeMap::new(),
            prompts: Prompts::builtin(),
        }
    }
}

impl ServeFlags {
    pub fn options(&self) -> anyhow::Result<ServeOptions> {
        let file = FileConfig::resolve(self.config.as_deref(), self.preset.as_deref())?;
        let scenarios = if self.scenarios.is_empty() {
            ["ahp", "craigslist", "casino", "dnd", "job_interview"]
                .iter()
                .map(|f| PathBuf::from(format!("scenarios/{f}.jsonl")))
                .filter(|p| p.exists())
                .collect()
        } else {
            self.scenarios.clone()
        };
        let token = match &self.token_env {
            Some(name) => Some(std::env::var(name).map_err(|_| {
                anyhow::anyhow!("--token-env {name}: the environment variable is not set")
            })?),
            None => None,
        };
        if token.as_deref() == Some("") {
            anyhow::bail!("--token-env: the token is empty");
        }
        if !self.host.is_loopback() && token.is_none() && !self.allow_public_without_token {
            anyhow::bail!(
                "--host {}: anyone who can reach this address could drive the server. Give \
                 --token-env NAME (clients send `Authorization: Bearer <token>`), or serve behind \
                 a proxy on 127.0.0.1, or pass --allow-public-without-token to serve anyway",
                self.host
            );
        }
        let policy = ClientPolicy {
            endpoints: self.allow_endpoint.clone(),
            scripts: self.allow_client_scripts,
            origins: self.allow_origin.clone(),
        };
        policy.check().map_err(anyhow::Error::msg)?;
        let count = |key: &str, value: u64, max: u64| {
            check_count(key, value, 1, max)
                .map(|v| v as usize)
                .map_err(anyhow::Error::msg)
        };
        let max_sessions = count("--max-sessions", self.max_sessions, MAX_SESSIONS)?;
        let max_connections = count("--max-connections", self.max_connections, MAX_CONNECTIONS)?;
        let body_limit = count("--body-limit", self.body_limit, MAX_BODY_BYTES)?;
        let concurrency = match self.concurrency {
            Some(n) => count("--concurrency", n, MAX_CONCURRENCY)?,
            None => file.concurrency.unwrap_or(64),
        };
        check_seconds("--idle-timeout-s", self.idle_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let header_timeout = check_seconds("--header-timeout-s", self.header_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let body_timeout = check_seconds("--body-timeout-s", self.body_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let prompts = match &file.prompts_dir {
            Some(dir) => Arc::new(Prompts::with_overrides(dir)?),
            None => Prompts::builtin(),
        };
        Ok(ServeOptions {
            addr: SocketAddr::new(self.host, self.port),
            scenarios,
            log: self.log.clone(),
            max_sessions,
            idle_timeout_s: self.idle_timeout_s,
            opponent: self.opponent.clone(),
            token,
            body_limit,
            concurrency,
            policy,
            connections: ConnectionLimits {
                max_connections,
                header_timeout,
            },
            body_timeout,
            preset: file.preset,
            episode: file.episode,
            rewards: file.rewards,
            personas: file.personas,
            sampling: file.sampling,
            players: file.players,
            prompts,
        })
    }
}

/// What every route shares.
pub struct AppState {
    pub hub: Hub,
    /// The rollout service's concurrency budget, shared by all its requests.
    rollout_permits: Arc<Semaphore>,
    /// Flips to true when the server is shutting down: WebSockets and rollout streams end.
    shutdown: watch::Receiver<bool>,
    /// WebSockets open at once (`--max-connections`; an upgraded socket leaves the HTTP
    /// connection count).
    sockets: Arc<Semaphore>,
}

type Shared = Arc<AppState>;

/// A running server (for tests and the benchmark; `dealgym serve` uses [`serve`]).
pub struct Server {
    pub addr: SocketAddr,
    pub state: Shared,
    stop: watch::Sender<bool>,
    handle: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Load the scenarios, open the log, bind (port 0 for a free one) and serve in the
    /// background.
    pub async fn start(options: ServeOptions) -> anyhow::Result<Server> {
        let scenarios = load_all(&options.scenarios, &Selection::default())?;
        // Locked like a command's output (a second server on one log is refused); the ids it
        // holds are taken, so a restarted server never reuses one.
        let (log, existing) = RecordWriter::open_log(&options.log)?;
        if let Some(warning) = existing.duplicates.warning(&options.log) {
            eprintln!("{warning}");
        }
        let logged = existing.runs.into_values().flatten();
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let addr = listener.local_addr()?;
        let (stop, shutdown) = watch::channel(false);
        let limits = options.connections;
        let state = Arc::new(AppState {
            rollout_permits: Arc::new(Semaphore::new(options.concurrency)),
            sockets: Arc::new(Semaphore::new(limits.max_connections)),
            hub: Hub::new(options, Catalog::new(scenarios), log, logged)?,
            shutdown: shutdown.clone(),
        });
        spawn_reaper(state.clone());
        let app = router(state.clone());
        let handle = tokio::spawn(listen::serve(listener, app, limits, shutdown));
        Ok(Server {
            addr,
            state,
            stop,
            handle,
        })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop accepting, end WebSockets and rollout streams, wait (up to 10 s) for requests in
    /// flight. Every record is already on disk: each is written whole and flushed as it ends.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.handle).await;
    }
}

/// Serve until `stop` resolves (SIGTERM or Ctrl-C), then shut down gracefully.
pub async fn serve(
    options: ServeOptions,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let log = options.log.clone();
    let server = Server::start(options).await?;
    eprintln!(
        "dealgym serve on http://{} ({} scenarios; log {}): OpenEnv at /ws, /reset, /step; REST at /v1/episodes; rollouts at /v1/rollouts",
        server.addr,
        server.state.hub.catalog.scenarios.len(),
        log.display()
    );
    stop.await;
    eprintln!("shutting down: finishing requests in flight");
    server.shutdown().await;
    Ok(())
}

fn spawn_reaper(state: Shared) {
    let every = Duration::from_secs_f64((state.hub.options.idle_timeout_s / 4.0).clamp(0.05, 5.0));
    let weak = Arc::downgrade(&state);
    drop(state);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(state) = weak.upgrade() else { break };
            if *state.shutdown.borrow() {
                break;
            }
            state.hub.reap();
        }
    });
}

fn router(state: Shared) -> Router {
    let limit = state.hub.options.body_limit;
    let protected = Router::new()
        .merge(openenv::routes())
        .merge(rest::routes())
        .merge(rollouts::routes())
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth));
    Router::new()
        .route("/health", axum::routing::get(openenv::health))
        .merge(protected)
        .fallback(|request: Request| async move {
            ServeError::UnknownRoute(format!("{} {}", request.method(), request.uri().path()))
                .into_response()
        })
        .method_not_allowed_fallback(|request: Request| async move {
            ServeError::MethodNotAllowed(format!(
                "{} does not take {}",
                request.uri().path(),
                request.method()
            ))
            .into_response()
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            body_in_time,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            browsers,
        ))
        .layer(axum::middleware::from_fn(catch_panic))
        .with_state(state)
}

/// Requests from browser pages are refused unless their origin is allowed (`policy.rs`): on
/// every route, before anything else runs. No route answers CORS preflights, so a browser
/// never sends a page's non-simple request either.
async fn browsers(State(state): State<Shared>, request: Request, next: Next) -> Response {
    match state.hub.options.policy.origin(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

/// A request's body is read whole within `--body-timeout-s` (and within the body limit),
/// before its handler runs: a client that sends headers and then trickles its body is cut off.
async fn body_in_time(State(state): State<Shared>, request: Request, next: Next) -> Response {
    let options = &state.hub.options;
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, options.body_limit);
    let bytes = match tokio::time::timeout(options.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) if over_limit(&e) => {
            return ServeError::TooLarge(options.body_limit).into_response()
        }
        Ok(Err(e)) => {
            return ServeError::InvalidJson(format!("reading the request body: {e}"))
                .into_response()
        }
        Err(_) => {
            return ServeError::Validation(format!(
                "the request body did not arrive within {} s (--body-timeout-s)",
                options.body_timeout.as_secs_f64()
            ))
            .into_response()
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// A panic while a request is answered (a bug) is a 500 with a JSON error body naming it as
/// an internal error, not a connection closed without an answer. (An episode of
/// `/v1/rollouts` that panics is caught where it is played, and is an `error` record on the
/// stream: its 200 is sent already.)
async fn catch_panic(request: Request, next: Next) -> Response {
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(next.run(request))
        .catch_unwind()
        .await
    {
        Ok(response) => response,
        Err(panic) => ServeError::Execution(format!(
            "{}: {}",
            crate::run::INTERNAL_ERROR,
            crate::run::panic_message(panic.as_ref())
        ))
        .into_response(),
    }
}

/// The body was cut at the limit (not broken off by the client).
fn over_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The optional bearer token, compared in constant time.
async fn auth(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if let Some(token) = &state.hub.options.token {
        let given = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
            return ServeError::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

/// Equal bytes, in time that depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

/// A JSON body, with every way it can be bad answered as a JSON error: too large (413), not
/// JSON (INVALID_JSON), not the expected shape (VALIDATION_ERROR). An empty body is `{}`.
pub(crate) fn parse_body<T: DeserializeOwned>(
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
    limit: usize,
) -> Result<T, ServeError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::TooLarge(limit)
        } else {
            ServeError::InvalidJson(rejection.body_text())
        }
    })?;
    let value: serde_json::Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        serde_json::json!({})
    } else {
        serde_json::from_slice(&bytes).map_err(|e| ServeError::InvalidJson(e.to_string()))?
    };
    serde_json::from_value(value).map_err(|e| ServeError::Validation(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[tokio::test]
    async fn a_handler_that_panics_answers_500_naming_an_internal_error() {
        async fn boom() -> &'static str {
            panic!("a bug")
        }
        let app = Router::new()
            .route("/boom", axum::routing::get(boom))
            .layer(axum::middleware::from_fn(catch_panic));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let response = reqwest::get(format!("http://{addr}/boom")).await.unwrap();
        assert_eq!(response.status(), 500);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "EXECUTION_ERROR");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(crate::run::INTERNAL_ERROR) && message.contains("panicked: a bug"),
            "{message}"
        );
    }
}
