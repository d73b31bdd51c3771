//! A learner that acts through tools (`learner_format = "tools"`), through the CLI against the
//! mock over HTTP, in every family, against a rule opponent that acts through tools too: its requests carry the scenario's tools, its turns are the
//! calls the mock makes, and the records replay with `--verify`, export with the calls in the
//! seat's messages and report like any other.

use serde_json::Value;

use crate::common::{
    dealgym_cli, read_log, succeeded, temp_dir, threaded_mock, whole_lines, FAMILIES,
};
use dealgym::game::Seat;
use dealgym_mock::MockConfig;

#[test]
fn a_tool_calling_learner_plays_replays_exports_and_reports_like_any_other() {
    let mock = threaded_mock(MockConfig {
        record_requests: true,
        ..MockConfig::default()
    });
    let dir = temp_dir("tools-cli");
    let config = dir.join("tools.toml");
    // Both seats act through tools: the learner on the mock, the rule opponent in process.
    std::fs::write(
        &config,
        "[episode]\nlearner_format = \"tools\"\nopponent_format = \"tools\"\n",
    )
    .unwrap();
    let out = dir.join("tools.jsonl");
    let learner = format!("openai:mock@{}", mock.url);
    let mut args: Vec<String> = Vec::new();
    for family in FAMILIES {
        args.extend(["--scenarios".into(), format!("scenarios/{family}.jsonl")]);
    }
    args.extend(
        [
            "--limit",
            "3",
            "--learner",
            &learner,
            "--opponent",
            "rule:linear",
            "--seed",
            "5",
            "--quiet",
        ]
        .map(String::from),
    );
    args.extend(["--config".into(), config.display().to_string()]);
    args.extend(["--out".into(), out.display().to_string()]);
    succeeded(dealgym_cli(["run".to_string()].into_iter().chain(args)));

    let records = read_log(&out);
    assert_eq!(records.len(), 3 * FAMILIES.len());
    for r in &records {
        assert_ne!(
            r.kind(),
            dealgym::game::OutcomeKind::Error,
            "{:?}",
            r.outcome
        );
        assert_eq!(
            serde_json::to_value(r.setup.seats.learner.format).unwrap(),
            "tools",
            "the record says how the learner acted"
        );
        let learner = r.turns.iter().filter(|t| t.seat == Seat::Learner).count();
        assert!(learner > 0);
        for t in &r.turns {
            assert_eq!(t.tool_calls.len(), 1, "{}: {:?}", r.episode_id, t.raw);
            assert!(t.parsed.format_ok, "{}: {:?}", r.episode_id, t.tool_calls);
        }
    }
    let families: std::collections::BTreeSet<_> = records.iter().map(|r| r.family).collect();
    assert_eq!(families.len(), FAMILIES.len());
    // Every request carried the scenario's tools, their terms its own.
    let received = mock.stats.bodies.lock().unwrap().clone();
    assert!(!received.is_empty());
    for request in &received {
        let tools = request["body"]["tools"]
            .as_array()
            .expect("tools in every request");
        assert_eq!(tools[0]["function"]["name"], "make_offer");
        assert!(
            tools[0]["function"]["parameters"]["properties"]["terms"]["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty())
        );
    }

    let verified = succeeded(dealgym_cli(["replay", out.to_str().unwrap(), "--verify"]));
    assert!(String::from_utf8_lossy(&verified.stdout).contains("replay identically"));

    let exported = dir.join("messages.jsonl");
    succeeded(dealgym_cli([
        "export",
        out.to_str().unwrap(),
        "--format",
        "messages",
        "--out",
        exported.to_str().unwrap(),
    ]));
    assert_eq!(whole_lines(&exported), 3 * FAMILIES.len());
    let text = std::fs::read_to_string(&exported).unwrap();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let messages = line["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "assistant");
        assert_eq!(
            last["tool_calls"].as_array().map(Vec::len),
            Some(1),
            "{last}"
        );
        // Each earlier call is answered before the conversation goes on.
        for (i, m) in messages.iter().enumerate() {
            if let Some(calls) = m["tool_calls"]
                .as_array()
                .filter(|_| i + 1 < messages.len())
            {
                assert_eq!(messages[i + 1]["role"], "tool");
                assert_eq!(messages[i + 1]["tool_call_id"], calls[0]["id"]);
            }
        }
    }

    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        out.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]));
    let markdown = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        markdown.contains(&format!("| all | {} |", 3 * FAMILIES.len())),
        "{markdown}"
    );
}
