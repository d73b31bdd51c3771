//! `dealgym export` as a process, on records played by rule players through `dealgym run` and
//! then given hand-picked rewards (so every group statistic below is worked by hand) and
//! made-up but consistent exact token ids (the exporter only reads them).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use dealgym::game::{Message, MessageRole, OutcomeKind, Prompts, Seat, TurnTokens};
use dealgym::record::{EpisodeRecord, RecordReader};
use dealgym::scenario::{load_scenarios, LoadOptions};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn dealgym() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    cmd.current_dir(manifest());
    cmd
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Rule players on the first CaSiNo scenarios, the learner in `role`, moving first.
fn play(dir: &Path, name: &str, role: &str, args: &[&str]) -> Vec<EpisodeRecord> {
    let out = dir.join(format!("{name}.jsonl"));
    let status = dealgym()
        .args(["run", "--scenarios", "scenarios/casino.jsonl", "--quiet"])
        .args(["--learner-role", role, "--first-mover", "learner"])
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let mut records: Vec<EpisodeRecord> = RecordReader::open(&out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    records.sort_by(|a, b| a.episode_id.cmp(&b.episode_id));
    records
}

fn write(path: &Path, records: &[EpisodeRecord]) {
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

/// The made-up exact ids of a seat's call k (base 1000 for the learner, 2000 for the
/// opponent): its first prompt is [b+1, b+2, b+3], a later prompt suffix [b+10k+1]; it samples
/// [b+10k+5, b+10k+6] with logprobs [−0.5·(k+1), −0.25].
fn call_tokens(seat: Seat, k: u32) -> TurnTokens {
    let b = if seat == Seat::Learner { 1000 } else { 2000 };
    TurnTokens {
        prompt_ids: if k == 0 {
            vec![b + 1, b + 2, b + 3]
        } else {
            vec![b + 10 * k + 1]
        },
        completion_ids: vec![b + 10 * k + 5, b + 10 * k + 6],
        logprobs: vec![-0.5 * f64::from(k + 1), -0.25],
        finish_reason: Some("stop".into()),
        drift: None,
        forced_from: None,
    }
}

fn attach_tokens(record: &mut EpisodeRecord) {
    for seat in Seat::BOTH {
        for (k, turn) in record
            .turns
            .iter_mut()
            .filter(|t| t.seat == seat)
            .enumerate()
        {
            turn.tokens = Some(call_tokens(seat, k as u32));
        }
    }
}

fn calls(record: &EpisodeRecord, seat: Seat) -> u32 {
    record.turns.iter().filter(|t| t.seat == seat).count() as u32
}

/// Two groups of four, not self-play (linear against boulware):
/// - g0: learner rewards 1, 0.5, 0.5, 0 and opponent rewards 0, 0.25, 0.25, 0.5;
/// - g1: every reward 0.3;
///
/// every turn token-exact except those of g1-m3, plus an `error` episode in g0 (with a reward
/// of 1 that must not count).
struct Fixture {
    file: PathBuf,
    records: Vec<EpisodeRecord>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = temp_dir("fixture");
        let mut records = play(
            &dir,
            "played",
            "agent_1",
            &[
                "--limit",
                "2",
                "--group-size",
                "4",
                "--seed",
                "3",
                "--learner",
                "rule:linear",
                "--opponent",
                "rule:boulware",
            ],
        );
        assert_eq!(records.len(), 8);
        let rewards = [
            [1.0, 0.0],
            [0.5, 0.25],
            [0.5, 0.25],
            [0.0, 0.5],
            [0.3, 0.3],
            [0.3, 0.3],
            [0.3, 0.3],
            [0.3, 0.3],
        ];
        for (r, [learner, opponent]) in records.iter_mut().zip(rewards) {
            r.rewards.learner = learner;
            r.rewards.opponent = opponent;
            if r.episode_id != "g1-m3" {
                attach_tokens(r);
            }
        }
        let mut failed = records[0].clone();
        failed.episode_id = "g0-m4".into();
        failed.outcome.outcome.kind = OutcomeKind::Error;
        records.push(failed);
        let file = dir.join("episodes.jsonl");
        write(&file, &records);
        Fixture { file, records }
    })
}

