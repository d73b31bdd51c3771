//! The groups a report's figures are over: every episode, then per family, learner player,
//! opponent player, opponent persona (how the CaSiNo harness paper breaks down every table,
//! §4.2 and Tables 2–3: the persona conditions the opponent), learner persona, learner role, and
//! family × learner player (the charts' bars). One [`Aggregate`] per group, fed as records
//! stream by: memory grows with the number of distinct groups, never with the episodes. An
//! episode's bootstrap weights and values are drawn once and shared by its groups.

use std::collections::BTreeMap;

use crate::game::Seat;
use crate::record::EpisodeRecord;
use crate::score::{Aggregate, EpisodeValues, Weights};

/// What episodes are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Dimension {
    All,
    Family,
    /// The learner seat's player.
    Player,
    /// The opponent seat's player.
    Opponent,
    /// The opponent's persona (`none` without one), as the record names it
    /// (`seats.opponent.persona`).
    OpponentPersona,
    /// The learner's persona (`none` without one).
    LearnerPersona,
    /// The learner's role.
    Role,
    /// Family and learner player together.
    FamilyPlayer,
}

impl Dimension {
    pub const ALL: [Dimension; 8] = [
        Dimension::All,
        Dimension::Family,
        Dimension::Player,
        Dimension::Opponent,
        Dimension::OpponentPersona,
        Dimension::LearnerPersona,
        Dimension::Role,
        Dimension::FamilyPlayer,
    ];

    /// The name in file names and CSV: `family`, `family_player`, …
    pub fn name(self) -> &'static str {
        match self {
            Dimension::All => "all",
            Dimension::Family => "family",
            Dimension::Player => "player",
            Dimension::Opponent => "opponent",
            Dimension::OpponentPersona => "opponent_persona",
            Dimension::LearnerPersona => "learner_persona",
            Dimension::Role => "role",
            Dimension::FamilyPlayer => "family_player",
        }
    }

    /// A heading for the group's table.
    pub fn title(self) -> &'static str {
        match self {
            Dimension::All => "All episodes",
            Dimension::Family => "Per family",
            Dimension::Player => "Per learner player",
            Dimension::Opponent => "Per opponent player",
            Dimension::OpponentPersona => "Per opponent persona",
            Dimension::LearnerPersona => "Per learner persona",
            Dimension::Role => "Per learner role",
            Dimension::FamilyPlayer => "Per family and learner player",
        }
    }

    /// The group of a record along this dimension.
    pub(crate) fn group_of(self, r: &EpisodeRecord) -> String {
        match self {
            Dimension::All => "all".to_string(),
            Dimension::Family => r.family.to_string(),
            Dimension::Player => r.player_name(Seat::Learner).to_string(),
            Dimension::Opponent => r.player_name(Seat::Opponent).to_string(),
            Dimension::OpponentPersona => persona_of(r, Seat::Opponent),
            Dimension::LearnerPersona => persona_of(r, Seat::Learner),
            Dimension::Role => r.seats.learner.role.name().to_string(),
            Dimension::FamilyPlayer => {
                format!("{} · {}", r.family, r.player_name(Seat::Learner))
            }
        }
    }
}

/// A seat's persona as the groups name it: `none` without one.
fn persona_of(r: &EpisodeRecord, seat: Seat) -> String {
    r.seats[seat]
        .persona
        .clone()
        .unwrap_or_else(|| "none".to_string())
}

/// One aggregate per group, per dimension.
#[derive(Debug, Clone, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<(Dimension, String), Aggregate>,
}

impl Groups {
    /// Add an episode to each of its groups.
    #[cfg(test)]
    pub fn add(&mut self, r: &EpisodeRecord) {
        let weights =
            (r.kind() != crate::game::OutcomeKind::Error).then(|| Weights::of(r.bootstrap_key()));
        self.add_weighted(r, weights.as_ref());
    }

    /// [`Groups::add`] with the episode's weights already drawn (`Weights::of` its
    /// `bootstrap_key`; `None` for a backend error, which is only counted), so that other
    /// tables can share them.
    pub fn add_weighted(&mut self, r: &EpisodeRecord, weights: Option<&Weights>) {
        let values: EpisodeValues = r.values_from_side_of(Seat::Learner);
        for dimension in Dimension::ALL {
            let aggregate = self
                .groups
                .entry((dimension, dimension.group_of(r)))
                .or_default();
            match weights {
                Some(w) => aggregate.add_weighted(w, &values),
                None => aggregate.add(r.bootstrap_key(), &values),
            }
        }
    }

