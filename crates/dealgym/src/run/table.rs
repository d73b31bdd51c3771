//! Runs of n-party games (`run --scenarios scenarios/deliberation.jsonl --seat ROLE=SPEC …`):
//! the plan (each scenario a GRPO group of `--group-size` members, seeded like two-party
//! episodes), the table's players in the one driver loop ([`crate::engine::drive`]) and the
//! summary.
//! Episodes are played by the one executor ([`super::execute`]) as [`super::Job::Table`] jobs
//! and written by the same record writer.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use crate::agents::{Played, PlayerError};
use crate::agents::{ScriptedSeat, SeatPlayer, TablePlayer};
use crate::engine::{drive, Players, Seated, ToMove};
use crate::game::{mix_text, EpisodeSeed, ErrorCause, OutcomeKind, Prompts};
use crate::llm::http_client;
use crate::record::{RecordWriter, TablePlayerInfo, TableRecord, TurnCost};
use crate::reward::RewardConfig;
use crate::scenario::{load_table_scenarios, LoadOptions, TableScenario};
use crate::score::TableTally;
use crate::table::{TableEpisode, TableError, TableOptions, TableSetup};

use super::prefix::{feed_prefix, group_of, plan_logged, refuse_for_tables, PrefixReport};
use super::{execute, progress_bar, LoggedPrefix, RunError, RunOptions, Stop, Stopped};

/// What every table of a run shares: the players by role, the options, the rewards, the run id.
pub(crate) struct TableKit {
    pub run_id: String,
    /// The player of each role; roles not named play [`SCRIPTED`](crate::agents::SCRIPTED).
    pub seats: BTreeMap<String, TablePlayer>,
    pub options: TableOptions,
    /// The templates the tables render their messages with (`prompts_dir` over the built-ins).
    pub prompts: Arc<Prompts>,
    /// The run's `[rewards]`, checked for a table ([`RewardConfig::check_for_table`]).
    pub rewards: RewardConfig,
    /// The judge and reward-model clients, when `[rewards]` uses them (a two-party run's).
    pub rewarding: Option<Arc<super::Rewarding>>,
}

impl TableKit {
    fn player(&self, role: &str) -> TablePlayer {
        self.seats
            .get(role)
            .cloned()
            .unwrap_or(TablePlayer::Scripted(
                crate::negotiator::deliberation::Scripted::Strong,
            ))
    }
}

/// One table to play.
#[derive(Debug, Clone)]
pub(crate) struct PlannedTable {
    pub scenario: Arc<TableScenario>,
    pub seeds: EpisodeSeed,
    /// The logged table prefix it continues (`run --prefixes`, `replay --branch-from`),
    /// shared by its group; `None` for a table played from the start.
    pub prefix: Option<Arc<LoggedPrefix<TableRecord>>>,
}

impl PlannedTable {
    /// The table's GRPO group: the plan's `g{G}`, or its prefix's (a branch's `E.bN`).
    pub fn group_id(&self) -> String {
        group_of(self.prefix.as_deref(), self.seeds)
    }

    /// The table's id: `{group}-m{member}`.
    pub fn episode_id(&self) -> String {
        format!("{}-m{}", self.group_id(), self.seeds.member)
    }

    /// Name `record` (played from this plan entry) as the plan does: its ids and, for a
    /// continuation, its parent.
    fn name(&self, record: &mut TableRecord) {
        record.episode_id = self.episode_id();
        record.group_id = self.group_id();
        record.parent = self.prefix.as_ref().map(|p| p.parent());
    }
}

/// An ended table from the executor.
pub(crate) type TableFinished = super::driver::Finished<TableRecord>;

/// Totals of the tables of a run, per family: the endings and metrics in the one tally
/// ([`TableTally`]), turns, and each role's ρ.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStats {
    pub(crate) tally: TableTally,
    pub(crate) endings: BTreeMap<OutcomeKind, usize>,
    pub turns: usize,
    /// Sum of each role's ρ over the scored episodes.
    pub(crate) rho: BTreeMap<String, f64>,
    pub internal_errors: usize,
}

