//! `dealgym serve`'s n-party tables over real sockets (`/v1/tables`, a session per seat): a
//! whole six-seat table played seat by seat over HTTP, each seat seeing only its own
//! confidential block; out-of-turn steps refused with 409 naming the seat to move; unknown
//! offers and options played through the malformed-turn policy; scripted seats in process;
//! the ended table's record in the server's log, replaying exactly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::temp_dir;
use dealgym::record::TableRecord;
use dealgym::scenario::{load_table_scenarios, LoadOptions};
use dealgym::serve::{ServeOptions, Server};

const FIXTURE: &str = "tests/fixtures/table/six_party.jsonl";
const SCENARIO: &str = "deliberation:test:cooperative";
/// A deal every party of the fixture scores at or above its minimum on.
const GOOD_DEAL: &str = "A1 B1 C2 D1 E3";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)
}

async fn server(name: &str, tune: impl FnOnce(&mut ServeOptions)) -> (Server, PathBuf) {
    let dir = temp_dir(name);
    let log = dir.join("serve.jsonl");
    let ahp = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/ahp.jsonl");
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![ahp, fixture()],
        log.clone(),
    );
    tune(&mut options);
    (Server::start(options).await.unwrap(), log)
}

/// The seat tokens of the tables these tests made, by (server, table id, role): a seat URL is
/// called with its seat's token, as the player given that seat would.
type Tokens = Vec<(String, String, String, String)>;
static TOKENS: std::sync::Mutex<Tokens> = std::sync::Mutex::new(Vec::new());

/// The server, table id and role a seat URL names (`…/v1/tables/{id}/seats/{role}[/step]`).
fn seat_of(url: &str) -> Option<(String, String, String)> {
    let (server, rest) = url.split_once("/v1/tables/")?;
    let mut parts = rest.split('/');
    let id = parts.next()?.to_string();
    (parts.next()? == "seats").then_some(())?;
    Some((server.to_string(), id, parts.next()?.to_string()))
}

async fn call(
    http: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let token = seat_of(&url).and_then(|(server, id, role)| {
        TOKENS
            .lock()
            .unwrap()
            .iter()
            .find(|(s, i, r, _)| *s == server && *i == id && *r == role)
            .map(|(_, _, _, t)| t.clone())
    });
    call_with(http, method, url, body, token.as_deref()).await
}

async fn call_with(
    http: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let server = url.split("/v1/tables").next().unwrap_or("").to_string();
    let (status, answer) = crate::common::call_with(http, method, url, body, token).await;
    if let (Some(id), Some(tokens)) = (
        answer["table_id"].as_str(),
        answer["seat_tokens"].as_object(),
    ) {
        let mut all = TOKENS.lock().unwrap();
        for (role, t) in tokens {
            all.push((
                server.clone(),
                id.to_string(),
                role.clone(),
                t.as_str().unwrap().to_string(),
            ));
        }
    }
    (status, answer)
}

fn turn(action: &str, role: &str) -> Value {
    json!({"message": format!("Thought: SECRET-THOUGHT-OF-{role}\nTalk: Let us see.\nAction: {action}")})
}

/// The first to move proposes GOOD_DEAL; its proposer then talks, everyone else accepts #1.
fn policy(view: &Value) -> String {
    let role = view["role"].as_str().unwrap();
    match view["state"]["offers"].as_array().unwrap().first() {
        None => format!("[SUBMIT_DEAL] {GOOD_DEAL}"),
        Some(offer) if offer["proposer"] == role => "[TALK]".into(),
        Some(_) => "[ACCEPT_DEAL] #1".into(),
    }
}

/// Open a table of seed 9 at `base` whose every seat but `party_2` is scripted.
async fn open_party_2_table(http: &reqwest::Client, base: &str) -> Value {
    let scripted: serde_json::Map<String, Value> = (0..6)
        .filter(|i| *i != 2)
        .map(|i| (format!("party_{i}"), json!("rule:deliberation")))
        .collect();
    let (code, table) = call(
        http,
        "POST",
        base.to_string(),
        Some(json!({"scenario_id": SCENARIO, "seed": 9, "players": scripted})),
    )
    .await;
    assert_eq!(code, 201, "{table}");
    table
}

/// Play `party_2`, the one client seat of table `id` (every other seat scripted), to the end:
/// it accepts the latest offer, or talks while there is none.
async fn play_party_2(http: &reqwest::Client, base: &str, id: &str) {
    for _ in 0..32 {
        let (_, view) = call(http, "GET", format!("{base}/{id}/seats/party_2"), None).await;
        if view["done"] == true {
            return;
        }
        assert_eq!(
            view["your_turn"], true,
            "the scripted seats have moved: {view}"
        );
        let offers = view["state"]["offers"].as_array().unwrap();
        let action = match offers.last() {
            Some(o) => format!("[ACCEPT_DEAL] #{}", o["id"]),
            None => "[TALK]".into(),
        };
        let (code, answer) = call(
            http,
            "POST",
            format!("{base}/{id}/seats/party_2/step"),
            Some(turn(&action, "party_2")),
        )
        .await;
        assert_eq!(code, 200, "{answer}");
    }
    panic!("table {id} did not end in 32 steps of party_2");
}

