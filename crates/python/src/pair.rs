//! [`PairGame`]: one two-party episode stepped from Python (a [`Game`](crate::game::Game) of a
//! two-party family), and [`step_many`]: many games stepped in one release of the GIL.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, OnceLock};

use dealgym_core::digest::Digest;
use dealgym_core::engine::drive_now;
use dealgym_core::game::{
    mix_text, token_sequence, Episode, EpisodeConfig, EpisodeSeed, FirstMover, OutcomeKind,
    PerSeat, Seat, Setup,
};
use dealgym_core::negotiator::{Position, RulePlayer, RuleSeat, Tactic, FIXED_CONCESSION};
use dealgym_core::protocol::TurnFormat;
use dealgym_core::record::{
    episode_calls, EpisodeRecord, ExactCalls, PlayerInfo, RecordMeta, RecordOutcome, Timing,
    TrainingStep,
};
use dealgym_core::reward::{episode_rewards, RewardConfig};
use dealgym_core::scenario::{Family, Role};
use dealgym_core::vocab::{Call, Message};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pythonize::{depythonize, pythonize};

use crate::catalog;
use crate::errors::ScenarioError;
use crate::exact::{read_action, Action, Exact, Pending};
use crate::game::{py_str, Game, StepInfo};
use crate::observation::{Constants, SeatView};

/// The player spec a record names for a seat played from Python, unless `players` says.
const PYTHON_PLAYER: &str = "python";

/// One episode of a family's scenario, both seats played from outside with raw completions.
///
/// The scenario is picked as `dealgym serve` picks a reset's (by `scenario_id`, by `index`
/// among the family's scenarios, or drawn from `seed`), and the setup (roles, first mover) is
/// drawn from `seed` as serve draws it: the same seed and scenario give serve's setup.
pub struct PairGame {
    episode: Episode,
    scenario_digest: Digest,
    seeds: EpisodeSeed,
    /// The run the records name: the one given, or made on first use from what makes a run
    /// ([`PairGame::run_id`]), so building a game does not pay for formatting its inputs.
    run_id: OnceLock<String>,
    /// The rules as configured, which the run id made on first use is keyed by.
    config: EpisodeConfig,
    players: PerSeat<PlayerInfo>,
    rewards: RewardConfig,
    /// A built-in negotiator playing the opponent's seat (`opponent="rule:NAME"`), in Rust,
    /// after each step; `None`: both seats are played from Python.
    opponent: Option<RulePlayer>,
    /// Built when first asked for once the episode has ended (`record()`, `outcome`, a writer):
    /// stepping does not pay for a record nobody reads.
    record: OnceLock<EpisodeRecord>,
    /// Each seat's total reward, computed once the episode has ended (read by the AEC env's
    /// ending and again by its caller).
    totals: OnceLock<PerSeat<f64>>,
    /// Each seat's state constants (the scenario's and the setup's part), taken on its first
    /// observation, built on the first read of a state, and shared by every observation.
    constants: PerSeat<OnceLock<Arc<Constants>>>,
    /// Token-exact play: the prompt ids set for the seat to move (`set_prompt_ids`), until the
    /// step that carries what was sampled after them.
    pending: Option<Pending<Seat>>,
    /// The training run and step whose policy plays this game (`training=`): in the record, and
    /// in the run id made on first use.
    training: Option<TrainingStep>,
}

/// A whole number from 0 to 2**64 - 1 (a seed, an index, a member), or a ValueError naming it.
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

/// `training=`: a mapping with `run` (a non-empty name) and `step` (a whole number), and
/// nothing else.
fn training_step(value: &Bound<'_, PyAny>) -> PyResult<TrainingStep> {
    let usage = "training must be a dict {\"run\": str, \"step\": int}";
    let table = value
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(usage))?;
    let (mut run, mut step) = (None, None);
    for (key, item) in table.iter() {
        match key.extract::<String>().ok().as_deref() {
            Some("run") => {
                run = Some(
                    item.extract::<String>()
                        .map_err(|_| PyTypeError::new_err(usage))?,
                )
            }
            Some("step") => step = Some(whole(&item, "training's step")?),
            _ => return Err(PyValueError::new_err(format!("{usage}: unknown key {key}"))),
        }
    }
    match (run, step) {
        (Some(run), Some(step)) if !run.trim().is_empty() => Ok(TrainingStep { run, step }),
        (Some(_), Some(_)) => Err(PyValueError::new_err("training's run must name the run")),
        _ => Err(PyValueError::new_err(format!(
            "{usage}: both keys are needed"
        ))),
    }
}

