//! LLM-Deliberation's published experiment logs, read as sessions and re-scored with dealgym's
//! table metrics (`score::deliberation_metrics`, the paper's agreement rule as the game states
//! it: [`Scoring::Rule`]) or exactly as the authors' notebooks scored them
//! ([`deliberation_paper`](super::deliberation_paper): [`Scoring::Paper`]).
//!
//! The logs come in two layouts (`logs/` of the dataset):
//! - the current code's `history*.json` (the three GPT-4 folders): `rounds` is a list of
//!   `{agent, prompt, full_answer, public_answer}`, the lead's opening deal first and its final
//!   proposal last, so a complete session has `4N + 2` rounds;
//! - the older code's `answers*.json` inside the zip files: `rounds` is a list of
//!   `[agent, public answer]` (the opening deal and the `4N` turns) and the lead's final
//!   proposal is `voting_sessions["0"].deal_suggestion`; a complete session has at least
//!   `4N + 1` rounds and that final proposal. The prompts and full answers of that layout are in
//!   separate `full_conversation*.json` files that cannot be paired with a session by name;
//!   they are not read.
//!
//! Zip files are read in memory; nothing is written next to the dataset. A deal is extracted
//! from a public answer as the paper's notebook does (`extract_deal`): per issue, the first
//! `A1`…`A9` (`B…`, …) anywhere in the text, newlines removed; an answer naming every issue is
//! a proposal, one naming an option the issue does not have is counted as unscorable.
//!
//! The old layout names parties as its own prompts did (`The Mayor`, `International bank`):
//! a name is matched to a seat by its role slug, then without a leading `the_`, then through
//! `ALIASES`. Runs of the base game with fewer parties (Mixtral with 3, 4, 5) are scored on
//! the base scenario reduced to the parties present, with `n − 1` of them needed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::limits::{read_at_most, read_bytes, MAX_INPUT_FILE};
use crate::scenario::import::deliberation::role_slug;
use crate::scenario::{
    load_table_scenarios, AgreementRule, LoadOptions, ScenarioError, TableScenario,
};
use crate::score::{deliberation_metrics, Proposal, TableMetrics, TableTally};

use super::deliberation_paper::{
    score_current, score_early, Answer, NotScored, Notebook, NotebookTable, Verdicts,
};
use super::deliberation_records::session_record;

/// Why the logs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Format { file: String, message: String },
    #[error(transparent)]
    Scenarios(#[from] ScenarioError),
    #[error("experiment {experiment}: no scenario `{id}` in the scenario file")]
    NoScenario { experiment: String, id: String },
}

/// Where an experiment's sessions are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// A folder of `history*.json` under `logs/`.
    Folder(&'static str),
    /// A zip file under `logs/` holding `answers*.json`.
    Zip(&'static str),
}

/// One experiment of the paper's logs and the scenario it was played on.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    pub(crate) name: &'static str,
    pub(crate) source: LogSource,
    /// `deliberation:GAME:VARIANT`.
    pub(crate) scenario: &'static str,
    /// Why the experiment cannot be scored on the shipped scenario, if it cannot.
    pub(crate) unscored: Option<&'static str>,
    /// Where the authors' stored notebook output scored fewer sessions than the folder now
    /// holds: the last session file it scored (the sessions are read in file-name order, which
    /// is the order they were logged in).
    pub(crate) stored_through: Option<&'static str>,
}

const fn exp(name: &'static str, source: LogSource, scenario: &'static str) -> Experiment {
    Experiment {
        name,
        source,
        scenario,
        unscored: None,
        stored_through: None,
    }
}

const NOT_SHIPPED: &str = "a harder variant of the base game whose score tables are not shipped";

