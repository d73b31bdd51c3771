//! `replay` on table records (n-party episodes, `"kind": "table"`): `--verify` replays each
//! record through the table engine ([`TableRecord::replay`], the one replay of a table) against
//! its [`TableScenario`], then rebuilds the record from the replayed episode and compares the
//! two field by field (what the replay itself does not check, such as the rewards, is caught
//! there); `--render` writes the public transcript (what every party read: each turn's talk
//! and played move, never a thought or a score table).
//!
//! Scenarios are found as two-party records find theirs ([`TableSource`]): in the
//! `--scenarios` files when given, otherwise in `scenarios/{family}.jsonl` of the record's
//! family (`scenarios/deliberation.jsonl`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::render::escape;
use super::source::SeatedSource;
use super::verify::{committed_difference, diff_records, json, Difference};
use super::{Error, RenderFormat, RenderOptions, VerifyOptions, VerifyReport};
use crate::game::Prompts;
use crate::record::{RecordFiles, TablePlayerInfo, TableRecord, TableReplayError, TurnCost};
use crate::reward::RewardConfig;
use crate::run::{list_files, FindError};
use crate::scenario::{TableScenario, SCENARIO_DIR};
use crate::table::{public_move, TableEpisode};

/// Where table scenarios are looked up: `{dir}/{family}.jsonl` of a record's family.
pub(crate) type TableSource = SeatedSource<TableScenario>;

impl TableSource {
    /// The scenario `record` was played on, by its id (its digest is checked by the replay).
    pub fn find(&mut self, record: &TableRecord) -> Result<Arc<TableScenario>, FindError> {
        self.find_in(
            record.family.name(),
            &record.episode_id,
            &record.scenario_id,
        )
    }
}

/// `--verify` over files of table records.
pub(crate) fn verify_tables(options: &VerifyOptions) -> Result<VerifyReport, Error> {
    if let Some(rewards) = &options.rewards {
        rewards
            .check_for_table()
            .map_err(|e| Error::Run(crate::run::RunError::Options(e.to_string())))?;
    }
    let mut scenarios = TableSource::in_dir(&options.scenarios, Path::new(SCENARIO_DIR))?;
    let prompts = super::load_prompts(options.prompts_dir.as_deref())?;
    super::verify::verify_each(
        options,
        crate::record::RecordsKind::Table,
        |r: &TableRecord| r.episode_id.as_str(),
        |r| scenarios.find(r),
        |record, scenario| {
            // Checked under `--config`'s rewards when given, else the record's own.
            let own = || record.reward_config.clone().unwrap_or_default();
            let rewards = options.rewards.clone().unwrap_or_else(own);
            check_table(record, scenario, &prompts, &rewards)
        },
    )
}

/// What differs between `record` and what the table engine makes of its completions on
/// `scenario`, its rewards under `rewards`; empty when they agree exactly.
fn check_table(
    record: &TableRecord,
    scenario: Arc<TableScenario>,
    prompts: &Arc<Prompts>,
    rewards: &RewardConfig,
) -> Vec<Difference> {
    match record.replay_with(scenario.clone(), prompts) {
        Ok(episode) => rebuilt_differences(record, &episode, rewards),
        Err(e) => detailed(record, scenario, prompts, &e, rewards)
            .unwrap_or_else(|| vec![cannot_replay(&e)]),
    }
}

