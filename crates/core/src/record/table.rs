//! The record of an n-party episode: one JSON line, like a two-party record, told apart by its
//! `kind` (`"table"`; two-party records have no `kind`, so every record written before tables
//! existed reads as it always did). Seats are listed by role in the game's order; turns, offers
//! and the outcome name seats by their index in that list and carry the role beside it.
//! Views are not stored: [`TableRecord::replay`] rebuilds the episode from the scenario and the
//! raw completions, and checks it ends as recorded.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::digest::{digest_json, Digest};
use crate::game::{Completion, EpisodeSeed, OutcomeKind, Prompts};
use crate::planner::Planning;
use crate::reward::{
    combine_seat_parts, table_terminal_rewards, table_turn_signals, Component, Parts, RewardConfig,
    SignalTurn,
};
use crate::scenario::{Incentive, PartyPosition, TableFamily, TableScenario};
use crate::score::{table_metrics, TableMetrics};
use crate::table::{
    TableEpisode, TableError, TableOffer, TableOptions, TableOutcome, TableSetup, TableTurn,
};
use crate::vocab::Call;

use super::RECORD_SCHEMA;

/// What marks a line as an n-party record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// An n-party table.
    Table,
}

/// One n-party episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableRecord {
    /// The record format version (the two-party record's).
    pub schema: u32,
    /// The run the episode belongs to.
    pub run_id: String,
    /// Unique within the run: `g{group}-m{member}`.
    pub episode_id: String,
    /// Always `table`.
    pub kind: RecordKind,
    /// The GRPO group within the run, `g{group}`: its members share one schedule.
    pub group_id: String,
    /// The run seed, the group and the member the episode's seeds come from.
    pub seeds: EpisodeSeed,
    /// The scenario's id (`deliberation:GAME:VARIANT`).
    pub scenario_id: String,
    pub family: TableFamily,
    /// The scenario's content digest: replay refuses a scenario that has changed.
    pub scenario_digest: Digest,
    /// The fingerprint of the table's prompt templates (`Prompts::table_digest`).
    pub prompts_digest: String,
    /// Where an imported episode came from (a log file); absent for played ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The episode this one continues (`run --prefixes`, `replay --branch-from`): its first
    /// `prefix_turns` turns are the parent's. Absent for a table played from the start, and in
    /// records older than the field (the two-party record's `parent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<super::Parent>,
    /// What the table was set up with (retries, regulated roles, turn format).
    pub options: TableOptions,
    /// The setup: the seed, the schedule drawn from it, each seat's system prompt.
    pub setup: TableSetup,
    /// Who sat where, in the game's order.
    pub seats: Vec<TableSeatRecord>,
    /// Every attempt at a turn, in order.
    pub turns: Vec<TableTurnRecord>,
    /// Every offer made, with who accepted it at the end.
    pub offers: Vec<TableOffer>,
    /// How it ended, with each role's score and ρ and the metrics.
    pub outcome: TableRecordOutcome,
    /// Each role's total reward under `reward_config`: the terminal reward alone by default
    /// (ρ on a deal, 0 without one, −ψ = −1 for the seat that forfeited), else the
    /// combination of its components in `reward_parts`, as a two-party record's `rewards`.
    pub rewards: BTreeMap<String, f64>,
    /// Each role's named reward components, unweighted (the two-party record's
    /// `reward_parts`, by role). Absent under the terminal reward alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_parts: BTreeMap<String, Parts>,
    /// Per turn, in the order of `turns`, under `[rewards] turn_reward = "every_turn"` or
    /// `"last_turn"`: that turn's own reward for the seat that moved (the two-party record's
    /// `turn_rewards`). Absent otherwise: every turn is then worth its seat's `rewards`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_rewards: Vec<Option<f64>>,
    /// What went wrong getting the judge's and the reward model's components, counted (the
    /// two-party record's `reward_issues`). Absent when nothing did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_issues: BTreeMap<String, u32>,
    /// The first error behind each failed issue (the two-party record's `reward_errors`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_errors: BTreeMap<String, String>,
    /// The reward settings `rewards` were computed under (the run's `[rewards]`, as a
    /// two-party record keeps them), so `replay --verify` checks them under the same; absent
    /// under the built-in settings, and in records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_config: Option<RewardConfig>,
}

