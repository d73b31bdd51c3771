//! [`SeatedGame`]: one n-party episode stepped from Python, each seat by its role — a table
//! (core's [`TableEpisode`], the `deliberation` family) or a market (core's `MarketEpisode`,
//! the `market` family, hosted by `market.rs`): a [`Game`](crate::game::Game) of either.
//!
//! The rules — the schedule, offers or the order book, regulation, the malformed-turn policy,
//! the views, the record — stay core's; this file reads Python's arguments, names seats by
//! role, plays the built-in seats, and answers in Python's types, once for both kinds. What a
//! kind has of its own (its scenarios, its options, its scripted players, its state, its
//! record's outcome) is its [`Hosted`] implementation. The scenario comes from a scenario file
//! (`scenario_file=`) or the kind's built-in catalog, picked as `dealgym serve` picks a
//! table reset's ([`Catalog::pick`]), and the schedule is drawn from the seed as serve draws it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::SystemTime;

use dealgym_core::engine::{drive_now, Seated, SeatedRecord, SeatedRun};
use dealgym_core::game::{mix_text, EpisodeSeed, OutcomeKind};
use dealgym_core::narration::Narration;
use dealgym_core::negotiator::ScriptedSeats;
use dealgym_core::protocol::TurnFormat;
use dealgym_core::record::{table_calls, ExactCalls, NoTrajectory, TablePlayerInfo, TurnCost};
use dealgym_core::scenario::{
    builtin_scenarios, load_table_scenarios, load_table_scenarios_from_reader, Catalog, Listed,
    LoadOptions, ScenarioError as LoadError, TableFamily, TableScenario,
};
use dealgym_core::table::{
    public_move, seat_state, TableEpisode, TableError, TableOptions, TableSetup,
};
use dealgym_core::vocab::Message;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::pythonize;
use serde_json::json;

use crate::errors::{EpisodeEndedError, NotYourTurnError, ScenarioError, TokenError};
use crate::exact::{read_action, Exact, Pending};
use crate::game::StepInfo;
use crate::observation::SeatView;

/// The player spec a record names for a seat played from Python.
const PYTHON_PLAYER: &str = "python";
/// The spec of a seat played in process by the scripted party of its incentive.
use dealgym_core::negotiator::deliberation::{Scripted, SCRIPTED_SPEC as SCRIPTED};

