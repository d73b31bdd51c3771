//! [`Game`]: one episode stepped from Python, [`StepInfo`]: what a step did, and
//! [`step_many`]: many games stepped in one release of the GIL.

use std::collections::{HashMap, HashSet};

use dealgym_core::digest::Digest;
use dealgym_core::game::{
    mix_text, Completion, Episode, EpisodeConfig, EpisodeSeed, FirstMover, PerSeat, Seat, Setup,
};
use dealgym_core::negotiator::{Position, RulePlayer, Tactic};
use dealgym_core::protocol::ActionKind;
use dealgym_core::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
use dealgym_core::reward::RewardConfig;
use dealgym_core::scenario::Family;
use dealgym_core::vocab::Call;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pythonize::{depythonize, pythonize};

use crate::catalog;
use crate::errors::{EpisodeEndedError, NotYourTurnError};

/// The player spec a record names for a seat played from Python, unless `players` says.
const PYTHON_PLAYER: &str = "python";

/// One episode of a family's scenario, both seats played from outside with raw completions.
///
/// The scenario is picked as `dealgym serve` picks a reset's (by `scenario_id`, by `index`
/// among the family's scenarios, or drawn from `seed`), and the setup (roles, first mover) is
/// drawn from `seed` as serve draws it: the same seed and scenario give serve's setup.
#[pyclass(module = "dealgym._core")]
pub struct Game {
    episode: Episode,
    scenario_digest: Digest,
    seeds: EpisodeSeed,
    run_id: String,
    players: PerSeat<PlayerInfo>,
    rewards: RewardConfig,
    /// A built-in negotiator playing the opponent's seat (`opponent="rule:NAME"`), in Rust,
    /// after each step; `None`: both seats are played from Python.
    opponent: Option<RulePlayer>,
    /// Built when the episode ends (so `outcome` and `rewards` are the record's).
    record: Option<EpisodeRecord>,
}

/// What one step did.
#[pyclass(module = "dealgym._core", frozen, get_all, skip_from_py_object)]
#[derive(Debug, Clone)]
pub struct StepInfo {
    /// The role whose completion was played.
    pub role: &'static str,
    /// The kind of move that took effect (`submit`, `accept`, `reject`, `walk_away`, `talk`);
    /// `None` when the completion could not be used.
    pub played: Option<&'static str>,
    /// The completion could not be used and the same role is asked again.
    pub retry: bool,
    /// A deal, walk-away, reject loop or forfeit ended the episode.
    pub terminated: bool,
    /// The turn cap ended the episode.
    pub truncated: bool,
    pub done: bool,
    /// The role to move next; `None` once the episode is over.
    pub to_move: Option<&'static str>,
    /// How the episode ended (`deal`, `walk_away`, `reject_loop`, `max_turns`,
    /// `format_forfeit`), once it has.
    pub outcome: Option<&'static str>,
}

#[pymethods]
impl StepInfo {
    fn __repr__(&self) -> String {
        format!(
            "StepInfo(role='{}', played={}, retry={}, terminated={}, truncated={}, done={}, to_move={}, outcome={})",
            self.role,
            py_str(self.played),
            py_bool(self.retry),
            py_bool(self.terminated),
            py_bool(self.truncated),
            py_bool(self.done),
            py_str(self.to_move),
            py_str(self.outcome)
        )
    }
}

/// An optional name as Python's `repr` writes it: `'deal'` or `None`.
fn py_str(name: Option<&str>) -> String {
    name.map_or_else(|| "None".to_string(), |n| format!("'{n}'"))
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The kind of a move as the Python API names it (the snake_case names of the record).
fn kind_name(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::Submit => "submit",
        ActionKind::Accept => "accept",
        ActionKind::Reject => "reject",
        ActionKind::WalkAway => "walk_away",
        ActionKind::Talk => "talk",
    }
}

/// A Python action read into a completion, with the role it names, if any.
struct Action {
    completion: Completion,
    role: Option<String>,
}

