//! Finding the scenario a record was played on (to replay, branch or continue it): in the `--scenarios` files when given (all
//! loaded once, up front), otherwise in `scenarios/{family}.jsonl` of the record's family (the
//! build's own file where that folder has none: `dealgym_core::scenario::builtin_scenarios`),
//! loaded the first time a record of that family needs it. Each scenario's digest is computed
//! at most once.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::digest::Digest;
use crate::record::EpisodeRecord;
use crate::scenario::{
    load_scenarios, scenario_file_exists, Family, LoadOptions, Scenario, ScenarioError,
    SCENARIO_DIR,
};

/// A record whose scenario cannot be had as it was played.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unavailable {
    #[error("episode {episode}: scenario {scenario} is in none of {searched}; pass the run's scenario file with --scenarios")]
    Missing {
        episode: String,
        scenario: String,
        searched: String,
    },
    #[error("episode {episode}: scenario {scenario} is not the one it was played on: its digest is {found}, the record's {expected} (the scenario file changed since the run)")]
    Changed {
        episode: String,
        scenario: String,
        expected: Digest,
        found: Digest,
    },
}

/// Where scenarios are looked up, and those loaded so far.
pub(crate) struct ScenarioSource {
    /// `None`: look in `{dir}/{family}.jsonl`; `Some`: only in these files (already loaded).
    files: Option<Vec<PathBuf>>,
    dir: PathBuf,
    families: HashSet<Family>,
    by_id: HashMap<String, Arc<Scenario>>,
    digests: HashMap<String, Digest>,
}

impl ScenarioSource {
    /// Scenarios from `files` (every one loaded now) or, with no files, from the family files
    /// under `scenarios/`.
    pub fn new(files: &[PathBuf]) -> Result<ScenarioSource, ScenarioError> {
        ScenarioSource::in_dir(files, Path::new(SCENARIO_DIR))
    }

    /// Scenarios from `files` (every one loaded now) or, with no files, from the family files
    /// under `dir`.
    /// Table scenario files among `files` are left to the table readers (a file of both kinds
    /// of record is read with both kinds of scenario file).
    pub(crate) fn in_dir(files: &[PathBuf], dir: &Path) -> Result<ScenarioSource, ScenarioError> {
        let mut source = ScenarioSource::by_family(dir);
        if !files.is_empty() {
            let own: Vec<PathBuf> = files
                .iter()
                .filter(|f| !crate::scenario::is_table_file(f))
                .cloned()
                .collect();
            for file in &own {
                source.absorb(file)?;
            }
            source.files = Some(own);
        }
        Ok(source)
    }

    /// The scenarios a caller already holds (a server's, as it loaded them from `files`): no
    /// file is read again, so a record is found on exactly the scenario it was played on.
    pub(crate) fn loaded(
        scenarios: impl IntoIterator<Item = Arc<Scenario>>,
        files: &[PathBuf],
    ) -> ScenarioSource {
        let mut source = ScenarioSource::by_family(Path::new(""));
        for scenario in scenarios {
            source.by_id.entry(scenario.id.clone()).or_insert(scenario);
        }
        source.files = Some(files.to_vec());
        source
    }

    /// Scenarios from `{dir}/{family}.jsonl`, loaded as records ask for them.
    pub fn by_family(dir: &Path) -> ScenarioSource {
        ScenarioSource {
            files: None,
            dir: dir.to_path_buf(),
            families: HashSet::new(),
            by_id: HashMap::new(),
            digests: HashMap::new(),
        }
    }

    /// The scenario `record` was played on, by its id. A family file that does not exist
    /// leaves its scenarios missing; one with a bad line is an error.
    pub fn find(&mut self, record: &EpisodeRecord) -> Result<Arc<Scenario>, FindError> {
        if self.files.is_none() && self.families.insert(record.family) {
            let file = self.family_file(record.family);
            if scenario_file_exists(&file) {
                self.absorb(&file)?;
            }
        }
        match self.by_id.get(&record.scenario_id) {
            Some(scenario) => Ok(scenario.clone()),
            None => Err(missing(
                &record.episode_id,
                &record.scenario_id,
                self.files.as_deref(),
                &self.family_file(record.family),
            )),
        }
    }

    /// [`ScenarioSource::find`], and the scenario's digest checked against the record's (a
    /// record older than the digest is taken as it is).
    pub fn checked(&mut self, record: &EpisodeRecord) -> Result<Arc<Scenario>, FindError> {
        let scenario = self.find(record)?;
        if let Some(expected) = record.scenario_digest {
            let found = *self
                .digests
                .entry(scenario.id.clone())
                .or_insert_with(|| scenario.digest());
            if found != expected {
                return Err(Unavailable::Changed {
                    episode: record.episode_id.clone(),
                    scenario: scenario.id.clone(),
                    expected,
                    found,
                }
                .into());
            }
        }
        Ok(scenario)
    }

    fn family_file(&self, family: Family) -> PathBuf {
        self.dir.join(format!("{}.jsonl", family.name()))
    }

    fn absorb(&mut self, file: &Path) -> Result<(), ScenarioError> {
        let report = load_scenarios(file, LoadOptions::default())?;
        for scenario in report.scenarios {
            self.by_id
                .entry(scenario.id.clone())
                .or_insert_with(|| Arc::new(scenario));
        }
        Ok(())
    }
}

/// A scenario that cannot be had: missing or changed, or a scenario file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// A family file searched, for a message: its name, and `(built in)` where the build's own
/// file stood in for a missing one, `(not found)` where nothing did.
/// A record's scenario found in none of the places looked: the files given (`--scenarios`), or
/// else its family's file in the scenario folder. The one message of every kind of record.
pub(crate) fn missing(
    episode: &str,
    scenario: &str,
    files: Option<&[PathBuf]>,
    family_file: &Path,
) -> FindError {
    Unavailable::Missing {
        episode: episode.to_string(),
        scenario: scenario.to_string(),
        searched: match files {
            Some(files) => list_files(files),
            None => file_searched(family_file),
        },
    }
    .into()
}

pub(crate) fn file_searched(file: &Path) -> String {
    let note = if file.exists() {
        ""
    } else if scenario_file_exists(file) {
        " (built in)"
    } else {
        " (not found)"
    };
    format!("{}{note}", file.display())
}

/// File names for a message: `a.jsonl, b.jsonl`.
pub(crate) fn list_files(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
