//! Token-exact play from Python, for a game of either kind: what a step carries (the
//! completion, the role it names, the ids its model sampled), the turn check, and the prompt
//! ids set for the seat to move ([`Exact::set_prompt_ids`]) that the next step's sampled ids
//! follow. Written once over [`Exact`], which a two-party game and a table each implement
//! with how they name a seat; the seat's exact sequence itself is the core's
//! (`engine::SeatHistory`), and its trajectory the core's one rule (`record::ExactCalls`).

use dealgym_core::game::{Completion, OutcomeKind};
use dealgym_core::jsonl::encoded_len;
use dealgym_core::limits::{TextLimitError, TextLimits};
use dealgym_core::vocab::{
    continued_prefix, extend, LogprobsMismatch, Message, NextPrompt, ToolCall,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pythonize::{depythonize, pythonize};

use crate::errors::{CompletionTooLargeError, EpisodeEndedError, NotYourTurnError, TokenError};

/// Prompt ids set for the seat to move, and when: they hold only until the next move of any
/// seat.
pub(crate) struct Pending<S> {
    seat: S,
    /// How many turns the episode had when they were set.
    at: usize,
    prompt: NextPrompt,
}

/// What the trainer's model sampled, carried by a step in token-exact play.
pub(crate) struct SampledIds {
    completion_ids: Vec<u32>,
    logprobs: Vec<f64>,
    finish_reason: Option<String>,
}

/// A Python action read into a completion, with the role it names, if any, and the ids it
/// sampled in token-exact play.
pub(crate) struct Action {
    pub(crate) completion: Completion,
    pub(crate) role: Option<String>,
    pub(crate) sampled: Option<SampledIds>,
}

impl From<Completion> for Action {
    /// A completion played as text, by the seat to move.
    fn from(completion: Completion) -> Action {
        Action {
            completion,
            role: None,
            sampled: None,
        }
    }
}

/// Read an action: the completion text, or a dict with `text` and optionally `reasoning`,
/// `role`, `narration` (a narrated turn's decided move and brief, `crate::narration`) and, in
/// token-exact play, `completion_ids`, `logprobs` and `finish_reason`. Anything
/// else is a TypeError, an unknown key a ValueError naming it, a completion past its limit a
/// CompletionTooLargeError ([`within_limit`]).
pub(crate) fn read_action(action: &Bound<'_, PyAny>) -> PyResult<Action> {
    let action = read_any_action(action)?;
    within_limit(&action.completion)?;
    Ok(action)
}

/// [`read_action`] before the completion's limit is checked.
fn read_any_action(action: &Bound<'_, PyAny>) -> PyResult<Action> {
    if let Ok(text) = action.cast::<PyString>() {
        return Ok(Action::from(Completion::from(text.to_str()?)));
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
    let mut completion_ids: Option<Vec<u32>> = None;
    let mut logprobs: Option<Vec<f64>> = None;
    let mut finish_reason = None;
    let mut tool_calls = Vec::new();
    let mut narration = None;
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
            "completion_ids" if !value.is_none() => {
                completion_ids = Some(token_ids(&value, "the action's `completion_ids`")?)
            }
            "completion_ids" => {}
            "logprobs" if !value.is_none() => {
                logprobs = Some(value.extract().map_err(|_| {
                    PyTypeError::new_err("the action's `logprobs` must be a list of float")
                })?)
            }
            "finish_reason" => {
                finish_reason = (!value.is_none())
                    .then(|| string("finish_reason"))
                    .transpose()?
            }
            "logprobs" => {}
            "tool_calls" if !value.is_none() => tool_calls = read_tool_calls(&value)?,
            "tool_calls" => {}
            "narration" if !value.is_none() => {
                narration = Some(crate::narration::read_narration(&value)?)
            }
            "narration" => {}
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown action key `{other}`: an action dict holds `text` and optionally `reasoning`, `role`, `tool_calls`, `narration`, `completion_ids`, `logprobs` and `finish_reason`"
                )))
            }
        }
    }
    // A turn made of tool calls may have no text beside them.
    let text = match text {
        Some(text) => text,
        None if !tool_calls.is_empty() => String::new(),
        None => {
            return Err(PyValueError::new_err(
                "an action dict needs a str `text` (or `tool_calls`)",
            ))
        }
    };
    let sampled = match completion_ids {
        // Which ids a narrated turn's environment wrote (its appended action line) is not
        // carried from Python: a trainer would learn them as its own.
        Some(_) if narration.is_some() => {
            return Err(TokenError::new_err(
                "a narrated turn is played from Python as text: its appended action ids cannot be told from the sampled ones, so leave out `completion_ids`",
            ))
        }
        Some(completion_ids) => {
            let logprobs = logprobs.unwrap_or_default();
            LogprobsMismatch::check(&completion_ids, &logprobs)
                .map_err(|e| TokenError::new_err(e.to_string()))?;
            Some(SampledIds {
                completion_ids,
                logprobs,
                finish_reason,
            })
        }
        None if logprobs.is_some() || finish_reason.is_some() => {
            return Err(TokenError::new_err(
                "`logprobs` and `finish_reason` go with the `completion_ids` they belong to",
            ))
        }
        None => None,
    };
    Ok(Action {
        completion: Completion {
            text,
            reasoning,
            tool_calls,
            narration,
            ..Completion::default()
        },
        role,
        sampled,
    })
}

