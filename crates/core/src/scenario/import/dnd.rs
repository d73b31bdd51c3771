//! Deal or No Deal: one scenario per dialogue of the raw corpus, plus the self-play contexts
//! (Lewis et al. 2017).
//!
//! `data.txt` holds every dialogue from each side's perspective, the two lines of a dialogue next
//! to each other; `test.txt` and `val.txt` name the dialogues of those splits (the rest is the
//! train split); `selfplay.txt` holds context-only pairs. `agent_1` is the first line of a pair.
//! Items 0, 1, 2 are book, hat, ball.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{file_name, split_from_name, ImportError, ImportReport};
use crate::limits::{read_file, MAX_INPUT_FILE};
use crate::protocol::{ItemSpec, TermSpace, Terms};
use crate::scenario::{
    DealSpace, Family, HumanEnding, HumanOutcome, ItemValues, PublicInfo, RecordedPoints, Role,
    Scenario, SCENARIO_SCHEMA,
};

const ITEMS: [&str; 3] = ["book", "hat", "ball"];

/// One side's context: counts and its own values per item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Context {
    pub counts: [u32; 3],
    values: [u32; 3],
}

/// A self-play scenario: its first line number and the two sides' contexts.
type ContextPair = (usize, Context, Context);

/// One line of `data.txt`: one side's view of one dialogue (read by the scenario importer and
/// by `crate::dialogues`, which replays the dialogue).
#[derive(Debug, Clone)]
pub struct Perspective {
    /// The line number in its file (1-based).
    pub(crate) line: usize,
    pub own: Context,
    partner: Context,
    /// The dialogue up to `<selection>`, with YOU/THEM from this side: utterances
    /// `YOU: …` / `THEM: …` separated by `<eos>`, the last one `YOU: <selection>` or
    /// `THEM: <selection>` (the side that ended the talk).
    pub dialogue: String,
    pub ending: LineEnding,
}

/// What this side chose after the talk, and whether the two choices agreed.
#[derive(Debug, Clone, PartialEq)]
pub enum LineEnding {
    /// Both chose complementary shares; `selection` is this side's own.
    Agree { selection: [u32; 3], reward: u32 },
    /// This side chose `selection`; the other side chose otherwise (no deal).
    Disagree { selection: [u32; 3] },
    /// This side chose "no agreement".
    NoAgreement,
    /// A participant disconnected.
    Disconnect,
}

pub(super) fn import(files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    let mut corpus: Vec<(PathBuf, Vec<Perspective>)> = Vec::new();
    let mut split_of: HashMap<(Context, Context, String), String> = HashMap::new();
    let mut selfplay: Vec<(PathBuf, Vec<ContextPair>)> = Vec::new();
    for path in files {
        let text = read_file(path, MAX_INPUT_FILE).map_err(|e| ImportError::io(path, e))?;
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if first.trim_start().starts_with("<input>") {
            let split = split_from_name(path).ok_or_else(|| {
                ImportError::format(
                    path,
                    "a split file must be named for its split (test.txt, val.txt)",
                )
            })?;
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let key = split_line_key(line).ok_or_else(|| {
                    ImportError::record(path, format!("line {}", i + 1), "unreadable")
                })?;
                split_of.insert(key, split.clone());
            }
        } else if first.split_whitespace().count() == 6 {
            let mut pairs = Vec::new();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            for (k, chunk) in lines.chunks(2).enumerate() {
                let [a, b] = chunk else {
                    return Err(ImportError::format(
                        path,
                        "self-play contexts come in pairs of lines",
                    ));
                };
                let line = 2 * k + 1;
                let (ca, cb) = (context(a), context(b));
                let (Some(ca), Some(cb)) = (ca, cb) else {
                    return Err(ImportError::record(
                        path,
                        format!("line {line}"),
                        "expected six integers per line",
                    ));
                };
                pairs.push((line, ca, cb));
            }
            selfplay.push((path.clone(), pairs));
        } else {
            corpus.push((path.clone(), perspectives(path, &text)?));
        }
    }

    let mut report = ImportReport::default();
    for (path, lines) in &corpus {
        let file = file_name(path);
        let (mut paired, mut single) = (0, 0);
        for (a, b) in dialogues(lines) {
            let split = [Some(a), b].into_iter().flatten().find_map(|p| {
                split_of
                    .get(&(p.own, p.partner, p.dialogue.clone()))
                    .cloned()
            });
            let split = split.or_else(|| (!split_of.is_empty()).then(|| "train".to_string()));
            report
                .scenarios
                .push(dialogue_scenario(path, &file, split, a, b)?);
            if b.is_some() {
                paired += 1;
            } else {
                single += 1;
            }
        }
        report.notes.push(format!(
            "dnd: {file}: {} dialogues ({paired} with both sides' lines, {single} with one side's only)",
            paired + single
        ));
    }
    for (path, pairs) in &selfplay {
        let file = file_name(path);
        for (line, a, b) in pairs {
            if a.counts != b.counts {
                return Err(ImportError::record(
                    path,
                    format!("line {line}"),
                    "the two sides' counts differ",
                ));
            }
            report.scenarios.push(base(
                format!("dnd:selfplay:{line}"),
                Some("selfplay".into()),
                format!("dealornodeal/{file} lines {line}-{}", line + 1),
                *a,
                *b,
            ));
        }
        report
            .notes
            .push(format!("dnd: {file}: {} self-play contexts", pairs.len()));
    }
    Ok(report)
}