/// Run `dealgym export` on `file`; its stdout lines and its stderr.
fn export(file: &Path, args: &[&str]) -> (Vec<Value>, String) {
    let out = dealgym()
        .arg("export")
        .arg(file)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stderr)
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-12
}

fn by_episode<'a>(lines: &'a [Value], id: &str, seat: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| {
            let head = l.get("extra_fields").unwrap_or(l);
            head["episode_id"] == id && head["seat"] == seat
        })
        .unwrap_or_else(|| panic!("no line for {id} {seat}"))
}

/// The whole expected sequence of a seat with n calls, as the token scheme above gives it.
fn expected_response(seat: Seat, n: u32) -> (Vec<u32>, Vec<u8>, Vec<f64>) {
    let (mut ids, mut mask, mut logprobs) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..n {
        let t = call_tokens(seat, k);
        if k > 0 {
            ids.extend(&t.prompt_ids);
            mask.push(0);
            logprobs.push(0.0);
        }
        ids.extend(&t.completion_ids);
        mask.extend([1, 1]);
        logprobs.extend(&t.logprobs);
    }
    (ids, mask, logprobs)
}

/// g0's learner: rewards 1, 0.5, 0.5, 0 → mean 0.5; squared deviations 0.25 + 0 + 0 + 0.25 =
/// 0.5, / 4 = 0.125, std √0.125 = 0.353553…; advantages 0.5/0.353553 = √2, 0, 0, −√2. The
/// error episode g0-m4 (reward 1) does not count: the group has 4 members.
const G0_LEARNER: [(&str, f64); 4] = [
    ("g0-m0", std::f64::consts::SQRT_2),
    ("g0-m1", 0.0),
    ("g0-m2", 0.0),
    ("g0-m3", -std::f64::consts::SQRT_2),
];

fn check_group_stats(head: &Value, id: &str, advantage: f64) {
    if id.starts_with("g0") {
        assert_eq!(head["group_size"], 4, "{id}");
        assert!(close(&head["group_reward_mean"], 0.5));
        assert!(close(&head["group_reward_std"], 0.125f64.sqrt()));
    } else {
        // g1: four rewards of 0.3: std exactly 0, so every advantage is 0.
        assert_eq!(head["group_size"], 4);
        assert!(close(&head["group_reward_mean"], 0.3));
        assert_eq!(head["group_reward_std"], 0.0);
    }
    assert!(close(&head["advantage"], advantage), "{id}: {head}");
    assert_eq!(head["self_play"], false);
    assert_eq!(head["role_advantage"], Value::Null, "not self-play");
}

fn the_one_skip_line(stderr: &str) -> &str {
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    skipped[0]
}

#[test]
fn verl_lines_are_agent_loop_outputs_with_hand_checked_advantages() {
    let f = fixture();
    let (lines, stderr) = export(&f.file, &["--format", "verl"]);
    assert_eq!(
        lines.len(),
        7,
        "8 episodes, g1-m3 without ids, g0-m4 an error"
    );
    let skipped = the_one_skip_line(&stderr);
    assert!(
        skipped.starts_with("skipped 1 seat-episodes: 1 without token ids on every turn"),
        "{skipped}"
    );
    assert!(
        skipped.contains("1 episodes that ended in error"),
        "{skipped}"
    );
    for (id, advantage) in G0_LEARNER {
        let line = by_episode(&lines, id, "learner");
        check_group_stats(&line["extra_fields"], id, advantage);
    }
    for id in ["g1-m0", "g1-m1", "g1-m2"] {
        check_group_stats(&by_episode(&lines, id, "learner")["extra_fields"], id, 0.0);
    }

    let line = by_episode(&lines, "g0-m0", "learner");
    let record = &f.records[0];
    let n = calls(record, Seat::Learner);
    assert!(n >= 2, "the rule players make several turns");
    assert_eq!(line["prompt_ids"], json!([1001, 1002, 1003]));
    // Call 0's sample, call 1's prompt suffix (mask 0, logprob 0.0), call 1's sample, …
    let head = |key: &str| json!(line[key].as_array().unwrap()[..5]);
    assert_eq!(head("response_ids"), json!([1005, 1006, 1011, 1015, 1016]));
    assert_eq!(head("response_mask"), json!([1, 1, 0, 1, 1]));
    assert_eq!(
        head("response_logprobs"),
        json!([-0.5, -0.25, 0.0, -1.0, -0.25])
    );
    let (ids, mask, logprobs) = expected_response(Seat::Learner, n);
    assert_eq!(line["response_ids"], json!(ids));
    assert_eq!(line["response_mask"], json!(mask));
    assert_eq!(line["response_logprobs"], json!(logprobs));
    assert_eq!(line["reward_score"], 1.0);
    assert_eq!(line["num_turns"], 2 * n);
    // verl requires `metrics`: the seconds the seat's calls took, from the record's timing.
    let ms: u64 = record
        .turns
        .iter()
        .zip(&record.timing.turn_ms)
        .filter(|(t, _)| t.seat == Seat::Learner)
        .map(|(_, ms)| ms)
        .sum();
    assert_eq!(
        line["metrics"],
        json!({"generate_sequences": ms as f64 / 1000.0, "tool_calls": 0.0})
    );
    let extra = &line["extra_fields"];
    let mut turn_rewards = vec![0.0; n as usize];
    turn_rewards[n as usize - 1] = 1.0;
    assert_eq!(extra["turn_rewards"], json!(turn_rewards));
    assert_eq!(
        (&extra["seat"], &extra["role"], &extra["group_id"]),
        (&json!("learner"), &json!("agent_1"), &json!("g0"))
    );
    assert_eq!(extra["scenario_id"], record.scenario_id.as_str());
}

