//! The people's own negotiations as episode records (`dealgym dialogues import`).
//!
//! The datasets hold the dialogues people played on the very scenarios `scenarios/` is made
//! from. This module turns each of them into an ordinary episode record — same schema, same
//! reader, `replay --verify` checks it — by playing it through run's one
//! `Driver`: both seats are fed from outside as `human:<dialogue id>`
//! (named `human`), each person's turn as the canonical Thought / Talk / Action completion in
//! the XML spelling (the thought empty, the talk the person's text, the action the dataset's
//! own structured move; a message with no move is `[TALK]`). The scenario is the one
//! `scenarios/<family>.jsonl` holds for that dialogue, and the outcome and utilities the engine
//! computes are checked against what the dataset recorded (the scenario's `human` entry of the
//! dialogue: CaSiNo points, Deal or No Deal rewards, the Craigslist final price, the Job
//! Interview agreed offer).
//!
//! How a dialogue becomes turns, for every family (`form_turns`):
//! - consecutive messages and moves by one person are one turn: its talk is the messages
//!   joined by newlines, its action the last of its moves (an earlier move of the same turn —
//!   a rejection followed by a counter-offer, an offer followed by an accept or a quit — is
//!   folded into the later one, and counted);
//! - a turn after an accept or a walk-away is not played (the episode has ended), and counted;
//! - the engine takes an accept only right after the counterpart's offer; where the data's
//!   accept follows a message of the proposer instead, that message restates the proposer's
//!   standing offer (counted); an accept with no offer of the counterpart before it cannot be
//!   played, and the dialogue is skipped;
//! - the people's rules: no regulation, no reject loop, no format corrections, one cap of
//!   `MAX_TURNS_PER_PERSON` turns per person (above the longest dialogue; a longer one is
//!   skipped), and a dialogue that stopped with no accept or walk-away ends as `max_turns`
//!   exactly where it stopped ([`Rules::max_moves`](crate::game::Rules)).
//!
//! The learner seat is the family's default learner role — the buyer (Craigslist), the worker
//! (Job Interview) — and on the symmetric item games the dataset's first side (`agent_1`:
//! CaSiNo's `mturk_agent_1`, Deal or No Deal's first line of a pair). The first mover is the
//! person who spoke first. The dataset's per-message labels (CaSiNo `strategy`, Craigslist
//! `dialogue_act`) stay on the turns as `dataset_labels`.
//!
//! This module reads raw dataset files only through the scenario importer's parsers
//! (`scenario::import`), never writes scenarios, and calls no endpoint.

mod casino;
mod craigslist;
pub mod deliberation;
pub mod deliberation_paper;
pub mod deliberation_records;
mod dnd;
mod job_interview;
mod play;
mod turns;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::digest::Digest;
use crate::record::{RecordWriter, WriteError};
use crate::run::EpisodeError;
use crate::scenario::import::ImportError;
use crate::scenario::{load_scenarios, Family, HumanOutcome, LoadOptions, Scenario, ScenarioError};

pub use play::HUMAN_NAME;
pub(crate) use turns::{form_turns, HumanTurn, Utterance};

/// One cap on each person's turns, above the longest dialogue of every dataset (17, CaSiNo).
pub(crate) const MAX_TURNS_PER_PERSON: u32 = 20;

/// What to import and where to.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The raw datasets, one folder per dataset as in `shared/datasets`.
    pub datasets: PathBuf,
    /// The folder of the scenario files (`scenarios/`): each dialogue is played on its scenario
    /// there.
    pub scenarios: PathBuf,
    /// Where `<family>.jsonl` is written.
    pub out: PathBuf,
    /// The families to import; empty: all five.
    pub families: Vec<Family>,
}

/// Why an import could not be done (a file missing or unreadable). A dialogue that cannot be
/// played is never an error: it is skipped and counted.
#[derive(Debug, thiserror::Error)]
pub enum DialogueError {
    #[error(transparent)]
    Raw(#[from] ImportError),
    #[error(transparent)]
    Scenarios(#[from] ScenarioError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{family} dialogue {dialogue}: {source}")]
    Episode {
        family: Family,
        dialogue: String,
        source: EpisodeError,
    },
}

/// Counts by reason, each with its first example (a dialogue id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counted(pub BTreeMap<String, (usize, String)>);

impl Counted {
    pub(crate) fn add(&mut self, reason: impl Into<String>, example: &str) {
        self.add_n(reason, 1, example);
    }

    fn add_n(&mut self, reason: impl Into<String>, n: usize, example: &str) {
        if n == 0 {
            return;
        }
        let entry = self
            .0
            .entry(reason.into())
            .or_insert_with(|| (0, example.to_string()));
        entry.0 += n;
    }

    pub fn total(&self) -> usize {
        self.0.values().map(|(n, _)| n).sum()
    }

    /// The count of one reason (0 when it never happened).
    pub fn count(&self, reason: &str) -> usize {
        self.0.get(reason).map_or(0, |(n, _)| *n)
    }

    /// `reason: N (e.g. ID)`, one per reason, joined with `; `.
    pub(crate) fn describe(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(reason, (n, example))| format!("{reason}: {n} (e.g. {example})"))
            .collect();
        parts.join("; ")
    }
}

/// What the import of one family did.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyImport {
    pub(crate) family: Family,
    /// Whether the dataset has dialogues at all (AmazonHistoryPrice has none).
    pub(crate) has_dialogues: bool,
    /// Dialogues read from the raw files.
    pub read: usize,
    /// Episode records written (every dialogue not skipped).
    pub imported: usize,
    /// Imported episodes whose outcome and utilities are the dataset's.
    pub matched: usize,
    /// Dialogues not imported, by reason.
    pub skipped: Counted,
    /// Imported episodes whose outcome is not the dataset's, by what differs.
    pub mismatched: Counted,
    /// What forming turns did to the data (restated offers, folded moves, …), by kind.
    pub adjusted: Counted,
    /// The file written, where the family has dialogues.
    pub file: Option<PathBuf>,
}

