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
pub(crate) fn seat_players(
    record: &TableRecord,
    named: impl Fn(usize) -> Option<String>,
) -> Vec<String> {
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

/// The key of a situation named by `parts` (each hashed as one field).
pub(crate) fn situation<'a>(parts: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut key = Fnv1a64::new();
    for part in parts {
        key.field(part.as_bytes());
    }
    key.finish().0
}

/// Pairwise Bradley–Terry ratings of the players of table episodes (and of market evals'
/// entrants, [`TableRatings::add_scores`]).
#[derive(Debug, Default)]
pub(crate) struct TableRatings {
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
        let key = situation([record.run_id.as_str(), record.episode_id.as_str()]);
        let scores = seat_players(record, named)
            .into_iter()
            .enumerate()
            .map(|(seat, player)| {
                let role = &record.seats[seat].role;
                (player, record.outcome.rho.get(role).copied().unwrap_or(0.0))
            });
        self.add_scores(key, scores);
    }

    /// Add one situation's scores: every pair of its players (here and under the same `key`
    /// from other calls) is one comparison, the higher score winning. A table episode is one
    /// situation ([`TableRatings::add`]); a market eval's situation is one seat of one market
    /// setup, which each entrant sat in turn (`eval/market.rs`).
    pub fn add_scores(&mut self, key: u64, scores: impl IntoIterator<Item = (String, f64)>) {
        self.episodes += 1;
        for (player, score) in scores {
            // In memory: pushing cannot fail.
            let Ok(()) = self.comparisons.add(key, &player, score);
        }
    }

    /// Situations added.
    #[cfg(test)]
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::{Completion, EpisodeSeed};
    use crate::scenario::{load_table_scenarios, LoadOptions};
    use crate::table::{TableEpisode, TableOptions, TableSetup};

    /// A record of the fixture game (every seat passing until the schedule ends), its players
    /// `a`, `b`, then four seats of one scripted spec.
    fn record() -> TableRecord {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/table/six_party.jsonl");
        let s = Arc::new(
            load_table_scenarios(&path, LoadOptions::default())
                .unwrap()
                .scenarios
                .remove(0),
        );
        let options = TableOptions::default();
        let seeds = EpisodeSeed {
            run: 1,
            group: 0,
            member: 0,
        };
        let setup = TableSetup::new(&s, &options, seeds.table_seed()).unwrap();
        let mut ep = TableEpisode::new(s.clone(), setup).unwrap();
        while let Some(seat) = ep.to_move() {
            let deal = s.initial_deal.clone();
            let text = format!(
                "Thought: t\nTalk: x\nAction: [SUBMIT_DEAL] {}",
                s.render_deal(&deal)
            );
            ep.step(seat, Completion::from(text.as_str())).unwrap();
        }
        let players: Vec<crate::record::TablePlayerInfo> = ["a", "b", "r", "r", "r", "r"]
            .iter()
            .map(|p| crate::record::TablePlayerInfo {
                player: p.to_string(),
                model: None,
            })
            .collect();
        TableRecord::of("run", seeds, &ep, &options, &players, &[])
    }

    #[test]
    fn scripted_seats_sharing_a_spec_are_named_by_role_and_a_named_entrant_by_its_name() {
        let r = record();
        let names = seat_players(&r, |_| None);
        assert_eq!(&names[..3], ["a", "b", "r (party_2)"]);
        let named = seat_players(&r, |seat| (seat == 2).then(|| "entrant".to_string()));
        assert_eq!(named[2], "entrant");
        assert_eq!(named[3], "r (party_3)", "the others still share a spec");
    }

    #[test]
    fn the_higher_rho_in_an_episode_wins_each_pair_and_equal_rho_ties() {
        let base = record();
        let mut ratings = TableRatings::default();
        for i in 0..30 {
            let mut r = base.clone();
            r.episode_id = format!("g{i}-m0");
            let roles: Vec<String> = r.roles().iter().map(|s| s.to_string()).collect();
            for (k, role) in roles.into_iter().enumerate() {
                // `a` beats everyone in most episodes, `b` loses to everyone; the rest tie.
                let rho = match k {
                    0 if i % 5 != 0 => 0.9,
                    1 => 0.1,
                    _ => 0.5,
                };
                r.outcome.rho.insert(role, rho);
            }
            ratings.add(&r, |_| None);
        }
        assert_eq!(ratings.episodes(), 30);
        let board = ratings.leaderboard();
        let rating = |p: &str| {
            board
                .ratings
                .iter()
                .find(|r| r.player == p)
                .and_then(|r| r.rating)
                .unwrap()
        };
        assert!(rating("a") > rating("r (party_2)"));
        assert!(rating("r (party_2)") > rating("b"));
        // Every pair of the 6 seats is one comparison per episode.
        let b = board.ratings.iter().find(|r| r.player == "b").unwrap();
        assert_eq!(b.comparisons, 30 * 5);
        assert_eq!(b.wins, 0.0);
        // Two scripted seats always tie: half a win each.
        let r2 = board
            .ratings
            .iter()
            .find(|r| r.player == "r (party_3)")
            .unwrap();
        assert!(r2.wins > 0.0);
    }

    #[test]
    fn scores_under_one_situation_key_are_compared_and_under_different_keys_not() {
        // A market eval's way: one score per call, the entrants' calls for one seat of one
        // setup under one key.
        let mut ratings = TableRatings::default();
        for i in 0..20 {
            let ep = format!("g{i}-m0");
            let key = situation(["market:45:0", ep.as_str(), "buyer_1"]);
            ratings.add_scores(key, [("a".to_string(), if i % 4 == 0 { 1.0 } else { 5.0 })]);
            ratings.add_scores(key, [("b".to_string(), 2.0)]);
            // `c` sat alone at its situations: compared with no one.
            let alone = situation(["market:45:0", ep.as_str(), "seller_1"]);
            ratings.add_scores(alone, [("c".to_string(), 9.0)]);
        }
        let board = ratings.leaderboard();
        let find = |p: &str| board.ratings.iter().find(|r| r.player == p).unwrap();
        assert_eq!(find("a").comparisons, 20);
        assert_eq!(find("a").wins, 15.0);
        assert!(find("a").rating.unwrap() > find("b").rating.unwrap());
        assert_eq!(find("c").comparisons, 0);
        assert_ne!(
            situation(["x", "y"]),
            situation(["xy", ""]),
            "parts are fields, not concatenated"
        );
    }
}
