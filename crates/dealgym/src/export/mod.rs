//! Trainer formats from record files (`dealgym export`, the book's `design/faces.md`): one JSON
//! line per seat and episode (or per seat and turn), in the shape a trainer loads as it is —
//! conversational SFT (`messages`), TRL prompt/completion (`prompt-completion`), verl's
//! `AgentLoopOutput` (`verl`), TRL's `rollout_func` output (`trl-rollout`), Tinker transitions
//! (`tinker`) and a planner's per-turn transition stream (`transitions`).
//! `docs/src/guide/export.md` documents every field.
//!
//! Streaming in two passes, so memory does not grow with the records: the first pass reads
//! only each record's group, roles and rewards into per-group moments (`groups.rs`); the second
//! reads the records again one at a time and writes their lines, each with its group's
//! statistics and advantages. The text formats rebuild the views by replaying each record
//! through the engine (`views.rs`); the token formats read the exact ids of token-exact records
//! (`tokens.rs`) and skip, and count, seats without them. One file per format.
//!
//! Table records (n-party, `"kind": "table"`) export a trajectory per seat (`table.rs`):
//! `messages`, `prompt-completion`, `transitions` and the token formats, every seat or the one
//! `--role` names; the token formats' and `transitions`' writers are the two-party ones.
//!
//! This module reads records and writes lines; it plays no new episode and calls no endpoint.

mod campaigns;
mod groups;
mod market;
mod messages;
mod prompt_completion;
mod table;
mod tinker;
mod tokens;
mod transitions;
mod trl;
mod verl;
mod views;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::game::{OutcomeKind, PerSeat, PromptError, Prompts, Seat};
use crate::record::{
    records_kind, refuse_output_among_inputs, Duplicates, EpisodeRecord, OnDuplicate, ReadError,
    RecordFiles, RecordsKind, ReplayError, WriteError,
};
use crate::run::{FindError, ScenarioSource};
use crate::scenario::{Family, Role, ScenarioError};

use crate::campaign::DealLedger;
use campaigns::Trajectories;
pub(crate) use groups::{is_self_play, GroupStats, GroupTable};
use tokens::SeatTokens;
pub(crate) use tokens::Skip;
pub(crate) use views::Replayed;

/// The trainer formats. Each is named on the command line and in a rollout request by
/// [`Format::name`] (`--format prompt-completion`), read back by its `FromStr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Per seat and episode: `{"messages": [...]}`, the seat's chat as sent (TRL/HF SFT).
    Messages,
    /// Per seat and turn: `{"prompt": [...], "completion": [...]}` (TRL SFT and GRPO).
    PromptCompletion,
    /// Per seat and episode: verl's `AgentLoopOutput` (token-exact records only).
    Verl,
    /// Per seat and episode: the keys TRL's GRPO `rollout_func` returns (token-exact only).
    TrlRollout,
    /// Per seat and episode: Tinker transitions (token-exact only).
    Tinker,
    /// Per seat and turn: `{state, candidates, chosen, reward, next_state, status}`, the
    /// transition stream a value-based planner learns from.
    Transitions,
    /// Per campaign played and seat: the seat's deals in order, each with its conversation,
    /// reward and ledger, and the campaign's value (records of `run --campaigns` only).
    Campaigns,
}

impl Format {
    /// Every format, in the order they are listed to a user.
    pub const ALL: [Format; 7] = [
        Format::Messages,
        Format::PromptCompletion,
        Format::Verl,
        Format::TrlRollout,
        Format::Tinker,
        Format::Transitions,
        Format::Campaigns,
    ];

    /// Whether the format is built from the exact token ids of the turns (verl, TRL's
    /// rollout, Tinker): a record without them gives no line.
    pub(crate) fn needs_tokens(self) -> bool {
        matches!(self, Format::Verl | Format::TrlRollout | Format::Tinker)
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Messages => "messages",
            Format::PromptCompletion => "prompt-completion",
            Format::Verl => "verl",
            Format::TrlRollout => "trl-rollout",
            Format::Tinker => "tinker",
            Format::Transitions => "transitions",
            Format::Campaigns => "campaigns",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    /// A format by its [`name`](Format::name), exactly.
    fn from_str(name: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| format!("unknown format `{name}`: {}", names(&Format::ALL)))
    }
}