fn read_log(log: &Path) -> Vec<TableRecord> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_six_seat_table_is_played_seat_by_seat_over_http() {
    let (server, log) = server("serve_tables_whole", |_| {}).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let (code, table) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "seed": 3})),
    )
    .await;
    assert_eq!(code, 201, "{table}");
    let id = table["table_id"].as_str().unwrap().to_string();
    let roles: Vec<String> = serde_json::from_value(table["roles"].clone()).unwrap();
    assert_eq!(roles.len(), 6);
    assert_eq!(table["client_roles"], table["roles"]);
    assert_eq!(table["to_move"], "party_0", "the lead opens");

    let mut steps = 0;
    loop {
        let (_, status) = call(&http, "GET", format!("{base}/{id}"), None).await;
        if status["done"] == true {
            break;
        }
        let mover = status["to_move"].as_str().unwrap().to_string();
        // Every seat sees its own confidential block and nobody else's, nor their thoughts.
        for (i, role) in roles.iter().enumerate() {
            let (code, view) = call(&http, "GET", format!("{base}/{id}/seats/{role}"), None).await;
            assert_eq!(code, 200, "{view}");
            assert_eq!(view["your_turn"], *role == mover);
            let text = view.to_string();
            assert!(text.contains(&format!("SECRET-INSTRUCTIONS-OF-{i}")));
            for (j, other) in roles.iter().enumerate() {
                if j != i {
                    assert!(
                        !text.contains(&format!("SECRET-INSTRUCTIONS-OF-{j}")),
                        "{role} sees {other}'s"
                    );
                    assert!(
                        !text.contains(&format!("SECRET-THOUGHT-OF-{other}")),
                        "{role} sees {other}'s thought"
                    );
                }
            }
        }
        // Another seat stepping now is refused, naming the seat whose turn it is.
        let intruder = roles.iter().find(|r| **r != mover).unwrap();
        let (code, refused) = call(
            &http,
            "POST",
            format!("{base}/{id}/seats/{intruder}/step"),
            Some(turn("[TALK]", intruder)),
        )
        .await;
        assert_eq!(code, 409, "{refused}");
        assert_eq!(refused["error"]["code"], "WRONG_SEAT");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&mover) && message.contains(intruder.as_str()),
            "{message}"
        );

        let (_, view) = call(&http, "GET", format!("{base}/{id}/seats/{mover}"), None).await;
        let (code, answer) = call(
            &http,
            "POST",
            format!("{base}/{id}/seats/{mover}/step"),
            Some(turn(&policy(&view), &mover)),
        )
        .await;
        assert_eq!(code, 200, "{answer}");
        assert_eq!(answer["retry"], false, "{answer}");
        steps += 1;
        assert!(steps < 64);
    }
    let (_, status) = call(&http, "GET", format!("{base}/{id}"), None).await;
    assert_eq!(status["outcome"]["kind"], "deal");
    assert_eq!(status["outcome"]["deal_text"], GOOD_DEAL);
    // The table's public status holds no party's score, ρ, reward or token; each seat reads
    // its own reward in its own view.
    let public = status.to_string();
    for field in ["rho", "scores", "rewards", "seat_tokens", "metrics"] {
        assert!(!public.contains(field), "{field} in {public}");
    }
    for role in &roles {
        let (_, view) = call(&http, "GET", format!("{base}/{id}/seats/{role}"), None).await;
        assert!(view["reward"].as_f64().unwrap() > 0.0, "{role}");
    }
    // Without its token, or with another seat's, a seat can be neither read nor played.
    let (code, refused) = call_with(
        &http,
        "GET",
        format!("{base}/{id}/seats/party_1"),
        None,
        None,
    )
    .await;
    assert_eq!(code, 403, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("x-seat-token"));
    let other = table["seat_tokens"]["party_2"].as_str().unwrap();
    let (code, _) = call_with(
        &http,
        "GET",
        format!("{base}/{id}/seats/party_1"),
        None,
        Some(other),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(table["seat_tokens"].as_object().unwrap().len(), 6);
    // A step after the end is refused.
    let (code, ended) = call(
        &http,
        "POST",
        format!("{base}/{id}/seats/party_0/step"),
        Some(turn("[TALK]", "party_0")),
    )
    .await;
    assert_eq!(
        (code, ended["error"]["code"].as_str()),
        (409, Some("EPISODE_ENDED"))
    );

    // The log holds the table's record, named by the table's id, and it replays exactly.
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.episode_id, id);
    assert_eq!(record.turns.len(), steps);
    assert!(record.seats.iter().all(|s| s.player == "external"));
    let scenario = load_table_scenarios(&fixture(), LoadOptions::default())
        .unwrap()
        .scenarios
        .remove(0);
    record
        .replay(Arc::new(scenario))
        .expect("the logged table replays");
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_offers_and_options_are_turn_errors_and_bad_requests_say_what_is_wrong() {
    let (server, log) = server("serve_tables_errors", |_| {}).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let (code, table) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "seed": 1, "retries": 1})),
    )
    .await;
    assert_eq!(code, 201, "{table}");
    let id = table["table_id"].as_str().unwrap();
    let step = |role: &str| format!("{base}/{id}/seats/{role}/step");

    // An option not in the game: a turn error, retried by the same seat.
    let (code, answer) = call(
        &http,
        "POST",
        step("party_0"),
        Some(turn("[SUBMIT_DEAL] A1 B1 C9 D1 E1", "party_0")),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["retry"], true);
    assert_eq!(answer["to_move"], "party_0");
    assert!(answer["error"].as_str().is_some());
    let (_, answer) = call(
        &http,
        "POST",
        step("party_0"),
        Some(turn(&format!("[SUBMIT_DEAL] {GOOD_DEAL}"), "party_0")),
    )
    .await;
    assert_eq!(answer["retry"], false, "{answer}");
    let next = answer["to_move"].as_str().unwrap().to_string();
    // An offer that does not exist, twice: retried, then forfeited.
    let (code, answer) = call(
        &http,
        "POST",
        step(&next),
        Some(turn("[ACCEPT_DEAL] #7", &next)),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(answer["retry"], true);
    assert!(answer["error"].as_str().unwrap().contains("#7"), "{answer}");
    let (code, answer) = call(
        &http,
        "POST",
        step(&next),
        Some(turn("[ACCEPT_DEAL] #8", &next)),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(answer["terminated"], true);
    assert_eq!(answer["view"]["state"]["outcome"]["kind"], "format_forfeit");
    assert_eq!(answer["view"]["reward"], -1.0);
    assert_eq!(
        read_log(&log)[0].outcome.outcome.kind.name(),
        "format_forfeit"
    );

    // Bad requests.
    let (code, e) = call(&http, "GET", format!("{base}/{id}/seats/mayor"), None).await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (404, Some("UNKNOWN_SEAT"))
    );
    assert!(e["error"]["message"].as_str().unwrap().contains("party_0"));
    let (code, e) = call(&http, "GET", format!("{base}/t-nope"), None).await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (404, Some("UNKNOWN_EPISODE"))
    );
    let (code, e) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": "deliberation:nope"})),
    )
    .await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (404, Some("UNKNOWN_SCENARIO"))
    );
    let (code, e) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "colour": "red"})),
    )
    .await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (422, Some("VALIDATION_ERROR"))
    );
    let (code, e) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "players": {"party_1": "openai:m@http://x"}})),
    )
    .await;
    assert_eq!(code, 422, "{e}");
    let (code, e) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "regulated": ["mayor"]})),
    )
    .await;
    assert_eq!(code, 422, "{e}");
    let (code, fresh) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO})),
    )
    .await;
    assert_eq!(code, 201);
    let fresh_token = fresh["table_token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let fresh = fresh["table_id"].as_str().unwrap();
    let (code, e) = call(
        &http,
        "POST",
        format!("{base}/{fresh}/seats/party_0/step"),
        Some(json!({"text": "hi"})),
    )
    .await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (422, Some("VALIDATION_ERROR"))
    );
    let (code, _) = call_with(
        &http,
        "DELETE",
        format!("{base}/{fresh}"),
        None,
        Some(&fresh_token),
    )
    .await;
    assert_eq!(code, 204);
    let (code, _) = call(&http, "GET", format!("{base}/{fresh}"), None).await;
    assert_eq!(code, 404);
    assert_eq!(
        read_log(&log).len(),
        2,
        "a dropped unfinished table is logged, as abandoned"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn scripted_seats_play_in_process_and_one_seed_draws_one_schedule() {
    let (server, log) = server("serve_tables_scripted", |o| o.max_sessions = 4).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let table = open_party_2_table(&http, &base).await;
    assert_eq!(table["client_roles"], json!(["party_2"]));
    let id = table["table_id"].as_str().unwrap().to_string();
    play_party_2(&http, &base, &id).await;
    let record = read_log(&log).remove(0);
    assert_eq!(record.episode_id, id);
    for seat in &record.seats {
        let expected = if seat.role == "party_2" {
            "external"
        } else {
            "rule:deliberation"
        };
        assert_eq!(seat.player, expected);
    }

    // The same seed draws the same schedule; a veto party walking out ends a table at once.
    let mut schedules = Vec::new();
    for seed in [5, 5, 6] {
        let (code, t) = call(
            &http,
            "POST",
            base.clone(),
            Some(json!({"scenario_id": SCENARIO, "seed": seed})),
        )
        .await;
        assert_eq!(code, 201, "{t}");
        let tid = t["table_id"].as_str().unwrap();
        let (_, answer) = call(
            &http,
            "POST",
            format!("{base}/{tid}/seats/party_0/step"),
            Some(turn("[WALK_AWAY]", "party_0")),
        )
        .await;
        assert_eq!(answer["terminated"], true, "{answer}");
        let logged = read_log(&log)
            .into_iter()
            .find(|r| r.episode_id == tid)
            .unwrap();
        assert_eq!(logged.outcome.outcome.kind.name(), "walk_away");
        schedules.push(logged.setup.schedule);
    }
    assert_eq!(schedules[0], schedules[1]);
    assert_ne!(schedules[0], schedules[2]);

    // Live tables are bounded by --max-sessions.
    for _ in 0..4 {
        let (code, _) = call(
            &http,
            "POST",
            base.clone(),
            Some(json!({"scenario_id": SCENARIO})),
        )
        .await;
        assert_eq!(code, 201);
    }
    let (code, e) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO})),
    )
    .await;
    assert_eq!(
        (code, e["error"]["code"].as_str()),
        (503, Some("CAPACITY_REACHED"))
    );
    server.shutdown().await;
}

