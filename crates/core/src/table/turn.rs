//! Reading a table turn: the two-party grammar (`protocol::parse`: Thought / Talk / Action,
//! tolerant about spelling, strict about format), with the table's two additions — a proposal
//! may be written in the games' notation (`[SUBMIT_DEAL] A1 B2 C4 D1 E5`, read as `A:A1 B:B2 …`),
//! and an acceptance names the offer it accepts (`[ACCEPT_DEAL] #3`). A seat that acts through
//! tools is read by the protocol's one tool reader, with the table's tools
//! (`protocol::ToolSet::Table`: `accept(offer)`).

use std::sync::LazyLock;

use regex::Regex;

use crate::game::Completion;
use crate::protocol::{
    judge_mode, openai_tools_of, parse, read_tool_turn, tool_call_for, Action, ActionKind,
    IssueSpec, Parsed, TermSpace, ToolSet, TurnError, TurnFormat,
};
use crate::scenario::TableScenario;
use crate::vocab::ToolCall;

/// An option written in the games' notation (`A1`), or as a pair (`A:A1`, `a = 1`): the issue
/// letter, the option's letter where a pair repeats it, and its 1-based number.
static PAPER_OPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b([A-Za-z])(?:\s*[:=]\s*([A-Za-z])?)?\s*([1-9][0-9]?)\b").expect("static regex")
});
static SUBMIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\[\s*submit[ _-]?deal\s*\]").expect("static regex"));
static ACCEPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\[\s*accept[ _-]?deal\s*\]").expect("static regex"));
/// The offer an acceptance names: `#3`, `offer 3`, `offer #3`.
static OFFER_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?:#|\boffer\s*#?\s*)(\d{1,9})\b").expect("static regex"));

/// The action line that accepts offer `id` (a table's proposal, a market's standing quote),
/// as the reader below reads it.
pub fn accept_line(id: u32) -> String {
    format!("{} #{id}", ActionKind::Accept.token())
}

/// One table turn as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TableMove {
    pub parsed: Parsed,
    /// The offer an `[ACCEPT_DEAL]` names.
    pub accepts: Option<u32>,
}

/// Read `completion` as a turn at `scenario`'s table by a seat asked to write in `asked`:
/// its tool calls with the table's tools, else its text; format-ok only in the way asked
/// (`protocol::judge_mode`, the two-party rule).
pub(crate) fn read_table_completion(
    scenario: &TableScenario,
    completion: &Completion,
    asked: TurnFormat,
) -> TableMove {
    let reasoning = completion.reasoning.as_deref();
    let called = !completion.tool_calls.is_empty();
    let mut read = if called {
        let (parsed, accepts) = read_tool_turn(
            &completion.tool_calls,
            &completion.text,
            scenario.term_space(),
            reasoning,
            ToolSet::Table,
        );
        TableMove { parsed, accepts }
    } else {
        read_table_turn(&scenario.issues, &completion.text, reasoning)
    };
    judge_mode(&mut read.parsed, asked, called);
    read
}

/// A table turn written as text (as the scripted party and the mock write it) as a seat acting
/// through the table's tools makes it: the Thought beside one call (`protocol`'s one writer of
/// a move's call). A text with no readable move makes a `reject` call.
pub fn as_table_tool_turn(issues: &[IssueSpec], text: &str, id: String) -> (String, ToolCall) {
    let read = read_table_turn(issues, text, None);
    let action = read.parsed.action.unwrap_or(Action::Reject);
    let call = tool_call_for(
        &action,
        read.accepts,
        read.parsed.talk.as_deref().unwrap_or(""),
        TermSpace::Issues(issues),
        id,
    );
    (read.parsed.thought.unwrap_or_default(), call)
}

/// The table's tools as an OpenAI-compatible chat request's `tools`, their terms `scenario`'s
/// issues: what a seat that acts through tools is sent.
pub fn table_tools(scenario: &TableScenario) -> serde_json::Value {
    openai_tools_of(scenario.term_space(), ToolSet::Table)
}

/// Read `text` (and the server's reasoning) as a turn at a table of `issues`.
pub(crate) fn read_table_turn(
    issues: &[IssueSpec],
    text: &str,
    server_reasoning: Option<&str>,
) -> TableMove {
    let normalized = games_notation(issues, text);
    let mut parsed = parse(&normalized, TermSpace::Issues(issues), server_reasoning);
    // The talk and thought are the model's own words, not the normalized ones.
    if normalized != text {
        let original = parse(text, crate::protocol::TermSpace::Price, server_reasoning);
        parsed.thought = original.thought;
        parsed.talk = original.talk;
    }
    let accepts = accepted_offer(&mut parsed, text);
    TableMove { parsed, accepts }
}

