//! The scenario files of the repository, compiled into dealgym-core (`builtin_scenarios`, which
//! the command line falls back on too) and parsed on first use, one family at a time, into
//! core's [`Catalog`] (the one `dealgym serve` picks from too).

use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use dealgym_core::scenario::{
    builtin_scenarios, load_scenarios_from_reader, Catalog, Family, LoadOptions, MarketFamily, Role,
};
use pyo3::prelude::*;

use crate::errors::ScenarioError;

static CATALOGS: [OnceLock<Result<Catalog, String>>; Family::ALL.len()] =
    [const { OnceLock::new() }; Family::ALL.len()];

/// The two-party family named `name` (a file stem or a usual abbreviation, as the command
/// line takes); `market` is refused naming where its roles and scenarios are.
pub fn family(name: &str) -> PyResult<Family> {
    if name
        .trim()
        .eq_ignore_ascii_case(MarketFamily::Market.name())
    {
        return Err(ScenarioError::new_err(
            "`market` is no two-party family: a market's roles are its traders' and its \
             scenarios a market file's; play one as Game(\"market\", ...) (its `roles`)",
        ));
    }
    Family::from_str(name).map_err(|_| {
        ScenarioError::new_err(format!(
            "unknown family `{name}`: one of {}",
            family_names().join(", ")
        ))
    })
}

/// The role named `name` in `family`.
pub fn role(family: Family, name: &str) -> PyResult<Role> {
    let roles = family.roles();
    // A role's own name, as every face spells it, is found without the lenient reading's
    // allocations: `observe` and `step` name a role at every step of the loop.
    roles
        .iter()
        .copied()
        .find(|r| r.name() == name)
        .or_else(|| Role::from_str(name).ok().filter(|r| roles.contains(r)))
        .ok_or_else(|| {
            ScenarioError::new_err(format!(
                "unknown role `{name}` in {}: {} or {}",
                family.name(),
                roles[0].name(),
                roles[1].name()
            ))
        })
}

/// `family`'s scenarios, parsed the first time they are asked for.
pub fn catalog(family: Family) -> PyResult<&'static Catalog> {
    let at = Family::ALL
        .iter()
        .position(|f| *f == family)
        .expect("Family::ALL holds every family");
    let loaded = CATALOGS[at].get_or_init(|| {
        let file = format!("scenarios/{}.jsonl", family.name());
        let text =
            builtin_scenarios(family.name()).ok_or_else(|| format!("this build has no {file}"))?;
        load_scenarios_from_reader(&file, text.as_bytes(), LoadOptions::default())
            .map(|report| Catalog::new(report.scenarios.into_iter().map(Arc::new).collect()))
            .map_err(|e| e.to_string())
    });
    loaded
        .as_ref()
        .map_err(|e| ScenarioError::new_err(format!("the built-in scenarios: {e}")))
}

fn family_names() -> Vec<&'static str> {
    Family::ALL.iter().map(|f| f.name()).collect()
}

/// The families a `Game` can play.
#[pyfunction]
pub fn families() -> Vec<&'static str> {
    family_names()
}

/// The two roles of `family`, in the dataset's order (the PettingZoo agents).
#[pyfunction]
pub fn roles(family: &str) -> PyResult<(&'static str, &'static str)> {
    let [a, b] = self::family(family)?.roles();
    Ok((a.name(), b.name()))
}

/// The ids of `family`'s built-in scenarios, in the order `index` counts in.
#[pyfunction]
pub fn scenario_ids(family: &str) -> PyResult<Vec<String>> {
    let family = self::family(family)?;
    Ok(catalog(family)?
        .ids(Some(family))
        .map(str::to_string)
        .collect())
}
