//! The `[rewards]` table: which reward components count, how they are combined, and the
//! settings of each. Plain data with one pure check ([`RewardConfig::validate`]); reading a
//! rubric file is the config loader's job (`run/config.rs`), calling endpoints `run`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::reward_model::RewardModelApi;
use crate::limits::{
    check_count, check_number, check_sampling, check_seconds, shown, MAX_CACHE_ENTRIES,
    MAX_RETRIES, MAX_REWARD_NUMBER,
};

/// Which terminal reward to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    /// ρ on a deal, else 0.
    #[default]
    Surplus,
    /// Items/issues: a deal gets ρ if ρ ≥ τ, else −γ; no deal gets 0 (the BATNA paper, §2.1);
    /// price tasks keep `surplus`.
    Threshold,
    /// Against the seat's BATNA (a campaign's deals; any episode with a no-deal value): a deal
    /// gets ρ less the ρ of the seat's no-deal value — negative for a deal worse than walking
    /// away — and no deal gets 0, since it leaves the seat its BATNA. With a no-deal value of
    /// 0 this is `surplus`.
    Batna,
    /// DialogXpert's objective (App. E: "If a deal is reached, we compute the sale-to-list
    /// price ratio as the reward. If no deal is made, the reward is set to 0"): on a price
    /// deal, the seat's sale-to-list ratio (`score::sale_to_list`: the buyer's
    /// (P − L)/(B − L), a seller's mirror 1 − that; 0 where B = L leaves no range); no deal
    /// gets 0. Tasks without a listing price (items, issues, bundles, hotel calls) keep
    /// `surplus`, as `threshold` keeps it on price tasks.
    SaleToList,
}

/// A reward component, by the name a config weights it with and a record stores it under.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// The terminal reward (`super::terminal_rewards`).
    Terminal,
    /// Per turn: 1 for a format-ok completion, else 0.
    Format,
    /// Per turn: the Talk's words, or the completion's characters, against `[rewards.length]`.
    Length,
    /// Per turn: the own points of a proposed or accepted deal, −1 for walking away.
    Points,
    /// Per turn: the strategic-talk heuristic in [0, 1].
    Strategic,
    /// Per turn: the sum of the scores of the `[[rewards.rules]]` that match.
    Rules,
    /// Per episode and seat, or per turn (`[rewards.judge] mode = "turn"`): the LLM judge's
    /// score, in [0, 1] unless `[rewards.judge] range` says otherwise.
    Judge,
    /// The reward model's scalar: per episode and seat (the seat's whole conversation), or,
    /// where `[rewards] turn_reward` gives turns their own reward, per response — each turn
    /// scored with the conversation up to it as the query and the turn as the output (REPO §4,
    /// Figure 1: the policy's output o for a query q is what the reward model scores).
    RewardModel,
    /// Per turn: INA's R1, whether the move does what the turn's act label says
    /// (`reward::ina`); turns without a label are not scored, and a seat with no labelled turn
    /// has no R1 part ([`RewardConfig::check_against`] refuses it for an unasked learner).
    IntentConsistency,
    /// Per episode and seat: INA's R2, the price gap (a seller's final over its first price).
    PriceGap,
    /// Per episode and seat: INA's R3, the negotiation-strategy reward.
    NegotiationStrategy,
    /// Per turn: INA's R4, 1 − the mean bag-of-words cosine with the seat's earlier Talk.
    Interactiveness,
}

impl Component {
    #[cfg(test)]
    pub(crate) const ALL: [Component; 12] = [
        Component::Terminal,
        Component::Format,
        Component::Length,
        Component::Points,
        Component::Strategic,
        Component::Rules,
        Component::Judge,
        Component::RewardModel,
        Component::IntentConsistency,
        Component::PriceGap,
        Component::NegotiationStrategy,
        Component::Interactiveness,
    ];

    /// The name in configs and records.
    pub fn name(self) -> &'static str {
        match self {
            Component::Terminal => "terminal",
            Component::Format => "format",
            Component::Length => "length",
            Component::Points => "points",
            Component::Strategic => "strategic",
            Component::Rules => "rules",
            Component::Judge => "judge",
            Component::RewardModel => "reward_model",
            Component::IntentConsistency => "intent_consistency",
            Component::PriceGap => "price_gap",
            Component::NegotiationStrategy => "negotiation_strategy",
            Component::Interactiveness => "interactiveness",
        }
    }

    /// The component a config or a record names `name`.
    #[cfg(test)]
    pub(crate) fn from_name(name: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Computed from the record alone (a pure function of the episode), so replay and rescore
    /// recompute it; the judge and the reward model are stored and kept instead.
    pub fn is_pure(self) -> bool {
        !matches!(self, Component::Judge | Component::RewardModel)
    }

    /// Always given per turn (stored on each turn and averaged or summed per seat). The judge
    /// and the reward model are per turn only where the config says so:
    /// [`RewardConfig::is_per_turn`] decides.
    pub(crate) fn is_per_turn(self) -> bool {
        matches!(
            self,
            Component::Format
                | Component::Length
                | Component::Points
                | Component::Strategic
                | Component::Rules
                | Component::IntentConsistency
                | Component::Interactiveness
        )
    }
}

/// How the components make the seat's total reward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// Σ weight · component over the names in `[rewards.weights]` (only `terminal`, weight 1,
    /// when the table is absent).
    #[default]
    Sum,
    /// R = R_m · (1 + sign(R_m) · clip(E, −n, n)/n), R_m the primary component and E the
    /// weighted sum of the auxiliary ones (`reward::combine::enhance`).
    Enhance,
}

/// What `[rewards.length]` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// Words of the Talk (what the counterpart reads): 1 at `min`, linearly 0 at `max`,
    /// `outside` beyond either bound — concise talk is better, within reason.
    #[default]
    Words,
    /// Characters of the whole completion as written (the raw text, Thought and reasoning
    /// included) — the CaSiNo harness's length signal (§3.4: "linear reward for responses
    /// between 50 and 750 characters; penalizes very short (−1.0) or excessively long
    /// completions with gentle decay"): `outside` below `min`, linearly 0 at `min` to 1 at
    /// `max`, then a decay of 1 per `max` characters beyond it, down to `outside`
    /// (`super::length_reward`).
    Chars,
}

/// `[rewards.length]`: the length that earns the length reward.
#[derive(Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LengthConfig {
    /// The bounds, in `unit`s (see [`LengthUnit`] for the shape between and beyond them).
    pub min: u32,
    pub max: u32,
    /// The reward of a length below `min` (and, in words, above `max`): a penalty.
    pub outside: f64,
    pub unit: LengthUnit,
}

impl Default for LengthConfig {
    fn default() -> Self {
        LengthConfig {
            min: 5,
            max: 60,
            outside: -1.0,
            unit: LengthUnit::Words,
        }
    }
}

