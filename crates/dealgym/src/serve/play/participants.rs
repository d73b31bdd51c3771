//! A study's participants: each one's code, arrival number (their place in the study's
//! rotation) and games. A participant's next game is reserved under one lock before it starts,
//! so two requests with one code never get two games; one whose game is unfinished gets that
//! game back (a participant who closed the page resumes with their code); a start that fails
//! gives its reservation back (and a first arrival's number to the next participant).

use std::collections::HashMap;
use std::sync::Mutex;

use super::super::{secret, ServeError};

#[derive(Default)]
pub(super) struct Participants {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_code: HashMap<String, Participant>,
    next: usize,
    /// Arrival numbers whose first game failed to start: given to the next arrivals.
    free: Vec<usize>,
}

struct Participant {
    arrival: usize,
    /// Each game's id; `None` while it is starting.
    games: Vec<Option<String>>,
}

/// What a participant plays next.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Their unfinished game.
    Resume(String),
    /// Their game number `game` (0-based), as the study assigns it to arrival `arrival`.
    New { arrival: usize, game: usize },
}

impl Participants {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new participant: their code and arrival number, their first game reserved.
    pub fn arrive(&self) -> (String, usize) {
        let mut inner = self.lock();
        let arrival = match inner.free.pop() {
            Some(n) => n,
            None => {
                inner.next += 1;
                inner.next - 1
            }
        };
        let code = format!("P-{}", secret::fresh()[..16].to_uppercase());
        inner.by_code.insert(
            code.clone(),
            Participant {
                arrival,
                games: vec![None],
            },
        );
        (code, arrival)
    }

    /// What participant `code` plays next: their last game while `unfinished` says it is,
    /// else their next game (reserved), if the study has one left for them.
    pub fn next(
        &self,
        code: &str,
        per_participant: usize,
        unfinished: impl Fn(&str) -> bool,
    ) -> Result<Next, ServeError> {
        let mut inner = self.lock();
        let p = inner
            .by_code
            .get_mut(code)
            .ok_or_else(|| ServeError::Forbidden("unknown participant code".into()))?;
        match p.games.last() {
            Some(Some(last)) if unfinished(last) => return Ok(Next::Resume(last.clone())),
            Some(None) => {
                return Err(ServeError::Validation(
                    "your game is starting: ask again in a moment".into(),
                ))
            }
            _ => {}
        }
        if p.games.len() >= per_participant {
            return Err(ServeError::Validation(format!(
                "participant {code} has played all {per_participant} games of this study"
            )));
        }
        p.games.push(None);
        Ok(Next::New {
            arrival: p.arrival,
            game: p.games.len() - 1,
        })
    }

    /// Participant `code`'s reserved game started as `id`.
    pub fn started(&self, code: &str, id: &str) {
        if let Some(slot) = self
            .lock()
            .by_code
            .get_mut(code)
            .and_then(|p| p.games.last_mut())
        {
            *slot = Some(id.to_string());
        }
    }

    /// Participant `code`'s reserved game did not start: the reservation is given back, and a
    /// participant left with no game is forgotten (their arrival number goes to the next one).
    pub fn failed(&self, code: &str) {
        let mut inner = self.lock();
        let Some(p) = inner.by_code.get_mut(code) else {
            return;
        };
        p.games.pop();
        if p.games.is_empty() {
            let arrival = p.arrival;
            inner.by_code.remove(code);
            inner.free.push(arrival);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_gets_its_unfinished_game_back_and_never_two_games_at_once() {
        let people = Participants::default();
        let (code, arrival) = people.arrive();
        assert_eq!(arrival, 0);
        assert!(people.next(&code, 2, |_| true).is_err(), "still starting");
        people.started(&code, "g1");
        assert_eq!(
            people.next(&code, 2, |_| true).unwrap(),
            Next::Resume("g1".into())
        );
        assert_eq!(
            people.next(&code, 2, |_| false).unwrap(),
            Next::New {
                arrival: 0,
                game: 1
            }
        );
        assert!(
            people.next(&code, 2, |_| false).is_err(),
            "the second is starting"
        );
        people.started(&code, "g2");
        let e = people.next(&code, 2, |_| false).unwrap_err().to_string();
        assert!(e.contains("all 2 games"), "{e}");
        assert!(people.next("P-NOPE", 2, |_| false).is_err());
    }

    #[test]
    fn a_first_game_that_fails_gives_its_place_to_the_next_arrival() {
        let people = Participants::default();
        let (first, _) = people.arrive();
        let (_, second) = people.arrive();
        assert_eq!(second, 1);
        people.failed(&first);
        assert!(people.next(&first, 1, |_| false).is_err(), "forgotten");
        assert_eq!(people.arrive().1, 0);
        assert_eq!(people.arrive().1, 2);
    }
}
