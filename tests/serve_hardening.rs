//! `dealgym serve` as an attacker and a careless client would use it (issue 20): sizes that
//! would abort the server, opponents and endpoints that read files or call other hosts,
//! browser pages, colliding episode ids, sessions that belong to another connection, the
//! session bound, connections that send nothing, and flags past their limits. Each test
//! reproduces what broke before and checks the refusal names what and why.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;
use crate::common::{error_code as code, error_message as message, post_status as post};

use common::{dealgym_cli, read_log, scenario_files, temp_dir, ws_connect, ws_send};
use dealgym::serve::{ServeOptions, Server};
use dealgym_mock::{MockConfig, MockServer};

async fn server(name: &str, tune: impl FnOnce(&mut ServeOptions, &PathBuf)) -> (Server, PathBuf) {
    let dir = temp_dir(name);
    let scenarios = scenario_files(&dir, 20);
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), scenarios, log.clone());
    tune(&mut options, &dir);
    (Server::start(options).await.unwrap(), log)
}

async fn healthy(server: &Server) {
    let health = reqwest::get(format!("{}/health", server.base_url()))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

#[tokio::test]
async fn a_rollout_request_past_the_size_limits_is_refused_not_allocated() {
    let (server, _) = server("hard-sizes", |o, _| o.policy.endpoints = vec!["*".into()]).await;
    let learner = json!({"endpoint": "http://127.0.0.1:9/v1", "model": "m"});
    for group_size in [4_294_967_295u64, 1_000_000, 0] {
        let (status, answer) = post(
            &server,
            "/v1/rollouts",
            &json!({"scenarios": {"family": "casino", "count": 1}, "group_size": group_size, "learner": learner}),
        )
        .await;
        assert_eq!(status, 422, "{answer}");
        assert!(
            message(&answer).contains("group_size must be from 1 to 4096")
                && message(&answer).contains(&group_size.to_string()),
            "{answer}"
        );
    }
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": usize::MAX, "offset": usize::MAX}, "learner": learner}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    // 4 scenarios × 4096 is within both bounds; 30 ids × 4096 is past the request's.
    let ids: Vec<String> = server.state.hub.catalog.scenarios[..30]
        .iter()
        .map(|s| s.id.clone())
        .collect();
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": ids, "group_size": 4096, "learner": learner}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(message(&answer).contains("at most 100000"), "{answer}");
    // A client's rules are held to the config's bounds: no episode of four billion rounds.
    let (status, answer) = post(
        &server,
        "/reset",
        &json!({"rules": {"max_rounds": 4_294_967_295u64}}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(message(&answer).contains("max_rounds"), "{answer}");
    healthy(&server).await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_names_no_file_and_no_url_unless_the_operator_allows_it() {
    let (server, log) = server("hard-policy", |_, _| {}).await;
    let mut answers = Vec::new();
    for opponent in [
        "script:/etc/hostname",
        "script:/no/such/file",
        "script:/dev/zero",
        "openai:m@http://169.254.169.254/v1",
    ] {
        let (status, answer) = post(&server, "/reset", &json!({"opponent": opponent})).await;
        assert_eq!(status, 403, "{opponent}: {answer}");
        assert_eq!(code(&answer), "FORBIDDEN");
        answers.push(message(&answer).to_string());
    }
    // A file that exists and one that does not are refused in the same words.
    assert_eq!(answers[0], answers[1]);
    assert!(
        answers[0].contains("--allow-client-scripts"),
        "{}",
        answers[0]
    );
    assert!(answers[3].contains("--allow-endpoint"), "{}", answers[3]);
    // An allowed-looking URL spelled into the model name lets no other through.
    let (status, answer) = post(
        &server,
        "/reset",
        &json!({"opponent": "openai:m@HTTP://127.0.0.1:8000/v1@http://127.0.0.1:9/v1"}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = post(
        &server,
        "/v1/episodes",
        &json!({"tokens": {"endpoint": "http://10.0.0.1:8000/v1", "model": "m"}}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1},
                "learner": {"endpoint": "http://10.0.0.1:8000/v1", "model": "m"}}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1}, "learner": "nobody"}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    // Over the WebSocket too.
    let mut ws = ws_connect(server.addr).await;
    let answer = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"opponent": "script:/etc/hostname"}}),
    )
    .await;
    assert_eq!(answer["type"], "error", "{answer}");
    assert!(answer["data"]["message"]
        .as_str()
        .unwrap()
        .contains("--allow-client-scripts"));
    // The built-in rules and the operator's own opponent stay open.
    let (status, _) = post(&server, "/reset", &json!({"opponent": "rule:tough"})).await;
    assert_eq!(status, 200);
    assert!(read_log(&log).is_empty());
    server.shutdown().await;

    // Allowed by the operator, a script is read only up to its limit.
    let (server, _) = server_with_scripts().await;
    let (status, answer) = post(&server, "/reset", &json!({"opponent": "script:/dev/zero"})).await;
    assert_eq!(status, 422, "{answer}");
    assert!(message(&answer).contains("longer than"), "{answer}");
    server.shutdown().await;
}