/// Prints `unit` only when it is not the default, so run ids of configs older than it stay.
impl fmt::Debug for LengthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LengthConfig");
        d.field("min", &self.min)
            .field("max", &self.max)
            .field("outside", &self.outside);
        if self.unit != LengthUnit::default() {
            d.field("unit", &self.unit);
        }
        d.finish()
    }
}

/// Which turns get the strategic-talk signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategicTurns {
    /// Every turn the seat plays.
    #[default]
    All,
    /// Only turns whose written action is `[TALK]` or `[REJECT_DEAL]` — the CaSiNo harness's
    /// rule (§3.4: "for `[TALK]` and `[REJECT_DEAL]` turns only", a gradient on the conversational
    /// moves the points reward gives nothing). Other turns get no `strategic` signal: it is
    /// absent (0 in a turn's reward) and left out of the seat's mean.
    TalkAndReject,
}

/// `[rewards.strategic]`: the strategic-talk heuristic's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StrategicConfig {
    pub turns: StrategicTurns,
}

/// `[rewards.ina]`: which version of INA's reward terms the `price_gap`,
/// `negotiation_strategy` and `interactiveness` components compute (`reward::ina`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct InaConfig {
    pub version: InaVersion,
}

/// The paper's equations, or the authors' released code where it computes them otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InaVersion {
    /// INA §5's equations 7, 8–10 and 11.
    #[default]
    Paper,
    /// The released training code (`Models/INA/Train/rlutils.py` of zishan-ai/neg): R2 the
    /// buyer's price over the seller's first; R3 `e^(G·x)` with `x = (P_b − P_min)/(P_b + 1)`
    /// where `G·x ≥ 0`, else 0; R4 minus the mean whitespace-token cosine with every earlier
    /// utterance of the dialogue.
    Code,
}

/// `[rewards] psi_on`: which seats pay the format penalty −ψ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PsiOn {
    /// Only the seat that forfeits by format (its turn could not be used and no correction
    /// was left): the episode ends as `format_forfeit`.
    #[default]
    Forfeit,
    /// Also every seat that played a turn that does not count as format-ok
    /// ([`Parsed::counts_as_format_ok`](crate::protocol::Parsed::counts_as_format_ok)) —
    /// the Thought/Talk/Action layout broken though the action could be read, a move refused as
    /// illegal, a turn corrected and retried — gets −ψ as its terminal reward, whatever the
    /// ending: the BATNA paper penalises the format, not only an unreadable action (§2.1:
    /// "format violations receive −ψ"; App. A: "Format violations receive −ψ with ψ = 1.0").
    /// The episode is played on as the engine reads it (the paper ends an episode only on
    /// agreement, walk-away, a reject loop or the turn cap, §2). A logged prefix's turns are
    /// nobody's violation.
    Violation,
}

/// `[rewards] turn_reward`: what each turn — each row of a per-turn export — is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnReward {
    /// Every turn of a seat is worth the seat's episode total (one value per episode): no
    /// per-turn reward is stored, and records are as they always were.
    #[default]
    Episode,
    /// Each turn is worth its own weighted per-turn signals — the reward model's score of the
    /// turn as a response among them (REPO §4) — plus the weighted episode-level parts
    /// (terminal, a per-episode judge) on every turn of the seat — so each GRPO row, scored
    /// alone, still learns the outcome (the CaSiNo harness's rows, §3.3.3, each with its own
    /// per-turn rewards).
    EveryTurn,
    /// The turn's own weighted signals (the reward model's score of the turn among them), and
    /// the episode-level parts on the seat's last turn only, so a trainer that sums rewards
    /// over a trajectory counts the outcome once (`sum` only: `enhance` scales the primary on
    /// every turn).
    LastTurn,
}

/// What part of a turn a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleTarget {
    /// The Talk the counterpart reads.
    Talk,
    /// The private Thought.
    Thought,
    /// The action, rendered canonically from the mover's side (`[SUBMIT_DEAL] price:120`).
    Action,
    /// The whole raw completion.
    Raw,
}

/// `[[rewards.rules]]`: a regular expression (Rust `regex` syntax; `(?i)` for any case) and the
/// score a turn gets when its target matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// The rule's name: a turn it matches gets the signal `rule:NAME`.
    pub name: String,
    /// The regular expression.
    pub pattern: String,
    /// The part of the turn the pattern is matched against.
    pub target: RuleTarget,
    /// What a matching turn scores.
    pub score: f64,
}

/// What the judge grades at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JudgeMode {
    /// Each seat once per episode, over the whole transcript (labelling its turns).
    #[default]
    Episode,
    /// Each turn of each seat, over the transcript up to and including it: the CaSiNo
    /// harness's judge (§3.4: the strategic coherence of the Thought and the alignment of the
    /// Talk with the Action) and REPO's, which scores each response (§4). The verdict is
    /// stored on the turn (`rewards.judge`) like the other per-turn signals.
    Turn,
}

/// What a per-turn judge's verdict on a turn is worth given the verdicts on the seat's earlier
/// turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JudgeHistory {
    /// Each verdict counts as given.
    #[default]
    Ignore,
    /// REPO's judge (Figure 6, "Scoring procedure"): "If the history score is negative, output
    /// 0"; else the score of the new reply alone. A turn whose seat's earlier verdicts sum below
    /// 0 is worth 0; the verdict itself is kept on the turn as the judge gave it.
    ZeroIfNegative,
}

/// How a reward service — the judge, the reward model — is called: what `[rewards.judge]` and
/// `[rewards.reward_model]` both say, in one shape. The runtime turns it into its endpoint
/// settings in one place (`dealgym::llm::EndpointSettings::for_service`), so the two tables
/// cannot drift apart in how they are called. Each table keeps its own keys (and `deny`s
/// unknown ones), which serde's `flatten` could not do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceCall<'a> {
    /// The URL called (a chat endpoint's base URL; a reward model's full URL).
    pub url: &'a str,
    pub model: &'a str,
    pub api_key_env: Option<&'a str>,
    pub timeout_s: f64,
    pub retries: u32,
    pub backoff_s: f64,
}

/// A reward service's defaults: per-call timeout (s), retries, first backoff (s) and cache
/// size, the same for the judge and the reward model.
pub(crate) const SERVICE_TIMEOUT_S: f64 = 60.0;
pub(crate) const SERVICE_RETRIES: u32 = 2;
pub(crate) const SERVICE_BACKOFF_S: f64 = 0.5;
pub(crate) const SERVICE_CACHE: usize = 4096;

