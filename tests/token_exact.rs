//! Token-exact mode against the mock's token routes (a byte-level tokenizer and a ChatML-like
//! template): each seat's recorded sequence — its prompt suffixes and sampled ids, in order — is
//! exactly the mock's own tokenization of the final conversation when the template is
//! append-only, and drift is reported when it is not.

use crate::common;

use common::all_scenario_files;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use dealgym::agents::PlayerConfig;
use dealgym::export::{ExportOptions, Format, Seats};
use dealgym::game::{OutcomeKind, Prompts, Seat};
use dealgym::llm::{EndpointSettings, TokenApi, TokenMode};
use dealgym::record::{EpisodeRecord, RecordReader};
use dealgym::run::{run, Cut, PrefixOptions, RunOptions, RunSummary, Targets};
use dealgym::scenario::{load_scenarios, Family, LoadOptions, Scenario};
use dealgym::vocab::MessageRole;
use dealgym_mock::{render, tokenize, MockConfig, MockServer, MockTemplate};

const IM_END: u32 = 257;

fn exact_player(mock: &MockServer, api: TokenApi) -> PlayerConfig {
    PlayerConfig {
        endpoint: EndpointSettings {
            base_url: mock.base_url(),
            model: "mock".into(),
            max_tokens: Some(512),
            timeout_s: 10.0,
            tokens: TokenMode::Exact,
            token_api: api,
            ..EndpointSettings::default()
        },
        persona: None,
        constrain: Default::default(),
        planner: None,
        narrated: None,
    }
}

async fn exact_run(
    template: MockTemplate,
    api: TokenApi,
    seed: u64,
    name: &str,
) -> (Vec<EpisodeRecord>, RunSummary) {
    exact_run_with(template, api, seed, name, |_| {}).await
}

/// [`exact_run`] with the players' settings changed by `edit`.
async fn exact_run_with(
    template: MockTemplate,
    api: TokenApi,
    seed: u64,
    name: &str,
    edit: impl FnOnce(&mut PlayerConfig),
) -> (Vec<EpisodeRecord>, RunSummary) {
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            template,
            seed,
            ..MockConfig::default()
        },
    )
    .await
    .expect("mock");
    let dir = std::env::temp_dir().join(format!("dealgym-exact-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("episodes.jsonl");
    let mut o = RunOptions::new(all_scenario_files(), "smol", "smol", out.clone());
    let mut player = exact_player(&mock, api);
    edit(&mut player);
    o.players = BTreeMap::from([("smol".to_string(), player)]);
    o.limit = Some(2);
    o.group_size = 2;
    o.seed = seed;
    o.concurrency = 8;
    o.progress = false;
    let summary = run(&o, std::future::pending()).await.expect("run");
    mock.stop();
    let records = RecordReader::open(&out)
        .expect("records")
        .map(|r| r.expect("record"))
        .collect();
    (records, summary)
}

fn scenario(r: &EpisodeRecord) -> Arc<Scenario> {
    let file = &all_scenario_files()[Family::ALL.iter().position(|f| *f == r.family).unwrap()];
    let all = load_scenarios(file, LoadOptions::default())
        .unwrap()
        .scenarios;
    Arc::new(all.into_iter().find(|s| s.id == r.scenario_id).unwrap())
}

/// Each seat's recorded sequence, and the mock's tokenization of its conversation up to and
/// including its last own message.
fn sequences(r: &EpisodeRecord, template: MockTemplate) -> Vec<(Seat, Vec<u32>, Vec<u32>)> {
    let episode = r.replay(&scenario(r), &Prompts::builtin()).expect("replay");
    Seat::BOTH
        .into_iter()
        .filter(|seat| {
            (0..r.turns.len()).any(|i| r.turns[i].seat == *seat && !r.setup.rules.is_logged_turn(i))
        })
        .map(|seat| {
            let mut exact = Vec::new();
            // A logged prefix's turns are context, not calls: they carry no ids.
            let calls = r
                .turns
                .iter()
                .enumerate()
                .filter(|(i, t)| t.seat == seat && !r.setup.rules.is_logged_turn(*i));
            for (_, t) in calls {
                let tokens = t
                    .tokens
                    .as_ref()
                    .expect("every call of an exact seat has tokens");
                assert_eq!(tokens.logprobs.len(), tokens.completion_ids.len());
                exact.extend_from_slice(&tokens.prompt_ids);
                exact.extend_from_slice(&tokens.completion_ids);
            }
            let view = episode.view(seat);
            let last_own = view
                .iter()
                .rposition(|m| m.role == MessageRole::Assistant)
                .expect("the seat spoke");
            let rendered = tokenize(&render(&view[..=last_own], template, false));
            (seat, exact, rendered)
        })
        .collect()
}

/// One random run: every seat's recorded sequence is the mock's tokenization of its
/// conversation up to its last own message (plus the end-of-turn token vLLM returns).
fn check_append_only(api: TokenApi, seed: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let name = format!("{api:?}-{seed}");
    let (records, summary) = runtime.block_on(exact_run(MockTemplate::Chatml, api, seed, &name));
    assert_eq!(records.len(), crate::common::FAMILIES.len() * 2 * 2);
    assert!(summary.drift_warning().is_none());
    for r in &records {
        for (seat, exact, rendered) in sequences(r, MockTemplate::Chatml) {
            let last = r.turns.iter().rfind(|t| t.seat == seat).unwrap();
            let tokens = last.tokens.as_ref().unwrap();
            // vLLM's answer carries the end-of-turn token it sampled; llama.cpp's does not.
            let expected = match (api, tokens.finish_reason.as_deref()) {
                (TokenApi::Vllm, Some("stop")) => [rendered.clone(), vec![IM_END]].concat(),
                _ => rendered.clone(),
            };
            assert_eq!(exact, expected, "{} {seat}", r.episode_id);
            assert!(r
                .turns
                .iter()
                .all(|t| t.tokens.as_ref().unwrap().drift.is_none()));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4, ..Default::default() })]
    #[test]
    fn an_append_only_template_gives_exactly_the_tokenized_conversation(
        seed in proptest::prelude::any::<u64>(),
        vllm in proptest::prelude::any::<bool>(),
    ) {
        check_append_only(if vllm { TokenApi::Vllm } else { TokenApi::LlamaCpp }, seed);
    }
}