impl TableStats {
    pub(crate) fn add(&mut self, r: &TableRecord) {
        let kind = r.outcome.outcome.kind;
        self.tally.add(kind, &r.outcome.metrics);
        *self.endings.entry(kind).or_default() += 1;
        self.turns += r.turns.len();
        if kind == OutcomeKind::Error {
            return;
        }
        for (role, rho) in &r.outcome.rho {
            *self.rho.entry(role.clone()).or_default() += rho;
        }
    }

    /// Episodes played (errors among them).
    pub fn episodes(&self) -> usize {
        self.tally.episodes
    }

    fn pct(value: Option<f64>) -> String {
        value.map_or_else(|| "–".into(), |v| format!("{:.1}", 100.0 * v))
    }

    /// The summary table: endings and the paper's metrics over the scored episodes (errors
    /// apart), then mean ρ per role.
    pub fn table(&self) -> String {
        let t = &self.tally;
        let mut out = String::from(
            "| episodes | errors | deal % | deal any round % | deal final round % | unanimous final % | wrong deals % | mean turns |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            t.episodes,
            t.errors,
            Self::pct(t.rate(t.deals)),
            Self::pct(t.rate(t.deal_any)),
            Self::pct(t.rate(t.deal_final)),
            Self::pct(t.rate(t.unanimous_final)),
            Self::pct(t.wrong_mean()),
            if t.episodes == 0 {
                "–".into()
            } else {
                format!("{:.1}", self.turns as f64 / t.episodes as f64)
            },
        ));
        out.push_str("\n| role | mean ρ |\n|---|---:|\n");
        for (role, sum) in &self.rho {
            out.push_str(&format!(
                "| {role} | {:.3} |\n",
                sum / t.scored().max(1) as f64
            ));
        }
        out
    }

    /// Add another family's totals.
    pub(crate) fn absorb(&mut self, other: &TableStats) {
        self.tally.absorb(&other.tally);
        for (k, n) in &other.endings {
            *self.endings.entry(*k).or_default() += n;
        }
        self.turns += other.turns;
        for (role, r) in &other.rho {
            *self.rho.entry(role.clone()).or_default() += r;
        }
        self.internal_errors += other.internal_errors;
    }
}

/// What a table run did.
#[derive(Debug)]
pub struct TableRunSummary {
    pub run_id: String,
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stats: TableStats,
    pub stopped: Option<Stopped>,
    /// A prefix run's sources: read, planned, skipped by reason.
    pub prefixes: Option<PrefixReport>,
    pub elapsed: std::time::Duration,
}

/// Parse `ROLE=SPEC` seat flags.
pub fn parse_seats(flags: &[String]) -> Result<Vec<(String, String)>, RunError> {
    flags
        .iter()
        .map(|f| match f.split_once('=') {
            Some((role, spec)) if !role.trim().is_empty() && !spec.trim().is_empty() => {
                Ok((role.trim().to_string(), spec.trim().to_string()))
            }
            _ => Err(RunError::Options(format!(
                "--seat `{f}`: expected ROLE=SPEC (e.g. sportco=openai:MODEL@URL)"
            ))),
        })
        .collect()
}

/// Load the table scenarios of every file, each as `selection` chooses: its limit (a split or a
/// sample is refused for a table file, naming it).
pub(crate) fn load_tables(
    files: &[PathBuf],
    selection: &super::Selection,
) -> Result<Vec<Arc<TableScenario>>, RunError> {
    load_seated(files, selection, |file| {
        Ok(load_table_scenarios(file, LoadOptions::default())?.scenarios)
    })
}

/// Load the n-party scenarios of every file with `load`, each file's as `selection` chooses:
/// its limit (a split or a sample is refused for an n-party file, naming it).
pub(crate) fn load_seated<T>(
    files: &[PathBuf],
    selection: &super::Selection,
    load: impl Fn(&std::path::Path) -> Result<Vec<T>, RunError>,
) -> Result<Vec<Arc<T>>, RunError> {
    let mut out = Vec::new();
    for file in files {
        let limit = selection.table_limit(&file.display().to_string())?;
        let n = limit.unwrap_or(usize::MAX);
        out.extend(load(file)?.into_iter().take(n).map(Arc::new));
    }
    Ok(out)
}

