//! Post-hoc threshold sensitivity (the seed BATNA paper, Table 4): for each τ, the learner's
//! deal rate and mean ρ had every deal with learner ρ < τ been refused — from the records
//! alone, no new episodes. Per family and over all.
//!
//! A refused deal becomes no deal for the learner: its ρ becomes the learner's no-deal ρ
//! ([`no_deal_rho`]); the other episodes keep their ρ. Rates and means are over the scored
//! episodes (backend errors left out, as everywhere). The row with no τ is the file as it is.

use std::collections::BTreeMap;

use crate::game::OutcomeKind;
use crate::record::EpisodeRecord;

use super::tables::{Cell, Column, Table};

/// The learner's ρ without a deal: what the engine computed when it scored the episode
/// (`metrics.seats.learner.no_deal_rho`, the setup's no-deal value over the seat's scale),
/// and 0 where the setup's no-deal value is 0 (the metric is then absent: ρ is 0 in every
/// domain).
pub fn no_deal_rho(r: &EpisodeRecord) -> f64 {
    r.outcome.metrics.seats.learner.no_deal_rho.unwrap_or(0.0)
}

/// One group's counts: the file's own, then per τ.
#[derive(Debug, Clone, Default)]
struct Counts {
    scored: u64,
    deals: u64,
    rho: f64,
    /// Per τ: deals kept (learner ρ ≥ τ) and Σ ρ after refusing the others.
    kept: Vec<u64>,
    rho_at: Vec<f64>,
}

/// The sensitivity table, fed one record at a time.
#[derive(Debug, Clone)]
pub struct Sensitivity {
    taus: Vec<f64>,
    groups: BTreeMap<String, Counts>,
}

impl Sensitivity {
    pub fn new(taus: &[f64]) -> Sensitivity {
        Sensitivity {
            taus: taus.to_vec(),
            groups: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, r: &EpisodeRecord) {
        let kind = r.kind();
        if kind == OutcomeKind::Error {
            return;
        }
        let rho = r.outcome.outcome.rho.learner;
        let deal = kind == OutcomeKind::Deal;
        let refused = no_deal_rho(r);
        for group in [r.family.to_string(), "all".to_string()] {
            let n = self.taus.len();
            let c = self.groups.entry(group).or_insert_with(|| Counts {
                kept: vec![0; n],
                rho_at: vec![0.0; n],
                ..Counts::default()
            });
            c.scored += 1;
            c.deals += u64::from(deal);
            c.rho += rho;
            for (i, tau) in self.taus.iter().enumerate() {
                let kept = deal && rho >= *tau;
                c.kept[i] += u64::from(kept);
                c.rho_at[i] += if deal && !kept { refused } else { rho };
            }
        }
    }

    /// family, τ (empty: as recorded), scored episodes, deals, deal %, mean learner ρ.
    pub fn table(&self) -> Table {
        let columns = vec![
            Column::new("family", "family"),
            Column::new("τ", "tau"),
            Column::new("episodes", "episodes"),
            Column::new("deals", "deals"),
            Column::new("deal %", "deal_pct"),
            Column::new("mean ρ learner", "mean_rho_learner"),
        ];
        let mut rows = Vec::new();
        // "all" last, like the other tables.
        let ordered = self
            .groups
            .iter()
            .filter(|(g, _)| g.as_str() != "all")
            .chain(self.groups.iter().filter(|(g, _)| g.as_str() == "all"));
        for (group, c) in ordered {
            let n = c.scored as f64;
            let row = |tau: Option<f64>, deals: u64, rho: f64| {
                vec![
                    Cell::Text(group.clone()),
                    Cell::Number(tau, 2),
                    Cell::Count(c.scored),
                    Cell::Count(deals),
                    Cell::Number(Some(100.0 * deals as f64 / n), 1),
                    Cell::Number(Some(rho / n), 3),
                ]
            };
            rows.push(row(None, c.deals, c.rho));
            for (i, tau) in self.taus.iter().enumerate() {
                rows.push(row(Some(*tau), c.kept[i], c.rho_at[i]));
            }
        }
        Table {
            name: "sensitivity".into(),
            title: "Threshold sensitivity (learner)".into(),
            columns,
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::scenario::Role;

    /// A deal at 80 on B = 100, C = 60: learner u = 20, ρ = 20/40 = 0.5; the setup's no-deal
    /// value `v`.
    fn deal(v: f64) -> EpisodeRecord {
        let s = price_task(125.0, 100.0, 60.0);
        let mut setup = learner_first_as(&s, Role::Buyer);
        setup.no_deal_value = v;
        record_of(play(
            &s,
            setup,
            &[
                turn("80?", "[SUBMIT_DEAL] price:80"),
                turn("Ok.", "[ACCEPT_DEAL]"),
            ],
        ))
    }

    #[test]
    fn the_no_deal_rho_is_the_no_deal_value_on_the_seats_scale() {
        assert_eq!(no_deal_rho(&deal(0.0)), 0.0);
        // v = 5 on the buyer's scale |B − C| = 40: 5/40, as the engine scored it.
        assert_eq!(no_deal_rho(&deal(5.0)), 5.0 / 40.0);
    }

    #[test]
    fn a_refused_deal_counts_its_no_deal_rho() {
        let r = deal(5.0);
        let mut s = Sensitivity::new(&[0.4, 0.6]);
        s.add(&r);
        let csv = s.table().csv();
        // As recorded: 1 deal, ρ 0.5; τ 0.4 keeps it; τ 0.6 refuses it → ρ 5/40 = 0.125.
        assert!(
            csv.contains("craigslist,,1,1,100.000000,0.500000\n"),
            "{csv}"
        );
        assert!(
            csv.contains("craigslist,0.400000,1,1,100.000000,0.500000\n"),
            "{csv}"
        );
        assert!(
            csv.contains("craigslist,0.600000,1,0,0.000000,0.125000\n"),
            "{csv}"
        );
    }
}
