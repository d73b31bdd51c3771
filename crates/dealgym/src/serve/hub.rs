//! What every surface of the server shares: the one registry of live sessions — two-party
//! episodes and n-party tables alike ([`Live`]): one `--max-sessions` count, one lookup with
//! its owner check, one idle reaper — the ended ones kept for `GET` and what all of them may
//! hold in memory (`memory`), the book of episode ids, the episode kits, and the log every
//! finished episode goes to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::catalog::Catalog;
use super::error::ServeError;
use super::ids::{Book, IdBook, IdClaim};
use super::memory::{Charge, Reach, SessionMemory};
use super::session::{ExactTokens, ResetArgs, ResetFamily, Sampled, Session, TokensArgs, EXTERNAL};
use super::table::TableSlot;
use super::wire::StepAnswer;
use super::ServeOptions;
use crate::agents::Player;
use crate::game::{mix_text, Completion, EpisodeConfig, EpisodeSeed, PerSeat, Seat};
use crate::jsonl::encoded_len;
use crate::limits::MAX_SERVER_KITS;
use crate::llm::{EndpointSettings, LlmClient};
use crate::record::{EpisodeRecord, RecordWriter};
use crate::run::{Driver, EpisodeError, EpisodeKit, Rewarding, SeatPlayer, Seating};
use crate::scenario::{Family, MarketScenario, TableScenario};

/// Who may reach a session: any REST client with the id (and the token), or only the
/// WebSocket connection that reset it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Rest,
    Socket(u64),
    /// An MCP session of `POST /mcp`.
    Mcp(u64),
    /// A game of the play page: reached through its routes, each person by their seat's token.
    Play,
}

/// A session in the table, with when it was last used (the reaper reads it without waiting for
/// a step in progress) and what it keeps ([`Charge`]).
pub struct Slot {
    pub session: tokio::sync::Mutex<Session>,
    owner: Owner,
    touched: Mutex<Instant>,
    pub(super) charge: Charge,
}

impl Slot {
    pub fn touch(&self) {
        *self.touched.lock().unwrap() = Instant::now();
    }
}

/// A session of either kind, as the one registry holds it (live) and the shelf keeps it
/// (ended, for `GET`).
#[derive(Clone)]
pub(super) enum Live {
    Episode(Arc<Slot>),
    Table(Arc<TableSlot>),
}

impl Live {
    /// Who may reach it: a two-party session its owner; a table anyone holding its id.
    pub(super) fn reach(&self) -> Reach {
        match self {
            Live::Episode(slot) => Reach::Episode(slot.owner),
            Live::Table(_) => Reach::Table,
        }
    }

    /// What it keeps in memory, in bytes.
    pub(super) fn bytes(&self) -> u64 {
        match self {
            Live::Episode(slot) => slot.charge.bytes(),
            Live::Table(slot) => slot.charge.bytes(),
        }
    }

    fn touch(&self) {
        match self {
            Live::Episode(slot) => slot.touch(),
            Live::Table(slot) => slot.touch(),
        }
    }

    fn idle(&self) -> std::time::Duration {
        let touched = match self {
            Live::Episode(slot) => &slot.touched,
            Live::Table(slot) => &slot.touched,
        };
        touched.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }

