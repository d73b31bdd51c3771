//! The long fuzzing soak of `dealgym serve`: mutated and arbitrary request bodies on every
//! route that reads one and messages on its WebSocket, against a server (and a mock endpoint
//! for its rollouts and token-exact mode) in this process. Deterministic (ChaCha8 seeded by
//! `--seed`); a crash — a 5xx, an error that is not JSON, no answer, `/health` gone — is
//! printed with its input and the process exits non-zero.
//!
//! `cargo run --release --example fuzz_serve [-- --inputs 100000] [--seconds S] [--seed N]`
//!
//! The inputs and checks are `tests/fuzz_support/serve.rs`, shared with the suite's
//! `fuzz::the_server_answers_every_mutated_request_without_crashing`.

#[path = "../tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use dealgym::serve::{ServeOptions, Server};
use dealgym_mock::{MockConfig, MockServer};
use fuzz_support::serve::{input, Route, ServeFuzzer};

fn arg(args: &[String], name: &str) -> Option<u64> {
    let value = args
        .iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} takes a number")),
    )
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let total = arg(&args, "--inputs").unwrap_or(100_000);
    let deadline = arg(&args, "--seconds").map(|s| Instant::now() + Duration::from_secs(s));
    let seed = arg(&args, "--seed").unwrap_or(0);

    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .expect("the mock");
    let endpoint = mock.base_url();
    let dir = std::env::temp_dir().join(format!("dealgym-fuzz-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let scenarios: Vec<_> = ["ahp", "craigslist", "casino", "dnd", "job_interview"]
        .iter()
        .map(|f| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(format!("scenarios/{f}.jsonl"))
        })
        .collect();
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenarios,
        dir.join("log.jsonl"),
    );
    options.policy.endpoints = vec![endpoint.clone()];
    let server = Server::start(options).await.expect("the server");
    let mut fuzzer = ServeFuzzer::new(server.addr);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let started = Instant::now();
    let mut per_route = [0u64; Route::ALL.len()];
    let mut crashes = Vec::new();
    let mut n = 0u64;
    while n < total && deadline.is_none_or(|d| Instant::now() < d) {
        let at = (n % Route::ALL.len() as u64) as usize;
        let route = Route::ALL[at];
        let body = input(route, &endpoint, &mut rng);
        if let Some(crash) = fuzzer.send(route, body.clone()).await {
            if crashes.len() < 20 {
                crashes.push((route, crash, String::from_utf8_lossy(&body).into_owned()));
            }
        }
        per_route[at] += 1;
        n += 1;
    }
    let healthy = fuzzer.healthy().await;
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "serve fuzz: {n} inputs in {elapsed:.1} s ({:.0}/s), seed {seed}",
        n as f64 / elapsed
    );
    for (route, count) in Route::ALL.iter().zip(per_route) {
        println!("  {:<28} {count:>10}", route.name());
    }
    let answers: Vec<String> = fuzzer
        .answers
        .iter()
        .map(|(status, count)| match status {
            0 => format!("ws reply ×{count}"),
            s => format!("{s} ×{count}"),
        })
        .collect();
    println!("  answers: {}", answers.join(", "));
    println!(
        "  /health at the end: {}",
        if healthy { "ok" } else { "GONE" }
    );
    println!("  crashes                      {:>10}", crashes.len());
    for (route, crash, input) in &crashes {
        println!("CRASH on {}: {crash}\n  input: {input:?}", route.name());
    }
    server.shutdown().await;
    mock.stop();
    let _ = std::fs::remove_dir_all(&dir);
    if !crashes.is_empty() || !healthy {
        std::process::exit(1);
    }
}
