//! The flag groups several commands share, each flag declared here once: its name, value
//! type, value check and the words it is usually described in. A command flattens a group
//! where it takes those flags, and where a flag means something narrower there it says so in
//! its own words with `#[command(mut_arg("NAME", help("…")))]` (see [`help`]), so `--help`
//! stays exact for every command while the flag itself has one home.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, Args};

use dealgym::game::{FirstMover, Talk};
use dealgym::limits::{count_flag, MAX_CONCURRENCY, MAX_EPISODES, MAX_GROUP_SIZE, MAX_ROUNDS};
use dealgym::record::OnDuplicate;
use dealgym::run::preset::Play;
use dealgym::run::{grace_period, ConfigError, FileConfig, RunOptions, SelectConfig, Shard};
use dealgym::scenario::Role;

/// A command's own help line for a shared flag: `mut_arg("config", help("…"))`.
pub fn help(text: &'static str) -> impl FnOnce(Arg) -> Arg {
    move |arg| arg.help(text)
}

/// A command's own value name and help line for a shared flag.
pub fn named(value_name: &'static str, text: &'static str) -> impl FnOnce(Arg) -> Arg {
    move |arg| arg.value_name(value_name).help(text)
}

/// The flags every command that plays a plan of episodes shares (`run`, `eval`): which
/// scenarios, the config, the seed and groups, the rules, resuming and the progress bar.
#[derive(Debug, Clone, Args)]
pub struct PlanFlags {
    #[command(flatten)]
    pub scenarios: ScenarioChoice,
    #[command(flatten)]
    pub config: ConfigFlags,
    /// Seed of the setups (default: the config's, else 0).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub concurrency: ConcurrencyFlag,
    /// Threads the engine plays its episodes on, 1 to 256 (default 1). One thread serves
    /// thousands of turns a second (BENCHMARKS.md: tens of µs of CPU per turn) and spends the
    /// least per turn, as no episode is ever woken on another thread; more keep up when one
    /// core cannot (thousands of episodes in flight against a fast endpoint).
    #[arg(long, value_parser = count_flag::<usize>(1, 256))]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub group_size: GroupSizeFlag,
    /// The learner's role (buyer, seller, agent_1, agent_2, worker, recruiter, bd, hotel).
    #[arg(long)]
    pub learner_role: Option<Role>,
    /// Who moves first: learner, opponent or random (drawn per group; the default).
    #[arg(long)]
    pub first_mover: Option<FirstMover>,
    /// Rounds per seat before the episode is truncated (1 to 10,000).
    #[arg(long, value_parser = count_flag::<u32>(1, MAX_ROUNDS))]
    pub max_rounds: Option<u32>,
    /// Whether each move's Talk reaches the other side: on (the default) or off, the talk
    /// ablation (only the action and its terms are forwarded; the prompts say so). Two-party
    /// games only. Over the config's `[episode] talk`.
    #[arg(long, value_name = "on|off")]
    pub talk: Option<Talk>,
    /// Belief probes: ask each model seat, before some of its turns and never forwarded, for
    /// its estimate of the other side's private values and its confidence (the config's
    /// `[probes] beliefs = true`; its `turns` or `every` choose the turns, default every 2nd).
    #[arg(long)]
    pub belief_probes: bool,
    #[command(flatten)]
    pub resume: ResumeFlag,
    /// Play only shard i of n (0-based) of the plan: whole GRPO groups, group g to shard
    /// g mod n, every pairing of an eval with it. The run id stays the run's, so
    /// `dealgym merge` can join the shards. Without it, a Slurm array task
    /// (SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT) or a Kubernetes
    /// Indexed Job pod (JOB_COMPLETION_INDEX of --shard-count or DEALGYM_SHARD_COUNT) picks the
    /// shard; --shard 0/1 plays the whole plan there.
    #[arg(long, value_name = "i/n")]
    pub shard: Option<String>,
    /// The number of shards when a scheduler gives only the index (a Kubernetes Indexed Job's
    /// completions); overrides SLURM_ARRAY_TASK_COUNT and DEALGYM_SHARD_COUNT.
    #[arg(long, value_name = "N")]
    pub shard_count: Option<u64>,
    #[command(flatten)]
    pub grace: GraceFlag,
    #[command(flatten)]
    pub quiet: QuietFlag,
}