/// Which seats' data to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Seats {
    #[default]
    Learner,
    Opponent,
    Both,
}

impl Seats {
    pub const ALL: [Seats; 3] = [Seats::Learner, Seats::Opponent, Seats::Both];

    pub(crate) fn seats(self) -> &'static [Seat] {
        match self {
            Seats::Learner => &[Seat::Learner],
            Seats::Opponent => &[Seat::Opponent],
            Seats::Both => &Seat::BOTH,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Seats::Learner => "learner",
            Seats::Opponent => "opponent",
            Seats::Both => "both",
        }
    }
}

impl std::fmt::Display for Seats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Seats {
    type Err = String;

    fn from_str(name: &str) -> Result<Seats, String> {
        Seats::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("unknown seats `{name}`: {}", names(&Seats::ALL)))
    }
}

/// `a, b or c`, for an error that lists what may be given.
fn names<T: std::fmt::Display>(all: &[T]) -> String {
    let words: Vec<String> = all.iter().map(T::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.concat(),
    }
}

/// Everything an export needs.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub files: Vec<PathBuf>,
    pub format: Format,
    pub seats: Seats,
    /// prompt-completion: the received messages of context kept (all when `None`).
    pub last_k: Option<usize>,
    /// Scenario files; when empty, `scenario_dir/{family}.jsonl`.
    pub scenarios: Vec<PathBuf>,
    pub scenario_dir: PathBuf,
    pub prompts_dir: Option<PathBuf>,
    /// What to do with an episode the files hold twice: counted twice it would weigh double
    /// and make its group look larger.
    pub on_duplicate: OnDuplicate,
    /// Let an export that writes no line succeed ([`export_to`] refuses one otherwise).
    pub allow_empty: bool,
    /// Table records: only this role's seat (every seat when `None`); `seats` is for
    /// two-party records.
    pub role: Option<String>,
}

impl ExportOptions {
    /// Options with the defaults of the command line: the learner's data, full context,
    /// scenarios from `scenarios/`, the built-in templates.
    pub fn new(files: Vec<PathBuf>, format: Format) -> Self {
        ExportOptions {
            files,
            format,
            seats: Seats::Learner,
            last_k: None,
            scenarios: Vec::new(),
            scenario_dir: PathBuf::from(crate::scenario::SCENARIO_DIR),
            prompts_dir: None,
            on_duplicate: OnDuplicate::Refuse,
            allow_empty: false,
            role: None,
        }
    }
}

