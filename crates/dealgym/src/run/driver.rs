//! The one episode driver. Every surface that plays an episode — `run`, the server's sessions,
//! eval pairings, a branch from a logged prefix — goes through [`Driver`]: it owns the
//! [`Episode`], its seeds and timing, asks in-process players for their completions, takes the
//! completions of outside seats as they come, and turns into an [`EpisodeRecord`] at the end.
//! Nowhere else loops over [`Episode::to_move`].

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::config::ProbesConfig;
use super::plan::PlannedEpisode;
use super::probes::{ask_belief, turn_to_probe, ProbeAnswer};
use super::rewarding::Rewarding;
use crate::agents::{PersonaConfig, Played, Player, PlayerError, TurnContext};
use crate::digest::Digest;
use crate::engine::{drive, Players};
use crate::game::{
    Episode, EpisodeConfig, EpisodeSeed, ErrorCause, GameError, PerSeat, Persona, Prompts, Seat,
    Setup, SetupError, Step,
};
use crate::jsonl::encoded_len;
use crate::limits::{EpisodeText, TextLimits};
use crate::planner::Planning;
use crate::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
use crate::reward::RewardConfig;
use crate::scenario::{Role, Scenario};
use crate::vocab::Call;

/// Who writes a seat's completions.
#[derive(Debug, Clone)]
pub enum SeatPlayer {
    /// A player asked in this process (an endpoint, a rule, a script).
    Local(Player),
    /// Completions fed from outside with `Driver::feed` (a server client, a logged prefix).
    /// `spec` is what the record says played the seat; `takes_persona` whether a persona is
    /// drawn for it (a language model behind the client takes one; a logged human does not).
    External { spec: String, takes_persona: bool },
}

impl SeatPlayer {
    /// What the run id knows the seat by: a local player's identity, an external seat's spec.
    pub(crate) fn identity(&self) -> String {
        match self {
            SeatPlayer::Local(p) => p.identity(),
            SeatPlayer::External { spec, .. } => spec.clone(),
        }
    }

    pub(crate) fn spec(&self) -> &str {
        match self {
            SeatPlayer::Local(p) => p.spec(),
            SeatPlayer::External { spec, .. } => spec,
        }
    }

    fn info(&self) -> PlayerInfo {
        PlayerInfo {
            spec: self.spec().into(),
            model: match self {
                SeatPlayer::Local(p) => p.model(),
                SeatPlayer::External { .. } => None,
            },
        }
    }

    /// The persona this seat plays with: a fixed one, one drawn from the config (for seats
    /// that take personas), or none.
    fn persona(
        &self,
        seat: Seat,
        personas: &PersonaConfig,
        rng: &mut impl rand::Rng,
    ) -> Option<Persona> {
        match self {
            SeatPlayer::Local(p) => match p.fixed_persona() {
                Some(fixed) => Some(fixed.clone()),
                None if p.takes_persona() => personas.draw(seat, rng),
                None => None,
            },
            SeatPlayer::External { takes_persona, .. } => {
                takes_persona.then(|| personas.draw(seat, rng)).flatten()
            }
        }
    }
}

/// What every episode of a run (or a server, or an eval cell) shares.
pub struct EpisodeKit {
    pub(crate) run_id: String,
    /// The preset the run's config was built on (`--preset`), named in every record.
    pub(crate) preset: Option<String>,
    pub players: PerSeat<SeatPlayer>,
    pub(crate) episode: EpisodeConfig,
    pub(crate) personas: PersonaConfig,
    pub(crate) rewards: RewardConfig,
    pub(crate) prompts: Arc<Prompts>,
    /// The judge and reward-model clients, when `rewards` uses them: [`play`] calls them after
    /// the episode ends, before its record is returned.
    pub(crate) rewarding: Option<Arc<Rewarding>>,
    /// How an eval seats its named players (the default for a run: no names, no exchange).
    pub(crate) seating: Seating,
    /// The caps on what an episode stores (a server's `--max-completion-bytes` and
    /// `--max-episode-bytes`): a completion past one ends the episode as an `error` that names
    /// it (`Driver::feed`). `None`: no cap (a run's own players).
    pub(crate) text_limits: Option<TextLimits>,
    /// The belief probes asked of the model seats (`[probes]`; off: none).
    pub(crate) probes: ProbesConfig,
}

