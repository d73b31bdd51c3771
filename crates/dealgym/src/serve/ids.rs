//! Episode ids, unique per log: across requests, across concurrent creates and across
//! restarts of a server on the same log. The book knows every id the log holds (read when the
//! server starts) and every id a live session holds; a client that names an id in either is
//! refused, and ids the server makes (`s{N}` for sessions, `r{N}-g{G}-m{M}` for rollout
//! requests) come from one counter that starts past every such number the log or a client has
//! used. A live session's id is held by an [`IdClaim`]: it is freed when the session is dropped
//! without being logged (deleted, reaped, its connection closed), and stays taken once logged.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::error::ServeError;
use crate::limits::MAX_EPISODE_ID;

/// The ids of one log.
#[derive(Debug, Default)]
pub struct IdBook {
    logged: HashSet<String>,
    live: HashSet<String>,
    /// The next number the server gives (`s{next}`, `r{next}-…`).
    next: u64,
}

impl IdBook {
    /// A book for a log that already holds `logged`.
    pub fn new(logged: impl IntoIterator<Item = String>) -> IdBook {
        let mut book = IdBook::default();
        for id in logged {
            book.bump_past(&id);
            book.logged.insert(id);
        }
        book
    }

    /// Keep the counter past a number `id` holds in a form the server makes, so no id the
    /// server makes later can equal it.
    fn bump_past(&mut self, id: &str) {
        if let Some(n) = server_number(id) {
            self.next = self.next.max(n.saturating_add(1));
        }
    }

    fn taken(&self, id: &str) -> bool {
        self.logged.contains(id) || self.live.contains(id)
    }

    /// The next number of the counter (a session's default seed is its number); none left
    /// past `u64::MAX` (a log holding an id at the counter's end).
    fn take_number(&mut self) -> Result<u64, ServeError> {
        let n = self.next;
        self.next = self.next.checked_add(1).ok_or_else(|| {
            ServeError::Execution(
                "the log holds an episode id at the end of the server's counter: start a new log"
                    .into(),
            )
        })?;
        Ok(n)
    }

    /// Mark `id` as written to the log: taken for good.
    pub fn logged(&mut self, id: &str) {
        self.logged.insert(id.to_string());
        self.live.remove(id);
    }
}

/// The shared book.
pub(crate) type Book = Arc<Mutex<IdBook>>;

/// A live session's hold on its id; dropped unlogged, the id is free again.
#[derive(Debug)]
pub(crate) struct IdClaim {
    book: Book,
    pub id: String,
    /// The counter's number, when the server made the id (a session's default seed).
    pub number: u64,
}

impl IdClaim {
    /// Claim `wanted`, or a fresh `s{N}` when the client names none. Atomic: of two
    /// concurrent claims of one id, exactly one succeeds.
    pub fn session(book: &Book, wanted: Option<&str>) -> Result<IdClaim, ServeError> {
        let mut ids = book.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = wanted {
            check_shape(id)?;
            if ids.taken(id) {
                return Err(ServeError::IdTaken(id.to_string()));
            }
        }
        // A client's id takes a number too: it is the session's default seed.
        let number = ids.take_number()?;
        let id = match wanted {
            Some(id) => id.to_string(),
            // The counter is past every number of the log's ids in this form, and clients
            // cannot name one (`check_shape`), so the first is free.
            None => format!("s{number}"),
        };
        ids.live.insert(id.clone());
        Ok(IdClaim {
            book: book.clone(),
            id,
            number,
        })
    }
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        let mut ids = self.book.lock().unwrap_or_else(|e| e.into_inner());
        ids.live.remove(&self.id);
    }
}

/// A fresh tag for one rollout request: its episodes are `{tag}-g{G}-m{M}` and its groups
/// `{tag}-g{G}`, so two requests (or two servers' lifetimes on one log) never share a group.
pub(crate) fn rollout_tag(book: &Book) -> Result<String, ServeError> {
    let mut ids = book.lock().unwrap_or_else(|e| e.into_inner());
    Ok(format!("r{}", ids.take_number()?))
}

/// The number in an id of the server's own forms (`s{N}`, `r{N}-…`).
fn server_number(id: &str) -> Option<u64> {
    id.strip_prefix('s')
        .or_else(|| id.strip_prefix('r').and_then(|r| r.split('-').next()))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
}

/// A client's episode id: short, printable, no spaces or slashes (it is a path segment of
/// the REST routes and a field of every record), and not of the forms the server makes
/// (`s{N}`, `r{N}-…`): those are the server's to give, so a client can neither take one a
/// rollout request will use nor move the counter.
fn check_shape(id: &str) -> Result<(), ServeError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_EPISODE_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if !ok {
        return Err(ServeError::Validation(format!(
            "episode_id must be 1 to {MAX_EPISODE_ID} characters of letters, digits, '-', '_', '.' or ':'"
        )));
    }
    if server_number(id).is_some() {
        return Err(ServeError::Validation(format!(
            "episode_id `{id}` has the form of the ids the server gives (s<number>, r<number>-…): pick another, or leave it out"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(logged: &[&str]) -> Book {
        Arc::new(Mutex::new(IdBook::new(
            logged.iter().map(|s| s.to_string()),
        )))
    }

    #[test]
    fn a_restarted_server_makes_ids_past_those_in_its_log() {
        let b = book(&["s0", "s1", "r7-g0-m0", "custom"]);
        assert_eq!(IdClaim::session(&b, None).unwrap().id, "s8");
        assert_eq!(rollout_tag(&b).unwrap(), "r9");
    }

    #[test]
    fn an_id_in_the_log_or_held_live_is_refused_and_a_dropped_claim_frees_it() {
        let b = book(&["taken"]);
        assert!(matches!(
            IdClaim::session(&b, Some("taken")),
            Err(ServeError::IdTaken(_))
        ));
        let held = IdClaim::session(&b, Some("mine")).unwrap();
        assert!(IdClaim::session(&b, Some("mine")).is_err());
        drop(held);
        let again = IdClaim::session(&b, Some("mine")).unwrap();
        b.lock().unwrap().logged("mine");
        drop(again);
        assert!(IdClaim::session(&b, Some("mine")).is_err());
    }

    #[test]
    fn a_client_may_not_name_an_id_of_the_servers_own_forms() {
        let b = book(&[]);
        for servers in ["s41", "s18446744073709551615", "r100-g0-m0", "r7", "r0-x"] {
            assert!(
                matches!(
                    IdClaim::session(&b, Some(servers)),
                    Err(ServeError::Validation(_))
                ),
                "{servers}"
            );
        }
        for clients in ["s", "sx1", "run-1", "r-1", "rx", "my-s41"] {
            assert!(IdClaim::session(&b, Some(clients)).is_ok(), "{clients}");
        }
        // The six claims that were taken used numbers 0 to 5 (their default seeds).
        assert_eq!(IdClaim::session(&b, None).unwrap().id, "s6");
    }

    #[test]
    fn a_log_at_the_end_of_the_counter_is_refused_not_looped_on() {
        let b = book(&["s18446744073709551615"]);
        assert!(matches!(
            IdClaim::session(&b, None),
            Err(ServeError::Execution(_))
        ));
        assert!(rollout_tag(&b).is_err());
    }

    #[test]
    fn ids_with_spaces_slashes_or_no_length_are_refused() {
        let b = book(&[]);
        for bad in ["", "a b", "../x", &"x".repeat(129)] {
            assert!(IdClaim::session(&b, Some(bad)).is_err(), "{bad:?}");
        }
    }
}
