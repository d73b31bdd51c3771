//! The market record (issue 45): one market episode as a JSONL line, `"kind": "market"`, with
//! its metrics in its outcome, what each model call cost, and its exact replay. `dealgym run`
//! writes it and `replay --verify` checks it; it is kept beside the rulebook so the two cannot
//! drift.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::digest::{digest_json, Digest};
use crate::game::Prompts;
use crate::market::{MarketEpisode, MarketOutcome, MarketSetup, MarketTurn, Trade};
use crate::scenario::MarketScenario;
use crate::score::{market_metrics, MarketMetrics};

/// The `kind` of a market record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarketRecordKind {
    Market,
}

/// Who played a seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketSeatRecord {
    pub role: String,
    /// The player's spec (`rule:zic`, `openai:MODEL@URL`, …).
    pub player: String,
    /// The model a model seat called (absent for a scripted trader or a script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What a model call of one turn cost: its latency, what the endpoint said (usage, logprobs,
/// token ids) and the transient failures retried before the answer. Only turns a model
/// answered have one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketCallRecord {
    /// The turn's index in `turns`.
    pub turn: usize,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<crate::vocab::Call>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
}

impl MarketCallRecord {
    /// What turn `turn` cost, as the record keeps it: only a turn a model answered (one with a
    /// call) has one.
    pub fn of(turn: usize, cost: super::TurnCost) -> Option<MarketCallRecord> {
        cost.call.is_some().then_some(MarketCallRecord {
            turn,
            latency_ms: cost.latency_ms,
            call: cost.call,
            retries: cost.retries,
        })
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a market ended, with what it traded and its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketRecordOutcome {
    pub outcome: MarketOutcome,
    pub trades: Vec<Trade>,
    /// The market's metrics against its competitive equilibrium (`score::market_metrics`).
    pub metrics: MarketMetrics,
}

/// One market episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketRecord {
    /// The record format version (the two-party record's).
    pub schema: u32,
    pub run_id: String,
    pub episode_id: String,
    /// Always `market`.
    pub kind: MarketRecordKind,
    pub scenario_id: String,
    /// The scenario's content digest: replay refuses a scenario that has changed.
    pub scenario_digest: Digest,
    /// The setup: the seed, the schedule drawn from it, each seat's system prompt.
    pub setup: MarketSetup,
    pub seats: Vec<MarketSeatRecord>,
    /// Every attempt at a turn, in order.
    pub turns: Vec<MarketTurn>,
    /// What each model call cost, by turn (absent where no model played).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<MarketCallRecord>,
    pub outcome: MarketRecordOutcome,
}

/// Why a market record does not replay.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarketReplayError {
    #[error("market record {episode}: its scenario {scenario} has changed since it was played")]
    ScenarioChanged { episode: String, scenario: String },
    #[error("market record {episode}: {message}")]
    Unplayable { episode: String, message: String },
    #[error("market record {episode}: turn {turn} replays differently")]
    TurnDiffers { episode: String, turn: usize },
    #[error("market record {episode}: its outcome, trades or metrics replay differently")]
    OutcomeDiffers { episode: String },
}

impl MarketRecord {
    /// The record of an ended (or stopped) `episode`, its seats played by `players` (one spec
    /// per seat, in the market's order).
    pub fn of(
        episode: &MarketEpisode,
        run_id: &str,
        episode_id: &str,
        players: &[String],
    ) -> MarketRecord {
        let scenario = episode.scenario();
        MarketRecord {
            schema: super::RECORD_SCHEMA,
            run_id: run_id.to_string(),
            episode_id: episode_id.to_string(),
            kind: MarketRecordKind::Market,
            scenario_id: scenario.id.clone(),
            scenario_digest: digest_json(scenario),
            setup: episode.setup().clone(),
            seats: scenario
                .traders
                .iter()
                .zip(players)
                .map(|(t, p)| MarketSeatRecord {
                    role: t.role.clone(),
                    player: p.clone(),
                    model: None,
                })
                .collect(),
            turns: episode.turns().to_vec(),
            calls: Vec::new(),
            outcome: MarketRecordOutcome {
                outcome: episode.outcome().cloned().unwrap_or(MarketOutcome {
                    kind: crate::game::OutcomeKind::Error,
                    by: None,
                    detail: Some("abandoned: the market had not ended".into()),
                    error_kind: Some(crate::game::ErrorCause::Abandoned),
                }),
                trades: episode.book().trades.clone(),
                metrics: market_metrics(scenario, episode.book(), episode.turns()),
            },
        }
    }

