//! Records verify anywhere (issue 43): the command line run from a folder with no `scenarios/`
//! reads the scenario files built into it, so `run` and `replay --verify` work there; and an
//! episode whose scenario is nowhere to be found is reported as one that could not be checked,
//! never as one that differs, two-party and table alike.

use std::path::Path;
use std::process::Output;

use crate::common::{succeeded, threaded_mock};
use dealgym_mock::MockConfig;

/// The `dealgym` binary run with `args` in `dir`, to its end.
fn dealgym_in(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `file`'s records with every `"scenario_id":"…"` replaced by an id no scenario has.
fn unknown_scenario(file: &Path, into: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    let re = regex::Regex::new(r#""scenario_id":"[^"]*""#).unwrap();
    let changed = re.replace_all(&text, r#""scenario_id":"casino:no-such-scenario""#);
    assert_ne!(changed, text, "the records name their scenarios");
    std::fs::write(into, changed.as_bytes()).unwrap();
}

#[test]
fn a_run_in_a_folder_without_scenarios_verifies_there_and_an_unknown_scenario_is_not_a_difference()
{
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().join("scenarios").exists());
    let mock = threaded_mock(MockConfig::default());
    let learner = format!("openai:mock@{}", mock.url);
    succeeded(dealgym_in(
        dir.path(),
        &[
            "run",
            "--scenarios",
            "scenarios/casino.jsonl",
            "--limit",
            "2",
            "--learner",
            &learner,
            "--opponent",
            "rule:boulware",
            "--seed",
            "3",
            "--quiet",
            "--out",
            "runs/casino.jsonl",
        ],
    ));
    let verified = succeeded(dealgym_in(
        dir.path(),
        &["replay", "--verify", "runs/casino.jsonl"],
    ));
    assert!(
        stdout(&verified).contains("2 episodes in 1 files replay identically"),
        "{}",
        stdout(&verified)
    );

    unknown_scenario(
        &dir.path().join("runs/casino.jsonl"),
        &dir.path().join("unknown.jsonl"),
    );
    let out = dealgym_in(dir.path(), &["replay", "--verify", "unknown.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stdout(&out);
    assert!(said.contains("could not check 2 of 2 episodes"), "{said}");
    assert!(said.contains("casino:no-such-scenario"), "{said}");
    assert!(said.contains("scenarios/casino.jsonl (built in)"), "{said}");
    assert!(!said.contains("differ"), "{said}");
}

#[test]
fn a_table_in_a_folder_without_scenarios_verifies_there_and_an_unknown_scenario_is_not_a_difference(
) {
    let dir = tempfile::tempdir().unwrap();
    let mock = threaded_mock(MockConfig::default());
    let seat = format!("mayor=openai:mock@{}", mock.url);
    succeeded(dealgym_in(
        dir.path(),
        &[
            "run",
            "--scenarios",
            "scenarios/deliberation.jsonl",
            "--limit",
            "1",
            "--group-size",
            "1",
            "--seat",
            &seat,
            "--seed",
            "3",
            "--quiet",
            "--out",
            "runs/table.jsonl",
        ],
    ));
    succeeded(dealgym_in(
        dir.path(),
        &["replay", "--verify", "runs/table.jsonl"],
    ));

    unknown_scenario(
        &dir.path().join("runs/table.jsonl"),
        &dir.path().join("unknown.jsonl"),
    );
    let out = dealgym_in(dir.path(), &["replay", "--verify", "unknown.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stdout(&out);
    assert!(said.contains("could not check 1 of 1 episodes"), "{said}");
    assert!(said.contains("casino:no-such-scenario"), "{said}");
    assert!(!said.contains("differ"), "{said}");
}
