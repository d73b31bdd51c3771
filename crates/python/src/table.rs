//! [`TableGame`]: one n-party episode (core's [`TableEpisode`]) stepped from Python, each seat
//! by its role: a [`Game`](crate::game::Game) of the table family (`deliberation`).
//!
//! The rules — the schedule, offers with ids, the agreement rule, regulation, the
//! malformed-turn policy, the views, the record — stay core's; this file reads Python's
//! arguments, names seats by role, and answers in Python's types. The scenario comes from a
//! table scenario file (`scenario_file=`) or the built-in `deliberation` catalog, picked as
//! `dealgym serve` picks a table reset's ([`Catalog::pick`]), and the schedule is drawn
//! from the seed as serve draws it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::SystemTime;

use dealgym_core::engine::drive_now;
use dealgym_core::game::{mix_text, EpisodeSeed};
use dealgym_core::negotiator::ScriptedSeats;
use dealgym_core::protocol::TurnFormat;
use dealgym_core::record::{table_calls, ExactCalls, TablePlayerInfo, TableRecord, TurnCost};
use dealgym_core::scenario::{
    builtin_scenarios, load_table_scenarios, load_table_scenarios_from_reader, Catalog,
    LoadOptions, TableFamily, TableScenario,
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

/// The built-in table scenarios: `scenarios/deliberation.jsonl` (the importer's), compiled
/// into dealgym-core (`builtin_scenarios`, which the command line reads too).
fn builtin_text() -> Option<(String, &'static str)> {
    let name = TableFamily::Deliberation.name();
    builtin_scenarios(name).map(|text| (format!("scenarios/{name}.jsonl"), text))
}

static BUILTIN_CATALOG: OnceLock<Result<Catalog<TableScenario>, String>> = OnceLock::new();

/// The built-in `deliberation` catalog, parsed on first use.
fn builtin() -> PyResult<&'static Catalog<TableScenario>> {
    let loaded = BUILTIN_CATALOG.get_or_init(|| match builtin_text() {
        None => Err("this build has no built-in table scenarios (scenarios/deliberation.jsonl): pass scenario_file=".into()),
        Some((file, text)) => {
            load_table_scenarios_from_reader(&file, text.as_bytes(), LoadOptions::default())
                .map(|r| Catalog::new(r.scenarios.into_iter().map(Arc::new).collect()))
                .map_err(|e| e.to_string())
        }
    });
    loaded
        .as_ref()
        .map_err(|e| ScenarioError::new_err(e.clone()))
}

/// The table scenarios of a file, read once while the file stays as it was (its length and
/// modification time): an environment that resets many times does not parse it every time.
fn from_file(path: &Path) -> PyResult<Arc<Catalog<TableScenario>>> {
    type Cached = HashMap<PathBuf, (Option<SystemTime>, u64, Arc<Catalog<TableScenario>>)>;
    static CACHE: LazyLock<Mutex<Cached>> = LazyLock::new(Mutex::default);
    let stamp = std::fs::metadata(path)
        .map(|m| (m.modified().ok(), m.len()))
        .ok();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some((modified, len)), Some((m, l, catalog))) = (stamp, cache.get(path)) {
        if *m == modified && *l == len && modified.is_some() {
            return Ok(catalog.clone());
        }
    }
    let report = load_table_scenarios(path, LoadOptions::default())
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let catalog = Arc::new(Catalog::new(
        report.scenarios.into_iter().map(Arc::new).collect(),
    ));
    if let Some((modified, len)) = stamp {
        if cache.len() >= 64 {
            cache.clear();
        }
        cache.insert(path.to_path_buf(), (modified, len, catalog.clone()));
    }
    Ok(catalog)
}

/// One n-party table, every seat named by its role. Seats are played from Python with raw
/// completions, or in process by the scripted party of their incentive (`players={role:
/// "rule:deliberation"}`), which moves as soon as it is its turn.
pub struct TableGame {
    episode: TableEpisode,
    options: TableOptions,
    seeds: EpisodeSeed,
    run_id: String,
    players: Vec<TablePlayerInfo>,
    /// Seats played in process by the scripted party.
    scripted: Vec<bool>,
    record: OnceLock<TableRecord>,
    /// Token-exact play: the prompt ids set for the seat to move (`set_prompt_ids`), until the
    /// step that carries what was sampled after them.
    pending: Option<Pending<usize>>,
}

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

/// A core table error as the Python exception that says it.
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

