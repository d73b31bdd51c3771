//! The async runner behind `dealgym run`: seeds, bounded concurrency, GRPO groups, the JSONL
//! log written as episodes end, `--resume`, `--shard`, stopping on signals, the progress bar
//! and the summary.
//!
//! Episode `g{G}-m{M}` plays scenario G (in file order, after `--scenario-split`, `--sample`
//! and `--limit`: [`select`]) as member M of its
//! group. Its setup comes from (seed, G) and its sampling seeds from (seed, G, M, seat), so any
//! subset of episodes can be rerun or resumed and gives the same records.

mod campaign;
mod config;
mod driver;
mod execute;
mod options;
mod plan;
mod prefix;
mod probes;
pub(crate) use probes::{
    check_probed_scenarios, check_probes, check_resumed_probes, has_model_seat, require_model_seat,
};
mod market;
pub mod preset;
mod report;
mod rewarding;
mod scenarios;
pub mod select;
mod stop;
mod summary;
mod table;

use std::path::PathBuf;
use std::sync::Arc;

use crate::agents::{PersonaConfig, Player};
use crate::game::{mix_text, EpisodeConfig, PerSeat};
use crate::llm::http_client;
use crate::record::RecordWriter;
use crate::reward::RewardConfig;
use crate::scenario::{load_scenarios, LoadOptions, Scenario};

pub(crate) use campaign::CampaignPlan;
pub use config::{presets_doc, ConfigError, FileConfig, ProbesConfig};
pub(crate) use driver::{panic_message, play_caught, Driver, Finished};
pub use driver::{play, EpisodeError, EpisodeKit, SeatPlayer, Seating, INTERNAL_ERROR};
pub(crate) use execute::{
    execute, progress_bar, styled_bar, AbortOnDrop, Done, Job, Permits, Sink,
};
pub use execute::{written_line, Stopped};
pub(crate) use market::bootstrap_key as market_bootstrap_key;
pub(crate) use market::{build_market_kit, load_markets, PlannedMarket};
pub use market::{run_markets, MarketRunSummary, MarketStats, DEFAULT_TRADER};
pub use options::{RunError, RunOptions};
pub use plan::{plan, PlannedEpisode, Shard};
pub(crate) use plan::{planned_ids, shard, without_done};
pub(crate) use prefix::plan_prefixes;
pub use prefix::{
    branch_group_id, Cut, Logged, LoggedPrefix, PrefixOptions, PrefixReport, SkipReason, Skipped,
    Targets,
};
pub use report::{RunSummary, SeatReplicas};
pub(crate) use rewarding::rubric;
pub use rewarding::Rewarding;
pub(crate) use scenarios::{list_files, missing, ScenarioSource};
pub use scenarios::{FindError, Unavailable};
pub use select::{Sample, SelectConfig, SelectError, Selection};
pub use stop::{grace_period, Stop, StopSignal, StopState};
pub use summary::RunStats;
pub(crate) use summary::TABLE_WIDTH;
pub(crate) use table::{build_table_kit, load_tables, play_tables, PlannedTable};
pub use table::{parse_seats, run_tables, TableRunSummary, TableStats};

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
    let mut text = kit_identity(
        [&players.learner.identity(), &players.opponent.identity()],
        &options.episode,
        &options.rewards,
        &options.personas,
    );
    for word in identity {
        text.push('|');
        text.push_str(word);
    }
    format!("run-{:016x}", mix_text(words, &text))
}

