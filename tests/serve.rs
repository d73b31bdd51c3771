//! `dealgym serve` over real sockets: whole episodes of every family over OpenEnv's WebSocket
//! and over REST, both-external self-play, many concurrent sessions without cross-talk (each
//! transcript checked against a replay of its own logged record), every bad request's status
//! and code, idle reclaim, the rollout service against the mock, and a log that verifies.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::common;

use common::{
    call as rest, read_log, scenario_files, temp_dir, ws_connect, ws_recv, ws_send, Ws, FAMILIES,
};
use dealgym::game::{Prompts, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::replay::{verify, VerifyOptions};
use dealgym::scenario::{load_scenarios, LoadOptions, Scenario};
use dealgym::serve::{ServeOptions, Server};
use dealgym_mock::{MockConfig, MockServer};

async fn server(name: &str, tune: impl FnOnce(&mut ServeOptions)) -> (Server, PathBuf) {
    let dir = temp_dir(name);
    let scenarios = scenario_files(&dir, 20);
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), scenarios, log.clone());
    tune(&mut options);
    (Server::start(options).await.unwrap(), log)
}

/// A learner that accepts a standing offer and otherwise asks for one.
fn answer(prompt: &str) -> String {
    if prompt.contains("[SUBMIT_DEAL]") {
        "Thought: good enough.\nTalk: Deal.\nAction: [ACCEPT_DEAL]".into()
    } else {
        "Thought: wait for an offer.\nTalk: What can you offer me?\nAction: [REJECT_DEAL]".into()
    }
}