/// `[rewards.judge]`: an LLM-as-judge at an OpenAI-compatible chat endpoint.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    /// e.g. `http://127.0.0.1:8000/v1`; `/chat/completions` is appended.
    pub endpoint: String,
    /// The judge's model, as the endpoint names it.
    pub model: String,
    /// A built-in rubric's name (`negotiation`) or a `.j2` file (relative to the config file).
    pub rubric: String,
    /// The name of the environment variable that holds the endpoint's API key.
    pub api_key_env: Option<String>,
    /// Label sets for per-turn annotations: set name → its labels. Empty: no annotation.
    pub labels: BTreeMap<String, Vec<String>>,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    pub timeout_s: f64,
    pub retries: u32,
    pub backoff_s: f64,
    /// Verdicts kept in memory, keyed by the digest of the rendered rubric (the judged text
    /// and the rubric).
    pub cache: usize,
    /// Whether the judge grades each seat once per episode or each turn.
    pub mode: JudgeMode,
    /// The scores a verdict may give, `[low, high]`: `[0, 1]` by default; REPO's judge deducts
    /// points (§4 and its rubric: scores ≤ 0), e.g. `[-100, 0]` with `[rewards.enhance] n =
    /// 100`. A score outside the range is unreadable.
    pub range: [f64; 2],
    /// In `mode = "turn"`: whether a turn after a seat's faults still counts its verdict
    /// (`ignore`) or is worth 0 (`zero_if_negative`, REPO's judge).
    pub history: JudgeHistory,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            endpoint: String::new(),
            model: String::new(),
            rubric: "negotiation".into(),
            api_key_env: None,
            labels: BTreeMap::new(),
            temperature: 0.0,
            max_tokens: Some(512),
            timeout_s: SERVICE_TIMEOUT_S,
            retries: SERVICE_RETRIES,
            backoff_s: SERVICE_BACKOFF_S,
            cache: SERVICE_CACHE,
            mode: JudgeMode::Episode,
            range: [0.0, 1.0],
            history: JudgeHistory::Ignore,
        }
    }
}

impl JudgeConfig {
    /// How the judge is called.
    pub fn call(&self) -> ServiceCall<'_> {
        ServiceCall {
            url: &self.endpoint,
            model: &self.model,
            api_key_env: self.api_key_env.as_deref(),
            timeout_s: self.timeout_s,
            retries: self.retries,
            backoff_s: self.backoff_s,
        }
    }
}

/// Prints `mode`, `range` and `history` only where they are not the defaults, so run ids of
/// configs older than them stay.
impl fmt::Debug for JudgeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = JudgeConfig::default();
        let mut d = f.debug_struct("JudgeConfig");
        d.field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("rubric", &self.rubric)
            .field("api_key_env", &self.api_key_env)
            .field("labels", &self.labels)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("timeout_s", &self.timeout_s)
            .field("retries", &self.retries)
            .field("backoff_s", &self.backoff_s)
            .field("cache", &self.cache);
        if self.mode != base.mode {
            d.field("mode", &self.mode);
        }
        if self.range != base.range {
            d.field("range", &self.range);
        }
        if self.history != base.history {
            d.field("history", &self.history);
        }
        d.finish()
    }
}

/// `[rewards.reward_model]`: a scalar reward model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RewardModelConfig {
    /// The full URL: `http://127.0.0.1:8001/pooling`, `…/score`, or any URL of the `plain` API.
    pub url: String,
    pub model: Option<String>,
    pub api: RewardModelApi,
    pub api_key_env: Option<String>,
    pub timeout_s: f64,
    pub retries: u32,
    pub backoff_s: f64,
    /// Scores kept in memory, keyed by the digest of the request body.
    pub cache: usize,
}

impl Default for RewardModelConfig {
    fn default() -> Self {
        RewardModelConfig {
            url: String::new(),
            model: None,
            api: RewardModelApi::Plain,
            api_key_env: None,
            timeout_s: SERVICE_TIMEOUT_S,
            retries: SERVICE_RETRIES,
            backoff_s: SERVICE_BACKOFF_S,
            cache: SERVICE_CACHE,
        }
    }
}

impl RewardModelConfig {
    /// How the reward model is called (no model name: the empty string).
    pub fn call(&self) -> ServiceCall<'_> {
        ServiceCall {
            url: &self.url,
            model: self.model.as_deref().unwrap_or_default(),
            api_key_env: self.api_key_env.as_deref(),
            timeout_s: self.timeout_s,
            retries: self.retries,
            backoff_s: self.backoff_s,
        }
    }
}

/// `[rewards.enhance]`: the reward-enhancement combination (REPO).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnhanceConfig {
    /// R_m: the component the auxiliary ones scale.
    pub primary: Component,
    /// Weighted (by `[rewards.weights]`, 1 where absent) into E.
    pub auxiliary: Vec<Component>,
    /// E is clipped to [−n, n] and divided by n: the most the auxiliaries scale R_m by. 100
    /// by default, REPO's (§4: "We set n to 100"), the scale of its judge's deductions (5, 20
    /// and 30 points, Figure 6): n = 1 would saturate any such auxiliary to a scale of 0 or 2.
    pub n: f64,
}

impl Default for EnhanceConfig {
    fn default() -> Self {
        EnhanceConfig {
            primary: Component::RewardModel,
            auxiliary: vec![Component::Rules, Component::Judge],
            n: 100.0,
        }
    }
}

/// Reward settings; defaults are the book's `design/metrics.md` (τ = 0.4, γ = 0.5, ψ = 1) and the
/// terminal reward alone, which keeps records as they were before the other components existed.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RewardConfig {
    /// The terminal reward.
    pub kind: RewardKind,
    /// τ of `kind = "threshold"`: the ρ an items or issues deal needs to earn its ρ.
    pub tau: f64,
    /// γ of `kind = "threshold"`: a deal below τ gets −γ.
    pub gamma: f64,
    /// Penalty for the seat that forfeits by format (and, with `psi_on = "violation"`, for
    /// every seat that broke the format).
    pub psi: f64,
    /// Which seats pay −ψ: the one that forfeits by format (default), or every one with a turn
    /// that is not format-ok (the BATNA paper's reading, §2.1).
    pub psi_on: PsiOn,
    /// How the weighted components make each seat's total.
    pub combine: Combine,
    /// Component name → weight. Absent: `terminal` alone, weight 1.
    pub weights: BTreeMap<Component, f64>,
    /// `[rewards.length]`: the length component's bounds.
    pub length: LengthConfig,
    /// `[rewards.strategic]`: which turns the strategic-talk component scores.
    pub strategic: StrategicConfig,
    /// `[[rewards.rules]]`: the rules the `rules` component sums.
    pub rules: Vec<RuleConfig>,
    /// `[rewards.guardrails]`: the hotel family's guardrails (REPO), scored into the `rules`
    /// component as `rule:guard_NAME` signals on the platform agent's turns of a hotel call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<super::guardrails::GuardrailConfig>,
    /// `[rewards.procedure]`: REPO's procedure rules for the hotel family's agent (hang up after
    /// four refusals, raise an ask by at most 10 %, never ask below the target price), scored
    /// into the `rules` component as `rule:procedure_NAME` signals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedure: Option<super::procedure::ProcedureConfig>,
    /// `[rewards.judge]`: the LLM judge, required when the `judge` component is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeConfig>,
    /// `[rewards.reward_model]`: the reward model, required when `reward_model` is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reward_model: Option<RewardModelConfig>,
    /// `[rewards.enhance]`: the components `combine = "enhance"` combines.
    pub enhance: EnhanceConfig,
    /// What each turn is worth: the seat's episode total, or a reward of its own.
    pub turn_reward: TurnReward,
    /// `[rewards.ina]`: the version of INA's reward terms.
    pub ina: InaConfig,
}

