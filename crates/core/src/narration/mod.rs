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
//! - the one rule of a narrated turn: it plays the decided move ([`judge`]), or it is a
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
    /// The narrator's words were cut at its first action label (after any reasoning) and the
    /// decided action line written after them; in token-exact mode its ids follow the sampled
    /// ones, marked forced (the turn's `tokens.forced_from`) so a trainer masks them.
    #[default]
    Appended,
    /// The endpoint's constrained decoding held the action line to the decided one (the
    /// narrator's `constrain`: a GBNF grammar for llama.cpp, a regex for vLLM).
    Grammar,
    /// The narrator was asked to end with the decided action line and wrote it itself; the
    /// engine checks it ([`judge`]).
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

/// A move as a rulebook reads it: the action, and the offer an acceptance names where the
/// rulebook numbers its offers (a table's `[ACCEPT_DEAL] #3`; `None` in two-party games).
pub type Move<'a> = (&'a Action, Option<u32>);

/// The rule of a narrated turn: the move read from it is the decided move (`decided`, read
/// from [`Narration::decided`] by the rulebook's own reader), or the turn cannot be used — an
/// `illegal` error that names both, so the narrator is corrected and asked again, then
/// forfeits, as any seat whose turn cannot be used. A turn already unusable keeps its own
/// error. Never rewritten to the decided move: what the narrator wrote is what is played.
fn check_decided(
    played: Option<Move<'_>>,
    decided: Result<Move<'_>, &TurnError>,
    decided_line: &str,
    format: TurnFormat,
) -> Option<TurnError> {
    let played = played?;
    let line = crate::protocol::action_part(decided_line, format);
    match decided {
        Err(e) => Some(TurnError::illegal(format!(
            "the decided move `{decided_line}` cannot be read: {}",
            e.message
        ))),
        Ok(decided) if decided != played => Some(TurnError::illegal(format!(
            "this turn's action is not the decided move: end with exactly `{line}`"
        ))),
        Ok(_) => None,
    }
}

/// A narrated seat writes its turn as text: the one refusal of a seat that acts through tools,
/// which every face that seats a narrator gives.
pub fn writes_text(format: TurnFormat) -> Result<(), &'static str> {
    match format {
        TurnFormat::Tools => Err(
            "a narrated seat writes its turn as text: give it the tagged or \
                                  xml format, not tools",
        ),
        TurnFormat::Tagged | TurnFormat::Xml => Ok(()),
    }
}

/// A narrated turn read by its rulebook: where its Talk contradicts the decided move (kept on
/// `narration`, [`contradictions`]) and whether it plays that move (`check_decided`): the one
/// place both rulebooks judge a narrated turn, whether or not the turn can be used. `decided`
/// is the decided line as the rulebook reads it; `accepted` and `known` are as
/// [`contradictions`] takes them.
pub fn judge(
    narration: &mut Narration,
    decided: Result<Move<'_>, &TurnError>,
    played: Option<Move<'_>>,
    talk: Option<&str>,
    (accepted, known): (Option<&crate::protocol::Terms>, &[i64]),
    format: TurnFormat,
) -> Option<TurnError> {
    narration.contradictions = match decided {
        Ok((decided, _)) => contradictions(talk.unwrap_or(""), decided, accepted, known),
        Err(_) => Vec::new(),
    };
    check_decided(played, decided, &narration.decided, format)
}

/// What is written after the narrator's words (cut before any action label it wrote,
/// [`words_end`]) so the turn ends with the decided action line: the label and the line, on a
/// line of their own.
pub fn forced_text(words: &str, format: TurnFormat, line: &str) -> String {
    let newline = if words.is_empty() || words.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{newline}{}", crate::protocol::action_part(line, format))
}

/// A narrator's reply as an appended turn ([`Force::Appended`], text): its words up to
/// [`words_end`], then the decided `line` ([`forced_text`]). The one rule the runtime's
/// narrated player and the Python seat write a text narrator's turn by.
pub fn appended(reply: &str, format: TurnFormat, line: &str) -> String {
    let words = &reply[..words_end(reply, format)];
    format!("{words}{}", forced_text(words, format, line))
}

