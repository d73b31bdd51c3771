//! The mock's seat at an n-party table: it reads its own scores, minimum and what the turn asks
//! from the prompt's text (`prompts/deliberation*.j2`), the public proposals from the messages,
//! and answers with the naive scripted cooperative party's move
//! ([`dealgym::negotiator::deliberation::table_turn`]): one policy for the mock and
//! `rule:deliberation-naive`, kept so that a mock run's records stay what they were (the strong
//! `rule:deliberation` also reads who accepted each offer, which this reader does not collect).

use std::sync::LazyLock;

use regex::Regex;

use dealgym::game::{Message, MessageRole};
use dealgym::negotiator::deliberation::{table_turn, SeenOffer, TableKnowledge};
use dealgym::protocol::{IssueRange, IssueSpec};
use dealgym::scenario::Incentive;
use dealgym::table::{as_table_tool_turn, SlotKind};
use dealgym::vocab::ToolCall;

static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^# You are (.+)$").expect("static regex"));
static SCORE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^- Issue ([A-Z]): (.+)$").expect("static regex"));
static OPTION_SCORE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Z](\d+) = (-?\d+)").expect("static regex"));
static MINIMUM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Your minimum is (-?\d+)").expect("static regex"));
static LEAD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(.+) opens with a first proposal").expect("static regex"));
static BONUS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\((.+) gets (\d+) extra points").expect("static regex"));
static ROUNDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Every party speaks (\d+) times").expect("static regex"));
static PROPOSAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[SUBMIT_DEAL\] proposal #(\d+): ((?:[A-Z]\d+ ?)+)").expect("static regex")
});
static OWN_PROPOSAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"You made proposal #(\d+)\.").expect("static regex"));
static ACCEPTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[ACCEPT_DEAL\] #(\d+)").expect("static regex"));
static SUBMITTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[SUBMIT_DEAL\] ((?:[A-Z]\d+ ?)+)").expect("static regex"));
static OPENING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"Propose the first deal: ((?:[A-Z]\d+ ?)+)").expect("static regex")
});
static ROUND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"round (\d+) of (\d+)").expect("static regex"));
static VOTE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Vote on the final proposal #(\d+)").expect("static regex"));

/// A deal written `A1 B2 C4`, as option indices.
fn deal_of(text: &str) -> Vec<usize> {
    text.split_whitespace()
        .filter_map(|o| o.get(1..)?.parse::<usize>().ok())
        .map(|n| n.saturating_sub(1))
        .collect()
}

