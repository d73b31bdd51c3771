//! `_bench_replay`: the engine's own stepping rate, for the benchmark (`crates/python/bench/steps.py`)
//! to set beside what the Python faces reach over the same episodes (issue 22: 256 games
//! batched within 2x of this rate).
//!
//! Private (a leading underscore, no stub): it measures, it is not an API.

use std::time::Instant;

use dealgym_core::game::Completion;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::game::Game;
use crate::pair::PairGame;

/// Replay `episodes` `repeats` times in Rust and answer `(steps, seconds)`: the completions
/// stepped and the time the stepping took.
///
/// Each episode is `(kwargs, completions)`: `kwargs` are `Game`'s keyword arguments (`family`
/// among them), so each game is built by `Game`'s own constructor, as Python builds it, before
/// the clock starts. The clock then runs, with the GIL released, around exactly what
/// `Game.step` does once the action is read: every completion played through the game's
/// `advance` (a record is built only when asked for, by either). Every episode must end on its
/// last completion, or the work would not be the episode's (a ValueError says which did not).
#[pyfunction]
pub fn _bench_replay(
    py: Python<'_>,
    episodes: Vec<(Bound<'_, PyDict>, Vec<String>)>,
    repeats: usize,
) -> PyResult<(usize, f64)> {
    let game_type = py.get_type::<Game>();
    let mut steps = 0;
    let mut seconds = 0.0;
    for _ in 0..repeats {
        let games = episodes
            .iter()
            .map(|(kwargs, _)| {
                let kwargs = kwargs.copy()?;
                let family = kwargs.get_item("family")?.ok_or_else(|| {
                    PyValueError::new_err("each episode's kwargs name its `family`")
                })?;
                kwargs.del_item("family")?;
                game_type
                    .call(PyTuple::new(py, [family])?, Some(&kwargs))?
                    .cast_into::<Game>()
                    .map_err(PyErr::from)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut held = games
            .iter()
            .map(|g| g.try_borrow_mut().map_err(PyErr::from))
            .collect::<PyResult<Vec<_>>>()?;
        let work: Vec<(&mut PairGame, Vec<Completion>)> = held
            .iter_mut()
            .zip(&episodes)
            .map(|(game, (_, texts))| {
                let completions = texts.iter().map(|t| Completion::from(t.as_str())).collect();
                Ok((game.pair_mut("_bench_replay")?, completions))
            })
            .collect::<PyResult<_>>()?;
        let (stepped, elapsed) = py.detach(move || replay(work));
        steps += stepped.map_err(PyValueError::new_err)?;
        seconds += elapsed;
    }
    Ok((steps, seconds))
}

/// Step every game through its completions, timed: the steps taken, or which episode failed
/// to step or did not end on its last completion; and the seconds it took.
fn replay(work: Vec<(&mut PairGame, Vec<Completion>)>) -> (Result<usize, String>, f64) {
    let start = Instant::now();
    let mut steps = 0;
    let mut unended = None;
    for (i, (game, completions)) in work.into_iter().enumerate() {
        let mut done = false;
        for completion in completions {
            match game.advance(completion.into()) {
                Ok(step) => done = step.done,
                Err(e) => {
                    return (
                        Err(format!("episodes[{i}]: {e}")),
                        start.elapsed().as_secs_f64(),
                    )
                }
            }
            steps += 1;
        }
        if !done {
            unended.get_or_insert(i);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    match unended {
        Some(i) => (
            Err(format!("episodes[{i}] did not end on its last completion")),
            elapsed,
        ),
        None => (Ok(steps), elapsed),
    }
}
