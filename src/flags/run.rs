//! `dealgym run`: the players, the output, the plan ([`PlanFlags`]) and a prefix run's flags.

use std::path::PathBuf;

use clap::Args;

use super::shared::{preset_play, CampaignsFlag, PlanFlags};
use super::values::one_of;
use dealgym::run::{ConfigError, Cut, PrefixOptions, RunOptions, Targets};

/// The flags of `dealgym run`.
#[derive(Debug, Clone, Args)]
pub struct RunFlags {
    /// openai:MODEL@URL, rule:NAME (boulware|tough|linear|conceder|ina|ina-code|fixed-concession), script:FILE, narrate:DECIDER+MODEL (the decider's moves in the model's words, e.g. narrate:rule:linear+openai:MODEL@URL), or a [players.NAME] of the config. Needed for two-party scenarios.
    #[arg(long)]
    pub learner: Option<String>,
    /// Same forms as --learner. Needed for two-party scenarios, unless the preset names the paper's opponent (`--preset ina`: rule:ina); this flag wins over it.
    #[arg(long)]
    pub opponent: Option<String>,
    /// A seat of an n-party table (scenarios/deliberation.jsonl) or a market (scenarios/market.jsonl): ROLE=SPEC, SPEC an openai:MODEL@URL, script:FILE, a [players.NAME], or a scripted player: at a table rule:deliberation (the scripted party of the role's incentive), at a market rule:zic, rule:sniper or rule:truthful; at a table, narrate:rule:deliberation+MODEL (the scripted party's moves in the model's words); repeat for several seats. Roles not named play rule:deliberation at a table, rule:zic at a market.
    #[arg(long = "seat", value_name = "ROLE=SPEC")]
    pub seats: Vec<String>,
    /// A role of an n-party table whose proposals and acceptances below its own minimum become [REJECT_DEAL], or a market trader that may not trade at a loss (repeat for several).
    #[arg(long = "regulate", value_name = "ROLE")]
    pub regulated: Vec<String>,
    /// The JSONL file to append episodes to.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub plan: PlanFlags,
    #[command(flatten)]
    pub prefix: PrefixFlags,
    #[command(flatten)]
    pub campaigns: CampaignsFlag,
    /// Also write the summary as JSON lines (one per family and one for all) to this file.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
}

impl RunFlags {
    /// The run's options: each flag over the config file's value over the default.
    pub fn options(&self) -> Result<RunOptions, ConfigError> {
        let prefixes = self.prefix.options()?;
        let mut o = self.plan.options_with(
            self.learner.as_deref().unwrap_or(""),
            self.opponent.as_deref().unwrap_or(""),
            self.out.clone(),
            prefixes.is_none() && self.campaigns.campaigns.is_none(),
        )?;
        if prefixes.is_some() && self.campaigns.campaigns.is_some() {
            return Err(ConfigError::Flag(
                "--prefixes continues logged episodes; --campaigns plays campaigns: give one"
                    .into(),
            ));
        }
        self.campaigns.apply(&mut o)?;
        o.seats =
            dealgym::run::parse_seats(&self.seats).map_err(|e| ConfigError::Flag(e.to_string()))?;
        o.regulated_roles = self.regulated.clone();
        o.prefixes = prefixes.clone();
        if o.is_table_run() {
            if o.prefixes.is_some() && (o.split.is_some() || o.sample.is_some()) {
                return Err(ConfigError::Flag(
                    "--scenario-split and --sample choose the scenarios a run plays from the \
                     start; a prefix run (--prefixes) continues logged tables (--limit caps the \
                     records read from each file)"
                        .into(),
                ));
            }
            if o.learner_given() {
                return Err(ConfigError::Flag(
                    "an n-party table seats its players by role: give --seat ROLE=SPEC (roles not named play rule:deliberation), not --learner/--opponent".into(),
                ));
            }
            return Ok(o);
        }
        if dealgym::run::is_market_run(&o.scenarios) {
            if o.prefixes.is_some() {
                return Err(ConfigError::Flag(
                    "--prefixes continues logged two-party episodes and tables; a market is \
                     played from its start"
                        .into(),
                ));
            }
            if o.learner_given() {
                return Err(ConfigError::Flag(
                    "a market seats its traders by role: give --seat ROLE=SPEC (roles not named play rule:zic), not --learner/--opponent".into(),
                ));
            }
            return Ok(o);
        }
        if !o.seats.is_empty() || !o.regulated_roles.is_empty() {
            return Err(ConfigError::Flag(
                "--seat and --regulate are for n-party tables (scenarios/deliberation.jsonl) and markets (scenarios/market.jsonl); a two-party run takes --learner and --opponent".into(),
            ));
        }
        // The preset's opponent where none is given (`[play]`); the flag wins.
        let opponent = preset_play(o.preset.as_deref())?.opponent_under(self.opponent.as_deref());
        let (Some(_), Some(opponent)) = (&self.learner, opponent) else {
            return Err(ConfigError::Flag(
                "a two-party run needs --learner SPEC and --opponent SPEC".into(),
            ));
        };
        o.opponent = opponent;
        if prefixes.is_some() && (o.split.is_some() || o.sample.is_some()) {
            return Err(ConfigError::Flag(
                "--scenario-split and --sample choose the scenarios a run plays from the start; \
                 a prefix run (--prefixes) continues logged episodes (--limit caps the records \
                 read from each file)"
                    .into(),
            ));
        }
        Ok(o)
    }
}

