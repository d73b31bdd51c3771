//! Fault injection at scale: whole runs at 1024 episodes in flight against the in-process mock
//! answering with 500s, 429s, hangs, unreadable bodies and garbage completions mixed. Every
//! planned episode is written exactly once, every backend failure ends its episode as `error`
//! with what failed, the run's counts equal the counts recomputed from the records, and the run
//! ends (a generous timeout guards against a hang; no timing is asserted).
//!
//! The soak version (more episodes, both seats on the flaky endpoint) is ignored by default:
//! `cargo test --release --test integration -- --ignored faults::faults_soak`.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::Duration;

use dealgym::agents::PlayerConfig;
use dealgym::game::OutcomeKind;
use dealgym::llm::{EndpointSettings, SeedPolicy};
use dealgym::protocol::ErrorKind;
use dealgym::record::EpisodeRecord;
use dealgym::run::{plan, run, RunOptions, RunStats, RunSummary};
use dealgym_mock::{MockConfig, MockServer};

/// Every fault the mock can inject, mixed; hangs outlast the client's timeout of
/// `timeout_s`.
fn faulty_mock(timeout_s: f64) -> MockConfig {
    MockConfig {
        seed: 11,
        jitter_ms: 3,
        error_rate: 0.08,
        rate_limit_rate: 0.08,
        hang_rate: 0.02,
        hang_ms: (timeout_s * 2_500.0) as u64,
        malformed_rate: 0.05,
        garbage_rate: 0.08,
        ..MockConfig::default()
    }
}

/// A player on the mock with a short timeout and quick backoff.
fn flaky(mock: &MockServer, timeout_s: f64) -> BTreeMap<String, PlayerConfig> {
    let config = PlayerConfig {
        endpoint: EndpointSettings {
            base_url: mock.base_url(),
            model: "mock-model".into(),
            temperature: Some(0.7),
            max_tokens: Some(256),
            seed_policy: SeedPolicy::PerEpisode,
            timeout_s,
            retries: 3,
            backoff_s: 0.01,
            backoff_max_s: 0.05,
            ..EndpointSettings::default()
        },
        persona: None,
        constrain: Default::default(),
        planner: None,
        narrated: None,
    };
    BTreeMap::from([("flaky".to_string(), config)])
}

/// What a backend failure's detail says failed: the kinds of [`dealgym::llm::LlmError`].
fn failure_kind(detail: &str) -> Option<&'static str> {
    [
        ("HTTP 500", "server error"),
        ("HTTP 429", "rate limited"),
        ("no answer within", "timeout"),
        ("unreadable response", "unreadable body"),
        ("cannot connect", "connection"),
    ]
    .into_iter()
    .find(|(needle, _)| detail.contains(needle))
    .map(|(_, kind)| kind)
}

/// How big a faulty run is.
struct Scale {
    per_family: usize,
    group: u32,
    concurrency: usize,
    /// The opponent on the faulty mock too (else `rule:linear`).
    both: bool,
    /// The client's per-call timeout; hangs last 2.5 times as long.
    timeout_s: f64,
}

