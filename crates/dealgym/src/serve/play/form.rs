//! What a person's seat may do now, as the page's form controls — the legal moves, the terms
//! with their ranges, the offers an acceptance may name — and the move a person chose, written
//! as the turn the protocol reads. The spelling is core's: terms are read as a tool call's are
//! (`terms_from_json`), the action line is `render_action`'s (a table's deal `render_deal`'s,
//! its acceptance `accept_line`'s), the turn `render_turn`'s; the engine then judges the turn
//! as it judges every turn.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::super::ServeError;
use crate::market::MarketSeatState;
use crate::observation::SeatState;
use crate::protocol::{
    render_action, render_turn, terms_from_json, Action, ActionKind, IssueRange, IssueSpec,
    TermSpace, TermValue, Terms, TurnFormat,
};
use crate::scenario::{Scenario, TableScenario};
use crate::table::{accept_line, TableSeatState};

/// The controls of a seat's turn (empty moves while it is not the seat's turn).
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Form {
    pub moves: Vec<MoveChoice>,
    pub terms: Vec<TermControl>,
    pub offers: Vec<OfferChoice>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct MoveChoice {
    pub kind: &'static str,
    pub label: String,
}

/// One term of an offer: a number (`count`, `number`, `price`, with its range) or one of
/// `options`. A `blank` term may be left empty: it is then that value (a hotel ticket's
/// `unchanged`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct TermControl {
    pub key: String,
    pub label: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blank: Option<String>,
}

/// An offer an acceptance may name (a table's proposal, a market's standing quote).
#[derive(Debug, Clone, Serialize)]
pub(super) struct OfferChoice {
    pub id: u32,
    pub by: String,
    pub text: String,
}

/// A person's turn as the page sends it. The thought is optional and private: it goes into
/// the turn's Thought, which the engine never forwards.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PersonTurn {
    #[serde(default)]
    pub thought: String,
    #[serde(default)]
    pub talk: String,
    #[serde(rename = "move")]
    pub chosen: ChosenMove,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChosenMove {
    pub kind: ActionKind,
    /// A proposal's terms; `null` or absent for any other move.
    #[serde(default, deserialize_with = "map_or_null")]
    pub terms: Map<String, Value>,
    #[serde(default)]
    pub offer: Option<u32>,
}

/// A map, `null` read as an empty one.
fn map_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default())
}

fn label(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::Submit => "Propose a deal",
        ActionKind::Accept => "Accept their offer",
        ActionKind::Reject => "Reject (make no offer this turn)",
        ActionKind::WalkAway => "Walk away (no deal)",
        ActionKind::Talk => "Only talk",
    }
}

fn choice(kind: ActionKind, label: String) -> MoveChoice {
    MoveChoice {
        kind: kind.name(),
        label,
    }
}

