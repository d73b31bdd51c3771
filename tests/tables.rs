//! n-party tables end to end: `dealgym run` with one model seat on the built-in mock and the
//! other parties scripted, the records read back and replayed, the privacy of every seat's view,
//! and bad input (an unknown role, an option not in the game, an offer id that does not exist).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::{dealgym_cli, out_file, succeeded, threaded_mock};
use dealgym::game::OutcomeKind;
use dealgym::record::{RecordReader, TableRecord};
use dealgym::scenario::{load_table_scenarios, LoadOptions, TableScenario};
use dealgym_mock::MockConfig;

const FIXTURE: &str = "tests/fixtures/table/six_party.jsonl";

fn fixture() -> Arc<TableScenario> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    Arc::new(
        load_table_scenarios(&path, LoadOptions::default())
            .unwrap()
            .scenarios
            .remove(0),
    )
}

fn read_tables(path: &Path) -> Vec<TableRecord> {
    RecordReader::open(path)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect()
}

fn run_table(name: &str, extra: &[&str]) -> (PathBuf, std::process::Output) {
    let out = out_file(name);
    let mut args = vec![
        "run",
        "--scenarios",
        FIXTURE,
        "--out",
        out.to_str().unwrap(),
        "--seed",
        "5",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--group-size") {
        args.extend_from_slice(&["--group-size", "3"]);
    }
    (out.clone(), dealgym_cli(args))
}

