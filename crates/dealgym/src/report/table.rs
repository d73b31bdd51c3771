//! `report` on table records (n-party games, `"kind": "table"`): per-seat tables — per role:
//! episodes, deals, mean score over deals, mean ρ (no deal counting 0), the share of its
//! proposals that break its own minimum (the scenario's rule, [`counts_toward`]), acceptances
//! made and the format-ok share of its attempts — the paper's four metrics and dealgym's per
//! scenario, the pairwise Bradley–Terry ratings of the players ([`TableRatings`]), and a chart
//! per party: the distribution of its ρ. Written as `report.md`, `report.html`, `tables/*.csv`
//! and `charts/*.svg`, like a two-party report.
//!
//! Records are read one at a time; what grows is one counter per role and scenario, and each
//! role's ρ histogram. Scenarios are found as `replay` finds them (`--scenarios`, else
//! `scenarios/{family}.jsonl`); a record whose scenario is not found still counts everywhere
//! but in the rule-breaking share.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::HISTOGRAM_BINS;
use super::{histogram_chart, Cell, Column, ReportError, ReportOptions, ReportSummary, Sheet};
use crate::eval::TableRatings;
use crate::game::OutcomeKind;
use crate::protocol::Action;
use crate::record::{RecordFiles, TableRecord};
use crate::replay::TableSource;
use crate::scenario::TableScenario;
use crate::score::Quantiles;
use crate::table::counts_toward;

/// One role's counts.
#[derive(Debug, Default)]
struct RoleFigures {
    episodes: usize,
    deals: usize,
    score_sum: f64,
    rho_sum: f64,
    proposals: usize,
    /// Proposals checked against the minimum (their scenario was found) and those breaking it.
    proposals_checked: usize,
    breaking: usize,
    acceptances: usize,
    attempts: usize,
    format_ok: usize,
    /// Narrated attempts, and those whose Talk contradicts the decided move.
    narrated: usize,
    contradicted: usize,
    rho: Quantiles,
}

/// One scenario's counts (the paper's metrics, dealgym's).
#[derive(Debug, Default)]
struct ScenarioFigures {
    tally: crate::score::TableTally,
}

/// Everything a table report gathers.
#[derive(Debug, Default)]
struct TableCollector {
    roles: BTreeMap<String, RoleFigures>,
    scenarios: BTreeMap<String, ScenarioFigures>,
    ratings: TableRatings,
    episodes: usize,
}

impl TableCollector {
    fn add(&mut self, r: &TableRecord, scenario: Option<&TableScenario>) {
        self.episodes += 1;
        let s = self.scenarios.entry(r.scenario_id.clone()).or_default();
        let kind = r.outcome.outcome.kind;
        s.tally.add(kind, &r.outcome.metrics);
        if kind == OutcomeKind::Error {
            return;
        }
        for (seat, seat_record) in r.seats.iter().enumerate() {
            let f = self.roles.entry(seat_record.role.clone()).or_default();
            f.episodes += 1;
            let rho = r.outcome.rho.get(&seat_record.role).copied().unwrap_or(0.0);
            f.rho_sum += rho;
            f.rho.add(rho);
            if let Some(score) = r.outcome.scores.get(&seat_record.role) {
                f.deals += 1;
                f.score_sum += *score as f64;
            }
            for t in r.turns.iter().filter(|t| t.turn.seat == seat) {
                f.attempts += 1;
                f.format_ok += usize::from(t.turn.parsed.counts_as_format_ok());
                if let Some(n) = &t.turn.completion.narration {
                    f.narrated += 1;
                    f.contradicted += usize::from(!n.contradictions.is_empty());
                }
                match t.turn.played() {
                    Some(Action::Accept) => f.acceptances += 1,
                    Some(Action::Submit(terms)) => {
                        f.proposals += 1;
                        let deal = TableScenario::deal_of(terms);
                        if let (Some(scenario), Some(deal)) = (scenario, deal) {
                            f.proposals_checked += 1;
                            f.breaking += usize::from(!counts_toward(scenario, seat, &deal));
                        }
                    }
                    _ => {}
                }
            }
        }
        // A person is no player to rate: a table a person sat at stays out of the ratings
        // (its seats count in their roles' figures, as every seat's do).
        if !r
            .seats
            .iter()
            .any(|s| crate::record::PlayerSpec::is_person_spec(&s.player))
        {
            self.ratings.add(r, |_| None);
        }
    }
}

