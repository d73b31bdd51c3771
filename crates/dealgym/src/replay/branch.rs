//! `replay --branch-from N`: continue logged episodes with new players. For each record, the
//! first N turns (attempts, in record order) are fed to run's [`Driver`](crate::run::Driver)
//! from the log, under the record's own setup (roles, first mover, regulation, personas,
//! rules) and templates; then the new players play the rest. G branches of one prefix are one
//! GRPO group: they share the prefix and differ in their sampling seeds.
//!
//! A branch is a plan made from logged prefixes ([`LoggedPrefix::branch`]), played as every
//! run is ([`play_plan`]): by the one executor, with `--resume`, stopping on signals and a
//! progress bar. `run --prefixes` plans its prefixes the same way; what sets a branch apart is
//! that it keeps the record's seats and rules and names its episodes after their parent.
//!
//! Ids: the group of the branches of episode E after N turns is `E.bN`
//! ([`branch_group_id`]), its members `E.bN-m0`, `E.bN-m1`, …; each record names its parent
//! (`parent: {run_id, episode_id, prefix_turns}`). Their seeds are (`--seed`, a mix of the
//! parent's seeds and N, member), so different parents and members get different sampling
//! seeds. One output file holds branches of one run, so group ids are unique in it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Error, Located, Records, TableSource};
use crate::game::OutcomeKind;
use crate::record::{Duplicates, OnDuplicate, RecordFiles, RecordsKind, TableRecord};
pub use crate::run::branch_group_id;
use crate::run::{
    build_kit, build_table_kit, play_plan, play_tables, Logged, LoggedPrefix, PlannedEpisode,
    PlannedTable, RunOptions, RunSummary, ScenarioSource, Stop, TableRunSummary,
};
use crate::scenario::TableScenario;

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
#[derive(Debug, Clone)]
pub struct BranchSummary {
    /// Episodes branched.
    pub parents: usize,
    /// Records of the input skipped as duplicates (`--duplicates skip`).
    pub duplicates: Duplicates,
    /// Records of the other kind (table or two-party) the files hold, passed over.
    pub passed_over: crate::record::PassedOver,
    /// The run that played the branches: its id, planned, written, already there
    /// (`--resume`), stopped, …
    pub run: RunSummary,
}

/// Branch every record of `options.files` (or `options.episode`), writing each branch as it
/// ends, stopping as `stop` says. A record with fewer than N turns, or whose first N turns
/// already end it, stops the command with an error naming the episode.
pub async fn branch<'s>(
    options: &BranchOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<BranchSummary, Error> {
    super::table::two_party_only(&options.files, "--branch-from")?;
    let run = &options.run;
    if run.learner.trim().is_empty() || run.opponent.trim().is_empty() {
        return Err(Error::Options(
            "--branch-from on two-party records needs --learner SPEC and --opponent SPEC".into(),
        ));
    }
    if !run.seats.is_empty() {
        return Err(Error::Options(
            "--seat is for table records; two-party branches take --learner and --opponent".into(),
        ));
    }
    run.check()?;
    crate::record::refuse_output_among_inputs(&run.out, &options.files)?;
    let prefix_word = format!("branch-from:{}", options.prefix);
    let kit = Arc::new(build_kit(run, ["branch", prefix_word.as_str()])?);
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let mut first_run: Option<String> = None;
    let mut parents = 0;
    let mut planned = Vec::new();
    let mut records = Records::open(
        &options.files,
        options.episode.as_deref(),
        options.on_duplicate,
    );
    for located in &mut records {
        let located = located?;
        let record = &located.record;
        one_run(&mut first_run, &record.run_id, || located.at())?;
        check_prefix(&located, options.prefix)?;
        let scenario = scenarios.checked(record)?;
        record.check_replay_inputs(&scenario, &kit.prompts)?;
        let scenario_digest = record.scenario_digest.unwrap_or_else(|| scenario.digest());
        run.check_plan_size(parents + 1, "episodes to branch", 1)?;
        let prefix = Arc::new(LoggedPrefix::branch(located.record, options.prefix));
        planned.extend((0..run.group_size).map(|member| PlannedEpisode {
            scenario: scenario.clone(),
            scenario_digest,
            seeds: prefix.branch_seeds(run.seed, member),
            prefix: Some(prefix.clone()),
            tag: None,
            standing: None,
            learner_role: None,
        }));
        parents += 1;
    }
    if let (Some(id), 0) = (&options.episode, parents) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: super::list_files(&options.files),
        });
    }
    // `[probes]` in the branches' config: checked as a run checks them (a model seat to ask,
    // every scenario's family one that can be probed).
    crate::run::check_probes(
        &run.probes,
        &kit.players,
        planned.iter().map(|p| &*p.scenario),
    )?;
    Ok(BranchSummary {
        parents,
        duplicates: records.duplicates().clone(),
        passed_over: records.passed_over(),
        run: play_plan(run, kit, planned, stop).await?,
    })
}

