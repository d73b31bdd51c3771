//! Runs of markets (`run --scenarios scenarios/market.jsonl --seat ROLE=SPEC …`, issue 45): the
//! plan (each market a GRPO group of `--group-size` members, seeded as tables are), each seat's
//! player (a scripted trader — `rule:zic` for every role not named — a model, a script), the
//! one driver loop ([`crate::engine::drive`]) and the summary. Markets are played by the one
//! executor ([`super::execute`]) as [`super::Job::Market`] jobs and written as
//! [`MarketRecord`] lines (`"kind": "market"`) by the same record writer. A seat's player is
//! the table's ([`crate::agents::MarketPlayer`]: one seat path over both episodes).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::agents::MarketPlayer;
use crate::engine::drive;
use crate::game::{EpisodeSeed, ErrorCause, Prompts};
use crate::llm::http_client;
use crate::market::{MarketEpisode, MarketOptions, MarketSetup};
use crate::negotiator::market::MarketRule;
use crate::record::{MarketCallRecord, MarketRecord};
use crate::reward::RewardConfig;
use crate::scenario::{load_market_scenarios, LoadOptions, MarketScenario};
use crate::score::MarketTally;

use super::table::{execute_seated, load_seated, seated_run_id, RunSeats};
use super::{RunError, RunOptions, Stop, Stopped};

/// The scripted trader of every role a market run does not name (`--seat ROLE=SPEC`).
pub const DEFAULT_TRADER: MarketRule = MarketRule::Zic;

/// What every market of a run shares: the players by role, the options, the run id.
pub(crate) struct MarketKit {
    pub run_id: String,
    /// The player of each named role; the others play `others`.
    pub seats: BTreeMap<String, MarketPlayer>,
    /// The player of every role not named: [`DEFAULT_TRADER`] in a run, the other traders an
    /// eval names (`eval --opponent`).
    pub others: MarketPlayer,
    pub options: MarketOptions,
    pub prompts: Arc<Prompts>,
}

impl MarketKit {
    fn player(&self, role: &str) -> MarketPlayer {
        self.seats
            .get(role)
            .cloned()
            .unwrap_or_else(|| self.others.clone())
    }
}

/// One market to play.
#[derive(Debug, Clone)]
pub(crate) struct PlannedMarket {
    pub scenario: Arc<MarketScenario>,
    pub seeds: EpisodeSeed,
}

/// An ended market from the executor.
pub(crate) type MarketFinished = super::driver::Finished<MarketRecord>;

/// Totals of the markets of a run: endings, turns, and the metrics' tally (efficiency with its
/// interval, trades, extra-marginal trades).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarketStats {
    pub(crate) tally: MarketTally,
    pub(crate) endings: BTreeMap<crate::game::OutcomeKind, usize>,
    pub turns: usize,
    pub internal_errors: usize,
}

impl MarketStats {
    pub(crate) fn add(&mut self, r: &MarketRecord) {
        let kind = r.outcome.outcome.kind;
        *self.endings.entry(kind).or_default() += 1;
        self.turns += r.turns.len();
        if kind != crate::game::OutcomeKind::Error {
            self.tally.add(bootstrap_key(r), &r.outcome.metrics);
        }
    }

    /// Markets played (errors among them).
    pub fn episodes(&self) -> usize {
        self.endings.values().sum()
    }

    /// The summary table: endings, trades and allocative efficiency with its 95 % interval.
    pub fn table(&self) -> String {
        let episodes = self.episodes();
        let count = |k| self.endings.get(&k).copied().unwrap_or(0);
        let (trades, extra) = self.tally.trades();
        let scored = self.tally.episodes().max(1) as f64;
        let efficiency = self.tally.efficiency().map_or_else(
            || "–".to_string(),
            |e| {
                format!(
                    "{:.1} [{:.1}, {:.1}]",
                    100.0 * e.value,
                    100.0 * e.low,
                    100.0 * e.high
                )
            },
        );
        format!(
            "| markets | errors | deal | walk away | max turns | forfeits | trades / market | extra-marginal trades | efficiency % [95% CI] | mean turns |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n\
             | {episodes} | {} | {} | {} | {} | {} | {:.2} | {extra} | {efficiency} | {:.1} |\n",
            count(crate::game::OutcomeKind::Error),
            count(crate::game::OutcomeKind::Deal),
            count(crate::game::OutcomeKind::WalkAway),
            count(crate::game::OutcomeKind::MaxTurns),
            count(crate::game::OutcomeKind::FormatForfeit),
            trades as f64 / scored,
            self.turns as f64 / episodes.max(1) as f64,
        )
    }
}

/// The bootstrap key of a market record (its resampling weights): its run and episode ids,
/// so the same records give the same intervals in a run's summary and in `report`.
pub(crate) fn bootstrap_key(r: &MarketRecord) -> u64 {
    crate::game::mix_text(vec![], &format!("{}|{}", r.run_id, r.episode_id))
}