/// Read an action: the completion text, or a dict with `text` and optionally `reasoning`
/// and `role`. Anything else is a TypeError, an unknown key a ValueError naming it.
fn read_action(action: &Bound<'_, PyAny>) -> PyResult<Action> {
    if let Ok(text) = action.cast::<PyString>() {
        return Ok(Action {
            completion: Completion::from(text.to_str()?),
            role: None,
        });
    }
    let Ok(dict) = action.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(format!(
            "an action is the completion text (str) or a dict with a str `text`, not {}",
            action.get_type().name()?
        )));
    };
    let mut text = None;
    let mut reasoning = None;
    let mut role = None;
    for (key, value) in dict.iter() {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("an action dict's keys are str"))?;
        let string = |what: &str| -> PyResult<String> {
            value
                .extract::<String>()
                .map_err(|_| PyTypeError::new_err(format!("the action's `{what}` must be a str")))
        };
        match key.as_str() {
            "text" => text = Some(string("text")?),
            "reasoning" => reasoning = (!value.is_none()).then(|| string("reasoning")).transpose()?,
            "role" => role = (!value.is_none()).then(|| string("role")).transpose()?,
            "completion_ids" | "logprobs" | "finish_reason" => {
                return Err(PyValueError::new_err(format!(
                    "the action's `{key}`: token-exact stepping is not in this build of dealgym._core"
                )))
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown action key `{other}`: an action dict holds `text` and optionally `reasoning` and `role`"
                )))
            }
        }
    }
    let text = text.ok_or_else(|| PyValueError::new_err("an action dict needs a str `text`"))?;
    Ok(Action {
        completion: Completion {
            text,
            reasoning,
            ..Completion::default()
        },
        role,
    })
}

/// The same exception with `at: ` before its message (which action of a batch it was).
fn located(py: Python<'_>, at: String, e: PyErr) -> PyErr {
    let message = format!("{at}: {}", e.value(py));
    PyErr::from_type(e.get_type(py), message)
}

impl Game {
    fn family(&self) -> Family {
        self.episode.scenario().family
    }

    fn role_of(&self, seat: Seat) -> &'static str {
        self.episode.setup().seats[seat].role.name()
    }

    fn seat(&self, role: &str) -> PyResult<Seat> {
        let role = catalog::role(self.family(), role)?;
        Ok(self
            .episode
            .setup()
            .seat_of(role)
            .expect("both roles of the family are seated"))
    }

    /// The seat to move, if `role` (when named) is it: an ended episode and another role's
    /// turn are refused, naming why.
    fn check_turn(&self, role: Option<&str>) -> PyResult<Seat> {
        let Some(seat) = self.episode.to_move() else {
            let kind = self.episode.outcome().map_or("", |o| o.kind.name());
            return Err(EpisodeEndedError::new_err(format!(
                "the episode has ended ({kind}): no step after the end"
            )));
        };
        if let Some(role) = role {
            let asked = self.seat(role)?;
            if asked != seat {
                return Err(NotYourTurnError::new_err(format!(
                    "it is {}'s turn, not {}'s",
                    self.role_of(seat),
                    self.role_of(asked)
                )));
            }
        }
        Ok(seat)
    }

    /// Play a completion for the seat to move (checked by `check_turn`), and build the record
    /// once the episode ends. Runs without the GIL.
    pub(crate) fn advance(&mut self, completion: Completion) -> Result<StepInfo, String> {
        let step = self.episode.step(completion).map_err(|e| e.to_string())?;
        self.play_opponent()?;
        let outcome = self.episode.outcome();
        let truncated = outcome.is_some_and(|o| o.kind.is_truncation());
        Ok(StepInfo {
            role: self.role_of(step.seat),
            played: step.played.as_ref().map(|a| kind_name(a.kind())),
            retry: step.retry,
            terminated: outcome.is_some() && !truncated,
            truncated,
            done: outcome.is_some(),
            to_move: self.episode.to_move().map(|s| self.role_of(s)),
            outcome: outcome.map(|o| o.kind.name()),
        })
    }

    /// Let the built-in opponent, if any, make its moves until the other seat is to move or the
    /// episode ends; then build the record if it has ended.
    fn play_opponent(&mut self) -> Result<(), String> {
        if let Some(rule) = self.opponent.as_ref() {
            let seed = self.seeds.sampling_seed(Seat::Opponent);
            while self.episode.to_move() == Some(Seat::Opponent) {
                let text = rule.complete(&Position::of(&self.episode, Seat::Opponent, seed));
                self.episode.step(text).map_err(|e| e.to_string())?;
            }
        }
        if self.episode.outcome().is_some() && self.record.is_none() {
            let meta = RecordMeta {
                run_id: self.run_id.clone(),
                seeds: self.seeds,
                scenario_digest: self.scenario_digest,
                players: self.players.clone(),
            };
            self.record = EpisodeRecord::from_episode(
                self.episode.clone(),
                meta,
                &self.rewards,
                Timing::default(),
                std::iter::empty::<Option<Call>>(),
            );
        }
        Ok(())
    }

    fn ended_record(&self) -> PyResult<&EpisodeRecord> {
        self.record.as_ref().ok_or_else(|| {
            PyRuntimeError::new_err("the episode has not ended: it has no record yet")
        })
    }
}

