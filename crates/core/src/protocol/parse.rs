//! Reading a raw completion: tolerant about spelling, strict about the format judgement.

use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::action::{Action, ActionKind, TurnError};
use super::terms::{parse_terms, TermSpace, TermsError};

/// How a seat is asked to play its turns: one of the two spellings of the text, or through tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnFormat {
    /// `Thought: … / Talk: … / Action: …`
    #[default]
    Tagged,
    /// `<thought>…</thought><talk>…</talk><action>…</action>`
    Xml,
    /// Tool calls (`make_offer`, `accept`, `reject`, `walk_away`, `say`): the
    /// seat's requests carry the tools, its moves are read from the calls it makes. A reply
    /// without a call is read as text.
    Tools,
}

/// Everything read from one completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Parsed {
    /// A `<think>` block or the server's `reasoning_content`: kept, never forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub talk: Option<String>,
    /// The move, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Why no move could be read (format) or why the terms are not allowed (illegal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    /// All three parts present once, in order, with exactly one well-formed action token.
    pub format_ok: bool,
    /// Something a real model did that a readable turn should not hide (see [`ParseNote`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<ParseNote>,
    /// The dialogue-act label written at the end of the Action line (`#counter-price`), or
    /// given as a tool call's `act`, in the family catalog's spelling; absent when none was
    /// written or the label is not in the catalog (`scenario::acts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<String>,
}

impl Parsed {
    /// Whether the turn counts as format-ok wherever the format is judged: the `format`
    /// reward, the format-ok share of the metrics (`format_ok_pct`) and the BATNA paper's
    /// format penalty ψ (`[rewards] psi_on = "violation"`). The completion is format-ok (all
    /// three parts once, in order, one well-formed action) *and* its move was allowed: a
    /// readable move the engine refused as `illegal` — an ACCEPT with no offer from the other
    /// side to accept, terms out of range — is a format failure, as the CaSiNo harness's
    /// format check scores it (§3.4: "valid action syntax, and deal arithmetic (allocations in
    /// [0, 3]). `[ACCEPT_DEAL]` is only valid when the opponent's last action was
    /// `[SUBMIT_DEAL]`"). The one home of this rule: `format_ok` alone is the parser's
    /// judgement of the text, before the engine has said whether the move was allowed.
    pub fn counts_as_format_ok(&self) -> bool {
        self.format_ok && self.error.is_none()
    }
}

/// Failures real models showed in readable turns (tests/fixtures/real/).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParseNote {
    /// The reply goes on after a complete turn (it writes further turns); only its first
    /// Thought, Talk and Action were read. Not format-ok.
    WentOn,
    /// The reply writes chat-template markers; only the text before them was read. Not
    /// format-ok.
    TemplateEcho,
    /// The Thought or Talk copies the seat's own instructions (the example turn or a
    /// placeholder). The format is as asked, so this alone does not make the turn not format-ok;
    /// it is counted per seat (`copied_instructions`).
    CopiedInstructions,
}

impl ParseNote {
    pub fn describe(self) -> &'static str {
        match self {
            ParseNote::WentOn => {
                "the reply goes on after its turn; only its first Thought, Talk and Action were read"
            }
            ParseNote::TemplateEcho => {
                "the reply writes chat-template markers; only the text before them was read"
            }
            ParseNote::CopiedInstructions => {
                "the Thought or Talk copies the instructions (the example turn or a placeholder)"
            }
        }
    }
}

static THINK_BLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)<think>(.*?)</think>").expect("static regex"));
static THINK_CLOSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)</think>").expect("static regex"));
/// The turn's part labels as a regex: what [`label_at`] reads by hand, kept as the property
/// test's reference.
#[cfg(test)]
static LABEL: LazyLock<Regex> = LazyLock::new(|| label_regex(&["thought", "talk", "action"]));

/// The pattern of a part's label at the start of a line, for the part names `names` (plain
/// lower-case words): in any case, singular or plural, with markdown emphasis, list or quote
/// marks around it, and `:` (or `：`) after it — `**Thought:**`, `- talk :`, `> ACTION:`. The
/// one way labels are read: a completion's parts here, an annotator's answer in `annotate`.
pub fn label_regex(names: &[&str]) -> Regex {
    Regex::new(&format!(
        r"(?im)^[ \t>#\-]*[*_]*[ \t]*({})s?[ \t]*[*_]*[ \t]*[:：][ \t]*[*_]*",
        names.join("|")
    ))
    .expect("part names are plain words")
}

/// The parts of `body` that `labels` (a [`label_regex`]) finds: each label's name, lower case,
/// with the text from after it to the next label (untrimmed), in order.
pub fn labelled_parts<'t>(body: &'t str, labels: &Regex) -> Vec<(String, &'t str)> {
    let found: Vec<_> = labels.captures_iter(body).collect();
    found
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let whole = c.get(0).expect("match");
            let end = found
                .get(i + 1)
                .map(|n| n.get(0).expect("match").start())
                .unwrap_or(body.len());
            (c[1].to_ascii_lowercase(), &body[whole.end()..end])
        })
        .collect()
}