impl TableGame {
    fn scenario(&self) -> &TableScenario {
        self.episode.scenario()
    }

    fn role_of(&self, seat: usize) -> String {
        self.episode.role(seat).to_string()
    }

    /// The seat of `role`, or a ScenarioError naming the roles.
    fn seat(&self, role: &str) -> PyResult<usize> {
        self.scenario()
            .seat_of_party(role)
            .map_err(|e| ScenarioError::new_err(e.to_string()))
    }

    fn roles(&self) -> Vec<String> {
        self.scenario()
            .parties
            .iter()
            .map(|p| p.role.clone())
            .collect()
    }

    /// Let the scripted seats move while it is their turn.
    fn play_scripted(&mut self) -> Result<(), TableError> {
        drive_now(&mut self.episode, &mut ScriptedSeats(&self.scripted))?;
        Ok(())
    }

    /// The record, once the table has ended, built on first use.
    pub(crate) fn ended_record(&self) -> PyResult<&TableRecord> {
        if self.episode.outcome().is_none() {
            return Err(PyRuntimeError::new_err(
                "the table has not ended: it has no record yet",
            ));
        }
        Ok(self.record.get_or_init(|| {
            let costs = vec![TurnCost::default(); self.episode.turns().len()];
            TableRecord::of(
                &self.run_id,
                self.seeds,
                &self.episode,
                &self.options,
                &self.players,
                &costs,
            )
        }))
    }
}