impl Default for RewardConfig {
    fn default() -> Self {
        RewardConfig {
            kind: RewardKind::Surplus,
            tau: 0.4,
            gamma: 0.5,
            psi: 1.0,
            psi_on: PsiOn::Forfeit,
            combine: Combine::Sum,
            weights: BTreeMap::new(),
            length: LengthConfig::default(),
            strategic: StrategicConfig::default(),
            rules: Vec::new(),
            guardrails: None,
            procedure: None,
            judge: None,
            reward_model: None,
            enhance: EnhanceConfig::default(),
            turn_reward: TurnReward::Episode,
            ina: InaConfig::default(),
        }
    }
}

/// Prints the terminal settings as always and the rest only where it differs from the
/// defaults: run ids fold this text in, so a run without the newer tables keeps its id.
impl fmt::Debug for RewardConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = RewardConfig::default();
        let mut d = f.debug_struct("RewardConfig");
        d.field("kind", &self.kind)
            .field("tau", &self.tau)
            .field("gamma", &self.gamma)
            .field("psi", &self.psi);
        if self.psi_on != base.psi_on {
            d.field("psi_on", &self.psi_on);
        }
        if self.combine != base.combine {
            d.field("combine", &self.combine);
        }
        if self.weights != base.weights {
            d.field("weights", &self.weights);
        }
        if self.length != base.length {
            d.field("length", &self.length);
        }
        if self.strategic != base.strategic {
            d.field("strategic", &self.strategic);
        }
        if self.rules != base.rules {
            d.field("rules", &self.rules);
        }
        if let Some(guardrails) = &self.guardrails {
            d.field("guardrails", guardrails);
        }
        if let Some(procedure) = &self.procedure {
            d.field("procedure", procedure);
        }
        if let Some(judge) = &self.judge {
            d.field("judge", judge);
        }
        if let Some(rm) = &self.reward_model {
            d.field("reward_model", rm);
        }
        // Always under `enhance`: its default `n` changed (1 → 100), and a run id must not stay
        // the same when the rewards do not.
        if self.enhance != base.enhance || self.combine == Combine::Enhance {
            d.field("enhance", &self.enhance);
        }
        if self.turn_reward != base.turn_reward {
            d.field("turn_reward", &self.turn_reward);
        }
        if self.ina != base.ina {
            d.field("ina", &self.ina);
        }
        d.finish()
    }
}

/// A `[rewards]` setting a table run cannot honour: its key and why (what every face refuses
/// it with: `run`, `eval`, `replay --verify` and the server's table resets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{key} cannot be honoured in a table run (n-party scenarios): {why} — remove the setting, \
     or run two-party scenarios"
)]
pub struct NotAtTables {
    /// The setting, as the config writes it (`[rewards.weights] strategic`).
    pub key: String,
    pub why: String,
}

impl RewardConfig {
    /// What a run id folds in of the rewards: this config as [`Debug`](fmt::Debug) prints it,
    /// with what decides the rewards and nothing else. Left out: the judge's and the reward
    /// model's URLs (like a player's, the same model behind another port is the same run) and
    /// their operational settings (timeouts, retries, backoff, cache, key variable: raising a
    /// timeout must not stop a `--resume`). The rubric is folded in by the digest of its
    /// source (`rubric_source`, read by the caller), not by its path: an edited rubric is
    /// another run, a moved checkout is not.
    pub fn identity(&self, rubric_source: Option<&str>) -> String {
        let mut c = self.in_force();
        if let Some(judge) = &mut c.judge {
            let defaults = JudgeConfig::default();
            (judge.timeout_s, judge.retries) = (defaults.timeout_s, defaults.retries);
            (judge.backoff_s, judge.cache) = (defaults.backoff_s, defaults.cache);
            if let Some(source) = rubric_source {
                let mut h = crate::digest::Fnv1a64::new();
                h.update(source.as_bytes());
                judge.rubric = format!("source {}", h.finish());
            }
        }
        if let Some(rm) = &mut c.reward_model {
            let defaults = RewardModelConfig::default();
            (rm.timeout_s, rm.retries) = (defaults.timeout_s, defaults.retries);
            (rm.backoff_s, rm.cache) = (defaults.backoff_s, defaults.cache);
        }
        format!("{c:?}")
    }

    /// This config as a record keeps it (`reward_config`): everything that decides the
    /// rewards, less where the judge and the reward model are reached and the names of their
    /// keys' variables.
    pub fn in_force(&self) -> RewardConfig {
        let mut c = self.clone();
        if let Some(judge) = &mut c.judge {
            judge.endpoint.clear();
            judge.api_key_env = None;
        }
        if let Some(rm) = &mut c.reward_model {
            rm.url.clear();
            rm.api_key_env = None;
        }
        c
    }

    /// The components that make the total: the weighted names (`sum`), or the primary and the
    /// auxiliaries (`enhance`).
    pub fn components(&self) -> BTreeSet<Component> {
        match self.combine {
            Combine::Sum if self.weights.is_empty() => BTreeSet::from([Component::Terminal]),
            Combine::Sum => self.weights.keys().copied().collect(),
            Combine::Enhance => std::iter::once(self.enhance.primary)
                .chain(self.enhance.auxiliary.iter().copied())
                .collect(),
        }
    }

    /// Whether `component` counts in the total (and so is computed and recorded).
    pub fn uses(&self, component: Component) -> bool {
        self.components().contains(&component)
    }

    /// Whether `component` is given per turn (stored on each turn, averaged or summed per
    /// seat): the per-turn signals always, the judge in `mode = "turn"`, and the reward model
    /// wherever turns get their own reward (`turn_reward` not `episode`): REPO scores each
    /// response (§4), and a turn's R = R_m · (1 + sign(R_m) · clip(E, −n, n)/n) takes that
    /// turn's R_m with that turn's E.
    pub fn is_per_turn(&self, component: Component) -> bool {
        match component {
            Component::Judge => self
                .judge
                .as_ref()
                .is_some_and(|j| j.mode == JudgeMode::Turn),
            Component::RewardModel => self.turn_reward != TurnReward::Episode,
            c => c.is_per_turn(),
        }
    }

    /// Whether the judge's per-turn verdicts count only while the seat's earlier ones sum to
    /// at least 0 ([`JudgeHistory::ZeroIfNegative`]).
    pub(crate) fn judge_zeroes_negative_history(&self) -> bool {
        self.judge
            .as_ref()
            .is_some_and(|j| j.history == JudgeHistory::ZeroIfNegative)
    }

    /// The terminal reward alone, unweighted: records carry no parts and no per-turn rewards,
    /// exactly as before the other components existed.
    pub(crate) fn is_terminal_only(&self) -> bool {
        self.combine == Combine::Sum
            && self.components() == BTreeSet::from([Component::Terminal])
            && self
                .weights
                .get(&Component::Terminal)
                .is_none_or(|w| *w == 1.0)
    }