/// Every experiment the dataset ships, with the seating it was played with (the logs' configs
/// and `initial_prompts.txt`, and the experiment's name).
pub const EXPERIMENTS: [Experiment; 25] = {
    use LogSource::{Folder, Zip};
    const COOP: &str = "deliberation:base:cooperative";
    [
        // `evaluate_deals.ipynb`'s stored output lists 66 sessions: the complete ones logged
        // before 22:10 (its "Final deal" lines are theirs; the 14 complete ones logged later
        // are not among them), see docs/src/data/deliberation.md.
        Experiment {
            stored_through: Some("history22_08_04.json"),
            ..exp(
                "all_coop_base_7player_gpt4",
                Folder("all_coop_base_7player_gpt4/all_coop_7players"),
                "deliberation:base_7players:cooperative",
            )
        },
        exp(
            "all_coop_temp1_base_gpt4",
            Folder("all_coop_temp1_base_gpt4"),
            COOP,
        ),
        exp(
            "all_greedy_base_gpt4",
            Folder("all_greedy_base_gpt4"),
            "deliberation:base:greedy_all",
        ),
        exp("llama2_13b", Zip("llama2_13b.zip"), COOP),
        exp(
            "llama2_70b_base_all_coop",
            Zip("llama2_70b_base_all_coop.zip"),
            COOP,
        ),
        exp("llama3_70b", Zip("llama3_70b.zip"), COOP),
        exp(
            "mixtral_base_all_coop",
            Zip("mixtral_base_all_coop.zip"),
            COOP,
        ),
        exp(
            "mixtralFivePlayers_base_all_coop",
            Zip("mixtralFivePlayers_base_all_coop.zip"),
            COOP,
        ),
        exp(
            "mixtralFourPlayers_base_all_coop",
            Zip("mixtralFourPlayers_base_all_coop.zip"),
            COOP,
        ),
        exp(
            "mixtralThreePlayers_base_all_coop",
            Zip("mixtralThreePlayers_base_all_coop.zip"),
            COOP,
        ),
        exp(
            "ouput_base_rewritten_allcoop_gpt4",
            Zip("ouput_base_rewritten_allcoop_gpt4.zip"),
            "deliberation:base_rewritten:cooperative",
        ),
        exp(
            "output_adv_game_targeted_adv_gpt3_base_rest_gpt4",
            Zip("output_adv_game_targeted_adv_gpt3_base_rest_gpt4.zip"),
            "deliberation:base:targeted_adv",
        ),
        exp(
            "output_adv_game_targeted_union_base_gpt4",
            Zip("output_adv_game_targeted_union_base_gpt4.zip"),
            "deliberation:base:targeted_adv",
        ),
        exp(
            "output_adv_game_untargeted_base_gpt4",
            Zip("output_adv_game_untargeted_base_gpt4.zip"),
            "deliberation:base:untargeted_adv",
        ),
        exp(
            "output_base_best_allcoop_gpt4",
            Zip("output_base_best_allcoop_gpt4.zip"),
            COOP,
        ),
        exp(
            "output_base_leading_gpt3_rest_gpt4_allcoop",
            Zip("output_base_leading_gpt3_rest_gpt4_allcoop.zip"),
            COOP,
        ),
        Experiment {
            unscored: Some(NOT_SHIPPED),
            ..exp(
                "output_difficult_17_2_base_allcoop_gpt4",
                Zip("output_difficult_17_2_base_allcoop_gpt4.zip"),
                COOP,
            )
        },
        Experiment {
            unscored: Some(NOT_SHIPPED),
            ..exp(
                "output_difficult_30_4_base_allcoop_gpt4",
                Zip("output_difficult_30_4_base_allcoop_gpt4.zip"),
                COOP,
            )
        },
        exp(
            "output_env_greedy_gpt4_rest_coop_base",
            Zip("output_env_greedy_gpt4_rest_coop_base.zip"),
            "deliberation:base:greedy_environmental_league",
        ),
        exp(
            "output_game1_57_21_gpt4_allcoop",
            Zip("output_game1_57_21_gpt4_allcoop.zip"),
            "deliberation:game1:cooperative",
        ),
        exp(
            "output_game2_57_18_gpt4_allcoop",
            Zip("output_game2_57_18_gpt4_allcoop.zip"),
            "deliberation:game2:cooperative",
        ),
        exp(
            "output_game3_57_34_gpt4_allcoop",
            Zip("output_game3_57_34_gpt4_allcoop.zip"),
            "deliberation:game3:cooperative",
        ),
        exp(
            "output_leading_greedy_gpt4_rest_coop_base",
            Zip("output_leading_greedy_gpt4_rest_coop_base.zip"),
            "deliberation:base:greedy_sportco",
        ),
        exp(
            "output_two_greedy_mayor_union_gpt4_rest_coop_base",
            Zip("output_two_greedy_mayor_union_gpt4_rest_coop_base.zip"),
            "deliberation:base:greedy_mayor_union",
        ),
        exp(
            "output_union_mayor_gpt3_rest_gpt4_base_all_coop",
            Zip("output_union_mayor_gpt3_rest_gpt4_base_all_coop.zip"),
            COOP,
        ),
    ]
};

/// Old-layout party names that are not their seat's name (game files' names on the right).
pub(crate) const ALIASES: [(&str, &str); 8] = [
    ("international_bank", "international_development_bank"),
    ("foreign_agency", "foreign_aid_agency"),
    ("activists", "local_activists"),
    ("ngo", "local_ngo"),
    ("government", "local_government"),
    ("federal_government", "federal_government_of_germany"),
    ("state_government", "state_government_of_saarland"),
    ("neunkirchen_community", "local_community_of_neunkirchen"),
];

