//! The table printed at the end of a run: per family, how episodes ended and how well each seat
//! did, each figure with its bootstrap 95% interval. The figures and intervals are
//! [`crate::score::Aggregate`]'s, fed from what each record already holds; this file only groups
//! records by family and lays the figures out. Backend errors are counted apart and left out of
//! every rate and mean.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::driver::Finished;
use crate::game::{OutcomeKind, PerSeat, Seat};
use crate::record::{EpisodeRecord, RewardIssueCounts};
use crate::scenario::Family;
use crate::score::{cell, pct_cell, Aggregate, Estimate, SeatFigures, RATED_ENDINGS};

/// One family's aggregate (a row of the table).
pub(crate) type FamilyStats = Aggregate;

/// Totals of a run, per family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStats {
    pub families: BTreeMap<Family, FamilyStats>,
    /// What went wrong with the judge and the reward model, over the episodes.
    pub rewards: RewardIssueCounts,
    /// Episodes that panicked (`Finished::internal_error`): among the errors, and a bug.
    pub internal_errors: usize,
}

impl RunStats {
    /// Add an ended episode, from the ending, ρ, rewards and metrics its record holds.
    pub fn add(&mut self, r: &EpisodeRecord) {
        r.add_to(self.families.entry(r.family).or_default(), None);
        self.rewards.add(r);
    }

    /// Add an episode as [`RunStats::add`] does, counting it apart if it panicked.
    pub(crate) fn add_finished(&mut self, finished: &Finished) {
        self.add(&finished.record);
        self.internal_errors += usize::from(finished.internal_error);
    }

    /// The line a command prints (and exits [`super::INTERNAL_ERROR_EXIT`] for) when episodes
    /// panicked; `None` when none did.
    pub fn internal_error_line(&self) -> Option<String> {
        (self.internal_errors > 0).then(|| {
            format!(
                "{} episodes ended in an internal error (a bug in dealgym: see the panic above); \
                 they are written as `error` records whose detail says so",
                self.internal_errors
            )
        })
    }

    pub fn episodes(&self) -> usize {
        self.families.values().map(|f| f.episodes()).sum()
    }

    pub fn count(&self, kind: OutcomeKind) -> usize {
        self.families.values().map(|f| f.count(kind)).sum()
    }

    /// Completions asked for: every attempt of both seats (moves that took effect and
    /// malformed attempts, from the metrics) in every scored episode.
    pub fn calls(&self) -> usize {
        self.families
            .values()
            .map(|f| {
                let seats = f.seats();
                seats.learner.attempts + seats.opponent.attempts
            })
            .sum()
    }

    /// Deal rate over scored episodes, in percent (for the progress bar: no interval).
    pub(crate) fn deal_rate(&self) -> f64 {
        let scored: usize = self.families.values().map(|f| f.scored()).sum();
        if scored == 0 {
            0.0
        } else {
            100.0 * self.count(OutcomeKind::Deal) as f64 / scored as f64
        }
    }

    /// Every family together (the table's "all" row).
    pub fn all(&self) -> FamilyStats {
        let mut all = FamilyStats::default();
        for s in self.families.values() {
            all.absorb(s);
        }
        all
    }

    /// `row` applied to each family, then to "all": the rows of the table and of the JSON
    /// summary.
    fn rows<T>(&self, row: impl Fn(String, &FamilyStats) -> T) -> Vec<T> {
        let all = self.all();
        self.families
            .iter()
            .map(|(f, s)| row(f.to_string(), s))
            .chain(std::iter::once(row("all".to_string(), &all)))
            .collect()
    }

