//! How an episode is set up: the rules asked for ([`EpisodeConfig`]) and the concrete setup of one
//! episode ([`Setup`]), drawn with the episode's own seeded RNG.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::campaign::{with_budget, Standing};
use crate::limits::{check_count, check_number, MAX_AMOUNT, MAX_RETRIES, MAX_ROUNDS};
use crate::protocol::TurnFormat;
use crate::scenario::{DealSpace, Domain, Family, Role, Scenario};

use crate::vocab::{PerSeat, Seat};

/// Who moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FirstMover {
    Learner,
    Opponent,
    /// Drawn per episode (per group) from the seeded RNG.
    #[default]
    Random,
}

impl std::str::FromStr for FirstMover {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "learner" => Ok(FirstMover::Learner),
            "opponent" => Ok(FirstMover::Opponent),
            "random" => Ok(FirstMover::Random),
            _ => Err(format!(
                "first mover must be learner, opponent or random, not `{s}`"
            )),
        }
    }
}

/// `[episode] talk`: whether a seat's Talk reaches the other side. `off` is the talk ablation
/// (the book's `guide/eval.md`, "Does talk matter?"): each move is forwarded as its action and
/// terms alone, and the prompts say so; the Thought never crosses either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Talk {
    /// The Talk text is forwarded with the action (the protocol's rule).
    #[default]
    On,
    /// The Talk text is withheld: the other side reads the action line only.
    Off,
}

impl Talk {
    /// Whether the Talk text is forwarded (the default, left out of configs and records).
    pub fn is_on(&self) -> bool {
        *self == Talk::On
    }
}

impl std::str::FromStr for Talk {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on" => Ok(Talk::On),
            "off" => Ok(Talk::Off),
            _ => Err(format!("talk must be on or off, not `{s}`")),
        }
    }
}

/// `[episode] seatings`: from which seats each scenario is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Seatings {
    /// Once, the learner in the role `learner_role` names (or the family's default, or one
    /// drawn per group).
    #[default]
    One,
    /// Twice: the learner in each of the scenario's two roles, each seating its own GRPO group
    /// (group 2i the first role, 2i + 1 the second, for the plan's scenario i). A scenario's
    /// two participants are two tests of the learner: the CaSiNo harness's 200 evaluation
    /// episodes per matchup are its 100 test dialogues from both sides (§4.2, §3.1). A plan's
    /// setting: a single game (a server session, the Python binding) has one seating and
    /// refuses it.
    Both,
}

impl Seatings {
    /// How many seatings each scenario is played in.
    pub fn count(self) -> usize {
        match self {
            Seatings::One => 1,
            Seatings::Both => 2,
        }
    }

    /// What a plan's groups are, for a message that sizes it: its scenarios, or their seatings.
    pub fn groups(self) -> &'static str {
        match self {
            Seatings::One => "scenarios",
            Seatings::Both => "scenario seatings",
        }
    }
}

/// A persona: a named addendum to a seat's system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Persona {
    pub name: String,
    pub text: String,
}

/// How a CraigslistBargains buyer's budget B is set (`[episode] craigslist_budget`): the one
/// rule every part of an episode reads it by — utilities and ρ, the buyer's prompt, regulation,
/// the metrics and rewards — because the episode plays the scenario with this B
/// ([`Setup::scenario_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CraigslistBudget {
    /// B = the buyer's target from the data, as the scenario file holds it (the book's `decisions/scenarios.md`).
    #[default]
    Target,
    /// B = this share of the listing price L, whatever the data's target: the BATNA paper's
    /// (its App. G.1 episodes: a $4,500 listing with a $3,150 budget, a $120 one with $84 —
    /// B = 0.7·L both times), `{ listing_share = 0.7 }`. The seller's cost stays 0.5·L.
    ListingShare(f64),
}

impl CraigslistBudget {
    /// The budget this rule gives the buyer of `scenario` where it replaces the scenario's
    /// own: a Craigslist scenario under `listing_share`; `None` otherwise (the scenario's B
    /// stands). Rounded as the importer rounds derived amounts.
    pub fn budget_for(self, scenario: &Scenario) -> Option<f64> {
        match (self, scenario.family, &scenario.game) {
            (
                CraigslistBudget::ListingShare(share),
                Family::Craigslist,
                DealSpace::Price { listing_price, .. },
            ) => Some(crate::scenario::import::tidy(share * listing_price)),
            _ => None,
        }
    }

    fn is_target(&self) -> bool {
        *self == CraigslistBudget::Target
    }
}