/// The seat of a party named in a log, if any.
pub(crate) fn seat_of_name(scenario: &TableScenario, name: &str) -> Option<usize> {
    let slug = role_slug(name);
    let bare = slug.strip_prefix("the_").unwrap_or(&slug).to_string();
    let alias = ALIASES
        .iter()
        .find(|(from, _)| *from == bare)
        .map(|(_, to)| to.to_string());
    [Some(slug.clone()), Some(bare), alias]
        .into_iter()
        .flatten()
        .find_map(|role| scenario.seat_of(&role))
}

/// The paper's notebook's deal reading: per issue, the first `X1`…`X9` in the text (newlines
/// removed). Returns the option numbers (1-based) of the issues found, `None` for one not found.
pub(crate) fn extract_deal(text: &str, issues: usize) -> Vec<Option<usize>> {
    extract_deal_upto(text, issues, 9)
}

/// The notebooks' deal reading with the highest option digit it looks for: per issue, the
/// first `X1`…`X<last>` in the text, newlines removed (`evaluate_deals.ipynb`'s `extract_deal`
/// looks for 1–9, the earlier `deals_evaluation.ipynb`'s for 1–5). Returns the option numbers
/// (1-based) of the issues found, `None` for one not found.
pub(crate) fn extract_deal_upto(text: &str, issues: usize, last: u8) -> Vec<Option<usize>> {
    let flat: Vec<u8> = text.bytes().filter(|&b| b != b'\n').collect();
    let digits = b'1'..=b'0' + last.clamp(1, 9);
    (0..issues)
        .map(|i| {
            let key = b'A' + i as u8;
            flat.windows(2)
                .find(|w| w[0] == key && digits.contains(&w[1]))
                .map(|w| usize::from(w[1] - b'0'))
        })
        .collect()
}

/// What one answer proposes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Proposed {
    /// Not every issue named.
    None,
    /// Every issue named, one option out of range.
    Unscorable,
    /// A deal: option indices, 0-based.
    Deal { deal: Vec<usize> },
}

/// Read a public answer against a scenario's issues.
pub(crate) fn proposed(scenario: &TableScenario, text: &str) -> Proposed {
    let found = extract_deal(text, scenario.issues.len());
    if found.iter().any(Option::is_none) {
        return Proposed::None;
    }
    let deal: Vec<usize> = found.iter().map(|o| o.unwrap_or(1) - 1).collect();
    if deal
        .iter()
        .zip(&scenario.issues)
        .any(|(&o, issue)| o >= issue.range.len())
    {
        return Proposed::Unscorable;
    }
    Proposed::Deal { deal }
}

/// One turn of a logged session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogTurn {
    /// The agent's name as the log writes it.
    pub agent: String,
    /// Its seat's role, when the name is one of the scenario's parties.
    pub role: Option<String>,
    pub public_answer: String,
    /// The answer with its scratchpad (current layout only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_answer: Option<String>,
    /// The round prompt the agent was given (current layout only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    pub proposed: Proposed,
}

/// One logged session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LoggedSession {
    /// The file inside the experiment (`history10_14_00.json`, `output_x/answers00%3A26%3A44.json`).
    pub file: String,
    /// The opening and every turn, in order, the lead's final proposal not among them.
    pub turns: Vec<LogTurn>,
    /// The lead's final proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_turn: Option<LogTurn>,
    /// Whether the session ran to the end (see the module's layouts).
    pub complete: bool,
}

