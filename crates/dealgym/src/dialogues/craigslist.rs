//! CraigslistBargains' events as utterances. Agent `i` plays the role of the scenario's
//! `kbs[i]`; a `message` is said, an `offer` is a submit of its price, `accept` and `reject`
//! the moves of those names and `quit` a walk-away. The dialogue act the dataset parsed for
//! an event (`metadata.intent`) is kept as `dialogue_act`.

use std::path::PathBuf;

use super::{form_turns, DialogueError, HumanDialogue, ScenarioIndex, Skip, Utterance};
use crate::protocol::{to_cents, Action, Terms};
use crate::scenario::import::craigslist::{read, Dialogue};
use crate::scenario::Role;

pub(super) fn dialogues(
    files: &[PathBuf],
    index: &ScenarioIndex,
) -> Result<Vec<Result<HumanDialogue, Skip>>, DialogueError> {
    let mut out = Vec::new();
    for path in files {
        for d in read(path)? {
            let id = d.uuid.clone();
            out.push(
                index
                    .find(&id, &id)
                    .and_then(|found| form_turns(&id, found, utterances(&d)?)),
            );
        }
    }
    Ok(out)
}

/// The dialogue's events in order, each by its agent's role.
fn utterances(d: &Dialogue) -> Result<Vec<Utterance>, Skip> {
    let skip = |reason: String| Skip::new(&d.uuid, reason);
    let mut out = Vec::new();
    for e in &d.events {
        let role = e
            .agent
            .and_then(|a| d.scenario.kbs.get(a))
            .and_then(|kb| kb.personal.role.parse::<Role>().ok())
            .filter(|r| matches!(r, Role::Buyer | Role::Seller))
            .ok_or_else(|| skip(format!("a `{}` event by an unknown agent", e.action)))?;
        let mut u = match e.action.as_str() {
            "message" => Utterance::says(role, e.data.as_str().unwrap_or_default()),
            "offer" => match e.data.get("price").and_then(|p| p.as_f64()) {
                Some(price) => {
                    Utterance::moves(role, Action::Submit(Terms::Price(to_cents(price))))
                }
                // The form sent with no price: no offer was made.
                None => Utterance::nothing(role, "offer without a price, played as no move"),
            },
            "accept" => Utterance::moves(role, Action::Accept),
            "reject" => Utterance::moves(role, Action::Reject),
            "quit" => Utterance::moves(role, Action::WalkAway),
            other => return Err(skip(format!("an unknown event `{other}`"))),
        };
        if let Some(intent) = e
            .metadata
            .as_ref()
            .and_then(|m| m.get("intent"))
            .and_then(|i| i.as_str())
        {
            u = u.labelled("dialogue_act", intent);
        }
        out.push(u);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialogue(events: serde_json::Value) -> Dialogue {
        let kb = |role: &str| {
            serde_json::json!({
                "personal": {"Role": role, "Target": 80.0},
                "item": {"Title": "Bike", "Price": 100.0, "Description": []}
            })
        };
        serde_json::from_value(serde_json::json!({
            "uuid": "C_1",
            "scenario": {"uuid": "S_1", "kbs": [kb("seller"), kb("buyer")]},
            "events": events
        }))
        .unwrap()
    }

    #[test]
    fn agents_play_their_kbs_roles_and_events_are_moves() {
        let d = dialogue(serde_json::json!([
            {"action": "message", "agent": 1, "data": "Would you take 70?", "metadata": {"intent": "propose", "price": 70}},
            {"action": "offer", "agent": 0, "data": {"price": 85.5, "sides": ""}},
            {"action": "accept", "agent": 1, "data": null},
            {"action": "quit", "agent": 0, "data": null}
        ]));
        let u = utterances(&d).unwrap();
        assert_eq!(u[0].role, Role::Buyer);
        assert_eq!(u[0].text.as_deref(), Some("Would you take 70?"));
        assert_eq!(u[0].labels, vec![("dialogue_act", "propose".to_string())]);
        assert_eq!(u[1].role, Role::Seller);
        assert_eq!(u[1].action, Some(Action::Submit(Terms::Price(8550))));
        assert_eq!(u[2].action, Some(Action::Accept));
        assert_eq!(u[3].action, Some(Action::WalkAway));
    }

    #[test]
    fn an_offer_without_a_price_is_no_move_and_said_so() {
        let d = dialogue(serde_json::json!([
            {"action": "offer", "agent": 0, "data": {"price": null, "sides": ""}}
        ]));
        let u = utterances(&d).unwrap();
        assert_eq!((u[0].text.as_ref(), u[0].action.as_ref()), (None, None));
        assert!(u[0].adjusted.is_some());
    }
}
