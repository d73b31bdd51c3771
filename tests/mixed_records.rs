//! A record file may hold both kinds of record (a server's log does): `replay --verify`,
//! `export` and `report` read both, the first record's kind first (a report writes the other
//! kind's in a folder under its own), and say what they passed over where a kind has no such
//! format.

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};
use dealgym_mock::MockConfig;

#[test]
fn a_file_of_both_kinds_is_verified_and_exported_whole() {
    let dir = temp_dir("mixed-records");
    let mock = threaded_mock(MockConfig::default());
    let url = format!("openai:mock@{}", mock.url);
    let (pairs, tables) = (dir.join("pairs.jsonl"), dir.join("tables.jsonl"));
    let run = |args: &[&str], out: &std::path::Path| {
        let mut all: Vec<&str> = vec!["run", "--quiet", "--limit", "2", "--out"];
        all.push(out.to_str().unwrap());
        all.extend(args);
        succeeded(dealgym_cli(all));
    };
    run(
        &[
            "--scenarios",
            "scenarios/casino.jsonl",
            "--learner",
            &url,
            "--opponent",
            "rule:linear",
        ],
        &pairs,
    );
    let seat = format!("sportco={url}");
    run(
        &[
            "--scenarios",
            "scenarios/deliberation.jsonl",
            "--seat",
            &seat,
        ],
        &tables,
    );
    // Two CaSiNo episodes, then two tables, in one file.
    let out = dir.join("both.jsonl");
    let both =
        std::fs::read_to_string(&pairs).unwrap() + &std::fs::read_to_string(&tables).unwrap();
    std::fs::write(&out, both).unwrap();
    let out_arg = out.to_str().unwrap();

    let verified = dealgym_cli(["replay", "--verify", out_arg]);
    let said = String::from_utf8_lossy(&verified.stdout).to_string()
        + &String::from_utf8_lossy(&verified.stderr);
    assert!(verified.status.success(), "{said}");
    assert!(said.contains("4 episodes"), "both kinds verified: {said}");
    assert!(!said.contains("passed over"), "{said}");

    let exported = dealgym_cli(["export", "--format", "messages", "--seats", "both", out_arg]);
    let said = String::from_utf8_lossy(&exported.stderr).to_string();
    assert!(exported.status.success(), "{said}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&exported.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tables = lines.iter().filter(|l| l["kind"] == "table").count();
    assert_eq!(
        lines.len(),
        2 * 2 + tables,
        "two seats per CaSiNo episode, then every table seat"
    );
    assert!(tables >= 2 * 6, "every seat of both tables: {tables}");
    assert!(!said.contains("passed over"), "{said}");

    // One report per kind: the first record's in the folder, the tables' under it.
    let report = dir.join("report");
    let reported = dealgym_cli([
        "report",
        out_arg,
        "--out",
        report.to_str().unwrap(),
        "--quiet",
    ]);
    let said = String::from_utf8_lossy(&reported.stderr).to_string();
    assert!(reported.status.success(), "{said}");
    assert!(said.contains("4 episodes reported"), "{said}");
    assert!(report.join("report.md").is_file() && report.join("n-party/report.md").is_file());

    // A format tables have no lines in: the two-party records export, the tables are named.
    let transitions = dealgym_cli(["export", "--format", "transitions", out_arg]);
    let said = String::from_utf8_lossy(&transitions.stderr).to_string();
    assert!(said.contains("passed over 2 table records"), "{said}");
}
