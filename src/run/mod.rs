//! The async runner behind `dealgym run`: seeds, bounded concurrency, GRPO groups, the JSONL
//! log written as episodes end, `--resume`, `--shard`, stopping on signals, the progress bar
//! and the summary.
//!
//! Episode `g{G}-m{M}` plays scenario G (in file order, after `--scenario-split`, `--sample`
//! and `--limit`: [`select`]) as member M of its
//! group. Its setup comes from (seed, G) and its sampling seeds from (seed, G, M, seat), so any
//! subset of episodes can be rerun or resumed and gives the same records.

mod config;
mod driver;
mod plan;
mod prefix;
pub mod preset;
mod rewarding;
mod scenarios;
pub mod select;
mod stop;
mod summary;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::agents::{PersonaConfig, Player, PlayerConfig, PlayerError, SamplingConfig};
use crate::game::{mix_text, EpisodeConfig, OutcomeKind, PerSeat, PromptError, Prompts, Seat};
use crate::limits::{check_count, check_episodes, MAX_CONCURRENCY, MAX_EPISODES, MAX_GROUP_SIZE};
use crate::llm::{http_client, replica_table, PoolReport};
use crate::record::{Duplicates, ReadError, RecordWriter, WriteError};
use crate::reward::RewardConfig;
use crate::scenario::{load_scenarios, LoadOptions, Scenario, ScenarioError};
use crate::score::SeatCounts;

pub use config::{presets_doc, ConfigError, FileConfig, PlanFlags, PrefixFlags, RunFlags};
pub use driver::{
    panic_message, play, play_caught, Driver, EpisodeError, EpisodeKit, Finished, SeatPlayer,
    Seating, INTERNAL_ERROR,
};
pub use plan::{plan, planned_ids, shard, without_done, PlannedEpisode, Shard};
pub use prefix::{
    plan_prefixes, Cut, LoggedPrefix, PrefixOptions, PrefixPlan, PrefixReport, SkipReason, Skipped,
    Targets,
};
pub use rewarding::{rubric, rubric_source, Rewarding};
pub use scenarios::{list_files, FindError, ScenarioSource, Unavailable};
pub use select::{Sample, SelectConfig, SelectError, SelectFlags, Selection};
pub use stop::{grace_period, Stop, StopHandle, StopSignal, StopState};
pub use summary::{FamilyStats, RunStats};

/// Everything a run needs, after the config file and the flags are merged.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scenarios: Vec<PathBuf>,
    /// At most this many scenarios from each file (the first, after `split` and `sample`).
    pub limit: Option<usize>,
    /// Only the scenarios of this split of each file.
    pub split: Option<String>,
    /// A seeded random sample of each file's scenarios (after `split`).
    pub sample: Option<Sample>,
    pub learner: String,
    pub opponent: String,
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
    pub sampling: SamplingConfig,
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
    /// played (see [`plan_prefixes`]).
    pub prefixes: Option<PrefixOptions>,
}

impl RunOptions {
    /// Options with DESIGN's defaults: seed 0, concurrency 64, groups of 1.
    pub fn new(scenarios: Vec<PathBuf>, learner: &str, opponent: &str, out: PathBuf) -> Self {
        RunOptions {
            scenarios,
            limit: None,
            split: None,
            sample: None,
            learner: learner.to_string(),
            opponent: opponent.to_string(),
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
        }
    }

    /// The counts and rules the run is made with, each within its limit ([`crate::limits`]):
    /// checked where flags and config keys enter, and again here for a caller that builds its
    /// options itself.
    pub fn check(&self) -> Result<(), RunError> {
        check_count("concurrency", self.concurrency as u64, 1, MAX_CONCURRENCY)
            .and_then(|_| check_count("group size", self.group_size.into(), 1, MAX_GROUP_SIZE))
            .and_then(|_| self.episode.validate())
            .map_err(RunError::Options)
    }

