//! Prefixes and branches of table records, end to end through the CLI: a deliberation table
//! played with the built-in mock at the Mayor's seat, then `run --prefixes` and
//! `replay --branch-from` on its log — the continuations replay the parent's first turns,
//! name it as their parent, form their groups as two-party continuations do, and verify.

use std::path::{Path, PathBuf};

use crate::common::{dealgym_cli, out_file, succeeded, threaded_mock};
use dealgym::record::{RecordReader, TableRecord};
use dealgym_mock::MockConfig;

fn read_tables(path: &Path) -> Vec<TableRecord> {
    RecordReader::open(path)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect()
}

/// A log of 2 deliberation tables (one scenario, group of 2), the mock at `seat`.
fn source_log(name: &str, seat: &str) -> PathBuf {
    let out = out_file(name);
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        "scenarios/deliberation.jsonl",
        "--limit",
        "1",
        "--group-size",
        "2",
        "--seed",
        "5",
        "--seat",
        seat,
        "--out",
        out.to_str().unwrap(),
    ]));
    out
}

/// Each continuation's first `k` turns are its parent's, and it names the parent.
fn continues(parent: &TableRecord, child: &TableRecord, k: usize) {
    let p = child
        .parent
        .as_ref()
        .expect("a continuation names its parent");
    assert_eq!(
        (p.run_id.as_str(), p.episode_id.as_str(), p.prefix_turns),
        (parent.run_id.as_str(), parent.episode_id.as_str(), k)
    );
    assert!(child.turns.len() > k, "the seats played on");
    for i in 0..k {
        assert_eq!(child.turns[i].turn, parent.turns[i].turn, "turn {i}");
    }
    assert_eq!(child.setup.schedule, parent.setup.schedule);
    assert_eq!(child.scenario_id, parent.scenario_id);
}

fn verifies(file: &Path) {
    succeeded(dealgym_cli(["replay", "--verify", file.to_str().unwrap()]));
}

#[test]
fn a_prefix_run_continues_table_records() {
    let mock = threaded_mock(MockConfig::default());
    let seat = format!("mayor=openai:mock@{}", mock.url);
    let source = source_log("table_prefix_source", &seat);
    let parents = read_tables(&source);
    assert_eq!(parents.len(), 2);
    let out = out_file("table_prefix_run");
    let output = succeeded(dealgym_cli([
        "run",
        "--prefixes",
        source.to_str().unwrap(),
        "--prefix-turns",
        "3",
        "--group-size",
        "2",
        "--seat",
        &seat,
        "--out",
        out.to_str().unwrap(),
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("prefixes: 2 source episodes read, 2 planned as groups"),
        "{stderr}"
    );
    let children = read_tables(&out);
    assert_eq!(children.len(), 4, "2 sources × 2 members");
    for (g, parent) in parents.iter().enumerate() {
        let group: Vec<&TableRecord> = children
            .iter()
            .filter(|c| c.group_id == format!("g{g}"))
            .collect();
        assert_eq!(group.len(), 2, "group g{g}");
        for child in group {
            continues(parent, child, 3);
        }
    }
    verifies(&out);

    // What a table cannot honour is refused by name, not ignored.
    let refused = dealgym_cli([
        "run",
        "--prefixes",
        source.to_str().unwrap(),
        "--prefix-turns",
        "3",
        "--continue-turns",
        "2",
        "--out",
        out_file("table_prefix_refused").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--continue-turns"), "{stderr}");
}

#[test]
fn a_branch_of_table_records_forms_a_group_per_parent() {
    let mock = threaded_mock(MockConfig::default());
    let seat = format!("mayor=openai:mock@{}", mock.url);
    let source = source_log("table_branch_source", &seat);
    let parents = read_tables(&source);
    let out = out_file("table_branch_run");
    let output = succeeded(dealgym_cli([
        "replay",
        "--branch-from",
        "2",
        source.to_str().unwrap(),
        "--group-size",
        "3",
        "--seat",
        &seat,
        "--out",
        out.to_str().unwrap(),
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("6 branches of 2 tables"), "{stderr}");
    let children = read_tables(&out);
    assert_eq!(children.len(), 6);
    for parent in &parents {
        let group = format!("{}.b2", parent.episode_id);
        let members: Vec<&TableRecord> = children.iter().filter(|c| c.group_id == group).collect();
        assert_eq!(members.len(), 3, "group {group}");
        let mut ids: Vec<&str> = members.iter().map(|c| c.episode_id.as_str()).collect();
        ids.sort();
        let expected: Vec<String> = (0..3).map(|m| format!("{group}-m{m}")).collect();
        assert_eq!(ids, expected, "written in the order they end");
        for child in members {
            continues(parent, child, 2);
        }
    }
    verifies(&out);

    // Two-party players at a table are refused by name.
    let refused = dealgym_cli([
        "replay",
        "--branch-from",
        "2",
        source.to_str().unwrap(),
        "--learner",
        "rule:tough",
        "--opponent",
        "rule:tough",
        "--out",
        out_file("table_branch_refused").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--seat ROLE=SPEC"), "{stderr}");
}