/// The most bytes JSON writes for one byte of text (a control character's `\u00XX`).
const MOST_ESCAPED: u64 = 6;

/// Refuse a completion past the one limit a completion is held to
/// ([`dealgym_core::limits::DEFAULT_MAX_COMPLETION_BYTES`] bytes as a record writes it: text,
/// reasoning and tool calls), by the rule `dealgym serve` refuses a step with
/// ([`TextLimits::check_completion`]) and the action space admits with
/// (`dealgym.spaces.Completion`, through [`check_action`]), so no completion past it reaches
/// the other seat's prompt.
fn within_limit(completion: &Completion) -> PyResult<()> {
    let limits = TextLimits::default();
    // A plain text too short to reach the limit however it is escaped (the common turn, a few
    // hundred bytes) is not counted: the count is for those that could.
    let plain = completion.reasoning.is_none() && completion.tool_calls.is_empty();
    let most = (completion.text.len() as u64 + 2).saturating_mul(MOST_ESCAPED);
    if plain && most <= limits.completion {
        return Ok(());
    }
    match limits.check_completion(encoded_len(completion)) {
        Ok(()) => Ok(()),
        Err(TextLimitError::Completion { bytes, limit }) => Err(CompletionTooLargeError::new_err(
            format!(
                "the completion is {bytes} bytes (its text, reasoning and tool calls as the record writes them), over the limit of {limit} bytes one completion may hold (dealgym.MAX_COMPLETION_BYTES, which `dealgym serve` also holds a step to by default): send a shorter one"
            ),
        )),
        Err(other) => Err(CompletionTooLargeError::new_err(other.to_string())),
    }
}

/// Raise what a step would raise for `action` before anything is played: a `TypeError` or
/// `ValueError` for an action that is not one, a `CompletionTooLargeError` for one past
/// `MAX_COMPLETION_BYTES`; `None` for one a step takes. What the action space's `contains`
/// asks.
#[pyfunction]
pub(crate) fn check_action(action: &Bound<'_, PyAny>) -> PyResult<()> {
    read_action(action).map(|_| ())
}

/// An action's `tool_calls`: a list of calls in the OpenAI shape (`{"id", "type": "function",
/// "function": {"name", "arguments"}}`, as a chat completion's message holds them), each read as
/// the engine reads a model's ([`ToolCall::read`]: the arguments as JSON text or a dict).
fn read_tool_calls(value: &Bound<'_, PyAny>) -> PyResult<Vec<ToolCall>> {
    let bad = |why: String| PyTypeError::new_err(format!("the action's `tool_calls`: {why}"));
    let calls: serde_json::Value = depythonize(value).map_err(|e| bad(e.to_string()))?;
    let serde_json::Value::Array(calls) = calls else {
        return Err(bad("must be a list of calls".into()));
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| match call {
            serde_json::Value::Object(_) => Ok(ToolCall::read(call, i)),
            other => Err(bad(format!("call {i} must be a dict, not {other}"))),
        })
        .collect()
}

