//! `dealgym scenarios …`: import, check and count scenario files.

use std::path::PathBuf;

use clap::Subcommand;

use dealgym::scenario::Family;

/// `dealgym scenarios …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ScenariosCommand {
    /// Turn a family's raw dataset files into a scenario file (JSONL).
    Import {
        /// ahp, craigslist, casino, dnd or job_interview.
        family: Family,
        /// The raw files, as found in the dataset (the split is read from each file's name).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Generate a family that is built from a paper's structure rather than a public data set
    /// (`hotel`: the REPO paper's price-chasing calls), deterministic from the seed.
    Generate {
        /// hotel.
        family: Family,
        /// How many scenarios to write.
        #[arg(long, default_value_t = 600)]
        count: usize,
        /// The generator's seed: the same seed and count write the same file.
        #[arg(long, default_value_t = 26)]
        seed: u64,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check every line of a scenario file; exits non-zero if any line is bad.
    Validate { file: PathBuf },
    /// Count the scenarios of a file per family and split.
    List { file: PathBuf },
}