fn share(n: usize, of: usize) -> Cell {
    Cell::Number((of > 0).then(|| 100.0 * n as f64 / of as f64), 1)
}

fn mean(sum: f64, n: usize, digits: usize) -> Cell {
    Cell::Number((n > 0).then(|| sum / n as f64), digits)
}

fn roles_table(c: &TableCollector) -> Sheet {
    // A narrated seat's consistency, where any role was narrated.
    let narrated = c.roles.values().any(|f| f.narrated > 0);
    let mut sheet = Sheet {
        name: "table_roles".into(),
        title: "Per seat (role): deals, score, ρ, proposals breaking the seat's own minimum, \
                acceptances, format"
            .into(),
        columns: vec![
            Column::new("role", "role"),
            Column::new("episodes", "episodes"),
            Column::new("deal %", "deal_pct"),
            Column::new("mean score (deals)", "mean_score"),
            Column::new("mean ρ (all)", "mean_rho"),
            Column::new("proposals", "proposals"),
            Column::new("below own minimum %", "breaking_pct"),
            Column::new("acceptances", "acceptances"),
            Column::new("format ok %", "format_ok_pct"),
        ],
        rows: c
            .roles
            .iter()
            .map(|(role, f)| {
                vec![
                    Cell::Text(role.clone()),
                    Cell::Count(f.episodes as u64),
                    share(f.deals, f.episodes),
                    mean(f.score_sum, f.deals, 1),
                    mean(f.rho_sum, f.episodes, 3),
                    Cell::Count(f.proposals as u64),
                    share(f.breaking, f.proposals_checked),
                    Cell::Count(f.acceptances as u64),
                    share(f.format_ok, f.attempts),
                ]
            })
            .collect(),
    };
    if narrated {
        sheet
            .columns
            .push(Column::new("narration consistent %", "consistency_pct"));
        for (row, f) in sheet.rows.iter_mut().zip(c.roles.values()) {
            row.push(share(f.narrated - f.contradicted, f.narrated));
        }
    }
    sheet
}

fn scenarios_table(c: &TableCollector) -> Sheet {
    Sheet {
        name: "table_scenarios".into(),
        title: "Per scenario (game:variant): the paper's four metrics, then dealgym's".into(),
        columns: vec![
            Column::new("scenario", "scenario"),
            Column::new("episodes", "episodes"),
            Column::new("errors", "errors"),
            Column::new("deal %", "deal_pct"),
            Column::new("deal any round %", "deal_any_pct"),
            Column::new("deal final round %", "deal_final_pct"),
            Column::new("unanimous final %", "unanimous_final_pct"),
            Column::new("wrong proposals %", "wrong_pct"),
            Column::new("Pareto % (deals)", "pareto_pct"),
            Column::new("mean Nash product", "nash_product"),
        ],
        rows: c
            .scenarios
            .iter()
            .map(|(id, s)| {
                let scored = s.tally.episodes - s.tally.errors;
                vec![
                    Cell::Text(id.clone()),
                    Cell::Count(s.tally.episodes as u64),
                    Cell::Count(s.tally.errors as u64),
                    share(s.tally.deals, scored),
                    share(s.tally.deal_any, scored),
                    share(s.tally.deal_final, scored),
                    share(s.tally.unanimous_final, scored),
                    mean(100.0 * s.tally.wrong_sum, s.tally.wrong_n, 1),
                    share(s.tally.pareto, s.tally.pareto_n),
                    mean(s.tally.nash_sum, s.tally.nash_n, 0),
                ]
            })
            .collect(),
    }
}

