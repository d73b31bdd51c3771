//! Scenarios with more than two parties at the table (the `deliberation` family, after
//! LLM-Deliberation's multi-issue stakeholder games): one line of `scenarios/deliberation.jsonl`.
//!
//! A [`TableScenario`] names its seats by role (a list, not a learner/opponent pair), gives the
//! public text every party reads, the issues with their options, each party's private block (its
//! score table, its minimum, its confidential instructions), the deal the lead party opens with,
//! the agreement rule and the turn schedule. Scores and minimums are the game files' own
//! integers; a deal is one option per issue. Reading checks every rule a game must keep and names
//! the file, the line and the field of a bad one ([`load_table_scenarios`]).

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{IssueRange, IssueSpec, IssueValue, TermSpace, Terms};

use super::load::load_lines;
use super::{InvalidScenario, LoadOptions, LoadReport, ScenarioError, SCENARIO_SCHEMA};

/// The most parties a table seats.
pub(crate) const MAX_PARTIES: usize = 16;
/// The most rounds per party a schedule may ask for.
pub(crate) const MAX_ROUNDS_PER_PARTY: u32 = 64;

/// The n-party families.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TableFamily {
    /// LLM-Deliberation's stakeholder games (Abdelnabi et al., NeurIPS 2024 D&B).
    Deliberation,
}

impl TableFamily {
    pub fn name(self) -> &'static str {
        match self {
            TableFamily::Deliberation => "deliberation",
        }
    }

    /// What the family negotiates, in the two-party families' terms: LLM-Deliberation's games
    /// agree one option per issue, so they are issues (multi-item: `[rewards] kind =
    /// "threshold"` measures their deals against τ).
    pub(crate) fn domain(self) -> super::Domain {
        match self {
            TableFamily::Deliberation => super::Domain::Issues,
        }
    }
}

/// One n-party negotiation setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableScenario {
    pub schema: u32,
    /// `deliberation:GAME:VARIANT`, e.g. `deliberation:base:cooperative`.
    pub id: String,
    pub family: TableFamily,
    /// Where it came from: the game folder and the config it was built with.
    pub source: String,
    /// The game folder's name (`base`, `base_7players`, `game1`, …).
    pub game: String,
    /// Which incentives sit where (`cooperative`, `greedy`, `targeted_adv`, …).
    pub variant: String,
    /// What every party reads.
    pub public: TablePublic,
    /// The issues, keyed `A`, `B`, … with options `A1`, `A2`, …
    pub issues: Vec<IssueSpec>,
    /// The seats, in the game's order.
    pub parties: Vec<Party>,
    /// The deal the lead party opens with: an option index (0-based) per issue.
    pub initial_deal: Vec<usize>,
    pub rules: TableRules,
}

/// The text every party reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TablePublic {
    pub title: String,
    /// The game's global instructions: the project, the parties, the issues and their options.
    pub instructions: String,
}

/// Where a party sits in the game's rules.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PartyPosition {
    /// `p1`: opens with the initial deal, makes the final proposal, holds a veto.
    Lead,
    /// `p2`: holds a veto.
    Veto,
    /// The party a targeted adversary works against.
    Target,
    /// Anyone else.
    Player,
}

/// What a party is asked to want (the game's incentive folders).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Incentive {
    Cooperative,
    Greedy,
    TargetedAdv,
    UntargetedAdv,
}

impl Incentive {
    pub(crate) const ALL: [Incentive; 4] = [
        Incentive::Cooperative,
        Incentive::Greedy,
        Incentive::TargetedAdv,
        Incentive::UntargetedAdv,
    ];

    /// The folder name the game files use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Incentive::Cooperative => "cooperative",
            Incentive::Greedy => "greedy",
            Incentive::TargetedAdv => "targeted_adv",
            Incentive::UntargetedAdv => "untargeted_adv",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Incentive> {
        Incentive::ALL
            .into_iter()
            .find(|i| i.name() == name.trim().to_ascii_lowercase())
    }
}

