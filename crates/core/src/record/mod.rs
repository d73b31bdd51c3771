//! Episode records (the book's `design/record.md`): one JSON line per episode, versioned, with
//! everything needed to rebuild the episode exactly — scenario id and digest, setup, seeds, the
//! prompt templates' fingerprint, every raw completion — and what came of it. Views are not stored;
//! [`EpisodeRecord::replay`] rebuilds them.
//!
//! This module is the one home of the record file: its type, the streaming reader every surface
//! reads records with (`reader.rs`, and `files.rs` over several files), the rule that makes two
//! records one episode (`duplicates.rs`), the writer `run` appends with (`writer.rs`) and replay
//! (`replay.rs`), and the one rule that turns a seat's exact token ids into a trainer's
//! trajectory (`trajectory.rs`). It plays no episodes and talks to no endpoint; it sits below
//! `run`, which imports it, and above `game`, `score` and `reward`, whose results it stores.

mod duplicates;
mod files;
mod kind;
mod market;
mod player;
mod prompt_cost;
mod reader;
mod replay;
mod table;
mod tail;
mod trajectory;
mod turn;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::campaign::DealLedger;
use crate::digest::{Digest, Fnv1a64};
use crate::game::{Completion, Episode, EpisodeSeed, Outcome, OutcomeKind, PerSeat, Seat, Setup};
use crate::reward::{combine_parts, episode_rewards, Component, Parts, RewardConfig};
use crate::scenario::Scenario;
use crate::scenario::{Family, Role};
use crate::score::{
    anchor_point, episode_metrics, oracle, proposals, turn_cap, Aggregate, AnchorPoint,
    EpisodeMetrics, EpisodeValues, Oracle, Probe, Weights,
};
use crate::vocab::Call;

pub use duplicates::{Duplicates, EpisodeKey, OnDuplicate};
pub use files::{record_files_in, Located, RecordFiles};
pub use kind::{episode_kind, holds_both_kinds, records_kind, PassedOver, RecordsKind};
pub use market::{
    MarketCallRecord, MarketRecord, MarketRecordKind, MarketRecordOutcome, MarketReplayError,
    MarketSeatRecord,
};
pub use player::{PlayerSpec, SeatKind};
pub use prompt_cost::{seat_calls, CallCost, PromptCost, PromptCosts};
pub use reader::{ReadError, RecordReader};
pub use replay::{ReplayError, TemplateDiff};
pub use table::{
    RecordKind, TablePlayerInfo, TableRecord, TableRecordOutcome, TableReplayError,
    TableSeatRecord, TableTurnRecord, TurnCost,
};
pub use tail::{cut_off_tail, read_appended, Cut, Tail, TailError};
pub use trajectory::{
    episode_calls, market_calls, table_calls, ExactCalls, NoTrajectory, Trajectory,
};
pub use turn::{Annotation, TurnRecord};
pub use writer::{
    append_notes, cut_note, refuse_output_among_inputs, scan_existing, Existing, OutputLock,
    RecordWriter, WriteError,
};

/// The record format version this build writes.
pub const RECORD_SCHEMA: u32 = 1;

/// What went wrong with the judge and the reward model over many records: the issue counts,
/// the episodes whose reward is short of a failed part, and the first error of each kind —
/// what a run's, an eval's and a report's summaries say about rewards.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RewardIssueCounts {
    /// `reward_issues` summed over the records.
    pub(crate) issues: BTreeMap<String, usize>,
    /// Records whose reward is short of a failed part ([`EpisodeRecord::reward_missing`]).
    pub missing: usize,
    /// The first error behind each failed issue kind.
    pub(crate) errors: BTreeMap<String, String>,
}

impl RewardIssueCounts {
    pub fn add(&mut self, r: &EpisodeRecord) {
        for (issue, n) in &r.reward_issues {
            *self.issues.entry(issue.clone()).or_default() += *n as usize;
        }
        self.missing += usize::from(r.reward_missing());
        for (issue, why) in &r.reward_errors {
            self.errors
                .entry(issue.clone())
                .or_insert_with(|| why.clone());
        }
    }

