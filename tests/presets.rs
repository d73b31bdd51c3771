//! The papers' rules through the binary, under their presets (`--preset`): scripted episodes
//! that reproduce each rule's value in the paper — a walk-away under the threshold reward is 0 on
//! items and on issues, a deal below τ is −γ, three [TALK] turns play on, three identical
//! proposals end the episode, a hotel call under REPO's preset scored response by response —
//! the records naming their preset and settings, and `replay --verify` passing on them under
//! their own settings.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir, threaded_mock};
use dealgym::game::OutcomeKind;
use dealgym::record::EpisodeRecord;
use dealgym_mock::MockConfig;

fn scenarios(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{family}.jsonl"))
}

/// The first scenario of a family's file, as the importer wrote it.
fn first_scenario(family: &str) -> Value {
    let text = std::fs::read_to_string(scenarios(family)).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

fn script(dir: &Path, name: &str, turns: &[String]) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(turns).unwrap()).unwrap();
    format!("script:{}", path.display())
}

fn tagged(action: &str) -> String {
    format!("Thought: t\nTalk: Here it is.\nAction: {action}")
}

fn xml(talk: &str, action: &str) -> String {
    format!("<thought>t</thought>\n<talk>{talk}</talk>\n<action>{action}</action>")
}

/// `dealgym run` of the first scenario of `family`, learner and opponent scripted, with `extra`
/// flags; the one record it wrote.
fn run_one(
    dir: &Path,
    name: &str,
    family: &str,
    players: (&str, &str),
    extra: &[&str],
) -> EpisodeRecord {
    let out = dir.join(format!("{name}.jsonl"));
    let mut args: Vec<String> = vec![
        "run".into(),
        "--scenarios".into(),
        scenarios(family).display().to_string(),
        "--limit".into(),
        "1".into(),
        "--learner".into(),
        players.0.into(),
        "--opponent".into(),
        players.1.into(),
        // One episode, not the preset's GRPO group.
        "--group-size".into(),
        "1".into(),
        "--quiet".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    succeeded(dealgym_cli(&args));
    let mut records = read_log(&out);
    assert_eq!(records.len(), 1, "{name}");
    records.remove(0)
}

/// ρ of an items share for one side of a CaSiNo scenario, computed here from the file.
fn items_rho(scenario: &Value, role: &str, shares: &[u32]) -> f64 {
    let items = scenario["game"]["items"]["items"].as_array().unwrap();
    let values = scenario["game"]["items"][role]["values"]
        .as_array()
        .unwrap();
    let (mut got, mut best) = (0.0, 0.0);
    for ((item, value), share) in items.iter().zip(values).zip(shares) {
        let (count, value) = (item["count"].as_f64().unwrap(), value.as_f64().unwrap());
        got += f64::from(*share) * value;
        best += count * value;
    }
    got / best
}

#[test]
fn under_the_batna_threshold_preset_no_deal_is_zero_and_a_deal_below_tau_is_minus_gamma() {
    let dir = temp_dir("presets-batna");
    let walk = script(&dir, "walk", &[tagged("[WALK_AWAY]")]);
    let silent = script(&dir, "silent", &[]);
    let preset = ["--preset", "batna-threshold", "--first-mover", "learner"];

    // Items: the learner walks away at once. The paper: no deal 0 (before: −γ each).
    let mut flags = preset.to_vec();
    flags.extend(["--learner-role", "agent_1"]);
    let r = run_one(&dir, "casino-walk", "casino", (&walk, &silent), &flags);
    assert_eq!(r.kind(), OutcomeKind::WalkAway);
    assert_eq!((r.rewards.learner, r.rewards.opponent), (0.0, 0.0));
    assert_eq!(r.preset.as_deref(), Some("batna-threshold"));
    let config = r
        .reward_config
        .as_ref()
        .expect("the record names its reward settings");
    assert_eq!((config.tau, config.gamma, config.psi), (0.4, 0.5, 1.0));
    assert_eq!(r.setup.rules.format_retries, 0, "no second try: −ψ at once");
    assert_eq!(r.setup.rules.max_rounds, 6);

    // Issues: the worker walks away. 0 for both.
    let r = run_one(&dir, "job-walk", "job_interview", (&walk, &silent), &preset);
    assert_eq!(r.kind(), OutcomeKind::WalkAway);
    assert_eq!((r.rewards.learner, r.rewards.opponent), (0.0, 0.0));

    // A deal below τ: the learner (agent_1) keeps all but one firewood; the opponent accepts
    // (regulation lets it: one firewood is worth more than the no-deal 0).
    let greedy = script(
        &dir,
        "greedy",
        &[tagged("[SUBMIT_DEAL] food:3 water:3 firewood:2")],
    );
    let accept = script(&dir, "accept", &[tagged("[ACCEPT_DEAL]")]);
    let r = run_one(&dir, "casino-deal", "casino", (&greedy, &accept), &flags);
    assert_eq!(r.kind(), OutcomeKind::Deal);
    let s = first_scenario("casino");
    let learner = items_rho(&s, "agent_1", &[3, 3, 2]);
    let opponent = items_rho(&s, "agent_2", &[0, 0, 1]);
    assert!(learner >= 0.4 && opponent < 0.4, "{learner} {opponent}");
    assert!((r.outcome.outcome.rho.learner - learner).abs() < 1e-9);
    assert!((r.outcome.outcome.rho.opponent - opponent).abs() < 1e-9);
    assert!((r.rewards.learner - learner).abs() < 1e-9, "ρ ≥ τ keeps ρ");
    assert_eq!(r.rewards.opponent, -0.5, "ρ < τ gives −γ");

    // A malformed first turn forfeits at once under the paper's format policy: −ψ.
    let broken = script(&dir, "broken", &["I will not use the format.".to_string()]);
    let r = run_one(&dir, "casino-forfeit", "casino", (&broken, &silent), &flags);
    assert_eq!(r.kind(), OutcomeKind::FormatForfeit);
    assert_eq!((r.rewards.learner, r.rewards.opponent), (-1.0, 0.0));

    // Each record verifies under the settings it names, with no --config.
    for name in ["casino-walk", "job-walk", "casino-deal", "casino-forfeit"] {
        let file = dir.join(format!("{name}.jsonl"));
        succeeded(dealgym_cli(["replay", "--verify", file.to_str().unwrap()]));
    }
}

#[test]
fn under_the_batna_presets_a_readable_turn_that_breaks_the_layout_costs_psi() {
    // BATNA §2.1: "format violations receive −ψ" (ψ = 1.0, App. A), and episodes end only on
    // agreement, walk-away, a reject loop or the cap (§2): the learner's offer has Talk and
    // Action but no Thought, so the engine reads and plays it, the opponent accepts, and the
    // learner's reward is −ψ = −1 where the deal alone would pay its ρ (≥ τ = 0.4).
    let dir = temp_dir("presets-batna-layout");
    let no_thought = script(
        &dir,
        "no-thought",
        &["Talk: Here it is.\nAction: [SUBMIT_DEAL] food:3 water:3 firewood:2".to_string()],
    );
    let accept = script(&dir, "accept", &[tagged("[ACCEPT_DEAL]")]);
    for preset in ["batna-threshold", "batna-surplus", "batna-eval"] {
        let flags = [
            "--preset",
            preset,
            "--first-mover",
            "learner",
            "--learner-role",
            "agent_1",
        ];
        let r = run_one(&dir, preset, "casino", (&no_thought, &accept), &flags);
        assert_eq!(
            r.kind(),
            OutcomeKind::Deal,
            "{preset}: the readable move was played"
        );
        assert!(!r.turns[0].parsed.format_ok, "{preset}");
        // (batna-eval samples its scenarios: the one played is looked up by id.)
        let text = std::fs::read_to_string(scenarios("casino")).unwrap();
        let played: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["id"] == r.scenario_id.as_str())
            .unwrap();
        let learner = items_rho(&played, "agent_1", &[3, 3, 2]);
        assert!(learner >= 0.4, "{learner}: the deal alone would pay ρ");
        assert!((r.outcome.outcome.rho.learner - learner).abs() < 1e-9);
        assert_eq!(r.rewards.learner, -1.0, "{preset}: −ψ, not ρ = {learner}");
        // The learner's format-ok share counts the turn as the reward does: 0 of 1.
        assert_eq!(r.outcome.metrics.seats.learner.format_ok_rate, 0.0);
        let file = dir.join(format!("{preset}.jsonl"));
        succeeded(dealgym_cli(["replay", "--verify", file.to_str().unwrap()]));
    }
}

