//! `dealgym serve`: the environment as a service. One session layer (`hub`) holds live
//! episodes (`session`) — each a `Driver` whose learner seat (and, for
//! self-play, the opponent's) is fed by a client while the other seat is played in-process — and
//! three surfaces share it: OpenEnv's protocol (`openenv`: `WS /ws`, `/reset`, `/step`,
//! `/health`, `/schema`, `/metadata`), MCP (`mcp`: `POST /mcp` and the WebSocket's `mcp`
//! message; the seat acts through tools), its routes described by `GET /openapi.json`
//! (`openapi`), native REST (`rest`: `/v1/episodes…`; `table_rest`: `/v1/tables…`, n-party
//! tables with a session per seat, kept in `table`), and the rollout service
//! (`rollouts`: `POST /v1/rollouts`, whole episodes against the caller's endpoint, streamed).
//! What they send is typed once, in `wire`, and `GET /schema` is derived from those types.
//! Every finished episode is appended to one JSONL log with the record writer `run` uses, so
//! `dealgym replay --verify` reads it.
//!
//! This module does I/O only: the rules of a negotiation stay in `game/`, episodes are driven
//! only through `run`'s driver.

mod catalog;
mod error;
mod guards;
mod held;
mod hosted;
mod hub;
mod ids;
mod listen;
mod mcp;
mod memory;
mod openapi;
mod openenv;
mod options;
mod peer;
pub mod play;
mod policy;
mod rest;
mod rollouts;
mod secret;
mod session;
mod table;
mod table_rest;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request};
use axum::response::IntoResponse;
use axum::Router;
use serde::de::DeserializeOwned;
use tokio::sync::{watch, Semaphore};

use crate::record::RecordWriter;
use crate::run::load_all;

pub use catalog::Catalog;
pub use error::ServeError;
pub use hub::{Hub, Owner};
pub use listen::ConnectionLimits;
pub use options::ServeOptions;
pub use policy::ClientPolicy;
pub(crate) use session::EXTERNAL;
pub use session::{LearnerRole, ResetArgs, ResetFamily};

/// What every route shares.
pub struct AppState {
    pub hub: Hub,
    /// The rollout service's concurrency budget, shared by all its requests.
    rollout_permits: Arc<Semaphore>,
    /// Flips to true when the server is shutting down: WebSockets and rollout streams end.
    shutdown: watch::Receiver<bool>,
    /// WebSockets open at once (`--max-connections`, like HTTP connections; the two together
    /// within the process's limit on open files). An upgraded socket leaves the HTTP count.
    sockets: Arc<Semaphore>,
    max_sockets: usize,
    /// The MCP sessions of `POST /mcp`.
    mcp: mcp::McpSessions,
    /// The play page's games (`dealgym play`).
    play: play::Games,
}

type Shared = Arc<AppState>;

/// What a server serves: its two-party scenarios, its tables and its markets.
type Served = (
    Vec<Arc<crate::scenario::Scenario>>,
    Vec<Arc<crate::scenario::TableScenario>>,
    Vec<Arc<crate::scenario::MarketScenario>>,
);

