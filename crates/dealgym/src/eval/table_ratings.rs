//! Ratings over n-player games: **pairwise Bradley–Terry inside each episode**. Every pair of
//! seats of one table episode is one comparison on ρ (the higher ρ wins, equal ρ is a tie,
//! half a win each), fitted by `score`'s [`Comparisons`] (the same model, prior, scale and
//! bootstrap intervals as the two-party ratings; the episode is the situation its key names,
//! so its comparisons are resampled together).
//!
//! Why not Plackett–Luce: a table's ranking by ρ has many ties (every party scores 0 without a
//! deal; parties often score alike), which Plackett–Luce does not model without an extension,
//! while the pairwise model takes a tie as half a win; and pairwise comparisons reuse one
//! tested fit instead of a second. The pairwise likelihood counts an episode of n seats as
//! n(n−1)/2 comparisons that are not independent: the bootstrap over episodes (not over
//! comparisons) keeps the intervals honest about that.
//!
//! Who a seat is: the name an eval gave its entrant, else its player spec; where two seats of
//! one episode have the same spec (the scripted parties), each is the spec with its role
//! (`rule:deliberation (sportco)`), since a scripted party plays by its own role's table and
//! a player is never compared with itself. Seats of different roles face different score
//! tables, so a rating mixes skill with the role's difficulty: compare ratings of players that
//! sat the same roles on the same setups (what `eval --table-role` arranges).

use crate::digest::Fnv1a64;
use crate::game::OutcomeKind;
use crate::record::TableRecord;
use crate::score::{Comparisons, InMemory, Leaderboard};

/// The players of each seat of `record`, as the ratings name them (see the module doc).
pub fn seat_players(record: &TableRecord, named: impl Fn(usize) -> Option<String>) -> Vec<String> {
    record
        .seats
        .iter()
        .enumerate()
        .map(|(seat, s)| {
            if let Some(name) = named(seat) {
                return name;
            }
            let shared =
                record.seats.iter().enumerate().any(|(other, o)| {
                    other != seat && o.player == s.player && named(other).is_none()
                });
            if shared {
                format!("{} ({})", s.player, s.role)
            } else {
                s.player.clone()
            }
        })
        .collect()
}

/// Pairwise Bradley–Terry ratings of the players of table episodes.
#[derive(Debug, Default)]
pub struct TableRatings {
    comparisons: Comparisons<InMemory>,
    episodes: usize,
}

impl TableRatings {
    /// Add `record`'s seats, named by `named` where an eval named them. Episodes that ended in
    /// an endpoint error say nothing of the players and are left out.
    pub fn add(&mut self, record: &TableRecord, named: impl Fn(usize) -> Option<String>) {
        if record.outcome.outcome.kind == OutcomeKind::Error {
            return;
        }
        let mut key = Fnv1a64::new();
        key.field(record.run_id.as_bytes());
        key.field(record.episode_id.as_bytes());
        let key = key.finish().0;
        self.episodes += 1;
        for (seat, player) in seat_players(record, named).iter().enumerate() {
            let role = &record.seats[seat].role;
            let rho = record.outcome.rho.get(role).copied().unwrap_or(0.0);
            // In memory: pushing cannot fail.
            let Ok(()) = self.comparisons.add(key, player, rho);
        }
    }

    /// Episodes added.
    pub fn episodes(&self) -> usize {
        self.episodes
    }

    /// The ratings and the groups of comparable players.
    pub fn leaderboard(&self) -> Leaderboard {
        match self.comparisons.leaderboard(|_| true) {
            Ok(board) => board,
            Err(never) => match never {},
        }
    }
}
