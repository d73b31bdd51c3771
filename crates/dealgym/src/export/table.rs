//! Exporting table records (n-party, `"kind": "table"`): a trajectory per seat. For each record
//! and each seat (or the one `--role`), the seat's own conversation rebuilt through the table
//! engine — the record is replayed against its scenario ([`TableRecord::replay`]) and the
//! seat's view taken from the replayed episode ([`TableEpisode::view`]); views are never
//! stored — with its completions and its reward.
//!
//! - `messages`: one line per seat and episode, `{"messages": [...]}`: the prompt of the seat's
//!   last call followed by its last completion (the shape of the two-party `messages`);
//! - `prompt-completion`: one line per seat and turn, `{"prompt": [...], "completion": [...]}`,
//!   the prompt being the seat's view exactly as that call was sent it.
//!
//! A seat's view only grows (the engine appends to it), so each call's prompt is the final
//! view cut before that call's reply. Each line carries the seat's reward, ρ and score, and its
//! group's mean reward for that role with the advantage over it (a GRPO group is one scenario
//! played `--group-size` times; the baseline is per role, as roles differ in what they can
//! score). Turns whose call carried token ids (`call.prompt_token_ids`, `call.token_ids`)
//! carry them on their prompt-completion line.
//!
//! The token formats (verl, trl-rollout, tinker) need no replay: a seat's line is built from the
//! exact ids of its calls (every attempt of the seat, retries included) by the core's one
//! trajectory rule and written by the two-party formats' own writers, with this module's head;
//! a seat played without ids is skipped and counted, as a two-party seat is.
//!
//! `transitions` replays the record observing each seat's state text as it moved and writes
//! through the two-party writer (`transitions.rs`), with this module's head. Campaigns are a
//! two-party format and refused for table records.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use serde::Serialize;

use super::tokens::SeatTokens;
use super::{write_line, ExportError, ExportOptions, ExportSummary, Format};
use crate::game::OutcomeKind;
use crate::record::{ExactCalls, RecordFiles, TableRecord};
use crate::replay::TableSource;
use crate::table::TableEpisode;
use crate::vocab::{Message, MessageRole};

/// What every line says about its seat and episode.
#[derive(Debug, Clone, Serialize)]
struct Head<'a> {
    run_id: &'a str,
    episode_id: &'a str,
    group_id: &'a str,
    scenario_id: &'a str,
    family: &'static str,
    kind: &'static str,
    /// The seat's index in the game's order.
    seat: usize,
    role: &'a str,
    player: &'a str,
    outcome: OutcomeKind,
    reward: f64,
    rho: f64,
    /// The seat's score of the agreed deal (absent without a deal).
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<i64>,
    /// The mean reward of this role over the episode's group.
    group_mean: f64,
    group_size: usize,
    /// `reward − group_mean`.
    advantage: f64,
}

#[derive(Serialize)]
struct MessagesLine<'a, H> {
    messages: Vec<Message>,
    #[serde(flatten)]
    head: &'a H,
}

#[derive(Serialize)]
struct PromptCompletionLine<'a, H> {
    prompt: &'a [Message],
    completion: [Message; 1],
    /// The turn's position among all the episode's turns (every seat, retries included).
    turn_index: usize,
    /// The turn's position among this seat's turns.
    seat_turn: usize,
    format_ok: bool,
    /// Why the attempt could not be played, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<crate::protocol::ErrorKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_token_ids: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_ids: Option<&'a [u32]>,
    #[serde(flatten)]
    head: &'a H,
}

/// The sum and count of each (run, group, role)'s rewards: the group baselines (of tables
/// and of markets).
#[derive(Default)]
pub(super) struct Baselines(HashMap<(String, String, String), (f64, usize)>);

impl Baselines {
    /// Count `reward` of `role` in group `group` of run `run`.
    pub(super) fn add(&mut self, run: &str, group: &str, role: &str, reward: f64) {
        let e = self
            .0
            .entry((run.to_string(), group.to_string(), role.to_string()))
            .or_default();
        e.0 += reward;
        e.1 += 1;
    }

