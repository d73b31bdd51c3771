//! Forming a dialogue's turns from the dataset's utterances: the rules of the module's doc
//! (consecutive utterances of one person join, the last move wins, nothing after the end,
//! an offer restated before an accept that needs it, the per-person cap).

use std::collections::BTreeMap;

use super::{Found, HumanDialogue, Skip, MAX_TURNS_PER_PERSON};
use crate::protocol::Action;
use crate::scenario::Role;

/// One message or move of a dialogue as the dataset has it, before turns are formed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Utterance {
    pub role: Role,
    /// The message's text; none for a move.
    pub text: Option<String>,
    /// The move; none for a message.
    pub action: Option<Action>,
    /// The dataset's labels of this utterance: kind → value.
    pub labels: Vec<(&'static str, String)>,
    /// What the family's mapping had to do with this utterance, if anything (counted).
    pub adjusted: Option<&'static str>,
}

impl Utterance {
    pub(crate) fn says(role: Role, text: &str) -> Utterance {
        Utterance {
            role,
            text: Some(text.trim().to_string()),
            action: None,
            labels: Vec::new(),
            adjusted: None,
        }
    }

    pub(crate) fn moves(role: Role, action: Action) -> Utterance {
        Utterance {
            role,
            text: None,
            action: Some(action),
            labels: Vec::new(),
            adjusted: None,
        }
    }

    /// An utterance that is neither a message nor a move the engine knows, kept as an empty
    /// part of its person's turn; `what` says what it was (counted).
    pub(crate) fn nothing(role: Role, what: &'static str) -> Utterance {
        Utterance {
            role,
            text: None,
            action: None,
            labels: Vec::new(),
            adjusted: Some(what),
        }
    }

    pub(crate) fn labelled(mut self, kind: &'static str, value: &str) -> Utterance {
        self.labels.push((kind, value.to_string()));
        self
    }
}

/// One person's turn: what they said and the move it ends with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HumanTurn {
    pub role: Role,
    pub talk: String,
    pub action: Action,
    /// Label kind → one value per utterance the turn joins ("" where it has none).
    pub dataset_labels: BTreeMap<String, Vec<String>>,
}