async fn server_with_scripts() -> (Server, PathBuf) {
    server("hard-scripts", |o, _| o.policy.scripts = true).await
}

#[tokio::test]
async fn a_browser_page_cannot_drive_the_server() {
    let (server, _) = server("hard-origin", |o, _| {
        o.policy.origins = vec!["http://localhost:3000".into()]
    })
    .await;
    let http = reqwest::Client::new();
    // A cross-origin "simple" request: text/plain, no preflight.
    let response = http
        .post(format!("{}/v1/episodes", server.base_url()))
        .header("origin", "https://evil.example")
        .header("content-type", "text/plain")
        .body(r#"{"family":"casino"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());
    assert_eq!(server.state.hub.live_count(), 0);
    let response = http
        .get(format!("{}/health", server.base_url()))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    // The WebSocket handshake from a page is refused too.
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
            "ws://{}/ws",
            server.addr
        ))
        .unwrap();
    request
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_err());
    // An allowed origin, and a client that sends none, are served.
    let response = http
        .post(format!("{}/v1/episodes", server.base_url()))
        .header("origin", "http://localhost:3000")
        .json(&json!({"family": "casino"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let (status, _) = post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    assert_eq!(status, 201);
    server.shutdown().await;
}

#[test]
fn a_public_bind_without_a_token_is_refused_at_startup() {
    let out = dealgym_cli(["serve", "--host", "0.0.0.0", "--port", "0"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--token-env") && stderr.contains("--allow-public-without-token"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn rollout_requests_and_restarts_never_share_an_episode_id_or_a_group() {
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let endpoint = mock.base_url();
    let dir = temp_dir("hard-ids");
    let scenarios = scenario_files(&dir, 20);
    let log = dir.join("serve.jsonl");
    let start = || {
        let mut options = ServeOptions::new(
            "127.0.0.1:0".parse().unwrap(),
            scenarios.clone(),
            log.clone(),
        );
        options.policy.endpoints = vec![endpoint.clone()];
        Server::start(options)
    };
    let learner = json!({"endpoint": endpoint, "model": "mock"});
    let server = start().await.unwrap();
    for family in ["casino", "dnd"] {
        let (status, _) = post(
            &server,
            "/v1/rollouts",
            &json!({"scenarios": {"family": family, "count": 1}, "group_size": 2, "learner": learner}),
        )
        .await;
        assert_eq!(status, 200);
    }
    let (status, first) = post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    assert_eq!(status, 201);
    // A second server on the same log is refused while the first holds it.
    let second = start().await;
    assert!(
        second
            .as_ref()
            .is_err_and(|e| e.to_string().contains("being written by another process")),
        "{:?}",
        second.err()
    );
    server.shutdown().await;
    // Restarted on the same log: fresh ids again, past those it holds.
    let server = start().await.unwrap();
    let (status, _) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1}, "group_size": 2, "learner": learner}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, second_session) =
        post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    assert_eq!(status, 201);
    assert_ne!(first["episode_id"], second_session["episode_id"]);
    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), 6);
    let mut ids: Vec<&str> = records.iter().map(|r| r.episode_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "{ids:?}");
    // Every GRPO group is one scenario's, with its two members.
    let mut groups = std::collections::BTreeMap::<(&str, &str), Vec<&str>>::new();
    for r in &records {
        groups
            .entry((r.run_id.as_str(), r.group_id.as_str()))
            .or_default()
            .push(r.scenario_id.as_str());
    }
    assert_eq!(groups.len(), 3, "{groups:?}");
    assert!(
        groups.values().all(|g| g.len() == 2 && g[0] == g[1]),
        "{groups:?}"
    );
    mock.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_episode_id_is_one_episode_however_clients_race_for_it() {
    let (server, log) = server("hard-race", |_, _| {}).await;
    let url = format!("{}/v1/episodes", server.base_url());
    let creates = (0..20).map(|_| {
        let url = url.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&json!({"episode_id": "same", "family": "casino"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    let statuses = futures_util::future::join_all(creates).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 409),
        "{statuses:?}"
    );

    // Ids of the server's own forms are the server's to give: a client naming one could
    // take a rollout's id or stall the counter.
    for servers in ["s18446744073709551615", "r0-g0-m0"] {
        let (status, answer) = post(&server, "/v1/episodes", &json!({"episode_id": servers})).await;
        assert_eq!(status, 422, "{servers}: {answer}");
    }
    let (status, _) = post(&server, "/v1/episodes", &json!({})).await;
    assert_eq!(status, 201);

    // A WebSocket reset naming a live REST episode does not take it over.
    let mut ws = ws_connect(server.addr).await;
    let answer = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"episode_id": "same"}}),
    )
    .await;
    assert_eq!(answer["type"], "error", "{answer}");
    let shown = reqwest::get(format!("{url}/same")).await.unwrap();
    assert_eq!(shown.status().as_u16(), 200);

    // A WebSocket's own session is that connection's alone.
    let answer = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"episode_id": "socket-owned", "family": "casino"}}),
    )
    .await;
    assert_eq!(answer["type"], "observation", "{answer}");
    let http = reqwest::Client::new();
    let step = http
        .post(format!("{url}/socket-owned/step"))
        .json(&json!({"message": "Action: [WALK_AWAY]"}))
        .send()
        .await
        .unwrap();
    assert_eq!(step.status().as_u16(), 404);
    let delete = http
        .delete(format!("{url}/socket-owned"))
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status().as_u16(), 404);

    // Stateless /step with one episode id twice logs one episode.
    let walk = json!({"action": {"message": "Thought: no.\nTalk: Goodbye.\nAction: [WALK_AWAY]"},
                      "episode_id": "stateless", "family": "casino", "first_mover": "learner"});
    let (status, answer) = post(&server, "/step", &walk).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["done"], true, "{answer}");
    let (status, answer) = post(&server, "/step", &walk).await;
    assert_eq!(
        (status, code(&answer)),
        (409, "EPISODE_ID_TAKEN"),
        "{answer}"
    );
    server.shutdown().await;
    let logged: Vec<String> = read_log(&log).into_iter().map(|r| r.episode_id).collect();
    assert_eq!(logged, ["stateless"]);
}

