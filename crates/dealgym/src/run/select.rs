//! Which scenarios of each file a plan plays: the one home of `--scenario-split`, `--sample`
//! and `--limit`, used by `run`, `eval`, `merge` (to size a plan) and `serve`.
//!
//! Each file on its own, in this order:
//! 0. **family** (`[scenarios] family = "hotel"` in a config or a preset): keep the scenarios
//!    of that family. A file with none of them is an error naming the families it holds, so
//!    a preset that plays one family (`repo` plays `hotel`) is never run on another's file by
//!    mistake, nor silently on nothing.
//! 1. **split** (`--scenario-split NAME`): keep the scenarios whose `split` is NAME. A file none
//!    of whose scenarios has that split is an error naming the splits it has, so a typo (or a
//!    file with no splits, like `ahp.jsonl`) is never a silently empty plan.
//! 2. **sample** (`--sample N`, `--sample-seed S`): N of those, drawn at random without
//!    replacement (all of them when there are no more than N). Each scenario is ranked by a
//!    hash of its id and the sample seed and the N smallest ranks are kept (bottom-k sampling,
//!    as the report samples its transcripts), so the sample depends on the seed and the ids
//!    only: not on the order of the lines or of the files, not on what else the run does. An
//!    eval loads its scenarios once, so every pairing plays the same sample; `--resume` draws
//!    the same one again. The sampled scenarios keep their order in the file.
//! 3. **limit** (`--limit N`): the first N of what is left.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::digest::digest_bytes;
use crate::game::mix;
use crate::limits::{check_count, MAX_EPISODES};
use crate::scenario::{Family, Scenario};

/// A random sample of `size` scenarios of each file, drawn with `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub size: usize,
    pub seed: u64,
}

/// How the scenarios of each file are chosen (see the module doc for the order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub family: Option<Family>,
    pub split: Option<String>,
    pub sample: Option<Sample>,
    pub limit: Option<usize>,
}

/// A selection that cannot be made from a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("{file}: no scenario of family `{family}` (the config or preset plays only that family: [scenarios] family); the file holds {have}")]
    NoFamily {
        file: String,
        family: Family,
        have: String,
    },
    #[error("{file}: no scenario has a split, so split `{split}` (--scenario-split, or [scenarios] split) keeps none of them")]
    NoSplits { file: String, split: String },
    #[error("{file}: no scenario of split `{split}`; the file's splits are {have}")]
    UnknownSplit {
        file: String,
        split: String,
        have: String,
    },
    #[error("{file} holds table scenarios (n-party games), which have no family, no split and are not sampled: [scenarios] {key}{flag} chooses among two-party scenarios only; leave it out, or name the two-party files alone with --scenarios")]
    TableFile {
        file: String,
        key: &'static str,
        flag: &'static str,
    },
}

/// Told apart from any other use of `mix` with the same seed.
const SAMPLE_SALT: u64 = 0x5A4D_71E5;

impl Selection {
    /// The first `limit` scenarios of each file (all with `None`): `--limit` alone.
    #[cfg(test)]
    pub(crate) fn first(limit: Option<usize>) -> Selection {
        Selection {
            limit,
            ..Selection::default()
        }
    }

    /// The scenarios of `file` this selection keeps, in file order.
    pub fn apply(
        &self,
        file: &str,
        scenarios: Vec<Scenario>,
    ) -> Result<Vec<Scenario>, SelectError> {
        let scenarios = match self.family {
            None => scenarios,
            Some(family) => of_family(file, family, scenarios)?,
        };
        let mut kept = match &self.split {
            None => scenarios,
            Some(split) => of_split(file, split, scenarios)?,
        };
        if let Some(sample) = self.sample {
            kept = sampled(kept, sample);
        }
        if let Some(limit) = self.limit {
            kept.truncate(limit);
        }
        Ok(kept)
    }

