//! What the server's sessions hold in memory, and the one budget it is held to
//! (`--session-memory-bytes`). Every session — a two-party episode's or a table's, live or
//! ended — carries a [`Charge`]: what it keeps (its turns as the record writes them, each
//! seat's view), set after every step and taken back when the session is dropped, however it
//! is dropped. Ended sessions are kept for `GET` on one [`Shelf`], bounded in number
//! (`--max-sessions`) and, with the live ones, in bytes: past the budget the oldest ended ones
//! are evicted (their `GET` then answers 410, the record being in the log), and when the live
//! sessions alone hold the budget a new session is refused.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::error::ServeError;
use super::hub::{Live, Owner};
use crate::vocab::Message;

/// How many evicted sessions are remembered, to answer 410 rather than 404 for them: each is
/// an id (at most 128 bytes). An evicted session past these answers as an expired one.
const EVICTED_REMEMBERED: usize = 65_536;

/// What one message of a view keeps beside its text (its role, the struct, the allocation).
const MESSAGE_OVERHEAD: u64 = 64;

/// The bytes a seat's view keeps: its messages' text and tool calls.
pub(super) fn view_bytes(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len())
                .sum();
            (m.content.len() + calls) as u64 + MESSAGE_OVERHEAD
        })
        .sum()
}

/// One session's share of the memory budget: set after every step, and taken back from the
/// total when the session is dropped (whether it ended, was deleted, reclaimed or evicted).
pub(super) struct Charge {
    total: Arc<AtomicU64>,
    bytes: AtomicU64,
}

impl Charge {
    /// Count `bytes` for this session from now on.
    pub(super) fn set(&self, bytes: u64) {
        let before = self.bytes.swap(bytes, Ordering::Relaxed);
        if bytes >= before {
            self.total.fetch_add(bytes - before, Ordering::Relaxed);
        } else {
            self.total.fetch_sub(before - bytes, Ordering::Relaxed);
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.total
            .fetch_sub(*self.bytes.get_mut(), Ordering::Relaxed);
    }
}

/// Who may reach a session, on which routes: a two-party session its owner (`/v1/episodes`,
/// OpenEnv, MCP), a table anyone holding its id (`/v1/tables`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    Episode(Owner),
    Table,
}

/// The ended sessions kept for `GET`, oldest first, and the ids of those evicted.
#[derive(Default)]
pub(super) struct Shelf {
    kept: HashMap<String, (Instant, Live)>,
    order: VecDeque<String>,
    /// Evicted ids with who could reach them, the newest [`EVICTED_REMEMBERED`].
    evicted: HashMap<String, Reach>,
    evicted_order: VecDeque<String>,
}

impl Shelf {
    fn put(&mut self, id: String, kept: Live) {
        self.evicted.remove(&id);
        if self
            .kept
            .insert(id.clone(), (Instant::now(), kept))
            .is_none()
        {
            self.order.push_back(id);
        }
    }

    /// Take the oldest ended session off the shelf, remembering it as evicted; its bytes.
    fn evict_oldest(&mut self) -> Option<u64> {
        while let Some(id) = self.order.pop_front() {
            if let Some((_, kept)) = self.kept.remove(&id) {
                let bytes = kept.bytes();
                self.remember_evicted(id, kept.reach());
                return Some(bytes);
            }
        }
        None
    }

    /// Take the oldest off the shelf (not remembered: past `--max-sessions` they go as they
    /// always went, as if reclaimed).
    fn drop_oldest(&mut self) {
        while let Some(id) = self.order.pop_front() {
            if self.kept.remove(&id).is_some() {
                return;
            }
        }
    }

    fn remember_evicted(&mut self, id: String, reach: Reach) {
        if self.evicted.insert(id.clone(), reach).is_none() {
            self.evicted_order.push_back(id);
        }
        while self.evicted.len() > EVICTED_REMEMBERED {
            match self.evicted_order.pop_front() {
                Some(old) => {
                    self.evicted.remove(&old);
                }
                None => break,
            }
        }
    }

    /// Ids removed by delete or the reaper leave stale entries in `order`: keep it short.
    fn tidy(&mut self) {
        if self.order.len() > 2 * self.kept.len() + 64 {
            let kept = &self.kept;
            self.order.retain(|id| kept.contains_key(id));
        }
    }
}