#[tokio::test]
async fn episodes_that_end_at_their_reset_stay_within_max_sessions() {
    let (server, log) = server("hard-ended", |o, dir| {
        let script = dir.join("walk.json");
        std::fs::write(
            &script,
            json!(["Thought: no.\nTalk: Not for me.\nAction: [WALK_AWAY]"]).to_string(),
        )
        .unwrap();
        o.opponent = format!("script:{}", script.display());
        o.max_sessions = 10;
    })
    .await;
    for _ in 0..200 {
        let (status, answer) = post(
            &server,
            "/v1/episodes",
            &json!({"family": "casino", "first_mover": "opponent"}),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["done"], true, "{answer}");
    }
    assert_eq!(server.state.hub.live_count(), 0);
    assert!(
        server.state.hub.ended_count() <= 10,
        "{}",
        server.state.hub.ended_count()
    );
    server.shutdown().await;
    assert_eq!(read_log(&log).len(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_are_closed_and_do_not_starve_health() {
    let (server, _) = server("hard-conns", |o, _| {
        o.connections.max_connections = 4;
        o.connections.header_timeout = Duration::from_millis(500);
        o.body_timeout = Duration::from_millis(500);
    })
    .await;
    let addr = server.addr;
    // More half-open connections than the server takes at once.
    let idle: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s
        })
        .collect();
    let started = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::get(format!("http://{addr}/health")),
    )
    .await
    .expect("/health answered while half-open connections wait")
    .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Each half-open connection was closed by the server.
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = Vec::new();
        assert!(s.read_to_end(&mut buf).is_ok(), "still open after 10 s");
    }
    // A body that never arrives is cut off too.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"se",
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.contains("body-timeout-s"), "{answer}");
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_naming_them() {
    let (server, _) = server("hard-routes", |_, _| {}).await;
    let response = reqwest::get(format!("{}/nope", server.base_url()))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(code(&body), "NOT_FOUND");
    assert!(message(&body).contains("GET /nope"), "{body}");
    let response = reqwest::Client::new()
        .put(format!("{}/reset", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(code(&body), "METHOD_NOT_ALLOWED", "{body}");
    assert!(message(&body).contains("/reset"), "{body}");
    server.shutdown().await;
}

#[test]
fn serve_flags_past_their_limits_are_refused_by_name() {
    for (flag, value, words) in [
        (
            "--idle-timeout-s",
            "NaN",
            "--idle-timeout-s must be above 0",
        ),
        ("--idle-timeout-s", "0", "--idle-timeout-s must be above 0"),
        ("--idle-timeout-s", "1e300", "1e300"),
        ("--header-timeout-s", "-1", "--header-timeout-s"),
        ("--max-sessions", "0", "--max-sessions must be from 1"),
        (
            "--concurrency",
            "18446744073709551615",
            "--concurrency must be from 1 to 65536",
        ),
        (
            "--body-limit",
            "18446744073709551615",
            "--body-limit must be from 1",
        ),
        ("--max-connections", "0", "--max-connections must be from 1"),
        (
            "--allow-endpoint",
            "not a url",
            "--allow-endpoint not a url",
        ),
        ("--allow-origin", "http://x/path", "--allow-origin"),
    ] {
        let out = dealgym_cli(["serve", "--port", "0", &format!("{flag}={value}")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value}");
        assert!(stderr.contains(words), "{flag} {value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flag} {value}: {stderr}");
    }
}

/// The address a `dealgym serve` child (its stderr piped) says it serves on: on the line that
/// names it (a warning about the file limit may come first).
fn address_of(child: &mut std::process::Child) -> std::net::SocketAddr {
    use std::io::BufRead;
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    while !first.contains("http://") {
        first.clear();
        if stderr.read_line(&mut first).unwrap() == 0 {
            break;
        }
    }
    // Keep reading (and dropping) what it says, so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
}

/// The server under a low limit on open files (`ulimit -n 64`) with more half-open
/// connections than that: it goes on accepting as the header timeout frees descriptors, and
/// `/health` is answered.
#[test]
fn health_is_answered_with_file_descriptors_exhausted_by_half_open_connections() {
    let dir = temp_dir("hard-fds");
    let script = format!(
        "ulimit -n 64 && exec {} serve --port 0 --header-timeout-s 1 --log {}",
        env!("CARGO_BIN_EXE_dealgym"),
        dir.join("serve.jsonl").display()
    );
    let mut child = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr = address_of(&mut child);
    let _idle: Vec<TcpStream> = (0..100)
        .filter_map(|_| {
            let mut s = TcpStream::connect(addr).ok()?;
            s.write_all(b"GET /health HTTP/1.1\r\n").ok()?;
            Some(s)
        })
        .collect();
    let mut health = TcpStream::connect(addr).unwrap();
    health
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    health
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = String::new();
    let read = health.read_to_string(&mut answer);
    let _ = child.kill();
    let _ = child.wait();
    assert!(read.is_ok(), "{read:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// An allowed endpoint that answers with a redirect does not take the server's call to a host
/// the operator never allowed: the server's client follows no redirect.
#[tokio::test]
async fn a_redirect_from_an_allowed_endpoint_is_not_followed() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let target = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async { "{}" }
    });
    let target_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target_addr = target_listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(target_listener, target).await });
    let redirect = axum::Router::new().fallback(move || async move {
        (
            axum::http::StatusCode::TEMPORARY_REDIRECT,
            [(
                "location",
                format!("http://{target_addr}/v1/chat/completions"),
            )],
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let allowed = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, redirect).await });
    let (server, _) = server("hard-redirect", |o, _| {
        o.policy.endpoints = vec![allowed.clone()]
    })
    .await;
    let response = reqwest::Client::new()
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&json!({"scenarios": {"family": "casino", "count": 1},
                      "learner": {"endpoint": format!("{allowed}/v1"), "model": "m", "sampling": {"retries": 0}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("307"), "{text}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the redirect was followed");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_refused_before_their_body_is_read_and_by_their_host() {
    let (server, _) = server("hard-guards", |o, _| o.token = Some("secret".into())).await;
    // No token: refused at once, not after waiting for a body that never comes.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(
        b"POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n",
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 401");
    // A page that rebinds its own name to 127.0.0.1 is refused by its Host.
    let response = reqwest::Client::new()
        .get(format!("{}/health", server.base_url()))
        .header("host", "rebind.evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    server.shutdown().await;
}

#[tokio::test]
async fn websockets_share_the_connection_budget_and_pings_keep_none_open() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as WsMessage;
    let (server, _) = server("hard-sockets", |o, _| {
        o.connections.max_connections = 2;
        o.idle_timeout = Duration::from_secs(1);
    })
    .await;
    let url = format!("ws://{}/ws", server.addr);
    let mut first = tokio_tungstenite::connect_async(&url).await.unwrap().0;
    let _second = tokio_tungstenite::connect_async(&url).await.unwrap().0;
    // Two sockets are the most: a third is refused.
    assert!(tokio_tungstenite::connect_async(&url).await.is_err());
    // Pings are not messages: the socket is closed after the idle timeout all the same.
    let started = Instant::now();
    let closed = loop {
        if first.send(WsMessage::Ping(vec![1].into())).await.is_err() {
            break true;
        }
        match tokio::time::timeout(Duration::from_millis(300), first.next()).await {
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(WsMessage::Close(_)))) => break true,
            _ => {}
        }
        if started.elapsed() > Duration::from_secs(8) {
            break false;
        }
    };
    assert!(closed, "a socket kept open by pings alone");
    server.shutdown().await;
}

#[tokio::test]
async fn a_rollout_request_naming_many_families_is_refused_as_it_adds_up() {
    let (server, _) = server("hard-families", |o, _| {
        o.policy.endpoints = vec!["*".into()]
    })
    .await;
    let parts: Vec<Value> = (0..200)
        .map(|_| json!({"family": "casino", "count": 1000}))
        .collect();
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": parts, "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m"}}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(message(&answer).contains("add up to"), "{answer}");
    // A client sets no health path (a GET to any route of an allowed host).
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1},
                "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m",
                            "sampling": {"health_path": "/admin", "endpoints": ["http://127.0.0.1:9/v1"]}}}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    // Nor a planner: its proposers are player specs and its value model a URL, none of which
    // pass the checks a learner's endpoint does.
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1},
                "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m",
                            "sampling": {"planner": {"propose": "script:/etc/passwd",
                                                     "value": "http://169.254.169.254/"}}}}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert!(message(&answer).contains("planner"), "{answer}");
    // Nor a narrated player: its decider and narrator are player specs too.
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1},
                "learner": {"endpoint": "http://127.0.0.1:9/v1", "model": "m",
                            "sampling": {"decider": "script:/etc/passwd",
                                         "narrator": "openai:m@http://169.254.169.254/v1"}}}),
    )
    .await;
    assert_eq!((status, code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert!(message(&answer).contains("narrated"), "{answer}");
    server.shutdown().await;
}

// Issue 42 (round 2 of the hardening).

/// The rollout service's trainer formats on a server set up as `dealgym serve` sets itself up
/// by default: its scenarios include a table file (`deliberation.jsonl`, which feeds
/// `/v1/tables`) and its own prompts directory. Each format either streams its lines or is
/// refused before anything is played; never a 200 of error lines after every episode was
/// played and logged.
#[tokio::test]
async fn rollout_formats_stream_lines_or_are_refused_before_playing() {
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let (server, log) = server("hard-formats", |o, dir| {
        o.policy.endpoints = vec![mock.base_url()];
        o.scenarios.push(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/table/six_party.jsonl"),
        );
        let prompts = dir.join("prompts");
        std::fs::create_dir_all(&prompts).unwrap();
        let casino = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts/casino_agent.j2"),
        )
        .unwrap();
        std::fs::write(
            prompts.join("casino_agent.j2"),
            format!("{casino}\nHouse rule: keep every message under fifty words."),
        )
        .unwrap();
        o.prompts = std::sync::Arc::new(dealgym::game::Prompts::with_overrides(&prompts).unwrap());
    })
    .await;
    let learner = json!({"endpoint": mock.base_url(), "model": "mock"});
    let mut played = 0;
    for format in ["messages", "prompt-completion", "transitions"] {
        let response = reqwest::Client::new()
            .post(format!("{}/v1/rollouts", server.base_url()))
            .json(
                &json!({"scenarios": {"family": "casino", "count": 1}, "group_size": 2,
                          "learner": learner, "opponent": "rule:linear", "format": format}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{format}");
        let text = response.text().await.unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!lines.is_empty(), "{format}: no line");
        assert!(
            lines.iter().all(|l| l.get("error").is_none()),
            "{format}: error lines after playing: {text}"
        );
        played += 2;
    }
    // A format that cannot be built for this learner is refused before a single episode is
    // played (nothing more in the log).
    let (status, answer) = post(
        &server,
        "/v1/rollouts",
        &json!({"scenarios": {"family": "casino", "count": 1}, "group_size": 2,
                "learner": learner, "opponent": "rule:linear", "format": "verl"}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(read_log(&log).len(), played);
    server.shutdown().await;
    mock.stop();
}

/// With `--allow-client-scripts`, one script named a dozen ways (`./`, `//`, a symbolic link)
/// is one script in memory: the server's resident memory grows by less than the script's size
/// over the dozen resets, where each spelling used to hold a copy of its own.
#[tokio::test]
async fn one_client_script_named_many_ways_is_loaded_once() {
    const ENTRY: usize = 128 << 10;
    const ENTRIES: usize = 64; // 8 MiB of script
    let dir = temp_dir("hard-script-spellings");
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let completions: Vec<String> = (0..ENTRIES)
        .map(|i| {
            format!(
                "Thought: {i}\nTalk: {}\nAction: [REJECT_DEAL]",
                "x".repeat(ENTRY)
            )
        })
        .collect();
    let script = scripts.join("long.json");
    std::fs::write(&script, serde_json::to_string(&completions).unwrap()).unwrap();
    let size = std::fs::metadata(&script).unwrap().len();
    std::os::unix::fs::symlink(&script, dir.join("link.json")).unwrap();
    let casino = scenario_files(&dir, 5)
        .into_iter()
        .find(|f| f.ends_with("casino.jsonl"))
        .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args([
            "serve",
            "--port",
            "0",
            "--allow-client-scripts",
            "--scenarios",
        ])
        .arg(&casino)
        .arg("--log")
        .arg(dir.join("serve.jsonl"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr = address_of(&mut child);
    let spellings: Vec<String> = (0..12)
        .map(|i| match i {
            0 => script.display().to_string(),
            1 => dir.join("link.json").display().to_string(),
            2 => format!("{}/scripts//long.json", dir.display()),
            n => format!("{}/{}scripts/long.json", dir.display(), "./".repeat(n)),
        })
        .collect();
    let http = reqwest::Client::new();
    let mut before = 0;
    for (i, spelling) in spellings.iter().enumerate() {
        let response = http
            .post(format!("http://{addr}/v1/episodes"))
            .json(&json!({"family": "casino", "first_mover": "learner",
                          "opponent": format!("script:{spelling}")}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert_eq!(
            status,
            201,
            "{spelling}: {}",
            response.text().await.unwrap()
        );
        if i == 0 {
            before = common::rss(child.id());
        }
    }
    let grown = common::rss(child.id()).saturating_sub(before);
    let _ = child.kill();
    let _ = child.wait();
    println!("{} KB more resident over 11 more spellings", grown >> 10);
    assert!(
        grown < size,
        "{} MB more resident after 11 more spellings of one {} MB script",
        grown >> 20,
        size >> 20
    );
}

/// A REST call with an optional `x-seat-token`: the status and the JSON answer.
async fn call_with_token(
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let http = reqwest::Client::new();
    common::call_with(&http, method.as_str(), url, body, token).await
}

/// Before, any client could drop any REST episode (`DELETE /v1/episodes/s0`: ids are
/// sequential) and an unfinished one vanished from the log. Now a drop takes the episode's own
/// token, and an unfinished episode dropped is in the log as abandoned.
#[tokio::test]
async fn a_rest_episode_is_dropped_only_with_its_token_and_logged_as_abandoned() {
    let (server, log) = server("hard-episode-drop", |_, _| {}).await;
    let base = format!("{}/v1/episodes", server.base_url());
    let (status, created) = post(
        &server,
        "/v1/episodes",
        &json!({"family": "casino", "first_mover": "learner", "seed": 5}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["episode_id"].as_str().unwrap().to_string();
    let token = created["episode_token"].as_str().map(str::to_string);
    // Another client, guessing the id: no token, a made-up one, another episode's.
    let (_, other) = post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    let others = [
        None,
        Some("0".repeat(32)),
        other["episode_token"].as_str().map(str::to_string),
    ];
    for guess in &others {
        let (status, refused) = call_with_token(
            reqwest::Method::DELETE,
            format!("{base}/{id}"),
            None,
            guess.as_deref(),
        )
        .await;
        assert_eq!(status, 403, "{guess:?}: {refused}");
        assert_eq!(code(&refused), "FORBIDDEN", "{refused}");
        assert!(
            message(&refused).contains("episode_token") && message(&refused).contains(&id),
            "{refused}"
        );
    }
    let (status, _) =
        call_with_token(reqwest::Method::GET, format!("{base}/{id}"), None, None).await;
    assert_eq!(status, 200, "the episode is still there");
    // One turn played, then its creator drops it: it is logged, as abandoned.
    let (status, _) = post(
        &server,
        &format!("/v1/episodes/{id}/step"),
        &json!({"message": "Thought: x\nTalk: Let us talk.\nAction: [REJECT_DEAL]"}),
    )
    .await;
    assert_eq!(status, 200);
    let token = token.expect("the create answers the episode's token");
    let (status, dropped) = call_with_token(
        reqwest::Method::DELETE,
        format!("{base}/{id}"),
        None,
        Some(&token),
    )
    .await;
    assert_eq!(status, 204, "{dropped}");
    let (status, _) =
        call_with_token(reqwest::Method::GET, format!("{base}/{id}"), None, None).await;
    assert_eq!(status, 404);
    // An ended episode is dropped with its token too, and logged once (when it ended).
    let other_id = other["episode_id"].as_str().unwrap().to_string();
    let (status, ended) = post(
        &server,
        &format!("/v1/episodes/{other_id}/step"),
        &json!({"message": "Thought: no.\nTalk: Goodbye.\nAction: [WALK_AWAY]"}),
    )
    .await;
    assert_eq!((status, &ended["done"]), (200, &json!(true)), "{ended}");
    let (status, _) = call_with_token(
        reqwest::Method::DELETE,
        format!("{base}/{other_id}"),
        None,
        Some(other["episode_token"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 204);
    server.shutdown().await;
    let records = read_log(&log);
    let ids: Vec<&str> = records.iter().map(|r| r.episode_id.as_str()).collect();
    assert_eq!(ids, [id.as_str(), other_id.as_str()], "each once, in order");
    let abandoned = &records[0].outcome.outcome;
    assert_eq!(abandoned.kind.name(), "error");
    assert_eq!(
        abandoned.error_kind,
        Some(dealgym::game::ErrorCause::Abandoned)
    );
    let detail = abandoned.detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("abandoned") && detail.contains("DELETE"),
        "{detail}"
    );
    assert!(!records[0].turns.is_empty(), "the turns played are kept");
    // The abandoned record replays to the same ending.
    let scenarios = log.with_file_name("casino.jsonl");
    let out = dealgym_cli([
        "replay",
        log.to_str().unwrap(),
        "--verify",
        "--scenarios",
        scenarios.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
