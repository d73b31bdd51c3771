//! Every way a request to the server can be refused, with its HTTP status, its code on the
//! native REST routes and its code on OpenEnv's WebSocket (OpenEnv's own `WSErrorCode`s).

use super::wire::{Reply, RestError, RestFault, WsError, WsReply};
use crate::game::Seat;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A refused request. One type for REST and WebSocket, so a rule is phrased once.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServeError {
    #[error("the body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("{0}")]
    Validation(String),
    #[error("unknown message type `{0}`: send reset, step, state, mcp or close")]
    UnknownType(String),
    #[error("unknown scenario: {0}")]
    UnknownScenario(String),
    #[error("unknown episode `{0}` (it never existed, was deleted, or sat idle past the timeout)")]
    UnknownEpisode(String),
    #[error("it is the {expected} seat's turn, not the {got} seat's")]
    WrongSeat { expected: Seat, got: Seat },
    /// A table's seat that stepped while it is another's turn.
    #[error("it is {expected}'s turn at this table, not {acted}'s")]
    OutOfTurn { acted: String, expected: String },
    /// A role that has no seat at the table.
    #[error("{0}")]
    UnknownSeat(String),
    /// A session of the other kind: a table's id on a two-party route, or the reverse.
    #[error("{0}")]
    WrongKind(String),
    #[error("episode `{0}` has ended: start a new one")]
    Ended(String),
    #[error(
        "the server holds its maximum of {0} live sessions: finish or delete one, or retry later"
    )]
    Capacity(usize),
    #[error("the server holds its maximum of {0} WebSockets: close one, or retry later")]
    Connections(usize),
    #[error("no episode on this connection: send a reset first")]
    NoSession,
    #[error("the request body is over the limit of {0} bytes (--body-limit)")]
    TooLarge(usize),
    /// A completion past `--max-completion-bytes`: refused, the session left as it was.
    #[error("{0}")]
    CompletionTooLarge(String),
    /// An ended session evicted to keep the server within `--session-memory-bytes`.
    #[error("episode `{0}` has ended and was evicted to keep the server's sessions within their memory (--session-memory-bytes): its record is in the server's log")]
    Evicted(String),
    /// The live sessions alone hold `--session-memory-bytes`: no new one is started.
    #[error("the server's sessions hold their memory budget of {0} bytes (--session-memory-bytes): finish or delete a session, or retry later")]
    MemoryFull(u64),
    /// A request the HTTP layer refused before any route saw it: hyper's own answer to a
    /// request it cannot read (400, 414, 431), or an axum extractor's (a WebSocket handshake
    /// without its headers, a path that is not UTF-8). Said in this shape like every refusal.
    #[error("{message}")]
    Protocol { status: StatusCode, message: String },
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// What the operator's policy does not let a client do (`policy.rs`).
    #[error("{0}")]
    Forbidden(String),
    #[error("episode_id `{0}` is taken: the log or a live session has it; pick another, or leave it out for a fresh one")]
    IdTaken(String),
    #[error("no route {0}: see /metadata, /schema and the book's serving guide (docs/src/guide/serve.md)")]
    UnknownRoute(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Execution(String),
    /// A server the client named failed (token-exact mode's policy server): the client's to
    /// fix, not a fault of this one.
    #[error("{0}")]
    Upstream(String),
}

impl From<crate::scenario::UnknownScenario> for ServeError {
    fn from(e: crate::scenario::UnknownScenario) -> ServeError {
        ServeError::UnknownScenario(e.0)
    }
}