/// The raw sessions of an experiment: (file name, parsed JSON), sorted by file name.
pub(crate) fn read_raw(logs: &Path, source: LogSource) -> Result<Vec<(String, Value)>, LogError> {
    let io = |file: &Path| {
        let file = file.display().to_string();
        move |source| LogError::Io { file, source }
    };
    let parse = |file: &str, bytes: &[u8]| {
        serde_json::from_slice::<Value>(bytes).map_err(|e| LogError::Format {
            file: file.to_string(),
            message: e.to_string(),
        })
    };
    let mut out = Vec::new();
    match source {
        LogSource::Folder(dir) => {
            let dir = logs.join(dir);
            for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
                let entry = entry.map_err(io(&dir))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("history") && name.ends_with(".json") {
                    let bytes =
                        read_bytes(&entry.path(), MAX_INPUT_FILE).map_err(io(&entry.path()))?;
                    out.push((name.clone(), parse(&name, &bytes)?));
                }
            }
        }
        LogSource::Zip(file) => {
            let path = logs.join(file);
            let bytes = read_bytes(&path, MAX_INPUT_FILE).map_err(io(&path))?;
            let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| {
                LogError::Format {
                    file: path.display().to_string(),
                    message: e.to_string(),
                }
            })?;
            for i in 0..archive.len() {
                let mut entry = archive.by_index(i).map_err(|e| LogError::Format {
                    file: path.display().to_string(),
                    message: e.to_string(),
                })?;
                let name = entry.name().to_string();
                let base = name.rsplit('/').next().unwrap_or(&name);
                if !(base.starts_with("answers") && base.ends_with(".json")) {
                    continue;
                }
                // An entry may unpack to any size: read no more of it than of a file.
                let data =
                    read_at_most(&mut entry, MAX_INPUT_FILE).map_err(io(&path.join(&name)))?;
                out.push((name.clone(), parse(&format!("{file}:{name}"), &data)?));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

/// The parties of a scenario that speak in these raw sessions (old layout), by seat.
fn present_seats(scenario: &TableScenario, raw: &[(String, Value)]) -> Vec<usize> {
    let mut seats: Vec<usize> = raw
        .iter()
        .filter_map(|(_, v)| v.get("rounds").and_then(Value::as_array))
        .flatten()
        .filter_map(|r| r.get(0).and_then(Value::as_str))
        .filter_map(|name| seat_of_name(scenario, name))
        .collect();
    seats.sort_unstable();
    seats.dedup();
    seats
}

/// The scenario reduced to `seats` (in order), `n − 1` of them needed: how the base game was
/// run with fewer parties.
pub(crate) fn reduced(scenario: &TableScenario, seats: &[usize]) -> TableScenario {
    let mut s = scenario.clone();
    s.parties = seats.iter().map(|&i| scenario.parties[i].clone()).collect();
    let n = s.parties.len();
    if let AgreementRule::Quorum { at_least, .. } = &mut s.rules.agreement {
        *at_least = n.saturating_sub(1).max(1);
    }
    s.id = format!("{}:{}_parties", scenario.id, n);
    s
}

/// Read the sessions of one experiment on its scenario (reduced to the parties present).
pub(crate) fn read_sessions(
    logs: &Path,
    experiment: &Experiment,
    scenario: &TableScenario,
) -> Result<(TableScenario, Vec<LoggedSession>), LogError> {
    let raw = read_raw(logs, experiment.source)?;
    let scenario = match experiment.source {
        LogSource::Zip(_) => {
            let seats = present_seats(scenario, &raw);
            if seats.len() < scenario.parties.len() && seats.len() >= 2 {
                reduced(scenario, &seats)
            } else {
                scenario.clone()
            }
        }
        LogSource::Folder(_) => scenario.clone(),
    };
    let n = scenario.parties.len();
    let lead = scenario.lead();
    let turn = |agent: String, public: String, full: Option<String>, prompt: Option<String>| {
        let seat = seat_of_name(&scenario, &agent);
        LogTurn {
            role: seat.map(|s| scenario.parties[s].role.clone()),
            proposed: proposed(&scenario, &public),
            agent,
            public_answer: public,
            full_answer: full,
            prompt,
        }
    };
    let mut sessions = Vec::with_capacity(raw.len());
    for (file, v) in raw {
        let rounds = v
            .get("rounds")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let session = match experiment.source {
            LogSource::Folder(_) => {
                let mut turns: Vec<LogTurn> = rounds
                    .iter()
                    .map(|r| {
                        turn(
                            text(r.get("agent")).unwrap_or_default(),
                            text(r.get("public_answer")).unwrap_or_default(),
                            text(r.get("full_answer")),
                            text(r.get("prompt")),
                        )
                    })
                    .collect();
                let last_is_lead = turns.last().is_some_and(|t| {
                    t.role.is_some() && t.role.as_deref().and_then(|r| scenario.seat_of(r)) == lead
                });
                let complete = turns.len() == 4 * n + 2 && last_is_lead;
                let final_turn = if complete { turns.pop() } else { None };
                LoggedSession {
                    file,
                    turns,
                    final_turn,
                    complete,
                }
            }
            LogSource::Zip(_) => {
                let turns: Vec<LogTurn> = rounds
                    .iter()
                    .filter_map(Value::as_array)
                    .filter(|r| r.len() == 2)
                    .map(|r| {
                        turn(
                            text(r.first()).unwrap_or_default(),
                            text(r.get(1)).unwrap_or_default(),
                            None,
                            None,
                        )
                    })
                    .collect();
                let final_turn = v
                    .pointer("/voting_sessions/0/deal_suggestion")
                    .and_then(Value::as_str)
                    .zip(lead)
                    .map(|(t, l)| {
                        turn(scenario.parties[l].name.clone(), t.to_string(), None, None)
                    });
                let complete = final_turn.is_some() && turns.len() > 4 * n;
                LoggedSession {
                    file,
                    turns,
                    final_turn,
                    complete,
                }
            }
        };
        sessions.push(session);
    }
    Ok((scenario, sessions))
}

/// The proposals of a session in turn order, the final one marked, for the table metrics.
pub(crate) fn proposals(scenario: &TableScenario, session: &LoggedSession) -> Vec<Proposal> {
    let one = |t: &LogTurn, is_final: bool| match (&t.proposed, &t.role) {
        (Proposed::Deal { deal }, Some(role)) => scenario.seat_of(role).map(|seat| Proposal {
            seat,
            deal: deal.clone(),
            is_final,
        }),
        _ => None,
    };
    session
        .turns
        .iter()
        .filter_map(|t| one(t, false))
        .chain(session.final_turn.iter().filter_map(|t| one(t, true)))
        .collect()
}

/// How the sessions are scored: by the game's stated rule (dealgym's reading), by the authors'
/// notebooks ([`deliberation_paper`](super::deliberation_paper)), or both side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// The game's rule: a party accepts at or above its minimum, the lead with its bonus;
    /// `score::deliberation_metrics` over the complete sessions.
    #[default]
    Rule,
    /// The authors' notebooks, exactly: strict `>`, the carried-over final verdict, their own
    /// score tables, their own session filters.
    Paper,
    /// Both, side by side.
    Both,
}

impl Scoring {
    pub const ALL: [Scoring; 3] = [Scoring::Rule, Scoring::Paper, Scoring::Both];

    pub fn name(self) -> &'static str {
        match self {
            Scoring::Rule => "rule",
            Scoring::Paper => "paper",
            Scoring::Both => "both",
        }
    }

    /// The rule mode's figures are computed.
    pub(crate) fn rule(self) -> bool {
        self != Scoring::Paper
    }

    /// The paper mode's figures are computed.
    pub(crate) fn paper(self) -> bool {
        self != Scoring::Rule
    }
}

