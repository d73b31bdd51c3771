//! The repository's scenario files, compiled in: one home for every face that plays without a
//! checkout at hand. The Python package reads them (it has no `scenarios/` folder), and the
//! command line falls back on them where it would read its default folder's file and finds
//! none, so `dealgym run`, `replay --verify`, `export` and `report` work from any folder.
//!
//! The rule: a path that is the default folder's file of a built-in family
//! (`scenarios/FAMILY.jsonl`, relative) and does not exist reads as the built-in text. A file
//! that exists is always read, and a path anywhere else is never replaced.

use std::io::BufRead;
use std::path::{Component, Path};

/// The folder, relative to the working directory, the command line reads a family's
/// scenarios from by default (`scenarios/FAMILY.jsonl`).
pub const SCENARIO_DIR: &str = "scenarios";

/// Each built-in file's stem (a two-party [`Family`](super::Family)'s or a
/// [`TableFamily`](super::TableFamily)'s name, or `market`) and its text, as `scenarios/`
/// holds it.
const FILES: [(&str, &str); 9] = [
    ("ahp", include_str!("../../../../scenarios/ahp.jsonl")),
    (
        "craigslist",
        include_str!("../../../../scenarios/craigslist.jsonl"),
    ),
    ("casino", include_str!("../../../../scenarios/casino.jsonl")),
    ("dnd", include_str!("../../../../scenarios/dnd.jsonl")),
    (
        "job_interview",
        include_str!("../../../../scenarios/job_interview.jsonl"),
    ),
    ("bundle", include_str!("../../../../scenarios/bundle.jsonl")),
    ("hotel", include_str!("../../../../scenarios/hotel.jsonl")),
    (
        "deliberation",
        include_str!("../../../../scenarios/deliberation.jsonl"),
    ),
    ("market", include_str!("../../../../scenarios/market.jsonl")),
];

/// The built-in scenario file of the family named `name` (`casino`, `deliberation`, …): the
/// text of `scenarios/{name}.jsonl` as this build was made from it.
pub fn builtin_scenarios(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(stem, _)| *stem == name).map(|f| f.1)
}

/// The built-in text `path` reads as: `path` is `scenarios/FAMILY.jsonl` (relative to the
/// working directory, `./` allowed) of a built-in family, and no such file exists.
fn standing_in_for(path: &Path) -> Option<&'static str> {
    let mut parts = path.components().filter(|c| *c != Component::CurDir);
    let (Some(Component::Normal(dir)), Some(Component::Normal(file)), None) =
        (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let name = file.to_str()?.strip_suffix(".jsonl")?;
    if dir != SCENARIO_DIR || path.exists() {
        return None;
    }
    builtin_scenarios(name)
}

/// Whether a scenario file can be read at `path`: it exists, or the built-in text stands in
/// for it.
pub fn scenario_file_exists(path: &Path) -> bool {
    path.exists() || standing_in_for(path).is_some()
}

/// The scenario file at `path` to read: the file, or the built-in text standing in for it.
pub(crate) fn open_scenario_file(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    if let Some(text) = standing_in_for(path) {
        return Ok(Box::new(text.as_bytes()));
    }
    let file = std::fs::File::open(path)?;
    Ok(Box::new(std::io::BufReader::new(file)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Family, TableFamily};

    #[test]
    fn every_family_has_its_file_built_in() {
        for family in Family::ALL {
            let text = builtin_scenarios(family.name()).unwrap();
            assert!(
                text.contains(&format!("\"id\":\"{}:", family.name())),
                "{family:?}"
            );
        }
        assert!(builtin_scenarios(TableFamily::Deliberation.name()).is_some());
        assert!(builtin_scenarios("campaigns").is_none());
    }

    #[test]
    fn only_a_missing_default_file_reads_as_built_in() {
        // The tests run in the crate's folder, which has no `scenarios/`.
        assert!(!Path::new("scenarios").exists());
        assert!(standing_in_for(Path::new("scenarios/casino.jsonl")).is_some());
        assert!(standing_in_for(Path::new("./scenarios/deliberation.jsonl")).is_some());
        assert!(standing_in_for(Path::new("data/casino.jsonl")).is_none());
        assert!(standing_in_for(Path::new("/scenarios/casino.jsonl")).is_none());
        assert!(standing_in_for(Path::new("x/scenarios/casino.jsonl")).is_none());
        assert!(standing_in_for(Path::new("scenarios/nope.jsonl")).is_none());
        assert!(standing_in_for(Path::new("scenarios/casino.json")).is_none());
        // The repository's own file exists: it is read, not replaced.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/casino.jsonl");
        assert!(standing_in_for(&root).is_none());
        assert!(scenario_file_exists(Path::new("scenarios/casino.jsonl")));
        assert!(!scenario_file_exists(Path::new("scenarios/nope.jsonl")));
    }
}