impl PlanFlags {
    /// Options for players `learner` and `opponent` writing to `out`: each flag over the config
    /// file's value over the default; `--scenarios` required or not (a prefix run and a
    /// campaign run find their scenarios themselves) — where it is required, a preset's own
    /// scenario files (its `[play]` table) stand in for it.
    pub fn options_with(
        &self,
        learner: &str,
        opponent: &str,
        out: PathBuf,
        needs_scenarios: bool,
    ) -> Result<RunOptions, ConfigError> {
        let file = self.config.resolve()?;
        let select = file.scenarios.clone();
        let scenarios = if needs_scenarios {
            scenarios_played(&self.scenarios.scenarios, &select)
        } else {
            self.scenarios.scenarios.clone()
        };
        if needs_scenarios && scenarios.is_empty() {
            return Err(ConfigError::Flag(
                "--scenarios FILE is required (the scenario file(s) to play)".into(),
            ));
        }
        let mut o = RunOptions::new(scenarios, learner, opponent, out).with_config(file);
        o.seed = self.seed.unwrap_or(o.seed);
        let selection = self
            .scenarios
            .select
            .choice()
            .selection_over(&select, o.seed)
            .map_err(ConfigError::Flag)?;
        o.limit = selection.limit;
        o.family = selection.family;
        o.split = selection.split;
        o.sample = selection.sample;
        o.concurrency = self.concurrency.concurrency.unwrap_or(o.concurrency);
        o.group_size = self.group_size.group_size.unwrap_or(o.group_size);
        o.resume = self.resume.resume;
        if let Some(role) = self.learner_role {
            o.episode.learner_role = Some(role);
        }
        if let Some(first) = self.first_mover {
            o.episode.first_mover = first;
        }
        if let Some(t) = self.max_rounds {
            o.episode.max_rounds = t;
        }
        if let Some(talk) = self.talk {
            o.episode.talk = talk;
        }
        if self.belief_probes {
            o.probes.beliefs = true;
        }
        o.progress = !self.quiet.quiet;
        o.shard = self.shard_choice(|name| std::env::var(name).ok())?;
        o.grace = self.grace.grace().map_err(ConfigError::Flag)?;
        Ok(o)
    }

