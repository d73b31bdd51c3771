//! The groups a report's figures are over: every episode, then per family, learner player,
//! opponent player, learner persona, learner role, and family × learner player (the charts'
//! bars). One [`Aggregate`] per group, fed as records stream by: memory grows with the number
//! of distinct groups, never with the episodes. An episode's bootstrap weights are drawn once
//! and shared by its groups.

use std::collections::BTreeMap;

use crate::game::OutcomeKind;
use crate::game::Seat;
use crate::record::EpisodeRecord;
use crate::score::{Aggregate, Weights};

/// What episodes are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dimension {
    All,
    Family,
    /// The learner seat's player.
    Player,
    /// The opponent seat's player.
    Opponent,
    /// The learner's persona (`none` without one).
    Persona,
    /// The learner's role.
    Role,
    /// Family and learner player together.
    FamilyPlayer,
}

impl Dimension {
    pub const ALL: [Dimension; 7] = [
        Dimension::All,
        Dimension::Family,
        Dimension::Player,
        Dimension::Opponent,
        Dimension::Persona,
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
            Dimension::Persona => "persona",
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
            Dimension::Persona => "Per learner persona",
            Dimension::Role => "Per learner role",
            Dimension::FamilyPlayer => "Per family and learner player",
        }
    }

    /// The group of a record along this dimension.
    pub fn group_of(self, r: &EpisodeRecord) -> String {
        match self {
            Dimension::All => "all".to_string(),
            Dimension::Family => r.family.to_string(),
            Dimension::Player => r.player_name(Seat::Learner).to_string(),
            Dimension::Opponent => r.player_name(Seat::Opponent).to_string(),
            Dimension::Persona => r
                .seats
                .learner
                .persona
                .clone()
                .unwrap_or_else(|| "none".to_string()),
            Dimension::Role => r.seats.learner.role.name().to_string(),
            Dimension::FamilyPlayer => {
                format!("{} · {}", r.family, r.player_name(Seat::Learner))
            }
        }
    }
}

/// One aggregate per group, per dimension.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    groups: BTreeMap<(Dimension, String), Aggregate>,
}

impl Groups {
    /// Add an episode to each of its groups.
    pub fn add(&mut self, r: &EpisodeRecord) {
        let kind = r.kind();
        let weights = (kind != OutcomeKind::Error).then(|| Weights::of(r.bootstrap_key()));
        for dimension in Dimension::ALL {
            let aggregate = self
                .groups
                .entry((dimension, dimension.group_of(r)))
                .or_default();
            r.add_to(aggregate, weights.as_ref());
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
            names(Dimension::Persona),
            [("none".to_string(), 1), ("tough".to_string(), 1)]
        );
        assert_eq!(names(Dimension::Role), [("buyer".to_string(), 2)]);
        assert_eq!(
            names(Dimension::FamilyPlayer),
            [("craigslist · openai:m@local".to_string(), 2)]
        );
        assert_eq!(groups.all().scored(), 2);
    }
}
