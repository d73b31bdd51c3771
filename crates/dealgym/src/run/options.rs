//! What a run is given (`RunOptions`, after the config file and the flags are merged, checked
//! against `limits.rs`) and every way it can fail (`RunError`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::agents::{PersonaConfig, PlayerConfig, PlayerError, SamplingConfig};
use crate::campaign::CampaignError;
use crate::game::{EpisodeConfig, PromptError};
use crate::limits::{check_count, check_episodes, MAX_CONCURRENCY, MAX_EPISODES, MAX_GROUP_SIZE};
use crate::record::{ReadError, WriteError};
use crate::reward::RewardConfig;
use crate::scenario::{Family, ScenarioError};

use super::{EpisodeError, FindError, PrefixOptions, Sample, SelectError, Selection, Shard};

/// Everything a run needs, after the config file and the flags are merged.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scenarios: Vec<PathBuf>,
    /// Only the scenarios of this family of each file (`[scenarios] family`).
    pub family: Option<Family>,
    /// At most this many scenarios from each file (the first, after `split` and `sample`).
    pub limit: Option<usize>,
    /// Only the scenarios of this split of each file.
    pub split: Option<String>,
    /// A seeded random sample of each file's scenarios (after `split`).
    pub sample: Option<Sample>,
    pub learner: String,
    pub opponent: String,
    /// The players of an n-party table by role (`--seat ROLE=SPEC`); roles not named play
    /// `rule:deliberation`. Only for table scenarios.
    pub seats: Vec<(String, String)>,
    /// Roles of a table whose proposals and acceptances below their own minimum are replaced
    /// by a REJECT (`--regulate ROLE`).
    pub regulated_roles: Vec<String>,
    pub out: PathBuf,
    pub seed: u64,
    pub concurrency: usize,
    pub group_size: u32,
    pub resume: bool,
    /// The preset the config was built on, if any (named in every record).
    pub preset: Option<String>,
    pub episode: EpisodeConfig,
    pub rewards: RewardConfig,
    pub personas: PersonaConfig,
    pub(crate) sampling: SamplingConfig,
    pub players: BTreeMap<String, PlayerConfig>,
    pub prompts_dir: Option<PathBuf>,
    /// Show a progress bar on stderr (hidden anyway when stderr is not a terminal).
    pub progress: bool,
    /// Play only this slice of the plan (`--shard`, or a scheduler's array index).
    pub shard: Option<Shard>,
    /// How long episodes in flight may finish after SIGINT/SIGTERM before they are abandoned.
    pub grace: Duration,
    /// Continue logged prefixes instead of playing scenarios from the start (`--prefixes`):
    /// `scenarios` then only says where the records' scenarios are (empty: `scenarios/`),
    /// `limit` caps the source records read from each file, and each record's own setup is
    /// played (see `plan_prefixes`).
    pub prefixes: Option<PrefixOptions>,
    /// Play the campaigns of this file instead of single scenarios (`--campaigns`): each
    /// campaign's deals in order, their reservations from its ledger. `scenarios` then only
    /// says where the deals' scenarios are (empty: `scenarios/{family}.jsonl`).
    pub campaigns: Option<PathBuf>,
    /// Belief probes of the model seats (`[probes]`, `--belief-probes`; off by default).
    pub probes: super::config::ProbesConfig,
}

impl RunOptions {
    /// Options with the defaults: seed 0, concurrency 64, groups of 1.
    pub fn new(scenarios: Vec<PathBuf>, learner: &str, opponent: &str, out: PathBuf) -> Self {
        RunOptions {
            scenarios,
            family: None,
            limit: None,
            split: None,
            sample: None,
            learner: learner.to_string(),
            opponent: opponent.to_string(),
            seats: Vec::new(),
            regulated_roles: Vec::new(),
            out,
            seed: 0,
            concurrency: 64,
            group_size: 1,
            resume: false,
            preset: None,
            episode: EpisodeConfig::default(),
            rewards: RewardConfig::default(),
            personas: PersonaConfig::default(),
            sampling: SamplingConfig::default(),
            players: BTreeMap::new(),
            prompts_dir: None,
            progress: true,
            shard: None,
            grace: Duration::from_secs(30),
            prefixes: None,
            campaigns: None,
            probes: Default::default(),
        }
    }

    /// Whether a two-party player was named (`--learner`/`--opponent`): a table run refuses
    /// them, a two-party run needs them.
    pub fn learner_given(&self) -> bool {
        !self.learner.trim().is_empty() || !self.opponent.trim().is_empty()
    }

    /// Whether the run plays n-party games: its scenario files hold them, or, for a prefix
    /// run, its record files hold table records.
    pub fn is_table_run(&self) -> bool {
        match &self.prefixes {
            // A prefix run continues the kind of record its files hold.
            Some(prefixes) => crate::record::records_kind(&prefixes.files)
                .is_ok_and(|kind| kind == crate::record::RecordsKind::Table),
            None => super::is_table_run(&self.scenarios),
        }
    }

    /// The counts and rules the run is made with, each within its limit ([`crate::limits`]):
    /// checked where flags and config keys enter, and again here for a caller that builds its
    /// options itself.
    pub fn check(&self) -> Result<(), RunError> {
        check_count("concurrency", self.concurrency as u64, 1, MAX_CONCURRENCY)
            .and_then(|_| check_count("group size", self.group_size.into(), 1, MAX_GROUP_SIZE))
            .and_then(|_| self.episode.validate())
            .and_then(|_| self.rewards.check_against(&self.episode))
            .and_then(|_| self.probes.check())
            .map_err(RunError::Options)
    }

    /// The size of a plan of `groups` groups (`what` they are: scenarios, prefixes) of
    /// `group_size` members each, times `pairings` for an eval, checked against
    /// [`MAX_EPISODES`] before the plan is made.
    pub(crate) fn check_plan_size(
        &self,
        groups: usize,
        what: &str,
        pairings: usize,
    ) -> Result<(), RunError> {
        let mut factors = vec![
            (groups as u64, what),
            (u64::from(self.group_size), "members per group"),
        ];
        if pairings != 1 {
            factors.push((pairings as u64, "pairings"));
        }
        check_episodes(&factors, MAX_EPISODES)
            .map(drop)
            .map_err(RunError::Options)
    }

    /// Which scenarios of each file the plan plays (see `select`).
    pub fn selection(&self) -> Selection {
        Selection {
            family: self.family,
            split: self.split.clone(),
            sample: self.sample,
            limit: self.limit,
        }
    }
}

/// A run that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Player(#[from] PlayerError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Episode(#[from] EpisodeError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Find(#[from] FindError),
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error(transparent)]
    Campaign(#[from] CampaignError),
    #[error("{0}")]
    Options(String),
}