/// Issue 42, item 5: table ids are sequential (`s0`, `s1`, …), so the id is no secret. Dropping
/// a table takes a token of that table — the `table_token` its creation answered, or one of
/// its seat tokens — and a dropped unfinished table is in the log as abandoned (an `error`
/// ending that says so), not gone without a trace.
#[tokio::test]
async fn dropping_a_table_takes_its_token_and_an_unfinished_one_is_logged_as_abandoned() {
    let (server, log) = server("serve_tables_drop", |_| {}).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let mut made = Vec::new();
    for seed in [3, 4] {
        let (code, table) = call(
            &http,
            "POST",
            base.clone(),
            Some(json!({"scenario_id": SCENARIO, "seed": seed})),
        )
        .await;
        assert_eq!(code, 201, "{table}");
        made.push(table);
    }
    let (a, b) = (&made[0], &made[1]);
    let id = a["table_id"].as_str().unwrap().to_string();
    // No token, a made-up one, or a token of another table: refused, and the table stays.
    let others = [
        None,
        Some("0".repeat(32)),
        Some(b["seat_tokens"]["party_0"].as_str().unwrap().to_string()),
        Some(b["table_token"].as_str().unwrap_or("none").to_string()),
    ];
    for token in &others {
        let (code, refused) = call_with(
            &http,
            "DELETE",
            format!("{base}/{id}"),
            None,
            token.as_deref(),
        )
        .await;
        assert_eq!(code, 403, "{token:?}: {refused}");
        assert_eq!(refused["error"]["code"], "FORBIDDEN");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("table_token") && message.contains(&id),
            "{message}"
        );
    }
    let (code, status) = call(&http, "GET", format!("{base}/{id}"), None).await;
    assert_eq!((code, &status["done"]), (200, &json!(false)), "{status}");
    assert!(read_log(&log).is_empty());

    // One turn played, then the table dropped by one of its seats.
    let mover = a["to_move"].as_str().unwrap().to_string();
    let (code, _) = call(
        &http,
        "POST",
        format!("{base}/{id}/seats/{mover}/step"),
        Some(turn(&format!("[SUBMIT_DEAL] {GOOD_DEAL}"), &mover)),
    )
    .await;
    assert_eq!(code, 200);
    let seat = a["seat_tokens"]["party_4"].as_str().unwrap();
    let (code, _) = call_with(&http, "DELETE", format!("{base}/{id}"), None, Some(seat)).await;
    assert_eq!(code, 204);
    let (code, _) = call(&http, "GET", format!("{base}/{id}"), None).await;
    assert_eq!(code, 404);
    // The other, by its creator's token.
    let other = b["table_id"].as_str().unwrap();
    let creator = b["table_token"].as_str().unwrap();
    let (code, _) = call_with(
        &http,
        "DELETE",
        format!("{base}/{other}"),
        None,
        Some(creator),
    )
    .await;
    assert_eq!(code, 204);

    let records = read_log(&log);
    assert_eq!(records.len(), 2, "both dropped tables are in the log");
    let scenario = Arc::new(
        load_table_scenarios(&fixture(), LoadOptions::default())
            .unwrap()
            .scenarios
            .remove(0),
    );
    for (record, turns) in records.iter().zip([1, 0]) {
        let outcome = &record.outcome.outcome;
        assert_eq!(outcome.kind.name(), "error", "{}", record.episode_id);
        assert_eq!(outcome.by, None);
        assert!(
            outcome
                .detail
                .as_deref()
                .unwrap_or("")
                .contains("abandoned"),
            "{:?}",
            outcome.detail
        );
        assert_eq!(record.turns.len(), turns);
        record
            .replay(scenario.clone())
            .expect("an abandoned table replays as far as it went");
    }
    assert_eq!(records[0].episode_id, id);
    server.shutdown().await;
}

