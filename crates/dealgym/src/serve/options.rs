//! What the server needs ([`ServeOptions`]), once the config file and the command line's flags
//! are merged (the binary's `flags/serve.rs` does that: every size and duration checked against
//! `limits.rs` where it enters, the client policy checked, and a public bind without a token
//! refused).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::listen::ConnectionLimits;
use super::policy::ClientPolicy;
use crate::agents::{PersonaConfig, PlayerConfig, SamplingConfig};
use crate::game::{EpisodeConfig, Prompts};
use crate::limits::{TextLimits, DEFAULT_SESSION_MEMORY_BYTES};
use crate::reward::RewardConfig;
use crate::run::Selection;

/// Everything the server needs, after the config file and the flags are merged.
#[derive(Clone)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    pub scenarios: Vec<PathBuf>,
    /// Which scenarios of each file are served (the config's `[scenarios]`: family, split,
    /// sample, limit), chosen as `run` chooses them ([`Selection`]).
    pub selection: Selection,
    /// `scenarios` is the server's default list (every family's file), not files the operator
    /// named: a split or a sample then chooses among the files that can take it, and the others
    /// are left out, said as the server starts (named files that cannot are refused).
    pub scenarios_defaulted: bool,
    pub log: PathBuf,
    pub max_sessions: usize,
    pub idle_timeout: Duration,
    /// The opponent of a reset that names none; checked as the server starts.
    pub opponent: String,
    /// Where `opponent` was set, as a refusal at startup names it (`--opponent`, or a
    /// preset's `[play] opponent`).
    pub opponent_source: String,
    pub token: Option<String>,
    pub body_limit: usize,
    pub concurrency: usize,
    /// What a client may choose (`policy.rs`).
    pub policy: ClientPolicy,
    pub connections: ConnectionLimits,
    pub body_timeout: Duration,
    /// What one completion and one episode may store (`--max-completion-bytes`,
    /// `--max-episode-bytes`).
    pub text_limits: TextLimits,
    /// What the sessions may hold in memory, live and ended (`--session-memory-bytes`).
    pub session_memory: u64,
    /// The preset the config was built on, named in every record.
    pub preset: Option<String>,
    pub episode: EpisodeConfig,
    pub rewards: RewardConfig,
    pub personas: PersonaConfig,
    pub sampling: SamplingConfig,
    pub players: BTreeMap<String, PlayerConfig>,
    pub prompts: Arc<Prompts>,
    /// The play page (`dealgym play`, `serve --play`): people at the table; `None`: off.
    pub play: Option<super::play::PlayOptions>,
}

impl ServeOptions {
    /// Defaults for a server on `addr` over `scenarios`, logging to `log`.
    pub fn new(addr: SocketAddr, scenarios: Vec<PathBuf>, log: PathBuf) -> ServeOptions {
        ServeOptions {
            addr,
            scenarios,
            selection: Selection::default(),
            scenarios_defaulted: false,
            log,
            max_sessions: 1024,
            idle_timeout: Duration::from_secs(600),
            opponent: "rule:boulware".into(),
            opponent_source: "--opponent".into(),
            token: None,
            body_limit: crate::limits::DEFAULT_BODY_BYTES as usize,
            concurrency: 64,
            policy: ClientPolicy::default(),
            connections: ConnectionLimits {
                max_connections: 512,
                header_timeout: Duration::from_secs(10),
                write_timeout: Duration::from_secs(crate::limits::DEFAULT_WRITE_TIMEOUT_S),
                max_requests: crate::limits::DEFAULT_CONNECTION_REQUESTS as usize,
            },
            body_timeout: Duration::from_secs(30),
            text_limits: TextLimits::default(),
            session_memory: DEFAULT_SESSION_MEMORY_BYTES,
            preset: None,
            episode: EpisodeConfig::default(),
            rewards: RewardConfig::default(),
            personas: PersonaConfig::default(),
            sampling: SamplingConfig::default(),
            players: BTreeMap::new(),
            prompts: Prompts::builtin(),
            play: None,
        }
    }
}