#[test]
fn the_harness_eval_preset_plays_the_200_episodes_of_the_paper() {
    // CaSiNo harness §4.2: "Each model plays 200 episodes as the learner (first mover)"; §3.1:
    // results "on held-out test scenarios". The test split holds 100 scenarios (counted here
    // from the file); each played from both seats gives 100 × 2 = 200.
    let text = std::fs::read_to_string(scenarios("casino")).unwrap();
    let test_ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["split"] == "test")
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(test_ids.len(), 100);
    let dir = temp_dir("presets-harness-eval");
    let out = dir.join("eval.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        scenarios("casino").to_str().unwrap(),
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--preset",
        "casino-harness-eval",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    assert_eq!(records.len(), 2 * test_ids.len(), "200 episodes");
    let mut seatings: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for r in &records {
        assert_eq!(r.setup.first_mover, dealgym::game::Seat::Learner);
        assert_eq!(r.preset.as_deref(), Some("casino-harness-eval"));
        seatings
            .entry(r.scenario_id.as_str())
            .or_default()
            .push(r.seats.learner.role.name().to_string());
    }
    // Every test scenario, each once with the learner as agent_1 and once as agent_2.
    let played: Vec<&str> = seatings.keys().copied().collect();
    let mut want: Vec<&str> = test_ids.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(played, want);
    for (id, mut roles) in seatings {
        roles.sort();
        assert_eq!(roles, ["agent_1", "agent_2"], "{id}");
    }
    // Each seating its own group of one.
    let groups: std::collections::BTreeSet<&str> =
        records.iter().map(|r| r.group_id.as_str()).collect();
    assert_eq!(groups.len(), 200);
    // A single game has one seating: learner_role with both seatings is refused, naming why.
    let refused = dealgym_cli([
        "run",
        "--scenarios",
        scenarios("casino").to_str().unwrap(),
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--preset",
        "casino-harness-eval",
        "--learner-role",
        "agent_1",
        "--quiet",
        "--out",
        dir.join("refused.jsonl").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("seatings"), "{err}");
}

/// The harness's self-play preset with the terminal reward alone in place of its per-turn
/// weights (which need a judge's endpoint): a file's `[rewards.weights]` replaces the preset's.
fn terminal_only(dir: &Path) -> String {
    let path = dir.join("terminal.toml");
    std::fs::write(&path, "[rewards.weights]\nterminal = 1.0\n").unwrap();
    path.display().to_string()
}

#[test]
fn under_the_harness_preset_talk_plays_on_and_three_identical_proposals_end_it() {
    let dir = temp_dir("presets-harness");
    let config = terminal_only(&dir);
    // The learner moves first (the preset): three TALKs, then the same split three times; the
    // opponent only talks.
    let mut learner: Vec<String> = (0..3).map(|_| xml("Hello!", "[TALK]")).collect();
    learner.extend((0..3).map(|_| xml("Mine.", "[SUBMIT_DEAL] food:3 water:2 firewood:0")));
    let learner = script(&dir, "learner", &learner);
    let opponent: Vec<String> = (0..6).map(|_| xml("Tell me more.", "[TALK]")).collect();
    let opponent = script(&dir, "opponent", &opponent);
    let flags = [
        "--preset",
        "casino-harness-selfplay",
        "--config",
        config.as_str(),
    ];
    let r = run_one(&dir, "talk", "casino", (&learner, &opponent), &flags);
    let moves: Vec<&str> = r
        .turns
        .iter()
        .map(|t| {
            if t.seat == dealgym::game::Seat::Learner {
                "L"
            } else {
                "O"
            }
        })
        .collect();
    // Six TALK turns played on; the learner's third identical proposal (its 6th move) ended it.
    assert_eq!(moves.len(), 11, "{moves:?}");
    assert_eq!(r.kind(), OutcomeKind::RejectLoop);
    assert_eq!(r.outcome.outcome.by, Some(dealgym::game::Seat::Learner));
    assert_eq!(
        r.outcome.outcome.detail.as_deref(),
        Some("the same terms proposed 3 times in a row")
    );
    assert_eq!(
        (r.setup.rules.reject_loop, r.setup.rules.reject_streak),
        (3, 0)
    );
    assert_eq!(r.preset.as_deref(), Some("casino-harness-selfplay"));
    succeeded(dealgym_cli([
        "replay",
        "--verify",
        dir.join("talk.jsonl").to_str().unwrap(),
    ]));
}

/// `dealgym run` of the first `limit` CaSiNo scenarios under the harness's self-play preset
/// and the `config` file, the mock at `url` in both seats, `group` episodes each; the records.
fn mock_self_play(
    out: &Path,
    url: &str,
    config: &str,
    limit: u32,
    group: u32,
) -> Vec<EpisodeRecord> {
    let model = format!("openai:mock@{url}");
    let (limit, group) = (limit.to_string(), group.to_string());
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        scenarios("casino").to_str().unwrap(),
        "--limit",
        &limit,
        "--group-size",
        &group,
        "--learner",
        &model,
        "--opponent",
        &model,
        "--preset",
        "casino-harness-selfplay",
        "--config",
        config,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    read_log(out)
}

#[test]
fn under_the_harness_preset_only_the_opponent_has_a_persona() {
    let dir = temp_dir("presets-personas");
    let config = terminal_only(&dir);
    let mock = threaded_mock(MockConfig::default());
    let records = mock_self_play(&dir.join("mock.jsonl"), &mock.url, &config, 16, 1);
    assert_eq!(records.len(), 16);
    let names = ["uncompromising", "selfish", "anchoring", "cooperative"];
    let mut seen = std::collections::BTreeSet::new();
    for r in &records {
        assert_eq!(r.seats.learner.persona, None, "the learner plays as itself");
        let persona = r
            .seats
            .opponent
            .persona
            .clone()
            .expect("the opponent has one");
        assert!(names.contains(&persona.as_str()), "{persona}");
        assert!(
            r.seats.opponent.system_prompt.contains(
                dealgym::agents::persona::builtin(&persona)
                    .unwrap()
                    .text
                    .as_str()
            ),
            "the persona is in the opponent's prompt"
        );
        seen.insert(persona);
    }
    assert!(seen.len() >= 3, "16 draws of four equally likely: {seen:?}");
}

#[test]
fn the_harness_self_play_preset_scores_each_turn_over_http() {
    let dir = temp_dir("presets-harness-http");
    let mock = threaded_mock(MockConfig::default());
    let config = dir.join("judge.toml");
    std::fs::write(
        &config,
        format!(
            "[rewards.judge]\nendpoint = \"{}\"\nmodel = \"judge\"\n",
            mock.url
        ),
    )
    .unwrap();
    let out = dir.join("selfplay.jsonl");
    let records = mock_self_play(&out, &mock.url, config.to_str().unwrap(), 3, 2);
    assert_eq!(records.len(), 6);
    for r in &records {
        let config = r.reward_config.as_ref().unwrap();
        assert!(!config
            .weights
            .contains_key(&dealgym::reward::Component::Terminal));
        assert_eq!(r.turn_rewards.len(), r.turns.len(), "a reward per turn");
        for (turn, reward) in r.turns.iter().zip(&r.turn_rewards) {
            if turn.played.is_none() {
                continue;
            }
            // Every played turn has its own judge verdict and a length in characters.
            assert!(turn.rewards.contains_key("judge"), "{:?}", turn.rewards);
            let weighted: f64 = turn
                .rewards
                .iter()
                .map(|(name, v)| {
                    let w = match name.as_str() {
                        "format" => 0.5,
                        "length" => 0.2,
                        "judge" => 0.5,
                        "points" => 2.5,
                        "strategic" => 1.0,
                        other => panic!("unexpected signal {other}"),
                    };
                    w * v
                })
                .sum();
            let reward = reward.expect("a player's turn has its own reward");
            assert!((reward - weighted).abs() < 1e-9, "{reward} vs {weighted}");
            // Strategic talk only on TALK and REJECT turns.
            let talk_or_reject = matches!(
                turn.parsed.action,
                Some(dealgym::protocol::Action::Talk | dealgym::protocol::Action::Reject)
            );
            assert_eq!(turn.rewards.contains_key("strategic"), talk_or_reject);
        }
    }
    succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
}

/// A reward model and a judge for the `repo` preset's test, on 127.0.0.1 on a thread of their
/// own: the reward model (`POST /reward`, the plain API) answers each response — the last
/// message it is sent — with the reward the test gave that text, and keeps every request; the
/// judge (`POST /v1/chat/completions`) answers the rubric of graded turn k (`Grade turn k
/// alone`) with the deduction the test gave turn k.
struct RepoStub {
    url: String,
    rm_requests: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    judge_requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn repo_stub(
    rewards: std::collections::HashMap<String, f64>,
    deductions: std::collections::BTreeMap<u32, f64>,
) -> RepoStub {
    use axum::response::IntoResponse;
    use axum::routing::post;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let rm_requests = Arc::new(Mutex::new(Vec::new()));
    let judge_requests = Arc::new(AtomicUsize::new(0));
    let (seen, judged) = (rm_requests.clone(), judge_requests.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let reward = post(move |body: axum::body::Bytes| {
                let body: Value = serde_json::from_slice(&body).unwrap();
                let response = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .and_then(|m| m["content"].as_str())
                    .unwrap_or_default()
                    .to_string();
                seen.lock().unwrap().push(body);
                let r = rewards.get(&response).copied();
                async move {
                    match r {
                        Some(r) => axum::Json(serde_json::json!({ "reward": r })).into_response(),
                        None => (axum::http::StatusCode::BAD_REQUEST, "no such response")
                            .into_response(),
                    }
                }
            });
            let graded = regex::Regex::new(r"Grade turn (\d+) alone").unwrap();
            let judge = post(move |body: axum::body::Bytes| {
                judged.fetch_add(1, Ordering::Relaxed);
                let body: Value = serde_json::from_slice(&body).unwrap();
                let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
                let k: u32 = graded.captures(prompt).unwrap()[1].parse().unwrap();
                let score = deductions.get(&k).copied().unwrap_or(0.0);
                async move {
                    axum::Json(serde_json::json!({
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant",
                            "content": format!("One fault at most.\nSCORE: {score}")
                        }}]
                    }))
                }
            });
            let app = axum::Router::new()
                .route("/reward", reward)
                .route("/v1/chat/completions", judge);
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    RepoStub {
        url: format!("http://{addr}"),
        rm_requests,
        judge_requests,
        _stop: stop,
    }
}

