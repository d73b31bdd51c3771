//! One live episode of the server: a [`Driver`] whose external seats are fed by clients and
//! whose other seat is played in-process, what a seat sees of it (OpenEnv's observation) and
//! its state, as the messages of [`super::wire`]; the reset kwargs that start one.

use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::error::ServeError;
use super::ids::IdClaim;
use super::memory::view_bytes;
use super::secret;
use super::wire::{EnvState, EpisodeState, Info, Observation, StepAnswer, TokenIds};
use crate::agents::Played;
use crate::game::{Completion, FirstMover, Message, PerSeat, Seat};
use crate::llm::{LlmClient, TokenApi};
use crate::observation::SeatState;
use crate::protocol::TurnFormat;
use crate::record::{EpisodeRecord, RecordOutcome};
use crate::run::Driver;
use crate::scenario::{Family, MarketFamily, Role, TableFamily};
use crate::vocab::{LogprobsMismatch, NextPrompt};

/// The spec recorded for a seat played by a client of the server.
pub(crate) const EXTERNAL: &str = "external";

/// What a reset may ask for (OpenEnv's reset kwargs; the native REST create body; MCP's
/// `start_negotiation` arguments).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetArgs {
    /// Seeds the setup (roles, first mover, personas) and the opponent's sampling; the same
    /// seed and scenario give the same setup. Default: a server counter.
    pub seed: Option<u64>,
    /// The id the episode gets (in the log too); default `s{N}`.
    pub episode_id: Option<String>,
    /// A two-party scenario's id, or an n-party table's or a market's (OpenEnv plays a table as
    /// the one seat `learner_role` names, every other seat by `rule:deliberation`, at a market
    /// by `rule:zic` or the scripted trader `opponent` names).
    pub scenario_id: Option<String>,
    pub family: Option<ResetFamily>,
    /// With `family`: the index among that family's scenarios; alone: among all.
    pub index: Option<usize>,
    /// The learner's role: a two-party role (`buyer`, …), or at a table the role the client
    /// plays (`party_0`, …), which a table reset must name.
    pub learner_role: Option<LearnerRole>,
    /// A rule, script or configured player spec, or `external` for self-play from outside; at
    /// OpenEnv's table only `rule:deliberation`, at its market the other traders' scripted
    /// trader (`rule:zic`, `rule:sniper`, `rule:truthful`).
    pub opponent: Option<String>,
    pub first_mover: Option<FirstMover>,
    /// Overrides of the `[episode]` rules table (max_rounds, reject_loop, …).
    pub rules: Option<serde_json::Map<String, Value>>,
    /// Token-exact mode: the learner's own policy server, whose chat template and tokenizer
    /// give the ids each observation tells the client to append.
    pub tokens: Option<TokensArgs>,
}

/// A reset's `family`: a two-party family, an n-party one (`deliberation`: a table OpenEnv
/// plays as one seat), or `market` (a market OpenEnv plays as one trader).
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum ResetFamily {
    Party(Family),
    Table(TableFamily),
    Market(MarketFamily),
}

impl ResetFamily {
    pub fn name(self) -> &'static str {
        match self {
            ResetFamily::Party(family) => family.name(),
            ResetFamily::Table(family) => family.name(),
            ResetFamily::Market(family) => family.name(),
        }
    }
}

impl<'de> Deserialize<'de> for ResetFamily {
    /// By name, either kind's; an unknown name is refused naming every family.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let named = || Value::String(name.clone());
        if let Ok(family) = serde_json::from_value(named()) {
            return Ok(ResetFamily::Party(family));
        }
        if let Ok(family) = serde_json::from_value(named()) {
            return Ok(ResetFamily::Table(family));
        }
        if let Ok(family) = serde_json::from_value(named()) {
            return Ok(ResetFamily::Market(family));
        }
        let known: Vec<&str> = Family::ALL
            .iter()
            .map(|f| f.name())
            .chain([
                TableFamily::Deliberation.name(),
                MarketFamily::Market.name(),
            ])
            .collect();
        Err(serde::de::Error::custom(format!(
            "unknown family `{name}`: one of {}",
            known.join(", ")
        )))
    }
}

/// A reset's `learner_role`: a two-party role, or the role of a table's seat (its scenario's
/// party names, `party_0`, …).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LearnerRole {
    Party(Role),
    Table(String),
}

