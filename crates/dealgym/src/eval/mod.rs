//! `dealgym eval`: head-to-head evaluation of named players. Every player meets every
//! opponent (or, in a round-robin, every other player in both seat orders) on the same
//! scenarios with the same setups — paired seeds: a setup comes from (seed, group), whatever
//! the players — optionally with every setup also played with the seats' roles exchanged. All
//! episodes go to one record file, each pairing (and seating) its own run, so episode ids stay
//! `g{G}-m{M}` and `--resume` works per pairing. At the end the file is read back into the
//! cross-play matrix (mean ρ and deal rate per cell, per family and over all, with bootstrap
//! intervals) and a Bradley–Terry rating of every player with bootstrap intervals.
//!
//! With `--shard i/n` (or a scheduler's array index) an eval plays the groups of its shard
//! (group g to shard g mod n) for every pairing: a shard's cells are all played on the same
//! setups, and `dealgym merge` joins the shards' files.
//!
//! It may not play episodes itself: every episode goes through `run`'s one executor and
//! driver (`crate::run::execute`, [`crate::run::play`]) and `run`'s writer, with one kit per
//! pairing. Aggregates and intervals are `score`'s ([`crate::score::Aggregate`],
//! [`crate::score::Comparisons`]); this module only groups records and lays tables out.
//!
//! - `grid.rs`: the pairings, as pure data, from `--player`/`--opponent`/`--round-robin`/
//!   `--swap-seats`;
//! - `matrix.rs`: the cross-play matrix ([`CrossPlay`]), fed one record at a time;
//! - `player_figures.rs`: beside the matrix, each player with and without talk
//!   (`--talk-ablation`) and its anchoring slope next to its first-bid ratio;
//! - `tables.rs`: `EvalTally`, the matrix and ratings of any set of records, finished into
//!   [`EvalResults`], rendered as Markdown or JSON. This is the API other surfaces (e.g.
//!   `dealgym report`) use to show the same tables: `let mut t =
//!   EvalTally::spilling_under(dir); for r in records { t.add(&r)? }; let t = t.finish()?`,
//!   then `t.markdown()` (or `t.matrix_markdown()`, `t.ratings()` with `t.connections()`,
//!   `t.json()`);
//! - `table.rs`: the eval over n-party scenarios (`--table-role ROLE`): each entrant sits at
//!   ROLE in turn, the other roles scripted, through run's table driver and the one executor;
//! - `market.rs`: the eval over market scenarios: each entrant at a buyer seat and at a seller
//!   seat in turn, the other traders scripted; its figures per seat and its ratings;
//! - `seated.rs`: the one loop of the table and market evals: every entrant's kit over the same
//!   scenarios and seeds, through the one executor, into one file;
//! - `table_ratings.rs`: ratings over n-player games (table records): pairwise Bradley–Terry
//!   inside each episode, on `score`'s `Comparisons` (and the market eval's, by seat);
//! - `spill.rs`: `SpillStore`, where the ratings' observations wait: in memory up to
//!   `SPILL_AFTER`, then in partition files by key, removed on drop — the I/O half of
//!   `score::rating`'s store seam, so an eval's or a report's memory stays flat.

mod beliefs;
mod grid;
mod market;
mod matrix;
mod player_figures;
mod results;
mod seated;
mod spill;
mod table;
mod table_ratings;

use std::collections::HashSet;
use std::sync::Arc;

pub use grid::{
    pairings, parse_entrant, with_baseline, with_talk_ablation, Entrant, GridError, Pairing,
};
pub use market::{eval_markets, MarketEvalOptions, MarketEvalSummary, MARKET_EVAL_SEATS};
pub use matrix::{Cell, CrossPlay};
pub use results::EvalResults;
pub(crate) use results::EvalTally;
pub use spill::SpillError;
pub use table::{eval_tables, EntrantFigures, TableEvalOptions, TableEvalSummary};
pub(crate) use table_ratings::TableRatings;