    /// The size of a plan of `groups` groups (`what` they are: scenarios, prefixes) of
    /// `group_size` members each, times `pairings` for an eval, checked against
    /// [`MAX_EPISODES`] before the plan is made.
    pub fn check_plan_size(
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

    /// Which scenarios of each file the plan plays (see [`select`]).
    pub fn selection(&self) -> Selection {
        Selection {
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
    #[error("{0}")]
    Options(String),
}

/// How a run went.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    /// The player spec of each seat, as recorded.
    pub players: PerSeat<String>,
    /// Episodes of this run's plan (of its shard, with `--shard`).
    pub planned: usize,
    /// Episodes of the whole plan, all shards together.
    pub whole_plan: usize,
    /// The shard played, if the plan was split.
    pub shard: Option<Shard>,
    /// Episodes already in the file when the run started (with `--resume`).
    pub skipped: usize,
    pub written: usize,
    pub stats: RunStats,
    pub interrupted: bool,
    /// How the run was stopped, if a signal (or the caller) stopped it.
    pub stopped: Option<Stopped>,
    pub repaired_last_line: bool,
    /// Episodes the file already held more than once (reported on `--resume`).
    pub duplicates: Duplicates,
    /// Wall time of the run.
    pub elapsed: std::time::Duration,
    /// What each replica served, per seat whose player lists several endpoints.
    pub replicas: Vec<SeatReplicas>,
    /// For a prefix run: the source records read, planned and skipped (by reason).
    pub prefixes: Option<PrefixReport>,
    /// Which scenarios of each file were played (split, sample, limit).
    pub selection: Selection,
}

/// The replicas of one seat's player and what each served (see [`PoolReport`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeatReplicas {
    pub seat: Seat,
    pub player: String,
    pub pool: PoolReport,
}

impl SeatReplicas {
    /// The replicas of each seat of `kit` whose player has several, in seat order.
    pub fn of(kit: &EpisodeKit) -> Vec<SeatReplicas> {
        Seat::BOTH
            .into_iter()
            .filter_map(|seat| match &kit.players[seat] {
                SeatPlayer::Local(player) => player.replica_pool().map(|pool| SeatReplicas {
                    seat,
                    player: player.spec().to_string(),
                    pool: pool.report(),
                }),
                SeatPlayer::External { .. } => None,
            })
            .collect()
    }
}

impl RunSummary {
    /// Throughput of this run: (episodes/s, turns/s), turns counting every model call.
    pub fn throughput(&self) -> (f64, f64) {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        (self.written as f64 / secs, self.stats.calls() as f64 / secs)
    }

    /// One warning for the run if any constrained completion fell outside the constraint it was
    /// sent with: the server answered, but probably ignored the constraint field.
    pub fn constraint_warning(&self) -> Option<String> {
        let seats = self.seats_where(|c| {
            (c.constraint_violations > 0).then(|| {
                format!(
                    "{} of {} constrained completions",
                    c.constraint_violations, c.constrained
                )
            })
        })?;
        Some(format!(
            "warning: {seats} fall outside the constraint they were sent with: the server \
             probably ignored it (vLLM 0.12 and later ignore guided_regex: use \
             constrain = \"vllm\"; llama.cpp reads \"gbnf\")"
        ))
    }

    /// One note for the run if any token-exact call drifted: the exact ids were kept, but a
    /// trainer that re-renders the conversation would train on a different sequence.
    pub fn drift_warning(&self) -> Option<String> {
        let seats =
            self.seats_where(|c| (c.token_drift > 0).then(|| format!("{} calls", c.token_drift)))?;
        Some(format!(
            "note: in {seats} the exact token sequence differs from a full re-render of the \
             conversation (the chat template is not append-only, or sampled ids are not the \
             canonical tokenization): the records keep the exact ids, marked `drift`; train on \
             those, not on re-rendered text"
        ))
    }

