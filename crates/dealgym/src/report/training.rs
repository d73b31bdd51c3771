//! Training curves: the episodes a trainer's adapter played (records with `training`), per
//! training run and optimizer step — the learner's mean reward, format compliance, deal rate
//! and ρ over deals with their intervals, a line per run across the steps — and each run
//! against another over the steps both reached, as differences with a two-sample bootstrap
//! interval ([`Aggregate::difference`]). One [`Aggregate`] per (run, step), fed with the
//! weights the other tables share; no figure is computed here.

use std::collections::{BTreeMap, BTreeSet};

use crate::game::{OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::score::{Aggregate, Estimate, FigureId, Figures, Weights};

use super::charts::{line_chart, ChartError, Series};
use super::sheet::{Cell, Column, Sheet, RHO_DEALS};

/// A figure a training curve follows: its CSV key and heading, the figure, the scale it is
/// shown at (rates in percent), its decimals, and the range its chart always shows.
struct Curve {
    key: &'static str,
    heading: &'static str,
    figure: FigureId,
    scale: f64,
    digits: usize,
    range: (f64, f64),
}

const CURVES: [Curve; 4] = [
    Curve {
        key: "mean_reward",
        heading: "mean reward",
        figure: FigureId::MeanReward(Seat::Learner),
        scale: 1.0,
        digits: 3,
        range: (-1.0, 1.0),
    },
    Curve {
        key: "format_ok_pct",
        heading: "format ok %",
        figure: FigureId::FormatOk(Seat::Learner),
        scale: 100.0,
        digits: 1,
        range: (0.0, 100.0),
    },
    Curve {
        key: "deal_pct",
        heading: "deal %",
        figure: FigureId::Rate(OutcomeKind::Deal),
        scale: 100.0,
        digits: 1,
        range: (0.0, 100.0),
    },
    Curve {
        key: RHO_DEALS.1,
        heading: RHO_DEALS.0,
        figure: FigureId::RhoDeals(Seat::Learner),
        scale: 1.0,
        digits: 3,
        range: (0.0, 1.0),
    },
];

impl Curve {
    /// The curve's figure among an aggregate's figures, at its scale.
    fn of(&self, f: &Figures) -> Option<Estimate> {
        f.get(self.figure).map(|e| e.scaled(self.scale))
    }

    fn cell(&self, e: Option<Estimate>) -> Cell {
        Cell::Estimate(e, self.digits)
    }
}

/// Per training run, per step, the aggregate of its episodes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Training {
    runs: BTreeMap<String, BTreeMap<u64, Step>>,
}

/// One run's step: its episodes' aggregate and the clusters the bootstrap resamples (each GRPO
/// group is one: its members share a bootstrap key).
#[derive(Debug, Clone)]
struct Step {
    aggregate: Aggregate,
    clusters: BTreeSet<u64>,
}

impl Default for Step {
    fn default() -> Step {
        // No median per step: nothing here shows one, and the quantiles keep values.
        Step {
            aggregate: Aggregate::without_median(),
            clusters: BTreeSet::new(),
        }
    }
}

/// Below this many resampled clusters (GRPO groups) on either side, a difference's interval is
/// too narrow to trust (one group per side gives an interval of width 0), and the comparison
/// says so instead of a verdict.
pub const MIN_CLUSTERS: usize = 10;

/// Why the training figures cannot be laid out as asked.
#[derive(Debug, thiserror::Error)]
#[error(
    "--training-control {control}: no training run of that name in the files (their runs: {})",
    if runs.is_empty() { "none: no record carries `training`".to_string() } else { runs.join(", ") }
)]
pub struct UnknownControl {
    pub(crate) control: String,
    /// The training runs the files hold.
    pub(crate) runs: Vec<String>,
}