/// One seat of a table record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TableSeatRecord {
    /// The seat's name (`sportco`, `mayor`, …).
    pub role: String,
    /// The party's name in the game's text.
    pub name: String,
    /// Where it sits in the game's rules (`lead`, `veto`, `target`, `player`).
    pub position: PartyPosition,
    /// What it is asked to want.
    pub incentive: Incentive,
    /// The player spec, secrets removed (`rule:deliberation`, `openai:MODEL@URL`, …).
    pub player: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One attempt at a turn, with what the call cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableTurnRecord {
    /// The role of the seat that made the attempt.
    pub role: String,
    #[serde(flatten)]
    pub turn: TableTurn,
    /// How long the call took (0 for a scripted seat).
    #[serde(default)]
    pub latency_ms: u64,
    /// What the endpoint said about the call (usage, logprobs, token ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Call>,
    /// Transient endpoint failures retried before the answer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// A planner seat's candidates, their values and the one it committed (the two-party
    /// turn's `planning`); absent for every other player, and in records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<Planning>,
    /// The turn's per-turn reward signals, those the config uses (`format`, `length`,
    /// `rule:NAME`, a per-turn `judge`, a per-response `reward_model`), as a two-party turn's
    /// `rewards`. Absent under the terminal reward alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rewards: BTreeMap<String, f64>,
    /// The judge's labels of the turn, by label set (a two-party turn's `labels`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How the table ended, with each party's score and ρ, and the paper's metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableRecordOutcome {
    /// The ending.
    #[serde(flatten)]
    pub outcome: TableOutcome,
    /// The agreed deal in the games' notation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deal_text: Option<String>,
    /// Each role's score of the agreed deal (absent without a deal).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scores: BTreeMap<String, i64>,
    /// Each role's ρ: its score over the best it could score (0 without a deal).
    pub rho: BTreeMap<String, f64>,
    /// The paper's four metrics and dealgym's own over all parties.
    pub metrics: TableMetrics,
}

/// What a player did beside its completion: what a driver hands [`TableRecord::of`] per turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnCost {
    pub latency_ms: u64,
    pub call: Option<Call>,
    pub retries: u32,
    /// A planner seat's candidates for the turn (kept on the turn record).
    pub planning: Option<Planning>,
}

/// An error replaying a table record.
#[derive(Debug, thiserror::Error)]
pub enum TableReplayError {
    #[error("episode {episode} was played on scenario {expected}, not {found}")]
    WrongScenario {
        episode: String,
        expected: String,
        found: String,
    },
    #[error("episode {episode}: scenario {scenario} changed since the run (digest {found}, the record's {expected})")]
    ScenarioChanged {
        episode: String,
        scenario: String,
        expected: Digest,
        found: Digest,
    },
    #[error("episode {episode}: the table's prompt templates changed since the run")]
    TemplatesChanged { episode: String },
    #[error("episode {episode}: {source}")]
    Table { episode: String, source: TableError },
    #[error("episode {episode}: replayed, {what} differs from the record")]
    Differs { episode: String, what: String },
}

/// Who sat where: a seat's player spec and model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TablePlayerInfo {
    pub player: String,
    pub model: Option<String>,
}