fn ratings_table(c: &TableCollector) -> Option<Sheet> {
    let board = c.ratings.leaderboard();
    if board.ratings.len() < 2 {
        return None;
    }
    Some(Sheet {
        name: "table_ratings".into(),
        title: "Pairwise Bradley–Terry inside each episode (every pair of seats compared on ρ, \
                ties as half), with 95% bootstrap intervals over episodes"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("rating", "rating"),
            Column::new("low", "low"),
            Column::new("high", "high"),
            Column::new("comparisons", "comparisons"),
            Column::new("wins", "wins"),
            Column::new("group", "group"),
        ],
        rows: board
            .ratings
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.player.clone()),
                    Cell::Number(r.rating, 0),
                    Cell::Number(r.low, 0),
                    Cell::Number(r.high, 0),
                    Cell::Count(r.comparisons as u64),
                    Cell::Number(Some(r.wins), 1),
                    Cell::Text(r.group.map_or("–".into(), |g| g.to_string())),
                ]
            })
            .collect(),
    })
}

/// The report of `files`, which hold table records.
pub(crate) fn report_tables(
    options: &ReportOptions,
    files: &[PathBuf],
) -> Result<ReportSummary, ReportError> {
    let mut scenarios =
        TableSource::in_dir(&options.scenarios, Path::new(crate::scenario::SCENARIO_DIR))
            .map_err(|e| ReportError::Scenarios(e.to_string()))?;
    let mut c = TableCollector::default();
    let mut records = RecordFiles::open(files, options.on_duplicate)
        .of_kind(crate::record::RecordsKind::Table)
        .read_as::<TableRecord>();
    for located in &mut records {
        let record = located?.record;
        let scenario = scenarios.find(&record).ok();
        c.add(&record, scenario.as_deref());
    }
    if c.episodes == 0 {
        let names: Vec<String> = options
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        return Err(ReportError::Empty(names.join(", ")));
    }
    let out = &options.out;
    let mut written = Vec::new();
    super::make_dirs(out)?;
    let mut write = |path: PathBuf, text: &str| super::write_file(&mut written, path, text);
    let tables: Vec<Sheet> = [
        Some(roles_table(&c)),
        Some(scenarios_table(&c)),
        ratings_table(&c),
    ]
    .into_iter()
    .flatten()
    .collect();
    for t in &tables {
        write(out.join("tables").join(format!("{}.csv", t.name)), &t.csv())?;
    }
    // A chart per party: the distribution of its ρ.
    let mut charts = Vec::new();
    for (role, f) in &c.roles {
        let title = format!("ρ of {role} over {} episodes", f.episodes);
        let svg = histogram_chart(
            &title,
            "ρ (score over the best it could score)",
            &f.rho.histogram(HISTOGRAM_BINS),
        )?;
        let name = format!("rho_{}", file_safe(role));
        write(out.join("charts").join(format!("{name}.svg")), &svg)?;
        charts.push((name, title, svg));
    }
    let files_line = options
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut md = format!(
        "# dealgym report: tables\n\nFiles: {files_line}. {} episodes of n-party games \
         (table records). ρ is a party's score over the best it could score (0 without a \
         deal).\n\n",
        c.episodes
    );
    let mut html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dealgym report: tables</title>\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:auto}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 6px}}td.num{{text-align:right}}</style></head><body>\n\
         <h1>dealgym report: tables</h1>\n<p>Files: {}. {} episodes of n-party games.</p>\n",
        crate::replay::render::escape(&files_line),
        c.episodes
    );
    for t in &tables {
        let _ = write!(md, "## {}\n\n{}\n", t.title, t.markdown());
        let _ = write!(
            html,
            "<h2>{}</h2>\n{}\n",
            crate::replay::render::escape(&t.title),
            t.html()
        );
    }
    md.push_str("## A chart per party: ρ\n\n");
    html.push_str("<h2>A chart per party: ρ</h2>\n");
    for (name, title, svg) in &charts {
        let _ = writeln!(md, "![{title}](charts/{name}.svg)\n");
        let _ = writeln!(html, "<figure>{svg}</figure>");
    }
    html.push_str("</body></html>\n");
    write(out.join("report.md"), &md)?;
    write(out.join("report.html"), &html)?;
    Ok(ReportSummary {
        episodes: c.episodes,
        transcripts: 0,
        written,
        duplicates: records.duplicates().clone(),
        passed_over: records.passed_over(),
    })
}

/// A role as a file name: letters, digits, `-` and `_` kept, the rest `_`.
fn file_safe(role: &str) -> String {
    role.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