#[pymethods]
impl Game {
    #[new]
    #[pyo3(signature = (family, *, scenario_id=None, index=None, seed=None, learner_role=None, first_mover=None, rules=None, rewards=None, players=None, run_id=None, opponent=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        family: &str,
        scenario_id: Option<&str>,
        index: Option<usize>,
        seed: Option<&Bound<'_, PyAny>>,
        learner_role: Option<&str>,
        first_mover: Option<&str>,
        rules: Option<&Bound<'_, PyDict>>,
        rewards: Option<&Bound<'_, PyDict>>,
        players: Option<HashMap<String, String>>,
        run_id: Option<String>,
        opponent: Option<&str>,
    ) -> PyResult<Game> {
        let seed: u64 = match seed {
            None => 0,
            Some(seed) => seed.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "seed must be an integer from 0 to 2**64 - 1, not {}",
                    seed.repr()
                        .map_or_else(|_| "this".to_string(), |r| r.to_string())
                ))
            })?,
        };
        let rule = opponent
            .map(|spec| {
                spec.strip_prefix("rule:")
                    .and_then(Tactic::from_name)
                    .map(RulePlayer::new)
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "opponent `{spec}`: a Game plays `rule:boulware`, `rule:tough`, `rule:linear` or `rule:conceder`"
                        ))
                    })
            })
            .transpose()?;
        let family = catalog::family(family)?;
        let catalog = catalog::catalog(family)?;
        let at = catalog
            .pick(scenario_id, Some(family), index, seed)
            .map_err(|e| {
                crate::errors::ScenarioError::new_err(match scenario_id {
                    Some(_) => format!("unknown scenario `{e}` in {}", family.name()),
                    None => e.to_string(),
                })
            })?;
        let scenario = catalog.scenarios[at].clone();

        let mut config = EpisodeConfig::default();
        if let Some(rules) = rules {
            let overrides: serde_json::Map<String, serde_json::Value> =
                depythonize(rules).map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;
            config = config
                .with_overrides(&overrides)
                .map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;
        }
        if let Some(role) = learner_role {
            config.learner_role = Some(catalog::role(family, role)?);
        }
        if let Some(first) = first_mover {
            config.first_mover = first
                .parse::<FirstMover>()
                .map_err(|e| PyValueError::new_err(format!("first_mover: {e}")))?;
        }
        config
            .validate()
            .map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;

        let rewards: RewardConfig = match rewards {
            Some(table) => {
                depythonize(table).map_err(|e| PyValueError::new_err(format!("rewards: {e}")))?
            }
            None => RewardConfig::default(),
        };
        rewards
            .validate()
            .map_err(|e| PyValueError::new_err(format!("rewards: {e}")))?;
        if let Some(c) = rewards.components().into_iter().find(|c| !c.is_pure()) {
            return Err(PyValueError::new_err(format!(
                "rewards: the `{}` component calls a service, which a Game does not: use `dealgym run` or `dealgym serve`",
                c.name()
            )));
        }

        let seeds = EpisodeSeed::reset(seed, at);
        let setup = Setup::draw(
            &scenario,
            &config,
            PerSeat::default(),
            &mut seeds.setup_rng(),
        )
        .map_err(|e| crate::errors::ScenarioError::new_err(e.to_string()))?;
        let mut specs: PerSeat<Option<String>> = PerSeat::default();
        specs[Seat::Opponent] = opponent.map(str::to_string);
        for (role, spec) in players.unwrap_or_default() {
            let role = catalog::role(family, &role)?;
            let seat = setup.seat_of(role).expect("both roles are seated");
            specs[seat] = Some(spec);
        }
        let players = specs.map(|_, spec| PlayerInfo {
            spec: spec
                .clone()
                .unwrap_or_else(|| PYTHON_PLAYER.to_string())
                .into(),
            model: None,
        });
        // One run per seed and setup, so the records of many games never share an id.
        let run_id = run_id.unwrap_or_else(|| {
            let key = format!(
                "{}|{:?}|{}|{:?}",
                scenario.id,
                config,
                serde_json::to_string(&rewards.in_force()).unwrap_or_default(),
                players
            );
            format!("python-{:016x}", mix_text(vec![seed], &key))
        });
        let episode = Episode::new(scenario, setup)
            .map_err(|e| PyRuntimeError::new_err(format!("the built-in prompts: {e}")))?;
        let mut game = Game {
            episode,
            scenario_digest: catalog.digest(at),
            seeds,
            run_id,
            players,
            rewards,
            opponent: rule,
            record: None,
        };
        // An opponent that moves first has made its move by the time the game is handed over.
        game.play_opponent().map_err(PyRuntimeError::new_err)?;
        Ok(game)
    }

    /// The family's name (`casino`, `craigslist`, …).
    #[getter(family)]
    fn family_name(&self) -> &'static str {
        self.family().name()
    }

    #[getter]
    fn scenario_id(&self) -> String {
        self.episode.scenario().id.clone()
    }

    /// The family's two roles, in the dataset's order.
    #[getter]
    fn roles(&self) -> (&'static str, &'static str) {
        let [a, b] = self.family().roles();
        (a.name(), b.name())
    }

    /// The learner's role (the record's learner seat).
    #[getter]
    fn learner_role(&self) -> &'static str {
        self.role_of(Seat::Learner)
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.seeds.run
    }

    #[getter]
    fn run_id(&self) -> String {
        self.run_id.clone()
    }

    /// The role whose completion the next `step` takes; `None` once the episode has ended.
    #[getter]
    fn to_move(&self) -> Option<&'static str> {
        self.episode.to_move().map(|s| self.role_of(s))
    }

    #[getter]
    fn done(&self) -> bool {
        self.episode.outcome().is_some()
    }

    /// Ended by a deal, walk-away, reject loop or forfeit.
    #[getter]
    fn terminated(&self) -> bool {
        self.episode
            .outcome()
            .is_some_and(|o| !o.kind.is_truncation())
    }

    /// Ended by the turn cap.
    #[getter]
    fn truncated(&self) -> bool {
        self.episode
            .outcome()
            .is_some_and(|o| o.kind.is_truncation())
    }

    /// Each role's total reward, once the episode has ended (the record's `rewards`).
    #[getter]
    fn rewards(&self) -> Option<HashMap<&'static str, f64>> {
        self.record.as_ref().map(|r| {
            Seat::BOTH
                .into_iter()
                .map(|s| (self.role_of(s), r.rewards[s]))
                .collect()
        })
    }

    /// The record's outcome with its metrics, once the episode has ended.
    #[getter]
    fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.record
            .as_ref()
            .map(|r| pythonize(py, &r.outcome).map_err(PyErr::from))
            .transpose()
    }

    /// Play `action` (the completion text, or a dict with `text` and optionally `reasoning`
    /// and `role`) for the role to move; `role`, if given, must be that role. The GIL is
    /// released while the engine works.
    #[pyo3(signature = (action, *, role=None))]
    fn step(
        mut slf: PyRefMut<'_, Self>,
        action: &Bound<'_, PyAny>,
        role: Option<&str>,
    ) -> PyResult<StepInfo> {
        let py = slf.py();
        let action = read_action(action)?;
        let named = role.map(str::to_string).or(action.role);
        slf.check_turn(named.as_deref())?;
        let game: &mut Game = &mut slf;
        let completion = action.completion;
        py.detach(move || game.advance(completion))
            .map_err(PyRuntimeError::new_err)
    }

    /// What `role` sees: `prompt` (the last message, the one to answer), `messages` (the chat
    /// its model is sent, as the command line sends it) and `state` (its structured view).
    fn observe<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyDict>> {
        let seat = self.seat(role)?;
        let view = self.episode.view(seat);
        let observation = PyDict::new(py);
        observation.set_item(
            "prompt",
            view.last().map(|m| m.content.as_str()).unwrap_or(""),
        )?;
        observation.set_item("messages", pythonize(py, view)?)?;
        observation.set_item("state", pythonize(py, &self.episode.seat_state(seat))?)?;
        Ok(observation)
    }

    /// The episode's record, as `dealgym run` writes it (what `replay --verify` checks).
    fn record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize(py, self.ended_record()?)?)
    }

    /// The record as one JSON line (without the newline), byte for byte as a record file holds it.
    fn record_json(&self) -> PyResult<String> {
        serde_json::to_string(self.ended_record()?)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    fn __repr__(&self) -> String {
        format!(
            "Game(family='{}', scenario_id='{}', seed={}, to_move={})",
            self.family().name(),
            self.episode.scenario().id,
            self.seeds.run,
            py_str(self.to_move())
        )
    }
}