    /// Whether it is this very session (not another put under the same id since).
    fn is(&self, other: &Live) -> bool {
        match (self, other) {
            (Live::Episode(a), Live::Episode(b)) => Arc::ptr_eq(a, b),
            (Live::Table(a), Live::Table(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// This session, if `reach` may reach it; else why not: a session of the other kind
    /// (a table's id on a two-party route, or the reverse) is a 409 naming its routes; one
    /// its caller may not reach does not exist to it.
    fn reached_by(self, id: &str, reach: Reach) -> Result<Live, ServeError> {
        match (&self, reach) {
            _ if self.reach() == reach => Ok(self),
            (Live::Table(_), Reach::Episode(_)) => Err(ServeError::WrongKind(format!(
                "`{id}` is an n-party table, not a two-party episode: play it at /v1/tables/{id}"
            ))),
            (Live::Episode(slot), Reach::Table) if slot.owner == Owner::Rest => {
                Err(ServeError::WrongKind(format!(
                    "`{id}` is a two-party episode, not an n-party table: play it at /v1/episodes/{id}"
                )))
            }
            _ => Err(ServeError::UnknownEpisode(id.to_string())),
        }
    }
}

/// A seat a client of the server plays (`external`).
fn client_seat() -> SeatPlayer {
    SeatPlayer::External {
        spec: EXTERNAL.into(),
        takes_persona: true,
    }
}

/// Everything the server's routes share.
pub struct Hub {
    pub options: ServeOptions,
    pub catalog: Catalog,
    /// The n-party scenarios `/v1/tables` plays.
    pub(super) table_catalog: Catalog<TableScenario>,
    /// The markets `/v1/tables` plays.
    pub(super) market_catalog: Catalog<MarketScenario>,
    http: reqwest::Client,
    kits: Mutex<HashMap<String, Arc<EpisodeKit>>>,
    /// The live sessions of both kinds, by id: at most `--max-sessions` together.
    live: Mutex<HashMap<String, Live>>,
    /// What every session (two-party and tables, live and ended) holds, the budget it is held
    /// to, and the ended ones kept for `GET`.
    pub(super) memory: Arc<SessionMemory>,
    /// Every episode id of the log and of the live sessions.
    ids: Book,
    log: Mutex<RecordWriter>,
    /// The judge and reward-model clients, when the `[rewards]` config uses them: every
    /// episode's record gets their parts before it is logged and answered, as in `run`.
    pub(super) rewarding: Option<Arc<Rewarding>>,
}

impl Hub {
    /// A hub over `log`, which already holds the episodes `logged` (their ids are taken).
    pub(crate) fn new(
        options: ServeOptions,
        catalog: Catalog,
        table_catalog: Catalog<TableScenario>,
        market_catalog: Catalog<MarketScenario>,
        log: RecordWriter,
        logged: impl IntoIterator<Item = String>,
    ) -> Result<Hub, ServeError> {
        let http = crate::llm::http_client(options.concurrency.max(8))
            .map_err(|e| ServeError::Execution(format!("cannot build the HTTP client: {e}")))?;
        let rewarding = Rewarding::new(&options.rewards, &http)
            .map_err(ServeError::Validation)?
            .map(Arc::new);
        let memory = Arc::new(SessionMemory::new(
            options.session_memory,
            options.max_sessions,
        ));
        Ok(Hub {
            options,
            catalog,
            table_catalog,
            market_catalog,
            http,
            kits: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            memory,
            ids: Arc::new(Mutex::new(IdBook::new(logged))),
            log: Mutex::new(log),
            rewarding,
        })
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live sessions, two-party and tables together.
    pub fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Ended episodes and tables still kept for `GET` (at most `--max-sessions`, within
    /// `--session-memory-bytes`).
    pub fn ended_count(&self) -> usize {
        self.memory.ended()
    }

    /// What the sessions hold in memory now, live and ended, as they count it.
    pub fn memory_held(&self) -> u64 {
        self.memory.held()
    }

    /// The book of episode ids, shared with the rollout service.
    pub(crate) fn ids(&self) -> &Book {
        &self.ids
    }

    /// Append a finished episode to the log (one whole line, flushed); its id is taken for
    /// good.
    pub(crate) fn log(&self, record: &EpisodeRecord) -> Result<(), ServeError> {
        self.log_line(&record.episode_id, record)
    }

    /// Append any record (a two-party episode's, a table's) whose id is `episode_id`.
    pub(crate) fn log_line(
        &self,
        episode_id: &str,
        record: &impl serde::Serialize,
    ) -> Result<(), ServeError> {
        self.log
            .lock()
            .unwrap()
            .write(record)
            .map_err(|e| ServeError::Execution(format!("writing the log: {e}")))?;
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .logged(episode_id);
        Ok(())
    }

    /// The kit for an external learner, an opponent spec and rules: built once per distinct
    /// pair.
    pub(crate) fn kit(
        &self,
        opponent: &str,
        episode: &EpisodeConfig,
    ) -> Result<Arc<EpisodeKit>, ServeError> {
        let key = format!("{opponent}|{episode:?}");
        if let Some(kit) = self.kits.lock().unwrap().get(&key) {
            return Ok(kit.clone());
        }
        let learner = client_seat();
        let kit = self.build_kit(
            PerSeat::new(learner, self.opponent_player(opponent, episode)?),
            episode,
        )?;
        let mut kits = self.kits.lock().unwrap();
        if kits.len() > MAX_SERVER_KITS {
            kits.clear();
        }
        kits.insert(key, kit.clone());
        Ok(kit)
    }

    /// The opponent's seat a spec names: played from outside (`external`), or in process.
    pub(crate) fn opponent_player(
        &self,
        opponent: &str,
        episode: &EpisodeConfig,
    ) -> Result<SeatPlayer, ServeError> {
        if opponent == EXTERNAL {
            return Ok(client_seat());
        }
        Player::from_spec_with(
            opponent,
            &self.options.players,
            &self.http,
            &self.options.sampling.opponent,
        )
        .and_then(|p| p.seats_two_party(episode.opponent_format).map(|()| p))
        .map(SeatPlayer::Local)
        .map_err(|e| ServeError::Validation(format!("opponent: {e}")))
    }

    /// A kit with these seats and rules. The run id is a digest of the three.
    pub(crate) fn build_kit(
        &self,
        players: PerSeat<SeatPlayer>,
        episode: &EpisodeConfig,
    ) -> Result<Arc<EpisodeKit>, ServeError> {
        let key = crate::run::kit_identity(
            [&players.learner.identity(), &players.opponent.identity()],
            episode,
            &self.options.rewards,
            &self.options.personas,
        );
        Ok(Arc::new(EpisodeKit {
            preset: self.options.preset.clone(),
            run_id: format!("serve-{:016x}", mix_text(Vec::new(), &key)),
            players,
            episode: episode.clone(),
            personas: self.options.personas.clone(),
            rewards: self.options.rewards.clone(),
            prompts: self.options.prompts.clone(),
            rewarding: self.rewarding.clone(),
            seating: Seating::default(),
            text_limits: Some(self.options.text_limits),
            probes: Default::default(),
        }))
    }

    /// The rules of an episode: the server's, with a reset's overrides.
    pub(crate) fn rules(&self, args: &ResetArgs) -> Result<EpisodeConfig, ServeError> {
        let mut episode = self.options.episode.clone();
        if let Some(overrides) = &args.rules {
            episode = episode
                .with_overrides(overrides)
                .map_err(|e| ServeError::Validation(format!("rules: {e}")))?;
        }
        if let Some(role) = &args.learner_role {
            episode.learner_role = Some(role.party()?);
        }
        if let Some(first) = args.first_mover {
            episode.first_mover = first;
        }
        // A client's rules are held to the config's bounds (`max_rounds`, …).
        episode
            .validate()
            .and_then(|_| self.options.rewards.check_against(&episode))
            .map_err(|e| ServeError::Validation(format!("rules: {e}")))?;
        Ok(episode)
    }

    /// Start an episode for a reset (not yet in the table): the in-process seats have moved up
    /// to the first external turn. The record comes back too if it ended on its own.
    pub(crate) async fn start(
        &self,
        args: &ResetArgs,
    ) -> Result<(Session, Option<EpisodeRecord>), ServeError> {
        self.start_seated(args, PerSeat::new(None, None)).await
    }

    /// [`Hub::start`], with the seats `people` names played from outside by people
    /// (`human:NAME` in the record; the play page's seats): the learner's seat, and the
    /// opponent's in place of the reset's `opponent`.
    pub(crate) async fn start_seated(
        &self,
        args: &ResetArgs,
        people: PerSeat<Option<String>>,
    ) -> Result<(Session, Option<EpisodeRecord>), ServeError> {
        // A person's seat is played from outside, recorded as them.
        let person = |name: &Option<String>| {
            name.as_deref().map(|name| SeatPlayer::External {
                spec: crate::record::PlayerSpec::person(name).to_string(),
                takes_persona: false,
            })
        };
        let opponent = args
            .opponent
            .clone()
            .unwrap_or_else(|| self.options.opponent.clone());
        if people[Seat::Opponent].is_none() {
            self.options.policy.opponent(
                &opponent,
                &self.options.opponent,
                &self.options.players,
            )?;
        }
        if let Some(tokens) = &args.tokens {
            self.options.policy.endpoint("tokens", &tokens.endpoint)?;
        }
        let family = self.refuse_table(args)?;
        let claim = IdClaim::session(&self.ids, args.episode_id.as_deref())?;
        let seed = args.seed.unwrap_or(claim.number);
        let index = self
            .catalog
            .pick(args.scenario_id.as_deref(), family, args.index, seed)?;
        let rules = self.rules(args)?;
        // The kit of an external learner and this opponent is built once and kept; a game
        // with people has its own, its people's seats in it, the opponent's player taken from
        // the kept kit.
        let kit = match (
            person(&people[Seat::Learner]),
            person(&people[Seat::Opponent]),
        ) {
            (None, None) => self.kit(&opponent, &rules)?,
            (learner, other) => {
                let learner = learner.unwrap_or_else(client_seat);
                let opponent = match other {
                    Some(seat) => seat,
                    None => self.kit(&opponent, &rules)?.players.opponent.clone(),
                };
                self.build_kit(PerSeat::new(learner, opponent), &rules)?
            }
        };
        let seeds = EpisodeSeed::reset(seed, index);
        let driver = Driver::start(kit, self.planned(index, seeds)).map_err(|e| match e {
            // The episode's prompts did not render: the templates are the operator's
            // (`prompts_dir`), not a mistake of the client's request.
            EpisodeError::Game { .. } => {
                ServeError::Execution(format!("the server's prompt templates: {e}"))
            }
            _ => ServeError::Validation(e.to_string()),
        })?;
        let tokens = match &args.tokens {
            Some(t) => Some(self.exact_tokens(t)?),
            None => None,
        };
        Session::begin(claim, driver, tokens).await
    }

    /// Refuse a two-party reset (`/v1/episodes`') that names an n-party table
    /// ([`Hub::names_table`]), saying where tables are played (OpenEnv and MCP route a table's
    /// reset to [`Hub::start_single_seat`] before they get here). Else the reset's two-party
    /// family, if it names one.
    fn refuse_table(&self, args: &ResetArgs) -> Result<Option<Family>, ServeError> {
        if self.names_table(args) {
            let named = match (&args.scenario_id, args.family) {
                (Some(id), _) => format!("scenario `{id}`"),
                (None, Some(family)) => format!("family `{}`", family.name()),
                (None, None) => "this reset".to_string(),
            };
            let market = matches!(args.family, Some(ResetFamily::Market(_)))
                || args
                    .scenario_id
                    .as_deref()
                    .is_some_and(|id| self.market_catalog.has(id));
            if market {
                return Err(ServeError::Validation(format!(
                    "{named} is a market: /v1/episodes plays two-party episodes; play it at POST /v1/tables (a session per seat), or over OpenEnv (/ws, /reset, /step) as the one seat `learner_role` names"
                )));
            }
            return Err(ServeError::Validation(format!(
                "{named} is an n-party table: /v1/episodes plays two-party episodes; play it at POST /v1/tables (a session per seat), or over OpenEnv (/ws, /reset, /step) or MCP (start_negotiation) as the one seat `learner_role` names"
            )));
        }
        Ok(match args.family {
            Some(ResetFamily::Party(family)) => Some(family),
            _ => None,
        })
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
        Ok(ExactTokens::new(client, args.token_api))
    }

    /// Put a started session in the table, if there is room, reachable by `owner` only.
    pub(crate) fn admit(&self, session: Session, owner: Owner) -> Result<Arc<Slot>, ServeError> {
        let id = session.id.clone();
        let done = session.is_done();
        let charge = self.memory.charge();
        charge.set(session.footprint());
        let slot = Arc::new(Slot {
            session: tokio::sync::Mutex::new(session),
            owner,
            touched: Mutex::new(Instant::now()),
            charge,
        });
        self.enter(id, Live::Episode(slot.clone()), done)?;
        Ok(slot)
    }

    /// Put a started session of either kind in the registry, if there is room (one
    /// `--max-sessions` for both kinds); one that ended as it started goes straight to the
    /// shelf of ended ones.
    pub(super) fn enter(&self, id: String, session: Live, ended: bool) -> Result<(), ServeError> {
        if ended {
            self.memory.keep(id, session);
            return Ok(());
        }
        let mut live = self.live();
        if live.len() >= self.options.max_sessions {
            return Err(ServeError::Capacity(self.options.max_sessions));
        }
        live.insert(id, session);
        drop(live);
        self.memory.relieve();
        Ok(())
    }

    /// Move session `id` from the live ones to the shelf of ended ones, once it has ended
    /// (its record is logged); the budget is relieved either way.
    pub(super) fn retire(&self, id: &str) {
        let ended = self.live().remove(id);
        match ended {
            Some(session) => self.memory.keep(id.to_string(), session),
            None => self.memory.relieve(),
        }
    }

    /// Take `session` out of the live ones, if it is still there under `id`: of two drops
    /// at once, the one that takes it logs it.
    pub(super) fn take(&self, id: &str, session: &Live) -> bool {
        let mut live = self.live();
        if live.get(id).is_some_and(|held| held.is(session)) {
            live.remove(id);
            return true;
        }
        false
    }

    /// Whether session `id` is live (started and not ended).
    pub(crate) fn is_live(&self, id: &str) -> bool {
        self.live().contains_key(id)
    }

    /// Refuse a reset early when the table is full, or the sessions hold the memory budget
    /// once the ended ones are evicted (before any work is done for it).
    pub(crate) fn check_room(&self) -> Result<(), ServeError> {
        if self.live_count() >= self.options.max_sessions {
            return Err(ServeError::Capacity(self.options.max_sessions));
        }
        self.memory.check_room()
    }

    /// A live or ended session of either kind by id, if `reach` may reach it: the one
    /// lookup every route makes. A session of the other kind is a 409 naming its routes; one
    /// evicted from the shelf is a 410.
    pub(super) fn lookup(&self, id: &str, reach: Reach) -> Result<Live, ServeError> {
        let live = self.live().get(id).cloned();
        let found = match live {
            Some(session) => session.reached_by(id, reach)?,
            None => match self.memory.find(id) {
                Some(session) => session.reached_by(id, reach)?,
                None => return Err(self.memory.missing(id, reach)),
            },
        };
        found.touch();
        Ok(found)
    }

    /// A live or ended two-party session by id, if `owner` may reach it (a WebSocket's
    /// session is its connection's alone: to anyone else it does not exist).
    pub(crate) fn find(&self, id: &str, owner: Owner) -> Result<Arc<Slot>, ServeError> {
        match self.lookup(id, Reach::Episode(owner))? {
            Live::Episode(slot) => Ok(slot),
            Live::Table(_) => unreachable!("a table is reached as a table"),
        }
    }

    /// Step session `id` and log the episode if it ended. Returns what the seat to move next
    /// sees (or the stepping seat, once the episode is over).
    pub async fn step(
        &self,
        slot: &Slot,
        seat: Option<Seat>,
        completion: Completion,
        sampled: Sampled,
    ) -> Result<StepAnswer, ServeError> {
        // A completion past its cap is refused before anything is played: the client may send
        // another (one a model in this process wrote ends its episode instead: the driver's).
        self.options
            .text_limits
            .check_completion(encoded_len(&completion))
            .map_err(|e| ServeError::CompletionTooLarge(e.to_string()))?;
        let mut session = slot.session.lock().await;
        slot.touch();
        let stepping = seat.or(session.to_move());
        let stepped = session.step(seat, completion, sampled).await;
        slot.charge.set(session.footprint());
        let record = stepped?;
        slot.touch();
        let viewer = session.to_move().or(stepping).unwrap_or(Seat::Learner);
        let answer = session.observe(viewer);
        if let Some(record) = record {
            self.log(&record)?;
            let id = session.id.clone();
            drop(session);
            self.retire(&id);
        } else {
            drop(session);
            self.memory.relieve();
        }
        Ok(answer)
    }

    /// Drop a session `owner` may reach (delete, a closed connection, a new reset on the
    /// same connection).
    /// The owner is checked under the same lock the session is removed under, so a session
    /// that changed hands in between is never the one removed.
    pub(crate) fn remove(&self, id: &str, owner: Owner) -> bool {
        let reach = Reach::Episode(owner);
        {
            let mut live = self.live();
            if live.get(id).is_some_and(|session| session.reach() == reach) {
                live.remove(id);
                return true;
            }
        }
        self.memory.remove(id, reach)
    }

    /// Drop REST session `id` for a caller presenting `token` (the episode's own:
    /// [`Session::drop_by`]); an unfinished one ends as abandoned and is logged, never gone
    /// without a trace.
    pub(crate) async fn drop_by_client(
        &self,
        id: &str,
        token: Option<&str>,
    ) -> Result<(), ServeError> {
        let slot = self.find(id, Owner::Rest)?;
        let mut session = slot.session.lock().await;
        session.drop_by(token)?;
        // Of two drops at once, the one that takes it out of the table logs it.
        if !self.take(id, &Live::Episode(slot.clone())) {
            // An ended episode kept among the ended sessions: its record is in the log already.
            drop(session);
            if self.memory.remove(id, Reach::Episode(Owner::Rest)) {
                return Ok(());
            }
            return Err(ServeError::UnknownEpisode(id.to_string()));
        }
        if let Some(record) = session
            .abandon("dropped by a client (DELETE) before it ended")
            .await?
        {
            self.log(&record)?;
        }
        Ok(())
    }

    /// Reclaim sessions of either kind idle longer than the timeout; returns how many. An
    /// unfinished table, or a person's game of the play page, is logged as abandoned; another
    /// two-party session is dropped, as it always was.
    pub(crate) async fn reap(&self) -> usize {
        let limit = self.options.idle_timeout;
        let idle: Vec<Live> = {
            let mut live = self.live();
            let ids: Vec<String> = live
                .iter()
                .filter(|(_, session)| session.idle() >= limit)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        for session in &idle {
            let why = format!(
                "idle past --idle-timeout-s ({} s) before it ended",
                limit.as_secs()
            );
            match session {
                Live::Table(slot) => {
                    if let Err(e) = self.log_abandoned(slot, why).await {
                        eprintln!("dealgym serve: {e}");
                    }
                }
                // A person's game left unfinished is kept, as abandoned: what the people wrote
                // is data.
                Live::Episode(slot) if slot.owner == Owner::Play => {
                    let ended = slot.session.lock().await.abandon(&why).await;
                    match ended {
                        Ok(Some(record)) => {
                            if let Err(e) = self.log(&record) {
                                eprintln!("dealgym serve: {e}");
                            }
                        }
                        Ok(None) => {}
                        Err(e) => eprintln!("dealgym serve: {e}"),
                    }
                }
                Live::Episode(_) => {}
            }
        }
        self.memory.reap(limit);
        idle.len()
    }
}
