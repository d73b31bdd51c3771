//! The mock as an annotator, for tests and demos of `dealgym annotate`: a chat request made
//! from the built-in thought template ([`THOUGHT_MARKER`]) is answered in the strict format,
//! `REASONING: …` then `MOVE:` the move the prompt shows (its `MOVE TAKEN:` line) — or, at the
//! rate `--annotate-unusable-rate`, with an answer whose move is another one.

use dealgym::annotate::{MOVE_TAKEN, THOUGHT_MARKER};
use dealgym::game::Message;

/// Whether a chat request is an annotation request (made from the built-in template).
pub(crate) fn is_annotate_request(messages: &[Message]) -> bool {
    messages.iter().any(|m| m.content.contains(THOUGHT_MARKER))
}

/// The mock's answer to an annotation `prompt`: a reasoning line built from the move (and a
/// word drawn from `hash`, so answers differ between prompts), then the move itself; with
/// `unusable`, a move that is not the one shown.
pub fn thought(prompt: &str, hash: u64, unusable: bool) -> String {
    let moved = prompt
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(MOVE_TAKEN))
        .map(str::trim)
        .unwrap_or("[TALK]");
    const MOODS: [&str; 4] = ["calmly", "carefully", "firmly", "hopefully"];
    let mood = MOODS[(hash % MOODS.len() as u64) as usize];
    let answer_move = if unusable {
        if moved.starts_with("[WALK_AWAY]") {
            "[ACCEPT_DEAL]"
        } else {
            "[WALK_AWAY]"
        }
    } else {
        moved
    };
    format!(
        "REASONING: Weighing what I need against what they said, I {mood} go with {}.\nMOVE: {answer_move}",
        moved.split_whitespace().next().unwrap_or("this")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dealgym::annotate::read_answer;
    use dealgym::protocol::{Action, TermSpace, Terms};
    use dealgym_core::fixtures::casino_items;

    #[test]
    fn the_mock_answers_with_the_move_shown_or_another_when_unusable() {
        let items = casino_items();
        let space = TermSpace::Items(&items);
        let prompt = format!(
            "{THOUGHT_MARKER}\n...\n{MOVE_TAKEN} [SUBMIT_DEAL] food:2 water:1 firewood:0\n...\nMOVE: [SUBMIT_DEAL] food:2 water:1 firewood:0"
        );
        let taken = Action::Submit(Terms::Items(vec![2, 1, 0]));
        assert!(read_answer(&thought(&prompt, 3, false), &taken, space).is_ok());
        assert_eq!(
            read_answer(&thought(&prompt, 3, true), &taken, space),
            Err(dealgym::annotate::Unusable::WrongMove)
        );
    }
}
