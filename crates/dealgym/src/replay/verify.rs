//! `replay --verify`: re-run every recorded episode from its completions through today's
//! engine and compare everything the engine computes — each turn's parse, regulation event,
//! forwarded text and played action, the system prompts, the outcome with its utilities and ρ,
//! the metrics and the rewards — with what the record says.
//!
//! The comparison is field by field over the record's JSON: the record as read against the
//! record rebuilt from the replayed episode, with the fields the engine does not compute (ids,
//! digests, parent, timing) taken from the record. A field is named by its path, turns folded
//! into `turn.FIELD` with the turn's index kept apart, so one table row says e.g. "`turn.action`
//! differs in 3 episodes, first in g0-m1 turn 4".

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{load_prompts, Error, Located, Records};
use crate::game::{OutcomeKind, PerSeat, Prompts, Seat};
use crate::record::{Duplicates, EpisodeRecord, OnDuplicate, PlayerInfo, RecordMeta, ReplayError};
use crate::reward::RewardConfig;
use crate::run::{FindError, ScenarioSource, Unavailable};
use crate::scenario::Scenario;

/// What `--verify` checks.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub files: Vec<PathBuf>,
    /// Only this episode id.
    pub episode: Option<String>,
    /// Scenario files; empty: `scenarios/{family}.jsonl` of each record's family.
    pub scenarios: Vec<PathBuf>,
    /// The templates of a run that used a `prompts_dir`.
    pub prompts_dir: Option<PathBuf>,
    /// The reward config to check the rewards under (`--config`, `--preset`); `None`: each
    /// record's own (`reward_config`; the built-in one for records older than the field).
    pub rewards: Option<RewardConfig>,
    /// What to do with an episode recorded twice (`--duplicates`).
    pub on_duplicate: OnDuplicate,
}

/// One field where a record and today's engine disagree, or why a record cannot be replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The field's path: `turn.action`, `turn.forwarded`, `outcome.utility.learner`,
    /// `outcome.metrics.seats.opponent.turns`, `rewards.learner`, `turns` (their number), … For
    /// a record that cannot be replayed: `scenario missing`, `scenario changed`, `templates
    /// changed` or `replay failed`.
    pub(crate) field: String,
    /// For a turn's field: the turn's index in `turns` (0-based).
    pub turn: Option<usize>,
    /// The record's value, as compact JSON (empty for a record that cannot be replayed).
    pub(crate) recorded: String,
    /// The engine's value, as compact JSON; for a record that cannot be replayed, the reason.
    pub(crate) replayed: String,
}

impl Difference {
    pub(super) fn cannot_replay(field: &str, reason: String) -> Difference {
        Difference {
            field: field.to_string(),
            turn: None,
            recorded: String::new(),
            replayed: reason,
        }
    }

    /// The difference as one phrase: `recorded → replayed`, or the reason.
    pub(crate) fn describe(&self) -> String {
        if self.recorded.is_empty() {
            self.replayed.clone()
        } else {
            format!("{} → {}", self.recorded, self.replayed)
        }
    }
}

/// One row of the report: a field, how many episodes differ in it, and the first of them.
#[derive(Debug, Clone, PartialEq)]
pub struct DifferenceRow {
    pub field: String,
    pub(crate) episodes: usize,
    pub(crate) first_episode: String,
    /// `FILE:LINE` of the first episode.
    pub(crate) first_at: String,
    pub first: Difference,
}

/// What `--verify` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyReport {
    pub(crate) files: usize,
    pub episodes: usize,
    /// Episodes with at least one difference.
    pub(crate) differing: usize,
    /// One row per field, in the order they were first found.
    pub rows: Vec<DifferenceRow>,
    /// Episodes that could not be checked at all (their scenario is nowhere to be found), in
    /// the order read: no difference was found in them, and none was ruled out.
    pub(crate) unchecked: Vec<Unchecked>,
    /// Records skipped as duplicates (`--duplicates skip`).
    pub duplicates: Duplicates,
    /// Records of the other kind (table or two-party) the files hold, passed over.
    pub passed_over: crate::record::PassedOver,
}

/// An episode `--verify` could not check, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unchecked {
    pub(crate) episode: String,
    /// `FILE:LINE` of the record.
    pub(crate) at: String,
    /// What verification lacked, naming the scenario and where it was looked for.
    pub(crate) reason: String,
}

