//! `dealgym eval` over market scenarios (`--scenarios scenarios/market.jsonl`, issue 45): each
//! entrant (`--player NAME=SPEC`, a model or a scripted trader) trades every market once at
//! [`MARKET_EVAL_SEATS`]' buyer seat and once at its seller seat, every other trader scripted
//! (`rule:zic`, or the one `--opponent` spec), on the same markets and seeds — the same setup,
//! the same seat and the same scripted traders' sampling seeds for every entrant, so the
//! entrants are compared like for like. Each (entrant, seat) is its own run, all written as
//! market records to one file by the eval's one seated loop (`seated.rs`, shared with
//! `--table-role`), so `--resume` continues the file per run.
//!
//! At the end the file is read back into each entrant's figures per side
//! ([`MarketSeatTally`], the score's one home of them, with 95% bootstrap intervals over
//! markets) and ratings: Bradley–Terry ([`TableRatings`], `score`'s one fit) where a situation
//! is one seat of one market setup, which each entrant sat in turn, and the higher profit at
//! it wins. Why not pairwise inside each market, as tables are rated: a market's seats hold
//! different private values, so whether a seat profits says more about its value (intra- or
//! extra-marginal) than about its trader, and every entrant would be compared only with the
//! scripted traders at other seats; at one seat of one setup, only the trader differs.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::grid::Entrant;
use super::seated::{entrant_of_run, play_entrants};
use super::table::ratings_markdown;
use super::table_ratings::situation;
use super::{EvalError, TableRatings};
use crate::game::OutcomeKind;
use crate::record::{MarketRecord, OnDuplicate, RecordFiles, RecordsKind};
use crate::run::{
    build_market_kit, load_markets, market_bootstrap_key, Job, PlannedMarket, RunError, RunOptions,
    Stop, Stopped,
};
use crate::score::{cell, pct_cell, Leaderboard, MarketSeatTally};

/// The seats every entrant sits at in turn: a buyer's, then a seller's (every market has both).
pub const MARKET_EVAL_SEATS: [&str; 2] = ["buyer_1", "seller_1"];

/// What a market eval needs.
#[derive(Debug, Clone)]
pub struct MarketEvalOptions {
    /// Scenarios (market files), seed, group size, concurrency, output file, resume, …; its
    /// `seats` are replaced by each entrant's.
    pub run: RunOptions,
    pub entrants: Vec<Entrant>,
    /// The player every other trader is (`--opponent NAME=SPEC`, its spec); `rule:zic` where
    /// `None`.
    pub others: Option<Entrant>,
    pub on_duplicate: OnDuplicate,
}

/// One entrant's figures at one seat.
#[derive(Debug, Clone, Default)]
struct SideFigures {
    markets: usize,
    errors: usize,
    tally: MarketSeatTally,
}

/// What a market eval did and found.
#[derive(Debug, Clone)]
pub struct MarketEvalSummary {
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stopped: Option<Stopped>,
    others: String,
    /// Each entrant's name and its figures at each of [`MARKET_EVAL_SEATS`].
    entrants: Vec<(String, [SideFigures; 2])>,
    ratings: Leaderboard,
}

impl MarketEvalSummary {
    /// The per-entrant table (a row per entrant and seat) and the ratings, as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "Entrants at `{}` and at `{}` of every market (the other traders play {}); 95% bootstrap intervals over markets\n\n\
             | entrant | seat | markets | errors | profit | share of surplus % | trade % | distance from equilibrium range | efficiency % | malformed % |\n\
             |---|---|---:|---:|---|---|---|---|---|---|\n",
            MARKET_EVAL_SEATS[0], MARKET_EVAL_SEATS[1], self.others
        );
        for (name, sides) in &self.entrants {
            for (role, side) in MARKET_EVAL_SEATS.iter().zip(sides) {
                let f = side.tally.figures();
                let _ = writeln!(
                    out,
                    "| {name} | {role} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    side.markets,
                    side.errors,
                    cell(f.profit, 2),
                    pct_cell(f.share),
                    pct_cell(f.trade_rate),
                    cell(f.distance, 2),
                    pct_cell(f.efficiency),
                    pct_cell(f.malformed),
                );
            }
        }
        out.push_str(&ratings_markdown(
            "Ratings: Bradley–Terry on profit, the entrants that sat at the same seat of the same market compared (ties as half), 95% bootstrap intervals over those situations",
            &self.ratings,
        ));
        out
    }
}

