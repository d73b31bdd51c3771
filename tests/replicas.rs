//! Many replicas per player, over real HTTP against several mock endpoints on 127.0.0.1: sticky
//! against least-loaded routing on mocks that model a prefix cache, balance, the per-replica
//! cap, a replica that goes down and comes back, and every replica down.

use crate::common;

use common::{all_scenario_files, out_file, read_log, run_to_end};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use dealgym::agents::PlayerConfig;
use dealgym::game::{OutcomeKind, Seat};
use dealgym::llm::{EndpointSettings, PoolReport, Routing};
use dealgym::record::EpisodeRecord;
use dealgym::run::{build_kit, load_all, plan, play, RunOptions, RunSummary};
use dealgym_mock::{MockConfig, MockServer};

async fn mocks(n: usize, config: MockConfig) -> Vec<MockServer> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(
            MockServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config.clone())
                .await
                .unwrap(),
        );
    }
    out
}

fn cache_mock(latency_ms: u64) -> MockConfig {
    MockConfig {
        latency_ms,
        prefix_cache_tokens: 1 << 20,
        ..MockConfig::default()
    }
}

/// Prompt tokens of the learner's first call per episode, from the records' usage (a seat's
/// first prompt has nothing before it to reuse).
fn first_call_prompt_tokens(records: &[EpisodeRecord]) -> u64 {
    records
        .iter()
        .filter_map(|r| r.turns.iter().find(|t| t.seat == Seat::Learner))
        .filter_map(|t| t.call.as_ref())
        .filter_map(|call| call.usage.map(|u| u.prompt_tokens))
        .sum()
}

/// A player over every mock, with quick retries and health probes.
fn pool_player(mocks: &[MockServer], routing: Routing) -> PlayerConfig {
    PlayerConfig {
        endpoint: EndpointSettings {
            model: "mock-model".into(),
            endpoints: mocks.iter().map(MockServer::base_url).collect(),
            routing,
            timeout_s: 2.0,
            retries: 4,
            backoff_s: 0.02,
            backoff_max_s: 0.1,
            health_interval_s: 0.05,
            eject_after: 2,
            ..EndpointSettings::default()
        },
        persona: None,
        constrain: Default::default(),
        planner: None,
        narrated: None,
    }
}

fn options(player: PlayerConfig, out: PathBuf, limit: usize, group_size: u32) -> RunOptions {
    let mut o = RunOptions::new(all_scenario_files(), "pool", "rule:linear", out);
    o.players = BTreeMap::from([("pool".to_string(), player)]);
    o.limit = Some(limit);
    o.group_size = group_size;
    o.concurrency = 9;
    o.progress = false;
    o.seed = 7;
    o
}

fn learner_pool(summary: &RunSummary) -> &PoolReport {
    let seat = summary
        .replicas
        .iter()
        .find(|r| r.seat == Seat::Learner)
        .expect("the learner has replicas");
    &seat.pool
}

/// The replicas that served each learner seat, per episode, from the records' timing.
fn learner_replicas(records: &[EpisodeRecord]) -> HashMap<String, Vec<u32>> {
    records
        .iter()
        .map(|r| {
            assert_eq!(
                r.timing.turn_replica.len(),
                r.turns.len(),
                "{}",
                r.episode_id
            );
            let served: Vec<u32> = r
                .turns
                .iter()
                .zip(&r.timing.turn_replica)
                .filter(|(t, _)| t.seat == Seat::Learner)
                .map(|(_, replica)| replica.expect("a learner turn names its replica"))
                .collect();
            (r.episode_id.clone(), served)
        })
        .collect()
}

/// Cached share of the learner's prompt tokens from the mocks' own counts.
fn mock_share(mocks: &[MockServer]) -> f64 {
    let prompt: u64 = mocks
        .iter()
        .map(|m| m.stats.prompt_tokens.load(Ordering::SeqCst))
        .sum();
    let cached: u64 = mocks
        .iter()
        .map(|m| m.stats.cached_tokens.load(Ordering::SeqCst))
        .sum();
    cached as f64 / prompt.max(1) as f64
}

