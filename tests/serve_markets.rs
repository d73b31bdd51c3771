//! `dealgym serve` hosts markets on the table routes (`/v1/tables`, a session per seat, seat
//! tokens): one buyer played from the client over real sockets, every other trader scripted
//! in process; the ended market's record in the server's log, replaying with
//! `replay --verify`; a wrong seat token and a wrong turn refused as at a table; a market
//! dropped before it ended logged as abandoned; OpenEnv's reset seating its client at one
//! trader.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{call, call_with, dealgym_cli, succeeded, temp_dir};
use dealgym::record::MarketRecord;
use dealgym::serve::{ServeOptions, Server};

/// The first market of the shipped set (`market:45:0`): two buyers and sellers, unit demand.
const MARKET: &str = "market:45:0";

async fn server(name: &str) -> (Server, PathBuf) {
    let dir = temp_dir(name);
    let log = dir.join("serve.jsonl");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![
            root.join("scenarios/ahp.jsonl"),
            root.join("tests/fixtures/table/six_party.jsonl"),
            root.join("scenarios/market.jsonl"),
        ],
        log.clone(),
    );
    (Server::start(options).await.unwrap(), log)
}

/// A buyer's fixed policy, read from its seat's public state alone: take the cheapest standing
/// ask at or under its next unit's value, else bid a unit under that value.
fn buyer_turn(view: &Value) -> Value {
    let state = &view["state"];
    let value = state["next_limit"]
        .as_i64()
        .expect("a buyer with a unit left");
    let price = |q: &Value| q["price"].as_f64().expect("a price in currency units");
    let ask = state["book"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["side"] == "seller" && price(q) <= value as f64)
        .min_by(|a, b| price(a).total_cmp(&price(b)));
    let action = match ask {
        Some(q) => format!("[ACCEPT_DEAL] #{}", q["id"]),
        None => format!("[SUBMIT_DEAL] ${}", value - 1),
    };
    json!({"message": format!("Thought: SECRET-THOUGHT\nTalk: Buying.\nAction: {action}")})
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_market_is_served_seat_by_seat_and_its_log_line_replays() {
    let (server, log) = server("serve_markets_whole").await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());

    let (code, market) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"family": "market", "scenario_id": MARKET, "seed": 5,
                    "players": {"buyer_1": "external"}})),
    )
    .await;
    assert_eq!(code, 201, "{market}");
    assert_eq!(market["scenario_id"], MARKET);
    assert_eq!(
        market["client_roles"],
        json!(["buyer_1"]),
        "the rest scripted"
    );
    let tokens = market["seat_tokens"].as_object().unwrap();
    assert_eq!(tokens.len(), 1, "a token for the client's seat only");
    let token = tokens["buyer_1"].as_str().unwrap().to_string();
    let id = market["table_id"].as_str().unwrap().to_string();
    let seat = format!("{base}/{id}/seats/buyer_1");

    // Another's token, or none, reads and moves nothing; a scripted seat is no one's.
    let (code, refused) = call_with(&http, "GET", seat.clone(), None, Some("not-it")).await;
    assert_eq!(
        (code, &refused["error"]["code"]),
        (403, &json!("FORBIDDEN"))
    );
    let (code, _) = call_with(
        &http,
        "POST",
        format!("{seat}/step"),
        Some(json!({"message": "Action: [WALK_AWAY]"})),
        None,
    )
    .await;
    assert_eq!(code, 403);
    let (code, refused) = call_with(
        &http,
        "GET",
        format!("{base}/{id}/seats/seller_1"),
        None,
        Some(&token),
    )
    .await;
    assert_eq!(code, 403, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("rule:zic"));

    let mut steps = 0;
    loop {
        let (code, view) = call_with(&http, "GET", seat.clone(), None, Some(&token)).await;
        assert_eq!(code, 200, "{view}");
        if view["done"] == true {
            break;
        }
        assert_eq!(
            view["your_turn"], true,
            "the scripted traders have moved: {view}"
        );
        assert_eq!(view["state"]["role"], "buyer_1");
        let text = view.to_string();
        // Its own value is in its own prompt; no other trader's limit is in its state.
        assert!(view["state"].get("limits").is_none());
        assert!(!text.contains("\"cost\""), "{text}");
        let (code, answer) = call_with(
            &http,
            "POST",
            format!("{seat}/step"),
            Some(buyer_turn(&view)),
            Some(&token),
        )
        .await;
        assert_eq!(code, 200, "{answer}");
        assert_eq!(answer["retry"], false, "{answer}");
        steps += 1;
        assert!(steps < 64, "the market did not end");
    }
    let (_, status) = call(&http, "GET", format!("{base}/{id}"), None).await;
    assert_eq!(status["done"], true);
    assert!(status["outcome"]["kind"].is_string(), "{status}");
    let (code, answer) = call_with(
        &http,
        "POST",
        format!("{seat}/step"),
        Some(json!({"message": "Action: [WALK_AWAY]"})),
        Some(&token),
    )
    .await;
    assert_eq!(code, 409, "{answer}");

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "the ended market, logged once");
    let record: MarketRecord = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(record.episode_id, id);
    assert_eq!(record.scenario_id, MARKET);
    assert_eq!(record.seats[0].player, "external");
    assert!(record.seats[1..].iter().all(|s| s.player == "rule:zic"));
    assert!(
        record.turns.iter().any(|t| t.seat == 0),
        "the client's turns"
    );
    assert!(lines[0].contains(r#""kind":"market""#));
    // The seat's reward is its surplus, as the record holds it.
    let (_, view) = call_with(&http, "GET", seat.clone(), None, Some(&token)).await;
    assert_eq!(view["reward"].as_f64(), Some(record.reward(0)));

    let verified = succeeded(dealgym_cli(["replay", "--verify", log.to_str().unwrap()]));
    let said = String::from_utf8_lossy(&verified.stdout).to_string()
        + &String::from_utf8_lossy(&verified.stderr);
    assert!(said.contains("replay identically"), "{said}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_wrong_turn_is_refused_and_a_dropped_market_is_logged_as_abandoned() {
    let (server, log) = server("serve_markets_turns").await;
    let http = reqwest::Client::new();
    let base = format!("{}/v1/tables", server.base_url());
    // A market scenario's id alone names a market; two client seats.
    let (code, market) = call(
        &http,
        "POST",
        base.clone(),
        Some(json!({"scenario_id": MARKET, "seed": 5,
                    "players": {"buyer_1": "external", "seller_1": "external",
                                "buyer_2": "rule:truthful"}})),
    )
    .await;
    assert_eq!(code, 201, "{market}");
    let id = market["table_id"].as_str().unwrap().to_string();
    let tokens = market["seat_tokens"].as_object().unwrap().clone();
    let mover = market["to_move"].as_str().unwrap().to_string();
    let other = if mover == "buyer_1" {
        "seller_1"
    } else {
        "buyer_1"
    };
    let (code, refused) = call_with(
        &http,
        "POST",
        format!("{base}/{id}/seats/{other}/step"),
        Some(json!({"message": "Thought: t\nTalk: hi\nAction: [REJECT_DEAL]"})),
        tokens[other].as_str(),
    )
    .await;
    assert_eq!(code, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "WRONG_SEAT");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&mover) && message.contains(other),
        "{message}"
    );
    // The mover's token does not play the other's seat either.
    let (code, _) = call_with(
        &http,
        "POST",
        format!("{base}/{id}/seats/{other}/step"),
        Some(json!({"message": "Action: [REJECT_DEAL]"})),
        tokens[&mover].as_str(),
    )
    .await;
    assert_eq!(code, 403);
    // A turn the book cannot play is a turn error, retried: never an HTTP error.
    let (code, answer) = call_with(
        &http,
        "POST",
        format!("{base}/{id}/seats/{mover}/step"),
        Some(json!({"message": "Thought: t\nTalk: hi\nAction: [ACCEPT_DEAL] #99"})),
        tokens[&mover].as_str(),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["retry"], true, "{answer}");
    assert_eq!(answer["to_move"], mover.as_str());

    // Bad requests say what is wrong.
    for (body, says) in [
        (
            json!({"family": "market", "players": {"buyer_1": "rule:deliberation"}}),
            "rule:zic",
        ),
        (
            json!({"family": "market", "players": {"nobody": "external"}}),
            "buyer_1",
        ),
        (json!({"family": "market", "format": "tools"}), "tools"),
    ] {
        let (code, refused) = call(&http, "POST", base.clone(), Some(body.clone())).await;
        assert_eq!(code, 422, "{body}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }

    let (code, _) = call_with(
        &http,
        "DELETE",
        format!("{base}/{id}"),
        None,
        tokens[other].as_str(),
    )
    .await;
    assert_eq!(code, 204);
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1);
    let record: MarketRecord = serde_json::from_str(&lines[0]).unwrap();
    let outcome = &record.outcome.outcome;
    assert_eq!(outcome.kind.name(), "error");
    assert_eq!(outcome.by, None);
    assert!(
        outcome
            .detail
            .as_deref()
            .unwrap()
            .starts_with("abandoned: dropped by a client"),
        "{outcome:?}"
    );
    assert_eq!(record.seats[1].player, "rule:truthful");
    succeeded(dealgym_cli(["replay", "--verify", log.to_str().unwrap()]));
    server.shutdown().await;
}

#[tokio::test]
async fn openenv_seats_its_client_at_one_trader_of_a_market() {
    let (server, _log) = server("serve_markets_openenv").await;
    let http = reqwest::Client::new();
    let (code, answer) = call(
        &http,
        "POST",
        format!("{}/reset", server.base_url()),
        Some(json!({"family": "market", "index": 0, "seed": 5, "learner_role": "seller_2"})),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    let observation = &answer["observation"];
    assert_eq!(observation["role"], "seller_2");
    assert_eq!(observation["state"]["side"], "seller");
    assert_eq!(observation["your_turn"], true);
    // Without a role: refused, naming the market's roles.
    let (code, refused) = call(
        &http,
        "POST",
        format!("{}/reset", server.base_url()),
        Some(json!({"family": "market"})),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
        + refused.to_string().as_str();
    assert!(
        message.contains("market") && message.contains("buyer_1"),
        "{message}"
    );
    server.shutdown().await;
}

/// OpenEnv's `opponent` at a market names the scripted trader every other trader is played
/// by (`rule:sniper` here), as the logged record says; a spec that is none of a market's
/// scripted traders (a table's `rule:deliberation`, a client, a model) is refused naming them.
/// (Before: `rule:deliberation` was taken and ignored — every other trader played `rule:zic`
/// — and `rule:sniper` was refused as "not a setting of an n-party table".)
#[tokio::test]
async fn openenv_opponent_names_the_scripted_traders_of_a_market() {
    use crate::common::{ws_connect, ws_send};
    let (server, log) = server("serve_markets_openenv_opponent").await;
    let http = reqwest::Client::new();
    for opponent in ["rule:deliberation", "external", "openai:m"] {
        let (code, refused) = call(
            &http,
            "POST",
            format!("{}/reset", server.base_url()),
            Some(json!({"family": "market", "index": 0, "seed": 5,
                        "learner_role": "seller_2", "opponent": opponent})),
        )
        .await;
        assert_eq!(code, 422, "{opponent}: {refused}");
        let message = refused.to_string();
        assert!(
            message.contains("rule:sniper") && message.contains(opponent),
            "{opponent}: {message}"
        );
    }
    let mut ws = ws_connect(server.addr).await;
    let reset = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"family": "market", "index": 0, "seed": 5,
                "learner_role": "seller_2", "opponent": "rule:sniper"}}),
    )
    .await;
    assert_eq!(reset["type"], "observation", "{reset}");
    let mut answer = reset["data"].clone();
    let mut steps = 0;
    while answer["done"] != true {
        assert!(steps < 64, "the market did not end: {answer}");
        let step = ws_send(
            &mut ws,
            json!({"type": "step", "data": {"message": "Thought: t\nTalk: bye\nAction: [WALK_AWAY]"}}),
        )
        .await;
        assert_eq!(step["type"], "observation", "{step}");
        answer = step["data"].clone();
        steps += 1;
    }
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let record: MarketRecord = serde_json::from_str(&lines[0]).unwrap();
    for seat in &record.seats {
        let expected = if seat.role == "seller_2" {
            "external"
        } else {
            "rule:sniper"
        };
        assert_eq!(seat.player, expected, "{}", seat.role);
    }
    server.shutdown().await;
}
