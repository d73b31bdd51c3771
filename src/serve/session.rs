//! The session layer every surface of the server shares: live episodes by id, each a
//! [`Driver`] whose external seats are fed by clients and whose other seat is played in-process;
//! the bound on live sessions; the idle reaper; and the log every finished episode goes to.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use super::error::ServeError;
use super::ids::{Book, IdBook, IdClaim};
use super::ServeOptions;
use crate::agents::{Played, Player};
use crate::digest::Digest;
use crate::game::{
    mix, token_sequence, Completion, EpisodeConfig, EpisodeSeed, FirstMover, Message, PerSeat,
    Seat, Step,
};
use crate::llm::{EndpointSettings, LlmClient, NextPrompt, TokenApi};
use crate::record::{EpisodeRecord, RecordWriter};
use crate::run::{Driver, EpisodeKit, PlannedEpisode, Rewarding, SeatPlayer, Seating};
use crate::scenario::{Family, Role, Scenario};
use crate::vocab::TurnTokens;

/// The spec recorded for a seat played by a client of the server.
pub const EXTERNAL: &str = "external";

/// The scenarios the server can play, by id and by family.
pub struct Catalog {
    pub scenarios: Vec<Arc<Scenario>>,
    digests: Vec<Digest>,
    by_id: HashMap<String, usize>,
    by_family: HashMap<Family, Vec<usize>>,
}

impl Catalog {
    pub fn new(scenarios: Vec<Arc<Scenario>>) -> Catalog {
        let digests = scenarios.iter().map(|s| s.digest()).collect();
        let mut by_id = HashMap::new();
        let mut by_family: HashMap<Family, Vec<usize>> = HashMap::new();
        for (i, s) in scenarios.iter().enumerate() {
            by_id.entry(s.id.clone()).or_insert(i);
            by_family.entry(s.family).or_default().push(i);
        }
        Catalog {
            scenarios,
            digests,
            by_id,
            by_family,
        }
    }

    /// The index of the scenario a reset asks for: by id, by family and index, by family (drawn
    /// from the seed), or drawn from the seed among all.
    pub fn pick(
        &self,
        id: Option<&str>,
        family: Option<Family>,
        index: Option<usize>,
        seed: u64,
    ) -> Result<usize, ServeError> {
        if let Some(id) = id {
            return self
                .by_id
                .get(id)
                .copied()
                .ok_or_else(|| ServeError::UnknownScenario(id.to_string()));
        }
        let pool: &[usize] = match family {
            Some(f) => self.by_family.get(&f).map(Vec::as_slice).unwrap_or(&[]),
            None => &[],
        };
        let len = if family.is_some() {
            pool.len()
        } else {
            self.scenarios.len()
        };
        if len == 0 {
            return Err(ServeError::UnknownScenario(match family {
                Some(f) => format!("no scenario of family {} is loaded", f.name()),
                None => "no scenarios are loaded".into(),
            }));
        }
        let at = match index {
            Some(i) if i >= len => {
                return Err(ServeError::UnknownScenario(format!(
                    "index {i} is past the {len} scenarios loaded{}",
                    family
                        .map(|f| format!(" of family {}", f.name()))
                        .unwrap_or_default()
                )))
            }
            Some(i) => i,
            None => (mix(&[seed]) % len as u64) as usize,
        };
        Ok(if family.is_some() { pool[at] } else { at })
    }

    pub fn planned(&self, index: usize, seeds: EpisodeSeed) -> PlannedEpisode {
        PlannedEpisode {
            scenario: self.scenarios[index].clone(),
            scenario_digest: self.digests[index],
            seeds,
            prefix: None,
        }
    }
}