/// The table kit of a run: each named seat's player (every role must be a party of every
/// scenario), the options, the rewards (a `[rewards]` setting a table cannot honour is refused
/// here, before anything is played), the run id.
pub(crate) fn build_table_kit(
    options: &RunOptions,
    scenarios: &[Arc<TableScenario>],
    identity: &[String],
) -> Result<TableKit, RunError> {
    options
        .rewards
        .check_for_table()
        .map_err(|e| RunError::Options(e.to_string()))?;
    if !options.episode.talk.is_on() {
        return Err(RunError::Options(
            "[episode] talk = \"off\" (--talk off) is the two-party talk ablation: an n-party \
             table forwards every party's talk to all the others; leave it on for table scenarios"
                .into(),
        ));
    }
    if options.probes.beliefs {
        return Err(RunError::Options(
            "[probes] beliefs = true (--belief-probes) asks a two-party seat for the other \
             side's private values; an n-party table has no one other side: leave probes off \
             for table scenarios"
                .into(),
        ));
    }
    let http = http_client(options.concurrency.max(8))
        .map_err(|e| RunError::Options(format!("cannot build the HTTP client: {e}")))?;
    let mut seats = BTreeMap::new();
    for (role, spec) in &options.seats {
        for s in scenarios {
            s.seat_of_party(role)
                .map_err(|e| RunError::Options(format!("--seat {role}=…: {e}")))?;
        }
        let player =
            TablePlayer::from_spec(spec, &options.players, &http, &options.sampling.learner)?;
        if seats.insert(role.clone(), player).is_some() {
            return Err(RunError::Options(format!("--seat {role}=… given twice")));
        }
    }
    let table = TableOptions {
        retries: options.episode.format_retries,
        regulated: options.regulated_roles.clone(),
        format: options.episode.learner_format,
    };
    let run_id = seated_run_id(
        options,
        &format!("table|{table:?}"),
        seats.iter().map(|(role, p)| (role.as_str(), p.spec())),
        scenarios.iter().map(|s| s.id.as_str()),
        identity,
    );
    Ok(TableKit {
        run_id,
        seats,
        options: table,
        prompts: crate::replay::load_prompts(options.prompts_dir.as_deref())?,
        rewards: options.rewards.clone(),
        rewarding: super::Rewarding::new(&options.rewards, &http)
            .map_err(RunError::Options)?
            .map(Arc::new),
    })
}

/// The id of a run of n-party episodes (tables, markets): `head` (the rulebook's name and its
/// options), each named seat's `role=spec`, the scenario ids, the `identity` words (what a
/// prefix run or a branch continues), and the rewards where they are not the built-in ones (so
/// a run without `[rewards]` keeps the id it always had), mixed with the seed and the group
/// size.
pub(crate) fn seated_run_id<'a>(
    options: &RunOptions,
    head: &str,
    seats: impl Iterator<Item = (&'a str, &'a str)>,
    scenario_ids: impl Iterator<Item = &'a str>,
    identity: &[String],
) -> String {
    let mut text = head.to_string();
    for (role, spec) in seats {
        text.push_str(&format!("|{role}={spec}"));
    }
    for id in scenario_ids {
        text.push('|');
        text.push_str(id);
    }
    for word in identity {
        text.push('|');
        text.push_str(word);
    }
    if options.rewards != RewardConfig::default() {
        text.push_str("|rewards=");
        text.push_str(&options.rewards.identity(None));
    }
    format!(
        "run-{:016x}",
        mix_text(vec![options.seed, u64::from(options.group_size)], &text)
    )
}

