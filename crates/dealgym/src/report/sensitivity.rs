//! Post-hoc threshold sensitivity (the seed BATNA paper, App. C and Table 4): for each τ, the
//! learner's deal rate and bargained ratio had every deal with learner ρ < τ been refused —
//! from the records alone, no new episodes. Per family, then Table 4's "Avg": the mean of the
//! multi-item families' figures, each family counting once ([`mean_over`] over
//! [`multi_item_groups`]: CaSiNo, DnD, JI) — never a pool of every family's episodes, which
//! would weigh families by their size and mix the price tasks (where the paper applies no
//! threshold) into it.
//!
//! A refused deal becomes no deal for the learner (it walks away rather than accept, the BATNA
//! principle): its ρ becomes the learner's no-deal ρ ([`no_deal_rho`]); the other episodes keep
//! their ρ. Each row gives, over the scored episodes (backend errors left out, as everywhere):
//! the deals kept and their share (Table 4's "Deal%"), the mean ρ over the kept deals — the
//! paper's "BR", "mean accepted quality", which rises with τ — and beside it the mean ρ per
//! episode, a refused deal and every other episode without a deal counting with its ρ (0 by
//! default). The row with no τ is the file as it is. Every figure comes from
//! [`Aggregate`] (one per group and τ, fed only the ending and the learner's ρ, keeping no
//! median), with its bootstrap interval.

use std::collections::BTreeMap;

use crate::game::{OutcomeKind, PerSeat, Seat};
use crate::record::EpisodeRecord;
use crate::scenario::Family;
use crate::score::{
    mean_over, multi_item_groups, Aggregate, EpisodeValues, FigureId, Weights, MULTI_ITEM_AVERAGE,
};

use super::sheet::{Cell, Column, Sheet};

/// The learner's ρ without a deal: what the engine computed when it scored the episode
/// (`metrics.seats.learner.no_deal_rho`, the setup's no-deal value over the seat's scale),
/// and 0 where the setup's no-deal value is 0 (the metric is then absent: ρ is 0 in every
/// domain).
pub(crate) fn no_deal_rho(r: &EpisodeRecord) -> f64 {
    r.outcome.metrics.seats.learner.no_deal_rho.unwrap_or(0.0)
}

/// The sensitivity table, fed one record at a time.
#[derive(Debug, Clone)]
pub(crate) struct Sensitivity {
    taus: Vec<f64>,
    /// Per family: the file as recorded, then one aggregate per τ.
    groups: BTreeMap<Family, Vec<Aggregate>>,
}

impl Sensitivity {
    pub fn new(taus: &[f64]) -> Sensitivity {
        Sensitivity {
            taus: taus.to_vec(),
            groups: BTreeMap::new(),
        }
    }

    /// Take in one record; `weights` are its bootstrap weights where already drawn
    /// (`Weights::of` its `bootstrap_key`), else they are drawn here.
    pub fn add(&mut self, r: &EpisodeRecord, weights: Option<&Weights>) {
        let kind = r.kind();
        if kind == OutcomeKind::Error {
            return;
        }
        let drawn;
        let weights = match weights {
            Some(w) => w,
            None => {
                drawn = Weights::of(r.bootstrap_key());
                &drawn
            }
        };
        let rho = r.outcome.outcome.rho.learner;
        let recorded = EpisodeValues::of_ending(kind, PerSeat::new(rho, 0.0));
        let refused =
            EpisodeValues::of_ending(OutcomeKind::WalkAway, PerSeat::new(no_deal_rho(r), 0.0));
        let deal = kind == OutcomeKind::Deal;
        let n = self.taus.len();
        let aggregates = self
            .groups
            .entry(r.family)
            .or_insert_with(|| vec![Aggregate::without_median(); n + 1]);
        aggregates[0].add_weighted(weights, &recorded);
        for (tau, aggregate) in self.taus.iter().zip(&mut aggregates[1..]) {
            let kept = !deal || rho >= *tau;
            aggregate.add_weighted(weights, if kept { &recorded } else { &refused });
        }
    }

