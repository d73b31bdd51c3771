//! The scenario files of the repository, compiled in and parsed on first use, one family at
//! a time, into core's [`Catalog`] (the one `dealgym serve` picks from too).

use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use dealgym_core::scenario::{load_scenarios_from_reader, Catalog, Family, LoadOptions, Role};
use pyo3::prelude::*;

use crate::errors::ScenarioError;

/// Each family's scenario file, as `scenarios/` holds it (`Family::ALL`'s order).
const FILES: [(Family, &str); 7] = [
    (Family::Ahp, include_str!("../../../scenarios/ahp.jsonl")),
    (
        Family::Craigslist,
        include_str!("../../../scenarios/craigslist.jsonl"),
    ),
    (
        Family::Casino,
        include_str!("../../../scenarios/casino.jsonl"),
    ),
    (Family::Dnd, include_str!("../../../scenarios/dnd.jsonl")),
    (
        Family::JobInterview,
        include_str!("../../../scenarios/job_interview.jsonl"),
    ),
    (
        Family::Bundle,
        include_str!("../../../scenarios/bundle.jsonl"),
    ),
    (
        Family::Hotel,
        include_str!("../../../scenarios/hotel.jsonl"),
    ),
];

static CATALOGS: [OnceLock<Result<Catalog, String>>; FILES.len()] =
    [const { OnceLock::new() }; FILES.len()];

/// The family named `name` (a file stem or a usual abbreviation, as the command line takes).
pub fn family(name: &str) -> PyResult<Family> {
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
    Role::from_str(name)
        .ok()
        .filter(|r| roles.contains(r))
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
    let at = FILES
        .iter()
        .position(|(f, _)| *f == family)
        .expect("every family has a file");
    let loaded = CATALOGS[at].get_or_init(|| {
        let file = format!("scenarios/{}.jsonl", family.name());
        load_scenarios_from_reader(&file, FILES[at].1.as_bytes(), LoadOptions::default())
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