#[tokio::test]
async fn sticky_routing_keeps_prefix_caches_warm_where_least_loaded_does_not() {
    let mut shares = BTreeMap::new();
    for routing in [Routing::Sticky, Routing::LeastLoaded] {
        // Latency that varies (jitter) and grows with the prompt tokens the cache misses.
        let config = MockConfig {
            jitter_ms: 20,
            prefill_us_per_token: 50,
            ..cache_mock(2)
        };
        let servers = mocks(3, config).await;
        let out = out_file(&format!("cache-{routing:?}"));
        let mut o = options(pool_player(&servers, routing), out.clone(), 5, 1);
        o.concurrency = 24;
        let summary = run_to_end(&o).await;
        let records = read_log(&out);
        assert_eq!(records.len(), summary.planned);
        assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
        let pool = learner_pool(&summary);
        assert_eq!(pool.routing, routing);
        let share = pool.cached_share().expect("the mocks report cached tokens");
        // The summary's share is the mocks' own.
        assert!((share - mock_share(&servers)).abs() < 1e-9);
        let served = learner_replicas(&records);
        let one_replica = served
            .values()
            .filter(|r| r.iter().collect::<BTreeSet<_>>().len() == 1)
            .count();
        if routing == Routing::Sticky {
            // Every episode-seat stayed on one replica.
            assert_eq!(one_replica, served.len(), "{served:?}");
        } else {
            // Least-loaded does not keep a seat's replica: some seats moved between turns.
            assert!(one_replica < served.len(), "{served:?}");
            eprintln!(
                "least-loaded: {one_replica} of {} seats stayed on one replica",
                served.len()
            );
        }
        let prompt: u64 = pool.replicas.iter().map(|r| r.prompt_tokens).sum();
        let cached: u64 = pool.replicas.iter().map(|r| r.cached_tokens).sum();
        let first = first_call_prompt_tokens(&records);
        let after_first = cached as f64 / (prompt - first).max(1) as f64;
        eprintln!(
            "{routing:?}: cached share {share:.3}, after first calls {after_first:.3}, \
             wall {:.2} s",
            summary.elapsed.as_secs_f64()
        );
        shares.insert(format!("{routing:?}"), after_first);
        for s in servers {
            s.stop();
        }
    }
    let (sticky, least) = (shares["Sticky"], shares["LeastLoaded"]);
    // Sticky: every call after a seat's first reuses its whole earlier prompt (but the last
    // part block); least-loaded loses it wherever a seat moved. (Least-loaded keeps many seats
    // by accident: a seat's own answer frees a slot on its replica just before it calls again.)
    assert!(sticky >= 0.85, "sticky share after first calls {sticky:.3}");
    assert!(
        sticky - least >= 0.03,
        "sticky {sticky:.3} vs least-loaded {least:.3}"
    );
}

#[tokio::test]
async fn new_seats_go_to_the_least_loaded_replica_so_requests_balance() {
    let servers = mocks(3, cache_mock(3)).await;
    let out = out_file("balance");
    let summary = run_to_end(&options(pool_player(&servers, Routing::Sticky), out, 3, 2)).await;
    let pool = learner_pool(&summary);
    let requests: Vec<u64> = pool.replicas.iter().map(|r| r.requests).collect();
    let seats: Vec<u64> = pool.replicas.iter().map(|r| r.seats).collect();
    let mean = requests.iter().sum::<u64>() as f64 / 3.0;
    eprintln!("requests per replica {requests:?}, seats {seats:?}");
    for (i, r) in requests.iter().enumerate() {
        assert!(
            (*r as f64 - mean).abs() <= 0.35 * mean,
            "replica {i}: {r} requests, mean {mean:.1}: {requests:?}"
        );
        // The mocks saw what the pool counted.
        assert_eq!(servers[i].stats.requests.load(Ordering::SeqCst), *r);
    }
    let (lo, hi) = (seats.iter().min().unwrap(), seats.iter().max().unwrap());
    assert!(hi - lo <= 3, "seats per replica {seats:?}");
    assert_eq!(seats.iter().sum::<u64>() as usize, summary.written);
}

#[tokio::test]
async fn the_per_replica_cap_on_requests_in_flight_holds() {
    let servers = mocks(3, cache_mock(15)).await;
    let mut player = pool_player(&servers, Routing::Sticky);
    player.endpoint.max_in_flight_per_replica = 2;
    let out = out_file("cap");
    let mut o = options(player, out, 3, 2);
    o.concurrency = 16;
    let summary = run_to_end(&o).await;
    assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
    let peaks: Vec<u64> = servers
        .iter()
        .map(|m| m.stats.peak_in_flight.load(Ordering::SeqCst))
        .collect();
    assert!(peaks.iter().all(|p| *p <= 2), "mock peaks {peaks:?}");
    // 16 episodes at once against 3 × 2 slots: the cap was reached, so it did bind.
    assert!(peaks.contains(&2), "mock peaks {peaks:?}");
    let pool_peaks: Vec<u64> = learner_pool(&summary)
        .replicas
        .iter()
        .map(|r| r.peak_in_flight)
        .collect();
    assert!(pool_peaks.iter().all(|p| *p <= 2), "{pool_peaks:?}");
}