/// The episodes that could not be checked named one a line, up to this many.
const UNCHECKED_SHOWN: usize = 5;

impl VerifyReport {
    /// Every record was checked and replayed identically.
    pub fn is_clean(&self) -> bool {
        self.rows.is_empty() && self.unchecked.is_empty()
    }

    fn add(&mut self, located: &Located, differences: Vec<Difference>) {
        self.add_episode(&located.record.episode_id, located.at(), differences);
    }

    /// Take in the report of the other kind of record in the same files: its episodes and
    /// rows beside these, and nothing passed over any more (both kinds were read).
    fn absorb(&mut self, other: VerifyReport) {
        self.episodes += other.episodes;
        self.differing += other.differing;
        self.rows.extend(other.rows);
        self.unchecked.extend(other.unchecked);
        self.duplicates.absorb(other.duplicates);
        self.passed_over = crate::record::PassedOver::default();
    }

    /// Count episode `episode` (read at `at`, `FILE:LINE`) as one that could not be checked
    /// ([`FindError::Unavailable`]: its scenario is missing): never as one that differs.
    pub(super) fn add_unchecked(&mut self, episode: &str, at: String, why: Unavailable) {
        self.episodes += 1;
        self.unchecked.push(Unchecked {
            episode: episode.to_string(),
            at,
            reason: why.to_string(),
        });
    }

    /// Count episode `episode` (read at `at`, `FILE:LINE`) with its differences.
    pub(super) fn add_episode(&mut self, episode: &str, at: String, differences: Vec<Difference>) {
        self.episodes += 1;
        if differences.is_empty() {
            return;
        }
        self.differing += 1;
        let mut seen: Vec<&str> = Vec::new();
        for d in &differences {
            if seen.contains(&d.field.as_str()) {
                continue;
            }
            seen.push(&d.field);
            match self.rows.iter_mut().find(|r| r.field == d.field) {
                Some(row) => row.episodes += 1,
                None => self.rows.push(DifferenceRow {
                    field: d.field.clone(),
                    episodes: 1,
                    first_episode: episode.to_string(),
                    first_at: at.clone(),
                    first: d.clone(),
                }),
            }
        }
    }

    /// The report as a table (one row per differing field) and a closing line; then the
    /// episodes that could not be checked, if any, under a line of their own.
    pub fn table(&self) -> String {
        let mut out = String::new();
        if !self.rows.is_empty() {
            self.write_rows(&mut out);
        }
        if !self.unchecked.is_empty() {
            self.write_unchecked(&mut out);
        }
        if self.is_clean() {
            let _ = writeln!(
                out,
                "{} episodes in {} files replay identically: every turn, outcome, metric and reward",
                self.episodes, self.files
            );
        }
        out
    }

    fn write_rows(&self, out: &mut String) {
        let width = self
            .rows
            .iter()
            .map(|r| r.field.chars().count())
            .max()
            .unwrap_or(0)
            .max("field".len());
        let _ = writeln!(out, "{:<width$}  episodes  first example", "field");
        for row in &self.rows {
            let turn = row
                .first
                .turn
                .map(|t| format!(" turn {}", t + 1))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<width$}  {:>8}  {}{turn} ({}): {}",
                row.field,
                row.episodes,
                row.first_episode,
                row.first_at,
                row.first.describe()
            );
        }
        let _ = writeln!(
            out,
            "{} of {} episodes in {} files differ from what today's engine makes of their completions",
            self.differing, self.episodes, self.files
        );
    }

    fn write_unchecked(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "could not check {} of {} episodes in {} files (nothing was compared in them):",
            self.unchecked.len(),
            self.episodes,
            self.files
        );
        for u in self.unchecked.iter().take(UNCHECKED_SHOWN) {
            let _ = writeln!(out, "  {} ({}): {}", u.episode, u.at, u.reason);
        }
        if self.unchecked.len() > UNCHECKED_SHOWN {
            let _ = writeln!(out, "  and {} more", self.unchecked.len() - UNCHECKED_SHOWN);
        }
        let checked = self.episodes - self.unchecked.len();
        if self.rows.is_empty() && checked > 0 {
            let _ = writeln!(out, "the other {checked} episodes replay identically");
        }
    }
}