impl FamilyImport {
    fn new(family: Family) -> FamilyImport {
        FamilyImport {
            family,
            // AHP has prices and no dialogues; the bundle and hotel families are generated (INA's
            // IND is released only on request, REPO's data is production data).
            has_dialogues: !matches!(family, Family::Ahp | Family::Bundle | Family::Hotel),
            read: 0,
            imported: 0,
            matched: 0,
            skipped: Counted::default(),
            mismatched: Counted::default(),
            adjusted: Counted::default(),
            file: None,
        }
    }
}

/// What an import did, per family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    pub families: Vec<FamilyImport>,
}

impl ImportSummary {
    /// The import table (Markdown): read, imported, outcome-matched and skipped per family,
    /// then each kind of skip, mismatch and adjustment with its count and an example id.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| family | read | imported | outcome-matched | skipped |\n|---|---:|---:|---:|---:|\n",
        );
        for f in &self.families {
            if f.has_dialogues {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    f.family,
                    f.read,
                    f.imported,
                    f.matched,
                    f.skipped.total()
                );
            } else {
                let _ = writeln!(out, "| {} | — | — | — | — |", f.family);
            }
        }
        out.push('\n');
        for f in &self.families {
            if !f.has_dialogues {
                let _ = writeln!(
                    out,
                    "- {}: the dataset has no dialogues (price histories only); nothing to import",
                    f.family
                );
                continue;
            }
            for (what, counted) in [
                ("skipped", &f.skipped),
                ("outcome differs", &f.mismatched),
                ("adjusted", &f.adjusted),
            ] {
                if !counted.0.is_empty() {
                    let _ = writeln!(out, "- {} {what}: {}", f.family, counted.describe());
                }
            }
        }
        out
    }
}

/// Import every asked family: each writes `out/<family>.jsonl` (replaced whole).
pub fn import(options: &ImportOptions) -> Result<ImportSummary, DialogueError> {
    let families = if options.families.is_empty() {
        Family::ALL.to_vec()
    } else {
        options.families.clone()
    };
    let mut summary = ImportSummary::default();
    for family in families {
        summary.families.push(import_family(family, options)?);
    }
    Ok(summary)
}

/// Import one family's dialogues into `options.out/<family>.jsonl`, replacing it.
pub fn import_family(
    family: Family,
    options: &ImportOptions,
) -> Result<FamilyImport, DialogueError> {
    let mut report = FamilyImport::new(family);
    if !report.has_dialogues {
        return Ok(report);
    }
    let index = ScenarioIndex::load(&options.scenarios.join(format!("{}.jsonl", family.name())))?;
    let files = raw_files(family, &options.datasets);
    let dialogues = match family {
        Family::Casino => casino::dialogues(&files, &index)?,
        Family::Craigslist => craigslist::dialogues(&files, &index)?,
        Family::Dnd => dnd::dialogues(&files, &index)?,
        Family::JobInterview => job_interview::dialogues(&files, &index)?,
        // Generated families: no people's dialogues.
        Family::Ahp | Family::Bundle | Family::Hotel => Vec::new(),
    };
    let path = options.out.join(format!("{}.jsonl", family.name()));
    let tmp = path.with_extension("jsonl.tmp");
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(|source| io(&tmp, source))?;
    }
    let mut writer = RecordWriter::append(&tmp)?;
    let prompts = crate::game::Prompts::builtin();
    for (group, mapped) in dialogues.into_iter().enumerate() {
        report.read += 1;
        let dialogue = match mapped {
            Ok(d) => d,
            Err(skip) => {
                report.skipped.add(skip.reason, &skip.dialogue);
                continue;
            }
        };
        for (kind, n) in dialogue.adjusted() {
            report.adjusted.add_n(kind, n, &dialogue.id);
        }
        let played = play::play(family, &dialogue, group as u64, &prompts).map_err(|source| {
            DialogueError::Episode {
                family,
                dialogue: dialogue.id.clone(),
                source,
            }
        })?;
        writer.write(&played.record)?;
        report.imported += 1;
        match played.mismatch {
            None => report.matched += 1,
            Some(what) => report.mismatched.add(what, &dialogue.id),
        }
    }
    drop(writer);
    std::fs::rename(&tmp, &path).map_err(|source| io(&path, source))?;
    report.file = Some(path);
    Ok(report)
}

