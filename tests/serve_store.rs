//! What `dealgym serve` keeps and writes (issue 42, items 2–4): no client makes it write a
//! record line its own readers refuse, no client grows its memory without bound, and a log that
//! holds both two-party and table records is read back whole — by the server when it restarts
//! on it (in either order, its last line kept) and by `replay`, `report` and `export`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{dealgym_cli, temp_dir};
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

async fn start(log: &Path, tune: impl FnOnce(&mut ServeOptions)) -> Server {
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        both_kinds(),
        log.to_path_buf(),
    );
    tune(&mut options);
    Server::start(options).await.unwrap()
}

async fn call(
    http: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let request = match method {
        "POST" => http.post(url),
        "GET" => http.get(url),
        _ => unreachable!(),
    };
    let request = match body {
        Some(b) => request.json(&b),
        None => request,
    };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
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
    let (ok, said) = cli(&[
        "replay",
        file,
        "--verify",
        "--scenarios",
        ahp.to_str().unwrap(),
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("passed over 1 table record"), "{said}");
    let (ok, said) = cli(&["report", file, "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(ok, "{said}");
    assert!(said.contains("passed over 1 table record"), "{said}");
    let ahp = ahp.to_str().unwrap();
    let (ok, said) = cli(&["export", file, "--format", "messages", "--scenarios", ahp]);
    assert!(ok, "{said}");
    assert!(said.contains("passed over 1 table record"), "{said}");
}