impl LearnerRole {
    /// The role as a two-party episode takes it; a name that is none is refused as the
    /// role's own parse refuses it.
    pub(super) fn party(&self) -> Result<Role, ServeError> {
        match self {
            LearnerRole::Party(role) => Ok(*role),
            LearnerRole::Table(name) => serde_json::from_value(Value::String(name.clone()))
                .map_err(|e| ServeError::Validation(format!("learner_role: {e}"))),
        }
    }

    /// The role as a table names it.
    pub(super) fn name(&self) -> &str {
        match self {
            LearnerRole::Party(role) => role.name(),
            LearnerRole::Table(name) => name,
        }
    }
}

/// The `tokens` reset kwarg: the policy server the client samples from.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokensArgs {
    /// Its base URL (`http://host:port/v1` or the root).
    pub endpoint: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub token_api: TokenApi,
}

/// A session's token-exact state: the client of the learner's policy server, and the prompt
/// suffix each external seat was last shown (until its step records it).
pub(super) struct ExactTokens {
    client: LlmClient,
    api: TokenApi,
    pending: PerSeat<Option<NextPrompt>>,
}

impl ExactTokens {
    pub(super) fn new(client: LlmClient, api: TokenApi) -> ExactTokens {
        ExactTokens {
            client,
            api,
            pending: PerSeat::default(),
        }
    }
}

/// What the client sampled, sent with a step in token-exact mode.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    pub completion_ids: Option<Vec<u32>>,
    pub logprobs: Option<Vec<f64>>,
    pub finish_reason: Option<String>,
}

/// A finished episode as the server keeps it after its driver is gone: what `GET` and a late
/// step answer with — each seat's view and state, and the outcome — not the record, which is
/// in the log (a record holds every turn's text again, several times over).
pub struct Ended {
    pub views: PerSeat<Vec<Message>>,
    /// Each seat's last structured state, taken before the record consumed the episode.
    pub states: PerSeat<SeatState>,
    pub roles: PerSeat<Role>,
    pub scenario_id: String,
    pub family: Family,
    pub outcome: RecordOutcome,
    pub rewards: PerSeat<f64>,
}

/// One live (or just ended) episode.
pub struct Session {
    pub id: String,
    /// The hold on `id` in the log's [`IdBook`]: freed if the session is dropped unlogged.
    _claim: IdClaim,
    /// Its creator's secret, answered once when a REST client makes it (`episode_token`):
    /// what dropping it takes, its id being sequential and no secret.
    token: String,
    driver: Option<Driver>,
    ended: Option<Ended>,
    steps: u32,
    /// When the seat to move was last shown its observation: its client's latency.
    asked_at: Instant,
    tokens: Option<ExactTokens>,
    /// The scenario played, and how each seat writes its turns: what a person's move is
    /// written against (the play page's `moves`).
    scenario: std::sync::Arc<crate::scenario::Scenario>,
    formats: PerSeat<TurnFormat>,
}

impl Session {
    /// A session for a started driver, its in-process seats moved up to the first external
    /// turn; the record comes back too if the episode ended on its own.
    pub(super) async fn begin(
        claim: IdClaim,
        driver: Driver,
        tokens: Option<ExactTokens>,
    ) -> Result<(Session, Option<EpisodeRecord>), ServeError> {
        let scenario = driver.episode().scenario().clone();
        let formats = PerSeat::from_fn(|seat| driver.episode().setup().seats[seat].format);
        let mut session = Session {
            id: claim.id.clone(),
            _claim: claim,
            token: secret::fresh(),
            scenario,
            formats,
            driver: Some(driver),
            ended: None,
            steps: 0,
            asked_at: Instant::now(),
            tokens,
        };
        let record = session.advance().await?;
        Ok((session, record))
    }

    pub fn to_move(&self) -> Option<Seat> {
        self.driver.as_ref().and_then(Driver::to_move)
    }

    /// The scenario this episode plays.
    pub(super) fn scenario(&self) -> &crate::scenario::Scenario {
        &self.scenario
    }

    /// How `seat` writes its turns (text in one of the formats, or tools).
    pub(super) fn format(&self, seat: Seat) -> TurnFormat {
        self.formats[seat]
    }

