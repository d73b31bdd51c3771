//! `dealgym serve` against clients that hold its connections and permits (issue 42, items 1,
//! 7, 15 and 17): peers that pipeline requests or WebSocket messages and never read the
//! answers, a rollout that retries a dead endpoint with long waits, a rollout reader that takes
//! no line, and refusals that must all come in one JSON shape, whether the router or hyper
//! itself refuses. Each test reproduces what held the server before and measures behaviour
//! (another client is still served), with bounds generous enough for a loaded machine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{error_code as code, error_message as message};

use crate::common::{scenario_files, temp_dir};
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

/// A connection to `addr` with a receive buffer as small as the kernel allows: a peer that
/// does not read it is full after a few kilobytes, and the server's writes to it block.
async fn small_window(addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(2048).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Write as much of `bytes` as the server takes within a second (one that stops reading stops
/// the write), and read nothing.
async fn push(stream: &mut TcpStream, bytes: &[u8]) {
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(bytes)).await;
}

/// Whether a fresh client is answered 200 on `/health` within `seconds`.
async fn health_within(addr: SocketAddr, seconds: u64) -> bool {
    let asked = tokio::time::timeout(
        Duration::from_secs(seconds),
        reqwest::get(format!("http://{addr}/health")),
    )
    .await;
    matches!(asked, Ok(Ok(response)) if response.status() == 200)
}

/// Send `request` on a fresh connection and read the whole answer (the server closes it):
/// its status, its body as JSON (a string if it is not JSON), and how long it took.
async fn raw(addr: SocketAddr, request: &[u8]) -> (u16, Value, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            // One answer is enough: stop at the end of its body.
            if let Some(whole) = whole_answer(&answer) {
                answer.truncate(whole);
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer within 20 s");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let body = serde_json::from_str(body).unwrap_or(Value::String(body.to_string()));
    (status, body, started.elapsed())
}

/// The length of the first whole answer in `bytes` (by its Content-Length), if it is there.
fn whole_answer(bytes: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(bytes);
    let (head, _) = text.split_once("\r\n\r\n")?;
    let length: usize = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })?;
    let whole = head.len() + 4 + length;
    (bytes.len() >= whole).then_some(whole)
}

/// Item 1: before, four connections that pipelined `GET /health` and never read held the
/// server's four connections for ever, and nobody else was answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_pipeline_requests_and_never_read_do_not_lock_out_health() {
    let (server, _) = server("net-pipeline", |o| {
        o.connections.max_connections = 4;
        // Past the wait below: the header timer (it runs only while hyper waits for a
        // request's head) is not what frees the connections.
        o.connections.header_timeout = Duration::from_secs(60);
        o.connections.write_timeout = Duration::from_secs(1);
    })
    .await;
    let addr = server.addr;
    let pipelined = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(20_000);
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut stream = small_window(addr).await;
        push(&mut stream, pipelined.as_bytes()).await;
        held.push(stream);
    }
    assert!(
        health_within(addr, 20).await,
        "/health not answered within 20 s while 4 peers that never read hold the connections"
    );
    drop(held);
    server.shutdown().await;
}

/// Item 1: one connection makes at most `--max-requests-per-connection` requests, however
/// many it pipelines; the last answer says `connection: close`.
#[tokio::test]
async fn a_connection_makes_at_most_its_share_of_requests() {
    let (server, _) = server("net-requests", |o| o.connections.max_requests = 3).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                .repeat(5)
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut answers = String::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut answers))
        .await
        .expect("the connection stayed open past its last request")
        .unwrap();
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 3, "{answers}");
    let last = answers.rsplit("HTTP/1.1 200").next().unwrap_or("");
    assert!(last.contains("connection: close"), "{answers}");
    server.shutdown().await;
}

