//! "People and models": when a report's files hold the people's own dialogues (records whose
//! seats are both played by `human:<dialogue id>`, as `dealgym dialogues import` writes them)
//! or games people played at the play page (a seat `human:NAME`, as `dealgym play` logs them:
//! the person's side counts for the people, the player they faced as `NAME vs people`),
//! the people's deal rate, bargained ratio and endings per family and role, beside each model's
//! learner seat in that family and role — the human baseline a model's figures are read
//! against.
//!
//! A people's dialogue has no learner: it counts once per role, from that role's side
//! ([`EpisodeRecord::add_from_side_of`]). A model's episode counts once, from its learner seat,
//! under the learner's player name. Only families and roles the people played are shown. This
//! table is the people's dialogues' only home among the figures: `Collector::add` keeps them out
//! of the aggregates and the sensitivity (which group by a learner they do not have) and out of
//! the ratings and the cross-play matrix (two strangers of one dialogue are no player to compare).
//! Memory: one [`Aggregate`] per (family, role, player).

use std::collections::BTreeMap;

use crate::game::{OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::scenario::{Family, Role};
use crate::score::{Aggregate, Estimate, Weights, RATED_ENDINGS};

use super::sheet::{Cell, Column, Sheet};

/// The name the people's rows carry in the "player" column.
pub const PEOPLE: &str = "people";

/// Who a row is about: the people (sorted first) or a model's learner player.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    People,
    Player(String),
}

impl Who {
    fn name(&self) -> &str {
        match self {
            Who::People => PEOPLE,
            Who::Player(name) => name,
        }
    }
}

/// The people's and the models' aggregates per family and role, fed as records stream by.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeopleAndModels {
    rows: BTreeMap<(Family, Role, Who), Aggregate>,
    dialogues: usize,
}

impl PeopleAndModels {
    pub fn add(&mut self, r: &EpisodeRecord) {
        let weights = (r.kind() != OutcomeKind::Error).then(|| Weights::of(r.bootstrap_key()));
        if r.has_person() {
            // Each person's seat counts for the people, from its side; a player that faced
            // a person (at the play page) counts from its side as `NAME vs people`.
            self.dialogues += 1;
            for seat in Seat::BOTH {
                let who = if r.played_by_person(seat) {
                    Who::People
                } else {
                    Who::Player(format!("{} vs people", r.player_name(seat)))
                };
                let key = (r.family, r.seats[seat].role, who);
                let aggregate = self.rows.entry(key).or_default();
                r.add_from_side_of(seat, aggregate, weights.as_ref());
            }
        } else {
            let who = Who::Player(r.player_name(Seat::Learner).to_string());
            let key = (r.family, r.seats.learner.role, who);
            r.add_to(self.rows.entry(key).or_default(), weights.as_ref());
        }
    }

    /// Whether any people's dialogue was seen (the table and chart are shown only then).
    pub(crate) fn has_people(&self) -> bool {
        self.dialogues > 0
    }

    /// The people's dialogues seen.
    pub fn dialogues(&self) -> usize {
        self.dialogues
    }

    /// The rows shown: every (family, role) the people played, the people first, then each
    /// model's learner seat in that family and role, by name.
    fn shown(&self) -> impl Iterator<Item = (Family, Role, &str, &Aggregate)> {
        self.rows.iter().filter_map(|((family, role, who), a)| {
            let people = (*family, *role, Who::People);
            self.rows
                .contains_key(&people)
                .then_some((*family, *role, who.name(), a))
        })
    }

    /// The table: per family, role and player, episodes, the rate of each ending, and ρ of that
    /// side (over deals; per episode: mean, median and clipped mean), each with its 95%
    /// interval.
    pub fn table(&self) -> Sheet {
        let mut columns = vec![
            Column::new("family", "family"),
            Column::new("role", "role"),
            Column::new("player", "player"),
            Column::new("episodes", "episodes"),
        ];
        for kind in RATED_ENDINGS {
            columns.push(Column::new(
                format!("{} %", kind.name()),
                format!("{}_pct", kind.name()),
            ));
        }
        columns.push(Column::new("ρ over deals", "rho_deals"));
        columns.push(Column::new("ρ per episode (no deal = 0)", "mean_rho"));
        columns.push(Column::new("median ρ per episode", "median_rho"));
        columns.push(Column::new(
            "clipped mean ρ per episode",
            "clipped_mean_rho",
        ));
        let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
        let rows = self
            .shown()
            .map(|(family, role, who, a)| {
                let f = a.figures();
                let side = &f.seats[Seat::Learner];
                let mut row = vec![
                    Cell::Text(family.to_string()),
                    Cell::Text(role.name().to_string()),
                    Cell::Text(who.to_string()),
                    Cell::Count(a.scored() as u64),
                ];
                row.extend(f.endings.map(pct));
                row.push(Cell::Estimate(side.rho_deals, 3));
                row.push(Cell::Estimate(side.mean_rho, 3));
                row.push(Cell::Estimate(side.median_rho, 3));
                row.push(Cell::Estimate(side.clipped_rho, 3));
                row
            })
            .collect();
        Sheet {
            name: "people_and_models".into(),
            title: "People and models: the people's own dialogues (each once per role, from \
                    that side) beside each model's learner seat in that family and role"
                .into(),
            columns,
            rows,
        }
    }

