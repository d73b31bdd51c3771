//! `dealgym replay`: what can be done with records after a run, without a model server.
//!
//! - [`verify`]: re-run every episode from its recorded completions through today's engine and
//!   name each field where the record and the engine disagree (`verify.rs`);
//! - [`rescore`]: recompute metrics and rewards under another reward config (`rescore.rs`);
//! - [`render`]: one episode as a Markdown or self-contained HTML transcript, as pure functions
//!   of the record (`render/`);
//! - table records (n-party, `"kind": "table"`, told apart record by record, `crate::record::episode_kind`): `--verify`
//!   and `--render` (the public transcript) in `table.rs`;
//! - [`branch`]: replay the first N turns of logged episodes through run's `Driver` and let
//!   new players continue from there, G branches of one prefix forming one GRPO group
//!   (`branch.rs`).
//!
//! Records are read one at a time with [`RecordFiles`] (through `Records`), so memory is
//! bounded by one record, not by the file, and an episode recorded twice is refused (or read
//! once, with `--duplicates skip`). Scenarios come from the `--scenarios` files or, by
//! default, from `scenarios/{family}.jsonl` of each record's family (run's `ScenarioSource`).
//!
//! This module plays no episode itself: replays go through the engine's own replay
//! (`EpisodeRecord::replay_until_end`) and branches through the driver; nothing here loops
//! over [`Episode::to_move`](crate::game::Episode::to_move).
//!
//! `Driver`: crate::run::Driver

mod branch;
mod market;
pub mod render;
mod rescore;
mod source;
mod table;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use crate::run::ScenarioSource;
pub use crate::run::{FindError, Unavailable};
pub use branch::{
    branch, branch_group_id, branch_tables, BranchOptions, BranchSummary, TableBranchSummary,
};
pub(crate) use market::MarketSource;
pub use rescore::{rescore, rescore_files, RescoreOptions, RescoreSummary};
pub(crate) use table::TableSource;
pub use verify::{verify, Difference, DifferenceRow, VerifyOptions, VerifyReport};

use crate::game::{PromptError, Prompts};
pub(crate) use crate::record::Located;
use crate::record::{
    refuse_output_among_inputs, scan_existing, Duplicates, OnDuplicate, ReadError, RecordFiles,
    RecordWriter, RecordsKind, ReplayError, WriteError,
};
use crate::run::{list_files, ConfigError, EpisodeError, RunError};
use crate::scenario::ScenarioError;

/// Why a replay command could not be done. Differences found by `--verify` are not errors:
/// they are its report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Episode(#[from] EpisodeError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file} already holds {episodes} episodes: choose another --out")]
    OutExists { file: String, episodes: usize },
    #[error("no episode {episode} in {files}")]
    NoSuchEpisode { episode: String, files: String },
    #[error("{files}: no record in {}, so nothing was verified", if *.several { "any of them" } else { "it" })]
    NoRecords { files: String, several: bool },
    #[error(
        "episode {episode} ({at}) has {turns} turns: it cannot be branched after turn {prefix}"
    )]
    PrefixTooLong {
        episode: String,
        at: String,
        turns: usize,
        prefix: usize,
    },
    #[error("episode {episode} ({at}): its first {prefix} turns already end it ({kind}); branch from fewer turns")]
    PrefixEnds {
        episode: String,
        at: String,
        prefix: usize,
        kind: &'static str,
    },
    #[error("{at} holds an episode of run {found} after episodes of run {first}: branch one run per --out, so that group ids stay unique")]
    MixedRuns {
        at: String,
        first: String,
        found: String,
    },
    #[error("{0}")]
    Options(String),
}

/// The records of several files in order, one at a time ([`RecordFiles`], so each episode
/// once or a refusal, as `on_duplicate` says), optionally only those of one episode id. A bad
/// line ends the iteration with its error (naming the file and the line).
pub(crate) struct Records {
    records: RecordFiles,
    episode: Option<String>,
}

impl Records {
    pub fn open(files: &[PathBuf], episode: Option<&str>, on_duplicate: OnDuplicate) -> Records {
        Records {
            records: RecordFiles::open(files, on_duplicate),
            episode: episode.map(str::to_string),
        }
    }

    /// The duplicates skipped so far (with [`OnDuplicate::Skip`]).
    pub fn duplicates(&self) -> &Duplicates {
        self.records.duplicates()
    }

