//! People at the table (`dealgym play`, or `dealgym serve --play`): a web page the server
//! serves itself (no build step, no outside asset: it works offline) where a person takes a
//! seat against a model, a rule player or another person, and the JSON routes under
//! `/play/api/` the page talks to (the book's `guide/people.md`).
//!
//! Nothing here is a second engine: a person's seat is a seat played from outside, in the
//! hub's sessions as every client's is — a two-party episode's through run's one `Driver`
//! ([`Hub::start_seated`](super::Hub)), a table's or a market's through the table sessions —
//! recorded `human:NAME`, so the log is ordinary records that `replay --verify` checks and that
//! `report` counts as people. What is the page's own:
//! - `games`: the games people play, each person's seat secret (`x-seat-token`), the second
//!   person's join secret, and the start of a game once its people are seated;
//! - `form`: what a seat may do now as form controls (the legal moves, the terms with their
//!   ranges, the offers an acceptance may name), and a person's chosen move written as the
//!   turn the protocol reads (core's renderers: the grammar is spelled once, there);
//! - `view`: what a person's seat sees (core's seat state, its instructions, the transcript);
//! - `setup`: what the page offers (families, scenarios, roles, opponents, the study);
//! - `study`: a study's run file, consent page and participant codes;
//! - `page`: the page's three files.

mod form;
mod games;
mod page;
mod participants;
mod routes;
mod setup;
mod study;
mod view;

use std::sync::Arc;

pub(super) use games::Games;
pub(super) use routes::router;
pub use study::{Study, StudyError};

/// The page's own files (they hold no data: a browser gets them without the bearer token).
pub(super) const FILES: [&str; 4] = ["/play", "/play/", "/play/play.css", "/play/play.js"];

/// Whether `path` is the page's (its files or its routes).
pub(super) fn is_page(path: &str) -> bool {
    path == "/play" || path.starts_with("/play/")
}

/// What the play page offers: the opponents a person may pick, whether a second person may
/// take the other seat, and the study it runs, if any (then the page seats participants as
/// the study assigns them, and nothing else).
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// Player specs a person may choose to play against (the server's default opponent is
    /// offered first, then these); each is checked against the client policy as a reset's is.
    pub opponents: Vec<String>,
    /// Whether a person may invite a second person to the other seat.
    pub people: bool,
    pub study: Option<Arc<Study>>,
}

impl Default for PlayOptions {
    fn default() -> PlayOptions {
        PlayOptions {
            opponents: Vec::new(),
            people: true,
            study: None,
        }
    }
}

/// A person's name as the record writes it (`human:NAME`): 1–40 of letters, digits, `_`
/// and `-`, so a name is never a path, markup or another spec.
pub(crate) fn check_name(name: &str) -> Result<(), super::ServeError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        return Ok(());
    }
    Err(super::ServeError::Validation(format!(
        "name `{}`: 1 to 40 letters, digits, `_` or `-` (the record names the seat `human:NAME`)",
        name.chars().take(60).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_a_short_plain_word() {
        assert!(check_name("alice_2-b").is_ok());
        for bad in ["", "a b", "<script>", "../x", "human:x", &"x".repeat(41)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