    /// The multi-item families' aggregates at row `i` (0: as recorded, then one per τ), where
    /// there are two or more of them.
    fn multi_item(&self, i: usize) -> Option<Vec<&Aggregate>> {
        multi_item_groups(self.groups.iter().map(|(f, a)| (*f, &a[i])))
    }

    /// family, τ (empty: as recorded), scored episodes, deals, deal %, the learner's ρ over
    /// deals and ρ per episode.
    pub fn table(&self) -> Sheet {
        let columns = vec![
            Column::new("family", "family"),
            Column::new("τ", "tau"),
            Column::new("episodes", "episodes"),
            Column::new("deals", "deals"),
            Column::new("deal %", "deal_pct"),
            Column::new("ρ over deals learner", "rho_deals_learner"),
            Column::new("ρ per episode (no deal = 0) learner", "mean_rho_learner"),
        ];
        let mut rows = Vec::new();
        let taus = || std::iter::once(None).chain(self.taus.iter().copied().map(Some));
        for (family, aggregates) in &self.groups {
            for (tau, a) in taus().zip(aggregates) {
                let f = a.figures();
                let learner = &f.seats[Seat::Learner];
                rows.push(vec![
                    Cell::Text(family.to_string()),
                    Cell::Number(tau, 2),
                    Cell::Count(a.scored() as u64),
                    Cell::Count(a.count(OutcomeKind::Deal) as u64),
                    Cell::Estimate(f.rate(OutcomeKind::Deal).map(|e| e.scaled(100.0)), 1),
                    Cell::Estimate(learner.rho_deals, 3),
                    Cell::Estimate(learner.mean_rho, 3),
                ]);
            }
        }
        // Table 4's "Avg", last: the multi-item families' figures, each family once.
        for (i, tau) in taus().enumerate() {
            let Some(families) = self.multi_item(i) else {
                break;
            };
            let mean = |figure| mean_over(&families, figure);
            let sum = |count: &dyn Fn(&Aggregate) -> usize| {
                families.iter().map(|a| count(a) as u64).sum::<u64>()
            };
            rows.push(vec![
                Cell::Text(MULTI_ITEM_AVERAGE.to_string()),
                Cell::Number(tau, 2),
                Cell::Count(sum(&|a| a.scored())),
                Cell::Count(sum(&|a| a.count(OutcomeKind::Deal))),
                Cell::Estimate(
                    mean(FigureId::Rate(OutcomeKind::Deal)).map(|e| e.scaled(100.0)),
                    1,
                ),
                Cell::Estimate(mean(FigureId::RhoDeals(Seat::Learner)), 3),
                Cell::Estimate(mean(FigureId::MeanRho(Seat::Learner)), 3),
            ]);
        }
        Sheet {
            name: "sensitivity".into(),
            title: "Threshold sensitivity (learner): deals with ρ < τ refused; ρ over the deals \
                    kept; the multi-item average is the families' mean (Table 4's Avg)"
                .into(),
            columns,
            rows,
        }
    }

