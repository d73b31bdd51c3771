//! What a seat is handed by `Game.observe(role)`, for every family: one builder,
//! [`observation`], over the seat's chat and its state as the engine took it.
//!
//! The observation is a `dealgym._observation.Observation`, a `dict` whose `state` is
//! converted to Python on first read (issue 43): the README's loop reads the chat alone, and
//! converting the structured state was three quarters of an observation's cost. The state
//! itself is taken now, in Rust ([`SeatView`]), so a later read gives this moment's state.

use dealgym_core::market::MarketSeatState;
use dealgym_core::observation::{ConstantsParts, MomentParts, SeatConstants, SeatState};
use dealgym_core::table::TableSeatState;
use std::sync::{Arc, Mutex, OnceLock};

use dealgym_core::vocab::{Message, MessageRole};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyType};
use pythonize::pythonize;

/// A seat's structured state, of any kind of game, as the engine gave it. Unboxed although
/// a table's or a market's is smaller: it lives in the Python object of its observation, one
/// allocation. A two-party seat's is its two parts: the constants its game shares between
/// observations (built on the first read of any of them), and what this moment is made of
/// ([`MomentParts`], its moves as the engine holds them), made into the moment and joined only
/// when the state is read.
#[allow(clippy::large_enum_variant)]
pub(crate) enum SeatView {
    Pair(Arc<Constants>, MomentParts),
    Table(TableSeatState),
    Market(MarketSeatState),
}

impl SeatView {
    /// The state as Python objects (what `state(role)` answers).
    pub(crate) fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            SeatView::Pair(constants, parts) => pythonize(
                py,
                &SeatState::join(constants.get().clone(), parts.moment()),
            )?,
            SeatView::Table(s) => pythonize(py, s)?,
            SeatView::Market(s) => pythonize(py, s)?,
        })
    }
}

/// A two-party seat's constants, shared by its game's observations: taken when the seat is
/// first observed, built when a state is first read.
pub(crate) struct Constants {
    parts: ConstantsParts,
    built: OnceLock<SeatConstants>,
}

impl Constants {
    pub(crate) fn new(parts: ConstantsParts) -> Constants {
        Constants {
            parts,
            built: OnceLock::new(),
        }
    }

    fn get(&self) -> &SeatConstants {
        self.built.get_or_init(|| self.parts.constants())
    }
}

/// An observation's state until it is read: `build()` converts it (private: the observation
/// calls it, once).
#[pyclass(module = "dealgym._core", name = "_PendingState", frozen)]
pub(crate) struct PendingState {
    view: SeatView,
}

#[pymethods]
impl PendingState {
    fn build<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.view.to_py(py)
    }
}

/// The Python dict of each message a game's seats have been sent, converted once: a chat only
/// grows, so an observation converts its new messages alone (a seat's system prompt, kilobytes,
/// was converted again at every step). While the seat's history is the one converted from (its
/// origin, `SeatHistory::origin`), the messages converted are its first ones, unchanged; a chat
/// of another history (after `restore`) has each kept text checked against the message it was
/// made from, and is converted again from where it differs.
#[derive(Default)]
pub(crate) struct Chat {
    /// By role: the history converted from, and each message's content and its Python string,
    /// in the chat's order.
    seen: Mutex<Vec<Seen>>,
}

/// One role's converted chat.
struct Seen {
    role: String,
    origin: u64,
    kept: Vec<Kept>,
}

/// A seat's chat as the game holds it: its history's origin and its messages.
pub(crate) type ChatView<'a> = (u64, &'a [Message]);