/// A table reclaimed after sitting idle past `--idle-timeout-s` is dropped unfinished too: it
/// is in the log as abandoned, saying why.
#[tokio::test]
async fn a_table_reclaimed_idle_is_logged_as_abandoned() {
    let (server, log) = server("serve_tables_idle", |o| {
        o.idle_timeout = std::time::Duration::from_millis(300)
    })
    .await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let (code, table) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO})),
    )
    .await;
    assert_eq!(code, 201, "{table}");
    let started = std::time::Instant::now();
    while read_log(&log).is_empty() {
        assert!(
            started.elapsed().as_secs() < 20,
            "the idle table was not logged"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].episode_id, table["table_id"].as_str().unwrap());
    let detail = records[0]
        .outcome
        .outcome
        .detail
        .clone()
        .unwrap_or_default();
    assert!(
        detail.starts_with("abandoned: idle past --idle-timeout-s"),
        "{detail}"
    );
    let (code, _) = call(
        &http,
        "GET",
        format!("{base}/{}", records[0].episode_id),
        None,
    )
    .await;
    assert_eq!(code, 404);
    server.shutdown().await;
}

/// The server's `[rewards]` reaches its tables: a terminal design a table honours is applied
/// (threshold: −γ for a deal below τ) and kept in the record; one it cannot honour (a judge's
/// weight) refuses the table at its reset, naming the setting, rather than being ignored.
#[tokio::test]
async fn a_servers_rewards_are_applied_at_its_tables_or_the_table_is_refused() {
    use dealgym::reward::{Component, RewardConfig, RewardKind};
    let threshold = RewardConfig {
        kind: RewardKind::Threshold,
        tau: 1.0,
        gamma: 0.3,
        ..RewardConfig::default()
    };
    let (server, log) = server("serve_tables_rewards", |o| o.rewards = threshold.clone()).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let table = open_party_2_table(&http, &base).await;
    let id = table["table_id"].as_str().unwrap().to_string();
    play_party_2(&http, &base, &id).await;
    let record = read_log(&log).remove(0);
    assert_eq!(
        record.reward_config.as_ref().map(|c| c.kind),
        Some(RewardKind::Threshold)
    );
    let deal = record.outcome.outcome.kind == dealgym::game::OutcomeKind::Deal;
    assert!(deal, "seed 9 agrees: {:?}", record.outcome.outcome);
    assert!(
        record.rewards.values().any(|r| *r == -0.3),
        "{:?}",
        record.rewards
    );
    for (role, rho) in &record.outcome.rho {
        let expected = if deal && *rho < 1.0 { -0.3 } else { *rho };
        assert_eq!(record.rewards[role], expected, "{role}: ρ {rho}");
    }
    server.shutdown().await;

    let mut refused = RewardConfig::default();
    refused.weights.insert(Component::Strategic, 1.0);
    let (refusing, _) = self::server("serve_tables_rewards_refused", |o| o.rewards = refused).await;
    let (code, answer) = call(
        &http,
        "POST",
        format!("{}/v1/tables", refusing.base_url()),
        Some(json!({"scenario_id": SCENARIO, "seed": 9})),
    )
    .await;
    assert_eq!(code, 422, "{answer}");
    assert!(
        answer
            .to_string()
            .contains("cannot be honoured in a table run"),
        "{answer}"
    );
    refusing.shutdown().await;
}