#[tokio::test]
async fn a_replica_down_mid_run_loses_nothing_and_comes_back() {
    let servers = Arc::new(mocks(3, cache_mock(10)).await);
    let out = out_file("down");
    let mut player = pool_player(&servers, Routing::Sticky);
    player.endpoint.health_interval_s = 0.02;
    let o = options(player, out.clone(), 6, 2);
    let running = tokio::spawn(async move { run_to_end(&o).await });
    // Take replica 1 down once it has served a few calls; bring it back once the others have
    // served 20 more. Each wait gives up after 30 s, so a stuck run fails instead of hanging.
    let chaos = {
        let servers = servers.clone();
        tokio::spawn(async move {
            let requests = |i: usize| servers[i].stats.requests.load(Ordering::SeqCst);
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while requests(1) < 10 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "replica 1 got no calls"
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            servers[1].control.take_down();
            let at_down = requests(0) + requests(2);
            while requests(0) + requests(2) < at_down + 20 {
                assert!(std::time::Instant::now() < deadline, "the run stalled");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            servers[1].control.bring_up();
            requests(1)
        })
    };
    let summary = running.await.unwrap();
    let requests_at_recovery = chaos.await.unwrap();
    let records = read_log(&out);
    assert_eq!(records.len(), summary.planned);
    assert_eq!(summary.written, summary.planned);
    assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
    let victim = &learner_pool(&summary).replicas[1];
    assert!(victim.ejections >= 1, "{victim:?}");
    assert!(victim.readmissions >= 1, "{victim:?}");
    assert!(victim.error_count() >= 1, "{victim:?}");
    assert!(
        servers[1].stats.requests.load(Ordering::SeqCst) > requests_at_recovery,
        "no request reached the replica after it came back"
    );
    assert!(servers[1].stats.health_checks.load(Ordering::SeqCst) >= 2);
    // Seats that were on the victim moved: some learner seat was served by two replicas.
    let moved = learner_replicas(&records)
        .values()
        .filter(|r| r.iter().collect::<BTreeSet<_>>().len() > 1)
        .count();
    assert!(moved >= 1);
}

#[tokio::test]
async fn with_every_replica_down_episodes_end_as_backend_errors_and_none_is_lost() {
    let servers = mocks(3, cache_mock(0)).await;
    for s in &servers {
        s.control.take_down();
    }
    let mut player = pool_player(&servers, Routing::Sticky);
    player.endpoint.retries = 2;
    let out = out_file("all-down");
    let summary = run_to_end(&options(player, out.clone(), 1, 1)).await;
    let records = read_log(&out);
    assert_eq!(records.len(), summary.planned);
    assert!(records.len() >= 5);
    assert!(records
        .iter()
        .all(|r| r.outcome.outcome.kind == OutcomeKind::Error));
    let pool = learner_pool(&summary);
    assert!(pool
        .replicas
        .iter()
        .all(|r| r.ejections == 1 && r.probes >= 1));
    // No chat request got through to a replica that was down.
    assert!(servers
        .iter()
        .all(|s| s.stats.requests.load(Ordering::SeqCst) == 0));
}

#[tokio::test]
async fn bindings_are_released_when_episodes_end() {
    let servers = mocks(2, cache_mock(0)).await;
    let o = options(
        pool_player(&servers, Routing::Sticky),
        out_file("release"),
        1,
        2,
    );
    let scenarios = load_all(&o.scenarios, &o.selection()).unwrap();
    let kit = Arc::new(build_kit(&o, scenarios.iter().map(|s| s.id.as_str())).unwrap());
    let mut played = 0;
    for planned in plan(&scenarios, o.seed, o.group_size, Default::default()) {
        let record = play(kit.clone(), planned).await.unwrap();
        assert_ne!(record.outcome.outcome.kind, OutcomeKind::Error);
        played += 1;
    }
    let dealgym::run::SeatPlayer::Local(learner) = &kit.players[Seat::Learner] else {
        panic!("the learner is played in process");
    };
    let pool = learner.replica_pool().expect("the learner has replicas");
    assert_eq!(pool.bound_seats(), 0);
    let seats: u64 = pool.report().replicas.iter().map(|r| r.seats).sum();
    assert_eq!(seats, played);
}

#[tokio::test]
async fn single_endpoint_records_carry_no_replica_fields_and_the_summary_json_has_replica_rows() {
    let servers = mocks(2, MockConfig::default()).await;
    // One endpoint: the plain client, records as they always were.
    let out = out_file("single");
    let mut o = options(pool_player(&servers, Routing::Sticky), out.clone(), 1, 1);
    o.players.clear();
    o.learner = format!("openai:mock-model@{}", servers[0].base_url());
    let summary = run_to_end(&o).await;
    assert!(summary.replicas.is_empty());
    assert!(summary.replica_table().is_empty());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("turn_replica"));
    assert!(!text.contains("prompt_tokens_details"));

    // Two endpoints in a spec: a pool, with one summary line per replica.
    let out = out_file("spec-pool");
    o.out = out.clone();
    o.learner = format!(
        "openai:mock-model@{},{}",
        servers[0].base_url(),
        servers[1].base_url()
    );
    let summary = run_to_end(&o).await;
    assert!(summary.replica_table().contains("all (sticky routing)"));
    let json = out.with_file_name("summary.jsonl");
    summary.write_json(&json).unwrap();
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|row: &serde_json::Value| row.get("replica").is_some())
        .collect();
    assert_eq!(rows.len(), 2);
    let requests: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    let served: u64 = servers
        .iter()
        .map(|s| s.stats.requests.load(Ordering::SeqCst))
        .sum::<u64>();
    // The single-endpoint run's calls went to server 0 too.
    assert!(requests > 0 && requests < served);
    assert!(rows
        .iter()
        .all(|r| r["seat"] == "learner" && r["routing"] == "sticky"));
    // The mock without a prefix cache does not report cached tokens.
    assert!(rows.iter().all(|r| r["cached_share"].is_null()));
}