    /// The groups along one dimension, by name.
    pub fn of(&self, dimension: Dimension) -> impl Iterator<Item = (&str, &Aggregate)> {
        self.groups
            .range((dimension, String::new())..)
            .take_while(move |((d, _), _)| *d == dimension)
            .map(|((_, name), a)| (name.as_str(), a))
    }

    /// Every episode.
    pub fn all(&self) -> Aggregate {
        self.of(Dimension::All)
            .next()
            .map(|(_, a)| a.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::game::OutcomeKind;
    use crate::scenario::Role;

    #[test]
    fn an_episode_joins_one_group_per_dimension() {
        let s = price_task(125.0, 100.0, 60.0);
        let mut r = record_of(play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[turn("Bye.", "[WALK_AWAY]")],
        ));
        r.seats.learner.player = "openai:m@local".into();
        r.seats.opponent.player = "rule:linear".into();
        let mut groups = Groups::default();
        groups.add(&r);
        r.episode_id = "g1-m0".into();
        r.seats.learner.persona = Some("tough".into());
        groups.add(&r);
        let names = |d: Dimension| -> Vec<(String, usize)> {
            groups
                .of(d)
                .map(|(n, a)| (n.to_string(), a.episodes()))
                .collect()
        };
        assert_eq!(names(Dimension::All), [("all".to_string(), 2)]);
        assert_eq!(names(Dimension::Family), [("craigslist".to_string(), 2)]);
        assert_eq!(
            names(Dimension::Player),
            [("openai:m@local".to_string(), 2)]
        );
        assert_eq!(names(Dimension::Opponent), [("rule:linear".to_string(), 2)]);
        assert_eq!(
            names(Dimension::LearnerPersona),
            [("none".to_string(), 1), ("tough".to_string(), 1)]
        );
        assert_eq!(names(Dimension::OpponentPersona), [("none".to_string(), 2)]);
        assert_eq!(names(Dimension::Role), [("buyer".to_string(), 2)]);
        assert_eq!(
            names(Dimension::FamilyPlayer),
            [("craigslist · openai:m@local".to_string(), 2)]
        );
        assert_eq!(groups.all().scored(), 2);
    }

    #[test]
    fn the_opponent_persona_rows_partition_the_episodes() {
        // Seven episodes: opponent personas anchoring ×3, cooperative ×2, none ×2 (one a
        // backend error); the learner's persona is another (tough, or none) and must not
        // decide the opponent's row.
        let s = price_task(125.0, 100.0, 60.0);
        let opponents = [
            Some("anchoring"),
            Some("cooperative"),
            None,
            Some("anchoring"),
            Some("cooperative"),
            Some("anchoring"),
            None,
        ];
        let mut groups = Groups::default();
        for (i, opponent) in opponents.iter().enumerate() {
            let mut e =
                crate::game::Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
            if i == 6 {
                e.fail_backend(Seat::Learner, "HTTP 500").unwrap();
            } else {
                e.step(turn("Bye.", "[WALK_AWAY]").as_str()).unwrap();
            }
            let mut r = record_of(e);
            r.episode_id = format!("g{i}-m0");
            r.group_id = format!("g{i}");
            r.seats.opponent.persona = opponent.map(str::to_string);
            r.seats.learner.persona = (i % 2 == 0).then(|| "tough".to_string());
            groups.add(&r);
        }
        let rows: Vec<(String, usize)> = groups
            .of(Dimension::OpponentPersona)
            .map(|(n, a)| (n.to_string(), a.episodes()))
            .collect();
        assert_eq!(
            rows,
            [
                ("anchoring".to_string(), 3),
                ("cooperative".to_string(), 2),
                ("none".to_string(), 2)
            ]
        );
        // A partition: the rows' episodes, errors and scored episodes add up to all's.
        let all = groups.all();
        let sum = |f: fn(&Aggregate) -> usize| -> usize {
            groups
                .of(Dimension::OpponentPersona)
                .map(|(_, a)| f(a))
                .sum()
        };
        assert_eq!(sum(Aggregate::episodes), all.episodes());
        assert_eq!(sum(Aggregate::scored), all.scored());
        assert_eq!(sum(|a| a.count(OutcomeKind::Error)), 1);
    }
}
