//! A seat's token trajectory as Python takes it: the core's one rule
//! ([`ExactCalls`](dealgym_core::record::ExactCalls)) over the seat's calls so far, as a dict.
//! The trainers' adapters (`dealgym.trl`, `dealgym.verl`) read it instead of assembling masks.

use dealgym_core::record::{ExactCalls, NoTrajectory};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::TokenError;

/// `{prompt_ids, response_ids, mask, logprobs, rewards}` of a seat's checked calls: `logprobs`
/// `None` when its sampler gave none, `rewards` (one per call) `None` while the episode runs.
pub(crate) fn trajectory_dict<'py>(
    py: Python<'py>,
    role: &str,
    calls: Result<ExactCalls<'_>, NoTrajectory>,
    rewards: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let calls = calls
        .map_err(|why| TokenError::new_err(format!("{role} has no token trajectory: {why}")))?;
    let t = calls.trajectory();
    let out = PyDict::new(py);
    out.set_item("prompt_ids", t.prompt_ids)?;
    out.set_item("response_ids", t.response_ids)?;
    // A list of ints, as the trainers take it (a `Vec<u8>` would become `bytes`).
    out.set_item("mask", PyList::new(py, t.mask)?)?;
    out.set_item("logprobs", calls.has_logprobs().then_some(t.logprobs))?;
    out.set_item("rewards", rewards)?;
    Ok(out)
}
