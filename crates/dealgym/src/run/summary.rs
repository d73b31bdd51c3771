//! The table printed at the end of a run: per family, how episodes ended and how well each seat
//! did, each figure with its bootstrap 95% interval, and below them — where the run played two
//! or more multi-item families — their average, each family once (the BATNA paper's Table 4
//! "Avg", [`crate::score::mean_over`]), never a pool of every family's episodes (which would put
//! the price tasks' dollars beside the item games' points). The figures and intervals are
//! [`crate::score::Aggregate`]'s, fed from what each record already holds; this file only groups
//! records by family and lays the figures out. Backend errors are counted apart and left out of
//! every rate and mean.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::driver::Finished;
use crate::game::{OutcomeKind, PerSeat};
use crate::record::{EpisodeRecord, RewardIssueCounts};
use crate::scenario::Family;
use crate::score::{
    cell, mean_over, multi_item_groups, pct_cell, Aggregate, Estimate, FigureId,
    MULTI_ITEM_AVERAGE, RATED_ENDINGS,
};

/// The widest line [`RunStats::table`] prints for five families and all, their figures'
/// intervals printed (and the eval's tables, [`crate::eval::EvalResults::markdown`], for
/// names of a usual length): a terminal's width, so that no row wraps.
pub(crate) const TABLE_WIDTH: usize = 120;

/// One family's aggregate (a row of the table).
pub(crate) type FamilyStats = Aggregate;

/// Totals of a run, per family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStats {
    pub(crate) families: BTreeMap<Family, FamilyStats>,
    /// What went wrong with the judge and the reward model, over the episodes.
    pub rewards: RewardIssueCounts,
    /// Episodes that panicked (`Finished::internal_error`): among the errors, and a bug.
    pub internal_errors: usize,
    /// The n-party tables, per family.
    pub(crate) tables: BTreeMap<String, super::table::TableStats>,
    /// The markets.
    pub(crate) markets: super::market::MarketStats,
}

impl RunStats {
    /// Add an ended episode, from the ending, ρ, rewards and metrics its record holds.
    pub fn add(&mut self, r: &EpisodeRecord) {
        r.add_to(self.families.entry(r.family).or_default(), None);
        self.rewards.add(r);
    }

