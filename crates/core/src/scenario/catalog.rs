//! The scenarios one process can play, by id and by family, and how a choice picks one: by
//! id, by family and index, or drawn from a seed. One [`Catalog`] for every kind of
//! scenario — two-party ([`Scenario`]), n-party ([`TableScenario`]) and markets
//! ([`MarketScenario`]) — so the pick rule (`mix(&[seed]) % len`, the index past the end, the
//! unknown id naming what is loaded) has one home. `dealgym serve`'s resets and the Python binding's games pick through it alike,
//! so the same seed picks the same scenario on every face (the index is the episode's group,
//! as [`EpisodeSeed::reset`](crate::game::EpisodeSeed::reset) says).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use super::{Family, MarketFamily, MarketScenario, Scenario, TableFamily, TableScenario};
use crate::digest::Digest;
use crate::game::mix;

/// A scenario that was asked for and is not there; the message says what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownScenario(pub String);

/// What a [`Catalog`] needs of a scenario: its id, its family and its content digest.
pub trait Listed {
    /// The kind's family (`Family` for two-party scenarios, `TableFamily` for tables).
    type Family: Copy + Eq + Hash;
    /// How a message names this kind of scenario (`scenario`, `table scenario`).
    const KIND: &'static str;
    fn id(&self) -> &str;
    fn family(&self) -> Self::Family;
    fn family_name(family: Self::Family) -> &'static str;
    /// The content digest a record keeps (computed once per loaded scenario).
    fn digest(&self) -> Digest;
}

impl Listed for Scenario {
    type Family = Family;
    const KIND: &'static str = "scenario";
    fn id(&self) -> &str {
        &self.id
    }
    fn family(&self) -> Family {
        self.family
    }
    fn family_name(family: Family) -> &'static str {
        family.name()
    }
    fn digest(&self) -> Digest {
        Scenario::digest(self)
    }
}

impl Listed for TableScenario {
    type Family = TableFamily;
    const KIND: &'static str = "table scenario";
    fn id(&self) -> &str {
        &self.id
    }
    fn family(&self) -> TableFamily {
        self.family
    }
    fn family_name(family: TableFamily) -> &'static str {
        family.name()
    }
    fn digest(&self) -> Digest {
        crate::digest::digest_json(self)
    }
}

impl Listed for MarketScenario {
    type Family = MarketFamily;
    const KIND: &'static str = "market scenario";
    fn id(&self) -> &str {
        &self.id
    }
    fn family(&self) -> MarketFamily {
        self.family
    }
    fn family_name(family: MarketFamily) -> &'static str {
        family.name()
    }
    fn digest(&self) -> Digest {
        crate::digest::digest_json(self)
    }
}

/// The scenarios loaded, by id and by family, each with its digest computed once.
#[derive(Debug, Clone)]
pub struct Catalog<S: Listed = Scenario> {
    pub scenarios: Vec<Arc<S>>,
    digests: Vec<Digest>,
    by_id: HashMap<String, usize>,
    by_family: HashMap<S::Family, Vec<usize>>,
}

impl<S: Listed> Default for Catalog<S> {
    fn default() -> Catalog<S> {
        Catalog::new(Vec::new())
    }
}

impl<S: Listed> Catalog<S> {
    pub fn new(scenarios: Vec<Arc<S>>) -> Catalog<S> {
        let digests = scenarios.iter().map(|s| s.digest()).collect();
        let mut by_id = HashMap::new();
        let mut by_family: HashMap<S::Family, Vec<usize>> = HashMap::new();
        for (i, s) in scenarios.iter().enumerate() {
            by_id.entry(s.id().to_string()).or_insert(i);
            by_family.entry(s.family()).or_default().push(i);
        }
        Catalog {
            scenarios,
            digests,
            by_id,
            by_family,
        }
    }

    /// The digest of the scenario at `index`, as a record keeps it.
    pub fn digest(&self, index: usize) -> Digest {
        self.digests[index]
    }

