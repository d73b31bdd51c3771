//! The page's routes: `GET /play` (and its two files), `GET /play/api/setup`,
//! `POST /play/api/games` (a new game, or a study participant's next one),
//! `POST /play/api/games/{id}/join`, `GET /play/api/games/{id}`,
//! `POST /play/api/games/{id}/step` and `POST /play/api/games/{id}/line` (the turn a move
//! would send, played nowhere: `{"text"}`, or `{"error"}` naming why it cannot be written). A person's seat is reached by its token (`x-seat-token`).
//! These are the page's own routes, not the environment's protocol: `/openapi.json` does not
//! list them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::super::hub::Owner;
use super::super::session::Sampled;
use super::super::wire::Reply;
use super::super::{parse_body, secret, ServeError, Shared};
use super::form::{party_turn, seated_turn, PersonTurn};
use super::games::{creator, Game, Kind, NewGame, Participant, Person, SeatRef};
use super::page;
use super::participants::Next;
use super::view::{view, Retry, View};
use crate::game::Completion;

pub(in crate::serve) fn router() -> Router<Shared> {
    Router::new()
        .route("/play", get(page::html))
        .route("/play/", get(page::html))
        .route("/play/play.css", get(page::css))
        .route("/play/play.js", get(page::js))
        .route("/play/api/setup", get(super::setup::setup))
        .route("/play/api/games", post(create))
        .route("/play/api/games/{id}", get(show))
        .route("/play/api/games/{id}/join", post(join))
        .route("/play/api/games/{id}/step", post(step))
        .route("/play/api/games/{id}/line", post(line))
}

