//! The exceptions the module raises: each names what was wrong, and none is a crash.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};

create_exception!(
    dealgym._core,
    ScenarioError,
    PyValueError,
    "An unknown family, role, scenario id or index: the message names it and the choices."
);
create_exception!(
    dealgym._core,
    EpisodeEndedError,
    PyRuntimeError,
    "A step after the episode ended: the message names how it ended."
);
create_exception!(
    dealgym._core,
    NotYourTurnError,
    PyValueError,
    "A step for a role that is not to move: the message names the role to move."
);
create_exception!(
    dealgym._core,
    TokenError,
    PyValueError,
    "Token-exact play out of order: sampled ids without prompt ids for this turn, a text step \
     after prompt ids were set, logprobs that do not pair with the ids, or a seat whose earlier \
     turns have no ids."
);
create_exception!(
    dealgym._core,
    ResetNeededError,
    PyRuntimeError,
    "An environment stepped or observed before its first `reset()`: the message says to call it."
);
create_exception!(
    dealgym._core,
    CompletionTooLargeError,
    PyValueError,
    "A completion longer than one completion may hold (`MAX_COMPLETION_BYTES`, as a record \
     writes it): the message names its size and the limit. The same limit `dealgym serve` \
     refuses a step over by default and the action space admits."
);