/// Tables and two-party episodes live in one registry: one `--max-sessions` counts both; a
/// table's id on a two-party route (and the reverse) is a 409 naming the routes it is played
/// at; a two-party reset naming a table's scenario is refused, saying where tables are played;
/// the one reaper reclaims both kinds, the table logged as abandoned.
#[tokio::test]
async fn one_registry_holds_tables_and_episodes_alike() {
    let (server, log) = server("serve_tables_registry", |o| {
        o.max_sessions = 2;
        o.idle_timeout = std::time::Duration::from_millis(1500);
    })
    .await;
    let http = reqwest::Client::new();
    let root = server.base_url();
    let tables = format!("{root}/v1/tables");
    let episodes = format!("{root}/v1/episodes");
    let (code, table) = call(
        &http,
        "POST",
        tables.clone(),
        Some(json!({"scenario_id": SCENARIO})),
    )
    .await;
    assert_eq!(code, 201, "{table}");
    let table_id = table["table_id"].as_str().unwrap().to_string();
    let (code, episode) = call(&http, "POST", episodes.clone(), Some(json!({}))).await;
    assert_eq!(code, 201, "{episode}");
    let episode_id = episode["episode_id"].as_str().unwrap().to_string();
    assert_eq!(server.state.hub.live_count(), 2);

    // One count: a third session of either kind is refused.
    for base in [&tables, &episodes] {
        let (code, full) = call(
            &http,
            "POST",
            base.to_string(),
            Some(json!({"scenario_id": SCENARIO})),
        )
        .await;
        assert_eq!(
            (code, full["error"]["code"].as_str()),
            (503, Some("CAPACITY_REACHED")),
            "{base}: {full}"
        );
    }

    // The wrong kind of session for the route: a clear 409 naming where it is played.
    let wrong = [
        ("GET", format!("{episodes}/{table_id}"), None, "/v1/tables/"),
        (
            "POST",
            format!("{episodes}/{table_id}/step"),
            Some(json!({"message": "hi"})),
            "/v1/tables/",
        ),
        (
            "GET",
            format!("{tables}/{episode_id}"),
            None,
            "/v1/episodes/",
        ),
    ];
    for (method, url, body, names) in wrong {
        let (code, refused) = call(&http, method, url.clone(), body).await;
        assert_eq!(
            (code, refused["error"]["code"].as_str()),
            (409, Some("WRONG_SESSION_KIND")),
            "{url}: {refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains(names),
            "{refused}"
        );
    }

    // OpenEnv's reset of a table plays the one seat it names: one naming none is refused,
    // saying so and where every seat is played (not an unknown scenario, nor a full server).
    let (code, refused) = call(
        &http,
        "POST",
        format!("{root}/reset"),
        Some(json!({"scenario_id": SCENARIO})),
    )
    .await;
    assert_eq!(
        (code, refused["error"]["code"].as_str()),
        (422, Some("VALIDATION_ERROR")),
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("POST /v1/tables"),
        "{refused}"
    );

    // The one reaper reclaims both, the table logged as abandoned; room again for either.
    let started = std::time::Instant::now();
    while server.state.hub.live_count() > 0 {
        assert!(started.elapsed().as_secs() < 20, "nothing was reclaimed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].episode_id, table_id);
    let detail = records[0]
        .outcome
        .outcome
        .detail
        .clone()
        .unwrap_or_default();
    assert!(detail.starts_with("abandoned: idle past"), "{detail}");
    server.shutdown().await;
}

/// A table opened with `format: "tools"`: each seat's view carries the table's tools, a client
/// seat steps with the calls its model made (a wrong call goes through the malformed-turn
/// policy as a format error), the scripted seats act through calls too, and the logged record
/// keeps every seat's calls and replays exactly.
#[tokio::test]
async fn a_table_played_through_tools_takes_a_seats_tool_calls() {
    let (server, log) = server("serve-tables-tools", |_| {}).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let scripted: serde_json::Map<String, Value> = (0..6)
        .filter(|i| *i != 2)
        .map(|i| (format!("party_{i}"), json!("rule:deliberation")))
        .collect();
    let (code, table) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": SCENARIO, "seed": 9, "players": scripted, "format": "tools"})),
    )
    .await;
    assert_eq!(code, 201, "a tools table is opened: {table}");
    let id = table["table_id"].as_str().unwrap().to_string();
    let tool_call = |name: &str, arguments: Value| {
        json!({"message": "SECRET-THOUGHT", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}
        }]})
    };
    let step = format!("{base}/{id}/seats/party_2/step");
    let mut wrong_call_tried = false;
    for _ in 0..32 {
        let (_, view) = call(&http, "GET", format!("{base}/{id}/seats/party_2"), None).await;
        if view["done"] == true {
            break;
        }
        let tools = view["tools"]
            .as_array()
            .expect("the view carries the tools");
        assert_eq!(tools[1]["function"]["name"], "accept");
        assert_eq!(
            tools[1]["function"]["parameters"]["required"],
            json!(["offer"])
        );
        if !wrong_call_tried {
            wrong_call_tried = true;
            let (code, answer) = call(
                &http,
                "POST",
                step.clone(),
                Some(tool_call("accept", json!({}))),
            )
            .await;
            assert_eq!(code, 200, "{answer}");
            assert_eq!(answer["retry"], true, "{answer}");
            assert!(
                answer["error"].as_str().unwrap().contains("needs `offer`"),
                "{answer}"
            );
        }
        let action = match view["state"]["offers"].as_array().unwrap().last() {
            Some(o) => tool_call("accept", json!({"offer": o["id"], "message": "Agreed."})),
            None => tool_call("say", json!({"text": "Let us see."})),
        };
        let (code, answer) = call(&http, "POST", step.clone(), Some(action)).await;
        assert_eq!(code, 200, "{answer}");
        assert_eq!(answer["error"], Value::Null, "{answer}");
    }
    let record = read_log(&log).remove(0);
    assert_eq!(
        serde_json::to_value(record.setup.format).unwrap(),
        json!("tools")
    );
    assert!(
        record.outcome.outcome.kind.name() != "error",
        "{:?}",
        record.outcome
    );
    let mine: Vec<_> = record
        .turns
        .iter()
        .filter(|t| t.role == "party_2")
        .collect();
    assert!(mine.len() >= 2);
    for t in &record.turns {
        assert_eq!(t.turn.completion.tool_calls.len(), 1, "{t:?}");
    }
    assert!(mine[1..]
        .iter()
        .all(|t| t.turn.parsed.format_ok && t.turn.error.is_none()));
    let scenario = load_table_scenarios(&fixture(), LoadOptions::default())
        .unwrap()
        .scenarios
        .remove(0);
    record
        .replay(Arc::new(scenario))
        .expect("the logged table replays");
    server.shutdown().await;
}

