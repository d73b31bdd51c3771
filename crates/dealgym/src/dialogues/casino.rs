//! CaSiNo's chat logs as utterances. A message is said by its participant; `Submit-Deal` is a
//! submit of the submitter's own shares (`issue2youget`), `Accept-Deal`, `Reject-Deal` and
//! `Walk-Away` the moves of those names. The strategy annotations of the annotated dialogues
//! (`[text, "label,label"]`, one per message) are matched to the messages by their text, in
//! order, and kept as `strategy`.

use std::path::PathBuf;

use super::{form_turns, DialogueError, HumanDialogue, ScenarioIndex, Skip, Utterance};
use crate::protocol::{Action, Terms};
use crate::scenario::import::casino::{
    read, role_of, submitted_shares, Dialogue, ACCEPT, REJECT, SUBMIT, WALK_AWAY,
};

pub(super) fn dialogues(
    files: &[PathBuf],
    index: &ScenarioIndex,
) -> Result<Vec<Result<HumanDialogue, Skip>>, DialogueError> {
    let mut out = Vec::new();
    for path in files {
        for d in read(path)? {
            let id = d.id();
            out.push(
                index
                    .find(&id, &id)
                    .and_then(|found| form_turns(&id, found, utterances(&d, &id)?)),
            );
        }
    }
    Ok(out)
}

/// The dialogue's chat log in order, each message with its strategy labels where annotated.
fn utterances(d: &Dialogue, id: &str) -> Result<Vec<Utterance>, Skip> {
    let mut annotations = d.annotations.iter().peekable();
    let mut out = Vec::new();
    for m in &d.chat_logs {
        let role = role_of(&m.id)
            .ok_or_else(|| Skip::new(id, format!("a message by unknown `{}`", m.id)))?;
        let action = match m.text.as_str() {
            SUBMIT => Some(Action::Submit(Terms::Items(
                submitted_shares(m).map_err(|e| Skip::new(id, format!("unreadable {e}")))?,
            ))),
            ACCEPT => Some(Action::Accept),
            REJECT => Some(Action::Reject),
            WALK_AWAY => Some(Action::WalkAway),
            _ => None,
        };
        if let Some(action) = action {
            out.push(Utterance::moves(role, action));
            continue;
        }
        let mut u = Utterance::says(role, &m.text);
        if let Some((_, labels)) = annotations.next_if(|(text, _)| text.trim() == m.text.trim()) {
            u = u.labelled("strategy", labels);
        } else if !d.annotations.is_empty() {
            // An annotated dialogue's message the annotations skip: no label, said so.
            u = u.labelled("strategy", "");
        }
        out.push(u);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialogue(json: serde_json::Value) -> Dialogue {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn messages_moves_and_strategies_in_order() {
        let d = dialogue(serde_json::json!({
            "dialogue_id": 7,
            "chat_logs": [
                {"text": "Hi! I need water.", "task_data": {}, "id": "mturk_agent_1"},
                {"text": "Not extra", "task_data": {}, "id": "mturk_agent_2"},
                {"text": "Submit-Deal", "task_data": {"issue2youget": {"Food": "1", "Water": "3", "Firewood": 0}}, "id": "mturk_agent_2"},
                {"text": "Accept-Deal", "task_data": {"data": "accept_deal"}, "id": "mturk_agent_1"}
            ],
            "participant_info": {},
            "annotations": [["Hi! I need water.", "small-talk,self-need"]]
        }));
        let u = utterances(&d, "7").unwrap();
        assert_eq!(u.len(), 4);
        assert_eq!(
            u[0].labels,
            vec![("strategy", "small-talk,self-need".to_string())]
        );
        assert_eq!(
            u[1].labels,
            vec![("strategy", String::new())],
            "skipped by the annotations"
        );
        assert_eq!(
            u[2].action,
            Some(Action::Submit(Terms::Items(vec![1, 3, 0])))
        );
        assert_eq!(u[2].role, crate::scenario::Role::Agent2);
        assert_eq!(u[3].action, Some(Action::Accept));
    }

    #[test]
    fn an_unreadable_submit_is_a_skip_that_says_so() {
        let d = dialogue(serde_json::json!({
            "dialogue_id": "8",
            "chat_logs": [{"text": "Submit-Deal", "task_data": {}, "id": "mturk_agent_1"}],
            "participant_info": {}
        }));
        let skip = utterances(&d, "8").unwrap_err();
        assert!(skip.reason.contains("issue2youget"), "{}", skip.reason);
    }
}