fn verify_log(log: &Path, scenarios: &[PathBuf]) {
    let report = verify(&VerifyOptions {
        files: vec![log.to_path_buf()],
        episode: None,
        scenarios: scenarios.to_vec(),
        prompts_dir: None,
        rewards: Default::default(),
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
    assert!(report.episodes > 0);
}

/// Play one episode over the WebSocket; returns the final observation data.
async fn ws_episode(ws: &mut Ws, reset: Value) -> Value {
    let mut reply = ws_send(ws, json!({"type": "reset", "data": reset})).await;
    // OpenEnv's reward before any step is none; after a step it is a number.
    if reply["data"]["done"] == false {
        assert_eq!(reply["data"]["reward"], Value::Null, "{reply}");
        assert_eq!(reply["data"]["observation"]["reward"], Value::Null);
    }
    let mut steps = 0;
    for _ in 0..64 {
        assert_eq!(reply["type"], "observation", "{reply}");
        if reply["data"]["done"] == true {
            return reply["data"].clone();
        }
        let prompt = reply["data"]["observation"]["prompt"].as_str().unwrap();
        reply = ws_send(
            ws,
            json!({"type": "step", "data": {"message": answer(prompt)}}),
        )
        .await;
        steps += 1;
        assert!(reply["data"]["reward"].is_f64(), "{reply}");
        assert_eq!(
            reply["data"]["reward"],
            reply["data"]["observation"]["reward"]
        );
        // OpenEnv's `step_count` counts the steps this connection sent.
        let state = ws_send(ws, json!({"type": "state"})).await;
        assert_eq!(state["data"]["step_count"], steps, "{state}");
    }
    panic!("the episode did not end")
}

#[tokio::test]
async fn whole_episodes_of_every_family_over_the_websocket() {
    let (server, log) = server("ws-families", |_| {}).await;
    let mut ws = ws_connect(server.addr).await;
    for (i, family) in FAMILIES.iter().enumerate() {
        let done = ws_episode(&mut ws, json!({"family": family, "index": i, "seed": 7})).await;
        let obs = &done["observation"];
        assert_eq!(obs["info"]["family"], *family);
        assert!(obs["info"]["outcome"]["kind"].is_string(), "{obs}");
        assert_eq!(done["reward"], obs["info"]["rewards"]["learner"]);
        // The seat's last completion is read once, in the seat's own units.
        assert!(obs["state"]["last_turn"]["format_ok"].is_boolean(), "{obs}");
        assert!(obs["info"].get("last_turn").is_none());
        assert!(obs.get("turn").is_none());
        assert!(obs["state"]["turns"]["attempts"].as_u64().unwrap() > 0);
        // The structured state ends as the record does, from the observing seat's side.
        assert_eq!(obs["state"]["family"], *family);
        assert_eq!(
            obs["state"]["outcome"]["kind"],
            obs["info"]["outcome"]["kind"]
        );
        assert_eq!(obs["state"]["to_move"], Value::Null);
        assert_eq!(obs["state"]["legal_actions"], json!([]));
        let state = ws_send(&mut ws, json!({"type": "state"})).await;
        assert_eq!(state["type"], "state");
        assert_eq!(state["data"]["done"], true);
        // A step after the end is refused.
        let late = ws_send(&mut ws, json!({"type": "step", "data": {"message": "x"}})).await;
        assert_eq!(late["data"]["code"], "EXECUTION_ERROR", "{late}");
    }
    ws.send(WsMessage::text(r#"{"type":"close"}"#))
        .await
        .unwrap();
    let records = read_log(&log);
    assert_eq!(records.len(), FAMILIES.len());
    let scenarios = server.state.hub.options.scenarios.clone();
    verify_log(&log, &scenarios);
    server.shutdown().await;
}

#[tokio::test]
async fn openenv_http_routes_and_websocket_errors() {
    let (server, _log) = server("openenv", |o| o.max_sessions = 1).await;
    let http = reqwest::Client::new();
    let base = server.base_url();
    let health = common::get_json(&http, format!("{base}/health")).await;
    assert_eq!(health, json!({"status": "healthy"}));
    // What `openenv validate --url` reads: OpenAPI's version and the simulation mode's routes.
    let openapi = common::get_json(&http, format!("{base}/openapi.json")).await;
    assert_eq!(openapi["info"]["version"], env!("CARGO_PKG_VERSION"));
    for path in ["/reset", "/step", "/state", "/v1/rollouts"] {
        assert!(openapi["paths"][path].is_object(), "{path}");
    }
    // OpenEnv's reward before any step is none; the stateless step's is a number.
    let reset =
        common::post_json(&http, format!("{base}/reset"), &json!({"family": "casino"})).await;
    assert_eq!(reset["reward"], Value::Null, "{reset}");
    let stepped = common::post_json(
        &http,
        format!("{base}/step"),
        &json!({"family": "casino", "action": {"message": answer("")}}),
    )
    .await;
    assert!(stepped["reward"].is_f64(), "{stepped}");
    let schema = common::get_json(&http, format!("{base}/schema")).await;
    for key in ["action", "observation", "state"] {
        assert!(schema[key].is_object());
    }
    let meta = common::get_json(&http, format!("{base}/metadata")).await;
    assert_eq!(meta["name"], "dealgym");
    // Stateless reset and step, as OpenEnv defines them.
    let reset: Value = common::post_json(
        &http,
        format!("{base}/reset"),
        &json!({"seed": 3, "family": "casino"}),
    )
    .await;
    assert_eq!(reset["done"], false);
    assert_eq!(reset["observation"]["seat"], "learner");
    let step: Value = common::post_json(
        &http,
        format!("{base}/step"),
        &json!({"action": {"message": "Thought: x\nTalk: bye\nAction: [WALK_AWAY]"}, "family": "casino"}),
    ).await;
    assert_eq!(step["done"], true, "{step}");
    assert_eq!(step["observation"]["info"]["outcome"]["kind"], "walk_away");

    let mut ws = ws_connect(server.addr).await;
    ws.send(WsMessage::text("{not json")).await.unwrap();
    assert_eq!(ws_recv(&mut ws).await["data"]["code"], "INVALID_JSON");
    let r = ws_send(&mut ws, json!({"type": "dance"})).await;
    assert_eq!(r["data"]["code"], "UNKNOWN_TYPE");
    let r = ws_send(&mut ws, json!({"type": "step", "data": {"message": "hi"}})).await;
    assert_eq!(r["data"]["code"], "SESSION_ERROR");
    let r = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"scenario_id": "nope"}}),
    )
    .await;
    assert_eq!(r["data"]["code"], "VALIDATION_ERROR");
    let r = ws_send(&mut ws, json!({"type": "reset", "data": {"colour": "red"}})).await;
    assert_eq!(r["data"]["code"], "VALIDATION_ERROR");
    let r = ws_send(&mut ws, json!({"type": "reset", "data": {"family": "dnd"}})).await;
    assert_eq!(r["type"], "observation");
    let r = ws_send(
        &mut ws,
        json!({"type": "step", "data": {"text": "wrong field"}}),
    )
    .await;
    assert_eq!(r["data"]["code"], "VALIDATION_ERROR");
    // The one session slot is taken: a second connection's reset is refused.
    let mut other = ws_connect(server.addr).await;
    let r = ws_send(&mut other, json!({"type": "reset", "data": {}})).await;
    assert_eq!(r["data"]["code"], "CAPACITY_REACHED");
    server.shutdown().await;
}

