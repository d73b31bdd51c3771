//! The episode a connection holds — a WebSocket, an MCP session: at most one at a time,
//! reachable by that connection only. OpenEnv's `reset`/`step`/`state` messages and MCP's
//! `start_negotiation`/move tools both go through it, so a reset or a step is written once.

use super::error::ServeError;
use super::hub::Owner;
use super::session::{ResetArgs, Sampled, Session};
use super::wire::{EnvState, StepAnswer};
use super::Shared;
use crate::game::{Completion, Seat};
use crate::protocol::TurnFormat;

/// A connection's hold on its episode: its owner tag and the id of its current episode.
pub(super) struct Held {
    pub owner: Owner,
    pub current: Option<String>,
}

impl Held {
    pub fn new(owner: Owner) -> Held {
        Held {
            owner,
            current: None,
        }
    }

    /// Start a new episode, dropping the one held (a finished episode is already logged; an
    /// unfinished one is dropped unlogged). Answers what the seat to move sees.
    pub async fn reset(
        &mut self,
        state: &Shared,
        args: &ResetArgs,
    ) -> Result<StepAnswer, ServeError> {
        self.release(state);
        state.hub.check_room()?;
        let (session, record) = state.hub.start(args).await?;
        if let Some(record) = &record {
            state.hub.log(record)?;
        }
        let observation = session.observe(session.to_move().unwrap_or(Seat::Learner));
        let id = session.id.clone();
        state.hub.admit(session, self.owner)?;
        self.current = Some(id);
        Ok(observation)
    }

    /// Play a completion for `seat` (default: the seat to move) in the held episode.
    pub async fn step(
        &self,
        state: &Shared,
        seat: Option<Seat>,
        completion: Completion,
        sampled: Sampled,
    ) -> Result<StepAnswer, ServeError> {
        let id = self.current.as_ref().ok_or(ServeError::NoSession)?;
        let slot = state.hub.find(id, self.owner).map_err(|_| {
            ServeError::UnknownEpisode(format!("{id} (reclaimed after sitting idle)"))
        })?;
        state.hub.step(&slot, seat, completion, sampled).await
    }

    /// What the seat to move (or, once it is over, the learner) sees of the held episode.
    pub async fn observe(&self, state: &Shared) -> Result<StepAnswer, ServeError> {
        self.read(state, |session| {
            session.observe(session.to_move().unwrap_or(Seat::Learner))
        })
        .await
    }

    /// How the seat to move in the held episode was asked to play; `None` once it is over.
    pub async fn format_to_move(&self, state: &Shared) -> Result<Option<TurnFormat>, ServeError> {
        self.read(state, Session::format_to_move).await
    }

    /// Where the held episode stands; a fresh environment's state without one.
    pub async fn state(&self, state: &Shared) -> Result<EnvState, ServeError> {
        if self.current.is_none() {
            return Ok(EnvState::fresh());
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

    /// Drop the held episode, if any.
    pub fn release(&mut self, state: &Shared) {
        if let Some(id) = self.current.take() {
            state.hub.remove(&id, self.owner);
        }
    }
}
