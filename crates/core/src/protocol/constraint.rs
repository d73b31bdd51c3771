//! The turn grammar as a decoding constraint: a GBNF grammar (llama.cpp's `grammar` field) or a
//! regular expression (vLLM's `structured_outputs.regex`, or the older `guided_regex`) that
//! admits exactly the well-formed turns of one seat — three parts in order, one action, terms of
//! this scenario.
//!
//! Small models rarely follow the format from the prompt alone; constrained decoding makes every
//! turn readable while leaving the words and the choice of move to the model.
//!
//! A server may ignore a constraint field it does not know and still answer 200 (vLLM 0.12 and
//! later do so for `guided_regex`), so every constrained completion is checked here against the
//! language it was sent ([`admits`]); the record keeps the verdict ([`ConstraintCheck`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::action::ActionKind;
use super::parse::TurnFormat;
use super::terms::{IssueRange, TermSpace};

/// Longest free-text part (Thought, Talk) a constrained turn may have, in characters. Capping it
/// keeps a repeating line from eating the whole token budget.
pub(crate) const MAX_TEXT: usize = 150;

/// Integer ranges up to this size are spelled out value by value; larger ones allow any digits
/// (an out-of-range value is then an illegal move, still readable).
const ENUMERATE_UP_TO: i64 = 200;

/// The pieces both notations share, in the notation's own syntax.
/// What differs between GBNF and regular expressions: literals, alternation and sequence.
/// Character classes, bounded repetition and `?` are written alike in both.
trait Notation {
    fn literal(&self, text: &str) -> String;
    fn alternatives(&self, options: &[String]) -> String;
    /// Pieces in sequence.
    fn seq(&self, pieces: &[String]) -> String;

    fn digits(&self, min: usize, max: usize) -> String {
        format!("[0-9]{{{min},{max}}}")
    }
    /// One line of free text, at most [`MAX_TEXT`] characters; no `<` inside XML tags.
    fn text(&self, forbid_lt: bool) -> String {
        let class = if forbid_lt { "[^\\n<]" } else { "[^\\n]" };
        format!("{class}{{1,{MAX_TEXT}}}")
    }
    fn optional(&self, inner: &str) -> String {
        format!("({inner})?")
    }
}

struct Gbnf;
struct Regex;

impl Notation for Gbnf {
    fn literal(&self, text: &str) -> String {
        format!(
            "\"{}\"",
            text.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        )
    }
    fn alternatives(&self, options: &[String]) -> String {
        format!("({})", options.join(" | "))
    }
    fn seq(&self, pieces: &[String]) -> String {
        pieces.join(" ")
    }
}

impl Notation for Regex {
    fn literal(&self, text: &str) -> String {
        regex::escape(text).replace('\n', "\\n")
    }
    fn alternatives(&self, options: &[String]) -> String {
        format!("({})", options.join("|"))
    }
    fn seq(&self, pieces: &[String]) -> String {
        pieces.concat()
    }
}

fn whole_numbers<N: Notation>(n: &N, min: i64, max: i64) -> String {
    if max - min <= ENUMERATE_UP_TO {
        n.alternatives(
            &(min..=max)
                .map(|v| n.literal(&v.to_string()))
                .collect::<Vec<_>>(),
        )
    } else {
        n.digits(1, 12)
    }
}