/// The mock's turn at a table, or `None` when the chat is not a table seat's: its text, or,
/// for a seat that acts through tools (`call_id`: the id of its call), its thought and the one
/// call of the table's tools that makes the same move.
pub fn respond_table(
    messages: &[Message],
    call_id: Option<String>,
) -> Option<(String, Vec<ToolCall>)> {
    let system = messages.iter().find(|m| m.role == MessageRole::System)?;
    let text = &system.content;
    let name = NAME.captures(text)?[1].trim().to_string();
    let mut keys = Vec::new();
    let mut scores = Vec::new();
    for line in SCORE_LINE.captures_iter(text) {
        keys.push(line[1].to_string());
        scores.push(
            OPTION_SCORE
                .captures_iter(&line[2])
                .filter_map(|c| c[2].parse::<i64>().ok())
                .collect::<Vec<_>>(),
        );
    }
    if scores.is_empty() {
        return None;
    }
    let minimum = MINIMUM.captures(text)?[1].parse().ok()?;
    let is_lead = LEAD.captures(text).is_some_and(|c| c[1].trim() == name);
    let bonus = match BONUS.captures(text) {
        Some(c) if is_lead && c[1].trim() == name => c[2].parse().unwrap_or(0),
        _ => 0,
    };
    let rounds = ROUNDS
        .captures(text)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(4);
    let last = messages.last().filter(|m| m.role == MessageRole::User)?;
    let mut initial_deal = Vec::new();
    let mut final_offer = None;
    let slot = if let Some(c) = OPENING.captures(&last.content) {
        initial_deal = deal_of(&c[1]);
        SlotKind::Opening
    } else if let Some(c) = VOTE.captures(&last.content) {
        final_offer = c[1].parse().ok();
        SlotKind::Vote
    } else if last.content.contains("This is your final proposal") {
        SlotKind::Final
    } else {
        let round = ROUND
            .captures(&last.content)
            .and_then(|c| c[1].parse().ok())
            .unwrap_or(1);
        SlotKind::Round { round }
    };
    // The public offers, in order: the others' from the news, this seat's own from its replies
    // (its ids from the news' "You made proposal #N").
    let mut offers: Vec<SeenOffer> = Vec::new();
    let mut own_pending: Vec<Vec<usize>> = Vec::new();
    let mut accepted: Vec<(u32, bool)> = Vec::new();
    for m in messages.iter().filter(|m| m.role != MessageRole::System) {
        match m.role {
            MessageRole::Assistant => {
                // A move made through the table's tools: `make_offer({"terms": {"A": "A1",
                // …}})`, `accept({"offer": 3})`.
                for call in &m.tool_calls {
                    let args: serde_json::Value =
                        serde_json::from_str(&call.function.arguments).unwrap_or_default();
                    match call.function.name.as_str() {
                        "make_offer" => own_pending.push(
                            keys.iter()
                                .filter_map(|k| args["terms"][k].as_str())
                                .flat_map(deal_of)
                                .collect(),
                        ),
                        "accept" => {
                            if let Some(id) = args["offer"].as_u64() {
                                accepted.push((id as u32, true));
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(c) = SUBMITTED.captures(&m.content) {
                    own_pending.push(deal_of(&c[1]));
                }
                if let Some(c) = ACCEPTED.captures(&m.content) {
                    if let Ok(id) = c[1].parse() {
                        accepted.push((id, true));
                    }
                }
            }
            _ => {
                for line in m.content.lines() {
                    if let Some(c) = PROPOSAL.captures(line) {
                        if let Ok(id) = c[1].parse() {
                            offers.push(SeenOffer {
                                id,
                                mine: false,
                                deal: deal_of(&c[2]),
                                accepted_by: 0,
                                accepted_by_me: false,
                            });
                        }
                    } else if let Some(c) = OWN_PROPOSAL.captures(line) {
                        if let (Ok(id), false) = (c[1].parse(), own_pending.is_empty()) {
                            offers.push(SeenOffer {
                                id,
                                mine: true,
                                deal: own_pending.remove(0),
                                accepted_by: 0,
                                accepted_by_me: false,
                            });
                        }
                    } else if let Some(c) = ACCEPTED.captures(line) {
                        if let Ok(id) = c[1].parse() {
                            accepted.push((id, false));
                        }
                    }
                }
            }
        }
    }
    offers.sort_by_key(|o| o.id);
    for (id, mine) in accepted {
        if let Some(o) = offers.iter_mut().find(|o| o.id == id) {
            o.accepted_by += 1;
            o.accepted_by_me |= mine;
        }
    }
    // The issues as the prompt shows them (`A1`, `A2`, … per issue), for writing the move as
    // a call.
    let issues: Vec<IssueSpec> = keys
        .iter()
        .zip(&scores)
        .map(|(key, row)| IssueSpec {
            key: key.clone(),
            label: key.clone(),
            range: IssueRange::Discrete {
                options: (1..=row.len()).map(|n| format!("{key}{n}")).collect(),
            },
        })
        .collect();
    let text = table_turn(&TableKnowledge {
        keys,
        scores,
        minimum,
        bonus,
        incentive: Incentive::Cooperative,
        slot,
        rounds,
        initial_deal,
        offers,
        final_offer,
    });
    Some(match call_id {
        Some(id) => {
            let (thought, call) = as_table_tool_turn(&issues, &text, id);
            (thought, vec![call])
        }
        None => (text, Vec::new()),
    })
}