/// A terms map as a reader reads it: `food:2 water:1`, `price:270`.
pub(super) fn terms_text(terms: &std::collections::BTreeMap<String, TermValue>) -> String {
    terms
        .iter()
        .map(|(key, value)| {
            let value = match value {
                TermValue::Count(n) => n.to_string(),
                TermValue::Number(n) => n.to_string(),
                TermValue::Price(p) => crate::protocol::money(*p),
                TermValue::Option(o) => o.clone(),
            };
            format!("{key}:{value}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A two-party seat's controls: its legal moves (ACCEPT only when the counterpart's offer
/// stands, with that offer from the seat's side), the scenario's terms.
pub(super) fn party_form(scenario: &Scenario, state: &SeatState) -> Form {
    let moves = state
        .legal_actions
        .iter()
        .map(|&kind| match (kind, &state.standing_offer) {
            (ActionKind::Accept, Some(offer)) => choice(
                kind,
                format!("Accept their offer: {}", terms_text(&offer.terms)),
            ),
            _ => choice(kind, label(kind).to_string()),
        })
        .collect();
    Form {
        moves,
        terms: controls(scenario.term_space()),
        offers: Vec::new(),
    }
}

fn number(key: &str, label: String, kind: &'static str, min: f64, max: Option<f64>) -> TermControl {
    TermControl {
        key: key.to_string(),
        label,
        kind,
        min: Some(min),
        max,
        step: Some(if kind == "price" { 0.01 } else { 1.0 }),
        options: Vec::new(),
        blank: None,
    }
}

fn options(key: &str, label: String, options: Vec<String>) -> TermControl {
    TermControl {
        key: key.to_string(),
        label,
        kind: "option",
        min: None,
        max: None,
        step: None,
        options,
        blank: None,
    }
}

fn issue_control(issue: &IssueSpec) -> TermControl {
    match &issue.range {
        IssueRange::Integer { min, max } => number(
            &issue.key,
            issue.label.clone(),
            "number",
            *min as f64,
            Some(*max as f64),
        ),
        IssueRange::Discrete { options: list } => {
            options(&issue.key, issue.label.clone(), list.clone())
        }
    }
}

/// One control per term of the space, in the grammar's order.
fn controls(space: TermSpace<'_>) -> Vec<TermControl> {
    match space {
        TermSpace::Price => vec![number("price", "price".into(), "price", 0.0, None)],
        TermSpace::Items(items) => items
            .iter()
            .map(|item| {
                number(
                    &item.name,
                    format!("{} (your share, of {})", item.name, item.count),
                    "count",
                    0.0,
                    Some(f64::from(item.count)),
                )
            })
            .collect(),
        TermSpace::Issues(issues) => issues.iter().map(issue_control).collect(),
        TermSpace::Bundle(bundle) => {
            let in_out = || vec!["in".to_string(), "out".to_string()];
            let mut all = vec![number("price", "price".into(), "price", 0.0, None)];
            all.extend(
                bundle
                    .accessories
                    .iter()
                    .map(|part| options(&part.key, part.name.clone(), in_out())),
            );
            all.push(options(
                crate::protocol::DELIVERY,
                "delivery".into(),
                in_out(),
            ));
            all
        }
        TermSpace::Tickets(tickets) => tickets
            .iter()
            .map(|ticket| TermControl {
                blank: Some(crate::protocol::UNCHANGED.to_string()),
                ..number(
                    &ticket.key,
                    format!("{} (new selling price, or leave it unchanged)", ticket.key),
                    "price",
                    0.0,
                    None,
                )
            })
            .collect(),
    }
}

/// The terms a person chose, a blank term as its blank value.
fn chosen_terms(chosen: &ChosenMove, controls: &[TermControl]) -> Map<String, Value> {
    let mut terms = chosen.terms.clone();
    for control in controls {
        let empty = match terms.get(&control.key) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            _ => false,
        };
        if let (true, Some(blank)) = (empty, &control.blank) {
            terms.insert(control.key.clone(), Value::String(blank.clone()));
        }
    }
    terms.retain(|_, v| !v.is_null());
    terms
}

fn no_offer(chosen: &ChosenMove) -> Result<(), ServeError> {
    match (chosen.kind, chosen.offer) {
        (ActionKind::Accept, _) | (_, None) => Ok(()),
        (kind, Some(_)) => Err(ServeError::Validation(format!(
            "move.offer: only an acceptance names an offer, not `{}`",
            kind.name()
        ))),
    }
}

fn no_terms(chosen: &ChosenMove) -> Result<(), ServeError> {
    if chosen.kind != ActionKind::Submit && !chosen.terms.is_empty() {
        return Err(ServeError::Validation(format!(
            "move.terms: only a proposal has terms, not `{}`",
            chosen.kind.name()
        )));
    }
    Ok(())
}

fn read_terms(chosen: &ChosenMove, space: TermSpace<'_>, what: &str) -> Result<Terms, ServeError> {
    terms_from_json(&chosen_terms(chosen, &controls(space)), space)
        .map_err(|e| ServeError::Validation(format!("move.terms: {what}: {e}")))
}

/// A person's two-party turn, as the protocol reads it, in the seat's format.
pub(super) fn party_turn(
    turn: &PersonTurn,
    scenario: &Scenario,
    format: TurnFormat,
) -> Result<String, ServeError> {
    let chosen = &turn.chosen;
    no_terms(chosen)?;
    if chosen.offer.is_some() {
        return Err(ServeError::Validation(
            "move.offer: a two-party acceptance takes the standing offer; only a table or a market names one"
                .into(),
        ));
    }
    let space = scenario.term_space();
    let action = match chosen.kind {
        ActionKind::Submit => Action::Submit(read_terms(chosen, space, "the offer")?),
        ActionKind::Accept => Action::Accept,
        ActionKind::Reject => Action::Reject,
        ActionKind::WalkAway => Action::WalkAway,
        ActionKind::Talk => Action::Talk,
    };
    Ok(whole(turn, &render_action(&action, space, true), format))
}

fn whole(turn: &PersonTurn, line: &str, format: TurnFormat) -> String {
    // A line break inside a part would read as the next label: a person's words are one
    // paragraph per part.
    let flat = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    render_turn(&flat(&turn.thought), &flat(&turn.talk), line, format)
}

/// The moves of a seat at a table or a market whose turn it is: the five its prompt lists
/// (`deliberation.j2`, `market.j2`), ACCEPT only when an offer may be accepted.
fn seated_moves(offers: &[OfferChoice], submit: &str) -> Vec<MoveChoice> {
    let mut moves = vec![choice(ActionKind::Submit, submit.to_string())];
    if !offers.is_empty() {
        moves.push(choice(ActionKind::Accept, "Accept an offer".into()));
    }
    moves.extend([
        choice(
            ActionKind::Reject,
            "Reject (make no offer this turn)".into(),
        ),
        choice(ActionKind::Talk, "Only talk".into()),
        choice(ActionKind::WalkAway, "Walk away (leave for good)".into()),
    ]);
    moves
}

/// A table seat's controls: a proposal is one option of every issue; an acceptance names an
/// offer of another party's that is on the table.
pub(super) fn table_form(
    scenario: &TableScenario,
    state: &TableSeatState,
    your_turn: bool,
    acceptable: &[u32],
) -> Form {
    let offers: Vec<OfferChoice> = state
        .offers
        .iter()
        .filter(|o| acceptable.contains(&o.id))
        .map(|o| OfferChoice {
            id: o.id,
            by: o.proposer.clone(),
            text: o.deal.clone(),
        })
        .collect();
    Form {
        moves: if your_turn {
            seated_moves(&offers, "Propose a deal")
        } else {
            Vec::new()
        },
        terms: scenario.issues.iter().map(issue_control).collect(),
        offers,
    }
}

/// A market trader's controls: a quote is a price (a bid for a buyer, an ask for a seller);
/// an acceptance takes another trader's standing quote on the other side.
pub(super) fn market_form(state: &MarketSeatState, your_turn: bool, acceptable: &[u32]) -> Form {
    let offers: Vec<OfferChoice> = state
        .book
        .iter()
        .filter(|q| acceptable.contains(&q.id))
        .map(|q| OfferChoice {
            id: q.id,
            by: q.role.clone(),
            text: format!("{} at {}", q.side.name(), q.price),
        })
        .collect();
    let quote = match state.side {
        crate::scenario::Side::Buyer => "Bid a price",
        crate::scenario::Side::Seller => "Ask a price",
    };
    // A quote is a positive price (the book's rule): a cent at least.
    let price = TermControl {
        min: Some(0.01),
        ..number("price", "price".into(), "price", 0.0, None)
    };
    Form {
        moves: if your_turn {
            seated_moves(&offers, quote)
        } else {
            Vec::new()
        },
        terms: vec![price],
        offers,
    }
}

/// A person's turn at a table or a market: a proposal in the table's notation (a market's
/// quote as a price), an acceptance naming its offer.
pub(super) fn seated_turn(
    turn: &PersonTurn,
    table: Option<&TableScenario>,
    format: TurnFormat,
) -> Result<String, ServeError> {
    let chosen = &turn.chosen;
    no_terms(chosen)?;
    no_offer(chosen)?;
    let line = match chosen.kind {
        ActionKind::Submit => match table {
            Some(scenario) => {
                let space = TermSpace::Issues(&scenario.issues);
                let terms = read_terms(chosen, space, "the proposal")?;
                let deal = TableScenario::deal_of(&terms).ok_or_else(|| {
                    ServeError::Validation(
                        "move.terms: a proposal names one option of every issue".into(),
                    )
                })?;
                format!(
                    "{} {}",
                    ActionKind::Submit.token(),
                    scenario.render_deal(&deal)
                )
            }
            None => {
                let terms = read_terms(chosen, TermSpace::Price, "the quote")?;
                render_action(&Action::Submit(terms), TermSpace::Price, true)
            }
        },
        ActionKind::Accept => match chosen.offer {
            Some(id) => accept_line(id),
            None => return Err(ServeError::Validation(
                "move.offer: an acceptance here names the offer it takes (an id of form.offers)"
                    .into(),
            )),
        },
        other => other.token().to_string(),
    };
    Ok(whole(turn, &line, format))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::parse;

    fn turn(kind: ActionKind, terms: Value) -> PersonTurn {
        PersonTurn {
            thought: "keep\nit".into(),
            talk: "I need\n\nfirewood.".into(),
            chosen: ChosenMove {
                kind,
                terms: terms.as_object().cloned().unwrap_or_default(),
                offer: None,
            },
        }
    }

    #[test]
    fn a_persons_offer_is_the_canonical_turn_the_engine_reads() {
        let scenario = crate::fixtures::casino();
        let text = party_turn(
            &turn(
                ActionKind::Submit,
                serde_json::json!({"food": 1, "water": "2", "firewood": 3}),
            ),
            &scenario,
            TurnFormat::Tagged,
        )
        .unwrap();
        assert_eq!(
            text,
            "Thought: keep it\nTalk: I need firewood.\nAction: [SUBMIT_DEAL] food:1 water:2 firewood:3"
        );
        let parsed = parse(&text, scenario.term_space(), None);
        assert!(parsed.format_ok, "{parsed:?}");
    }

    #[test]
    fn terms_out_of_range_or_missing_are_refused_naming_the_term() {
        let scenario = crate::fixtures::casino();
        let e = party_turn(
            &turn(
                ActionKind::Submit,
                serde_json::json!({"food": 4, "water": 2, "firewood": 3}),
            ),
            &scenario,
            TurnFormat::Tagged,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("food"), "{e}");
        let e = party_turn(
            &turn(ActionKind::Submit, serde_json::json!({"food": 1})),
            &scenario,
            TurnFormat::Tagged,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("move.terms"), "{e}");
        let e = party_turn(
            &turn(ActionKind::Reject, serde_json::json!({"food": 1})),
            &scenario,
            TurnFormat::Tagged,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("only a proposal"), "{e}");
    }

    #[test]
    fn an_empty_thought_is_still_a_well_formed_turn() {
        let scenario = crate::fixtures::casino();
        let mut t = turn(ActionKind::WalkAway, Value::Null);
        t.thought.clear();
        for format in [TurnFormat::Tagged, TurnFormat::Xml] {
            let text = party_turn(&t, &scenario, format).unwrap();
            let parsed = parse(&text, scenario.term_space(), None);
            assert!(parsed.format_ok, "{format:?}: {text}: {parsed:?}");
        }
    }
}
