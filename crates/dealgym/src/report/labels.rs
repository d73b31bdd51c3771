//! Counts of per-turn labels (label set → label, as a reward's labeller writes them on each
//! turn), per family, seat and label set. A record without labels adds nothing, and a report
//! with no labels has no label table.

use std::collections::BTreeMap;

use crate::game::Seat;
use crate::record::{EpisodeRecord, TurnRecord};

use super::sheet::{Cell, Column, Sheet};

/// The labels of one turn, as (label set, label).
fn turn_labels(turn: &TurnRecord) -> impl Iterator<Item = (&str, &str)> {
    turn.labels
        .iter()
        .map(|(set, label)| (set.as_str(), label.as_str()))
}

/// Label counts, fed one record at a time.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelCounts {
    counts: BTreeMap<(String, Seat, String, String), u64>,
}

impl LabelCounts {
    pub fn add(&mut self, r: &EpisodeRecord) {
        for turn in &r.turns {
            for (set, label) in turn_labels(turn) {
                self.count(&r.family.to_string(), turn.seat, set, label);
            }
        }
    }

    /// Count one label of a turn by `seat` in `family`.
    pub fn count(&mut self, family: &str, seat: Seat, set: &str, label: &str) {
        *self
            .counts
            .entry((family.into(), seat, set.into(), label.into()))
            .or_default() += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// family, seat, label set, label, turns, and the share of the turns of that family, seat
    /// and set that carry the label.
    pub fn table(&self) -> Sheet {
        let mut totals: BTreeMap<(&str, Seat, &str), u64> = BTreeMap::new();
        for ((family, seat, set, _), n) in &self.counts {
            *totals.entry((family, *seat, set)).or_default() += n;
        }
        let rows = self
            .counts
            .iter()
            .map(|((family, seat, set, label), n)| {
                let total = totals[&(family.as_str(), *seat, set.as_str())];
                vec![
                    Cell::Text(family.clone()),
                    Cell::Text(seat.to_string()),
                    Cell::Text(set.clone()),
                    Cell::Text(label.clone()),
                    Cell::Count(*n),
                    Cell::Number(Some(100.0 * *n as f64 / total as f64), 1),
                ]
            })
            .collect();
        Sheet {
            name: "labels".into(),
            title: "Turn labels".into(),
            columns: vec![
                Column::new("family", "family"),
                Column::new("seat", "seat"),
                Column::new("label set", "label_set"),
                Column::new("label", "label"),
                Column::new("turns", "turns"),
                Column::new("share %", "share_pct"),
            ],
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_counted_with_their_share_of_the_set() {
        let mut c = LabelCounts::default();
        assert!(c.is_empty());
        for label in ["anchor", "anchor", "concede"] {
            c.count("casino", Seat::Learner, "tactic", label);
        }
        let csv = c.table().csv();
        assert_eq!(
            csv,
            "family,seat,label_set,label,turns,share_pct\n\
             casino,learner,tactic,anchor,2,66.666667\n\
             casino,learner,tactic,concede,1,33.333333\n"
        );
    }
}
