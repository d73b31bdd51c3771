//! `dealgym run --scenario-split NAME --sample N` as a process: N scenarios of that split, the
//! same ones on every run with the same seed, and a run id that tells the choice apart; a split
//! the file lacks is an error naming the file's splits.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{read_log, temp_dir};

fn casino() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl")
}

fn run(scenarios: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .arg("run")
        .arg("--scenarios")
        .arg(scenarios)
        .args(["--learner", "rule:linear", "--opponent", "rule:conceder"])
        .args(["--seed", "3", "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// (run id, scenario ids) of a run's file.
fn played(out: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let records = read_log(out);
    (
        records.iter().map(|r| r.run_id.clone()).collect(),
        records.iter().map(|r| r.scenario_id.clone()).collect(),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_seeded_sample_of_the_test_split_is_the_same_twice() {
    let dir = temp_dir("scenario-selection");
    let splits: BTreeMap<String, Option<String>> = std::fs::read_to_string(casino())
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["split"].as_str().map(str::to_string),
            )
        })
        .collect();
    let pick = ["--scenario-split", "test", "--sample", "5"];
    let mut seen = Vec::new();
    for name in ["a.jsonl", "b.jsonl"] {
        let out = dir.join(name);
        let done = run(&casino(), &out, &pick);
        assert!(done.status.success(), "{}", text(&done.stderr));
        assert!(
            text(&done.stderr)
                .contains("scenarios: split test, a random sample of 5 per file (sample seed 3)"),
            "{}",
            text(&done.stderr)
        );
        let (runs, ids) = played(&out);
        assert_eq!(ids.len(), 5, "{ids:?}");
        for id in &ids {
            assert_eq!(splits[id].as_deref(), Some("test"), "{id}");
        }
        assert_eq!(runs.len(), 1);
        seen.push((runs, ids));
    }
    assert_eq!(seen[0], seen[1], "the same scenarios and run id twice");

    // Another sample seed: other scenarios, another run id; resuming into the first file with
    // it is refused rather than mixing two plans.
    let other = dir.join("c.jsonl");
    let done = run(
        &casino(),
        &other,
        &[&pick[..], &["--sample-seed", "4"]].concat(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let (runs, ids) = played(&other);
    assert_ne!(ids, seen[0].1);
    assert_ne!(runs, seen[0].0);
    let mixed = run(
        &casino(),
        &dir.join("a.jsonl"),
        &[&pick[..], &["--sample-seed", "4", "--resume"]].concat(),
    );
    assert!(!mixed.status.success(), "a resume into another plan's file");

    // The whole split, its first 3: not the sample's.
    let first = dir.join("d.jsonl");
    let done = run(
        &casino(),
        &first,
        &["--scenario-split", "test", "--limit", "3"],
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let (_, ids) = played(&first);
    let want: BTreeSet<String> = splits
        .iter()
        .filter(|(_, s)| s.as_deref() == Some("test"))
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.is_subset(&want));
}

#[test]
fn a_split_the_file_lacks_names_the_splits_it_has() {
    let dir = temp_dir("scenario-selection-errors");
    let done = run(
        &casino(),
        &dir.join("x.jsonl"),
        &["--scenario-split", "tset"],
    );
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(
        err.contains("no scenario of split `tset`; the file's splits are test, train, valid"),
        "{err}"
    );
    let ahp = casino().with_file_name("ahp.jsonl");
    let done = run(&ahp, &dir.join("y.jsonl"), &["--scenario-split", "test"]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(err.contains("ahp.jsonl: no scenario has a split"), "{err}");
    assert!(!dir.join("x.jsonl").exists() && !dir.join("y.jsonl").exists());
    // A prefix run continues logged episodes: it takes no split or sample of scenarios.
    let prefixed = run(
        &casino(),
        &dir.join("z.jsonl"),
        &["--prefixes", "x.jsonl", "--split", "0.5", "--sample", "3"],
    );
    assert!(!prefixed.status.success());
    assert!(
        text(&prefixed.stderr).contains("a prefix run (--prefixes) continues logged episodes"),
        "{}",
        text(&prefixed.stderr)
    );
}
