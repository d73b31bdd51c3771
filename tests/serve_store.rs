//! What `dealgym serve` keeps and writes (issue 42, items 2–4): no client makes it write a
//! record line its own readers refuse, no client grows its memory without bound, and a log that
//! holds both two-party and table records is read back whole — by the server when it restarts
//! on it (in either order, its last line kept) and by `replay`, `report` and `export`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{call, dealgym_cli, rss, temp_dir, ServeProcess};
use dealgym::limits::MAX_RECORD_LINE;
use dealgym::serve::{ServeOptions, Server};

const TABLE_FIXTURE: &str = "tests/fixtures/table/six_party.jsonl";

fn in_checkout(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// AHP's scenarios and the six-party table's: both kinds of episode.
fn both_kinds() -> Vec<PathBuf> {
    vec![
        in_checkout("scenarios/ahp.jsonl"),
        in_checkout(TABLE_FIXTURE),
    ]
}

/// A new AHP episode on `server`, the learner first: its `/v1/episodes` URL and its id.
async fn ahp_episode(http: &reqwest::Client, server: &Server) -> (String, String) {
    let base = format!("{}/v1/episodes", server.base_url());
    let (_, created) = call(
        http,
        "POST",
        base.clone(),
        Some(json!({"family": "ahp", "first_mover": "learner", "seed": 3})),
    )
    .await;
    let id = created["episode_id"].as_str().unwrap().to_string();
    (base, id)
}

async fn start(log: &Path, tune: impl FnOnce(&mut ServeOptions)) -> Server {
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        both_kinds(),
        log.to_path_buf(),
    );
    tune(&mut options);
    Server::start(options).await.unwrap()
}