    /// What a file of table scenarios (n-party games) takes of this selection: its limit. A
    /// table scenario has no two-party family and no split, and tables are not sampled, so any
    /// of the three set is refused for such a file, naming it, never ignored.
    pub fn table_limit(&self, file: &str) -> Result<Option<usize>, SelectError> {
        let (key, flag) = match (self.family, &self.split, self.sample) {
            (Some(_), _, _) => ("family", ""),
            (None, Some(_), _) => ("split", " (--scenario-split)"),
            (None, None, Some(_)) => ("sample", " (--sample)"),
            (None, None, None) => return Ok(self.limit),
        };
        Err(SelectError::TableFile {
            file: file.to_string(),
            key,
            flag,
        })
    }

    /// What the run id folds in beyond the scenario ids: the split and the sample, each a word
    /// only when set (a run without them keeps the id it always had).
    pub(crate) fn identity(&self) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(family) = self.family {
            words.push(format!("family={family}"));
        }
        if let Some(split) = &self.split {
            words.push(format!("split={split}"));
        }
        if let Some(s) = self.sample {
            words.push(format!("sample={}@{}", s.size, s.seed));
        }
        words
    }

    /// How the scenarios were chosen, for the run's summary: `None` when every scenario of each
    /// file (or the first N) was played.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(family) = self.family {
            parts.push(format!("family {family}"));
        }
        if let Some(split) = &self.split {
            parts.push(format!("split {split}"));
        }
        if let Some(s) = self.sample {
            parts.push(format!(
                "a random sample of {} per file (sample seed {})",
                s.size, s.seed
            ));
        }
        if parts.is_empty() {
            return None;
        }
        if let Some(limit) = self.limit {
            parts.push(format!("the first {limit} of it"));
        }
        Some(format!("scenarios: {}", parts.join(", ")))
    }
}

/// The scenarios of `family`; an error naming the file's families when there are none.
fn of_family(
    file: &str,
    family: Family,
    scenarios: Vec<Scenario>,
) -> Result<Vec<Scenario>, SelectError> {
    let kept: Vec<Scenario> = scenarios
        .iter()
        .filter(|s| s.family == family)
        .cloned()
        .collect();
    if kept.is_empty() {
        let mut have: Vec<String> = scenarios.iter().map(|s| s.family.to_string()).collect();
        have.sort_unstable();
        have.dedup();
        return Err(SelectError::NoFamily {
            file: file.to_string(),
            family,
            have: if have.is_empty() {
                "no scenario".into()
            } else {
                have.join(", ")
            },
        });
    }
    Ok(kept)
}

/// The scenarios of `split`; an error naming the file's splits when there are none.
fn of_split(
    file: &str,
    split: &str,
    scenarios: Vec<Scenario>,
) -> Result<Vec<Scenario>, SelectError> {
    let mut have: Vec<&str> = scenarios
        .iter()
        .filter_map(|s| s.split.as_deref())
        .collect();
    have.sort_unstable();
    have.dedup();
    if !have.contains(&split) {
        return Err(if have.is_empty() {
            SelectError::NoSplits {
                file: file.to_string(),
                split: split.to_string(),
            }
        } else {
            SelectError::UnknownSplit {
                file: file.to_string(),
                split: split.to_string(),
                have: have.join(", "),
            }
        });
    }
    Ok(scenarios
        .into_iter()
        .filter(|s| s.split.as_deref() == Some(split))
        .collect())
}

/// The `sample.size` scenarios of smallest rank, in their file order.
fn sampled(scenarios: Vec<Scenario>, sample: Sample) -> Vec<Scenario> {
    if scenarios.len() <= sample.size {
        return scenarios;
    }
    if sample.size == 0 {
        return Vec::new();
    }
    let mut ranked: Vec<(u64, usize)> = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| (rank(&s.id, sample.seed), i))
        .collect();
    // Equal ranks (a duplicated id) fall back on the file order.
    ranked.select_nth_unstable(sample.size - 1);
    let mut keep = vec![false; scenarios.len()];
    for (_, i) in &ranked[..sample.size] {
        keep[*i] = true;
    }
    scenarios
        .into_iter()
        .zip(keep)
        .filter_map(|(s, k)| k.then_some(s))
        .collect()
}

