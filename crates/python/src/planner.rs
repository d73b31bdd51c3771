//! The planner hooks from Python (issue 26 part 4): a game's snapshot and restore, for
//! look-ahead and tree search (the built-in opponent's answers included: they are a function of
//! the state and the game's seeds), the state text a value model scores, and the one selection
//! rule, so a Python value model (any callable) commits as the Rust planner does.

use dealgym_core::game::Snapshot;
use pyo3::prelude::*;

/// A game frozen at one point (`Game.snapshot()`); `Game.restore(snapshot)` goes back to it.
#[pyclass(module = "dealgym._core", frozen)]
pub struct GameSnapshot {
    pub(crate) snapshot: Snapshot,
    /// The scenario it belongs to: a snapshot restores only into a game of the same scenario.
    pub(crate) scenario_id: String,
    /// Turns played when it was taken.
    #[pyo3(get)]
    pub turns: usize,
}

/// The index of the candidate to commit given their values: the highest, the first of equals,
/// a value that is not a number never while one is (`dealgym_core::planner::choose`).
#[pyfunction]
pub fn choose(values: Vec<f64>) -> PyResult<usize> {
    dealgym_core::planner::choose(&values)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("no candidates to choose from"))
}
