//! Narrated turns: strategy apart from language. A decider (a rule player, a planner, a
//! script, a Python callable) picks the move; a narrating model writes the Thought and Talk
//! around it (AmazonHistoryPrice's offer generator with a narrating LLM; the harness paper's
//! §2.1, `../shared/papers/casino-self-play-harness.txt`). The book's `guide/rule-players.md`,
//! "Narrated players", shows one at work.
//!
//! What the engine keeps of it, for every rulebook:
//! - the [`Narration`] a completion carries: the decided move, the brief the narrator was sent,
//!   how the action line was held fixed ([`Force`]);
//! - the brief goes into the seat's history before its reply ([`crate::engine`]'s seat
//!   history), so the narrator's next call extends its last one, token for token;
//! - the one rule of a narrated turn: it plays the decided move ([`check_decided`]), or it is a
//!   turn that cannot be used (corrected and retried, then forfeited), never rewritten;
//! - where its Talk contradicts the move ([`contradictions`]): counted per turn, never fixed.
//!
//! Not here: how the narrator is asked (the runtime's `agents::narrated`, the Python
//! package's seat), and the consistency figure over turns (`score`).

mod consistency;

pub use consistency::{contradictions, Contradiction};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{Action, TurnError, TurnFormat};

/// A narrated turn as the engine is given it: what the decider chose, what the narrator was
/// told, how the action line was held to the choice, and — filled in by the engine when it
/// reads the turn — where the Talk contradicts the choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Narration {
    /// The decider's move as an action line (`[SUBMIT_DEAL] price:120`): the move the turn
    /// must play.
    pub decided: String,
    /// The message the narrator was sent before it wrote the turn (it stays in the seat's
    /// history, before the reply).
    pub brief: String,
    /// How the action line was held to the decided one.
    pub force: Force,
    /// Where the turn's Talk contradicts the decided move, as the engine read it
    /// ([`contradictions`]); empty for a consistent turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradictions: Vec<Contradiction>,
}

/// How a narrated turn's action line was held to the decided move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Force {
    /// The narrator was stopped at the action label and the decided action line was written
    /// after its words; in token-exact mode its ids follow the sampled ones, marked forced
    /// ([`crate::vocab::TurnTokens::forced_from`]) so a trainer masks them.
    #[default]
    Appended,
    /// The endpoint's constrained decoding held the action line to the decided one (the
    /// narrator's `constrain`: a GBNF grammar for llama.cpp, a regex for vLLM).
    Grammar,
    /// The narrator was asked to end with the decided action line and wrote it itself; the
    /// engine checks it ([`check_decided`]).
    Prompt,
}

impl Force {
    pub const ALL: [Force; 3] = [Force::Appended, Force::Grammar, Force::Prompt];

    /// The name configs and records use.
    pub fn name(self) -> &'static str {
        match self {
            Force::Appended => "appended",
            Force::Grammar => "grammar",
            Force::Prompt => "prompt",
        }
    }

    pub fn from_name(name: &str) -> Option<Force> {
        Force::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The rule of a narrated turn: the move read from it is the decided move (`decided`, read
/// from [`Narration::decided`] by the rulebook's own reader), or the turn cannot be used — an
/// `illegal` error that names both, so the narrator is corrected and asked again, then
/// forfeits, as any seat whose turn cannot be used. A turn already unusable keeps its own
/// error. Never rewritten to the decided move: what the narrator wrote is what is played.
pub fn check_decided(
    played: Option<&Action>,
    decided: Result<&Action, &TurnError>,
    decided_line: &str,
) -> Option<TurnError> {
    let played = played?;
    match decided {
        Err(e) => Some(TurnError::illegal(format!(
            "the decided move `{decided_line}` cannot be read: {}",
            e.message
        ))),
        Ok(decided) if decided != played => Some(TurnError::illegal(format!(
            "this turn's action is not the decided move: end with exactly `Action: {decided_line}`"
        ))),
        Ok(_) => None,
    }
}

/// The stop strings that end a narrator's words where the action label begins
/// ([`Force::Appended`]): its request stops at them, and [`forced_text`] writes the line.
pub fn action_labels(format: TurnFormat) -> &'static [&'static str] {
    match format {
        TurnFormat::Xml => &["<action>"],
        // Four, the most an OpenAI-compatible API takes; the emphasised and lower-case labels
        // the parser reads too.
        TurnFormat::Tagged | TurnFormat::Tools => &["Action:", "ACTION:", "**Action", "action:"],
    }
}

/// What is written after the narrator's words so the turn ends with the decided action line:
/// the line alone after a label the narrator wrote (a server that keeps the stop string), else
/// the label and the line on a line of their own.
pub fn forced_text(words: &str, format: TurnFormat, line: &str) -> String {
    let ends_with_label = action_labels(format)
        .iter()
        .any(|label| words.trim_end().ends_with(label));
    let newline = if words.is_empty() || words.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    match (format, ends_with_label) {
        (TurnFormat::Xml, true) => format!("{line}</action>"),
        (TurnFormat::Xml, false) => format!("{newline}<action>{line}</action>"),
        (_, true) => format!(" {line}"),
        (_, false) => format!("{newline}Action: {line}"),
    }
}

/// Where the first action label of `text` begins, read as the parser reads labels (any case,
/// plural, emphasis, at a line's start; `<action>` in XML): a narrator's words end there.
pub fn label_start(text: &str, format: TurnFormat) -> Option<usize> {
    static TAGGED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| crate::protocol::label_regex(&["action"]));
    static XML: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)<\s*action\s*>").expect("static regex")
    });
    match format {
        TurnFormat::Xml => XML.find(text),
        TurnFormat::Tagged | TurnFormat::Tools => TAGGED.find(text),
    }
    .map(|m| m.start())
}

