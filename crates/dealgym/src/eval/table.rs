//! `dealgym eval --table-role ROLE` over n-party scenarios: each entrant (`--player NAME=SPEC`)
//! sits at ROLE in turn, the other roles playing `rule:deliberation` (the scripted party of
//! their incentive), on the same scenarios and seeds — paired setups, as in the two-party eval.
//! Each entrant is its own run (its run id folds in its seat), all written to one file, so
//! `--resume` works per entrant. Tables are played by `run`'s table driver as
//! [`Job::Table`](crate::run::Job) jobs of the eval's one seated loop (`seated.rs`, shared with
//! the market eval); this module plans and lays out, it plays nothing itself.
//!
//! At the end the file is read back: per entrant, its episodes, deal %, mean ρ at the role
//! (no deal counting 0) and the paper's metrics, and the pairwise Bradley–Terry ratings
//! ([`super::TableRatings`]) where each entrant is named and the scripted parties by spec and
//! role. Every entrant meets the same scripted parties on the same setups, so the entrants'
//! ratings share one scale through them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::grid::Entrant;
use super::seated::{entrant_of_run, play_entrants};
use super::{EvalError, TableRatings};
use crate::game::OutcomeKind;
use crate::record::{OnDuplicate, RecordFiles, TableRecord};
use crate::run::{
    build_table_kit, load_tables, Job, PlannedTable, RunError, RunOptions, Stop, Stopped,
};
use crate::score::Leaderboard;

/// What a table eval needs.
#[derive(Debug, Clone)]
pub struct TableEvalOptions {
    /// Scenarios (table files), seed, group size, concurrency, output file, resume, …; its
    /// `seats` are replaced by each entrant's.
    pub run: RunOptions,
    /// The role every entrant sits at in turn.
    pub role: String,
    pub entrants: Vec<Entrant>,
    pub on_duplicate: OnDuplicate,
}

/// One entrant's figures at the role.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntrantFigures {
    pub(crate) name: String,
    pub(crate) run_id: String,
    /// Its episodes' endings and metrics.
    pub(crate) tally: crate::score::TableTally,
    pub(crate) rho_sum: f64,
}

/// What a table eval did and found.
#[derive(Debug, Clone)]
pub struct TableEvalSummary {
    pub(crate) role: String,
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stopped: Option<Stopped>,
    pub(crate) entrants: Vec<EntrantFigures>,
    pub(crate) ratings: Leaderboard,
}

impl TableEvalSummary {
    /// The per-entrant table and the ratings, as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "Entrants at `{}` (the other roles play rule:deliberation)\n\n| entrant | episodes | errors | deal % | mean ρ | deal final round % | unanimous final % |\n|---|---:|---:|---:|---:|---:|---:|\n",
            self.role
        );
        for e in &self.entrants {
            let scored = e.tally.episodes - e.tally.errors;
            let pct = |n: usize| {
                if scored == 0 {
                    "–".to_string()
                } else {
                    format!("{:.1}", 100.0 * n as f64 / scored as f64)
                }
            };
            let rho = if scored == 0 {
                "–".to_string()
            } else {
                format!("{:.3}", e.rho_sum / scored as f64)
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {rho} | {} | {} |",
                e.name,
                e.tally.episodes,
                e.tally.errors,
                pct(e.tally.deals),
                pct(e.tally.deal_final),
                pct(e.tally.unanimous_final)
            );
        }
        out.push_str(&ratings_markdown(
            "Ratings: pairwise Bradley–Terry inside each episode (every pair of seats on ρ, ties as half), 95% bootstrap intervals over episodes",
            &self.ratings,
        ));
        out
    }
}

/// The ratings under `heading`, as a Markdown table: each player's rating with its interval,
/// its comparisons and its group of comparable players.
pub(crate) fn ratings_markdown(heading: &str, board: &Leaderboard) -> String {
    let mut out = format!(
        "\n{heading}\n\n| player | rating | interval | comparisons | group |\n|---|---:|---|---:|---:|\n"
    );
    for r in &board.ratings {
        let num = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | [{}, {}] | {} | {} |",
            r.player,
            num(r.rating),
            num(r.low),
            num(r.high),
            r.comparisons,
            r.group.map_or("–".to_string(), |g| g.to_string())
        );
    }
    out
}

/// Play every entrant's tables not yet in the file, through one executor, then read the file
/// back into the figures and ratings.
pub async fn eval_tables<'s>(
    options: &TableEvalOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<TableEvalSummary, EvalError> {
    let run = &options.run;
    let scenarios = load_tables(&run.scenarios, &run.selection())?;
    run.check_plan_size(scenarios.len(), "scenarios", options.entrants.len())?;
    if let Some(s) = scenarios
        .iter()
        .find(|s| s.seat_of(&options.role).is_none())
    {
        let roles: Vec<&str> = s.parties.iter().map(|p| p.role.as_str()).collect();
        return Err(RunError::Options(format!(
            "--table-role {}: not a party of scenario {} (its roles: {})",
            options.role,
            s.id,
            roles.join(", ")
        ))
        .into());
    }
    let mut kits = Vec::new();
    for entrant in &options.entrants {
        let mut o = run.clone();
        o.seats = vec![(options.role.clone(), entrant.spec.clone())];
        kits.push(Arc::new(build_table_kit(&o, &scenarios, &[])?));
    }
    let run_ids: Vec<String> = kits.iter().map(|k| k.run_id.clone()).collect();
    let entrant_names: Vec<&str> = options.entrants.iter().map(|e| e.name.as_str()).collect();
    let names = entrant_of_run(&run_ids, &entrant_names)?;
    let played = play_entrants(
        run,
        &scenarios,
        &run_ids,
        |k, scenario, seeds| {
            Job::Table(
                kits[k].clone(),
                PlannedTable {
                    scenario: scenario.clone(),
                    seeds,
                    prefix: None,
                },
            )
        },
        stop,
    )
    .await?;

    let mut figures: BTreeMap<String, EntrantFigures> = BTreeMap::new();
    let mut ratings = TableRatings::default();
    let files = std::slice::from_ref(&run.out);
    for located in RecordFiles::open(files, options.on_duplicate)
        .of_kind(crate::record::RecordsKind::Table)
        .read_as::<TableRecord>()
    {
        let r = located?.record;
        let Some(name) = names.get(&r.run_id) else {
            continue;
        };
        let f = figures
            .entry(r.run_id.clone())
            .or_insert_with(|| EntrantFigures {
                name: name.clone(),
                run_id: r.run_id.clone(),
                ..EntrantFigures::default()
            });
        f.tally.add(r.outcome.outcome.kind, &r.outcome.metrics);
        if r.outcome.outcome.kind == OutcomeKind::Error {
            continue;
        }
        f.rho_sum += r.outcome.rho.get(&options.role).copied().unwrap_or(0.0);
        let role = options.role.clone();
        ratings.add(&r, |seat| {
            (r.seats.get(seat).map(|s| s.role.as_str()) == Some(role.as_str()))
                .then(|| name.clone())
        });
    }
    let mut entrants: Vec<EntrantFigures> = figures.into_values().collect();
    let order = |name: &str| options.entrants.iter().position(|e| e.name == name);
    entrants.sort_by_key(|e| order(&e.name));
    Ok(TableEvalSummary {
        role: options.role.clone(),
        planned: played.planned,
        skipped: played.skipped,
        written: played.written,
        stopped: played.stopped,
        entrants,
        ratings: ratings.leaderboard(),
    })
}
