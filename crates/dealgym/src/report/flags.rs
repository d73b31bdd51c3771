//! The flags of `dealgym report`, declared once with their help text. `main.rs` only maps them
//! through ([`ReportFlags::options`]).

use std::path::PathBuf;

use super::ReportOptions;
use crate::limits::number_flag;
use crate::replay::DuplicatesFlag;

/// The thresholds τ of the sensitivity table when `--tau` is not given.
pub const DEFAULT_TAUS: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Transcripts kept when `--transcripts` is not given: every episode of a file with no more,
/// a sample of this many otherwise.
pub const DEFAULT_TRANSCRIPTS: usize = 200;

/// The flags of `dealgym report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportFlags {
    /// Record files (JSONL) as `dealgym run` writes them, read one record at a time; their
    /// episodes are pooled.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
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
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

impl ReportFlags {
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            files: self.files.clone(),
            out: self.out.clone(),
            transcripts: self.transcripts,
            sample_seed: self.sample_seed,
            taus: self.tau.clone(),
            quiet: self.quiet,
            on_duplicate: self.duplicates.duplicates,
        }
    }
}
