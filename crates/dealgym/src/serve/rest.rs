//! Native REST over the same sessions, for curl and simple clients:
//! `POST /v1/episodes` (the reset kwargs as the body), `POST /v1/episodes/{id}/step`
//! (`{"message", "seat"?}`), `GET /v1/episodes/{id}` (state and what the seat to move sees),
//! `DELETE /v1/episodes/{id}` (with the episode's token: an unfinished one is logged as
//! abandoned). With `"opponent": "external"` both seats are played by clients;
//! a step then names its seat, and a step for the seat not to move is a 409.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ServeError;
use super::hub::Owner;
use super::openapi::Routes;
use super::secret;
use super::session::ResetArgs;
use super::wire::{Action, EpisodeStep, EpisodeView, Reply};
use super::{parse_body, Shared};
use crate::game::Seat;

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/v1/episodes", create)
        .get("/v1/episodes/{id}", show)
        .delete("/v1/episodes/{id}", delete)
        .post("/v1/episodes/{id}/step", step)
}

async fn create(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    let result = async {
        let args: ResetArgs = parse_body(body, state.hub.options.body_limit)?;
        state.hub.check_room()?;
        // The id is claimed inside `start`, atomically: of two creates with one id, one wins.
        let (session, record) = state.hub.start(&args).await?;
        if let Some(record) = &record {
            state.hub.log(record)?;
        }
        let body = EpisodeStep {
            episode_id: session.id.clone(),
            episode_token: Some(session.token().to_string()),
            to_move: session.to_move(),
            step: session.observe(session.to_move().unwrap_or(Seat::Learner)),
        };
        state.hub.admit(session, Owner::Rest)?;
        Ok::<_, ServeError>(body)
    }
    .await;
    match result {
        Ok(body) => Reply(StatusCode::CREATED, body).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn step(
    State(state): State<Shared>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result = async {
        let action: Action = parse_body(body, state.hub.options.body_limit)?;
        let slot = state.hub.find(&id, Owner::Rest)?;
        let seat = action.seat;
        let (completion, sampled) = action.completion();
        let step = state.hub.step(&slot, seat, completion, sampled).await?;
        Ok::<_, ServeError>(EpisodeStep {
            episode_id: id,
            episode_token: None,
            to_move: step.observation.to_move,
            step,
        })
    }
    .await;
    match result {
        Ok(body) => Reply::ok(body).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn show(State(state): State<Shared>, Path(id): Path<String>) -> Response {
    match state.hub.find(&id, Owner::Rest) {
        Ok(slot) => {
            let session = slot.session.lock().await;
            let viewer = session.to_move().unwrap_or(Seat::Learner);
            let view = EpisodeView {
                state: session.state(),
                observation: session.observe(viewer).observation,
            };
            Reply::ok(view).into_response()
        }
        Err(e) => e.into_response(),
    }
}

async fn delete(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match state
        .hub
        .drop_by_client(&id, secret::presented(&headers))
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}