impl std::fmt::Display for Scoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scoring {
    type Err = String;

    fn from_str(name: &str) -> Result<Scoring, String> {
        Scoring::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("unknown scoring `{name}`: rule, paper or both"))
    }
}

/// The paper's four figures over an experiment's sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub sessions: usize,
    /// Share of sessions where a proposal of the lead passed, at any round.
    pub deal_any: f64,
    /// Share where the lead's final proposal passed.
    pub deal_final: f64,
    /// Share where every party would accept the lead's final proposal.
    pub unanimous_final: f64,
    /// Mean over sessions of the share of proposals below the proposer's own minimum.
    pub wrong: f64,
}

/// One experiment's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReport {
    pub experiment: String,
    pub scenario: String,
    pub parties: usize,
    pub found: usize,
    pub complete: usize,
    /// Turns whose agent name is no party of the scenario.
    pub unknown_agents: usize,
    /// Answers naming every issue with an option the game does not have.
    pub unscorable: usize,
    /// Complete sessions written as table records.
    pub records: usize,
    /// Complete sessions the engine could not play as logged, with the first reason.
    pub not_recorded: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_recorded_example: Option<String>,
    /// The rule mode's figures, over the complete sessions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// The paper mode's, over the sessions the notebook keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<PaperReport>,
    /// Both modes over the sessions the authors' stored output scored, where that is fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<StoredReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscored: Option<String>,
}

/// An experiment scored as the authors' notebook scores it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperReport {
    pub notebook: Notebook,
    /// Sessions the notebook's filter keeps but its code raises on (not scored, as the 2023-12
    /// notebook's `try`/`except` leaves them out).
    pub not_scored: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
}

/// Both modes over the sessions the authors' stored output scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredReport {
    /// The last session file scored.
    pub through: String,
    /// Complete sessions among them.
    pub complete: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<Figures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<Figures>,
}

/// Score the complete sessions of an experiment by the rule: each session's metrics, summed in
/// the one tally ([`crate::score::TableTally`]) every table surface reads.
pub(crate) fn figures(scenario: &TableScenario, sessions: &[LoggedSession]) -> Option<Figures> {
    let mut tally = TableTally::default();
    for s in sessions.iter().filter(|s| s.complete) {
        let metrics = deliberation_metrics(scenario, &proposals(scenario, s), None);
        // A logged session has no dealgym ending: it ran its schedule out.
        tally.add(crate::game::OutcomeKind::MaxTurns, &metrics);
    }
    tally_figures(&tally)
}

