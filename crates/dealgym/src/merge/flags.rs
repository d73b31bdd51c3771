//! The flags of `dealgym merge`, declared here once with their help text, and turned into
//! [`MergeOptions`] here, so `main.rs` only maps them through.

use std::path::PathBuf;

use super::{Expected, MergeError, MergeOptions, PlanSize};
use crate::limits::{count_flag, MAX_EPISODES, MAX_GROUP_SIZE};
use crate::replay::DuplicatesFlag;
use crate::run::{load_all, FileConfig, SelectFlags};

/// The flags of `dealgym merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeFlags {
    /// The merged record file to write (refused if it exists, unless --force).
    pub out: PathBuf,
    /// The shards' record files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The scenario file(s) the run played, as given to `run` (with its --limit,
    /// --scenario-split, --sample and --group-size): every run id in the files must then hold
    /// every planned episode. Without it (or --expect), missing episodes are not checked.
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    /// The run's choice of scenarios of each file, as the run had it.
    #[command(flatten)]
    pub select: SelectFlags,
    /// The run's group size, 1 to 4,096 (default: the config's, else the largest member index
    /// in the files plus one).
    #[arg(long, value_parser = count_flag::<u32>(1, MAX_GROUP_SIZE))]
    pub group_size: Option<u32>,
    /// The run's config file, for its group size and scenario selection.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The run's preset (`dealgym presets list`), under --config, as the run had it.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
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
        let config = FileConfig::resolve(self.config.as_deref(), self.preset.as_deref())?;
        let group_size = self.group_size.or(config.group_size);
        let size = if !self.scenarios.is_empty() {
            // The sample's seed does not change its size.
            let selection = self
                .select
                .selection(&config.scenarios, 0)
                .map_err(MergeError::Options)?;
            Some(PlanSize::Groups(
                load_all(&self.scenarios, &selection)?.len(),
            ))
        } else {
            self.expect.map(PlanSize::Episodes)
        };
        let expected = size.map(|size| Expected {
            size,
            group_size: group_size.map(u64::from),
        });
        Ok(MergeOptions {
            out: self.out.clone(),
            files: self.files.clone(),
            expected,
            allow_mixed: self.allow_mixed,
            force: self.force,
            on_duplicate: self.duplicates.duplicates,
        })
    }
}
