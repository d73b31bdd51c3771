//! `dealgym serve` in token-exact mode: a client that samples from the mock's token routes with
//! the ids each observation gives, and sends back what it sampled, gets records whose learner
//! sequence is exactly the mock's tokenization of its conversation, over the WebSocket (llama.cpp
//! API) and REST (vLLM API); `export --format trl-rollout` reads the server's log.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common;

use common::{read_log, scenario_files, temp_dir, ws_send, FAMILIES};
use dealgym::game::{token_sequence, Prompts, Seat};
use dealgym::llm::{EndpointSettings, LlmClient, TokenApi};
use dealgym::record::EpisodeRecord;
use dealgym::scenario::{load_scenarios, LoadOptions, Scenario};
use dealgym::serve::{ServeOptions, Server};
use dealgym::vocab::MessageRole;
use dealgym_mock::{render, tokenize, MockConfig, MockServer, MockTemplate};

const IM_END: u32 = 257;

fn setup(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(&format!("tok-{name}"));
    let files = scenario_files(&dir, 5);
    (dir, files)
}

fn sampler(mock: &MockServer, api: TokenApi) -> LlmClient {
    LlmClient::new(
        reqwest::Client::new(),
        EndpointSettings {
            base_url: mock.base_url(),
            model: "mock".into(),
            max_tokens: Some(512),
            timeout_s: 10.0,
            token_api: api,
            ..EndpointSettings::default()
        },
    )
    .unwrap()
}

/// What the client samples for an observation: its sequence grows by the observation's ids and
/// the sampled ids; the step action carries them.
async fn sample(client: &LlmClient, api: TokenApi, sequence: &mut Vec<u32>, obs: &Value) -> Value {
    let ids: Vec<u32> = serde_json::from_value(obs["token_ids"]["prompt_ids"].clone())
        .unwrap_or_else(|_| panic!("token_ids in {obs}"));
    assert!(!ids.is_empty());
    sequence.extend_from_slice(&ids);
    let sampled = client
        .sample(
            api,
            sequence,
            Some(sequence.len() as u64),
            Default::default(),
        )
        .await
        .unwrap();
    sequence.extend_from_slice(&sampled.ids);
    json!({
        "message": sampled.text,
        "completion_ids": sampled.ids,
        "logprobs": sampled.logprobs,
        "finish_reason": sampled.finish_reason,
    })
}

fn scenario(files: &[PathBuf], r: &EpisodeRecord) -> Arc<Scenario> {
    let file = &files[FAMILIES.iter().position(|f| *f == r.family.name()).unwrap()];
    let all = load_scenarios(file, LoadOptions::default())
        .unwrap()
        .scenarios;
    Arc::new(all.into_iter().find(|s| s.id == r.scenario_id).unwrap())
}

/// The learner's recorded sequence is the mock's tokenization of its conversation up to its
/// last own message (plus the end-of-turn token vLLM returns).
fn check(files: &[PathBuf], r: &EpisodeRecord, api: TokenApi) {
    let episode = r.replay(&scenario(files, r), &Prompts::builtin()).unwrap();
    let exact = token_sequence(&r.turns, Seat::Learner, &r.setup.rules)
        .expect("every learner turn has tokens");
    let view = episode.view(Seat::Learner);
    let last_own = view
        .iter()
        .rposition(|m| m.role == MessageRole::Assistant)
        .expect("the learner spoke");
    let rendered = tokenize(&render(&view[..=last_own], MockTemplate::Chatml, false));
    let last = r.turns.iter().rfind(|t| t.seat == Seat::Learner).unwrap();
    let tokens = last.tokens.as_ref().unwrap();
    let expected = match (api, tokens.finish_reason.as_deref()) {
        (TokenApi::Vllm, Some("stop")) => [rendered, vec![IM_END]].concat(),
        _ => rendered,
    };
    assert_eq!(exact, expected, "{}", r.episode_id);
    for t in r.turns.iter().filter(|t| t.seat == Seat::Learner) {
        let k = t.tokens.as_ref().unwrap();
        assert_eq!(k.logprobs.len(), k.completion_ids.len());
        assert!(k.drift.is_none());
    }
}