/// What a market run did.
#[derive(Debug)]
pub struct MarketRunSummary {
    pub run_id: String,
    pub planned: usize,
    pub skipped: usize,
    pub written: usize,
    pub stats: MarketStats,
    pub stopped: Option<Stopped>,
    pub elapsed: std::time::Duration,
}

/// The market kit of a run: each named seat's player (every role must be a trader of every
/// market), the player of the others (`others`, a spec: [`DEFAULT_TRADER`] where `None`), the
/// options, the run id (folding in `others` where given, so a run keeps its id). What a market
/// cannot honour is refused here, before anything is played.
pub(crate) fn build_market_kit(
    options: &RunOptions,
    scenarios: &[Arc<MarketScenario>],
    others: Option<&str>,
) -> Result<MarketKit, RunError> {
    if options.rewards != RewardConfig::default() {
        return Err(RunError::Options(
            "[rewards]: a market record holds no rewards yet (its metrics are its outcome; \
             `export` rewards each seat with its surplus): leave [rewards] out for market \
             scenarios"
                .into(),
        ));
    }
    if !options.episode.talk.is_on() {
        return Err(RunError::Options(
            "[episode] talk = \"off\" (--talk off) is the two-party talk ablation: a market \
             forwards talk as its rules say; leave it on for market scenarios"
                .into(),
        ));
    }
    if options.probes.beliefs {
        return Err(RunError::Options(
            "[probes] beliefs = true (--belief-probes) asks a two-party seat for the other \
             side's private values; a market has no one other side: leave probes off for \
             market scenarios"
                .into(),
        ));
    }
    refuse_unhonoured(options)?;
    let http = http_client(options.concurrency.max(8))
        .map_err(|e| RunError::Options(format!("cannot build the HTTP client: {e}")))?;
    let mut seats = BTreeMap::new();
    for (role, spec) in &options.seats {
        for s in scenarios {
            if s.seat_of(role).is_none() {
                return Err(RunError::Options(format!(
                    "--seat {role}=…: market {} has no trader `{role}` (its roles: {})",
                    s.id,
                    s.traders
                        .iter()
                        .map(|t| t.role.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let player =
            MarketPlayer::from_spec(spec, &options.players, &http, &options.sampling.learner)?;
        if seats.insert(role.clone(), player).is_some() {
            return Err(RunError::Options(format!("--seat {role}=… given twice")));
        }
    }
    let (others, identity) = match others {
        Some(spec) => (
            MarketPlayer::from_spec(spec, &options.players, &http, &options.sampling.learner)?,
            vec![format!("others={spec}")],
        ),
        None => (MarketPlayer::Scripted(DEFAULT_TRADER), Vec::new()),
    };
    let market = MarketOptions {
        retries: options.episode.format_retries,
        regulated: options.regulated_roles.clone(),
        format: options.episode.learner_format,
    };
    let run_id = seated_run_id(
        options,
        &format!("market|{market:?}"),
        seats.iter().map(|(role, p)| (role.as_str(), p.spec())),
        scenarios.iter().map(|s| s.id.as_str()),
        &identity,
    );
    Ok(MarketKit {
        run_id,
        seats,
        others,
        options: market,
        prompts: crate::replay::load_prompts(options.prompts_dir.as_deref())?,
    })
}

/// Refuse the settings of a run a market does not take, naming them: of `[episode]`, a market
/// honours `format_retries` and the turn format (`learner_format`, every seat's); the others
/// (max rounds, seatings, regulation by seat, …) are two-party settings. A shard, campaigns and
/// personas are refused too.
fn refuse_unhonoured(options: &RunOptions) -> Result<(), RunError> {
    let honoured = crate::game::EpisodeConfig {
        format_retries: options.episode.format_retries,
        learner_format: options.episode.learner_format,
        ..crate::game::EpisodeConfig::default()
    };
    let (given, kept) = (
        serde_json::to_value(&options.episode).unwrap_or_default(),
        serde_json::to_value(&honoured).unwrap_or_default(),
    );
    if let (Some(given), Some(kept)) = (given.as_object(), kept.as_object()) {
        let unhonoured: Vec<&str> = given
            .iter()
            .filter(|(k, v)| kept.get(*k) != Some(*v))
            .map(|(k, _)| k.as_str())
            .collect();
        if !unhonoured.is_empty() {
            return Err(RunError::Options(format!(
                "[episode] {}: two-party settings a market does not take (it takes \
                 format_retries and the turn format); leave them out for market scenarios",
                unhonoured.join(", ")
            )));
        }
    }
    let refused = [
        (options.shard.is_some(), "--shard"),
        (options.campaigns.is_some(), "--campaigns"),
        (
            options.personas != crate::agents::PersonaConfig::default(),
            "[personas]",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|(given, _)| *given) {
        return Err(RunError::Options(format!(
            "{what} is not taken by a market run yet: leave it out for market scenarios"
        )));
    }
    Ok(())
}

/// The setup of a planned market: its schedule drawn from its seed (the group's, as a
/// table's), its prompts rendered.
fn market_setup(kit: &MarketKit, planned: &PlannedMarket) -> Result<MarketSetup, RunError> {
    MarketSetup::new(
        &planned.scenario,
        &kit.options,
        planned.seeds.table_seed(),
        &kit.prompts,
    )
    .map_err(|e| RunError::Options(format!("market {}: {e}", planned.scenario.id)))
}

/// Play one market to its end with in-process players. A player that cannot answer (after
/// its retries) ends the market as `error`.
async fn play_market(kit: &MarketKit, planned: &PlannedMarket) -> Result<MarketRecord, RunError> {
    let scenario = planned.scenario.clone();
    let setup = market_setup(kit, planned)?;
    let mut episode = MarketEpisode::new(scenario.clone(), setup, kit.prompts.clone())
        .map_err(|e| RunError::Options(format!("market {}: {e}", scenario.id)))?;
    let players = scenario.traders.iter().map(|t| kit.player(&t.role));
    let mut seats = RunSeats::new(players.collect(), planned.seeds);
    drive(&mut episode, &mut seats)
        .await
        .map_err(|e| RunError::Options(format!("market {}: {e}", scenario.id)))?;
    let specs: Vec<String> = seats.players.iter().map(|p| p.spec().to_string()).collect();
    let mut record = MarketRecord::of(&episode, &kit.run_id, &planned.seeds.episode_id(), &specs);
    for (seat, player) in record.seats.iter_mut().zip(&seats.players) {
        seat.model = player.model();
    }
    // A turn's index is its place among the costs: one a turn, in order.
    record.calls = (seats.costs.into_iter().enumerate())
        .filter_map(|(turn, cost)| MarketCallRecord::of(turn, cost))
        .collect();
    Ok(record)
}

/// [`play_market`] with a panic caught ([`super::driver::caught`]): the market then ends as an
/// `error` record saying so.
pub(crate) async fn play_market_caught(
    kit: Arc<MarketKit>,
    planned: PlannedMarket,
) -> Result<MarketFinished, RunError> {
    super::driver::caught(
        play_market(&kit, &planned),
        |message| {
            let setup = market_setup(&kit, &planned)?;
            let mut episode =
                MarketEpisode::new(planned.scenario.clone(), setup, kit.prompts.clone())
                    .map_err(|e| RunError::Options(e.to_string()))?;
            let seat = episode.to_move().unwrap_or(0);
            episode.fail(
                seat,
                ErrorCause::Internal,
                format!("{}: {message}", super::INTERNAL_ERROR),
            );
            let specs: Vec<String> = planned
                .scenario
                .traders
                .iter()
                .map(|t| kit.player(&t.role).spec().to_string())
                .collect();
            Ok(MarketRecord::of(
                &episode,
                &kit.run_id,
                &planned.seeds.episode_id(),
                &specs,
            ))
        },
        |message| RunError::Options(format!("internal error (a bug in dealgym): {message}")),
    )
    .await
}

/// The markets of `files` (a run's, an eval's, a server's market files), each file's as
/// `selection` chooses: its limit (a split or a sample is refused for a market file, naming it).
pub(crate) fn load_markets(
    files: &[PathBuf],
    selection: &super::Selection,
) -> Result<Vec<Arc<MarketScenario>>, RunError> {
    load_seated(files, selection, |file| {
        Ok(load_market_scenarios(file, LoadOptions::default())?.scenarios)
    })
}

/// Run every market of the plan, writing each record as it ends.
pub async fn run_markets<'s>(
    options: &RunOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<MarketRunSummary, RunError> {
    let started = std::time::Instant::now();
    options.check()?;
    if options.learner_given() {
        return Err(RunError::Options(
            "a market seats its traders by role: give --seat ROLE=SPEC (roles not named play rule:zic), not --learner/--opponent".into(),
        ));
    }
    if options.prefixes.is_some() {
        return Err(RunError::Options(
            "--prefixes continues logged two-party episodes and tables; a market is played \
             from its start"
                .into(),
        ));
    }
    let scenarios = load_markets(&options.scenarios, &options.selection())?;
    options.check_plan_size(scenarios.len(), "scenarios", 1)?;
    let kit = Arc::new(build_market_kit(options, &scenarios, None)?);
    let planned: Vec<PlannedMarket> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(g, scenario)| {
            (0..u64::from(options.group_size)).map(move |m| PlannedMarket {
                scenario: scenario.clone(),
                seeds: EpisodeSeed {
                    run: options.seed,
                    group: g as u64,
                    member: m,
                },
            })
        })
        .collect();
    let jobs = {
        let kit = kit.clone();
        move |p| super::Job::Market(kit.clone(), p)
    };
    let done = execute_seated(
        options,
        &kit.run_id,
        planned,
        |p: &PlannedMarket| p.seeds.episode_id(),
        jobs,
        stop,
    )
    .await?;
    Ok(MarketRunSummary {
        run_id: kit.run_id.clone(),
        planned: done.planned,
        skipped: done.skipped,
        written: done.written,
        stats: done.stats.markets,
        stopped: done.stopped,
        elapsed: started.elapsed(),
    })
}