    /// Add what the executor played: an episode, or a table.
    pub(crate) fn add_done(&mut self, done: &super::execute::Done) {
        match done {
            super::execute::Done::Episode(finished) => self.add_finished(finished),
            super::execute::Done::Table(finished) => {
                let stats = self
                    .tables
                    .entry(finished.record.family.name().to_string())
                    .or_default();
                stats.add(&finished.record);
                stats.internal_errors += usize::from(finished.internal_error);
                self.internal_errors += usize::from(finished.internal_error);
            }
            super::execute::Done::Market(finished) => {
                self.markets.add(&finished.record);
                self.markets.internal_errors += usize::from(finished.internal_error);
                self.internal_errors += usize::from(finished.internal_error);
            }
        }
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

    /// Every family's episodes pooled (the JSON summary's `"all"` row: its counts, and
    /// figures that weigh each family by its episodes — not the papers' averages).
    pub fn all(&self) -> FamilyStats {
        let mut all = FamilyStats::default();
        for s in self.families.values() {
            all.absorb(s);
        }
        all
    }

    /// `row` applied to each family, then to "all": the rows of the JSON summary.
    fn rows<T>(&self, row: impl Fn(String, &FamilyStats) -> T) -> Vec<T> {
        let all = self.all();
        self.families
            .iter()
            .map(|(f, s)| row(f.to_string(), s))
            .chain(std::iter::once(row("all".to_string(), &all)))
            .collect()
    }

    /// The summary as a Markdown table that fits a 120-column terminal (`TABLE_WIDTH`): per
    /// family, the episodes, the deal rate with the learner's bargained ratio over deals beside
    /// it (as the papers report them), each `value [low, high]` with its bootstrap 95%
    /// interval, then the learner's format-ok share, the backend errors and the mean turns
    /// (values only); `–` where no episode gives a figure. Then, with two or more multi-item
    /// families, the `multi-item average` row: each figure the mean of those families' (each
    /// once, Table 4's "Avg"), the episodes and errors their sums. Every other figure of
    /// [`crate::score::Aggregate`] (the opponent seat, each ending, ρ per episode, points,
    /// Pareto, the intervals left out here, …) is in the JSON summary
    /// ([`super::RunSummary::write_json`], `--summary-json`) and in `dealgym report`.
    pub fn table(&self) -> String {
        let headings = [
            "family",
            "episodes",
            "deal % [95% CI]",
            "learner ρ over deals [95% CI]",
            "learner format ok %",
            "errors",
            "mean turns",
        ];
        let mut out = format!("| {} |\n|---|{}\n", headings.join(" | "), "---:|".repeat(6));
        let line = |cells: [String; 7]| format!("| {} |\n", cells.join(" | "));
        for (family, s) in &self.families {
            let f = s.figures();
            let learner = &f.seats.learner;
            out.push_str(&line([
                family.to_string(),
                s.episodes().to_string(),
                pct_cell(f.rate(OutcomeKind::Deal)),
                cell(learner.rho_deals, 3),
                value_cell(learner.format_ok.map(|e| e.scaled(100.0)), 1),
                s.count(OutcomeKind::Error).to_string(),
                value_cell(f.mean_turns, 1),
            ]));
        }
        if let Some(multi) = multi_item_groups(self.families.iter().map(|(f, s)| (*f, s))) {
            let mean = |figure| mean_over(&multi, figure);
            let sum = |count: &dyn Fn(&Aggregate) -> usize| {
                multi.iter().map(|s| count(s)).sum::<usize>().to_string()
            };
            out.push_str(&line([
                MULTI_ITEM_AVERAGE.to_string(),
                sum(&|s| s.episodes()),
                pct_cell(mean(FigureId::Rate(OutcomeKind::Deal))),
                cell(mean(FigureId::RhoDeals(crate::game::Seat::Learner)), 3),
                value_cell(
                    mean(FigureId::FormatOk(crate::game::Seat::Learner)).map(|e| e.scaled(100.0)),
                    1,
                ),
                sum(&|s| s.count(OutcomeKind::Error)),
                value_cell(mean(FigureId::MeanTurns), 1),
            ]));
        }
        out.push_str(&self.ticket_lines());
        out
    }

    /// Below the table, one line per family whose calls have chase tickets (`hotel`): the
    /// share of tickets agreed at or below the agent's acceptable price (the REPO paper's
    /// per-ticket task success) and the agent's mean ρ per ticket, with their intervals.
    /// Nothing for the other families, whose summary stays as it was.
    fn ticket_lines(&self) -> String {
        let mut out = String::new();
        for (family, s) in &self.families {
            let f = s.figures();
            if let Some(success) = f.ticket_success {
                out.push_str(&format!(
                    "{family}: tickets agreed at or below the acceptable price, % [95% CI]: {} ({} calls); agent's ρ per ticket: {}\n",
                    pct_cell(Some(success)),
                    success.n,
                    cell(f.ticket_rho, 3),
                ));
            }
        }
        out
    }

    /// One machine-readable object per family (and `"all"`): episodes, outcome counts, errors,
    /// per seat the format-ok share and constraint checks — and every figure of the table
    /// (plus mean reward, sale-to-list over deals, the clipped means and the median of ρ per
    /// seat, the opponent's score ratio) as `{value, low, high, n}` with its bootstrap 95%
    /// interval, or `null` where no episode gives it. `rho_deals` is the bargained ratio over
    /// deals, `mean_rho` ρ per episode (no deal = 0); `sl` DialogXpert's SL (no deal = 0);
    /// `average_turns` its AT in the paper's turns (exchanges; no deal = the cap, `max_rounds`)
    /// and `average_moves` the same in moves (no deal = 2 × `max_rounds`); the deal rate
    /// (`endings_pct.deal`) is its SR.
    /// Rows with bundle deals add `integrative_pct` (deals whose bundle grew the pie) and
    /// `integrative_gain` (its mean, currency units) and `price_to_list` (the final price over
    /// the full bundle's list price, INA's final over first price). Shares named `…_pct` are in percent.
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
            let mut row = json!({
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
                "average_moves": estimate(f.average_moves, 1.0),
                "seats": seats,
            });
            // The bundle family's integrative figures, on rows with bundle deals only.
            if let (Some(obj), Some(share)) = (row.as_object_mut(), f.integrative) {
                obj.insert("integrative_pct".into(), json!(share.scaled(100.0)));
                obj.insert("integrative_gain".into(), estimate(f.integrative_gain, 1.0));
                obj.insert("price_to_list".into(), estimate(f.price_to_list, 1.0));
            }
            // Hotel calls only, so the other families' rows keep their keys.
            if let (Some(success), Some(row)) = (f.ticket_success, row.as_object_mut()) {
                row.insert("ticket_success_pct".into(), estimate(Some(success), 100.0));
                row.insert("ticket_rho".into(), estimate(f.ticket_rho, 1.0));
            }
            row
        })
    }
}