fn terms<N: Notation>(n: &N, space: TermSpace<'_>) -> String {
    let parts: Vec<String> = match space {
        TermSpace::Price => {
            let cents = n.seq(&[n.literal("."), n.digits(2, 2)]);
            vec![n.seq(&[n.literal("price:"), n.digits(1, 9), n.optional(&cents)])]
        }
        TermSpace::Items(items) => items
            .iter()
            .map(|i| {
                n.seq(&[
                    n.literal(&format!("{}:", i.name)),
                    whole_numbers(n, 0, i64::from(i.count)),
                ])
            })
            .collect(),
        TermSpace::Issues(issues) => issues
            .iter()
            .map(|i| {
                let value = match &i.range {
                    IssueRange::Integer { min, max } => whole_numbers(n, *min, *max),
                    IssueRange::Discrete { options } => {
                        n.alternatives(&options.iter().map(|o| n.literal(o)).collect::<Vec<_>>())
                    }
                };
                n.seq(&[n.literal(&format!("{}:", i.key)), value])
            })
            .collect(),
        TermSpace::Bundle(spec) => {
            let cents = n.seq(&[n.literal("."), n.digits(2, 2)]);
            let in_out = n.alternatives(&[n.literal("in"), n.literal("out")]);
            std::iter::once(n.seq(&[n.literal("price:"), n.digits(1, 9), n.optional(&cents)]))
                .chain(
                    super::bundle::part_keys(spec)
                        .into_iter()
                        .map(|key| n.seq(&[n.literal(&format!("{key}:")), in_out.clone()])),
                )
                .collect()
        }
        // A selling price per ticket or `unchanged`; whether a price is at most the ticket's
        // current one is the parser's range check, as a price game's bounds are.
        TermSpace::Tickets(tickets) => tickets
            .iter()
            .map(|t| {
                let cents = n.seq(&[n.literal("."), n.digits(2, 2)]);
                let price = n.seq(&[n.digits(1, 9), n.optional(&cents)]);
                let value = n.alternatives(&[n.literal(super::UNCHANGED), price]);
                n.seq(&[n.literal(&format!("{}:", t.key)), value])
            })
            .collect(),
    };
    let mut pieces = Vec::new();
    for (k, part) in parts.into_iter().enumerate() {
        if k > 0 {
            pieces.push(n.literal(" "));
        }
        pieces.push(part);
    }
    n.seq(&pieces)
}

fn action<N: Notation>(n: &N, space: TermSpace<'_>, format: TurnFormat, accept: bool) -> String {
    let moves: Vec<String> = ActionKind::legal(format, accept)
        .into_iter()
        .map(|kind| match kind {
            ActionKind::Submit => n.seq(&[n.literal("[SUBMIT_DEAL] "), terms(n, space)]),
            other => n.literal(other.token()),
        })
        .collect();
    n.alternatives(&moves)
}

fn turn<N: Notation>(n: &N, space: TermSpace<'_>, format: TurnFormat, accept: bool) -> String {
    turn_around(n, format, action(n, space, format, accept))
}

/// A turn whose action line is `act` (a pattern): free Thought and Talk around it.
fn turn_around<N: Notation>(n: &N, format: TurnFormat, act: String) -> String {
    let text = n.text(format == TurnFormat::Xml);
    let l = |s: &str| n.literal(s);
    match format {
        // A seat that acts through tools is never constrained (a model player refuses the
        // pair at its first call); its text would be the tagged spelling.
        TurnFormat::Tagged | TurnFormat::Tools => n.seq(&[
            l("Thought: "),
            text.clone(),
            l("\nTalk: "),
            text,
            l("\nAction: "),
            act,
        ]),
        TurnFormat::Xml => n.seq(&[
            l("<thought>"),
            text.clone(),
            l("</thought>\n<talk>"),
            text,
            l("</talk>\n<action>"),
            act,
            l("</action>"),
        ]),
    }
}

/// A GBNF grammar (llama.cpp) for one seat's next turn. `accept` says whether ACCEPT is legal
/// now (the counterpart's offer is on the table); when it is not, the grammar leaves it out.
pub(crate) fn gbnf(space: TermSpace<'_>, format: TurnFormat, accept: bool) -> String {
    format!("root ::= {}\n", turn(&Gbnf, space, format, accept))
}

/// A regular expression (vLLM guided decoding) for one seat's next turn; see [`gbnf`].
pub(crate) fn regex(space: TermSpace<'_>, format: TurnFormat, accept: bool) -> String {
    turn(&Regex, space, format, accept)
}

/// How a seat's turn constraint reaches the endpoint: the request field that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Constrain {
    /// No constraint: the prompt alone asks for the format.
    #[default]
    None,
    /// llama.cpp's `grammar` field (GBNF).
    Gbnf,
    /// vLLM's `structured_outputs: {regex: …}` object (vLLM 0.10.2 and later; the only spelling
    /// vLLM 0.12 and later read). The turn language is regular, so a regex always says it.
    Vllm,
    /// vLLM's older top-level `guided_regex` field, read by vLLM up to 0.11 and silently
    /// ignored by 0.12 and later.
    VllmLegacy,
}