/// What hosting a kind of n-party episode in Python takes of the kind beyond the engine's
/// [`Seated`] (which steps, ends and records either kind): its scenarios and the rules it is set
/// up with, its scripted players, a seat's state, and its record's outcome in roles.
/// Everything else — picking the scenario, seating the players, stepping, the built-in seats'
/// moves, token-exact play, trajectories, the record's caching — is [`SeatedGame`]'s, once for
/// both kinds.
pub(crate) trait Hosted: Seated + Sized + Send + 'static {
    type Scenario: Listed + Send + Sync + 'static;
    /// The rules the episode is set up with (`retries`, `regulated`, `format`).
    type Rules: Debug + Send + Sync;
    /// The seats played in process and by what.
    type Scripted: Send + Sync;

    /// The family's name: its built-in file's stem, a `Game`'s `family`.
    const FAMILY: &'static str;
    /// What a message calls one episode (`table`, `market`), and what a run id made without
    /// `run_id` starts its key with.
    const NOUN: &'static str;
    /// The turn formats the kind plays, as a message names them.
    const FORMATS: &'static str;

    /// The built-in catalog's cell (each kind its own static).
    fn builtin_cell() -> &'static OnceLock<Result<Catalog<Self::Scenario>, String>>;
    /// The scenarios of a scenario file's text or of a file.
    fn load_text(file: &str, text: &str) -> Result<Vec<Self::Scenario>, LoadError>;
    fn load_file(path: &Path) -> Result<Vec<Self::Scenario>, LoadError>;
    /// The scenario's roles, in its order, and the seat of one (else a message naming them).
    fn roles_of(scenario: &Self::Scenario) -> Vec<String>;
    fn seat_in(scenario: &Self::Scenario, role: &str) -> Result<usize, String>;

    /// The rules of Python's arguments; a format the kind does not play is a ValueError.
    fn rules(
        retries: Option<u32>,
        regulated: Vec<String>,
        format: Option<TurnFormat>,
    ) -> PyResult<Self::Rules>;
    /// What the record is written with ([`Seated::record`]'s options) of the rules.
    fn record_options(rules: &Self::Rules) -> &<Self as Seated>::Options;
    /// Whether `spec` at `role` seats the kind's scripted player; a spec the kind plays only
    /// elsewhere is refused naming what is played here.
    fn is_scripted(role: &str, spec: &str) -> PyResult<bool>;
    /// The scripted players of the seats `specs` name.
    fn scripted(specs: &[String]) -> Self::Scripted;
    /// Whether `seat` is played in process.
    fn in_process(scripted: &Self::Scripted, seat: usize) -> bool;

    /// The episode of `scenario` under `rules`, its schedule drawn from `seed`.
    fn start(
        scenario: Arc<Self::Scenario>,
        rules: &Self::Rules,
        seed: u64,
    ) -> Result<Self, TableError>;
    /// Let the scripted seats move while it is their turn.
    fn play_scripted(&mut self, scripted: &mut Self::Scripted) -> Result<(), TableError>;

    fn scenario(&self) -> &Self::Scenario;
    /// The seat of each slot of the schedule drawn from the seed.
    fn schedule(&self) -> Vec<usize>;
    /// The kind of the move `seat`'s last attempt played, if it was played.
    fn last_played(&self, seat: usize) -> Option<&'static str>;
    /// `seat`'s structured state now.
    fn seat_state(&self, seat: usize) -> SeatView;
    /// The moves that took effect, `(seat, text)`: the talk and the move as the others read it.
    fn transcript(&self) -> Vec<(usize, String)>;
    /// The exact ids of `seat`'s calls so far, checked.
    fn calls(&self, seat: usize) -> Result<ExactCalls<'_>, NoTrajectory>;
    /// The tools a seat may act through.
    fn tools(&self) -> PyResult<serde_json::Value>;

    /// The turn format `seat` writes in, for a narrated seat ([`dealgym_core::narration`]), or
    /// why the kind's seats are not narrated.
    fn narrated_format(&self, seat: usize) -> Result<TurnFormat, String>;
    /// The brief a narrator of `seat` is sent for the `decided` action line.
    fn narration_brief(&self, seat: usize, decided: &str) -> Result<String, String>;
    /// The action line the built-in player `decider` would play at `seat` now.
    fn decide(&self, seat: usize, decider: &str) -> Result<String, String>;
    /// The narration of the turn at `index`, as the engine filled it in.
    fn narration_at(&self, index: usize) -> Option<Narration>;

    /// The record's outcome in a face's words: roles for seats, dicts.
    fn record_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
    ) -> PyResult<Bound<'py, PyAny>>;
    /// How it ended from `seat`'s side (`kind`, `by`, `utility`, `rho`, …).
    fn seat_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
        seat: usize,
    ) -> PyResult<Bound<'py, PyAny>>;
}

/// A record of another kind than the game's: a bug, said as one.
pub(crate) fn other_kind() -> PyErr {
    PyRuntimeError::new_err("internal error (a bug in dealgym): a game's record of another kind")
}

/// The built-in catalog of kind `E` (`scenarios/FAMILY.jsonl`, compiled into dealgym-core:
/// `builtin_scenarios`, which the command line reads too), parsed on first use.
fn builtin<E: Hosted>() -> PyResult<&'static Catalog<E::Scenario>> {
    let loaded = E::builtin_cell().get_or_init(|| {
        let name = E::FAMILY;
        match builtin_scenarios(name) {
            None => Err(format!(
                "this build has no built-in {} scenarios (scenarios/{name}.jsonl): pass scenario_file=",
                E::NOUN
            )),
            Some(text) => E::load_text(&format!("scenarios/{name}.jsonl"), text)
                .map(|s| Catalog::new(s.into_iter().map(Arc::new).collect()))
                .map_err(|e| e.to_string()),
        }
    });
    loaded
        .as_ref()
        .map_err(|e| ScenarioError::new_err(e.clone()))
}

