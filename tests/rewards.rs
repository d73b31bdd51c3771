//! The reward calls over real HTTP: runs against the built-in mock on 127.0.0.1 acting as the
//! negotiators' judge and reward model, with rules, a judge and a reward model configured.
//! Both seats play scripts, so every episode of a group has the same transcript — which is what
//! lets the tests count the calls the caches save.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use dealgym::export::{ExportOptions, Format, Seats};
use dealgym::game::{FirstMover, Message, OutcomeKind, Prompts, Seat};
use dealgym::record::{EpisodeRecord, RecordReader, RewardIssueCounts};
use dealgym::replay::{rescore, verify, VerifyOptions};
use dealgym::reward::judge::{
    builtin_rubric, judge_input, judge_turn_input, parse_verdict, Rubric,
};
use dealgym::reward::reward_model::{request_body, RewardModelApi};
use dealgym::reward::{total, Component, JudgeMode, RewardConfig, TurnReward};
use dealgym::run::{run, FileConfig, RunOptions};
use dealgym::scenario::{load_scenarios, LoadOptions, Scenario};
use dealgym_mock::{conversation_reward, verdict, MockConfig, MockServer};

const LEARNER: &str = "Thought: food matters most to us\nTalk: We need food for the kids, could you spare two?\nAction: [SUBMIT_DEAL] food:2 water:1 firewood:1";
const OPPONENT: &str =
    "Thought: that leaves me plenty\nTalk: That works for me, thank you.\nAction: [ACCEPT_DEAL]";

struct Setup {
    dir: PathBuf,
    scenarios: PathBuf,
    learner: PathBuf,
    opponent: PathBuf,
}

