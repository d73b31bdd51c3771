//! `replay --branch-from N`: continue logged episodes with new players. For each record, the
//! first N turns (attempts, in record order) are fed to run's [`Driver`] from the log
//! ([`Driver::feed_prefix`], the loop `run --prefixes` shares), under the
//! record's own setup (roles, first mover, regulation, personas, rules) and templates; then the
//! driver asks the new players for the rest ([`Driver::play_local`]). G branches of one prefix
//! are one GRPO group: they share the prefix and differ in their sampling seeds.
//!
//! Ids: the group of the branches of episode E after N turns is `E.bN`
//! ([`branch_group_id`]), its members `E.bN-m0`, `E.bN-m1`, …; each record names its parent
//! (`parent: {run_id, episode_id, prefix_turns}`). Their seeds are (`--seed`, a mix of the
//! parent's seeds and N, member), so different parents and members get different sampling
//! seeds. One output file holds branches of one run, so group ids are unique in it.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinSet;

use super::{create_out, Error, Located, Records};
use crate::digest::Digest;
use crate::game::{mix, EpisodeSeed, OutcomeKind};
use crate::record::{Duplicates, EpisodeRecord, OnDuplicate, Parent, RecordWriter};
use crate::run::ScenarioSource;
use crate::run::{build_kit, Driver, EpisodeError, EpisodeKit, PlannedEpisode, RunOptions};
use crate::scenario::Scenario;

/// What `--branch-from` does.
#[derive(Debug, Clone)]
pub struct BranchOptions {
    pub files: Vec<PathBuf>,
    /// Only this episode id.
    pub episode: Option<String>,
    /// Scenario files; empty: `scenarios/{family}.jsonl` of each record's family.
    pub scenarios: Vec<PathBuf>,
    /// N: turns replayed from the log before the new players take over.
    pub prefix: usize,
    /// The new players, the output file, the seed, group size, concurrency, rewards and
    /// prompts directory, as for a run (its scenarios, limit and episode rules are not used:
    /// a branch keeps its parent's scenario and setup).
    pub run: RunOptions,
    /// What to do with an episode recorded twice (`--duplicates`).
    pub on_duplicate: OnDuplicate,
}

/// What `--branch-from` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSummary {
    pub run_id: String,
    /// Episodes branched.
    pub parents: usize,
    pub written: usize,
    /// Records skipped as duplicates (`--duplicates skip`).
    pub duplicates: Duplicates,
}

/// The group id of the branches of `parent_episode` after `prefix` turns.
pub fn branch_group_id(parent_episode: &str, prefix: usize) -> String {
    format!("{parent_episode}.b{prefix}")
}

/// Branch every record of `options.files` (or `options.episode`), writing each branch as it
/// ends. A record with fewer than N turns, or whose first N turns already end it, stops the
/// command with an error naming the episode.
pub async fn branch(options: &BranchOptions) -> Result<BranchSummary, Error> {
    let run = &options.run;
    run.check()?;
    let prefix_word = format!("branch-from:{}", options.prefix);
    let kit = Arc::new(build_kit(run, ["branch", prefix_word.as_str()])?);
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let mut writer = create_out(&run.out)?;
    let mut tasks: JoinSet<Result<EpisodeRecord, Error>> = JoinSet::new();
    let mut first_run: Option<String> = None;
    let mut parents = 0;
    let mut records = Records::open(
        &options.files,
        options.episode.as_deref(),
        options.on_duplicate,
    );
    for located in &mut records {
        let located = located?;
        let record = &located.record;
        match &first_run {
            None => first_run = Some(record.run_id.clone()),
            Some(first) if *first != record.run_id => {
                return Err(Error::MixedRuns {
                    at: located.at(),
                    first: first.clone(),
                    found: record.run_id.clone(),
                })
            }
            Some(_) => {}
        }
        check_prefix(&located, options.prefix)?;
        let scenario = scenarios.checked(record)?;
        record.check_replay_inputs(&scenario, &kit.prompts)?;
        let scenario_digest = record.scenario_digest.unwrap_or_else(|| scenario.digest());
        let parent = Arc::new(located);
        for member in 0..run.group_size {
            while tasks.len() >= run.concurrency {
                write_next(&mut tasks, &mut writer).await?;
            }
            tasks.spawn(branch_one(
                kit.clone(),
                parent.clone(),
                scenario.clone(),
                scenario_digest,
                options.prefix,
                run.seed,
                member,
            ));
        }
        parents += 1;
    }
    while !tasks.is_empty() {
        write_next(&mut tasks, &mut writer).await?;
    }
    if let (Some(id), 0) = (&options.episode, parents) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: super::list_files(&options.files),
        });
    }
    Ok(BranchSummary {
        run_id: kit.run_id.clone(),
        parents,
        written: writer.written(),
        duplicates: records.duplicates().clone(),
    })
}