/// The flags of a prefix run (`run --prefixes`): GRPO prompts cut from logged dialogues.
#[derive(Debug, Clone, Default, Args)]
pub struct PrefixFlags {
    /// Continue logged episodes instead of playing scenarios from the start: each episode of
    /// these record files (people's dialogues, or a run's log; repeat the flag for several)
    /// gives one prefix, replayed under its own setup, and one GRPO group of --group-size
    /// members that differ in their sampling seeds. The learner takes the seat of the speaker
    /// after the prefix. --scenarios is then optional (default: scenarios/FAMILY.jsonl) and
    /// --limit caps the episodes read from each file. Needs --split or --prefix-turns.
    #[arg(long, value_name = "FILE")]
    pub prefixes: Vec<PathBuf>,
    /// With --prefixes: the share S in (0, 1] of each dialogue's T turns that is context: the
    /// first ceil(S × T) turns, at most T − 1 (the learner always writes a logged turn's place).
    #[arg(long, value_name = "S", conflicts_with = "prefix_turns")]
    pub split: Option<f64>,
    /// With --prefixes: the first N turns of each dialogue are context; dialogues of N turns or
    /// fewer are skipped (counted in the summary).
    #[arg(long, value_name = "N")]
    pub prefix_turns: Option<usize>,
    /// With --prefixes: which logged turns after the cut are targets, each its own prefix and
    /// GRPO group: `first` (the turn after the cut: one per dialogue), `every` (every turn
    /// after the cut, either side: the CaSiNo harness's prompt_split) or `learner` (every turn
    /// after the cut of the source's learner seat: its self-play rows). --learner-role keeps
    /// the turns spoken in that role.
    #[arg(long, value_name = "WHICH", value_parser = one_of(&Targets::ALL, Targets::name, target_about))]
    pub targets: Option<Targets>,
    /// With --prefixes: stop each episode K moves after the prefix (a truncation, max_turns);
    /// per-turn rewards score only the players' turns. K = 1 gives one scored learner turn per
    /// episode: the one-step prompts of GRPO's second stage. Default: play to the end.
    #[arg(long, value_name = "K")]
    pub continue_turns: Option<u32>,
}

/// What each `--targets` value keeps, as `--help` lists it.
fn target_about(targets: Targets) -> Option<&'static str> {
    Some(match targets {
        Targets::First => {
            "One per source: the turn after the cut (the first of `--learner-role` from there)"
        }
        Targets::Every => {
            "Every turn after the cut, whichever side spoke it: one group each (§3.3.2)"
        }
        Targets::Learner => {
            "Every turn after the cut spoken by the source record's learner seat (§3.3.3)"
        }
    })
}

impl PrefixFlags {
    /// The prefix run these flags ask for; `None` without `--prefixes`.
    pub fn options(&self) -> Result<Option<PrefixOptions>, ConfigError> {
        let flag = |m: &str| Err(ConfigError::Flag(m.to_string()));
        if self.prefixes.is_empty() {
            if self.split.is_some()
                || self.prefix_turns.is_some()
                || self.continue_turns.is_some()
                || self.targets.is_some()
            {
                return flag(
                    "--split, --prefix-turns, --targets and --continue-turns need --prefixes FILE",
                );
            }
            return Ok(None);
        }
        let cut = match (self.split, self.prefix_turns) {
            (Some(s), None) => Cut::split(s).map_err(ConfigError::Flag)?,
            (None, Some(n)) => Cut::Turns(n),
            _ => return flag("--prefixes needs one of --split S or --prefix-turns N"),
        };
        if self.continue_turns == Some(0) {
            return flag("--continue-turns 0: the players must make at least one move");
        }
        Ok(Some(PrefixOptions {
            files: self.prefixes.clone(),
            cut,
            targets: self.targets.unwrap_or_default(),
            continue_turns: self.continue_turns,
        }))
    }
}