/// A file's scenarios of kind `E`, read once while the file stays as it was (its length and
/// modification time): an environment that resets many times does not parse it every time.
fn from_file<E: Hosted>(path: &Path) -> PyResult<Arc<Catalog<E::Scenario>>>
where
    Catalog<E::Scenario>: Send + Sync,
{
    type Stamp = (Option<SystemTime>, u64);
    type Cached = HashMap<(&'static str, PathBuf), (Stamp, Arc<dyn std::any::Any + Send + Sync>)>;
    static CACHE: LazyLock<Mutex<Cached>> = LazyLock::new(Mutex::default);
    let stamp = std::fs::metadata(path)
        .map(|m| (m.modified().ok(), m.len()))
        .ok();
    let key = (E::FAMILY, path.to_path_buf());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(now), Some((then, catalog))) = (stamp, cache.get(&key)) {
        if *then == now && now.0.is_some() {
            if let Ok(catalog) = catalog.clone().downcast::<Catalog<E::Scenario>>() {
                return Ok(catalog);
            }
        }
    }
    let scenarios = E::load_file(path).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let catalog = Arc::new(Catalog::new(scenarios.into_iter().map(Arc::new).collect()));
    if let Some(stamp) = stamp {
        if cache.len() >= 64 {
            cache.clear();
        }
        cache.insert(key, (stamp, catalog.clone()));
    }
    Ok(catalog)
}

/// The catalog of `scenario_file`, or the kind's built-in one.
fn catalog_of<E: Hosted>(scenario_file: Option<&Path>) -> PyResult<CatalogRef<E::Scenario>>
where
    Catalog<E::Scenario>: Send + Sync,
{
    Ok(match scenario_file {
        Some(path) => CatalogRef::Owned(from_file::<E>(path)?),
        None => CatalogRef::Builtin(builtin::<E>()?),
    })
}

/// A catalog read from a file or the built-in one.
enum CatalogRef<S: Listed + 'static> {
    Owned(Arc<Catalog<S>>),
    Builtin(&'static Catalog<S>),
}

impl<S: Listed> std::ops::Deref for CatalogRef<S> {
    type Target = Catalog<S>;
    fn deref(&self) -> &Catalog<S> {
        match self {
            CatalogRef::Owned(c) => c,
            CatalogRef::Builtin(c) => c,
        }
    }
}

/// One n-party episode of kind `E`, every seat named by its role. Seats are played from
/// Python with raw completions, or in process by the kind's scripted player (`players={role:
/// "rule:deliberation"}` at a table, `"rule:zic"`, `"rule:sniper"` or `"rule:truthful"` in a
/// market), which moves as soon as it is its turn.
pub struct SeatedGame<E: Hosted> {
    episode: E,
    rules: E::Rules,
    seeds: EpisodeSeed,
    run_id: String,
    /// Each seat's player spec, as the record names it.
    specs: Vec<String>,
    scripted: E::Scripted,
    record: OnceLock<SeatedRecord>,
    /// Token-exact play: the prompt ids set for the seat to move (`set_prompt_ids`), until the
    /// step that carries what was sampled after them.
    pending: Option<Pending<usize>>,
}

/// A table hosted from Python.
pub type TableGame = SeatedGame<TableEpisode>;

/// A whole number from 0 to 2**64 - 1, or a ValueError naming it.
fn whole(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    value.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{name} must be an integer from 0 to 2**64 - 1, not {}",
            value
                .repr()
                .map_or_else(|_| "this".to_string(), |r| r.to_string())
        ))
    })
}

/// A core table error (a market's too) as the Python exception that says it.
fn table_error(e: TableError) -> PyErr {
    match e {
        TableError::OutOfTurn { .. } => NotYourTurnError::new_err(e.to_string()),
        TableError::Ended => EpisodeEndedError::new_err(e.to_string()),
        TableError::UnknownSeat(_) | TableError::UnknownRegulated(_) | TableError::BadSetup(_) => {
            ScenarioError::new_err(e.to_string())
        }
        TableError::Template(_) => PyRuntimeError::new_err(e.to_string()),
    }
}

/// The turn format named `format`, or a ValueError naming the formats of the kind.
fn turn_format(format: &str, kind: &str, formats: &str) -> PyResult<TurnFormat> {
    serde_json::from_value::<TurnFormat>(json!(format)).map_err(|_| {
        PyValueError::new_err(format!(
            "format `{format}`: a {kind} is played in {formats}"
        ))
    })
}

impl<E: Hosted> SeatedGame<E> {
    fn role_of(&self, seat: usize) -> String {
        self.episode.role(seat).to_string()
    }