impl Game {
    /// The record, for a writer.
    pub(crate) fn finished_record(&self) -> PyResult<&EpisodeRecord> {
        self.ended_record()
    }
}

/// Step many games at once, `actions[i]` for `games[i]`: every action is checked first (its
/// type, its game not ended, its role to move), so a bad one steps no game; then all are
/// stepped with the GIL released.
#[pyfunction]
pub fn step_many(
    py: Python<'_>,
    games: Vec<Bound<'_, Game>>,
    actions: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<StepInfo>> {
    if games.len() != actions.len() {
        return Err(PyValueError::new_err(format!(
            "{} games and {} actions: one action per game",
            games.len(),
            actions.len()
        )));
    }
    let mut seen = HashSet::new();
    for (i, game) in games.iter().enumerate() {
        if !seen.insert(game.as_ptr()) {
            return Err(PyValueError::new_err(format!(
                "games[{i}] is given twice: each game steps once per call"
            )));
        }
    }
    let mut completions = Vec::with_capacity(actions.len());
    for (i, (game, action)) in games.iter().zip(&actions).enumerate() {
        let action = read_action(action).map_err(|e| located(py, format!("actions[{i}]"), e))?;
        let game = game
            .try_borrow()
            .map_err(|e| located(py, format!("games[{i}]"), e.into()))?;
        game.check_turn(action.role.as_deref())
            .map_err(|e| located(py, format!("games[{i}]"), e))?;
        completions.push(action.completion);
    }
    let mut held = games
        .iter()
        .enumerate()
        .map(|(i, g)| {
            g.try_borrow_mut().map_err(|e| {
                PyRuntimeError::new_err(format!("games[{i}]: in use by another call ({e})"))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let targets: Vec<&mut Game> = held.iter_mut().map(|g| &mut **g).collect();
    let steps = py.detach(move || {
        targets
            .into_iter()
            .zip(completions)
            .map(|(game, completion)| game.advance(completion))
            .collect::<Result<Vec<_>, String>>()
    });
    steps.map_err(PyRuntimeError::new_err)
}