/// Run (scenarios × group) episodes at `concurrency` in flight, the learner (and, with
/// `both`, the opponent) on the faulty mock, and check every count.
async fn faulty_run(name: &str, scale: Scale) {
    let Scale {
        per_family,
        group,
        concurrency,
        both,
        timeout_s,
    } = scale;
    let server = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        faulty_mock(timeout_s),
    )
    .await
    .unwrap();
    let dir = common::temp_dir(&format!("faults-{name}"));
    let files = common::scenario_files(&dir, per_family);
    let out = dir.join("episodes.jsonl");
    let mut options = RunOptions::new(files.clone(), "flaky", "rule:linear", out.clone());
    if both {
        options.opponent = "flaky".into();
    }
    options.players = flaky(&server, timeout_s);
    options.group_size = group;
    options.concurrency = concurrency;
    options.progress = false;
    options.seed = 5;
    options.episode.format_retries = 1;

    // A hang guard only: the run must end; how fast is not asserted.
    let summary: RunSummary = tokio::time::timeout(
        Duration::from_secs(900),
        run(&options, std::future::pending()),
    )
    .await
    .expect("the run ends")
    .expect("the run completes");

    let scenarios = dealgym::run::load_all(&files, &dealgym::run::Selection::default()).unwrap();
    let planned: HashSet<String> = plan(&scenarios, options.seed, group, Default::default())
        .iter()
        .map(|p| p.episode_id())
        .collect();
    assert_eq!(summary.planned, planned.len());
    assert!(summary.planned >= 2 * concurrency, "enough for full waves");
    assert!(!summary.interrupted);

    let records: Vec<EpisodeRecord> = common::read_log(&out);
    assert_eq!(summary.written, summary.planned, "planned = written");
    assert_eq!(records.len(), summary.planned, "no episode lost");
    let ids: HashSet<String> = records.iter().map(|r| r.episode_id.clone()).collect();
    assert_eq!(ids.len(), records.len(), "no episode duplicated");
    assert_eq!(ids, planned, "exactly the planned episodes");

    // Planned = completed + errored, each error with its kind and the seat whose call failed.
    let errored: Vec<&EpisodeRecord> = records
        .iter()
        .filter(|r| r.kind() == OutcomeKind::Error)
        .collect();
    let completed = records.len() - errored.len();
    assert_eq!(completed + errored.len(), summary.planned);
    for r in &errored {
        let detail = r.outcome.outcome.detail.as_deref().unwrap_or("");
        assert!(
            failure_kind(detail).is_some(),
            "{}: an error without its kind: {detail:?}",
            r.episode_id
        );
        assert!(r.outcome.outcome.by.is_some(), "{}", r.episode_id);
    }
    // A backend failure never became a move; garbage is the model's own format error.
    for r in &records {
        for t in &r.turns {
            assert_ne!(
                t.parsed.error.as_ref().map(|e| e.kind),
                Some(ErrorKind::Backend)
            );
            assert!(!t.raw.contains("injected") && !t.raw.contains("not json"));
        }
        assert_eq!(r.timing.turn_ms.len(), r.turns.len(), "{}", r.episode_id);
        assert_eq!(r.timing.call_retries.len(), r.turns.len());
    }

    // The run's totals are the records' totals.
    let mut recomputed = RunStats::default();
    for r in &records {
        recomputed.add(r);
    }
    assert_eq!(recomputed, summary.stats, "summary = records");
    assert_eq!(summary.stats.count(OutcomeKind::Error), errored.len());
    assert_eq!(summary.stats.episodes(), records.len());

    // Every kind of fault was injected, retried, and some beat the retries.
    let stats = &server.stats;
    let injected = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    for (what, n) in [
        ("500", injected(&stats.errors)),
        ("429", injected(&stats.rate_limited)),
        ("hang", injected(&stats.hangs)),
        ("unreadable", injected(&stats.malformed)),
        ("garbage", injected(&stats.garbage)),
    ] {
        assert!(n > 0, "no {what} injected");
    }
    let retries: u64 = records
        .iter()
        .flat_map(|r| &r.timing.call_retries)
        .map(|&n| u64::from(n))
        .sum();
    assert!(retries > 0, "transient failures were retried");
    let format_errors = records
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| t.parsed.error.as_ref().map(|e| e.kind) == Some(ErrorKind::Format))
        .count();
    assert!(format_errors > 0, "garbage read as format errors");
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &errored {
        let detail = r.outcome.outcome.detail.as_deref().unwrap_or("");
        *kinds
            .entry(failure_kind(detail).unwrap_or("?"))
            .or_default() += 1;
    }
    eprintln!(
        "{name}: {} episodes ({completed} completed, {} errored: {kinds:?}), {} requests, {retries} retries",
        records.len(),
        errored.len(),
        injected(&stats.requests)
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_mixed_at_1024_in_flight_loses_and_duplicates_nothing() {
    // 5 families × 52 scenarios × groups of 8 = 2,080 episodes, two waves of 1024.
    let scale = Scale {
        per_family: 52,
        group: 8,
        concurrency: 1024,
        both: false,
        timeout_s: 1.5,
    };
    faulty_run("ci", scale).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "soak: about a minute in release; cargo test --release --test integration -- --ignored faults::"]
async fn faults_soak() {
    // (4 × 400 + 109 Job Interview) × 8 = 13,672 episodes, both seats on the faulty endpoint,
    // 4096 in flight; a timeout long enough that a saturated machine is not itself a fault.
    let scale = Scale {
        per_family: 400,
        group: 8,
        concurrency: 4096,
        both: true,
        timeout_s: 8.0,
    };
    faulty_run("soak", scale).await;
}