/// What a reset may ask for (OpenEnv's reset kwargs; the native REST create body).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetArgs {
    /// Seeds the setup (roles, first mover, personas) and the opponent's sampling; the same
    /// seed and scenario give the same setup. Default: a server counter.
    pub seed: Option<u64>,
    /// The id the episode gets (in the log too); default `s{N}`.
    pub episode_id: Option<String>,
    pub scenario_id: Option<String>,
    pub family: Option<Family>,
    /// With `family`: the index among that family's scenarios; alone: among all.
    pub index: Option<usize>,
    pub learner_role: Option<Role>,
    /// A rule, script or configured player spec, or `external` for self-play from outside.
    pub opponent: Option<String>,
    pub first_mover: Option<FirstMover>,
    /// Overrides of the `[episode]` rules table (max_rounds, reject_loop, …).
    pub rules: Option<serde_json::Map<String, Value>>,
    /// Token-exact mode: the learner's own policy server, whose chat template and tokenizer
    /// give the ids each observation tells the client to append.
    pub tokens: Option<TokensArgs>,
}

/// The `tokens` reset kwarg: the policy server the client samples from.
#[derive(Debug, Clone, Deserialize)]
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
struct ExactTokens {
    client: LlmClient,
    api: TokenApi,
    pending: PerSeat<Option<NextPrompt>>,
}

/// What the client sampled, sent with a step in token-exact mode.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    pub completion_ids: Option<Vec<u32>>,
    pub logprobs: Option<Vec<f64>>,
    pub finish_reason: Option<String>,
}

/// A finished episode as the server keeps it after its driver is gone.
pub struct Ended {
    pub record: EpisodeRecord,
    pub views: PerSeat<Vec<Message>>,
}

/// One live (or just ended) episode.
pub struct Session {
    pub id: String,
    /// The hold on `id` in the log's [`IdBook`]: freed if the session is dropped unlogged.
    _claim: IdClaim,
    driver: Option<Driver>,
    ended: Option<Ended>,
    /// The last step each seat's own completion made (its parse, regulation, retry).
    last: PerSeat<Option<Step>>,
    steps: u32,
    /// When the seat to move was last shown its observation: its client's latency.
    asked_at: Instant,
    tokens: Option<ExactTokens>,
}

impl Session {
    pub fn to_move(&self) -> Option<Seat> {
        self.driver.as_ref().and_then(Driver::to_move)
    }