/// The rules of an episode as a user configures them, with their defaults (the book's
/// `design/episode.md`).
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EpisodeConfig {
    /// The learner's role; `None` means the family's default (buyer, worker, random side).
    pub learner_role: Option<Role>,
    /// Who moves first: `learner`, `opponent`, or `random` (drawn per GRPO group).
    pub first_mover: FirstMover,
    /// Whether the learner is regulated: its ACCEPT or SUBMIT of a deal worth less to it than
    /// its floor becomes a REJECT_DEAL (the book's `design/episode.md`, "Regulation").
    pub regulate_learner: bool,
    /// Whether the opponent is regulated, as `regulate_learner` says.
    pub regulate_opponent: bool,
    /// Regulation floor on items/issues as a share of the seat's maximum utility; `None` uses
    /// the no-deal value.
    pub floor_fraction: Option<f64>,
    /// Overrides every scenario's no-deal value (e.g. 5 for CaSiNo's own walk-away rule).
    pub no_deal_value: Option<f64>,
    /// Rounds per seat before the episode is truncated.
    pub max_rounds: u32,
    /// The same-offer reject loop: a seat proposing the same terms K times in a row ends the
    /// episode ([`rules::reject_loop`](super::rules::reject_loop)); 0 disables it.
    pub reject_loop: u32,
    /// The rejection reject loop: K REJECT_DEAL moves in a row with no proposal between them
    /// end the episode; 0 disables it. `[TALK]` counts toward neither rule. Unset: the same K as
    /// `reject_loop`, so a config written when one K ruled both (`reject_loop = 0`: no reject
    /// loop at all) means what it meant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reject_streak: Option<u32>,
    /// Corrections allowed per turn for a malformed or illegal completion before forfeit.
    pub format_retries: u32,
    /// The spelling of a turn the learner's prompt asks for.
    pub learner_format: TurnFormat,
    /// The spelling of a turn the opponent's prompt asks for.
    pub opponent_format: TurnFormat,
    /// Ask the learner to label each turn with a dialogue act of the family's catalog
    /// (`Action: … #counter-price`): its prompt lists the acts, and a missing or unknown label
    /// is a malformed turn (`scenario::acts`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub learner_acts: bool,
    /// Ask the opponent to label each turn, as `learner_acts` says.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub opponent_acts: bool,
    /// How a CraigslistBargains buyer's budget is set: `"target"` (the data's buyer target,
    /// the book's `decisions/scenarios.md`) or `{ listing_share = 0.7 }` (B = 0.7·L, the BATNA paper's, App. G.1). Other
    /// families keep their own budgets.
    #[serde(skip_serializing_if = "CraigslistBudget::is_target")]
    pub craigslist_budget: CraigslistBudget,
    /// From which seats each scenario is played: `one` (the learner's role as `learner_role`
    /// says), or `both` (the learner in each of the scenario's two roles, each its own GRPO
    /// group; not with `learner_role`).
    #[serde(skip_serializing_if = "is_one_seating")]
    pub seatings: Seatings,
    /// Whether each seat's Talk reaches the other side: `"on"` (the default) or `"off"`, the
    /// talk ablation (only the action and its terms are forwarded; the prompts say so).
    /// Two-party games only: an n-party table refuses `"off"`.
    #[serde(skip_serializing_if = "Talk::is_on")]
    pub talk: Talk,
}

fn is_one_seating(s: &Seatings) -> bool {
    *s == Seatings::One
}

/// Prints as the derived form did before `reject_streak` existed, adding it only where it is
/// set: run ids fold this text in, so a run that does not set it keeps its id.
impl std::fmt::Debug for EpisodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("EpisodeConfig");
        d.field("learner_role", &self.learner_role)
            .field("first_mover", &self.first_mover)
            .field("regulate_learner", &self.regulate_learner)
            .field("regulate_opponent", &self.regulate_opponent)
            .field("floor_fraction", &self.floor_fraction)
            .field("no_deal_value", &self.no_deal_value)
            .field("max_rounds", &self.max_rounds)
            .field("reject_loop", &self.reject_loop);
        if let Some(k) = &self.reject_streak {
            d.field("reject_streak", k);
        }
        d.field("format_retries", &self.format_retries)
            .field("learner_format", &self.learner_format)
            .field("opponent_format", &self.opponent_format);
        // Only where asked: run ids of configs without act labels stay what they were.
        if self.learner_acts {
            d.field("learner_acts", &true);
        }
        if self.opponent_acts {
            d.field("opponent_acts", &true);
        }
        if !self.craigslist_budget.is_target() {
            d.field("craigslist_budget", &self.craigslist_budget);
        }
        if self.seatings != Seatings::One {
            d.field("seatings", &self.seatings);
        }
        if !self.talk.is_on() {
            d.field("talk", &self.talk);
        }
        d.finish()
    }
}

impl Default for EpisodeConfig {
    fn default() -> Self {
        EpisodeConfig {
            learner_role: None,
            first_mover: FirstMover::Random,
            regulate_learner: false,
            regulate_opponent: true,
            floor_fraction: None,
            no_deal_value: None,
            max_rounds: 6,
            reject_loop: 3,
            reject_streak: None,
            format_retries: crate::engine::DEFAULT_RETRIES,
            learner_format: TurnFormat::Tagged,
            opponent_format: TurnFormat::Tagged,
            learner_acts: false,
            opponent_acts: false,
            craigslist_budget: CraigslistBudget::Target,
            seatings: Seatings::One,
            talk: Talk::On,
        }
    }
}