    /// The seat of `role`, or a ScenarioError naming the roles.
    fn seat(&self, role: &str) -> PyResult<usize> {
        E::seat_in(Hosted::scenario(&self.episode), role).map_err(ScenarioError::new_err)
    }

    fn roles(&self) -> Vec<String> {
        E::roles_of(Hosted::scenario(&self.episode))
    }

    /// The record, once the episode has ended, built on first use.
    pub(crate) fn ended_record(&self) -> PyResult<&SeatedRecord> {
        if self.outcome_kind().is_none() {
            return Err(PyRuntimeError::new_err(format!(
                "the {} has not ended: it has no record yet",
                E::NOUN
            )));
        }
        Ok(self.record.get_or_init(|| {
            let players: Vec<TablePlayerInfo> = self
                .specs
                .iter()
                .map(|player| TablePlayerInfo {
                    player: player.clone(),
                    model: None,
                })
                .collect();
            let costs = vec![TurnCost::default(); self.episode.turns_played()];
            let run = SeatedRun {
                run_id: &self.run_id,
                seeds: self.seeds,
                episode_id: None,
                players: &players,
                costs: &costs,
            };
            self.episode.record(E::record_options(&self.rules), &run)
        }))
    }

    /// The ended record's run and episode ids, and the record (what a writer appends).
    pub(crate) fn record_for_writer(&self) -> PyResult<(&str, &str, &SeatedRecord)> {
        let record = self.ended_record()?;
        Ok((&self.run_id, record.episode_id(), record))
    }