/// What makes episodes of two kits comparable, as the text a run id digests (`run`'s, with its
/// seed, group size and scenarios; `serve`'s alone): the two players' identities, the rules,
/// the rewards, and the personas when set (folded in only then, so a run without personas
/// keeps the id it had before they counted).
pub(crate) fn kit_identity(
    players: [&str; 2],
    episode: &EpisodeConfig,
    rewards: &RewardConfig,
    personas: &PersonaConfig,
) -> String {
    let mut text = format!(
        "{}|{}|{episode:?}|{}",
        players[0],
        players[1],
        rewards.identity(rubric(rewards).as_deref())
    );
    if *personas != PersonaConfig::default() {
        text.push_str(&format!("|personas={personas:?}"));
    }
    text
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

/// How many groups a run of `files` under `selection` plans: its table scenarios for a table
/// run ([`RunOptions::is_table_run`]), else its two-party scenarios times `seatings`. What
/// `merge --scenarios` checks a run's shards against.
pub fn planned_groups(
    files: &[PathBuf],
    selection: &Selection,
    seatings: usize,
) -> Result<usize, RunError> {
    if is_table_run(files) {
        return Ok(load_tables(files, selection)?.len());
    }
    Ok(load_all(files, selection)?.len() * seatings)
}

/// Whether a run of `files` plays markets: its first file holds them.
pub fn is_market_run(files: &[PathBuf]) -> bool {
    files
        .first()
        .is_some_and(|f| crate::scenario::is_market_file(f))
}

/// Whether a run of `files` plays n-party tables: its first file holds them.
pub(crate) fn is_table_run(files: &[PathBuf]) -> bool {
    files
        .first()
        .is_some_and(|f| crate::scenario::is_table_file(f))
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
    if let Some(file) = campaign::campaign_file(options) {
        return run_campaigns(options, file, stop, started).await;
    }
    let selection = options.selection();
    let (kit, planned, prefixes) = match &options.prefixes {
        None => {
            let scenarios = load_all(&options.scenarios, &selection)?;
            let seatings = options.episode.seatings;
            options.check_plan_size(scenarios.len() * seatings.count(), seatings.groups(), 1)?;
            let chosen = selection.identity();
            let words = chosen
                .iter()
                .map(String::as_str)
                .chain(scenarios.iter().map(|s| s.id.as_str()));
            let kit = build_kit(options, words)?;
            probes::check_probes(
                &options.probes,
                &kit.players,
                scenarios.iter().map(|s| &**s),
            )?;
            (
                kit,
                plan(&scenarios, options.seed, options.group_size, seatings),
                None,
            )
        }
        Some(prefixes) => {
            let plan = plan_prefixes(prefixes, options)?;
            let words = std::iter::once("prefixes").chain(plan.identity.iter().map(String::as_str));
            let kit = build_kit(options, words)?;
            probes::check_probes(
                &options.probes,
                &kit.players,
                plan.planned.iter().map(|p| &*p.scenario),
            )?;
            (kit, plan.planned, Some(plan.report))
        }
    };
    let mut summary = play_plan(options, Arc::new(kit), planned, stop).await?;
    summary.prefixes = prefixes;
    summary.selection = selection;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Play the campaigns of `file` (`run --campaigns`): each member's campaign one job of the
/// one executor, its deals written as they end (`campaign.rs`).
async fn run_campaigns<'s>(
    options: &RunOptions,
    file: &std::path::Path,
    stop: impl Into<Stop<'s>>,
    started: std::time::Instant,
) -> Result<RunSummary, RunError> {
    let plan = campaign::CampaignPlan::read(options, file, 1)?;
    let kit = build_kit(options, plan.identity.iter().map(String::as_str))?;
    probes::check_probes(&options.probes, &kit.players, plan.scenarios())?;
    let kit = Arc::new(kit);
    let (mut writer, existing) = RecordWriter::open_run(&options.out, &kit.run_id, options.resume)?;
    probes::check_resumed_probes(&kit.probes, &existing, &options.out)?;
    let (todo, skipped) = plan.jobs(&kit, &existing.episode_ids_of(&kit.run_id), &options.out)?;
    let bar = progress_bar(options.progress, plan.deals - skipped);
    let permits = Arc::new(tokio::sync::Semaphore::new(options.concurrency));
    let played = execute(todo, permits, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();
    let planned = Planned {
        planned: plan.deals,
        whole_plan: plan.whole_plan,
        skipped,
    };
    Ok(summary_of(
        &kit, options, planned, &writer, played, &existing, started,
    ))
}

/// Play a plan whose episodes share `kit` — a run's, a prefix run's, a branch's — as every
/// run is played: the output opened for this run id (refused if another run's; with
/// `--resume`, what it holds is skipped and a cut-off last line repaired), the shard taken,
/// then the one executor ([`execute`]) with its progress bar, writing each record as it ends
/// and stopping as `stop` says.
pub(crate) async fn play_plan<'s>(
    options: &RunOptions,
    kit: Arc<EpisodeKit>,
    planned: Vec<PlannedEpisode>,
    stop: impl Into<Stop<'s>>,
) -> Result<RunSummary, RunError> {
    let started = std::time::Instant::now();
    let (mut writer, existing) = RecordWriter::open_run(&options.out, &kit.run_id, options.resume)?;
    probes::check_resumed_probes(&kit.probes, &existing, &options.out)?;
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
    let permits = Arc::new(tokio::sync::Semaphore::new(options.concurrency));
    let played = execute(episodes, permits, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();
    let planned = Planned {
        planned: planned_count,
        whole_plan,
        skipped,
    };
    Ok(summary_of(
        &kit, options, planned, &writer, played, &existing, started,
    ))
}

/// How many episodes a played plan had: in this shard, in the whole plan, and already written.
struct Planned {
    planned: usize,
    whole_plan: usize,
    skipped: usize,
}

/// The summary of a plan the executor played, episodes or campaigns alike.
fn summary_of(
    kit: &EpisodeKit,
    options: &RunOptions,
    planned: Planned,
    writer: &RecordWriter,
    (stats, stopped): (RunStats, Option<Stopped>),
    existing: &crate::record::Existing,
    started: std::time::Instant,
) -> RunSummary {
    RunSummary {
        run_id: kit.run_id.clone(),
        players: kit.players.map(|_, p| p.spec().to_string()),
        planned: planned.planned,
        whole_plan: planned.whole_plan,
        shard: options.shard.clone(),
        skipped: planned.skipped,
        written: writer.written(),
        stats,
        interrupted: stopped.is_some(),
        stopped,
        repaired_last_line: existing.cut.clone(),
        duplicates: existing.duplicates.clone(),
        elapsed: started.elapsed(),
        replicas: SeatReplicas::of(kit),
        prefixes: None,
        selection: Selection::default(),
    }
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
    players
        .learner
        .seats_two_party(options.episode.learner_format)?;
    players
        .opponent
        .seats_two_party(options.episode.opponent_format)?;
    let prompts = crate::replay::load_prompts(options.prompts_dir.as_deref())?;
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
        text_limits: None,
        probes: options.probes.clone(),
    })
}

/// The exit status of `run` and `eval` when an episode panicked (an internal error: a bug),
/// after every other episode was played and written: sysexits' `EX_SOFTWARE`. A stop by a
/// signal exits with the signal's status instead ([`StopSignal::exit_code`]).
pub const INTERNAL_ERROR_EXIT: i32 = 70;