impl EpisodeConfig {
    /// This config with some of its `[episode]` keys set from a JSON object (a server reset's
    /// `rules`, the Python binding's `rules=`): each key replaces the config's value, an
    /// unknown key or a value of the wrong type is refused naming it. Not validated: the
    /// caller validates once it has set the rest ([`EpisodeConfig::validate`]).
    pub fn with_overrides(
        &self,
        overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<EpisodeConfig, String> {
        let mut table = serde_json::to_value(self).map_err(|e| e.to_string())?;
        for (k, v) in overrides {
            table[k] = v.clone();
        }
        // A bad value names its key (`talk: unknown variant …`); an unknown key names itself.
        serde_path_to_error::deserialize(table).map_err(|e| match e.path().to_string() {
            at if at == "." => e.inner().to_string(),
            at => format!("{at}: {}", e.inner()),
        })
    }

    /// Check what serde cannot: each count within its limit ([`crate::limits`]) and each
    /// number finite and in its range (a floor is a share of the seat's maximum utility). The
    /// message names the key.
    pub fn validate(&self) -> Result<(), String> {
        check_count(
            "[episode] max_rounds",
            self.max_rounds.into(),
            1,
            MAX_ROUNDS,
        )?;
        check_count(
            "[episode] format_retries",
            self.format_retries.into(),
            0,
            MAX_RETRIES,
        )?;
        if let Some(f) = self.floor_fraction {
            check_number("[episode] floor_fraction", f, 0.0, 1.0)?;
        }
        if let Some(v) = self.no_deal_value {
            // The bound of a scenario's own no-deal value (and of its prices and values): a
            // client's 1e308 made ρ near 1e306 and the report's intervals NaN.
            check_number("[episode] no_deal_value", v, -MAX_AMOUNT, MAX_AMOUNT)?;
        }
        if let CraigslistBudget::ListingShare(share) = self.craigslist_budget {
            // Above the seller's cost share, so every scenario keeps room for a deal (the
            // importer drops a scenario with B ≤ C); at most the listing price.
            let cost = crate::scenario::import::craigslist::COST_FACTOR;
            check_number("[episode] craigslist_budget.listing_share", share, 0.0, 1.0)?;
            if share <= cost {
                return Err(format!(
                    "[episode] craigslist_budget.listing_share must be above the seller's cost \
                     share {cost} (B ≤ C leaves no deal that helps both), not {share}"
                ));
            }
        }
        if let (Seatings::Both, Some(role)) = (self.seatings, self.learner_role) {
            return Err(format!(
                "[episode] seatings = \"both\" plays the learner in each role of every \
                 scenario, so it cannot also be the {role} (learner_role / --learner-role)"
            ));
        }
        Ok(())
    }
}

/// The fixed rules of one episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(from = "RulesWire")]
pub struct Rules {
    pub max_rounds: u32,
    /// K of the same-offer reject loop (0: off).
    pub reject_loop: u32,
    /// K of the rejection reject loop (0: off). Records older than the field had one K for
    /// both rules and read as such.
    pub reject_streak: u32,
    pub format_retries: u32,
    /// A cap on the moves of both seats together, below the per-seat `max_rounds`: a logged
    /// people's dialogue that stopped with no accept or walk-away (`dealgym dialogues
    /// import`) ends as `max_turns` exactly where the people stopped. No prompt tells it: the people
    /// were never told it, and a model seat under the same rules is prompted alike.
    /// Absent for every episode played by models, so their records are as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_moves: Option<u32>,
    /// For an episode that continues a logged prefix (`run --prefixes`): how long the prefix
    /// is and how far the players may go after it. Absent for an episode played from the
    /// start (and from records older than the field), so their records are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<Continuation>,
    /// Whether each move's Talk is forwarded to the other side (`[episode] talk`). Absent
    /// while on (and in records older than the field), so those records are unchanged.
    #[serde(default, skip_serializing_if = "Talk::is_on")]
    pub talk: Talk,
}

/// [`Rules`] as records store them: `reject_streak` is absent from records written before the
/// two reject-loop rules were set apart, where `reject_loop` was the K of both.
#[derive(Deserialize, JsonSchema)]
struct RulesWire {
    max_rounds: u32,
    reject_loop: u32,
    #[serde(default)]
    reject_streak: Option<u32>,
    format_retries: u32,
    #[serde(default)]
    max_moves: Option<u32>,
    #[serde(default)]
    continuation: Option<Continuation>,
    #[serde(default)]
    talk: Talk,
}

impl From<RulesWire> for Rules {
    fn from(w: RulesWire) -> Rules {
        Rules {
            max_rounds: w.max_rounds,
            reject_loop: w.reject_loop,
            reject_streak: w.reject_streak.unwrap_or(w.reject_loop),
            format_retries: w.format_retries,
            max_moves: w.max_moves,
            continuation: w.continuation,
            talk: w.talk,
        }
    }
}

impl Rules {
    /// Whether a completion that could not be used on try `attempt` (0 first) is corrected and
    /// asked again, rather than forfeited (the book's `design/episode.md`, "The malformed-turn
    /// policy").
    pub fn allows_retry(&self, attempt: u32) -> bool {
        crate::engine::may_retry(attempt, self.format_retries)
    }

