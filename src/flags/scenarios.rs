//! `dealgym scenarios …`: import, check and count scenario files.

use std::path::PathBuf;

use clap::Subcommand;

use dealgym::scenario::Family;

/// `dealgym scenarios …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ScenariosCommand {
    /// Turn a family's raw dataset files into a scenario file (JSONL).
    Import {
        /// ahp, craigslist, casino, dnd or job_interview (bundle is generated: `generate`).
        family: Family,
        /// The raw files, as found in the dataset (the split is read from each file's name).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Turn LLM-Deliberation's game folders into table scenarios (the `deliberation` family):
    /// one per incentive setting the paper ran of each game.
    ImportDeliberation {
        /// The dataset's folder (holding `games_descriptions/`) or `games_descriptions` itself.
        #[arg(long, default_value = "../shared/datasets/llm-deliberation")]
        dataset: PathBuf,
        /// Where to write the scenarios.
        #[arg(long, default_value = "scenarios/deliberation.jsonl")]
        out: PathBuf,
    },
    /// Generate a family whose data set is not public, deterministically from a seed: bundle
    /// (INA's generator parameters; prints the set's statistics), hotel (the REPO paper's
    /// price-chasing calls) or market (k buyers and m sellers of one good; prints the set's
    /// statistics).
    Generate {
        /// bundle, hotel or market.
        family: GeneratedFamily,
        /// The generator's seed (default: the one the shipped file was made with).
        #[arg(long)]
        seed: Option<u64>,
        /// How many scenarios (default: as many as the shipped file holds).
        #[arg(long)]
        count: Option<usize>,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check every line of a scenario file; exits non-zero if any line is bad.
    Validate { file: PathBuf },
    /// Count the scenarios of a file per family and split.
    List { file: PathBuf },
    /// Write the example campaigns (`run --campaigns`), built from the scenario files of
    /// --dir: job offers (best offer), AmazonHistoryPrice purchases (budget), Craigslist
    /// purchases toward a quantity (quantity) and CaSiNo splits (best offer).
    Campaigns {
        /// Where the family files are (ahp.jsonl, craigslist.jsonl, casino.jsonl,
        /// job_interview.jsonl).
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
        /// Where to write the campaigns (default: DIR/campaigns.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// A family `scenarios generate` writes: a two-party family, or the markets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratedFamily {
    TwoParty(Family),
    Market,
}

impl std::str::FromStr for GeneratedFamily {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("market") {
            return Ok(GeneratedFamily::Market);
        }
        s.parse().map(GeneratedFamily::TwoParty)
    }
}
