//! The scenarios a server can play, by id and by family, and how a reset's choice picks one.

use std::collections::HashMap;
use std::sync::Arc;

use super::error::ServeError;
use crate::digest::Digest;
use crate::game::{mix, EpisodeSeed};
use crate::run::PlannedEpisode;
use crate::scenario::{Family, Scenario};

/// The scenarios the server can play, by id and by family.
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

    /// The index of the scenario a reset asks for: by id, by family and index, by family (drawn
    /// from the seed), or drawn from the seed among all.
    pub fn pick(
        &self,
        id: Option<&str>,
        family: Option<Family>,
        index: Option<usize>,
        seed: u64,
    ) -> Result<usize, ServeError> {
        if let Some(id) = id {
            return self
                .by_id
                .get(id)
                .copied()
                .ok_or_else(|| ServeError::UnknownScenario(id.to_string()));
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
            return Err(ServeError::UnknownScenario(match family {
                Some(f) => format!("no scenario of family {} is loaded", f.name()),
                None => "no scenarios are loaded".into(),
            }));
        }
        let at = match index {
            Some(i) if i >= len => {
                return Err(ServeError::UnknownScenario(format!(
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

    pub fn planned(&self, index: usize, seeds: EpisodeSeed) -> PlannedEpisode {
        PlannedEpisode {
            scenario: self.scenarios[index].clone(),
            scenario_digest: self.digests[index],
            seeds,
            prefix: None,
            tag: None,
        }
    }
}
