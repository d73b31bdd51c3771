//! `replay --verify` on market records (`"kind": "market"`, issue 45): each record is replayed
//! through the market rulebook ([`MarketRecord::replay`], the one replay of a market) against
//! its [`MarketScenario`]; where it differs, what differs is named field by field as for
//! tables and two-party records (`turn 4` `turn.parsed.action`, `outcome.trades`, …).
//!
//! Scenarios are found in the `--scenarios` market files when given, otherwise in
//! `scenarios/market.jsonl` ([`MarketSource`]).

use std::path::Path;
use std::sync::Arc;

use super::source::SeatedSource;
use super::verify::{diff_records, diff_turns, json, Difference};
use super::{Error, VerifyOptions, VerifyReport};
use crate::game::{OutcomeKind, Prompts};
use crate::record::{MarketRecord, MarketReplayError, RecordsKind};
use crate::run::FindError;
use crate::scenario::{MarketFamily, MarketScenario, SCENARIO_DIR};

/// Where market scenarios are looked up: the market files among `--scenarios`, or
/// `{dir}/market.jsonl`.
pub(crate) type MarketSource = SeatedSource<MarketScenario>;

impl MarketSource {
    /// The scenario `record` was played on, by its id (its digest is checked by the replay).
    pub fn find(&mut self, record: &MarketRecord) -> Result<Arc<MarketScenario>, FindError> {
        let family = MarketFamily::Market.name();
        self.find_in(family, &record.episode_id, &record.scenario_id)
    }
}

/// `--verify` over files of market records.
pub(crate) fn verify_markets(options: &VerifyOptions) -> Result<VerifyReport, Error> {
    if options.rewards.is_some() {
        return Err(Error::Options(
            "--config's [rewards] rescore two-party and table records; a market record holds \
             no rewards: verify market records without it"
                .into(),
        ));
    }
    let mut scenarios = MarketSource::in_dir(&options.scenarios, Path::new(SCENARIO_DIR))?;
    let prompts = super::load_prompts(options.prompts_dir.as_deref())?;
    super::verify::verify_each(
        options,
        RecordsKind::Market,
        |r: &MarketRecord| r.episode_id.as_str(),
        |r| scenarios.find(r),
        |r, scenario| check_market(r, &scenario, &prompts),
    )
}

/// What differs between `record` and what the market rulebook makes of its completions on
/// `scenario`; empty when they agree exactly.
fn check_market(
    record: &MarketRecord,
    scenario: &Arc<MarketScenario>,
    prompts: &Arc<Prompts>,
) -> Vec<Difference> {
    match record.replay(scenario, prompts.clone()) {
        Ok(()) => Vec::new(),
        Err(e) => {
            detailed(record, scenario, prompts, &e).unwrap_or_else(|| vec![cannot_replay(&e)])
        }
    }
}

/// The fields that differ, named as the other kinds name them. At a turn: the turns before it
/// replayed, the one turn stepped, and its fields compared (`turn.parsed`, `turn.trade`, …). At
/// the outcome: the whole record replayed, rebuilt, and compared field by field
/// (`outcome.trades`, `outcome.metrics.efficiency`, …). `None` where that cannot be done (the
/// coarse row is given then).
fn detailed(
    record: &MarketRecord,
    scenario: &Arc<MarketScenario>,
    prompts: &Arc<Prompts>,
    e: &MarketReplayError,
) -> Option<Vec<Difference>> {
    let mut differences = Vec::new();
    match e {
        MarketReplayError::TurnDiffers { turn, .. } => {
            let i = *turn;
            let logged = record.turns.get(i)?;
            let mut before = record.clone();
            before.turns.truncate(i);
            let mut episode = before.replay_turns(scenario, prompts.clone()).ok()?;
            episode.step(logged.seat, logged.completion.clone()).ok()?;
            let replayed = episode.turns().get(i)?;
            diff_turns(&json(&[logged]), &json(&[replayed]), &mut differences);
            for d in &mut differences {
                d.turn = Some(i);
            }
        }
        MarketReplayError::OutcomeDiffers { .. } => {
            let episode = record.replay_turns(scenario, prompts.clone()).ok()?;
            let players: Vec<String> = record.seats.iter().map(|s| s.player.clone()).collect();
            let mut rebuilt =
                MarketRecord::of(&episode, &record.run_id, &record.episode_id, &players);
            // What the rulebook does not compute (who sat where, what each call cost) is the
            // record's.
            rebuilt.schema = record.schema;
            rebuilt.scenario_digest = record.scenario_digest;
            rebuilt.seats = record.seats.clone();
            rebuilt.calls = record.calls.clone();
            // A market stopped from outside keeps its own ending; its trades and metrics are
            // compared as any market's.
            if record.outcome.outcome.kind == OutcomeKind::Error {
                rebuilt.outcome.outcome = record.outcome.outcome.clone();
            }
            diff_records(&json(record), &json(&rebuilt), &mut differences);
        }
        _ => return None,
    }
    (!differences.is_empty()).then_some(differences)
}

fn cannot_replay(e: &MarketReplayError) -> Difference {
    let field = match e {
        MarketReplayError::ScenarioChanged { .. } => "scenario changed",
        MarketReplayError::Unplayable { .. } => "replay failed",
        MarketReplayError::TurnDiffers { .. } => "turns",
        MarketReplayError::OutcomeDiffers { .. } => "outcome",
    };
    Difference::cannot_replay(field, e.to_string())
}