    /// The records of the other kind passed over so far.
    pub fn passed_over(&self) -> crate::record::PassedOver {
        self.records.passed_over()
    }
}

impl Iterator for Records {
    type Item = Result<Located, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let located = match self.records.next()? {
                Ok(located) => located,
                Err(e) => return Some(Err(e.into())),
            };
            if self
                .episode
                .as_ref()
                .is_some_and(|id| *id != located.record.episode_id)
            {
                continue;
            }
            return Some(Ok(located));
        }
    }
}

/// The first record of episode `id` in `files`.
pub(crate) fn find_episode(
    files: &[PathBuf],
    id: &str,
    on_duplicate: OnDuplicate,
) -> Result<Located, Error> {
    match Records::open(files, Some(id), on_duplicate).next() {
        Some(found) => found,
        None => Err(Error::NoSuchEpisode {
            episode: id.to_string(),
            files: list_files(files),
        }),
    }
}

/// The transcript formats of `--render`, named by [`RenderFormat::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderFormat {
    /// Markdown.
    Md,
    /// One self-contained HTML page.
    Html,
}

impl RenderFormat {
    pub const ALL: [RenderFormat; 2] = [RenderFormat::Md, RenderFormat::Html];

    pub fn name(self) -> &'static str {
        match self {
            RenderFormat::Md => "md",
            RenderFormat::Html => "html",
        }
    }
}

impl std::fmt::Display for RenderFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RenderFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<RenderFormat, String> {
        RenderFormat::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| format!("unknown transcript format `{name}`: md or html"))
    }
}

/// What `--render` writes.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub files: Vec<PathBuf>,
    pub episode: String,
    pub format: RenderFormat,
    /// `None`: stdout.
    pub out: Option<PathBuf>,
    pub on_duplicate: OnDuplicate,
    /// Scenario files (a table episode's transcript names its offers' options by the game's
    /// issues); empty: `scenarios/{family}.jsonl`.
    pub scenarios: Vec<PathBuf>,
}

/// The transcript `--render` asks for: the first episode `options.episode` of the files.
pub fn render_episode(options: &RenderOptions) -> Result<String, Error> {
    // Before anything is read: the caller writes the transcript to `out`.
    if let Some(out) = &options.out {
        refuse_output_among_inputs(out, &options.files)?;
    }
    // The episode's own kind: a file may hold both (a server's log).
    match crate::record::episode_kind(&options.files, &options.episode)? {
        Some(RecordsKind::Table) => return table::render_table(options),
        Some(RecordsKind::Market) => {
            return Err(Error::Options(format!(
                "episode {} is a market (`\"kind\": \"market\"`): --render does not draw markets yet; --verify and `export` take them",
                options.episode
            )))
        }
        _ => {}
    }
    let found = find_episode(&options.files, &options.episode, options.on_duplicate)?;
    Ok(match options.format {
        RenderFormat::Md => render::markdown(&found.record),
        RenderFormat::Html => render::html(&found.record),
    })
}

/// The templates to replay with: those of `prompts_dir` over the built-ins, or the built-ins.
pub(crate) fn load_prompts(prompts_dir: Option<&Path>) -> Result<Arc<Prompts>, PromptError> {
    match prompts_dir {
        Some(dir) => Ok(Arc::new(Prompts::with_overrides(dir)?)),
        None => Ok(Prompts::builtin()),
    }
}

/// A new record file for the records a replay command writes, with the writer `run` uses. A
/// file that already holds records is refused (and left untouched), so nothing is appended to
/// a file by mistake; so is one of the `inputs` by any name, even empty.
fn create_out(path: &Path, inputs: &[PathBuf]) -> Result<RecordWriter, Error> {
    refuse_output_among_inputs(path, inputs)?;
    let existing = scan_existing(path, false)?;
    if !existing.is_empty() || existing.repaired {
        return Err(Error::OutExists {
            file: path.display().to_string(),
            episodes: existing.episodes(),
        });
    }
    Ok(RecordWriter::append(path)?)
}

impl From<FindError> for Error {
    fn from(e: FindError) -> Self {
        match e {
            FindError::Unavailable(u) => Error::Unavailable(u),
            FindError::Scenario(s) => Error::Scenario(s),
        }
    }
}