fn io(path: &Path, source: std::io::Error) -> DialogueError {
    DialogueError::Io {
        file: path.display().to_string(),
        source,
    }
}

/// The raw files of a family's dialogues under the datasets folder (the files
/// `scripts/import-scenarios.sh` makes the family's scenarios from, less those without
/// dialogues).
pub(crate) fn raw_files(family: Family, datasets: &Path) -> Vec<PathBuf> {
    let names: &[&str] = match family {
        Family::Casino => &[
            "casino/casino_train.json",
            "casino/casino_valid.json",
            "casino/casino_test.json",
        ],
        Family::Craigslist => &[
            "craigslistbargains/test.json",
            "craigslistbargains/validation.json",
        ],
        Family::Dnd => &["dealornodeal/data.txt"],
        Family::JobInterview => &["job_interview/ji.test.json"],
        Family::Ahp | Family::Bundle | Family::Hotel => &[],
    };
    names.iter().map(|n| datasets.join(n)).collect()
}

/// The scenarios of one family file, found by the dataset dialogue their `human` outcomes name.
pub(crate) struct ScenarioIndex {
    /// The file's name (`craigslist.jsonl`), for skip reasons.
    file: String,
    scenarios: Vec<(Arc<Scenario>, Digest)>,
    /// A dialogue's key (`HumanOutcome::dialogue`) → (scenario, human outcome) indices.
    by_dialogue: HashMap<String, (usize, usize)>,
}

/// A dialogue's scenario, its digest and what the dataset recorded for it.
pub(crate) struct Found {
    pub scenario: Arc<Scenario>,
    pub digest: Digest,
    pub recorded: HumanOutcome,
}

impl ScenarioIndex {
    pub(crate) fn load(file: &Path) -> Result<ScenarioIndex, ScenarioError> {
        let loaded = load_scenarios(file, LoadOptions::default())?;
        let mut index = ScenarioIndex {
            file: crate::scenario::import::file_name(file),
            scenarios: Vec::new(),
            by_dialogue: HashMap::new(),
        };
        for scenario in loaded.scenarios {
            if scenario.human.is_empty() {
                continue;
            }
            let i = index.scenarios.len();
            for (j, h) in scenario.human.iter().enumerate() {
                index
                    .by_dialogue
                    .entry(h.dialogue.clone())
                    .or_insert((i, j));
            }
            let digest = scenario.digest();
            index.scenarios.push((Arc::new(scenario), digest));
        }
        Ok(index)
    }

    /// The scenario of the dialogue the scenario file names `key`, or the skip that says it
    /// has none (the scenario importer drops some scenarios).
    pub(crate) fn find(&self, key: &str, dialogue: &str) -> Result<Found, Skip> {
        let Some(&(i, j)) = self.by_dialogue.get(key) else {
            return Err(Skip::new(
                dialogue,
                format!(
                    "no scenario in {} (the scenario importer drops it)",
                    self.file
                ),
            ));
        };
        let (scenario, digest) = &self.scenarios[i];
        Ok(Found {
            scenario: scenario.clone(),
            digest: *digest,
            recorded: scenario.human[j].clone(),
        })
    }
}

/// A dialogue that is not imported, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skip {
    pub dialogue: String,
    pub reason: String,
}

impl Skip {
    pub(crate) fn new(dialogue: &str, reason: impl Into<String>) -> Skip {
        Skip {
            dialogue: dialogue.to_string(),
            reason: reason.into(),
        }
    }
}

/// A dataset dialogue ready to be played: its turns and its scenario.
pub(crate) struct HumanDialogue {
    /// The dataset's own id of the dialogue (`human:<id>` plays both seats).
    pub id: String,
    pub scenario: Arc<Scenario>,
    pub digest: Digest,
    /// What the dataset recorded for it.
    pub recorded: HumanOutcome,
    pub turns: Vec<HumanTurn>,
    /// Whether the dialogue stopped with no accept or walk-away.
    pub stopped: bool,
    /// Offers restated so that an accept follows them.
    pub restated: usize,
    /// Moves folded into a later move of the same turn.
    pub folded: usize,
    /// Turns after an accept or a walk-away, not played.
    pub after_end: usize,
    /// What the family's mapping did to utterances, by kind.
    pub mapped: BTreeMap<&'static str, usize>,
}

impl HumanDialogue {
    /// What forming the turns did to the data, by kind.
    fn adjusted(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![
            ("offer restated before its accept", self.restated),
            (
                "move folded into a later move of the same turn",
                self.folded,
            ),
            ("turn after the end not played", self.after_end),
        ];
        out.extend(self.mapped.iter().map(|(k, n)| (*k, *n)));
        out
    }
}