impl Chat {
    /// The chat `view` of `role` as Python: a new list of new `{"role", "content"}` dicts
    /// (with `tool_calls` or `tool_call_id` where a message has them), exactly as the command
    /// line sends it; only the texts, which Python cannot change, are shared.
    pub(crate) fn messages<'py>(
        &self,
        py: Python<'py>,
        role: &str,
        view: ChatView<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        Ok(self.messages_and_prompt(py, role, view)?.0)
    }

    /// [`Chat::messages`], and the last message's text (the prompt), `None` for an empty chat.
    fn messages_and_prompt<'py>(
        &self,
        py: Python<'py>,
        role: &str,
        (origin, view): ChatView<'_>,
    ) -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyAny>>)> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        // A few roles at most: found by a look along the list, with no key to allocate.
        let at = match seen.iter().position(|s| s.role == role) {
            Some(at) => at,
            None => {
                seen.push(Seen {
                    role: role.to_string(),
                    origin: 0,
                    kept: Vec::new(),
                });
                seen.len() - 1
            }
        };
        let seen = &mut seen[at];
        // The same history grew only by appending: what was converted from it stands.
        let unchanged = match seen.origin == origin {
            true => seen.kept.len().min(view.len()),
            false => 0,
        };
        seen.origin = origin;
        let kept = &mut seen.kept;
        let list = PyList::empty(py);
        for (i, message) in view.iter().enumerate() {
            if i >= unchanged
                && kept
                    .get(i)
                    .is_none_or(|(text, role, _)| *text != message.content || *role != message.role)
            {
                kept.truncate(i);
                let one = PyDict::new(py);
                one.set_item(intern!(py, "role"), role_name(py, message.role))?;
                one.set_item(intern!(py, "content"), PyString::new(py, &message.content))?;
                kept.push((message.content.clone(), message.role, one.unbind()));
            }
            if !message.tool_calls.is_empty() || message.tool_call_id.is_some() {
                list.append(pythonize(py, message)?)?;
                continue;
            }
            // A copy of the kept dict: the caller's own, which it may change.
            list.append(kept[i].2.bind(py).copy()?)?;
        }
        let prompt = match kept.get(view.len().wrapping_sub(1)) {
            Some((_, _, last)) => last.bind(py).get_item(intern!(py, "content"))?,
            None => None,
        };
        Ok((list, prompt))
    }
}

/// One message's content and role, and its `{"role", "content"}` dict as Python, kept to be
/// copied (a copy of a small dict costs less than building it).
type Kept = (String, MessageRole, Py<PyDict>);

/// A message's role as the chat spells it, one Python string per role.
fn role_name(py: Python<'_>, role: MessageRole) -> &Bound<'_, PyString> {
    match role {
        MessageRole::System => intern!(py, "system"),
        MessageRole::User => intern!(py, "user"),
        MessageRole::Assistant => intern!(py, "assistant"),
        MessageRole::Tool => intern!(py, "tool"),
    }
}

/// The observation of a seat whose chat is `view` and whose state is `state`: `prompt` (the
/// last message, the one to answer), `messages` and `state` (built on first read).
pub(crate) fn observation<'py>(
    py: Python<'py>,
    chat: &Chat,
    role: &str,
    view: ChatView<'_>,
    state: SeatView,
) -> PyResult<Bound<'py, PyDict>> {
    static OBSERVATION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let made = OBSERVATION
        .import(py, "dealgym._observation", "Observation")?
        .call0()?;
    let observation = made.cast_into::<PyDict>()?;
    let (messages, prompt) = chat.messages_and_prompt(py, role, view)?;
    match prompt {
        Some(text) => observation.set_item(intern!(py, "prompt"), text)?,
        None => observation.set_item(intern!(py, "prompt"), intern!(py, ""))?,
    }
    observation.set_item(intern!(py, "messages"), messages)?;
    // Under `state` until it is read, the pending state itself: code that reads the dict's
    // storage directly (C code such as orjson) meets an object it cannot encode and says so,
    // rather than a dict without its state.
    let pending = Bound::new(py, PendingState { view: state })?;
    observation.set_item(intern!(py, "state"), &pending)?;
    observation
        .as_any()
        .setattr(intern!(py, "_state"), pending)?;
    Ok(observation)
}