#[test]
fn the_new_serve_limits_past_their_bounds_are_refused_by_name() {
    for (flag, value) in [
        ("--write-timeout-s", "0"),
        ("--max-requests-per-connection", "0"),
        ("--max-client-timeout-s", "NaN"),
        ("--max-client-backoff-s", "1e300"),
    ] {
        let out = crate::common::dealgym_cli(["serve", "--port", "0", &format!("{flag}={value}")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flag} {value}: {stderr}");
    }
}

/// Item 1: before, a WebSocket client that sent messages and never read the answers kept its
/// socket past `--idle-timeout-s` (the server waited on the write, not on the client), and as
/// many as `--max-connections` answered every new WebSocket with 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_that_never_read_are_closed_and_free_their_place() {
    let (server, _) = server("net-ws", |o| {
        o.connections.max_connections = 2;
        o.connections.write_timeout = Duration::from_secs(1);
    })
    .await;
    let addr = server.addr;
    // A client frame, masked with the key 0 (so the payload is sent as is): a message of an
    // unknown type, which the server's error answer repeats (8 KB each way).
    let message = json!({"type": "x".repeat(8000)}).to_string();
    let mut frame = vec![0x81, 0x80 | 126];
    frame.extend_from_slice(&(message.len() as u16).to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(message.as_bytes());
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = small_window(addr).await;
        stream
            .write_all(
                b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                  Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            )
            .await
            .unwrap();
        push(&mut stream, &frame.repeat(1000)).await;
        held.push(stream);
    }
    // The server wrote answers until the peers were full.
    let url = format!("ws://{addr}/ws");
    let started = Instant::now();
    let opened = loop {
        if tokio_tungstenite::connect_async(&url).await.is_ok() {
            break true;
        }
        if started.elapsed() > Duration::from_secs(20) {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        opened,
        "no new WebSocket within 20 s while 2 that never read hold their places"
    );
    drop(held);
    server.shutdown().await;
}

/// Item 7: before, a client could ask for a call timeout or backoff of up to a day.
#[tokio::test]
async fn a_client_may_not_set_call_timeouts_or_backoffs_past_the_operators_bounds() {
    let (server, _) = server("net-bounds", |o| o.policy.endpoints = vec!["*".into()]).await;
    let http = reqwest::Client::new();
    for (key, flag) in [
        ("timeout_s", "--max-client-timeout-s"),
        ("backoff_s", "--max-client-backoff-s"),
        ("backoff_max_s", "--max-client-backoff-s"),
    ] {
        let response = http
            .post(format!("{}/v1/rollouts", server.base_url()))
            .json(&json!({"scenarios": {"family": "casino", "count": 1},
                          "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m",
                                      "sampling": {key: 86400}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 422, "{key}");
        let answer: Value = response.json().await.unwrap();
        let said = message(&answer);
        assert!(
            said.contains(key) && said.contains("86400") && said.contains(flag),
            "{key}: {answer}"
        );
    }
    // Nor more retries than the operator's bound (4 by default): with the timeout, what a
    // call to an endpoint that hangs may hold a permit for.
    let response = http
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&json!({"scenarios": {"family": "casino", "count": 1},
                      "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m",
                                  "sampling": {"retries": 50}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
    let answer: Value = response.json().await.unwrap();
    assert!(
        message(&answer).contains("retries 50")
            && message(&answer).contains("--max-client-retries"),
        "{answer}"
    );
    server.shutdown().await;
}

/// Item 7: before, a rollout whose learner's endpoint was dead held every shared permit while
/// its calls waited between tries, and another client's rollout got nothing until they gave up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_retrying_a_dead_endpoint_does_not_starve_another() {
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (server, _) = server("net-retries", |o| {
        o.policy.endpoints = vec!["*".into()];
        o.policy.max_retries = 30;
        o.concurrency = 2;
    })
    .await;
    let http = reqwest::Client::new();
    let rollouts = format!("{}/v1/rollouts", server.base_url());
    // Each of its episodes retries 30 times, about 3 s apart: 90 s a permit, before.
    let dead_request = http
        .post(&rollouts)
        .json(&json!({"scenarios": {"family": "casino", "count": 4},
                      "learner": {"endpoint": format!("http://{dead}/v1"), "model": "m",
                                  "sampling": {"retries": 30, "backoff_s": 4, "backoff_max_s": 4}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(dead_request.status().as_u16(), 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        let response = http
            .post(&rollouts)
            .json(&json!({"scenarios": {"family": "casino", "count": 1},
                          "learner": {"endpoint": mock.base_url(), "model": "mock"}}))
            .send()
            .await
            .unwrap();
        response.text().await.unwrap()
    })
    .await
    .expect("another client's rollout waited over 30 s behind one retrying a dead endpoint");
    assert!(served.contains("\"outcome\""), "{served}");
    drop(dead_request);
    server.shutdown().await;
}

/// Item 15: before, a rollout whose reader took no line held the shared permits of its
/// finished episodes until the stall timeout (two minutes), and another client's rollout
/// waited that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_reader_that_takes_no_line_holds_no_permit_another_needs() {
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let (server, log) = server("net-slow-reader", |o| {
        o.policy.endpoints = vec![mock.base_url()];
        o.concurrency = 2;
    })
    .await;
    let body = json!({"scenarios": {"family": "casino", "count": 20}, "group_size": 20,
                      "learner": {"endpoint": mock.base_url(), "model": "mock"}})
    .to_string();
    let mut slow = small_window(server.addr).await;
    slow.write_all(
        format!(
            "POST /v1/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // The slow reader's stream is full once the log stops growing (400 episodes planned).
    let size = || std::fs::metadata(&log).map_or(0, |m| m.len());
    let (mut last, mut still_since) = (size(), Instant::now());
    let started = Instant::now();
    while still_since.elapsed() < Duration::from_secs(2) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the slow reader's rollout never stalled"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        if size() != last {
            (last, still_since) = (size(), Instant::now());
        }
    }
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        reqwest::Client::new()
            .post(format!("{}/v1/rollouts", server.base_url()))
            .json(&json!({"scenarios": {"family": "casino", "count": 1},
                          "learner": {"endpoint": mock.base_url(), "model": "mock"}}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    })
    .await
    .expect("another client's rollout waited over 30 s behind a reader that takes no line");
    assert!(served.contains("\"outcome\""), "{served}");
    drop(slow);
    server.shutdown().await;
}

/// Item 17: before, a body declared over the limit waited for the body timeout and got 422,
/// and hyper's and axum's own refusals had empty or plain-text bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_is_json_and_a_body_declared_too_large_is_refused_at_once() {
    let (server, _) = server("net-refusals", |_| {}).await;
    let addr = server.addr;
    let (status, body, took) = raw(
        addr,
        b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n",
    )
    .await;
    assert_eq!((status, code(&body)), (413, "PAYLOAD_TOO_LARGE"), "{body}");
    assert!(message(&body).contains("--body-limit"), "{body}");
    assert!(took < Duration::from_secs(10), "413 after {took:?}");
    let many_headers = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n",
        (0..120)
            .map(|i| format!("x-h{i}: 1\r\n"))
            .collect::<String>()
    );
    for (request, status_wanted) in [
        // hyper's own refusals: a header line it cannot read, too many headers.
        (
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n".to_vec(),
            400,
        ),
        (many_headers.into_bytes(), 431),
        // axum's: a WebSocket handshake without its headers, a path that is not UTF-8.
        (
            b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"GET /v1/episodes/%FF HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                .to_vec(),
            400,
        ),
    ] {
        let (status, body, _) = raw(addr, &request).await;
        let shown = String::from_utf8_lossy(&request[..40.min(request.len())]).into_owned();
        assert_eq!(status, status_wanted, "{shown}: {body}");
        assert!(
            !code(&body).is_empty() && !message(&body).is_empty(),
            "{shown}: not the JSON error shape: {body}"
        );
    }
    server.shutdown().await;
}