#[tokio::test]
async fn rest_self_play_and_every_bad_request() {
    let (server, log) = server("rest", |o| {
        o.max_sessions = 2;
        o.body_limit = 4096;
    })
    .await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/episodes", server.base_url());
    // Both seats external, every family: each step names its seat; the wrong seat is a 409.
    for family in FAMILIES {
        let (status, created) = rest(
            &http,
            "POST",
            base.clone(),
            Some(json!({"family": family, "opponent": "external", "seed": 1})),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let id = created["episode_id"].as_str().unwrap().to_string();
        let mut to_move: Seat = serde_json::from_value(created["to_move"].clone()).unwrap();
        let mut prompt = created["observation"]["prompt"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, wrong) = rest(
            &http,
            "POST",
            format!("{base}/{id}/step"),
            Some(json!({"seat": to_move.other(), "message": "x"})),
        )
        .await;
        assert_eq!(
            (status, wrong["error"]["code"].as_str()),
            (409, Some("WRONG_SEAT"))
        );
        let mut last = Value::Null;
        for _ in 0..64 {
            let (status, body) = rest(
                &http,
                "POST",
                format!("{base}/{id}/step"),
                Some(json!({"seat": to_move, "message": answer(&prompt)})),
            )
            .await;
            assert_eq!(status, 200, "{body}");
            last = body.clone();
            if body["done"] == true {
                break;
            }
            to_move = serde_json::from_value(body["to_move"].clone()).unwrap();
            prompt = body["observation"]["prompt"].as_str().unwrap().to_string();
        }
        assert_eq!(last["done"], true);
        let (status, after) = rest(
            &http,
            "POST",
            format!("{base}/{id}/step"),
            Some(json!({"message": "x"})),
        )
        .await;
        assert_eq!(
            (status, after["error"]["code"].as_str()),
            (409, Some("EPISODE_ENDED"))
        );
        let (status, shown) = rest(&http, "GET", format!("{base}/{id}"), None).await;
        assert_eq!(status, 200);
        assert_eq!(shown["state"]["done"], true);
        let token = created["episode_token"].as_str().unwrap();
        let dropped = http
            .delete(format!("{base}/{id}"))
            .header("x-seat-token", token)
            .send()
            .await
            .unwrap();
        assert_eq!(dropped.status().as_u16(), 204);
    }
    let records = read_log(&log);
    assert_eq!(records.len(), FAMILIES.len());
    assert!(records
        .iter()
        .all(|r| r.seats.opponent.player == "external"));
    verify_log(&log, &server.state.hub.options.scenarios);

    // Bad requests, each a JSON error with its status and code.
    let code = |v: &Value| v["error"]["code"].as_str().unwrap_or("").to_string();
    let (s, v) = rest(
        &http,
        "POST",
        format!("{base}/nope/step"),
        Some(json!({"message": "x"})),
    )
    .await;
    assert_eq!((s, code(&v).as_str()), (404, "UNKNOWN_EPISODE"));
    let (s, v) = rest(&http, "GET", format!("{base}/nope"), None).await;
    assert_eq!((s, code(&v).as_str()), (404, "UNKNOWN_EPISODE"));
    let (s, v) = rest(&http, "DELETE", format!("{base}/nope"), None).await;
    assert_eq!((s, code(&v).as_str()), (404, "UNKNOWN_EPISODE"));
    let (s, v) = rest(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": "no-such"})),
    )
    .await;
    assert_eq!((s, code(&v).as_str()), (404, "UNKNOWN_SCENARIO"));
    let (s, v) = rest(
        &http,
        "POST",
        base.clone(),
        Some(json!({"family": "dnd", "index": 999})),
    )
    .await;
    assert_eq!((s, code(&v).as_str()), (404, "UNKNOWN_SCENARIO"));
    let (s, v) = rest(
        &http,
        "POST",
        base.clone(),
        Some(json!({"opponent": "rule:nobody"})),
    )
    .await;
    assert_eq!((s, code(&v).as_str()), (422, "VALIDATION_ERROR"));
    let response = http
        .post(base.clone())
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(code(&response.json().await.unwrap()), "INVALID_JSON");
    let big = json!({"episode_id": "x".repeat(10_000)});
    let (s, v) = rest(&http, "POST", base.clone(), Some(big)).await;
    assert_eq!((s, code(&v).as_str()), (413, "PAYLOAD_TOO_LARGE"));
    let (s, _) = rest(&http, "POST", base.clone(), Some(json!({}))).await;
    assert_eq!(s, 201);
    let (s, _) = rest(&http, "POST", base.clone(), Some(json!({}))).await;
    assert_eq!(s, 201);
    let (s, v) = rest(&http, "POST", base.clone(), Some(json!({}))).await;
    assert_eq!((s, code(&v).as_str()), (503, "CAPACITY_REACHED"));
    server.shutdown().await;
}

#[tokio::test]
async fn bearer_token_and_idle_reclaim() {
    let (server, _log) = server("ops", |o| {
        o.token = Some("s3cret".into());
        o.idle_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/episodes", server.base_url());
    let (s, v) = rest(&http, "POST", base.clone(), Some(json!({}))).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (401, Some("UNAUTHORIZED"))
    );
    let wrong = http
        .post(base.clone())
        .bearer_auth("s3creT")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let health = http
        .get(format!("{}/health", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let created: Value = http
        .post(base.clone())
        .bearer_auth("s3cret")
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["episode_id"].as_str().unwrap();
    assert_eq!(server.state.hub.live_count(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(server.state.hub.live_count(), 0);
    let gone = http
        .get(format!("{base}/{id}"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status().as_u16(), 404);
    server.shutdown().await;
}

/// Concurrent sessions over the WebSocket: every session's final transcript equals a replay of
/// its own logged record (500 take about 2 s in a debug build).
async fn concurrent_sessions(n: usize) {
    let (server, log) = server(&format!("many-{n}"), |o| o.max_sessions = n).await;
    let addr = server.addr;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        tasks.spawn(async move {
            let mut ws = ws_connect(addr).await;
            let family = FAMILIES[i % FAMILIES.len()];
            let done = ws_episode(&mut ws, json!({"family": family, "index": i % 20, "seed": i, "episode_id": format!("c{i}")})).await;
            (format!("c{i}"), done["observation"]["messages"].clone())
        });
    }
    let mut transcripts = Vec::new();
    while let Some(r) = tasks.join_next().await {
        transcripts.push(r.unwrap());
    }
    let records = read_log(&log);
    assert_eq!(records.len(), n);
    let mut scenarios: Vec<Arc<Scenario>> = Vec::new();
    for file in &server.state.hub.options.scenarios {
        scenarios.extend(
            load_scenarios(file, LoadOptions::default())
                .unwrap()
                .scenarios
                .into_iter()
                .map(Arc::new),
        );
    }
    let prompts = Prompts::builtin();
    for (id, messages) in transcripts {
        let record = records.iter().find(|r| r.episode_id == id).unwrap();
        let scenario = scenarios
            .iter()
            .find(|s| s.id == record.scenario_id)
            .unwrap();
        let (episode, _) = record.replay_until_end(scenario, &prompts).unwrap();
        assert_eq!(messages, json!(episode.view(Seat::Learner)), "{id}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_sessions_without_cross_talk() {
    concurrent_sessions(500).await;
}

#[tokio::test]
async fn rollout_service_streams_records_from_the_mock() {
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let (server, log) = server("rollouts", |o| {
        o.concurrency = 4;
        o.policy.endpoints = vec![mock.base_url()];
    })
    .await;
    let http = reqwest::Client::new();
    let body = json!({
        "scenarios": [{"family": "casino", "count": 2}, {"family": "ahp", "count": 1}],
        "group_size": 2,
        "seed": 5,
        "learner": {"endpoint": mock.base_url(), "model": "mock", "sampling": {"temperature": 0.7}},
        "opponent": "rule:linear",
    });
    let response = http
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    let lines: Vec<EpisodeRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    assert!(lines
        .iter()
        .all(|r| r.seats.learner.player.as_str().contains("learner")
            || r.seats.learner.model.is_some()));
    assert_eq!(read_log(&log).len(), 6);
    let bad = http
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(
            &json!({"scenarios": ["nope"], "learner": {"endpoint": mock.base_url(), "model": "m"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 404);
    let bad = http.post(format!("{}/v1/rollouts", server.base_url())).json(&json!({"scenarios": ["x"], "learner": {"endpoint": mock.base_url(), "model": "m"}, "format": "pickle"})).send().await.unwrap();
    assert_eq!(bad.status().as_u16(), 422);
    // A token format for a learner in text mode would stream nothing: refused, naming the fix.
    for format in ["verl", "trl-rollout", "tinker"] {
        let mut tokens = body.clone();
        tokens["format"] = json!(format);
        let bad = http
            .post(format!("{}/v1/rollouts", server.base_url()))
            .json(&tokens)
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status().as_u16(), 422, "{format}");
        let answer: Value = bad.json().await.unwrap();
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(format) && message.contains("\"tokens\": \"exact\""),
            "{answer}"
        );
    }
    let mut as_messages = body.clone();
    as_messages["format"] = json!("messages");
    let text = http
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&as_messages)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty() && lines.len() <= 6, "{text}");
    assert!(lines.iter().all(|l| l["messages"].is_array()), "{text}");
    verify_log(&log, &server.state.hub.options.scenarios);
    server.shutdown().await;
    mock.stop();
}