/// Token ids (each an int from 0 to 2**32 - 1), or a TypeError naming `what`.
pub(crate) fn token_ids(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u32>> {
    value.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a list of token ids (int, 0 to 2**32 - 1)"
        ))
    })
}

impl Action {
    /// The action as the step's `role` plays it: a role named both by the step and by the
    /// action must be the same.
    pub(crate) fn for_role(mut self, role: Option<&str>) -> PyResult<Action> {
        if let Some(role) = role {
            if let Some(named) = self.role.as_deref().filter(|named| *named != role) {
                return Err(PyValueError::new_err(format!(
                    "the action names role `{named}` and the step role `{role}`: name one"
                )));
            }
            self.role = Some(role.to_string());
        }
        Ok(self)
    }
}

/// A game stepped from Python, as token-exact play needs to know it: how it names its seats,
/// who is to move, each seat's view and exact sequence, and where it keeps the prompt ids set
/// for the seat to move. The checks and the bookkeeping are the provided methods, one home
/// for both kinds of game.
pub(crate) trait Exact {
    /// How the game names a seat (a two-party `Seat`, a table's index).
    type Seat: Copy + PartialEq;

    /// The seat of `role`, or the game's error naming its roles.
    fn seat_named(&self, role: &str) -> PyResult<Self::Seat>;
    /// The role a seat plays.
    fn role_name(&self, seat: Self::Seat) -> String;
    /// The seat whose completion comes next; `None` once the episode has ended.
    fn mover(&self) -> Option<Self::Seat>;
    /// How the episode ended; `None` while it runs.
    fn ended_as(&self) -> Option<OutcomeKind>;
    /// How many turns (attempts included) the episode has had.
    fn turns_played(&self) -> usize;
    /// The chat `seat`'s model is sent now.
    fn seat_view(&self, seat: Self::Seat) -> &[Message];
    /// Which history [`seat_view`](Self::seat_view) reads (the core's `view_origin`): unchanged
    /// while it only grows.
    fn seat_view_origin(&self, seat: Self::Seat) -> u64;
    /// `seat`'s exact sequence so far; `None` once one of its turns had no ids.
    fn seat_sequence(&self, seat: Self::Seat) -> Option<&[u32]>;
    /// The prompt ids set for the seat to move, if any.
    fn pending(&mut self) -> &mut Option<Pending<Self::Seat>>;
    /// The same, read only.
    fn pending_ref(&self) -> Option<&Pending<Self::Seat>>;

    /// The seat to move, if `role` (when named) is it: an ended episode and another role's
    /// turn are refused, naming why.
    fn check_turn(&self, role: Option<&str>) -> PyResult<Self::Seat> {
        let Some(seat) = self.mover() else {
            let kind = self.ended_as().map_or("", |k| k.name());
            return Err(EpisodeEndedError::new_err(format!(
                "the episode has ended ({kind}): no step after the end; play another in a new Game (an environment: call reset())"
            )));
        };
        if let Some(role) = role {
            let asked = self.seat_named(role)?;
            if asked != seat {
                return Err(NotYourTurnError::new_err(format!(
                    "it is {}'s turn, not {}'s",
                    self.role_name(seat),
                    self.role_name(asked)
                )));
            }
        }
        Ok(seat)
    }