/// The fields where `record` differs from the record rebuilt from `episode`, its replay,
/// rewarded under `rewards`.
fn rebuilt_differences(
    record: &TableRecord,
    episode: &TableEpisode,
    rewards: &RewardConfig,
) -> Vec<Difference> {
    // The record rebuilt from the replay, with what the engine does not compute (ids, digests,
    // who sat where, what each call cost) taken from the record.
    let players: Vec<TablePlayerInfo> = record
        .seats
        .iter()
        .map(|s| TablePlayerInfo {
            player: s.player.clone(),
            model: s.model.clone(),
        })
        .collect();
    let costs: Vec<TurnCost> = record
        .turns
        .iter()
        .map(|t| TurnCost {
            latency_ms: t.latency_ms,
            call: t.call.clone(),
            retries: t.retries,
            planning: t.planning.clone(),
        })
        .collect();
    let mut rebuilt = TableRecord::of(
        &record.run_id,
        record.seeds,
        episode,
        &record.options,
        &players,
        &costs,
    );
    rebuilt.schema = record.schema;
    rebuilt.episode_id = record.episode_id.clone();
    rebuilt.group_id = record.group_id.clone();
    rebuilt.scenario_digest = record.scenario_digest;
    rebuilt.prompts_digest = record.prompts_digest.clone();
    rebuilt.source = record.source.clone();
    rebuilt.parent = record.parent.clone();
    rebuilt.set_rewards(episode.scenario(), rewards);
    rebuilt.keep_judged(record, rewards);
    // Which rewards the record was scored under is provenance; checked under `rewards`, a
    // record scored otherwise differs in its rewards, not here.
    rebuilt.reward_config = record.reward_config.clone();
    for (seat, logged) in rebuilt.seats.iter_mut().zip(&record.seats) {
        seat.name = logged.name.clone();
    }
    if record.outcome.outcome.kind == crate::game::OutcomeKind::Error {
        // A backend failure is no completion: the replay stops where the record does, and
        // the ending is the record's.
        rebuilt.outcome = record.outcome.clone();
        rebuilt.rewards = record.rewards.clone();
    }
    let mut differences: Vec<Difference> = record
        .turns
        .iter()
        .enumerate()
        .filter_map(|(i, t)| committed_difference(t.planning.as_ref(), &t.turn.completion.text, i))
        .collect();
    diff_records(&json(record), &json(&rebuilt), &mut differences);
    differences
}

/// The fields that differ where the replay stopped at a difference, named as the two-party
/// verify names them. At a turn (`turn 4`): the turns before it are replayed through
/// [`TableRecord::replay`] with no ending to check (an `error` ending is not checked), the one
/// turn stepped, and its fields compared (`turn.parsed`, `turn.accepts`, …). At the offers,
/// the outcome or the scores: the whole record replayed with no ending to check, rebuilt, and
/// compared field by field (`outcome.rho.mayor`, `offers`, …). `None` where that cannot be
/// done (the coarse row is given then).
fn detailed(
    record: &TableRecord,
    scenario: Arc<TableScenario>,
    prompts: &Arc<Prompts>,
    e: &TableReplayError,
    rewards: &RewardConfig,
) -> Option<Vec<Difference>> {
    let TableReplayError::Differs { what, .. } = e else {
        return None;
    };
    let Some(i) = what
        .strip_prefix("turn ")
        .and_then(|n| n.parse::<usize>().ok())
    else {
        let mut lenient = record.clone();
        lenient.outcome.outcome.kind = crate::game::OutcomeKind::Error;
        let episode = lenient.replay_with(scenario, prompts).ok()?;
        let differences = rebuilt_differences(record, &episode, rewards);
        return (!differences.is_empty()).then_some(differences);
    };
    let logged = record.turns.get(i)?;
    let mut before = record.clone();
    before.turns.truncate(i);
    // An `error` ending is not checked by the replay: the prefix is replayed as far as it goes.
    before.outcome.outcome.kind = crate::game::OutcomeKind::Error;
    let mut episode = before.replay_with(scenario, prompts).ok()?;
    episode
        .step(logged.turn.seat, logged.turn.completion.clone())
        .ok()?;
    let replayed = episode.turns().get(i)?;
    let mut differences = Vec::new();
    super::verify::diff_turns(&json(&[&logged.turn]), &json(&[replayed]), &mut differences);
    for d in &mut differences {
        d.turn = Some(i);
    }
    (!differences.is_empty()).then_some(differences)
}

fn cannot_replay(e: &TableReplayError) -> Difference {
    let field = match e {
        TableReplayError::WrongScenario { .. } => "scenario missing".to_string(),
        TableReplayError::ScenarioChanged { .. } => "scenario changed".to_string(),
        TableReplayError::TemplatesChanged { .. } => "templates changed".to_string(),
        TableReplayError::Table { .. } => "replay failed".to_string(),
        // `turn 3`, `the offers`, `the outcome`, `the setup (…)`, …: what differs, by name.
        TableReplayError::Differs { what, .. } => what.clone(),
    };
    Difference::cannot_replay(&field, e.to_string())
}