/// The prefix must exist and leave the episode open: at most the record's turns, and all of
/// them only when the episode ended on a backend error (the one ending that is no turn).
fn check_prefix(located: &Located, prefix: usize) -> Result<(), Error> {
    let record = &located.record;
    let turns = record.turns.len();
    if prefix > turns {
        return Err(Error::PrefixTooLong {
            episode: record.episode_id.clone(),
            at: located.at(),
            turns,
            prefix,
        });
    }
    if prefix == turns && record.kind() != OutcomeKind::Error {
        return Err(Error::PrefixEnds {
            episode: record.episode_id.clone(),
            at: located.at(),
            prefix,
            kind: record.kind().name(),
        });
    }
    Ok(())
}

async fn write_next(
    tasks: &mut JoinSet<Result<EpisodeRecord, Error>>,
    writer: &mut RecordWriter,
) -> Result<(), Error> {
    match tasks.join_next().await {
        Some(Ok(record)) => {
            writer.write(&record?)?;
            Ok(())
        }
        Some(Err(e)) => Err(Error::Options(format!("a branch task failed: {e}"))),
        None => Ok(()),
    }
}

/// One branch: the parent's first `prefix` completions fed through the driver, then the kit's
/// players to the end.
async fn branch_one(
    kit: Arc<EpisodeKit>,
    parent: Arc<Located>,
    scenario: Arc<Scenario>,
    scenario_digest: Digest,
    prefix: usize,
    seed: u64,
    member: u32,
) -> Result<EpisodeRecord, Error> {
    let record = &parent.record;
    let group = branch_group_id(&record.episode_id, prefix);
    let seeds = EpisodeSeed {
        run: seed,
        group: mix(&[
            record.seeds.run,
            record.seeds.group,
            record.seeds.member,
            prefix as u64,
        ]),
        member: u64::from(member),
    };
    let planned = PlannedEpisode {
        scenario,
        scenario_digest,
        seeds,
        prefix: None,
    };
    let mut driver = Driver::with_setup(kit, planned, record.setup.to_continue(prefix, None))?;
    match driver.feed_prefix(record, prefix) {
        Err(EpisodeError::PrefixEnds { prefix, kind, .. }) => {
            return Err(Error::PrefixEnds {
                episode: record.episode_id.clone(),
                at: parent.at(),
                prefix,
                kind,
            })
        }
        fed => fed?,
    }
    if let Some(seat) = driver.play_local().await? {
        return Err(EpisodeError::Unfed {
            scenario: record.scenario_id.clone(),
            seat,
        }
        .into());
    }
    let mut branched = driver.into_rewarded_record().await?;
    branched.episode_id = format!("{group}-m{member}");
    branched.group_id = group;
    branched.parent = Some(Parent {
        run_id: record.run_id.clone(),
        episode_id: record.episode_id.clone(),
        prefix_turns: prefix,
    });
    Ok(branched)
}