    /// An episode of `scenario_id` (or `index`, or drawn from `seed`) from `scenario_file`,
    /// or the kind's built-in catalog. `retries`: malformed or illegal turns a seat may retry
    /// before it forfeits (default 1); `regulated`: the roles regulation holds to their limits;
    /// `format`: how every seat writes its turns; `players`: a role's player spec as the
    /// record names it (the kind's scripted specs play the seat in process).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        py: Python<'_>,
        scenario_id: Option<&str>,
        scenario_file: Option<PathBuf>,
        index: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        member: Option<&Bound<'_, PyAny>>,
        retries: Option<&Bound<'_, PyAny>>,
        regulated: Option<Vec<String>>,
        format: Option<&str>,
        players: Option<&Bound<'_, PyDict>>,
        run_id: Option<String>,
    ) -> PyResult<SeatedGame<E>>
    where
        Catalog<E::Scenario>: Send + Sync,
    {
        let seed = seed.map(|v| whole(v, "seed")).transpose()?.unwrap_or(0);
        let member = member.map(|v| whole(v, "member")).transpose()?.unwrap_or(0);
        let index = index
            .map(|v| whole(v, "index").map(|i| usize::try_from(i).unwrap_or(usize::MAX)))
            .transpose()?;
        let catalog = catalog_of::<E>(scenario_file.as_deref())?;
        let at = catalog
            .pick(scenario_id, None, index, seed)
            .map_err(|e| ScenarioError::new_err(e.to_string()))?;
        let scenario = catalog.scenarios[at].clone();

        let retries = retries
            .map(|r| {
                u32::try_from(whole(r, "retries")?)
                    .map_err(|_| PyValueError::new_err("retries must be at most 2**32 - 1"))
            })
            .transpose()?;
        let format = format
            .map(|f| turn_format(f, E::NOUN, E::FORMATS))
            .transpose()?;
        let rules = E::rules(retries, regulated.unwrap_or_default(), format)?;

        let roles = E::roles_of(&scenario);
        let mut specs: Vec<String> = vec![PYTHON_PLAYER.to_string(); roles.len()];
        for (role, spec) in players
            .map(|p| p.iter().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            let (Ok(role), Ok(spec)) = (role.extract::<String>(), spec.extract::<String>()) else {
                return Err(PyTypeError::new_err(
                    "players maps a role (str) to its player spec (str)",
                ));
            };
            let seat = E::seat_in(&scenario, &role)
                .map_err(|e| ScenarioError::new_err(format!("players: {e}")))?;
            E::is_scripted(&role, &spec)?;
            specs[seat] = spec;
        }
        let scripted = E::scripted(&specs);

        let seeds = EpisodeSeed {
            member,
            ..EpisodeSeed::reset(seed, at)
        };
        let run_id = run_id.unwrap_or_else(|| {
            let key = format!("{}|{}|{rules:?}|{specs:?}", E::NOUN, scenario.id());
            format!("python-{:016x}", mix_text(vec![seed], &key))
        });
        let mut game = SeatedGame {
            episode: E::start(scenario, &rules, seeds.table_seed()).map_err(table_error)?,
            rules,
            seeds,
            run_id,
            specs,
            scripted,
            record: OnceLock::new(),
            pending: None,
        };
        py.detach(|| game.episode.play_scripted(&mut game.scripted))
            .map_err(table_error)?;
        Ok(game)
    }

    pub(crate) fn family_name(&self) -> &'static str {
        E::FAMILY
    }

    pub(crate) fn scenario_id(&self) -> String {
        Seated::scenario_id(&self.episode).to_string()
    }

    /// Every seat's role, in the game's order (the PettingZoo agents).
    pub(crate) fn roles_py(&self) -> Vec<String> {
        self.roles()
    }

    /// The roles played in process by the kind's scripted player.
    pub(crate) fn in_process(&self) -> Vec<String> {
        (0..self.specs.len())
            .filter(|&s| E::in_process(&self.scripted, s))
            .map(|s| self.role_of(s))
            .collect()
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seeds.run
    }

    pub(crate) fn run_id(&self) -> String {
        self.run_id.clone()
    }

    /// The schedule drawn from the seed: the role of each turn, in order.
    pub(crate) fn schedule(&self) -> Vec<String> {
        self.episode
            .schedule()
            .into_iter()
            .map(|s| self.role_of(s))
            .collect()
    }

    /// The role whose completion the next `step` takes; `None` once the episode has ended.
    pub(crate) fn to_move(&self) -> Option<String> {
        self.episode.to_move().map(|s| self.role_of(s))
    }

    /// How the episode ended; `None` while it is going.
    pub(crate) fn outcome_kind(&self) -> Option<OutcomeKind> {
        self.episode.ending().map(|e| e.kind)
    }

    /// Each role's reward once the episode has ended (the record's: at a table ρ on a deal,
    /// 0 without one, −1 for a seat that forfeited; in a market each trader's surplus).
    pub(crate) fn rewards(&self) -> PyResult<Option<BTreeMap<String, f64>>> {
        if self.outcome_kind().is_none() {
            return Ok(None);
        }
        let rewards = self.ended_record()?.rewards();
        Ok(Some(self.roles().into_iter().zip(rewards).collect()))
    }

    /// The record's outcome in roles and dicts, once the episode has ended.
    pub(crate) fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.outcome_kind().is_none() {
            return Ok(None);
        }
        Ok(Some(self.episode.record_outcome(py, self.ended_record()?)?))
    }

    /// The action line the built-in player `decider` would play as `role`, the role to move,
    /// now: a narrated seat's decided move (at a table, `rule:deliberation`).
    pub(crate) fn decide(&self, role: &str, decider: &str) -> PyResult<String> {
        let seat = self.check_turn(Some(role))?;
        self.episode
            .decide(seat, decider)
            .map_err(PyValueError::new_err)
    }

    /// The turn format `role`'s seat writes in, for a narrated seat.
    pub(crate) fn format_of(&self, role: &str) -> PyResult<TurnFormat> {
        self.episode
            .narrated_format(self.seat(role)?)
            .map_err(PyValueError::new_err)
    }

    /// The brief `role`'s narrator is sent for the `decided` action line.
    pub(crate) fn narration_brief(&self, role: &str, decided: &str) -> PyResult<String> {
        self.episode
            .narration_brief(self.seat(role)?, decided)
            .map_err(PyValueError::new_err)
    }

    /// `seat`'s structured state now (what its observation's `state` holds).
    pub(crate) fn seat_state_of(&self, seat: usize) -> SeatView {
        self.episode.seat_state(seat)
    }

    /// Play `action` (the completion text, or a dict with `text` and optionally `reasoning`
    /// and `tool_calls`, and in token-exact play the `completion_ids` sampled after
    /// `set_prompt_ids`, with their `logprobs` and `finish_reason`) as `role`'s turn. A role
    /// that is not to move raises `NotYourTurnError` (a ValueError) naming both roles; a step
    /// after the end raises `EpisodeEndedError`. A move the rules do not allow (an option not
    /// in the game, an offer or a quote that does not exist) is a turn error: retried, then
    /// forfeited, as the malformed-turn policy says.
    pub(crate) fn step(
        &mut self,
        py: Python<'_>,
        action: &Bound<'_, PyAny>,
        role: Option<&str>,
    ) -> PyResult<StepInfo> {
        let action = read_action(action)?.for_role(role)?;
        let seat = self.check_action(&action)?;
        let completion = self.completion_of(action).map_err(TokenError::new_err)?;
        let at = self.episode.turns_played();
        let step = py
            .detach(|| {
                let step = Seated::step(&mut self.episode, seat, completion)?;
                self.episode.play_scripted(&mut self.scripted)?;
                Ok::<_, TableError>(step)
            })
            .map_err(table_error)?;
        let narration = self.episode.narration_at(at);
        let ended = self.outcome_kind();
        let (terminated, truncated) = dealgym_core::engine::ending(ended);
        Ok(StepInfo {
            role: self.role_of(step.seat),
            played: self.episode.last_played(step.seat),
            retry: step.retry,
            error: step.error.map(|e| e.to_string()),
            terminated,
            truncated,
            done: ended.is_some(),
            to_move: self.to_move(),
            outcome: ended.map(|k| k.name()),
            narration,
        })
    }

    /// The moves that took effect, `(role, text)`: the talk and the move as the others read it.
    pub(crate) fn transcript(&self) -> Vec<(String, String)> {
        self.episode
            .transcript()
            .into_iter()
            .map(|(seat, text)| (self.role_of(seat), text))
            .collect()
    }

    /// The exact token ids `role` has been sent and has sampled so far, call by call (empty
    /// before its first call); `None` if it played a call without ids (not token-exact).
    pub(crate) fn token_sequence(&self, role: &str) -> PyResult<Option<Vec<u32>>> {
        let seat = self.seat(role)?;
        Ok(self.episode.token_sequence(seat).map(<[u32]>::to_vec))
    }

    /// `role`'s token trajectory so far, by the core's one rule: as `Game.trajectory`.
    pub(crate) fn trajectory<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let seat = self.seat(role)?;
        let rewards = match self.outcome_kind() {
            Some(_) => Some(self.ended_record()?.call_rewards(seat)),
            None => None,
        };
        crate::trajectory::trajectory_dict(py, role, self.episode.calls(seat), rewards)
    }

    /// The episode's record, as `dealgym run` writes one (what `replay --verify` checks).
    pub(crate) fn record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize(py, self.ended_record()?)?)
    }

    /// The record as one JSON line (without the newline), as a record file holds it.
    pub(crate) fn record_json(&self) -> PyResult<String> {
        serde_json::to_string(self.ended_record()?)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// How the episode ended from `role`'s side, once it has, with its `utility` and `rho`,
    /// the keys a two-party game's has; `None` while it runs.
    pub(crate) fn outcome_for<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let seat = self.seat(role)?;
        if self.outcome_kind().is_none() {
            return Ok(py.None().into_bound(py));
        }
        self.episode.seat_outcome(py, self.ended_record()?, seat)
    }

    /// The tools `role` may act through, as OpenAI-style tool definitions. Play the calls the
    /// model makes with `step({"text": content, "tool_calls": calls})`.
    pub(crate) fn tools<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        self.seat(role)?;
        Ok(pythonize(py, &self.episode.tools()?)?)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Game(family='{}', scenario_id='{}', seed={}, to_move={})",
            E::FAMILY,
            Seated::scenario_id(&self.episode),
            self.seeds.run,
            self.to_move()
                .map_or_else(|| "None".to_string(), |r| format!("'{r}'"))
        )
    }
}