/// `table` if every number in it (nested tables and lists too) is finite: JSON has no NaN or
/// infinity, and a setting converted to JSON would silently become its default.
fn finite<'a, 'py>(table: &'a Bound<'py, PyDict>, what: &str) -> PyResult<&'a Bound<'py, PyDict>> {
    fn check(value: &Bound<'_, PyAny>, path: &str) -> PyResult<()> {
        if let Ok(x) = value.cast::<pyo3::types::PyFloat>() {
            if !x.value().is_finite() {
                return Err(PyValueError::new_err(format!(
                    "{path} must be a finite number, not {}",
                    x.value()
                )));
            }
        } else if let Ok(d) = value.cast::<PyDict>() {
            for (k, v) in d.iter() {
                check(&v, &format!("{path}.{k}"))?;
            }
        } else if let Ok(l) = value.cast::<pyo3::types::PyList>() {
            for (i, v) in l.iter().enumerate() {
                check(&v, &format!("{path}[{i}]"))?;
            }
        }
        Ok(())
    }
    check(table.as_any(), what)?;
    Ok(table)
}

/// The built-in negotiator an `opponent="rule:NAME"` or a narrated seat's decider (`what`)
/// names ([`RulePlayer::from_name`]: a tactic, or the silent `fixed-concession` baseline). One
/// per name for the process, so the stances it works out for a scenario outlive one game.
fn rule_player(spec: &str, what: &str) -> PyResult<RulePlayer> {
    static PLAYERS: LazyLock<Vec<RulePlayer>> = LazyLock::new(|| {
        Tactic::ALL
            .into_iter()
            .map(RulePlayer::new)
            .chain(RulePlayer::from_name(FIXED_CONCESSION))
            .collect()
    });
    spec.strip_prefix("rule:")
        .and_then(RulePlayer::from_name)
        .and_then(|want| {
            PLAYERS
                .iter()
                .find(|p| p.tactic == want.tactic && p.is_silent() == want.is_silent())
                .cloned()
        })
        .ok_or_else(|| {
            let names: Vec<String> = Tactic::ALL
                .iter()
                .map(|t| t.name())
                .chain([FIXED_CONCESSION])
                .map(|name| format!("`rule:{name}`"))
                .collect();
            PyValueError::new_err(format!(
                "{what} `{spec}`: a Game plays {} (`rule:tough` is boulware)",
                names.join(", ")
            ))
        })
}

/// The same exception with `at: ` before its message (which action of a batch it was).
fn located(py: Python<'_>, at: String, e: PyErr) -> PyErr {
    let message = format!("{at}: {}", e.value(py));
    PyErr::from_type(e.get_type(py), message)
}

impl PairGame {
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

    /// Play an action checked by `check_action` for the seat to move, and build the record
    /// once the episode ends. Runs without the GIL.
    pub(crate) fn advance(&mut self, action: Action) -> Result<StepInfo, String> {
        let completion = self.completion_of(action)?;
        let step = self.episode.step(completion).map_err(|e| e.to_string())?;
        let narration = self
            .episode
            .turns()
            .last()
            .and_then(|t| t.narration.clone());
        self.play_opponent()?;
        let outcome = self.episode.outcome();
        let (terminated, truncated) = dealgym_core::engine::ending(outcome.map(|o| o.kind));
        Ok(StepInfo {
            role: self.role_of(step.seat).to_string(),
            played: step.played.as_ref().map(|a| a.kind().name()),
            retry: step.retry,
            error: step.parsed.error.as_ref().map(|e| e.to_string()),
            terminated,
            truncated,
            done: outcome.is_some(),
            to_move: self.episode.to_move().map(|s| self.role_of(s).to_string()),
            outcome: outcome.map(|o| o.kind.name()),
            narration,
        })
    }

