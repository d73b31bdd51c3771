//! Deal or No Deal's corpus lines as utterances. A dialogue is a line of `data.txt` (the
//! `agent_1` side, `YOU`) and its mirror line (`agent_2`, `THEM`) where the corpus has one; its
//! id is `data.txt:A-B` (or `data.txt:A` for a line alone). The talk is the utterances up to
//! `<selection>`, as the corpus writes them (lower-cased, tokenized).
//!
//! After the talk both people chose privately what they take: the shares they want, or "no
//! agreement". Those choices are the moves, in this order: the side that wrote `<selection>`
//! first, then the other, except that a choice of shares goes before a "no agreement" (which
//! ends the episode, so both choices are played). The first choice of shares is a submit; the
//! second is an accept when it is exactly the rest, else a submit of its own (the two
//! disagree, and the episode stops there as `max_turns`); "no agreement" is a walk-away. A
//! choice the corpus does not hold (the other side's, on a line without its mirror, unless the
//! line says they agreed: then it is the rest) is left out; a disconnect ends the dialogue
//! after the talk.

use std::path::PathBuf;

use super::{form_turns, DialogueError, HumanDialogue, ScenarioIndex, Skip, Utterance};
use crate::protocol::{Action, Terms};
use crate::scenario::import::dnd::{
    dialogues as corpus_dialogues, line_range, lines_name, read_corpus, LineEnding, Perspective,
};
use crate::scenario::import::file_name;
use crate::scenario::Role;

pub(super) fn dialogues(
    files: &[PathBuf],
    index: &ScenarioIndex,
) -> Result<Vec<Result<HumanDialogue, Skip>>, DialogueError> {
    let mut out = Vec::new();
    for path in files {
        let file = file_name(path);
        let lines = read_corpus(path)?;
        for (a, b) in corpus_dialogues(&lines) {
            let id = format!("{file}:{}", line_range(a, b));
            out.push(
                index
                    .find(&lines_name(a, b), &id)
                    .and_then(|found| form_turns(&id, found, utterances(a, b, &id)?)),
            );
        }
    }
    Ok(out)
}

/// What one side chose after the talk.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Choice {
    Shares([u32; 3]),
    NoAgreement,
    Disconnect,
    /// The corpus does not say.
    Unknown,
}

fn choice(ending: &LineEnding) -> Choice {
    match ending {
        LineEnding::Agree { selection, .. } | LineEnding::Disagree { selection } => {
            Choice::Shares(*selection)
        }
        LineEnding::NoAgreement => Choice::NoAgreement,
        LineEnding::Disconnect => Choice::Disconnect,
    }
}

fn rest(counts: [u32; 3], shares: [u32; 3]) -> [u32; 3] {
    std::array::from_fn(|i| counts[i].saturating_sub(shares[i]))
}