/// How an eval pairing sits at the table: the name each seat's player has in the eval (written
/// to the record's `seats.*.name`), and whether every setup is played with the seats' roles
/// exchanged (`--swap-seats`; see [`Setup::with_roles_exchanged`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seating {
    pub(crate) names: PerSeat<Option<String>>,
    pub(crate) roles_exchanged: bool,
}

impl EpisodeKit {
    /// Draw the setup of an episode: roles and first mover, then each seat's persona, all from
    /// the group's RNG (so every member of a GRPO group gets the same setup, and every pairing
    /// of an eval the same setups); then, for a pairing that plays with roles exchanged, the
    /// same setup with the seats' roles exchanged. `learner_role` is the seating the plan
    /// chose (`seatings = "both"`), over the config's.
    pub(crate) fn draw_setup(
        &self,
        scenario: &Scenario,
        seeds: EpisodeSeed,
        learner_role: Option<Role>,
    ) -> Result<Setup, SetupError> {
        let mut rng = seeds.setup_rng();
        let seated;
        let config = match learner_role {
            Some(role) => {
                seated = EpisodeConfig {
                    learner_role: Some(role),
                    ..self.episode.clone()
                };
                &seated
            }
            None => &self.episode,
        };
        let mut setup = Setup::draw(scenario, config, PerSeat::default(), &mut rng)?;
        for seat in Seat::BOTH {
            setup.seats[seat].persona = self.players[seat].persona(seat, &self.personas, &mut rng);
        }
        if self.seating.roles_exchanged {
            setup = setup.with_roles_exchanged(scenario, self.episode.floor_fraction);
        }
        Ok(setup)
    }
}

/// An episode that could not be driven (a setup or prompt problem, or a misuse of the driver;
/// never a player's failure, which ends the episode as `error`).
#[derive(Debug, thiserror::Error)]
pub enum EpisodeError {
    #[error("scenario {scenario}: {source}")]
    Setup {
        scenario: String,
        source: SetupError,
    },
    #[error("scenario {scenario}: {source}")]
    Game { scenario: String, source: GameError },
    /// The episode stopped for a seat fed from outside, and nobody fed it.
    #[error("scenario {scenario}: the {seat} seat is played from outside and has no completion")]
    Unfed { scenario: String, seat: Seat },
    /// The record was asked for before the episode ended.
    #[error("scenario {scenario}: the episode has not ended")]
    NotEnded { scenario: String },
    /// The episode panicked, and so did starting it again to record the panic as its ending.
    #[error("episode {episode}: internal error (a bug in dealgym): {message}")]
    Internal { episode: String, message: String },
    /// A logged prefix ended the episode (after `prefix` of its turns), leaving nothing to
    /// continue.
    #[error("episode {episode}: its first {prefix} turns already end it ({kind})")]
    PrefixEnds {
        episode: String,
        prefix: usize,
        kind: &'static str,
    },
    /// An n-party table could not be played (its setup or a player failed before it ended).
    #[error("{0}")]
    Table(String),
}

impl From<crate::table::TableError> for EpisodeError {
    fn from(error: crate::table::TableError) -> EpisodeError {
        EpisodeError::Table(error.to_string())
    }
}

/// One episode being played: the episode and what the driver keeps beside it.
pub(crate) struct Driver {
    episode: Episode,
    books: Books,
}

/// What a driver keeps beside its episode: the kit and seeds its players are asked with, and
/// what each call cost, for the record. The players of the loop ([`drive`]).
struct Books {
    kit: Arc<EpisodeKit>,
    seeds: EpisodeSeed,
    scenario_digest: Digest,
    timing: Timing,
    /// What the endpoint said about each turn's call, in the order of the turns.
    calls: Vec<Option<Call>>,
    /// A planner seat's candidates for each turn, in the order of the turns.
    plans: Vec<Option<Planning>>,
    /// How long the moving seat's view was when each turn's call was made, in the order of
    /// the turns: the messages a turn was sent, for a reward model that scores each response.
    prompt_lens: Vec<usize>,
    started: Instant,
    /// Each seat's replica binding, released when the driver is done with the episode.
    route: Route,
    /// What the episode's turns store so far, against the kit's `text_limits`.
    text: EpisodeText,
    /// The belief probes' answers so far, in the order they were asked (`run::probes`).
    probes: Vec<ProbeAnswer>,
}

/// A seat's answer with the belief probe asked before it, where one was.
pub(crate) struct Asked {
    played: Played,
    probe: Option<ProbeAnswer>,
}

