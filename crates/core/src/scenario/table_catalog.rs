//! The table scenarios one process can play, and how a reset picks one: by id, by index, or
//! drawn from the seed, exactly as [`Catalog::pick`](super::Catalog::pick) picks a two-party
//! scenario. `dealgym serve`'s table resets and the Python binding's `TableGame` pick through
//! it alike, so the same seed and scenario give the same table on every face (the index is
//! the episode's group, as [`EpisodeSeed::reset`](crate::game::EpisodeSeed::reset) says).

use std::collections::HashMap;
use std::sync::Arc;

use super::{TableScenario, UnknownScenario};
use crate::game::mix;

/// The table scenarios loaded, in load order, by id.
#[derive(Debug, Clone, Default)]
pub struct TableCatalog {
    pub scenarios: Vec<Arc<TableScenario>>,
    by_id: HashMap<String, usize>,
}

impl TableCatalog {
    pub fn new(scenarios: Vec<Arc<TableScenario>>) -> TableCatalog {
        let mut by_id = HashMap::new();
        for (i, s) in scenarios.iter().enumerate() {
            by_id.entry(s.id.clone()).or_insert(i);
        }
        TableCatalog { scenarios, by_id }
    }

    /// The ids, in the order `index` counts in.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.scenarios.iter().map(|s| s.id.as_str())
    }

    /// The index of the scenario asked for: by id, by index, or drawn from `seed`.
    pub fn pick(
        &self,
        id: Option<&str>,
        index: Option<usize>,
        seed: u64,
    ) -> Result<usize, UnknownScenario> {
        if let Some(id) = id {
            return self.by_id.get(id).copied().ok_or_else(|| {
                UnknownScenario(format!(
                    "no table scenario `{id}` (loaded: {})",
                    self.some_ids()
                ))
            });
        }
        let len = self.scenarios.len();
        if len == 0 {
            return Err(UnknownScenario("no table scenarios are loaded".into()));
        }
        match index {
            Some(i) if i >= len => Err(UnknownScenario(format!(
                "index {i} is past the {len} table scenarios loaded"
            ))),
            Some(i) => Ok(i),
            None => Ok((mix(&[seed]) % len as u64) as usize),
        }
    }

    /// A few ids, for a message.
    fn some_ids(&self) -> String {
        let mut ids: Vec<&str> = self.ids().take(5).collect();
        if self.scenarios.len() > ids.len() {
            ids.push("…");
        }
        if ids.is_empty() {
            "none".into()
        } else {
            ids.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::six_party;

    #[test]
    fn picks_by_id_index_or_seed_and_names_what_is_missing() {
        let a = six_party();
        let mut b = six_party();
        b.id = "deliberation:test:greedy".into();
        let catalog = TableCatalog::new(vec![Arc::new(a), Arc::new(b)]);
        assert_eq!(
            catalog.pick(Some("deliberation:test:greedy"), None, 0),
            Ok(1)
        );
        assert_eq!(catalog.pick(None, Some(0), 9), Ok(0));
        let err = catalog.pick(Some("nope"), None, 0).unwrap_err();
        assert!(err.0.contains("`nope`") && err.0.contains("deliberation:test:cooperative"));
        assert!(catalog
            .pick(None, Some(2), 0)
            .unwrap_err()
            .0
            .contains("index 2"));
        // The same seed draws the same scenario; the draw covers both.
        let drawn: Vec<usize> = (0..64)
            .map(|s| catalog.pick(None, None, s).unwrap())
            .collect();
        assert_eq!(
            drawn,
            (0..64)
                .map(|s| catalog.pick(None, None, s).unwrap())
                .collect::<Vec<_>>()
        );
        assert!(drawn.contains(&0) && drawn.contains(&1));
        assert!(TableCatalog::default().pick(None, None, 0).is_err());
    }
}