impl Training {
    /// Take in an episode with its bootstrap weights (`None` for a backend error, only
    /// counted); one without `training` is not part of any curve.
    pub fn add(&mut self, r: &EpisodeRecord, weights: Option<&Weights>) {
        let Some(t) = &r.training else {
            return;
        };
        let step = self
            .runs
            .entry(t.run.clone())
            .or_default()
            .entry(t.step)
            .or_default();
        r.add_to(&mut step.aggregate, weights);
        step.clusters.insert(r.bootstrap_key());
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The section's tables: none without training records, else the steps and the
    /// comparison (see [`Training::comparison_table`]). A `control` no record names is an
    /// error, with training records or without.
    pub fn tables(&self, control: Option<&str>) -> Result<Vec<Sheet>, UnknownControl> {
        if self.is_empty() {
            return match control {
                Some(c) => Err(UnknownControl {
                    control: c.to_string(),
                    runs: Vec::new(),
                }),
                None => Ok(Vec::new()),
            };
        }
        let compared = self.comparison_table(control)?;
        Ok(std::iter::once(self.steps_table())
            .chain(compared)
            .collect())
    }

    /// One row per run and step: episodes, errors, and each curve's figure with its interval
    /// (ρ over deals among them), with the format-forfeit rate beside them.
    pub fn steps_table(&self) -> Sheet {
        let mut columns = vec![
            Column::new("run", "run"),
            Column::new("step", "step"),
            Column::new("episodes", "episodes"),
            Column::new("groups", "groups"),
            Column::new("errors", "errors"),
        ];
        for c in &CURVES {
            columns.push(Column::new(c.heading, c.key));
        }
        columns.push(Column::new("format forfeit %", "format_forfeit_pct"));
        let mut rows = Vec::new();
        for (run, steps) in &self.runs {
            for (step, s) in steps {
                let (a, f) = (&s.aggregate, s.aggregate.figures());
                let mut row = vec![
                    Cell::Text(run.clone()),
                    Cell::Count(*step),
                    Cell::Count(a.episodes() as u64),
                    Cell::Count(s.clusters.len() as u64),
                    Cell::Count(a.count(OutcomeKind::Error) as u64),
                ];
                for c in &CURVES {
                    row.push(c.cell(c.of(&f)));
                }
                row.push(Cell::Estimate(
                    f.rate(OutcomeKind::FormatForfeit).map(|e| e.scaled(100.0)),
                    1,
                ));
                rows.push(row);
            }
        }
        Sheet {
            name: "training_steps".into(),
            title: "Per training run and step (the policy of that optimizer step played)".into(),
            columns,
            rows,
        }
    }

    /// Each run against another over the steps both reached, all of them and their last third
    /// (where learning shows, if it does): each curve's figure on both sides and the
    /// difference with its 95% two-sample bootstrap interval. Against `control` when given
    /// (every other run minus it), else every pair of runs, the later name minus the earlier.
    pub fn comparison_table(&self, control: Option<&str>) -> Result<Option<Sheet>, UnknownControl> {
        let names: Vec<&String> = self.runs.keys().collect();
        let pairs: Vec<(&String, &String)> = match control {
            Some(c) => {
                let Some(base) = names.iter().find(|n| n.as_str() == c) else {
                    return Err(UnknownControl {
                        control: c.to_string(),
                        runs: names.iter().map(|n| n.to_string()).collect(),
                    });
                };
                names
                    .iter()
                    .filter(|n| *n != base)
                    .map(|n| (*n, *base))
                    .collect()
            }
            None => names
                .iter()
                .enumerate()
                .flat_map(|(i, a)| names[i + 1..].iter().map(move |b| (*b, *a)))
                .collect(),
        };
        if pairs.is_empty() {
            return Ok(None);
        }
        let mut columns = vec![
            Column::new("run", "run"),
            Column::new("against", "against"),
            Column::new("steps", "steps"),
            Column::new("episodes", "episodes"),
            Column::new("episodes against", "episodes_against"),
            Column::new("groups", "groups"),
            Column::new("groups against", "groups_against"),
        ];
        for Curve { key, heading, .. } in &CURVES {
            columns.push(Column::new(*heading, *key));
            columns.push(Column::new(
                format!("{heading} against"),
                format!("{key}_against"),
            ));
            columns.push(Column::new(
                format!("{heading} difference"),
                format!("{key}_difference"),
            ));
            columns.push(Column::new(
                format!("{heading}: beyond the interval"),
                format!("{key}_beyond"),
            ));
        }
        let mut rows = Vec::new();
        for (run, against) in pairs {
            let (ours, theirs) = (&self.runs[run], &self.runs[against]);
            let common: Vec<u64> = ours
                .keys()
                .filter(|s| theirs.contains_key(s))
                .copied()
                .collect();
            let Some(last) = common.last() else {
                continue;
            };
            // The last third, where learning shows if it does; not a row of its own when it
            // would be every step.
            let late = &common[common.len() - common.len().div_ceil(3)..];
            let windows: &[&[u64]] = if late.len() < common.len() {
                &[&common[..], late]
            } else {
                &[&common[..]]
            };
            for window in windows {
                let (a, groups_a) = pooled(ours, window);
                let (b, groups_b) = pooled(theirs, window);
                let (fa, fb) = (a.figures(), b.figures());
                let mut row = vec![
                    Cell::Text(run.clone()),
                    Cell::Text(against.clone()),
                    Cell::Text(format!("{}–{last} ({} steps)", window[0], window.len())),
                    Cell::Count(a.episodes() as u64),
                    Cell::Count(b.episodes() as u64),
                    Cell::Count(groups_a as u64),
                    Cell::Count(groups_b as u64),
                ];
                let enough = groups_a.min(groups_b) >= MIN_CLUSTERS;
                for c in &CURVES {
                    let d = a.difference(&b, c.figure);
                    row.push(c.cell(c.of(&fa)));
                    row.push(c.cell(c.of(&fb)));
                    row.push(c.cell(d.map(|e| e.scaled(c.scale))));
                    row.push(Cell::Text(verdict(d, enough).to_string()));
                }
                rows.push(row);
            }
        }
        Ok(Some(Sheet {
            name: "training_compared".into(),
            title: "Training runs compared over the steps both reached, then their last third \
                    (difference = run − against, with its 95% two-sample bootstrap interval)"
                .into(),
            columns,
            rows,
        }))
    }

    /// One chart per curve: x the step, a line per run with its 95% interval as a band.
    pub fn charts(&self) -> Result<Vec<(String, String, String)>, ChartError> {
        let mut charts = Vec::new();
        // Each step's figures once, for every curve.
        let figures: Vec<(&String, Vec<(u64, Figures)>)> = self
            .runs
            .iter()
            .map(|(run, steps)| {
                let f = steps.iter().map(|(step, s)| (*step, s.aggregate.figures()));
                (run, f.collect())
            })
            .collect();
        for c in &CURVES {
            let series: Vec<Series> = figures
                .iter()
                .map(|(run, steps)| Series {
                    name: run.to_string(),
                    points: steps
                        .iter()
                        .filter_map(|(step, f)| c.of(f).map(|e| (*step, e)))
                        .collect(),
                })
                .collect();
            let title = format!("Learner's {} per training step", c.heading);
            charts.push((
                format!("training_{}", c.key),
                format!("{title}, a line per training run, with its 95% interval as a band"),
                line_chart(&title, "optimizer step", c.heading, &series, c.range)?,
            ));
        }
        Ok(charts)
    }
}

/// The aggregate of `steps`' episodes over the steps in `window`, and its clusters (a step's
/// records have their own run id, so no cluster spans two steps).
fn pooled(steps: &BTreeMap<u64, Step>, window: &[u64]) -> (Aggregate, usize) {
    let mut all = Aggregate::without_median();
    let mut clusters = 0;
    for s in window.iter().filter_map(|step| steps.get(step)) {
        all.absorb(&s.aggregate);
        clusters += s.clusters.len();
    }
    (all, clusters)
}

/// Whether a difference's interval leaves out 0: `higher`, `lower`, `no` (or `–` without one);
/// `too few groups` where either side has fewer than [`MIN_CLUSTERS`].
fn verdict(d: Option<Estimate>, enough: bool) -> &'static str {
    match d {
        None => "–",
        Some(_) if !enough => "too few groups",
        Some(d) if d.low > 0.0 => "higher",
        Some(d) if d.high < 0.0 => "lower",
        Some(_) => "no",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::training_record;

    /// A deal (at 90: the buyer's ρ = (100 − 90)/(100 − 60) = 0.25) or a walk-away for `run`
    /// at `step`, its group `g` (its own bootstrap key).
    fn episode(run: &str, step: u64, g: usize, kind: OutcomeKind) -> EpisodeRecord {
        played(run, step, g, kind, 90)
    }

    /// As [`episode`], a deal at `price` (the learner buys: ρ = (100 − price)/40).
    fn played(run: &str, step: u64, g: usize, kind: OutcomeKind, price: u32) -> EpisodeRecord {
        let r = training_record(run, step, g, (kind == OutcomeKind::Deal).then_some(price));
        assert_eq!(r.kind(), kind);
        r
    }

    fn add(t: &mut Training, r: &EpisodeRecord) {
        t.add(r, Some(&Weights::of(r.bootstrap_key())));
    }

    #[test]
    fn records_without_training_make_no_curve() {
        let mut t = Training::default();
        let mut r = episode("a", 0, 0, OutcomeKind::Deal);
        r.training = None;
        add(&mut t, &r);
        assert!(t.is_empty());
        assert!(t.tables(None).unwrap().is_empty());
        // A control named for files with no training record is an error, not ignored.
        let e = t.tables(Some("lr-0")).unwrap_err();
        assert!(
            e.to_string().contains("no record carries `training`"),
            "{e}"
        );
    }

    #[test]
    fn a_run_that_deals_more_late_is_beyond_the_interval_and_the_control_is_named() {
        let mut t = Training::default();
        for step in 0..6u64 {
            for g in 0..40 {
                // The trained run deals in every episode from step 2 on, its new deals at 70
                // (ρ 0.75); the control in a quarter of them throughout, at 90 (ρ 0.25).
                let (trained, price) = if g % 4 == 0 {
                    (OutcomeKind::Deal, 90)
                } else if step >= 2 {
                    (OutcomeKind::Deal, 70)
                } else {
                    (OutcomeKind::WalkAway, 90)
                };
                let control = if g % 4 == 0 {
                    OutcomeKind::Deal
                } else {
                    OutcomeKind::WalkAway
                };
                add(&mut t, &played("trained", step, g, trained, price));
                add(&mut t, &episode("control", step, g, control));
            }
        }
        let steps = t.steps_table();
        assert_eq!(steps.rows.len(), 12);
        let table = t.comparison_table(Some("control")).unwrap().unwrap();
        assert_eq!(table.rows.len(), 2, "all steps, then the last third");
        let deal = table
            .columns
            .iter()
            .position(|c| c.key == "deal_pct_difference")
            .unwrap();
        let Cell::Estimate(Some(late), _) = &table.rows[1][deal] else {
            panic!("no difference: {:?}", table.rows[1]);
        };
        assert!((late.value - 75.0).abs() < 1e-9, "{late:?}");
        assert!(late.low > 0.0);
        let verdict = table
            .columns
            .iter()
            .position(|c| c.key == "deal_pct_beyond")
            .unwrap();
        assert!(matches!(&table.rows[1][verdict], Cell::Text(v) if v == "higher"));
        assert!(matches!(&table.rows[1][2], Cell::Text(s) if s == "4–5 (2 steps)"));
        // ρ over deals, beside the other curves: over all steps the trained run's 180 deals
        // are 60 at 0.25 and 120 at 0.75 (mean 105/180), its last third's 80 are 20 at 0.25
        // and 60 at 0.75 (0.625); the control's deals are all at 0.25.
        let at = |key: &str| table.columns.iter().position(|c| c.key == key).unwrap();
        let rho = |row: usize, key: &str| match &table.rows[row][at(key)] {
            Cell::Estimate(Some(e), 3) => *e,
            cell => panic!("{key}: {cell:?}"),
        };
        for (row, ours, difference) in [(0, 105.0 / 180.0, 105.0 / 180.0 - 0.25), (1, 0.625, 0.375)]
        {
            assert!((rho(row, "rho_deals").value - ours).abs() < 1e-9);
            assert!((rho(row, "rho_deals_against").value - 0.25).abs() < 1e-9);
            let d = rho(row, "rho_deals_difference");
            assert!((d.value - difference).abs() < 1e-9, "{d:?}");
            assert!(d.low > 0.0, "{d:?}");
            assert!(
                matches!(&table.rows[row][at("rho_deals_beyond")], Cell::Text(v) if v == "higher")
            );
        }
        // The steps table's ρ over deals, one step at a time: 10 deals at 0.25 at step 0, 40
        // from step 2 on, 10 of them at 0.25.
        let rho_step = steps
            .columns
            .iter()
            .position(|c| c.key == "rho_deals")
            .unwrap();
        for (row, want) in [(0, 0.25), (6, 0.25), (11, 0.625)] {
            let Cell::Estimate(Some(e), 3) = &steps.rows[row][rho_step] else {
                panic!("{:?}", steps.rows[row]);
            };
            assert!((e.value - want).abs() < 1e-9, "row {row}: {e:?}");
        }
        assert!(
            matches!(&table.rows[1][5], Cell::Count(80)),
            "40 groups a step"
        );
        // Too few groups for a verdict: one step of each, 4 groups a side.
        let mut few = Training::default();
        for g in 0..4 {
            add(&mut few, &episode("trained", 0, g, OutcomeKind::Deal));
            add(&mut few, &episode("control", 0, g, OutcomeKind::WalkAway));
        }
        let table = few.comparison_table(Some("control")).unwrap().unwrap();
        assert_eq!(table.rows.len(), 1, "one step: no last third of its own");
        assert!(matches!(&table.rows[0][verdict], Cell::Text(v) if v == "too few groups"));
        // Without a control: the later name minus the earlier (trained − control).
        let pairs = t.comparison_table(None).unwrap().unwrap();
        assert!(matches!(&pairs.rows[0][0], Cell::Text(r) if r == "trained"));
        // A control no file holds is an error that lists the runs.
        let e = t.comparison_table(Some("lr-0")).unwrap_err();
        assert_eq!(e.runs, ["control", "trained"]);
        assert!(
            e.to_string().contains("(their runs: control, trained)"),
            "{e}"
        );
        assert_eq!(t.tables(None).unwrap().len(), 2);
        let charts: Vec<String> = t.charts().unwrap().into_iter().map(|c| c.0).collect();
        assert_eq!(
            charts,
            [
                "training_mean_reward",
                "training_format_ok_pct",
                "training_deal_pct",
                "training_rho_deals"
            ]
        );
    }
}