/// A seat that could not answer (after its retries), with the belief probe asked before the
/// turn where one was: its answer (and the tokens it cost) stays in the `error` record.
pub(crate) struct Unanswered {
    error: PlayerError,
    probe: Option<ProbeAnswer>,
}

/// A logged prefix's turn: no probe was asked before it.
impl From<Played> for Asked {
    fn from(played: Played) -> Asked {
        Asked {
            played,
            probe: None,
        }
    }
}

/// An episode's routing ticket: its seats' bindings to replicas (players with several
/// endpoints) live as long as the episode is played, and are released when it is dropped.
struct Route {
    ticket: u64,
    kit: Arc<EpisodeKit>,
}

impl Route {
    fn new(kit: Arc<EpisodeKit>) -> Route {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Route {
            ticket: NEXT.fetch_add(1, Ordering::Relaxed),
            kit,
        }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        for seat in Seat::BOTH {
            if let SeatPlayer::Local(player) = &self.kit.players[seat] {
                if let Some(pool) = player.replica_pool() {
                    pool.release(self.ticket);
                }
            }
        }
    }
}

impl Driver {
    /// Start a planned episode with a setup drawn from its seeds.
    /// A campaign's deal (`planned.standing`) gets its ledger's standing on the seat that
    /// carries it.
    pub fn start(kit: Arc<EpisodeKit>, planned: PlannedEpisode) -> Result<Driver, EpisodeError> {
        let setup_error = |source| EpisodeError::Setup {
            scenario: planned.scenario.id.clone(),
            source,
        };
        let mut setup = kit
            .draw_setup(&planned.scenario, planned.seeds, planned.learner_role)
            .map_err(setup_error)?;
        if let Some((seat, standing)) = &planned.standing {
            setup = setup
                .with_standing(
                    &planned.scenario,
                    *seat,
                    standing.clone(),
                    kit.episode.floor_fraction,
                )
                .map_err(|e| setup_error(SetupError::Campaign(e)))?;
        }
        Driver::with_setup(kit, planned, setup)
    }

    /// Start an episode with a given setup (a logged episode's, to replay or branch from it).
    pub(crate) fn with_setup(
        kit: Arc<EpisodeKit>,
        planned: PlannedEpisode,
        setup: Setup,
    ) -> Result<Driver, EpisodeError> {
        let PlannedEpisode {
            scenario,
            scenario_digest,
            seeds,
            ..
        } = planned;
        let id = scenario.id.clone();
        let episode =
            Episode::with_prompts(scenario, setup, kit.prompts.clone()).map_err(|source| {
                EpisodeError::Game {
                    scenario: id,
                    source,
                }
            })?;
        Ok(Driver {
            episode,
            books: Books {
                route: Route::new(kit.clone()),
                kit,
                seeds,
                scenario_digest,
                timing: Timing::default(),
                calls: Vec::new(),
                plans: Vec::new(),
                prompt_lens: Vec::new(),
                started: Instant::now(),
                text: EpisodeText::default(),
                probes: Vec::new(),
            },
        })
    }

    pub fn episode(&self) -> &Episode {
        &self.episode
    }

    /// The seat whose completion comes next; `None` once the episode has ended.
    pub fn to_move(&self) -> Option<Seat> {
        self.episode.to_move()
    }

    /// Play one completion for the seat to move, from whoever wrote it ([`Books::feed`]).
    pub(crate) fn feed(&mut self, played: Played) -> Result<Option<Step>, EpisodeError> {
        self.books.feed(&mut self.episode, played)
    }

    /// What the episode's turns store so far, as the record writes them (counted under the
    /// kit's `text_limits`; 0 without them).
    pub(crate) fn stored_bytes(&self) -> u64 {
        self.books.text.stored()
    }

    /// Replay the first `n` turns of `record` from the log through the one prefix loop
    /// ([`super::prefix::feed_prefix`]), for `replay --branch-from` and `run --prefixes`.
    pub(crate) fn feed_prefix(
        &mut self,
        record: &EpisodeRecord,
        n: usize,
    ) -> Result<(), EpisodeError> {
        super::prefix::feed_prefix(record, n, &mut self.episode, &mut self.books, |e| {
            e.outcome().map(|o| o.kind)
        })
    }

    /// End the episode because `seat`'s player could not answer (after its retries). A
    /// backend failure is never turned into a move.
    pub fn fail(&mut self, seat: Seat, error: &PlayerError) -> Result<(), EpisodeError> {
        fail_backend(&mut self.episode, seat, error)
    }