async fn start(name: &str) -> (MockServer, Server, PathBuf, Vec<PathBuf>) {
    let (dir, files) = setup(name);
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig::default(),
    )
    .await
    .unwrap();
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), files.clone(), log.clone());
    options.policy.endpoints = vec![mock.base_url()];
    (mock, Server::start(options).await.unwrap(), log, files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_exact_episodes_over_the_websocket_and_export() {
    let api = TokenApi::LlamaCpp;
    let (mock, server, log, files) = start("ws").await;
    let client = sampler(&mock, api);
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
        .await
        .unwrap();
    for (i, family) in FAMILIES.iter().enumerate() {
        let tokens =
            json!({"endpoint": mock.base_url(), "model": "mock", "token_api": "llama_cpp"});
        let reset = json!({"family": family, "index": i % 5, "seed": i, "tokens": tokens});
        let mut reply = ws_send(&mut ws, json!({"type": "reset", "data": reset})).await;
        let mut sequence = Vec::new();
        for _ in 0..64 {
            assert_eq!(reply["type"], "observation", "{reply}");
            if reply["data"]["done"] == true {
                break;
            }
            let action = sample(&client, api, &mut sequence, &reply["data"]["observation"]).await;
            reply = ws_send(&mut ws, json!({"type": "step", "data": action})).await;
        }
        assert_eq!(reply["data"]["done"], true, "{reply}");
    }
    // A step without the sampled ids is refused in token-exact mode.
    let tokens = json!({"endpoint": mock.base_url(), "token_api": "llama_cpp"});
    let reply = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"family": "dnd", "tokens": tokens}}),
    )
    .await;
    let observation = reply["data"]["observation"].clone();
    assert!(observation["token_ids"]["prompt_ids"].is_array());
    let reply = ws_send(&mut ws, json!({"type": "step", "data": {"message": "hi"}})).await;
    assert_eq!(reply["data"]["code"], "VALIDATION_ERROR", "{reply}");
    // Logprobs that do not pair with the ids are refused, and the session keeps its prompt ids:
    // the corrected step is played.
    let action = sample(&client, api, &mut Vec::new(), &observation).await;
    let mut unpaired = action.clone();
    unpaired["logprobs"] = json!([-0.5]);
    let reply = ws_send(&mut ws, json!({"type": "step", "data": unpaired})).await;
    assert_eq!(reply["data"]["code"], "VALIDATION_ERROR", "{reply}");
    let reply = ws_send(&mut ws, json!({"type": "step", "data": action})).await;
    assert_eq!(reply["type"], "observation", "{reply}");
    let ended = usize::from(reply["data"]["done"] == true);
    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), FAMILIES.len() + ended);
    for r in &records {
        check(&files, r, api);
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(["export", "--format", "trl-rollout"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), FAMILIES.len());
    for line in &lines {
        assert!(line["completion_ids"].is_array(), "{line}");
    }
    mock.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_exact_episodes_over_rest() {
    let api = TokenApi::Vllm;
    let (mock, server, log, files) = start("rest").await;
    let client = sampler(&mock, api);
    let http = reqwest::Client::new();
    let base = format!("http://{}", server.addr);
    for (i, family) in FAMILIES.iter().enumerate() {
        let tokens = json!({"endpoint": mock.base_url(), "model": "mock", "token_api": "vllm"});
        let mut reply: Value = common::post_json(
            &http,
            format!("{base}/v1/episodes"),
            &json!({"family": family, "index": i % 5, "seed": 10 + i, "tokens": tokens}),
        )
        .await;
        let id = reply["episode_id"].as_str().unwrap().to_string();
        let mut sequence = Vec::new();
        for _ in 0..64 {
            if reply["done"] == true {
                break;
            }
            let action = sample(&client, api, &mut sequence, &reply["observation"]).await;
            reply =
                common::post_json(&http, format!("{base}/v1/episodes/{id}/step"), &action).await;
        }
        assert_eq!(reply["done"], true, "{reply}");
    }
    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), FAMILIES.len());
    for r in &records {
        check(&files, r, api);
    }
    mock.stop();
}