    /// The record's GRPO group: its episode id before `-m{member}` (a run names each market
    /// `g{G}-m{M}`, [`crate::game::EpisodeSeed::episode_id`]); the whole id where it has no
    /// member.
    pub fn group_id(&self) -> &str {
        self.episode_id
            .rsplit_once("-m")
            .map_or(self.episode_id.as_str(), |(group, _)| group)
    }

    /// Replay the record on `scenario` with `prompts`: the same setup, each recorded completion
    /// stepped in order, must give the same turns, outcome, trades and metrics.
    pub fn replay(
        &self,
        scenario: &Arc<MarketScenario>,
        prompts: Arc<Prompts>,
    ) -> Result<(), MarketReplayError> {
        let played = self.replay_turns(scenario, prompts)?;
        let again = MarketRecord::of(&played, &self.run_id, &self.episode_id, &[]);
        fn json<T: Serialize>(v: &T) -> Option<serde_json::Value> {
            serde_json::to_value(v).ok()
        }
        // An episode stopped from outside (an error or an abandoned one) keeps its own ending;
        // its trades and metrics, made before it stopped, replay as any episode's.
        let stopped = self.outcome.outcome.kind == crate::game::OutcomeKind::Error;
        let same = played.turns().len() == self.turns.len()
            && (stopped || json(&again.outcome.outcome) == json(&self.outcome.outcome))
            && json(&again.outcome.trades) == json(&self.outcome.trades)
            && json(&again.outcome.metrics) == json(&self.outcome.metrics);
        if !same {
            return Err(MarketReplayError::OutcomeDiffers {
                episode: self.episode_id.clone(),
            });
        }
        Ok(())
    }