/// Every line of a corpus file (`data.txt`).
pub fn read_corpus(path: &Path) -> Result<Vec<Perspective>, ImportError> {
    let text = read_file(path, MAX_INPUT_FILE).map_err(|e| ImportError::io(path, e))?;
    perspectives(path, &text)
}

fn perspectives(path: &Path, text: &str) -> Result<Vec<Perspective>, ImportError> {
    let mut lines = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let p = perspective(i + 1, line).ok_or_else(|| {
            ImportError::record(path, format!("line {}", i + 1), "unreadable corpus line")
        })?;
        lines.push(p);
    }
    Ok(lines)
}

/// The dialogues of a corpus: a line with the next one when that is its mirror (the same
/// dialogue from the other side), else the line alone. The first line's side is `agent_1`.
pub fn dialogues(lines: &[Perspective]) -> Vec<(&Perspective, Option<&Perspective>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let a = &lines[i];
        let b = lines.get(i + 1).filter(|b| is_mirror(a, b));
        out.push((a, b));
        i += if b.is_some() { 2 } else { 1 };
    }
    out
}

/// The dialogue's name in `data.txt` as scenarios keep it (`HumanOutcome::dialogue`):
/// `lines A-B`, or `line A` for a line without its mirror.
pub fn lines_name(a: &Perspective, b: Option<&Perspective>) -> String {
    let word = if b.is_some() { "lines" } else { "line" };
    format!("{word} {}", line_range(a, b))
}

/// The lines a dialogue is on: `A-B`, or `A` for a line without its mirror.
pub fn line_range(a: &Perspective, b: Option<&Perspective>) -> String {
    match b {
        Some(b) => format!("{}-{}", a.line, b.line),
        None => a.line.to_string(),
    }
}

fn context(text: &str) -> Option<Context> {
    let n: Vec<u32> = text
        .split_whitespace()
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    (n.len() == 6).then(|| Context {
        counts: [n[0], n[2], n[4]],
        values: [n[1], n[3], n[5]],
    })
}

fn perspective(line: usize, text: &str) -> Option<Perspective> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    if tokens.len() < 12 {
        return None;
    }
    let own = context(&tokens[..6].join(" "))?;
    let partner = context(&tokens[tokens.len() - 6..].join(" "))?;
    let middle = tokens[6..tokens.len() - 6].join(" ");
    let (dialogue, after) = middle.split_once("<selection>")?;
    let dialogue = format!("{}<selection>", dialogue);
    let after = after.trim();
    let ending = if after.contains("reward=disconnect") {
        LineEnding::Disconnect
    } else if after.contains("no agreement") {
        LineEnding::NoAgreement
    } else if after.ends_with("disagree") {
        LineEnding::Disagree {
            selection: read_selection(after)?,
        }
    } else {
        let selection = read_selection(after)?;
        let reward = after
            .split("reward=")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        LineEnding::Agree { selection, reward }
    };
    Some(Perspective {
        line,
        own,
        partner,
        dialogue: normalize(&dialogue),
        ending,
    })
}