use crate::game::PerSeat;
use crate::record::{Duplicates, OnDuplicate, ReadError, RecordFiles, RecordWriter, WriteError};
use crate::run::{
    build_kit, execute, load_all, plan, progress_bar, shard, without_done, CampaignPlan,
    ConfigError, EpisodeKit, Job, PlannedEpisode, RunError, RunOptions, RunStats, Seating, Shard,
    Stop, Stopped,
};

/// Everything an eval needs.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// What every pairing shares: scenarios, limit, output file, seed, concurrency, group
    /// size, resume, rules, rewards, personas, named players, prompts, progress. Its learner
    /// and opponent specs are replaced by each pairing's.
    pub run: RunOptions,
    pub pairings: Vec<Pairing>,
    /// What the tables do with an episode the file holds twice (`--duplicates`).
    pub on_duplicate: OnDuplicate,
}

/// An eval that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Grid(#[from] GridError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Spill(#[from] SpillError),
}

/// How an eval went.
#[derive(Debug, Clone)]
pub struct EvalSummary {
    /// Each pairing with its run id, in grid order.
    pub runs: Vec<(Pairing, String)>,
    /// Episodes of the whole grid (of its shard, with `--shard`).
    pub planned: usize,
    /// The shard played, if the plan was split.
    pub shard: Option<Shard>,
    /// Episodes already in the file when the eval started (with `--resume`).
    pub skipped: usize,
    pub written: usize,
    /// How the eval was stopped, if a signal (or the caller) stopped it.
    pub stopped: Option<Stopped>,
    /// The cut-off last line `--resume` removed from the output, if it removed one.
    pub repaired_last_line: Option<crate::record::Cut>,
    /// Episodes the file already held more than once (reported on `--resume`).
    pub duplicates: Duplicates,
    /// The matrix and ratings of every episode of the eval in the file (not only this call's).
    pub tables: EvalResults,
    /// The totals of the episodes this call played (their endings, reward issues).
    pub played: RunStats,
    pub elapsed: std::time::Duration,
    /// Which scenarios of each file every pairing played (split, sample, limit).
    pub selection: crate::run::Selection,
}