/// Where a narrator's words end ([`Force::Appended`]): at the first action label it wrote after
/// any reasoning (`</think>`) — `Action:` in any case, plural or emphasised, at a line's start
/// (as the parser reads labels), or inside a line where an action token follows it (`Talk:
/// fine. Action: [TALK]`), never in prose (`I must take action: …`, `transaction:`);
/// `<action>` in XML — or at the end of its text. Its own action line, if it wrote one, is dropped, never
/// read: the decided line follows ([`forced_text`]).
pub fn words_end(text: &str, format: TurnFormat) -> usize {
    // At a line's start, a label as the parser reads it; inside a line, only one an action
    // token follows ("Talk: fine. Action: [TALK]"), never prose ("I must take action: …").
    static LINE_START: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| crate::protocol::label_regex(&["action"]));
    static IN_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)[ \t][*_]*actions?[ \t]*[*_]*[ \t]*[:：][ \t]*[*_]*\[")
            .expect("static regex")
    });
    static XML: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)<\s*action\s*>").expect("static regex")
    });
    let from = text.rfind("</think>").map_or(0, |at| at + "</think>".len());
    let rest = &text[from..];
    let label = match format {
        TurnFormat::Xml => XML.find(rest).map(|m| m.start()),
        TurnFormat::Tagged | TurnFormat::Tools => [LINE_START.find(rest), IN_LINE.find(rest)]
            .into_iter()
            .flatten()
            .map(|m| m.start())
            .min(),
    };
    label.map_or(text.len(), |at| from + at)
}

