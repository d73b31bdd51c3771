//! A market (issue 45, core's [`MarketEpisode`], the `market` family) hosted from Python by the
//! one n-party host ([`SeatedGame`](crate::table::SeatedGame)): what is the market's own — its
//! scenarios, its options, the scripted traders (`rule:zic`, `rule:sniper`, `rule:truthful`),
//! a trader's public state, and its record's outcome in roles. The book, the trades, the
//! metrics and the record stay core's.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use dealgym_core::engine::{drive_now, Seated, SeatedRecord};
use dealgym_core::game::Prompts;
use dealgym_core::market::{market_seat_state, MarketEpisode, MarketOptions, MarketSetup};
use dealgym_core::narration::Narration;
use dealgym_core::negotiator::market::{MarketRule, MarketTraders};
use dealgym_core::protocol::TurnFormat;
use dealgym_core::record::{market_calls, ExactCalls, NoTrajectory};
use dealgym_core::scenario::{
    load_market_scenarios, load_market_scenarios_from_reader, Catalog, LoadOptions, MarketFamily,
    MarketScenario, ScenarioError as LoadError,
};
use dealgym_core::table::TableError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pythonize::pythonize;
use serde_json::{json, Map, Value};

use crate::observation::SeatView;
use crate::table::{other_kind, Hosted, SeatedGame};

/// Why a market seat has no narrator (the engine refuses a narrated market turn too).
const NOT_NARRATED: &str =
    "a market seat is not narrated: its moves are quotes and takes, which no decider writes yet";

/// A market hosted from Python.
pub type MarketGame = SeatedGame<MarketEpisode>;

/// Whether `family` names the market family.
pub(crate) fn is_market_family(family: &str) -> bool {
    serde_json::from_value::<MarketFamily>(json!(family)).is_ok()
}

/// A list of the record's, one value per seat in the market's order, as a dict by role.
fn by_role(episode: &MarketEpisode, values: &Value) -> Value {
    match values.as_array() {
        Some(values) => Value::Object(
            values
                .iter()
                .enumerate()
                .map(|(seat, v)| (Seated::role(episode, seat).to_string(), v.clone()))
                .collect(),
        ),
        None => values.clone(),
    }
}

impl Hosted for MarketEpisode {
    type Scenario = MarketScenario;
    type Rules = MarketOptions;
    type Scripted = MarketTraders;

    const FAMILY: &'static str = "market";
    const NOUN: &'static str = "market";
    const FORMATS: &'static str = "`tagged` or `xml` (a market has no tools yet)";

