//! The cross-play matrix: for every player (learner seat, the rows) against every opponent (the
//! columns), the learner seat's bargained ratio over deals with the deal rate beside it (as the
//! papers report them) and its ρ per episode (no deal = 0), each with its bootstrap 95%
//! interval — per family and over all families. Fed one record at a time; the figures and intervals are
//! [`Aggregate`]'s (the one home of aggregates), so they agree with `run`'s summary.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::game::{OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::scenario::Family;
use crate::score::{Aggregate, Estimate, Weights};

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The learner seat's player (its eval name, else its spec).
    pub learner: String,
    /// The opponent seat's player.
    pub opponent: String,
    /// Episodes played, backend errors included.
    pub episodes: usize,
    /// Backend errors (left out of the figures).
    pub errors: usize,
    /// The learner seat's mean ρ over the deals: the bargained ratio as the papers report it.
    pub rho_deals: Option<Estimate>,
    /// The learner seat's mean ρ over the scored episodes, no deal counting with its ρ (0 by
    /// default).
    pub mean_rho: Option<Estimate>,
    /// Share of the scored episodes that ended in a deal (a fraction): DialogXpert's SR.
    pub deal_rate: Option<Estimate>,
    /// DialogXpert's SL for the learner seat (price episodes where it was the buyer; no deal
    /// = 0); absent where there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sl: Option<Estimate>,
    /// DialogXpert's AT: the paper's turns (exchanges) per scored episode, one that did not
    /// end in a deal counting at the turn cap (`max_rounds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_turns: Option<Estimate>,
    /// The learner seat's mean regret (the oracle's ρ less its own, `score::oracle`) over the
    /// episodes where it faced a built-in rule the oracle searches; absent where there are
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regret: Option<Estimate>,
}

/// (learner name, opponent name) → the aggregate of their episodes.
type Cells = BTreeMap<(String, String), Aggregate>;

/// The streaming matrix: `CrossPlay::add` each record, read `CrossPlay::cells` when a table
/// is due.
#[derive(Debug, Clone, Default)]
pub struct CrossPlay {
    families: BTreeMap<Family, Cells>,
    all: Cells,
}

impl CrossPlay {
    /// Add one episode to its family's cell and to the all-families cell.
    pub(crate) fn add(&mut self, record: &EpisodeRecord) {
        let cell = (
            record.player_name(Seat::Learner).to_string(),
            record.player_name(Seat::Opponent).to_string(),
        );
        let family = self.families.entry(record.family).or_default();
        let weights = Weights::of(record.bootstrap_key());
        // Read from the record once, for both cells.
        let values = record.values_from_side_of(Seat::Learner);
        family
            .entry(cell.clone())
            .or_default()
            .add_weighted(&weights, &values);
        self.all
            .entry(cell)
            .or_default()
            .add_weighted(&weights, &values);
    }

    /// The aggregate of `learner` against `opponent` over every family, if they met.
    pub(crate) fn aggregate(&self, learner: &str, opponent: &str) -> Option<&Aggregate> {
        self.all.get(&(learner.to_string(), opponent.to_string()))
    }

    /// Every episode `learner` played in the learner seat on `family`, against any opponent,
    /// pooled into one aggregate.
    pub(crate) fn pooled(&self, family: Family, learner: &str) -> Aggregate {
        let mut pooled = Aggregate::default();
        for ((l, _), a) in self.families.get(&family).into_iter().flatten() {
            if l == learner {
                pooled.absorb(a);
            }
        }
        pooled
    }

    /// The families with at least one episode, in their order.
    pub(crate) fn families(&self) -> Vec<Family> {
        self.families.keys().copied().collect()
    }

    /// The row names (learner seat) and column names (opponent seat) of every family, sorted.
    pub(crate) fn players(&self) -> (Vec<String>, Vec<String>) {
        let rows = self.all.keys().map(|(l, _)| l.clone());
        let columns = self.all.keys().map(|(_, o)| o.clone());
        let unique = |names: Vec<String>| {
            let mut names = names;
            names.sort();
            names.dedup();
            names
        };
        (unique(rows.collect()), unique(columns.collect()))
    }