    /// Whether turn `index` (an attempt, in record order) was replayed from a log rather than
    /// played by the episode's players: the turns of a continuation's prefix. Per-turn rewards
    /// do not score them, a token-exact seat's sequence and the token exports skip them (they
    /// carry no token ids), and a script's count of its own calls leaves them out.
    pub fn is_logged_turn(&self, index: usize) -> bool {
        self.continuation.is_some_and(|c| index < c.prefix_turns)
    }
}

/// An episode whose first turns were replayed from a log (a person's dialogue or an earlier
/// run's episode) before the players took over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Continuation {
    /// Turns (attempts, in record order) replayed from the log.
    pub prefix_turns: usize,
    /// With `Some(k)`, the episode is truncated (`max_turns`) once the players have made k
    /// moves after the prefix (`run --continue-turns K`; K = 1 gives one-step prompts). The
    /// turn cap `max_rounds` applies as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<u32>,
}

/// One seat's setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeatSetup {
    pub role: Role,
    pub regulated: bool,
    /// The utility below which a regulated seat's accept or submit is replaced by a reject.
    pub floor: f64,
    pub format: TurnFormat,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<Persona>,
    /// The seat is asked to label each turn with a dialogue act (`#label` at the end of its
    /// Action line; `scenario::acts`): a missing or unknown label is a malformed turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acts: bool,
    /// In a campaign's deal, for the seat that carries the ledger: what the earlier deals
    /// left it — its BATNA (its no-deal value here), the budget it may spend, the earlier
    /// deals its prompt tells. Absent outside campaigns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<Standing>,
}

/// Everything about one episode that is not the scenario or the moves: fully determined, so an
/// episode can be rebuilt from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Setup {
    pub seats: PerSeat<SeatSetup>,
    pub first_mover: Seat,
    pub rules: Rules,
    /// What each side gets without a deal.
    pub no_deal_value: f64,
    /// The buyer's budget the episode is played with where a rule replaced the scenario's
    /// (`[episode] craigslist_budget`, [`CraigslistBudget::budget_for`]); absent where the
    /// scenario's own stands, so records of other setups are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_budget: Option<f64>,
}

impl Setup {
    /// The setup new players continue a logged episode under after its first `prefix_turns`
    /// turns (`run --prefixes`, `replay --branch-from`): the log's own, those turns marked as
    /// logged (`rules.continuation`, with the players' `moves` after them, if limited), less a
    /// people's stop point — `rules.max_moves` marks where the people of a dataset's dialogue
    /// stopped talking, not a rule players are held to. With no logged turn and no limit
    /// (a branch from turn 0) there is nothing to mark.
    pub fn to_continue(&self, prefix_turns: usize, moves: Option<u32>) -> Setup {
        let mut setup = self.clone();
        setup.rules.max_moves = None;
        setup.rules.continuation = (prefix_turns > 0 || moves.is_some()).then_some(Continuation {
            prefix_turns,
            moves,
        });
        setup
    }
}

/// The seeds of one episode: the run's seed, the GRPO group (one scenario, one setup) and the
/// member within the group (its own sampling seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct EpisodeSeed {
    pub run: u64,
    pub group: u64,
    pub member: u64,
}

impl EpisodeSeed {
    /// The seeds of one episode a client resets (a `dealgym serve` session, a Python `Game`):
    /// the client's seed as the run's, the scenario's index in its catalog as the group, one
    /// member. So the same seed and scenario give the same setup on every face.
    pub fn reset(seed: u64, scenario_index: usize) -> EpisodeSeed {
        EpisodeSeed {
            run: seed,
            group: scenario_index as u64,
            member: 0,
        }
    }

    /// The RNG for the setup: shared by every member of a group, so a group shares its setup.
    pub fn setup_rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(mix(&[self.run, self.group, 0x5e7u64]))
    }

    /// The seed of an n-party table's setup (its schedule): shared by a group, like
    /// [`EpisodeSeed::setup_rng`]'s.
    pub fn table_seed(&self) -> u64 {
        mix(&[self.run, self.group, 0x7ab1e])
    }

    /// The sampling seed sent to an endpoint for seat `seat` of a table.
    pub fn table_sampling_seed(&self, seat: usize) -> u64 {
        mix(&[self.run, self.group, self.member, 0x7ab1e, seat as u64 + 1]) >> 1
    }

    /// The episode's id within its run: `g{group}-m{member}` (the one place it is spelled).
    pub fn episode_id(&self) -> String {
        format!("g{}-m{}", self.group, self.member)
    }

    /// The GRPO group's id within its run: `g{group}`.
    pub fn group_id(&self) -> String {
        format!("g{}", self.group)
    }

    /// The sampling seed sent to an endpoint for a seat: different per member and per seat.
    pub fn sampling_seed(&self, seat: Seat) -> u64 {
        mix(&[self.run, self.group, self.member, seat as u64 + 1]) >> 1
    }
}