impl TableRecord {
    /// The record of a played (or imported) `episode`.
    pub fn of(
        run_id: &str,
        seeds: EpisodeSeed,
        episode: &TableEpisode,
        options: &TableOptions,
        players: &[TablePlayerInfo],
        costs: &[TurnCost],
    ) -> TableRecord {
        let scenario = episode.scenario();
        let outcome = episode.outcome().cloned().unwrap_or(TableOutcome {
            kind: OutcomeKind::Error,
            by: None,
            offer: None,
            deal: None,
            detail: Some("the episode had not ended".into()),
            error_kind: None,
        });
        let seats = scenario
            .parties
            .iter()
            .enumerate()
            .map(|(i, p)| TableSeatRecord {
                role: p.role.clone(),
                name: p.name.clone(),
                position: p.position,
                incentive: p.incentive,
                player: players.get(i).map(|s| s.player.clone()).unwrap_or_default(),
                model: players.get(i).and_then(|s| s.model.clone()),
            })
            .collect();
        let turns = episode
            .turns()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let cost = costs.get(i).cloned().unwrap_or_default();
                TableTurnRecord {
                    role: scenario.parties[t.seat].role.clone(),
                    turn: t.clone(),
                    latency_ms: cost.latency_ms,
                    call: cost.call,
                    retries: cost.retries,
                    planning: cost.planning,
                    rewards: BTreeMap::new(),
                    labels: BTreeMap::new(),
                }
            })
            .collect();
        let record_outcome = record_outcome(episode, outcome);
        let mut record = TableRecord {
            schema: RECORD_SCHEMA,
            run_id: run_id.to_string(),
            episode_id: seeds.episode_id(),
            kind: RecordKind::Table,
            group_id: seeds.group_id(),
            seeds,
            scenario_id: scenario.id.clone(),
            family: scenario.family,
            scenario_digest: digest_json(scenario),
            prompts_digest: episode.prompts().table_digest().to_string(),
            source: None,
            parent: None,
            options: options.clone(),
            setup: episode.setup().clone(),
            seats,
            turns,
            offers: episode.offers().to_vec(),
            outcome: record_outcome,
            rewards: BTreeMap::new(),
            reward_parts: BTreeMap::new(),
            turn_rewards: Vec::new(),
            reward_issues: BTreeMap::new(),
            reward_errors: BTreeMap::new(),
            reward_config: None,
        };
        record.set_rewards(scenario, &RewardConfig::default());
        record
    }

    /// Reward the seats of `scenario`'s table under `config` (a run's `[rewards]`, already checked by
    /// [`RewardConfig::check_for_table`]) by the rules a two-party record is rewarded by: each
    /// turn's per-turn signals (`reward::table_turn_signals`), each role's terminal reward
    /// (`reward::table_terminal_rewards`), and its total and turn rewards made of its parts
    /// ([`TableRecord::recombine`]); the config kept in `reward_config` unless it is the
    /// built-in one (so records written without `[rewards]` stay as they were). The judge's
    /// and the reward model's parts are added afterwards, by `run`, then recombined.
    pub fn set_rewards(&mut self, scenario: &TableScenario, config: &RewardConfig) {
        let terminal = terminal_rewards(self, config);
        self.reward_config = (*config != RewardConfig::default()).then(|| config.in_force());
        self.turn_rewards = Vec::new();
        if config.is_terminal_only() {
            self.rewards = self
                .roles()
                .into_iter()
                .map(String::from)
                .zip(terminal)
                .collect();
            self.reward_parts = BTreeMap::new();
            for t in &mut self.turns {
                t.rewards = BTreeMap::new();
            }
            return;
        }
        let turns: Vec<&TableTurn> = self.turns.iter().map(|t| &t.turn).collect();
        let signals = table_turn_signals(scenario, &turns, &self.offers, config);
        let logged: Vec<bool> = (0..self.turns.len())
            .map(|i| self.is_logged_turn(i))
            .collect();
        for ((t, s), logged) in self.turns.iter_mut().zip(signals).zip(logged) {
            t.rewards = if logged { BTreeMap::new() } else { s };
        }
        self.reward_parts = self
            .roles()
            .into_iter()
            .zip(terminal)
            .map(|(role, terminal)| {
                let mut parts = Parts::default();
                if config.uses(Component::Terminal) {
                    parts.insert(Component::Terminal, terminal);
                }
                (role.to_string(), parts)
            })
            .collect();
        self.recombine(config);
    }

    /// Whether the turn at `index` is a logged prefix's (the first `prefix_turns` of a
    /// continuation, [`TableRecord::parent`]): context its seats were given, not played by
    /// them, so no reward signal, judge or export counts it — as a two-party record's
    /// (`Rules::is_logged_turn`).
    pub fn is_logged_turn(&self, index: usize) -> bool {
        self.parent.as_ref().is_some_and(|p| index < p.prefix_turns)
    }

    /// Make `rewards` the totals of `reward_parts` under `config` again, and `turn_rewards`
    /// each turn's own, after a component was added (the judge's, the reward model's), by the
    /// rule a two-party record's are made by (`reward::combine_seat_parts`). Under the
    /// terminal reward alone there is nothing to combine and the totals stay.
    pub fn recombine(&mut self, config: &RewardConfig) {
        if config.is_terminal_only() {
            return;
        }
        let roles: Vec<String> = self.roles().into_iter().map(String::from).collect();
        let movers: Vec<usize> = self.turns.iter().map(|t| t.turn.seat).collect();
        let scored: Vec<bool> = (0..movers.len()).map(|i| !self.is_logged_turn(i)).collect();
        let signals: Vec<&BTreeMap<String, f64>> = self.turns.iter().map(|t| &t.rewards).collect();
        let mut parts: Vec<Parts> = roles
            .iter()
            .map(|r| self.reward_parts.get(r).cloned().unwrap_or_default())
            .collect();
        let (totals, turn_rewards) =
            combine_seat_parts(&movers, &scored, &signals, &mut parts, config);
        self.rewards = roles.iter().cloned().zip(totals).collect();
        self.reward_parts = roles.into_iter().zip(parts).collect();
        self.turn_rewards = turn_rewards;
    }

    /// What turn `index` is worth to the seat that moved: its own reward where the record
    /// holds per-turn rewards, else the seat's total (a two-party record's `turn_reward`).
    /// `None` past the last turn.
    pub fn turn_reward(&self, index: usize) -> Option<f64> {
        let turn = self.turns.get(index)?;
        if self.turn_rewards.is_empty() {
            self.rewards.get(&turn.role).copied()
        } else {
            self.turn_rewards.get(index).copied().flatten()
        }
    }

    /// Keep what `stored` (this episode's record as written) got from the judge and the
    /// reward model — their parts, per-turn scores, the turns' labels and the issue counts —
    /// then [`recombine`](Self::recombine): what replay rebuilds a record with (a two-party
    /// record's `keep_judged`).
    pub fn keep_judged(&mut self, stored: &TableRecord, config: &RewardConfig) {
        for c in [Component::Judge, Component::RewardModel] {
            if !config.uses(c) {
                continue;
            }
            for (role, parts) in &mut self.reward_parts {
                if let Some(v) = stored.reward_parts.get(role).and_then(|p| p.get(c)) {
                    parts.insert(c, v);
                }
            }
            if config.is_per_turn(c) {
                for (turn, old) in self.turns.iter_mut().zip(&stored.turns) {
                    if let Some(v) = old.rewards.get(c.name()) {
                        turn.rewards.insert(c.name().to_string(), *v);
                    }
                }
            }
        }
        for (turn, old) in self.turns.iter_mut().zip(&stored.turns) {
            turn.labels = old.labels.clone();
        }
        self.reward_issues = stored.reward_issues.clone();
        self.reward_errors = stored.reward_errors.clone();
        self.recombine(config);
    }

    /// Whether a judge or reward model failed on this episode, leaving its reward short of a
    /// part (see [`crate::reward::issues::reward_missing`]).
    pub fn reward_missing(&self) -> bool {
        crate::reward::issues::reward_missing(&self.reward_issues)
    }

    /// The roles in seat order.
    pub fn roles(&self) -> Vec<&str> {
        self.seats.iter().map(|s| s.role.as_str()).collect()
    }

    /// Rebuild the episode from `scenario` and the recorded completions, and check that it
    /// plays out exactly as recorded (every turn, offer and the outcome). Imported logs are
    /// replayed the same way.
    pub fn replay(&self, scenario: Arc<TableScenario>) -> Result<TableEpisode, TableReplayError> {
        self.replay_with(scenario, &Prompts::builtin())
    }

    /// [`TableRecord::replay`] with the templates the episode was played with (a run's
    /// `prompts_dir` over the built-ins).
    pub fn replay_with(
        &self,
        scenario: Arc<TableScenario>,
        prompts: &Arc<Prompts>,
    ) -> Result<TableEpisode, TableReplayError> {
        self.replay_observing(scenario, prompts, |_| {})
    }

    /// [`TableRecord::replay_with`], calling `before_step` with the episode just before each
    /// recorded turn is stepped (a two-party record's `replay_observing`): what a face that
    /// reads the table as each seat moved in it (the `transitions` export's state texts) uses.
    pub fn replay_observing(
        &self,
        scenario: Arc<TableScenario>,
        prompts: &Arc<Prompts>,
        mut before_step: impl FnMut(&TableEpisode),
    ) -> Result<TableEpisode, TableReplayError> {
        let episode = self.episode_id.clone();
        if scenario.id != self.scenario_id {
            return Err(TableReplayError::WrongScenario {
                episode,
                expected: self.scenario_id.clone(),
                found: scenario.id.clone(),
            });
        }
        let found = digest_json(&*scenario);
        if found != self.scenario_digest {
            return Err(TableReplayError::ScenarioChanged {
                episode,
                scenario: scenario.id.clone(),
                expected: self.scenario_digest,
                found,
            });
        }
        if self.source.is_none()
            && !prompts.renders_table_as(&self.prompts_digest, self.options.format)
        {
            return Err(TableReplayError::TemplatesChanged { episode });
        }
        let setup = match &self.source {
            // An imported log keeps its own schedule and prompts, checked against the scenario.
            Some(_) => {
                self.setup
                    .check(&scenario)
                    .map_err(|source| TableReplayError::Table {
                        episode: episode.clone(),
                        source,
                    })?;
                self.setup.clone()
            }
            None => {
                let setup =
                    TableSetup::with_prompts(&scenario, &self.options, self.setup.seed, prompts)
                        .map_err(|source| TableReplayError::Table {
                            episode: episode.clone(),
                            source,
                        })?;
                if setup != self.setup {
                    return Err(TableReplayError::Differs {
                        episode,
                        what: "the setup (schedule or system prompts)".into(),
                    });
                }
                setup
            }
        };
        let mut replayed =
            TableEpisode::with_prompts(scenario, setup, prompts.clone()).map_err(|source| {
                TableReplayError::Table {
                    episode: episode.clone(),
                    source,
                }
            })?;
        for (i, turn) in self.turns.iter().enumerate() {
            if replayed.outcome().is_some() {
                return Err(TableReplayError::Differs {
                    episode,
                    what: format!("the ending (the replay ended before turn {i})"),
                });
            }
            let completion: Completion = turn.turn.completion.clone();
            before_step(&replayed);
            replayed
                .step(turn.turn.seat, completion)
                .map_err(|source| TableReplayError::Table {
                    episode: episode.clone(),
                    source,
                })?;
            if replayed.turns()[i] != turn.turn {
                return Err(TableReplayError::Differs {
                    episode,
                    what: format!("turn {i}"),
                });
            }
        }
        if self.outcome.outcome.kind != OutcomeKind::Error {
            if replayed.offers() != self.offers.as_slice() {
                return Err(TableReplayError::Differs {
                    episode,
                    what: "the offers".into(),
                });
            }
            if replayed.outcome() != Some(&self.outcome.outcome) {
                return Err(TableReplayError::Differs {
                    episode,
                    what: "the outcome".into(),
                });
            }
            let rescored = record_outcome(&replayed, self.outcome.outcome.clone());
            if rescored != self.outcome {
                return Err(TableReplayError::Differs {
                    episode,
                    what: "the scores, ρ or metrics".into(),
                });
            }
        }
        Ok(replayed)
    }
}