/// A server whose `[rewards]` calls a judge (the built-in mock) serves tables: the ended
/// table's record is judged before it is logged — every seat's judge part in the record,
/// the totals recombined — and the seat's view answers the judged reward. It was refused at
/// the reset (422) before a served table called judges.
#[tokio::test]
async fn a_served_table_is_judged_before_it_is_logged() {
    use dealgym::reward::{Component, RewardConfig};
    let mock = crate::common::threaded_mock(dealgym_mock::MockConfig::default());
    let judged: RewardConfig = serde_json::from_value(json!({
        "weights": {"terminal": 1.0, "judge": 0.5},
        "judge": {"endpoint": mock.url, "model": "mock-judge", "retries": 1,
                  "backoff_s": 0.01, "timeout_s": 5},
    }))
    .unwrap();
    let (server, log) = server("serve_tables_judged", |o| o.rewards = judged).await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    let table = open_party_2_table(&http, &base).await;
    let id = table["table_id"].as_str().unwrap().to_string();
    play_party_2(&http, &base, &id).await;
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(
        record.reward_issues.is_empty(),
        "{:?}",
        record.reward_errors
    );
    for role in record.roles() {
        let parts = &record.reward_parts[role];
        let judge = parts.get(Component::Judge).expect("every seat judged");
        assert!((0.0..=1.0).contains(&judge), "{role}: {judge}");
        let total = parts[Component::Terminal] + 0.5 * judge;
        assert!((record.rewards[role] - total).abs() < 1e-12, "{role}");
    }
    let (_, view) = call(&http, "GET", format!("{base}/{id}/seats/party_2"), None).await;
    assert_eq!(view["reward"].as_f64(), Some(record.rewards["party_2"]));
    server.shutdown().await;
}