#[test]
fn under_the_repo_preset_each_response_of_a_hotel_call_is_scored_and_enhanced() {
    let dir = temp_dir("presets-repo");
    // The first call of the family's file (the preset plays `hotel`, and without --scenarios
    // its scenarios/hotel.jsonl), its agent's target and acceptable selling prices per ticket.
    let call = first_scenario("hotel");
    let bd = call["game"]["tickets"]["bd"].as_array().unwrap();
    let price = |i: usize, which: &str| bd[i][which]["selling"].as_f64().unwrap();
    let a: Vec<f64> = (0..bd.len()).map(|i| price(i, "target")).collect();
    let b: Vec<f64> = (0..bd.len()).map(|i| price(i, "acceptable")).collect();
    // Raises of 1 and 2 on t1 stay under its acceptable price and under 10 %.
    assert!(a[0] + 2.0 <= b[0] && a[0] >= 20.0, "{a:?} {b:?}");
    let terms = |t1: f64| {
        let mut t = vec![format!("t1:{t1}")];
        t.extend((1..a.len()).map(|i| format!("t{}:{}", i + 1, a[i])));
        t.join(" ")
    };
    let agent = |talk: &str, action: String| format!("Thought: t\nTalk: {talk}\nAction: {action}");
    let ask =
        "Hello from the platform: guests find your rooms dear, could they come down a little?";
    // The agent (k = 1, 3, …, 11): asks at the targets; asks below t1's target (the
    // procedure's −20); names the work-order (the guardrail's −5); raises t1 by 1; after the
    // hotel's fourth refusal in a row plays on (the procedure's −20); then hangs up.
    let agents = [
        agent(ask, format!("[SUBMIT_DEAL] {}", terms(a[0]))),
        agent(
            "Could you do a bit lower still?",
            format!("[SUBMIT_DEAL] {}", terms(a[0] - 1.0)),
        ),
        agent(
            "The work-order says these prices would bring guests.",
            format!("[SUBMIT_DEAL] {}", terms(a[0])),
        ),
        agent(
            "I hear you; a little more on the first room then?",
            format!("[SUBMIT_DEAL] {}", terms(a[0] + 1.0)),
        ),
        agent(
            "Please think about it once more.",
            format!("[SUBMIT_DEAL] {}", terms(a[0] + 2.0)),
        ),
        agent(
            "I understand. Thank you for your time, goodbye.",
            "[WALK_AWAY]".into(),
        ),
    ];
    let hotels: Vec<String> = [
        "No.",
        "No, not at all.",
        "Still no.",
        "We will not.",
        "No, goodbye.",
    ]
    .iter()
    .map(|talk| format!("Thought: t\nTalk: {talk}\nAction: [REJECT_DEAL]"))
    .collect();
    // The reward model's R_m per response and the judge's deduction per graded turn k.
    let r_m = [0.5, 0.4, -0.6, 0.2, 0.3, 0.1];
    let r_m_hotel = [-0.2, 0.1, 0.0, -0.1, 0.3];
    let rewards: std::collections::HashMap<String, f64> = agents
        .iter()
        .cloned()
        .zip(r_m)
        .chain(hotels.iter().cloned().zip(r_m_hotel))
        .collect();
    let deductions: std::collections::BTreeMap<u32, f64> =
        [(2, -5.0), (3, -5.0), (4, -20.0), (5, -20.0), (9, -30.0)].into();
    let stub = repo_stub(rewards, deductions);
    let config = dir.join("repo.toml");
    std::fs::write(
        &config,
        format!(
            "[rewards.judge]\nendpoint = \"{0}/v1\"\nmodel = \"judge\"\nretries = 0\n\
             [rewards.reward_model]\nurl = \"{0}/reward\"\nretries = 0\n",
            stub.url
        ),
    )
    .unwrap();
    let out = dir.join("repo.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--preset",
        "repo",
        "--config",
        config.to_str().unwrap(),
        "--limit",
        "1",
        "--learner",
        &script(&dir, "agent", &agents),
        "--opponent",
        &script(&dir, "hotel", &hotels),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let mut records = read_log(&out);
    assert_eq!(records.len(), 1);
    let r = records.remove(0);
    assert_eq!(r.scenario_id, call["id"].as_str().unwrap());
    assert_eq!(r.kind(), OutcomeKind::WalkAway);
    assert_eq!(r.turns.len(), 11);
    assert!(r.reward_issues.is_empty(), "{:?}", r.reward_issues);
    // One reward-model call per response (11 turns, both seats) and one judge call per turn:
    // the reward model was sent the messages of each turn's call, then the turn itself.
    let sent = stub.rm_requests.lock().unwrap().clone();
    assert_eq!(sent.len(), 11);
    assert_eq!(
        stub.judge_requests
            .load(std::sync::atomic::Ordering::Relaxed),
        11
    );
    for (i, turn) in r.turns.iter().enumerate() {
        let body = sent
            .iter()
            .find(|b| {
                let m = b["messages"].as_array().unwrap();
                m.last().unwrap()["content"] == turn.raw.as_str()
            })
            .expect("the turn was scored");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[0]["role"], "system");
        assert_eq!(m[0]["content"], r.seats[turn.seat].system_prompt.as_str());
        assert_eq!(m.last().unwrap()["role"], "assistant");
        // The query ends with the counterpart's turn as the seat received it; the seat's own
        // earlier responses are in it, none later.
        if i > 0 {
            assert_eq!(m[m.len() - 2]["role"], "user");
            assert_eq!(
                m[m.len() - 2]["content"],
                r.turns[i - 1].forwarded.as_deref().unwrap()
            );
        }
        let own = m.iter().filter(|m| m["role"] == "assistant").count();
        assert_eq!(own, i / 2 + 1, "turn {}", i + 1);
    }
    // Each turn's R = R_m · (1 + sign(R_m) · clip(E, −100, 100)/100) with that turn's R_m and
    // E = judge + rules (REPO §4); the judge 0 once the seat's history is negative (Figure 6).
    //   agent  k1: R_m 0.5,  judge 0,                    rules 0:    0.5
    //          k3: R_m 0.4,  judge −5 (history 0),       below target −20: E −25, 0.4·0.75 = 0.3
    //          k5: R_m −0.6, judge −20 → 0 (history −5), work-order −5: E −5, −0.6·1.05 = −0.63
    //          k7: R_m 0.2,  judge 0,                    rules 0:    0.2
    //          k9: R_m 0.3,  judge −30 → 0,              four refusals −20: E −20, 0.3·0.8 = 0.24
    //          k11: R_m 0.1, hanging up breaks nothing:  0.1
    //   hotel  k2: R_m −0.2, judge −5: E −5, −0.2·1.05 = −0.21
    //          k4: R_m 0.1,  judge −20 → 0 (history −5): 0.1
    //          k6: 0.0 · anything = 0; k8: −0.1; k10: 0.3
    let want = [0.5, -0.21, 0.3, 0.1, -0.63, 0.0, 0.2, -0.1, 0.24, 0.3, 0.1];
    for (k, (got, want)) in r.turn_rewards.iter().zip(want).enumerate() {
        let got = got.expect("a played turn's own reward");
        assert!((got - want).abs() < 1e-9, "k{}: {got} vs {want}", k + 1);
    }
    for (turn, r_m) in r
        .turns
        .iter()
        .step_by(2)
        .zip(r_m)
        .chain(r.turns.iter().skip(1).step_by(2).zip(r_m_hotel))
    {
        assert_eq!(turn.rewards["reward_model"], r_m);
    }
    assert_eq!(r.turns[2].rewards["rule:procedure_below_target"], -20.0);
    assert_eq!(r.turns[4].rewards["rule:guard_internal_terms"], -5.0);
    assert_eq!(r.turns[8].rewards["rule:procedure_four_refusals"], -20.0);
    assert_eq!(r.turns[4].rewards["judge"], -20.0, "the verdict as given");
    // The learner's episode: R_m the mean of its responses, (0.5 + 0.4 − 0.6 + 0.2 + 0.3 +
    // 0.1)/6 = 0.15; the judge the mean of its counted verdicts, −5/6; the rules their sum,
    // −20 − 5 − 20 = −45. E = −45 − 5/6, R = 0.15 · (1 − (45 + 5/6)/100).
    let want = 0.15 * (1.0 - (45.0 + 5.0 / 6.0) / 100.0);
    assert!(
        (r.rewards.learner - want).abs() < 1e-9,
        "{}",
        r.rewards.learner
    );
    // Replayed under its own settings, the record is what it was (the reward model's and the
    // judge's per-turn numbers kept).
    succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--preset",
        "repo",
        "--config",
        config.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
}