/// An export that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A record's scenario is in none of the files looked in (`run::ScenarioSource`, the one
    /// finder `replay` and `run --prefixes` use too).
    #[error(transparent)]
    ScenarioMissing(#[from] FindError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("{0}; pass the run's prompts directory with --prompts-dir")]
    Replay(#[from] ReplayError),
    #[error("episode {episode}: replaying its completions does not end as recorded (a record edited by hand, or an engine change since the run)")]
    ReplayDiffers { episode: String },
    #[error("episode {episode} of {run}: its group was not seen by the first reading (did a file change during the export?)")]
    GroupChanged { run: String, episode: String },
    /// Writing the lines failed; `to` names the destination (empty where the writer is not
    /// known: [`export`] to any `Write`).
    #[error("writing {}: {source}", if .to.is_empty() { "the output" } else { .to.as_str() })]
    Write { to: String, source: io::Error },
    #[error("{0}")]
    Options(String),
    /// `--out` is one of the files read ([`refuse_output_among_inputs`]).
    #[error(transparent)]
    Output(#[from] WriteError),
    /// The export would write no line; `why` says what was skipped.
    #[error("no line to write as {format} from {episodes} episodes: {why}; nothing was written (--allow-empty lets an empty export succeed)")]
    Empty {
        format: &'static str,
        episodes: usize,
        why: String,
    },
}

impl ExportError {
    /// Name the destination of a write error.
    fn writing_to(self, destination: &str) -> ExportError {
        match self {
            ExportError::Write { source, .. } => ExportError::Write {
                to: destination.to_string(),
                source,
            },
            other => other,
        }
    }
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportSummary {
    /// Episodes read, `error` ones included.
    pub episodes: usize,
    pub groups: usize,
    /// Seat-episodes written (one or more lines each).
    pub written: usize,
    pub lines: usize,
    /// Episodes that ended in `error`: no sample of the policy, never exported.
    pub(crate) error_episodes: usize,
    /// Episodes whose reward is short of a judge or reward-model part that failed
    /// ([`EpisodeRecord::reward_missing`]): a made-up 0 is no reward, never exported.
    pub reward_missing: usize,
    /// Seat-episodes skipped because the seat made no call.
    pub no_turns: usize,
    /// Seat-episodes skipped by a token format: some turn has no token ids.
    pub no_tokens: usize,
    /// Seat-episodes skipped by a token format: some turn's logprobs are not one per id.
    pub(crate) bad_tokens: usize,
    /// Records skipped as duplicates (`--duplicates skip`): in no group and no line.
    pub duplicates: Duplicates,
    /// Records of the other kind (table or two-party) the files hold, passed over.
    pub passed_over: crate::record::PassedOver,
    /// `campaigns`: records of no campaign (skipped).
    pub(crate) not_campaign: usize,
}

impl ExportSummary {
    fn skip(&mut self, why: Skip) {
        match why {
            Skip::NoTurns => self.no_turns += 1,
            Skip::NoTokens => self.no_tokens += 1,
            Skip::BadTokens => self.bad_tokens += 1,
        }
    }

    /// One line saying what was skipped and why, if anything was.
    pub fn skipped_line(&self, format: Format) -> Option<String> {
        let mut why = Vec::new();
        if self.no_tokens > 0 {
            why.push(format!(
                "{} without token ids on every turn of the seat (it was not played token-exact; \
                 {} is built from the ids the model sampled and dealgym never re-tokenizes text)",
                self.no_tokens,
                format.name()
            ));
        }
        if self.bad_tokens > 0 {
            why.push(format!(
                "{} whose logprobs are not one per sampled id",
                self.bad_tokens
            ));
        }
        if self.no_turns > 0 {
            why.push(format!(
                "{} where the seat made no call (the episode ended first)",
                self.no_turns
            ));
        }
        if self.not_campaign > 0 {
            why.push(format!(
                "{} from episodes played outside any campaign (not `run --campaigns`)",
                self.not_campaign
            ));
        }
        let skipped = self.no_tokens + self.bad_tokens + self.no_turns + self.not_campaign;
        let mut line = String::new();
        if skipped > 0 {
            line = format!("skipped {skipped} seat-episodes: {}", why.join("; "));
        }
        if self.error_episodes > 0 {
            let sep = if line.is_empty() {
                "skipped "
            } else {
                "; and "
            };
            line.push_str(&format!(
                "{sep}{} episodes that ended in error (the endpoint failed; no sample of the policy)",
                self.error_episodes
            ));
        }
        if self.reward_missing > 0 {
            let sep = if line.is_empty() {
                "skipped "
            } else {
                "; and "
            };
            line.push_str(&format!(
                "{sep}{} episodes whose judge or reward model failed (their reward is short of \
                 that part: see `reward_issues` and `reward_errors` in the records)",
                self.reward_missing
            ));
        }
        (!line.is_empty()).then_some(line)
    }
}

/// What every line says about its seat and episode: ids, the seat's reward and its group's
/// statistics.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Head<'a> {
    pub run_id: &'a str,
    pub episode_id: &'a str,
    pub group_id: &'a str,
    pub scenario_id: &'a str,
    pub family: Family,
    pub seat: Seat,
    pub role: Role,
    pub player: &'a str,
    /// Both seats were played by the same policy (their player specs are equal).
    pub self_play: bool,
    pub outcome: OutcomeKind,
    pub reward: f64,
    /// The seat's bargained ratio ρ.
    pub rho: f64,
    #[serde(flatten)]
    pub group: GroupStats,
    /// A campaign's deal: its campaign, place and ledger (the record's `campaign`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<&'a DealLedger>,
}

/// Export `options.files` in `options.format`, writing lines to `out`.
/// Files of table records (`"kind": "table"`) export a trajectory per seat (`table.rs`).
/// A file of both kinds (a server's log) exports both, its first record's kind first, decided
/// before anything is written: `--role` picks the tables' seats and `--seats` the two-party
/// ones, and where tables have no such format (`campaigns`) their records are
/// passed over and the summary says how many.
pub fn export(options: &ExportOptions, out: &mut dyn Write) -> Result<ExportSummary, ExportError> {
    let first = records_kind(&options.files)?;
    // Whether the files hold several kinds matters before the first pass only where the first
    // kind alone would be refused (`--role` at two-party records, a format its kind lacks); the
    // files are scanned for it only then. Otherwise the first pass counts the other kinds.
    let must_know = match first {
        RecordsKind::TwoParty => options.role.is_some(),
        RecordsKind::Table | RecordsKind::Market => !exports(first, options.format),
    };
    let mixed = must_know && crate::record::holds_both_kinds(&options.files)?;
    let skip_first = first != RecordsKind::TwoParty && mixed && !exports(first, options.format);
    let mut summary = if skip_first {
        None
    } else {
        Some(export_kind(options, first, mixed, out)?)
    };
    // The kinds the first pass passed over; where it was skipped, every other kind (those the
    // files do not hold are read and export nothing).
    let passed = summary.as_ref().map(|s| s.passed_over);
    let others: Vec<RecordsKind> = match &passed {
        Some(passed) => passed.kinds().collect(),
        None => RecordsKind::ALL
            .into_iter()
            .filter(|k| *k != first)
            .collect(),
    };
    let mut not_exported = Vec::new();
    for other in others {
        if !exports(other, options.format) {
            not_exported.push(other);
            continue;
        }
        let more = export_kind(options, other, true, out)?;
        match summary.as_mut() {
            None => summary = Some(more),
            Some(summary) => summary.absorb(more),
        }
    }
    let mut summary = summary.unwrap_or_default();
    if let Some(passed) = passed {
        summary.passed_over = passed.keep(&not_exported);
    }
    Ok(summary)
}

/// Whether records of `kind` export in `format`: two-party records in every format, tables in
/// theirs ([`table::exports`]), markets in theirs ([`market::exports`]).
fn exports(kind: RecordsKind, format: Format) -> bool {
    match kind {
        RecordsKind::TwoParty => true,
        RecordsKind::Table => table::exports(format),
        RecordsKind::Market => market::exports(format),
    }
}

/// [`export`] of the records of `kind` (the other kind's passed over and counted); `mixed`:
/// the files hold both kinds, so a table's `--role` is no mistake at their two-party records.
fn export_kind(
    options: &ExportOptions,
    kind: RecordsKind,
    mixed: bool,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    match kind {
        RecordsKind::Table => return table::export_tables(options, out),
        RecordsKind::Market => return market::export_markets(options, out),
        RecordsKind::TwoParty => {}
    }
    if let (Some(role), false) = (&options.role, mixed) {
        return Err(ExportError::Options(format!(
            "--role {role} is for table records; two-party records choose seats with --seats"
        )));
    }
    let prompts = crate::replay::load_prompts(options.prompts_dir.as_deref())?;
    let mut scenarios = ScenarioSource::in_dir(&options.scenarios, &options.scenario_dir)?;
    export_episodes(options, &mut scenarios, &prompts, out)
}

impl ExportSummary {
    /// Take in the summary of the other kind of record in the same files: both were read.
    fn absorb(&mut self, other: ExportSummary) {
        self.episodes += other.episodes;
        self.groups += other.groups;
        self.written += other.written;
        self.lines += other.lines;
        self.error_episodes += other.error_episodes;
        self.reward_missing += other.reward_missing;
        self.no_turns += other.no_turns;
        self.no_tokens += other.no_tokens;
        self.bad_tokens += other.bad_tokens;
        self.duplicates.absorb(other.duplicates);
        self.passed_over = crate::record::PassedOver::default();
        self.not_campaign += other.not_campaign;
    }
}

/// [`export`] of two-party records, their scenarios found in `scenarios` and replayed with
/// `prompts` (`options.scenarios`, `scenario_dir` and `prompts_dir` are not read): what a
/// server that holds both already exports its own episodes with.
pub(crate) fn export_episodes(
    options: &ExportOptions,
    scenarios: &mut ScenarioSource,
    prompts: &Arc<Prompts>,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let table = GroupTable::collect(&options.files, options.on_duplicate)?;
    let mut summary = ExportSummary {
        groups: table.groups(),
        ..ExportSummary::default()
    };
    let mut records = RecordFiles::open(&options.files, options.on_duplicate);
    let mut trajectories = Trajectories::default();
    for located in &mut records {
        let record = located?.record;
        summary.episodes += 1;
        if record.kind() == OutcomeKind::Error {
            summary.error_episodes += 1;
            continue;
        }
        if record.reward_missing() {
            summary.reward_missing += 1;
            continue;
        }
        let replayed = match options.format {
            Format::Messages | Format::PromptCompletion | Format::Campaigns => {
                Some(Replayed::of(&record, scenarios, prompts)?)
            }
            _ => None,
        };
        let states = match options.format {
            Format::Transitions => Some(transitions::States::of(&record, scenarios, prompts)?),
            _ => None,
        };
        let heads = heads(&record, &table)?;
        for &seat in options.seats.seats() {
            let head = &heads[seat];
            let lines = if let Some(states) = &states {
                let transitions = states.seat(head, &record, seat, head.reward);
                if transitions.is_empty() {
                    summary.skip(Skip::NoTurns);
                    continue;
                }
                transitions::write(&transitions, out)
            } else if let Some(replayed) = &replayed {
                if !record.turns.iter().any(|t| t.seat == seat) {
                    summary.skip(Skip::NoTurns);
                    continue;
                }
                match options.format {
                    Format::Campaigns => {
                        if !trajectories.add(head, &record, replayed) {
                            summary.not_campaign += 1;
                        }
                        continue;
                    }
                    Format::Messages => messages::write(head, &record, replayed, out),
                    _ => prompt_completion::write(
                        head,
                        &record,
                        replayed,
                        &table,
                        options.last_k,
                        out,
                    ),
                }
            } else {
                let calls = match record.exact_calls(seat) {
                    Ok(calls) => calls,
                    Err(why) => {
                        summary.skip(why.into());
                        continue;
                    }
                };
                // The latency of each of the seat's calls, where the record has it (a logged
                // prefix's turns are no calls of this episode).
                let generate_ms = record
                    .own_calls(seat)
                    .filter_map(|(i, _)| record.timing.turn_ms.get(i))
                    .sum();
                let tokens = SeatTokens {
                    head,
                    reward: head.reward,
                    calls,
                    call_rewards: record.call_rewards(seat),
                    generate_ms,
                };
                write_tokens(options.format, &tokens, out)
            };
            summary.lines += lines.map_err(|source| ExportError::Write {
                to: String::new(),
                source,
            })?;
            summary.written += 1;
        }
    }
    summary.duplicates = records.duplicates().clone();
    summary.passed_over = records.passed_over();
    let campaign_lines = trajectories
        .write(out)
        .map_err(|source| ExportError::Write {
            to: String::new(),
            source,
        })?;
    summary.lines += campaign_lines;
    summary.written += campaign_lines;
    Ok(summary)
}

fn heads<'a>(
    record: &'a EpisodeRecord,
    table: &GroupTable,
) -> Result<PerSeat<Head<'a>>, ExportError> {
    let self_play = is_self_play(&record.seats.learner.player, &record.seats.opponent.player);
    let head = |seat: Seat| -> Result<Head<'a>, ExportError> {
        let role = record.seats[seat].role;
        let reward = record.rewards[seat];
        let group = table
            .stats(
                &record.run_id,
                &record.group_id,
                seat,
                role,
                self_play,
                reward,
            )
            .ok_or_else(|| ExportError::GroupChanged {
                run: record.run_id.clone(),
                episode: record.episode_id.clone(),
            })?;
        Ok(Head {
            run_id: &record.run_id,
            episode_id: &record.episode_id,
            group_id: &record.group_id,
            scenario_id: &record.scenario_id,
            family: record.family,
            seat,
            role,
            player: record.seats[seat].player.as_str(),
            self_play,
            outcome: record.kind(),
            reward,
            rho: record.outcome.outcome.rho[seat],
            group,
            campaign: record.campaign.as_ref(),
        })
    };
    Ok(PerSeat::new(head(Seat::Learner)?, head(Seat::Opponent)?))
}