    /// The weight of a component: its `[rewards.weights]` entry; where absent, 1 for the
    /// auxiliaries of `enhance` and for `terminal` without a weights table, else 0.
    pub(crate) fn weight(&self, component: Component) -> f64 {
        match self.weights.get(&component) {
            Some(w) => *w,
            None if self.combine == Combine::Enhance => 1.0,
            None if self.weights.is_empty() && component == Component::Terminal => 1.0,
            None => 0.0,
        }
    }

    /// Check this config against the rules the seats play by (`[episode]`): INA's R1
    /// (`intent_consistency`, INA §5 eq. 6) reads each turn's act label, so a total that counts
    /// it while the learner is not asked to label its turns (`learner_acts`) would score the
    /// trained seat on nothing — refused, naming both keys. The opponent is rewarded but not
    /// trained: a seat that labels no turn has no R1 part at all (absent, never 0; see
    /// `combine_parts`). Called wherever `[rewards]` and `[episode]` meet: the config loader,
    /// `RunOptions::check`, a server's reset, the Python `Game`.
    pub fn check_against(&self, episode: &crate::game::EpisodeConfig) -> Result<(), String> {
        let r1 = Component::IntentConsistency;
        let counts = self.uses(r1)
            && (self.weight(r1) != 0.0
                || (self.combine == Combine::Enhance && self.enhance.primary == r1));
        if counts && !episode.learner_acts {
            return Err(format!(
                "[rewards.weights] {} (INA's R1) scores each turn's act label, but the learner \
                 is not asked to label its turns: set [episode] learner_acts = true, or leave \
                 the component out",
                r1.name()
            ));
        }
        Ok(())
    }

    /// Check that this config can be honoured at an n-party table (a run of table scenarios).
    /// A table seat is rewarded by the rules a two-party seat is: its terminal reward
    /// (`surplus` or `threshold`, with τ, γ, ψ and `psi_on`), the per-turn components every
    /// turn has (`format`, `length`, `rules`, `interactiveness`), the judge and the reward
    /// model, weighted or enhanced, per episode or per turn. What has no meaning at a table is
    /// refused, naming its key and why, rather than ignored.
    pub fn check_for_table(&self) -> Result<(), NotAtTables> {
        let refuse = |key: &str, why: &str| {
            Err(NotAtTables {
                key: key.to_string(),
                why: why.to_string(),
            })
        };
        match self.kind {
            RewardKind::Surplus | RewardKind::Threshold => {}
            RewardKind::Batna => {
                return refuse(
                    "[rewards] kind = \"batna\"",
                    "a table party has no no-deal value to measure a deal against",
                )
            }
            RewardKind::SaleToList => {
                return refuse(
                    "[rewards] kind = \"sale_to_list\"",
                    "a table's deal has no price",
                )
            }
        }
        for c in self.components() {
            let why = match c {
                Component::Strategic => {
                    "strategic talk reads a two-party deal space's item values or issue weights"
                }
                Component::IntentConsistency => {
                    "INA's R1 reads the bilateral standing offer a move answers"
                }
                Component::PriceGap | Component::NegotiationStrategy => {
                    "INA's R2 and R3 are defined by a seller's prices, and a table's deal has no \
                     price"
                }
                _ => continue,
            };
            return refuse(&format!("[rewards.weights] {}", c.name()), why);
        }
        let base = RewardConfig::default();
        for (key, set, why) in [
            (
                "[rewards.strategic]",
                self.strategic != base.strategic,
                "strategic talk reads a two-party deal space",
            ),
            (
                "[rewards.guardrails]",
                self.guardrails.is_some(),
                "the guardrails are the hotel family's rules",
            ),
            (
                "[rewards.procedure]",
                self.procedure.is_some(),
                "the procedure rules are the hotel family's",
            ),
        ] {
            if set {
                return refuse(key, why);
            }
        }
        Ok(())
    }