/// Play one table to its end with in-process players: the one loop over its schedule. A
/// player that cannot answer (after its retries) ends the table as `error`.
pub(crate) async fn play_table(
    kit: &TableKit,
    planned: &PlannedTable,
) -> Result<TableRecord, RunError> {
    let scenario = planned.scenario.clone();
    let (setup, options) = table_setup(kit, planned)?;
    let mut episode = TableEpisode::with_prompts(scenario.clone(), setup, kit.prompts.clone())
        .map_err(|e| RunError::Options(format!("scenario {}: {e}", scenario.id)))?;
    let players = scenario.parties.iter().map(|p| kit.player(&p.role));
    let mut seats = RunSeats::new(players.collect(), planned.seeds);
    if let Some(logged) = &planned.prefix {
        feed_prefix(
            &*logged.record,
            logged.turns,
            &mut episode,
            &mut seats,
            |e| e.outcome().map(|o| o.kind),
        )?;
    }
    drive(&mut episode, &mut seats)
        .await
        .map_err(|e| RunError::Options(format!("scenario {}: {e}", scenario.id)))?;
    let RunSeats {
        players,
        costs,
        prompt_lens,
        ..
    } = seats;
    let seat_players: Vec<TablePlayerInfo> = players
        .iter()
        .map(|p| TablePlayerInfo {
            player: p.spec().to_string(),
            model: p.model(),
        })
        .collect();
    let mut record = TableRecord::of(
        &kit.run_id,
        planned.seeds,
        &episode,
        &options,
        &seat_players,
        &costs,
    );
    record.set_rewards(&planned.scenario, &kit.rewards);
    planned.name(&mut record);
    if let Some(rewarding) = &kit.rewarding {
        let views: Vec<&[crate::game::Message]> = (0..scenario.parties.len())
            .map(|seat| episode.view(seat))
            .collect();
        rewarding
            .apply_table(&mut record, &scenario, &views, &prompt_lens)
            .await;
    }
    Ok(record)
}

/// The players of an n-party episode a run plays (a table, a market), every seat in process,
/// and what each turn cost: the one [`Players`] of both rulebooks' runs.
pub(super) struct RunSeats<S> {
    pub(super) players: Vec<SeatPlayer<S>>,
    seeds: EpisodeSeed,
    /// Per turn, in order: what its call cost.
    pub(super) costs: Vec<TurnCost>,
    /// Per turn: how long the moving seat's view was when its call was made (what a
    /// per-response reward model is sent).
    pub(super) prompt_lens: Vec<usize>,
}

impl<S> RunSeats<S> {
    pub(super) fn new(players: Vec<SeatPlayer<S>>, seeds: EpisodeSeed) -> RunSeats<S> {
        RunSeats {
            players,
            seeds,
            costs: Vec::new(),
            prompt_lens: Vec::new(),
        }
    }
}

impl<S> Players<S::Episode> for RunSeats<S>
where
    S: ScriptedSeat,
    S::Episode: Seated + ToMove<Seat = usize>,
{
    type Answer = Played;
    type Failure = PlayerError;
    type Error = TableError;

    /// Every seat of a run's table or market is played in process.
    fn in_process(&self, _: usize) -> bool {
        true
    }

    fn ask<'a>(
        &'a self,
        episode: &'a S::Episode,
        seat: usize,
    ) -> impl Future<Output = Result<Played, PlayerError>> + 'a {
        self.players[seat].play(episode, seat, self.seeds.table_sampling_seed(seat))
    }

    fn take(
        &mut self,
        episode: &mut S::Episode,
        seat: usize,
        played: Played,
    ) -> Result<(), TableError> {
        self.costs.push(TurnCost {
            latency_ms: played.latency_ms,
            call: played.call,
            retries: played.retries,
            planning: played.planning,
        });
        self.prompt_lens.push(episode.view(seat).len());
        Seated::step(episode, seat, played.completion).map(drop)
    }

    fn fail(
        &mut self,
        episode: &mut S::Episode,
        seat: usize,
        error: PlayerError,
    ) -> Result<(), TableError> {
        Seated::fail(episode, seat, ErrorCause::Backend, error.to_string());
        Ok(())
    }
}

