//! Whole runs over real HTTP against the built-in mock endpoint on 127.0.0.1.

use crate::common;

use common::{all_scenario_files, out_file, read_log, run_to_end};

use std::collections::{BTreeMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use dealgym::agents::PlayerConfig;
use dealgym::game::{OutcomeKind, Prompts, Seat};
use dealgym::llm::{EndpointSettings, SeedPolicy};
use dealgym::protocol::ErrorKind;
use dealgym::run::RunOptions;
use dealgym::scenario::{load_scenarios, Family, LoadOptions};
use dealgym_mock::{MockConfig, MockServer, ThinkMode};

async fn mock(config: MockConfig) -> MockServer {
    MockServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config)
        .await
        .unwrap()
}

fn options(mock: &MockServer, out: PathBuf) -> RunOptions {
    let mut o = RunOptions::new(
        all_scenario_files(),
        &format!("openai:mock-model@{}", mock.base_url()),
        "rule:linear",
        out,
    );
    o.limit = Some(3);
    o.concurrency = 8;
    o.progress = false;
    o.seed = 42;
    o
}

/// A named player with a short timeout and quick retries, for the fault tests.
fn fast_player(mock: &MockServer, retries: u32) -> BTreeMap<String, PlayerConfig> {
    let config = PlayerConfig {
        endpoint: EndpointSettings {
            base_url: mock.base_url(),
            model: "mock-model".into(),
            temperature: Some(0.7),
            max_tokens: Some(256),
            seed_policy: SeedPolicy::PerEpisode,
            timeout_s: 0.5,
            retries,
            ..EndpointSettings::default()
        },
        persona: None,
        constrain: Default::default(),
        planner: None,
        narrated: None,
    };
    BTreeMap::from([("flaky".to_string(), config)])
}