/// The four figures of a tally (`None` without a session).
fn tally_figures(tally: &TableTally) -> Option<Figures> {
    Some(Figures {
        sessions: tally.scored(),
        deal_any: tally.rate(tally.deal_any)?,
        deal_final: tally.rate(tally.deal_final)?,
        unanimous_final: tally.rate(tally.unanimous_final)?,
        wrong: tally.wrong_mean().unwrap_or(0.0),
    })
}

/// Which notebook scored a log layout.
pub(crate) fn notebook_of(source: LogSource) -> Notebook {
    match source {
        LogSource::Folder(_) => Notebook::Current,
        LogSource::Zip(_) => Notebook::Early,
    }
}

/// A session as the authors' notebook scores it: `None` where its filter drops the session
/// (`evaluate_deals.ipynb` keeps exactly `4N + 2` rounds), else its verdicts or why its code
/// raises. `game` is the experiment's full game (every party of it, whoever spoke: the
/// notebooks' tables are the game's).
pub(crate) fn paper_session(
    game: &TableScenario,
    notebook: Notebook,
    session: &LoggedSession,
) -> Option<Result<Verdicts, NotScored>> {
    fn answers<'a>(
        game: &TableScenario,
        turns: impl Iterator<Item = &'a LogTurn>,
    ) -> Result<Vec<Answer<'a>>, NotScored> {
        turns
            .map(|t| {
                t.role
                    .as_deref()
                    .and_then(|r| game.seat_of(r))
                    .map(|seat| Answer {
                        seat,
                        text: &t.public_answer,
                    })
                    .ok_or(NotScored::UnknownParty)
            })
            .collect()
    }
    let table = NotebookTable::of(game, notebook)?;
    Some(match notebook {
        Notebook::Current => {
            let rounds = session.turns.len() + usize::from(session.final_turn.is_some());
            if rounds != 4 * game.parties.len() + 2 {
                return None;
            }
            answers(game, session.turns.iter().chain(&session.final_turn))
                .and_then(|rounds| score_current(&table, &rounds))
        }
        Notebook::Early => answers(game, session.turns.iter()).and_then(|turns| {
            let final_text = session
                .final_turn
                .as_ref()
                .map(|t| t.public_answer.as_str());
            score_early(&table, &turns, final_text)
        }),
    })
}

/// The paper mode's figures over sessions: the notebook's verdicts summed in the one tally.
/// Returns the figures and the sessions the notebook's code raises on.
pub(crate) fn paper_figures(
    game: &TableScenario,
    notebook: Notebook,
    sessions: &[LoggedSession],
) -> (Option<Figures>, usize) {
    let mut tally = TableTally::default();
    let mut not_scored = 0;
    for s in sessions {
        match paper_session(game, notebook, s) {
            None => {}
            Some(Err(_)) => not_scored += 1,
            Some(Ok(v)) => tally.add(
                crate::game::OutcomeKind::MaxTurns,
                &TableMetrics {
                    proposals: v.proposals,
                    deal_any: v.deal_any,
                    deal_final: v.deal_final,
                    unanimous_final: v.unanimous_final,
                    wrong_share: Some(v.wrong_share),
                    pareto: None,
                    nash_product: None,
                },
            ),
        }
    }
    (tally_figures(&tally), not_scored)
}

/// What to read and where to write.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// The dataset's folder (holding `logs/`).
    pub dataset: PathBuf,
    /// The table scenario file (`scenarios/deliberation.jsonl`).
    pub scenarios: PathBuf,
    /// Where the sessions are written as JSONL (one session per line, with its experiment), if
    /// anywhere.
    pub out: Option<PathBuf>,
    /// Where the complete sessions are written as table records, if anywhere. The records are
    /// the engine's play of the logs whatever `scoring` says: their metrics are the rule's,
    /// which replay recomputes.
    pub records: Option<PathBuf>,
    /// Which figures are computed (and, for the paper mode, written per session to `out`).
    pub scoring: Scoring,
}