    pub fn is_done(&self) -> bool {
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
                if !logprobs.is_empty() && logprobs.len() != completion_ids.len() {
                    return Err(ServeError::Validation(format!(
                        "{} logprobs for {} completion_ids",
                        logprobs.len(),
                        completion_ids.len()
                    )));
                }
                let Some(prompt) = exact.pending[seat].take() else {
                    return Err(ServeError::Execution(
                        "token-exact mode: no prompt ids were computed for this seat".into(),
                    ));
                };
                completion.tokens = Some(TurnTokens {
                    prompt_ids: prompt.suffix,
                    completion_ids,
                    logprobs,
                    finish_reason: sampled.finish_reason,
                    drift: prompt.drift,
                });
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
        let step = driver
            .feed(Played {
                completion,
                latency_ms: self.asked_at.elapsed().as_millis() as u64,
                retries: 0,
                replica: None,
            })
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        self.last[seat] = Some(step);
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
                let sequence = token_sequence(episode.turns(), seat, &episode.setup().rules)
                    .ok_or_else(|| {
                        ServeError::Execution(
                            "token-exact mode: an earlier turn of this seat has no token ids"
                                .into(),
                        )
                    })?;
                let next = exact
                    .client
                    .next_prompt(exact.api, &sequence, episode.view(seat))
                    .await
                    .map_err(|e| {
                        ServeError::Execution(format!("token-exact mode: the policy server: {e}"))
                    })?;
                exact.pending[seat] = Some(next);
            }
            self.asked_at = Instant::now();
            return Ok(None);
        }
        let driver = self.driver.take().expect("checked above");
        let views = PerSeat::from_fn(|seat| driver.episode().view(seat).to_vec());
        let mut record = driver
            .into_rewarded_record()
            .await
            .map_err(|e| ServeError::Execution(e.to_string()))?;
        record.episode_id = self.id.clone();
        self.ended = Some(Ended {
            record: record.clone(),
            views,
        });
        Ok(Some(record))
    }

    /// What `seat` sees: OpenEnv's `{observation, reward, done}`, with everything a learner
    /// needs inside `observation` (OpenEnv drops `metadata`).
    pub fn observe(&self, seat: Seat) -> Value {
        let (messages, role, scenario, family, turns) = match (&self.driver, &self.ended) {
            (Some(d), _) => {
                let e = d.episode();
                (
                    e.view(seat).to_vec(),
                    e.setup().seats[seat].role,
                    e.scenario().id.clone(),
                    e.scenario().family,
                    e.turns().len(),
                )
            }
            (None, Some(ended)) => (
                ended.views[seat].clone(),
                ended.record.seats[seat].role,
                ended.record.scenario_id.clone(),
                ended.record.family,
                ended.record.turns.len(),
            ),
            (None, None) => unreachable!("a session has a driver until it has ended"),
        };
        let last = self.last[seat].as_ref().map(|step| {
            json!({
                "parsed": step.parsed,
                "played": step.played,
                "regulation": step.event,
                "retry": step.retry,
            })
        });
        let regulation = self.last[seat].as_ref().and_then(|s| s.event.clone());
        let (outcome, rewards, reward) = match &self.ended {
            Some(ended) => (
                json!(ended.record.outcome),
                json!(ended.record.rewards),
                json!(ended.record.rewards[seat]),
            ),
            None => (Value::Null, Value::Null, json!(0.0)),
        };
        let done = self.ended.is_some();
        let token_ids = self
            .tokens
            .as_ref()
            .and_then(|t| t.pending[seat].as_ref())
            .map(|p| json!({"prompt_ids": p.suffix, "drift": p.drift}));
        let prompt = messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        json!({
            "observation": {
                "prompt": prompt,
                "messages": messages,
                "seat": seat,
                "role": role,
                "turn": turns,
                "to_move": self.to_move(),
                "done": done,
                "reward": reward,
                "token_ids": token_ids,
                "info": {
                    "episode_id": self.id,
                    "scenario_id": scenario,
                    "family": family,
                    "last_turn": last,
                    "regulation": regulation,
                    "outcome": outcome,
                    "rewards": rewards,
                },
            },
            "reward": reward,
            "done": done,
        })
    }

    /// OpenEnv's state: the episode id and step count, and where the episode stands.
    pub fn state(&self) -> Value {
        let (scenario, family) = match (&self.driver, &self.ended) {
            (Some(d), _) => (
                d.episode().scenario().id.clone(),
                d.episode().scenario().family,
            ),
            (None, Some(e)) => (e.record.scenario_id.clone(), e.record.family),
            (None, None) => unreachable!("a session has a driver until it has ended"),
        };
        json!({
            "episode_id": self.id,
            "step_count": self.steps,
            "scenario_id": scenario,
            "family": family,
            "to_move": self.to_move(),
            "done": self.is_done(),
            "outcome": self.ended.as_ref().map(|e| json!(e.record.outcome)),
            "rewards": self.ended.as_ref().map(|e| json!(e.record.rewards)),
        })
    }
}

/// Who may reach a session: any REST client with the id (and the token), or only the
/// WebSocket connection that reset it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Rest,
    Socket(u64),
}

/// A session in the table, with when it was last used (the reaper reads it without waiting for
/// a step in progress).
pub struct Slot {
    pub session: tokio::sync::Mutex<Session>,
    owner: Owner,
    touched: Mutex<Instant>,
}

impl Slot {
    pub fn touch(&self) {
        *self.touched.lock().unwrap() = Instant::now();
    }
}

/// Ended episodes kept for `GET` and to refuse a late step with 409: at most `cap` of them
/// (the oldest go first), each until it sits idle past the timeout. Bounded, so episodes that
/// end at their reset cannot grow the server past `--max-sessions`.
#[derive(Default)]
struct EndedTable {
    slots: HashMap<String, (Instant, Arc<Slot>)>,
    order: VecDeque<String>,
}

