//! Rewards (the book's `design/metrics.md`, and `decisions/rewards.md` for the choices): what a
//! trainer optimises, per seat, from an episode's record.
//!
//! The terminal reward (`terminal.rs`), the per-turn signals — format, length, points and
//! strategic talk (`turn.rs`) — INA's reward terms (`ina.rs`), the regex rules (`rules.rs`) and
//! the hotel family's guardrails and procedure rules (`guardrails.rs`, `procedure.rs`) are pure functions of the
//! scenario, the setup and the turns, so a record can be re-rewarded under another config. The
//! LLM judge (`judge.rs`: its rubric rendering and strict verdict reading) and the reward model
//! (`reward_model.rs`: its request and response shapes) are pure here too; their HTTP calls
//! live in `llm/` and the step that makes them after an episode in `run/`. `combine.rs` makes a
//! seat's total — a weighted sum by name, or the reward enhancement R_m · (1 + sign(R_m) · E/n)
//! — and, where `[rewards] turn_reward` asks, each turn's own reward.
//!
//! This module may not do I/O, import `llm`, `run` or anything above `record`, or guess: an
//! unreadable verdict scores 0 and is counted.

mod combine;
mod config;
mod guardrails;
pub(crate) mod ina;
pub mod judge;
mod parts;
mod procedure;
pub mod reward_model;
mod rules;
mod terminal;
mod turn;

pub(crate) use combine::{combine_parts, combine_seat_parts};
pub use combine::{episode_rewards, total, EpisodeRewards};
pub use config::{
    Combine, Component, EnhanceConfig, InaConfig, InaVersion, JudgeConfig, JudgeHistory, JudgeMode,
    LengthConfig, LengthUnit, NotAtTables, PsiOn, RewardConfig, RewardKind, RewardModelConfig,
    RuleConfig, RuleTarget, ServiceCall, StrategicConfig, StrategicTurns, TurnReward,
};
pub use guardrails::GuardrailConfig;
pub use parts::Parts;
pub use procedure::ProcedureConfig;
pub(crate) use terminal::table_terminal_rewards;
pub(crate) use turn::{table_turn_signals, SignalTurn};

/// The keys of `reward_issues` in a record: what went wrong with the judge and the reward model.
pub mod issues {
    /// A judge reply that is not a verdict in the fixed format (scored 0).
    pub const JUDGE_UNREADABLE: &str = "judge_unreadable";
    /// The judge endpoint failed after its retries (no judge part).
    pub const JUDGE_FAILED: &str = "judge_failed";
    /// The reward-model endpoint failed after its retries, or answered no number (no part).
    pub const REWARD_MODEL_FAILED: &str = "reward_model_failed";

    /// Whether these issues leave the episode without a trustworthy reward: a judge or reward
    /// model that failed after its retries, so its part is missing (not zero) and the total is
    /// short of it. Such episodes stay in the log (the negotiation happened) but, like backend
    /// errors, never become training data (`export` skips them) and every summary counts them.
    /// An unreadable verdict is not one: it scores 0 by design and is only counted.
    pub fn reward_missing(issues: &std::collections::BTreeMap<String, u32>) -> bool {
        [JUDGE_FAILED, REWARD_MODEL_FAILED]
            .iter()
            .any(|k| issues.get(*k).is_some_and(|n| *n > 0))
    }
}
