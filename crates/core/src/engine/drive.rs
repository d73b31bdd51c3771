//! The one driver loop: while a seat is to move, ask its in-process player and play what it
//! answers (or end the episode as its failure says); stop at a seat played from outside. Every
//! surface that plays episodes — a run's two-party episodes and tables, the server's sessions,
//! the Python games' built-in seats — drives them through [`drive`]; none loops over `to_move`
//! itself.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// An episode whose next mover can be asked: the two-party one and the table.
pub trait ToMove {
    /// How the episode names a seat (a two-party [`Seat`](crate::game::Seat), a table's index).
    type Seat: Copy;
    /// The seat whose completion comes next; `None` once the episode has ended.
    fn to_move(&self) -> Option<Self::Seat>;
}

/// The players of an episode being driven: who answers for a seat, and what becomes of an
/// answer or of a player that could not give one.
pub trait Players<E: ToMove> {
    /// What a player answers with (a completion, with what its call cost).
    type Answer;
    /// Why a player could not answer (after its own retries).
    type Failure;
    /// What stops the loop (a misuse of the episode, a template that cannot render).
    type Error;

    /// Whether `seat` is played in process (asked here), rather than from outside (a
    /// server's client, a Python caller), where the loop stops.
    fn in_process(&self, seat: E::Seat) -> bool;

    /// The answer of `seat`'s in-process player, to be awaited (asked only of a seat
    /// [`in_process`](Players::in_process)).
    fn ask<'a>(
        &'a self,
        episode: &'a E,
        seat: E::Seat,
    ) -> impl Future<Output = Result<Self::Answer, Self::Failure>> + 'a;

    /// Play `seat`'s answer.
    fn take(
        &mut self,
        episode: &mut E,
        seat: E::Seat,
        answer: Self::Answer,
    ) -> Result<(), Self::Error>;

    /// End the episode because `seat`'s player could not answer: a failure is never turned
    /// into a move.
    fn fail(
        &mut self,
        episode: &mut E,
        seat: E::Seat,
        failure: Self::Failure,
    ) -> Result<(), Self::Error>;
}

/// Drive `episode` until it ends (`None`) or a seat played from outside is to move (that
/// seat).
pub async fn drive<E: ToMove, P: Players<E>>(
    episode: &mut E,
    players: &mut P,
) -> Result<Option<E::Seat>, P::Error> {
    while let Some(seat) = episode.to_move() {
        if !players.in_process(seat) {
            return Ok(Some(seat));
        }
        // Awaited where it is made, never bound: a player's call is the largest part of an
        // episode's future, and a bound future would be kept twice.
        match players.ask(episode, seat).await {
            Ok(answer) => players.take(episode, seat, answer)?,
            Err(failure) => players.fail(episode, seat, failure)?,
        }
    }
    Ok(None)
}

/// [`drive`] for players that answer at once (built-in rules and scripts, whose answers are
/// ready futures), with no async runtime: the loop runs to its end in one poll.
///
/// # Panics
/// If a player's answer is not ready when asked: such players are driven with [`drive`].
pub fn drive_now<E: ToMove, P: Players<E>>(
    episode: &mut E,
    players: &mut P,
) -> Result<Option<E::Seat>, P::Error> {
    let mut driven = pin!(drive(episode, players));
    match driven
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("drive_now: a player's answer was not ready when asked"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{price, setup_with};
    use crate::game::{Episode, EpisodeConfig, FirstMover, Seat};
    use crate::negotiator::{RulePlayer, RuleSeat, Tactic};

    #[test]
    fn the_loop_stops_at_a_seat_played_from_outside_and_plays_the_others() {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Opponent,
            ..EpisodeConfig::default()
        };
        let mut e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        let linear = RulePlayer::new(Tactic::from_name("linear").unwrap());
        let mut rule = RuleSeat {
            seat: Seat::Opponent,
            rule: &linear,
            seed: 7,
        };
        assert_eq!(drive_now(&mut e, &mut rule).unwrap(), Some(Seat::Learner));
        assert_eq!(
            e.turns().len(),
            1,
            "the opponent opened, then the learner is asked"
        );
        e.step(crate::fixtures::turn("no", "[WALK_AWAY]")).unwrap();
        assert_eq!(drive_now(&mut e, &mut rule).unwrap(), None);
    }
}