/// Play every entrant's markets not yet in the file at each of [`MARKET_EVAL_SEATS`], through
/// the eval's one seated loop, then read the file back into the figures and ratings.
pub async fn eval_markets<'s>(
    options: &MarketEvalOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<MarketEvalSummary, EvalError> {
    let run = &options.run;
    let scenarios = load_markets(&run.scenarios, &run.selection())?;
    run.check_plan_size(
        scenarios.len(),
        "scenarios",
        options.entrants.len() * MARKET_EVAL_SEATS.len(),
    )?;
    for s in &scenarios {
        if let Some(role) = MARKET_EVAL_SEATS.iter().find(|r| s.seat_of(r).is_none()) {
            return Err(RunError::Options(format!(
                "market {} has no trader `{role}`: a market eval seats every entrant at {} and {} in turn",
                s.id, MARKET_EVAL_SEATS[0], MARKET_EVAL_SEATS[1]
            ))
            .into());
        }
    }
    let mut kits = Vec::new();
    let mut names = Vec::new();
    let mut seats = Vec::new();
    for entrant in &options.entrants {
        for (side, role) in MARKET_EVAL_SEATS.iter().enumerate() {
            let mut o = run.clone();
            o.seats = vec![(role.to_string(), entrant.spec.clone())];
            kits.push(Arc::new(build_market_kit(
                &o,
                &scenarios,
                options.others.as_ref().map(|e| e.spec.as_str()),
            )?));
            names.push(entrant.name.as_str());
            seats.push(side);
        }
    }
    let run_ids: Vec<String> = kits.iter().map(|k| k.run_id.clone()).collect();
    entrant_of_run(&run_ids, &names)?;
    let played = play_entrants(
        run,
        &scenarios,
        &run_ids,
        |k, scenario, seeds| {
            Job::Market(
                kits[k].clone(),
                PlannedMarket {
                    scenario: scenario.clone(),
                    seeds,
                },
            )
        },
        stop,
    )
    .await?;

    // Each run id to its entrant and seat.
    let of: HashMap<&str, (usize, usize)> = run_ids
        .iter()
        .enumerate()
        .map(|(k, id)| (id.as_str(), (k / MARKET_EVAL_SEATS.len(), seats[k])))
        .collect();
    let mut entrants: Vec<(String, [SideFigures; 2])> = options
        .entrants
        .iter()
        .map(|e| (e.name.clone(), Default::default()))
        .collect();
    let mut ratings = TableRatings::default();
    let files = std::slice::from_ref(&run.out);
    for located in RecordFiles::open(files, options.on_duplicate)
        .of_kind(RecordsKind::Market)
        .read_as::<MarketRecord>()
    {
        let r = located?.record;
        let Some(&(entrant, side)) = of.get(r.run_id.as_str()) else {
            continue;
        };
        let role = MARKET_EVAL_SEATS[side];
        let figures = &mut entrants[entrant].1[side];
        figures.markets += 1;
        if r.outcome.outcome.kind == OutcomeKind::Error {
            figures.errors += 1;
            continue;
        }
        let Some(seat) = r.seats.iter().position(|s| s.role == role) else {
            continue;
        };
        let m = &r.outcome.metrics;
        figures.tally.add(
            market_bootstrap_key(&r),
            m,
            &r.outcome.trades,
            &r.turns,
            seat,
        );
        let profit = m.surplus.get(seat).copied().unwrap_or(0.0);
        let key = situation([r.scenario_id.as_str(), r.episode_id.as_str(), role]);
        ratings.add_scores(key, [(entrants[entrant].0.clone(), profit)]);
    }
    Ok(MarketEvalSummary {
        planned: played.planned,
        skipped: played.skipped,
        written: played.written,
        stopped: played.stopped,
        others: options.others.as_ref().map_or_else(
            || crate::run::DEFAULT_TRADER.spec().to_string(),
            |e| format!("{} ({})", e.name, e.spec),
        ),
        entrants,
        ratings: ratings.leaderboard(),
    })
}