/// Where a token-exact narrator's sampled ids are cut ([`Force::Appended`]: its server is not
/// asked to stop, as servers disagree on whether a stop string's ids come back): before the id
/// whose text holds the first action label (as the parser reads one). The ids to keep and the bytes of
/// `text` they spell; `None` where no label was written or the ids' `pieces` do not spell the
/// start of `text` (the sampled ids are then all kept, and the line follows them). A piece the
/// server leaves out of `text` (an end-of-turn marker after the label) does not matter.
pub fn cut_at_label(pieces: &[String], text: &str, format: TurnFormat) -> Option<(usize, usize)> {
    let at = label_start(text, format)?;
    if !pieces.concat().starts_with(&text[..at]) {
        return None;
    }
    let mut spelled = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if spelled + piece.len() > at {
            return Some((i, spelled));
        }
        spelled += piece.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{parse, Action, TermSpace, Terms};

    #[test]
    fn a_narrators_words_end_with_the_decided_line_whatever_the_server_kept() {
        let line = "[SUBMIT_DEAL] price:120";
        for words in [
            "Thought: low.\nTalk: How about $120?\n",
            "Thought: low.\nTalk: How about $120?",
            "Thought: low.\nTalk: How about $120?\nAction:",
        ] {
            let turn = format!("{words}{}", forced_text(words, TurnFormat::Tagged, line));
            let read = parse(&turn, TermSpace::Price, None);
            assert!(read.format_ok, "{turn}");
            assert_eq!(read.action, Some(Action::Submit(Terms::Price(12_000))));
        }
        let xml = "<thought>low</thought>\n<talk>$120?</talk>\n";
        let turn = format!("{xml}{}", forced_text(xml, TurnFormat::Xml, line));
        assert!(parse(&turn, TermSpace::Price, None).format_ok, "{turn}");
        let kept = "<thought>low</thought>\n<talk>$120?</talk>\n<action>";
        let turn = format!("{kept}{}", forced_text(kept, TurnFormat::Xml, line));
        assert!(parse(&turn, TermSpace::Price, None).format_ok, "{turn}");
    }

    #[test]
    fn a_narrators_ids_are_cut_before_the_one_that_holds_its_action_label() {
        let pieces: Vec<String> = [
            "Thought: ok",
            "\nTalk: $9",
            "\nAct",
            "ion: [REJ",
            "ECT_DEAL]",
        ]
        .iter()
        .map(|p| p.to_string())
        .collect();
        let text = pieces.concat();
        assert_eq!(
            cut_at_label(&pieces, &text, TurnFormat::Tagged),
            Some((2, "Thought: ok\nTalk: $9".len()))
        );
        // An end-of-turn piece the text leaves out does not matter.
        let mut ended = pieces.clone();
        ended.push("<|im_end|>".into());
        assert_eq!(
            cut_at_label(&ended, &text, TurnFormat::Tagged),
            Some((2, "Thought: ok\nTalk: $9".len()))
        );
        // A label the parser reads is cut at, however it is written.
        let plural: Vec<String> = ["Thought: a\nTalk: b\n", "**Actions**:", " x"]
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            cut_at_label(&plural, &plural.concat(), TurnFormat::Tagged),
            Some((1, plural[0].len()))
        );
        // No label, or pieces that do not spell the text: nothing is cut.
        assert_eq!(
            cut_at_label(&pieces[..2], &pieces[..2].concat(), TurnFormat::Tagged),
            None
        );
        assert_eq!(
            cut_at_label(&pieces, "other\nAction: x", TurnFormat::Tagged),
            None
        );
    }

    #[test]
    fn a_narrated_turn_plays_its_decided_move_or_is_refused() {
        let offer = Action::Submit(Terms::Price(12_000));
        assert_eq!(
            check_decided(Some(&offer), Ok(&offer), "[SUBMIT_DEAL] price:120"),
            None
        );
        let other = Action::Submit(Terms::Price(13_000));
        let e = check_decided(Some(&other), Ok(&offer), "[SUBMIT_DEAL] price:120")
            .expect("another price is refused");
        assert_eq!(e.kind, crate::protocol::ErrorKind::Illegal);
        assert!(
            e.message.contains("`Action: [SUBMIT_DEAL] price:120`"),
            "{}",
            e.message
        );
        // A turn with no move keeps its own (format) error.
        assert_eq!(check_decided(None, Ok(&offer), "x"), None);
        assert!(Force::ALL
            .iter()
            .all(|f| Force::from_name(f.name()) == Some(*f)));
    }
}