/// The action `party_2` plays from what its seat sees: it accepts the latest offer, or talks
/// while there is none (as [`play_party_2`]).
fn party_2_action(observation: &Value) -> Value {
    let action = match observation["state"]["offers"].as_array().unwrap().last() {
        Some(o) => format!("[ACCEPT_DEAL] #{}", o["id"]),
        None => "[TALK]".into(),
    };
    turn(&action, "party_2")
}

/// OpenEnv's WebSocket plays a table as a single-agent environment: a reset naming a table's
/// scenario and the client's `learner_role` starts a table whose other seats are played by
/// `rule:deliberation`; each step plays the client's turn and the scripted seats up to its next
/// one; the observation is that seat's; the reward at the end is the logged record's for its
/// role; the client's seat is recorded as `external`. A reset naming no role is refused
/// naming the roles. (Before, every table reset over OpenEnv was a 422 pointing at
/// /v1/tables.)
#[tokio::test]
async fn openenv_plays_a_table_as_the_seat_its_reset_names() {
    use crate::common::{ws_connect, ws_send};
    let (server, log) = server("serve_tables_openenv_ws", |_| {}).await;
    let mut ws = ws_connect(server.addr).await;

    let refused = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"scenario_id": SCENARIO}}),
    )
    .await;
    assert_eq!(refused["type"], "error", "{refused}");
    let message = refused["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("learner_role") && message.contains("party_0, party_1"),
        "{message}"
    );

    let reset = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"scenario_id": SCENARIO, "seed": 9, "learner_role": "party_2"}}),
    )
    .await;
    assert_eq!(reset["type"], "observation", "{reset}");
    let mut answer = reset["data"].clone();
    assert_eq!(answer["reward"], Value::Null, "{answer}");
    assert_eq!(answer["observation"]["role"], "party_2");
    assert_eq!(answer["observation"]["to_move"], "party_2");
    assert_eq!(answer["observation"]["your_turn"], true);
    let table_id = answer["observation"]["table_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut steps = 0;
    while answer["done"] != true {
        assert!(steps < 32, "the table did not end: {answer}");
        let observation = &answer["observation"];
        assert_eq!(observation["role"], "party_2", "the client's seat only");
        assert_eq!(
            observation["to_move"], "party_2",
            "the scripted seats moved"
        );
        let step = ws_send(
            &mut ws,
            json!({"type": "step", "data": party_2_action(observation)}),
        )
        .await;
        assert_eq!(step["type"], "observation", "{step}");
        answer = step["data"].clone();
        steps += 1;
        if answer["done"] != true {
            assert_eq!(answer["reward"], 0.0, "{answer}");
        }
    }
    let state = ws_send(&mut ws, json!({"type": "state"})).await;
    assert_eq!(state["data"]["episode_id"], table_id.as_str());
    assert_eq!(state["data"]["step_count"], steps);

    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.episode_id, table_id);
    for seat in &record.seats {
        let expected = if seat.role == "party_2" {
            "external"
        } else {
            "rule:deliberation"
        };
        assert_eq!(seat.player, expected, "{}", seat.role);
    }
    let mover = |role: &str| record.turns.iter().filter(|t| t.role == role).count();
    assert_eq!(mover("party_2"), steps);
    assert!(
        record.turns.len() > steps,
        "the scripted seats played their turns"
    );
    assert_eq!(answer["reward"].as_f64(), Some(record.rewards["party_2"]));
    assert_eq!(answer["observation"]["reward"], answer["reward"]);
    let (terminated, truncated) = (
        answer["observation"]["terminated"].as_bool().unwrap(),
        answer["observation"]["truncated"].as_bool().unwrap(),
    );
    assert!(terminated != truncated, "{answer}");
    server.shutdown().await;
}