/// [`mix`] over `words` and then `text`, read eight bytes to a word (the last word short): the
/// digest a run id is made of (`run`'s and `serve`'s), so both fold text the same way.
pub fn mix_text(mut words: Vec<u64>, text: &str) -> u64 {
    words.extend(
        text.as_bytes()
            .chunks(8)
            .map(|c| c.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b))),
    );
    mix(&words)
}

/// SplitMix64 over several words: a stable, well-spread seed from a tuple.
pub fn mix(words: &[u64]) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for w in words {
        x ^= w
            .wrapping_add(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(x << 6)
            .wrapping_add(x >> 2);
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x = z ^ (z >> 31);
    }
    x
}

/// Why a setup cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("role {role} does not play in scenario {scenario} ({family})")]
    RoleNotInScenario {
        role: Role,
        scenario: String,
        family: String,
    },
    /// `seatings = "both"` where no plan chose the seating (a single game).
    #[error("scenario {scenario}: [episode] seatings = \"both\" is a plan's setting (run, eval, a server's rollouts), which plays each scenario once per role; a single game has one seating: set learner_role, or seatings = \"one\"")]
    SeatingUnplanned { scenario: String },
    /// A campaign's ledger does not fit the deal (a `budget` ledger on a seat with no budget).
    #[error("{0}")]
    Campaign(String),
}

impl Setup {
    /// Draw the setup of an episode: the learner's role, the first mover and personas are taken
    /// from the config or, where it leaves them open, from `rng` — in that fixed order, so the
    /// same seed always gives the same setup.
    pub fn draw(
        scenario: &Scenario,
        config: &EpisodeConfig,
        personas: PerSeat<Option<Persona>>,
        rng: &mut impl Rng,
    ) -> Result<Setup, SetupError> {
        let roles = scenario.roles();
        if config.seatings == Seatings::Both && config.learner_role.is_none() {
            return Err(SetupError::SeatingUnplanned {
                scenario: scenario.id.clone(),
            });
        }
        let learner_role = match config
            .learner_role
            .or(scenario.family.default_learner_role())
        {
            Some(role) if roles.contains(&role) => role,
            Some(role) => {
                return Err(SetupError::RoleNotInScenario {
                    role,
                    scenario: scenario.id.clone(),
                    family: scenario.family.to_string(),
                })
            }
            None => roles[rng.random_range(0..2)],
        };
        let first_mover = match config.first_mover {
            FirstMover::Learner => Seat::Learner,
            FirstMover::Opponent => Seat::Opponent,
            FirstMover::Random => {
                if rng.random_bool(0.5) {
                    Seat::Learner
                } else {
                    Seat::Opponent
                }
            }
        };
        let no_deal_value = config.no_deal_value.unwrap_or(scenario.no_deal_value);
        let seat = |seat: Seat, role: Role, persona: Option<Persona>| SeatSetup {
            role,
            regulated: match seat {
                Seat::Learner => config.regulate_learner,
                Seat::Opponent => config.regulate_opponent,
            },
            floor: regulation_floor(scenario, role, no_deal_value, config.floor_fraction),
            format: match seat {
                Seat::Learner => config.learner_format,
                Seat::Opponent => config.opponent_format,
            },
            persona,
            acts: match seat {
                Seat::Learner => config.learner_acts,
                Seat::Opponent => config.opponent_acts,
            },
            campaign: None,
        };
        let PerSeat {
            learner: lp,
            opponent: op,
        } = personas;
        Ok(Setup {
            seats: PerSeat::new(
                seat(Seat::Learner, learner_role, lp),
                seat(Seat::Opponent, learner_role.counterpart(), op),
            ),
            first_mover,
            rules: Rules {
                max_rounds: config.max_rounds,
                reject_loop: config.reject_loop,
                reject_streak: config.reject_streak.unwrap_or(config.reject_loop),
                format_retries: config.format_retries,
                max_moves: None,
                continuation: None,
                talk: config.talk,
            },
            no_deal_value,
            buyer_budget: config.craigslist_budget.budget_for(scenario),
        })
    }

    /// What `seat` gets without a deal: its campaign BATNA where it carries a campaign's
    /// ledger, else the setup's no-deal value.
    pub(crate) fn no_deal_value_of(&self, seat: Seat) -> f64 {
        match &self.seats[seat].campaign {
            Some(standing) => standing.batna,
            None => self.no_deal_value,
        }
    }

    /// The seat that carries a campaign's ledger in this deal, and what the ledger left it.
    pub(crate) fn campaign(&self) -> Option<(Seat, &Standing)> {
        Seat::BOTH
            .into_iter()
            .find_map(|seat| self.seats[seat].campaign.as_ref().map(|s| (seat, s)))
    }

