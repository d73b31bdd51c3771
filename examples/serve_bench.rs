//! Throughput of `dealgym serve`, server and mock in process:
//! (a) steps/s over the WebSocket with 256 concurrent sessions against a rule opponent, the
//!     learner's completions written by the client (a fixed valid turn);
//! (b) rollouts/s of `POST /v1/rollouts` with the learner on the mock at 200 ms latency, and
//!     its efficiency: learner calls/s achieved over a steady window against the ideal
//!     concurrency / latency.
//!
//! `cargo run --release --example serve_bench [-- WS_EPISODES ROLLOUT_EPISODES]`

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use dealgym::game::Seat;
use dealgym::record::EpisodeRecord;
use dealgym::serve::{ServeOptions, Server};
use dealgym_mock::{MockConfig, MockServer};

const FAMILIES: [&str; 5] = ["ahp", "craigslist", "casino", "dnd", "job_interview"];
const SESSIONS: usize = 256;
const CONCURRENCY: usize = 64;
const LATENCY_MS: u64 = 200;

fn scenario_files() -> Vec<PathBuf> {
    FAMILIES
        .iter()
        .map(|f| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(format!("{f}.jsonl"))
        })
        .collect()
}

/// A fixed valid turn: accept a standing offer, otherwise ask for one.
fn answer(prompt: &str) -> &'static str {
    if prompt.contains("[SUBMIT_DEAL]") {
        "Thought: good enough.\nTalk: Deal.\nAction: [ACCEPT_DEAL]"
    } else {
        "Thought: wait for an offer.\nTalk: What can you offer me?\nAction: [REJECT_DEAL]"
    }
}

async fn server(name: &str) -> Server {
    let dir =
        std::env::temp_dir().join(format!("dealgym-serve-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenario_files(),
        dir.join("serve.jsonl"),
    );
    options.max_sessions = 4 * SESSIONS;
    options.concurrency = CONCURRENCY;
    // The rollout learner is the mock on loopback.
    options.policy.endpoints = vec!["*".into()];
    Server::start(options).await.unwrap()
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(ws: &mut Ws, message: &Value) -> Value {
    ws.send(WsMessage::text(message.to_string())).await.unwrap();
    loop {
        match ws.next().await.unwrap().unwrap() {
            WsMessage::Text(t) => return serde_json::from_str(&t).unwrap(),
            WsMessage::Close(_) => panic!("closed"),
            _ => continue,
        }
    }
}

/// (a): `episodes` episodes over `SESSIONS` WebSockets; returns (steps, episodes, seconds).
async fn websocket(episodes: usize) -> (u64, u64, f64) {
    let server = server("ws").await;
    let addr = server.addr;
    let next = Arc::new(AtomicU64::new(0));
    let steps = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..SESSIONS)
        .map(|_| {
            let (next, steps) = (next.clone(), steps.clone());
            tokio::spawn(async move {
                let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
                    .await
                    .unwrap();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed) as usize;
                    if n >= episodes {
                        break;
                    }
                    let reset = json!({"type": "reset", "data": {
                        "family": FAMILIES[n % 5], "seed": n, "opponent": "rule:boulware"}});
                    let mut reply = send(&mut ws, &reset).await;
                    while reply["data"]["done"] != true {
                        assert_eq!(reply["type"], "observation", "{reply}");
                        let prompt = reply["data"]["observation"]["prompt"].as_str().unwrap();
                        let step = json!({"type": "step", "data": {"message": answer(prompt)}});
                        reply = send(&mut ws, &step).await;
                        steps.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _ = ws.close(None).await;
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    server.shutdown().await;
    (steps.load(Ordering::Relaxed), episodes as u64, seconds)
}

/// (b): one rollout request of about `episodes` episodes; returns (episodes, seconds, the
/// steady window's episodes/s and learner calls/s).
async fn rollouts(episodes: usize) -> (usize, f64, f64, f64) {
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            latency_ms: LATENCY_MS,
            ..MockConfig::default()
        },
    )
    .await
    .unwrap();
    let server = server("rollouts").await;
    let group_size = 8;
    let count = episodes.div_ceil(group_size * FAMILIES.len());
    let scenarios: Vec<Value> = FAMILIES
        .iter()
        .map(|f| json!({"family": f, "count": count}))
        .collect();
    let body = json!({
        "scenarios": scenarios,
        "group_size": group_size,
        "seed": 1,
        "learner": {"endpoint": mock.base_url(), "model": "mock", "sampling": {"temperature": 0.7}},
        "opponent": "rule:linear",
    });
    let started = Instant::now();
    let mut response = reqwest::Client::new()
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    // (seconds since the start, learner calls) per finished episode.
    let mut done: Vec<(f64, u64)> = Vec::new();
    let mut buffer = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        buffer.extend_from_slice(&chunk);
        while let Some(at) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=at).collect();
            let record: EpisodeRecord = serde_json::from_slice(&line).unwrap();
            let calls = record
                .turns
                .iter()
                .filter(|t| t.seat == Seat::Learner)
                .count() as u64;
            done.push((started.elapsed().as_secs_f64(), calls));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    server.shutdown().await;
    mock.stop();
    // Steady window: between the 10% and the 90% finished episode (ramp-up and drain left out).
    let (lo, hi) = (done.len() / 10, done.len() * 9 / 10);
    let window = done[hi].0 - done[lo].0;
    let eps = (hi - lo) as f64 / window;
    let calls: u64 = done[lo + 1..=hi].iter().map(|d| d.1).sum();
    (done.len(), seconds, eps, calls as f64 / window)
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number of episodes"))
        .collect();
    let ws_episodes = args.first().copied().unwrap_or(5120);
    let rollout_episodes = args.get(1).copied().unwrap_or(1280);

    let (steps, episodes, seconds) = websocket(ws_episodes).await;
    println!(
        "WS, {SESSIONS} concurrent sessions, rule:boulware opponent: {episodes} episodes, {steps} steps in {seconds:.2} s: {:.0} steps/s, {:.0} episodes/s",
        steps as f64 / seconds,
        episodes as f64 / seconds
    );

    let (n, seconds, eps, calls) = rollouts(rollout_episodes).await;
    let ideal = CONCURRENCY as f64 / (LATENCY_MS as f64 / 1000.0);
    println!(
        "rollouts, learner on the mock at {LATENCY_MS} ms, concurrency {CONCURRENCY}: {n} episodes in {seconds:.2} s ({:.1} rollouts/s overall); steady window: {eps:.1} rollouts/s, {calls:.1} learner calls/s vs ideal {ideal:.0} = {:.1}% efficiency",
        n as f64 / seconds,
        100.0 * calls / ideal
    );
}