    /// End the episode unfinished because a client of the server dropped it (`why`): an
    /// `error` ending of kind `abandoned` ([`crate::game::Episode::abandon`]).
    pub(crate) fn abandon(&mut self, why: &str) -> Result<(), EpisodeError> {
        self.episode
            .abandon(why)
            .map(|_| ())
            .map_err(|source| self.game_error(source))
    }

    /// Ask the in-process players for their completions until the episode ends (`None`) or a
    /// seat played from outside is to move (that seat).
    pub(crate) async fn play_local(&mut self) -> Result<Option<Seat>, EpisodeError> {
        drive(&mut self.episode, &mut self.books).await
    }

    /// The record of the ended episode.
    pub(crate) fn into_record(mut self) -> Result<EpisodeRecord, EpisodeError> {
        let played_on = self.episode.scenario().clone();
        let scenario = played_on.id.clone();
        let books = &mut self.books;
        books.timing.wall_ms = books.started.elapsed().as_millis() as u64;
        if books.timing.turn_replica.iter().all(Option::is_none) {
            // No turn was served by a replica pool: the record stays as it always was.
            books.timing.turn_replica.clear();
        }
        let kit = books.kit.clone();
        let meta = RecordMeta {
            run_id: kit.run_id.clone(),
            seeds: books.seeds,
            scenario_digest: books.scenario_digest,
            players: PerSeat::from_fn(|seat| kit.players[seat].info()),
        };
        let timing = std::mem::take(&mut books.timing);
        let calls = std::mem::take(&mut books.calls);
        let plans = std::mem::take(&mut books.plans);
        let probes = std::mem::take(&mut books.probes);
        let mut record =
            EpisodeRecord::from_episode(self.episode, meta, &kit.rewards, timing, calls)
                .ok_or(EpisodeError::NotEnded { scenario })?;
        for (turn, planning) in record.turns.iter_mut().zip(plans) {
            turn.planning = planning;
        }
        for seat in Seat::BOTH {
            record.seats[seat].name = kit.seating.names[seat].clone();
        }
        record.preset = kit.preset.clone();
        record.oracle = record.oracle_of(&played_on);
        record.probes = probes
            .into_iter()
            .map(|p| p.scored(&played_on, &record.setup))
            .collect();
        Ok(record)
    }

    /// The record of the ended episode with the judge's and the reward model's components
    /// added ([`Rewarding`]), when the kit has them: what every in-process episode ends with.
    /// Without them this is [`into_record`](Self::into_record).
    pub(crate) async fn into_rewarded_record(self) -> Result<EpisodeRecord, EpisodeError> {
        let Some(rewarding) = self.books.kit.rewarding.clone() else {
            return self.into_record();
        };
        let scenario = self.episode.scenario().clone();
        let views = PerSeat::from_fn(|seat| self.episode.view(seat).to_vec());
        let prompt_lens = self.books.prompt_lens.clone();
        let mut record = self.into_record()?;
        rewarding
            .apply(&mut record, &scenario, &views, &prompt_lens)
            .await;
        Ok(record)
    }

    fn game_error(&self, source: GameError) -> EpisodeError {
        game_error(&self.episode, source)
    }
}

impl Books {
    /// Play one completion for the seat to move, from whoever wrote it. Under the kit's
    /// `text_limits`, a completion past its cap, or one whose turn could take what the episode
    /// stores past the episode's, is not played: the episode ends as an `error`
    /// ([`ErrorCause::Limit`]) whose detail names the cap and its flag, and `None` comes back.
    fn feed(
        &mut self,
        episode: &mut Episode,
        played: Played,
    ) -> Result<Option<Step>, EpisodeError> {
        let call_bytes = match self.kit.text_limits {
            Some(limits) => {
                let call = played.call.as_ref().map_or(0, encoded_len);
                let admitted = self
                    .text
                    .admit(encoded_len(&played.completion), call, &limits);
                if let Err(over) = admitted {
                    let seat = episode.to_move().unwrap_or(Seat::Learner);
                    if let Err(source) =
                        episode.fail(seat, Some(ErrorCause::Limit), over.to_string())
                    {
                        return Err(game_error(episode, source));
                    }
                    return Ok(None);
                }
                Some(call)
            }
            None => None,
        };
        self.timing.turn_ms.push(played.latency_ms);
        self.timing.call_retries.push(played.retries);
        self.timing.turn_replica.push(played.replica);
        self.calls.push(played.call);
        self.plans.push(played.planning);
        let asked = episode.to_move().map(|seat| episode.view(seat).len());
        self.prompt_lens.push(asked.unwrap_or(0));
        let before = episode.turns().len();
        let step = match episode.step(played.completion) {
            Ok(step) => step,
            Err(source) => return Err(game_error(episode, source)),
        };
        if let Some(call) = call_bytes {
            self.text.add(call);
            for turn in &episode.turns()[before..] {
                self.text.add(encoded_len(turn));
            }
        }
        Ok(Some(step))
    }
}