impl<E: Hosted> Exact for SeatedGame<E> {
    type Seat = usize;

    fn seat_named(&self, role: &str) -> PyResult<usize> {
        self.seat(role)
    }

    fn role_name(&self, seat: usize) -> String {
        self.role_of(seat)
    }

    fn mover(&self) -> Option<usize> {
        self.episode.to_move()
    }

    fn ended_as(&self) -> Option<OutcomeKind> {
        self.outcome_kind()
    }

    fn turns_played(&self) -> usize {
        self.episode.turns_played()
    }

    fn seat_view(&self, seat: usize) -> &[Message] {
        self.episode.view(seat)
    }

    fn seat_view_origin(&self, seat: usize) -> u64 {
        self.episode.view_origin(seat)
    }

    fn seat_sequence(&self, seat: usize) -> Option<&[u32]> {
        self.episode.token_sequence(seat)
    }

    fn pending(&mut self) -> &mut Option<Pending<usize>> {
        &mut self.pending
    }

    fn pending_ref(&self) -> Option<&Pending<usize>> {
        self.pending.as_ref()
    }
}

/// A table: the `deliberation` family's parties, the scripted party of each incentive.
impl Hosted for TableEpisode {
    type Scenario = TableScenario;
    type Rules = TableOptions;
    /// Whether each seat is played by the scripted party of its incentive.
    type Scripted = Vec<bool>;