impl Constrain {
    /// The names a config may use, for error messages.
    const NAMES: &'static str = "none, gbnf, vllm, vllm_legacy";

    /// Read a config value; a name from an older dealgym is refused with what to write instead.
    pub fn from_name(name: &str) -> Result<Constrain, String> {
        match name {
            "none" => Ok(Constrain::None),
            "gbnf" => Ok(Constrain::Gbnf),
            "vllm" => Ok(Constrain::Vllm),
            "vllm_legacy" => Ok(Constrain::VllmLegacy),
            "vllm_regex" | "vllm_structured" => Err(format!(
                "constrain = \"{name}\" is no longer accepted: write constrain = \"vllm\" \
                 (sends structured_outputs, which vLLM 0.10.2 and later read), or \
                 constrain = \"vllm_legacy\" for a vLLM before 0.12 that needs guided_regex \
                 (vLLM 0.12 and later ignore guided_regex without an error)"
            )),
            other => Err(format!(
                "unknown constrain = \"{other}\" (expected one of {})",
                Constrain::NAMES
            )),
        }
    }

    /// The constraint of a narrated turn ([`crate::narration::Force::Grammar`]): free Thought
    /// and Talk, then exactly the decided `action_line`; the same field names as [`fields`](Self::fields).
    pub fn narration_fields(
        self,
        format: TurnFormat,
        action_line: &str,
    ) -> serde_json::Map<String, serde_json::Value> {
        self.carry(
            || {
                let grammar = turn_around(&Gbnf, format, Gbnf.literal(action_line));
                format!("root ::= {grammar}\n")
            },
            || narration_regex(format, action_line),
        )
    }

    /// The request fields that carry the constraint for one seat's next turn; ACCEPT is left
    /// out when there is nothing to accept.
    pub fn fields(
        self,
        space: TermSpace<'_>,
        format: TurnFormat,
        accept: bool,
    ) -> serde_json::Map<String, serde_json::Value> {
        self.carry(
            || gbnf(space, format, accept),
            || regex(space, format, accept),
        )
    }

    /// The request field this constraint is sent in, holding the grammar or the regex of the
    /// turn language: the one home of which server reads which field.
    fn carry(
        self,
        gbnf: impl FnOnce() -> String,
        regex: impl FnOnce() -> String,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        match self {
            Constrain::None => {}
            Constrain::Gbnf => {
                m.insert("grammar".into(), gbnf().into());
            }
            Constrain::Vllm => {
                m.insert(
                    "structured_outputs".into(),
                    serde_json::json!({ "regex": regex() }),
                );
            }
            Constrain::VllmLegacy => {
                m.insert("guided_regex".into(), regex().into());
            }
        }
        m
    }
}

/// It reads the names [`Serialize`] writes (the derived schema's), and names the retired
/// spellings in its error.
impl<'de> Deserialize<'de> for Constrain {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Constrain::from_name(&name).map_err(serde::de::Error::custom)
    }
}

