//! Narrated turns from Python ([`dealgym_core::narration`]): what a step's `narration` holds
//! and how it is read, what a step answers of it, and the parts a Python narrated seat
//! (`dealgym.narrated.Narrated`) asks of the engine — a decided action line read out of a
//! decider's completion, the brief, where a narrator's words end and what is appended. The
//! rules stay core's; the loop that asks the decider and the narrator is the Python package's.

use dealgym_core::narration::{Force, Narration};
use dealgym_core::protocol::TurnFormat;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pythonize::pythonize;

/// An action's `narration`: a dict with the `decided` action line, the `brief` the narrator was
/// sent and optionally `force` (`appended`, the default, `grammar` or `prompt`). The engine
/// fills in the contradictions; a dict that gives them is refused.
pub(crate) fn read_narration(value: &Bound<'_, PyAny>) -> PyResult<Narration> {
    let usage = "the action's `narration` is a dict {\"decided\": str, \"brief\": str, \"force\": \"appended\" | \"grammar\" | \"prompt\"}";
    let dict = value
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(usage))?;
    let (mut decided, mut brief, mut force) = (None, None, Force::default());
    for (key, item) in dict.iter() {
        let string = || {
            item.extract::<String>()
                .map_err(|_| PyTypeError::new_err(usage))
        };
        match key.extract::<String>().ok().as_deref() {
            Some("decided") => decided = Some(string()?),
            Some("brief") => brief = Some(string()?),
            Some("force") => {
                let name = string()?;
                force = Force::from_name(&name).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "the narration's force `{name}`: appended, grammar or prompt"
                    ))
                })?
            }
            Some("contradictions") => {
                return Err(PyValueError::new_err(
                    "the narration's `contradictions` are the engine's to find: leave them out",
                ))
            }
            _ => return Err(PyValueError::new_err(format!("{usage}: unknown key {key}"))),
        }
    }
    match (decided, brief) {
        (Some(decided), Some(brief)) if !decided.trim().is_empty() => Ok(Narration {
            decided: decided.trim().to_string(),
            brief,
            force,
            contradictions: Vec::new(),
        }),
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "the narration's `decided` must be an action line, e.g. `[SUBMIT_DEAL] price:120`",
        )),
        _ => Err(PyValueError::new_err(format!(
            "{usage}: `decided` and `brief` are needed"
        ))),
    }
}

/// A turn's narration as Python reads it: `decided`, `brief`, `force` and `contradictions`
/// (a list, empty for a consistent turn, each `{"kind": ..., ...}` as the record writes it).
pub(crate) fn narration_dict<'py>(
    py: Python<'py>,
    narration: &Narration,
) -> PyResult<Bound<'py, PyAny>> {
    let out = pythonize(py, narration)?;
    let dict = out.cast::<PyDict>()?;
    if !dict.contains("contradictions")? {
        dict.set_item("contradictions", PyList::empty(py))?;
    }
    Ok(out)
}

/// The action part of a completion as written (`[SUBMIT_DEAL] price:120`), or `None` when it
/// has none; a one-line text that starts with an action token (`[`) is the action line itself.
/// How a Python decider's answer, a whole completion or a bare action line, is read as a
/// decided move.
#[pyfunction]
pub(crate) fn action_text(text: &str) -> Option<String> {
    dealgym_core::protocol::action_text(text).or_else(|| {
        let line = text.trim();
        (line.starts_with('[') && !line.contains('\n')).then(|| line.to_string())
    })
}

/// The format a narrated seat writes its turn in: tagged or xml, a seat acting through tools
/// refused (as the runtime's narrated player refuses it).
pub(crate) fn text_format(format: TurnFormat) -> PyResult<TurnFormat> {
    dealgym_core::narration::writes_text(format).map_err(PyValueError::new_err)?;
    Ok(format)
}
