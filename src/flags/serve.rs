//! `dealgym serve`: where to listen, what to serve, what clients may ask for, and the limits;
//! merged with the config file into [`ServeOptions`], every size and duration checked against
//! `limits.rs` where it enters, the client policy checked, and a public bind without a token
//! refused.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use super::shared::{help, preset_play, ConfigFlags};
use dealgym::game::Prompts;
use dealgym::limits::{
    check_count, check_seconds, TextLimits, DEFAULT_BODY_BYTES, DEFAULT_CLIENT_BACKOFF_S,
    DEFAULT_CLIENT_RETRIES, DEFAULT_CLIENT_TIMEOUT_S, DEFAULT_CONNECTION_REQUESTS,
    DEFAULT_MAX_COMPLETION_BYTES, DEFAULT_MAX_EPISODE_BYTES, DEFAULT_SESSION_MEMORY_BYTES,
    DEFAULT_WRITE_TIMEOUT_S, MAX_BODY_BYTES, MAX_COMPLETION_BYTES, MAX_CONCURRENCY,
    MAX_CONNECTIONS, MAX_CONNECTION_REQUESTS, MAX_EPISODE_BYTES, MAX_RETRIES, MAX_SESSIONS,
    MAX_SESSION_MEMORY_BYTES,
};
use dealgym::run::SelectConfig;
use dealgym::serve::{ClientPolicy, ConnectionLimits, ServeOptions};

/// The flags of `dealgym serve`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg(
        "config",
        help(
            "TOML config as for `dealgym run`: [episode] rules, [rewards], [personas], \
         [sampling], [players.NAME], [scenarios]. Its values go over the preset's"
        )
    ),
    mut_arg(
        "preset",
        help("A paper's settings by name (see `dealgym presets list`), under --config")
    )
)]
pub struct ServeFlags {
    #[arg(long, default_value_t = 8100)]
    pub port: u16,
    /// Address to bind (loopback by default). Any other address needs --token-env, or
    /// --allow-public-without-token to serve everyone who can reach the port.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    #[command(flatten)]
    pub config: ConfigFlags,
    /// Scenario file(s) (default: every scenarios/*.jsonl that exists; where the config or
    /// preset plays one family, `[scenarios] family`, that family's file). The config's
    /// `[scenarios]` split, sample and limit choose among each file's scenarios, as for `run`.
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
    /// The opponent when a reset names none: rule:NAME, script:FILE or a [players.NAME]
    /// (default: the preset's own, `--preset ina`: rule:ina; else rule:boulware). Checked at
    /// startup: one the server cannot play is refused.
    #[arg(long)]
    pub opponent: Option<String>,
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
    /// A host name a loopback server also answers to (besides localhost and loopback
    /// addresses), for a proxy that passes its public name in `Host`. Repeatable.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Largest request body accepted, in bytes (at most 64 MiB).
    #[arg(long, default_value_t = DEFAULT_BODY_BYTES)]
    pub body_limit: u64,
    // Not the shared `--concurrency` (`ConcurrencyFlag`): it is checked with this command's
    // other counts as the server starts (exit 1, naming the flag), not as the flags are parsed.
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
    /// Largest completion a seat may play, in bytes as the record writes it (its text,
    /// reasoning and tool calls, JSON-escaped): a client's is refused with 413, a model's
    /// ends its episode as an error (at most 4 MiB).
    #[arg(long, default_value_t = DEFAULT_MAX_COMPLETION_BYTES)]
    pub max_completion_bytes: u64,
    /// Most bytes one episode's turns may store (every copy a turn keeps, as the record writes
    /// it); a turn that could pass it ends the episode as an error naming it (at most 32 MiB,
    /// so every record stays within the 64 MiB its readers read).
    #[arg(long, default_value_t = DEFAULT_MAX_EPISODE_BYTES)]
    pub max_episode_bytes: u64,
    /// Memory the sessions may hold, live and ended, in bytes: past it, ended sessions are
    /// evicted oldest first (their GET answers 410; the record is in the log), then new
    /// sessions are refused with 503.
    #[arg(long, default_value_t = DEFAULT_SESSION_MEMORY_BYTES)]
    pub session_memory_bytes: u64,
    /// Seconds a client may leave the server's answer unread (HTTP or WebSocket: a write the
    /// client takes no byte of) before its connection is closed.
    #[arg(long, default_value_t = DEFAULT_WRITE_TIMEOUT_S as f64)]
    pub write_timeout_s: f64,
    /// Requests one HTTP connection may make (pipelined or one after another); the last is
    /// answered with `Connection: close`.
    #[arg(long, default_value_t = DEFAULT_CONNECTION_REQUESTS)]
    pub max_requests_per_connection: u64,
    /// The longest call timeout (`timeout_s`) a client may give the endpoint the server calls
    /// for it (a rollout's learner); longer is refused (422).
    #[arg(long, default_value_t = DEFAULT_CLIENT_TIMEOUT_S as f64)]
    pub max_client_timeout_s: f64,
    /// The longest wait between tries (`backoff_s`, `backoff_max_s`) a client may ask for;
    /// longer is refused (422).
    #[arg(long, default_value_t = DEFAULT_CLIENT_BACKOFF_S as f64)]
    pub max_client_backoff_s: f64,
    /// The most retries (`retries`) a client may ask of a call the server makes for it; more
    /// is refused (422). With --max-client-timeout-s, how long a call to an endpoint that
    /// hangs may hold a rollout permit: (1 + retries) × timeout.
    #[arg(long, default_value_t = DEFAULT_CLIENT_RETRIES)]
    pub max_client_retries: u64,
    #[command(flatten)]
    pub play: PlayFlags,
}