#[test]
fn a_six_party_table_with_one_mock_seat_plays_records_and_replays() {
    let mock = threaded_mock(MockConfig::default());
    let seat = format!("party_3=openai:mock@{}", mock.url);
    let (out, output) = run_table("table_mock_seat", &["--seat", &seat]);
    let output = succeeded(output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("deal any round %"), "{stdout}");
    let records = read_tables(&out);
    assert_eq!(records.len(), 3);
    let scenario = fixture();
    for r in &records {
        assert_eq!(r.seats.len(), 6);
        assert!(r.seats[3].player.starts_with("openai:mock@"));
        assert_eq!(r.seats[0].player, "rule:deliberation");
        assert_ne!(
            r.outcome.outcome.kind,
            OutcomeKind::Error,
            "{:?}",
            r.outcome
        );
        // The model seat played well-formed turns and was asked its share of the schedule.
        let mine: Vec<_> = r.turns.iter().filter(|t| t.role == "party_3").collect();
        assert!(!mine.is_empty());
        assert!(mine.iter().all(|t| t.turn.parsed.format_ok), "{mine:?}");
        let replayed = r.replay(scenario.clone()).expect("replays exactly");
        // No seat's view holds another seat's scores, minimum, instructions or thoughts.
        for seat in 0..6 {
            let seen: String = replayed
                .view(seat)
                .iter()
                .map(|m| m.content.clone())
                .collect::<Vec<_>>()
                .join("\n");
            for (other, party) in scenario.parties.iter().enumerate() {
                if other == seat {
                    continue;
                }
                assert!(!seen.contains(&party.private.instructions));
                let own_thoughts: Vec<&String> = r
                    .turns
                    .iter()
                    .filter(|t| t.turn.seat == seat)
                    .filter_map(|t| t.turn.parsed.thought.as_ref())
                    .collect();
                for t in r.turns.iter().filter(|t| t.turn.seat == other) {
                    if let Some(thought) = t
                        .turn
                        .parsed
                        .thought
                        .as_ref()
                        .filter(|th| !own_thoughts.contains(th))
                    {
                        assert!(
                            !seen.contains(&format!("Thought: {thought}")),
                            "seat {seat} saw {other}'s thought"
                        );
                    }
                }
            }
            let own = &scenario.parties[seat].private;
            assert!(seen.contains(&format!("Your minimum is {}", own.minimum)));
            assert_eq!(seen.matches("Your minimum is").count(), 1);
        }
    }
    // The same seed gives the same records.
    let (again, output) = run_table("table_mock_seat_again", &["--seat", &seat]);
    succeeded(output);
    let mut a: Vec<String> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(strip_latency)
        .collect();
    let mut b: Vec<String> = std::fs::read_to_string(&again)
        .unwrap()
        .lines()
        .map(strip_latency)
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

/// A record line without its timings (`latency_ms`), which a rerun does not repeat.
fn strip_latency(line: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    for t in v["turns"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("latency_ms");
    }
    v.to_string()
}

#[test]
fn bad_seats_and_two_party_flags_are_refused_by_name() {
    let (_, output) = run_table("table_bad_role", &["--seat", "nobody=rule:deliberation"]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("`nobody` is not a party of scenario deliberation:test:cooperative"),
        "{err}"
    );
    let (_, output) = run_table("table_learner", &["--learner", "rule:tough"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--seat ROLE=SPEC"));
    let (_, output) = run_table("table_rule", &["--seat", "party_1=rule:tough"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("rule:deliberation"));
}

#[test]
fn an_option_not_in_the_game_and_an_unknown_offer_go_through_the_malformed_turn_policy() {
    let dir = out_file("table_script").parent().unwrap().to_path_buf();
    let script = dir.join("table_script.json");
    std::fs::write(
        &script,
        serde_json::to_string(&[
            "Thought: x\nTalk: mine\nAction: [SUBMIT_DEAL] A7 B1 C1 D1 E1",
            "Thought: x\nTalk: fine\nAction: [ACCEPT_DEAL] #99",
        ])
        .unwrap(),
    )
    .unwrap();
    let spec = format!("party_4=script:{}", script.display());
    let (out, output) = run_table("table_script_bad", &["--seat", &spec, "--group-size", "1"]);
    succeeded(output);
    let r = &read_tables(&out)[0];
    assert_eq!(r.outcome.outcome.kind, OutcomeKind::FormatForfeit);
    assert_eq!(r.outcome.outcome.by, Some(4));
    assert_eq!(r.rewards["party_4"], -1.0);
    let bad: Vec<_> = r.turns.iter().filter(|t| t.role == "party_4").collect();
    assert_eq!(bad.len(), 2);
    let first = bad[0].turn.error.as_ref().unwrap();
    assert!(
        first.message.contains("A7") || first.message.contains("A must be one of"),
        "{first:?}"
    );
    assert!(bad[1]
        .turn
        .error
        .as_ref()
        .unwrap()
        .message
        .contains("no offer #99"));
}

/// A token-exact model seat at a table: each of its calls carries its prompt suffix and sampled
/// ids, and the seat's sequence is exactly the mock's tokenization of its own conversation.
#[test]
fn a_token_exact_seat_records_exactly_its_own_conversation() {
    use dealgym::agents::PlayerConfig;
    use dealgym::llm::{EndpointSettings, TokenApi, TokenMode};
    use dealgym::run::{run_tables, RunOptions};
    use dealgym::vocab::MessageRole;
    use dealgym_mock::{render, tokenize, MockServer, MockTemplate};
    use std::collections::BTreeMap;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let out = out_file("table_exact");
    let records = runtime.block_on(async {
        let mock = MockServer::start(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            MockConfig {
                template: MockTemplate::Chatml,
                ..MockConfig::default()
            },
        )
        .await
        .unwrap();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
        let mut o = RunOptions::new(vec![path], "", "", out.clone());
        o.players = BTreeMap::from([(
            "exact".to_string(),
            PlayerConfig {
                endpoint: EndpointSettings {
                    base_url: mock.base_url(),
                    model: "mock".into(),
                    max_tokens: Some(512),
                    timeout_s: 10.0,
                    tokens: TokenMode::Exact,
                    token_api: TokenApi::LlamaCpp,
                    ..EndpointSettings::default()
                },
                persona: None,
                constrain: Default::default(),
                planner: None,
            },
        )]);
        o.seats = vec![("party_1".into(), "exact".into())];
        o.group_size = 2;
        o.progress = false;
        let summary = run_tables(&o, std::future::pending()).await.unwrap();
        assert_eq!(summary.written, 2);
        mock.stop();
        read_tables(&out)
    });
    let scenario = fixture();
    for r in &records {
        let episode = r.replay(scenario.clone()).unwrap();
        let mut exact = Vec::new();
        for t in r.turns.iter().filter(|t| t.role == "party_1") {
            let tokens = t.turn.completion.tokens.as_ref().expect("exact ids");
            assert!(!tokens.completion_ids.is_empty());
            exact.extend_from_slice(&tokens.prompt_ids);
            exact.extend_from_slice(&tokens.completion_ids);
        }
        let view = episode.view(1);
        let last_own = view
            .iter()
            .rposition(|m| m.role == MessageRole::Assistant)
            .unwrap();
        let rendered = tokenize(&render(&view[..=last_own], MockTemplate::Chatml, false));
        assert_eq!(exact, rendered, "{}", r.episode_id);
    }
}