#[test]
fn trl_rollout_lines_hold_the_rollout_func_keys() {
    let f = fixture();
    let (lines, stderr) = export(&f.file, &["--format", "trl-rollout"]);
    assert_eq!(lines.len(), 7);
    the_one_skip_line(&stderr);
    for (id, advantage) in G0_LEARNER {
        check_group_stats(by_episode(&lines, id, "learner"), id, advantage);
    }
    let line = by_episode(&lines, "g0-m3", "learner");
    let n = calls(&f.records[3], Seat::Learner);
    let (ids, mask, logprobs) = expected_response(Seat::Learner, n);
    assert_eq!(line["prompt_ids"], json!([1001, 1002, 1003]));
    assert_eq!(line["completion_ids"], json!(ids));
    assert_eq!(line["env_mask"], json!(mask));
    assert_eq!(line["logprobs"], json!(logprobs));
    assert_eq!(line["reward"], 0.0);
}

#[test]
fn tinker_lines_are_transitions_with_the_full_prompt_of_each_call() {
    let f = fixture();
    let (lines, _) = export(&f.file, &["--format", "tinker"]);
    assert_eq!(lines.len(), 7);
    let line = by_episode(&lines, "g0-m0", "learner");
    let n = calls(&f.records[0], Seat::Learner) as usize;
    let transitions = line["transitions"].as_array().unwrap();
    assert_eq!(transitions.len(), n);
    assert_eq!(transitions[0]["ob"], json!([1001, 1002, 1003]));
    assert_eq!(transitions[0]["ac"]["tokens"], json!([1005, 1006]));
    // Call 1 was sent everything before it: call 0's prompt and sample, then its own suffix.
    assert_eq!(
        transitions[1]["ob"],
        json!([1001, 1002, 1003, 1005, 1006, 1011])
    );
    assert_eq!(
        transitions[1]["ac"],
        json!({"tokens": [1015, 1016], "maybe_logprobs": [-1.0, -0.25]})
    );
    for (i, t) in transitions.iter().enumerate() {
        let last = i + 1 == n;
        assert_eq!(t["reward"], if last { 1.0 } else { 0.0 });
        assert_eq!(t["episode_done"], last);
    }
    check_group_stats(line, "g0-m0", std::f64::consts::SQRT_2);
}