impl Players<Episode> for Books {
    type Answer = Asked;
    type Failure = Unanswered;
    type Error = EpisodeError;

    /// A seat fed from outside (`SeatPlayer::External`) is not asked.
    fn in_process(&self, seat: Seat) -> bool {
        matches!(self.kit.players[seat], SeatPlayer::Local(_))
    }

    /// The completion of `seat`'s in-process player.
    fn ask<'a>(
        &'a self,
        episode: &'a Episode,
        seat: Seat,
    ) -> impl Future<Output = Result<Asked, Unanswered>> + 'a {
        let sampling_seed = self.seeds.sampling_seed(seat);
        let mut ctx = TurnContext::of(episode, seat, sampling_seed);
        ctx.route = Some(self.route.ticket);
        let probe_turn = turn_to_probe(&self.kit.probes, episode, seat, &self.probes);
        async move {
            match &self.kit.players[seat] {
                SeatPlayer::Local(player) => {
                    // Asked first, and apart: the probe's answer is nothing the turn sees.
                    let probe = match probe_turn {
                        Some(turn) => {
                            Box::pin(ask_belief(player, episode, seat, turn, sampling_seed)).await
                        }
                        None => None,
                    };
                    match player.play(&ctx, episode.view(seat)).await {
                        Ok(played) => Ok(Asked { played, probe }),
                        Err(error) => Err(Unanswered { error, probe }),
                    }
                }
                SeatPlayer::External { spec, .. } => Err(Unanswered {
                    error: PlayerError::Spec {
                        spec: spec.clone(),
                        message: "a seat played from outside is fed, not asked".into(),
                    },
                    probe: None,
                }),
            }
        }
    }

    fn take(&mut self, episode: &mut Episode, _: Seat, asked: Asked) -> Result<(), EpisodeError> {
        self.probes.extend(asked.probe);
        self.feed(episode, asked.played).map(|_| ())
    }

    fn fail(
        &mut self,
        episode: &mut Episode,
        seat: Seat,
        failed: Unanswered,
    ) -> Result<(), EpisodeError> {
        self.probes.extend(failed.probe);
        fail_backend(episode, seat, &failed.error)
    }
}

fn game_error(episode: &Episode, source: GameError) -> EpisodeError {
    EpisodeError::Game {
        scenario: episode.scenario().id.clone(),
        source,
    }
}

/// End `episode` because `seat`'s player could not answer (after its retries).
fn fail_backend(
    episode: &mut Episode,
    seat: Seat,
    error: &PlayerError,
) -> Result<(), EpisodeError> {
    match episode.fail_backend(seat, error.to_string()) {
        Ok(_) => Ok(()),
        Err(source) => Err(game_error(episode, source)),
    }
}

/// Play an episode whose seats are both in-process to its end. A player that cannot answer
/// (after its retries) ends the episode as `error`; that is a record like any other. The
/// judge's and the reward model's components ([`Rewarding`]) are added here, once the episode
/// has ended. An episode planned from a logged prefix (`run --prefixes`) starts under the
/// prefix's setup, replays it (`Driver::feed_prefix`) and names it as its `parent`.
pub async fn play(
    kit: Arc<EpisodeKit>,
    planned: PlannedEpisode,
) -> Result<EpisodeRecord, EpisodeError> {
    let named = planned.clone();
    let mut driver = match &named.prefix {
        None => Driver::start(kit, planned)?,
        Some(logged) => {
            let mut driver = Driver::with_setup(kit, planned, logged.setup.clone())?;
            driver.feed_prefix(&logged.record, logged.turns)?;
            driver
        }
    };
    #[cfg(debug_assertions)]
    injected_panic(&named.episode_id());
    if let Some(seat) = driver.play_local().await? {
        return Err(EpisodeError::Unfed {
            scenario: driver.episode().scenario().id.clone(),
            seat,
        });
    }
    // Boxed: the rewards' calls (a judge, a reward model) are a large future, alive only as
    // the episode ends; inline, every episode in flight would carry their size all along.
    let mut record = Box::pin(driver.into_rewarded_record()).await?;
    named.name(&mut record);
    Ok(record)
}

