//! The talk ablation through the binary (`run --talk off`, `[episode] talk = "off"`): against
//! the mock, no seat is forwarded the other's Talk, the records name the setting and replay
//! exactly; n-party tables refuse it by name.

use std::path::Path;

use dealgym_mock::MockConfig;

use crate::common::{dealgym_cli as dealgym, read_log, succeeded as ok, temp_dir, threaded_mock};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `run` of two mock seats on `family`'s first scenarios, with `extra` flags.
fn mock_run(url: &str, family: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mock = format!("openai:mock@{url}");
    let mut args = vec![
        "run",
        "--scenarios",
        family,
        "--limit",
        "4",
        "--seed",
        "7",
        "--quiet",
        "--learner",
        &mock,
        "--opponent",
        &mock,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    dealgym(args)
}

#[test]
fn run_talk_off_forwards_no_talk_names_the_setting_and_replays() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("talk-off-run");
    for family in ["scenarios/ahp.jsonl", "scenarios/casino.jsonl"] {
        let out = dir.join(format!("{}.jsonl", family.len()));
        ok(mock_run(&mock.url, family, &out, &["--talk", "off"]));
        let records = read_log(&out);
        assert_eq!(records.len(), 4);
        let lines = std::fs::read_to_string(&out).unwrap();
        for line in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["setup"]["rules"]["talk"], "off", "{line}");
        }
        let mut talked = 0;
        for r in &records {
            assert!(r.seats.opponent.system_prompt.contains("is withheld"));
            for t in &r.turns {
                let Some(forwarded) = &t.forwarded else {
                    continue;
                };
                assert!(forwarded.starts_with("Action: "), "{forwarded}");
                assert!(!forwarded.contains("Talk"), "{forwarded}");
                if let Some(talk) = t.parsed.talk.as_deref().filter(|s| !s.trim().is_empty()) {
                    talked += 1;
                    // Not in what this move forwarded, nor anywhere the other seat reads.
                    assert!(!forwarded.contains(talk.trim()), "{talk} forwarded");
                    assert!(r
                        .turns
                        .iter()
                        .filter_map(|u| u.forwarded.as_deref())
                        .all(|f| !f.contains(talk.trim())));
                }
            }
        }
        assert!(talked > 0, "the mock talks, so something was withheld");
        ok(dealgym(["replay", "--verify", out.to_str().unwrap()]));
    }
    // With talk on (the default), the same run forwards the Talk and names nothing.
    let on = dir.join("on.jsonl");
    ok(mock_run(&mock.url, "scenarios/ahp.jsonl", &on, &[]));
    let lines = std::fs::read_to_string(&on).unwrap();
    assert!(!lines.contains("\"talk\":\"off\""));
    assert!(read_log(&on)
        .iter()
        .flat_map(|r| &r.turns)
        .filter_map(|t| t.forwarded.as_deref())
        .all(|f| f.starts_with("Talk: ")));
}

#[test]
fn a_table_run_refuses_talk_off_by_name() {
    let dir = temp_dir("talk-off-table");
    let out = dir.join("t.jsonl");
    let done = dealgym([
        "run",
        "--scenarios",
        "scenarios/deliberation.jsonl",
        "--limit",
        "1",
        "--quiet",
        "--talk",
        "off",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!done.status.success());
    let err = text(&done.stderr);
    assert!(
        err.contains("talk = \"off\"") && err.contains("n-party"),
        "{err}"
    );
}

/// `eval` of the mock against a rule opponent on AHP, with `extra` flags; its stdout.
fn mock_eval(url: &str, out: &Path, summary: &Path, extra: &[&str]) -> String {
    let player = format!("mock=openai:mock@{url}");
    let mut args = vec![
        "eval",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--limit",
        "6",
        "--seed",
        "3",
        "--quiet",
        "--player",
        &player,
        "--opponent",
        "boulware=rule:boulware",
        "--out",
        out.to_str().unwrap(),
        "--summary-json",
        summary.to_str().unwrap(),
    ];
    args.extend(extra);
    text(&ok(dealgym(args)).stdout)
}

#[test]
fn an_eval_pairs_each_player_with_and_without_talk_and_adds_the_baseline_row() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("talk-eval");
    let (out, summary) = (dir.join("eval.jsonl"), dir.join("summary.json"));
    let stdout = mock_eval(&mock.url, &out, &summary, &["--talk-ablation"]);
    let records = read_log(&out);
    let count = |name: &str| {
        records
            .iter()
            .filter(|r| r.seats.learner.name.as_deref() == Some(name))
            .count()
    };
    // The player, its no-talk twin and the baseline, each on the same six setups.
    assert_eq!(
        (count("mock"), count("mock (no talk)"), count("baseline")),
        (6, 6, 6)
    );
    for r in &records {
        let off = r.seats.learner.name.as_deref() == Some("mock (no talk)");
        assert_eq!(r.setup.rules.talk.is_on(), !off, "{}", r.episode_id);
    }
    let baseline = records
        .iter()
        .find(|r| r.seats.learner.name.as_deref() == Some("baseline"))
        .unwrap();
    assert_eq!(baseline.seats.learner.player, "rule:fixed-concession");
    assert!(baseline
        .turns
        .iter()
        .filter(|t| t.seat == dealgym::game::Seat::Learner)
        .all(|t| t.parsed.talk.as_deref().unwrap_or("").is_empty()));
    // The matrix has the baseline row; the talk table sets the player beside its twin with
    // the difference and its interval; anchoring sits beside the first bid.
    assert!(stdout.contains("| baseline | boulware | 6 |"), "{stdout}");
    assert!(
        stdout.contains("| mock (no talk) | boulware | 6 |"),
        "{stdout}"
    );
    assert!(stdout.contains("Does talk matter?"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| mock | boulware | ") && l.contains(" / "))
        .unwrap_or_else(|| panic!("no talk row:\n{stdout}"));
    assert!(row.contains('[') && row.ends_with("] |"), "{row}");
    assert!(stdout.contains("Anchoring:"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let talk = &json["talk"][0];
    assert_eq!(talk["player"], "mock");
    assert!(talk["rho_difference"]["low"].is_number(), "{talk}");
    assert!(json["anchoring"].as_array().is_some_and(|a| !a.is_empty()));
    ok(dealgym(["replay", "--verify", out.to_str().unwrap()]));

    // --no-baseline leaves the row out; --talk-ablation with --talk off is refused.
    let (plain, plain_summary) = (dir.join("plain.jsonl"), dir.join("plain.json"));
    let stdout = mock_eval(&mock.url, &plain, &plain_summary, &["--no-baseline"]);
    assert!(!stdout.contains("baseline"), "{stdout}");
    assert!(!stdout.contains("Does talk matter?"), "{stdout}");
    assert_eq!(read_log(&plain).len(), 6);
    let player = format!("mock=openai:mock@{}", mock.url);
    let refused = dealgym([
        "eval",
        "--scenarios",
        "scenarios/ahp.jsonl",
        "--player",
        &player,
        "--opponent",
        "b=rule:boulware",
        "--talk-ablation",
        "--talk",
        "off",
        "--out",
        dir.join("no.jsonl").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("--talk-ablation"));
}