    const FAMILY: &'static str = "deliberation";
    const NOUN: &'static str = "table";
    const FORMATS: &'static str = "`tagged`, `xml` or `tools`";

    fn builtin_cell() -> &'static OnceLock<Result<Catalog<TableScenario>, String>> {
        static CELL: OnceLock<Result<Catalog<TableScenario>, String>> = OnceLock::new();
        &CELL
    }

    fn load_text(file: &str, text: &str) -> Result<Vec<TableScenario>, LoadError> {
        load_table_scenarios_from_reader(file, text.as_bytes(), LoadOptions::default())
            .map(|r| r.scenarios)
    }

    fn load_file(path: &Path) -> Result<Vec<TableScenario>, LoadError> {
        load_table_scenarios(path, LoadOptions::default()).map(|r| r.scenarios)
    }

    fn roles_of(scenario: &TableScenario) -> Vec<String> {
        scenario.parties.iter().map(|p| p.role.clone()).collect()
    }

    fn seat_in(scenario: &TableScenario, role: &str) -> Result<usize, String> {
        scenario.seat_of_party(role).map_err(|e| e.to_string())
    }

    fn rules(
        retries: Option<u32>,
        regulated: Vec<String>,
        format: Option<TurnFormat>,
    ) -> PyResult<TableOptions> {
        let mut options = TableOptions::default();
        if let Some(retries) = retries {
            options.retries = retries;
        }
        if let Some(format) = format {
            options.format = format;
        }
        options.regulated = regulated;
        Ok(options)
    }

    fn record_options(rules: &TableOptions) -> &TableOptions {
        rules
    }

    fn is_scripted(role: &str, spec: &str) -> PyResult<bool> {
        if spec.trim() != SCRIPTED && Scripted::from_spec(spec).is_some() {
            return Err(PyValueError::new_err(format!(
                "players: `{role}` = `{spec}`: here a seat is played from Python or by \
                 `{SCRIPTED}`; `{spec}` plays at `dealgym run`'s tables"
            )));
        }
        Ok(spec.trim() == SCRIPTED)
    }

    fn scripted(specs: &[String]) -> Vec<bool> {
        specs.iter().map(|s| s.trim() == SCRIPTED).collect()
    }

    fn in_process(scripted: &Vec<bool>, seat: usize) -> bool {
        scripted.get(seat).is_some_and(|&s| s)
    }

    fn start(
        scenario: Arc<TableScenario>,
        rules: &TableOptions,
        seed: u64,
    ) -> Result<TableEpisode, TableError> {
        let setup = TableSetup::new(&scenario, rules, seed)?;
        TableEpisode::new(scenario, setup)
    }

    fn play_scripted(&mut self, scripted: &mut Vec<bool>) -> Result<(), TableError> {
        drive_now(self, &mut ScriptedSeats(scripted.as_slice()))?;
        Ok(())
    }

    fn scenario(&self) -> &TableScenario {
        TableEpisode::scenario(self)
    }

    fn schedule(&self) -> Vec<usize> {
        self.setup().schedule.iter().map(|s| s.seat).collect()
    }

    fn narrated_format(&self, _seat: usize) -> Result<TurnFormat, String> {
        Ok(self.setup().format)
    }

    fn narration_brief(&self, _seat: usize, decided: &str) -> Result<String, String> {
        TableEpisode::narration_brief(self, decided)
            .map_err(|e| format!("the built-in prompts: {e}"))
    }

    fn decide(&self, seat: usize, decider: &str) -> Result<String, String> {
        let scripted = Scripted::from_spec(decider).ok_or_else(|| {
            format!(
                "decider `{decider}`: a table seat is decided by `{SCRIPTED}` (the scripted \
                 party of its incentive) or a Python callable"
            )
        })?;
        let text = scripted.turn(self, seat);
        dealgym_core::protocol::action_text(&text)
            .ok_or_else(|| format!("`{decider}` wrote no action line: {text:?}"))
    }

    fn narration_at(&self, index: usize) -> Option<Narration> {
        self.turns().get(index)?.completion.narration.clone()
    }

    fn last_played(&self, seat: usize) -> Option<&'static str> {
        self.turns()
            .iter()
            .rev()
            .find(|t| t.seat == seat)
            .and_then(|t| t.played())
            .map(|a| a.kind().name())
    }

    fn seat_state(&self, seat: usize) -> SeatView {
        SeatView::Table(seat_state(self, seat))
    }

    fn transcript(&self) -> Vec<(usize, String)> {
        let scenario = TableEpisode::scenario(self);
        self.turns()
            .iter()
            .filter_map(|t| {
                let action = t.played()?;
                let talk = t.parsed.talk.clone().unwrap_or_default();
                let shown = public_move(scenario, action, t.offer, t.accepts);
                Some((t.seat, format!("{talk} {shown}").trim().to_string()))
            })
            .collect()
    }

    fn calls(&self, seat: usize) -> Result<ExactCalls<'_>, NoTrajectory> {
        ExactCalls::of_sampled(table_calls(self.turns(), seat))
    }

    fn tools(&self) -> PyResult<serde_json::Value> {
        serde_json::to_value(dealgym_core::table::table_tools(TableEpisode::scenario(
            self,
        )))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The record's outcome (kind, by, the agreed deal, every party's score and ρ, the paper's
    /// metrics), `by` the role that ended it (the record keeps the seat's index).
    fn record_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
    ) -> PyResult<Bound<'py, PyAny>> {
        let SeatedRecord::Table(record) = record else {
            return Err(other_kind());
        };
        let out = pythonize(py, &record.outcome)?;
        if let Some(by) = self.outcome().and_then(|o| o.by) {
            out.set_item("by", TableEpisode::role(self, by))?;
        }
        Ok(out)
    }

    /// The seat's state's `outcome` (kind, by, the agreed offer and deal), with its `utility`
    /// (its score of the deal) and `rho`.
    fn seat_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
        seat: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let SeatedRecord::Table(record) = record else {
            return Err(other_kind());
        };
        let Some(outcome) = seat_state(self, seat).outcome else {
            return Ok(py.None().into_bound(py));
        };
        let role = TableEpisode::role(self, seat);
        let out = pythonize(py, &outcome)?;
        out.set_item("utility", record.outcome.scores.get(role))?;
        out.set_item("rho", record.outcome.rho.get(role))?;
        Ok(out)
    }
}

/// The ids of the built-in table scenarios (empty until the build has them), or of a file's.
#[pyfunction]
#[pyo3(signature = (scenario_file=None))]
pub fn table_scenario_ids(scenario_file: Option<PathBuf>) -> PyResult<Vec<String>> {
    let catalog = catalog_of::<TableEpisode>(scenario_file.as_deref())?;
    Ok(catalog.ids(None).map(str::to_string).collect())
}

/// The roles of a table scenario, in the game's order.
#[pyfunction]
#[pyo3(signature = (scenario_id=None, *, scenario_file=None, index=None))]
pub fn table_roles(
    scenario_id: Option<&str>,
    scenario_file: Option<PathBuf>,
    index: Option<usize>,
) -> PyResult<Vec<String>> {
    let catalog = catalog_of::<TableEpisode>(scenario_file.as_deref())?;
    let at = catalog
        .pick(
            scenario_id,
            None,
            scenario_id.is_none().then(|| index.unwrap_or(0)),
            0,
        )
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(TableEpisode::roles_of(&catalog.scenarios[at]))
}

/// Whether `family` names the table family.
pub(crate) fn is_table_family(family: &str) -> bool {
    serde_json::from_value::<TableFamily>(json!(family)).is_ok()
}