/// The talk of line `a` (`YOU` is `agent_1`), then the two sides' choices as moves.
fn utterances(a: &Perspective, b: Option<&Perspective>, id: &str) -> Result<Vec<Utterance>, Skip> {
    let mut out = Vec::new();
    let mut selector = None;
    for utterance in a.dialogue.split("<eos>").map(str::trim) {
        if utterance.is_empty() {
            continue;
        }
        let (role, text) = if let Some(t) = utterance.strip_prefix("YOU:") {
            (Role::Agent1, t.trim())
        } else if let Some(t) = utterance.strip_prefix("THEM:") {
            (Role::Agent2, t.trim())
        } else {
            return Err(Skip::new(id, "an utterance by neither side"));
        };
        if text == "<selection>" {
            selector = Some(role);
            break;
        }
        out.push(Utterance::says(role, text));
    }
    let selector = selector.ok_or_else(|| Skip::new(id, "no <selection>"))?;
    let counts = a.own.counts;
    let first = choice(&a.ending);
    let second = match (b, first, &a.ending) {
        (Some(b), _, _) => choice(&b.ending),
        (None, Choice::Shares(own), LineEnding::Agree { .. }) => Choice::Shares(rest(counts, own)),
        (None, _, _) => Choice::Unknown,
    };
    let mut choices = vec![(Role::Agent1, first), (Role::Agent2, second)];
    if choices.iter().any(|(_, c)| *c == Choice::Disconnect) {
        return Ok(out);
    }
    // The selector's first, then shares before "no agreement" (a stable sort keeps the rest).
    choices.sort_by_key(|(role, c)| (*c == Choice::NoAgreement, *role != selector));
    let mut proposed: Option<[u32; 3]> = None;
    for (role, c) in choices {
        let action = match (c, proposed) {
            (Choice::Shares(s), Some(p)) if s == rest(counts, p) => Action::Accept,
            (Choice::Shares(s), _) => {
                proposed = Some(s);
                Action::Submit(Terms::Items(s.to_vec()))
            }
            (Choice::NoAgreement, _) => Action::WalkAway,
            (Choice::Disconnect | Choice::Unknown, _) => continue,
        };
        out.push(Utterance::moves(role, action));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::import::dnd::dialogues as pair;

    fn lines(text: &str) -> Vec<Perspective> {
        let dir = std::env::temp_dir().join(format!("dealgym-dnd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("data-{n}.txt"));
        std::fs::write(&path, text).unwrap();
        read_corpus(&path).unwrap()
    }

    fn moves(u: &[Utterance]) -> Vec<(Role, Action)> {
        u.iter()
            .filter_map(|u| u.action.clone().map(|a| (u.role, a)))
            .collect()
    }

    const AGREE: &str = "1 0 4 2 1 2 YOU: i would like 4 hats and you can have the rest . <eos> THEM: deal <eos> YOU: <selection> item0=0 item1=4 item2=0 <eos> reward=8 agree 1 4 4 1 1 2\n\
        1 4 4 1 1 2 THEM: i would like 4 hats and you can have the rest . <eos> YOU: deal <eos> THEM: <selection> item0=1 item1=0 item2=1 <eos> reward=6 agree 1 0 4 2 1 2\n";

    #[test]
    fn agreed_choices_are_the_selectors_submit_and_the_others_accept() {
        let l = lines(AGREE);
        let (a, b) = pair(&l)[0];
        let u = utterances(a, b, "data.txt:1-2").unwrap();
        assert_eq!(
            u[0].text.as_deref(),
            Some("i would like 4 hats and you can have the rest .")
        );
        assert_eq!(u[1].role, Role::Agent2);
        assert_eq!(
            moves(&u),
            vec![
                (Role::Agent1, Action::Submit(Terms::Items(vec![0, 4, 0]))),
                (Role::Agent2, Action::Accept)
            ]
        );
    }

    #[test]
    fn disagreeing_choices_are_two_submits_and_no_agreement_walks_away_last() {
        let text = "1 6 3 0 2 2 YOU: you can have all the hats . <eos> THEM: <selection> item0=1 item1=0 item2=2 <eos> reward=10 disagree 1 2 3 2 2 1\n\
            1 2 3 2 2 1 THEM: you can have all the hats . <eos> YOU: <selection> item0=1 item1=3 item2=0 <eos> reward=10 disagree 1 6 3 0 2 2\n";
        let l = lines(text);
        let (a, b) = pair(&l)[0];
        assert_eq!(
            moves(&utterances(a, b, "x").unwrap()),
            vec![
                (Role::Agent2, Action::Submit(Terms::Items(vec![1, 3, 0]))),
                (Role::Agent1, Action::Submit(Terms::Items(vec![1, 0, 2])))
            ]
        );
        let text = "1 6 3 0 2 2 YOU: no . <eos> THEM: <selection> no agreement <eos> reward=no agreement disagree 1 2 3 2 2 1\n\
            1 2 3 2 2 1 THEM: no . <eos> YOU: <selection> item0=1 item1=3 item2=0 <eos> reward=10 disagree 1 6 3 0 2 2\n";
        let l = lines(text);
        let (a, b) = pair(&l)[0];
        assert_eq!(
            moves(&utterances(a, b, "x").unwrap()),
            vec![
                (Role::Agent2, Action::Submit(Terms::Items(vec![1, 3, 0]))),
                (Role::Agent1, Action::WalkAway)
            ]
        );
    }

    #[test]
    fn a_line_alone_plays_only_the_choices_it_knows_and_a_disconnect_none() {
        // The mirror is missing: agent_2's choice is unknown unless the line says they agreed.
        let text = "1 6 3 0 2 2 YOU: hats ? <eos> THEM: <selection> item0=1 item1=0 item2=2 <eos> reward=10 disagree 1 2 3 2 2 1\n";
        let l = lines(text);
        let (a, b) = pair(&l)[0];
        assert!(b.is_none());
        assert_eq!(
            moves(&utterances(a, b, "x").unwrap()),
            vec![(Role::Agent1, Action::Submit(Terms::Items(vec![1, 0, 2])))]
        );
        let text = "1 6 3 0 2 2 THEM: i need ball <eos> YOU: fine . <eos> THEM: <selection> disconnect <eos> reward=disconnect agree 1 1 3 0 1 9\n";
        let l = lines(text);
        let (a, b) = pair(&l)[0];
        let u = utterances(a, b, "x").unwrap();
        assert_eq!(u.len(), 2);
        assert!(moves(&u).is_empty());
    }
}