    /// The mean reward of `role` in group `group` of run `run`, and how many it is over.
    pub(super) fn mean(&self, run: &str, group: &str, role: &str) -> (f64, usize) {
        let key = (run.to_string(), group.to_string(), role.to_string());
        match self.0.get(&key) {
            Some(&(sum, n)) if n > 0 => (sum / n as f64, n),
            _ => (0.0, 0),
        }
    }

    fn collect(options: &ExportOptions) -> Result<Baselines, ExportError> {
        let mut b = Baselines::default();
        let records = RecordFiles::open(&options.files, options.on_duplicate)
            .of_kind(crate::record::RecordsKind::Table)
            .read_as::<TableRecord>();
        for located in records {
            let r = located?.record;
            if r.outcome.outcome.kind == OutcomeKind::Error {
                continue;
            }
            for (role, reward) in &r.rewards {
                b.add(&r.run_id, &r.group_id, role, *reward);
            }
        }
        Ok(b)
    }

    fn of(&self, r: &TableRecord, role: &str) -> (f64, usize) {
        self.mean(&r.run_id, &r.group_id, role)
    }
}

/// Whether table records export in `format`.
pub(super) fn exports(format: Format) -> bool {
    matches!(
        format,
        Format::Messages | Format::PromptCompletion | Format::Transitions
    ) || format.needs_tokens()
}