/// The server's default list (every family's file) under the config's selection: each file
/// that can take a split or a sample is served as it chooses; one without that split, or a
/// table or market file (tables and markets have neither), is left out, said on stderr. With no
/// split or sample every file is served. Nothing left is an error naming the selection.
fn default_scenarios(
    files: &[std::path::PathBuf],
    table_files: &[std::path::PathBuf],
    market_files: &[std::path::PathBuf],
    selection: &crate::run::Selection,
) -> anyhow::Result<Served> {
    use crate::run::{RunError, SelectError};
    let mut scenarios = Vec::new();
    for file in files {
        match load_all(std::slice::from_ref(file), selection) {
            Ok(kept) => scenarios.extend(kept),
            Err(RunError::Select(
                e @ (SelectError::NoSplits { .. } | SelectError::UnknownSplit { .. }),
            )) => eprintln!("serve: left out of the default scenarios: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    let mut tables = Vec::new();
    for file in table_files {
        match crate::run::load_tables(std::slice::from_ref(file), selection) {
            Ok(kept) => tables.extend(kept),
            Err(RunError::Select(e @ SelectError::TableFile { .. })) => {
                eprintln!("serve: left out of the default scenarios: {e}")
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut markets = Vec::new();
    for file in market_files {
        match crate::run::load_markets(std::slice::from_ref(file), selection) {
            Ok(kept) => markets.extend(kept),
            Err(RunError::Select(e @ SelectError::TableFile { .. })) => {
                eprintln!("serve: left out of the default scenarios: {e}")
            }
            Err(e) => return Err(e.into()),
        }
    }
    if scenarios.is_empty() && tables.is_empty() && markets.is_empty() {
        anyhow::bail!(
            "no default scenario file can take the config's [scenarios] ({}): name the files with --scenarios",
            selection.describe().unwrap_or_default()
        );
    }
    Ok((scenarios, tables, markets))
}

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
        // Table scenario files (n-party games) and market files feed `/v1/tables`; the
        // others, the episodes.
        let (market_files, files): (Vec<_>, Vec<_>) = options
            .scenarios
            .iter()
            .cloned()
            .partition(|f| crate::scenario::is_market_file(f));
        let (table_files, files): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|f| crate::scenario::is_table_file(f));
        // The config's `[scenarios]`, as `run` applies it: each two-party file its family,
        // split, sample and limit; each table file its limit (it has no split or sample).
        let (scenarios, tables, markets) = if options.scenarios_defaulted {
            default_scenarios(&files, &table_files, &market_files, &options.selection)?
        } else {
            (
                load_all(&files, &options.selection)?,
                crate::run::load_tables(&table_files, &options.selection)?,
                crate::run::load_markets(&market_files, &options.selection)?,
            )
        };
        // Locked like a command's output (a second server on one log is refused); the ids it
        // holds are taken, so a restarted server never reuses one.
        let (log, existing) = RecordWriter::open_log(&options.log)?;
        for note in existing.notes(&options.log) {
            eprintln!("{note}");
        }
        let logged = existing.runs.into_values().flatten();
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let addr = listener.local_addr()?;
        let (stop, shutdown) = watch::channel(false);
        let limits = options.connections.within_open_file_limit();
        let concurrency = options.concurrency;
        let hub = Hub::new(
            options,
            Catalog::new(scenarios),
            Catalog::new(tables),
            Catalog::new(markets),
            log,
            logged,
        )?;
        // The opponent of every reset that names none, built once now: a spec no reset could
        // play is the operator's to fix, refused here naming where it was set, not answered
        // to each client as its own mistake (a 422).
        let (spec, source) = (&hub.options.opponent, &hub.options.opponent_source);
        if let Err(e) = hub.kit(spec, &hub.options.episode) {
            let why = e.to_string();
            let why = why.strip_prefix("opponent: ").unwrap_or(&why);
            anyhow::bail!("{source} `{spec}` cannot be played: {why}");
        }
        hub.check_play().map_err(anyhow::Error::msg)?;
        let state = Arc::new(AppState {
            rollout_permits: Arc::new(Semaphore::new(concurrency)),
            sockets: Arc::new(Semaphore::new(limits.max_connections)),
            max_sockets: limits.max_connections,
            hub,
            shutdown: shutdown.clone(),
            mcp: mcp::McpSessions::default(),
            play: play::Games::default(),
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
        "dealgym serve on http://{} ({} scenarios; log {}): OpenEnv at /ws, /reset, /step; REST at /v1/episodes; tables and markets at /v1/tables; rollouts at /v1/rollouts",
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
    let every = (state.hub.options.idle_timeout / 4)
        .clamp(Duration::from_millis(50), Duration::from_secs(5));
    let weak = Arc::downgrade(&state);
    drop(state);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(state) = weak.upgrade() else { break };
            if *state.shutdown.borrow() {
                break;
            }
            state.hub.reap().await;
        }
    });
}

/// Every route the server answers, registered through [`openapi::Routes`] so that
/// `/openapi.json` is checked against this very list.
fn routes() -> openapi::Routes {
    openapi::Routes::new()
        .get("/health", openenv::health)
        .get("/openapi.json", openapi::openapi)
        .merge(openenv::routes())
        .merge(mcp::routes())
        .merge(rest::routes())
        .merge(table_rest::routes())
        .merge(rollouts::routes())
}

fn router(state: Shared) -> Router {
    let limit = state.hub.options.body_limit;
    // Layers run outermost first: a panic is caught around everything; a refusal in plain
    // text from below is said again as JSON; a browser page is
    // refused before anything else runs; the token is checked before a byte of the body is
    // read (so no client without it can make the server buffer bodies); then the body is read
    // within its time.
    let mut router = routes().into_router();
    if state.hub.options.play.is_some() {
        router = router.merge(play::router());
    }
    router
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
            guards::body_in_time,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guards::auth,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guards::browsers,
        ))
        .layer(axum::middleware::from_fn(guards::json_refusals))
        .layer(axum::middleware::from_fn(guards::catch_panic))
        .with_state(state)
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