/// A two-party episode the learner ends at once by walking away: one record in the log.
async fn two_party_episode(server: &Server, http: &reqwest::Client) {
    let base = format!("{}/v1/episodes", server.base_url());
    let (status, created) = call(
        http,
        "POST",
        base.clone(),
        Some(json!({"family": "ahp", "first_mover": "learner", "seed": 1})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["episode_id"].as_str().unwrap();
    let (status, ended) = call(
        http,
        "POST",
        format!("{base}/{id}/step"),
        Some(json!({"message": "Thought: no.\nTalk: Goodbye.\nAction: [WALK_AWAY]"})),
    )
    .await;
    assert_eq!((status, &ended["done"]), (200, &json!(true)), "{ended}");
}

/// A table every seat of which is scripted: it is played, ended and logged as it is made.
async fn table_episode(server: &Server, http: &reqwest::Client) {
    let scripted: serde_json::Map<String, Value> = (0..6)
        .map(|i| (format!("party_{i}"), json!("rule:deliberation")))
        .collect();
    let (status, table) = call(
        http,
        "POST",
        format!("{}/v1/tables", server.base_url()),
        Some(
            json!({"scenario_id": "deliberation:test:cooperative", "seed": 3, "players": scripted}),
        ),
    )
    .await;
    assert_eq!((status, &table["done"]), (201, &json!(true)), "{table}");
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn is_table(line: &str) -> bool {
    serde_json::from_str::<Value>(line).unwrap()["kind"] == "table"
}

#[tokio::test]
async fn a_log_of_both_kinds_is_restarted_on_in_either_order_and_its_last_line_kept() {
    let dir = temp_dir("store-mixed-restart");
    let http = reqwest::Client::new();
    for table_first in [false, true] {
        let log = dir.join(format!("serve-{table_first}.jsonl"));
        let server = start(&log, |_| {}).await;
        if table_first {
            table_episode(&server, &http).await;
            two_party_episode(&server, &http).await;
        } else {
            two_party_episode(&server, &http).await;
            table_episode(&server, &http).await;
        }
        server.shutdown().await;
        let written = std::fs::read(&log).unwrap();
        assert_eq!(lines(&log).len(), 2);
        // The last line is of the other kind than the first: a whole record, never "repaired".
        let server = start(&log, |_| {}).await;
        assert!(
            std::fs::read(&log).unwrap() == written,
            "table first: {table_first}: the restart changed the log"
        );
        // A third record puts the other kind in the middle: the server still restarts on it.
        if table_first {
            table_episode(&server, &http).await;
        } else {
            two_party_episode(&server, &http).await;
        }
        server.shutdown().await;
        let written = std::fs::read(&log).unwrap();
        let server = start(&log, |_| {}).await;
        assert!(
            std::fs::read(&log).unwrap() == written,
            "table first: {table_first}"
        );
        server.shutdown().await;
        let kinds: Vec<bool> = lines(&log).iter().map(|l| is_table(l)).collect();
        assert_eq!(kinds, [table_first, !table_first, table_first]);
    }
}

/// A log the server wrote with two-party records and a table record between them.
async fn mixed_log(name: &str) -> PathBuf {
    let log = temp_dir(name).join("serve.jsonl");
    let http = reqwest::Client::new();
    let server = start(&log, |_| {}).await;
    two_party_episode(&server, &http).await;
    table_episode(&server, &http).await;
    two_party_episode(&server, &http).await;
    server.shutdown().await;
    log
}

fn cli(args: &[&str]) -> (bool, String) {
    let out = dealgym_cli(args);
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[tokio::test]
async fn replay_report_and_export_read_a_log_of_both_kinds() {
    let log = mixed_log("store-mixed-readers").await;
    let file = log.to_str().unwrap();
    let out = log.with_file_name("report");
    let ahp = in_checkout("scenarios/ahp.jsonl");
    let ahp = ahp.to_str().unwrap();
    let game = in_checkout("tests/fixtures/table/six_party.jsonl");
    let game = game.to_str().unwrap();
    // The log's two episodes and its table, every reader: none is passed over.
    let (ok, said) = cli(&[
        "replay",
        file,
        "--verify",
        "--scenarios",
        ahp,
        "--scenarios",
        game,
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("3 episodes"), "{said}");
    let (ok, said) = cli(&[
        "report",
        file,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--scenarios",
        game,
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("3 episodes reported"), "{said}");
    assert!(out.join("n-party/report.md").is_file(), "{said}");
    let (ok, said) = cli(&[
        "export",
        file,
        "--format",
        "messages",
        "--scenarios",
        ahp,
        "--scenarios",
        game,
    ]);
    assert!(ok, "{said}");
    assert!(!said.contains("passed over"), "{said}");
    assert!(said.contains("of 3 episodes"), "{said}");
}

/// Play the episode: up to `steps` learner turns, each Talk `talk_bytes` long, with
/// every rule that would end it early off. The last answer.
async fn long_talk_episode(server: &Server, steps: usize, talk_bytes: usize) -> Value {
    let http = reqwest::Client::new();
    let base = format!("{}/v1/episodes", server.base_url());
    let (status, created) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({
            "family": "ahp", "first_mover": "learner", "seed": 2,
            "rules": {"max_rounds": 30, "reject_loop": 0, "reject_streak": 0}
        })),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["episode_id"].as_str().unwrap().to_string();
    let message = format!(
        "Thought: stall.\nTalk: {}\nAction: [REJECT_DEAL]",
        "a".repeat(talk_bytes)
    );
    let mut last = Value::Null;
    for _ in 0..steps {
        let (status, answer) = call(
            &http,
            "POST",
            format!("{base}/{id}/step"),
            Some(json!({"message": message})),
        )
        .await;
        assert_eq!(
            status,
            200,
            "{}",
            &answer.to_string()[..500.min(answer.to_string().len())]
        );
        let done = answer["done"] == true;
        last = answer;
        if done {
            break;
        }
    }
    last
}

#[tokio::test]
async fn no_client_makes_the_server_write_a_line_its_readers_refuse() {
    let dir = temp_dir("store-long-lines");
    let log = dir.join("serve.jsonl");
    let server = start(&log, |o| o.body_limit = 4 << 20).await;
    // 25 steps of a 1 MB Talk wrote a line of 75 MB or more, past the 64 MiB every reader takes.
    let last = long_talk_episode(&server, 25, 1_000_000).await;
    assert_eq!(last["done"], true, "the episode's text cap ends it");
    let outcome = &last["observation"]["info"]["outcome"];
    assert_eq!(outcome["kind"], "error", "{outcome}");
    let detail = outcome["detail"].as_str().unwrap_or("");
    assert!(detail.contains("--max-episode-bytes"), "{detail}");
    server.shutdown().await;
    for line in lines(&log) {
        assert!(
            line.len() <= MAX_RECORD_LINE,
            "a line of {} bytes",
            line.len()
        );
    }
    // The server restarts on its log, and `replay --verify` reads it.
    let server = start(&log, |_| {}).await;
    server.shutdown().await;
    let ahp = in_checkout("scenarios/ahp.jsonl");
    let (ok, said) = cli(&[
        "replay",
        log.to_str().unwrap(),
        "--verify",
        "--scenarios",
        ahp.to_str().unwrap(),
    ]);
    assert!(ok, "{said}");
}

#[tokio::test]
async fn a_completion_past_the_cap_is_refused_naming_the_cap_and_its_flag() {
    let dir = temp_dir("store-completion-cap");
    let log = dir.join("serve.jsonl");
    let server = start(&log, |o| o.body_limit = 8 << 20).await;
    let http = reqwest::Client::new();
    let (base, id) = ahp_episode(&http, &server).await;
    let big = format!(
        "Thought: x\nTalk: {}\nAction: [REJECT_DEAL]",
        "b".repeat(3 << 20)
    );
    let (status, refused) = call(
        &http,
        "POST",
        format!("{base}/{id}/step"),
        Some(json!({"message": big})),
    )
    .await;
    assert_eq!(status, 413, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap_or("");
    assert!(said.contains("--max-completion-bytes"), "{said}");
    // The session is still there, and takes a completion within the cap.
    let (status, answer) = call(
        &http,
        "POST",
        format!("{base}/{id}/step"),
        Some(json!({"message": "Thought: x\nTalk: fine.\nAction: [WALK_AWAY]"})),
    )
    .await;
    assert_eq!((status, &answer["done"]), (200, &json!(true)), "{answer}");
    server.shutdown().await;
    // A completion of a player in the server's process (here a script; a rollout's learner, an
    // `openai:` opponent) past the cap ends its episode as an error naming the cap.
    let script = dir.join("long.json");
    let long = format!(
        "Thought: x\nTalk: {}\nAction: [WALK_AWAY]",
        "e".repeat(2 << 20)
    );
    std::fs::write(&script, serde_json::to_string(&[long]).unwrap()).unwrap();
    let server = start(&log, |o| o.policy.scripts = true).await;
    let (status, created) = call(
        &http,
        "POST",
        format!("{}/v1/episodes", server.base_url()),
        Some(
            json!({"family": "ahp", "first_mover": "opponent", "seed": 3,
            "opponent": format!("script:{}", script.display())}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let outcome = &created["observation"]["info"]["outcome"];
    assert_eq!(
        (&outcome["kind"], &outcome["error_kind"]),
        (&json!("error"), &json!("limit")),
        "{outcome}"
    );
    let detail = outcome["detail"].as_str().unwrap_or("");
    assert!(detail.contains("--max-completion-bytes"), "{detail}");
    server.shutdown().await;
}

/// Issue 43, item 7: one limit on a completion, the engine's (`DEFAULT_MAX_COMPLETION_BYTES`,
/// which a step in process and the Python action space read too): with the server's defaults a
/// completion of exactly that many bytes as the record writes it is played, one byte more is
/// refused with 413 naming the limit — by the completion's cap, not the request body's.
#[tokio::test]
async fn the_default_completion_limit_is_the_engines_one_and_the_body_fits_it() {
    use dealgym::limits::DEFAULT_MAX_COMPLETION_BYTES;
    let dir = temp_dir("store-one-limit");
    let server = start(&dir.join("serve.jsonl"), |_| {}).await;
    let http = reqwest::Client::new();
    let (base, id) = ahp_episode(&http, &server).await;
    // `{"text":"…"}`: the completion as the record writes it is its text and 11 bytes.
    let at_limit = "a".repeat(DEFAULT_MAX_COMPLETION_BYTES as usize - 11);
    let over = format!("{at_limit}a");
    let (status, refused) = call(
        &http,
        "POST",
        format!("{base}/{id}/step"),
        Some(json!({"message": over})),
    )
    .await;
    assert_eq!(status, 413, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        said.contains(&format!("limit of {DEFAULT_MAX_COMPLETION_BYTES} bytes"))
            && said.contains("--max-completion-bytes"),
        "{said}"
    );
    let (status, played) = call(
        &http,
        "POST",
        format!("{base}/{id}/step"),
        Some(json!({"message": at_limit})),
    )
    .await;
    assert_eq!(status, 200, "a completion at the limit is played: {played}");
    server.shutdown().await;
}

#[tokio::test]
async fn ended_sessions_are_bounded_by_the_memory_budget_and_measured_in_rss() {
    let dir = temp_dir("store-rss");
    // A budget of 16 MiB: far less than the episodes below keep once ended.
    let server = ServeProcess::start(&dir, &["--session-memory-bytes", "16777216"]);
    let pid = server.child.id();
    let http = reqwest::Client::new();
    let base = format!("{}/v1/episodes", server.base);
    let play = |steps: usize, talk: usize| {
        let http = http.clone();
        let base = base.clone();
        async move {
            let (status, created) = call(
                &http,
                "POST",
                base.clone(),
                Some(json!({"family": "ahp", "first_mover": "learner", "seed": 4,
                    "rules": {"max_rounds": 30, "reject_loop": 0, "reject_streak": 0}})),
            )
            .await;
            assert_eq!(status, 201, "{created}");
            let id = created["episode_id"].as_str().unwrap().to_string();
            let message = format!(
                "Thought: x\nTalk: {}\nAction: [REJECT_DEAL]",
                "c".repeat(talk)
            );
            for _ in 0..steps {
                let (status, _) = call(
                    &http,
                    "POST",
                    format!("{base}/{id}/step"),
                    Some(json!({"message": message})),
                )
                .await;
                assert_eq!(status, 200);
            }
            let (status, ended) = call(
                &http,
                "POST",
                format!("{base}/{id}/step"),
                Some(json!({"message": "Thought: x\nTalk: bye\nAction: [WALK_AWAY]"})),
            )
            .await;
            assert_eq!((status, &ended["done"]), (200, &json!(true)), "{ended}");
            id
        }
    };
    // Warm up: the first episodes load what every episode shares.
    for _ in 0..2 {
        play(1, 1000).await;
    }
    let before = rss(pid);
    let (episodes, steps, talk) = (10, 4, 1_000_000);
    let mut ids = Vec::new();
    for _ in 0..episodes {
        ids.push(play(steps, talk).await);
    }
    let sent = (episodes * steps * talk) as u64;
    let grown = rss(pid).saturating_sub(before);
    println!(
        "RSS grew {} MB for {} MB of talk sent in {episodes} ended sessions: {:.1} MB a session",
        grown >> 20,
        sent >> 20,
        grown as f64 / episodes as f64 / 1e6
    );
    // Before the budget: 256 MB for 38 MB sent (26.9 MB a session); within it, about 54 MB.
    assert!(
        grown < 3 * sent,
        "RSS grew {grown} bytes for {sent} bytes sent"
    );
    // The first of them was evicted to stay within the budget: its GET says so, and where
    // its record is; the last is still kept.
    let (status, gone) = call(&http, "GET", format!("{base}/{}", ids[0]), None).await;
    assert_eq!(status, 410, "{gone}");
    assert_eq!(gone["error"]["code"], "EPISODE_EVICTED");
    let said = gone["error"]["message"].as_str().unwrap();
    assert!(
        said.contains("evicted") && said.contains("--session-memory-bytes") && said.contains("log"),
        "{said}"
    );
    let (status, kept) = call(&http, "GET", format!("{base}/{}", ids[episodes - 1]), None).await;
    assert_eq!(
        (status, &kept["state"]["done"]),
        (200, &json!(true)),
        "{kept}"
    );
}

#[tokio::test]
async fn a_table_counts_against_the_memory_budget_and_is_evicted_once_ended() {
    let log = temp_dir("store-table-memory").join("serve.jsonl");
    let server = start(&log, |o| o.session_memory = 1 << 20).await;
    let http = reqwest::Client::new();
    let tables = format!("{}/v1/tables", server.base_url());
    let (status, table) = call(
        &http,
        "POST",
        tables.clone(),
        Some(json!({"scenario_id": "deliberation:test:cooperative", "seed": 3})),
    )
    .await;
    assert_eq!(status, 201, "{table}");
    let id = table["table_id"].as_str().unwrap().to_string();
    let tokens = table["seat_tokens"].clone();
    let step = |role: String, message: String| {
        let http = http.clone();
        let url = format!("{tables}/{id}/seats/{role}/step");
        let token = tokens[&role].as_str().unwrap().to_string();
        async move {
            let response = http
                .post(url)
                .header("x-seat-token", token)
                .json(&json!({"message": message}))
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    // One Talk of 400 KB: the turn keeps it (raw, talk), and each seat's view as it is asked.
    let first = table["to_move"].as_str().unwrap().to_string();
    let talk = format!("Thought: x\nTalk: {}\nAction: [TALK]", "d".repeat(400_000));
    let (status, answer) = step(first, talk).await;
    assert_eq!(status, 200, "{}", answer["error"]);
    let held = server.state.hub.memory_held();
    assert!(held > 1 << 20, "the table holds {held} bytes");
    // The live table alone holds the budget: no new session starts.
    let episodes = format!("{}/v1/episodes", server.base_url());
    let (status, refused) = call(
        &http,
        "POST",
        episodes.clone(),
        Some(json!({"family": "ahp"})),
    )
    .await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "CAPACITY_REACHED");
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(said.contains("--session-memory-bytes"), "{said}");
    // Every seat walks out in turn until the table ends; it is then evicted at once.
    for _ in 0..12 {
        let (code, status) = call(&http, "GET", format!("{tables}/{id}"), None).await;
        if code == 410 {
            break;
        }
        assert_eq!((code, &status["done"]), (200, &json!(false)), "{status}");
        let mover = status["to_move"].as_str().unwrap().to_string();
        let (code, answer) = step(mover, "Thought: x\nTalk: no.\nAction: [WALK_AWAY]".into()).await;
        assert_eq!(code, 200, "{answer}");
    }
    let (status, gone) = call(&http, "GET", format!("{tables}/{id}"), None).await;
    assert_eq!(
        (status, gone["error"]["code"].as_str()),
        (410, Some("EPISODE_EVICTED")),
        "{gone}"
    );
    assert!(server.state.hub.memory_held() < 1 << 20);
    let (status, created) = call(&http, "POST", episodes, Some(json!({"family": "ahp"}))).await;
    assert_eq!(status, 201, "{created}");
    server.shutdown().await;
    // The table's record is in the log.
    assert!(lines(&log).iter().any(|l| is_table(l)));
}