/// One seat of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Party {
    /// The seat's name in records, flags and the Python faces (`sportco`, `mayor`, …).
    pub role: String,
    /// The party's name in the game's text (`SportCo`, `Department of Tourism`).
    pub name: String,
    pub position: PartyPosition,
    pub incentive: Incentive,
    /// What only this party reads.
    pub private: PartyPrivate,
}

/// A party's private block: never in another seat's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartyPrivate {
    /// Points per option, one row per issue (the score file's lines).
    pub scores: Vec<Vec<i64>>,
    /// The least total this party may agree to (the score file's last line; its BATNA).
    pub minimum: i64,
    /// The confidential instructions for this party and incentive, scores filled in.
    pub instructions: String,
}

/// How a deal is agreed and how turns go round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRules {
    pub agreement: AgreementRule,
    pub schedule: ScheduleSpec,
}

/// When an offer is a deal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgreementRule {
    /// Every party at the table accepts.
    Unanimity,
    /// At least `at_least` parties accept, every `veto` role among them, and each acceptor's
    /// score at or above its own minimum (the lead's with `lead_bonus` added, the paper's
    /// bonus for closing a deal).
    Quorum {
        at_least: usize,
        veto: Vec<String>,
        #[serde(default)]
        lead_bonus: i64,
    },
}

/// The order of turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduleSpec {
    /// Two parties taking turns, `rounds` each.
    Alternate { rounds: u32 },
    /// Every party in the game's order, `rounds` times.
    RoundRobin { rounds: u32 },
    /// The paper's cycles: the `lead` opens with the initial deal, then `rounds` cycles, each
    /// every party once in a fresh random order (nobody twice in a row), then the lead's final
    /// proposal.
    Cycles { rounds: u32, lead: String },
}

impl ScheduleSpec {
    pub(crate) fn rounds(&self) -> u32 {
        match self {
            ScheduleSpec::Alternate { rounds }
            | ScheduleSpec::RoundRobin { rounds }
            | ScheduleSpec::Cycles { rounds, .. } => *rounds,
        }
    }
}

/// A role a table's game does not have: what every face says of it (the run's `--seat`, the
/// server's and the Python game's seats), naming the scenario and the roles it has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{role}` is not a party of scenario {scenario} (its roles: {})", roles.join(", "))]
pub struct UnknownParty {
    pub role: String,
    pub scenario: String,
    pub roles: Vec<String>,
}