fn setup(name: &str) -> Setup {
    let dir = std::env::temp_dir().join(format!("dealgym-rewards-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    let first = std::fs::read_to_string(source).unwrap();
    let scenarios = dir.join("casino.jsonl");
    std::fs::write(&scenarios, format!("{}\n", first.lines().next().unwrap())).unwrap();
    let (learner, opponent) = (dir.join("learner.json"), dir.join("opponent.json"));
    std::fs::write(&learner, serde_json::json!([LEARNER]).to_string()).unwrap();
    std::fs::write(&opponent, serde_json::json!([OPPONENT]).to_string()).unwrap();
    Setup {
        dir,
        scenarios,
        learner,
        opponent,
    }
}

async fn mock(config: MockConfig) -> MockServer {
    MockServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config)
        .await
        .unwrap()
}

/// The rewards table every test starts from: terminal, format, points, one rule, the judge
/// with one label set, and the reward model behind `rm_path` of the mock.
fn rewards_toml(judge_url: &str, rm_url: &str, rm_api: &str) -> String {
    format!(
        r#"
[rewards]
[rewards.weights]
terminal = 1.0
format = 0.1
points = 0.2
rules = 1.0
judge = 0.5
reward_model = 0.5

[[rewards.rules]]
name = "mentions_kids"
pattern = "(?i)\\bkids\\b"
target = "talk"
score = -0.25

[rewards.judge]
endpoint = "{judge_url}"
model = "mock-judge"
labels = {{ strategy = ["anchor", "concede", "reciprocate"] }}
retries = 1
backoff_s = 0.01
timeout_s = 5

[rewards.reward_model]
url = "{rm_url}"
api = "{rm_api}"
model = "mock-rm"
retries = 2
backoff_s = 0.01
timeout_s = 5
"#
    )
}

/// Load `toml` as a config file (so it is checked as `--config` would be).
fn load(s: &Setup, toml: &str) -> RewardConfig {
    let path = s.dir.join("config.toml");
    std::fs::write(&path, toml).unwrap();
    FileConfig::load(&path)
        .unwrap_or_else(|e| panic!("{e}"))
        .rewards
}

fn options(s: &Setup, rewards: RewardConfig, group_size: u32) -> RunOptions {
    let mut o = RunOptions::new(
        vec![s.scenarios.clone()],
        &format!("script:{}", s.learner.display()),
        &format!("script:{}", s.opponent.display()),
        s.dir.join("episodes.jsonl"),
    );
    o.episode.first_mover = FirstMover::Learner;
    o.group_size = group_size;
    o.concurrency = 1;
    o.progress = false;
    o.rewards = rewards;
    o
}

async fn go(o: &RunOptions) -> Vec<EpisodeRecord> {
    let summary = run(o, std::future::pending()).await.expect("run completes");
    assert_eq!(summary.written, summary.planned);
    RecordReader::open(&o.out)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn scenario(s: &Setup) -> Arc<Scenario> {
    let mut loaded = load_scenarios(&s.scenarios, LoadOptions::default()).unwrap();
    Arc::new(loaded.scenarios.remove(0))
}

/// A seat's conversation as the reward model was sent it (the replayed episode's view).
fn view(record: &EpisodeRecord, scenario: &Arc<Scenario>, seat: Seat) -> Vec<Message> {
    let episode = record.replay(scenario, &Prompts::builtin()).unwrap();
    episode.view(seat).to_vec()
}

/// What the mock reward model answers for a conversation sent as `messages`.
fn mock_reward_for_messages(messages: &[Message]) -> f64 {
    let text: Vec<String> = messages
        .iter()
        .map(|m| {
            let role = serde_json::to_value(m.role).unwrap();
            format!("{}: {}", role.as_str().unwrap(), m.content)
        })
        .collect();
    conversation_reward(&text.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_reward_model_and_rules_land_in_the_record_and_the_caches_save_calls() {
    let server = mock(MockConfig::default()).await;
    let s = setup("full");
    let rm_url = format!("http://{}/pooling", server.addr);
    let config = load(
        &s,
        &rewards_toml(&server.base_url(), &rm_url, "vllm_pooling"),
    );
    let o = options(&s, config.clone(), 2);
    let records = go(&o).await;
    assert_eq!(records.len(), 2);
    // Two episodes with the same transcript: each seat judged and scored once, the second
    // episode served from the caches.
    assert_eq!(server.stats.judge_requests.load(Ordering::Relaxed), 2);
    assert_eq!(
        server.stats.reward_model_requests.load(Ordering::Relaxed),
        2
    );
    let sc = scenario(&s);
    for r in &records {
        assert_eq!(r.kind(), OutcomeKind::Deal, "{}", r.episode_id);
        assert!(r.reward_issues.is_empty(), "{:?}", r.reward_issues);
        // The rule fires on the learner's Talk only.
        assert_eq!(r.turns[0].rewards["rule:mentions_kids"], -0.25);
        assert!(!r.turns[1].rewards.contains_key("rule:mentions_kids"));
        assert_eq!(r.turns[0].rewards["format"], 1.0);
        for seat in Seat::BOTH {
            let parts = &r.reward_parts[seat];
            let names: Vec<&str> = parts.iter().map(|(c, _)| c.name()).collect();
            assert_eq!(
                names,
                [
                    "format",
                    "judge",
                    "points",
                    "reward_model",
                    "rules",
                    "terminal"
                ]
            );
            // The judge's number is the mock's verdict on the rubric rendered for this seat
            // (its own brief, the transcript, the label sets).
            let judge = config.judge.as_ref().expect("a judge");
            let rubric = Rubric::new(
                builtin_rubric(&judge.rubric, judge.mode)
                    .unwrap()
                    .to_string(),
            )
            .unwrap();
            let brief = &r.seats[seat].system_prompt;
            let input = judge_input(&sc, &r.setup, &r.turns, seat, brief, &judge.labels);
            let prompt = rubric.render(&input).unwrap();
            let verdict = parse_verdict(
                &verdict(&prompt),
                &input.judged_turns,
                &judge.labels,
                judge.range,
            )
            .expect("the mock's verdict is readable");
            assert_eq!(parts[Component::Judge], verdict.score, "{seat:?}");
            // The reward model's number is the mock's for this seat's conversation.
            let want = mock_reward_for_messages(&view(r, &sc, seat));
            assert_eq!(parts[Component::RewardModel], want, "{seat:?}");
            // The total is the weighted sum of the parts.
            let want = 1.0 * parts[Component::Terminal]
                + 0.1 * parts[Component::Format]
                + 0.2 * parts[Component::Points]
                + 1.0 * parts[Component::Rules]
                + 0.5 * parts[Component::Judge]
                + 0.5 * parts[Component::RewardModel];
            assert!((r.rewards[seat] - want).abs() < 1e-9, "{seat:?}");
        }
        assert_eq!(r.reward_parts.learner[Component::Rules], -0.25);
        assert_eq!(r.reward_parts.opponent[Component::Rules], 0.0);
        assert!(
            r.reward_parts.opponent[Component::Rules].is_sign_positive(),
            "0, not -0"
        );
        // Each turn labelled by its seat's judge, from the set.
        for t in &r.turns {
            let label = &t.labels["strategy"];
            assert!(["anchor", "concede", "reciprocate"].contains(&label.as_str()));
        }
    }
    assert_eq!(records[0].reward_parts, records[1].reward_parts);
    // `replay verify` replays these records clean under the run's config, keeping the judge's
    // and the reward model's parts.
    let report = verify(&VerifyOptions {
        files: vec![o.out.clone()],
        episode: None,
        scenarios: vec![s.scenarios.clone()],
        prompts_dir: None,
        rewards: Some(config.clone()),
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
    // Rescoring with the judge weighted 1 and the points dropped keeps the stored judge and
    // reward-model values and recombines the total.
    let mut other = config.clone();
    other.weights.remove(&Component::Points);
    other.weights.insert(Component::Judge, 1.0);
    let r = &records[0];
    let rescored = rescore(r, &sc, &other);
    assert_eq!(
        rescored.reward_parts.learner[Component::Judge],
        r.reward_parts.learner[Component::Judge]
    );
    assert!(!rescored.reward_parts.learner.contains(Component::Points));
    assert_eq!(rescored.turns[0].labels, r.turns[0].labels);
    let want = total(&rescored.reward_parts.learner, &other);
    assert_eq!(rescored.rewards.learner, want);
    assert!(
        (want
            - (r.rewards.learner + 0.5 * r.reward_parts.learner[Component::Judge]
                - 0.2 * r.reward_parts.learner[Component::Points]))
            .abs()
            < 1e-9
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_verdict_scores_zero_and_is_counted() {
    let server = mock(MockConfig {
        judge_unreadable_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let s = setup("unreadable");
    let rm_url = format!("http://{}/pooling", server.addr);
    let config = load(
        &s,
        &rewards_toml(&server.base_url(), &rm_url, "vllm_pooling"),
    );
    let records = go(&options(&s, config, 1)).await;
    let r = &records[0];
    assert_eq!(r.reward_issues["judge_unreadable"], 2);
    assert_eq!(r.reward_parts.learner[Component::Judge], 0.0);
    assert_eq!(r.reward_parts.opponent[Component::Judge], 0.0);
    assert!(
        r.turns.iter().all(|t| t.labels.is_empty()),
        "no guessed labels"
    );
    // The reward model still counted.
    assert!(r.reward_parts.learner.contains(Component::RewardModel));
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_reward_model_is_retried_then_counted_and_the_episode_kept() {
    let server = mock(MockConfig {
        reward_model_error_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let s = setup("failing");
    let rm_url = format!("http://{}/reward", server.addr);
    // The judge at a port nobody listens on: it fails too, and is counted apart.
    let toml = rewards_toml("http://127.0.0.1:9/v1", &rm_url, "plain");
    let config = load(&s, &toml);
    let records = go(&options(&s, config.clone(), 2)).await;
    assert_eq!(records.len(), 2, "the episodes are written all the same");
    // 1 try + 2 retries per seat and episode; failures are not cached.
    assert_eq!(
        server.stats.reward_model_requests.load(Ordering::Relaxed),
        2 * 2 * 3
    );
    for r in &records {
        assert_eq!(r.kind(), OutcomeKind::Deal);
        assert_eq!(r.reward_issues["reward_model_failed"], 2);
        assert_eq!(r.reward_issues["judge_failed"], 2);
        for seat in Seat::BOTH {
            let parts = &r.reward_parts[seat];
            assert!(!parts.contains(Component::RewardModel) && !parts.contains(Component::Judge));
            assert_eq!(r.rewards[seat], total(parts, &config));
        }
        // The record says why, and that its reward is short of the failed parts.
        assert!(r.reward_missing());
        assert!(
            r.reward_errors["reward_model_failed"].contains("500"),
            "{:?}",
            r.reward_errors
        );
        assert!(r.reward_errors.contains_key("judge_failed"));
    }
    // A run's summary warns with the first error of each kind; export writes no training data
    // from such episodes (a missing part is no reward of 0).
    let mut counts = RewardIssueCounts::default();
    records.iter().for_each(|r| counts.add(r));
    let warning = counts.warning().expect("a warning");
    assert!(warning.contains("reward_model_failed 4"), "{warning}");
    assert!(
        warning.contains("2 episodes have a reward short"),
        "{warning}"
    );
    assert!(warning.contains("first reward_model_failed:"), "{warning}");
    let mut export = ExportOptions::new(vec![s.dir.join("episodes.jsonl")], Format::Messages);
    export.scenarios = vec![s.scenarios.clone()];
    let mut lines = Vec::new();
    let exported = dealgym::export::export(&export, &mut lines).expect("export runs");
    assert_eq!((exported.reward_missing, exported.lines), (2, 0));
    let said = exported
        .skipped_line(Format::Messages)
        .expect("a skipped line");
    assert!(
        said.contains("2 episodes whose judge or reward model failed"),
        "{said}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_score_and_plain_apis_are_read_and_enhance_scales_the_primary() {
    let server = mock(MockConfig::default()).await;
    let sc_setup = setup("apis");
    let sc = scenario(&sc_setup);
    for (path, api, kind) in [
        ("score", "vllm_score", RewardModelApi::VllmScore),
        ("reward", "plain", RewardModelApi::Plain),
    ] {
        let rm_url = format!("http://{}/{path}", server.addr);
        let toml = format!(
            r#"
[rewards]
combine = "enhance"
[rewards.enhance]
primary = "reward_model"
auxiliary = ["rules"]
n = 1.0
[[rewards.rules]]
name = "polite"
pattern = "(?i)thank"
target = "talk"
score = 0.5
[rewards.reward_model]
url = "{rm_url}"
api = "{api}"
"#
        );
        let config = load(&sc_setup, &toml);
        let mut o = options(&sc_setup, config.clone(), 1);
        o.out = sc_setup.dir.join(format!("{path}.jsonl"));
        let r = go(&o).await.remove(0);
        for seat in Seat::BOTH {
            let view = view(&r, &sc, seat);
            let body = request_body(kind, None, &view);
            let want = match kind {
                RewardModelApi::VllmScore => conversation_reward(&format!(
                    "{}\n{}",
                    body["text_1"].as_str().unwrap(),
                    body["text_2"].as_str().unwrap()
                )),
                _ => mock_reward_for_messages(&view),
            };
            let parts = &r.reward_parts[seat];
            assert_eq!(parts[Component::RewardModel], want, "{api} {seat:?}");
            // The opponent thanks (+0.5 → E = 0.5): R = R_m · (1 + sign(R_m) · 0.5); the
            // learner says no thanks: R = R_m.
            let e = if seat == Seat::Opponent { 0.5 } else { 0.0 };
            let want = want * (1.0 + want.signum() * e);
            assert!((r.rewards[seat] - want).abs() < 1e-9, "{api} {seat:?}");
        }
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_rewards_add_nothing_to_the_record_and_call_nobody() {
    let server = mock(MockConfig::default()).await;
    let s = setup("default");
    let o = options(&s, RewardConfig::default(), 1);
    let records = go(&o).await;
    assert_eq!(server.stats.judge_requests.load(Ordering::Relaxed), 0);
    assert_eq!(
        server.stats.reward_model_requests.load(Ordering::Relaxed),
        0
    );
    let line = std::fs::read_to_string(&o.out).unwrap();
    for key in [
        "reward_parts",
        "reward_issues",
        "\"labels\"",
        "\"rewards\":{\"format",
    ] {
        assert!(!line.contains(key), "{key} in {line}");
    }
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert!(v["turns"][0].get("rewards").is_none());
    assert_eq!(
        records[0].rewards.learner,
        records[0].outcome.outcome.rho.learner
    );
    server.stop();
}

#[test]
fn a_config_naming_a_missing_rubric_or_a_bad_rule_is_refused_with_where() {
    let s = setup("bad-config");
    let path = s.dir.join("bad.toml");
    std::fs::write(
        &path,
        "[rewards.weights]\njudge = 1.0\n[rewards.judge]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\nrubric = \"missing.j2\"",
    )
    .unwrap();
    let err = FileConfig::load(&path).unwrap_err().to_string();
    assert!(err.contains("bad.toml"), "{err}");
    assert!(
        err.contains("rubric") && err.contains("missing.j2"),
        "{err}"
    );
    // A rubric of one's own, next to the config file, is found and compiled.
    std::fs::write(s.dir.join("mine.j2"), "Grade {{ role }}. SCORE: x").unwrap();
    std::fs::write(
        &path,
        "[rewards.weights]\njudge = 1.0\n[rewards.judge]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\nrubric = \"mine.j2\"",
    )
    .unwrap();
    let ok = FileConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let rubric = ok.rewards.judge.unwrap().rubric;
    assert!(Path::new(&rubric).is_absolute(), "{rubric}");
    std::fs::write(
        &path,
        "[rewards.weights]\nrules = 1.0\n[[rewards.rules]]\nname = \"budget\"\npattern = \"([\"\ntarget = \"talk\"\nscore = -1.0",
    )
    .unwrap();
    let err = FileConfig::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("`budget`") && err.contains("bad pattern"),
        "{err}"
    );
}

/// Four turns: the learner asks for all the food, the opponent refuses, the learner asks for
/// two, the opponent accepts.
fn four_turn_scripts(s: &Setup) {
    let greedy = "Thought: food matters most to us\nTalk: We need all the food for the kids.\nAction: [SUBMIT_DEAL] food:3 water:1 firewood:1";
    let refuse =
        "Thought: too greedy\nTalk: That is too much food for us to give.\nAction: [REJECT_DEAL]";
    std::fs::write(&s.learner, serde_json::json!([greedy, LEARNER]).to_string()).unwrap();
    std::fs::write(
        &s.opponent,
        serde_json::json!([refuse, OPPONENT]).to_string(),
    )
    .unwrap();
}

/// The rewards table of the per-turn tests: format, points and a per-turn judge in [−1, 1]
/// with one label set, the terminal reward on every row.
fn per_turn_toml(judge_url: &str) -> String {
    format!(
        r#"
[rewards]
turn_reward = "every_turn"
[rewards.weights]
terminal = 1.0
format = 0.5
points = 1.0
judge = 0.5

[rewards.judge]
endpoint = "{judge_url}"
model = "mock-judge"
mode = "turn"
range = [-1.0, 1.0]
labels = {{ strategy = ["anchor", "concede", "reciprocate"] }}
retries = 1
backoff_s = 0.01
timeout_s = 5
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_turn_judge_grades_each_turn_and_export_rows_carry_their_own_reward() {
    let server = mock(MockConfig::default()).await;
    let s = setup("per-turn");
    four_turn_scripts(&s);
    let config = load(&s, &per_turn_toml(&server.base_url()));
    let o = options(&s, config.clone(), 2);
    let records = go(&o).await;
    // Two episodes of one transcript: each of its 4 turns judged once, the second episode's
    // verdicts from the cache.
    assert_eq!(server.stats.judge_requests.load(Ordering::Relaxed), 4);
    let judge = config.judge.as_ref().expect("a judge");
    let rubric = Rubric::new(
        builtin_rubric(&judge.rubric, JudgeMode::Turn)
            .unwrap()
            .to_string(),
    )
    .unwrap();
    let sc = scenario(&s);
    for r in &records {
        assert_eq!((r.kind(), r.turns.len()), (OutcomeKind::Deal, 4));
        assert!(r.reward_issues.is_empty(), "{:?}", r.reward_issues);
        for (i, t) in r.turns.iter().enumerate() {
            // The verdict on turn i is the mock's on the turn rubric rendered over the
            // transcript up to turn i, stored on the turn with its label.
            let brief = &r.seats[t.seat].system_prompt;
            let input = judge_turn_input(&sc, &r.setup, &r.turns, i, brief, &judge.labels)
                .with_range(judge.range);
            let prompt = rubric.render(&input).unwrap();
            assert!(prompt.contains("SCORE RANGE: -1.0 to 1.0"), "{prompt}");
            let v = parse_verdict(
                &verdict(&prompt),
                &[i as u32 + 1],
                &judge.labels,
                judge.range,
            )
            .expect("the mock's verdict is readable");
            assert_eq!(t.rewards["judge"], v.score, "turn {i}");
            assert!((-1.0..=1.0).contains(&v.score));
            assert_eq!(t.labels, v.labels[&(i as u32 + 1)], "turn {i}");
            // The turn's own reward: its weighted signals plus its seat's terminal reward.
            let terminal = r.reward_parts[t.seat][Component::Terminal];
            let want = 0.5 * t.rewards["format"]
                + t.rewards["points"]
                + 0.5 * t.rewards["judge"]
                + terminal;
            let got = r.turn_rewards[i].expect("a player's turn");
            assert!((got - want).abs() < 1e-9, "turn {i}: {got} vs {want}");
        }
        // Each seat's judge part is the mean of its turns' verdicts; the total is as before.
        for seat in Seat::BOTH {
            let mine: Vec<f64> = r
                .turns
                .iter()
                .filter(|t| t.seat == seat)
                .map(|t| t.rewards["judge"])
                .collect();
            let mean = mine.iter().sum::<f64>() / mine.len() as f64;
            assert!((r.reward_parts[seat][Component::Judge] - mean).abs() < 1e-12);
            assert_eq!(r.rewards[seat], total(&r.reward_parts[seat], &config));
        }
        assert_ne!(
            r.turn_rewards[0], r.turn_rewards[2],
            "the learner's two turns"
        );
    }
    // Replay verifies these records (keeping the per-turn verdicts), and a rescore under the
    // same table gives the same record.
    let report = verify(&VerifyOptions {
        files: vec![o.out.clone()],
        episode: None,
        scenarios: vec![s.scenarios.clone()],
        prompts_dir: None,
        rewards: Some(config.clone()),
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
    assert_eq!(rescore(&records[0], &sc, &config), records[0]);

    // The export: one row per turn, each with its own reward and signals; the episode's
    // total beside them as `episode_reward` (the row's `reward` is the turn's).
    let rows = export_rows(&s, &o.out);
    assert_eq!(rows.len(), 8, "4 turns of each of 2 episodes");
    for row in &rows {
        let r = &records[usize::from(row["episode_id"] == "g0-m1")];
        let i = row["turn_index"].as_u64().unwrap() as usize;
        let seat: Seat = serde_json::from_value(row["seat"].clone()).unwrap();
        assert_eq!(row["turn_reward"].as_f64(), r.turn_rewards[i], "{row}");
        assert_eq!(row["reward"].as_f64(), r.turn_rewards[i], "{row}");
        assert_eq!(
            row["episode_reward"].as_f64(),
            Some(r.rewards[seat]),
            "{row}"
        );
        // The two episodes share one transcript and one judge: each turn's group holds two
        // equal rewards, so its advantage is 0.
        assert_eq!(row["group_size"], 2, "{row}");
        assert_eq!(row["advantage"].as_f64(), Some(0.0), "{row}");
        assert_eq!(
            row["turn_signals"]["judge"].as_f64(),
            Some(r.turns[i].rewards["judge"])
        );
    }
    let learner: Vec<f64> = rows
        .iter()
        .filter(|r| r["episode_id"] == "g0-m0" && r["seat"] == "learner")
        .map(|r| r["turn_reward"].as_f64().unwrap())
        .collect();
    assert_eq!(learner.len(), 2);
    assert_ne!(learner[0], learner[1], "rows carry different values");

    // The same episodes rescored with `turn_reward = "episode"` (the default): no per-turn
    // rewards in the records, and every row of a seat carries the seat's episode total.
    let episode = RewardConfig {
        turn_reward: TurnReward::Episode,
        ..config.clone()
    };
    let rescored: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(&rescore(r, &sc, &episode)).unwrap())
        .collect();
    assert!(!rescored[0].contains("turn_rewards"));
    let file = s.dir.join("episode-rows.jsonl");
    std::fs::write(&file, rescored.join("\n") + "\n").unwrap();
    for row in export_rows(&s, &file) {
        assert_eq!(row["turn_reward"], row["reward"], "{row}");
    }
    server.stop();
}

/// The `prompt-completion` rows of both seats of `file`.
fn export_rows(s: &Setup, file: &Path) -> Vec<serde_json::Value> {
    let mut export = ExportOptions::new(vec![file.to_path_buf()], Format::PromptCompletion);
    export.scenarios = vec![s.scenarios.clone()];
    export.seats = Seats::Both;
    let mut out = Vec::new();
    dealgym::export::export(&export, &mut out).expect("export runs");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_per_turn_verdict_scores_that_turn_zero_and_is_counted_per_turn() {
    let server = mock(MockConfig {
        judge_unreadable_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let s = setup("per-turn-unreadable");
    four_turn_scripts(&s);
    let config = load(&s, &per_turn_toml(&server.base_url()));
    let records = go(&options(&s, config, 1)).await;
    let r = &records[0];
    assert_eq!(r.reward_issues["judge_unreadable"], 4, "one per turn");
    assert!(r
        .turns
        .iter()
        .all(|t| t.rewards["judge"] == 0.0 && t.labels.is_empty()));
    assert_eq!(r.reward_parts.learner[Component::Judge], 0.0);
    server.stop();
}
