//! [`Game`]: one episode of any family stepped from Python, and [`StepInfo`]: what a step did.
//!
//! One class for every family, as PettingZoo has one `AECEnv` for any number of agents: a
//! two-party family's game ([`PairGame`]) is the two-seat case, a table family's
//! ([`TableGame`], `deliberation`) and a market's ([`MarketGame`], `market`) the n-seat ones,
//! both hosted by the one n-party host ([`crate::table::SeatedGame`]). Each face
//! (`step(action, role=...)`, the observation, the step's [`StepInfo`], the outcome, the
//! record, the token trajectory) has one shape for every kind; what only one kind has is
//! refused on the others, naming why.

use std::collections::HashMap;
use std::path::PathBuf;

use dealgym_core::narration::Narration;
use dealgym_core::scenario::is_market_file;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::ScenarioError;
use crate::exact::Exact;
use crate::market::{is_market_family, MarketGame};
use crate::pair::PairGame;
use crate::table::{is_table_family, TableGame};

/// What one step did, in the same shape for every family.
#[pyclass(module = "dealgym._core", frozen, skip_from_py_object)]
#[derive(Debug, Clone)]
pub struct StepInfo {
    /// The role whose completion was played.
    #[pyo3(get)]
    pub role: String,
    /// The kind of move that took effect (`submit`, `accept`, `reject`, `walk_away`, `talk`);
    /// `None` when the completion could not be used.
    #[pyo3(get)]
    pub played: Option<&'static str>,
    /// The completion could not be used and the same role is asked again.
    #[pyo3(get)]
    pub retry: bool,
    /// Why the completion could not be used (its kind and message), else `None`.
    #[pyo3(get)]
    pub error: Option<String>,
    /// A deal, walk-away, reject loop, forfeit or backend error ended the episode.
    #[pyo3(get)]
    pub terminated: bool,
    /// The turn cap (a table: its schedule) ended the episode.
    #[pyo3(get)]
    pub truncated: bool,
    #[pyo3(get)]
    pub done: bool,
    /// The role to move next; `None` once the episode is over.
    #[pyo3(get)]
    pub to_move: Option<String>,
    /// How the episode ended (`deal`, `walk_away`, `reject_loop`, `max_turns`,
    /// `format_forfeit`), once it has.
    #[pyo3(get)]
    pub outcome: Option<&'static str>,
    /// The played turn's narration, when it was narrated (read as a dict by `narration`).
    pub narration: Option<Narration>,
}

#[pymethods]
impl StepInfo {
    /// A narrated turn's `decided` action line, `brief`, `force` and `contradictions` (where
    /// its Talk contradicts the decided move, as the engine read it: a list of
    /// `{"kind": ..., ...}`, empty for a consistent turn); `None` for a turn not narrated.
    #[getter]
    fn narration<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.narration
            .as_ref()
            .map(|n| crate::narration::narration_dict(py, n))
            .transpose()
    }

    fn __repr__(&self) -> String {
        format!(
            "StepInfo(role='{}', played={}, retry={}, error={}, terminated={}, truncated={}, done={}, to_move={}, outcome={}{})",
            self.role,
            py_str(self.played),
            py_bool(self.retry),
            py_str(self.error.as_deref()),
            py_bool(self.terminated),
            py_bool(self.truncated),
            py_bool(self.done),
            py_str(self.to_move.as_deref()),
            py_str(self.outcome),
            match &self.narration {
                Some(n) => format!(", narration={} contradiction(s)", n.contradictions.len()),
                None => String::new(),
            }
        )
    }
}

/// An optional name as Python's `repr` writes it: `'deal'` or `None`.
pub(crate) fn py_str(name: Option<&str>) -> String {
    name.map_or_else(|| "None".to_string(), |n| format!("'{n}'"))
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The game of either kind. Unboxed although a table's is smaller: one lives in each Python
/// `Game` object, built once and never moved, and a two-party game, the usual one, is then
/// one allocation rather than two.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Kind {
    Pair(PairGame),
    Table(TableGame),
    Market(MarketGame),
}

/// One episode of any family, every seat named by its role and played from outside with raw
/// completions (or in process by a built-in player).
///
/// `Game("casino", ...)` is a two-party game; `Game("deliberation", ...)` an n-party table,
/// from the built-in catalog or `scenario_file=`. The scenario is picked as `dealgym serve`
/// picks a reset's (by `scenario_id`, by `index`, or drawn from `seed`), and the setup is drawn
/// from `seed` as serve draws it.
#[pyclass(module = "dealgym._core", subclass)]
pub struct Game {
    kind: Kind,
    /// The chat's Python texts, converted once (`observe`, `messages`).
    chat: crate::observation::Chat,
}

