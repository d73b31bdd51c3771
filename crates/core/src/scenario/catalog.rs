//! The scenarios one process can play, by id and by family, and how a choice picks one: by
//! id, by family and index, or drawn from a seed. `dealgym serve`'s resets and the Python
//! binding's `Game` pick through it alike, so the same seed picks the same scenario.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Family, Scenario};
use crate::digest::Digest;
use crate::game::mix;

/// A scenario that was asked for and is not there; the message says what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownScenario(pub String);

/// The scenarios loaded, by id and by family, each with its digest computed once.
pub struct Catalog {
    pub scenarios: Vec<Arc<Scenario>>,
    digests: Vec<Digest>,
    by_id: HashMap<String, usize>,
    by_family: HashMap<Family, Vec<usize>>,
}

impl Catalog {
    pub fn new(scenarios: Vec<Arc<Scenario>>) -> Catalog {
        let digests = scenarios.iter().map(|s| s.digest()).collect();
        let mut by_id = HashMap::new();
        let mut by_family: HashMap<Family, Vec<usize>> = HashMap::new();
        for (i, s) in scenarios.iter().enumerate() {
            by_id.entry(s.id.clone()).or_insert(i);
            by_family.entry(s.family).or_default().push(i);
        }
        Catalog {
            scenarios,
            digests,
            by_id,
            by_family,
        }
    }

    /// The digest of the scenario at `index` ([`Scenario::digest`]), as a record keeps it.
    pub fn digest(&self, index: usize) -> Digest {
        self.digests[index]
    }

    /// The ids of `family`'s scenarios, in the order they were loaded (the order `index`
    /// counts in).
    pub fn ids(&self, family: Family) -> impl Iterator<Item = &str> {
        self.by_family
            .get(&family)
            .into_iter()
            .flatten()
            .map(|&i| self.scenarios[i].id.as_str())
    }

    /// The index of the scenario asked for: by id, by family and index, by family (drawn
    /// from the seed), or drawn from the seed among all.
    pub fn pick(
        &self,
        id: Option<&str>,
        family: Option<Family>,
        index: Option<usize>,
        seed: u64,
    ) -> Result<usize, UnknownScenario> {
        if let Some(id) = id {
            return self
                .by_id
                .get(id)
                .copied()
                .ok_or_else(|| UnknownScenario(id.to_string()));
        }
        let pool: &[usize] = match family {
            Some(f) => self.by_family.get(&f).map(Vec::as_slice).unwrap_or(&[]),
            None => &[],
        };
        let len = if family.is_some() {
            pool.len()
        } else {
            self.scenarios.len()
        };
        if len == 0 {
            return Err(UnknownScenario(match family {
                Some(f) => format!("no scenario of family {} is loaded", f.name()),
                None => "no scenarios are loaded".into(),
            }));
        }
        let at = match index {
            Some(i) if i >= len => {
                return Err(UnknownScenario(format!(
                    "index {i} is past the {len} scenarios loaded{}",
                    family
                        .map(|f| format!(" of family {}", f.name()))
                        .unwrap_or_default()
                )))
            }
            Some(i) => i,
            None => (mix(&[seed]) % len as u64) as usize,
        };
        Ok(if family.is_some() { pool[at] } else { at })
    }
}