fn read_selection(text: &str) -> Option<[u32; 3]> {
    let mut out = [None; 3];
    for t in text.split_whitespace() {
        if let Some((k, v)) = t.split_once('=') {
            if let Some(i) = k
                .strip_prefix("item")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|i| *i < 3)
            {
                if out[i].is_none() {
                    out[i] = v.parse().ok();
                }
            }
        }
    }
    Some([out[0]?, out[1]?, out[2]?])
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key of a `test.txt`/`val.txt` line: both contexts and the dialogue up to `<selection>`.
fn split_line_key(line: &str) -> Option<(Context, Context, String)> {
    let between = |open: &str, close: &str| -> Option<String> {
        let start = line.find(open)? + open.len();
        let end = start + line[start..].find(close)?;
        Some(line[start..end].trim().to_string())
    };
    let own = context(&between("<input>", "</input>")?)?;
    let partner = context(&between("<partner_input>", "</partner_input>")?)?;
    let dialogue = normalize(&between("<dialogue>", "</dialogue>")?);
    Some((own, partner, dialogue))
}

fn swap_speakers(dialogue: &str) -> String {
    dialogue
        .replace("YOU:", "\u{0}")
        .replace("THEM:", "YOU:")
        .replace('\u{0}', "THEM:")
}

fn is_mirror(a: &Perspective, b: &Perspective) -> bool {
    a.own == b.partner && a.partner == b.own && swap_speakers(&a.dialogue) == b.dialogue
}

fn base(id: String, split: Option<String>, source: String, a: Context, b: Context) -> Scenario {
    let items = ITEMS
        .iter()
        .zip(a.counts)
        .map(|(name, count)| ItemSpec {
            name: name.to_string(),
            count,
        })
        .collect();
    Scenario {
        schema: SCENARIO_SCHEMA,
        id,
        family: Family::Dnd,
        split,
        source,
        public: PublicInfo {
            title: "Divide the items".into(),
            category: None,
            description: "You and a partner must divide a collection of books, hats and balls between you. \
                          Every unit goes to one of you, and each of you has values of your own for them."
                .into(),
        },
        game: DealSpace::Items {
            items,
            agent_1: ItemValues { values: a.values.to_vec(), reasons: vec![] },
            agent_2: ItemValues { values: b.values.to_vec(), reasons: vec![] },
        },
        no_deal_value: 0.0,
        flags: vec![],
        human: vec![],
    }
}

fn dialogue_scenario(
    path: &Path,
    file: &str,
    split: Option<String>,
    a: &Perspective,
    b: Option<&Perspective>,
) -> Result<Scenario, ImportError> {
    if a.own.counts != a.partner.counts {
        return Err(ImportError::record(
            path,
            format!("line {}", a.line),
            "the two sides' counts differ",
        ));
    }
    let lines = lines_name(a, b);
    let mut s = base(
        format!("dnd:data:{}", a.line),
        split,
        format!("dealornodeal/{file} {lines}"),
        a.own,
        a.partner,
    );
    let space_items: Vec<ItemSpec> = match &s.game {
        DealSpace::Items { items, .. } => items.clone(),
        _ => vec![],
    };
    let (ending, terms) = match &a.ending {
        LineEnding::Agree { selection, .. } => (
            HumanEnding::Deal,
            Some(Terms::Items(selection.to_vec()).render(TermSpace::Items(&space_items))),
        ),
        LineEnding::Disagree { .. } => (HumanEnding::Disagree, None),
        LineEnding::NoAgreement => (HumanEnding::NoDeal, None),
        LineEnding::Disconnect => (HumanEnding::Quit, None),
    };
    let mut points = Vec::new();
    for (role, p) in [(Role::Agent1, Some(a)), (Role::Agent2, b)] {
        if let Some(LineEnding::Agree { reward, .. }) = p.map(|p| &p.ending) {
            points.push(RecordedPoints {
                role,
                points: f64::from(*reward),
            });
        }
    }
    s.human.push(HumanOutcome {
        dialogue: lines,
        ending,
        view: terms.as_ref().map(|_| Role::Agent1),
        terms,
        points,
    });
    Ok(s)
}