    /// Whether a scenario of this id is loaded.
    pub fn has(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// The ids of `family`'s scenarios (every scenario's, for `None`), in the order they were
    /// loaded (the order `index` counts in).
    pub fn ids(&self, family: Option<S::Family>) -> impl Iterator<Item = &str> {
        let positions: Vec<usize> = match family {
            Some(f) => self.by_family.get(&f).cloned().unwrap_or_default(),
            None => (0..self.scenarios.len()).collect(),
        };
        positions.into_iter().map(|i| self.scenarios[i].id())
    }

    /// The index of the scenario asked for: by id, by family and index, by family (drawn
    /// from the seed), or drawn from the seed among all.
    pub fn pick(
        &self,
        id: Option<&str>,
        family: Option<S::Family>,
        index: Option<usize>,
        seed: u64,
    ) -> Result<usize, UnknownScenario> {
        if let Some(id) = id {
            return self.by_id.get(id).copied().ok_or_else(|| {
                UnknownScenario(format!(
                    "no {} `{id}` (loaded: {})",
                    S::KIND,
                    self.some_ids(family)
                ))
            });
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
        let of_family = family
            .map(|f| format!(" of family {}", S::family_name(f)))
            .unwrap_or_default();
        if len == 0 {
            return Err(UnknownScenario(format!(
                "no {}s{of_family} are loaded",
                S::KIND
            )));
        }
        let at = match index {
            Some(i) if i >= len => {
                return Err(UnknownScenario(format!(
                    "index {i} is past the {len} {}s loaded{of_family}",
                    S::KIND
                )))
            }
            Some(i) => i,
            None => (mix(&[seed]) % len as u64) as usize,
        };
        Ok(if family.is_some() { pool[at] } else { at })
    }

    /// A few ids (of `family`'s, where one was asked for), for a message.
    fn some_ids(&self, family: Option<S::Family>) -> String {
        let mut ids: Vec<&str> = self.ids(family).take(5).collect();
        let total = match family {
            Some(f) => self.by_family.get(&f).map_or(0, Vec::len),
            None => self.scenarios.len(),
        };
        if total > ids.len() {
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
    use crate::fixtures;
    use crate::table::tests::six_party;

    type TableCatalog = Catalog<TableScenario>;

    /// Both kinds pick through the one rule: by id, by index, past the end, drawn from the
    /// seed (`mix(&[seed]) % len`, as before the two catalogs were one).
    #[test]
    fn both_kinds_pick_by_id_index_or_seed_through_one_rule() {
        let a = six_party();
        let mut b = six_party();
        b.id = "deliberation:test:greedy".into();
        let tables = TableCatalog::new(vec![Arc::new(a), Arc::new(b)]);
        let pairs = Catalog::new(vec![fixtures::price(), fixtures::casino(), fixtures::job()]);

        assert_eq!(
            tables.pick(Some("deliberation:test:greedy"), None, None, 0),
            Ok(1)
        );
        assert_eq!(
            pairs.pick(Some(&pairs.scenarios[2].id), None, None, 0),
            Ok(2)
        );
        assert_eq!(tables.pick(None, None, Some(0), 9), Ok(0));
        assert_eq!(
            tables.pick(None, Some(TableFamily::Deliberation), Some(1), 9),
            Ok(1)
        );
        // The family's own positions: casino is the first of its family.
        assert_eq!(pairs.pick(None, Some(Family::Casino), Some(0), 9), Ok(1));

        for seed in 0..64 {
            let drawn = (mix(&[seed]) % 2) as usize;
            assert_eq!(tables.pick(None, None, None, seed), Ok(drawn));
            let drawn = (mix(&[seed]) % 3) as usize;
            assert_eq!(pairs.pick(None, None, None, seed), Ok(drawn));
        }

        let past = tables.pick(None, None, Some(2), 0).unwrap_err();
        assert_eq!(past.0, "index 2 is past the 2 table scenarios loaded");
        let past = pairs
            .pick(None, Some(Family::Casino), Some(1), 0)
            .unwrap_err();
        assert_eq!(
            past.0,
            "index 1 is past the 1 scenarios loaded of family casino"
        );
        assert!(TableCatalog::default().pick(None, None, None, 0).is_err());
        assert!(pairs.pick(None, Some(Family::Hotel), None, 0).is_err());
    }

    /// An unknown id is refused naming a few of the ids that are loaded, for either kind.
    #[test]
    fn an_unknown_id_names_what_is_loaded() {
        let tables = TableCatalog::new(vec![Arc::new(six_party())]);
        let err = tables.pick(Some("nope"), None, None, 0).unwrap_err();
        assert!(err.0.contains("no table scenario `nope`"), "{err}");
        assert!(err.0.contains("deliberation:test:cooperative"), "{err}");

        let pairs = Catalog::new(vec![fixtures::price(), fixtures::casino()]);
        let err = pairs.pick(Some("nope"), None, None, 0).unwrap_err();
        assert!(err.0.contains("no scenario `nope`"), "{err}");
        assert!(err.0.contains(&pairs.scenarios[0].id), "{err}");
        // Asked within a family, the family's ids are the ones named.
        let err = pairs
            .pick(Some("nope"), Some(Family::Casino), None, 0)
            .unwrap_err();
        assert!(err.0.contains(&pairs.scenarios[1].id), "{err}");
        assert!(!err.0.contains(&pairs.scenarios[0].id), "{err}");
    }

    #[test]
    fn a_table_digest_is_its_record_digest() {
        let s = six_party();
        let tables = TableCatalog::new(vec![Arc::new(s.clone())]);
        assert_eq!(tables.digest(0), crate::digest::digest_json(&s));
    }
}
