//! What a call costs the model, from a real run: prompt tokens evaluated against the minimum
//! (the tokens new since the seat's last call), over mocks that model a prefix cache
//! (`record::PromptCosts`, shown by `dealgym report` as tables/prompt_cost.csv).

use crate::common;

use common::{all_scenario_files, dealgym_cli, out_file, read_log, run_to_end, succeeded};

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;

use dealgym::agents::PlayerConfig;
use dealgym::game::{OutcomeKind, Seat};
use dealgym::llm::{EndpointSettings, Routing, TokenApi, TokenMode};
use dealgym::record::{seat_calls, PromptCosts};
use dealgym::run::RunOptions;
use dealgym_mock::{MockConfig, MockServer};

/// The mock's cache block: a call re-reads at most this many tokens less one of what it had.
const BLOCK_TOKENS: u64 = 16;

async fn cache_mocks(n: usize) -> Vec<MockServer> {
    let mut out = Vec::new();
    for _ in 0..n {
        let config = MockConfig {
            latency_ms: 2,
            jitter_ms: 5,
            prefix_cache_tokens: 1 << 22,
            ..MockConfig::default()
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        out.push(MockServer::start(addr, config).await.unwrap());
    }
    out
}

fn pool(mocks: &[MockServer], routing: Routing) -> PlayerConfig {
    PlayerConfig {
        endpoint: EndpointSettings {
            model: "mock".into(),
            endpoints: mocks.iter().map(MockServer::base_url).collect(),
            routing,
            timeout_s: 10.0,
            ..EndpointSettings::default()
        },
        persona: None,
        constrain: Default::default(),
        planner: None,
        narrated: None,
    }
}

fn self_play(player: PlayerConfig, name: &str, limit: usize) -> RunOptions {
    let mut o = RunOptions::new(all_scenario_files(), "pool", "pool", out_file(name));
    o.players = BTreeMap::from([("pool".to_string(), player)]);
    o.limit = Some(limit);
    o.concurrency = 12;
    o.progress = false;
    o.seed = 3;
    o
}

/// Both seats on three mocks with sticky routing: every call after a seat's first re-reads
/// only the new suffix and the part block before it (the mock caches whole 16-token blocks),
/// so per family the figure is at most 1.1× the minimum. The figure is deterministic: a seat's
/// whole conversation is on its replica, whichever that is. `dealgym report` shows the same
/// figures, from the same records.
#[tokio::test]
async fn sticky_routing_on_the_mock_reads_the_new_suffix_and_the_report_shows_it() {
    let mocks = cache_mocks(3).await;
    let options = self_play(pool(&mocks, Routing::Sticky), "prompt-cost-sticky", 3);
    let summary = run_to_end(&options).await;
    assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
    let records = read_log(&options.out);
    assert_eq!(records.len(), summary.planned);

    let mut later_calls = 0;
    for r in &records {
        for seat in Seat::BOTH {
            for call in seat_calls(r.turns.iter().filter(|t| t.seat == seat))
                .iter()
                .filter(|c| !c.first)
            {
                let evaluated = call.evaluated().expect("the mock reports its cache");
                assert!(
                    call.minimum <= evaluated && evaluated < call.minimum + BLOCK_TOKENS,
                    "{} {seat:?}: {call:?}",
                    r.episode_id
                );
                later_calls += 1;
            }
        }
    }
    assert!(later_calls > 0);

    let mut costs = PromptCosts::default();
    records.iter().for_each(|r| costs.add(r));
    let families = costs.by_family();
    assert!(families.len() >= 5, "{families:?}");
    for (family, cost) in &families {
        let later = cost.later_ratio().expect("calls after the first");
        eprintln!(
            "{}: evaluated/minimum {:.3}, after first calls {later:.3}",
            family.name(),
            cost.ratio().unwrap()
        );
        assert!(
            (1.0..=1.1).contains(&later),
            "{}: {later:.3}",
            family.name()
        );
        // A first call reads at most its whole prompt, its minimum: the figure over every call
        // is within the target too, whatever the first calls found cached.
        assert!(cost.ratio().unwrap() <= 1.1, "{}: {cost:?}", family.name());
        assert_eq!(cost.calls, cost.reported);
        assert_eq!(cost.prompt, cost.cached + cost.evaluated);
    }
    // The mocks' own counts are the records'.
    let cached: u64 = mocks
        .iter()
        .map(|m| m.stats.cached_tokens.load(Ordering::SeqCst))
        .sum();
    assert_eq!(cached, families.values().map(|c| c.cached).sum::<u64>());

    let report = out_file("prompt-cost-sticky-report");
    succeeded(dealgym_cli([
        "report".as_ref(),
        options.out.as_os_str(),
        "--out".as_ref(),
        report.as_os_str(),
        "--quiet".as_ref(),
    ]));
    let csv = std::fs::read_to_string(report.join("tables/prompt_cost.csv")).unwrap();
    for (family, cost) in &families {
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{},", family.name())))
            .unwrap_or_else(|| panic!("{csv}"));
        assert!(
            row.starts_with(&format!(
                "{},{},{},{},{},{},{},",
                family.name(),
                cost.calls,
                cost.reported,
                cost.prompt,
                cost.cached,
                cost.evaluated,
                cost.minimum
            )),
            "{row}"
        );
    }
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("What the model read"), "{md}");
    for m in mocks {
        m.stop();
    }
}

/// A token-exact seat over llama.cpp's routes: what the server took from its cache is read
/// from `timings.cache_n` (llama.cpp's `tokens_cached` is the slot's length, reply included),
/// so the pool's cached count is the mocks' own and never exceeds the prompt.
#[tokio::test]
async fn a_token_exact_seat_s_cached_tokens_are_llama_cpp_s_cache_n() {
    let mocks = cache_mocks(2).await;
    let mut player = pool(&mocks, Routing::Sticky);
    player.endpoint.tokens = TokenMode::Exact;
    player.endpoint.token_api = TokenApi::LlamaCpp;
    player.endpoint.max_tokens = Some(512);
    let mut options = self_play(player, "prompt-cost-exact", 1);
    options.opponent = "rule:linear".into();
    let summary = run_to_end(&options).await;
    assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
    let learner = summary
        .replicas
        .iter()
        .find(|r| r.seat == Seat::Learner)
        .expect("the learner's replicas");
    let cached: u64 = learner.pool.replicas.iter().map(|r| r.cached_tokens).sum();
    let prompt: u64 = learner.pool.replicas.iter().map(|r| r.prompt_tokens).sum();
    let mocks_cached: u64 = mocks
        .iter()
        .map(|m| m.stats.cached_tokens.load(Ordering::SeqCst))
        .sum();
    assert!(cached > 0);
    assert_eq!(cached, mocks_cached);
    assert!(cached < prompt, "{cached} of {prompt}");
    for m in mocks {
        m.stop();
    }
}