/// The ending an episode gets when the code playing it panicked: an `error` whose detail
/// starts with this, then the panic's message.
pub const INTERNAL_ERROR: &str = "internal error (a bug in dealgym, not the endpoint)";

/// An episode (`R`: a two-party record, or a table's) played to its end by [`caught`].
#[derive(Debug)]
pub(crate) struct Finished<R = EpisodeRecord> {
    pub record: R,
    /// The episode panicked: `record` is an `error` ending saying so ([`INTERNAL_ERROR`]),
    /// written like any other so the episode is not lost without a word, and counted apart.
    pub internal_error: bool,
}

/// [`play`], with a panic anywhere inside the episode (a player, the rules, the rewards)
/// caught: the episode then ends as an `error` record whose detail is [`INTERNAL_ERROR`] and
/// the panic's message, under the same setup and seeds, with no turn and no `by` seat. A
/// panic is a bug, not a property of the episode: the caller counts it and says so in its exit
/// code, so it is never mistaken for an ending the negotiation produced.
pub(crate) async fn play_caught(
    kit: Arc<EpisodeKit>,
    planned: PlannedEpisode,
) -> Result<Finished, EpisodeError> {
    let episode = planned.episode_id();
    caught(
        play(kit.clone(), planned.clone()),
        |message| internal_error_record(kit, planned, message),
        |message| EpisodeError::Internal { episode, message },
    )
    .await
}

/// The one rule of a panic inside an episode of either kind: `played` runs with any panic
/// caught; on one, `record_panic` makes the record of the episode ended at its start as an
/// `error` of cause `internal` saying so (itself caught: a second panic becomes `twice`'s
/// error, naming both), and the episode is counted apart (`internal_error`). A combinator, not
/// an `async fn`: an async fn would keep `played` twice in its state (the argument and the
/// future it is moved into), and it is the largest part of every episode in flight.
pub(crate) fn caught<R, E>(
    played: impl Future<Output = Result<R, E>>,
    record_panic: impl FnOnce(&str) -> Result<R, E>,
    twice: impl FnOnce(String) -> E,
) -> impl Future<Output = Result<Finished<R>, E>> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(played)
        .catch_unwind()
        .map(move |result| match result {
            Ok(record) => Ok(Finished {
                record: record?,
                internal_error: false,
            }),
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                let record = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    record_panic(&message)
                }))
                .map_err(|again| {
                    twice(format!("{message}; then {}", panic_message(again.as_ref())))
                })??;
                Ok(Finished {
                    record,
                    internal_error: true,
                })
            }
        })
}

/// The text of a panic's payload (what `panic!` was given, when it was a string).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let said = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    match said {
        Some(said) => format!("panicked: {said}"),
        None => "panicked".to_string(),
    }
}

/// The record of `planned` ended at its start by an internal error: see [`play_caught`].
fn internal_error_record(
    kit: Arc<EpisodeKit>,
    planned: PlannedEpisode,
    message: &str,
) -> Result<EpisodeRecord, EpisodeError> {
    let named = planned.clone();
    let mut driver = match &named.prefix {
        None => Driver::start(kit, planned)?,
        Some(logged) => Driver::with_setup(kit, planned, logged.setup.clone())?,
    };
    let seat = driver.to_move().unwrap_or(Seat::Learner);
    if let Err(source) = driver.episode.fail(
        seat,
        Some(ErrorCause::Internal),
        format!("{INTERNAL_ERROR}: {message}"),
    ) {
        return Err(driver.game_error(source));
    }
    let mut record = driver.into_record()?;
    record.outcome.outcome.by = None;
    named.name(&mut record);
    Ok(record)
}

/// Debug builds only (the tests' binary; never a release): panic inside the episode whose id
/// `DEALGYM_PANIC_IN_EPISODE` names, so a test can show through the real binary what a bug
/// inside an episode becomes ([`play_caught`]: a record, a count, an exit status) without a
/// real bug to trigger it.
#[cfg(debug_assertions)]
fn injected_panic(episode: &str) {
    if std::env::var("DEALGYM_PANIC_IN_EPISODE").is_ok_and(|id| id == episode) {
        panic!("injected by DEALGYM_PANIC_IN_EPISODE");
    }
}
