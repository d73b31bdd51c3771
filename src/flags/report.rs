//! `dealgym report`: record files, the output directory, and what the report shows.

use std::path::PathBuf;

use clap::Args;

use super::shared::{help, DuplicatesFlag, QuietFlag, RecordFiles};
use dealgym::limits::number_flag;
use dealgym::report::{ReportOptions, DEFAULT_TAUS, DEFAULT_TRANSCRIPTS};

/// The flags of `dealgym report`.
#[derive(Debug, Clone, Args)]
#[command(mut_arg(
    "files",
    help(
        "Record files (JSONL) as `dealgym run` and `dealgym eval` write them, read one record \
         at a time; their episodes are pooled. A directory stands for every *.jsonl file directly \
         in it, sorted by name. Eval files reported together make one leaderboard, ranked \
         within each group of players that met a common opponent set"
    )
))]
pub struct ReportFlags {
    #[command(flatten)]
    pub files: RecordFiles,
    /// The directory to write report.md, report.html, tables/*.csv and charts/*.svg into
    /// (created if missing; files there with the same names are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Transcripts in the HTML report: a deterministic sample of N episodes (every episode
    /// when there are no more than N); 0 for none.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TRANSCRIPTS)]
    pub transcripts: usize,
    /// The seed of the transcript sample (the same files and seed give the same sample).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub sample_seed: u64,
    /// Thresholds τ for the sensitivity table: the learner's deal rate, ρ over the deals kept
    /// and ρ per episode had every deal with learner ρ < τ been refused, comma-separated;
    /// each from 0 to 1.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_values_t = DEFAULT_TAUS,
        value_parser = number_flag(0.0, 1.0)
    )]
    pub tau: Vec<f64>,
    /// The training run the others are compared against, by the name its records carry
    /// (`training.run`, e.g. the zero-learning-rate control); without it, every pair of
    /// training runs. Only for records a trainer's adapter wrote.
    #[arg(long, value_name = "RUN")]
    pub training_control: Option<String>,
    /// Table records (n-party games): the scenario files, to check each proposal against its
    /// proposer's minimum; repeat the flag for several (default: scenarios/FAMILY.jsonl).
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    #[command(flatten)]
    pub quiet: QuietFlag,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

impl ReportFlags {
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            files: self.files.files.clone(),
            out: self.out.clone(),
            transcripts: self.transcripts,
            sample_seed: self.sample_seed,
            taus: self.tau.clone(),
            quiet: self.quiet.quiet,
            on_duplicate: self.duplicates.duplicates,
            training_control: self.training_control.clone(),
            scenarios: self.scenarios.clone(),
        }
    }
}