impl Game {
    /// The two-party game, or a ValueError saying that `what` is a two-party game's.
    pub(crate) fn pair(&self, what: &str) -> PyResult<&PairGame> {
        match &self.kind {
            Kind::Pair(g) => Ok(g),
            Kind::Table(_) | Kind::Market(_) => Err(two_party_only(what)),
        }
    }

    pub(crate) fn pair_mut(&mut self, what: &str) -> PyResult<&mut PairGame> {
        match &mut self.kind {
            Kind::Pair(g) => Ok(g),
            Kind::Table(_) | Kind::Market(_) => Err(two_party_only(what)),
        }
    }

    /// The turn format `role`'s narrated seat writes in (a seat acting through tools, or a
    /// market's, refused).
    fn narrated_format(&self, role: &str) -> PyResult<dealgym_core::protocol::TurnFormat> {
        crate::narration::text_format(match &self.kind {
            Kind::Pair(g) => g.format_of(role)?,
            Kind::Table(g) => g.format_of(role)?,
            Kind::Market(g) => g.format_of(role)?,
        })
    }

    /// The game of either kind (what a record writer writes from).
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }
}

fn two_party_only(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "`{what}` is a two-party game's: a table (deliberation) or a market has none"
    ))
}

/// Arguments given that the kind of game does not take: refused, naming them.
fn refuse(family: &str, given: &[(&str, bool)], takes: &str) -> PyResult<()> {
    let named: Vec<&str> = given.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "a {family} game does not take {}: {takes}",
        named
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Dispatch a method to the game of either kind.
macro_rules! either {
    ($self:expr, $g:ident => $body:expr) => {
        match &$self.kind {
            Kind::Pair($g) => $body,
            Kind::Table($g) => $body,
            Kind::Market($g) => $body,
        }
    };
}

#[pymethods]
impl Game {
    /// A game of `family`. Every family takes `scenario_id`, `index`, `seed`, `member`,
    /// `players` and `run_id`; a two-party family also `learner_role`, `first_mover`,
    /// `rules`, `rewards`, `opponent` and `training`; a table (`deliberation`) and a market
    /// (`market`) `scenario_file`, `retries`, `regulated` and `format`. An argument the family
    /// does not take is refused.
    /// `learner_role` and `first_mover` name roles, as every Python face names a seat.
    #[new]
    #[pyo3(signature = (family, *, scenario_id=None, index=None, seed=None, member=None, players=None, run_id=None, learner_role=None, first_mover=None, rules=None, rewards=None, opponent=None, training=None, scenario_file=None, retries=None, regulated=None, format=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        family: &str,
        scenario_id: Option<&str>,
        index: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        member: Option<&Bound<'_, PyAny>>,
        players: Option<&Bound<'_, PyDict>>,
        run_id: Option<String>,
        learner_role: Option<&str>,
        first_mover: Option<&str>,
        rules: Option<&Bound<'_, PyDict>>,
        rewards: Option<&Bound<'_, PyDict>>,
        opponent: Option<&str>,
        training: Option<&Bound<'_, PyAny>>,
        scenario_file: Option<PathBuf>,
        retries: Option<&Bound<'_, PyAny>>,
        regulated: Option<Vec<String>>,
        format: Option<&str>,
    ) -> PyResult<Game> {
        let market = is_market_family(family);
        let kind = if market || is_table_family(family) {
            let noun = if market { "market" } else { "table" };
            refuse(
                family,
                &[
                    ("learner_role", learner_role.is_some()),
                    ("first_mover", first_mover.is_some()),
                    ("rules", rules.is_some()),
                    ("rewards", rewards.is_some()),
                    ("opponent", opponent.is_some()),
                    ("training", training.is_some()),
                ],
                &format!("a {noun}'s seats are set with `players`, its rules with `retries`, `regulated` and `format`"),
            )?;
            if let Some(path) = scenario_file
                .as_deref()
                .filter(|p| !market && is_market_file(p))
            {
                return Err(ScenarioError::new_err(format!(
                    "{} holds markets: play it as Game(\"market\", scenario_file=...)",
                    path.display()
                )));
            }
            if market {
                Kind::Market(MarketGame::new(
                    py,
                    scenario_id,
                    scenario_file,
                    index,
                    seed,
                    member,
                    retries,
                    regulated,
                    format,
                    players,
                    run_id,
                )?)
            } else {
                Kind::Table(TableGame::new(
                    py,
                    scenario_id,
                    scenario_file,
                    index,
                    seed,
                    member,
                    retries,
                    regulated,
                    format,
                    players,
                    run_id,
                )?)
            }
        } else {
            refuse(
                family,
                &[
                    ("scenario_file", scenario_file.is_some()),
                    ("retries", retries.is_some()),
                    ("regulated", regulated.is_some()),
                    ("format", format.is_some()),
                ],
                "a two-party game's rules are set with `rules` (format_retries, regulation, format, ...)",
            )?;
            Kind::Pair(PairGame::new(
                py,
                family,
                scenario_id,
                index,
                seed,
                member,
                learner_role,
                first_mover,
                rules,
                rewards,
                players,
                run_id,
                opponent,
                training,
            )?)
        };
        Ok(Game {
            kind,
            chat: Default::default(),
        })
    }

    /// The family's name (`casino`, `craigslist`, …, `deliberation`).
    #[getter]
    fn family(&self) -> &'static str {
        match &self.kind {
            Kind::Pair(g) => g.family_name(),
            Kind::Table(g) => g.family_name(),
            Kind::Market(g) => g.family_name(),
        }
    }

    #[getter]
    fn scenario_id(&self) -> String {
        either!(self, g => g.scenario_id())
    }

    /// Every role, in the game's order (the PettingZoo agents): a two-party family's two in
    /// the dataset's order, a table's parties in the scenario's.
    #[getter]
    fn roles(&self) -> Vec<String> {
        match &self.kind {
            Kind::Pair(g) => {
                let (a, b) = g.roles();
                vec![a.to_string(), b.to_string()]
            }
            Kind::Table(g) => g.roles_py(),
            Kind::Market(g) => g.roles_py(),
        }
    }

    /// The roles, as PettingZoo names its agents.
    #[getter]
    fn agents(&self) -> Vec<String> {
        self.roles()
    }

    /// The roles played in process by a built-in player (a table's scripted parties, a
    /// market's scripted traders; a two-party game's `opponent=` rule): they move on their own,
    /// and an AEC environment's agents are the others.
    #[getter]
    fn in_process(&self) -> Vec<String> {
        match &self.kind {
            Kind::Pair(g) => g.in_process(),
            Kind::Table(g) => g.in_process(),
            Kind::Market(g) => g.in_process(),
        }
    }

    /// The role to move, as PettingZoo names it (`to_move`).
    #[getter]
    fn agent_selection(&self) -> Option<String> {
        self.to_move()
    }

    /// The learner's role (the record's learner seat); `None` at a table or in a market,
    /// whose seats are peers.
    #[getter]
    fn learner_role(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Pair(g) => Some(g.learner_role()),
            Kind::Table(_) => None,
            Kind::Market(_) => None,
        }
    }

    #[getter]
    fn seed(&self) -> u64 {
        either!(self, g => g.seed())
    }

    #[getter]
    fn run_id(&self) -> String {
        match &self.kind {
            Kind::Pair(g) => g.run_id_py(),
            Kind::Table(g) => g.run_id(),
            Kind::Market(g) => g.run_id(),
        }
    }

    /// The training run and step given as `training=` (`{"run": ..., "step": ...}`), else
    /// `None`.
    #[getter]
    fn training<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        match &self.kind {
            Kind::Pair(g) => g.training_py(py),
            Kind::Table(_) => Ok(None),
            Kind::Market(_) => Ok(None),
        }
    }

    /// A table's schedule drawn from the seed: the role of each turn, in order; `None` for a
    /// two-party game, whose seats alternate.
    #[getter]
    fn schedule(&self) -> Option<Vec<String>> {
        match &self.kind {
            Kind::Pair(_) => None,
            Kind::Table(g) => Some(g.schedule()),
            Kind::Market(g) => Some(g.schedule()),
        }
    }

    /// The role whose completion the next `step` takes; `None` once the episode has ended.
    #[getter]
    fn to_move(&self) -> Option<String> {
        match &self.kind {
            Kind::Pair(g) => g.to_move().map(str::to_string),
            Kind::Table(g) => g.to_move(),
            Kind::Market(g) => g.to_move(),
        }
    }

    #[getter]
    fn done(&self) -> bool {
        either!(self, g => g.outcome_kind()).is_some()
    }

    /// Ended by a deal, walk-away, reject loop, forfeit or error (`engine::ending`).
    #[getter]
    fn terminated(&self) -> bool {
        dealgym_core::engine::ending(either!(self, g => g.outcome_kind())).0
    }

    /// Ended by the turn cap (a table: its schedule running out).
    #[getter]
    fn truncated(&self) -> bool {
        dealgym_core::engine::ending(either!(self, g => g.outcome_kind())).1
    }

    /// Each role's total reward once the episode has ended (the record's `rewards`).
    #[getter]
    fn rewards(&self) -> PyResult<Option<HashMap<String, f64>>> {
        Ok(match &self.kind {
            Kind::Pair(g) => g
                .rewards()
                .map(|r| r.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            Kind::Table(g) => g.rewards()?.map(|r| r.into_iter().collect()),
            Kind::Market(g) => g.rewards()?.map(|r| r.into_iter().collect()),
        })
    }

    /// The record's outcome with its metrics, once the episode has ended, in a face's words:
    /// `by` a role, what the record keys by seat keyed by role, agreed terms as a dict
    /// (`record()` keeps the record's own shape).
    #[getter]
    fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        either!(self, g => g.outcome(py))
    }

    /// How the episode ended from `role`'s side, once it has (the same keys for every family:
    /// `kind`, `by`, `utility`, `rho`, and the agreed terms); `None` while it runs.
    fn outcome_for<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        match &self.kind {
            Kind::Pair(g) => g.outcome_for(py, role),
            Kind::Table(g) => g.outcome_for(py, role),
            Kind::Market(g) => g.outcome_for(py, role),
        }
    }

    /// Play `action` (the completion text, or a dict with `text` and optionally `reasoning`,
    /// `role`, `tool_calls`, and in token-exact play `completion_ids`, `logprobs` and
    /// `finish_reason`) for the role to move; `role`, if given, must be that role, else
    /// `NotYourTurnError` names both. The GIL is released while the engine works.
    #[pyo3(signature = (action, *, role=None))]
    fn step(
        &mut self,
        py: Python<'_>,
        action: &Bound<'_, PyAny>,
        role: Option<&str>,
    ) -> PyResult<StepInfo> {
        match &mut self.kind {
            Kind::Pair(g) => g.step(py, action, role),
            Kind::Table(g) => g.step(py, action, role),
            Kind::Market(g) => g.step(py, action, role),
        }
    }

    /// What `role` sees: `prompt` (the last message, the one to answer), `messages` (the chat
    /// its model is sent, as the command line sends it) and `state` (its structured view as of
    /// now, converted to Python when first read).
    fn observe<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyDict>> {
        let (view, state) = either!(self, g => {
            let seat = g.seat_named(role)?;
            ((g.seat_view_origin(seat), g.seat_view(seat)), g.seat_state_of(seat))
        });
        crate::observation::observation(py, &self.chat, role, view, state)
    }

    /// `role`'s chat alone (`observe(role)["messages"]` without the rest): what a policy that
    /// reads only the messages asks for.
    fn messages<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyList>> {
        let view = either!(self, g => {
            let seat = g.seat_named(role)?;
            (g.seat_view_origin(seat), g.seat_view(seat))
        });
        self.chat.messages(py, role, view)
    }

    /// The action line the built-in player `decider` would play as `role` (the role to move)
    /// now: a narrated seat's decided move. A two-party game's deciders are its `rule:NAME`
    /// negotiators, a table's `rule:deliberation`; a market's seats are not narrated.
    fn decide(&self, role: &str, decider: &str) -> PyResult<String> {
        match &self.kind {
            Kind::Pair(g) => g.decide(role, decider),
            Kind::Table(g) => g.decide(role, decider),
            Kind::Market(g) => g.decide(role, decider),
        }
    }

    /// The brief `role`'s narrator is sent before it writes the turn that plays `decided` (an
    /// action line): the message a narrated step's `narration` carries, which the engine keeps
    /// in `role`'s history before its reply.
    fn narration_brief(&self, role: &str, decided: &str) -> PyResult<String> {
        self.narrated_format(role)?;
        match &self.kind {
            Kind::Pair(g) => g.narration_brief(role, decided),
            Kind::Table(g) => g.narration_brief(role, decided),
            Kind::Market(g) => g.narration_brief(role, decided),
        }
    }

    /// `force="appended"`: a narrator's `words` for `role`, cut at its first action label after
    /// any reasoning, with the `decided` action line written after them.
    fn append_decided(&self, role: &str, words: &str, decided: &str) -> PyResult<String> {
        let format = self.narrated_format(role)?;
        Ok(dealgym_core::narration::appended(
            words,
            format,
            decided.trim(),
        ))
    }

    /// `role`'s structured state alone (`observe(role)["state"]` without the chat).
    fn state<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        either!(self, g => g.seat_state_of(g.seat_named(role)?)).to_py(py)
    }

    /// The tools `role` may act through (its moves as OpenAI-style tool definitions, a
    /// table's `accept` naming the proposal it accepts).
    fn tools<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyAny>> {
        either!(self, g => g.tools(py, role))
    }

    /// The episode as `role` knows it, as one deterministic text: a two-party game's.
    fn state_text(&self, role: &str) -> PyResult<String> {
        self.pair("state_text")?.state_text(role)
    }

    /// Freeze the game as it is now, for look-ahead (a two-party game's).
    fn snapshot(&self) -> PyResult<crate::planner::GameSnapshot> {
        Ok(self.pair("snapshot")?.snapshot())
    }

    /// Go back to `snapshot` (taken from this game, or one of the same scenario and setup).
    fn restore(&mut self, snapshot: &crate::planner::GameSnapshot) -> PyResult<()> {
        self.pair_mut("restore")?.restore(snapshot)
    }

    /// The exchange so far: `(role, text)` for each move that took effect, as the others read
    /// it.
    fn transcript(&self) -> Vec<(String, String)> {
        match &self.kind {
            Kind::Pair(g) => g
                .transcript()
                .into_iter()
                .map(|(r, t)| (r.to_string(), t))
                .collect(),
            Kind::Table(g) => g.transcript(),
            Kind::Market(g) => g.transcript(),
        }
    }

    /// The episode's record, as `dealgym run` writes it (what `replay --verify` checks).
    fn record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        either!(self, g => g.record(py))
    }

    /// The record as one JSON line (without the newline), byte for byte as a record file
    /// holds it.
    fn record_json(&self) -> PyResult<String> {
        either!(self, g => g.record_json())
    }

    /// The exact token ids `role` has been sent and has sampled so far, call by call (empty
    /// before its first call); `None` if it played a call without ids (not token-exact).
    fn token_sequence(&self, role: &str) -> PyResult<Option<Vec<u32>>> {
        either!(self, g => g.token_sequence(role))
    }

    /// `role`'s token trajectory so far, by the core's one rule (what `export --format verl`
    /// writes): `prompt_ids` (its first call's prompt), `response_ids` (everything since:
    /// sampled ids and the environment's messages between calls), `mask` (1 on sampled ids, 0
    /// on the environment's), `logprobs` (0.0 on the environment's; `None` when the sampler
    /// gave none) and `rewards` (one per call, summing to its reward; `None` until the episode
    /// has ended). Raises `TokenError` naming why for a seat without calls or with a call
    /// played without token ids.
    fn trajectory<'py>(&self, py: Python<'py>, role: &str) -> PyResult<Bound<'py, PyDict>> {
        either!(self, g => g.trajectory(py, role))
    }

    /// What to render with the trainer's chat template for `role`'s next prompt ids: its
    /// messages now (rendered with a generation prompt), and the messages up to its own last
    /// one (rendered continuing that message), or `None` on its first token-exact turn.
    fn prompt_messages<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        either!(self, g => g.prompt_messages(py, role))
    }

    /// Set the prompt ids of `role`'s turn now from the two renderings of `prompt_messages`;
    /// the step of this turn carries the `completion_ids` sampled after them.
    #[pyo3(signature = (role, full, before=None))]
    fn set_prompt_ids<'py>(
        &mut self,
        py: Python<'py>,
        role: &str,
        full: &Bound<'py, PyAny>,
        before: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        match &mut self.kind {
            Kind::Pair(g) => g.set_prompt_ids(py, role, full, before),
            Kind::Table(g) => g.set_prompt_ids(py, role, full, before),
            Kind::Market(g) => g.set_prompt_ids(py, role, full, before),
        }
    }

    fn __repr__(&self) -> String {
        either!(self, g => g.__repr__())
    }
}
