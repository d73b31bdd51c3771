//! Where the scenarios of n-party records (tables, markets) are looked up: the one source both
//! kinds share ([`SeatedSource`]). The `--scenarios` files of the record's kind are loaded up
//! front when given; otherwise `{dir}/{family}.jsonl` of a record's family is loaded the first
//! time a record of that family needs it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::run::FindError;
use crate::scenario::{
    is_market_file, is_table_file, load_market_scenarios, load_table_scenarios,
    scenario_file_exists, LoadOptions, MarketScenario, ScenarioError, TableScenario,
};

/// A kind of n-party scenario a source holds: which files are its own, how they load, and
/// each scenario's id.
pub(crate) trait SourcedScenario: Sized {
    fn is_own_file(path: &Path) -> bool;
    fn load(path: &Path) -> Result<Vec<Self>, ScenarioError>;
    fn id(&self) -> &str;
}

impl SourcedScenario for TableScenario {
    fn is_own_file(path: &Path) -> bool {
        is_table_file(path)
    }
    fn load(path: &Path) -> Result<Vec<TableScenario>, ScenarioError> {
        Ok(load_table_scenarios(path, LoadOptions::default())?.scenarios)
    }
    fn id(&self) -> &str {
        &self.id
    }
}

impl SourcedScenario for MarketScenario {
    fn is_own_file(path: &Path) -> bool {
        is_market_file(path)
    }
    fn load(path: &Path) -> Result<Vec<MarketScenario>, ScenarioError> {
        Ok(load_market_scenarios(path, LoadOptions::default())?.scenarios)
    }
    fn id(&self) -> &str {
        &self.id
    }
}

/// The scenarios of one kind loaded so far, and where the others are looked up.
pub(crate) struct SeatedSource<S> {
    files: Option<Vec<PathBuf>>,
    dir: PathBuf,
    /// The families whose default file has been looked for.
    families: HashSet<String>,
    by_id: HashMap<String, Arc<S>>,
}

impl<S: SourcedScenario> SeatedSource<S> {
    pub fn in_dir(files: &[PathBuf], dir: &Path) -> Result<SeatedSource<S>, ScenarioError> {
        let mut source = SeatedSource {
            files: None,
            dir: dir.to_path_buf(),
            families: HashSet::new(),
            by_id: HashMap::new(),
        };
        // Scenario files of other kinds among `files` are left to their own readers (a file
        // of several kinds of record is read with each kind's scenario files).
        let own: Vec<PathBuf> = files
            .iter()
            .filter(|f| S::is_own_file(f))
            .cloned()
            .collect();
        for file in &own {
            source.absorb(file)?;
        }
        if !files.is_empty() {
            source.files = Some(own);
        }
        Ok(source)
    }

    /// Scenario `scenario_id` of `family`, which episode `episode_id` was played on (its digest
    /// is checked by the replay).
    pub(crate) fn find_in(
        &mut self,
        family: &str,
        episode_id: &str,
        scenario_id: &str,
    ) -> Result<Arc<S>, FindError> {
        let file = self.dir.join(format!("{family}.jsonl"));
        if self.files.is_none()
            && self.families.insert(family.to_string())
            && scenario_file_exists(&file)
        {
            self.absorb(&file)?;
        }
        match self.by_id.get(scenario_id) {
            Some(s) => Ok(s.clone()),
            None => Err(crate::run::missing(
                episode_id,
                scenario_id,
                self.files.as_deref(),
                &file,
            )),
        }
    }

    fn absorb(&mut self, file: &Path) -> Result<(), ScenarioError> {
        for s in S::load(file)? {
            self.by_id
                .entry(s.id().to_string())
                .or_insert_with(|| Arc::new(s));
        }
        Ok(())
    }
}
