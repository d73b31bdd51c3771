//! The episode a connection holds — a WebSocket, an MCP session: at most one at a time,
//! reachable by that connection only. OpenEnv's `reset`/`step`/`state` messages and MCP's
//! `start_negotiation`/move tools both go through it, so a reset or a step is written once.
//! Either connection may hold an n-party table or a market instead, as the one seat its reset
//! named (every other seat played by `rule:deliberation`, at a market by `rule:zic`): the
//! table lives in the hub's one registry and is stepped by the same code as `/v1/tables`
//! ([`super::table`]).

use super::error::ServeError;
use super::hub::{Live, Owner};
use super::session::{ResetArgs, Sampled, Session};
use super::table::single_seat_turn;
use super::table_rest::single_seat_answer;
use super::wire::{EnvState, Observed};
use super::Shared;
use crate::engine::Seated;
use crate::game::{Completion, Seat};
use crate::protocol::TurnFormat;

/// A connection's hold on its episode: its owner tag and the id of its current episode.
pub(super) struct Held {
    pub owner: Owner,
    pub current: Option<String>,
    /// Where the current session is a table: the seat the connection plays.
    seat: Option<HeldSeat>,
}

/// The seat a connection plays at a table: its role, its seat token, and the steps played.
struct HeldSeat {
    role: String,
    token: String,
    steps: u32,
}

impl Held {
    pub fn new(owner: Owner) -> Held {
        Held {
            owner,
            current: None,
            seat: None,
        }
    }

    /// Start a new episode, dropping the one held (a finished episode is already logged; an
    /// unfinished one is dropped unlogged, an unfinished table logged as abandoned). Answers
    /// what the seat to move sees — at a table, the connection's seat.
    pub async fn reset(
        &mut self,
        state: &Shared,
        args: &ResetArgs,
    ) -> Result<Observed, ServeError> {
        self.release(state);
        state.hub.check_room()?;
        if state.hub.names_table(args) {
            let (slot, role, token) = state.hub.start_single_seat(args).await?;
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            let answer = single_seat_answer(&session, &role, None)?;
            self.current = Some(session.id.clone());
            self.seat = Some(HeldSeat {
                role,
                token,
                steps: 0,
            });
            return Ok(Observed::Table(answer));
        }
        let (session, record) = state.hub.start(args).await?;
        if let Some(record) = &record {
            state.hub.log(record)?;
        }
        let observation = session.observe(session.to_move().unwrap_or(Seat::Learner));
        let id = session.id.clone();
        state.hub.admit(session, self.owner)?;
        self.current = Some(id);
        Ok(Observed::Episode(observation))
    }

    /// Play a completion for `seat` (default: the seat to move) in the held episode.
    pub async fn step(
        &mut self,
        state: &Shared,
        seat: Option<Seat>,
        completion: Completion,
        sampled: Sampled,
    ) -> Result<Observed, ServeError> {
        let id = self.current.as_ref().ok_or(ServeError::NoSession)?;
        if let Some(held) = &mut self.seat {
            let completion = single_seat_turn(seat, completion, &sampled)?;
            let answer = state
                .hub
                .step_single_seat(id, &held.role, &held.token, completion)
                .await?;
            held.steps += 1;
            return Ok(Observed::Table(answer));
        }
        let slot = state.hub.find(id, self.owner).map_err(|_| {
            ServeError::UnknownEpisode(format!("{id} (reclaimed after sitting idle)"))
        })?;
        let answer = state.hub.step(&slot, seat, completion, sampled).await?;
        Ok(Observed::Episode(answer))
    }

    /// What the seat to move (or, once it is over, the learner) sees of the held episode; at
    /// a table, what the connection's seat sees (its reward `null` until the table ends).
    pub async fn observe(&self, state: &Shared) -> Result<Observed, ServeError> {
        if let Some(held) = &self.seat {
            let slot = self.table(state)?;
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            return Ok(Observed::Table(single_seat_answer(
                &session, &held.role, None,
            )?));
        }
        self.read(state, |session| {
            Observed::Episode(session.observe(session.to_move().unwrap_or(Seat::Learner)))
        })
        .await
    }

    /// How the seat to move in the held episode was asked to play; `None` once it is over.
    /// At a table, the connection's seat is asked in the table's format.
    pub async fn format_to_move(&self, state: &Shared) -> Result<Option<TurnFormat>, ServeError> {
        if self.seat.is_some() {
            let slot = self.table(state)?;
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            let episode = &session.episode;
            return Ok(episode.ending().is_none().then(|| episode.format()));
        }
        self.read(state, Session::format_to_move).await
    }

    /// The id of the held table, where the connection plays a seat at one.
    pub fn table_id(&self) -> Option<&str> {
        self.seat.as_ref().and(self.current.as_deref())
    }

    /// The held table's slot.
    fn table(&self, state: &Shared) -> Result<std::sync::Arc<super::table::TableSlot>, ServeError> {
        let id = self.current.as_ref().ok_or(ServeError::NoSession)?;
        state.hub.find_table(id)
    }

    /// Where the held episode stands; a fresh environment's state without one.
    pub async fn state(&self, state: &Shared) -> Result<EnvState, ServeError> {
        let Some(id) = &self.current else {
            return Ok(EnvState::fresh());
        };
        if let Some(held) = &self.seat {
            // A table's state is its seat's observation; here, its id and the steps played.
            return Ok(EnvState {
                episode_id: Some(id.clone()),
                step_count: held.steps,
                episode: None,
            });
        }
        self.read(state, Session::state).await
    }

    /// `look` at the held episode's session, under its lock.
    async fn read<R>(
        &self,
        state: &Shared,
        look: impl FnOnce(&Session) -> R,
    ) -> Result<R, ServeError> {
        let id = self.current.as_ref().ok_or(ServeError::NoSession)?;
        let slot = state.hub.find(id, self.owner)?;
        let session = slot.session.lock().await;
        Ok(look(&session))
    }

    /// Drop the held episode, if any; an unfinished table is logged as abandoned.
    pub fn release(&mut self, state: &Shared) {
        let Some(id) = self.current.take() else {
            return;
        };
        if self.seat.take().is_none() {
            state.hub.remove(&id, self.owner);
            return;
        }
        let Ok(slot) = state.hub.find_table(&id) else {
            return;
        };
        // Of two drops at once (this and the reaper), the one that takes it logs it.
        if !state.hub.take(&id, &Live::Table(slot.clone())) {
            return;
        }
        let state = state.clone();
        tokio::spawn(async move {
            let why = "its OpenEnv connection left it (a close, a new reset) before it ended";
            if let Err(e) = state.hub.log_abandoned(&slot, why.to_string()).await {
                eprintln!("dealgym serve: {e}");
            }
        });
    }
}