    /// Let the built-in opponent, if any, make its moves until the other seat is to move or the
    /// episode ends.
    fn play_opponent(&mut self) -> Result<(), String> {
        if let Some(rule) = self.opponent.as_ref() {
            let mut seat = RuleSeat {
                seat: Seat::Opponent,
                rule,
                seed: self.seeds.sampling_seed(Seat::Opponent),
            };
            drive_now(&mut self.episode, &mut seat).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The run the records name. Unless one was given, one run per seed and setup, so the
    /// records of many games never share an id.
    fn run_id(&self) -> &str {
        self.run_id.get_or_init(|| {
            let mut key = format!(
                "{}|{:?}|{}|{:?}",
                self.episode.scenario().id,
                self.config,
                serde_json::to_string(&self.rewards.in_force()).unwrap_or_default(),
                self.players
            );
            // Only when given: the run ids of games without it stay what they were.
            if let Some(t) = &self.training {
                key.push_str(&format!("|{t:?}"));
            }
            format!("python-{:016x}", mix_text(vec![self.seeds.run], &key))
        })
    }

    /// The record, once the episode has ended (what a writer writes), built on first use.
    pub(crate) fn ended_record(&self) -> PyResult<&EpisodeRecord> {
        if self.episode.outcome().is_none() {
            return Err(PyRuntimeError::new_err(
                "the episode has not ended: it has no record yet",
            ));
        }
        if let Some(record) = self.record.get() {
            return Ok(record);
        }
        let meta = RecordMeta {
            run_id: self.run_id().to_string(),
            seeds: self.seeds,
            scenario_digest: self.scenario_digest,
            players: self.players.clone(),
        };
        let record = EpisodeRecord::from_episode(
            self.episode.clone(),
            meta,
            &self.rewards,
            Timing::default(),
            std::iter::empty::<Option<Call>>(),
        )
        .ok_or_else(|| PyRuntimeError::new_err("the ended episode gave no record"))?;
        let record = EpisodeRecord {
            training: self.training.clone(),
            ..record
        };
        Ok(self.record.get_or_init(|| record))
    }
}

impl PairGame {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        py: Python<'_>,
        family: &str,
        scenario_id: Option<&str>,
        index: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        member: Option<&Bound<'_, PyAny>>,
        learner_role: Option<&str>,
        first_mover: Option<&str>,
        rules: Option<&Bound<'_, PyDict>>,
        rewards: Option<&Bound<'_, PyDict>>,
        players: Option<&Bound<'_, PyDict>>,
        run_id: Option<String>,
        opponent: Option<&str>,
        training: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PairGame> {
        let training = training.map(training_step).transpose()?;
        let seed = seed.map(|v| whole(v, "seed")).transpose()?.unwrap_or(0);
        let member = member.map(|v| whole(v, "member")).transpose()?.unwrap_or(0);
        let index = index
            .map(|v| whole(v, "index").map(|i| usize::try_from(i).unwrap_or(usize::MAX)))
            .transpose()?;
        let rule = opponent.map(|o| rule_player(o, "opponent")).transpose()?;
        let family = catalog::family(family)?;
        let catalog = catalog::catalog(family)?;
        let at = catalog
            .pick(scenario_id, Some(family), index, seed)
            .map_err(|e| crate::errors::ScenarioError::new_err(e.to_string()))?;
        let scenario = catalog.scenarios[at].clone();

        let mut config = EpisodeConfig::default();
        if let Some(rules) = rules {
            let overrides: serde_json::Map<String, serde_json::Value> =
                depythonize(finite(rules, "rules")?)
                    .map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;
            config = config
                .with_overrides(&overrides)
                .map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;
        }
        if let Some(role) = learner_role {
            config.learner_role = Some(catalog::role(family, role)?);
        }
        if overrides_first_mover(rules)? {
            return Err(ScenarioError::new_err(
                "rules: `first_mover` is set by the argument first_mover=ROLE (the role that moves first), not in rules",
            ));
        }
        let first_role = first_mover
            .map(|name| first_mover_role(family, name))
            .transpose()?;
        if first_role.is_some() {
            // A fixed first mover draws nothing: the seat the role has is set once the setup
            // has drawn who holds it (below).
            config.first_mover = FirstMover::Learner;
        }
        config
            .validate()
            .map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;

        let rewards: RewardConfig = match rewards {
            Some(table) => depythonize(finite(table, "rewards")?)
                .map_err(|e| PyValueError::new_err(format!("rewards: {e}")))?,
            None => RewardConfig::default(),
        };
        rewards
            .validate()
            .and_then(|_| rewards.check_against(&config))
            .map_err(|e| PyValueError::new_err(format!("rewards: {e}")))?;
        if let Some(c) = rewards.components().into_iter().find(|c| !c.is_pure()) {
            return Err(PyValueError::new_err(format!(
                "rewards: the `{}` component calls a service, which a Game does not: use `dealgym run` or `dealgym serve`",
                c.name()
            )));
        }

        let seeds = EpisodeSeed {
            member,
            ..EpisodeSeed::reset(seed, at)
        };
        let mut setup = Setup::draw(
            &scenario,
            &config,
            PerSeat::default(),
            &mut seeds.setup_rng(),
        )
        .map_err(|e| crate::errors::ScenarioError::new_err(e.to_string()))?;
        if let Some(role) = first_role {
            setup.first_mover = setup.seat_of(role).expect("both roles are seated");
        }
        let mut specs: PerSeat<Option<String>> = PerSeat::default();
        specs[Seat::Opponent] = opponent.map(str::to_string);
        for (role, spec) in players
            .map(|p| p.iter().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            let (Ok(role), Ok(spec)) = (role.extract::<String>(), spec.extract::<String>()) else {
                return Err(PyTypeError::new_err(
                    "players maps a role (str) to the player spec its records name (str)",
                ));
            };
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
        let episode = Episode::new(scenario, setup)
            .map_err(|e| PyRuntimeError::new_err(format!("the built-in prompts: {e}")))?;
        let mut game = PairGame {
            episode,
            scenario_digest: catalog.digest(at),
            seeds,
            run_id: run_id.map(OnceLock::from).unwrap_or_default(),
            config,
            players,
            rewards,
            opponent: rule,
            record: OnceLock::new(),
            totals: OnceLock::new(),
            constants: PerSeat::from_fn(|_| OnceLock::new()),
            pending: None,
            training,
        };
        // An opponent that moves first has made its move by the time the game is handed over.
        py.detach(|| game.play_opponent())
            .map_err(PyRuntimeError::new_err)?;
        Ok(game)
    }

    /// The family's name (`casino`, `craigslist`, …).
    pub(crate) fn family_name(&self) -> &'static str {
        self.family().name()
    }

    pub(crate) fn scenario_id(&self) -> String {
        self.episode.scenario().id.clone()
    }

    /// The family's two roles, in the dataset's order.
    pub(crate) fn roles(&self) -> (&'static str, &'static str) {
        let [a, b] = self.family().roles();
        (a.name(), b.name())
    }

    /// The opponent's role when `opponent=` plays it in process, else none.
    pub(crate) fn in_process(&self) -> Vec<String> {
        self.opponent
            .iter()
            .map(|_| self.role_of(Seat::Opponent).to_string())
            .collect()
    }

    /// The learner's role (the record's learner seat).
    pub(crate) fn learner_role(&self) -> &'static str {
        self.role_of(Seat::Learner)
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seeds.run
    }

    pub(crate) fn run_id_py(&self) -> String {
        self.run_id().to_string()
    }

    /// The training run and step given as `training=` (`{"run": ..., "step": ...}`), else
    /// `None`.
    pub(crate) fn training_py<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(t) = &self.training else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        out.set_item("run", &t.run)?;
        out.set_item("step", t.step)?;
        Ok(Some(out))
    }