/// The setup of a planned table and the options it is played under: its schedule drawn from
/// its seed, its prompts rendered; a continuation's, its logged record's setup (the same seed,
/// schedule and prompts, checked when it was planned) under the prefix's options.
fn table_setup(
    kit: &TableKit,
    planned: &PlannedTable,
) -> Result<(TableSetup, TableOptions), RunError> {
    if let Some(logged) = &planned.prefix {
        let options = logged.setup.clone();
        let setup = TableSetup {
            retries: options.retries,
            ..logged.record.setup.clone()
        };
        return Ok((setup, options));
    }
    let setup = TableSetup::with_prompts(
        &planned.scenario,
        &kit.options,
        planned.seeds.table_seed(),
        &kit.prompts,
    )
    .map_err(|e| RunError::Options(format!("scenario {}: {e}", planned.scenario.id)))?;
    Ok((setup, kit.options.clone()))
}

/// [`play_table`] with a panic caught ([`super::driver::caught`]): the table then ends as an
/// `error` record saying so.
pub(crate) async fn play_table_caught(
    kit: Arc<TableKit>,
    planned: PlannedTable,
) -> Result<TableFinished, RunError> {
    super::driver::caught(
        play_table(&kit, &planned),
        |message| internal_error_record(&kit, &planned, message),
        |message| RunError::Options(format!("internal error (a bug in dealgym): {message}")),
    )
    .await
}

/// The record of `planned` ended at its start by an internal error: see [`play_table_caught`].
fn internal_error_record(
    kit: &TableKit,
    planned: &PlannedTable,
    message: &str,
) -> Result<TableRecord, RunError> {
    let (setup, options) = table_setup(kit, planned)?;
    let mut episode =
        TableEpisode::with_prompts(planned.scenario.clone(), setup, kit.prompts.clone())
            .map_err(|e| RunError::Options(e.to_string()))?;
    let seat = episode.to_move().unwrap_or(0);
    episode.fail(
        seat,
        ErrorCause::Internal,
        format!("{}: {message}", super::INTERNAL_ERROR),
    );
    let mut record = TableRecord::of(&kit.run_id, planned.seeds, &episode, &options, &[], &[]);
    record.outcome.outcome.by = None;
    record.set_rewards(&planned.scenario, &kit.rewards);
    planned.name(&mut record);
    Ok(record)
}