/// A scenario's place in the sample drawn with `seed`: a well-spread hash of both.
fn rank(id: &str, seed: u64) -> u64 {
    mix(&[SAMPLE_SALT, seed, digest_bytes(id.as_bytes()).0])
}

/// The `[scenarios]` table of the config file: the same choices as the flags, which win.
///
/// ```toml
/// [scenarios]
/// family = "hotel"   # only this family's scenarios (a preset's paper plays one family)
/// split = "test"     # --scenario-split
/// sample = 100       # --sample
/// sample_seed = 7    # --sample-seed (default: the run's seed)
/// limit = 50         # --limit
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SelectConfig {
    /// Only the scenarios of this family, from each file; with no `--scenarios`, the family's
    /// own file, `scenarios/{family}.jsonl`. No flag: a config's or a preset's setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl SelectConfig {
    pub(crate) fn is_empty(&self) -> bool {
        self == &SelectConfig::default()
    }

    /// Each count within its limit: a sample of at least one scenario, and no more scenarios
    /// (nor a limit) than a plan may hold episodes.
    pub fn check(&self) -> Result<(), String> {
        if let Some(n) = self.sample {
            check_count("[scenarios] sample", n as u64, 1, MAX_EPISODES)?;
        }
        if let Some(n) = self.limit {
            check_count("[scenarios] limit", n as u64, 0, MAX_EPISODES)?;
        }
        Ok(())
    }
}