    /// The stacked-bar rows of how episodes ended: one bar per shown row, `family · role ·
    /// player`, each ending's share of its scored episodes.
    pub(crate) fn outcome_rows(&self) -> Vec<(String, Vec<f64>)> {
        self.shown()
            .map(|(family, role, who, a)| {
                let n = a.scored().max(1) as f64;
                let shares = OutcomeKind::ALL
                    .iter()
                    .map(|k| {
                        if *k == OutcomeKind::Error {
                            0.0
                        } else {
                            a.count(*k) as f64 / n
                        }
                    })
                    .collect();
                (format!("{family} · {} · {who}", role.name()), shares)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, price_task, record_of, turn};

    /// A deal at `price` on a listing of 200 with B = 180 and C = 100 (|B − C| = 80): the
    /// buyer's ρ is (180 − price)/80, the seller's (price − 100)/80.
    fn deal_at(price: u32, players: [&str; 2]) -> EpisodeRecord {
        let s = price_task(200.0, 180.0, 100.0);
        let mut r = record_of(play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                turn("How about this?", &format!("[SUBMIT_DEAL] price:{price}")),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        ));
        r.seats.learner.player = players[0].into();
        r.seats.opponent.player = players[1].into();
        r.episode_id = format!("{}-{price}", players[0]);
        r.group_id = r.episode_id.clone();
        r
    }

    fn rows(t: &Sheet) -> Vec<(String, String, String, u64, f64)> {
        t.rows
            .iter()
            .map(|row| {
                let text = |i: usize| match &row[i] {
                    Cell::Text(t) => t.clone(),
                    other => panic!("not text: {other:?}"),
                };
                let Cell::Count(n) = row[3] else {
                    panic!("no count")
                };
                let mean = t.columns.iter().position(|c| c.key == "mean_rho").unwrap();
                let Cell::Estimate(Some(e), _) = row[mean] else {
                    panic!("no mean ρ")
                };
                (text(0), text(1), text(2), n, e.value)
            })
            .collect()
    }

    #[test]
    fn a_dialogue_counts_once_per_role_from_that_side_beside_the_models_learner_seat() {
        let mut table = PeopleAndModels::default();
        table.add(&deal_at(160, ["human:d1", "human:d1"]));
        table.add(&deal_at(120, ["human:d2", "human:d2"]));
        table.add(&deal_at(140, ["openai:m", "rule:boulware"]));
        // A family the people never played is not shown.
        let c = casino();
        let mut other = record_of(play(
            &c,
            learner_first_as(&c, Role::Agent1),
            &[turn("Bye.", "[WALK_AWAY]")],
        ));
        other.seats.learner.player = "openai:m".into();
        table.add(&other);
        assert!(table.has_people());
        let rows = rows(&table.table());
        let row = |role: &str, who: &str, mean: f64| {
            (
                "craigslist".to_string(),
                role.to_string(),
                who.to_string(),
                2,
                mean,
            )
        };
        // People as buyers: (180−160)/80 = 0.25 and (180−120)/80 = 0.75; as sellers 0.75, 0.25.
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0], row("buyer", "people", 0.5));
        assert_eq!(
            rows[1],
            (
                "craigslist".into(),
                "buyer".into(),
                "openai:m".into(),
                1,
                0.5
            )
        );
        assert_eq!(rows[2], row("seller", "people", 0.5));
        let charted = table.outcome_rows();
        assert_eq!(charted.len(), 3);
        assert_eq!(charted[0].0, "craigslist · buyer · people");
        let deal = OutcomeKind::ALL
            .iter()
            .position(|k| *k == OutcomeKind::Deal)
            .unwrap();
        assert_eq!(charted[0].1[deal], 1.0);
    }

    #[test]
    fn sides_are_not_averaged_away() {
        let mut table = PeopleAndModels::default();
        table.add(&deal_at(160, ["human:d1", "human:d1"]));
        let rows = rows(&table.table());
        assert_eq!(rows[0].4, 0.25, "the buyer's side");
        assert_eq!(rows[1].4, 0.75, "the seller's side");
    }

    #[test]
    fn without_people_there_is_nothing_to_show() {
        let mut table = PeopleAndModels::default();
        table.add(&deal_at(140, ["openai:m", "rule:boulware"]));
        assert!(!table.has_people());
        assert!(table.table().rows.is_empty());
    }
}