    /// This setup with `seat` carrying a campaign's ledger as `standing` says: its no-deal
    /// value becomes the standing's BATNA, and so does its floor (on items and issues with
    /// `floor_fraction`, the higher of the BATNA and that share, as for any no-deal value).
    /// A `budget` standing needs the seat to be a buyer with a budget (`campaign::with_budget`).
    pub fn with_standing(
        mut self,
        scenario: &Scenario,
        seat: Seat,
        standing: Standing,
        floor_fraction: Option<f64>,
    ) -> Result<Setup, String> {
        let role = self.seats[seat].role;
        if let Some(budget) = standing.budget {
            with_budget(scenario, role, budget)?;
        }
        self.seats[seat].floor = match scenario.domain() {
            // Price's and bundle's floor is zero surplus, their no-deal value: the BATNA
            // takes its place.
            Domain::Price | Domain::Bundle => standing.batna,
            _ => regulation_floor(scenario, role, standing.batna, floor_fraction),
        };
        self.seats[seat].campaign = Some(standing);
        Ok(self)
    }

    /// The scenario a deal is played on: `scenario` itself; with the buyer's budget the setup
    /// gives (`buyer_budget`, the `[episode] craigslist_budget` rule) in place of its own; and,
    /// where a seat carries a `budget` ledger, with that seat's budget set to what the ledger
    /// leaves it. The one place a setup reaches into a scenario: the episode plays (and replay
    /// and rescoring rebuild) this one, so utilities, prompts, regulation, metrics and rewards
    /// all read the same B.
    pub fn scenario_for(
        &self,
        scenario: std::sync::Arc<Scenario>,
    ) -> Result<std::sync::Arc<Scenario>, String> {
        let scenario = match self.buyer_budget {
            Some(budget) => std::sync::Arc::new(with_budget(&scenario, Role::Buyer, budget)?),
            None => scenario,
        };
        match self.campaign() {
            Some((
                seat,
                Standing {
                    budget: Some(budget),
                    ..
                },
            )) => with_budget(&scenario, self.seats[seat].role, *budget).map(std::sync::Arc::new),
            _ => Ok(scenario),
        }
    }

    /// The seat that plays `role`.
    pub fn seat_of(&self, role: Role) -> Option<Seat> {
        Seat::BOTH.into_iter().find(|s| self.seats[*s].role == role)
    }

    /// The same setup with the seats' roles exchanged (`eval --swap-seats`): each seat takes
    /// the other's role, and its regulation floor is recomputed for its new role (the floor is
    /// a role's, with the `floor_fraction` the setup was drawn with). Everything that belongs
    /// to a seat stays with it — whether it is regulated, its turn format, its persona — and
    /// so do the first mover (a seat), the rules and the no-deal value.
    pub fn with_roles_exchanged(&self, scenario: &Scenario, floor_fraction: Option<f64>) -> Setup {
        let mut swapped = self.clone();
        for seat in Seat::BOTH {
            let role = self.seats[seat.other()].role;
            swapped.seats[seat].role = role;
            swapped.seats[seat].floor =
                regulation_floor(scenario, role, self.no_deal_value, floor_fraction);
        }
        swapped
    }
}