    /// The shard to play: `--shard`, else the scheduler's index from `env` (see
    /// [`Shard::from_env`]), else none (the whole plan).
    pub fn shard_choice(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, ConfigError> {
        let shard = match &self.shard {
            Some(given) => {
                let shard = Shard::parse(given).map_err(ConfigError::Flag)?;
                if let Some(n) = self.shard_count.filter(|n| *n != shard.count) {
                    return Err(ConfigError::Flag(format!(
                        "--shard {given} and --shard-count {n} disagree: give one of them"
                    )));
                }
                Some(shard)
            }
            None => Shard::from_env(self.shard_count, env).map_err(ConfigError::Flag)?,
        };
        if shard.is_none() && self.shard_count.is_some() {
            return Err(ConfigError::Flag(
                "--shard-count is given but no shard index: give --shard i/n, or run as a Slurm \
                 array task (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job pod \
                 (JOB_COMPLETION_INDEX)"
                    .into(),
            ));
        }
        Ok(shard)
    }
}

/// The scenario files a plan plays: the flag's, else, where the config (or its preset) plays one
/// family (`[scenarios] family`), that family's own `scenarios/FAMILY.jsonl`. The one rule for
/// `run`, `eval` and `merge` (which sizes the plan a run had).
pub fn scenarios_played(given: &[PathBuf], select: &SelectConfig) -> Vec<PathBuf> {
    match (given.is_empty(), select.family) {
        (true, Some(family)) => vec![PathBuf::from(format!("scenarios/{family}.jsonl"))],
        _ => given.to_vec(),
    }
}

/// What the preset a config was built on (`preset`) plays that a config cannot say: its
/// `[play]` table's opponent; nothing without a preset.
pub fn preset_play(preset: Option<&str>) -> Result<Play, ConfigError> {
    Play::of(preset).map_err(|e| ConfigError::Flag(e.to_string()))
}

/// The scenario files a plan plays and which scenarios of each (`run`, `eval`, and `merge`,
/// which sizes the plan a run had).
#[derive(Debug, Clone, Args)]
pub struct ScenarioChoice {
    /// Scenario file(s) (JSONL); repeat the flag for several. Required, but for `run
    /// --prefixes`, where they are only searched for the records' scenarios, and where the
    /// config or preset plays one family (`[scenarios] family`, e.g. `--preset ina`: bundle):
    /// its `scenarios/FAMILY.jsonl`, which the flag replaces.
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    /// Which scenarios of each file: --scenario-split, --sample, --limit (see
    /// `dealgym::run::select`).
    #[command(flatten)]
    pub select: SelectFlags,
}

/// The flags that choose a plan's scenarios; the rule is `dealgym::run::select`'s.
#[derive(Debug, Clone, Default, Args)]
pub struct SelectFlags {
    /// At most N scenarios from each file: the first N (after --scenario-split and --sample).
    #[arg(long, value_name = "N", value_parser = count_flag::<usize>(0, MAX_EPISODES))]
    pub limit: Option<usize>,
    /// Only the scenarios of this split of each file (casino: train, valid, test; `dealgym
    /// scenarios list FILE` counts a file's splits). A file without that split is an error.
    #[arg(long, value_name = "NAME")]
    pub scenario_split: Option<String>,
    /// A random sample of N scenarios of each file (after --scenario-split), without
    /// replacement, the same for every pairing of an eval and on --resume.
    #[arg(long, value_name = "N", value_parser = count_flag::<usize>(1, MAX_EPISODES))]
    pub sample: Option<usize>,
    /// The seed of --sample (default: the config's, else the run's --seed).
    #[arg(long, value_name = "S")]
    pub sample_seed: Option<u64>,
}

impl SelectFlags {
    /// The choice these flags make, in the shape of the config's `[scenarios]` table, which
    /// they go over ([`SelectConfig::selection_over`]).
    pub fn choice(&self) -> SelectConfig {
        SelectConfig {
            family: None,
            split: self.scenario_split.clone(),
            sample: self.sample,
            sample_seed: self.sample_seed,
            limit: self.limit,
        }
    }
}

/// The config file and the preset under it.
#[derive(Debug, Clone, Args)]
pub struct ConfigFlags {
    /// TOML config: [episode] rules, [rewards], [personas], [sampling], [players.NAME]
    /// endpoints. Its values go over the preset's.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A paper's settings by name (see `dealgym presets list`): batna-threshold,
    /// casino-harness-selfplay, repo, … Under --config and the flags.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
}

impl ConfigFlags {
    /// The config the command runs with: the preset, the file over it, the defaults under both.
    pub fn resolve(&self) -> Result<FileConfig, ConfigError> {
        FileConfig::resolve(self.config.as_deref(), self.preset.as_deref())
    }