/// Records keyed by episode id, without their `timing`.
fn without_timing(path: &Path) -> BTreeMap<String, serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("timing");
            (v["episode_id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_runs_over_http_with_valid_records() {
    let server = mock(MockConfig {
        think: ThinkMode::Field,
        logprobs: true,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("families");
    let mut o = options(&server, out.clone());
    o.group_size = 2;
    let summary = run_to_end(&o).await;
    assert_eq!(summary.planned, crate::common::FAMILIES.len() * 3 * 2);
    assert_eq!(summary.written, summary.planned);
    let recs = read_log(&out);
    let ids: HashSet<_> = recs.iter().map(|r| r.episode_id.clone()).collect();
    assert_eq!(ids.len(), recs.len(), "each episode once");
    let families: HashSet<_> = recs.iter().map(|r| r.family).collect();
    assert_eq!(families.len(), crate::common::FAMILIES.len());
    for r in &recs {
        assert_ne!(r.kind(), OutcomeKind::Error, "{}", r.episode_id);
        assert!(!r.turns.is_empty());
        let learner_turn = r.turns.iter().find(|t| t.seat == Seat::Learner).unwrap();
        let call = learner_turn.call.as_ref().expect("call info kept");
        assert!(call.usage.unwrap().completion_tokens > 0);
        assert!(call.logprobs.as_ref().unwrap()["content"].is_array() && call.token_ids.is_some());
        assert!(
            learner_turn.reasoning_content.is_some() && learner_turn.parsed.reasoning.is_some()
        );
        assert_eq!(r.timing.turn_ms.len(), r.turns.len());
        // The record rebuilds the episode exactly.
        let scenario = load_scenarios(
            &all_scenario_files()[Family::ALL.iter().position(|f| *f == r.family).unwrap()],
            LoadOptions::default(),
        )
        .unwrap()
        .scenarios
        .into_iter()
        .find(|s| s.id == r.scenario_id)
        .unwrap();
        let rebuilt = r
            .replay(&std::sync::Arc::new(scenario), &Prompts::builtin())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            rebuilt.turns().iter().eq(r.turns.iter().map(|t| &t.turn)),
            "{}: replayed turns differ",
            r.episode_id
        );
        assert!(
            rebuilt.outcome() == Some(&r.outcome.outcome),
            "{}: replayed outcome differs",
            r.episode_id
        );
    }
    // Members of a GRPO group share the setup and differ in sampling seed.
    let g0: Vec<_> = recs.iter().filter(|r| r.group_id == "g0").collect();
    assert_eq!(g0.len(), 2);
    assert_eq!(g0[0].setup, g0[1].setup);
    assert_ne!(
        g0[0].seats.learner.sampling_seed,
        g0[1].seats.learner.sampling_seed
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_records_apart_from_timing() {
    let server = mock(MockConfig {
        jitter_ms: 5,
        ..MockConfig::default()
    })
    .await;
    let (a, b) = (out_file("same-a"), out_file("same-b"));
    run_to_end(&options(&server, a.clone())).await;
    let mut second = options(&server, b.clone());
    second.concurrency = 3; // another interleaving
    run_to_end(&second).await;
    let (ra, rb) = (without_timing(&a), without_timing(&b));
    assert_eq!(ra.len(), 3 * crate::common::FAMILIES.len());
    assert_eq!(ra, rb);
    let mut other_seed = options(&server, out_file("same-c"));
    other_seed.seed = 43;
    run_to_end(&other_seed).await;
    assert_ne!(
        without_timing(&other_seed.out),
        ra,
        "another seed, other setups"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_faults_are_retried_and_never_become_moves() {
    let server = mock(MockConfig {
        seed: 7,
        error_rate: 0.15,
        rate_limit_rate: 0.1,
        hang_rate: 0.05,
        hang_ms: 3_000,
        malformed_rate: 0.05,
        garbage_rate: 0.1,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("faults");
    let mut o = options(&server, out.clone());
    o.players = fast_player(&server, 8);
    o.learner = "flaky".into();
    o.episode.format_retries = 2;
    let summary = run_to_end(&o).await;
    let recs = read_log(&out);
    assert_eq!(recs.len(), summary.planned, "no episode lost");
    let ids: HashSet<_> = recs.iter().map(|r| r.episode_id.clone()).collect();
    assert_eq!(ids.len(), recs.len(), "no episode duplicated");
    let stats = &server.stats;
    let injected = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        injected(&stats.errors) > 0
            && injected(&stats.rate_limited) > 0
            && injected(&stats.malformed) > 0
    );
    assert!(injected(&stats.hangs) > 0 && injected(&stats.garbage) > 0);
    let retries: u32 = recs.iter().flat_map(|r| r.timing.call_retries.iter()).sum();
    assert!(retries > 0, "transient failures were retried");
    // Garbage replies are the model's: format errors in the turns, never backend errors.
    let format_errors = recs
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| {
            t.parsed
                .error
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::Format)
        })
        .count();
    assert!(format_errors > 0);
    for r in &recs {
        for t in &r.turns {
            assert!(
                !t.raw.contains("injected") && !t.raw.contains("not json"),
                "a fault became a turn: {}",
                t.raw
            );
            assert_ne!(
                t.parsed.error.as_ref().map(|e| e.kind),
                Some(ErrorKind::Backend)
            );
        }
    }
    let errors = recs
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Error)
        .count();
    assert_eq!(
        errors,
        summary.stats.count(OutcomeKind::Error),
        "errors are counted apart"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_marks_episodes_error_and_the_run_goes_on() {
    let server = mock(MockConfig {
        error_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("dead");
    let mut o = options(&server, out.clone());
    o.players = fast_player(&server, 1);
    o.learner = "flaky".into();
    o.limit = Some(2);
    let summary = run_to_end(&o).await;
    let recs = read_log(&out);
    assert_eq!(recs.len(), 2 * crate::common::FAMILIES.len());
    assert_eq!(
        summary.stats.count(OutcomeKind::Error),
        2 * crate::common::FAMILIES.len()
    );
    for r in &recs {
        assert_eq!(r.kind(), OutcomeKind::Error);
        assert_eq!(r.outcome.outcome.by, Some(Seat::Learner));
        assert_eq!(
            r.outcome.outcome.error_kind,
            Some(dealgym::game::ErrorCause::Backend)
        );
        assert!(
            r.outcome
                .outcome
                .detail
                .as_deref()
                .unwrap_or("")
                .contains("HTTP 500"),
            "{:?}",
            r.outcome.outcome.detail
        );
        assert!(
            r.turns.iter().all(|t| t.seat == Seat::Opponent),
            "no learner move was invented"
        );
        assert_eq!(r.rewards.learner, 0.0);
    }
    // Every episode an error: no figure, in the families' rows or in the multi-item average
    // (casino, dnd and job_interview: 2 episodes each, all errors).
    assert!(
        summary
            .stats
            .table()
            .contains("| multi-item average | 6 | – | – | – | 6 | – |"),
        "{}",
        summary.stats.table()
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_api_key_in_records_and_no_opponent_secret_in_learner_requests() {
    let server = mock(MockConfig {
        record_requests: true,
        ..MockConfig::default()
    })
    .await;
    let key = "sk-dealgym-test-5f2a9c";
    std::env::set_var("DEALGYM_TEST_API_KEY", key);
    let out = out_file("secrets");
    let mut o = options(&server, out.clone());
    let mut players = fast_player(&server, 2);
    players.get_mut("flaky").unwrap().endpoint.api_key_env = Some("DEALGYM_TEST_API_KEY".into());
    o.players = players;
    o.learner = "flaky".into();
    run_to_end(&o).await;
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains(key), "the API key reached a record");
    let received = server.stats.bodies.lock().unwrap().clone();
    assert!(!received.is_empty());
    assert!(
        received
            .iter()
            .all(|r| r["authorization"] == format!("Bearer {key}")),
        "the key was sent"
    );
    // Every line of the opponent's private block stays out of everything the learner's endpoint got.
    let recs = read_log(&out);
    let mut checked = 0;
    for r in &recs {
        let private = private_block(&r.seats.opponent.system_prompt);
        assert!(!private.is_empty());
        let own = private_block(&r.seats.learner.system_prompt);
        for req in received.iter().filter(|req| {
            req["body"]["messages"][0]["content"].as_str()
                == Some(r.seats.learner.system_prompt.as_str())
        }) {
            let sent = req["body"]["messages"].to_string();
            for line in private.iter().filter(|l| !own.contains(l)) {
                assert!(
                    !sent.contains(&json_escaped(line)),
                    "{}: `{line}` reached the learner",
                    r.episode_id
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= recs.len(),
        "every episode's requests were inspected"
    );
    server.stop();
}

/// The lines under "## What only you know", up to the next heading.
fn private_block(prompt: &str) -> Vec<String> {
    prompt
        .split("## What only you know")
        .nth(1)
        .map(|rest| rest.split("\n## ").next().unwrap_or(""))
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| l.len() > 12)
        .map(str::to_string)
        .collect()
}

fn json_escaped(line: &str) -> String {
    let quoted = serde_json::to_string(line).unwrap();
    quoted[1..quoted.len() - 1].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constrained_player_sends_the_seat_grammar_and_leaves_accept_out_until_there_is_an_offer()
{
    let server = mock(MockConfig {
        record_requests: true,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("constrain");
    let mut o = options(&server, out.clone());
    let mut players = fast_player(&server, 2);
    players.get_mut("flaky").unwrap().constrain = dealgym::agents::Constrain::Vllm;
    o.players = players;
    o.learner = "flaky".into();
    o.limit = Some(1);
    run_to_end(&o).await;
    let received = server.stats.bodies.lock().unwrap().clone();
    assert!(!received.is_empty());
    let mut first_moves = 0;
    for req in &received {
        let body = &req["body"];
        let pattern = body["structured_outputs"]["regex"]
            .as_str()
            .expect("the constraint is sent");
        let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap()["content"].as_str().unwrap();
        let offer_on_table = last.contains("[SUBMIT_DEAL]");
        assert_eq!(
            pattern.contains("ACCEPT_DEAL"),
            offer_on_table,
            "ACCEPT only right after an offer"
        );
        if messages.len() == 2 {
            first_moves += 1;
        }
        // A well-formed turn of this seat passes the constraint.
        let turn = "Thought: ok\nTalk: fine\nAction: [WALK_AWAY]";
        assert!(re.is_match(turn), "{pattern}");
    }
    assert!(first_moves > 0);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_outside_the_sent_grammar_is_counted_as_a_violation() {
    // The mock ignores constraint fields, as vLLM 0.12+ ignores `guided_regex`; its garbage
    // completions (chat with no action) are outside any turn grammar.
    let server = mock(MockConfig {
        garbage_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("violations");
    let mut o = options(&server, out.clone());
    let mut players = fast_player(&server, 2);
    players.get_mut("flaky").unwrap().constrain = dealgym::agents::Constrain::VllmLegacy;
    o.players = players;
    o.learner = "flaky".into();
    o.limit = Some(2);
    let summary = run_to_end(&o).await;
    let recs = read_log(&out);
    let mut checked = 0;
    for r in &recs {
        for t in r.turns.iter().filter(|t| t.seat == Seat::Learner) {
            let check = t.constraint.expect("every constrained call is checked");
            assert_eq!(check.via, dealgym::agents::Constrain::VllmLegacy);
            assert!(!check.admitted, "{}", t.raw);
            checked += 1;
        }
        let m = &r.outcome.metrics.seats.learner;
        assert_eq!(m.constraint_violations, m.constrained);
        assert!(r
            .turns
            .iter()
            .filter(|t| t.seat == Seat::Opponent)
            .all(|t| t.constraint.is_none()));
    }
    assert!(checked > 0);
    let totals = summary.stats.all().seats();
    assert_eq!(totals.learner.constraint_violations, checked);
    assert_eq!(totals.opponent.constrained, 0);
    let warning = summary
        .constraint_warning()
        .expect("one warning for the run");
    assert!(
        warning.contains(&format!(
            "{checked} of {checked} constrained completions of the learner"
        )),
        "{warning}"
    );
    assert!(warning.contains("constrain = \"vllm\""), "{warning}");

    // Against well-formed turns the check agrees with the parser: what the grammar admits is
    // format-ok, and a format-ok turn within the grammar's length caps is admitted.
    let server2 = mock(MockConfig::default()).await;
    let out2 = out_file("no-violations");
    let mut o2 = options(&server2, out2.clone());
    let mut players = fast_player(&server2, 2);
    players.get_mut("flaky").unwrap().constrain = dealgym::agents::Constrain::Gbnf;
    o2.players = players;
    o2.learner = "flaky".into();
    o2.limit = Some(2);
    run_to_end(&o2).await;
    let mut admitted = 0;
    for r in read_log(&out2) {
        for t in r.turns.iter().filter(|t| t.seat == Seat::Learner) {
            let check = t.constraint.expect("checked");
            let short = |part: &Option<String>| {
                part.as_deref()
                    .is_some_and(|p| !p.is_empty() && p.chars().count() <= 150 && !p.contains('\n'))
            };
            if check.admitted {
                admitted += 1;
                assert!(t.parsed.format_ok, "{}", t.raw);
            } else {
                assert!(
                    !(t.parsed.format_ok
                        && t.parsed.error.is_none()
                        && short(&t.parsed.thought)
                        && short(&t.parsed.talk)
                        && t.raw.starts_with("Thought: ")),
                    "a well-formed turn was called a violation: {}",
                    t.raw
                );
            }
        }
    }
    assert!(admitted > 0, "the mock's well-formed turns pass");
    server.stop();
    server2.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_ids_are_asked_for_and_kept_when_the_player_says_so() {
    let server = mock(MockConfig {
        record_requests: true,
        ..MockConfig::default()
    })
    .await;
    let out = out_file("token-ids");
    let mut o = options(&server, out.clone());
    let mut players = fast_player(&server, 2);
    players.get_mut("flaky").unwrap().endpoint.token_ids = true;
    o.players = players;
    o.learner = "flaky".into();
    o.limit = Some(1);
    run_to_end(&o).await;
    let received = server.stats.bodies.lock().unwrap().clone();
    assert!(received
        .iter()
        .all(|r| r["body"]["return_token_ids"] == serde_json::json!(true)));
    for r in read_log(&out) {
        for t in r.turns.iter().filter(|t| t.seat == Seat::Learner) {
            let call = t.call.as_ref().expect("call info");
            assert!(call
                .prompt_token_ids
                .as_ref()
                .is_some_and(|a| !a.is_empty()));
            assert!(call.token_ids.as_ref().is_some_and(|a| !a.is_empty()));
        }
    }
    server.stop();
}

/// `"stream": true` is answered as server-sent events, as OpenAI's API and vLLM send them: the
/// deltas make up the content of the same request unstreamed, the reasoning and the logprobs
/// come along, the usage comes when asked for, and the stream ends with `data: [DONE]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_chat_completion_is_server_sent_events_ending_in_done() {
    let server = mock(MockConfig {
        think: ThinkMode::Field,
        logprobs: true,
        ..MockConfig::default()
    })
    .await;
    let body = serde_json::json!({
        "model": "m",
        "seed": 3,
        "messages": [{"role": "user", "content": "Hello there."}],
    });
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let whole: serde_json::Value = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut streamed = body.clone();
    streamed["stream"] = true.into();
    streamed["stream_options"] = serde_json::json!({"include_usage": true});
    let answer = http.post(&url).json(&streamed).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let text = answer.text().await.unwrap();
    let events: Vec<&str> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").expect("each event is a data line"))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let chunks: Vec<serde_json::Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let deltas = || chunks.iter().filter_map(|c| c["choices"].get(0));
    let content: String = deltas()
        .filter_map(|c| c["delta"]["content"].as_str())
        .collect();
    let message = &whole["choices"][0]["message"];
    assert_eq!(content, message["content"].as_str().unwrap());
    assert!(!content.is_empty());
    let reasoning: String = deltas()
        .filter_map(|c| c["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, message["reasoning_content"].as_str().unwrap());
    assert!(deltas().any(|c| c["logprobs"]["content"].is_array()));
    let finish: Vec<&serde_json::Value> = deltas()
        .map(|c| &c["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&serde_json::json!("stop")]);
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage, &whole["usage"]);
    server.stop();
}
