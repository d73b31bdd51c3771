//! The table's prompts (`prompts/deliberation*.j2`, our own words, rendered by the episode's
//! [`Prompts`], so `--prompts-dir` replaces them as it replaces the two-party ones): a seat's
//! system prompt holds the public text and only its own confidential block; the message before
//! each of its turns holds the others' talk and played moves since its last turn, never a
//! thought or a score. The correction after an attempt that cannot be played is the engine's
//! one (`engine::after_unusable`).

use serde::Serialize;

use crate::game::{PromptError, Prompts};

use crate::protocol::{Action, IssueRange, TurnFormat};
use crate::scenario::{AgreementRule, PartyPosition, TableScenario};

use super::episode::TableEpisode;
use super::schedule::SlotKind;

#[derive(Serialize)]
struct ScoredOption<'a> {
    label: &'a str,
    score: i64,
}

#[derive(Serialize)]
struct ScoredIssue<'a> {
    key: &'a str,
    options: Vec<ScoredOption<'a>>,
}

/// The system prompt of `seat`.
pub(crate) fn system_prompt(
    prompts: &Prompts,
    scenario: &TableScenario,
    seat: usize,
    format: TurnFormat,
) -> Result<String, PromptError> {
    let party = &scenario.parties[seat];
    let scores: Vec<ScoredIssue<'_>> = scenario
        .issues
        .iter()
        .zip(&party.private.scores)
        .map(|(issue, row)| ScoredIssue {
            key: &issue.key,
            options: match &issue.range {
                IssueRange::Discrete { options } => options
                    .iter()
                    .zip(row)
                    .map(|(label, &score)| ScoredOption { label, score })
                    .collect(),
                IssueRange::Integer { .. } => Vec::new(),
            },
        })
        .collect();
    let lead = scenario.lead().map(|l| scenario.parties[l].name.as_str());
    let veto_names = |roles: &[String]| -> Vec<String> {
        roles
            .iter()
            .filter_map(|r| scenario.seat_of(r))
            .map(|s| scenario.parties[s].name.clone())
            .collect()
    };
    let rule = match &scenario.rules.agreement {
        AgreementRule::Unanimity => serde_json::json!({"kind": "unanimity"}),
        AgreementRule::Quorum {
            at_least,
            veto,
            lead_bonus,
        } => serde_json::json!({
            "kind": "quorum",
            "at_least": at_least,
            "veto": veto_names(veto),
            "lead_bonus": lead_bonus,
        }),
    };
    let example = scenario.render_deal(&scenario.initial_deal);
    let input = serde_json::json!({
        "public": scenario.public.instructions,
        "name": party.name,
        "instructions": party.private.instructions,
        "scores": scores,
        "minimum": party.private.minimum,
        "parties": scenario.parties.iter().map(|p| &p.name).collect::<Vec<_>>(),
        "lead": lead,
        "rule": rule,
        "rounds": scenario.rules.schedule.rounds(),
        "format": format_name(format),
        "example": example,
        "example_terms": example_terms(scenario),
        "veto": super::agreement::holds_veto(scenario, seat) || party.position == PartyPosition::Lead,
    });
    prompts.render_input("deliberation.j2", &input)
}

/// How the table's templates name a turn format.
fn format_name(format: TurnFormat) -> &'static str {
    match format {
        TurnFormat::Tagged => "tagged",
        TurnFormat::Xml => "xml",
        TurnFormat::Tools => "tools",
    }
}

/// The opening deal as `make_offer`'s `terms` (`{"A":"A1",…}`), as the tools take it.
fn example_terms(scenario: &TableScenario) -> String {
    let terms: serde_json::Map<String, serde_json::Value> = scenario
        .issues
        .iter()
        .zip(&scenario.initial_deal)
        .map(|(issue, &i)| {
            let label = match &issue.range {
                IssueRange::Discrete { options } => options.get(i).cloned(),
                IssueRange::Integer { .. } => None,
            };
            (
                issue.key.clone(),
                serde_json::Value::String(
                    label.unwrap_or_else(|| format!("{}{}", issue.key, i + 1)),
                ),
            )
        })
        .collect();
    serde_json::Value::Object(terms).to_string()
}

/// The others' played moves between two points of the turns, as `seat` reads them.
pub(crate) struct TurnNews {
    pub lines: Vec<String>,
}

impl TurnNews {
    /// What the others did in turns `from..to`, seen by `seat`.
    pub(crate) fn between(episode: &TableEpisode, seat: usize, from: usize, to: usize) -> TurnNews {
        let scenario = episode.scenario();
        let lines = episode.turns()[from..to]
            .iter()
            .filter_map(|t| {
                let action = t.played()?;
                if t.seat == seat {
                    // A seat's own proposal, with the number the others accept it by.
                    let id = t.offer?;
                    return Some(format!("You made proposal #{id}."));
                }
                let name = &scenario.parties[t.seat].name;
                let talk = t.parsed.talk.as_deref().unwrap_or("").trim();
                let shown = public_move(scenario, action, t.offer, t.accepts);
                Some(if talk.is_empty() {
                    format!("{name}: {shown}")
                } else {
                    format!("{name}: {talk}\n  {shown}")
                })
            })
            .collect();
        TurnNews { lines }
    }
}

/// A played move as every other party reads it.
pub fn public_move(
    scenario: &TableScenario,
    action: &Action,
    offer: Option<u32>,
    accepts: Option<u32>,
) -> String {
    match action {
        Action::Submit(terms) => {
            let deal = TableScenario::deal_of(terms).unwrap_or_default();
            format!(
                "[SUBMIT_DEAL] proposal #{}: {}",
                offer.unwrap_or(0),
                scenario.render_deal(&deal)
            )
        }
        Action::Accept => format!("[ACCEPT_DEAL] #{}", accepts.unwrap_or(0)),
        Action::Reject => "[REJECT_DEAL]".to_string(),
        Action::WalkAway => "[WALK_AWAY] (left the negotiation)".to_string(),
        Action::Talk => "[TALK]".to_string(),
    }
}

/// The message before slot `slot`'s turn.
pub(crate) fn turn_prompt(
    episode: &TableEpisode,
    slot: usize,
    news: &TurnNews,
) -> Result<String, PromptError> {
    let scenario = episode.scenario();
    let kind = episode.setup().schedule[slot].kind;
    let (name, round) = match kind {
        SlotKind::Opening => ("opening", 0),
        SlotKind::Round { round } => ("round", round),
        SlotKind::Final => ("final", 0),
        SlotKind::Vote => ("vote", 0),
    };
    let input = serde_json::json!({
        "news": news.lines,
        "slot": name,
        "round": round,
        "rounds": scenario.rules.schedule.rounds(),
        "initial": scenario.render_deal(&scenario.initial_deal),
        "final_offer": episode.final_offer().map(|o| o.id),
        "format": format_name(episode.setup().format),
    });
    episode
        .prompts()
        .render_input("deliberation_turn.j2", &input)
}