/// Read every experiment, score it, and write the sessions and the complete ones' records.
pub fn import_logs(options: &LogOptions) -> Result<Vec<ExperimentReport>, LogError> {
    let loaded = load_table_scenarios(&options.scenarios, LoadOptions::default())?;
    let by_id: BTreeMap<&str, &TableScenario> = loaded
        .scenarios
        .iter()
        .map(|s| (s.id.as_str(), s))
        .collect();
    let logs = options.dataset.join("logs");
    let mut reports = Vec::new();
    let mut lines = String::new();
    let mut record_lines = String::new();
    // Every scenario a record names (the reduced tables of the 3- to 5-party runs among them),
    // once, in the order first named: written beside the records so each of them replays.
    let mut named: Vec<TableScenario> = Vec::new();
    for (group, experiment) in EXPERIMENTS.into_iter().enumerate() {
        let game = *by_id
            .get(experiment.scenario)
            .ok_or_else(|| LogError::NoScenario {
                experiment: experiment.name.into(),
                id: experiment.scenario.into(),
            })?;
        let (scenario, sessions) = read_sessions(&logs, &experiment, game)?;
        let notebook = notebook_of(experiment.source);
        let scored = experiment.unscored.is_none();
        if !named.iter().any(|s| s.id == scenario.id) {
            named.push(scenario.clone());
        }
        let shared = std::sync::Arc::new(scenario.clone());
        let source = match experiment.source {
            LogSource::Folder(f) | LogSource::Zip(f) => f,
        };
        let (mut recorded, mut not_recorded, mut example) = (0, 0, None);
        for (index, session) in sessions.iter().filter(|s| s.complete).enumerate() {
            match session_record(
                experiment.name,
                group as u64,
                index as u64,
                source,
                &shared,
                session,
            ) {
                Ok(record) => {
                    recorded += 1;
                    if options.records.is_some() {
                        let json =
                            serde_json::to_string(&record).map_err(|e| LogError::Format {
                                file: experiment.name.into(),
                                message: e.to_string(),
                            })?;
                        record_lines.push_str(&json);
                        record_lines.push('\n');
                    }
                }
                Err(why) => {
                    not_recorded += 1;
                    example.get_or_insert(format!("{}: {why}", session.file));
                }
            }
        }
        let all_turns = || {
            sessions
                .iter()
                .flat_map(|s| s.turns.iter().chain(&s.final_turn))
        };
        reports.push(ExperimentReport {
            experiment: experiment.name.into(),
            scenario: scenario.id.clone(),
            parties: scenario.parties.len(),
            found: sessions.len(),
            complete: sessions.iter().filter(|s| s.complete).count(),
            unknown_agents: all_turns().filter(|t| t.role.is_none()).count(),
            unscorable: all_turns()
                .filter(|t| t.proposed == Proposed::Unscorable)
                .count(),
            figures: (scored && options.scoring.rule())
                .then(|| figures(&scenario, &sessions))
                .flatten(),
            paper: (scored && options.scoring.paper()).then(|| {
                let (figures, not_scored) = paper_figures(game, notebook, &sessions);
                PaperReport {
                    notebook,
                    not_scored,
                    figures,
                }
            }),
            stored: experiment.stored_through.filter(|_| scored).map(|through| {
                let upto: Vec<LoggedSession> = sessions
                    .iter()
                    .filter(|s| s.file.as_str() <= through)
                    .cloned()
                    .collect();
                StoredReport {
                    through: through.to_string(),
                    complete: upto.iter().filter(|s| s.complete).count(),
                    rule: options
                        .scoring
                        .rule()
                        .then(|| figures(&scenario, &upto))
                        .flatten(),
                    paper: options
                        .scoring
                        .paper()
                        .then(|| paper_figures(game, notebook, &upto).0)
                        .flatten(),
                }
            }),
            unscored: experiment.unscored.map(str::to_string),
            records: recorded,
            not_recorded,
            not_recorded_example: example,
        });
        if options.out.is_some() {
            /// A session as the paper mode scores it.
            #[derive(Serialize)]
            #[serde(rename_all = "snake_case")]
            enum Paper {
                Scored(Verdicts),
                NotScored(NotScored),
            }
            #[derive(Serialize)]
            struct Line<'a> {
                experiment: &'a str,
                scenario_id: &'a str,
                #[serde(flatten)]
                session: &'a LoggedSession,
                /// The notebook's verdicts (paper mode; absent where its filter drops the
                /// session).
                #[serde(skip_serializing_if = "Option::is_none")]
                paper: Option<Paper>,
            }
            for session in &sessions {
                let paper = (scored && options.scoring.paper())
                    .then(|| paper_session(game, notebook, session))
                    .flatten()
                    .map(|r| match r {
                        Ok(v) => Paper::Scored(v),
                        Err(e) => Paper::NotScored(e),
                    });
                let line = Line {
                    experiment: experiment.name,
                    scenario_id: &scenario.id,
                    session,
                    paper,
                };
                let json = serde_json::to_string(&line).map_err(|e| LogError::Format {
                    file: experiment.name.into(),
                    message: e.to_string(),
                })?;
                lines.push_str(&json);
                lines.push('\n');
            }
        }
    }
    let mut scenario_lines = String::new();
    for s in &named {
        let json = serde_json::to_string(s).map_err(|e| LogError::Format {
            file: s.id.clone(),
            message: e.to_string(),
        })?;
        scenario_lines.push_str(&json);
        scenario_lines.push('\n');
    }
    let scenarios_out = options.records.as_deref().map(records_scenarios);
    for (path, text) in [
        (&options.out, &lines),
        (&options.records, &record_lines),
        (&scenarios_out, &scenario_lines),
    ] {
        let Some(out) = path else { continue };
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| LogError::Io {
                file: dir.display().to_string(),
                source,
            })?;
        }
        std::fs::write(out, text).map_err(|source| LogError::Io {
            file: out.display().to_string(),
            source,
        })?;
    }
    Ok(reports)
}