/// Verify every record of `options.files` (streamed, one record in memory at a time).
/// Table records (`"kind": "table"`) are verified by the table engine (`table.rs`).
pub fn verify(options: &VerifyOptions) -> Result<VerifyReport, Error> {
    // The files' kind, or one episode's own (a file may hold both: a server's log).
    let kind = match &options.episode {
        Some(id) => crate::record::episode_kind(&options.files, id)?,
        None => None,
    };
    let kind = match kind {
        Some(kind) => kind,
        None => crate::record::records_kind(&options.files)?,
    };
    let mut report = verify_kind(options, kind)?;
    if options.episode.is_none() {
        // A file of several kinds (a server's log): the other kinds are verified too.
        let others: Vec<_> = report.passed_over.kinds().collect();
        for other in others {
            let more = verify_kind(options, other)?;
            report.absorb(more);
        }
    }
    Ok(report)
}

/// Verify the records of `kind` in the files (the other kind's passed over and counted).
fn verify_kind(
    options: &VerifyOptions,
    kind: crate::record::RecordsKind,
) -> Result<VerifyReport, Error> {
    match kind {
        crate::record::RecordsKind::Table => return super::table::verify_tables(options),
        crate::record::RecordsKind::Market => return super::market::verify_markets(options),
        crate::record::RecordsKind::TwoParty => {}
    }
    let prompts = load_prompts(options.prompts_dir.as_deref())?;
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let mut report = VerifyReport {
        files: options.files.len(),
        ..VerifyReport::default()
    };
    let mut records = Records::open(
        &options.files,
        options.episode.as_deref(),
        options.on_duplicate,
    );
    for located in &mut records {
        let located = located?;
        let differences = match scenarios.find(&located.record) {
            Ok(scenario) => {
                let own = || located.record.reward_config.clone().unwrap_or_default();
                let rewards = options.rewards.clone().unwrap_or_else(own);
                match check_record(&located.record, &scenario, &prompts, &rewards) {
                    Ok(differences) => differences,
                    Err(e) => vec![cannot_replay(&e)],
                }
            }
            Err(FindError::Unavailable(u)) => {
                report.add_unchecked(&located.record.episode_id, located.at(), u);
                continue;
            }
            Err(FindError::Scenario(e)) => return Err(e.into()),
        };
        report.add(&located, differences);
    }
    report.duplicates = records.duplicates().clone();
    report.passed_over = records.passed_over();
    if let (Some(id), 0) = (&options.episode, report.episodes) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: super::list_files(&options.files),
        });
    }
    refuse_nothing_verified(options, report.episodes)?;
    Ok(report)
}

/// `--verify` over the records of one kind in `options.files` (the table's and the market's;
/// two-party records are read by `verify_kind` through their own reader): each record of the episode asked for (or
/// every record) found a scenario by `find` and checked by `check`, a scenario that cannot be
/// had counted unchecked; then the files' duplicates and passed-over lines, and the refusals of a
/// verification that checked nothing. The one loop of both kinds.
pub(super) fn verify_each<R, S>(
    options: &VerifyOptions,
    kind: crate::record::RecordsKind,
    episode_id: impl Fn(&R) -> &str,
    mut find: impl FnMut(&R) -> Result<S, FindError>,
    mut check: impl FnMut(&R, S) -> Vec<Difference>,
) -> Result<VerifyReport, Error>
where
    R: serde::de::DeserializeOwned,
{
    let mut report = VerifyReport {
        files: options.files.len(),
        ..VerifyReport::default()
    };
    let mut records = crate::record::RecordFiles::open(&options.files, options.on_duplicate)
        .of_kind(kind)
        .read_as::<R>();
    for located in &mut records {
        let located = located?;
        let record = &located.record;
        let id = episode_id(record);
        if options.episode.as_ref().is_some_and(|wanted| wanted != id) {
            continue;
        }
        let differences = match find(record) {
            Ok(scenario) => check(record, scenario),
            Err(FindError::Unavailable(u)) => {
                report.add_unchecked(id, located.at(), u);
                continue;
            }
            Err(FindError::Scenario(e)) => return Err(e.into()),
        };
        report.add_episode(id, located.at(), differences);
    }
    report.duplicates = records.duplicates().clone();
    report.passed_over = records.passed_over();
    if let (Some(id), 0) = (&options.episode, report.episodes) {
        return Err(Error::NoSuchEpisode {
            episode: id.clone(),
            files: crate::run::list_files(&options.files),
        });
    }
    refuse_nothing_verified(options, report.episodes)?;
    Ok(report)
}