    /// Check what serde cannot: numbers in range, rule patterns that compile, and that every
    /// component used is configured and every configured one used. The message names the key.
    ///
    /// Every weight, score, penalty and bound of the judge's range is at most
    /// [`MAX_REWARD_NUMBER`] in size, so no sum or product of them a total makes can overflow:
    /// two finite weights of 1e308 made an infinite total, written as `null`.
    pub fn validate(&self) -> Result<(), String> {
        let reward = |key: &str, value: f64| {
            check_number(key, value, -MAX_REWARD_NUMBER, MAX_REWARD_NUMBER).map(|_| ())
        };
        // τ is a bargained ratio's threshold (ρ is in [0, 1] where the threshold applies);
        // −γ and −ψ are penalties: a negative one would reward the bad deal or the forfeit.
        check_number("[rewards] tau", self.tau, 0.0, 1.0)?;
        check_number("[rewards] gamma", self.gamma, 0.0, MAX_REWARD_NUMBER)?;
        check_number("[rewards] psi", self.psi, 0.0, MAX_REWARD_NUMBER)?;
        for (c, w) in &self.weights {
            reward(&format!("[rewards.weights] {}", c.name()), *w)?;
        }
        let l = &self.length;
        if l.min >= l.max {
            return Err(format!(
                "[rewards.length] needs min < max (min = {}, max = {})",
                l.min, l.max
            ));
        }
        reward("[rewards.length] outside", l.outside)?;
        if self.turn_reward == TurnReward::LastTurn && self.combine == Combine::Enhance {
            return Err(
                "[rewards] turn_reward = \"last_turn\" needs combine = \"sum\": enhance scales \
                 the primary on every turn (use \"every_turn\")"
                    .into(),
            );
        }
        if self.combine == Combine::Enhance {
            let e = &self.enhance;
            if !(e.n.is_finite() && e.n > 0.0) {
                return Err(format!("[rewards.enhance] n must be above 0 (n = {})", e.n));
            }
            if e.auxiliary.contains(&e.primary) {
                return Err(format!(
                    "[rewards.enhance] `{}` is both the primary and an auxiliary",
                    e.primary.name()
                ));
            }
            if let Some(c) = self.weights.keys().find(|c| !e.auxiliary.contains(c)) {
                return Err(format!(
                    "[rewards.weights] {} is not an auxiliary of [rewards.enhance] (combine = \
                     \"enhance\" weights only the auxiliaries): it would count for nothing",
                    c.name()
                ));
            }
        } else if self.enhance != EnhanceConfig::default() {
            return Err(
                "[rewards.enhance] is set, but combine is \"sum\": set combine = \"enhance\" or \
                 remove the table"
                    .into(),
            );
        }
        let mut names = BTreeSet::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let at = format!("[[rewards.rules]] number {} (`{}`)", i + 1, rule.name);
            if rule.name.trim().is_empty() {
                return Err(format!("{at}: a rule needs a name"));
            }
            if !names.insert(rule.name.as_str()) {
                return Err(format!("{at}: the name is used twice"));
            }
            reward(&format!("{at}: score"), rule.score)?;
            super::rules::compile(&rule.pattern).map_err(|e| format!("{at}: bad pattern: {e}"))?;
        }
        if let Some(g) = &self.guardrails {
            for (key, score) in [
                ("internal_terms", g.internal_terms),
                ("price_type", g.price_type),
                ("every_ticket", g.every_ticket),
                ("promises", g.promises),
                ("above_acceptable", g.above_acceptable),
            ] {
                reward(&format!("[rewards.guardrails] {key}"), score)?;
            }
        }
        if let Some(p) = &self.procedure {
            for (signal, score) in p.scores() {
                let key = signal.trim_start_matches("procedure_");
                reward(&format!("[rewards.procedure] {key}"), score)?;
            }
        }
        self.check_used(
            Component::Rules,
            !self.rules.is_empty() || self.guardrails.is_some() || self.procedure.is_some(),
            "[[rewards.rules]], [rewards.guardrails] or [rewards.procedure]",
        )?;
        self.check_used(Component::Judge, self.judge.is_some(), "[rewards.judge]")?;
        self.check_used(
            Component::RewardModel,
            self.reward_model.is_some(),
            "[rewards.reward_model]",
        )?;
        if let Some(judge) = &self.judge {
            judge_checks(judge)?;
        }
        if let Some(rm) = &self.reward_model {
            if rm.url.trim().is_empty() {
                return Err("[rewards.reward_model] needs a url".into());
            }
            check_call_timing(
                "[rewards.reward_model]",
                rm.timeout_s,
                rm.backoff_s,
                rm.retries,
            )?;
            check_count(
                "[rewards.reward_model] cache",
                rm.cache as u64,
                0,
                MAX_CACHE_ENTRIES,
            )?;
        }
        Ok(())
    }

    /// Whether the judge or the reward model is weighted but has no endpoint to call (no
    /// table, or one without its `endpoint` and `model`, or its `url`): what a preset that
    /// weights them leaves to the user's config.
    pub fn lacks_a_service_endpoint(&self) -> bool {
        let blank = |s: &str| s.trim().is_empty();
        let judge = self.uses(Component::Judge)
            && self
                .judge
                .as_ref()
                .is_none_or(|j| blank(&j.endpoint) || blank(&j.model));
        let reward_model = self.uses(Component::RewardModel)
            && self.reward_model.as_ref().is_none_or(|r| blank(&r.url));
        judge || reward_model
    }

    fn check_used(&self, c: Component, configured: bool, table: &str) -> Result<(), String> {
        let used = self.uses(c);
        let how = match self.combine {
            Combine::Sum => "[rewards.weights]",
            Combine::Enhance => "[rewards.enhance]",
        };
        match (used, configured) {
            (true, false) => Err(format!(
                "{how} uses `{}`, but there is no {table} to compute it with",
                c.name()
            )),
            (false, true) => Err(format!(
                "{table} is configured, but {how} does not name `{}`: it would count for nothing",
                c.name()
            )),
            _ => Ok(()),
        }
    }
}

/// A call's timeout, backoff and retries, checked at load time by the rules of
/// [`crate::limits`] and named by `table`; `LlmClient::new` refuses the same for every client
/// it builds.
fn check_call_timing(
    table: &str,
    timeout_s: f64,
    backoff_s: f64,
    retries: u32,
) -> Result<(), String> {
    check_seconds(&format!("{table} timeout_s"), timeout_s, false)?;
    check_seconds(&format!("{table} backoff_s"), backoff_s, true)?;
    check_count(&format!("{table} retries"), retries.into(), 0, MAX_RETRIES)?;
    Ok(())
}

