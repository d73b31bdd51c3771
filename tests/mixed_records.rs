//! A record file may hold both kinds of record (a server's log does): `replay --verify`,
//! `export`, `report` and `merge` read both, the first record's kind first (a report writes the
//! other kind's in a folder under its own), and say what they passed over where a kind has no
//! such format.

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};
use dealgym_mock::MockConfig;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Two CaSiNo episodes, then two tables, in `dir/both.jsonl` (and each kind in its own file).
fn both_kinds(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
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
    let out = dir.join("both.jsonl");
    let both =
        std::fs::read_to_string(&pairs).unwrap() + &std::fs::read_to_string(&tables).unwrap();
    std::fs::write(&out, both).unwrap();
    (pairs, tables, out)
}

#[test]
fn a_file_of_both_kinds_is_verified_and_exported_whole() {
    let dir = temp_dir("mixed-records");
    let (_, _, out) = both_kinds(&dir);
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

    // Transitions: every seat's turns of both kinds, the tables through the same writer.
    let transitions = dealgym_cli(["export", "--format", "transitions", out_arg]);
    let said = String::from_utf8_lossy(&transitions.stderr).to_string();
    assert!(transitions.status.success(), "{said}");
    assert!(!said.contains("passed over"), "{said}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&transitions.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["kind"] == "table"),
        "table seats' lines"
    );
    assert!(
        lines.iter().any(|l| l["kind"].is_null()),
        "two-party seats' lines"
    );

    // A format tables have no lines in: the two-party records export, the tables are named.
    // (No record is a campaign's: the export is empty and allowed to be.)
    let campaigns = dealgym_cli(["export", "--format", "campaigns", "--allow-empty", out_arg]);
    let said = String::from_utf8_lossy(&campaigns.stderr).to_string();
    assert!(said.contains("passed over 2 table records"), "{said}");
}

fn lines(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn merge_joins_both_kinds_and_counts_a_bad_line_once() {
    let dir = temp_dir("mixed-merge");
    let (pairs, tables, both) = both_kinds(&dir);
    // Records of both kinds interleaved, a line that is no record, and a table record that
    // does not read as one (its kind is known, its turns are not a list).
    let mut broken: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&tables)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    broken["episode_id"] = "g9-m0".into();
    broken["turns"] = "not a list".into();
    let (p, t): (Vec<String>, Vec<String>) = (
        lines(&pairs).into_iter().collect(),
        lines(&tables).into_iter().collect(),
    );
    let mixed = dir.join("mixed.jsonl");
    std::fs::write(
        &mixed,
        format!(
            "{}\n{}\nnot a record\n{}\n{}\n{}\n",
            t[0], p[0], broken, t[1], p[1]
        ),
    )
    .unwrap();
    let out = dir.join("merged.jsonl");
    let merged = dealgym_cli([
        "merge",
        "--allow-mixed",
        out.to_str().unwrap(),
        mixed.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&merged.stderr).to_string();
    assert!(
        !merged.status.success(),
        "bad lines make it unclean: {said}"
    );
    assert!(
        said.contains("4 episodes (2 of them tables)") && said.contains("2 bad lines"),
        "{said}"
    );
    assert!(
        said.contains("bad lines (skipped): 2"),
        "each bad line once: {said}"
    );
    assert_eq!(
        lines(&out),
        lines(&both),
        "every record of both kinds, once"
    );

    // A shard killed while writing its first line: that line is a bad one, the rest merge.
    let cut = dir.join("cut.jsonl");
    std::fs::write(
        &cut,
        format!(
            "{{\"schema\":1,\"run_id\n{}",
            std::fs::read_to_string(&both).unwrap()
        ),
    )
    .unwrap();
    let merged = dealgym_cli([
        "merge",
        "--allow-mixed",
        "--force",
        out.to_str().unwrap(),
        cut.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&merged.stderr).to_string();
    assert!(
        said.contains("4 episodes (2 of them tables)") && said.contains("1 bad lines"),
        "{said}"
    );
    assert_eq!(lines(&out), lines(&both));

    // The same tables again (another shard that repeats them): duplicates, written once.
    let again = dealgym_cli([
        "merge",
        "--allow-mixed",
        "--force",
        "--duplicates",
        "skip",
        out.to_str().unwrap(),
        both.to_str().unwrap(),
        tables.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(again.status.success(), "{said}");
    assert!(said.contains("2 duplicates"), "{said}");
    assert_eq!(lines(&out), lines(&both));
}

#[test]
fn merge_checks_a_table_runs_shards_against_its_table_scenarios() {
    let dir = temp_dir("table-merge");
    let (_, tables, _) = both_kinds(&dir);
    let out = dir.join("merged.jsonl");
    let merge = |limit: &str| {
        dealgym_cli([
            "merge",
            "--force",
            "--scenarios",
            "scenarios/deliberation.jsonl",
            "--limit",
            limit,
            "--group-size",
            "1",
            out.to_str().unwrap(),
            tables.to_str().unwrap(),
        ])
    };
    let whole = merge("2");
    let said = String::from_utf8_lossy(&whole.stderr).to_string();
    assert!(whole.status.success(), "the two planned tables: {said}");
    let short = merge("3");
    let said = String::from_utf8_lossy(&short.stderr).to_string();
    assert!(!short.status.success(), "{said}");
    assert!(
        said.contains("missing episodes: 1") && said.contains("g2-m0"),
        "{said}"
    );
}