/// A verification that checked no episode is no clean one (it would exit 0 on an empty file):
/// the episode asked for is in none of the files, or the files hold no record at all.
pub(super) fn refuse_nothing_verified(
    options: &VerifyOptions,
    episodes: usize,
) -> Result<(), Error> {
    if episodes > 0 {
        return Ok(());
    }
    let files = super::list_files(&options.files);
    Err(match &options.episode {
        Some(id) => Error::NoSuchEpisode {
            episode: id.clone(),
            files,
        },
        None => Error::NoRecords {
            files,
            several: options.files.len() > 1,
        },
    })
}

fn cannot_replay(e: &ReplayError) -> Difference {
    let field = match e {
        ReplayError::WrongScenario { .. } => "scenario missing",
        ReplayError::ScenarioChanged { .. } => "scenario changed",
        ReplayError::TemplatesChanged { .. } => "templates changed",
        ReplayError::Game { .. } => "replay failed",
    };
    Difference::cannot_replay(field, e.to_string())
}

/// The differences between `record` and what today's engine makes of its completions on
/// `scenario` with `prompts` and `rewards`; empty when they agree exactly. An error when the
/// record cannot be replayed at all (another scenario or other templates than it was played
/// with).
pub(crate) fn check_record(
    record: &EpisodeRecord,
    scenario: &Arc<Scenario>,
    prompts: &Arc<Prompts>,
    rewards: &RewardConfig,
) -> Result<Vec<Difference>, ReplayError> {
    let (mut episode, _unplayed) = record.replay_until_end(scenario, prompts)?;
    // A backend failure is not a completion: it ends the episode where the record says it did.
    if episode.outcome().is_none() && record.kind() == OutcomeKind::Error {
        if let Some(seat) = record.outcome.outcome.by {
            let detail = record.outcome.outcome.detail.clone().unwrap_or_default();
            episode
                .fail(seat, record.outcome.outcome.error_kind, detail)
                .map_err(|source| ReplayError::Game {
                    episode: record.episode_id.clone(),
                    source,
                })?;
        }
    }
    let recorded = json(record);
    let mut differences = Vec::new();
    if episode.outcome().is_none() {
        // The engine's turns against the record's engine turns: what the layers above add to a
        // turn (its call, rewards, labels) is no engine difference.
        let engine_turns: Vec<&crate::game::Turn> = record.turns.iter().map(|t| &t.turn).collect();
        diff_turns(
            &json(&engine_turns),
            &json(episode.turns()),
            &mut differences,
        );
        differences.push(Difference {
            field: "outcome.kind".into(),
            turn: None,
            recorded: show(&recorded["outcome"]["kind"]),
            replayed: "(the episode has not ended)".into(),
        });
        return Ok(differences);
    }
    let meta = RecordMeta {
        run_id: record.run_id.clone(),
        seeds: record.seeds,
        scenario_digest: record.scenario_digest.unwrap_or_else(|| scenario.digest()),
        players: PerSeat::from_fn(|seat| PlayerInfo {
            spec: record.seats[seat].player.clone(),
            model: record.seats[seat].model.clone(),
        }),
    };
    let Some(mut rebuilt) = EpisodeRecord::from_episode(
        episode,
        meta,
        rewards,
        record.timing.clone(),
        record.turns.iter().map(|t| t.call.clone()),
    ) else {
        return Ok(differences);
    };
    // What the engine does not compute: the record's identity and provenance.
    rebuilt.schema = record.schema;
    rebuilt.episode_id = record.episode_id.clone();
    rebuilt.group_id = record.group_id.clone();
    rebuilt.scenario_digest = record.scenario_digest;
    rebuilt.prompts_digest = record.prompts_digest;
    rebuilt.prompt_overrides = record.prompt_overrides.clone();
    rebuilt.parent = record.parent.clone();
    rebuilt.preset = record.preset.clone();
    rebuilt.training = record.training.clone();
    // The oracle is recomputed where the record has one (records older than the field have
    // none to check).
    rebuilt.oracle = record
        .oracle
        .as_ref()
        .and_then(|_| rebuilt.oracle_of(scenario));
    // A probe's answer is what the model said, not the engine's to recompute; what was read of
    // it and its scores are, from the answer and the scenario.
    rebuilt.probes = record
        .probes
        .iter()
        .map(|p| {
            crate::score::Probe::scored(
                scenario,
                &rebuilt.setup,
                p.seat,
                p.turn,
                p.answer.clone(),
                p.usage,
                p.failed.clone(),
            )
        })
        .collect();
    // Which rewards the record was scored under is provenance; checked under `rewards`, a
    // record scored otherwise differs in its rewards, not here.
    rebuilt.reward_config = record.reward_config.clone();
    // Records written before reject loops named their rule carry no `detail` for them; which
    // rule ended it is still checked, by the outcome's kind and the turn it ended on.
    if record.kind() == OutcomeKind::RejectLoop && record.outcome.outcome.detail.is_none() {
        rebuilt.outcome.outcome.detail = None;
    }
    // What the engine cannot recompute without calling an endpoint: the judge's and the
    // reward model's components, kept as recorded (the totals are recombined with them).
    rebuilt.keep_judged(record, rewards);
    for seat in Seat::BOTH {
        rebuilt.seats[seat].name = record.seats[seat].name.clone();
    }
    // A planner's candidates are what its proposers said, not the engine's to recompute; the
    // one committed must be the completion the turn was played with.
    for (i, (turn, logged)) in rebuilt.turns.iter_mut().zip(&record.turns).enumerate() {
        turn.planning = logged.planning.clone();
        differences.extend(committed_difference(
            logged.planning.as_ref(),
            &logged.raw,
            i,
        ));
    }
    diff_records(&recorded, &json(&rebuilt), &mut differences);
    Ok(differences)
}