/// The budget, the total every session's [`Charge`] adds to, and the shelf of ended sessions.
pub struct SessionMemory {
    budget: u64,
    /// The most ended sessions kept (`--max-sessions`).
    max_ended: usize,
    total: Arc<AtomicU64>,
    shelf: Mutex<Shelf>,
}

impl SessionMemory {
    pub(super) fn new(budget: u64, max_ended: usize) -> SessionMemory {
        SessionMemory {
            budget,
            max_ended,
            total: Arc::new(AtomicU64::new(0)),
            shelf: Mutex::new(Shelf::default()),
        }
    }

    fn shelf(&self) -> MutexGuard<'_, Shelf> {
        self.shelf.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new session's charge (nothing yet).
    pub(super) fn charge(&self) -> Charge {
        Charge {
            total: self.total.clone(),
            bytes: AtomicU64::new(0),
        }
    }

    /// What every session holds now, live and ended, in bytes.
    pub fn held(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Ended sessions kept for `GET`.
    pub fn ended(&self) -> usize {
        self.shelf().kept.len()
    }

    /// Keep an ended session for `GET`, then bring what the sessions hold back within the
    /// budget.
    pub(super) fn keep(&self, id: String, kept: Live) {
        {
            let mut shelf = self.shelf();
            shelf.put(id, kept);
            while shelf.kept.len() > self.max_ended {
                shelf.drop_oldest();
            }
            shelf.tidy();
        }
        self.relieve();
    }

    /// Evict ended sessions, oldest first, until what the sessions hold is within the budget
    /// (or none is left to evict).
    pub(super) fn relieve(&self) {
        let mut over = self.held().saturating_sub(self.budget);
        if over == 0 {
            return;
        }
        let mut shelf = self.shelf();
        while over > 0 {
            // A session a request still holds leaves the total when that request is done.
            match shelf.evict_oldest() {
                Some(bytes) => over = over.saturating_sub(bytes.max(1)),
                None => break,
            }
        }
    }

    /// Refuse a new session when the live ones alone hold the budget (ended ones are evicted
    /// first).
    pub(super) fn check_room(&self) -> Result<(), ServeError> {
        self.relieve();
        if self.held() >= self.budget {
            return Err(ServeError::MemoryFull(self.budget));
        }
        Ok(())
    }

    /// The ended session `id`, of either kind (the registry checks who may reach it).
    pub(super) fn find(&self, id: &str) -> Option<Live> {
        self.shelf()
            .kept
            .get(id)
            .map(|(_, session)| session.clone())
    }

    /// Why `id` is not found by `reach`: evicted (410, to whoever could reach it), or
    /// unknown (404).
    pub(super) fn missing(&self, id: &str, reach: Reach) -> ServeError {
        match self.shelf().evicted.get(id) {
            Some(evicted) if *evicted == reach => ServeError::Evicted(id.to_string()),
            _ => ServeError::UnknownEpisode(id.to_string()),
        }
    }

    /// Drop the ended session `id` if `reach` may reach it; whether it did.
    pub(super) fn remove(&self, id: &str, reach: Reach) -> bool {
        let mut shelf = self.shelf();
        let reachable = shelf
            .kept
            .get(id)
            .is_some_and(|(_, kept)| kept.reach() == reach);
        if reachable {
            shelf.kept.remove(id);
        }
        reachable
    }

    /// Drop the ended sessions kept longer than `limit`.
    pub(super) fn reap(&self, limit: Duration) {
        let mut shelf = self.shelf();
        shelf.kept.retain(|_, (at, _)| at.elapsed() < limit);
        shelf.tidy();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_adds_to_the_total_and_leaves_it_when_dropped() {
        let memory = SessionMemory::new(1000, 10);
        let a = memory.charge();
        a.set(300);
        let b = memory.charge();
        b.set(500);
        assert_eq!(memory.held(), 800);
        a.set(100);
        assert_eq!(memory.held(), 600);
        drop(b);
        assert_eq!(memory.held(), 100);
        drop(a);
        assert_eq!(memory.held(), 0);
        assert_eq!(memory.ended(), 0);
        assert!(matches!(
            memory.missing("s1", Reach::Table),
            ServeError::UnknownEpisode(_)
        ));
    }

    #[test]
    fn a_view_counts_its_text() {
        let view = [
            Message::new(crate::vocab::MessageRole::System, "x".repeat(100)),
            Message::new(crate::vocab::MessageRole::User, "y".repeat(10)),
        ];
        assert_eq!(view_bytes(&view), 110 + 2 * MESSAGE_OVERHEAD);
    }
}