/// Whether a constrained completion is one its constraint admits. Recorded on the turn; a
/// completion outside the language it was sent with means the server ignored the constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConstraintCheck {
    /// The field the constraint was sent in.
    pub via: Constrain,
    /// Whether the completion is a turn of the constraint's language; for a `cut` one, whether
    /// it is the beginning of one (all a server that honoured the constraint can give when the
    /// token limit stops it).
    pub admitted: bool,
    /// Sampling stopped at the token limit (`finish_reason: "length"`): the completion cannot
    /// be a whole turn, whatever the constraint, so `admitted` judges it as a beginning. A
    /// malformed turn, but the limit's doing, not the server's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl ConstraintCheck {
    /// The check of one completion sampled under the constraint for (`space`, `format`,
    /// `accept`) and sent `via` a request field; `cut` when sampling stopped at the token
    /// limit. `None` only where [`admits`] claims nothing.
    pub fn of(
        via: Constrain,
        space: TermSpace<'_>,
        format: TurnFormat,
        accept: bool,
        text: &str,
        cut: bool,
    ) -> Option<ConstraintCheck> {
        ConstraintCheck::of_pattern(via, regex(space, format, accept), text, cut)
    }

    /// The check of a narrated turn sampled under the narration constraint of `action_line`
    /// ([`Constrain::narration_fields`]), as [`of`](Self::of) checks a seat's turn.
    pub fn of_narration(
        via: Constrain,
        format: TurnFormat,
        action_line: &str,
        text: &str,
        cut: bool,
    ) -> Option<ConstraintCheck> {
        ConstraintCheck::of_pattern(via, narration_regex(format, action_line), text, cut)
    }

    /// A completion checked against the turn language `pattern`: whole, or as a beginning when
    /// `cut`.
    fn of_pattern(
        via: Constrain,
        pattern: String,
        text: &str,
        cut: bool,
    ) -> Option<ConstraintCheck> {
        let admitted = if cut {
            pattern_begins(pattern, text)
        } else {
            pattern_admits(pattern, text)
        };
        admitted.map(|admitted| ConstraintCheck { via, admitted, cut })
    }
}

/// The regex of a narrated turn: free Thought and Talk, then exactly `action_line`.
fn narration_regex(format: TurnFormat, action_line: &str) -> String {
    turn_around(&Regex, format, Regex.literal(action_line))
}

/// Whether `text` is a turn the constraint for (`space`, `format`, `accept`) admits — the same
/// language whether it was sent as GBNF or as a regex, since both are built from one
/// description here. Checked with the `regex` crate over the whole text; `None` only if the
/// pattern is too large for the regex engine's limits (then nothing is claimed either way).
pub fn admits(space: TermSpace<'_>, format: TurnFormat, accept: bool, text: &str) -> Option<bool> {
    pattern_admits(regex(space, format, accept), text)
}

/// Whether `text` is whole in the turn language `pattern` ([`admits`]).
fn pattern_admits(pattern: String, text: &str) -> Option<bool> {
    // A seat asks with the same few patterns all episode, and a run with few scenarios: compile
    // each once (a Job Interview pattern takes far longer to compile than to match).
    static COMPILED: std::sync::LazyLock<
        crate::cache::BoundedCache<String, Option<std::sync::Arc<::regex::Regex>>>,
    > = std::sync::LazyLock::new(|| crate::cache::BoundedCache::new(1024));
    let pattern = format!("^(?:{pattern})$");
    let compiled = COMPILED.get_or_insert_with(pattern.clone(), || {
        ::regex::RegexBuilder::new(&pattern)
            .size_limit(1 << 26)
            .build()
            .ok()
            .map(std::sync::Arc::new)
    });
    compiled.map(|re| re.is_match(text))
}

/// Whether `text` is the beginning of a turn the constraint for (`space`, `format`, `accept`)
/// admits: some continuation of it is in the language. What a completion cut at the token
/// limit must be if the server honoured the constraint. Read with a lazy DFA over the same
/// pattern as [`admits`]: a prefix of the language is exactly a text that never reaches the
/// dead state (every state of the pattern's automaton leads on to a match). `None` where the
/// automaton outgrows its limits (nothing is claimed).
pub fn begins(space: TermSpace<'_>, format: TurnFormat, accept: bool, text: &str) -> Option<bool> {
    pattern_begins(regex(space, format, accept), text)
}

/// Whether `text` begins a turn of the language `pattern` ([`begins`]).
fn pattern_begins(pattern: String, text: &str) -> Option<bool> {
    use regex_automata::hybrid::dfa::DFA;
    static COMPILED: std::sync::LazyLock<
        crate::cache::BoundedCache<String, Option<std::sync::Arc<DFA>>>,
    > = std::sync::LazyLock::new(|| crate::cache::BoundedCache::new(64));
    let dfa = COMPILED.get_or_insert_with(pattern.clone(), || {
        begins_dfa(&pattern).map(std::sync::Arc::new)
    })?;
    text_begins(&dfa, text)
}