/// The least utility a regulated seat may agree to (the book's `design/episode.md`, "Regulation"):
/// on price tasks, and bundles, zero surplus (the seller's cost, the buyer's budget or worth); on
/// items and issues, the no-deal value, or a share of the seat's maximum utility when configured
/// (whichever is higher).
pub(crate) fn regulation_floor(
    scenario: &Scenario,
    role: Role,
    no_deal_value: f64,
    floor_fraction: Option<f64>,
) -> f64 {
    match scenario.domain() {
        // Hotel calls: zero summed surplus, and ticket by ticket the floor or the acceptable
        // price (`Scenario::ticket_past_line`, checked beside it in `rules::regulate`).
        Domain::Price | Domain::Bundle | Domain::Tickets => 0.0,
        Domain::Items | Domain::Issues => match floor_fraction {
            Some(f) => no_deal_value.max(f * scenario.max_utility(role)),
            None => no_deal_value,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{job, price, setup_with};

    /// A reset's `rules` set the keys they name and leave the rest; a misspelt key is refused
    /// by name rather than ignored.
    #[test]
    fn overrides_set_the_keys_they_name_and_refuse_unknown_ones() {
        let base = EpisodeConfig::default();
        let set = |json: serde_json::Value| base.with_overrides(json.as_object().unwrap());
        let c = set(serde_json::json!({"max_rounds": 3, "regulate_opponent": false})).unwrap();
        assert_eq!((c.max_rounds, c.regulate_opponent), (3, false));
        assert_eq!(c.reject_loop, base.reject_loop);
        let err = set(serde_json::json!({"max_round": 3})).unwrap_err();
        assert!(err.contains("max_round"), "{err}");
        let err = set(serde_json::json!({"max_rounds": "three"})).unwrap_err();
        assert!(err.starts_with("max_rounds: invalid type"), "{err}");
        let err = set(serde_json::json!({"talk": "whisper"})).unwrap_err();
        assert!(err.starts_with("talk: unknown variant `whisper`"), "{err}");
        assert_eq!(
            set(serde_json::json!({"talk": "off"})).unwrap().talk,
            Talk::Off
        );
    }

    #[test]
    fn rules_past_their_limits_are_refused_by_key() {
        assert_eq!(EpisodeConfig::default().validate(), Ok(()));
        for (config, says) in [
            (
                EpisodeConfig {
                    max_rounds: u32::MAX,
                    ..EpisodeConfig::default()
                },
                "[episode] max_rounds must be from 1 to 10000; it is 4294967295",
            ),
            (
                EpisodeConfig {
                    max_rounds: 0,
                    ..EpisodeConfig::default()
                },
                "[episode] max_rounds must be from 1 to 10000; it is 0",
            ),
            (
                EpisodeConfig {
                    format_retries: 101,
                    ..EpisodeConfig::default()
                },
                "[episode] format_retries must be from 0 to 100; it is 101",
            ),
            (
                EpisodeConfig {
                    floor_fraction: Some(f64::NAN),
                    ..EpisodeConfig::default()
                },
                "[episode] floor_fraction must be a finite number from 0 to 1; it is NaN",
            ),
            (
                EpisodeConfig {
                    no_deal_value: Some(f64::NEG_INFINITY),
                    ..EpisodeConfig::default()
                },
                "[episode] no_deal_value must be a finite number from -1e9 to 1e9; it is -inf",
            ),
        ] {
            assert_eq!(config.validate().unwrap_err(), says);
        }
        let casino_rule = EpisodeConfig {
            no_deal_value: Some(5.0),
            floor_fraction: Some(0.5),
            ..EpisodeConfig::default()
        };
        assert_eq!(casino_rule.validate(), Ok(()));
    }

    #[test]
    fn exchanging_roles_keeps_everything_of_the_seats_but_their_roles_and_floors() {
        let s = price();
        let config = EpisodeConfig {
            regulate_learner: true,
            first_mover: FirstMover::Opponent,
            ..EpisodeConfig::default()
        };
        let mut setup = setup_with(&s, &config);
        setup.seats.learner.persona = Some(Persona {
            name: "calm".into(),
            text: "Stay calm.".into(),
        });
        let swapped = setup.with_roles_exchanged(&s, None);
        assert_eq!(setup.seats.learner.role, Role::Buyer);
        assert_eq!(swapped.seats.learner.role, Role::Seller);
        assert_eq!(swapped.seats.opponent.role, Role::Buyer);
        assert_eq!(swapped.seat_of(Role::Buyer), Some(Seat::Opponent));
        assert!(swapped.seats.learner.regulated && swapped.seats.opponent.regulated);
        assert_eq!(swapped.seats.learner.persona, setup.seats.learner.persona);
        assert_eq!(swapped.first_mover, Seat::Opponent);
        assert_eq!(swapped.rules, setup.rules);
        assert_eq!(
            swapped.with_roles_exchanged(&s, None),
            setup,
            "twice is the original"
        );
    }

    #[test]
    fn an_unset_reject_streak_follows_reject_loop_and_keeps_the_old_run_id_text() {
        // A config from before the split: `reject_loop = 0` meant no reject loop at all.
        let old: EpisodeConfig = toml::from_str("reject_loop = 0").unwrap();
        let rules = setup_with(&price(), &old).rules;
        assert_eq!((rules.reject_loop, rules.reject_streak), (0, 0));
        let apart: EpisodeConfig = toml::from_str("reject_loop = 0\nreject_streak = 4").unwrap();
        let rules = setup_with(&price(), &apart).rules;
        assert_eq!((rules.reject_loop, rules.reject_streak), (0, 4));
        // The text run ids fold in is the derived one of the fields before the split.
        assert_eq!(
            format!("{:?}", EpisodeConfig::default()),
            "EpisodeConfig { learner_role: None, first_mover: Random, regulate_learner: false, \
             regulate_opponent: true, floor_fraction: None, no_deal_value: None, max_rounds: 6, \
             reject_loop: 3, format_retries: 1, learner_format: Tagged, opponent_format: Tagged }"
        );
        assert!(format!("{apart:?}").contains("reject_loop: 0, reject_streak: 4, format"));
    }

    #[test]
    fn rules_without_a_move_cap_are_written_without_it() {
        let rules = setup_with(&price(), &EpisodeConfig::default()).rules;
        let json = serde_json::to_string(&rules).unwrap();
        assert_eq!(
            json,
            r#"{"max_rounds":6,"reject_loop":3,"reject_streak":3,"format_retries":1}"#
        );
        // A record written before the two reject-loop rules were set apart had one K for both.
        let old: Rules =
            serde_json::from_str(r#"{"max_rounds":6,"reject_loop":0,"format_retries":1}"#).unwrap();
        assert_eq!((old.reject_loop, old.reject_streak), (0, 0));
        assert_eq!(serde_json::from_str::<Rules>(&json).unwrap(), rules);
        let capped = Rules {
            max_moves: Some(7),
            ..rules
        };
        let json = serde_json::to_string(&capped).unwrap();
        assert!(json.ends_with(r#""max_moves":7}"#), "{json}");
        assert_eq!(serde_json::from_str::<Rules>(&json).unwrap(), capped);
    }

    #[test]
    fn talk_off_is_named_in_the_rules_and_the_run_id_text_only_where_set() {
        let off: EpisodeConfig = toml::from_str("talk = \"off\"").unwrap();
        let rules = setup_with(&price(), &off).rules;
        assert_eq!(rules.talk, Talk::Off);
        let json = serde_json::to_string(&rules).unwrap();
        assert!(json.ends_with(r#""talk":"off"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Rules>(&json).unwrap(), rules);
        assert!(format!("{off:?}").ends_with("talk: Off }"));
        // On is the default: neither the rules nor the config text name it.
        let on = setup_with(&price(), &EpisodeConfig::default()).rules;
        assert!(!serde_json::to_string(&on).unwrap().contains("talk"));
        assert!(!format!("{:?}", EpisodeConfig::default()).contains("talk"));
        assert!(toml::from_str::<EpisodeConfig>("talk = \"quiet\"").is_err());
    }

    #[test]
    fn an_exchanged_floor_is_the_new_roles_floor() {
        // Job interview: the worker's best is 80, the recruiter's 100; with floors at half the
        // maximum utility they are 40 and 50, and they follow the roles, not the seats.
        let s = job();
        let config = EpisodeConfig {
            learner_role: Some(Role::Worker),
            regulate_learner: true,
            floor_fraction: Some(0.5),
            ..EpisodeConfig::default()
        };
        let setup = setup_with(&s, &config);
        assert_eq!(
            (setup.seats.learner.floor, setup.seats.opponent.floor),
            (40.0, 50.0)
        );
        let swapped = setup.with_roles_exchanged(&s, config.floor_fraction);
        assert_eq!(swapped.seats.learner.role, Role::Recruiter);
        assert_eq!(
            (swapped.seats.learner.floor, swapped.seats.opponent.floor),
            (50.0, 40.0)
        );
        // Without a fraction the floor is the no-deal value, whatever the role.
        let plain = setup_with(&s, &EpisodeConfig::default());
        let swapped = plain.with_roles_exchanged(&s, None);
        assert_eq!(
            (swapped.seats.learner.floor, swapped.seats.opponent.floor),
            (0.0, 0.0)
        );
        assert_eq!(swapped.no_deal_value, plain.no_deal_value);
    }

    #[test]
    fn the_craigslist_budget_rule_sets_the_buyers_budget_the_episode_plays() {
        // price(): a Craigslist task, L = 200, B = 180 (the data's target), C = 100. Under
        // the BATNA paper's rule (App. G.1) B = 0.7 · 200 = 140; the default keeps 180.
        let s = price();
        let paper = EpisodeConfig {
            craigslist_budget: CraigslistBudget::ListingShare(0.7),
            ..EpisodeConfig::default()
        };
        assert_eq!(paper.validate(), Ok(()));
        let setup = setup_with(&s, &paper);
        assert_eq!(setup.buyer_budget, Some(140.0));
        let played = setup.scenario_for(s.clone()).unwrap();
        assert_eq!(crate::campaign::budget_of(&played), Some(140.0));
        let plain = setup_with(&s, &EpisodeConfig::default());
        assert_eq!(plain.buyer_budget, None);
        assert_eq!(
            crate::campaign::budget_of(&plain.scenario_for(s.clone()).unwrap()),
            Some(180.0)
        );
        // Another family keeps its own budget (and items have none to set).
        let mut ahp = (*s).clone();
        ahp.family = Family::Ahp;
        assert_eq!(setup_with(&ahp, &paper).buyer_budget, None);
        assert_eq!(setup_with(&job(), &paper).buyer_budget, None);
        // Records of setups without the rule are as they were; with it they say the budget.
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("buyer_budget").is_none());
        assert_eq!(serde_json::to_value(&setup).unwrap()["buyer_budget"], 140.0);
        // At or below the seller's cost share no deal helps both: refused, naming the key.
        for share in [0.5, 0.3, 1.5] {
            let bad = EpisodeConfig {
                craigslist_budget: CraigslistBudget::ListingShare(share),
                ..EpisodeConfig::default()
            };
            let err = bad.validate().unwrap_err();
            assert!(err.contains("craigslist_budget.listing_share"), "{err}");
        }
        // The config's spelling, and the run id's text only where the rule is set.
        let read: EpisodeConfig =
            toml::from_str("craigslist_budget = { listing_share = 0.7 }").unwrap();
        assert_eq!(read.craigslist_budget, CraigslistBudget::ListingShare(0.7));
        let read: EpisodeConfig = toml::from_str("craigslist_budget = \"target\"").unwrap();
        assert_eq!(read.craigslist_budget, CraigslistBudget::Target);
        assert!(!format!("{:?}", EpisodeConfig::default()).contains("craigslist_budget"));
        assert!(format!("{paper:?}").contains("craigslist_budget: ListingShare(0.7)"));
    }
}