/// A planner's turn (`planning`) whose committed candidate is not the completion `raw` turn
/// `turn` was played with: what `replay --verify` checks of a planner's candidates in either
/// kind of record (the candidates themselves are what its proposers said, not the engine's to
/// recompute).
pub(super) fn committed_difference(
    planning: Option<&crate::planner::Planning>,
    raw: &str,
    turn: usize,
) -> Option<Difference> {
    let planning = planning?;
    let committed = planning
        .candidates
        .get(planning.chosen)
        .map(|c| c.raw.as_str());
    (committed != Some(raw)).then(|| Difference {
        field: "turn.chosen".into(),
        turn: Some(turn),
        recorded: format!("candidate {}", planning.chosen),
        replayed: "(not the turn's raw completion)".into(),
    })
}

pub(super) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A value as compact JSON, cut to 100 characters; `(none)` for an absent field.
fn show(value: &Value) -> String {
    const MAX: usize = 100;
    let text = match value {
        Value::Null => return "(none)".into(),
        other => other.to_string(),
    };
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

fn keys<'a>(a: &'a Map<String, Value>, b: &'a Map<String, Value>) -> Vec<&'a String> {
    let mut keys: Vec<&String> = a.keys().collect();
    keys.extend(b.keys().filter(|k| !a.contains_key(*k)));
    keys
}

pub(super) fn diff_records(recorded: &Value, replayed: &Value, out: &mut Vec<Difference>) {
    let empty = Map::new();
    let a = recorded.as_object().unwrap_or(&empty);
    let b = replayed.as_object().unwrap_or(&empty);
    for key in keys(a, b) {
        let (x, y) = (
            a.get(key).unwrap_or(&Value::Null),
            b.get(key).unwrap_or(&Value::Null),
        );
        if key == "turns" {
            diff_turns(x, y, out);
        } else {
            diff_value(key.clone(), x, y, out);
        }
    }
}

/// Objects are followed down to the field that differs; arrays and scalars are compared whole.
fn diff_value(path: String, a: &Value, b: &Value, out: &mut Vec<Difference>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in keys(x, y) {
                diff_value(
                    format!("{path}.{key}"),
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ => out.push(Difference {
            field: path,
            turn: None,
            recorded: show(a),
            replayed: show(b),
        }),
    }
}

/// Turns are compared one by one, each by its top-level fields (`turn.action`, `turn.played`,
/// `turn.regulation`, `turn.forwarded`, …); a different number of turns is the field `turns`.
pub(super) fn diff_turns(recorded: &Value, replayed: &Value, out: &mut Vec<Difference>) {
    let none = Vec::new();
    let xs = recorded.as_array().unwrap_or(&none);
    let ys = replayed.as_array().unwrap_or(&none);
    let empty = Map::new();
    for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
        if x == y {
            continue;
        }
        let (x, y) = (
            x.as_object().unwrap_or(&empty),
            y.as_object().unwrap_or(&empty),
        );
        for key in keys(x, y) {
            let (a, b) = (
                x.get(key).unwrap_or(&Value::Null),
                y.get(key).unwrap_or(&Value::Null),
            );
            if a != b {
                out.push(Difference {
                    field: format!("turn.{key}"),
                    turn: Some(i),
                    recorded: show(a),
                    replayed: show(b),
                });
            }
        }
    }
    if xs.len() != ys.len() {
        out.push(Difference {
            field: "turns".into(),
            turn: Some(xs.len().min(ys.len())),
            recorded: format!("{} turns", xs.len()),
            replayed: format!("{} turns", ys.len()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_turn_field_is_named_with_its_turn_and_nested_fields_by_path() {
        let recorded = json!({
            "turns": [{"seat": "learner", "action": {"type": "accept"}}, {"seat": "opponent"}],
            "outcome": {"kind": "deal", "utility": {"learner": 3.0, "opponent": 1.0}},
            "rewards": {"learner": 1.0, "opponent": 0.0},
        });
        let replayed = json!({
            "turns": [{"seat": "learner", "action": {"type": "reject"}}],
            "outcome": {"kind": "deal", "utility": {"learner": 2.5, "opponent": 1.0}},
            "rewards": {"learner": 1.0, "opponent": 0.0},
        });
        let mut out = Vec::new();
        diff_records(&recorded, &replayed, &mut out);
        let named: Vec<(&str, Option<usize>)> =
            out.iter().map(|d| (d.field.as_str(), d.turn)).collect();
        assert_eq!(
            named,
            [
                ("outcome.utility.learner", None),
                ("turn.action", Some(0)),
                ("turns", Some(1)),
            ]
        );
        assert_eq!(out[0].describe(), "3.0 → 2.5");
        assert_eq!(out[2].describe(), "2 turns → 1 turns");
        assert_eq!(
            out[1].describe(),
            r#"{"type":"accept"} → {"type":"reject"}"#
        );
    }

    #[test]
    fn an_absent_field_reads_as_none_and_long_values_are_cut() {
        let long = "x".repeat(300);
        let mut out = Vec::new();
        diff_value(
            "outcome.terms_text".into(),
            &json!(long),
            &Value::Null,
            &mut out,
        );
        assert!(out[0].recorded.ends_with('…'));
        assert_eq!(out[0].replayed, "(none)");
    }

    /// A CaSiNo deal played from the fixtures: the learner (agent_1, 5/4/3) moves first and
    /// asks for food:3 water:2 firewood:0; the opponent accepts. Learner 15 + 8 = 23 of 36.
    fn casino_deal() -> (Arc<Scenario>, EpisodeRecord) {
        use crate::fixtures::{casino, learner_first_as, play, turn};
        use crate::scenario::Role;
        let s = casino();
        let episode = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("Food for me?", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        let record = crate::fixtures::record_of(episode);
        assert_eq!(record.outcome.outcome.utility.learner, 23.0);
        (s, record)
    }

    #[test]
    fn a_record_checks_clean_and_an_edit_is_named() {
        let (s, record) = casino_deal();
        let prompts = Prompts::builtin();
        let rewards = RewardConfig::default();
        assert_eq!(check_record(&record, &s, &prompts, &rewards).unwrap(), []);

        let mut edited = record.clone();
        edited.outcome.outcome.utility.learner = 24.0;
        edited.turns[0].raw = edited.turns[0].raw.replace("water:2", "water:1");
        let found = check_record(&edited, &s, &prompts, &rewards).unwrap();
        let fields: Vec<&str> = found.iter().map(|d| d.field.as_str()).collect();
        assert!(fields.contains(&"outcome.utility.learner"), "{fields:?}");
        assert!(fields.contains(&"turn.action"), "{fields:?}");
        assert!(fields.contains(&"turn.forwarded"), "{fields:?}");
        assert!(fields.contains(&"outcome.terms.items"), "{fields:?}");
        let utility = found
            .iter()
            .find(|d| d.field == "outcome.utility.learner")
            .unwrap();
        // The edited turn asks for food:3 water:1 firewood:0 → 15 + 4 = 19.
        assert_eq!(utility.describe(), "24.0 → 19.0");

        // Another reward design is a difference in the rewards only.
        let threshold = RewardConfig {
            tau: 0.6,
            kind: crate::reward::RewardKind::Threshold,
            ..RewardConfig::default()
        };
        let found = check_record(&record, &s, &prompts, &threshold).unwrap();
        let fields: Vec<&str> = found.iter().map(|d| d.field.as_str()).collect();
        // Learner 23/36 ≥ 0.6 keeps ρ; opponent 0 + 4 + 15 = 19, 19/36 < 0.6 → −0.5.
        assert_eq!(fields, ["rewards.opponent"]);
    }

    #[test]
    fn an_old_reject_loop_record_without_a_detail_still_verifies() {
        use crate::fixtures::{casino, learner_first_as, play, turn};
        use crate::scenario::Role;
        let s = casino();
        let same = turn("Mine.", "[SUBMIT_DEAL] food:3 water:2 firewood:0");
        let other = turn("No.", "[SUBMIT_DEAL] food:0 water:0 firewood:3");
        let episode = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[same.clone(), other.clone(), same.clone(), other, same],
        );
        let mut record = crate::fixtures::record_of(episode);
        assert_eq!(record.kind(), OutcomeKind::RejectLoop);
        assert!(record.outcome.outcome.detail.is_some());
        let (prompts, rewards) = (Prompts::builtin(), RewardConfig::default());
        assert_eq!(check_record(&record, &s, &prompts, &rewards).unwrap(), []);
        // As a record from before the rule was named: no detail, and still clean.
        record.outcome.outcome.detail = None;
        let line = serde_json::to_string(&record).unwrap();
        assert!(!line.contains("\"detail\""), "no `detail: null` is written");
        assert_eq!(check_record(&record, &s, &prompts, &rewards).unwrap(), []);
    }

    #[test]
    fn an_episode_the_engine_ends_earlier_is_reported_not_refused() {
        let (s, mut record) = casino_deal();
        // The first turn now walks away: the accept after it is never played.
        record.turns[0].raw = "Thought: no\nTalk: Bye.\nAction: [WALK_AWAY]".into();
        let found =
            check_record(&record, &s, &Prompts::builtin(), &RewardConfig::default()).unwrap();
        let turns = found.iter().find(|d| d.field == "turns").unwrap();
        assert_eq!(
            (turns.turn, turns.describe().as_str()),
            (Some(1), "2 turns → 1 turns")
        );
        assert!(found.iter().any(|d| d.field == "outcome.kind"));
    }

    /// A record whose turns stop before its episode ends (its last turn lost) differs in its
    /// ending alone: the turns it has are the engine's, whatever the record adds to them (the
    /// endpoint's account of each call, rewards, labels).
    #[test]
    fn an_episode_the_record_does_not_finish_differs_in_its_ending_not_its_turns() {
        let (s, mut record) = casino_deal();
        for turn in &mut record.turns {
            turn.call = Some(crate::vocab::Call {
                model: Some("m".into()),
                ..Default::default()
            });
            turn.labels.insert("tactic".into(), "anchor".into());
        }
        record.turns.pop();
        let found =
            check_record(&record, &s, &Prompts::builtin(), &RewardConfig::default()).unwrap();
        let fields: Vec<&str> = found.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["outcome.kind"]);
    }

    #[test]
    fn the_report_counts_each_episode_once_per_field() {
        let (_, record) = casino_deal();
        let at = |line| Located {
            record: record.clone(),
            file: "e.jsonl".into(),
            line,
            file_index: 0,
        };
        let d = |field: &str, turn| Difference {
            field: field.into(),
            turn,
            recorded: "1".into(),
            replayed: "2".into(),
        };
        let mut report = VerifyReport::default();
        report.add(
            &at(1),
            vec![d("turn.action", Some(2)), d("turn.action", Some(4))],
        );
        report.add(&at(2), vec![]);
        report.add(
            &at(3),
            vec![d("turn.action", Some(0)), d("rewards.learner", None)],
        );
        assert_eq!((report.episodes, report.differing), (3, 2));
        assert_eq!(report.rows.len(), 2);
        assert_eq!(report.rows[0].episodes, 2);
        assert_eq!(report.rows[0].first_at, "e.jsonl:1");
        assert_eq!(report.rows[0].first.turn, Some(2));
        let table = report.table();
        assert!(table.contains("turn.action"), "{table}");
        assert!(table.contains("g0-m0 turn 3 (e.jsonl:1): 1 → 2"), "{table}");
        assert!(table.contains("2 of 3 episodes"), "{table}");
    }
}