    /// "N … of the learner (SPEC) and M … of the opponent (SPEC)" for the seats `what` finds
    /// something to say about; `None` if it finds nothing for either.
    fn seats_where(&self, what: impl Fn(&SeatCounts) -> Option<String>) -> Option<String> {
        let totals = self.stats.all().seats();
        let parts: Vec<String> = Seat::BOTH
            .into_iter()
            .filter_map(|seat| {
                what(&totals[seat])
                    .map(|said| format!("{said} of the {} ({})", seat.name(), self.players[seat]))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(" and "))
    }

    /// The per-replica table (Markdown) of the seats whose players have replicas; empty when
    /// none has.
    pub fn replica_table(&self) -> String {
        if self.replicas.is_empty() {
            return String::new();
        }
        let pools: Vec<(String, PoolReport)> = self
            .replicas
            .iter()
            .map(|r| (format!("{} ({})", r.seat.name(), r.player), r.pool.clone()))
            .collect();
        replica_table(&pools)
    }

    /// Write the summary as JSON lines, one per family and one for all (see
    /// [`RunStats::json_rows`]), each with the run id; then, for players with replicas, one
    /// line per seat and replica (`seat`, `player`, `replica` index, `routing` and the
    /// [`ReplicaReport`](crate::llm::ReplicaReport) fields, `cached_share` among them).
    pub fn write_json(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut text = String::new();
        for mut row in self.stats.json_rows() {
            row["run_id"] = self.run_id.clone().into();
            if let Some(split) = &self.selection.split {
                row["scenario_split"] = split.clone().into();
            }
            if let Some(sample) = self.selection.sample {
                row["sample"] = sample.size.into();
                row["sample_seed"] = sample.seed.into();
            }
            text.push_str(&row.to_string());
            text.push('\n');
        }
        for seat in &self.replicas {
            for (i, replica) in seat.pool.replicas.iter().enumerate() {
                let mut row = serde_json::to_value(replica).unwrap_or_default();
                row["run_id"] = self.run_id.clone().into();
                row["seat"] = seat.seat.name().into();
                row["player"] = seat.player.clone().into();
                row["replica"] = i.into();
                row["routing"] = serde_json::to_value(seat.pool.routing).unwrap_or_default();
                row["cached_share"] = replica.cached_share().into();
                text.push_str(&row.to_string());
                text.push('\n');
            }
        }
        std::fs::write(path, text)
    }
}

/// The run id: a digest of what makes two runs comparable (seed, scenarios, players, group size,
/// rules), so resuming into a file of another run is refused. An endpoint's URL is not part of
/// it: the same model behind another port is the same run. `identity` is the rest of what makes
/// the run (a run's scenario ids, a branch's prefix), each word folded in after a `|`.
fn run_id<'a>(
    options: &RunOptions,
    players: &PerSeat<Player>,
    identity: impl IntoIterator<Item = &'a str>,
) -> String {
    let words = vec![options.seed, u64::from(options.group_size)];
    let mut text = format!(
        "{}|{}|{:?}|{}",
        players.learner.identity(),
        players.opponent.identity(),
        options.episode,
        options
            .rewards
            .identity(rubric(&options.rewards).as_deref())
    );
    // Who draws which persona decides the prompts; folded in only when set, so a run without
    // personas keeps the id it had before they counted.
    if options.personas != PersonaConfig::default() {
        text.push_str(&format!("|personas={:?}", options.personas));
    }
    for word in identity {
        text.push('|');
        text.push_str(word);
    }
    format!("run-{:016x}", mix_text(words, &text))
}

/// Load the scenarios of every file, each file's as `selection` chooses them, in file order.
pub fn load_all(files: &[PathBuf], selection: &Selection) -> Result<Vec<Arc<Scenario>>, RunError> {
    let mut out = Vec::new();
    for file in files {
        let report = load_scenarios(file, LoadOptions::default())?;
        let kept = selection.apply(&file.display().to_string(), report.scenarios)?;
        out.extend(kept.into_iter().map(Arc::new));
    }
    Ok(out)
}

/// Run every planned episode (of the shard, with one), writing each record as it ends. Stops
/// early, keeping every record already written whole, as `stop` says: a [`Stop::on_signals`]
/// lets episodes in flight finish first; a plain future abandons them when it resolves.
pub async fn run<'s>(
    options: &RunOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<RunSummary, RunError> {
    let started = std::time::Instant::now();
    options.check()?;
    let selection = options.selection();
    let (kit, planned, prefixes) = match &options.prefixes {
        None => {
            let scenarios = load_all(&options.scenarios, &selection)?;
            options.check_plan_size(scenarios.len(), "scenarios", 1)?;
            let chosen = selection.identity();
            let words = chosen
                .iter()
                .map(String::as_str)
                .chain(scenarios.iter().map(|s| s.id.as_str()));
            let kit = build_kit(options, words)?;
            (
                kit,
                plan(&scenarios, options.seed, options.group_size),
                None,
            )
        }
        Some(prefixes) => {
            let plan = plan_prefixes(prefixes, options)?;
            let words = std::iter::once("prefixes").chain(plan.identity.iter().map(String::as_str));
            (build_kit(options, words)?, plan.planned, Some(plan.report))
        }
    };
    let kit = Arc::new(kit);
    let (mut writer, existing) = RecordWriter::open_run(&options.out, &kit.run_id, options.resume)?;
    let whole_plan = planned.len();
    let planned = match &options.shard {
        Some(s) => shard(planned, s),
        None => planned,
    };
    let planned_count = planned.len();
    let todo = without_done(planned, &existing.episode_ids_of(&kit.run_id));
    let skipped = planned_count - todo.len();
    let bar = progress_bar(options.progress, todo.len());
    let episodes = {
        let kit = kit.clone();
        todo.into_iter().map(move |planned| (kit.clone(), planned))
    };
    let (stats, stopped) = execute(episodes, options.concurrency, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();
    Ok(RunSummary {
        run_id: kit.run_id.clone(),
        players: kit.players.map(|_, p| p.spec().to_string()),
        planned: planned_count,
        whole_plan,
        shard: options.shard.clone(),
        skipped,
        written: writer.written(),
        stats,
        interrupted: stopped.is_some(),
        stopped,
        repaired_last_line: existing.repaired,
        duplicates: existing.duplicates.clone(),
        elapsed: started.elapsed(),
        replicas: SeatReplicas::of(&kit),
        prefixes,
        selection,
    })
}

/// The players, prompts, rules and run id every episode of a run shares: what `run` plays its
/// plan with, and what `replay --branch-from` continues logged prefixes with. `identity` is what
/// else makes the run what it is, folded into the run id: a run's scenario ids (in plan order),
/// a branch's prefix, a prefix run's cut and sources.
pub fn build_kit<'a>(
    options: &RunOptions,
    identity: impl IntoIterator<Item = &'a str>,
) -> Result<EpisodeKit, RunError> {
    let http = http_client(options.concurrency.max(8))
        .map_err(|e| RunError::Options(format!("cannot build the HTTP client: {e}")))?;
    let sampling = &options.sampling;
    let players = PerSeat::new(
        Player::from_spec_with(&options.learner, &options.players, &http, &sampling.learner)?,
        Player::from_spec_with(
            &options.opponent,
            &options.players,
            &http,
            &sampling.opponent,
        )?,
    );
    let prompts = match &options.prompts_dir {
        Some(dir) => Arc::new(Prompts::with_overrides(dir)?),
        None => Prompts::builtin(),
    };
    Ok(EpisodeKit {
        run_id: run_id(options, &players, identity),
        preset: options.preset.clone(),
        players: players.map(|_, p| SeatPlayer::Local(p.clone())),
        episode: options.episode.clone(),
        personas: options.personas.clone(),
        rewards: options.rewards.clone(),
        prompts,
        rewarding: Rewarding::new(&options.rewards, &http)
            .map_err(RunError::Options)?
            .map(Arc::new),
        seating: Seating::default(),
    })
}

/// The exit status of `run` and `eval` when an episode panicked (an internal error: a bug),
/// after every other episode was played and written: sysexits' `EX_SOFTWARE`. A stop by a
/// signal exits with the signal's status instead ([`StopSignal::exit_code`]).
pub const INTERNAL_ERROR_EXIT: i32 = 70;

/// How a run (or an eval) was stopped before the end of its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    pub signal: StopSignal,
    /// Episodes in flight when the stop came: they were let finish, within the grace period.
    pub in_flight: usize,
    /// Episodes given up on (nothing written: `--resume` plays them again).
    pub abandoned: usize,
}