    /// One line of counts (`judge_failed 3, judge_unreadable 1`), or `None` when nothing went
    /// wrong.
    pub fn counts(&self) -> Option<String> {
        let counts: Vec<String> = self
            .issues
            .iter()
            .map(|(issue, n)| format!("{issue} {n}"))
            .collect();
        (!counts.is_empty()).then(|| counts.join(", "))
    }

    /// One warning if the judge or the reward model failed or answered unreadably: how often,
    /// the first error of each kind, and what it means for the data.
    pub fn warning(&self) -> Option<String> {
        let mut text = format!("warning: reward issues: {}", self.counts()?);
        if self.missing > 0 {
            text.push_str(&format!(
                "; {} episodes have a reward short of a failed part (kept in the log, marked \
                 in `reward_issues`; `export` skips them)",
                self.missing
            ));
        }
        for (issue, why) in &self.errors {
            text.push_str(&format!("\n  first {issue}: {why}"));
        }
        Some(text)
    }
}

/// One episode, as written to the run's JSONL file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EpisodeRecord {
    /// The record format version ([`RECORD_SCHEMA`] for what this build writes).
    pub schema: u32,
    /// The run the episode belongs to (the same in every shard of one run).
    pub run_id: String,
    /// Unique within the run: `g{group}-m{member}`.
    pub episode_id: String,
    /// The GRPO group within the run, `g{group}`: its members share one setup.
    pub group_id: String,
    pub seeds: EpisodeSeed,
    /// The scenario's id, which carries the dataset's own identifier.
    pub scenario_id: String,
    pub family: Family,
    /// The scenario's content digest ([`Scenario::digest`](crate::scenario::Scenario::digest)):
    /// replay refuses a scenario that has changed. Absent from records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_digest: Option<Digest>,
    /// Who sat in each seat.
    pub seats: PerSeat<SeatRecord>,
    /// The fingerprint of every prompt template the episode was played with
    /// ([`Prompts::fingerprint`](crate::game::Prompts::fingerprint)): replay refuses other
    /// templates. Absent from records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_digest: Option<Digest>,
    /// The templates played with that were not the built-ins of the build that wrote the record
    /// (a `prompts_dir`), each with the digest of its source, so a refused replay can name them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompt_overrides: BTreeMap<String, Digest>,
    /// The seat that moved first.
    pub first_mover: Seat,
    /// The full setup the episode was played under (roles, regulation, floors, rules).
    pub setup: Setup,
    /// Every attempt at a turn, in the order played (a retried completion is a turn too).
    pub turns: Vec<TurnRecord>,
    /// How the episode ended, with its metrics.
    pub outcome: RecordOutcome,
    /// The total reward of each seat under the run's `[rewards]` config: the terminal reward
    /// alone by default, else the combination of the components in `reward_parts`.
    pub rewards: PerSeat<f64>,
    /// Each named reward component's episode value per seat, unweighted (`terminal`,
    /// `format`, `length`, `points`, `strategic`, `rules`, `judge`, `reward_model`: those the
    /// config uses). Absent under the terminal reward alone.
    #[serde(default, skip_serializing_if = "no_parts")]
    pub reward_parts: PerSeat<Parts>,
    /// Per turn, in the order of `turns`, under `[rewards] turn_reward = "every_turn"` or
    /// `"last_turn"`: that turn's own reward for the seat that moved — its weighted per-turn
    /// signals and, as the setting says, the seat's episode-level parts
    /// (combined as the totals are); `null` for a logged prefix's turns. Absent
    /// otherwise: every turn is then worth its seat's `rewards` ([`Self::turn_reward`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_rewards: Vec<Option<f64>>,
    /// What went wrong getting the judge's and the reward model's components, counted
    /// (`judge_unreadable`, `judge_failed`, `reward_model_failed`; see
    /// [`crate::reward::issues`]). Absent when nothing did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_issues: BTreeMap<String, u32>,
    /// The first error behind each failed issue of this episode (`judge_failed`,
    /// `reward_model_failed`): what the endpoint answered, or why no call was made.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_errors: BTreeMap<String, String>,
    /// Wall-clock facts (latencies, retries): the only part that differs between two runs with
    /// the same seed and the same model outputs. Drop this key to compare records.
    #[serde(default)]
    pub timing: Timing,
    /// The preset the episode's run was configured with (`--preset`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The reward settings `rewards` were computed under (the run's `[rewards]`, less the
    /// judge's and the reward model's addresses and keys): with `setup.rules`, every rule the
    /// episode was played and scored by. Absent from records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_config: Option<RewardConfig>,
    /// The episode this one was branched from (`dealgym replay --branch-from`): its first
    /// `prefix_turns` turns are the parent's. Absent for an episode played from the start, and
    /// in records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
    /// The training run and step whose policy played the episode, where a trainer's adapter
    /// played it (`dealgym.trl`'s `training_run`): `dealgym report` charts its figures per
    /// step. Absent outside training, and in records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingStep>,
    /// A campaign's deal (`run --campaigns`): the campaign, the deal's place in it, and what
    /// it did to the ledger of the seat that carries it (before, after, the BATNA, the gain
    /// over it). The ledger as the deal found it is in `setup.seats.*.campaign`. Absent
    /// outside campaigns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<DealLedger>,
    /// Where a seat faced a built-in rule (`rule:NAME`): the best ρ any play of that seat
    /// could reach against it on this scenario and setup, and the seat's regret (that ρ − the
    /// ρ it reached; a failure at its no-deal value), as `score::oracle` searches it (its
    /// bounds are the book's evaluation guide's). Absent against every other player, on
    /// families the oracle does not search (bundle, hotel), on continuations, in records a
    /// Python `Game` writes (its opponent played in process; the search is `run`'s, `eval`'s
    /// and `serve`'s), and in records older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<Oracle>,
    /// Belief probes (`[probes] beliefs = true`): each time a model seat was asked, before one
    /// of its turns and never forwarded, for its estimate of the other side's private values,
    /// with the answer as written, what was read of it and its score against the scenario
    /// (`score::Probe`; the book's evaluation guide, "Does it know what the other side
    /// wants?"). The probe calls are counted here alone, never in the turns, and never change
    /// the episode. Absent without probes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
}