/// Where the scenarios of a records file are written: beside it, `NAME.scenarios.jsonl` (for
/// `replay --verify RECORDS --scenarios` — the reduced tables of the smaller Mixtral runs are
/// in no other file).
pub fn records_scenarios(records: &std::path::Path) -> PathBuf {
    let stem = records
        .file_stem()
        .map_or_else(|| "records".into(), |s| s.to_string_lossy().into_owned());
    records.with_file_name(format!("{stem}.scenarios.jsonl"))
}

/// The report as a Markdown table: sessions found and complete, and the four figures of each
/// mode `scoring` names (the paper mode's with the sessions its notebook scored), to four
/// decimals as the notebooks' stored outputs are quoted. An experiment whose stored output
/// scored fewer sessions has a second line, over those.
pub fn report_table(reports: &[ExperimentReport], scoring: Scoring) -> String {
    let four = |f: Option<&Figures>| match f {
        Some(f) => format!(
            "{:.4} | {:.4} | {:.4} | {:.4}",
            f.deal_any, f.deal_final, f.unanimous_final, f.wrong
        ),
        None => "– | – | – | –".to_string(),
    };
    let mut head = String::from("| experiment | parties | found | complete |");
    let mut rule_line = String::from("|---|---|---|---|");
    if scoring.rule() {
        head.push_str(match scoring {
            Scoring::Both => " rule any | rule final | rule unanimous | rule wrong |",
            _ => " any | final | unanimous | wrong |",
        });
        rule_line.push_str("---|---|---|---|");
    }
    if scoring.paper() {
        head.push_str(
            " notebook | scored | paper any | paper final | paper unanimous | paper wrong |",
        );
        rule_line.push_str("---|---|---|---|---|---|");
    }
    let mut out = format!("{head}\n{rule_line}\n");
    for r in reports {
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            r.experiment, r.parties, r.found, r.complete
        );
        if scoring.rule() {
            let _ = write!(out, " {} |", four(r.figures.as_ref()));
        }
        if scoring.paper() {
            let notebook = r.paper.as_ref().map_or("–", |p| p.notebook.name());
            let figures = r.paper.as_ref().and_then(|p| p.figures.as_ref());
            let scored = figures.map_or("–".to_string(), |f| f.sessions.to_string());
            let _ = write!(out, " {notebook} | {scored} | {} |", four(figures));
        }
        out.push('\n');
        let Some(stored) = &r.stored else { continue };
        let _ = write!(
            out,
            "| ↳ {} through `{}` (the stored output's) | {} | | {} |",
            r.experiment, stored.through, r.parties, stored.complete
        );
        if scoring.rule() {
            let _ = write!(out, " {} |", four(stored.rule.as_ref()));
        }
        if scoring.paper() {
            let notebook = r.paper.as_ref().map_or("–", |p| p.notebook.name());
            let scored = stored
                .paper
                .as_ref()
                .map_or("–".to_string(), |f| f.sessions.to_string());
            let _ = write!(
                out,
                " {notebook} | {scored} | {} |",
                four(stored.paper.as_ref())
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_read_as_the_notebook_reads_them() {
        assert_eq!(
            extract_deal("I propose <DEAL> A2, B2,\nC3, D1, E3</DEAL>", 5),
            vec![Some(2), Some(2), Some(3), Some(1), Some(3)]
        );
        // The first mention of each issue wins, wherever it is; a missing issue is None.
        assert_eq!(
            extract_deal("D2 is fine; A1 B3 C4 D1", 5),
            vec![Some(1), Some(3), Some(4), Some(2), None]
        );
        // A0 is not an option mention.
        assert_eq!(extract_deal("A0 A3", 1), vec![Some(3)]);
    }
}