impl TableGame {
    /// A table of `scenario_id` (or `index`, or drawn from `seed`) from `scenario_file`, or the
    /// built-in `deliberation` catalog. `retries`: malformed or illegal turns a seat may retry
    /// before it forfeits (default 1); `regulated`: the roles whose proposals and acceptances
    /// below their minimum become rejections; `format`: `tagged`, `xml` or `tools` (every seat acts
    /// through the table's tools, [`TableGame::tools`]); `players`: a role's
    /// player spec as the record names it (`rule:deliberation` plays the seat in process).
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
    ) -> PyResult<TableGame> {
        let seed = seed.map(|v| whole(v, "seed")).transpose()?.unwrap_or(0);
        let member = member.map(|v| whole(v, "member")).transpose()?.unwrap_or(0);
        let index = index
            .map(|v| whole(v, "index").map(|i| usize::try_from(i).unwrap_or(usize::MAX)))
            .transpose()?;
        let owned;
        let catalog = match &scenario_file {
            Some(path) => {
                owned = from_file(path)?;
                &*owned
            }
            None => builtin()?,
        };
        let at = catalog
            .pick(scenario_id, None, index, seed)
            .map_err(|e| ScenarioError::new_err(e.to_string()))?;
        let scenario = catalog.scenarios[at].clone();

        let mut options = TableOptions::default();
        if let Some(r) = retries {
            options.retries = u32::try_from(whole(r, "retries")?)
                .map_err(|_| PyValueError::new_err("retries must be at most 2**32 - 1"))?;
        }
        if let Some(format) = format {
            options.format = serde_json::from_value::<TurnFormat>(json!(format)).map_err(|_| {
                PyValueError::new_err(format!(
                    "format `{format}`: a table is played in `tagged`, `xml` or `tools`"
                ))
            })?;
        }
        options.regulated = regulated.unwrap_or_default();

        let mut specs: Vec<String> = vec![PYTHON_PLAYER.to_string(); scenario.parties.len()];
        for (role, spec) in players
            .map(|p| p.iter().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            let (Ok(role), Ok(spec)) = (role.extract::<String>(), spec.extract::<String>()) else {
                return Err(PyTypeError::new_err(
                    "players maps a role (str) to its player spec (str)",
                ));
            };
            let seat = scenario
                .seat_of_party(&role)
                .map_err(|e| ScenarioError::new_err(format!("players: {e}")))?;
            if spec.trim() != SCRIPTED && Scripted::from_spec(&spec).is_some() {
                return Err(PyValueError::new_err(format!(
                    "players: `{role}` = `{spec}`: here a seat is played from Python or by \
                     `{SCRIPTED}`; `{spec}` plays at `dealgym run`'s tables"
                )));
            }
            specs[seat] = spec;
        }
        let scripted: Vec<bool> = specs.iter().map(|s| s.trim() == SCRIPTED).collect();
        let players: Vec<TablePlayerInfo> = specs
            .into_iter()
            .map(|player| TablePlayerInfo {
                player,
                model: None,
            })
            .collect();

        let seeds = EpisodeSeed {
            member,
            ..EpisodeSeed::reset(seed, at)
        };
        let setup =
            TableSetup::new(&scenario, &options, seeds.table_seed()).map_err(table_error)?;
        let run_id = run_id.unwrap_or_else(|| {
            let key = format!(
                "table|{}|{options:?}|{:?}",
                scenario.id,
                players.iter().map(|p| &p.player).collect::<Vec<_>>()
            );
            format!("python-{:016x}", mix_text(vec![seed], &key))
        });
        let mut game = TableGame {
            episode: TableEpisode::new(scenario, setup).map_err(table_error)?,
            options,
            seeds,
            run_id,
            players,
            scripted,
            record: OnceLock::new(),
            pending: None,
        };
        py.detach(|| game.play_scripted()).map_err(table_error)?;
        Ok(game)
    }

    pub(crate) fn family_name(&self) -> &'static str {
        self.scenario().family.name()
    }

    pub(crate) fn scenario_id(&self) -> String {
        self.scenario().id.clone()
    }

    /// Every party's role, in the game's order (the PettingZoo agents).
    pub(crate) fn roles_py(&self) -> Vec<String> {
        self.roles()
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
            .setup()
            .schedule
            .iter()
            .map(|s| self.role_of(s.seat))
            .collect()
    }

    /// The role whose completion the next `step` takes; `None` once the table has ended.
    pub(crate) fn to_move(&self) -> Option<String> {
        self.episode.to_move().map(|s| self.role_of(s))
    }

    /// How the episode ended; `None` while it is going.
    pub(crate) fn outcome_kind(&self) -> Option<dealgym_core::game::OutcomeKind> {
        self.episode.outcome().map(|o| o.kind)
    }

    /// Each role's reward once the table has ended (the record's `rewards`: ρ on a deal, 0
    /// without one, −1 for a seat that forfeited).
    pub(crate) fn rewards(&self) -> PyResult<Option<std::collections::BTreeMap<String, f64>>> {
        if self.episode.outcome().is_none() {
            return Ok(None);
        }
        Ok(Some(self.ended_record()?.rewards.clone()))
    }

    /// The record's outcome (kind, by, the agreed deal, every party's score and ρ, the
    /// paper's metrics), once the table has ended; `by` the role that ended it, as every
    /// Python face names a seat (the record keeps the seat's index).
    pub(crate) fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(ended) = self.episode.outcome() else {
            return Ok(None);
        };
        let out = pythonize(py, &self.ended_record()?.outcome)?;
        if let Some(by) = ended.by {
            out.set_item("by", self.role_of(by))?;
        }
        Ok(Some(out))
    }

    /// `seat`'s structured state now (what its observation's `state` holds).
    pub(crate) fn seat_state_of(&self, seat: usize) -> SeatView {
        SeatView::Table(seat_state(&self.episode, seat))
    }

    /// Play `action` (the completion text, or a dict with `text` and optionally `reasoning`
    /// and `tool_calls`, and in token-exact play the `completion_ids` sampled after
    /// `set_prompt_ids`, with their `logprobs` and `finish_reason`) as `role`'s turn. A role that is not to move raises `NotYourTurnError` (a ValueError)
    /// naming both roles; a step after the end raises `EpisodeEndedError`. A proposal naming an
    /// option not in the game or an acceptance of an offer that does not exist is a turn
    /// error: retried, then forfeited, as the malformed-turn policy says.
    pub(crate) fn step(
        &mut self,
        py: Python<'_>,
        action: &Bound<'_, PyAny>,
        role: Option<&str>,
    ) -> PyResult<StepInfo> {
        let action = read_action(action)?.for_role(role)?;
        let seat = self.check_action(&action)?;
        let completion = self.completion_of(action).map_err(TokenError::new_err)?;
        let step = py
            .detach(|| {
                let step = self.episode.step(seat, completion)?;
                self.play_scripted()?;
                Ok::<_, TableError>(step)
            })
            .map_err(table_error)?;
        let outcome = self.episode.outcome();
        let (terminated, truncated) = dealgym_core::engine::ending(outcome.map(|o| o.kind));
        let played = self
            .episode
            .turns()
            .iter()
            .rev()
            .find(|t| t.seat == step.seat)
            .and_then(|t| t.played())
            .map(|a| a.kind().name());
        Ok(StepInfo {
            role: self.role_of(step.seat),
            played,
            retry: step.retry,
            error: step.error.map(|e| e.to_string()),
            terminated,
            truncated,
            done: outcome.is_some(),
            to_move: self.episode.to_move().map(|s| self.role_of(s)),
            outcome: outcome.map(|o| o.kind.name()),
        })
    }

    /// The moves that took effect, `(role, text)`: the talk and the move as every seat read it.
    pub(crate) fn transcript(&self) -> Vec<(String, String)> {
        let scenario = self.scenario();
        self.episode
            .turns()
            .iter()
            .filter_map(|t| {
                let action = t.played()?;
                let talk = t.parsed.talk.clone().unwrap_or_default();
                let shown = public_move(scenario, action, t.offer, t.accepts);
                Some((
                    self.role_of(t.seat),
                    format!("{talk} {shown}").trim().to_string(),
                ))
            })
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
        let rewards = match self.episode.outcome() {
            Some(_) => Some(self.ended_record()?.call_rewards(seat)),
            None => None,
        };
        crate::trajectory::trajectory_dict(
            py,
            role,
            ExactCalls::of_sampled(table_calls(self.episode.turns(), seat)),
            rewards,
        )
    }

    /// The table's record, as `dealgym run` writes one (what `replay --verify` checks).
    pub(crate) fn record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize(py, self.ended_record()?)?)
    }

    /// The record as one JSON line (without the newline), as a record file holds it.
    pub(crate) fn record_json(&self) -> PyResult<String> {
        serde_json::to_string(self.ended_record()?)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// How the table ended from `role`'s side, once it has (its state's `outcome`: kind, by,
    /// the agreed offer and deal), with its `utility` (its score of the deal) and `rho`, the
    /// keys a two-party game's has; `None` while it runs.
    pub(crate) fn outcome_for<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let seat = self.seat(role)?;
        let Some(outcome) = seat_state(&self.episode, seat).outcome else {
            return Ok(py.None().into_bound(py));
        };
        let out = pythonize(py, &outcome)?;
        let record = &self.ended_record()?.outcome;
        out.set_item("utility", record.scores.get(role))?;
        out.set_item("rho", record.rho.get(role))?;
        Ok(out)
    }

    /// The tools `role` may act through: the table's moves as OpenAI-style tool definitions
    /// (`accept` names the proposal it accepts), their terms the table's issues. Play the calls
    /// the model makes with `step({"text": content, "tool_calls": calls})`.
    pub(crate) fn tools<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        self.seat(role)?;
        Ok(pythonize(
            py,
            &dealgym_core::table::table_tools(self.scenario()),
        )?)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Game(family='deliberation', scenario_id='{}', seed={}, to_move={})",
            self.scenario().id,
            self.seeds.run,
            self.to_move()
                .map_or_else(|| "None".to_string(), |r| format!("'{r}'"))
        )
    }
}