#[test]
fn seats_picks_whose_lines_are_written() {
    let f = fixture();
    let (opponent, stderr) = export(&f.file, &["--format", "trl-rollout", "--seats", "opponent"]);
    assert_eq!(opponent.len(), 7);
    assert!(opponent.iter().all(|l| l["seat"] == "opponent"));
    assert!(the_one_skip_line(&stderr).starts_with("skipped 1 seat-episodes"));
    // g0's opponent: rewards 0, 0.25, 0.25, 0.5 → mean 0.25; squared deviations 0.0625 + 0 +
    // 0 + 0.0625 = 0.125, / 4 = 0.03125, std 0.176777…; advantage of 0.5 = 0.25/0.176777 = √2.
    let line = by_episode(&opponent, "g0-m3", "opponent");
    assert!(close(&line["group_reward_mean"], 0.25));
    assert!(close(&line["group_reward_std"], 0.03125f64.sqrt()));
    assert!(close(&line["advantage"], std::f64::consts::SQRT_2));
    assert!(close(
        &by_episode(&opponent, "g0-m0", "opponent")["advantage"],
        -std::f64::consts::SQRT_2
    ));
    assert_eq!(line["prompt_ids"], json!([2001, 2002, 2003]));

    let (both, stderr) = export(&f.file, &["--format", "trl-rollout", "--seats", "both"]);
    assert_eq!(both.len(), 14);
    assert!(the_one_skip_line(&stderr).starts_with("skipped 2 seat-episodes: 2 without"));
    let (learner, _) = export(&f.file, &["--format", "trl-rollout"]);
    assert!(
        learner.iter().all(|l| l["seat"] == "learner"),
        "the default"
    );
}

/// The views of a record, replayed by the library with the run's scenario file.
fn replayed_views(record: &EpisodeRecord) -> dealgym::game::Episode {
    let scenario = load_scenarios(
        &manifest().join("scenarios/casino.jsonl"),
        LoadOptions::default(),
    )
    .unwrap()
    .scenarios
    .into_iter()
    .find(|s| s.id == record.scenario_id)
    .unwrap();
    record
        .replay(&Arc::new(scenario), &Prompts::builtin())
        .unwrap()
}

fn messages(value: &Value) -> Vec<Message> {
    serde_json::from_value(value.clone()).unwrap()
}

#[test]
fn messages_are_exactly_the_views_the_engine_sent() {
    let f = fixture();
    let dir = temp_dir("messages");
    let out = dir.join("sft.jsonl");
    // No --scenarios: scenarios/casino.jsonl, found from the record's family.
    let (stdout, stderr) = export(
        &f.file,
        &[
            "--format",
            "messages",
            "--seats",
            "both",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("16 lines (16 seat-episodes of 9 episodes in 2 groups)"),
        "{stderr}"
    );
    assert!(!dir.join("sft.jsonl.partial").exists());
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        16,
        "text formats need no token ids: g1-m3 is there"
    );
    for record in f.records.iter().filter(|r| r.kind() != OutcomeKind::Error) {
        let episode = replayed_views(record);
        for seat in Seat::BOTH {
            let line = by_episode(&lines, &record.episode_id, seat.name());
            // Rule players make no turn that fails: the seat's view up to its last message.
            let view = episode.view(seat);
            let last_own = view
                .iter()
                .rposition(|m| m.role == MessageRole::Assistant)
                .unwrap();
            assert_eq!(messages(&line["messages"]), view[..=last_own].to_vec());
            assert_eq!(line["reward"], record.rewards[seat]);
        }
    }
    check_group_stats(by_episode(&lines, "g0-m1", "learner"), "g0-m1", 0.0);
}

#[test]
fn prompt_completion_keeps_the_last_k_received_messages() {
    let f = fixture();
    let (lines, _) = export(
        &f.file,
        &[
            "--format",
            "prompt-completion",
            "--seats",
            "opponent",
            "--last-k",
            "2",
        ],
    );
    let turns: u32 = f.records[..8]
        .iter()
        .map(|r| calls(r, Seat::Opponent))
        .sum();
    assert_eq!(lines.len() as u32, turns, "one line per opponent turn");
    let record = &f.records[1];
    let episode = replayed_views(record);
    let view = episode.view(Seat::Opponent);
    let mine: Vec<&Value> = lines
        .iter()
        .filter(|l| l["episode_id"] == "g0-m1")
        .collect();
    for line in &mine {
        let prompt = messages(&line["prompt"]);
        let received = prompt
            .iter()
            .filter(|m| m.role == MessageRole::User)
            .count();
        assert_eq!(prompt[0].role, MessageRole::System);
        assert_eq!(prompt[1].role, MessageRole::User);
        assert!(received <= 2);
        // The kept context is the tail of what the call was sent.
        let completion = messages(&line["completion"]);
        let seat_turn = line["seat_turn"].as_u64().unwrap() as usize;
        let at = view
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == MessageRole::Assistant)
            .nth(seat_turn)
            .unwrap()
            .0;
        assert_eq!(view[at], completion[0]);
        assert_eq!(prompt[1..], view[at + 1 - prompt.len()..at]);
        assert!(close(&line["advantage"], 0.0));
        assert_eq!(line["format_ok"], true);
    }
    assert_eq!(mine.len() as u32, calls(record, Seat::Opponent));
    assert!(mine.len() >= 3, "the rule players make several turns");
    assert_eq!(messages(&mine[0]["prompt"]).len(), 2);
    assert_eq!(messages(&mine[2]["prompt"]).len(), 4, "s, u, a, u");
}

