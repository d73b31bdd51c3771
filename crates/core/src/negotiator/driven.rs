//! The built-in players as players of the one driver loop ([`crate::engine::drive_now`]): a
//! rule at one seat of a two-party episode, the scripted parties at a table. Their answers are
//! ready at once; every other seat is played from outside, where the loop stops.

use std::convert::Infallible;
use std::future::{ready, Future};

use crate::engine::Players;
use crate::game::{Completion, Episode, GameError, Seat};
use crate::table::{TableEpisode, TableError};

use super::deliberation::scripted_table_completion;
use super::{Position, RulePlayer};

/// A rule negotiator playing `seat`, its sampling seed `seed`.
pub struct RuleSeat<'a> {
    pub seat: Seat,
    pub rule: &'a RulePlayer,
    pub seed: u64,
}

impl Players<Episode> for RuleSeat<'_> {
    type Answer = Completion;
    type Failure = Infallible;
    type Error = GameError;

    fn in_process(&self, seat: Seat) -> bool {
        seat == self.seat
    }

    fn ask<'a>(
        &'a self,
        episode: &'a Episode,
        seat: Seat,
    ) -> impl Future<Output = Result<Completion, Infallible>> + 'a {
        let text = self.rule.complete(&Position::of(episode, seat, self.seed));
        ready(Ok(text))
    }

    fn take(
        &mut self,
        episode: &mut Episode,
        _: Seat,
        answer: Completion,
    ) -> Result<(), GameError> {
        episode.step(answer).map(|_| ())
    }

    fn fail(&mut self, _: &mut Episode, _: Seat, failure: Infallible) -> Result<(), GameError> {
        match failure {}
    }
}

/// The scripted party of its incentive at every seat `scripted` marks.
pub struct ScriptedSeats<'a>(pub &'a [bool]);

impl Players<TableEpisode> for ScriptedSeats<'_> {
    type Answer = Completion;
    type Failure = Infallible;
    type Error = TableError;

    fn in_process(&self, seat: usize) -> bool {
        self.0.get(seat).is_some_and(|&s| s)
    }

    fn ask<'a>(
        &'a self,
        episode: &'a TableEpisode,
        seat: usize,
    ) -> impl Future<Output = Result<Completion, Infallible>> + 'a {
        ready(Ok(scripted_table_completion(episode, seat)))
    }

    fn take(
        &mut self,
        episode: &mut TableEpisode,
        seat: usize,
        answer: Completion,
    ) -> Result<(), TableError> {
        episode.step(seat, answer).map(|_| ())
    }

    fn fail(
        &mut self,
        _: &mut TableEpisode,
        _: usize,
        failure: Infallible,
    ) -> Result<(), TableError> {
        match failure {}
    }
}