impl Exact for TableGame {
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

    fn ended_as(&self) -> Option<dealgym_core::game::OutcomeKind> {
        self.outcome_kind()
    }

    fn turns_played(&self) -> usize {
        self.episode.turns().len()
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

/// The ids of the built-in table scenarios (empty until the build has them), or of a file's.
#[pyfunction]
#[pyo3(signature = (scenario_file=None))]
pub fn table_scenario_ids(scenario_file: Option<PathBuf>) -> PyResult<Vec<String>> {
    let ids = |c: &Catalog<TableScenario>| c.ids(None).map(str::to_string).collect();
    match scenario_file {
        Some(path) => Ok(ids(from_file(&path)?.as_ref())),
        None => Ok(ids(builtin()?)),
    }
}

/// The roles of a table scenario, in the game's order.
#[pyfunction]
#[pyo3(signature = (scenario_id=None, *, scenario_file=None, index=None))]
pub fn table_roles(
    scenario_id: Option<&str>,
    scenario_file: Option<PathBuf>,
    index: Option<usize>,
) -> PyResult<Vec<String>> {
    let owned;
    let catalog = match &scenario_file {
        Some(path) => {
            owned = from_file(path)?;
            &*owned
        }
        None => builtin()?,
    };
    let at = catalog
        .pick(
            scenario_id,
            None,
            scenario_id.is_none().then(|| index.unwrap_or(0)),
            0,
        )
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(catalog.scenarios[at]
        .parties
        .iter()
        .map(|p| p.role.clone())
        .collect())
}