impl SelectConfig {
    /// The selection these choices (the flags': `--scenario-split`, `--sample`,
    /// `--sample-seed`, `--limit`) make over `file`'s (the config's `[scenarios]`), each where
    /// given winning; the sample seed, where neither gives one, is `run_seed`.
    pub fn selection_over(&self, file: &SelectConfig, run_seed: u64) -> Result<Selection, String> {
        let size = self.sample.or(file.sample);
        let seed = self.sample_seed.or(file.sample_seed);
        if size.is_none() && seed.is_some() {
            return Err(
                "--sample-seed (or [scenarios] sample_seed) is given without --sample N (or [scenarios] sample)"
                    .into(),
            );
        }
        let split = self.split.clone().or_else(|| file.split.clone());
        if split.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err("--scenario-split (or [scenarios] split): the split name is empty".into());
        }
        Ok(Selection {
            family: self.family.or(file.family),
            split,
            sample: size.map(|size| Sample {
                size,
                seed: seed.unwrap_or(run_seed),
            }),
            limit: self.limit.or(file.limit),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{load_scenarios, LoadOptions};

    fn file(name: &str) -> (String, Vec<Scenario>) {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("scenarios")
            .join(name);
        let scenarios = load_scenarios(&path, LoadOptions::default())
            .unwrap()
            .scenarios;
        (path.display().to_string(), scenarios)
    }

    fn ids(scenarios: &[Scenario]) -> Vec<String> {
        scenarios.iter().map(|s| s.id.clone()).collect()
    }

    fn sample(split: Option<&str>, size: usize, seed: u64) -> Selection {
        Selection {
            family: None,
            split: split.map(str::to_string),
            sample: Some(Sample { size, seed }),
            limit: None,
        }
    }

    #[test]
    fn a_split_keeps_its_scenarios_in_file_order() {
        let (name, all) = file("casino.jsonl");
        let split = Selection {
            split: Some("test".into()),
            ..Selection::default()
        };
        let test = split.apply(&name, all.clone()).unwrap();
        let want: Vec<String> = all
            .iter()
            .filter(|s| s.split.as_deref() == Some("test"))
            .map(|s| s.id.clone())
            .collect();
        assert_eq!(ids(&test), want);
        assert_eq!(test.len(), 100, "CaSiNo's test split");
        let first = Selection {
            limit: Some(3),
            ..split
        };
        assert_eq!(ids(&first.apply(&name, all).unwrap()), want[..3]);
    }

    #[test]
    fn a_sample_is_reproducible_without_replacement_and_differs_with_the_seed() {
        let (name, all) = file("casino.jsonl");
        let draw = |seed| {
            sample(Some("test"), 10, seed)
                .apply(&name, all.clone())
                .unwrap()
        };
        let a = draw(1);
        assert_eq!(a.len(), 10);
        assert!(a.iter().all(|s| s.split.as_deref() == Some("test")));
        let unique: std::collections::BTreeSet<&str> = a.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(unique.len(), 10, "without replacement");
        assert_eq!(ids(&a), ids(&draw(1)), "the same seed, the same sample");
        assert_ne!(ids(&a), ids(&draw(2)), "another seed, another sample");
        // Not the first ten: a sample, in file order.
        let first: Vec<String> = ids(&all)
            .into_iter()
            .filter(|id| ids(&a).contains(id))
            .collect();
        assert_eq!(ids(&a), first, "file order kept");
        // The file's line order does not matter, nor do the other lines (another split).
        let mut reversed: Vec<Scenario> = all
            .iter()
            .filter(|s| s.split.as_deref() == Some("test"))
            .cloned()
            .collect();
        reversed.reverse();
        let mut b = ids(&sample(None, 10, 1).apply(&name, reversed).unwrap());
        b.sort();
        let mut a_sorted = ids(&a);
        a_sorted.sort();
        assert_eq!(a_sorted, b);
        // Asking for more than there is gives all of them, once each.
        assert_eq!(
            sample(Some("valid"), 1000, 1)
                .apply(&name, all.clone())
                .unwrap()
                .len(),
            30
        );
        // The limit takes the first of the sample.
        let limited = Selection {
            limit: Some(4),
            ..sample(Some("test"), 10, 1)
        };
        assert_eq!(ids(&limited.apply(&name, all).unwrap()), ids(&a)[..4]);
    }

    #[test]
    fn a_sample_is_spread_over_the_file() {
        // Each of 1,030 CaSiNo scenarios drawn about equally often over many seeds: the
        // ranks are a fair shuffle, not biased to the ids' look.
        let (name, all) = file("casino.jsonl");
        let mut hits = std::collections::HashMap::<String, u32>::new();
        for seed in 0..200 {
            for s in sample(None, 103, seed).apply(&name, all.clone()).unwrap() {
                *hits.entry(s.id).or_default() += 1;
            }
        }
        // Expected 20 per scenario (200 draws of a tenth); a fair sampler stays well inside.
        assert!(hits.len() > 1000, "{} scenarios ever drawn", hits.len());
        assert!(hits.values().all(|n| *n <= 45), "{:?}", hits.values().max());
    }

    #[test]
    fn a_split_a_file_cannot_give_is_named_by_both_its_flag_and_its_key() {
        // A server's split comes from its config alone (serve has no --scenario-split): the
        // refusal names the key as well as the flag.
        let (name, all) = file("ahp.jsonl");
        let split = Selection {
            split: Some("test".into()),
            ..Selection::default()
        };
        let e = split.apply(&name, all).unwrap_err().to_string();
        assert!(e.contains("--scenario-split, or [scenarios] split"), "{e}");
        // A table file takes a limit, and refuses a split or a sample rather than ignore it.
        assert_eq!(
            Selection::first(Some(2)).table_limit("t.jsonl"),
            Ok(Some(2))
        );
        let e = split.table_limit("t.jsonl").unwrap_err().to_string();
        assert!(
            e.starts_with("t.jsonl holds table scenarios") && e.contains("split"),
            "{e}"
        );
        // Nor a two-party family, which no table scenario has.
        let family = Selection {
            family: Some(crate::scenario::Family::Casino),
            ..Selection::default()
        };
        let e = family.table_limit("t.jsonl").unwrap_err().to_string();
        assert!(e.contains("[scenarios] family chooses"), "{e}");
    }

    #[test]
    fn a_family_keeps_its_scenarios_and_a_file_without_them_is_refused() {
        let (hotel_name, hotel) = file("hotel.jsonl");
        let only = Selection {
            family: Some(Family::Hotel),
            ..Selection::default()
        };
        assert_eq!(
            ids(&only.apply(&hotel_name, hotel.clone()).unwrap()),
            ids(&hotel)
        );
        // Another family's file: refused, naming what it holds.
        let (name, casino) = file("casino.jsonl");
        let err = only.apply(&name, casino.clone()).unwrap_err().to_string();
        assert!(
            err.starts_with(&name) && err.ends_with("the file holds casino"),
            "{err}"
        );
        assert!(err.contains("no scenario of family `hotel`"), "{err}");
        // A file of both: the family's scenarios alone, in order; then split and limit.
        let mixed: Vec<Scenario> = casino.into_iter().chain(hotel.clone()).collect();
        assert_eq!(ids(&only.apply(&name, mixed.clone()).unwrap()), ids(&hotel));
        let first_test = Selection {
            split: Some("test".into()),
            limit: Some(2),
            ..only.clone()
        };
        let want: Vec<String> = hotel
            .iter()
            .filter(|s| s.split.as_deref() == Some("test"))
            .take(2)
            .map(|s| s.id.clone())
            .collect();
        assert_eq!(ids(&first_test.apply(&name, mixed).unwrap()), want);
        assert_eq!(only.identity(), ["family=hotel"]);
        // The config's family goes under the flags, which have none.
        let config = SelectConfig {
            family: Some(Family::Hotel),
            ..SelectConfig::default()
        };
        let s = SelectConfig::default().selection_over(&config, 0).unwrap();
        assert_eq!(s.family, Some(Family::Hotel));
    }

    #[test]
    fn an_unknown_or_missing_split_names_the_files_splits() {
        let (name, all) = file("casino.jsonl");
        let typo = Selection {
            split: Some("tset".into()),
            ..Selection::default()
        };
        let err = typo.apply(&name, all).unwrap_err().to_string();
        assert!(
            err.ends_with("no scenario of split `tset`; the file's splits are test, train, valid"),
            "{err}"
        );
        assert!(err.starts_with(&name), "{err}");
        let (name, ahp) = file("ahp.jsonl");
        let split = Selection {
            split: Some("test".into()),
            ..Selection::default()
        };
        let err = split.apply(&name, ahp).unwrap_err().to_string();
        assert!(err.contains("no scenario has a split"), "{err}");
    }

    #[test]
    fn flags_win_over_the_config_and_the_sample_seed_defaults_to_the_runs() {
        let config = SelectConfig {
            family: None,
            split: Some("valid".into()),
            sample: Some(3),
            sample_seed: None,
            limit: Some(2),
        };
        let none = SelectConfig::default();
        let s = none.selection_over(&config, 9).unwrap();
        assert_eq!(s.split.as_deref(), Some("valid"));
        assert_eq!(s.sample, Some(Sample { size: 3, seed: 9 }));
        assert_eq!(s.limit, Some(2));
        let flags = SelectConfig {
            family: None,
            split: Some("test".into()),
            sample: Some(5),
            sample_seed: Some(1),
            limit: None,
        };
        let s = flags.selection_over(&config, 9).unwrap();
        assert_eq!(
            (s.split.as_deref(), s.sample),
            (Some("test"), Some(Sample { size: 5, seed: 1 }))
        );
        assert_eq!(s.identity(), ["split=test", "sample=5@1"]);
        assert!(
            Selection::first(Some(4)).identity().is_empty(),
            "old run ids stay"
        );
        let zero = SelectConfig {
            sample: Some(0),
            ..SelectConfig::default()
        };
        assert_eq!(
            zero.check().unwrap_err(),
            "[scenarios] sample must be from 1 to 10000000; it is 0"
        );
        let huge = SelectConfig {
            limit: Some(usize::MAX),
            ..SelectConfig::default()
        };
        assert!(huge.check().unwrap_err().starts_with("[scenarios] limit"));
        assert_eq!(config.check(), Ok(()));
        let seed_alone = SelectConfig {
            sample_seed: Some(1),
            ..SelectConfig::default()
        };
        assert!(seed_alone
            .selection_over(&SelectConfig::default(), 0)
            .is_err());
    }
}