/// The lazy DFA [`begins`] runs: every match kept (`MatchKind::All`), so a text that completes
/// one alternative still continues into a longer one (under leftmost-first, the DFA drops the
/// lower-priority threads once a match is seen, and `a` of `(a|ab)` would make `ab` dead).
fn begins_dfa(pattern: &str) -> Option<regex_automata::hybrid::dfa::DFA> {
    use regex_automata::hybrid::dfa::DFA;
    DFA::builder()
        .configure(DFA::config().match_kind(regex_automata::MatchKind::All))
        .thompson(regex_automata::nfa::thompson::Config::new().nfa_size_limit(Some(1 << 26)))
        .build(pattern)
        .ok()
}

/// Whether `text` never takes `dfa` to its dead state, from the anchored start.
fn text_begins(dfa: &regex_automata::hybrid::dfa::DFA, text: &str) -> Option<bool> {
    use regex_automata::{Anchored, Input};
    let mut cache = dfa.create_cache();
    let input = Input::new(text).anchored(Anchored::Yes);
    let mut state = dfa.start_state_forward(&mut cache, &input).ok()?;
    for &byte in text.as_bytes() {
        state = dfa.next_state(&mut cache, state, byte).ok()?;
        if state.is_dead() {
            return Some(false);
        }
        if state.is_quit() {
            return None;
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{bundle_spec, dnd_items, job_issues};
    use crate::protocol::parse;

    #[test]
    fn a_text_that_completes_one_alternative_still_begins_a_longer_one() {
        let dfa = begins_dfa("(a|ab)c").unwrap();
        for text in ["", "a", "ab", "abc", "ac"] {
            assert_eq!(text_begins(&dfa, text), Some(true), "{text:?}");
        }
        assert_eq!(text_begins(&dfa, "b"), Some(false));
        assert_eq!(text_begins(&dfa, "abb"), Some(false));
        let dfa = begins_dfa("(Sales|Sales Lead)").unwrap();
        assert_eq!(text_begins(&dfa, "Sales Le"), Some(true));
    }

    #[test]
    fn a_cut_completion_is_judged_as_the_beginning_of_a_turn() {
        let (items, issues) = (dnd_items(&[4, 4, 4]), job_issues());
        let whole = "Thought: I want more.\nTalk: How about this?\nAction: [SUBMIT_DEAL] ";
        let cases: Vec<(TermSpace, &str)> = vec![
            (TermSpace::Price, "price:1250.50"),
            (TermSpace::Items(&items), "book:4 hat:0 ball:2"),
            (
                TermSpace::Issues(&issues),
                "salary:35 company:Apple position:Sales holiday:4",
            ),
        ];
        for (space, terms) in cases {
            let turn = format!("{whole}{terms}");
            // Every beginning of a well-formed turn begins one; the whole turn too.
            for end in (0..=turn.len()).filter(|&i| turn.is_char_boundary(i)) {
                assert_eq!(
                    begins(space, TurnFormat::Tagged, false, &turn[..end]),
                    Some(true),
                    "{:?}",
                    &turn[..end]
                );
            }
            // What no continuation can mend does not: a wrong literal, a second line of Talk,
            // a Talk longer than the grammar allows, an action not legal now.
            let long = format!("Thought: x\nTalk: {}", "y".repeat(MAX_TEXT + 1));
            for bad in [
                "Thought: x\nTALK: y",
                "Thought: x\nTalk: y\nmore talk",
                long.as_str(),
                "Thought: x\nTalk: y\nAction: [ACCEPT_DEAL]",
            ] {
                assert_eq!(
                    begins(space, TurnFormat::Tagged, false, bad),
                    Some(false),
                    "{bad:?}"
                );
            }
            let accept = "Thought: x\nTalk: y\nAction: [ACCEPT_DEAL]";
            assert_eq!(begins(space, TurnFormat::Tagged, true, accept), Some(true));
        }
        // The check of a completion: a cut one is judged as a beginning, a finished one whole.
        let cut = "Thought: I want more.\nTalk: How ab";
        let check = |cut_flag| {
            ConstraintCheck::of(
                Constrain::Gbnf,
                TermSpace::Price,
                TurnFormat::Tagged,
                true,
                cut,
                cut_flag,
            )
        };
        assert_eq!(
            check(true),
            Some(ConstraintCheck {
                via: Constrain::Gbnf,
                admitted: true,
                cut: true
            })
        );
        assert_eq!(
            check(false),
            Some(ConstraintCheck {
                via: Constrain::Gbnf,
                admitted: false,
                cut: false
            })
        );
        // `cut` is written only when true: an uncut check's record is as before.
        assert_eq!(
            serde_json::to_string(&check(false).unwrap()).unwrap(),
            r#"{"via":"gbnf","admitted":false}"#
        );
    }

    #[test]
    fn the_regex_admits_well_formed_turns_and_nothing_else() {
        let (items, issues) = (dnd_items(&[4, 4, 4]), job_issues());
        let bundle = bundle_spec();
        let hotel = crate::fixtures::hotel();
        let cases: Vec<(TermSpace, &str, &str)> = vec![
            (
                TermSpace::Bundle(&bundle),
                "price:61000 tv_stand:out extension_cord:in delivery:out",
                "price:61000 tv_stand:out extension_cord:in",
            ),
            (
                hotel.term_space(),
                "t1:152 t2:unchanged",
                "t1:cheap t2:unchanged",
            ),
            (
                TermSpace::Items(&items),
                "book:4 hat:0 ball:2",
                "book:5 hat:0 ball:2",
            ),
            (TermSpace::Price, "price:1250.50", "price:12,50"),
            (
                TermSpace::Issues(&issues),
                "salary:35 company:Apple position:Sales holiday:4",
                "salary:51 company:Apple position:Sales holiday:4",
            ),
        ];
        for (space, good, bad) in cases {
            for format in [TurnFormat::Tagged, TurnFormat::Xml] {
                let re =
                    ::regex::Regex::new(&format!("^(?:{})$", regex(space, format, true))).unwrap();
                let no_accept =
                    ::regex::Regex::new(&format!("^(?:{})$", regex(space, format, false))).unwrap();
                let turn = |action: &str| {
                    match format {
                    TurnFormat::Tagged => format!("Thought: I want more.\nTalk: How about this?\nAction: {action}"),
                    TurnFormat::Xml => format!(
                        "<thought>I want more.</thought>\n<talk>How about this?</talk>\n<action>{action}</action>"
                    ),
                    TurnFormat::Tools => unreachable!("only the text spellings are constrained"),
                }
                };
                let ok = turn(&format!("[SUBMIT_DEAL] {good}"));
                assert!(re.is_match(&ok), "{format:?} {good}");
                let p = parse(&ok, space, None);
                assert!(
                    p.format_ok && p.error.is_none(),
                    "what the constraint admits is format-ok"
                );
                assert!(re.is_match(&turn("[ACCEPT_DEAL]")));
                assert!(
                    !no_accept.is_match(&turn("[ACCEPT_DEAL]")),
                    "no ACCEPT without an offer"
                );
                assert!(no_accept.is_match(&ok));
                assert!(
                    !re.is_match(&turn(&format!("[SUBMIT_DEAL] {bad}"))),
                    "{format:?} {bad}"
                );
                assert!(!re.is_match(&turn("[ACCEPT_DEAL] [REJECT_DEAL]")));
                assert_eq!(re.is_match(&turn("[TALK]")), format == TurnFormat::Xml);
                let long = "x".repeat(MAX_TEXT + 1);
                assert!(!re.is_match(&turn("[ACCEPT_DEAL]").replace("I want more.", &long)));
            }
        }
    }

    #[test]
    fn gbnf_has_a_root_and_quotes_its_literals() {
        let items = dnd_items(&[4, 4, 4]);
        let g = gbnf(TermSpace::Items(&items), TurnFormat::Tagged, true);
        assert!(
            g.starts_with("root ::= \"Thought: \" [^\\n]{1,150} \"\\nTalk: \""),
            "{g}"
        );
        assert!(
            g.contains("\"[SUBMIT_DEAL] \" \"book:\" (\"0\" | \"1\" | \"2\" | \"3\" | \"4\")"),
            "{g}"
        );
    }
}