#[test]
fn under_every_turn_a_row_is_scored_against_the_same_turn_of_its_group() {
    // CaSiNo harness §3.3.2–3.3.3: each GRPO row is one prompt's candidates scored alone, "the
    // group mean serves as the baseline". Three episodes of one group (rule players: the same
    // transcript), rewarded by hand under `turn_reward = "every_turn"`: the learner's k-th
    // turn in episode i is worth k + 0.5·i, every opponent turn 0; the episodes' totals are
    // 0.2, 0.4, 0.6.
    //   learner turn group k: k, k + 0.5, k + 1 → mean k + 0.5, std √((0.25 + 0 + 0.25)/3) =
    //   √(1/6) = 0.408248; advantages −0.5/0.408248 = −1.224745, 0, +1.224745 — whatever k;
    //   opponent turn groups: all 0 → std 0, advantage 0;
    //   episode: 0.2, 0.4, 0.6 → mean 0.4, std √(0.08/3) = 0.163299; 0.6's advantage
    //   0.2/0.163299 = 1.224745 (`episode_advantage`).
    let dir = temp_dir("every-turn");
    let mut records = play(
        &dir,
        "played",
        "agent_1",
        &[
            "--limit",
            "1",
            "--group-size",
            "3",
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:boulware",
        ],
    );
    assert_eq!(records.len(), 3);
    let every_turn = dealgym::reward::RewardConfig {
        turn_reward: dealgym::reward::TurnReward::EveryTurn,
        weights: [(dealgym::reward::Component::Terminal, 1.0)].into(),
        ..Default::default()
    };
    for (i, r) in records.iter_mut().enumerate() {
        r.reward_config = Some(every_turn.clone());
        r.rewards.learner = 0.2 * (i + 1) as f64;
        let mut k = 0.0;
        r.turn_rewards = r
            .turns
            .iter()
            .map(|t| {
                Some(if t.seat == Seat::Learner {
                    k += 1.0;
                    k - 1.0 + 0.5 * i as f64
                } else {
                    0.0
                })
            })
            .collect();
    }
    let file = dir.join("every-turn.jsonl");
    write(&file, &records);
    let (lines, _) = export(&file, &["--format", "prompt-completion", "--seats", "both"]);
    let sd = (1.0f64 / 6.0).sqrt();
    let learner_rows = lines.iter().filter(|l| l["seat"] == "learner").count();
    assert!(learner_rows >= 6, "turns to compare: {learner_rows}");
    for line in &lines {
        let i: usize = line["episode_id"].as_str().unwrap()[4..].parse().unwrap();
        let k = line["seat_turn"].as_f64().unwrap();
        if line["seat"] == "learner" {
            assert!(close(&line["reward"], k + 0.5 * i as f64), "{line}");
            assert_eq!(line["reward"], line["turn_reward"], "{line}");
            assert_eq!(line["group_size"], 3, "{line}");
            assert!(close(&line["group_reward_mean"], k + 0.5), "{line}");
            assert!(close(&line["group_reward_std"], sd), "{line}");
            let want = (0.5 * i as f64 - 0.5) / sd;
            assert!(close(&line["advantage"], want), "{line}");
        } else {
            assert!(close(&line["reward"], 0.0) && close(&line["advantage"], 0.0));
        }
        // The episode's figures, under their own names.
        if line["seat"] == "learner" {
            assert!(
                close(&line["episode_reward"], 0.2 * (i + 1) as f64),
                "{line}"
            );
            let episode = (0.2 * (i + 1) as f64 - 0.4) / (0.08f64 / 3.0).sqrt();
            assert!(close(&line["episode_advantage"], episode), "{line}");
            assert!(close(&line["episode_group_reward_mean"], 0.4), "{line}");
        }
    }
    // Under `last_turn` (rows that sum to a trajectory's return) every row keeps the episode's
    // reward and advantage, as before, with no `episode_…` columns.
    for r in &mut records {
        r.reward_config = Some(dealgym::reward::RewardConfig {
            turn_reward: dealgym::reward::TurnReward::LastTurn,
            ..every_turn.clone()
        });
    }
    write(&file, &records);
    let (lines, _) = export(&file, &["--format", "prompt-completion"]);
    for line in &lines {
        let i: usize = line["episode_id"].as_str().unwrap()[4..].parse().unwrap();
        assert!(close(&line["reward"], 0.2 * (i + 1) as f64), "{line}");
        assert!(line.get("episode_reward").is_none(), "{line}");
    }
}