/// The play page: people at the table (docs/src/guide/people.md).
#[derive(Debug, Clone, Default, Args)]
pub struct PlayFlags {
    /// Serve the play page at /play, where a person takes a seat against a player (or another
    /// person) and each game is logged as a record with the seat `human:NAME`.
    #[arg(long)]
    pub play: bool,
    /// A player a person may choose to play against at the page, besides the server's
    /// default opponent and the config's [players]: a rule, a script or an endpoint the
    /// client policy allows. Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub play_opponent: Vec<String>,
    /// Seat no second person at the page's games (by default a person may invite one).
    #[arg(long)]
    pub play_no_people: bool,
    /// A study's run file (TOML: title, consent, games_per_participant, [[game]] family or
    /// scenario_id, opponent, role): the page seats participants as it assigns them, with a
    /// consent page and a participant code each, and nothing else. Implies --play.
    #[arg(long, value_name = "FILE")]
    pub study: Option<PathBuf>,
}

impl PlayFlags {
    /// The play page's options, if it is on.
    pub fn options(&self) -> Result<Option<dealgym::serve::play::PlayOptions>> {
        if !self.play && self.study.is_none() {
            if !self.play_opponent.is_empty() || self.play_no_people {
                bail!("--play-opponent and --play-no-people set up the play page: add --play");
            }
            return Ok(None);
        }
        let study = match &self.study {
            Some(file) => Some(Arc::new(dealgym::serve::play::Study::load(file)?)),
            None => None,
        };
        Ok(Some(dealgym::serve::play::PlayOptions {
            opponents: self.play_opponent.clone(),
            people: !self.play_no_people,
            study,
        }))
    }
}