    /// The creator's token ([`Session::drop_by`] takes it).
    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// Whether a caller presenting `token` may drop the episode: it is the episode's own.
    /// Refused (403) otherwise: ids are sequential, so without this any client could drop any
    /// episode.
    pub(super) fn drop_by(&self, token: Option<&str>) -> Result<(), ServeError> {
        if secret::holds(token, [self.token.as_str()]) {
            return Ok(());
        }
        Err(ServeError::Forbidden(format!(
            "dropping episode `{}` takes its token in the `{}` header: the `episode_token` its creation answered",
            self.id,
            secret::HEADER
        )))
    }

    /// End an unfinished episode as abandoned (`why`), and its record to log; `None` for an
    /// episode that had ended (its record is in the log already).
    pub(super) async fn abandon(&mut self, why: &str) -> Result<Option<EpisodeRecord>, ServeError> {
        let Some(driver) = self.driver.as_mut() else {
            return Ok(None);
        };
        driver
            .abandon(why)
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        self.advance().await
    }

    /// How the seat to move was asked to play (text or tools); `None` once it is over.
    pub fn format_to_move(&self) -> Option<TurnFormat> {
        let episode = self.driver.as_ref()?.episode();
        episode
            .to_move()
            .map(|seat| episode.setup().seats[seat].format)
    }

    pub(crate) fn is_done(&self) -> bool {
        self.ended.is_some()
    }

    /// Play a client's completion for `seat` (the seat to move, or it is refused), then the
    /// in-process seats until a client must move again. Returns the record if the episode ended.
    pub async fn step(
        &mut self,
        seat: Option<Seat>,
        mut completion: Completion,
        sampled: Sampled,
    ) -> Result<Option<EpisodeRecord>, ServeError> {
        let id = self.id.clone();
        let Some(driver) = self.driver.as_mut() else {
            return Err(ServeError::Ended(id));
        };
        let Some(to_move) = driver.to_move() else {
            return Err(ServeError::Ended(id));
        };
        let seat = seat.unwrap_or(to_move);
        if seat != to_move {
            return Err(ServeError::WrongSeat {
                expected: to_move,
                got: seat,
            });
        }
        match self.tokens.as_mut() {
            Some(exact) => {
                let Some(completion_ids) = sampled.completion_ids else {
                    return Err(ServeError::Validation(
                        "token-exact mode: a step carries the `completion_ids` the model sampled"
                            .into(),
                    ));
                };
                let logprobs = sampled.logprobs.unwrap_or_default();
                // Refused before the prompt ids are taken: the client's corrected step finds
                // them still there.
                LogprobsMismatch::check(&completion_ids, &logprobs)
                    .map_err(|e| ServeError::Validation(e.to_string()))?;
                let Some(prompt) = exact.pending[seat].take() else {
                    return Err(ServeError::Execution(
                        "token-exact mode: no prompt ids were computed for this seat".into(),
                    ));
                };
                let tokens = prompt
                    .sampled(completion_ids, logprobs, sampled.finish_reason)
                    .map_err(|e| ServeError::Validation(e.to_string()))?;
                completion.tokens = Some(tokens);
            }
            None => {
                if sampled.completion_ids.is_some() || sampled.logprobs.is_some() {
                    return Err(ServeError::Validation(
                        "`completion_ids` and `logprobs` need token-exact mode (the `tokens` reset kwarg)"
                            .into(),
                    ));
                }
            }
        }
        driver
            // A client's step carries no account of its call beyond its token ids.
            .feed(Played::scripted(
                completion,
                self.asked_at.elapsed().as_millis() as u64,
            ))
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        self.steps += 1;
        self.advance().await
    }