    /// The summary as a Markdown table. Each figure reads `value [low, high]` (its bootstrap
    /// 95% interval), `–` where no episode gives it. The deal rate comes first with the
    /// bargained ratio over deals beside it, as the papers report them; ρ per episode (no deal
    /// counting 0) is a figure of its own. Format-ok, malformed and regulated shares are given
    /// per seat, so a rule opponent's always well-formed turns never flatter a model's figure.
    /// Each figure's definition: [`crate::score::Aggregate`].
    pub fn table(&self) -> String {
        let both = |name: &str| [format!("{name} learner"), format!("{name} opponent")];
        let mut headings: Vec<String> = vec!["family".into(), "episodes".into(), "deal %".into()];
        headings.extend(both("ρ over deals"));
        headings.extend(
            [
                "walk-away %",
                "reject-loop %",
                "max-turns %",
                "format-forfeit %",
                "errors",
            ]
            .map(String::from),
        );
        headings.extend(both("ρ per episode (no deal = 0)"));
        headings.extend(both("points"));
        headings.push("score ratio learner".into());
        headings.extend(["mean turns", "turns to deal", "AT (no deal = cap)"].map(String::from));
        headings.extend(both("format ok %"));
        headings.push("Pareto %".into());
        headings.extend(both("first bid"));
        headings.extend(both("SL (no deal = 0)"));
        headings.extend(both("malformed %"));
        headings.extend(both("malformed deals %"));
        headings.extend(both("regulated %"));
        let mut out = format!(
            "| {} |\n|---|{}\n",
            headings.join(" | "),
            "---:|".repeat(headings.len() - 1)
        );
        let rows = self.rows(|name, s| {
            let f = s.figures();
            let seats =
                |cell: fn(&SeatFigures) -> String| Seat::BOTH.map(|seat| cell(&f.seats[seat]));
            let mut cells = vec![name, s.episodes().to_string()];
            let [deal, others @ ..] = f.endings.map(pct_cell);
            cells.push(deal);
            cells.extend(seats(|seat| cell(seat.rho_deals, 3)));
            cells.extend(others);
            cells.push(s.count(OutcomeKind::Error).to_string());
            cells.extend(seats(|seat| cell(seat.mean_rho, 3)));
            cells.extend(seats(|seat| cell(seat.points, 2)));
            cells.push(cell(f.seats.learner.score_ratio, 3));
            cells.push(cell(f.mean_turns, 1));
            cells.push(cell(f.turns_to_deal, 1));
            cells.push(cell(f.average_turns, 1));
            cells.extend(seats(|seat| pct_cell(seat.format_ok)));
            cells.push(pct_cell(f.pareto));
            cells.extend(seats(|seat| cell(seat.first_bid, 3)));
            cells.extend(seats(|seat| cell(seat.sl, 3)));
            cells.extend(seats(|seat| pct_cell(seat.malformed)));
            cells.extend(seats(|seat| pct_cell(seat.malformed_deals)));
            cells.extend(seats(|seat| pct_cell(seat.regulated)));
            format!("| {} |\n", cells.join(" | "))
        });
        out.extend(rows);
        out
    }

    /// One machine-readable object per family (and `"all"`): episodes, outcome counts, errors,
    /// per seat the format-ok share and constraint checks — and every figure of the table
    /// (plus mean reward, sale-to-list over deals, the clipped means and the median of ρ per
    /// seat, the opponent's score ratio) as `{value, low, high, n}` with its bootstrap 95%
    /// interval, or `null` where no episode gives it. `rho_deals` is the bargained ratio over
    /// deals, `mean_rho` ρ per episode (no deal = 0); `sl` DialogXpert's SL (no deal = 0);
    /// `average_turns` its AT (no deal = the cap); the deal rate (`endings_pct.deal`) is its SR.
    /// Shares named `…_pct` are in percent.
    pub(crate) fn json_rows(&self) -> Vec<Value> {
        self.rows(|family, s| {
            let f = s.figures();
            let outcomes: BTreeMap<&str, usize> =
                s.endings().iter().map(|(k, n)| (k.name(), *n)).collect();
            let endings_pct: BTreeMap<&str, Value> = RATED_ENDINGS
                .iter()
                .zip(f.endings)
                .map(|(kind, e)| (kind.name(), estimate(e, 100.0)))
                .collect();
            let counts = s.seats();
            let seats = PerSeat::from_fn(|seat| {
                let (c, sf) = (&counts[seat], &f.seats[seat]);
                json!({
                    "attempts": c.attempts,
                    "format_ok_pct": c.format_ok_pct(),
                    "constrained": c.constrained,
                    "constraint_violations": c.constraint_violations,
                    "format_ok_pct_ci": estimate(sf.format_ok, 100.0),
                    "malformed_pct": estimate(sf.malformed, 100.0),
                    "regulated_pct": estimate(sf.regulated, 100.0),
                    "rho_deals": estimate(sf.rho_deals, 1.0),
                    "clipped_rho_deals": estimate(sf.clipped_rho_deals, 1.0),
                    "mean_rho": estimate(sf.mean_rho, 1.0),
                    "clipped_mean_rho": estimate(sf.clipped_rho, 1.0),
                    "median_rho": estimate(sf.median_rho, 1.0),
                    "mean_reward": estimate(sf.mean_reward, 1.0),
                    "first_bid": estimate(sf.first_bid, 1.0),
                    "sale_to_list": estimate(sf.sale_to_list, 1.0),
                    "sl": estimate(sf.sl, 1.0),
                    "points": estimate(sf.points, 1.0),
                    "score_ratio": estimate(sf.score_ratio, 1.0),
                    "malformed_deals_pct": estimate(sf.malformed_deals, 100.0),
                })
            });
            json!({
                "family": family,
                "episodes": s.episodes(),
                "outcomes": outcomes,
                "errors": s.count(OutcomeKind::Error),
                "scored": s.scored(),
                "endings_pct": endings_pct,
                "pareto_pct": estimate(f.pareto, 100.0),
                "mean_turns": estimate(f.mean_turns, 1.0),
                "turns_to_deal": estimate(f.turns_to_deal, 1.0),
                "average_turns": estimate(f.average_turns, 1.0),
                "seats": seats,
            })
        })
    }
}

