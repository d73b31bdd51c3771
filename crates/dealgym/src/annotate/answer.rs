//! Reading an annotator's answer: strictly two labelled parts, `REASONING: …` then `MOVE: …`,
//! the move being exactly the one the person took. Labels are read as a completion's are (any
//! case, markdown emphasis: [`label_regex`]) and the move as an action line is
//! ([`read_move`]); anything else is [`Unusable`], counted and never guessed.

use std::sync::LazyLock;

use regex::Regex;

use crate::protocol::{after_think, label_regex, labelled_parts, read_move, Action, TermSpace};

/// The words the template asks a thought to stay within; an answer more than twice as long is
/// [`Unusable::TooLong`] (a rambling answer is not a private thought, and a cut-off one is not
/// whole).
pub(crate) const MAX_WORDS: usize = 120;

static ANSWER_LABELS: LazyLock<Regex> = LazyLock::new(|| label_regex(&["reasoning", "move"]));

/// Why an annotator's answer leaves the turn's Thought empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unusable {
    /// Nothing after any `<think>` block.
    Empty,
    /// No `REASONING:` part, or an empty one.
    NoReasoning,
    /// No `MOVE:` part.
    NoMove,
    /// Not one `REASONING:` then one `MOVE:` (a part twice, or the move first).
    Layout,
    /// The `MOVE:` part holds no readable move (no action token, two tokens, bad terms).
    UnreadableMove,
    /// The move read is not the one the person took: the reasoning may argue for another.
    WrongMove,
    /// More than twice `MAX_WORDS` words of reasoning.
    TooLong,
    /// Written into the turn, the reasoning changes how the turn reads (it holds a part label
    /// or tag, or copies the brief), so the person's move would not replay as it was.
    BreaksTurn,
}

impl Unusable {
    #[cfg(test)]
    pub(crate) const ALL: [Unusable; 8] = [
        Unusable::Empty,
        Unusable::NoReasoning,
        Unusable::NoMove,
        Unusable::Layout,
        Unusable::UnreadableMove,
        Unusable::WrongMove,
        Unusable::TooLong,
        Unusable::BreaksTurn,
    ];

    /// The name records and summaries count it by.
    pub fn name(self) -> &'static str {
        match self {
            Unusable::Empty => "empty",
            Unusable::NoReasoning => "no_reasoning",
            Unusable::NoMove => "no_move",
            Unusable::Layout => "layout",
            Unusable::UnreadableMove => "unreadable_move",
            Unusable::WrongMove => "wrong_move",
            Unusable::TooLong => "too_long",
            Unusable::BreaksTurn => "breaks_turn",
        }
    }
}

