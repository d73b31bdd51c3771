//! A table played through tools (`learner_format = "tools"`), end to end: `dealgym run` on the
//! six-party fixture with the mock at one seat and the scripted party at the others. The mock's
//! requests carry the table's tools, every seat's moves are read from its calls (no refusal, no
//! format error), the records replay with `--verify`, and each seat's exported conversation
//! holds its calls, each answered.

use serde_json::Value;

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};
use dealgym::game::OutcomeKind;
use dealgym::record::{RecordReader, TableRecord};
use dealgym_mock::MockConfig;

const FIXTURE: &str = "tests/fixtures/table/six_party.jsonl";

#[test]
fn a_table_of_tool_calling_seats_runs_replays_and_exports_with_its_calls() {
    let mock = threaded_mock(MockConfig {
        record_requests: true,
        ..MockConfig::default()
    });
    let dir = temp_dir("table-tools");
    let config = dir.join("tools.toml");
    std::fs::write(&config, "[episode]\nlearner_format = \"tools\"\n").unwrap();
    let out = dir.join("tables.jsonl");
    let seat = format!("party_3=openai:mock@{}", mock.url);
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        FIXTURE,
        "--seat",
        &seat,
        "--config",
        config.to_str().unwrap(),
        "--group-size",
        "2",
        "--seed",
        "5",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));

    let records: Vec<TableRecord> = RecordReader::open(&out)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(serde_json::to_value(r.setup.format).unwrap(), "tools");
        assert_ne!(
            r.outcome.outcome.kind,
            OutcomeKind::Error,
            "{:?}",
            r.outcome
        );
        assert_ne!(
            r.outcome.outcome.kind,
            OutcomeKind::FormatForfeit,
            "{:?}",
            r.outcome
        );
        let mock_turns = r.turns.iter().filter(|t| t.role == "party_3").count();
        assert!(mock_turns > 0);
        // Every seat's move was read from its one call, and every turn was well formed.
        for t in &r.turns {
            let calls = &t.turn.completion.tool_calls;
            assert_eq!(calls.len(), 1, "{}: {:?}", t.role, t.turn.completion);
            assert!(t.turn.parsed.format_ok, "{}: {:?}", t.role, t.turn.parsed);
            assert!(t.turn.error.is_none(), "{}: {:?}", t.role, t.turn.error);
            assert!(
                !t.turn.completion.text.contains("Action:"),
                "the move is in the call, not the text: {:?}",
                t.turn.completion.text
            );
            let kind = t.turn.played().map(|a| a.kind());
            let expected = match calls[0].function.name.as_str() {
                "make_offer" => dealgym::protocol::ActionKind::Submit,
                "accept" => dealgym::protocol::ActionKind::Accept,
                "reject" => dealgym::protocol::ActionKind::Reject,
                "say" => dealgym::protocol::ActionKind::Talk,
                _ => dealgym::protocol::ActionKind::WalkAway,
            };
            assert_eq!(kind, Some(expected), "{:?}", calls[0]);
            if let Some(offer) = t.turn.accepts {
                let args: Value = serde_json::from_str(&calls[0].function.arguments).unwrap();
                assert_eq!(args["offer"], offer);
            }
        }
    }
    // Every request of the mock's seat carried the table's tools: accept names a proposal, the
    // terms are the table's issues.
    let received = mock.stats.bodies.lock().unwrap().clone();
    assert!(!received.is_empty());
    for request in &received {
        let tools = request["body"]["tools"]
            .as_array()
            .expect("tools in every request");
        assert_eq!(tools[1]["function"]["name"], "accept");
        assert_eq!(
            tools[1]["function"]["parameters"]["required"],
            serde_json::json!(["offer"])
        );
        let terms = &tools[0]["function"]["parameters"]["properties"]["terms"]["properties"];
        assert_eq!(terms["A"]["enum"][0], "A1", "{terms}");
    }

    let verified = succeeded(dealgym_cli([
        "replay",
        out.to_str().unwrap(),
        "--verify",
        "--scenarios",
        FIXTURE,
    ]));
    assert!(String::from_utf8_lossy(&verified.stdout).contains("replay identically"));

    let exported = dir.join("messages.jsonl");
    succeeded(dealgym_cli([
        "export",
        out.to_str().unwrap(),
        "--format",
        "messages",
        "--scenarios",
        FIXTURE,
        "--out",
        exported.to_str().unwrap(),
    ]));
    let lines: Vec<Value> = std::fs::read_to_string(&exported)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2 * 6, "a conversation per seat of every table");
    for line in &lines {
        let messages = line["messages"].as_array().unwrap();
        let calls: Vec<&Value> = messages
            .iter()
            .filter(|m| m["tool_calls"].as_array().is_some_and(|c| !c.is_empty()))
            .collect();
        assert!(!calls.is_empty(), "seat {}: {line}", line["seat"]);
        for (i, m) in messages.iter().enumerate() {
            if let Some(calls) = m["tool_calls"]
                .as_array()
                .filter(|c| !c.is_empty() && i + 1 < messages.len())
            {
                assert_eq!(messages[i + 1]["role"], "tool", "{line}");
                assert_eq!(messages[i + 1]["tool_call_id"], calls[0]["id"]);
            }
        }
    }
    // A prompt-completion line per attempt: its completion is the seat's call.
    let pairs = dir.join("pairs.jsonl");
    succeeded(dealgym_cli([
        "export",
        out.to_str().unwrap(),
        "--format",
        "prompt-completion",
        "--scenarios",
        FIXTURE,
        "--out",
        pairs.to_str().unwrap(),
    ]));
    let turns: usize = records.iter().map(|r| r.turns.len()).sum();
    let pairs = std::fs::read_to_string(&pairs).unwrap();
    assert_eq!(pairs.lines().count(), turns);
    for line in pairs.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let completion = &line["completion"][0];
        assert_eq!(completion["role"], "assistant");
        assert_eq!(
            completion["tool_calls"].as_array().map(Vec::len),
            Some(1),
            "{line}"
        );
    }
}