    /// Let the in-process seats play; finish the episode if it ended.
    async fn advance(&mut self) -> Result<Option<EpisodeRecord>, ServeError> {
        let Some(driver) = self.driver.as_mut() else {
            return Ok(None);
        };
        driver
            .play_local()
            .await
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        if let Some(seat) = driver.to_move() {
            if let Some(exact) = self.tokens.as_mut() {
                let episode = driver.episode();
                let sequence = episode.token_sequence(seat).ok_or_else(|| {
                    ServeError::Execution(
                        "token-exact mode: an earlier turn of this seat has no token ids".into(),
                    )
                })?;
                let next = exact
                    .client
                    .next_prompt(exact.api, sequence, episode.view(seat))
                    .await
                    .map_err(|e| {
                        ServeError::Upstream(format!("token-exact mode: the policy server: {e}"))
                    })?;
                exact.pending[seat] = Some(next);
            }
            self.asked_at = Instant::now();
            return Ok(None);
        }
        let driver = self.driver.take().expect("checked above");
        let views = PerSeat::from_fn(|seat| driver.episode().view(seat).to_vec());
        let states = PerSeat::from_fn(|seat| driver.episode().seat_state(seat));
        let mut record = driver
            .into_rewarded_record()
            .await
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        record.episode_id = self.id.clone();
        self.ended = Some(Ended {
            views,
            states,
            roles: record.seats.map(|_, s| s.role),
            scenario_id: record.scenario_id.clone(),
            family: record.family,
            outcome: record.outcome.clone(),
            rewards: record.rewards,
        });
        Ok(Some(record))
    }

    /// What the session keeps, in bytes: its turns as the record writes them (counted by the
    /// driver) and each seat's view; once ended, the views alone (the record is in the log).
    pub(super) fn footprint(&self) -> u64 {
        let views = |view: &dyn Fn(Seat) -> u64| view(Seat::Learner) + view(Seat::Opponent);
        match (&self.driver, &self.ended) {
            (Some(d), _) => d.stored_bytes() + views(&|seat| view_bytes(d.episode().view(seat))),
            (None, Some(e)) => views(&|seat| view_bytes(&e.views[seat])),
            (None, None) => 0,
        }
    }

    /// What `seat` sees: OpenEnv's `{observation, reward, done}`, with everything a learner
    /// needs inside `observation` (OpenEnv drops `metadata`).
    pub(crate) fn observe(&self, seat: Seat) -> StepAnswer {
        let (messages, role, scenario, family, state) = match (&self.driver, &self.ended) {
            (Some(d), _) => {
                let e = d.episode();
                (
                    e.view(seat).to_vec(),
                    e.setup().seats[seat].role,
                    e.scenario().id.clone(),
                    e.scenario().family,
                    e.seat_state(seat),
                )
            }
            (None, Some(ended)) => (
                ended.views[seat].clone(),
                ended.roles[seat],
                ended.scenario_id.clone(),
                ended.family,
                ended.states[seat].clone(),
            ),
            (None, None) => unreachable!("a session has a driver until it has ended"),
        };
        let ended = self.ended.as_ref();
        // OpenEnv's reward before any step is none: a reset answers `null` (unless its episode
        // has already ended); a step 0 until the end, then the seat's total.
        let reward = match ended {
            Some(record) => Some(record.rewards[seat]),
            None if self.steps == 0 => None,
            None => Some(0.0),
        };
        let done = ended.is_some();
        let token_ids = self
            .tokens
            .as_ref()
            .and_then(|t| t.pending[seat].as_ref())
            .map(|p| TokenIds {
                prompt_ids: p.suffix.clone(),
                drift: p.drift.clone(),
            });
        let prompt = messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        StepAnswer {
            observation: Observation {
                prompt,
                messages,
                seat,
                role,
                to_move: self.to_move(),
                done,
                reward,
                token_ids,
                info: Info {
                    episode_id: self.id.clone(),
                    scenario_id: scenario,
                    family,
                    outcome: ended.map(|r| r.outcome.clone()),
                    rewards: ended.map(|r| r.rewards),
                },
                state,
            },
            reward,
            done,
        }
    }

    /// OpenEnv's state: the episode id and step count, and where the episode stands.
    pub fn state(&self) -> EnvState {
        let (scenario, family) = match (&self.driver, &self.ended) {
            (Some(d), _) => (
                d.episode().scenario().id.clone(),
                d.episode().scenario().family,
            ),
            (None, Some(e)) => (e.scenario_id.clone(), e.family),
            (None, None) => unreachable!("a session has a driver until it has ended"),
        };
        let ended = self.ended.as_ref();
        EnvState {
            episode_id: Some(self.id.clone()),
            step_count: self.steps,
            episode: Some(EpisodeState {
                scenario_id: scenario,
                family,
                to_move: self.to_move(),
                done: self.is_done(),
                outcome: ended.map(|r| r.outcome.clone()),
                rewards: ended.map(|r| r.rewards),
            }),
        }
    }
}