/// The offer an `[ACCEPT_DEAL]` in `text` names (`#3`, `offer 3`), read as `parsed` holds an
/// acceptance; an acceptance naming none is not a move (a format error). The one home of "an
/// acceptance names what it accepts", for a table's offers and a market's quotes alike.
pub(crate) fn accepted_offer(parsed: &mut Parsed, text: &str) -> Option<u32> {
    if parsed.action.as_ref().map(Action::kind) != Some(ActionKind::Accept) {
        return None;
    }
    let after = ACCEPT
        .find_iter(text)
        .last()
        .map_or("", |m| &text[m.end()..]);
    let id = OFFER_ID
        .captures(after)
        .and_then(|c| c[1].parse::<u32>().ok());
    if id.is_none() {
        parsed.action = None;
        parsed.format_ok = false;
        parsed.error = Some(TurnError::format(
            "[ACCEPT_DEAL] must name the offer it accepts: `[ACCEPT_DEAL] #3`",
        ));
    }
    id
}

/// `text` with the terms after its last `[SUBMIT_DEAL]` rewritten from the games' notation
/// (`A1`, `a 2`, `B=3`) into the grammar's pairs (`A:A1`), for the issues the game has; the
/// text before the token (thought, talk) is left as it is.
fn games_notation(issues: &[IssueSpec], text: &str) -> String {
    let Some(token) = SUBMIT.find_iter(text).last() else {
        return text.to_string();
    };
    let (head, terms) = text.split_at(token.end());
    let rewritten = PAPER_OPTION.replace_all(terms, |c: &regex::Captures<'_>| {
        let key = c[1].to_ascii_uppercase();
        let repeated = c.get(2).map(|m| m.as_str().to_ascii_uppercase());
        if issues.iter().any(|i| i.key == key) && repeated.as_ref().is_none_or(|r| *r == key) {
            format!("{key}:{key}{}", &c[3])
        } else {
            c[0].to_string()
        }
    });
    format!("{head}{rewritten}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorKind;
    use crate::table::tests::six_party;

    #[test]
    fn a_proposal_in_the_games_notation_reads_as_one_option_per_issue() {
        let s = six_party();
        let m = read_table_turn(
            &s.issues,
            "Thought: A1 is mine.\nTalk: I propose A1 and so on.\nAction: [SUBMIT_DEAL] A1 B2 C4 D1 E5",
            None,
        );
        assert!(m.parsed.format_ok, "{m:?}");
        let terms = m.parsed.action.as_ref().and_then(Action::terms).unwrap();
        assert_eq!(TableScenario::deal_of(terms), Some(vec![0, 1, 3, 0, 4]));
        assert_eq!(m.parsed.talk.as_deref(), Some("I propose A1 and so on."));
        // The grammar's own pairs read the same.
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: x\nAction: [SUBMIT_DEAL] a:a1 b=B2 c: C4 d:d1 e:E5",
            None,
        );
        let terms = m.parsed.action.as_ref().and_then(Action::terms).unwrap();
        assert_eq!(TableScenario::deal_of(terms), Some(vec![0, 1, 3, 0, 4]));
    }

    #[test]
    fn an_option_not_in_the_game_or_a_missing_issue_is_not_a_move() {
        let s = six_party();
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: x\nAction: [SUBMIT_DEAL] A9 B2 C4 D1 E5",
            None,
        );
        assert!(m.parsed.action.is_none(), "{m:?}");
        assert!(m.parsed.error.is_some());
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: x\nAction: [SUBMIT_DEAL] A1 B2 C4 D1",
            None,
        );
        assert!(m.parsed.action.is_none(), "{m:?}");
    }

    #[test]
    fn an_acceptance_names_its_offer() {
        let s = six_party();
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: fine\nAction: [ACCEPT_DEAL] #3",
            None,
        );
        assert_eq!(m.accepts, Some(3));
        assert!(m.parsed.format_ok);
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: fine\nAction: [ACCEPT_DEAL] offer 12",
            None,
        );
        assert_eq!(m.accepts, Some(12));
        let m = read_table_turn(
            &s.issues,
            "Thought: t\nTalk: fine\nAction: [ACCEPT_DEAL]",
            None,
        );
        assert_eq!(
            m.parsed.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::Format)
        );
        assert!(m.parsed.action.is_none());
    }
}