    /// Whether `action` can be played now: its role (if named) is to move, and in token-exact
    /// play its sampled ids follow prompt ids set for this very turn, while a step without ids
    /// is refused once prompt ids were set (the seat's sequence would lose a turn).
    fn check_action(&self, action: &Action) -> PyResult<Self::Seat> {
        let seat = self.check_turn(action.role.as_deref())?;
        let current = self
            .pending_ref()
            .is_some_and(|p| p.seat == seat && p.at == self.turns_played());
        match (&action.sampled, current) {
            (Some(_), false) => Err(TokenError::new_err(format!(
                "{}'s `completion_ids` follow no prompt ids of this turn: set them first (set_prompt_ids, or dealgym.tokens.ExactTokens.next_prompt) after the last move",
                self.role_name(seat)
            ))),
            (None, true) => Err(TokenError::new_err(format!(
                "prompt ids were set for {}'s turn: its step carries the `completion_ids` sampled after them",
                self.role_name(seat)
            ))),
            _ => Ok(seat),
        }
    }

    /// The completion of an action checked by [`Exact::check_action`], with the ids it
    /// sampled after the prompt ids set for its turn (which it uses up).
    fn completion_of(&mut self, action: Action) -> Result<Completion, String> {
        let mut completion = action.completion;
        if let Some(sampled) = action.sampled {
            let pending = self
                .pending()
                .take()
                .ok_or("token-exact play: no prompt ids for this turn")?;
            let tokens = pending
                .prompt
                .sampled(
                    sampled.completion_ids,
                    sampled.logprobs,
                    sampled.finish_reason,
                )
                .map_err(|e| e.to_string())?;
            completion.tokens = Some(tokens);
        }
        Ok(completion)
    }

    /// The seat's exact sequence so far (its prompt and sampled ids, turn by turn).
    fn sequence(&self, seat: Self::Seat) -> PyResult<Vec<u32>> {
        self.seat_sequence(seat)
            .map(<[u32]>::to_vec)
            .ok_or_else(|| {
                TokenError::new_err(format!(
                    "{} played a turn without token ids: a seat is token-exact from its first turn",
                    self.role_name(seat)
                ))
            })
    }

    /// What to render with the trainer's chat template for `role`'s next prompt ids: its
    /// messages now (rendered with a generation prompt), and the messages up to its own last
    /// one (rendered continuing that message), or `None` on its first token-exact turn, when
    /// the whole rendering is the prompt.
    fn prompt_messages<'py>(
        &self,
        py: Python<'py>,
        role: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        let seat = self.seat_named(role)?;
        let view = self.seat_view(seat);
        let before = continued_prefix(&self.sequence(seat)?, view)
            .map(|end| pythonize(py, &view[..end]))
            .transpose()?;
        Ok((pythonize(py, view)?, before))
    }

    /// Set the prompt ids of `role`'s turn now from the two renderings of `prompt_messages`
    /// (`full`, and `before` or `None`): the ids added to its sequence are the new messages'
    /// alone, never a re-tokenization of what it sampled. Returns them as the observation's
    /// `token_ids`: `{"prompt_ids": [...], "drift": None | {"at", "exact_len",
    /// "rerender_len"}}`; the step of this turn carries the `completion_ids` sampled after them.
    fn set_prompt_ids<'py>(
        &mut self,
        py: Python<'py>,
        role: &str,
        full: &Bound<'py, PyAny>,
        before: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let full = token_ids(full, "`full`")?;
        let before = before.map(|b| token_ids(b, "`before`")).transpose()?;
        let seat = self.check_turn(Some(role))?;
        let sequence = self.sequence(seat)?;
        let prompt = match (sequence.is_empty(), before) {
            (true, _) => NextPrompt::whole(full),
            (false, Some(before)) => extend(&sequence, &before, &full),
            (false, None) => {
                return Err(TokenError::new_err(format!(
                    "{role} has a token sequence: its prompt ids need `before`, the rendering up to its own last message (prompt_messages)"
                )))
            }
        };
        let answer = PyDict::new(py);
        answer.set_item("prompt_ids", &prompt.suffix)?;
        answer.set_item("drift", pythonize(py, &prompt.drift)?)?;
        let at = self.turns_played();
        *self.pending() = Some(Pending { seat, at, prompt });
        Ok(answer)
    }
}
