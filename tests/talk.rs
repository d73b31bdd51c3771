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