fn no_parts(parts: &PerSeat<Parts>) -> bool {
    parts.learner.is_empty() && parts.opponent.is_empty()
}

/// Where a branched episode comes from: the parent episode and how many of its turns (attempts,
/// in record order) were replayed before the new players took over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Parent {
    pub run_id: String,
    pub episode_id: String,
    pub prefix_turns: usize,
}

/// Which policy played an episode during training: the run (a name the trainer gives it, e.g.
/// `lr-1e-5` beside its control `lr-0`) and the trainer's optimizer step when the episode was
/// sampled (0: the policy before any update).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct TrainingStep {
    /// The training run's name: two runs over the same seeds need different names.
    pub run: String,
    /// The optimizer step whose policy sampled the episode (0: before any update).
    pub step: u64,
}

/// Who sat in a seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeatRecord {
    /// The seat's role in the scenario.
    pub role: Role,
    /// The player spec with any secret removed, and the kind of party it names.
    pub player: PlayerSpec,
    /// The name the seat's player was given in an eval (`--player NAME=SPEC`), which tables
    /// group by (falling back to `player`). Absent from plain runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model, for a seat a model played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The name of the persona the seat played with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// Whether regulation applied to the seat (`setup.seats` holds its floor).
    pub regulated: bool,
    /// The seat's rendered system prompt.
    pub system_prompt: String,
    /// The sampling seed sent to the endpoint for this seat.
    pub sampling_seed: u64,
}

/// The outcome with its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordOutcome {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub metrics: EpisodeMetrics,
}

impl RecordOutcome {
    /// The record's outcome of `episode`, once it has ended: how it ended and its metrics (the
    /// one rule for both: [`EpisodeRecord::from_episode`] writes it, and a caller that wants
    /// the outcome alone, Python's `Game.outcome`, reads it without building the record).
    pub fn of(episode: &Episode) -> Option<RecordOutcome> {
        let outcome = episode.outcome()?.clone();
        let metrics = episode_metrics(
            episode.scenario(),
            episode.setup(),
            episode.turns(),
            outcome.kind,
            outcome.terms.as_ref(),
            &outcome.utility,
        );
        Some(RecordOutcome { outcome, metrics })
    }
}