/// What follows the last `</think>` of a reply (the whole reply when it has none): the answer
/// of a model that reasons first, for readers of fixed answer formats (the judge, `annotate`).
pub fn after_think(reply: &str) -> &str {
    match reply.rfind("</think>") {
        Some(at) => &reply[at + "</think>".len()..],
        None => reply,
    }
}

/// The action part of a completion as written (trimmed, its `#act` label kept): what a
/// narrated turn's decider chose, handed to the narrator as the line to end with
/// ([`crate::narration`]). `None` when the completion has no action part.
pub fn action_text(text: &str) -> Option<String> {
    let (body, _) = split_reasoning(text);
    let (sections, _) = turn_sections(&body);
    sections
        .iter()
        .find(|s| s.part == Part::Action)
        .map(|s| s.text.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// The one move written in `text`, read as an action line is (one action token, its terms in
/// range): what an annotator's `MOVE:` line is checked with.
pub fn read_move(text: &str, space: TermSpace<'_>) -> Result<Action, TurnError> {
    read_action(text, space).map(|(action, _)| action)
}
static XML_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)<\s*(/?)\s*(thought|talk|action)\s*>").expect("static regex")
});
/// Chat-template control markers a model may write into its own content (ChatML, Llama 3,
/// Phi, SentencePiece): a reply that writes one has run past its own turn.
static TEMPLATE_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<\|(?:im_start|im_end|endoftext|eot_id|end|start_header_id|end_header_id|assistant|user|system)\|>|</s>",
    )
    .expect("static regex")
});
static THINK_OPEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<think>").expect("static regex"));
pub(super) static ACTION_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\[\s*(submit[ _-]?deal|accept[ _-]?deal|reject[ _-]?deal|walk[ _-]?away|talk)\s*\]",
    )
    .expect("static regex")
});

/// A dialogue-act label: `#` then a word of letters, digits, `-` or `_` (markdown emphasis
/// around it is allowed).
static ACT_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#[ \t]*([A-Za-z][A-Za-z0-9_-]*)[*_]*").expect("static regex"));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Thought,
    Talk,
    Action,
}

impl Part {
    fn from_label(label: &str) -> Part {
        match label.to_ascii_lowercase().as_str() {
            "thought" => Part::Thought,
            "talk" => Part::Talk,
            _ => Part::Action,
        }
    }
}

/// A part of the completion and its text.
struct Section<'t> {
    part: Part,
    text: &'t str,
}

/// Read a completion in either spelling. `server_reasoning` is the endpoint's own
/// `reasoning_content`, if it returned one.
pub fn parse(text: &str, space: TermSpace<'_>, server_reasoning: Option<&str>) -> Parsed {
    let (text, echoed) = without_template_echo(text);
    let (body, think) = split_reasoning(text);
    let mut reasoning: Vec<String> = server_reasoning
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    reasoning.extend(think);
    let mut parsed = Parsed {
        reasoning: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        ..Parsed::default()
    };
    if body.trim().is_empty() {
        parsed.error = Some(TurnError::format(if parsed.reasoning.is_some() {
            "no turn after the reasoning (a <think> block never closed, or nothing after it)"
        } else {
            "empty reply"
        }));
        return parsed;
    }

    let (sections, went_on) = turn_sections(&body);
    let first = |part: Part| {
        sections
            .iter()
            .find(|s| s.part == part)
            .map(|s| s.text.trim().to_string())
    };
    parsed.thought = first(Part::Thought);
    parsed.talk = first(Part::Talk);

    let parts: Vec<Part> = sections.iter().map(|s| s.part).collect();
    let layout_ok = parts == [Part::Thought, Part::Talk, Part::Action];

    let (action_text, act) = split_act(&action_part(&sections, &body));
    parsed.act = act;
    match read_action(&action_text, space) {
        Ok((action, well_formed)) => {
            parsed.format_ok = layout_ok && well_formed && parts.contains(&Part::Action);
            parsed.action = Some(action);
        }
        Err(error) => {
            parsed.error = Some(error);
            parsed.format_ok = false;
        }
    }
    if !parts.contains(&Part::Action) && parsed.error.is_none() {
        parsed.format_ok = false;
    }
    if parsed.error.is_none() {
        let note = if went_on {
            Some(ParseNote::WentOn)
        } else if echoed {
            Some(ParseNote::TemplateEcho)
        } else {
            None
        };
        if note.is_some() {
            parsed.format_ok = false;
            parsed.note = note;
        }
    }
    parsed
}

