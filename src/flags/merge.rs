//! `dealgym merge`: the shards' files, and the plan they should make up.

use std::path::PathBuf;

use clap::Args;

use super::shared::{
    help, named, scenarios_played, ConfigFlags, DuplicatesFlag, GroupSizeFlag, RecordFiles,
    ScenarioChoice,
};
use dealgym::limits::{count_flag, MAX_EPISODES};
use dealgym::merge::{Expected, MergeError, MergeOptions, PlanSize};
use dealgym::run::planned_groups;

/// The flags of `dealgym merge`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("files", named("FILES", "The shards' record files")),
    mut_arg(
        "scenarios",
        help(
            "The scenario file(s) the run played, as given to `run` (with its --limit, \
         --scenario-split, --sample and --group-size): every run id in the files must then hold \
         every planned episode. Without it (or --expect), missing episodes are not checked, \
         unless the run's preset names its own scenario files (`--preset ina`)"
        )
    ),
    mut_arg(
        "group_size",
        help(
            "The run's group size, 1 to 4,096 (default: the config's, else the largest member \
         index in the files plus one)"
        )
    ),
    mut_arg(
        "config",
        help("The run's config file, for its group size and scenario selection")
    ),
    mut_arg(
        "preset",
        help("The run's preset (`dealgym presets list`), under --config, as the run had it")
    )
)]
pub struct MergeFlags {
    /// The merged record file to write (refused if it exists, unless --force).
    pub out: PathBuf,
    #[command(flatten)]
    pub files: RecordFiles,
    /// The run's scenario files and its choice of scenarios of each, as the run had them.
    #[command(flatten)]
    pub scenarios: ScenarioChoice,
    #[command(flatten)]
    pub group_size: GroupSizeFlag,
    #[command(flatten)]
    pub config: ConfigFlags,
    /// Instead of --scenarios: the number of episodes each run planned (the first N ids of
    /// the plan; at most 10 million, as a run plans).
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "scenarios",
        value_parser = count_flag::<usize>(1, MAX_EPISODES)
    )]
    pub expect: Option<usize>,
    /// Join files whose run ids differ (different runs, or an eval's shards that did not all
    /// reach every pairing) instead of reporting it as a problem.
    #[arg(long)]
    pub allow_mixed: bool,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
    // An episode in the files twice with the same content is written once either way:
    // `refuse` reports it as a problem (exit 1), `skip` only counts it.
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

impl MergeFlags {
    /// The merge's options; with --scenarios the plan's size is its scenarios (after
    /// --scenario-split, --sample and --limit).
    pub fn options(&self) -> Result<MergeOptions, MergeError> {
        let config = self.config.resolve()?;
        let group_size = self.group_size.group_size.or(config.group_size);
        // As `run` played them: the flag's files, else (without --expect) the config's family's.
        let mut scenarios = self.scenarios.scenarios.clone();
        if self.expect.is_none() {
            scenarios = scenarios_played(&scenarios, &config.scenarios);
        }
        let size = if !scenarios.is_empty() {
            // The sample's seed does not change its size.
            let selection = self
                .scenarios
                .select
                .choice()
                .selection_over(&config.scenarios, 0)
                .map_err(MergeError::Options)?;
            let seatings = config.episode.seatings.count();
            Some(PlanSize::Groups(planned_groups(
                &scenarios, &selection, seatings,
            )?))
        } else {
            self.expect.map(PlanSize::Episodes)
        };
        let expected = size.map(|size| Expected {
            size,
            group_size: group_size.map(u64::from),
        });
        Ok(MergeOptions {
            out: self.out.clone(),
            files: self.files.files.clone(),
            expected,
            allow_mixed: self.allow_mixed,
            force: self.force,
            on_duplicate: self.duplicates.duplicates,
        })
    }
}