/// Write `seat`'s line in the token format `format` (verl, trl-rollout or tinker), for either
/// kind of record.
fn write_tokens<H: Serialize>(
    format: Format,
    seat: &SeatTokens<H>,
    out: &mut dyn Write,
) -> io::Result<usize> {
    match format {
        Format::Verl => verl::write(seat, out),
        Format::TrlRollout => trl::write(seat, out),
        _ => tinker::write(seat, out),
    }
}

/// Write one JSON line.
fn write_line(out: &mut dyn Write, line: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Export to `out` (a file, written whole: to `FILE.partial` first, renamed once every line is
/// written, so a failed export leaves no half file behind) or to stdout.
/// `summary`, unless it wrote no line and `options` do not allow that: an empty trainer file
/// is always a mistake upstream (records not played token-exact for a token format, every
/// episode an endpoint error), and exiting 0 would hide it.
fn refuse_empty(
    options: &ExportOptions,
    summary: ExportSummary,
) -> Result<ExportSummary, ExportError> {
    if summary.lines > 0 || options.allow_empty {
        return Ok(summary);
    }
    let why = summary.skipped_line(options.format).unwrap_or_else(|| {
        if summary.episodes == 0 {
            "the files hold no episode".to_string()
        } else {
            format!("no {} seat made a call", options.seats.name())
        }
    });
    Err(ExportError::Empty {
        format: options.format.name(),
        episodes: summary.episodes,
        why,
    })
}

pub fn export_to(
    options: &ExportOptions,
    out: Option<&Path>,
) -> Result<ExportSummary, ExportError> {
    let Some(path) = out else {
        let stdout = io::stdout();
        let mut w = BufWriter::new(stdout.lock());
        let summary = export(options, &mut w).map_err(|e| e.writing_to("stdout"))?;
        let summary = refuse_empty(options, summary)?;
        w.flush().map_err(|source| ExportError::Write {
            to: "stdout".into(),
            source,
        })?;
        return Ok(summary);
    };
    refuse_output_among_inputs(path, &options.files)?;
    let failed = |source| ExportError::Write {
        to: path.display().to_string(),
        source,
    };
    // A device or a pipe (`--out /dev/null`) is written in place, never renamed over.
    let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let partial = if special {
        path.to_path_buf()
    } else {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        PathBuf::from(name)
    };
    let mut w = BufWriter::new(File::create(&partial).map_err(failed)?);
    let summary = match export(options, &mut w).and_then(|s| refuse_empty(options, s)) {
        Ok(summary) => summary,
        Err(e) => {
            drop(w);
            if !special {
                let _ = std::fs::remove_file(&partial);
            }
            return Err(e.writing_to(&path.display().to_string()));
        }
    };
    w.flush().map_err(failed)?;
    drop(w);
    if !special {
        std::fs::rename(&partial, path).map_err(failed)?;
    }
    Ok(summary)
}