/// OpenEnv's stateless `/reset` and `/step` at a table (a scenario's id, or the family
/// `deliberation`): a fresh table each, answered as the client's seat and not kept; a step
/// plays the action as that seat's first turn. A table's reset refuses what a table has no
/// use for, and `/v1/episodes` still refuses a table. (Before: a 422, and the family
/// `deliberation` an unknown variant.)
#[tokio::test]
async fn openenv_stateless_reset_and_step_play_a_table() {
    let (server, _log) = server("serve_tables_openenv_http", |_| {}).await;
    let http = reqwest::Client::new();
    let root = server.base_url();
    for kwargs in [
        json!({"scenario_id": SCENARIO, "seed": 9, "learner_role": "party_2"}),
        json!({"family": "deliberation", "learner_role": "party_2"}),
    ] {
        let (code, answer) =
            call(&http, "POST", format!("{root}/reset"), Some(kwargs.clone())).await;
        assert_eq!(code, 200, "{kwargs}: {answer}");
        assert_eq!(answer["observation"]["role"], "party_2", "{answer}");
        assert_eq!(answer["observation"]["your_turn"], true, "{answer}");
        assert_eq!(answer["reward"], Value::Null);
        assert_eq!(answer["done"], false);
        assert_eq!(
            server.state.hub.live_count(),
            0,
            "a stateless table is not kept"
        );
    }
    let action = turn("[TALK]", "party_2");
    let body =
        json!({"action": action, "scenario_id": SCENARIO, "seed": 9, "learner_role": "party_2"});
    let (code, answer) = call(&http, "POST", format!("{root}/step"), Some(body)).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["observation"]["role"], "party_2");
    assert_eq!(answer["observation"]["retry"], false, "{answer}");
    assert_eq!(answer["reward"], 0.0, "{answer}");
    assert_eq!(server.state.hub.live_count(), 0);

    let refused = [
        (
            format!("{root}/reset"),
            json!({"scenario_id": SCENARIO, "learner_role": "party_2", "first_mover": "learner"}),
            "first_mover",
        ),
        (
            format!("{root}/reset"),
            json!({"scenario_id": SCENARIO, "learner_role": "mayor"}),
            "learner_role: `mayor` is not a party of scenario",
        ),
        (
            format!("{root}/reset"),
            json!({"scenario_id": SCENARIO, "family": "casino", "learner_role": "party_2"}),
            "`family` casino is a two-party family",
        ),
        (
            format!("{root}/reset"),
            json!({"family": "chess"}),
            "deliberation",
        ),
        (
            format!("{root}/v1/episodes"),
            json!({"scenario_id": SCENARIO, "learner_role": "party_2"}),
            "POST /v1/tables",
        ),
    ];
    for (url, body, names) in refused {
        let (code, answer) = call(&http, "POST", url.clone(), Some(body.clone())).await;
        assert_eq!(code, 422, "{url} {body}: {answer}");
        assert!(answer.to_string().contains(names), "{body}: {answer}");
    }

    // A stateless step refused (a completion past the cap) leaves no table behind: nothing
    // live to count against --max-sessions, nothing reaped and logged later.
    let (capped, capped_log) = self::server("serve_tables_openenv_refused", |o| {
        o.text_limits.completion = 200;
    })
    .await;
    let long =
        json!({"message": format!("Thought: {}\nTalk: hi\nAction: [TALK]", "x".repeat(400))});
    let body =
        json!({"action": long, "scenario_id": SCENARIO, "seed": 9, "learner_role": "party_2"});
    let (code, answer) = call(
        &http,
        "POST",
        format!("{}/step", capped.base_url()),
        Some(body),
    )
    .await;
    assert_eq!(code, 413, "{answer}");
    assert_eq!(
        capped.state.hub.live_count(),
        0,
        "the refused step's table is gone"
    );
    assert!(read_log(&capped_log).is_empty());
    capped.shutdown().await;
    server.shutdown().await;
}
