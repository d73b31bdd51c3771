//! Fuzzing on stable Rust: the turn parser, the scenario loader and the config loader take
//! arbitrary bytes and near-valid inputs (mutated well-formed completions, mutated lines of
//! `scenarios/*.jsonl`, mutated configs) and answer with a value or a named error — never a
//! panic. Case counts are small enough for CI; the long soak (≥ 10 million inputs) is
//! `cargo run --release --example fuzz_soak` (see BENCHMARKS.md).

use crate::fuzz_support;

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use fuzz_support::{check_config, check_parse, check_scenarios, config_path, Corpus, Target};

static CORPUS: LazyLock<Corpus> =
    LazyLock::new(|| Corpus::load(Path::new(env!("CARGO_MANIFEST_DIR"))));

/// A near-valid input for `target`, drawn from the corpus by a seeded generator.
fn mutated(target: Target, seed: u64) -> Vec<u8> {
    CORPUS.input(target, &mut ChaCha8Rng::seed_from_u64(seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn the_parser_reads_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_parse(&CORPUS, &bytes);
    }

    #[test]
    fn the_parser_reads_mutated_completions(seed in any::<u64>()) {
        check_parse(&CORPUS, &mutated(Target::Parse, seed));
    }

    #[test]
    fn the_scenario_loader_reads_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_scenarios(&bytes);
    }

    #[test]
    fn the_scenario_loader_reads_mutated_scenario_lines(seed in any::<u64>()) {
        check_scenarios(&mutated(Target::Scenario, seed));
    }

    #[test]
    fn the_config_loader_reads_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_config(&config_path("arbitrary"), &bytes);
    }

    #[test]
    fn the_config_loader_reads_mutated_configs(seed in any::<u64>()) {
        check_config(&config_path("mutated"), &mutated(Target::Config, seed));
    }
}

#[test]
fn the_seeds_themselves_load() {
    // The corpus is near-valid only if its seeds are valid: every scenario line loads, every
    // config loads, and the well-formed completions parse.
    for line in &CORPUS.scenario_lines {
        dealgym::scenario::parse_scenario_line("seed.jsonl", 1, line)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let path = config_path("seed");
    for config in &CORPUS.configs {
        std::fs::write(&path, config).unwrap();
        dealgym::run::FileConfig::load(&path).unwrap_or_else(|e| panic!("{e}\n{config}"));
    }
    let _ = std::fs::remove_file(path);
    let ok = CORPUS
        .completions
        .iter()
        .filter(|c| {
            dealgym::protocol::parse(c, dealgym::protocol::TermSpace::Price, None).format_ok
        })
        .count();
    assert!(ok > 0);
}

/// Mutated and arbitrary bodies on every route of `dealgym serve` that reads one, and
/// messages on its WebSocket: each answered with a JSON refusal or a result, never a 5xx, a
/// dropped connection or a server that stops answering `/health`. The long run is
/// `cargo run --release --example fuzz_serve` (see BENCHMARKS.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_every_mutated_request_without_crashing() {
    use dealgym::serve::{ServeOptions, Server};
    use dealgym_mock::{MockConfig, MockServer};
    use fuzz_support::serve::{input, Route, ServeFuzzer};

    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let endpoint = mock.base_url();
    let dir = crate::common::temp_dir("fuzz-serve");
    let scenarios = crate::common::scenario_files(&dir, 10);
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenarios,
        dir.join("log.jsonl"),
    );
    options.policy.endpoints = vec![endpoint.clone()];
    let server = Server::start(options).await.unwrap();
    let mut fuzzer = ServeFuzzer::new(server.addr);
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let mut crashes = Vec::new();
    let per_route = 100;
    for i in 0..per_route * Route::ALL.len() {
        let route = Route::ALL[i % Route::ALL.len()];
        let body = input(route, &endpoint, &mut rng);
        if let Some(crash) = fuzzer.send(route, body.clone()).await {
            crashes.push(format!(
                "{}: {crash}\n  input: {:?}",
                route.name(),
                String::from_utf8_lossy(&body)
            ));
        }
    }
    assert!(fuzzer.healthy().await, "/health stopped answering");
    assert!(crashes.is_empty(), "{}", crashes.join("\n"));
    server.shutdown().await;
    mock.stop();
}