    /// The cells of one family (`None`: all families), row by row; only cells with episodes.
    pub(crate) fn cells(&self, family: Option<Family>) -> Vec<Cell> {
        let empty = Cells::new();
        let cells = match family {
            Some(f) => self.families.get(&f).unwrap_or(&empty),
            None => &self.all,
        };
        cells
            .iter()
            .map(|((learner, opponent), aggregate)| {
                let figures = aggregate.figures();
                Cell {
                    learner: learner.clone(),
                    opponent: opponent.clone(),
                    episodes: aggregate.episodes(),
                    errors: aggregate.count(OutcomeKind::Error),
                    rho_deals: figures.seats.learner.rho_deals,
                    mean_rho: figures.seats.learner.mean_rho,
                    deal_rate: figures.rate(OutcomeKind::Deal),
                    sl: figures.seats.learner.sl,
                    average_turns: figures.average_turns,
                    regret: figures.seats.learner.regret,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::scenario::Role;

    /// An episode on L = 125, B = 100, C = 60 where the learner (the buyer) either buys at
    /// `price` (ρ_learner = (100 − price)/40) or walks away (ρ = 0).
    fn episode(learner: &str, opponent: &str, price: Option<u32>) -> EpisodeRecord {
        let s = price_task(125.0, 100.0, 60.0);
        let moves = match price {
            Some(p) => vec![
                turn("Offer.", &format!("[SUBMIT_DEAL] price:{p}")),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
            None => vec![turn("Bye.", "[WALK_AWAY]")],
        };
        let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        r.seats.learner.name = Some(learner.to_string());
        r.seats.opponent.name = Some(opponent.to_string());
        r
    }

    #[test]
    fn each_cell_has_the_learners_mean_rho_and_the_deal_rate_of_its_pairing() {
        let mut m = CrossPlay::default();
        // a vs x: deals at 70 (ρ 0.75) and 90 (ρ 0.25), and a walk-away: ρ over deals 0.5,
        // deals 2/3, ρ per episode 1/3.
        for price in [Some(70), Some(90), None] {
            m.add(&episode("a", "x", price));
        }
        // b vs x: one deal at 80 (ρ 0.5). A record without names falls back to the specs.
        m.add(&episode("b", "x", Some(80)));
        let mut unnamed = episode("b", "x", Some(80));
        unnamed.seats.learner.name = None;
        let seat = serde_json::to_value(&unnamed.seats.learner).unwrap();
        assert!(
            seat.get("name").is_none(),
            "a run's record has no name key: {seat}"
        );
        m.add(&unnamed);

        let cells = m.cells(None);
        assert_eq!(cells.len(), 3, "{cells:?}");
        let ax = &cells[1];
        assert_eq!((ax.learner.as_str(), ax.opponent.as_str()), ("a", "x"));
        assert_eq!((ax.episodes, ax.errors), (3, 0));
        let rho = ax.mean_rho.unwrap();
        assert!((rho.value - 1.0 / 3.0).abs() < 1e-12);
        assert!(rho.low <= rho.value && rho.value <= rho.high);
        assert!((ax.deal_rate.unwrap().value - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(ax.rho_deals.unwrap().value, 0.5);
        assert_eq!(ax.rho_deals.unwrap().n, 2);
        assert_eq!(cells[2].mean_rho.unwrap().value, 0.5);
        assert_eq!(cells[0].learner, "", "fixtures' records have an empty spec");
        assert_eq!(m.cells(Some(Family::Craigslist)), cells);
        assert!(m.cells(Some(Family::Casino)).is_empty());
        assert_eq!(m.families(), [Family::Craigslist]);
        assert_eq!(
            m.players(),
            (vec!["".into(), "a".into(), "b".into()], vec!["x".into()])
        );
    }
}