fn answer<T: Serialize>(status: StatusCode, result: Result<T, ServeError>) -> Response {
    match result {
        Ok(body) => Reply(status, body).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A game id: a number for its order, and a random part (ids of the log are never reused).
fn fresh_id(games: &super::Games) -> String {
    let n = games.next_number();
    format!("play-{n}-{}", &secret::fresh()[..8])
}

#[derive(Serialize)]
struct Made {
    game_id: String,
    seat_token: String,
    view: View,
}

async fn create(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    match made(&state, body).await {
        Ok((status, made)) => Reply(status, made).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A new game (201), or a study participant's unfinished one again (200).
async fn made(
    state: &Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Made), ServeError> {
    let hub = &state.hub;
    let play = hub
        .options
        .play
        .as_ref()
        .ok_or_else(|| ServeError::UnknownRoute("POST /play/api/games".into()))?;
    let request: NewGame = parse_body(body, hub.options.body_limit)?;
    let Some(study) = &play.study else {
        if request.consent.is_some() || request.code.is_some() {
            return Err(ServeError::Validation(
                "`consent` and `code` belong to a study; this server runs none".into(),
            ));
        }
        hub.check_room()?;
        let name = request.name.clone().unwrap_or_default();
        super::check_name(&name)?;
        // Not part of any episode's seeded randomness: a fresh game draws its own.
        let seed = rand::random::<u64>();
        let start = hub.play_start(
            request.family,
            request.scenario_id.as_deref(),
            request.role.clone(),
            request.opponent.clone(),
            seed,
        )?;
        let made = begin(state, start, &name, None).await?;
        return Ok((StatusCode::CREATED, made));
    };
    let open_play = request.name.is_some()
        || request.family.is_some()
        || request.scenario_id.is_some()
        || request.role.is_some()
        || request.opponent.is_some();
    if open_play {
        return Err(ServeError::Forbidden(
            "this server runs a study: the study assigns each game (send {\"consent\": true}, or {\"code\"} for your next game)"
                .into(),
        ));
    }
    let participants = &state.play.participants;
    let (code, arrival, game) = match (&request.code, request.consent) {
        (Some(code), _) => {
            let live = |id: &str| hub.is_live(id);
            match participants.next(code, study.games_per_participant, live)? {
                Next::Resume(id) => {
                    let game = state.play.get(&id)?;
                    let person = game.people.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
                    let view = seen(state, &game, &person).await?;
                    let made = Made {
                        game_id: id,
                        seat_token: person.token,
                        view,
                    };
                    return Ok((StatusCode::OK, made));
                }
                Next::New { arrival, game } => (code.clone(), arrival, game),
            }
        }
        (None, Some(true)) => {
            let (code, arrival) = participants.arrive();
            (code, arrival, 0)
        }
        (None, _) => {
            return Err(ServeError::Validation(
                "a study's games start once the participant agrees: send {\"consent\": true}"
                    .into(),
            ))
        }
    };
    let started = async {
        hub.check_room()?;
        let (entry, seed) = study.assigned(arrival, game);
        let start = hub.play_start(
            entry.family,
            entry.scenario_id.as_deref(),
            entry.role.clone(),
            Some(entry.opponent.clone()),
            seed,
        )?;
        let participant = Participant {
            code: code.clone(),
            game,
        };
        begin(state, start, &code, Some(participant)).await
    }
    .await;
    match started {
        Ok(made) => {
            participants.started(&code, &made.game_id);
            Ok((StatusCode::CREATED, made))
        }
        Err(e) => {
            participants.failed(&code);
            Err(e)
        }
    }
}

/// Make a game for `start` with its creator `name`, start it unless it waits for a second
/// person, and keep it.
async fn begin(
    state: &Shared,
    start: super::games::Start,
    name: &str,
    participant: Option<Participant>,
) -> Result<Made, ServeError> {
    let hub = &state.hub;
    let (people, join) = creator(name, &start)?;
    let game = Arc::new(Game {
        id: fresh_id(&state.play),
        start,
        people: std::sync::Mutex::new(people),
        join: std::sync::Mutex::new(join),
        participant,
        made: std::time::Instant::now(),
    });
    if game.started() {
        hub.play_begin(&game).await?;
    }
    let idle = hub.options.idle_timeout;
    let alive = |g: &Game| {
        if g.started() {
            hub.is_live(&g.id)
        } else {
            g.made.elapsed() < idle
        }
    };
    state
        .play
        .insert(game.clone(), hub.options.max_sessions, alive)?;
    let person = game.people.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
    let view = seen(state, &game, &person).await?;
    Ok(Made {
        game_id: game.id.clone(),
        seat_token: person.token,
        view,
    })
}

/// A person's view, with their study's part.
async fn seen(state: &Shared, game: &Game, person: &Person) -> Result<View, ServeError> {
    let mut shown = view(&state.hub, game, person).await?;
    if let (Some(p), Some(study)) = (
        &game.participant,
        state
            .hub
            .options
            .play
            .as_ref()
            .and_then(|p| p.study.as_ref()),
    ) {
        let next = p.game + 1 < study.games_per_participant;
        let message = match (shown.done, next) {
            (false, _) => format!(
                "Game {} of {}. Keep your participant code: {}",
                p.game + 1,
                study.games_per_participant,
                p.code
            ),
            (true, true) => format!(
                "Game {} of {} is over. Your participant code is {}; go on to the next game.",
                p.game + 1,
                study.games_per_participant,
                p.code
            ),
            (true, false) => format!(
                "Thank you: the study is complete. Your participant code is {}.",
                p.code
            ),
        };
        shown.study = Some(json!({"code": p.code, "message": message, "next": next}));
    }
    Ok(shown)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinRequest {
    name: String,
    join_token: String,
}

async fn join(
    State(state): State<Shared>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result = async {
        let request: JoinRequest = parse_body(body, state.hub.options.body_limit)?;
        super::check_name(&request.name)?;
        let game = state.play.get(&id)?;
        if !game.started() && game.made.elapsed() >= state.hub.options.idle_timeout {
            return Err(ServeError::Ended(id));
        }
        let token = {
            let mut join = game.join.lock().unwrap_or_else(|e| e.into_inner());
            let token = match join.take() {
                Some(token) if secret::same(&request.join_token, &token) => token,
                Some(token) => {
                    *join = Some(token);
                    return Err(ServeError::Forbidden("wrong join token".into()));
                }
                None => {
                    return Err(ServeError::Forbidden(format!(
                        "game `{id}` has its people already"
                    )))
                }
            };
            let mut people = game.people.lock().unwrap_or_else(|e| e.into_inner());
            if people.iter().any(|p| p.name == request.name) {
                *join = Some(token);
                return Err(ServeError::Validation(format!(
                    "`{}` is the other person's name: choose another",
                    request.name
                )));
            }
            let person = Person {
                name: request.name.clone(),
                token: secret::fresh(),
                seat_token: None,
                seat: None,
            };
            people.push(person);
            token
        };
        if let Err(e) = state.hub.play_begin(&game).await {
            // Not started: the seat is open again, to the same link.
            game.people
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .truncate(1);
            *game.join.lock().unwrap_or_else(|e| e.into_inner()) = Some(token);
            return Err(e);
        }
        let person = game.people.lock().unwrap_or_else(|e| e.into_inner())[1].clone();
        let view = seen(&state, &game, &person).await?;
        Ok(Made {
            game_id: id,
            seat_token: person.token,
            view,
        })
    }
    .await;
    answer(StatusCode::OK, result)
}

async fn show(State(state): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let result = async {
        let game = state.play.get(&id)?;
        let (_, person) = game.person(secret::presented(&headers))?;
        seen(&state, &game, &person).await
    }
    .await;
    answer(StatusCode::OK, result)
}

/// A person's turn as the completion their seat sends.
async fn written(
    state: &Shared,
    game: &Game,
    person: &Person,
    turn: &PersonTurn,
) -> Result<String, ServeError> {
    match (&person.seat, game.start.kind()) {
        (Some(SeatRef::Party(seat)), Kind::Party) => {
            let slot = state.hub.find(&game.id, Owner::Play)?;
            let session = slot.session.lock().await;
            party_turn(turn, session.scenario(), session.format(*seat))
        }
        (Some(SeatRef::Role(role)), Kind::Table | Kind::Market) => {
            let slot = state.hub.find_table(&game.id)?;
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            let seat = session.seat(role)?;
            seated_turn(turn, session.table_scenario(), session.format(seat))
        }
        (None, _) => Err(ServeError::Validation(
            "the game has not started: the other person has not joined yet".into(),
        )),
        _ => Err(ServeError::Execution(
            "a seat of another kind of game".into(),
        )),
    }
}

async fn line(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result = async {
        let turn: PersonTurn = parse_body(body, state.hub.options.body_limit)?;
        let game = state.play.get(&id)?;
        let (_, person) = game.person(secret::presented(&headers))?;
        // A preview of a move that cannot be written (a term out of range, one missing) is
        // an answer, not a failed request: the page shows why while the person types.
        match written(&state, &game, &person, &turn).await {
            Ok(text) => Ok(json!({ "text": text, "error": null })),
            Err(ServeError::Validation(why)) => Ok(json!({ "text": null, "error": why })),
            Err(e) => Err(e),
        }
    }
    .await;
    answer(StatusCode::OK, result)
}

async fn step(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result = async {
        let turn: PersonTurn = parse_body(body, state.hub.options.body_limit)?;
        let game = state.play.get(&id)?;
        let (_, person) = game.person(secret::presented(&headers))?;
        let text = written(&state, &game, &person, &turn).await?;
        let completion = Completion {
            text,
            ..Completion::default()
        };
        let mut retry = None;
        match &person.seat {
            Some(SeatRef::Party(seat)) => {
                let slot = state.hub.find(&game.id, Owner::Play)?;
                state
                    .hub
                    .step(&slot, Some(*seat), completion, Sampled::default())
                    .await?;
            }
            Some(SeatRef::Role(role)) => {
                let (_, stepped) = state
                    .hub
                    .step_table(&game.id, role, person.seat_token.as_deref(), completion)
                    .await?;
                if stepped.retry {
                    retry = Some(Retry::of(stepped.error.as_ref(), None));
                }
            }
            None => {
                return Err(ServeError::Validation(
                    "the game has not started: the other person has not joined yet".into(),
                ))
            }
        }
        let mut shown = seen(&state, &game, &person).await?;
        if retry.is_some() {
            shown.retry = retry;
        }
        Ok(shown)
    }
    .await;
    answer(StatusCode::OK, result)
}
