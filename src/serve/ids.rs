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
        let number = id
            .strip_prefix('s')
            .or_else(|| id.strip_prefix('r').and_then(|r| r.split('-').next()))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(n) = number {
            self.next = self.next.max(n.saturating_add(1));
        }
    }

    fn taken(&self, id: &str) -> bool {
        self.logged.contains(id) || self.live.contains(id)
    }

    /// The next number of the counter (a session's default seed is its number).
    fn take_number(&mut self) -> u64 {
        let n = self.next;
        self.next = self.next.saturating_add(1);
        n
    }

    /// Mark `id` as written to the log: taken for good.
    pub fn logged(&mut self, id: &str) {
        self.logged.insert(id.to_string());
        self.live.remove(id);
    }

    pub fn logged_count(&self) -> usize {
        self.logged.len()
    }
}

/// The shared book.
pub type Book = Arc<Mutex<IdBook>>;

/// A live session's hold on its id; dropped unlogged, the id is free again.
#[derive(Debug)]
pub struct IdClaim {
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
        let mut number = ids.take_number();
        let id = match wanted {
            Some(id) => {
                check_shape(id)?;
                if ids.taken(id) {
                    return Err(ServeError::IdTaken(id.to_string()));
                }
                ids.bump_past(id);
                id.to_string()
            }
            None => loop {
                let id = format!("s{number}");
                if !ids.taken(&id) {
                    break id;
                }
                number = ids.take_number();
            },
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
pub fn rollout_tag(book: &Book) -> String {
    let mut ids = book.lock().unwrap_or_else(|e| e.into_inner());
    format!("r{}", ids.take_number())
}

/// The longest episode id a client may give.
const MAX_ID_LEN: usize = 128;

/// A client's episode id: short, printable, no spaces or slashes (it is a path segment of
/// the REST routes and a field of every record).
fn check_shape(id: &str) -> Result<(), ServeError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(ServeError::Validation(format!(
            "episode_id must be 1 to {MAX_ID_LEN} characters of letters, digits, '-', '_', '.' or ':'"
        )))
    }
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
        assert_eq!(rollout_tag(&b), "r9");
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
    fn a_client_id_in_the_servers_own_form_moves_the_counter_past_it() {
        let b = book(&[]);
        let _c = IdClaim::session(&b, Some("s41")).unwrap();
        assert_eq!(IdClaim::session(&b, None).unwrap().id, "s42");
        let _r = IdClaim::session(&b, Some("r100-g0-m0")).unwrap();
        assert_eq!(rollout_tag(&b), "r101");
    }

    #[test]
    fn ids_with_spaces_slashes_or_no_length_are_refused() {
        let b = book(&[]);
        for bad in ["", "a b", "../x", &"x".repeat(129)] {
            assert!(IdClaim::session(&b, Some(bad)).is_err(), "{bad:?}");
        }
    }
}