    /// The episode replayed from the record's completions on `scenario` — each turn checked as
    /// it is played, its ending not ([`MarketRecord::replay`] checks it): what `export`
    /// rebuilds a seat's view from, and where `replay --verify` finds what differs.
    pub fn replay_turns(
        &self,
        scenario: &Arc<MarketScenario>,
        prompts: Arc<Prompts>,
    ) -> Result<MarketEpisode, MarketReplayError> {
        let episode = self.episode_id.clone();
        if digest_json(scenario.as_ref()) != self.scenario_digest {
            return Err(MarketReplayError::ScenarioChanged {
                episode,
                scenario: scenario.id.clone(),
            });
        }
        let unplayable = |e: crate::table::TableError| MarketReplayError::Unplayable {
            episode: episode.clone(),
            message: e.to_string(),
        };
        let mut played = MarketEpisode::new(scenario.clone(), self.setup.clone(), prompts)
            .map_err(unplayable)?;
        for (i, turn) in self.turns.iter().enumerate() {
            if played.outcome().is_some() {
                break;
            }
            played
                .step(turn.seat, turn.completion.clone())
                .map_err(unplayable)?;
            if played.turns().get(i) != Some(turn) {
                return Err(MarketReplayError::TurnDiffers { episode, turn: i });
            }
        }
        Ok(played)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::drive_now;
    use crate::market::MarketOptions;
    use crate::negotiator::market::{MarketRule, MarketTraders};

    fn played() -> (Arc<MarketScenario>, MarketRecord) {
        let m = Arc::new(crate::scenario::generate::generate_markets(None, Some(4))[3].clone());
        let prompts = Prompts::builtin();
        let setup = MarketSetup::new(&m, &MarketOptions::default(), 5, &prompts).unwrap();
        let mut e = MarketEpisode::new(m.clone(), setup, prompts).unwrap();
        drive_now(
            &mut e,
            &mut MarketTraders(vec![Some(MarketRule::Zic); m.traders.len()]),
        )
        .unwrap();
        let players = vec!["rule:zic".to_string(); m.traders.len()];
        (m, MarketRecord::of(&e, "r", "g0-m0", &players))
    }

    #[test]
    fn a_market_records_group_seat_rewards_and_exact_calls() {
        let (_, mut r) = played();
        assert_eq!(r.group_id(), "g0");
        r.episode_id = "solo".into();
        assert_eq!(
            r.group_id(),
            "solo",
            "an id without a member is its own group"
        );
        // A seat's reward is its surplus; its calls' rewards sum to it, on the last call.
        let seat = (0..r.seats.len()).find(|&s| r.reward(s) > 0.0).unwrap();
        let rewards = r.call_rewards(seat);
        assert_eq!(
            rewards.len(),
            r.turns.iter().filter(|t| t.seat == seat).count()
        );
        assert_eq!(rewards.last().copied(), Some(r.reward(seat)));
        assert_eq!(rewards.iter().sum::<f64>(), r.reward(seat));
        // Scripted traders are played without ids: no trajectory.
        assert!(matches!(
            r.exact_calls(seat),
            Err(crate::record::NoTrajectory::NoTokens { .. })
        ));
    }

    #[test]
    fn a_market_record_round_trips_and_replays_and_a_changed_one_does_not() {
        let (m, r) = played();
        assert!(!r.outcome.trades.is_empty());
        assert_eq!(r.outcome.metrics.trades.len(), r.outcome.trades.len());
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""kind":"market""#));
        let back: MarketRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back.replay(&m, Prompts::builtin()), Ok(()));
        // A turn's text changed: it replays as another move.
        let mut changed = back.clone();
        let i = changed
            .turns
            .iter()
            .position(|t| t.quote.is_some())
            .unwrap();
        changed.turns[i].completion.text = "Thought: x\nTalk: y\nAction: [WALK_AWAY]".to_string();
        assert!(matches!(
            changed.replay(&m, Prompts::builtin()),
            Err(MarketReplayError::TurnDiffers { turn, .. }) if turn == i
        ));
        // Another scenario under the same id: refused.
        let mut other = (*m).clone();
        other.traders[0].private.limits[0] += 1;
        assert!(matches!(
            back.replay(&Arc::new(other), Prompts::builtin()),
            Err(MarketReplayError::ScenarioChanged { .. })
        ));
    }

    /// A market stopped from outside after its first trade keeps its own ending, but its
    /// trades and metrics replay as any market's: changed ones are caught.
    #[test]
    fn a_stopped_markets_trades_and_metrics_replay() {
        let (m, full) = played();
        let mut e = MarketEpisode::new(m.clone(), full.setup.clone(), Prompts::builtin()).unwrap();
        for turn in &full.turns {
            e.step(turn.seat, turn.completion.clone()).unwrap();
            if !e.book().trades.is_empty() {
                break;
            }
        }
        let stopped = MarketRecord::of(&e, "r", "g0-m0", &[]);
        assert_eq!(
            stopped.outcome.outcome.kind,
            crate::game::OutcomeKind::Error
        );
        assert_eq!(stopped.outcome.trades.len(), 1);
        assert_eq!(stopped.replay(&m, Prompts::builtin()), Ok(()));
        let mut traded_higher = stopped.clone();
        traded_higher.outcome.trades[0].price += 100;
        assert!(matches!(
            traded_higher.replay(&m, Prompts::builtin()),
            Err(MarketReplayError::OutcomeDiffers { .. })
        ));
        let mut more_efficient = stopped;
        more_efficient.outcome.metrics.realized_surplus += 1.0;
        assert!(matches!(
            more_efficient.replay(&m, Prompts::builtin()),
            Err(MarketReplayError::OutcomeDiffers { .. })
        ));
    }
}