/// The reasoning of `reply` if it is usable for a turn whose move was `taken` (terms read in
/// `space`): after any `<think>` block, text before `REASONING:` is ignored, then exactly one
/// `REASONING:` part (not empty, at most twice `MAX_WORDS` words) and one `MOVE:` part that
/// reads as `taken`. The reasoning is returned trimmed, its lines joined by spaces.
pub fn read_answer(reply: &str, taken: &Action, space: TermSpace<'_>) -> Result<String, Unusable> {
    let body = after_think(reply).trim();
    if body.is_empty() {
        return Err(Unusable::Empty);
    }
    let parts = labelled_parts(body, &ANSWER_LABELS);
    let count = |label: &str| parts.iter().filter(|(l, _)| l == label).count();
    match (count("reasoning"), count("move")) {
        (0, _) => return Err(Unusable::NoReasoning),
        (_, 0) => return Err(Unusable::NoMove),
        (1, 1) if parts[0].0 == "reasoning" => {}
        _ => return Err(Unusable::Layout),
    }
    let reasoning = parts[0].1.split_whitespace().collect::<Vec<_>>();
    if reasoning.is_empty() {
        return Err(Unusable::NoReasoning);
    }
    if reasoning.len() > 2 * MAX_WORDS {
        return Err(Unusable::TooLong);
    }
    let moved = read_move(parts[1].1, space).map_err(|_| Unusable::UnreadableMove)?;
    if moved != *taken {
        return Err(Unusable::WrongMove);
    }
    Ok(reasoning.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::casino_items;
    use crate::protocol::Terms;

    fn read(reply: &str, taken: &Action) -> Result<String, Unusable> {
        let items = casino_items();
        read_answer(reply, taken, TermSpace::Items(&items))
    }

    #[test]
    fn a_strict_answer_gives_its_reasoning() {
        let offer = Action::Submit(Terms::Items(vec![2, 1, 0]));
        let got = read(
            "REASONING: Food matters most to me;\n  they seem to want firewood.\n\
             MOVE: [SUBMIT_DEAL] food:2 water:1 firewood:0",
            &offer,
        );
        assert_eq!(
            got.unwrap(),
            "Food matters most to me; they seem to want firewood."
        );
        // Labels in any case and with markdown emphasis, terms in any order, a preamble and a
        // <think> block before: all read.
        let got = read(
            "<think>MOVE: [WALK_AWAY]</think>Here it is.\n**Reasoning:** I need food.\n\
             **move**: [submit_deal] water=1, firewood: 0, food:2",
            &offer,
        );
        assert_eq!(got.unwrap(), "I need food.");
        assert_eq!(
            read(
                "REASONING: fair enough\nMOVE: [ACCEPT_DEAL]",
                &Action::Accept
            )
            .unwrap(),
            "fair enough"
        );
    }

    #[test]
    fn anything_else_is_unusable_by_its_reason() {
        let offer = Action::Submit(Terms::Items(vec![2, 1, 0]));
        let long = format!(
            "REASONING: {}\nMOVE: [ACCEPT_DEAL]",
            "word ".repeat(2 * MAX_WORDS + 1)
        );
        for (reply, taken, why) in [
            ("", &Action::Accept, Unusable::Empty),
            (
                "<think>all thinking</think>  ",
                &Action::Accept,
                Unusable::Empty,
            ),
            (
                "MOVE: [ACCEPT_DEAL]",
                &Action::Accept,
                Unusable::NoReasoning,
            ),
            (
                "REASONING:\nMOVE: [ACCEPT_DEAL]",
                &Action::Accept,
                Unusable::NoReasoning,
            ),
            ("REASONING: take it", &Action::Accept, Unusable::NoMove),
            (
                "I accept. [ACCEPT_DEAL]",
                &Action::Accept,
                Unusable::NoReasoning,
            ),
            (
                "MOVE: [ACCEPT_DEAL]\nREASONING: take it",
                &Action::Accept,
                Unusable::Layout,
            ),
            (
                "REASONING: a\nMOVE: [ACCEPT_DEAL]\nMOVE: [ACCEPT_DEAL]",
                &Action::Accept,
                Unusable::Layout,
            ),
            (
                "REASONING: a\nMOVE: accept it",
                &Action::Accept,
                Unusable::UnreadableMove,
            ),
            (
                "REASONING: a\nMOVE: [ACCEPT_DEAL] or [WALK_AWAY]",
                &Action::Accept,
                Unusable::UnreadableMove,
            ),
            (
                "REASONING: a\nMOVE: [SUBMIT_DEAL] food:9 water:1 firewood:0",
                &offer,
                Unusable::UnreadableMove,
            ),
            (
                "REASONING: a\nMOVE: [WALK_AWAY]",
                &Action::Accept,
                Unusable::WrongMove,
            ),
            (
                "REASONING: a\nMOVE: [SUBMIT_DEAL] food:1 water:2 firewood:0",
                &offer,
                Unusable::WrongMove,
            ),
            (long.as_str(), &Action::Accept, Unusable::TooLong),
        ] {
            assert_eq!(read(reply, taken), Err(why), "{reply:?}");
        }
    }

    #[test]
    fn every_reason_has_its_own_name() {
        let names: std::collections::BTreeSet<&str> =
            Unusable::ALL.iter().map(|u| u.name()).collect();
        assert_eq!(names.len(), Unusable::ALL.len());
    }
}
