//! `dealgym._core`: the engine of [`dealgym_core`] bound in process for Python (issue 22).
//!
//! One `Game` is one episode, stepped with raw completions from outside; parsing,
//! flipping, regulation, termination, scoring and records stay the core's one implementation.
//! The Python faces (PettingZoo, Gymnasium, OpenEnv) are written in Python over this module.
//! Scenarios are compiled in (`catalog.rs`), so stepping needs no files. A step releases the
//! GIL while the engine works, and `step_many` steps many episodes in one release.

use pyo3::prelude::*;

/// The engine's allocations from Python go through mimalloc: Python's own objects keep
/// CPython's allocator; only what the Rust side allocates (messages, turns, parses) is served
/// here. Measured in BENCHMARKS.md ("Python in process").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod catalog;
#[cfg(feature = "cli")]
mod cli;
mod errors;
mod exact;
mod game;
mod market;
mod narration;
mod observation;
mod pair;
mod planner;
mod records;
mod table;
mod tools;
mod trajectory;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<game::Game>()?;
    m.add_class::<game::StepInfo>()?;
    m.add_class::<planner::GameSnapshot>()?;
    m.add_function(wrap_pyfunction!(planner::choose, m)?)?;
    m.add_class::<records::RecordWriter>()?;
    m.add_function(wrap_pyfunction!(pair::step_many, m)?)?;
    #[cfg(feature = "cli")]
    m.add_function(wrap_pyfunction!(cli::main, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::families, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::roles, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::scenario_ids, m)?)?;
    m.add_function(wrap_pyfunction!(tools::tool_specs, m)?)?;
    m.add_function(wrap_pyfunction!(exact::check_action, m)?)?;
    m.add_function(wrap_pyfunction!(narration::action_text, m)?)?;
    m.add_function(wrap_pyfunction!(bench::_bench_replay, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_scenario_ids, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_roles, m)?)?;
    m.add("ScenarioError", py.get_type::<errors::ScenarioError>())?;
    m.add(
        "EpisodeEndedError",
        py.get_type::<errors::EpisodeEndedError>(),
    )?;
    m.add(
        "NotYourTurnError",
        py.get_type::<errors::NotYourTurnError>(),
    )?;
    m.add("TokenError", py.get_type::<errors::TokenError>())?;
    m.add(
        "ResetNeededError",
        py.get_type::<errors::ResetNeededError>(),
    )?;
    m.add(
        "CompletionTooLargeError",
        py.get_type::<errors::CompletionTooLargeError>(),
    )?;
    m.add(
        "MAX_COMPLETION_BYTES",
        dealgym_core::limits::DEFAULT_MAX_COMPLETION_BYTES,
    )?;
    Ok(())
}