impl TableScenario {
    /// The deal space, read and enumerated as the issues family's is.
    pub fn term_space(&self) -> TermSpace<'_> {
        TermSpace::Issues(&self.issues)
    }

    /// The seat of a role.
    pub fn seat_of(&self, role: &str) -> Option<usize> {
        self.parties.iter().position(|p| p.role == role)
    }

    /// The seat of `role`, or what every face says of a role the game does not have
    /// ([`UnknownParty`]).
    pub fn seat_of_party(&self, role: &str) -> Result<usize, UnknownParty> {
        self.seat_of(role).ok_or_else(|| UnknownParty {
            role: role.to_string(),
            scenario: self.id.clone(),
            roles: self.parties.iter().map(|p| p.role.clone()).collect(),
        })
    }

    /// The lead party's seat (`p1`), if the game has one.
    pub fn lead(&self) -> Option<usize> {
        self.parties
            .iter()
            .position(|p| p.position == PartyPosition::Lead)
    }

    /// A party's score for a deal (option indices, one per issue).
    pub(crate) fn score(&self, seat: usize, deal: &[usize]) -> i64 {
        let scores = &self.parties[seat].private.scores;
        deal.iter()
            .zip(scores)
            .map(|(&option, row)| row.get(option).copied().unwrap_or(0))
            .sum()
    }

    /// The most a party can score over all deals: the sum of its best option per issue.
    pub(crate) fn best_score(&self, seat: usize) -> i64 {
        self.parties[seat]
            .private
            .scores
            .iter()
            .map(|row| row.iter().copied().max().unwrap_or(0))
            .sum()
    }

    /// A deal as option indices, from issue terms.
    pub fn deal_of(terms: &Terms) -> Option<Vec<usize>> {
        match terms {
            Terms::Issues(values) => values
                .iter()
                .map(|v| match v {
                    IssueValue::Option(i) => Some(*i),
                    IssueValue::Number(_) => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// A deal in the games' own notation: `A1 B2 C4 D1 E5`.
    pub fn render_deal(&self, deal: &[usize]) -> String {
        deal.iter()
            .zip(&self.issues)
            .map(|(&i, issue)| match &issue.range {
                IssueRange::Discrete { options } => options
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("{}{}", issue.key, i + 1)),
                IssueRange::Integer { .. } => format!("{}{}", issue.key, i + 1),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Every deal of the game, in a fixed order.
    pub fn all_deals(&self) -> impl Iterator<Item = Vec<usize>> + '_ {
        self.term_space()
            .all_terms()
            .filter_map(|t| TableScenario::deal_of(&t))
    }
}

/// Check a table scenario's rules (the caller adds the file and line).
pub(crate) fn validate_table(s: &TableScenario) -> Result<(), InvalidScenario> {
    let bad = |field: String, message: String| Err(InvalidScenario { field, message });
    if s.schema != SCENARIO_SCHEMA {
        return bad(
            "schema".into(),
            format!("version {} is not {SCENARIO_SCHEMA}", s.schema),
        );
    }
    if s.parties.len() < 2 || s.parties.len() > MAX_PARTIES {
        return bad(
            "parties".into(),
            format!(
                "{} parties; a table seats 2 to {MAX_PARTIES}",
                s.parties.len()
            ),
        );
    }
    if s.issues.is_empty() || s.issues.len() as u64 > crate::limits::MAX_ISSUES {
        return bad(
            "issues".into(),
            format!(
                "{} issues; a game has 1 to {}",
                s.issues.len(),
                crate::limits::MAX_ISSUES
            ),
        );
    }
    match s.term_space().size() {
        Some(n) if n <= crate::limits::MAX_OUTCOME_SPACE => {}
        _ => {
            return bad(
                "issues".into(),
                format!(
                    "the deal space is larger than {} deals",
                    crate::limits::MAX_OUTCOME_SPACE
                ),
            )
        }
    }
    for (i, issue) in s.issues.iter().enumerate() {
        match &issue.range {
            IssueRange::Discrete { options } if !options.is_empty() => {}
            _ => {
                return bad(
                    format!("issues[{i}]"),
                    "an issue of a table game is a non-empty list of options".into(),
                )
            }
        }
    }
    let mut roles = BTreeSet::new();
    for (p, party) in s.parties.iter().enumerate() {
        if party.role.trim().is_empty() || !roles.insert(party.role.as_str()) {
            return bad(
                format!("parties[{p}].role"),
                format!("`{}` is empty or names two seats", party.role),
            );
        }
        if party.private.scores.len() != s.issues.len() {
            return bad(
                format!("parties[{p}].private.scores"),
                format!(
                    "{} score lines for {} issues",
                    party.private.scores.len(),
                    s.issues.len()
                ),
            );
        }
        for (i, (row, issue)) in party.private.scores.iter().zip(&s.issues).enumerate() {
            if row.len() != issue.range.len() {
                return bad(
                    format!("parties[{p}].private.scores[{i}]"),
                    format!(
                        "{} scores for the {} options of issue {}",
                        row.len(),
                        issue.range.len(),
                        issue.key
                    ),
                );
            }
            if let Some(v) = row
                .iter()
                .find(|v| v.unsigned_abs() > crate::limits::MAX_AMOUNT as u64)
            {
                return bad(
                    format!("parties[{p}].private.scores[{i}]"),
                    format!("score {v} is out of range"),
                );
            }
        }
    }
    let leads = s
        .parties
        .iter()
        .filter(|p| p.position == PartyPosition::Lead)
        .count();
    if leads > 1 {
        return bad(
            "parties".into(),
            format!("{leads} lead parties; a game has at most one"),
        );
    }
    if s.initial_deal.len() != s.issues.len()
        || s.initial_deal
            .iter()
            .zip(&s.issues)
            .any(|(&o, issue)| o >= issue.range.len())
    {
        return bad(
            "initial_deal".into(),
            "not one option of each issue".to_string(),
        );
    }
    if let AgreementRule::Quorum { at_least, veto, .. } = &s.rules.agreement {
        if *at_least == 0 || *at_least > s.parties.len() {
            return bad(
                "rules.agreement.at_least".into(),
                format!("{at_least} of {} parties", s.parties.len()),
            );
        }
        if let Some(v) = veto.iter().find(|v| s.seat_of(v).is_none()) {
            return bad(
                "rules.agreement.veto".into(),
                format!("`{v}` is not a party's role"),
            );
        }
    }
    let rounds = s.rules.schedule.rounds();
    if rounds == 0 || rounds > MAX_ROUNDS_PER_PARTY {
        return bad(
            "rules.schedule.rounds".into(),
            format!("{rounds} rounds per party; 1 to {MAX_ROUNDS_PER_PARTY}"),
        );
    }
    match &s.rules.schedule {
        ScheduleSpec::Alternate { .. } if s.parties.len() != 2 => bad(
            "rules.schedule.kind".into(),
            "alternation is for two parties".into(),
        ),
        ScheduleSpec::Cycles { lead, .. } if s.seat_of(lead).is_none() => bad(
            "rules.schedule.lead".into(),
            format!("`{lead}` is not a party's role"),
        ),
        ScheduleSpec::Cycles { lead, .. } if s.lead().is_some_and(|l| s.parties[l].role != *lead) => bad(
            "rules.schedule.lead".into(),
            format!(
                "`{lead}` opens and closes the cycles, but the party in the lead position is `{}`: they must be one",
                s.lead().map_or("", |l| s.parties[l].role.as_str())
            ),
        ),
        _ => Ok(()),
    }
}

/// Parse and check one line of a table scenario file.
pub(crate) fn parse_table_line(
    file: &str,
    line: usize,
    text: &str,
) -> Result<TableScenario, ScenarioError> {
    let at = |field: String, message: String| ScenarioError::Line {
        file: file.to_string(),
        line,
        field,
        message,
    };
    let scenario: TableScenario = crate::jsonl::from_line(text.as_bytes()).map_err(|fault| {
        let (field, message) = super::market::unread_line(text, fault);
        at(field, message)
    })?;
    validate_table(&scenario).map_err(|e| at(e.field, e.message))?;
    Ok(scenario)
}

/// Load every table scenario of a JSONL file.
pub fn load_table_scenarios(
    path: &Path,
    options: LoadOptions,
) -> Result<LoadReport<TableScenario>, ScenarioError> {
    let file_name = path.display().to_string();
    let file = super::open_scenario_file(path).map_err(|source| ScenarioError::Io {
        file: file_name.clone(),
        source,
    })?;
    load_table_scenarios_from_reader(&file_name, file, options)
}

/// [`load_table_scenarios`] over bytes read from `reader`, named `file_name` in errors.
pub fn load_table_scenarios_from_reader(
    file_name: &str,
    reader: impl BufRead,
    options: LoadOptions,
) -> Result<LoadReport<TableScenario>, ScenarioError> {
    load_lines(file_name, reader, options, parse_table_line)
}

/// Whether a scenario file holds table scenarios: its first non-blank line names an n-party
/// family. What `run` and the other surfaces read a file's kind by.
pub fn is_table_file(path: &Path) -> bool {
    file_family(path).is_some_and(|f| f == TableFamily::Deliberation.name())
}

/// The family its first non-blank line names, of a scenario file that can be read: the one
/// rule a file's kind is read by ([`is_table_file`], [`super::is_market_file`]).
pub(crate) fn file_family(path: &Path) -> Option<String> {
    let mut reader = super::open_scenario_file(path).ok()?;
    let mut buf = Vec::new();
    loop {
        match crate::limits::read_line(&mut reader, &mut buf, crate::limits::MAX_INPUT_LINE) {
            Ok(crate::limits::LineRead::Line(_)) => {
                let text = std::str::from_utf8(&buf).ok()?;
                if text.trim().is_empty() {
                    continue;
                }
                return line_family(text);
            }
            _ => return None,
        }
    }
}

/// The family a scenario line names, read without reading the rest of it.
pub(crate) fn line_family(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Head {
        family: Option<String>,
    }
    serde_json::from_str::<Head>(text).ok()?.family
}