    /// The role whose completion the next `step` takes; `None` once the episode has ended.
    pub(crate) fn to_move(&self) -> Option<&'static str> {
        self.episode.to_move().map(|s| self.role_of(s))
    }

    /// How the episode ended; `None` while it is going.
    pub(crate) fn outcome_kind(&self) -> Option<dealgym_core::game::OutcomeKind> {
        self.episode.outcome().map(|o| o.kind)
    }

    /// Each role's total reward, once the episode has ended: the record's `rewards`, by the
    /// same function (`reward::episode_rewards`), without building the record.
    pub(crate) fn rewards(&self) -> Option<HashMap<&'static str, f64>> {
        let outcome = self.episode.outcome()?;
        let total = *self.totals.get_or_init(|| match self.record.get() {
            Some(record) => record.rewards,
            None => {
                let e = &self.episode;
                episode_rewards(e.scenario(), e.setup(), e.turns(), outcome, &self.rewards).total
            }
        });
        Some(
            Seat::BOTH
                .into_iter()
                .map(|s| (self.role_of(s), total[s]))
                .collect(),
        )
    }

    /// The record's outcome with its metrics, once the episode has ended, in roles
    /// ([`PairGame::in_roles`]).
    pub(crate) fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // The record's outcome by the record's own rule, without building the record.
        let outcome = match self.record.get() {
            Some(record) => Some(record.outcome.clone()),
            None => RecordOutcome::of(&self.episode),
        };
        let Some(outcome) = outcome else {
            return Ok(None);
        };
        // Converted straight from the record's own type (no JSON value between): read at the
        // end of every episode of the README's loop.
        let outcome = pythonize(py, &outcome)?;
        self.in_roles(py, outcome.cast::<PyDict>()?)?;
        Ok(Some(outcome))
    }

    /// The record's outcome in a Python face's words: what the record keys by seat (`utility`,
    /// `rho`, the metrics' `seats`) keyed by role, `by` the role that ended it, and the agreed
    /// `terms` the dict a seat's state gives, from the learner's side (as the record's `terms`
    /// and `terms_text` are). The record itself (`record()`, a written line) keeps its shape.
    fn in_roles(&self, py: Python<'_>, outcome: &Bound<'_, PyDict>) -> PyResult<()> {
        let seats = [intern!(py, "learner"), intern!(py, "opponent")];
        let rekey = |per_seat: Option<Bound<'_, PyAny>>| -> PyResult<()> {
            if let Some(per_seat) = per_seat.as_ref().and_then(|p| p.cast::<PyDict>().ok()) {
                for (seat, name) in Seat::BOTH.into_iter().zip(&seats) {
                    if let Some(value) = per_seat.get_item(name)? {
                        per_seat.del_item(name)?;
                        per_seat.set_item(PyString::intern(py, self.role_of(seat)), value)?;
                    }
                }
            }
            Ok(())
        };
        rekey(outcome.get_item(intern!(py, "utility"))?)?;
        rekey(outcome.get_item(intern!(py, "rho"))?)?;
        let metrics = outcome.get_item(intern!(py, "metrics"))?;
        let metrics = metrics.as_ref().and_then(|m| m.cast::<PyDict>().ok());
        if let Some(metrics) = metrics {
            rekey(metrics.get_item(intern!(py, "seats"))?)?;
        }
        if let Some(by) = self.episode.outcome().and_then(|o| o.by) {
            outcome.set_item(intern!(py, "by"), PyString::intern(py, self.role_of(by)))?;
        }
        let terms = intern!(py, "terms");
        if outcome.contains(terms)? {
            let seen = self.episode.outcome_view(Seat::Learner);
            outcome.set_item(terms, pythonize(py, &seen.and_then(|o| o.terms))?)?;
        }
        Ok(())
    }

    /// How the episode ended from `role`'s side (`state(role)["outcome"]` alone): kind, by,
    /// the agreed terms in currency units, its utility and ρ; `None` while it runs.
    pub(crate) fn outcome_for<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let seat = self.seat(role)?;
        Ok(pythonize(py, &self.episode.outcome_view(seat))?)
    }

    /// Play `action` (the completion text, or a dict with `text` and optionally `reasoning`
    /// and `role`) for the role to move; `role`, if given, must be that role. The GIL is
    /// released while the engine works.
    pub(crate) fn step(
        &mut self,
        py: Python<'_>,
        action: &Bound<'_, PyAny>,
        role: Option<&str>,
    ) -> PyResult<StepInfo> {
        let action = read_action(action)?.for_role(role)?;
        self.check_action(&action)?;
        py.detach(move || self.advance(action))
            .map_err(PyRuntimeError::new_err)
    }

    /// The action line the built-in negotiator `decider` (`rule:NAME`) would play as `role`,
    /// the role to move, now: a narrated seat's decided move. Its sampling seed is the one
    /// `opponent=` plays that seat with.
    pub(crate) fn decide(&self, role: &str, decider: &str) -> PyResult<String> {
        let seat = self.check_turn(Some(role))?;
        let rule = rule_player(decider, "decider")?;
        let position = Position::of(&self.episode, seat, self.seeds.sampling_seed(seat));
        let text = rule.complete(&position).text;
        dealgym_core::protocol::action_text(&text).ok_or_else(|| {
            PyRuntimeError::new_err(format!("`{decider}` wrote no action line: {text:?}"))
        })
    }

    /// The turn format `role`'s seat writes in (what a narrated seat's brief and appended line
    /// follow).
    pub(crate) fn format_of(&self, role: &str) -> PyResult<TurnFormat> {
        Ok(self.episode.setup().seats[self.seat(role)?].format)
    }

    /// The brief `role`'s narrator is sent for the `decided` action line (`prompts/narrate.j2`).
    pub(crate) fn narration_brief(&self, role: &str, decided: &str) -> PyResult<String> {
        self.episode
            .narration_brief(self.seat_named(role)?, decided)
            .map_err(|e| PyRuntimeError::new_err(format!("the built-in prompts: {e}")))
    }

    /// `seat`'s structured state now (what its observation's `state` holds).
    pub(crate) fn seat_state_of(&self, seat: Seat) -> SeatView {
        let constants = self.constants[seat]
            .get_or_init(|| Arc::new(Constants::new(self.episode.constants_parts(seat))));
        SeatView::Pair(Arc::clone(constants), self.episode.moment_parts(seat))
    }

    /// The tools `role` may act through (its moves as OpenAI-style tool definitions, their
    /// terms the scenario's own): what a chat endpoint that calls tools is sent as `tools`.
    /// Play the calls the model makes with `step({"text": content, "tool_calls": calls})`.
    pub(crate) fn tools<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        let seat = self.seat(role)?;
        let mut tools = dealgym_core::protocol::openai_tools(self.episode.scenario().term_space());
        if self.episode.setup().seats[seat].acts {
            tools = dealgym_core::scenario::acts::with_act_parameter(tools, self.family());
        }
        Ok(pythonize(py, &tools)?)
    }

    /// The episode as `role` knows it, as one deterministic text (its structured view as JSON,
    /// then the moves so far from its side): the state a value model scores candidates in.
    pub(crate) fn state_text(&self, role: &str) -> PyResult<String> {
        let seat = self.seat(role)?;
        Ok(dealgym_core::planner::state_text(&self.episode, seat))
    }

    /// Freeze the game as it is now, for look-ahead: `restore(snapshot)` undoes every step
    /// since, and the same completions then give the same turns and the same answers of a
    /// built-in opponent.
    pub(crate) fn snapshot(&self) -> crate::planner::GameSnapshot {
        crate::planner::GameSnapshot {
            snapshot: self.episode.snapshot(),
            scenario_id: self.episode.scenario().id.clone(),
            turns: self.episode.turns().len(),
        }
    }

    /// Go back to `snapshot` (taken from this game, or one of the same scenario and setup).
    pub(crate) fn restore(&mut self, snapshot: &crate::planner::GameSnapshot) -> PyResult<()> {
        let from = snapshot.snapshot.episode();
        if snapshot.scenario_id != self.episode.scenario().id
            || from.setup() != self.episode.setup()
        {
            return Err(PyValueError::new_err(format!(
                "a snapshot of scenario {} with another setup cannot restore this game ({})",
                snapshot.scenario_id,
                self.episode.scenario().id
            )));
        }
        self.episode.restore(&snapshot.snapshot);
        self.record = OnceLock::new();
        self.totals = OnceLock::new();
        self.constants = PerSeat::from_fn(|_| OnceLock::new());
        self.pending = None;
        Ok(())
    }

    /// The exchange so far: `(role, text)` for each move that took effect, the text as the
    /// engine forwarded it to the other seat (what `render()` shows).
    pub(crate) fn transcript(&self) -> Vec<(&'static str, String)> {
        self.episode
            .turns()
            .iter()
            .filter_map(|t| Some((self.role_of(t.seat), t.forwarded.clone()?)))
            .collect()
    }

    /// The episode's record, as `dealgym run` writes it (what `replay --verify` checks).
    pub(crate) fn record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize(py, self.ended_record()?)?)
    }

    /// The record as one JSON line (without the newline), byte for byte as a record file holds it.
    pub(crate) fn record_json(&self) -> PyResult<String> {
        serde_json::to_string(self.ended_record()?)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The exact token ids `role` has been sent and has sampled so far, turn by turn (empty
    /// before its first turn); `None` if it played a turn without ids (not token-exact).
    pub(crate) fn token_sequence(&self, role: &str) -> PyResult<Option<Vec<u32>>> {
        let seat = self.seat(role)?;
        Ok(token_sequence(
            self.episode.turns(),
            seat,
            &self.episode.setup().rules,
        ))
    }

    /// `role`'s token trajectory so far, by the core's one rule (what `export --format verl`
    /// writes): `prompt_ids` (its first call's prompt), `response_ids` (everything since:
    /// sampled ids and the environment's messages between calls), `mask` (1 on sampled ids, 0
    /// on the environment's), `logprobs` (0.0 on the environment's; `None` when the sampler
    /// gave none) and `rewards` (one per call, summing to its reward; `None` until the episode
    /// has ended). Raises `TokenError` naming why for a seat without calls or with a call
    /// played without token ids.
    pub(crate) fn trajectory<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let seat = self.seat(role)?;
        let e = &self.episode;
        let rewards = match e.outcome() {
            Some(_) => Some(self.ended_record()?.call_rewards(seat)),
            None => None,
        };
        crate::trajectory::trajectory_dict(
            py,
            role,
            ExactCalls::of_sampled(episode_calls(e.turns(), seat, &e.setup().rules)),
            rewards,
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Game(family='{}', scenario_id='{}', seed={}, to_move={})",
            self.family().name(),
            self.episode.scenario().id,
            self.seeds.run,
            py_str(self.to_move())
        )
    }
}