impl EndedTable {
    fn insert(&mut self, id: String, slot: Arc<Slot>, cap: usize) {
        if self
            .slots
            .insert(id.clone(), (Instant::now(), slot))
            .is_none()
        {
            self.order.push_back(id);
        }
        while self.slots.len() > cap {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.slots.remove(&oldest);
        }
        // Ids removed by delete or the reaper leave stale entries in `order`; keep it short.
        if self.order.len() > 2 * cap.max(self.slots.len()) {
            let slots = &self.slots;
            self.order.retain(|id| slots.contains_key(id));
        }
    }

    fn remove(&mut self, id: &str) -> bool {
        self.slots.remove(id).is_some()
    }
}

/// Everything the server's routes share.
pub struct Hub {
    pub options: ServeOptions,
    pub catalog: Catalog,
    http: reqwest::Client,
    kits: Mutex<HashMap<String, Arc<EpisodeKit>>>,
    live: Mutex<HashMap<String, Arc<Slot>>>,
    ended: Mutex<EndedTable>,
    /// Every episode id of the log and of the live sessions.
    ids: Book,
    log: Mutex<RecordWriter>,
    /// The judge and reward-model clients, when the `[rewards]` config uses them: every
    /// episode's record gets their parts before it is logged and answered, as in `run`.
    rewarding: Option<Arc<Rewarding>>,
}