fn judge_checks(judge: &JudgeConfig) -> Result<(), String> {
    if judge.endpoint.trim().is_empty() || judge.model.trim().is_empty() {
        return Err("[rewards.judge] needs an endpoint and a model".into());
    }
    if judge.rubric.trim().is_empty() {
        return Err("[rewards.judge] rubric is empty: name a built-in rubric or a .j2 file".into());
    }
    check_call_timing(
        "[rewards.judge]",
        judge.timeout_s,
        judge.backoff_s,
        judge.retries,
    )?;
    check_count(
        "[rewards.judge] cache",
        judge.cache as u64,
        0,
        MAX_CACHE_ENTRIES,
    )?;
    check_sampling(
        "[rewards.judge] ",
        Some(judge.temperature),
        None,
        judge.max_tokens,
    )?;
    let [low, high] = judge.range;
    let within = |x: f64| x.is_finite() && x.abs() <= MAX_REWARD_NUMBER;
    if !(within(low) && within(high) && low < high) {
        return Err(format!(
            "[rewards.judge] range must be two finite numbers from -{max} to {max}, low < high \
             (range = [{}, {}])",
            shown(low),
            shown(high),
            max = shown(MAX_REWARD_NUMBER),
        ));
    }
    if judge.range != JudgeConfig::default().range
        && judge.mode == JudgeMode::Episode
        && super::judge::builtin_rubric(&judge.rubric, judge.mode).is_some()
    {
        return Err(format!(
            "[rewards.judge] range = [{low}, {high}], but the built-in rubric `{}` asks for a \
             score from 0 to 1: use mode = \"turn\" (its built-in rubric asks for the range) or \
             a rubric of your own",
            judge.rubric
        ));
    }
    if judge.history != JudgeHistory::Ignore && judge.mode != JudgeMode::Turn {
        return Err(
            "[rewards.judge] history = \"zero_if_negative\" needs mode = \"turn\": it reads the \
             verdicts on the seat's earlier turns"
                .into(),
        );
    }
    for (set, labels) in &judge.labels {
        if !super::judge::is_label_word(set) {
            return Err(format!(
                "[rewards.judge.labels] set name `{set}`: use letters, digits and _ only"
            ));
        }
        if labels.is_empty() {
            return Err(format!("[rewards.judge.labels] {set} has no labels"));
        }
        if let Some(bad) = labels.iter().find(|l| !super::judge::is_label_word(l)) {
            return Err(format!(
                "[rewards.judge.labels] {set}: label `{bad}`: use letters, digits and _ only"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RewardConfig, String> {
        let c: RewardConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn the_default_is_terminal_only_and_debugs_as_before() {
        let c = RewardConfig::default();
        assert!(c.is_terminal_only());
        assert_eq!(
            format!("{c:?}"),
            "RewardConfig { kind: Surplus, tau: 0.4, gamma: 0.5, psi: 1.0 }"
        );
        let c = parse("kind = \"threshold\"").unwrap();
        assert!(c.is_terminal_only());
        let c = parse("[weights]\nterminal = 1.0\nformat = 0.1").unwrap();
        assert!(!c.is_terminal_only());
        assert!(format!("{c:?}").contains("weights"));
        assert_eq!(
            RewardConfig::default().identity(None),
            format!("{:?}", RewardConfig::default())
        );
    }

    #[test]
    fn the_identity_leaves_endpoint_urls_out() {
        let at = |port: u16| {
            parse(&format!(
                "[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\""
            ))
            .unwrap()
        };
        assert_eq!(at(8000).identity(None), at(9000).identity(None));
        assert!(at(8000).identity(None).contains("judge"));
        assert_ne!(format!("{:?}", at(8000)), format!("{:?}", at(9000)));
    }

    #[test]
    fn the_identity_folds_in_the_rubric_source_not_its_path_nor_timeouts() {
        let with = |extra: &str| {
            parse(&format!(
                "[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"\n{extra}"
            ))
            .unwrap()
        };
        let (a, b) = (
            with("rubric = \"/x/a.j2\""),
            with("rubric = \"/y/b.j2\"\ntimeout_s = 5.0\nretries = 9"),
        );
        assert_eq!(
            a.identity(Some("rubric one")),
            b.identity(Some("rubric one"))
        );
        assert_ne!(
            a.identity(Some("rubric one")),
            a.identity(Some("rubric two"))
        );
        let (c, d) = (with("temperature = 0.0"), with("temperature = 0.5"));
        assert_ne!(
            c.identity(None),
            d.identity(None),
            "sampling decides verdicts"
        );
    }

    #[test]
    fn settings_that_would_count_for_nothing_or_panic_are_refused() {
        let judge = "[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"";
        let e = parse(&format!(
            "[weights]\njudge = 1.0\n{judge}\nbackoff_s = -1.0"
        ))
        .unwrap_err();
        assert!(e.contains("[rewards.judge] backoff_s"), "{e}");
        let e = parse(
            "combine = \"enhance\"\n[enhance]\nprimary = \"terminal\"\nauxiliary = [\"format\"]\n\
             [weights]\nformat = 0.5\npoints = 0.2",
        )
        .unwrap_err();
        assert!(e.contains("points is not an auxiliary"), "{e}");
        let e = parse("[enhance]\nprimary = \"terminal\"\nauxiliary = [\"format\"]").unwrap_err();
        assert!(e.contains("combine is \"sum\""), "{e}");
        assert!(parse(
            "combine = \"enhance\"\n[enhance]\nprimary = \"terminal\"\nauxiliary = [\"format\"]\n\
             [weights]\nformat = 0.5"
        )
        .is_ok());
    }

    #[test]
    fn terminal_settings_and_the_judges_sampling_out_of_range_are_refused_by_key() {
        for (text, says) in [
            (
                "tau = nan",
                "[rewards] tau must be a finite number from 0 to 1; it is NaN",
            ),
            (
                "tau = 1.5",
                "[rewards] tau must be a finite number from 0 to 1; it is 1.5",
            ),
            (
                "gamma = -0.5",
                "[rewards] gamma must be a finite number from 0 to 1000000; it is -0.5",
            ),
            (
                "psi = inf",
                "[rewards] psi must be a finite number from 0 to 1000000; it is inf",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err(), says);
        }
        // A penalty past 1 is clipped with the reward (terminal.rs): allowed.
        assert!(parse("psi = 3.0\ngamma = 2.0").is_ok());
        let judge = "[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"";
        for (extra, says) in [
            (
                "temperature = nan",
                "[rewards.judge] temperature must be a finite number from 0 to 2; it is NaN",
            ),
            (
                "max_tokens = 0",
                "[rewards.judge] max_tokens must be from 1 to 16777216; it is 0",
            ),
            (
                "retries = 4294967295",
                "[rewards.judge] retries must be from 0 to 100; it is 4294967295",
            ),
        ] {
            assert_eq!(parse(&format!("{judge}\n{extra}")).unwrap_err(), says);
        }
        let rm = "[weights]\nreward_model = 1.0\n[reward_model]\nurl = \"http://h/score\"";
        assert_eq!(
            parse(&format!("{rm}\nretries = 101")).unwrap_err(),
            "[rewards.reward_model] retries must be from 0 to 100; it is 101"
        );
    }

    #[test]
    fn weights_name_the_components() {
        let c = parse("[weights]\nterminal = 0.5\npoints = 0.2").unwrap();
        assert_eq!(c.weight(Component::Terminal), 0.5);
        assert_eq!(c.weight(Component::Points), 0.2);
        assert_eq!(c.weight(Component::Format), 0.0);
        let err = parse("[weights]\nformatt = 1.0").unwrap_err();
        assert!(err.contains("formatt"), "{err}");
    }

    #[test]
    fn a_bad_rule_pattern_is_named_with_its_rule() {
        let err = parse(
            "[weights]\nrules = 1.0\n[[rules]]\nname = \"budget\"\npattern = \"(unclosed\"\ntarget = \"talk\"\nscore = -1.0",
        )
        .unwrap_err();
        assert!(
            err.contains("[[rewards.rules]] number 1 (`budget`)"),
            "{err}"
        );
        assert!(err.contains("bad pattern"), "{err}");
        let err = parse("[[rules]]\nname = \"a\"\npattern = \"x\"\ntarget = \"talk\"\nscore = 1.0")
            .unwrap_err();
        assert!(err.contains("does not name `rules`"), "{err}");
        let err =
            parse("[[rules]]\nname = \"a\"\npattern = \"x\"\ntarget = \"speech\"\nscore = 1.0")
                .unwrap_err();
        assert!(err.contains("speech"), "{err}");
    }

    #[test]
    fn a_judge_or_reward_model_used_but_missing_is_named() {
        let err = parse("[weights]\njudge = 1.0").unwrap_err();
        assert!(err.contains("no [rewards.judge]"), "{err}");
        let err =
            parse("combine = \"enhance\"\n[enhance]\nprimary = \"reward_model\"\nauxiliary = []")
                .unwrap_err();
        assert!(err.contains("no [rewards.reward_model]"), "{err}");
        let ok = parse(
            "combine = \"enhance\"\n[enhance]\nprimary = \"terminal\"\nauxiliary = [\"format\"]\nn = 2.0",
        )
        .unwrap();
        assert_eq!(ok.weight(Component::Format), 1.0);
        let err = parse("[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\n[judge.labels]\nstrategy = []")
            .unwrap_err();
        assert!(err.contains("strategy has no labels"), "{err}");
    }

    #[test]
    fn the_newer_settings_print_only_where_they_differ_so_older_run_ids_stay() {
        let judge = "[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"";
        // Older configs: their Debug (what run ids fold in) is exactly what it was.
        let old = parse(&format!(
            "[weights]\nterminal = 1.0\nlength = 0.2\njudge = 0.5\n[length]\nmin = 3\nmax = 30\n{judge}"
        ))
        .unwrap();
        let text = format!("{old:?}");
        assert!(
            text.contains("length: LengthConfig { min: 3, max: 30, outside: -1.0 }"),
            "{text}"
        );
        assert!(text.ends_with("cache: 4096 } }"), "{text}");
        for word in ["unit:", " mode:", "range:", "strategic:", "turn_reward:"] {
            assert!(!text.contains(word), "{word} in {text}");
        }
        // The paper's forms print, and so change the run id.
        let new = parse(&format!(
            "turn_reward = \"every_turn\"\n[weights]\nlength = 0.2\nstrategic = 1.0\njudge = 0.5\n\
             [length]\nunit = \"chars\"\nmin = 50\nmax = 750\n[strategic]\nturns = \"talk_and_reject\"\n\
             {judge}\nmode = \"turn\"\nrange = [-1.0, 1.0]"
        ))
        .unwrap();
        let text = format!("{new:?}");
        for word in [
            "unit: Chars",
            "strategic: StrategicConfig { turns: TalkAndReject }",
            "mode: Turn",
            "range: [-1.0, 1.0]",
            "turn_reward: EveryTurn",
        ] {
            assert!(text.contains(word), "{word} not in {text}");
        }
        assert!(new.is_per_turn(Component::Judge));
        assert!(!old.is_per_turn(Component::Judge));
    }

    #[test]
    fn a_judge_range_must_be_ordered_and_asked_for() {
        let judge = "[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"";
        let e = parse(&format!("{judge}\nmode = \"turn\"\nrange = [1.0, -1.0]")).unwrap_err();
        assert!(e.contains("low < high"), "{e}");
        // The built-in episode rubric asks for 0 to 1: another range needs the turn rubric
        // (which asks for the range) or one's own.
        let e = parse(&format!("{judge}\nrange = [-100.0, 0.0]")).unwrap_err();
        assert!(e.contains("asks for a score from 0 to 1"), "{e}");
        assert!(parse(&format!("{judge}\nmode = \"turn\"\nrange = [-100.0, 0.0]")).is_ok());
        assert!(parse(&format!(
            "{judge}\nrubric = \"mine.j2\"\nrange = [-1.0, 1.0]"
        ))
        .is_ok());
    }

    #[test]
    fn the_judges_history_rule_needs_turns_and_procedure_rules_count_as_rules() {
        let judge = "[weights]\njudge = 1.0\n[judge]\nendpoint = \"http://h/v1\"\nmodel = \"m\"";
        let e = parse(&format!("{judge}\nhistory = \"zero_if_negative\"")).unwrap_err();
        assert!(e.contains("needs mode = \"turn\""), "{e}");
        let c = parse(&format!(
            "{judge}\nmode = \"turn\"\nrange = [-100.0, 0.0]\nhistory = \"zero_if_negative\""
        ))
        .unwrap();
        assert!(c.judge_zeroes_negative_history());
        assert!(format!("{c:?}").contains("history: ZeroIfNegative"));
        // The history setting prints only where set: older run ids stay.
        let old = parse(&format!("{judge}\nmode = \"turn\"")).unwrap();
        assert!(!format!("{old:?}").contains("history"));
        // `[rewards.procedure]` feeds the `rules` component like the guardrails: used, it
        // needs the component; the component, it may be the only table.
        let e = parse("[procedure]\nbelow_target = -20.0").unwrap_err();
        assert!(e.contains("does not name `rules`"), "{e}");
        let c = parse("[weights]\nrules = 1.0\n[procedure]\nbelow_target = -20.0").unwrap();
        let p = c.procedure.as_ref().unwrap();
        assert_eq!(
            (p.four_refusals, p.raise_per_ask, p.below_target),
            (-1.0, -1.0, -20.0),
            "each rule on at −1 unless scored"
        );
        let e = parse("[weights]\nrules = 1.0\n[procedure]\nfour_refusals = nan").unwrap_err();
        assert!(e.contains("[rewards.procedure]"), "{e}");
        let e = parse("[weights]\nrules = 1.0").unwrap_err();
        assert!(e.contains("[rewards.procedure]"), "{e}");
    }

    #[test]
    fn inas_r1_is_refused_for_a_learner_that_labels_no_act() {
        let labelled = crate::game::EpisodeConfig {
            learner_acts: true,
            ..Default::default()
        };
        let unlabelled = crate::game::EpisodeConfig::default();
        let r1 = parse("[weights]\nintent_consistency = 0.2\nprice_gap = 0.2").unwrap();
        let e = r1.check_against(&unlabelled).unwrap_err();
        assert!(
            e.contains("intent_consistency") && e.contains("learner_acts = true"),
            "{e}"
        );
        assert!(r1.check_against(&labelled).is_ok());
        // Weighted 0 it counts for nothing: recorded where labels exist, never refused.
        let zero = parse("[weights]\nintent_consistency = 0.0\nprice_gap = 1.0").unwrap();
        assert!(zero.check_against(&unlabelled).is_ok());
        // The primary of an enhancement always counts.
        let primary = parse(
            "combine = \"enhance\"\n[enhance]\nprimary = \"intent_consistency\"\nauxiliary = [\"price_gap\"]",
        )
        .unwrap();
        assert!(primary.check_against(&unlabelled).is_err());
        assert!(RewardConfig::default().check_against(&unlabelled).is_ok());
    }

    #[test]
    fn a_table_run_takes_what_it_can_compute_and_refuses_the_rest_by_key() {
        // What a table honours: the terminal settings, the per-turn components every turn
        // has, weights, enhancement, per-turn rewards, a judge and a reward model.
        for text in [
            "",
            "kind = \"threshold\"\ntau = 0.9\ngamma = 0.2\npsi = 0.5\npsi_on = \"violation\"",
            "[weights]\nterminal = 1.0",
            "[weights]\nterminal = 0.5\nformat = 0.1\nlength = 0.2\nrules = 1.0\ninteractiveness = 0.1\n[[rules]]\nname = \"n\"\npattern = \"x\"\ntarget = \"talk\"\nscore = 1.0",
            "turn_reward = \"every_turn\"\n[weights]\nterminal = 1.0\nformat = 0.5",
            "[length]\nmin = 2\nmax = 9",
            "[weights]\nterminal = 1.0\npoints = 0.1",
            "combine = \"enhance\"\n[enhance]\nprimary = \"terminal\"\nauxiliary = [\"format\"]",
        ] {
            let c = parse(text).unwrap();
            assert_eq!(c.check_for_table(), Ok(()), "{text}");
        }
        // What has no meaning there, each named by its key.
        for (text, key) in [
            ("kind = \"batna\"", "[rewards] kind = \"batna\""),
            ("kind = \"sale_to_list\"", "[rewards] kind = \"sale_to_list\""),
            ("[weights]\nstrategic = 0.1", "[rewards.weights] strategic"),
            ("[weights]\nprice_gap = 1.0", "[rewards.weights] price_gap"),
            (
                "combine = \"enhance\"\n[enhance]\nprimary = \"terminal\"\nauxiliary = [\"strategic\"]",
                "[rewards.weights] strategic",
            ),
        ] {
            let err = parse(text).unwrap().check_for_table().unwrap_err().to_string();
            assert!(err.starts_with(key), "{text}: {err}");
            assert!(err.contains("table run"), "{err}");
        }
    }
}