impl Exact for PairGame {
    type Seat = Seat;

    fn seat_named(&self, role: &str) -> PyResult<Seat> {
        self.seat(role)
    }

    fn role_name(&self, seat: Seat) -> String {
        self.role_of(seat).to_string()
    }

    fn mover(&self) -> Option<Seat> {
        self.episode.to_move()
    }

    fn ended_as(&self) -> Option<OutcomeKind> {
        self.outcome_kind()
    }

    fn turns_played(&self) -> usize {
        self.episode.turns().len()
    }

    fn seat_view(&self, seat: Seat) -> &[Message] {
        self.episode.view(seat)
    }

    fn seat_view_origin(&self, seat: Seat) -> u64 {
        self.episode.view_origin(seat)
    }

    fn seat_sequence(&self, seat: Seat) -> Option<&[u32]> {
        self.episode.token_sequence(seat)
    }

    fn pending(&mut self) -> &mut Option<Pending<Seat>> {
        &mut self.pending
    }

    fn pending_ref(&self) -> Option<&Pending<Seat>> {
        self.pending.as_ref()
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
        game.pair("step_many")
            .and_then(|g| g.check_action(&action))
            .map_err(|e| located(py, format!("games[{i}]"), e))?;
        completions.push(action);
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
    let targets: Vec<&mut PairGame> = held
        .iter_mut()
        .map(|g| g.pair_mut("step_many"))
        .collect::<PyResult<_>>()?;
    let steps = py.detach(move || {
        targets
            .into_iter()
            .zip(completions)
            .map(|(game, action)| game.advance(action))
            .collect::<Result<Vec<_>, String>>()
    });
    steps.map_err(PyRuntimeError::new_err)
}

/// The role `first_mover=` names, as every Python face names a seat: a role of `family`. The
/// record's seat words (`learner`, `opponent`) and `random` are refused, naming the roles to
/// pass instead; leaving it out draws the first mover from the seed.
fn first_mover_role(family: Family, name: &str) -> PyResult<Role> {
    let [a, b] = family.roles();
    if matches!(name, "learner" | "opponent" | "random") {
        return Err(ScenarioError::new_err(format!(
            "first_mover takes the role that moves first ({} or {} in {}), not `{name}`: pass learner_role=ROLE and first_mover=ROLE for the learner to open, or leave first_mover out to draw it from the seed",
            a.name(),
            b.name(),
            family.name()
        )));
    }
    catalog::role(family, name).map_err(|_| {
        ScenarioError::new_err(format!(
            "first_mover: unknown role `{name}` in {}: {} or {}",
            family.name(),
            a.name(),
            b.name()
        ))
    })
}

/// Whether a `rules=` table sets `first_mover`, which a Python face takes as an argument
/// naming a role (the config file's `[episode] first_mover` names a seat).
fn overrides_first_mover(rules: Option<&Bound<'_, PyDict>>) -> PyResult<bool> {
    rules.map_or(Ok(false), |r| r.contains("first_mover"))
}
