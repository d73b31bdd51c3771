//! Snapshots of an episode, for look-ahead and tree search (issue 26 part 4): play a candidate
//! and the opponent's answer, look, and go back.
//!
//! An [`Episode`] holds everything its future depends on besides the completions it is fed:
//! the scenario, the setup, the templates, the turns and views, the standing offer. Nothing in
//! it draws from a random source while stepping; the opponent's randomness is its player's,
//! drawn from the episode's seeds and the state (a built-in negotiator's choice is a function of
//! its [`Position`](crate::negotiator::Position) and sampling seed; an endpoint's of the request
//! and its seed). So a restored snapshot fed the same completions gives the same turns, views
//! and outcome, and a built-in opponent answers it as it did.

use super::Episode;

/// An episode frozen at one point. Cheap to take (the scenario and templates are shared).
#[derive(Clone)]
pub struct Snapshot {
    episode: Episode,
}

impl Snapshot {
    /// The episode as it was when the snapshot was taken.
    pub fn episode(&self) -> &Episode {
        &self.episode
    }
}

impl Episode {
    /// Freeze the episode as it is now.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            episode: self.clone(),
        }
    }

    /// Go back to `snapshot`: everything played since it was taken is undone.
    pub fn restore(&mut self, snapshot: &Snapshot) {
        *self = snapshot.episode.clone();
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::{price, setup_with, turn};
    use crate::game::{EpisodeConfig, FirstMover, Seat};
    use crate::negotiator::{Position, RulePlayer, Tactic};

    use super::*;

    /// Play `completion` for the learner, then the built-in opponent until the learner is to
    /// move again or the episode ends.
    fn play_against(e: &mut Episode, completion: &str, opponent: &RulePlayer) {
        e.step(completion).unwrap();
        while e.to_move() == Some(Seat::Opponent) {
            let answer = opponent.complete(&Position::of(e, Seat::Opponent, 7));
            e.step(answer).unwrap();
        }
    }

    #[test]
    fn a_restored_snapshot_replays_a_candidate_against_the_same_opponent_draw() {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        };
        let mut e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        let opponent = RulePlayer::new(Tactic::from_name("linear").unwrap());
        play_against(
            &mut e,
            &turn("Hi, 110?", "[SUBMIT_DEAL] price:110"),
            &opponent,
        );
        let root = e.snapshot();
        let a = turn("Meet me at 130.", "[SUBMIT_DEAL] price:130");
        let b = turn("150 then.", "[SUBMIT_DEAL] price:150");
        play_against(&mut e, &a, &opponent);
        let after_a = e.turns().to_vec();
        let views_a = e.view(Seat::Learner).to_vec();
        e.restore(&root);
        assert_eq!(e.turns(), root.episode().turns());
        play_against(&mut e, &b, &opponent);
        assert_ne!(e.turns(), &after_a[..], "another candidate, another branch");
        e.restore(&root);
        play_against(&mut e, &a, &opponent);
        assert_eq!(
            e.turns(),
            &after_a[..],
            "the same candidate, the same opponent answer"
        );
        assert_eq!(e.view(Seat::Learner), &views_a[..]);
        assert_eq!(e.outcome(), None);
    }
}