/// Timing of the episode.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Timing {
    pub wall_ms: u64,
    /// Latency of each turn's call, in the order of `turns`.
    #[serde(default)]
    pub turn_ms: Vec<u64>,
    /// Endpoint retries (transient failures) per turn, in the order of `turns`.
    #[serde(default)]
    pub call_retries: Vec<u32>,
    /// The replica that served each turn's call (its index in the player's `endpoints`), in
    /// the order of `turns`; `null` for a turn no replica pool served (a rule seat, a seat
    /// with one endpoint). Absent when no turn of the episode was served by a pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_replica: Vec<Option<u32>>,
}

/// [`EpisodeRecord::key`] from the two ids, for readers that keep only them.
pub(crate) fn episode_key(run_id: &str, episode_id: &str) -> u64 {
    let mut h = Fnv1a64::new();
    h.field(run_id.as_bytes());
    h.field(episode_id.as_bytes());
    h.finish().0
}

/// The identity of an episode within a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordMeta {
    pub run_id: String,
    pub seeds: EpisodeSeed,
    /// The scenario's digest, computed once when the scenario was loaded (not per episode).
    pub scenario_digest: Digest,
    pub players: PerSeat<PlayerInfo>,
}

/// How a player is described in a record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlayerInfo {
    pub spec: PlayerSpec,
    pub model: Option<String>,
}

impl EpisodeRecord {
    /// Build the record of an ended episode. `calls` are what the endpoint said about each
    /// turn's call, in the order of the turns (a turn past their end has none).
    pub fn from_episode(
        episode: Episode,
        meta: RecordMeta,
        rewards: &RewardConfig,
        timing: Timing,
        calls: impl IntoIterator<Item = Option<Call>>,
    ) -> Option<Self> {
        let prompts_digest = episode.prompts().fingerprint();
        let prompt_overrides = episode.prompts().overrides().clone();
        let RecordOutcome { outcome, metrics } = RecordOutcome::of(&episode)?;
        let (scenario, setup, prompts, turns, _) = episode.into_parts();
        let rewarded = episode_rewards(&scenario, &setup, &turns, &outcome, rewards);
        let campaign = setup.campaign().map(|(seat, standing)| {
            let closed = (outcome.kind == OutcomeKind::Deal).then(|| {
                let price = outcome.terms.as_ref().and_then(|t| t.price());
                (outcome.utility[seat], price)
            });
            standing.settle(seat, closed)
        });
        let mut calls = calls.into_iter();
        let turns = turns
            .into_iter()
            .zip(rewarded.turns)
            .map(|(turn, signals)| TurnRecord {
                rewards: signals,
                ..TurnRecord::new(turn, calls.next().flatten())
            })
            .collect();
        let seeds = meta.seeds;
        let seats = PerSeat::from_fn(|seat| SeatRecord {
            role: setup.seats[seat].role,
            player: meta.players[seat].spec.clone(),
            name: None,
            model: meta.players[seat].model.clone(),
            persona: setup.seats[seat].persona.as_ref().map(|p| p.name.clone()),
            regulated: setup.seats[seat].regulated,
            system_prompt: prompts[seat].clone(),
            sampling_seed: seeds.sampling_seed(seat),
        });
        Some(EpisodeRecord {
            schema: RECORD_SCHEMA,
            run_id: meta.run_id,
            episode_id: seeds.episode_id(),
            group_id: seeds.group_id(),
            seeds,
            scenario_id: scenario.id.clone(),
            family: scenario.family,
            scenario_digest: Some(meta.scenario_digest),
            seats,
            prompts_digest: Some(prompts_digest),
            prompt_overrides,
            first_mover: setup.first_mover,
            setup,
            turns,
            outcome: RecordOutcome { outcome, metrics },
            rewards: rewarded.total,
            reward_parts: rewarded.parts,
            turn_rewards: rewarded.turn_rewards,
            reward_issues: BTreeMap::new(),
            reward_errors: BTreeMap::new(),
            timing,
            preset: None,
            reward_config: Some(rewards.in_force()),
            parent: None,
            training: None,
            campaign,
            oracle: None,
            probes: Vec::new(),
        })
    }