impl ServeFlags {
    pub fn options(&self) -> Result<ServeOptions> {
        let file = self.config.resolve()?;
        if file.probes.beliefs {
            anyhow::bail!(
                "[probes] beliefs = true: belief probes are asked by `run` and `eval`, which \
                 call the model seats themselves; a served session's seats are its clients' \
                 — drop [probes] from the config you serve with"
            );
        }
        // The config's `[scenarios]` (no flag of serve's own sets them), its sample seeded by
        // the config's seed as `run` seeds it.
        let selection = SelectConfig::default()
            .selection_over(&file.scenarios, file.seed.unwrap_or(0))
            .map_err(anyhow::Error::msg)?;
        let family = selection.family;
        let scenarios = if let (true, Some(family)) = (self.scenarios.is_empty(), family) {
            vec![PathBuf::from(format!("scenarios/{family}.jsonl"))]
        } else if self.scenarios.is_empty() {
            [
                "ahp",
                "craigslist",
                "casino",
                "dnd",
                "job_interview",
                "deliberation",
                "market",
            ]
            .iter()
            .map(|f| PathBuf::from(format!("scenarios/{f}.jsonl")))
            .filter(|p| dealgym_core::scenario::scenario_file_exists(p))
            .collect()
        } else {
            self.scenarios.clone()
        };
        let token =
            match &self.token_env {
                Some(name) => Some(std::env::var(name).map_err(|_| {
                    anyhow!("--token-env {name}: the environment variable is not set")
                })?),
                None => None,
            };
        if token.as_deref() == Some("") {
            bail!("--token-env: the token is empty");
        }
        if !self.host.is_loopback() && token.is_none() && !self.allow_public_without_token {
            bail!(
                "--host {}: anyone who can reach this address could drive the server. Give \
                 --token-env NAME (clients send `Authorization: Bearer <token>`), or serve behind \
                 a proxy on 127.0.0.1, or pass --allow-public-without-token to serve anyway",
                self.host
            );
        }
        let seconds =
            |key: &str, value: f64| check_seconds(key, value, false).map_err(anyhow::Error::msg);
        let policy = ClientPolicy {
            endpoints: self.allow_endpoint.clone(),
            scripts: self.allow_client_scripts,
            origins: self.allow_origin.clone(),
            hosts: self.allow_host.clone(),
            max_call_timeout: seconds("--max-client-timeout-s", self.max_client_timeout_s)?,
            max_backoff: seconds("--max-client-backoff-s", self.max_client_backoff_s)?,
            max_retries: check_count(
                "--max-client-retries",
                self.max_client_retries,
                0,
                MAX_RETRIES,
            )
            .map_err(anyhow::Error::msg)? as u32,
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
        let bytes = |key: &str, value: u64, max: u64| {
            check_count(key, value, 1, max).map_err(anyhow::Error::msg)
        };
        let text_limits = TextLimits {
            completion: bytes(
                "--max-completion-bytes",
                self.max_completion_bytes,
                MAX_COMPLETION_BYTES,
            )?,
            episode: bytes(
                "--max-episode-bytes",
                self.max_episode_bytes,
                MAX_EPISODE_BYTES,
            )?,
        };
        let session_memory = bytes(
            "--session-memory-bytes",
            self.session_memory_bytes,
            MAX_SESSION_MEMORY_BYTES,
        )?;
        let max_requests = count(
            "--max-requests-per-connection",
            self.max_requests_per_connection,
            MAX_CONNECTION_REQUESTS,
        )?;
        let concurrency = match self.concurrency {
            Some(n) => count("--concurrency", n, MAX_CONCURRENCY)?,
            None => file.concurrency.unwrap_or(64),
        };
        let idle_timeout = check_seconds("--idle-timeout-s", self.idle_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let header_timeout = check_seconds("--header-timeout-s", self.header_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let body_timeout = check_seconds("--body-timeout-s", self.body_timeout_s, false)
            .map_err(anyhow::Error::msg)?;
        let write_timeout = seconds("--write-timeout-s", self.write_timeout_s)?;
        let prompts = match &file.prompts_dir {
            Some(dir) => Arc::new(Prompts::with_overrides(dir)?),
            None => Prompts::builtin(),
        };
        let play = preset_play(file.preset.as_deref())?;
        let opponent_source = match (&self.opponent, &file.preset) {
            (None, Some(preset)) if play.opponent.is_some() => {
                format!("the preset {preset}'s [play] opponent")
            }
            _ => "--opponent".to_string(),
        };
        Ok(ServeOptions {
            addr: SocketAddr::new(self.host, self.port),
            scenarios,
            selection,
            scenarios_defaulted: self.scenarios.is_empty() && family.is_none(),
            log: self.log.clone(),
            max_sessions,
            idle_timeout,
            opponent: play
                .opponent_under(self.opponent.as_deref())
                .unwrap_or_else(|| "rule:boulware".to_string()),
            opponent_source,
            token,
            body_limit,
            concurrency,
            policy,
            connections: ConnectionLimits {
                max_connections,
                header_timeout,
                write_timeout,
                max_requests,
            },
            body_timeout,
            text_limits,
            session_memory,
            preset: file.preset,
            episode: file.episode,
            rewards: file.rewards,
            personas: file.personas,
            sampling: file.sampling,
            players: file.players,
            prompts,
            play: self.play.options()?,
        })
    }
}

/// The flags of `dealgym play`: every flag of `serve`, the page on.
#[derive(Debug, Clone, Args)]
pub struct PlayCommandFlags {
    #[command(flatten)]
    pub serve: ServeFlags,
    /// Do not start the built-in mock endpoint (by default it runs in this process on a free
    /// port and is offered at the page as `openai:mock@http://127.0.0.1:PORT/v1`).
    #[arg(long)]
    pub no_mock: bool,
}