/// Run every table of the plan, writing each record as it ends: the tables of the scenarios,
/// or, with `--prefixes` over table records, the continuations of their logged prefixes.
pub async fn run_tables<'s>(
    options: &RunOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<TableRunSummary, RunError> {
    let started = std::time::Instant::now();
    if options.learner_given() {
        return Err(RunError::Options(
            "a table game seats its players by role: give --seat ROLE=SPEC (unnamed roles play rule:deliberation), not --learner/--opponent".into(),
        ));
    }
    let (kit, planned, prefixes) = match &options.prefixes {
        None => {
            let scenarios = load_tables(&options.scenarios, &options.selection())?;
            options.check_plan_size(scenarios.len(), "scenarios", 1)?;
            let kit = build_table_kit(options, &scenarios, &[])?;
            let planned: Vec<PlannedTable> = scenarios
                .iter()
                .enumerate()
                .flat_map(|(g, scenario)| {
                    (0..u64::from(options.group_size)).map(move |m| PlannedTable {
                        scenario: scenario.clone(),
                        seeds: EpisodeSeed {
                            run: options.seed,
                            group: g as u64,
                            member: m,
                        },
                        prefix: None,
                    })
                })
                .collect();
            (kit, planned, None)
        }
        Some(prefixes) => {
            let (plan, scenarios) = plan_table_prefixes(prefixes, options)?;
            let mut words = vec!["prefixes".to_string()];
            words.extend(plan.identity);
            let kit = build_table_kit(options, &scenarios, &words)?;
            (kit, plan.planned, Some(plan.report))
        }
    };
    let mut summary = play_tables(options, Arc::new(kit), planned, stop).await?;
    summary.prefixes = prefixes;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Plan a prefix run over table records (`run --prefixes` on a table run's log) by the one
/// planning loop ([`plan_logged`]): each source's scenario found as replay finds it, and the
/// source replayed whole under the run's templates first, so a changed scenario or template
/// is refused before anything is played. Also the distinct scenarios, for the kit.
fn plan_table_prefixes(
    prefixes: &super::PrefixOptions,
    options: &RunOptions,
) -> Result<
    (
        super::prefix::PrefixPlan<PlannedTable>,
        Vec<Arc<TableScenario>>,
    ),
    RunError,
> {
    refuse_for_tables(prefixes, &options.episode)?;
    let mut source = crate::replay::TableSource::in_dir(
        &options.scenarios,
        std::path::Path::new(crate::scenario::SCENARIO_DIR),
    )?;
    let prompts = crate::replay::load_prompts(options.prompts_dir.as_deref())?;
    let mut scenarios: Vec<Arc<TableScenario>> = Vec::new();
    let mut scenario: Option<Arc<TableScenario>> = None;
    let plan = plan_logged(
        prefixes,
        options,
        crate::record::RecordsKind::Table,
        |prefix: &Arc<LoggedPrefix<TableRecord>>, first, seeds| {
            let scenario = match (first, &scenario) {
                (false, Some(known)) => known.clone(),
                _ => {
                    let found = source.find(&prefix.record)?;
                    prefix
                        .record
                        .replay_with(found.clone(), &prompts)
                        .map_err(|e| RunError::Options(format!("--prefixes: {e}")))?;
                    if !scenarios.iter().any(|s| s.id == found.id) {
                        scenarios.push(found.clone());
                    }
                    scenario.insert(found).clone()
                }
            };
            Ok(PlannedTable {
                scenario,
                seeds,
                prefix: Some(prefix.clone()),
            })
        },
    )?;
    Ok((plan, scenarios))
}

/// Play planned tables that share `kit` — a run's, a prefix run's, a branch's — as every run
/// is played: the output opened for this run id (with `--resume`, what it holds is skipped),
/// then the one executor, writing each record as it ends and stopping as `stop` says.
pub(crate) async fn play_tables<'s>(
    options: &RunOptions,
    kit: Arc<TableKit>,
    planned: Vec<PlannedTable>,
    stop: impl Into<Stop<'s>>,
) -> Result<TableRunSummary, RunError> {
    let started = std::time::Instant::now();
    let jobs = {
        let kit = kit.clone();
        move |p| super::Job::Table(kit.clone(), p)
    };
    let done = execute_seated(
        options,
        &kit.run_id,
        planned,
        PlannedTable::episode_id,
        jobs,
        stop,
    )
    .await?;
    Ok(TableRunSummary {
        run_id: kit.run_id.clone(),
        planned: done.planned,
        skipped: done.skipped,
        written: done.written,
        stats: done
            .stats
            .tables
            .values()
            .fold(TableStats::default(), |mut all, s| {
                all.absorb(s);
                all
            }),
        stopped: done.stopped,
        prefixes: None,
        elapsed: started.elapsed(),
    })
}

/// What [`execute_seated`] did.
pub(crate) struct Executed {
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stats: super::RunStats,
    pub stopped: Option<Stopped>,
}

/// Play the planned n-party episodes of run `run_id` (tables, markets) as every run is played:
/// the output opened for this run id (with `--resume`, the episodes it holds, by `id`, are
/// skipped), then the one executor over each as `job` makes it, writing each record as it ends
/// and stopping as `stop` says.
pub(crate) async fn execute_seated<'s, P: Send + 'static>(
    options: &RunOptions,
    run_id: &str,
    planned: Vec<P>,
    id: impl Fn(&P) -> String,
    job: impl Fn(P) -> super::Job + Send + 'static,
    stop: impl Into<Stop<'s>>,
) -> Result<Executed, RunError> {
    let (mut writer, existing) = RecordWriter::open_run(&options.out, run_id, options.resume)?;
    for note in existing.notes(&options.out) {
        eprintln!("{note}");
    }
    let done = existing.episode_ids_of(run_id);
    let planned_count = planned.len();
    let todo: Vec<P> = planned
        .into_iter()
        .filter(|p| !done.contains(&id(p)))
        .collect();
    let skipped = planned_count - todo.len();
    let bar = progress_bar(options.progress, todo.len());
    let permits = Arc::new(tokio::sync::Semaphore::new(options.concurrency));
    let (stats, stopped) =
        execute(todo.into_iter().map(job), permits, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();
    Ok(Executed {
        planned: planned_count,
        skipped,
        written: writer.written(),
        stats,
        stopped,
    })
}