/// A `#label` after the action (the last one of the action part): the dialogue act the turn
/// claims, as written (lower-cased, `_` and spaces as `-`: the catalog's spelling), and the
/// action text without it, so the label is never read as part of the terms.
pub(crate) fn split_act(action: &str) -> (String, Option<String>) {
    let Some(found) = ACT_LABEL.captures_iter(action).last() else {
        return (action.to_string(), None);
    };
    let whole = found.get(0).expect("match");
    let mut rest = String::with_capacity(action.len());
    rest.push_str(&action[..whole.start()]);
    rest.push_str(&action[whole.end()..]);
    (rest, Some(normalize_label(&found[1])))
}

/// A dialogue-act label as written, reduced to the catalogs' spelling: lower case, `_` and
/// spaces as `-`.
pub(crate) fn normalize_label(raw: &str) -> String {
    raw.trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Whether a completion proposes a deal: the part [`parse`] reads the move from writes
/// `[SUBMIT_DEAL]`. True also for a proposal that could not be used (its terms unreadable,
/// incomplete or out of range, or the token written beside another), which [`Parsed`] does not
/// tell apart from other unusable turns: what the CaSiNo harness paper's malformed-deal rate
/// counts (§4.2; its format check includes the "deal arithmetic").
pub(crate) fn proposes_deal(text: &str) -> bool {
    let (text, _) = without_template_echo(text);
    let (body, _) = split_reasoning(text);
    let (sections, _) = turn_sections(&body);
    ACTION_TOKEN
        .find_iter(&action_part(&sections, &body))
        .any(|m| token_kind(m.as_str()) == ActionKind::Submit)
}

/// The parts of a turn's body (reasoning already taken out), in either spelling, and whether
/// the reply went on past a complete turn: a complete turn followed by more parts is the model
/// writing further turns (its own or the other side's); only the first turn is kept.
fn turn_sections(body: &str) -> (Vec<Section<'_>>, bool) {
    let mut sections = xml_sections(body).unwrap_or_else(|| label_sections(body));
    let went_on = sections.len() > 3
        && sections
            .iter()
            .take(3)
            .map(|s| s.part)
            .eq([Part::Thought, Part::Talk, Part::Action]);
    if went_on {
        sections.truncate(3);
    }
    (sections, went_on)
}

/// The text the move is read from: the Action part(s); without one, whatever is not Thought
/// (the whole body when it has no parts at all).
fn action_part(sections: &[Section<'_>], body: &str) -> String {
    let from = |keep: fn(Part) -> bool| {
        sections
            .iter()
            .filter(|s| keep(s.part))
            .map(|s| s.text)
            .collect::<Vec<_>>()
            .join("\n")
    };
    if sections.iter().any(|s| s.part == Part::Action) {
        from(|p| p == Part::Action)
    } else if sections.is_empty() {
        body.to_string()
    } else {
        from(|p| p != Part::Thought)
    }
}

/// The reply up to the first chat-template marker it writes (a leading `<|im_start|>assistant`
/// header is skipped first), and whether there was one.
fn without_template_echo(text: &str) -> (&str, bool) {
    if !text.contains('<') {
        // Every marker starts with `<`.
        return (text, false);
    }
    let mut rest = text;
    let mut echoed = false;
    // A leading header such as `<|im_start|>assistant\n`.
    while let Some(m) = TEMPLATE_MARKER.find(rest.trim_start()) {
        if m.start() != 0 {
            break;
        }
        echoed = true;
        let after = &rest.trim_start()[m.end()..];
        rest = match after.split_once('\n') {
            Some((role, tail)) if role.trim().len() <= 12 && !role.contains(':') => tail,
            _ => after,
        };
    }
    match TEMPLATE_MARKER.find(rest) {
        Some(m) => (&rest[..m.start()], true),
        None => (rest, echoed),
    }
}

/// Whether a turn's Thought or Talk copies the seat's own instructions (the example turn, or a
/// placeholder such as "your private reasoning"): a model that does so has not written its own
/// turn. `instructions` is the seat's system prompt as [`Instructions::new`] reads it.
pub fn copies_instructions(parsed: &Parsed, instructions: &Instructions) -> bool {
    [&parsed.thought, &parsed.talk]
        .into_iter()
        .flatten()
        .any(|part| {
            // The part's reduced start first: a part whose first window the prompt does not
            // have is no copy, and most parts are passed over without being reduced whole.
            let mut start = String::with_capacity(2 * COPY_MIN_CHARS);
            push_normalized(part, &mut start, COPY_MIN_CHARS);
            start.len() >= COPY_MIN_CHARS && instructions.may_hold(&start) && {
                let whole = normalize_for_copy(part);
                whole.chars().count() >= COPY_MIN_CHARS && instructions.holds(&whole)
            }
        })
}

/// The fewest characters of a part (reduced) that make a copy: shorter phrases are shared with
/// any prompt.
const COPY_MIN_CHARS: usize = 16;

/// A seat's system prompt as the copy check reads it: reduced by [`normalize_for_copy`], with a
/// filter of every 16-byte window of it. A part can be found in the prompt only
/// if its first window is one of the prompt's, so most parts are passed over without a search;
/// the filter answers "maybe" for every window of the prompt, so no copy is missed.
#[derive(Debug, PartialEq, Eq)]
pub struct Instructions {
    text: String,
    /// One bit per hashed window ([`window_bit`]).
    windows: Box<[u64]>,
}

/// The filter's size in bits: a prompt of a few thousand windows sets about a tenth of them.
const WINDOW_BITS: u32 = 15;

impl Instructions {
    /// `system_prompt` reduced, with its windows.
    pub fn new(system_prompt: &str) -> Instructions {
        let text = normalize_for_copy(system_prompt);
        let mut windows = vec![0u64; 1 << (WINDOW_BITS - 6)].into_boxed_slice();
        for window in text.as_bytes().windows(COPY_MIN_CHARS) {
            let bit = window_bit(window);
            windows[bit / 64] |= 1 << (bit % 64);
        }
        Instructions { text, windows }
    }

    /// The reduced prompt.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `part` (reduced) is found in the prompt.
    fn holds(&self, part: &str) -> bool {
        self.may_hold(part) && memchr::memmem::find(self.text.as_bytes(), part.as_bytes()).is_some()
    }

    /// False only if no text that starts as `part` (reduced) does is in the prompt: the
    /// filter's answer for its first window (true for a part shorter than a window).
    fn may_hold(&self, part: &str) -> bool {
        part.as_bytes().get(..COPY_MIN_CHARS).is_none_or(|first| {
            let bit = window_bit(first);
            self.windows[bit / 64] & (1 << (bit % 64)) != 0
        })
    }
}

/// The filter bit of a window of [`COPY_MIN_CHARS`] bytes.
fn window_bit(window: &[u8]) -> usize {
    let mut bytes = [0u8; 16];
    bytes[..window.len().min(16)].copy_from_slice(&window[..window.len().min(16)]);
    let x = u128::from_le_bytes(bytes);
    let mixed =
        ((x as u64) ^ ((x >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> (64 - WINDOW_BITS)) as usize
}

/// Text reduced for the copy check: lower case, letters and digits only, single spaces.
pub fn normalize_for_copy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_normalized(text, &mut out, usize::MAX);
    out
}

/// [`normalize_for_copy`] of `text` pushed onto `out`, stopping once `out` holds `enough` bytes
/// (the reduction of a text's start is the start of its reduction).
fn push_normalized(text: &str, out: &mut String, enough: usize) {
    // One pass over the characters (a system prompt is normalized at every episode's start):
    // a run of other characters becomes one space between words.
    let mut gap = false;
    for c in text.chars() {
        if out.len() >= enough {
            return;
        }
        if !c.is_alphanumeric() {
            gap = true;
            continue;
        }
        if gap && !out.is_empty() {
            out.push(' ');
        }
        gap = false;
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// Take out `<think>…</think>` blocks (and a leading block closed by a lone `</think>`, as some
/// chat templates open the block in the prompt). Returns the rest and the reasoning found.
pub(super) fn split_reasoning(text: &str) -> (String, Option<String>) {
    if !text.contains('<') {
        // No tag at all (most turns): nothing for the three searches below to find.
        return (text.to_string(), None);
    }
    let mut found = Vec::new();
    let mut rest = THINK_BLOCK
        .replace_all(text, |c: &regex::Captures| {
            found.push(c[1].trim().to_string());
            ""
        })
        .into_owned();
    if let Some(m) = THINK_CLOSE.find(&rest) {
        found.push(rest[..m.start()].trim().to_string());
        rest = rest[m.end()..].to_string();
    }
    // A block opened and never closed (the reply was cut off while thinking): everything from
    // it on is reasoning, never a turn, even if it mentions an action.
    if let Some(m) = THINK_OPEN.find(&rest) {
        found.push(rest[m.end()..].trim().to_string());
        rest.truncate(m.start());
    }
    found.retain(|r| !r.is_empty());
    let reasoning = (!found.is_empty()).then(|| found.join("\n"));
    (rest, reasoning)
}

/// Sections of the XML spelling, or `None` when the text has no such tags. An `Action:` line
/// after the tags counts as the action part.
fn xml_sections(body: &str) -> Option<Vec<Section<'_>>> {
    if !body.contains('<') {
        return None;
    }
    let tags: Vec<_> = XML_TAG.captures_iter(body).collect();
    if tags.is_empty() {
        return None;
    }
    let mut sections = Vec::new();
    let mut open: Option<(Part, usize)> = None;
    let mut last_end = 0;
    for c in &tags {
        let whole = c.get(0).expect("match");
        let part = Part::from_label(&c[2]);
        let closing = !c[1].is_empty();
        match (open, closing) {
            (None, false) => open = Some((part, whole.end())),
            (Some((p, start)), true) if p == part => {
                sections.push(Section {
                    part,
                    text: &body[start..whole.start()],
                });
                open = None;
                last_end = whole.end();
            }
            // An unclosed tag followed by another opening: take the text up to it.
            (Some((p, start)), false) => {
                sections.push(Section {
                    part: p,
                    text: &body[start..whole.start()],
                });
                open = Some((part, whole.end()));
            }
            _ => {}
        }
    }
    if let Some((p, start)) = open {
        sections.push(Section {
            part: p,
            text: &body[start..],
        });
        last_end = body.len();
    }
    if !sections.iter().any(|s| s.part == Part::Action) {
        let tail = &body[last_end..];
        sections.extend(
            label_sections(tail)
                .into_iter()
                .filter(|s| s.part == Part::Action),
        );
    }
    Some(sections)
}

/// Sections of the tagged spelling: each label at the start of a line runs to the next label.
/// The labels are the matches of [`label_regex`] for the three parts, found line by line by
/// [`label_at`].
fn label_sections(body: &str) -> Vec<Section<'_>> {
    // Each label's name as written, where its line starts and where the label ends.
    let mut found: Vec<(&str, usize, usize)> = Vec::new();
    let mut start = 0;
    loop {
        let end = body[start..].find('\n').map_or(body.len(), |n| start + n);
        if let Some((name, label_end)) = label_at(&body[start..end]) {
            found.push((name, start, start + label_end));
        }
        if end == body.len() {
            break;
        }
        start = end + 1;
    }
    found
        .iter()
        .enumerate()
        .map(|(i, &(name, _, label_end))| Section {
            part: Part::from_label(&name.to_ascii_lowercase()),
            text: &body[label_end..found.get(i + 1).map_or(body.len(), |next| next.1)],
        })
        .collect()
}

/// [`label_regex`] for the three parts, read by hand at the start of `line` (a line of a body,
/// without its `\n`): the part's name as written and where the label ends. Matching the regex's
/// captures was most of what reading a turn cost. Each run of the pattern's character classes is taken whole, which
/// is what the regex matches: the classes that follow one another share no character that
/// could end a run earlier (`label_at_reads_as_the_label_regex`, a property test, holds the two
/// equal).
fn label_at(line: &str) -> Option<(&str, usize)> {
    let bytes = line.as_bytes();
    let run = |mut i: usize, class: &[u8]| {
        while bytes.get(i).is_some_and(|b| class.contains(b)) {
            i += 1;
        }
        i
    };
    let start = run(run(run(0, b" \t>#-"), b"*_"), b" \t");
    let name_len = ["thought", "talk", "action"]
        .into_iter()
        .find_map(|word| caseless_prefix(&line[start..], word))?;
    let mut i = start + name_len;
    i += caseless_prefix(&line[i..], "s").unwrap_or(0);
    i = run(run(run(i, b" \t"), b"*_"), b" \t");
    let colon = ["\u{3a}", "\u{ff1a}"]
        .into_iter()
        .find(|c| line[i..].starts_with(c))?;
    i = run(run(i + colon.len(), b" \t"), b"*_");
    Some((&line[start..start + name_len], i))
}

/// The length in bytes of the start of `text` that spells `word` (lower-case ASCII letters) in
/// any case as the regex's `(?i)` reads it: Unicode's simple case folding, which also folds
/// KELVIN SIGN to `k` and LATIN SMALL LETTER LONG S to `s`.
fn caseless_prefix(text: &str, word: &str) -> Option<usize> {
    let mut chars = text.chars();
    let mut len = 0;
    for w in word.chars() {
        let c = chars.next()?;
        let folds = c.to_ascii_lowercase() == w
            || (w == 'k' && c == '\u{212a}')
            || (w == 's' && c == '\u{17f}');
        if !folds {
            return None;
        }
        len += c.len_utf8();
    }
    Some(len)
}

/// The move an action token names, read from its ASCII letters: its whole match (`[Submit
/// deal]`) or its name alone read the same.
fn token_kind(token: &str) -> ActionKind {
    let t: String = token
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    match t.as_str() {
        "submitdeal" => ActionKind::Submit,
        "acceptdeal" => ActionKind::Accept,
        "rejectdeal" => ActionKind::Reject,
        "walkaway" => ActionKind::WalkAway,
        _ => ActionKind::Talk,
    }
}

/// Read the one action in an action part. Returns the action and whether it was written exactly
/// as the grammar asks (one token, canonical spelling of terms).
fn read_action(text: &str, space: TermSpace<'_>) -> Result<(Action, bool), TurnError> {
    // A token's kind is read from its whole match: the brackets and spaces around the name
    // are no letters, so the name alone reads the same, and a search for matches alone costs
    // less than one for their groups.
    let tokens: Vec<_> = ACTION_TOKEN.find_iter(text).collect();
    let Some(first) = tokens.first() else {
        return Err(TurnError::format(
            "no action token ([SUBMIT_DEAL], [ACCEPT_DEAL], [REJECT_DEAL], [WALK_AWAY]) found",
        ));
    };
    let kinds: Vec<ActionKind> = tokens.iter().map(|m| token_kind(m.as_str())).collect();
    if kinds.iter().any(|k| *k != kinds[0]) {
        let names: Vec<&str> = kinds.iter().map(|k| k.token()).collect();
        return Err(TurnError::format(format!(
            "ambiguous action: {} in one turn",
            names.join(" and ")
        )));
    }
    if kinds[0] == ActionKind::Submit && tokens.len() > 1 {
        return Err(TurnError::format(
            "ambiguous action: [SUBMIT_DEAL] given more than once",
        ));
    }
    let single = tokens.len() == 1;
    let action = match kinds[0] {
        ActionKind::Submit => {
            let after = &text[first.end()..];
            let (terms, well_formed) = parse_terms(after, space).map_err(|e| match e {
                TermsError::OutOfRange(_) => TurnError::illegal(e.to_string()),
                _ => TurnError::format(e.to_string()),
            })?;
            return Ok((Action::Submit(terms), single && well_formed));
        }
        ActionKind::Accept => Action::Accept,
        ActionKind::Reject => Action::Reject,
        ActionKind::WalkAway => Action::WalkAway,
        ActionKind::Talk => Action::Talk,
    };
    Ok((action, single))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::dnd_items;
    use crate::protocol::terms::Terms;
    use crate::protocol::ErrorKind;

    #[test]
    fn tagged_with_markdown_and_think() {
        let items = dnd_items(&[2, 2, 2]);
        let text = "<think>they want hats</think>\n**Thought:** I value books.\n**Talk**: How about this?\n\
                    **Action:** [submit_deal] Hats = 0, books: 2 ball:1";
        let p = parse(text, TermSpace::Items(&items), None);
        assert!(p.format_ok, "{p:?}");
        assert_eq!(p.action, Some(Action::Submit(Terms::Items(vec![2, 0, 1]))));
        assert_eq!(p.reasoning.as_deref(), Some("they want hats"));
        assert_eq!(p.thought.as_deref(), Some("I value books."));
        assert_eq!(p.talk.as_deref(), Some("How about this?"));
    }

    #[test]
    fn a_turn_without_tags_reads_as_one_with_a_stray_angle_bracket() {
        // A text with no `<` skips the tag searches; one with a `<` that starts no tag runs
        // them: both read the same parts.
        let plain = parse(
            "Thought: fine\nTalk: Deal at 5.\nAction: [SUBMIT_DEAL] price: 5",
            TermSpace::Price,
            None,
        );
        let stray = parse(
            "Thought: fine\nTalk: Deal at 5 <- final.\nAction: [SUBMIT_DEAL] price: 5",
            TermSpace::Price,
            None,
        );
        assert!(plain.format_ok, "{plain:?}");
        assert_eq!(plain.action, stray.action);
        assert_eq!(plain.thought, stray.thought);
        assert_eq!(plain.reasoning, None);
        assert_eq!(stray.talk.as_deref(), Some("Deal at 5 <- final."));
        assert_eq!(split_reasoning("Talk: hi"), ("Talk: hi".to_string(), None));
    }

    #[test]
    fn xml_spelling() {
        let p = parse(
            "<thought>fine</thought>\n<talk>Deal.</talk>\n<action>[ACCEPT_DEAL]</action>",
            TermSpace::Price,
            Some("server side"),
        );
        assert!(p.format_ok);
        assert_eq!(p.action, Some(Action::Accept));
        assert_eq!(p.reasoning.as_deref(), Some("server side"));
    }

    #[test]
    fn plural_labels_and_a_later_thought_stay_private() {
        let p = parse(
            "THOUGHTS : plan\nTalk: hi there\nThought: secret\nAction: [REJECT_DEAL] because my budget is 90",
            TermSpace::Price,
            None,
        );
        assert_eq!(p.thought.as_deref(), Some("plan"));
        assert_eq!(
            p.talk.as_deref(),
            Some("hi there"),
            "a second Thought is not part of the Talk"
        );
        assert_eq!(p.action, Some(Action::Reject));
        assert!(!p.format_ok, "four parts are not the three in order");
    }

    #[test]
    fn missing_thought_is_readable_but_not_format_ok() {
        let p = parse("Talk: ok\nAction: [WALK_AWAY]", TermSpace::Price, None);
        assert_eq!(p.action, Some(Action::WalkAway));
        assert!(!p.format_ok);
    }

    #[test]
    fn two_different_tokens_are_ambiguous() {
        let p = parse(
            "Thought: a\nTalk: b\nAction: [ACCEPT_DEAL] or [REJECT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert_eq!(p.action, None);
        assert_eq!(p.error.map(|e| e.kind), Some(ErrorKind::Format));
    }

    #[test]
    fn out_of_range_terms_are_illegal_missing_terms_are_format() {
        let items = dnd_items(&[2, 2, 2]);
        let p = parse(
            "Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] book:3 hat:0 ball:0",
            TermSpace::Items(&items),
            None,
        );
        assert_eq!(p.error.map(|e| e.kind), Some(ErrorKind::Illegal));
        let p = parse(
            "Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] book:1",
            TermSpace::Items(&items),
            None,
        );
        assert_eq!(p.error.map(|e| e.kind), Some(ErrorKind::Format));
    }

    #[test]
    fn a_proposal_is_seen_whether_or_not_its_terms_can_be_used() {
        // Out of range (illegal), incomplete (format), and read (on DnD's 2/2/2 items): all three
        // propose a deal; the text alone says so.
        for action in ["book:3 hat:0 ball:0", "book:1", "book:1 hat:1 ball:1"] {
            let text = format!("Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] {action}");
            assert!(proposes_deal(&text), "{text}");
        }
        assert!(proposes_deal(
            "<talk>x</talk><action>[submit deal] price 5</action>"
        ));
        // A proposal mentioned in the Talk or in the reasoning is no proposal; neither is an
        // empty reply or another move.
        for text in [
            "Thought: a\nTalk: shall I [SUBMIT_DEAL]?\nAction: [REJECT_DEAL]",
            "<think>Action: [SUBMIT_DEAL] price:5</think>Thought: a\nTalk: b\nAction: [TALK]",
            "",
            "Thought: a\nTalk: b\nAction: [ACCEPT_DEAL]",
        ] {
            assert!(!proposes_deal(text), "{text}");
        }
    }

    #[test]
    fn no_action_is_a_format_error() {
        let p = parse("I would like to buy it for $20.", TermSpace::Price, None);
        assert_eq!(p.error.map(|e| e.kind), Some(ErrorKind::Format));
        assert!(!p.format_ok);
    }

    #[test]
    fn lone_think_close_and_price_with_separators() {
        let p = parse(
            "reasoning here</think>Thought: x\nTalk: y\nAction: [SUBMIT_DEAL] price = $1,050",
            TermSpace::Price,
            None,
        );
        assert!(p.format_ok);
        assert_eq!(p.reasoning.as_deref(), Some("reasoning here"));
        assert_eq!(p.action, Some(Action::Submit(Terms::Price(105000))));
    }

    // The shapes below were not all produced by the 135M model in tests/fixtures/real/; they
    // are the ones reasoning models and chat templates are known to produce.

    #[test]
    fn a_think_block_never_closed_is_reasoning_and_no_turn() {
        let p = parse(
            "<think>maybe Action: [ACCEPT_DEAL] is best, or should I",
            TermSpace::Price,
            None,
        );
        assert_eq!(
            p.action, None,
            "an action mentioned while thinking is not a move"
        );
        assert_eq!(p.error.map(|e| e.kind), Some(ErrorKind::Format));
        assert!(p.reasoning.unwrap().contains("should I"));
        // Closed, the turn after it is read as usual.
        let p = parse(
            "<think>hm</think>Thought: a\nTalk: b\nAction: [ACCEPT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert!(p.format_ok);
    }

    #[test]
    fn chat_template_markers_end_the_reply() {
        let p = parse(
            "<|im_start|>assistant\nThought: a\nTalk: b\nAction: [WALK_AWAY]<|im_end|>\n<|im_start|>user\nTalk: no\nAction: [ACCEPT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert_eq!(
            p.action,
            Some(Action::WalkAway),
            "the echoed next message is not read"
        );
        assert!(!p.format_ok);
        assert_eq!(p.note, Some(ParseNote::TemplateEcho));
        let p = parse(
            "Thought: a\nTalk: b\nAction: [WALK_AWAY]",
            TermSpace::Price,
            None,
        );
        assert!(p.format_ok && p.note.is_none());
    }

    #[test]
    fn an_empty_reply_says_so() {
        for text in ["", "  \n ", "<think>only thinking</think>"] {
            let p = parse(text, TermSpace::Price, None);
            assert_eq!(p.error.as_ref().map(|e| e.kind), Some(ErrorKind::Format));
            assert!(p.error.unwrap().message.contains("reply") || text.contains("think"));
        }
    }

    #[test]
    fn a_turn_that_goes_on_is_read_up_to_its_first_action() {
        let p = parse(
            "Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] price:10\nThought: c\nTalk: d\nAction: [ACCEPT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert_eq!(p.action, Some(Action::Submit(Terms::Price(1000))));
        assert!(!p.format_ok);
        assert_eq!(p.note, Some(ParseNote::WentOn));
    }

    #[test]
    fn caseless_prefix_folds_exactly_what_the_regex_folds() {
        // Every character the regex's `(?i)` takes for one of the letters of the label names
        // (and `s`), and no other.
        let letters = "thougalkcins";
        let regex = Regex::new(&format!("(?i)^[{letters}]$")).expect("regex");
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let text = c.to_string();
            let ours = letters
                .chars()
                .any(|w| caseless_prefix(&text, &w.to_string()) == Some(text.len()));
            assert_eq!(ours, regex.is_match(&text), "{c:?} (U+{:04X})", c as u32);
        }
    }

    proptest::proptest! {
        /// A token's kind read from its whole match is the kind read from its name (the
        /// pattern's group), folding letters included.
        #[test]
        fn a_tokens_whole_match_names_its_kind(
            text in "([a-z ]{0,4}\\[[ \t]?(submit|Accept|REJECT|walk|talk|\u{17f}ubmit|wal\u{212a})[ _-]?(deal|away|Deal|)[ \t]?\\]){1,3}"
        ) {
            let by_name: Vec<ActionKind> =
                ACTION_TOKEN.captures_iter(&text).map(|c| token_kind(&c[1])).collect();
            let by_match: Vec<ActionKind> =
                ACTION_TOKEN.find_iter(&text).map(|m| token_kind(m.as_str())).collect();
            proptest::prop_assert_eq!(by_name, by_match);
        }

        #[test]
        fn the_copy_filter_finds_every_copy_and_only_copies(
            prompt in "[a-e ]{0,400}",
            start in 0usize..400,
            len in 0usize..80,
            other in "[a-e ]{16,40}",
        ) {
            let instructions = Instructions::new(&prompt);
            let text = instructions.as_str();
            let start = start.min(text.len());
            let part = &text[start..(start + len).min(text.len())];
            let search = |p: &str| memchr::memmem::find(text.as_bytes(), p.as_bytes()).is_some();
            if part.len() >= COPY_MIN_CHARS {
                proptest::prop_assert!(instructions.holds(part), "{part:?} in {text:?}");
            }
            proptest::prop_assert_eq!(instructions.holds(&other), search(&other));
        }

        #[test]
        fn the_reduction_of_a_start_is_the_start_of_the_reduction(
            text in "[a-cA-C \u{e9}\u{130}\u{17f}.,!1-3]{0,60}",
            enough in 0usize..40,
        ) {
            let whole = normalize_for_copy(&text);
            let mut start = String::new();
            push_normalized(&text, &mut start, enough);
            proptest::prop_assert!(whole.starts_with(&start), "{start:?} / {whole:?}");
            proptest::prop_assert!(start.len() >= enough.min(whole.len()), "{start:?} / {whole:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn label_at_reads_as_the_label_regex(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "Thought", "thought", "THOUGHTS", "Talk", "tal\u{212a}", "talks", "Action",
                "actions", "ACTIO", "\u{17f}", "s", ":", "\u{ff1a}", " ", "\t", "*", "_", ">",
                "#", "-", "\n", "\r", "x", "**", " : ", "\n- ", "\n> **", "[SUBMIT_DEAL]",
            ]), 0..24)
        ) {
            let body: String = pieces.concat();
            let ours: Vec<(Part, usize, usize)> = label_sections(&body)
                .iter()
                .map(|s| (s.part, s.text.as_ptr() as usize - body.as_ptr() as usize, s.text.len()))
                .collect();
            let regex: Vec<(Part, usize, usize)> = labelled_parts(&body, &LABEL)
                .iter()
                .map(|(label, text)| {
                    (Part::from_label(label), text.as_ptr() as usize - body.as_ptr() as usize, text.len())
                })
                .collect();
            proptest::prop_assert_eq!(ours, regex, "{:?}", body);
        }
    }

    #[test]
    fn copying_the_instructions_is_found_in_either_part() {
        let prompt = Instructions::new(
            "Example of one turn:\nThought: I should open with a price that leaves me room to move.\nTalk: I am interested.",
        );
        let copied = parse(
            "Thought: I should open with a price that leaves me room to move\nTalk: ok\nAction: [REJECT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert!(copies_instructions(&copied, &prompt));
        let own = parse(
            "Thought: I will start low and move slowly.\nTalk: I am interested.\nAction: [REJECT_DEAL]",
            TermSpace::Price,
            None,
        );
        assert!(
            !copies_instructions(&own, &prompt),
            "a short phrase shared with the prompt is not a copy"
        );
    }
}