impl ServeError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ServeError::InvalidJson(_) => StatusCode::BAD_REQUEST,
            ServeError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ServeError::UnknownType(_) => StatusCode::BAD_REQUEST,
            ServeError::UnknownScenario(_) | ServeError::UnknownEpisode(_) => StatusCode::NOT_FOUND,
            ServeError::WrongSeat { .. }
            | ServeError::OutOfTurn { .. }
            | ServeError::Ended(_)
            | ServeError::NoSession
            | ServeError::WrongKind(_) => StatusCode::CONFLICT,
            ServeError::UnknownSeat(_) => StatusCode::NOT_FOUND,
            ServeError::Capacity(_) | ServeError::Connections(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServeError::TooLarge(_) | ServeError::CompletionTooLarge(_) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ServeError::Evicted(_) => StatusCode::GONE,
            ServeError::MemoryFull(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServeError::Protocol { status, .. } => *status,
            ServeError::Unauthorized => StatusCode::UNAUTHORIZED,
            ServeError::Forbidden(_) => StatusCode::FORBIDDEN,
            ServeError::IdTaken(_) => StatusCode::CONFLICT,
            ServeError::UnknownRoute(_) => StatusCode::NOT_FOUND,
            ServeError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServeError::Execution(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServeError::Upstream(_) => StatusCode::BAD_GATEWAY,
        }
    }

    /// The code in a REST error body: one per kind of refusal.
    pub(crate) fn rest_code(&self) -> &'static str {
        match self {
            ServeError::InvalidJson(_) => "INVALID_JSON",
            ServeError::Validation(_) => "VALIDATION_ERROR",
            ServeError::UnknownType(_) => "UNKNOWN_TYPE",
            ServeError::UnknownScenario(_) => "UNKNOWN_SCENARIO",
            ServeError::UnknownEpisode(_) => "UNKNOWN_EPISODE",
            ServeError::WrongSeat { .. } | ServeError::OutOfTurn { .. } => "WRONG_SEAT",
            ServeError::UnknownSeat(_) => "UNKNOWN_SEAT",
            ServeError::WrongKind(_) => "WRONG_SESSION_KIND",
            ServeError::Ended(_) => "EPISODE_ENDED",
            ServeError::Capacity(_) | ServeError::Connections(_) => "CAPACITY_REACHED",
            ServeError::NoSession => "SESSION_ERROR",
            ServeError::TooLarge(_) | ServeError::CompletionTooLarge(_) => "PAYLOAD_TOO_LARGE",
            ServeError::Evicted(_) => "EPISODE_EVICTED",
            ServeError::MemoryFull(_) => "CAPACITY_REACHED",
            ServeError::Protocol { status, .. } => match status.as_u16() {
                405 => "METHOD_NOT_ALLOWED",
                413 => "PAYLOAD_TOO_LARGE",
                414 => "URI_TOO_LONG",
                426 => "UPGRADE_REQUIRED",
                431 => "HEADERS_TOO_LARGE",
                500.. => "EXECUTION_ERROR",
                _ => "BAD_REQUEST",
            },
            ServeError::Unauthorized => "UNAUTHORIZED",
            ServeError::Forbidden(_) => "FORBIDDEN",
            ServeError::IdTaken(_) => "EPISODE_ID_TAKEN",
            ServeError::UnknownRoute(_) => "NOT_FOUND",
            ServeError::MethodNotAllowed(_) => "METHOD_NOT_ALLOWED",
            ServeError::Execution(_) => "EXECUTION_ERROR",
            ServeError::Upstream(_) => "UPSTREAM_ERROR",
        }
    }

    /// The code in an OpenEnv WebSocket error message (OpenEnv's `WSErrorCode`).
    pub(crate) fn ws_code(&self) -> &'static str {
        match self {
            ServeError::InvalidJson(_) => "INVALID_JSON",
            ServeError::UnknownType(_) => "UNKNOWN_TYPE",
            ServeError::Validation(_)
            | ServeError::UnknownScenario(_)
            | ServeError::UnknownSeat(_)
            | ServeError::TooLarge(_)
            | ServeError::CompletionTooLarge(_)
            | ServeError::Protocol { .. }
            | ServeError::Forbidden(_)
            | ServeError::IdTaken(_)
            | ServeError::UnknownRoute(_)
            | ServeError::MethodNotAllowed(_) => "VALIDATION_ERROR",
            ServeError::Capacity(_) | ServeError::Connections(_) | ServeError::MemoryFull(_) => {
                "CAPACITY_REACHED"
            }
            ServeError::UnknownEpisode(_)
            | ServeError::Evicted(_)
            | ServeError::NoSession
            | ServeError::WrongKind(_)
            | ServeError::Unauthorized => "SESSION_ERROR",
            ServeError::WrongSeat { .. }
            | ServeError::OutOfTurn { .. }
            | ServeError::Ended(_)
            | ServeError::Execution(_)
            | ServeError::Upstream(_) => "EXECUTION_ERROR",
        }
    }

    /// The WebSocket message: `{"type":"error","data":{"message","code"}}`.
    pub(super) fn ws_message(&self) -> WsReply {
        WsReply::Error(WsError {
            message: self.to_string(),
            code: self.ws_code(),
        })
    }

    /// The REST error body, `{"error":{"code","message"}}`: the one shape of every refusal
    /// over HTTP, answered by a route or written in place of hyper's own (`peer.rs`).
    pub(super) fn rest_body(&self) -> RestError {
        RestError {
            error: RestFault {
                code: self.rest_code(),
                message: self.to_string(),
            },
        }
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        Reply(self.status(), self.rest_body()).into_response()
    }
}