#[test]
fn both_token_apis_give_the_tokenized_conversation() {
    check_append_only(TokenApi::LlamaCpp, 1);
    check_append_only(TokenApi::Vllm, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_drops_earlier_thoughts_is_reported_as_drift() {
    let (records, summary) = exact_run(
        MockTemplate::DropsEarlierThoughts,
        TokenApi::LlamaCpp,
        4,
        "drift",
    )
    .await;
    let drifted: Vec<_> = records
        .iter()
        .flat_map(|r| r.turns.iter())
        .filter(|t| t.tokens.as_ref().is_some_and(|k| k.drift.is_some()))
        .collect();
    assert!(
        !drifted.is_empty(),
        "some seat made a third call and saw its thought dropped"
    );
    for r in &records {
        // The exact ids are still the sequence sent: each call's prompt extends the last.
        for (_, exact, rendered) in sequences(r, MockTemplate::DropsEarlierThoughts) {
            let drift = r
                .turns
                .iter()
                .any(|t| t.tokens.as_ref().unwrap().drift.is_some());
            if drift {
                assert_ne!(exact, rendered, "{}", r.episode_id);
            }
        }
        // A seat's first two calls cannot drift (nothing earlier of its own to drop).
        for seat in Seat::BOTH {
            let mine: Vec<_> = r.turns.iter().filter(|t| t.seat == seat).collect();
            assert!(mine
                .iter()
                .take(2)
                .all(|t| t.tokens.as_ref().unwrap().drift.is_none()));
        }
        let drift_calls = r.outcome.metrics.seats.learner.token_drift
            + r.outcome.metrics.seats.opponent.token_drift;
        let counted = r
            .turns
            .iter()
            .filter(|t| t.tokens.as_ref().unwrap().drift.is_some())
            .count() as u32;
        assert_eq!(drift_calls, counted);
    }
    assert!(summary
        .drift_warning()
        .expect("said in the summary")
        .contains("drift"));
}

/// A constrained completion the token limit cut is not a turn of any grammar: its check is
/// marked `cut` and judges it as the beginning of a turn (the mock's cut turns are beginnings of
/// well-formed ones), so the server is not blamed for ignoring the constraint; the turn is
/// still malformed. The real-model stage reads `cut` to tell the two apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constrained_completion_cut_at_the_token_limit_is_marked_cut_not_a_violation() {
    let (records, summary) =
        exact_run_with(MockTemplate::default(), TokenApi::LlamaCpp, 5, "cut", |p| {
            p.endpoint.max_tokens = Some(16);
            p.constrain = dealgym::agents::Constrain::Gbnf;
        })
        .await;
    let mut cut = 0;
    for r in &records {
        for t in &r.turns {
            let check = t.constraint.expect("every constrained call is checked");
            let length = t.call.as_ref().and_then(|c| c.finish_reason.as_deref()) == Some("length");
            assert_eq!(check.cut, length, "{}", t.raw);
            if check.cut {
                assert!(
                    check.admitted,
                    "a beginning of a well-formed turn: {:?}",
                    t.raw
                );
                assert!(!t.parsed.format_ok, "{:?}", t.raw);
                cut += 1;
            }
        }
        for seat in Seat::BOTH {
            assert_eq!(r.outcome.metrics.seats[seat].constraint_violations, 0);
        }
    }
    assert!(cut > 0, "16 tokens cut every turn of the mock");
    assert!(summary.constraint_warning().is_none());
}

/// Token-exact players continue a logged prefix (`run --prefixes`): the logged turns have no
/// ids, so each seat's first call renders its whole view, prefix included, and its sequence is
/// still exactly the tokenized conversation; the verl export starts at that first call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_players_continue_a_logged_prefix_and_export_verl() {
    let dir = std::env::temp_dir().join(format!("dealgym-exact-{}-prefix", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let casino = all_scenario_files()[2].clone();
    // The source: a text-mode run of rule players.
    let mut source = RunOptions::new(
        vec![casino.clone()],
        "rule:linear",
        "rule:boulware",
        dir.join("source.jsonl"),
    );
    source.limit = Some(4);
    source.progress = false;
    run(&source, std::future::pending())
        .await
        .expect("source run");
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            template: MockTemplate::Chatml,
            seed: 9,
            ..MockConfig::default()
        },
    )
    .await
    .expect("mock");
    let mut o = RunOptions::new(vec![casino], "smol", "smol", dir.join("prefix.jsonl"));
    o.players = BTreeMap::from([("smol".to_string(), exact_player(&mock, TokenApi::Vllm))]);
    o.group_size = 2;
    o.concurrency = 8;
    o.progress = false;
    o.prefixes = Some(PrefixOptions {
        files: vec![source.out.clone()],
        cut: Cut::split(0.5).unwrap(),
        targets: Targets::First,
        continue_turns: Some(3),
    });
    let summary = run(&o, std::future::pending()).await.expect("prefix run");
    mock.stop();
    assert_eq!(summary.written, 4 * 2);
    assert_eq!(summary.stats.count(OutcomeKind::Error), 0);
    let records: Vec<EpisodeRecord> = RecordReader::open(&o.out)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    for r in &records {
        let n = r.parent.as_ref().unwrap().prefix_turns;
        assert!(r.turns[..n].iter().all(|t| t.tokens.is_none()));
        assert!(r.turns[n..].iter().all(|t| t.tokens.is_some()));
        for (seat, exact, rendered) in sequences(r, MockTemplate::Chatml) {
            let last = r.turns.iter().rfind(|t| t.seat == seat).unwrap();
            let expected = match last.tokens.as_ref().unwrap().finish_reason.as_deref() {
                Some("stop") => [rendered.clone(), vec![IM_END]].concat(),
                _ => rendered,
            };
            assert_eq!(exact, expected, "{} {seat}", r.episode_id);
        }
    }
    let mut verl = Vec::new();
    let mut export = ExportOptions::new(vec![o.out.clone()], Format::Verl);
    export.seats = Seats::Learner;
    let exported = dealgym::export::export(&export, &mut verl).expect("export");
    assert_eq!(exported.no_tokens, 0);
    assert_eq!(exported.written, records.len(), "every learner made a call");
    for (line, r) in String::from_utf8(verl).unwrap().lines().zip(&records) {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        let n = r.parent.as_ref().unwrap().prefix_turns;
        // The learner's first call (turn n) holds the prefix in its prompt.
        let first = r.turns[n].tokens.as_ref().unwrap();
        let prompt: Vec<u32> = serde_json::from_value(line["prompt_ids"].clone()).unwrap();
        assert_eq!(prompt, first.prompt_ids, "{}", r.episode_id);
        let text = String::from_utf8_lossy(
            &prompt
                .iter()
                .filter(|id| **id < 256)
                .map(|id| *id as u8)
                .collect::<Vec<_>>(),
        )
        .to_string();
        let logged_talk = r.turns[n - 1].parsed.talk.clone().unwrap_or_default();
        assert!(text.contains(&logged_talk), "{}: {text}", r.episode_id);
    }
}