impl Hub {
    /// A hub over `log`, which already holds the episodes `logged` (their ids are taken).
    pub fn new(
        options: ServeOptions,
        catalog: Catalog,
        log: RecordWriter,
        logged: impl IntoIterator<Item = String>,
    ) -> Result<Hub, ServeError> {
        let http = crate::llm::http_client(options.concurrency.max(8))
            .map_err(|e| ServeError::Execution(format!("cannot build the HTTP client: {e}")))?;
        let rewarding = Rewarding::new(&options.rewards, &http)
            .map_err(ServeError::Validation)?
            .map(Arc::new);
        Ok(Hub {
            options,
            catalog,
            http,
            kits: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            ended: Mutex::new(EndedTable::default()),
            ids: Arc::new(Mutex::new(IdBook::new(logged))),
            log: Mutex::new(log),
            rewarding,
        })
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn live_count(&self) -> usize {
        self.live.lock().unwrap().len()
    }

    /// Ended episodes still kept for `GET` (at most `--max-sessions`).
    pub fn ended_count(&self) -> usize {
        self.ended.lock().unwrap().slots.len()
    }

    /// The book of episode ids, shared with the rollout service.
    pub fn ids(&self) -> &Book {
        &self.ids
    }

    /// Append a finished episode to the log (one whole line, flushed); its id is taken for
    /// good.
    pub fn log(&self, record: &EpisodeRecord) -> Result<(), ServeError> {
        self.log
            .lock()
            .unwrap()
            .write(record)
            .map_err(|e| ServeError::Execution(format!("writing the log: {e}")))?;
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .logged(&record.episode_id);
        Ok(())
    }

    /// The kit for an external learner, an opponent spec and rules: built once per distinct
    /// pair.
    pub fn kit(
        &self,
        opponent: &str,
        episode: &EpisodeConfig,
    ) -> Result<Arc<EpisodeKit>, ServeError> {
        let key = format!("{opponent}|{episode:?}");
        if let Some(kit) = self.kits.lock().unwrap().get(&key) {
            return Ok(kit.clone());
        }
        let learner = SeatPlayer::External {
            spec: EXTERNAL.into(),
            takes_persona: true,
        };
        let kit = self.build_kit(opponent, episode, learner)?;
        let mut kits = self.kits.lock().unwrap();
        if kits.len() > 256 {
            kits.clear();
        }
        kits.insert(key, kit.clone());
        Ok(kit)
    }

    /// A kit with this learner, opponent spec and rules. The run id is a digest of the three.
    pub fn build_kit(
        &self,
        opponent: &str,
        episode: &EpisodeConfig,
        learner: SeatPlayer,
    ) -> Result<Arc<EpisodeKit>, ServeError> {
        let opponent_player = if opponent == EXTERNAL {
            SeatPlayer::External {
                spec: EXTERNAL.into(),
                takes_persona: true,
            }
        } else {
            SeatPlayer::Local(
                Player::from_spec_with(
                    opponent,
                    &self.options.players,
                    &self.http,
                    &self.options.sampling.opponent,
                )
                .map_err(|e| ServeError::Validation(format!("opponent: {e}")))?,
            )
        };
        let identity = |p: &SeatPlayer| match p {
            SeatPlayer::Local(p) => p.identity(),
            SeatPlayer::External { spec, .. } => spec.clone(),
        };
        let key = format!(
            "{}|{}|{episode:?}|{}",
            identity(&learner),
            identity(&opponent_player),
            self.options
                .rewards
                .identity(crate::run::rubric(&self.options.rewards).as_deref())
        );
        let words: Vec<u64> = key
            .as_bytes()
            .chunks(8)
            .map(|c| c.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
            .collect();
        Ok(Arc::new(EpisodeKit {
            preset: self.options.preset.clone(),
            run_id: format!("serve-{:016x}", mix(&words)),
            players: PerSeat::new(learner, opponent_player),
            episode: episode.clone(),
            personas: self.options.personas.clone(),
            rewards: self.options.rewards.clone(),
            prompts: self.options.prompts.clone(),
            rewarding: self.rewarding.clone(),
            seating: Seating::default(),
        }))
    }

    /// The rules of an episode: the server's, with a reset's overrides.
    pub fn rules(&self, args: &ResetArgs) -> Result<EpisodeConfig, ServeError> {
        let mut episode = self.options.episode.clone();
        if let Some(overrides) = &args.rules {
            let mut table =
                serde_json::to_value(&episode).map_err(|e| ServeError::Execution(e.to_string()))?;
            for (k, v) in overrides {
                table[k] = v.clone();
            }
            episode = serde_json::from_value(table)
                .map_err(|e| ServeError::Validation(format!("rules: {e}")))?;
        }
        if let Some(role) = args.learner_role {
            episode.learner_role = Some(role);
        }
        if let Some(first) = args.first_mover {
            episode.first_mover = first;
        }
        Ok(episode)
    }

    /// Start an episode for a reset (not yet in the table): the in-process seats have moved up
    /// to the first external turn. The record comes back too if it ended on its own.
    pub async fn start(
        &self,
        args: &ResetArgs,
    ) -> Result<(Session, Option<EpisodeRecord>), ServeError> {
        let opponent = args
            .opponent
            .clone()
            .unwrap_or_else(|| self.options.opponent.clone());
        self.options
            .policy
            .opponent(&opponent, &self.options.opponent, &self.options.players)?;
        if let Some(tokens) = &args.tokens {
            self.options.policy.endpoint("tokens", &tokens.endpoint)?;
        }
        let claim = IdClaim::session(&self.ids, args.episode_id.as_deref())?;
        let seed = args.seed.unwrap_or(claim.number);
        let index =
            self.catalog
                .pick(args.scenario_id.as_deref(), args.family, args.index, seed)?;
        let rules = self.rules(args)?;
        let kit = self.kit(&opponent, &rules)?;
        let seeds = EpisodeSeed {
            run: seed,
            group: index as u64,
            member: 0,
        };
        let driver = Driver::start(kit, self.catalog.planned(index, seeds))
            .map_err(|e| ServeError::Validation(e.to_string()))?;
        let mut session = Session {
            id: claim.id.clone(),
            _claim: claim,
            driver: Some(driver),
            ended: None,
            last: PerSeat::default(),
            steps: 0,
            asked_at: Instant::now(),
            tokens: match &args.tokens {
                Some(t) => Some(self.exact_tokens(t)?),
                None => None,
            },
        };
        let record = session.advance().await?;
        Ok((session, record))
    }

    /// The client of a learner's policy server for token-exact mode.
    fn exact_tokens(&self, args: &TokensArgs) -> Result<ExactTokens, ServeError> {
        let settings = EndpointSettings {
            base_url: args.endpoint.clone(),
            model: args.model.clone(),
            token_api: args.token_api,
            ..EndpointSettings::default()
        };
        let client = LlmClient::new(self.http.clone(), settings)
            .map_err(|e| ServeError::Validation(format!("tokens: {e}")))?;
        Ok(ExactTokens {
            client,
            api: args.token_api,
            pending: PerSeat::default(),
        })
    }

    /// Put a started session in the table, if there is room, reachable by `owner` only.
    pub fn admit(&self, session: Session, owner: Owner) -> Result<Arc<Slot>, ServeError> {
        let id = session.id.clone();
        let done = session.is_done();
        let slot = Arc::new(Slot {
            session: tokio::sync::Mutex::new(session),
            owner,
            touched: Mutex::new(Instant::now()),
        });
        if done {
            self.ended
                .lock()
                .unwrap()
                .insert(id, slot.clone(), self.options.max_sessions);
            return Ok(slot);
        }
        let mut live = self.live.lock().unwrap();
        if live.len() >= self.options.max_sessions {
            return Err(ServeError::Capacity(self.options.max_sessions));
        }
        live.insert(id, slot.clone());
        Ok(slot)
    }

    /// Refuse a reset early when the table is full (before any work is done for it).
    pub fn check_room(&self) -> Result<(), ServeError> {
        if self.live_count() >= self.options.max_sessions {
            return Err(ServeError::Capacity(self.options.max_sessions));
        }
        Ok(())
    }

    /// A live or ended session by id, if `owner` may reach it (a WebSocket's session is its
    /// connection's alone: to anyone else it does not exist).
    pub fn find(&self, id: &str, owner: Owner) -> Result<Arc<Slot>, ServeError> {
        let found = match self.live.lock().unwrap().get(id) {
            Some(slot) => {
                slot.touch();
                Some(slot.clone())
            }
            None => None,
        };
        found
            .or_else(|| {
                self.ended
                    .lock()
                    .unwrap()
                    .slots
                    .get(id)
                    .map(|(_, slot)| slot.clone())
            })
            .filter(|slot| slot.owner == owner)
            .ok_or_else(|| ServeError::UnknownEpisode(id.to_string()))
    }

    /// Step session `id` and log the episode if it ended. Returns what the seat to move next
    /// sees (or the stepping seat, once the episode is over).
    pub async fn step(
        &self,
        slot: &Slot,
        seat: Option<Seat>,
        completion: Completion,
        sampled: Sampled,
    ) -> Result<Value, ServeError> {
        let mut session = slot.session.lock().await;
        slot.touch();
        let stepping = seat.or(session.to_move());
        let record = session.step(seat, completion, sampled).await?;
        slot.touch();
        if let Some(record) = record {
            self.log(&record)?;
            let id = session.id.clone();
            if let Some(slot) = self.live.lock().unwrap().remove(&id) {
                self.ended
                    .lock()
                    .unwrap()
                    .insert(id, slot, self.options.max_sessions);
            }
        }
        let viewer = session.to_move().or(stepping).unwrap_or(Seat::Learner);
        Ok(session.observe(viewer))
    }

    /// Drop a session `owner` may reach (delete, a closed connection, a new reset on the
    /// same connection).
    pub fn remove(&self, id: &str, owner: Owner) -> bool {
        if self.find(id, owner).is_err() {
            return false;
        }
        let live = self.live.lock().unwrap().remove(id).is_some();
        let ended = self.ended.lock().unwrap().remove(id);
        live || ended
    }

    /// Reclaim sessions idle longer than the timeout; returns how many.
    pub fn reap(&self) -> usize {
        let limit = Duration::from_secs_f64(self.options.idle_timeout_s);
        let mut n = 0;
        self.live.lock().unwrap().retain(|_, slot| {
            let keep = slot.touched.lock().unwrap().elapsed() < limit;
            n += usize::from(!keep);
            keep
        });
        self.ended
            .lock()
            .unwrap()
            .slots
            .retain(|_, (at, _)| at.elapsed() < limit);
        n
    }
}