/// `--render` of a table episode: the public transcript (see the module's doc).
pub(crate) fn render_table(options: &RenderOptions) -> Result<String, Error> {
    let mut scenarios = TableSource::in_dir(&options.scenarios, Path::new(SCENARIO_DIR))?;
    let records = RecordFiles::open(&options.files, options.on_duplicate)
        .of_kind(crate::record::RecordsKind::Table)
        .read_as::<TableRecord>();
    for located in records {
        let record = located?.record;
        if record.episode_id != options.episode {
            continue;
        }
        let scenario = scenarios.find(&record)?;
        let text = public_transcript(&record, &scenario);
        return Ok(match options.format {
            RenderFormat::Md => text,
            RenderFormat::Html => format!(
                "<!doctype html>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<pre>{}</pre>\n",
                escape(&record.episode_id),
                escape(&text)
            ),
        });
    }
    Err(Error::NoSuchEpisode {
        episode: options.episode.clone(),
        files: list_files(&options.files),
    })
}

/// The public transcript of a table episode as Markdown: every played turn as the other
/// parties read it (its talk and its move in the engine's public words,
/// [`public_move`]; attempts that could not be played are marked, with no text, and no
/// thought ever shows), then the ending with each party's score, ρ and reward.
pub(crate) fn public_transcript(record: &TableRecord, scenario: &TableScenario) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} — {} ({})\n",
        record.episode_id, record.scenario_id, record.run_id
    );
    let _ = writeln!(out, "| role | party | player |\n|---|---|---|");
    for s in &record.seats {
        let _ = writeln!(out, "| {} | {} | `{}` |", s.role, s.name, s.player);
    }
    out.push('\n');
    for (i, t) in record.turns.iter().enumerate() {
        let name = record
            .seats
            .get(t.turn.seat)
            .map_or(t.role.as_str(), |s| s.name.as_str());
        match t.turn.played() {
            Some(action) => {
                let shown = public_move(scenario, action, t.turn.offer, t.turn.accepts);
                let talk = t.turn.parsed.talk.as_deref().unwrap_or("").trim();
                let _ = writeln!(
                    out,
                    "**{}. {name}** ({}): {talk}\n\n> {shown}\n",
                    i + 1,
                    t.role
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "**{}. {name}** ({}): *(an attempt that could not be played)*\n",
                    i + 1,
                    t.role,
                );
            }
        }
    }
    let o = &record.outcome;
    let _ = writeln!(out, "**Outcome:** {}", o.outcome.kind.name());
    if let Some(deal) = &o.deal_text {
        let _ = writeln!(out, "\n**Deal:** {deal}");
    }
    let _ = writeln!(out, "\n| role | score | ρ | reward |\n|---|---:|---:|---:|");
    for s in &record.seats {
        let score = o
            .scores
            .get(&s.role)
            .map_or("–".to_string(), i64::to_string);
        let rho = o.rho.get(&s.role).copied().unwrap_or(0.0);
        let reward = record.rewards.get(&s.role).copied().unwrap_or(0.0);
        let _ = writeln!(out, "| {} | {score} | {rho:.3} | {reward:.3} |", s.role);
    }
    out
}

/// Refuse table records for a replay command that is two-party only (`--rescore`,
/// `--branch-from`), saying so instead of failing on the first table line's fields.
pub(crate) fn two_party_only(files: &[PathBuf], command: &str) -> Result<(), Error> {
    match crate::record::records_kind(files)? {
        crate::record::RecordsKind::Table => Err(Error::Options(format!(
            "{command} is for two-party records; {} holds table records (n-party games): \
             --verify and --render take them",
            list_files(files)
        ))),
        crate::record::RecordsKind::Market => Err(Error::Options(format!(
            "{command} is for two-party records; {} holds market records: --verify takes them",
            list_files(files)
        ))),
        crate::record::RecordsKind::TwoParty => Ok(()),
    }
}
