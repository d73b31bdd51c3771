//! The flags of `dealgym eval`, declared here once with their help text, and turned into
//! [`EvalOptions`] (with the config file) here, so `main.rs` only maps them through.

use std::path::PathBuf;

use super::grid::{pairings, parse_entrant};
use super::{EvalError, EvalOptions};
use crate::game::FirstMover;
use crate::run::{FileConfig, RunOptions};
use crate::scenario::Role;

/// The flags of `dealgym eval`.
#[derive(Debug, Clone, clap::Args)]
pub struct EvalFlags {
    /// Scenario file(s) (JSONL); repeat the flag for several. Every pairing plays them all,
    /// with the same setups.
    #[arg(long, required = true)]
    pub scenarios: Vec<PathBuf>,
    /// At most N scenarios from each file.
    #[arg(long)]
    pub limit: Option<usize>,
    /// A player to evaluate, in the learner seat: NAME=SPEC, SPEC as `run --learner` takes it
    /// (openai:MODEL@URL, rule:NAME (boulware|tough|linear|conceder), script:FILE, or a
    /// [players.NAME] of the config). Repeat the flag for several.
    #[arg(long = "player", value_name = "NAME=SPEC", required = true)]
    pub players: Vec<String>,
    /// A fixed opponent every player meets, in the opponent seat: NAME=SPEC. Repeat the flag
    /// for several.
    #[arg(long = "opponent", value_name = "NAME=SPEC")]
    pub opponents: Vec<String>,
    /// Play every --player against every other, in both seat orders (instead of --opponent).
    #[arg(long)]
    pub round_robin: bool,
    /// Also play every setup with the seats' roles exchanged (the learner takes the other
    /// role; regulation, personas and the first-moving seat stay with the seats).
    #[arg(long)]
    pub swap_seats: bool,
    /// The JSONL file to write every episode of every pairing to.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML config: [episode] rules, [rewards], [personas], [players.NAME] endpoints.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Eval seed: the setups every pairing shares (default: the config's, else 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Episodes in flight at once, over the whole grid (default: the config's, else 64).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Episodes per scenario and pairing sharing one setup, with different sampling seeds
    /// (default: the config's, else 1).
    #[arg(long)]
    pub group_size: Option<u32>,
    /// The learner's role (buyer, seller, agent_1, agent_2, worker, recruiter; default: the
    /// family's). With --swap-seats, every setup is also played in the other role.
    #[arg(long)]
    pub learner_role: Option<Role>,
    /// Who moves first: learner, opponent or random (drawn per group; the default).
    #[arg(long)]
    pub first_mover: Option<FirstMover>,
    /// Rounds per seat before the episode is truncated.
    #[arg(long)]
    pub max_rounds: Option<u32>,
    /// Skip episodes already in --out (per pairing) and repair a cut-off last line.
    #[arg(long)]
    pub resume: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Also write the matrix and the ratings as one JSON object to this file.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
}

impl EvalFlags {
    /// The eval's options: the grid from --player/--opponent, and each flag over the config
    /// file's value over the default.
    pub fn options(&self) -> Result<EvalOptions, EvalError> {
        let players = self
            .players
            .iter()
            .map(|p| parse_entrant("--player", p))
            .collect::<Result<Vec<_>, _>>()?;
        let opponents = self
            .opponents
            .iter()
            .map(|p| parse_entrant("--opponent", p))
            .collect::<Result<Vec<_>, _>>()?;
        let pairings = pairings(&players, &opponents, self.round_robin, self.swap_seats)?;
        let file = FileConfig::load_or_default(self.config.as_deref())?;
        // The seats' specs are set per pairing; the rest is shared.
        let mut run =
            RunOptions::new(self.scenarios.clone(), "", "", self.out.clone()).with_config(file);
        run.limit = self.limit;
        run.seed = self.seed.unwrap_or(run.seed);
        run.concurrency = self.concurrency.unwrap_or(run.concurrency);
        run.group_size = self.group_size.unwrap_or(run.group_size);
        run.resume = self.resume;
        if let Some(role) = self.learner_role {
            run.episode.learner_role = Some(role);
        }
        if let Some(first) = self.first_mover {
            run.episode.first_mover = first;
        }
        if let Some(t) = self.max_rounds {
            run.episode.max_rounds = t;
        }
        run.progress = !self.quiet;
        Ok(EvalOptions { run, pairings })
    }
}
