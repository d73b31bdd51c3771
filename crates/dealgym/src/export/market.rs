//! Exporting market records (`"kind": "market"`, issue 45): a trajectory per seat.
//!
//! - the token formats (verl, trl-rollout, tinker): a seat's line is built from the exact ids of
//!   its calls (every attempt of the seat, retries included) by the core's one trajectory rule
//!   ([`MarketRecord::exact_calls`]) and written by the two-party formats' own writers, as a
//!   table seat's is; a seat played without ids (a scripted trader, a model played as text) is
//!   skipped and counted;
//! - `messages` and `prompt-completion`: the seat's own conversation rebuilt by replaying the
//!   record through the market rulebook ([`MarketRecord::replay_turns`]; views are never
//!   stored), written by the tables' writer ([`super::table::write_seat`]).
//!
//! A seat's reward is its surplus (the gain from its trades, [`MarketRecord::reward`]), with
//! its role's mean over the GRPO group and the advantage over it, by the tables' baselines.
//! `transitions` and `campaigns` are refused by name: markets do not export in them yet.

use std::io::Write;

use serde::Serialize;

use super::table::{write_seat, Baselines, SeatTurn};
use super::tokens::SeatTokens;
use super::{ExportError, ExportOptions, ExportSummary};
use crate::game::OutcomeKind;
use crate::record::{MarketRecord, RecordFiles, RecordsKind};

/// What every line says about its seat and episode.
#[derive(Debug, Clone, Serialize)]
struct Head<'a> {
    run_id: &'a str,
    episode_id: &'a str,
    group_id: &'a str,
    scenario_id: &'a str,
    kind: &'static str,
    /// The seat's index in the market's order.
    seat: usize,
    role: &'a str,
    player: &'a str,
    outcome: OutcomeKind,
    /// The seat's surplus: its gain from its trades.
    reward: f64,
    /// The market's allocative efficiency (absent with no gain from trade).
    #[serde(skip_serializing_if = "Option::is_none")]
    efficiency: Option<f64>,
    /// The mean reward of this role over the episode's group.
    group_mean: f64,
    group_size: usize,
    /// `reward − group_mean`.
    advantage: f64,
}

/// Whether market records export in `format`.
pub(super) fn exports(format: super::Format) -> bool {
    matches!(
        format,
        super::Format::Messages | super::Format::PromptCompletion
    ) || format.needs_tokens()
}

/// What a seat's lines are written from: its exact calls (the token formats) or its view
/// rebuilt by replay (the text formats).
enum Source<'a> {
    Tokens(crate::record::ExactCalls<'a>),
    View(&'a [crate::vocab::Message]),
}

fn records(options: &ExportOptions) -> RecordFiles<MarketRecord> {
    RecordFiles::open(&options.files, options.on_duplicate)
        .of_kind(RecordsKind::Market)
        .read_as::<MarketRecord>()
}

/// Export the market records of `options.files` to `out`.
pub(super) fn export_markets(
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    if !exports(options.format) {
        return Err(ExportError::Options(format!(
            "market records export as messages, prompt-completion, verl, trl-rollout or \
             tinker (a trajectory per seat), not {} yet",
            options.format.name()
        )));
    }
    let mut scenarios =
        crate::replay::MarketSource::in_dir(&options.scenarios, &options.scenario_dir)?;
    let prompts = crate::replay::load_prompts(options.prompts_dir.as_deref())?;
    let mut baselines = Baselines::default();
    for located in records(options) {
        let r = located?.record;
        if r.outcome.outcome.kind == OutcomeKind::Error {
            continue;
        }
        for (seat, s) in r.seats.iter().enumerate() {
            baselines.add(&r.run_id, r.group_id(), &s.role, r.reward(seat));
        }
    }
    let mut summary = ExportSummary::default();
    let mut groups = std::collections::HashSet::new();
    let mut records = records(options);
    for located in &mut records {
        let record = located?.record;
        summary.episodes += 1;
        groups.insert((record.run_id.clone(), record.group_id().to_string()));
        if record.outcome.outcome.kind == OutcomeKind::Error {
            summary.error_episodes += 1;
            continue;
        }
        if let Some(role) = &options.role {
            if !record.seats.iter().any(|s| s.role == *role) {
                return Err(ExportError::Options(format!(
                    "--role {role}: market {} has no such trader (its roles: {})",
                    record.episode_id,
                    record
                        .seats
                        .iter()
                        .map(|s| s.role.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        // The text formats rebuild the views: the record replayed through the rulebook.
        let episode = if options.format.needs_tokens() {
            None
        } else {
            let scenario = scenarios.find(&record)?;
            Some(
                record
                    .replay_turns(&scenario, prompts.clone())
                    .map_err(|e| {
                        ExportError::Options(format!("{e} (`dealgym replay --verify` says more)"))
                    })?,
            )
        };
        for (seat, s) in record.seats.iter().enumerate() {
            if options.role.as_ref().is_some_and(|r| *r != s.role) {
                continue;
            }
            let source = match &episode {
                Some(episode) => {
                    if record.own_calls(seat).next().is_none() {
                        summary.skip(super::Skip::NoTurns);
                        continue;
                    }
                    Source::View(episode.view(seat))
                }
                None => match record.exact_calls(seat) {
                    Ok(calls) => Source::Tokens(calls),
                    Err(why) => {
                        summary.skip(why.into());
                        continue;
                    }
                },
            };
            let reward = record.reward(seat);
            let (group_mean, group_size) =
                baselines.mean(&record.run_id, record.group_id(), &s.role);
            let head = Head {
                run_id: &record.run_id,
                episode_id: &record.episode_id,
                group_id: record.group_id(),
                scenario_id: &record.scenario_id,
                kind: "market",
                seat,
                role: &s.role,
                player: &s.player,
                outcome: record.outcome.outcome.kind,
                reward,
                efficiency: record.outcome.metrics.efficiency,
                group_mean,
                group_size,
                advantage: reward - group_mean,
            };
            let turns = &record.turns;
            let seat_calls: Vec<&crate::record::MarketCallRecord> = record
                .calls
                .iter()
                .filter(|c| turns.get(c.turn).is_some_and(|t| t.seat == seat))
                .collect();
            let lines = match source {
                Source::Tokens(calls) => {
                    let tokens = SeatTokens {
                        head: &head,
                        reward,
                        calls,
                        call_rewards: record.call_rewards(seat),
                        generate_ms: seat_calls.iter().map(|c| c.latency_ms).sum(),
                    };
                    super::write_tokens(options.format, &tokens, out)
                }
                Source::View(view) => {
                    let turns: Vec<SeatTurn> = record
                        .own_calls(seat)
                        .map(|(index, t)| SeatTurn {
                            index,
                            completion: &t.completion,
                            format_ok: t.parsed.format_ok,
                            error_kind: t.error.as_ref().map(|e| e.kind),
                            call: seat_calls
                                .iter()
                                .find(|c| c.turn == index)
                                .and_then(|c| c.call.as_ref()),
                        })
                        .collect();
                    write_seat(options.format, &turns, view, &head, out)
                }
            }
            .map_err(|source| ExportError::Write {
                to: String::new(),
                source,
            })?;
            summary.lines += lines;
            summary.written += 1;
        }
    }
    summary.groups = groups.len();
    summary.duplicates = records.duplicates().clone();
    summary.passed_over = records.passed_over();
    Ok(summary)
}