    /// Whether either was given (else the records' own settings stand).
    pub fn given(&self) -> bool {
        self.config.is_some() || self.preset.is_some()
    }
}

/// `--concurrency`: episodes (or requests) in flight at once.
#[derive(Debug, Clone, Args)]
pub struct ConcurrencyFlag {
    /// Episodes in flight at once, from 1 to 65,536 (default: the config's, else 64).
    #[arg(long, value_parser = count_flag::<usize>(1, MAX_CONCURRENCY))]
    pub concurrency: Option<usize>,
}

/// `--group-size`: members of a GRPO group.
#[derive(Debug, Clone, Args)]
pub struct GroupSizeFlag {
    /// Episodes per scenario sharing one setup, with different sampling seeds (GRPO groups of
    /// 1 to 4,096; default: the config's, else 1). A plan holds at most 10 million episodes.
    #[arg(long, value_parser = count_flag::<u32>(1, MAX_GROUP_SIZE))]
    pub group_size: Option<u32>,
}

/// `--resume`: continue into an output file that holds episodes.
#[derive(Debug, Clone, Args)]
pub struct ResumeFlag {
    /// Skip episodes already in --out and repair a cut-off last line.
    #[arg(long)]
    pub resume: bool,
}

/// `--grace-s`: how long work in flight may finish after a signal.
#[derive(Debug, Clone, Args)]
pub struct GraceFlag {
    /// After SIGINT (Ctrl-C) or SIGTERM no new episode starts and those in flight get this many
    /// seconds to finish; then (or at a second signal) they are abandoned, unwritten, for
    /// --resume to play. Exits 130 after SIGINT, 143 after SIGTERM.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub grace_s: f64,
}

impl GraceFlag {
    /// The grace period, checked ([`grace_period`]).
    pub fn grace(&self) -> Result<Duration, String> {
        grace_period(self.grace_s)
    }
}

/// `--quiet`.
#[derive(Debug, Clone, Args)]
pub struct QuietFlag {
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Record files a command reads, one record at a time.
#[derive(Debug, Clone, Args)]
pub struct RecordFiles {
    /// Record files (JSONL) as `dealgym run` writes them, read one record at a time.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Where the records' scenarios and templates are found when a command replays records.
#[derive(Debug, Clone, Args)]
pub struct RecordLookup {
    /// Scenario files to replay records with (messages, prompt-completion); repeat the flag for
    /// several. Default: scenarios/FAMILY.jsonl, per family.
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    /// The prompts directory the run was played with, if it had one (messages,
    /// prompt-completion: replay refuses other templates).
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
}

/// `--duplicates`, one flag with one meaning on every command that reads records (`replay`,
/// `report`, `export`, `eval`, `annotate`, `merge`); the rule itself is [`OnDuplicate`]'s.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct DuplicatesFlag {
    /// A record whose episode (its run id and episode id) an earlier record of the files
    /// already has: refuse (stop, naming both lines; merge reports it and exits 1) or skip
    /// (read each episode once and say how many records were skipped).
    #[arg(long, value_name = "refuse|skip", default_value_t = OnDuplicate::Refuse)]
    pub duplicates: OnDuplicate,
}

/// `--campaigns FILE` (`run`, `eval`): play a campaigns file's campaigns instead of single
/// scenarios.
#[derive(Debug, Clone, Default, Args)]
pub struct CampaignsFlag {
    /// Play the campaigns of this file (JSON lines; see the book's Campaigns page) instead of
    /// single scenarios: each campaign's deals in order, the seat that carries its ledger
    /// finding in each deal the reservation the earlier deals left it; campaigns side by side
    /// up to --concurrency. One record per deal. --scenarios is then optional (default:
    /// scenarios/FAMILY.jsonl of each deal's id); --group-size plays each campaign that many
    /// times.
    #[arg(long, value_name = "FILE")]
    pub campaigns: Option<PathBuf>,
}

impl CampaignsFlag {
    /// Set the campaigns file on `options`, refusing the flags that choose single scenarios.
    pub fn apply(&self, options: &mut RunOptions) -> Result<(), ConfigError> {
        if self.campaigns.is_some()
            && (options.split.is_some() || options.sample.is_some() || options.limit.is_some())
        {
            return Err(ConfigError::Flag(
                "--limit, --scenario-split and --sample choose single scenarios; a campaign run \
                 (--campaigns) plays every deal its file names"
                    .into(),
            ));
        }
        options.campaigns = self.campaigns.clone();
        Ok(())
    }
}