#[test]
fn a_seat_swapped_self_play_group_gets_role_advantages() {
    // One scenario played twice by the same policy on both seats, the learner as agent_1 then
    // as agent_2, made one group of a run:
    //   A (g0-m0): learner agent_1 0.8, opponent agent_2 0.2
    //   B (g0-m1): learner agent_2 0.6, opponent agent_1 0.4
    // learner seat: 0.8, 0.6 → mean 0.7, std 0.1: A +1, B −1.
    // opponent seat: 0.2, 0.4 → mean 0.3, std 0.1: A −1, B +1.
    // agent_1: 0.8 (A learner), 0.4 (B opponent) → mean 0.6, std 0.2: A learner +1, B opponent −1.
    // agent_2: 0.2 (A opponent), 0.6 (B learner) → mean 0.4, std 0.2: B learner +1, A opponent −1.
    let dir = temp_dir("self-play");
    let args = [
        "--limit",
        "1",
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:linear",
    ];
    let mut a = play(&dir, "a", "agent_1", &args).remove(0);
    let mut b = play(&dir, "b", "agent_2", &args).remove(0);
    assert_eq!(b.seats.learner.role.name(), "agent_2");
    b.run_id = a.run_id.clone();
    b.episode_id = "g0-m1".into();
    a.rewards.learner = 0.8;
    a.rewards.opponent = 0.2;
    b.rewards.learner = 0.6;
    b.rewards.opponent = 0.4;
    let file = dir.join("self-play.jsonl");
    write(&file, &[a, b]);
    let (lines, _) = export(&file, &["--format", "messages", "--seats", "both"]);
    assert_eq!(lines.len(), 4);
    let expect = [
        ("g0-m0", "learner", "agent_1", 1.0, 0.6, 1.0),
        ("g0-m0", "opponent", "agent_2", -1.0, 0.4, -1.0),
        ("g0-m1", "learner", "agent_2", -1.0, 0.4, 1.0),
        ("g0-m1", "opponent", "agent_1", 1.0, 0.6, -1.0),
    ];
    for (id, seat, role, advantage, role_mean, role_advantage) in expect {
        let line = by_episode(&lines, id, seat);
        assert_eq!(line["self_play"], true);
        assert_eq!(line["role"], role);
        assert!(close(&line["advantage"], advantage), "{id} {seat}: {line}");
        assert_eq!(line["role_group_size"], 2);
        assert!(close(&line["role_reward_mean"], role_mean));
        assert!(close(&line["role_reward_std"], 0.2));
        assert!(
            close(&line["role_advantage"], role_advantage),
            "{id} {seat}"
        );
    }
}

#[test]
fn a_scenario_not_found_fails_the_export_and_leaves_no_file() {
    let f = fixture();
    let dir = temp_dir("missing");
    let out = dir.join("sft.jsonl");
    let result = dealgym()
        .arg("export")
        .arg(&f.file)
        .args([
            "--format",
            "messages",
            "--scenarios",
            "scenarios/dnd.jsonl",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!result.status.success());
    let stderr = String::from_utf8(result.stderr).unwrap();
    assert!(
        stderr.contains("pass the run's scenario file with --scenarios"),
        "{stderr}"
    );
    assert!(!out.exists() && !dir.join("sft.jsonl.partial").exists());
}
