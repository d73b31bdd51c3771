//! The one loop of an eval over seated games (n-party tables, `--table-role`; markets): each
//! entrant's seating is its own kit and run id, every kit plays every scenario on the same
//! seeds (`g{G}-m{M}` from the run seed: paired setups), all written to one file through the
//! one executor and `run`'s writer, so `--resume` continues the file per run id. The families
//! plan their kits and read the file back themselves; this module plays.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::EvalError;
use crate::game::EpisodeSeed;
use crate::record::RecordWriter;
use crate::run::{execute, progress_bar, Job, RunError, RunOptions, Stop, Stopped};

/// What [`play_entrants`] did.
pub(crate) struct Played {
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stopped: Option<Stopped>,
}

/// Each kit's run id to its entrant's name (`names[k]` for `run_ids[k]`), refusing two
/// entrants whose kits are one run (the same spec in the same seat).
pub(crate) fn entrant_of_run(
    run_ids: &[String],
    names: &[&str],
) -> Result<HashMap<String, String>, EvalError> {
    let mut of: HashMap<String, String> = HashMap::new();
    for (run_id, name) in run_ids.iter().zip(names) {
        if let Some(other) = of.insert(run_id.clone(), name.to_string()) {
            return Err(RunError::Options(format!(
                "--player {name} and --player {other} have the same spec: each entrant must be another player"
            ))
            .into());
        }
    }
    Ok(of)
}

/// Play every kit's episodes of `scenarios` not yet in the output (each kit by its run id,
/// `run_ids[k]`; `job(k, scenario, seeds)` makes kit k's job), through one executor.
/// Scenario by scenario, member by member, every kit in turn: an eval cut short has its
/// entrants filled evenly.
pub(crate) async fn play_entrants<'s, S>(
    run: &RunOptions,
    scenarios: &[Arc<S>],
    run_ids: &[String],
    job: impl Fn(usize, &Arc<S>, EpisodeSeed) -> Job,
    stop: impl Into<Stop<'s>>,
) -> Result<Played, EvalError> {
    let ids: HashSet<String> = run_ids.iter().cloned().collect();
    let (mut writer, existing) = RecordWriter::open_runs(&run.out, &ids, run.resume)?;
    for note in existing.notes(&run.out) {
        eprintln!("{note}");
    }
    let done: Vec<HashSet<String>> = run_ids
        .iter()
        .map(|id| existing.episode_ids_of(id))
        .collect();
    let mut planned = 0;
    let mut todo = Vec::new();
    for (g, scenario) in scenarios.iter().enumerate() {
        for m in 0..u64::from(run.group_size) {
            let seeds = EpisodeSeed {
                run: run.seed,
                group: g as u64,
                member: m,
            };
            for (k, done) in done.iter().enumerate() {
                planned += 1;
                if !done.contains(&seeds.episode_id()) {
                    todo.push(job(k, scenario, seeds));
                }
            }
        }
    }
    let skipped = planned - todo.len();
    let bar = progress_bar(run.progress, todo.len());
    let permits = Arc::new(tokio::sync::Semaphore::new(run.concurrency));
    let (_, stopped) = execute(todo, permits, &mut writer, &bar, stop).await?;
    bar.finish_and_clear();
    Ok(Played {
        planned,
        skipped,
        written: writer.written(),
        stopped,
    })
}