    fn builtin_cell() -> &'static OnceLock<Result<Catalog<MarketScenario>, String>> {
        static CELL: OnceLock<Result<Catalog<MarketScenario>, String>> = OnceLock::new();
        &CELL
    }

    fn load_text(file: &str, text: &str) -> Result<Vec<MarketScenario>, LoadError> {
        load_market_scenarios_from_reader(file, text.as_bytes(), LoadOptions::default())
            .map(|r| r.scenarios)
    }

    fn load_file(path: &Path) -> Result<Vec<MarketScenario>, LoadError> {
        load_market_scenarios(path, LoadOptions::default()).map(|r| r.scenarios)
    }

    fn roles_of(scenario: &MarketScenario) -> Vec<String> {
        scenario.traders.iter().map(|t| t.role.clone()).collect()
    }

    fn seat_in(scenario: &MarketScenario, role: &str) -> Result<usize, String> {
        scenario.seat_of(role).ok_or_else(|| {
            format!(
                "`{role}` is not a trader of market {} (its roles: {})",
                scenario.id,
                Self::roles_of(scenario).join(", ")
            )
        })
    }

    fn rules(
        retries: Option<u32>,
        regulated: Vec<String>,
        format: Option<TurnFormat>,
    ) -> PyResult<MarketOptions> {
        let mut options = MarketOptions::default();
        if let Some(retries) = retries {
            options.retries = retries;
        }
        match format {
            Some(TurnFormat::Tools) => {
                return Err(PyValueError::new_err(format!(
                    "format `tools`: a market is played in {}",
                    Self::FORMATS
                )))
            }
            Some(format) => options.format = format,
            None => {}
        }
        options.regulated = regulated;
        Ok(options)
    }

    /// A market's record is written from the episode alone.
    fn record_options(_: &MarketOptions) -> &() {
        &()
    }

    fn is_scripted(role: &str, spec: &str) -> PyResult<bool> {
        if MarketRule::from_spec(spec).is_some() {
            return Ok(true);
        }
        if spec.trim().starts_with("rule:") {
            let rules: Vec<&str> = MarketRule::ALL.iter().map(|r| r.spec()).collect();
            return Err(PyValueError::new_err(format!(
                "players: `{role}` = `{spec}`: a market seat is played from Python or by a \
                 scripted trader, {}",
                rules.join(", ")
            )));
        }
        Ok(false)
    }

    fn scripted(specs: &[String]) -> MarketTraders {
        MarketTraders(specs.iter().map(|s| MarketRule::from_spec(s)).collect())
    }

    fn in_process(scripted: &MarketTraders, seat: usize) -> bool {
        scripted.0.get(seat).is_some_and(Option::is_some)
    }

    fn start(
        scenario: Arc<MarketScenario>,
        rules: &MarketOptions,
        seed: u64,
    ) -> Result<MarketEpisode, TableError> {
        let prompts = Prompts::builtin();
        let setup = MarketSetup::new(&scenario, rules, seed, &prompts)?;
        MarketEpisode::new(scenario, setup, prompts)
    }

    fn play_scripted(&mut self, scripted: &mut MarketTraders) -> Result<(), TableError> {
        drive_now(self, scripted)?;
        Ok(())
    }

    fn scenario(&self) -> &MarketScenario {
        MarketEpisode::scenario(self)
    }

    fn schedule(&self) -> Vec<usize> {
        self.setup().schedule.iter().map(|s| s.seat).collect()
    }

    fn narrated_format(&self, _seat: usize) -> Result<TurnFormat, String> {
        Err(NOT_NARRATED.to_string())
    }

    fn narration_brief(&self, _seat: usize, _decided: &str) -> Result<String, String> {
        Err(NOT_NARRATED.to_string())
    }

    fn decide(&self, _seat: usize, _decider: &str) -> Result<String, String> {
        Err(NOT_NARRATED.to_string())
    }

    fn narration_at(&self, _index: usize) -> Option<Narration> {
        None
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
        SeatView::Market(market_seat_state(self, seat))
    }

    /// Each played move: the trader's talk (a private message as written, `@ROLE …`) and the
    /// move as the others read it.
    fn transcript(&self) -> Vec<(usize, String)> {
        self.turns()
            .iter()
            .filter(|t| t.played().is_some())
            .map(|t| {
                let talk = t.parsed.talk.as_deref().unwrap_or_default().trim();
                let shown = self
                    .shown_move(t)
                    .map(|m| format!("[{m}]"))
                    .unwrap_or_default();
                (t.seat, format!("{talk} {shown}").trim().to_string())
            })
            .collect()
    }

    fn calls(&self, seat: usize) -> Result<ExactCalls<'_>, NoTrajectory> {
        ExactCalls::of_sampled(market_calls(self.turns(), seat))
    }

    fn tools(&self) -> PyResult<Value> {
        Err(PyValueError::new_err(
            "a market reads text turns (`tagged` or `xml`): it has no tools yet",
        ))
    }

    /// The record's outcome in roles: `kind`, `by`, `trades` (`buyer`, `seller`, `taker`
    /// roles, the `order` taken, the `price` in currency units as the state gives it, the
    /// buyer's `value` and the seller's `cost`, whole currency units), and `metrics` with each seat's `surplus` and `share` by role.
    fn record_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
    ) -> PyResult<Bound<'py, PyAny>> {
        let SeatedRecord::Market(record) = record else {
            return Err(other_kind());
        };
        let o = &record.outcome;
        let role = |seat: usize| Seated::role(self, seat).to_string();
        let mut out = Map::new();
        out.insert("kind".into(), json!(o.outcome.kind));
        out.insert("by".into(), json!(o.outcome.by.map(role)));
        if let Some(detail) = &o.outcome.detail {
            out.insert("detail".into(), json!(detail));
        }
        if let Some(cause) = &o.outcome.error_kind {
            out.insert("error_kind".into(), json!(cause));
        }
        let trades: Vec<Value> = o
            .trades
            .iter()
            .map(|t| {
                json!({
                    "buyer": role(t.buyer),
                    "seller": role(t.seller),
                    "taker": role(t.taker),
                    "order": t.order,
                    "price": t.price as f64 / 100.0,
                    "value": t.value,
                    "cost": t.cost,
                })
            })
            .collect();
        out.insert("trades".into(), Value::Array(trades));
        let mut metrics = serde_json::to_value(&o.metrics)
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
        if let Some(m) = metrics.as_object_mut() {
            for key in ["surplus", "share"] {
                if let Some(v) = m.get(key).map(|v| by_role(self, v)) {
                    m.insert(key.into(), v);
                }
            }
        }
        out.insert("metrics".into(), metrics);
        Ok(pythonize(py, &Value::Object(out))?)
    }

    /// The trader's state's `outcome` (kind, by), with its `utility` (its surplus) and `rho`
    /// (`None`: a market has no reservation ratio).
    fn seat_outcome<'py>(
        &self,
        py: Python<'py>,
        record: &SeatedRecord,
        seat: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let SeatedRecord::Market(record) = record else {
            return Err(other_kind());
        };
        let Some(outcome) = market_seat_state(self, seat).outcome else {
            return Ok(py.None().into_bound(py));
        };
        let out = pythonize(py, &outcome)?;
        out.set_item("utility", record.reward(seat))?;
        out.set_item("rho", py.None())?;
        Ok(out)
    }
}