    /// The learner's ρ over deals per τ (the recorded row first) in one family, or over the
    /// multi-item families (`None`), for tests.
    #[cfg(test)]
    pub fn rho_deals(&self, family: Option<Family>) -> Vec<Option<crate::score::Estimate>> {
        match family {
            Some(family) => self
                .groups
                .get(&family)
                .map_or_else(Vec::new, |aggregates| {
                    aggregates
                        .iter()
                        .map(|a| a.figures().seats.learner.rho_deals)
                        .collect()
                }),
            None => (0..=self.taus.len())
                .map_while(|i| self.multi_item(i))
                .map(|families| mean_over(&families, FigureId::RhoDeals(Seat::Learner)))
                .collect(),
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
        s.add(&r, None);
        let csv = s.table().csv();
        // As recorded: 1 deal, ρ 0.5 over deals and per episode; τ 0.4 keeps it; τ 0.6 refuses
        // it → no deal (no ρ over deals), ρ per episode 5/40 = 0.125. One episode: every
        // interval is a point.
        let point = |x: &str| format!("{x},{x},{x}");
        for (tau, deals, pct, over_deals, per_episode) in [
            ("", 1, "100.000000", "0.500000", "0.500000"),
            ("0.400000", 1, "100.000000", "0.500000", "0.500000"),
            ("0.600000", 0, "0.000000", "", "0.125000"),
        ] {
            let over_deals = if over_deals.is_empty() {
                ",,".to_string()
            } else {
                point(over_deals)
            };
            let line = format!(
                "craigslist,{tau},1,{deals},{},{over_deals},{}\n",
                point(pct),
                point(per_episode)
            );
            assert!(csv.contains(&line), "{line} in {csv}");
        }
    }

    /// A record of `family` ending as `kind` with the learner's ρ `rho`, in its own group `i`
    /// (the sensitivity reads only the family, the ending and the learner's ρ).
    fn ended(family: Family, kind: OutcomeKind, rho: f64, i: usize) -> EpisodeRecord {
        let action = if kind == OutcomeKind::Deal {
            "[SUBMIT_DEAL] price:80"
        } else {
            "[WALK_AWAY]"
        };
        let s = price_task(125.0, 100.0, 60.0);
        let mut moves = vec![turn("Offer.", action)];
        if kind == OutcomeKind::Deal {
            moves.push(turn("Ok.", "[ACCEPT_DEAL]"));
        }
        let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        assert_eq!(r.kind(), kind);
        r.family = family;
        r.outcome.outcome.rho.learner = rho;
        r.episode_id = format!("g{i}-m0");
        r.group_id = format!("g{i}");
        r
    }

    #[test]
    fn the_average_row_is_table_4s_mean_over_the_multi_item_families() {
        // BATNA App. C, Table 4: its "Avg" is the mean of CA, DnD and JI's own figures (Deal%
        // (76 + 77 + 83)/3 ≈ 79 at τ = 0.2); the price datasets are left out.
        //   casino: deals at ρ 0.5 and 0.7 → deal 100 %, BR 0.6, ρ per episode 0.6;
        //     τ 0.6 keeps 0.7 → 50 %, BR 0.7, per episode 0.35
        //   job_interview: a deal at 0.9 and a walk-away → 50 %, BR 0.9, per episode 0.45;
        //     τ 0.6 keeps it → the same
        //   craigslist: a deal at 0.1 — not in the average
        // average as recorded: deal (100 + 50)/2 = 75 %, BR (0.6 + 0.9)/2 = 0.75, per episode
        //   (0.6 + 0.45)/2 = 0.525; at τ 0.6: 50 %, BR (0.7 + 0.9)/2 = 0.8, per episode 0.4.
        // (A pool of every episode would have said BR (0.5 + 0.7 + 0.9 + 0.1)/4 = 0.55.)
        let mut s = Sensitivity::new(&[0.6]);
        for (i, (family, kind, rho)) in [
            (Family::Casino, OutcomeKind::Deal, 0.5),
            (Family::Casino, OutcomeKind::Deal, 0.7),
            (Family::JobInterview, OutcomeKind::Deal, 0.9),
            (Family::JobInterview, OutcomeKind::WalkAway, 0.0),
            (Family::Craigslist, OutcomeKind::Deal, 0.1),
        ]
        .into_iter()
        .enumerate()
        {
            s.add(&ended(family, kind, rho, i), None);
        }
        let csv = s.table().csv();
        assert!(!csv.contains("\nall,"), "no pool of every family: {csv}");
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .filter(|l| l.starts_with(MULTI_ITEM_AVERAGE))
            .map(|l| l.split(',').collect())
            .collect();
        assert_eq!(rows.len(), 2, "{csv}");
        for (row, (tau, episodes, deals, pct, br, per_episode)) in rows.iter().zip([
            ("", "4", "3", 75.0, 0.75, 0.525),
            ("0.600000", "4", "2", 50.0, 0.8, 0.4),
        ]) {
            assert_eq!(row[1..4], [tau, episodes, deals], "{row:?}");
            let number = |i: usize| row[i].parse::<f64>().unwrap();
            assert!((number(4) - pct).abs() < 1e-9, "{row:?}");
            assert!((number(7) - br).abs() < 1e-9, "{row:?}");
            assert!((number(10) - per_episode).abs() < 1e-9, "{row:?}");
        }
        let avg: Vec<f64> = s
            .rho_deals(None)
            .into_iter()
            .map(|e| e.unwrap().value)
            .collect();
        assert!((avg[0] - 0.75).abs() < 1e-9 && (avg[1] - 0.8).abs() < 1e-9);
        // One multi-item family alone has no average row: its own rows say it.
        let mut one = Sensitivity::new(&[0.6]);
        one.add(&ended(Family::Casino, OutcomeKind::Deal, 0.5, 0), None);
        one.add(&ended(Family::Craigslist, OutcomeKind::Deal, 0.1, 1), None);
        assert!(!one.table().csv().contains(MULTI_ITEM_AVERAGE));
    }

    /// A deal (learner buying first) at `price` on B = 100, C = 60: ρ = (100 − price)/40.
    fn deal_at(price: u32, i: usize) -> EpisodeRecord {
        let s = price_task(125.0, 100.0, 60.0);
        let moves = [
            turn("Offer.", &format!("[SUBMIT_DEAL] price:{price}")),
            turn("Ok.", "[ACCEPT_DEAL]"),
        ];
        let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        r.episode_id = format!("g{i}-m0");
        r.group_id = format!("g{i}");
        r
    }

    #[test]
    fn the_mean_accepted_quality_rises_with_tau_as_in_table_4() {
        // Learner ρ of four deals 0.3, 0.5, 0.7, 0.9 (prices 88, 80, 72, 64) and a walk-away:
        //   as recorded: deals 4/5 = 80 %, ρ over deals 2.4/4 = 0.6, per episode 2.4/5 = 0.48
        //   τ 0.4: keeps 0.5, 0.7, 0.9 → 60 %, over deals 2.1/3 = 0.7, per episode 0.42
        //   τ 0.6: keeps 0.7, 0.9 → 40 %, over deals 0.8, per episode 1.6/5 = 0.32
        // The paper's BR (mean accepted quality) rises with τ; the per-episode mean falls.
        let mut s = Sensitivity::new(&[0.4, 0.6]);
        for (i, price) in [88, 80, 72, 64].into_iter().enumerate() {
            s.add(&deal_at(price, i), None);
        }
        let sc = price_task(125.0, 100.0, 60.0);
        let mut walk = record_of(play(
            &sc,
            learner_first_as(&sc, Role::Buyer),
            &[turn("Bye.", "[WALK_AWAY]")],
        ));
        walk.episode_id = "g9-m0".into();
        walk.group_id = "g9".into();
        s.add(&walk, None);
        let over_deals: Vec<f64> = s
            .rho_deals(Some(crate::scenario::Family::Craigslist))
            .into_iter()
            .map(|e| e.unwrap().value)
            .collect();
        for (got, expected) in over_deals.iter().zip([0.6, 0.7, 0.8]) {
            assert!((got - expected).abs() < 1e-12, "{over_deals:?}");
        }
        let csv = s.table().csv();
        for (tau, deals, pct, per_episode) in [
            ("", 4, "80.000000", "0.480000"),
            ("0.400000", 3, "60.000000", "0.420000"),
            ("0.600000", 2, "40.000000", "0.320000"),
        ] {
            let row = csv
                .lines()
                .find(|l| l.starts_with(&format!("craigslist,{tau},")))
                .unwrap();
            let fields: Vec<&str> = row.split(',').collect();
            assert_eq!(fields[2..5], ["5", &deals.to_string(), pct], "{row}");
            assert_eq!(fields[10], per_episode, "{row}");
        }
    }
}