/// Export the table records of `options.files` to `out`.
pub(super) fn export_tables(
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    if !exports(options.format) {
        return Err(ExportError::Options(format!(
            "table records export as messages, prompt-completion, verl, trl-rollout, tinker or \
             transitions, not {}",
            options.format.name()
        )));
    }
    let baselines = Baselines::collect(options)?;
    let mut scenarios = TableSource::in_dir(&options.scenarios, &options.scenario_dir)?;
    let prompts = crate::replay::load_prompts(options.prompts_dir.as_deref())?;
    let mut summary = ExportSummary::default();
    let mut groups = std::collections::HashSet::new();
    let mut records = RecordFiles::open(&options.files, options.on_duplicate)
        .of_kind(crate::record::RecordsKind::Table)
        .read_as::<TableRecord>();
    for located in &mut records {
        let record = located?.record;
        summary.episodes += 1;
        groups.insert((record.run_id.clone(), record.group_id.clone()));
        if record.outcome.outcome.kind == OutcomeKind::Error {
            summary.error_episodes += 1;
            continue;
        }
        if let Some(role) = &options.role {
            if !record.seats.iter().any(|s| s.role == *role) {
                return Err(ExportError::Options(format!(
                    "--role {role}: episode {} has no such seat (its roles: {})",
                    record.episode_id,
                    record.roles().join(", ")
                )));
            }
        }
        // The token formats read the recorded ids; the text formats rebuild the views, and
        // `transitions` the seats' state texts.
        let states = if options.format == Format::Transitions {
            Some(super::transitions::States::of_table(
                &record,
                &mut scenarios,
                &prompts,
            )?)
        } else {
            None
        };
        let episode = if options.format.needs_tokens() || states.is_some() {
            None
        } else {
            Some(replayed(&record, scenarios.find(&record)?, &prompts)?)
        };
        for (seat, s) in record.seats.iter().enumerate() {
            if options.role.as_ref().is_some_and(|r| *r != s.role) {
                continue;
            }
            let source = match (&episode, &states) {
                (_, Some(states)) => SeatSource::States(states),
                (Some(episode), None) => {
                    if record.own_calls(seat).next().is_none() {
                        summary.skip(super::Skip::NoTurns);
                        continue;
                    }
                    SeatSource::View(episode.view(seat))
                }
                (None, None) => match record.exact_calls(seat) {
                    Ok(calls) => SeatSource::Tokens(calls),
                    Err(why) => {
                        summary.skip(why.into());
                        continue;
                    }
                },
            };
            let (group_mean, group_size) = baselines.of(&record, &s.role);
            let reward = record.rewards.get(&s.role).copied().unwrap_or(0.0);
            let head = Head {
                run_id: &record.run_id,
                episode_id: &record.episode_id,
                group_id: &record.group_id,
                scenario_id: &record.scenario_id,
                family: record.family.name(),
                kind: "table",
                seat,
                role: &s.role,
                player: &s.player,
                outcome: record.outcome.outcome.kind,
                reward,
                rho: record.outcome.rho.get(&s.role).copied().unwrap_or(0.0),
                score: record.outcome.scores.get(&s.role).copied(),
                group_mean,
                group_size,
                advantage: reward - group_mean,
            };
            let lines = match source {
                SeatSource::Tokens(calls) => {
                    let tokens = SeatTokens {
                        head: &head,
                        reward,
                        calls,
                        call_rewards: record.call_rewards(seat),
                        generate_ms: record.own_calls(seat).map(|(_, t)| t.latency_ms).sum(),
                    };
                    super::write_tokens(options.format, &tokens, out)
                }
                SeatSource::View(view) => {
                    // Every attempt of the seat, a logged prefix's included (its view holds
                    // them all).
                    let turns: Vec<SeatTurn> = record
                        .turns
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| t.turn.seat == seat)
                        .map(|(index, t)| SeatTurn {
                            index,
                            completion: &t.turn.completion,
                            format_ok: t.turn.parsed.format_ok,
                            error_kind: t.turn.error.as_ref().map(|e| e.kind),
                            call: t.call.as_ref(),
                        })
                        .collect();
                    write_seat(options.format, &turns, view, &head, out)
                }
                SeatSource::States(states) => {
                    let transitions = states.seat(&head, &record, seat, reward);
                    if transitions.is_empty() {
                        summary.skip(super::Skip::NoTurns);
                        continue;
                    }
                    super::transitions::write(&transitions, out)
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

/// What a seat's lines are written from: its exact calls (the token formats) or its view
/// rebuilt by replay (the text formats).
enum SeatSource<'a> {
    Tokens(ExactCalls<'a>),
    View(&'a [Message]),
    /// The seats' state texts (`transitions`).
    States(&'a super::transitions::States<Vec<String>>),
}

/// The record replayed through the table engine; a record that does not replay exactly is
/// refused (its views would not be what the seats were sent).
fn replayed(
    record: &TableRecord,
    scenario: Arc<crate::scenario::TableScenario>,
    prompts: &Arc<crate::game::Prompts>,
) -> Result<TableEpisode, ExportError> {
    record.replay_with(scenario, prompts).map_err(refused)
}

/// Why a table record that does not replay exactly exports no line.
pub(super) fn refused(e: crate::record::TableReplayError) -> ExportError {
    ExportError::Options(format!("{e} (`dealgym replay --verify` says more)"))
}

/// Where each of `seat`'s turns' reply sits in its final `view`: the index of its assistant
/// message (the view holds one per attempt of the seat, in order).
pub(crate) fn reply_positions(view: &[Message]) -> Vec<usize> {
    view.iter()
        .enumerate()
        .filter(|(_, m)| m.role == MessageRole::Assistant)
        .map(|(i, _)| i)
        .collect()
}

/// One attempt of a seat, as the text formats write it.
pub(super) struct SeatTurn<'a> {
    /// Its index among all the episode's turns.
    pub index: usize,
    pub completion: &'a crate::game::Completion,
    pub format_ok: bool,
    pub error_kind: Option<crate::protocol::ErrorKind>,
    pub call: Option<&'a crate::vocab::Call>,
}

/// Write a seat of an n-party episode (a table, a market) in a text format: `turns`, its
/// attempts in order, against `view`, its final view rebuilt by replay; each line with `head`.
pub(super) fn write_seat<H: Serialize>(
    format: Format,
    turns: &[SeatTurn],
    view: &[Message],
    head: &H,
    out: &mut dyn Write,
) -> std::io::Result<usize> {
    // A seat that forfeited: its last reply ended the table and never entered its history
    // (`engine::after_unusable`); it closes the seat's conversation, as a two-party export
    // writes it.
    let completed: Vec<Message>;
    let mut view = view;
    if reply_positions(view).len() < turns.len() {
        if let Some(last) = turns.last() {
            let reply =
                crate::engine::own_message(&last.completion.text, &last.completion.tool_calls);
            completed = view.iter().cloned().chain([reply]).collect();
            view = &completed;
        }
    }
    let replies = reply_positions(view);
    match format {
        Format::Messages => {
            let last = replies.last().copied().unwrap_or(view.len());
            let messages = view[..(last + 1).min(view.len())].to_vec();
            write_line(out, &MessagesLine { messages, head })?;
            Ok(1)
        }
        _ => {
            let mut lines = 0;
            for (k, (turn, &at)) in turns.iter().zip(&replies).enumerate() {
                let call = turn.call;
                let line = PromptCompletionLine {
                    prompt: &view[..at],
                    completion: [view[at].clone()],
                    turn_index: turn.index,
                    seat_turn: k,
                    format_ok: turn.format_ok,
                    error_kind: turn.error_kind,
                    prompt_token_ids: call.and_then(|c| c.prompt_token_ids.as_deref()),
                    completion_ids: call.and_then(|c| c.token_ids.as_deref()),
                    head,
                };
                write_line(out, &line)?;
                lines += 1;
            }
            Ok(lines)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Completion, EpisodeSeed};
    use crate::scenario::{load_table_scenarios, LoadOptions};
    use crate::table::{TableOptions, TableSetup};

    /// The fixture game, played with proposals and acceptances until it ends.
    fn played(
        seed: u64,
    ) -> (
        Arc<crate::scenario::TableScenario>,
        TableRecord,
        Vec<Vec<Message>>,
    ) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/table/six_party.jsonl");
        let s = Arc::new(
            load_table_scenarios(&path, LoadOptions::default())
                .unwrap()
                .scenarios
                .remove(0),
        );
        let options = TableOptions::default();
        let seeds = EpisodeSeed {
            run: seed,
            group: 0,
            member: 0,
        };
        let setup = TableSetup::new(&s, &options, seeds.table_seed()).unwrap();
        let mut ep = TableEpisode::new(s.clone(), setup).unwrap();
        let mut sent = Vec::new();
        let mut i = 0usize;
        while let Some(seat) = ep.to_move() {
            i += 1;
            sent.push(ep.view(seat).to_vec());
            let text = if i.is_multiple_of(4) {
                "Thought: no\nTalk: oops".to_string()
            } else if i.is_multiple_of(3) {
                format!(
                    "Thought: t{i}\nTalk: ok\nAction: [ACCEPT_DEAL] #{}",
                    ep.offers().len().max(1)
                )
            } else {
                let deal = s.all_deals().nth(i * 53 % 100).unwrap();
                format!(
                    "Thought: t{i}\nTalk: how about\nAction: [SUBMIT_DEAL] {}",
                    s.render_deal(&deal)
                )
            };
            ep.step(seat, Completion::from(text.as_str())).unwrap();
        }
        let record = TableRecord::of("run", seeds, &ep, &options, &[], &[]);
        (s, record, sent)
    }

    #[test]
    fn each_calls_prompt_cut_from_the_replayed_view_is_what_the_seat_was_sent() {
        for seed in 0..6 {
            let (s, record, sent) = played(seed);
            let episode = replayed(&record, s.clone(), &crate::game::Prompts::builtin()).unwrap();
            let views: Vec<Vec<Message>> = (0..s.parties.len())
                .map(|seat| episode.view(seat).to_vec())
                .collect();
            let mut seen = vec![0usize; s.parties.len()];
            for (i, t) in record.turns.iter().enumerate() {
                let seat = t.turn.seat;
                let at = reply_positions(&views[seat])[seen[seat]];
                seen[seat] += 1;
                assert_eq!(views[seat][..at], sent[i][..], "seed {seed} turn {i}");
                assert_eq!(views[seat][at].content, t.turn.completion.text);
            }
        }
    }
}