/// Play every pairing's episodes not yet in the file, through one executor (one progress bar,
/// one writer), then read the file back into the tables. Stops early, keeping every record
/// already written whole, as `stop` says (see [`crate::run::run`]).
pub async fn eval<'s>(
    options: &EvalOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<EvalSummary, EvalError> {
    let started = std::time::Instant::now();
    let run = &options.run;
    run.check()?;
    // With `--campaigns`, every pairing plays the file's campaigns (`run::campaign`).
    let (scenarios, campaigns) = match &run.campaigns {
        Some(file) => {
            let plan = CampaignPlan::read(run, file, options.pairings.len())?;
            crate::run::check_probed_scenarios(&run.probes, plan.scenarios())?;
            (Vec::new(), Some(plan))
        }
        None => {
            let scenarios = load_all(&run.scenarios, &run.selection())?;
            run.check_plan_size(
                scenarios.len() * run.episode.seatings.count(),
                run.episode.seatings.groups(),
                options.pairings.len(),
            )?;
            (scenarios, None)
        }
    };
    let campaign_words = campaigns
        .as_ref()
        .map(|c| c.identity.clone())
        .unwrap_or_default();
    let planned = plan(&scenarios, run.seed, run.group_size, run.episode.seatings);
    let planned = match &run.shard {
        Some(s) => shard(planned, s),
        None => planned,
    };
    let kits = options
        .pairings
        .iter()
        .map(|pairing| pairing_kit(run, pairing, &scenarios, &campaign_words).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    // Probes ask models: an eval whose pairings seat none would ask no one and say nothing.
    crate::run::require_model_seat(
        &run.probes,
        kits.iter().any(|k| crate::run::has_model_seat(&k.players)),
        "eval's entrants",
        options
            .pairings
            .iter()
            .flat_map(|p| [p.learner.spec.clone(), p.opponent.spec.clone()]),
    )?;
    let run_ids: HashSet<String> = kits.iter().map(|k| k.run_id.clone()).collect();
    let (mut writer, existing) = RecordWriter::open_runs(&run.out, &run_ids, run.resume)?;
    crate::run::check_resumed_probes(&run.probes, &existing, &run.out)?;
    // The tables read the whole file at the end: refuse its duplicates before playing.
    if options.on_duplicate == OnDuplicate::Refuse {
        if let Some(refusal) = existing.duplicates.refusal(&run.out) {
            return Err(RunError::Options(refusal).into());
        }
    }

    // Episode by episode, every pairing in turn: an eval cut short has its cells filled
    // evenly.
    let todo_per_kit: Vec<Vec<PlannedEpisode>> = kits
        .iter()
        .map(|kit| without_done(planned.clone(), &existing.episode_ids_of(&kit.run_id)))
        .collect();
    let mut total = planned.len() * kits.len();
    let mut todo: Vec<(usize, Job)> = Vec::new();
    for (k, episodes) in todo_per_kit.into_iter().enumerate() {
        for (order, episode) in episodes.into_iter().enumerate() {
            todo.push((order, Job::Episode(kits[k].clone(), episode)));
        }
    }
    let mut skipped = total - todo.len();
    if let Some(campaigns) = &campaigns {
        total = campaigns.deals * kits.len();
        for kit in &kits {
            let (jobs, done) =
                campaigns.jobs(kit, &existing.episode_ids_of(&kit.run_id), &run.out)?;
            skipped += done;
            todo.extend(jobs.into_iter().enumerate());
        }
    }
    todo.sort_by_key(|(order, _)| *order);
    let bar = progress_bar(run.progress, total - skipped);
    let episodes = todo.into_iter().map(|(_, job)| job);
    let permits = Arc::new(tokio::sync::Semaphore::new(run.concurrency));
    let (stats, stopped) = execute(episodes, permits, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();

    // The ratings' spill files, if the file is large enough to need them, go beside it.
    let beside = run
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tables = EvalTally::spilling_under(beside);
    for located in RecordFiles::open(std::slice::from_ref(&run.out), options.on_duplicate) {
        let record = located?.record;
        if run_ids.contains(&record.run_id) {
            tables.add(&record)?;
        }
    }
    let tables = tables.finish()?;
    Ok(EvalSummary {
        runs: options
            .pairings
            .iter()
            .cloned()
            .zip(kits.iter().map(|k| k.run_id.clone()))
            .collect(),
        planned: total,
        shard: run.shard.clone(),
        skipped,
        written: writer.written(),
        stopped,
        repaired_last_line: existing.cut.clone(),
        duplicates: existing.duplicates.clone(),
        tables,
        played: stats,
        elapsed: started.elapsed(),
        selection: run.selection(),
    })
}

/// The kit of one pairing: `run`'s kit for its two specs, its run id folding in the names and
/// seating (and the split, sample and scenario ids, as a run's does), with the names for the
/// records.
fn pairing_kit(
    run: &RunOptions,
    pairing: &Pairing,
    scenarios: &[Arc<crate::scenario::Scenario>],
    campaigns: &[String],
) -> Result<EpisodeKit, RunError> {
    let mut options = run.clone();
    options.learner = pairing.learner.spec.clone();
    options.opponent = pairing.opponent.spec.clone();
    if !pairing.talk.is_on() {
        options.episode.talk = pairing.talk;
    }
    let identity = pairing.identity();
    let chosen = run.selection().identity();
    let words = identity
        .iter()
        .chain(&chosen)
        .chain(campaigns)
        .map(String::as_str)
        .chain(scenarios.iter().map(|s| s.id.as_str()));
    let mut kit = build_kit(&options, words)?;
    crate::run::check_probed_scenarios(&run.probes, scenarios.iter().map(|s| &**s))?;
    kit.seating = Seating {
        names: PerSeat::new(
            Some(pairing.learner.name.clone()),
            Some(pairing.opponent.name.clone()),
        ),
        roles_exchanged: pairing.roles_exchanged,
    };
    Ok(kit)
}