/// The closing line of a run or an eval: `who` (a run id, "N pairings") wrote `written`
/// episodes to `out`, of `planned` (in `shard`, if one), `skipped` being there already; and
/// how a stop left it.
pub fn written_line(
    who: &str,
    written: usize,
    out: &std::path::Path,
    (planned, skipped): (usize, usize),
    shard: &str,
    stopped: Option<&Stopped>,
) -> String {
    let mut line = format!(
        "{who}: {written} episodes written to {} ({planned} planned{shard}, {skipped} already there)",
        out.display()
    );
    if let Some(s) = stopped {
        let left = planned - skipped - written;
        let next = if left == 0 {
            "every planned episode is written".to_string()
        } else {
            format!("{left} left: rerun with --resume to finish")
        };
        line.push_str(&format!(
            "; interrupted by {}: {} episodes were in flight, {} abandoned; {next}",
            s.signal.name(),
            s.in_flight,
            s.abandoned
        ));
    }
    line
}

/// Play `todo` — each planned episode with the kit of its run — with at most `concurrency`
/// episodes in flight, writing each record as it ends. A run's episodes share one kit; an
/// eval's come from one kit per pairing, so the whole grid shares one executor, one progress
/// bar and one writer. Returns the totals and, if `stop` cut the run short, how: once it says
/// drain no episode is started, and once it says abandon those in flight are dropped unwritten.
pub async fn execute<'s, I>(
    todo: I,
    concurrency: usize,
    writer: &mut RecordWriter,
    bar: &ProgressBar,
    stop: impl Into<Stop<'s>>,
) -> Result<(RunStats, Option<Stopped>), RunError>
where
    I: IntoIterator<Item = (Arc<EpisodeKit>, PlannedEpisode)>,
    I::IntoIter: Send + 'static,
{
    let mut stop = stop.into();
    let todo = todo.into_iter();
    let (tx, mut rx) = mpsc::channel(concurrency * 2);
    let permits = Arc::new(Semaphore::new(concurrency));
    let started = Arc::new(AtomicUsize::new(0));
    let (drain, mut draining) = watch::channel(false);
    let producer = tokio::spawn({
        let started = started.clone();
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for (kit, planned) in todo {
                let permit = tokio::select! {
                    biased;
                    _ = draining.wait_for(|d| *d) => break,
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                };
                if *draining.borrow() {
                    break;
                }
                started.fetch_add(1, Ordering::SeqCst);
                let tx = tx.clone();
                tasks.spawn(async move {
                    let record = play_caught(kit, planned).await;
                    drop(permit);
                    let _ = tx.send(record).await;
                });
                // Reap finished tasks as we go so the set stays small.
                while tasks.try_join_next().is_some() {}
            }
            drop(tx);
            while tasks.join_next().await.is_some() {}
        }
    });

    let mut stats = RunStats::default();
    let mut received = 0usize;
    let mut stopped: Option<Stopped> = None;
    let mut failure = None;
    let mut state = stop.state();
    loop {
        if let StopState::Draining(signal) | StopState::Abandon(signal) = state {
            if stopped.is_none() {
                let _ = drain.send(true);
                let in_flight = started.load(Ordering::SeqCst) - received;
                bar.set_message(format!("stopping: {in_flight} episodes in flight"));
                stopped = Some(Stopped {
                    signal,
                    in_flight,
                    abandoned: 0,
                });
            }
            if matches!(state, StopState::Abandon(_)) {
                producer.abort();
                break;
            }
        }
        tokio::select! {
            record = rx.recv() => match record {
                Some(Ok(finished)) => {
                    // A record that cannot be written (a full disk) stops the run: no episode
                    // more is played to be lost.
                    if let Err(e) = writer.write(&finished.record) {
                        producer.abort();
                        return Err(e.into());
                    }
                    received += 1;
                    stats.add_finished(&finished);
                    bar.inc(1);
                    if stopped.is_none() {
                        bar.set_message(format!(
                            "deal {:.0}% · errors {}",
                            stats.deal_rate(),
                            stats.count(OutcomeKind::Error)
                        ));
                    }
                }
                Some(Err(e)) => {
                    failure = Some(e);
                    producer.abort();
                    break;
                }
                None => break,
            },
            now = stop.changed(state) => state = now,
        }
    }
    // Episodes that ended while we were stopping are complete: keep them.
    while let Ok(Ok(finished)) = rx.try_recv() {
        writer.write(&finished.record)?;
        received += 1;
        stats.add_finished(&finished);
    }
    if let Some(stopped) = &mut stopped {
        stopped.abandoned = started.load(Ordering::SeqCst).saturating_sub(received);
    }
    match failure {
        Some(e) => Err(e.into()),
        None => Ok((stats, stopped)),
    }
}

/// The progress bar of a run or an eval: episodes written of `total` (hidden unless `show`,
/// and anyway when stderr is not a terminal).
pub fn progress_bar(show: bool, total: usize) -> ProgressBar {
    styled_bar(
        show,
        total as u64,
        "{elapsed_precise} [{bar:30}] {pos}/{len} episodes · {per_sec} · {msg}",
    )
}

/// A progress bar to `total` drawn with `template` (indicatif's), hidden unless `show`: the one
/// look every long command's bar shares.
pub fn styled_bar(show: bool, total: u64, template: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
