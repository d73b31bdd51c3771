//! `dealgym eval`: the grid of players and opponents, over a plan ([`PlanFlags`]).

use std::path::PathBuf;

use clap::Args;

use super::shared::{CampaignsFlag, DuplicatesFlag, PlanFlags};
use dealgym::eval::{
    pairings, parse_entrant, with_baseline, with_talk_ablation, EvalError, EvalOptions,
    MarketEvalOptions, TableEvalOptions,
};

/// The flags of `dealgym eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalFlags {
    /// A player to evaluate, in the learner seat: NAME=SPEC, SPEC as `run --learner` takes it
    /// (openai:MODEL@URL, rule:NAME (boulware|tough|linear|conceder|ina|ina-code|fixed-concession), script:FILE,
    /// narrate:DECIDER+MODEL, or a [players.NAME] of the config). Repeat the flag for several.
    #[arg(long = "player", value_name = "NAME=SPEC", required = true)]
    pub players: Vec<String>,
    /// A fixed opponent every player meets, in the opponent seat: NAME=SPEC. Repeat the flag
    /// for several. Over markets (scenarios/market.jsonl): once, the spec every other trader
    /// plays (rule:zic where not given).
    #[arg(long = "opponent", value_name = "NAME=SPEC")]
    pub opponents: Vec<String>,
    /// Play every --player against every other, in both seat orders (instead of --opponent).
    #[arg(long)]
    pub round_robin: bool,
    /// Also play every setup with the seats' roles exchanged (the learner takes the other
    /// role; regulation, personas and the first-moving seat stay with the seats).
    #[arg(long)]
    pub swap_seats: bool,
    /// Leave out the baseline row: without it, every two-party eval also plays
    /// baseline=rule:fixed-concession (linear concession, an empty Talk) as one more --player,
    /// so each player's figures have a floor to beat on the same setups.
    #[arg(long)]
    pub no_baseline: bool,
    /// The talk ablation: also play every pairing with talk off (each move forwarded as its
    /// action and terms alone, for both seats), its player named `NAME (no talk)`, on the same
    /// setups; the tables then set each player's figures with and without talk side by side,
    /// with the difference and its 95% interval.
    #[arg(long)]
    pub talk_ablation: bool,
    /// The JSONL file to write every episode of every pairing to.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub plan: PlanFlags,
    #[command(flatten)]
    pub campaigns: CampaignsFlag,
    /// n-party scenarios (scenarios/deliberation.jsonl): every --player sits at this role in
    /// turn, the other roles playing rule:deliberation; prints each entrant's figures and the
    /// pairwise Bradley–Terry ratings inside each episode (no --opponent, --round-robin or
    /// --swap-seats).
    #[arg(long, value_name = "ROLE")]
    pub table_role: Option<String>,
    /// Also write the matrix and the ratings as one JSON object to this file.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

/// An eval setting a market eval does not take, as `(given, flag, why)`.
type Refusal = (bool, &'static str, &'static str);

impl EvalFlags {
    /// The options of an eval over market scenarios: every --player at buyer_1 and at seller_1
    /// in turn, the other traders rule:zic or the one --opponent. What a market eval cannot
    /// honour is refused by name.
    pub fn market_options(&self) -> Result<MarketEvalOptions, EvalError> {
        let refused: [Refusal; 7] = [
            (self.opponents.len() > 1, "--opponent (more than once)", "the other traders of a market eval all play one spec"),
            (self.round_robin, "--round-robin", "a market eval seats each --player against scripted traders, not against each other"),
            (self.swap_seats, "--swap-seats", "a market eval already seats each --player as a buyer and as a seller"),
            (self.no_baseline, "--no-baseline", "a market eval plays no baseline row"),
            (self.talk_ablation, "--talk-ablation", "a market forwards talk as its rules say"),
            (self.table_role.is_some(), "--table-role", "a market eval seats each --player at buyer_1 and seller_1 in turn"),
            (self.summary_json.is_some() || self.campaigns.campaigns.is_some(), "--summary-json and --campaigns", "they are for two-party evals"),
        ];
        if let Some((_, flag, why)) = refused.iter().find(|(given, _, _)| *given) {
            return Err(EvalError::Run(dealgym::run::RunError::Options(format!(
                "{flag} is not taken by an eval over markets: {why}"
            ))));
        }
        let entrants = self
            .players
            .iter()
            .map(|p| parse_entrant("--player", p))
            .collect::<Result<Vec<_>, _>>()?;
        let others = self
            .opponents
            .first()
            .map(|o| parse_entrant("--opponent", o))
            .transpose()?;
        let run = self.plan.options_with("", "", self.out.clone(), true)?;
        Ok(MarketEvalOptions {
            run,
            entrants,
            others,
            on_duplicate: self.duplicates.duplicates,
        })
    }

    /// The options of an eval over n-party scenarios (`--table-role`).
    pub fn table_options(&self, role: &str) -> Result<TableEvalOptions, EvalError> {
        if !self.opponents.is_empty()
            || self.round_robin
            || self.swap_seats
            || self.talk_ablation
            || self.no_baseline
        {
            return Err(EvalError::Run(dealgym::run::RunError::Options(
                "--table-role seats every --player at one role in turn: --opponent, --round-robin, --swap-seats, --talk-ablation and --no-baseline are for two-party scenarios".into(),
            )));
        }
        if self.summary_json.is_some() || self.campaigns.campaigns.is_some() {
            return Err(EvalError::Run(dealgym::run::RunError::Options(
                "--summary-json and --campaigns are for two-party evals, not --table-role".into(),
            )));
        }
        let entrants = self
            .players
            .iter()
            .map(|p| parse_entrant("--player", p))
            .collect::<Result<Vec<_>, _>>()?;
        let run = self.plan.options_with("", "", self.out.clone(), true)?;
        Ok(TableEvalOptions {
            run,
            role: role.to_string(),
            entrants,
            on_duplicate: self.duplicates.duplicates,
        })
    }

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
        let players = if self.no_baseline {
            players
        } else {
            with_baseline(players, &opponents)?
        };
        let mut pairings = pairings(&players, &opponents, self.round_robin, self.swap_seats)?;
        // The seats' specs are set per pairing; the rest is shared.
        let mut run =
            self.plan
                .options_with("", "", self.out.clone(), self.campaigns.campaigns.is_none())?;
        self.campaigns.apply(&mut run)?;
        if self.talk_ablation {
            if !run.episode.talk.is_on() {
                return Err(EvalError::Run(dealgym::run::RunError::Options(
                    "--talk-ablation plays every pairing with talk on and with talk off: drop --talk off (or [episode] talk = \"off\")".into(),
                )));
            }
            pairings = with_talk_ablation(pairings);
        }
        Ok(EvalOptions {
            run,
            pairings,
            on_duplicate: self.duplicates.duplicates,
        })
    }
}