/// An estimate's value alone, as [`cell`] rounds it, or `–`: for the table's figures whose
/// interval only the JSON summary gives.
fn value_cell(e: Option<Estimate>, digits: usize) -> String {
    e.map_or_else(|| "–".to_string(), |e| format!("{:.digits$}", e.value))
}

/// An estimate in the JSON summary, scaled by `factor`, or `null`.
fn estimate(e: Option<Estimate>, factor: f64) -> Value {
    e.map_or(Value::Null, |e| json!(e.scaled(factor)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, turn};
    use crate::game::{Episode, Seat};

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
    fn the_table_gives_the_key_figures_with_their_intervals() {
        // Over the 2 scored episodes (resamples of two: both the first, one of each, both
        // the second, so the 95% bounds are the two extremes):
        //   deal 1/2 = 50 % [0, 100]; beside it the learner's ρ over deals 0.75 (one deal);
        //   format-ok learner (1 + 1)/(2 + 1) = 66.7 % (its interval [50, 100] in the JSON);
        //   1 error; turns (2 + 1)/2 = 1.5 (its interval [1, 2] in the JSON)
        let table = stats().table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}: no row pooling every family");
        assert_eq!(
            lines[0],
            "| family | episodes | deal % [95% CI] | learner ρ over deals [95% CI] \
             | learner format ok % | errors | mean turns |"
        );
        let figures = "| 3 | 50.0 [0.0, 100.0] | 0.750 [0.750, 0.750] | 66.7 | 1 | 1.5 |";
        assert_eq!(lines[2], format!("| craigslist {figures}"));
        for line in [lines[1], lines[2]] {
            assert_eq!(
                lines[0].matches('|').count(),
                line.matches('|').count(),
                "one cell per column"
            );
        }
    }

    #[test]
    fn the_table_fits_a_terminal_for_every_family() {
        // Every family, each with a deal the learner lost on (ρ = (100 − 110)/40 = −0.25,
        // so its ρ cells carry minus signs), a fair deal, a walk-away, an episode cut at the
        // turn cap and a backend error: the widest cells the figures give, on the longest family
        // name and "all".
        let s = price_task(125.0, 100.0, 60.0);
        let buyer = || learner_first_as(&s, Role::Buyer);
        let lost = || {
            let moves = [
                turn("110?", "[SUBMIT_DEAL] price:110"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ];
            play(&s, buyer(), &moves)
        };
        let fair = || {
            let moves = [
                turn("70?", "[SUBMIT_DEAL] price:70"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ];
            play(&s, buyer(), &moves)
        };
        let walk = || play(&s, buyer(), &[turn("Bye.", "[WALK_AWAY]")]);
        let cut = || {
            let mut e = Episode::new(s.clone(), buyer()).unwrap();
            for i in 0.. {
                if e.to_move().is_none() {
                    break;
                }
                let price = if i % 2 == 0 { 80 + i } else { 120 - i };
                let action = format!("[SUBMIT_DEAL] price:{price}");
                e.step(turn("How about this?", &action).as_str()).unwrap();
            }
            e
        };
        let error = || {
            let mut e = Episode::new(s.clone(), buyer()).unwrap();
            e.fail_backend(Seat::Learner, "HTTP 500").unwrap();
            e
        };
        let mut stats = RunStats::default();
        let kinds: [&dyn Fn() -> Episode; 5] = [&lost, &fair, &walk, &cut, &error];
        for family in Family::ALL {
            for (i, episode) in kinds.iter().enumerate() {
                for member in 0..3 {
                    let mut r = record(episode());
                    r.family = family;
                    r.group_id = format!("{family}-g{i}");
                    r.episode_id = format!("{family}-g{i}-m{member}");
                    stats.add(&r);
                }
            }
        }
        let table = stats.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + Family::ALL.len() + 1, "{table}");
        assert!(table.contains("| job_interview | 15 | "), "{table}");
        assert!(table.contains("[-0.250, "), "the widest ρ cells: {table}");
        let width = |l: &&str| l.chars().count();
        assert!(lines.iter().all(|l| width(l) <= TABLE_WIDTH), "{table}");
        // The headings are the widest line; the rows leave room for what other figures and a
        // long run add: a minus sign on ρ, 100.0 bounds on the deal rate, two-digit turns,
        // and six-digit episode and error counts (+1 +3 +1 +3 +4 +4).
        let widest_row = lines[2..].iter().map(width).max().unwrap();
        assert!(
            widest_row + 16 <= TABLE_WIDTH,
            "{widest_row} columns:\n{table}"
        );
    }

    #[test]
    fn the_table_averages_the_multi_item_families_each_once_and_pools_nothing() {
        // Deals at 70 (learner ρ (100 − 70)/40 = 0.75) and 110 (−0.25) and a walk-away, on
        // L = 125, B = 100, C = 60, filed under three families:
        //   casino: a deal at 70 and a walk-away → deal 50 %, ρ over deals 0.75
        //   dnd: deals at 70 and 110 → deal 100 %, ρ over deals (0.75 − 0.25)/2 = 0.25
        //   craigslist: a deal at 110 (price: in no average)
        // The multi-item average (BATNA Table 4's "Avg", each family once): deal
        // (50 + 100)/2 = 75.0 %, ρ over deals (0.75 + 0.25)/2 = 0.500 — where a pool of the
        // five episodes would say 4/5 = 80 % and (0.75 + 0.75 − 0.25 − 0.25)/4 = 0.25.
        let s = price_task(125.0, 100.0, 60.0);
        let buyer = || learner_first_as(&s, Role::Buyer);
        let deal = |price: u32| {
            let offer = format!("[SUBMIT_DEAL] price:{price}");
            play(
                &s,
                buyer(),
                &[turn("Offer.", &offer), turn("Fine.", "[ACCEPT_DEAL]")],
            )
        };
        let walk = || play(&s, buyer(), &[turn("Bye.", "[WALK_AWAY]")]);
        let mut stats = RunStats::default();
        let episodes = [
            (Family::Casino, deal(70)),
            (Family::Casino, walk()),
            (Family::Dnd, deal(70)),
            (Family::Dnd, deal(110)),
            (Family::Craigslist, deal(110)),
        ];
        for (i, (family, e)) in episodes.into_iter().enumerate() {
            let mut r = record(e);
            r.family = family;
            r.group_id = format!("g{i}");
            r.episode_id = format!("g{i}-m0");
            stats.add(&r);
        }
        let table = stats.table();
        let last = table.lines().last().unwrap();
        assert!(
            last.starts_with("| multi-item average | 4 | 75.0 [") && last.contains("| 0.500 ["),
            "{table}"
        );
        assert!(!table.contains("| all |"), "{table}");
        // A run of one multi-item family has no average row: its own row says it.
        let mut one = RunStats::default();
        let mut r = record(deal(70));
        r.family = Family::Casino;
        one.add(&r);
        assert!(!one.table().contains(MULTI_ITEM_AVERAGE));
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
        // AT in DialogXpert's turns: the deal's 2 moves are one exchange, the walk-away counts
        // at the cap, max_rounds = 6: (1 + 6)/2 = 3.5; in moves (2 + 12)/2 = 7.
        assert_eq!(all["average_turns"]["value"], 3.5);
        assert_eq!(all["average_moves"]["value"], 7.0);
        // What the printed table leaves out is here: the intervals of its value-only cells,
        // every ending, and each figure of both seats.
        let format_ok = &learner["format_ok_pct_ci"];
        assert!((format_ok["value"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            (&format_ok["low"], &format_ok["high"]),
            (&json!(50.0), &json!(100.0))
        );
        assert_eq!(
            all["mean_turns"],
            json!({"value": 1.5, "low": 1.0, "high": 2.0, "n": 2})
        );
        for ending in [
            "deal",
            "walk_away",
            "reject_loop",
            "max_turns",
            "format_forfeit",
        ] {
            assert!(all["endings_pct"][ending].is_object(), "{ending}: {all}");
        }
        let opponent = &all["seats"]["opponent"];
        assert_eq!(opponent["rho_deals"]["value"], 0.25);
        assert_eq!(opponent["mean_rho"]["value"], 0.125);
        assert_eq!(opponent["points"]["value"], 5.0);
        for figure in [
            "format_ok_pct_ci",
            "malformed_pct",
            "regulated_pct",
            "mean_rho",
            "points",
            "first_bid",
            "sl",
            "score_ratio",
        ] {
            for seat in ["learner", "opponent"] {
                assert!(
                    all["seats"][seat].get(figure).is_some(),
                    "{seat} {figure}: {all}"
                );
            }
        }
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