/// The outcome with each party's score, ρ and the paper's metrics.
fn record_outcome(episode: &TableEpisode, outcome: TableOutcome) -> TableRecordOutcome {
    let scenario = episode.scenario();
    let mut scores = BTreeMap::new();
    let mut rho = BTreeMap::new();
    for (seat, party) in scenario.parties.iter().enumerate() {
        let (score, r) = match (&outcome.kind, &outcome.deal) {
            (OutcomeKind::Deal, Some(deal)) => {
                let score = scenario.score(seat, deal);
                let best = scenario.best_score(seat).max(1);
                (Some(score), score as f64 / best as f64)
            }
            _ => (None, 0.0),
        };
        if let Some(score) = score {
            scores.insert(party.role.clone(), score);
        }
        rho.insert(party.role.clone(), r);
    }
    let deal_text = outcome.deal.as_ref().map(|d| scenario.render_deal(d));
    let metrics = table_metrics(episode, &outcome);
    TableRecordOutcome {
        outcome,
        deal_text,
        scores,
        rho,
        metrics,
    }
}

/// Each seat's terminal reward under `config`, in seat order, from the record alone: its
/// ending, each role's ρ and whether each seat broke the format
/// (`reward::table_terminal_rewards`).
fn terminal_rewards(record: &TableRecord, config: &RewardConfig) -> Vec<f64> {
    let roles = record.roles();
    let rho: Vec<f64> = roles
        .iter()
        .map(|role| record.outcome.rho.get(*role).copied().unwrap_or(0.0))
        .collect();
    let violated: Vec<bool> = (0..roles.len())
        .map(|seat| broke_format(record, seat))
        .collect();
    table_terminal_rewards(
        record.family,
        &record.outcome.outcome,
        &rho,
        &violated,
        config,
    )
}