/// An estimate in the JSON summary, scaled by `factor`, or `null`.
fn estimate(e: Option<Estimate>, factor: f64) -> Value {
    e.map_or(Value::Null, |e| json!(e.scaled(factor)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, turn};
    use crate::game::Episode;

    use crate::scenario::Role;

    fn record(e: Episode) -> EpisodeRecord {
        crate::fixtures::record_of(e)
    }

    /// Three Craigslist episodes on L = 125, B = 100, C = 60, the learner buying first:
    /// - a deal at 70 after one unreadable attempt: ρ = (30/40, 10/40) = (0.75, 0.25);
    /// - a walk-away at once by the learner: ρ = (0, 0), the opponent never plays;
    /// - a backend error on the learner's first call: counted apart.
    fn stats() -> RunStats {
        let s = price_task(125.0, 100.0, 60.0);
        let deal = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                "nonsense".to_string(),
                turn("70?", "[SUBMIT_DEAL] price:70"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        let walk = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[turn("Bye.", "[WALK_AWAY]")],
        );
        let mut error = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
        error.fail_backend(Seat::Learner, "HTTP 500").unwrap();
        let mut stats = RunStats::default();
        // Distinct groups: the bootstrap draws an episode's weights from its run and group.
        for (i, e) in [deal, walk, error].into_iter().enumerate() {
            let mut r = record(e);
            r.episode_id = format!("g{i}-m0");
            r.group_id = format!("g{i}");
            stats.add(&r);
        }
        stats
    }

    #[test]
    fn the_table_gives_each_figure_with_its_interval() {
        // Over the 2 scored episodes (resamples of two: both the first, one of each, both
        // the second, so the 95% bounds are the two extremes):
        //   deal 1/2 = 50 % [0, 100]; beside it ρ over deals: learner 0.75, opponent 0.25,
        //   points intervals (only the deal bears on them: resamples without it are left out);
        //   walk-away 50 % [0, 100]; the other endings 0 [0, 0]; 1 error
        //   ρ per episode learner (0.75 + 0)/2 = 0.375 [0, 0.75]; opponent 0.125 [0, 0.25]
        //   points: learner (30 + 0)/2 = 15 [0, 30] (B − P = 100 − 70), opponent (10 + 0)/2 = 5
        //   [0, 10] (P − C = 70 − 60); score ratio 30/(30 + 10) = 0.75, the walk-away's joint
        //   score 0 bearing on neither sum
        //   turns (2 + 1)/2 = 1.5 [1, 2]; to deal 2; AT (2 + 12)/2 = 7 [2, 12]: the walk-away
        //   counts at the cap, 6 rounds per seat = 12 moves
        //   format-ok learner (1 + 1)/(2 + 1) = 66.7 % [1/2, 1/1]; opponent 1/1 (the walk-away
        //   gave it no attempt) = 100 % [100, 100]
        //   Pareto: no flag on price deals; first bid learner 70/100 = 0.7 (the walk-away has
        //   none); SL learner (the buyer both times): the deal's (P − L)/(B − L) =
        //   (70 − 125)/(100 − 125) = 2.2 and the walk-away's 0 → 1.1 [0, 2.2], opponent none
        //   malformed learner (1 + 0)/(2 + 1) = 33.3 % [0/1, 1/2]; malformed deals: the learner
        //   proposed once ("nonsense" is no proposal), well-formed: 0 % over 1; the opponent
        //   only accepted: none; nobody regulated
        let stats = stats();
        let figures = "| 3 | 50.0 [0.0, 100.0] | 0.750 [0.750, 0.750] | 0.250 [0.250, 0.250] \
             | 50.0 [0.0, 100.0] | 0.0 [0.0, 0.0] | 0.0 [0.0, 0.0] | 0.0 [0.0, 0.0] | 1 \
             | 0.375 [0.000, 0.750] | 0.125 [0.000, 0.250] | 15.00 [0.00, 30.00] \
             | 5.00 [0.00, 10.00] | 0.750 [0.750, 0.750] | 1.5 [1.0, 2.0] | 2.0 [2.0, 2.0] \
             | 7.0 [2.0, 12.0] | 66.7 [50.0, 100.0] | 100.0 [100.0, 100.0] | – \
             | 0.700 [0.700, 0.700] | – | 1.100 [0.000, 2.200] | – | 33.3 [0.0, 50.0] \
             | 0.0 [0.0, 0.0] | 0.0 [0.0, 0.0] | – | 0.0 [0.0, 0.0] | 0.0 [0.0, 0.0] |";
        let table = stats.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].starts_with(
            "| family | episodes | deal % | ρ over deals learner | ρ over deals opponent \
             | walk-away % |"
        ));
        assert_eq!(lines[2], format!("| craigslist {figures}"));
        assert_eq!(lines[3], format!("| all {figures}"));
        for line in [lines[1], lines[2]] {
            assert_eq!(
                lines[0].matches('|').count(),
                line.matches('|').count(),
                "one cell per column"
            );
        }
    }

    #[test]
    fn counts_come_from_the_records_metrics() {
        let stats = stats();
        assert_eq!(stats.episodes(), 3);
        assert_eq!(stats.count(OutcomeKind::Error), 1);
        // Attempts: learner 2 + 1, opponent 1 + 0 (the error episode is not scored).
        assert_eq!(stats.calls(), 4);
        assert!((stats.deal_rate() - 50.0).abs() < 1e-9);
        let seats = stats.all().seats();
        assert_eq!((seats.learner.attempts, seats.learner.format_ok), (3, 2));
        assert_eq!(seats.opponent.format_ok_pct(), Some(100.0));
    }

    #[test]
    fn json_rows_keep_their_keys_and_add_intervals() {
        let rows = stats().json_rows();
        assert_eq!(rows.len(), 2);
        let all = &rows[1];
        assert_eq!(all["family"], "all");
        assert_eq!(all["episodes"], 3);
        assert_eq!(all["errors"], 1);
        assert_eq!(all["outcomes"]["deal"], 1);
        assert_eq!(all["outcomes"]["error"], 1);
        let learner = &all["seats"]["learner"];
        assert_eq!(learner["attempts"], 3);
        assert_eq!(learner["constrained"], 0);
        assert_eq!(learner["constraint_violations"], 0);
        assert!((learner["format_ok_pct"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(all["scored"], 2);
        assert_eq!(
            all["endings_pct"]["deal"],
            json!({"value": 50.0, "low": 0.0, "high": 100.0, "n": 2})
        );
        assert_eq!(
            learner["mean_rho"],
            json!({"value": 0.375, "low": 0.0, "high": 0.75, "n": 2})
        );
        assert_eq!(learner["first_bid"]["value"], 0.7);
        assert_eq!(all["pareto_pct"], Value::Null);
        // The figures added beside them (worked in the table's test).
        assert_eq!(
            learner["rho_deals"],
            json!({"value": 0.75, "low": 0.75, "high": 0.75, "n": 1})
        );
        assert_eq!(learner["points"]["value"], 15.0);
        assert_eq!(learner["score_ratio"]["value"], 0.75);
        assert_eq!(learner["sl"]["value"], 1.1);
        assert_eq!(learner["malformed_deals_pct"]["value"], 0.0);
        assert_eq!(all["seats"]["opponent"]["malformed_deals_pct"], Value::Null);
        assert_eq!(all["turns_to_deal"]["value"], 2.0);
        assert_eq!(all["average_turns"]["value"], 7.0);
    }

    #[test]
    fn the_members_of_a_group_are_resampled_together() {
        // Two GRPO groups of 8 on one setup each: every member of group 0 buys at 70
        // (ρ 0.75), every member of group 1 walks away (ρ 0). A resample that draws group 0
        // zero times is all walk-aways, so the interval of the learner's mean ρ reaches 0 and
        // 0.75 exactly, as for two independent episodes; resampling the 16 members one by one
        // would make it far narrower, as if 16 setups had been seen.
        let s = price_task(125.0, 100.0, 60.0);
        let deal = || {
            let moves = [
                turn("70?", "[SUBMIT_DEAL] price:70"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ];
            play(&s, learner_first_as(&s, Role::Buyer), &moves)
        };
        let walk = || {
            play(
                &s,
                learner_first_as(&s, Role::Buyer),
                &[turn("Bye.", "[WALK_AWAY]")],
            )
        };
        let mut stats = RunStats::default();
        for (group, episode) in [(0, &deal as &dyn Fn() -> Episode), (1, &walk)] {
            for member in 0..8 {
                let mut r = record(episode());
                r.group_id = format!("g{group}");
                r.episode_id = format!("g{group}-m{member}");
                stats.add(&r);
            }
        }
        let rho = stats
            .all()
            .figures()
            .seats
            .learner
            .mean_rho
            .expect("a mean");
        assert_eq!((rho.value, rho.low, rho.high), (0.375, 0.0, 0.75));
    }
}