    /// Make `rewards` the totals of `reward_parts` under `config` again, and `turn_rewards`
    /// each turn's own, after a component was added (the judge's — per episode in the parts,
    /// per turn on the turns — and the reward model's), by the rule that made them. Under the terminal
    /// reward alone there is nothing to combine and the totals stay.
    pub fn recombine(&mut self, config: &RewardConfig) {
        if config.is_terminal_only() {
            return;
        }
        let signals: Vec<&BTreeMap<String, f64>> = self.turns.iter().map(|t| &t.rewards).collect();
        let combined = combine_parts(
            &self.setup,
            &self.turns,
            &signals,
            &mut self.reward_parts,
            config,
        );
        self.rewards = combined.total;
        self.turn_rewards = combined.turn_rewards;
    }

    /// What turn `index` is worth to the seat that moved: its own reward where the record
    /// holds per-turn rewards (`None` for a logged prefix's turn there), else the seat's
    /// episode total. `None` past the last turn.
    pub fn turn_reward(&self, index: usize) -> Option<f64> {
        let turn = self.turns.get(index)?;
        if self.turn_rewards.is_empty() {
            Some(self.rewards[turn.seat])
        } else {
            self.turn_rewards.get(index).copied().flatten()
        }
    }

    /// Keep what `stored` (this episode's record as written) got from the judge, the reward
    /// model and `dealgym annotate` — what cannot be recomputed from the record without an
    /// endpoint: their parts (for the components `config` uses; a per-turn judge's verdicts
    /// and a per-response reward model's scores on the turns), the turns' labels and
    /// annotations and the issue counts — and the turns' dataset labels (a people's dialogue's,
    /// from the data), then [`recombine`](Self::recombine). What replay and rescore rebuild
    /// records with.
    pub fn keep_judged(&mut self, stored: &EpisodeRecord, config: &RewardConfig) {
        for seat in Seat::BOTH {
            for c in [Component::Judge, Component::RewardModel] {
                if !config.uses(c) {
                    continue;
                }
                if let Some(v) = stored.reward_parts[seat].get(c) {
                    self.reward_parts[seat].insert(c, v);
                }
            }
        }
        let per_turn: Vec<&str> = [Component::Judge, Component::RewardModel]
            .into_iter()
            .filter(|c| config.uses(*c) && config.is_per_turn(*c))
            .map(Component::name)
            .collect();
        for (turn, old) in self.turns.iter_mut().zip(&stored.turns) {
            for name in &per_turn {
                if let Some(v) = old.rewards.get(*name) {
                    turn.rewards.insert(name.to_string(), *v);
                }
            }
            turn.labels = old.labels.clone();
            turn.dataset_labels = old.dataset_labels.clone();
            turn.annotation = old.annotation.clone();
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

    pub fn kind(&self) -> OutcomeKind {
        self.outcome.outcome.kind
    }

    /// Who played `seat`, as tables name it: its eval name, else its player spec.
    pub fn player_name(&self, seat: Seat) -> &str {
        let s = &self.seats[seat];
        s.name.as_deref().unwrap_or(s.player.as_str())
    }

    /// The episode's identity as one number: its run id and episode id, hashed (FNV-1a,
    /// length-prefixed fields). Stable across builds and platforms; what a report's transcript
    /// sample ranks episodes by.
    pub fn key(&self) -> u64 {
        episode_key(&self.run_id, &self.episode_id)
    }

    /// What the bootstrap of [`Aggregate`] resamples this episode by: its run id and *group*
    /// id, hashed like [`key`](Self::key). The members of a GRPO group share one setup, so
    /// their outcomes are not independent draws: they are resampled together (a cluster
    /// bootstrap), which keeps intervals honest with `--group-size` above 1; with groups of
    /// one it is the episode itself.
    pub fn bootstrap_key(&self) -> u64 {
        episode_key(&self.run_id, &self.group_id)
    }

    /// Add this episode to an aggregate — the one way a table feeds [`Aggregate`]: its values
    /// as the record holds them ([`values_from_side_of`](Self::values_from_side_of)), with
    /// bootstrap weights drawn from [`bootstrap_key`](Self::bootstrap_key), or the `weights`
    /// given when one episode feeds several aggregates (draw them once with
    /// `Weights::of(record.bootstrap_key())`).
    pub fn add_to(&self, aggregate: &mut Aggregate, weights: Option<&Weights>) {
        self.add_from_side_of(Seat::Learner, aggregate, weights);
    }

    /// [`add_to`](Self::add_to) with `seat` in the aggregate's learner place: its ρ, reward
    /// and metrics are the aggregate's "learner" figures and the other seat's its "opponent"
    /// ones. A people's dialogue has no learner of its own; a report shows it from each side.
    pub fn add_from_side_of(
        &self,
        seat: Seat,
        aggregate: &mut Aggregate,
        weights: Option<&Weights>,
    ) {
        let values = self.values_from_side_of(seat);
        match weights {
            Some(w) => aggregate.add_weighted(w, &values),
            None => aggregate.add(self.bootstrap_key(), &values),
        }
    }

    /// What an [`Aggregate`] takes from this episode, with `seat` in its learner place: the
    /// ending, ρ, utility, reward and metrics the record holds; whether each seat bought; the
    /// turn cap (`score::turn_cap`) and each seat's deal proposals (`score::proposals`), both
    /// read from the setup and the turns, so records written before those figures existed
    /// give them too.
    pub fn values_from_side_of(&self, seat: Seat) -> EpisodeValues {
        let (o, metrics) = (&self.outcome.outcome, &self.outcome.metrics);
        let side = |v: &PerSeat<f64>| PerSeat::new(v[seat], v[seat.other()]);
        let proposals = proposals(&self.turns, &self.setup.rules);
        EpisodeValues {
            kind: o.kind,
            rho: side(&o.rho),
            utility: side(&o.utility),
            rewards: side(&self.rewards),
            metrics: EpisodeMetrics {
                seats: PerSeat::new(
                    metrics.seats[seat].clone(),
                    metrics.seats[seat.other()].clone(),
                ),
                ..metrics.clone()
            },
            buyer: PerSeat::new(seat, seat.other()).map(|_, s| self.seats[*s].role == Role::Buyer),
            turn_cap: turn_cap(&self.setup.rules, &self.turns),
            proposals: PerSeat::new(proposals[seat], proposals[seat.other()]),
            regret: PerSeat::new(seat, seat.other()).map(|_, s| {
                self.oracle
                    .as_ref()
                    .filter(|o| o.seat == *s)
                    .map(|o| o.regret)
            }),
        }
    }

    /// Where the first proposal and the deal price of this episode sat, for the anchoring
    /// slope ([`crate::score::Anchoring`]); `None` unless it ended in a deal on a price.
    pub fn anchor_point(&self) -> Option<AnchorPoint> {
        anchor_point(
            &self.turns,
            &self.setup.rules,
            &self.outcome.outcome,
            &self.outcome.metrics,
            self.setup.seats.map(|_, s| s.role),
        )
    }

    /// Whether a person played `seat`: in one of the people's own dialogues, imported from a
    /// dataset by `dealgym dialogues import`, or at the play page (`dealgym play`).
    pub fn played_by_person(&self, seat: Seat) -> bool {
        self.seats[seat].player.is_person()
    }

    /// Whether a person played either seat (a dataset's dialogue, or a game of the play page).
    pub fn has_person(&self) -> bool {
        Seat::BOTH.iter().any(|s| self.played_by_person(*s))
    }

    /// Whether people played both seats: one of a dataset's own dialogues.
    pub fn is_people_dialogue(&self) -> bool {
        Seat::BOTH.iter().all(|s| self.played_by_person(*s))
    }

    /// The oracle of this episode (see [`EpisodeRecord::oracle`]): the seat that faced a
    /// built-in rule (the learner where both did), the best ρ it could have reached against
    /// the rule on `scenario` (the episode's, as played) and its regret. `None` where no seat
    /// faced a rule or the oracle refuses the episode (see `score::oracle`).
    pub fn oracle_of(&self, scenario: &Arc<Scenario>) -> Option<Oracle> {
        let rule = |seat: Seat| self.seats[seat].player.rule();
        let seat = Seat::BOTH.into_iter().find(|s| rule(s.other()).is_some())?;
        let tactic = rule(seat.other())?;
        let rule_seed = self.seats[seat.other()].sampling_seed;
        let best = oracle(scenario, &self.setup, seat, tactic, rule_seed).ok()?;
        Some(Oracle::new(seat, best, self.outcome.outcome.rho[seat]))
    }

    /// The completions in the order they were played, to rebuild the episode.
    pub fn completions(&self) -> impl Iterator<Item = Completion> + '_ {
        self.turns.iter().map(|t| t.completion())
    }
}