/// How many of a token-exact narrator's sampled ids to keep ([`Force::Appended`]), by the text
/// of each id (`pieces`): those that spell its words, up to [`words_end`] — so an action line it
/// wrote, and an end-of-turn id after its text, are dropped. The ids to keep and the bytes of
/// `text` they spell (short of the label by whatever the id that holds it began with: a
/// newline, which [`forced_text`] writes again); `None` where the pieces do not spell the
/// words (a server that gives no pieces, or pieces of other text): the caller cannot cut.
pub fn sampled_words(pieces: &[String], text: &str, format: TurnFormat) -> Option<(usize, usize)> {
    if pieces.is_empty() {
        return None;
    }
    let end = words_end(text, format);
    let (mut spelled, mut kept) = (0, pieces.len());
    for (i, piece) in pieces.iter().enumerate() {
        // The id that reaches past the words (or an empty one after them) is the first dropped.
        if spelled + piece.len() > end || (spelled == end && piece.is_empty()) {
            kept = i;
            break;
        }
        spelled += piece.len();
    }
    // The ids kept spell the text up to where they stop, and the first one dropped goes on
    // with the words' rest (a newline before the label) or begins after them.
    let goes_on = match pieces.get(kept) {
        Some(dropped) => text.get(spelled..end).is_some_and(|rest| {
            rest.trim().is_empty() && dropped.as_bytes().starts_with(rest.as_bytes())
        }),
        None => spelled == end,
    };
    (goes_on && text.as_bytes().get(..spelled) == Some(pieces[..kept].concat().as_bytes()))
        .then_some((kept, spelled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{parse, Action, TermSpace, Terms};

    fn pieces(of: &[&str]) -> Vec<String> {
        of.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn a_narrators_words_end_at_its_first_action_label_after_its_reasoning() {
        let tagged = TurnFormat::Tagged;
        assert_eq!(words_end("Thought: a\nTalk: b\nAction: [TALK]", tagged), 19);
        assert_eq!(
            words_end("Thought: a\nTalk: b. **Actions**: [TALK]", tagged),
            19
        );
        // Prose is not a label.
        let prose = "Thought: I must take action: be firm.\nTalk: Sixty. My action: hold.";
        assert_eq!(words_end(prose, tagged), prose.len());
        assert_eq!(words_end("Thought: a\nTalk: b", tagged), 18);
        // Not inside a word, and not inside the reasoning.
        assert_eq!(words_end("Talk: my transaction: done", tagged), 26);
        let thinking = "<think>Action: maybe</think>\nTalk: b\nAction: x";
        assert_eq!(
            &thinking[..words_end(thinking, tagged)],
            "<think>Action: maybe</think>\nTalk: b\n"
        );
        assert_eq!(
            words_end("<talk>b</talk><action>x</action>", TurnFormat::Xml),
            14
        );
    }

    #[test]
    fn a_narrators_ids_are_cut_before_the_one_that_holds_its_action_label() {
        let sampled = pieces(&[
            "Thought: ok",
            "\nTalk: $9",
            "\nAct",
            "ion: [REJ",
            "ECT_DEAL]",
        ]);
        let text = sampled.concat();
        let words = "Thought: ok\nTalk: $9".len();
        assert_eq!(
            sampled_words(&sampled, &text, TurnFormat::Tagged),
            Some((2, words)),
            "\nAct straddles"
        );
        let clean = pieces(&["Thought: ok", "\nTalk: $9\n", "Action", ": [REJECT_DEAL]"]);
        assert_eq!(
            sampled_words(&clean, &clean.concat(), TurnFormat::Tagged),
            Some((2, words + 1))
        );
        // An end-of-turn id after the words (vLLM's, absent from the text) is dropped.
        let ended = pieces(&["Thought: ok", "\nTalk: $9", "<|im_end|>"]);
        assert_eq!(
            sampled_words(&ended, "Thought: ok\nTalk: $9", TurnFormat::Tagged),
            Some((2, words))
        );
        let empty_end = pieces(&["Thought: ok", "\nTalk: $9", ""]);
        assert_eq!(
            sampled_words(&empty_end, "Thought: ok\nTalk: $9", TurnFormat::Tagged),
            Some((2, words))
        );
        // All words and nothing after: every id kept.
        assert_eq!(
            sampled_words(&pieces(&["Talk: a", " b"]), "Talk: a b", TurnFormat::Tagged),
            Some((2, 9))
        );
        // A dropped id that would take words with it: no cut.
        let taking = pieces(&["Talk: $", "9.\nAction", ": [TALK]"]);
        assert_eq!(
            sampled_words(&taking, &taking.concat(), TurnFormat::Tagged),
            None
        );
        // Pieces that do not spell the text: no cut.
        assert_eq!(sampled_words(&clean, "other", TurnFormat::Tagged), None);
    }

    #[test]
    fn the_decided_line_follows_the_words_on_a_line_of_its_own() {
        let line = "[SUBMIT_DEAL] price:120";
        for words in [
            "Thought: low.\nTalk: How about $120?\n",
            "Thought: low.\nTalk: How about $120?",
        ] {
            let turn = format!("{words}{}", forced_text(words, TurnFormat::Tagged, line));
            let read = parse(&turn, TermSpace::Price, None);
            assert!(read.format_ok, "{turn}");
            assert_eq!(read.action, Some(Action::Submit(Terms::Price(12_000))));
        }
        let xml = "<thought>low</thought>\n<talk>$120?</talk>";
        let turn = format!("{xml}{}", forced_text(xml, TurnFormat::Xml, line));
        assert!(parse(&turn, TermSpace::Price, None).format_ok, "{turn}");
    }

    #[test]
    fn a_narrated_turn_plays_its_decided_move_or_is_refused() {
        let offer = Action::Submit(Terms::Price(12_000));
        assert_eq!(
            check_decided(
                Some((&offer, None)),
                Ok((&offer, None)),
                "[SUBMIT_DEAL] price:120",
                TurnFormat::Tagged
            ),
            None
        );
        let other = Action::Submit(Terms::Price(13_000));
        let e = check_decided(
            Some((&other, None)),
            Ok((&offer, None)),
            "[SUBMIT_DEAL] price:120",
            TurnFormat::Tagged,
        )
        .expect("another price is refused");
        assert_eq!(e.kind, crate::protocol::ErrorKind::Illegal);
        assert!(
            e.message.contains("`Action: [SUBMIT_DEAL] price:120`"),
            "{}",
            e.message
        );
        // A turn with no move keeps its own (format) error.
        assert_eq!(
            check_decided(None, Ok((&offer, None)), "x", TurnFormat::Tagged),
            None
        );
        let xml = check_decided(
            Some((&other, None)),
            Ok((&offer, None)),
            "[SUBMIT_DEAL] price:120",
            TurnFormat::Xml,
        )
        .expect("refused");
        assert!(
            xml.message
                .contains("`<action>[SUBMIT_DEAL] price:120</action>`"),
            "{}",
            xml.message
        );
        assert!(Force::ALL
            .iter()
            .all(|f| Force::from_name(f.name()) == Some(*f)));
    }
}