/// Form a dialogue's turns from its utterances in order (the rules in the module's doc), or
/// say why it cannot be played. `found` is its scenario.
pub(crate) fn form_turns(
    id: &str,
    found: Found,
    utterances: Vec<Utterance>,
) -> Result<HumanDialogue, Skip> {
    let mut turns: Vec<HumanTurn> = Vec::new();
    // Utterances of the turn being formed, for its labels.
    let mut joined: Vec<Vec<(&'static str, String)>> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let mut action: Option<Action> = None;
    let mut folded = 0;
    let mut role: Option<Role> = None;
    let mut mapped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let close = |role: Role,
                 texts: &mut Vec<String>,
                 action: &mut Option<Action>,
                 joined: &mut Vec<Vec<(&'static str, String)>>,
                 turns: &mut Vec<HumanTurn>| {
        turns.push(HumanTurn {
            role,
            talk: std::mem::take(texts).join("\n"),
            action: action.take().unwrap_or(Action::Talk),
            dataset_labels: labels_of(&std::mem::take(joined)),
        });
    };
    for u in utterances {
        if let Some(r) = role.filter(|r| *r != u.role) {
            close(r, &mut texts, &mut action, &mut joined, &mut turns);
        }
        role = Some(u.role);
        if let Some(what) = u.adjusted {
            *mapped.entry(what).or_default() += 1;
        }
        if let Some(t) = u.text.filter(|t| !t.is_empty()) {
            texts.push(t);
        }
        if let Some(a) = u.action {
            folded += usize::from(action.is_some());
            action = Some(a);
        }
        joined.push(u.labels);
    }
    if let Some(r) = role {
        close(r, &mut texts, &mut action, &mut joined, &mut turns);
    }
    if turns.is_empty() {
        return Err(Skip::new(id, "no messages"));
    }
    let mut after_end = 0;
    if let Some(end) = turns
        .iter()
        .position(|t| matches!(t.action, Action::Accept | Action::WalkAway))
    {
        after_end = turns.len() - end - 1;
        turns.truncate(end + 1);
    }
    let mut restated = 0;
    if let Some(last) = turns.last().filter(|t| t.action == Action::Accept) {
        let acceptor = last.role;
        let n = turns.len();
        let offer = turns[..n - 1]
            .iter()
            .rev()
            .find_map(|t| match &t.action {
                Action::Submit(terms) => Some((t.role, terms.clone())),
                _ => None,
            })
            .filter(|(by, _)| *by != acceptor);
        let Some((_, terms)) = offer else {
            return Err(Skip::new(
                id,
                "accept with no offer of the other side before it",
            ));
        };
        // Turns alternate, so the turn before the accept is the proposer's.
        match &turns[n - 2].action {
            Action::Submit(_) => {}
            Action::Talk => {
                turns[n - 2].action = Action::Submit(terms);
                restated += 1;
            }
            _ => {
                return Err(Skip::new(
                    id,
                    "accept after the proposer's own rejection of the offer",
                ))
            }
        }
    }
    for r in found.scenario.roles() {
        let count = turns.iter().filter(|t| t.role == r).count();
        if count > MAX_TURNS_PER_PERSON as usize {
            return Err(Skip::new(
                id,
                format!("more than {MAX_TURNS_PER_PERSON} turns by one person"),
            ));
        }
    }
    let stopped = !matches!(
        turns.last().map(|t| &t.action),
        Some(Action::Accept | Action::WalkAway)
    );
    Ok(HumanDialogue {
        id: id.to_string(),
        scenario: found.scenario,
        digest: found.digest,
        recorded: found.recorded,
        turns,
        stopped,
        restated,
        folded,
        after_end,
        mapped,
    })
}

/// A turn's labels: kind → one value per utterance, where any utterance has that kind.
fn labels_of(joined: &[Vec<(&'static str, String)>]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (kind, _) in joined.iter().flatten() {
        out.entry(kind.to_string()).or_insert_with(|| {
            joined
                .iter()
                .map(|labels| {
                    labels
                        .iter()
                        .find(|(k, _)| k == kind)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default()
                })
                .collect()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Terms;
    use crate::scenario::{HumanEnding, HumanOutcome};

    fn found() -> Found {
        let scenario = crate::fixtures::price();
        Found {
            digest: scenario.digest(),
            scenario,
            recorded: HumanOutcome {
                dialogue: "d".into(),
                ending: HumanEnding::NoDeal,
                terms: None,
                view: None,
                points: vec![],
            },
        }
    }

    const B: Role = Role::Buyer;
    const S: Role = Role::Seller;

    fn offer(p: i64) -> Action {
        Action::Submit(Terms::Price(p))
    }

    fn shape(d: &HumanDialogue) -> Vec<(Role, &str, Action)> {
        d.turns
            .iter()
            .map(|t| (t.role, t.talk.as_str(), t.action.clone()))
            .collect()
    }

    #[test]
    fn one_persons_consecutive_utterances_are_one_turn_with_its_last_move() {
        let d = form_turns(
            "d",
            found(),
            vec![
                Utterance::says(B, "Hi."),
                Utterance::says(B, " Is it new? "),
                Utterance::moves(S, Action::Reject),
                Utterance::moves(S, offer(900)),
                Utterance::says(S, "Best I can do."),
            ],
        )
        .unwrap();
        assert_eq!(
            shape(&d),
            vec![
                (B, "Hi.\nIs it new?", Action::Talk),
                (S, "Best I can do.", offer(900))
            ]
        );
        assert_eq!(d.folded, 1, "the reject folded into the counter-offer");
        assert!(d.stopped, "no accept or walk-away: it stopped");
    }

    #[test]
    fn the_proposer_restates_its_offer_where_the_accept_follows_a_message() {
        let d = form_turns(
            "d",
            found(),
            vec![
                Utterance::moves(S, offer(900)),
                Utterance::says(B, "Hmm."),
                Utterance::says(S, "Take it or leave it."),
                Utterance::moves(B, Action::Accept),
                Utterance::says(S, "Thanks!"),
            ],
        )
        .unwrap();
        assert_eq!(
            shape(&d),
            vec![
                (S, "", offer(900)),
                (B, "Hmm.", Action::Talk),
                (S, "Take it or leave it.", offer(900)),
                (B, "", Action::Accept)
            ]
        );
        assert_eq!((d.restated, d.after_end), (1, 1));
        assert!(!d.stopped);
    }

    #[test]
    fn an_accept_of_no_offer_of_the_other_side_is_a_skip() {
        for utterances in [
            vec![
                Utterance::says(S, "Hi"),
                Utterance::moves(B, Action::Accept),
            ],
            vec![
                Utterance::moves(B, offer(800)),
                Utterance::says(S, "Hmm"),
                Utterance::moves(B, Action::Accept),
            ],
        ] {
            let skip = form_turns("d", found(), utterances).err().unwrap();
            assert!(
                skip.reason.starts_with("accept with no offer"),
                "{}",
                skip.reason
            );
        }
    }

    #[test]
    fn labels_are_kept_one_per_utterance_of_the_turn() {
        let d = form_turns(
            "d",
            found(),
            vec![
                Utterance::says(B, "Hi").labelled("dialogue_act", "greet"),
                Utterance::says(B, "70?"),
                Utterance::moves(B, offer(7000)).labelled("dialogue_act", "offer"),
            ],
        )
        .unwrap();
        let labels = &d.turns[0].dataset_labels;
        assert_eq!(labels.len(), 1);
        assert_eq!(labels["dialogue_act"], vec!["greet", "", "offer"]);
    }

    #[test]
    fn a_dialogue_longer_than_the_cap_is_a_skip() {
        let long: Vec<Utterance> = (0..=2 * MAX_TURNS_PER_PERSON)
            .map(|i| Utterance::says(if i % 2 == 0 { B } else { S }, "and?"))
            .collect();
        let skip = form_turns("d", found(), long).err().unwrap();
        assert!(
            skip.reason.contains("turns by one person"),
            "{}",
            skip.reason
        );
    }
}