/// Whether `seat` played a turn that does not count as format-ok (the one rule of the `format`
/// signal, `reward::SignalTurn::format_ok`). What `[rewards] psi_on = "violation"` charges ψ for.
fn broke_format(record: &TableRecord, seat: usize) -> bool {
    record
        .own_calls(seat)
        .any(|(_, t)| !SignalTurn::format_ok(&t.turn))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn played(seed: u64) -> (Arc<TableScenario>, TableRecord) {
        let options = TableOptions::default();
        let seeds = EpisodeSeed {
            run: seed,
            group: 0,
            member: 0,
        };
        let mut ep = crate::table::tests::episode(seeds.table_seed(), &options);
        let s = Arc::new(ep.scenario().clone());
        let mut i = 0usize;
        while let Some(seat) = ep.to_move() {
            i += 1;
            let text = if i.is_multiple_of(3) {
                format!(
                    "Thought: t{i}\nTalk: ok\nAction: [ACCEPT_DEAL] #{}",
                    ep.offers().len().max(1)
                )
            } else {
                let deal = s.all_deals().nth(i * 53 % 720).unwrap();
                format!(
                    "Thought: t{i}\nTalk: how about\nAction: [SUBMIT_DEAL] {}",
                    s.render_deal(&deal)
                )
            };
            ep.step(seat, Completion::from(text.as_str())).unwrap();
        }
        let record = TableRecord::of("run", seeds, &ep, &options, &[], &[]);
        (s, record)
    }

    #[test]
    fn a_table_record_reads_back_and_replays_exactly() {
        let (s, record) = played(3);
        let line = serde_json::to_string(&record).unwrap();
        assert!(
            line.starts_with(r#"{"schema":1,"run_id":"run","episode_id":"g0-m0","kind":"table""#)
        );
        let back: TableRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, record);
        let replayed = back.replay(s.clone()).expect("replays");
        assert_eq!(replayed.turns().len(), record.turns.len());
        // A changed completion is caught.
        let mut tampered = record.clone();
        let t = &mut tampered.turns[1].turn.completion.text;
        *t = t.replace("how about", "what about");
        assert!(matches!(
            tampered.replay(s.clone()),
            Err(TableReplayError::Differs { .. })
        ));
        // An imported record's setup naming a seat the game does not have is an error, not a panic.
        let mut imported = record.clone();
        imported.source = Some("a log".into());
        imported.setup.schedule[0].seat = 99;
        assert!(matches!(
            imported.replay(s.clone()),
            Err(TableReplayError::Table {
                source: TableError::BadSetup(_),
                ..
            })
        ));
        imported.setup.schedule[0].seat = 0;
        imported.setup.seats.pop();
        assert!(matches!(
            imported.replay(s.clone()),
            Err(TableReplayError::Table {
                source: TableError::BadSetup(_),
                ..
            })
        ));
        // A two-party record is not a table record.
        assert!(serde_json::from_str::<TableRecord>(
            r#"{"schema":1,"run_id":"r","episode_id":"g0-m0"}"#
        )
        .is_err());
    }

    #[test]
    fn rewards_are_rho_on_a_deal_and_sum_the_scores() {
        for seed in 0..20 {
            let (s, record) = played(seed);
            match record.outcome.outcome.kind {
                OutcomeKind::Deal => {
                    let deal = record.outcome.outcome.deal.clone().unwrap();
                    for (seat, p) in s.parties.iter().enumerate() {
                        let rho = s.score(seat, &deal) as f64 / s.best_score(seat) as f64;
                        assert_eq!(record.rewards[&p.role], rho);
                    }
                }
                OutcomeKind::FormatForfeit => {}
                _ => assert!(record.rewards.values().all(|r| *r == 0.0)),
            }
        }
    }

    #[test]
    fn rewards_follow_the_reward_config_and_keep_it() {
        use crate::reward::RewardKind;
        let (s, played) = played(3);
        // Written without `[rewards]`: no `reward_config` key, the line as it always was.
        let line = serde_json::to_string(&played).unwrap();
        assert!(!line.contains("reward_config"), "{line}");
        // The reward reads the record's ending and ρ alone: the same record as a deal where
        // the six seats reach ρ 0.1 … 0.6, under τ = 0.35, γ = 0.3.
        let mut record = played.clone();
        record.outcome.outcome.kind = OutcomeKind::Deal;
        record.outcome.outcome.by = Some(0);
        for (i, rho) in record.outcome.rho.values_mut().enumerate() {
            *rho = 0.1 * (i + 1) as f64;
        }
        let config = RewardConfig {
            kind: RewardKind::Threshold,
            tau: 0.35,
            gamma: 0.3,
            ..RewardConfig::default()
        };
        let mut rewarded = record.clone();
        rewarded.set_rewards(&s, &config);
        for (role, rho) in &record.outcome.rho {
            let expected = if *rho < 0.35 { -0.3 } else { *rho };
            assert_eq!(rewarded.rewards[role], expected, "{role} at ρ {rho}");
        }
        assert_eq!(rewarded.rewards.values().filter(|r| **r == -0.3).count(), 3);
        assert_eq!(rewarded.reward_config, Some(config.in_force()));
        // Back under the built-in settings: ρ each, and no config kept.
        rewarded.set_rewards(&s, &RewardConfig::default());
        assert_eq!(rewarded.rewards, record.outcome.rho);
        assert_eq!(rewarded.reward_config, None);
        // A played record rewarded under a config keeps it on its line, reads back, and
        // still replays.
        let mut kept = played.clone();
        kept.set_rewards(&s, &config);
        let line = serde_json::to_string(&kept).unwrap();
        assert!(
            line.contains(r#""reward_config":{"kind":"threshold","tau":0.35"#),
            "{line}"
        );
        let back: TableRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, kept);
        back.replay(s).expect("replays");
    }

    /// A continuation's logged prefix is context: its turns earn no reward signal, are no
    /// seat's own call (nor trainable in an export), and a format break in them costs no ψ.
    #[test]
    fn a_continuations_logged_turns_are_no_seats_own() {
        use crate::reward::PsiOn;
        let (s, played) = played(3);
        let config = RewardConfig {
            weights: [(Component::Terminal, 1.0), (Component::Format, 0.5)].into(),
            psi_on: PsiOn::Violation,
            ..RewardConfig::default()
        };
        let mut r = played.clone();
        // The first turn broke the format: it is a logged one below.
        r.turns[0].turn.parsed.format_ok = false;
        let prefix = 4;
        r.parent = Some(crate::record::Parent {
            run_id: "parent".into(),
            episode_id: "g0-m0".into(),
            prefix_turns: prefix,
        });
        r.set_rewards(&s, &config);
        for (i, t) in r.turns.iter().enumerate() {
            assert_eq!(
                t.rewards.is_empty(),
                i < prefix,
                "turn {i}: {:?}",
                t.rewards
            );
            assert_eq!(r.is_logged_turn(i), i < prefix);
        }
        let first = r.turns[0].turn.seat;
        assert!(r.own_calls(first).all(|(i, _)| i >= prefix));
        let total: usize = (0..r.seats.len())
            .map(|seat| r.own_calls(seat).count())
            .sum();
        assert_eq!(total, r.turns.len() - prefix);
        // The same break outside the prefix costs the seat ψ.
        let mut unlogged = r.clone();
        unlogged.parent = None;
        unlogged.set_rewards(&s, &config);
        let role = r.roles()[first].to_string();
        assert_ne!(r.rewards[&role], unlogged.rewards[&role]);
    }

    #[test]
    fn a_table_seat_gets_per_turn_components_and_turn_rewards_by_the_two_party_rules() {
        use crate::reward::{RuleConfig, RuleTarget, TurnReward};
        let (s, played) = played(3);
        let config = RewardConfig {
            weights: [
                (Component::Terminal, 1.0),
                (Component::Format, 0.5),
                (Component::Rules, 1.0),
            ]
            .into(),
            rules: vec![RuleConfig {
                name: "how".into(),
                pattern: "how about".into(),
                target: RuleTarget::Talk,
                score: -0.25,
            }],
            turn_reward: TurnReward::EveryTurn,
            ..RewardConfig::default()
        };
        let mut r = played.clone();
        r.set_rewards(&s, &config);
        let terminal = terminal_rewards(&played, &config);
        for (seat, role) in played.roles().into_iter().enumerate() {
            let mine: Vec<&TableTurnRecord> =
                r.turns.iter().filter(|t| t.turn.seat == seat).collect();
            let format_ok = mine
                .iter()
                .filter(|t| SignalTurn::format_ok(&t.turn))
                .count();
            let format = if mine.is_empty() {
                0.0
            } else {
                format_ok as f64 / mine.len() as f64
            };
            let asked = mine
                .iter()
                .filter(|t| t.turn.parsed.talk.as_deref() == Some("how about"))
                .count();
            let parts = &r.reward_parts[role];
            assert_eq!(parts[Component::Terminal], terminal[seat], "{role}");
            assert_eq!(parts[Component::Format], format, "{role}");
            assert_eq!(parts[Component::Rules], -0.25 * asked as f64, "{role}");
            let total = terminal[seat] + 0.5 * format - 0.25 * asked as f64;
            assert!((r.rewards[role] - total).abs() < 1e-12, "{role}");
        }
        // Each turn's own reward: its format and rule signals, and its seat's terminal part.
        assert_eq!(r.turn_rewards.len(), r.turns.len());
        for (i, t) in r.turns.iter().enumerate() {
            let seat = t.turn.seat;
            let format = if SignalTurn::format_ok(&t.turn) {
                1.0
            } else {
                0.0
            };
            let rule = if t.turn.parsed.talk.as_deref() == Some("how about") {
                -0.25
            } else {
                0.0
            };
            let expected = terminal[seat] + 0.5 * format + rule;
            assert_eq!(t.rewards["format"], format);
            assert!(
                (r.turn_rewards[i].unwrap() - expected).abs() < 1e-12,
                "turn {i}"
            );
            assert_eq!(r.turn_reward(i), r.turn_rewards[i]);
        }
        // Each of seat 0's calls is paid its own turn's reward (every turn's, under every_turn).
        let seat_0: Vec<f64> = r
            .turns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.turn.seat == 0)
            .map(|(i, _)| r.turn_rewards[i].unwrap())
            .collect();
        assert_eq!(r.call_rewards(0), seat_0);
        // The record reads back (old records lack every new field: they still read).
        let back: TableRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // Back under the built-in settings, the new fields are gone again.
        r.set_rewards(&s, &RewardConfig::default());
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(line, serde_json::to_string(&played).unwrap());
    }

    #[test]
    fn a_table_record_older_than_reward_config_still_reads_and_replays() {
        // A line as written before `reward_config` existed: every field but that one.
        let (s, record) = played(5);
        let mut value = serde_json::to_value(&record).unwrap();
        let fields = value.as_object_mut().unwrap();
        assert!(fields.remove("reward_config").is_none());
        let old_line = serde_json::to_string(&value).unwrap();
        let back: TableRecord = serde_json::from_str(&old_line).unwrap();
        assert_eq!(back.reward_config, None);
        assert_eq!(back, record);
        back.replay(s).expect("replays");
    }
}