/// The prefix must exist and leave the episode open: at most the record's turns, and all of
/// them only when the episode ended on a backend error (the one ending that is no turn). For
/// a record of either kind.
fn check_prefix<R: Logged>(located: &Located<R>, prefix: usize) -> Result<(), Error> {
    let record = &located.record;
    let turns = record.turn_count();
    if prefix > turns {
        return Err(Error::PrefixTooLong {
            episode: record.episode_id().to_string(),
            at: located.at(),
            turns,
            prefix,
        });
    }
    if prefix == turns && record.ending() != OutcomeKind::Error {
        return Err(Error::PrefixEnds {
            episode: record.episode_id().to_string(),
            at: located.at(),
            prefix,
            kind: record.ending().name(),
        });
    }
    Ok(())
}

/// What `--branch-from` did with table records.
#[derive(Debug)]
pub struct TableBranchSummary {
    /// Tables branched.
    pub parents: usize,
    /// The run that played the branches.
    pub run: TableRunSummary,
}

/// [`branch`] for table records: each table's first N turns replayed under its own setup
/// (schedule, options, templates checked by a replay of the whole record first), then the
/// run's `--seat ROLE=SPEC` players (unnamed roles: `rule:deliberation`) play on; the
/// branches of one table form group `E.bN`, named, seeded and checked as two-party branches
/// are ([`LoggedPrefix::branch`]).
pub async fn branch_tables<'s>(
    options: &BranchOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<TableBranchSummary, Error> {
    let run = &options.run;
    if run.learner_given() {
        return Err(Error::Options(
            "--branch-from on table records: a table seats its players by role, give --seat \
             ROLE=SPEC (unnamed roles play rule:deliberation), not --learner/--opponent"
                .into(),
        ));
    }
    run.check()?;
    crate::record::refuse_output_among_inputs(&run.out, &options.files)?;
    let mut source =
        TableSource::in_dir(&options.scenarios, Path::new(crate::scenario::SCENARIO_DIR))?;
    let prompts = super::load_prompts(run.prompts_dir.as_deref())?;
    let mut first_run: Option<String> = None;
    let mut scenarios: Vec<Arc<TableScenario>> = Vec::new();
    let mut planned = Vec::new();
    let mut parents = 0;
    let records = RecordFiles::open(&options.files, options.on_duplicate)
        .of_kind(RecordsKind::Table)
        .read_as::<TableRecord>();
    for located in records {
        let located = located?;
        let record = &located.record;
        if options
            .episode
            .as_ref()
            .is_some_and(|id| *id != record.episode_id)
        {
            continue;
        }
        one_run(&mut first_run, &record.run_id, || located.at())?;
        check_prefix(&located, options.prefix)?;
        let scenario = source.find(record)?;
        record
            .replay_with(scenario.clone(), &prompts)
            .map_err(|e| Error::Options(format!("{}: {e}", located.at())))?;
        if !scenarios.iter().any(|s| s.id == scenario.id) {
            scenarios.push(scenario.clone());
        }
        run.check_plan_size(parents + 1, "episodes to branch", 1)?;
        let prefix = Arc::new(LoggedPrefix::branch(located.record, options.prefix));
        planned.extend((0..run.group_size).map(|member| PlannedTable {
            scenario: scenario.clone(),
            seeds: prefix.branch_seeds(run.seed, member),
            prefix: Some(prefix.clone()),
        }));
        parents += 1;
    }
    if let (Some(id), 0) = (&options.episode, parents) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: super::list_files(&options.files),
        });
    }
    let prefix_word = format!("branch-from:{}", options.prefix);
    let kit = build_table_kit(run, &scenarios, &["branch".into(), prefix_word])?;
    Ok(TableBranchSummary {
        parents,
        run: play_tables(run, Arc::new(kit), planned, stop).await?,
    })
}

/// Refuse a record of another run than the first one branched (`first`, set by the first):
/// a branch run continues one run's episodes.
fn one_run(
    first: &mut Option<String>,
    run_id: &str,
    at: impl FnOnce() -> String,
) -> Result<(), Error> {
    match first {
        None => *first = Some(run_id.to_string()),
        Some(first) if *first != run_id => {
            return Err(Error::MixedRuns {
                at: at(),
                first: first.clone(),
                found: run_id.to_string(),
            })
        }
        Some(_) => {}
    }
    Ok(())
}
