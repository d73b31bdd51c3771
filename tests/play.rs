//! People at the table (`dealgym play`): a person plays CaSiNo and Craigslist against the
//! mock through the page's routes, the records name the seat `human:NAME`, pass
//! `replay --verify` and count as people in the report; two people share a game by a join
//! link; a study assigns games to participants in turn; a person takes a
//! seat at an n-party table. (The page itself is driven in a real browser by
//! `scripts/play-browser.sh`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{call_with, dealgym_cli, read_log, scenario_files, succeeded, temp_dir};
use dealgym::serve::play::{PlayOptions, Study};
use dealgym::serve::{ServeOptions, Server};
use dealgym_mock::{MockConfig, MockServer};

async fn server(
    dir: &Path,
    tune: impl FnOnce(&mut ServeOptions),
) -> (Server, PathBuf, Vec<PathBuf>) {
    let scenarios = scenario_files(dir, 10);
    let log = dir.join("play.jsonl");
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenarios.clone(),
        log.clone(),
    );
    options.play = Some(PlayOptions::default());
    tune(&mut options);
    (Server::start(options).await.unwrap(), log, scenarios)
}

async fn post(
    http: &reqwest::Client,
    url: String,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    call_with(http, "POST", url, Some(body), token).await
}

/// A new game of the page.
async fn create(http: &reqwest::Client, base: &str, body: Value) -> (u16, Value) {
    post(http, format!("{base}/play/api/games"), None, body).await
}

/// A person's turn in game `id`.
async fn step(
    http: &reqwest::Client,
    base: &str,
    id: &str,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    post(
        http,
        format!("{base}/play/api/games/{id}/step"),
        token,
        body,
    )
    .await
}

/// A client that sends the server's bearer token with every request.
fn bearer(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

async fn get(http: &reqwest::Client, url: String, token: &str) -> Value {
    call_with(http, "GET", url, None, Some(token)).await.1
}

/// A person's move for `view`: accept when they may, else an offer from the form (a price at
/// the listing price, items split), a walk-away after a few turns.
fn choose(view: &Value, turn: usize) -> Value {
    let moves: Vec<&str> = view["form"]["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    if moves.contains(&"accept") && turn >= 1 {
        return json!({"kind": "accept"});
    }
    if turn >= 4 {
        return json!({"kind": "walk_away"});
    }
    let mut terms = serde_json::Map::new();
    for term in view["form"]["terms"].as_array().unwrap() {
        let key = term["key"].as_str().unwrap().to_string();
        let value = match term["type"].as_str().unwrap() {
            "price" => json!(view["state"]["public"]["listing_price"]
                .as_f64()
                .unwrap_or(100.0)),
            "option" => term["options"][0].clone(),
            _ => json!(((term["max"].as_f64().unwrap() + 1.0) / 2.0).floor()),
        };
        terms.insert(key, value);
    }
    json!({"kind": "submit", "terms": terms})
}

/// Play a game for the person holding `token` until it ends; answers the last view.
async fn play_out(
    http: &reqwest::Client,
    base: &str,
    id: &str,
    token: &str,
    first: Value,
) -> Value {
    let mut view = first;
    for turn in 0..20 {
        if view["done"] == true {
            return view;
        }
        assert_eq!(view["your_turn"], true, "{view}");
        let body = json!({"talk": "Let us find a fair deal.", "move": choose(&view, turn)});
        let (status, line) = post(
            http,
            format!("{base}/play/api/games/{id}/line"),
            Some(token),
            body.clone(),
        )
        .await;
        assert_eq!(status, 200, "{line}");
        assert!(
            line["text"].as_str().unwrap().contains("Action: ["),
            "{line}"
        );
        let (status, next) = post(
            http,
            format!("{base}/play/api/games/{id}/step"),
            Some(token),
            body,
        )
        .await;
        assert_eq!(status, 200, "{next}");
        assert!(
            next["retry"].is_null(),
            "a person's turn was refused: {next}"
        );
        view = next;
    }
    panic!("the game did not end: {view}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_casino_and_craigslist_against_the_mock_and_counts_as_people() {
    let dir = temp_dir("play-person-vs-mock");
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let spec = format!("openai:mock@{}", mock.base_url());
    let (server, log, scenarios) = server(&dir, |o| {
        o.policy.endpoints.push(format!("http://{}", mock.addr));
        o.play.as_mut().unwrap().opponents.push(spec.clone());
    })
    .await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/play")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("id=\"setup\""));
    let setup: Value = http
        .get(format!("{base}/play/api/setup"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(setup["opponents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["spec"] == spec.as_str()));

    for (name, family) in [("alice", "casino"), ("bruno", "craigslist")] {
        let (status, made) = create(
            &http,
            &base,
            json!({"name": name, "family": family, "opponent": spec}),
        )
        .await;
        assert_eq!(status, 201, "{made}");
        let id = made["game_id"].as_str().unwrap().to_string();
        let token = made["seat_token"].as_str().unwrap().to_string();
        let view = &made["view"];
        // The seat sees its own values and nobody else's.
        assert!(!view["facts"].as_array().unwrap().is_empty(), "{view}");
        assert!(view["brief"].as_str().unwrap().len() > 100);
        // Without its token a seat is neither read nor played.
        let (status, refused) = step(
            &http,
            &base,
            &id,
            Some("wrong"),
            json!({"move": {"kind": "walk_away"}}),
        )
        .await;
        assert_eq!(status, 403, "{refused}");
        let shown = get(&http, format!("{base}/play/api/games/{id}"), &token).await;
        assert_eq!(shown["game_id"], id.as_str());
        let end = play_out(&http, &base, &id, &token, made["view"].clone()).await;
        assert!(end["outcome"]["kind"].is_string(), "{end}");
    }
    server.shutdown().await;
    mock.stop();

    let records = read_log(&log);
    assert_eq!(records.len(), 2);
    for (record, person) in records.iter().zip(["human:alice", "human:bruno"]) {
        assert_eq!(record.seats.learner.player.as_str(), person);
        assert!(record.has_person() && !record.is_people_dialogue());
        assert!(record
            .seats
            .opponent
            .player
            .as_str()
            .starts_with("openai:mock@"));
    }
    let mut verify = vec![
        "replay".to_string(),
        log.display().to_string(),
        "--verify".into(),
    ];
    for file in &scenarios {
        verify.extend(["--scenarios".into(), file.display().to_string()]);
    }
    succeeded(dealgym_cli(&verify));
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--quiet",
        &log.display().to_string(),
        "--out",
        &report.display().to_string(),
    ]));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains("| casino | agent_") || md.contains("| casino |"),
        "{md}"
    );
    assert!(md.contains("people"), "{md}");
    // The people's turns export as SFT chat, as any seat's.
    let out = succeeded(dealgym_cli([
        "export",
        "--format",
        "messages",
        "--seats",
        "both",
        &log.display().to_string(),
        "--scenarios",
        &scenarios[1].display().to_string(),
        "--scenarios",
        &scenarios[2].display().to_string(),
    ]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_share_a_game_by_its_join_link() {
    let dir = temp_dir("play-two-people");
    let (server, log, _) = server(&dir, |_| {}).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let (status, made) = create(
        &http,
        &base,
        json!({"name": "ann", "family": "casino", "opponent": "person"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let id = made["game_id"].as_str().unwrap().to_string();
    let ann = made["seat_token"].as_str().unwrap().to_string();
    let path = made["view"]["join"]["path"].as_str().unwrap();
    let join_token = path.rsplit_once('.').unwrap().1;
    let (status, wrong) = post(
        &http,
        format!("{base}/play/api/games/{id}/join"),
        None,
        json!({"name": "bob", "join_token": "nope"}),
    )
    .await;
    assert_eq!(status, 403, "{wrong}");
    let (status, joined) = post(
        &http,
        format!("{base}/play/api/games/{id}/join"),
        None,
        json!({"name": "bob", "join_token": join_token}),
    )
    .await;
    assert_eq!(status, 200, "{joined}");
    let bob = joined["seat_token"].as_str().unwrap().to_string();
    let (status, again) = post(
        &http,
        format!("{base}/play/api/games/{id}/join"),
        None,
        json!({"name": "cy", "join_token": join_token}),
    )
    .await;
    assert_eq!(status, 403, "{again}");
    // Whoever is to move walks away; the other may not step for them.
    let ann_view = get(&http, format!("{base}/play/api/games/{id}"), &ann).await;
    let (mover, waiter) = if ann_view["your_turn"] == true {
        (&ann, &bob)
    } else {
        (&bob, &ann)
    };
    let (status, _) = step(
        &http,
        &base,
        &id,
        Some(waiter),
        json!({"move": {"kind": "walk_away"}}),
    )
    .await;
    assert_eq!(status, 409);
    // A person's Thought is kept in the record and never reaches the other person.
    let offer = json!({"thought": "SECRET-PLAN", "talk": "One of each for you?",
        "move": {"kind": "submit", "terms": {"food": 2, "water": 2, "firewood": 2}, "offer": null}});
    let (status, sent) = step(&http, &base, &id, Some(mover), offer).await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["your_turn"], false);
    let seen = get(&http, format!("{base}/play/api/games/{id}"), waiter).await;
    let text = seen["transcript"].to_string();
    assert!(
        text.contains("One of each for you?") && !text.contains("SECRET-PLAN"),
        "{seen}"
    );
    let accept = seen["form"]["moves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["kind"] == "accept")
        .unwrap();
    assert!(
        accept["label"].as_str().unwrap().contains("food:1"),
        "{accept}"
    );
    let (status, end) = step(
        &http,
        &base,
        &id,
        Some(waiter),
        json!({"talk": "Bye.", "move": {"kind": "walk_away", "terms": null}}),
    )
    .await;
    assert_eq!(status, 200, "{end}");
    assert_eq!(end["outcome"]["kind"], "walk_away");
    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    assert!(records[0].is_people_dialogue());
    assert!(serde_json::to_string(&records[0])
        .unwrap()
        .contains("SECRET-PLAN"));
    assert_eq!(records[0].seats.learner.player.as_str(), "human:ann");
    assert_eq!(records[0].seats.opponent.player.as_str(), "human:bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_study_assigns_games_to_participants_in_turn() {
    let dir = temp_dir("play-study");
    let file = dir.join("study.toml");
    std::fs::write(
        &file,
        "title = \"Campsite study\"\ngames_per_participant = 2\n[[game]]\nfamily = \"casino\"\nopponent = \"rule:linear\"\n[[game]]\nfamily = \"craigslist\"\nopponent = \"rule:boulware\"\nrole = \"buyer\"\n",
    )
    .unwrap();
    let study = Arc::new(Study::load(&file).unwrap());
    let (server, log, _) = server(&dir, |o| {
        o.token = Some("operator-secret".into());
        o.play.as_mut().unwrap().study = Some(study);
    })
    .await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    // The study's routes keep the server's token rules, as every route does.
    let (status, _) = create(&http, &base, json!({"consent": true})).await;
    assert_eq!(status, 401);
    let http = bearer("operator-secret");
    let setup: Value = http
        .get(format!("{base}/play/api/setup"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(setup["study"]["consent_html"]
        .as_str()
        .unwrap()
        .contains("Campsite study"));
    let (status, refused) = create(&http, &base, json!({"name": "x", "family": "ahp"})).await;
    assert_eq!(status, 403, "{refused}");
    let (status, first) = create(&http, &base, json!({"consent": true})).await;
    assert_eq!(status, 201, "{first}");
    let code = first["view"]["study"]["code"].as_str().unwrap().to_string();
    assert_eq!(first["view"]["family"], "casino");
    let token = first["seat_token"].as_str().unwrap();
    let id = first["game_id"].as_str().unwrap();
    let (_, end) = step(
        &http,
        &base,
        id,
        Some(token),
        json!({"move": {"kind": "walk_away"}}),
    )
    .await;
    assert_eq!(end["study"]["next"], true, "{end}");
    let (status, second) = create(&http, &base, json!({"code": code})).await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(second["view"]["family"], "craigslist");
    assert_eq!(second["view"]["you"]["role"], "buyer");
    // A participant who comes back with their code resumes their unfinished game.
    let (status, again) = create(&http, &base, json!({"code": code})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["game_id"], second["game_id"]);
    let (id, token) = (
        again["game_id"].as_str().unwrap(),
        again["seat_token"].as_str().unwrap(),
    );
    let (_, end) = step(
        &http,
        &base,
        id,
        Some(token),
        json!({"move": {"kind": "walk_away"}}),
    )
    .await;
    assert_eq!(end["study"]["next"], false, "{end}");
    let (status, third) = create(&http, &base, json!({"code": code})).await;
    assert_eq!(status, 422, "{third}");
    let (status, unknown) = create(&http, &base, json!({"code": "P-NOPE"})).await;
    assert_eq!(status, 403, "{unknown}");
    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[0].seats.learner.player.as_str(),
        format!("human:{code}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_takes_a_seat_at_an_n_party_table() {
    let dir = temp_dir("play-table");
    let tables = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/deliberation.jsonl");
    let (server, log, _) = server(&dir, |o| o.scenarios.push(tables)).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let (status, made) = create(
        &http,
        &base,
        json!({"name": "tess", "family": "deliberation"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let id = made["game_id"].as_str().unwrap().to_string();
    let token = made["seat_token"].as_str().unwrap().to_string();
    let mut view = made["view"].clone();
    assert_eq!(view["kind"], "table");
    assert!(view["form"]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"] == "option"));
    for _ in 0..40 {
        if view["done"] == true {
            break;
        }
        let terms: serde_json::Map<String, Value> = view["form"]["terms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["key"].as_str().unwrap().to_string(),
                    t["options"][0].clone(),
                )
            })
            .collect();
        let (status, line) = post(
            &http,
            format!("{base}/play/api/games/{id}/line"),
            Some(&token),
            json!({"move": {"kind": "submit", "terms": terms}}),
        )
        .await;
        assert_eq!(status, 200, "{line}");
        let (status, next) = step(
            &http,
            &base,
            &id,
            Some(&token),
            json!({"talk": "I leave.", "move": {"kind": "walk_away"}}),
        )
        .await;
        assert_eq!(status, 200, "{next}");
        view = next;
    }
    assert_eq!(view["done"], true, "{view}");
    server.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"human:tess\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_trades_at_a_market() {
    let dir = temp_dir("play-market");
    let markets = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/market.jsonl");
    let (server, log, _) = server(&dir, |o| o.scenarios.push(markets)).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let (status, made) = create(
        &http,
        &base,
        json!({"name": "mia", "family": "market", "opponent": "rule:truthful"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let id = made["game_id"].as_str().unwrap().to_string();
    let token = made["seat_token"].as_str().unwrap().to_string();
    let mut view = made["view"].clone();
    assert_eq!(view["kind"], "market");
    assert!(
        view["players"].to_string().contains("rule:truthful"),
        "{view}"
    );
    let mut quoted = false;
    for _ in 0..60 {
        if view["done"] == true {
            break;
        }
        let chosen = if quoted {
            json!({"kind": "walk_away"})
        } else {
            json!({"kind": "submit", "terms": {"price": 50}})
        };
        let (status, next) = step(
            &http,
            &base,
            &id,
            Some(&token),
            json!({"talk": "My quote.", "move": chosen}),
        )
        .await;
        assert_eq!(status, 200, "{next}");
        assert!(next["retry"].is_null(), "{next}");
        quoted = true;
        view = next;
    }
    assert_eq!(view["done"], true, "{view}");
    server.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"human:mia\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_study_that_cannot_be_played_is_refused_as_the_server_starts() {
    let dir = temp_dir("play-study-broken");
    let file = dir.join("study.toml");
    for (entry, why) in [
        (
            "scenario_id = \"no-such\"\nopponent = \"rule:linear\"",
            "no-such",
        ),
        (
            "family = \"casino\"\nopponent = \"rule:nonexistent\"",
            "nonexistent",
        ),
        ("family = \"casino\"\nopponent = \"external\"", "external"),
        (
            "family = \"craigslist\"\nopponent = \"rule:linear\"\nrole = \"agent_1\"",
            "agent_1",
        ),
    ] {
        std::fs::write(&file, format!("title = \"t\"\n[[game]]\n{entry}\n")).unwrap();
        let study = Arc::new(Study::load(&file).unwrap());
        let scenarios = scenario_files(&dir, 5);
        let mut options = ServeOptions::new(
            "127.0.0.1:0".parse().unwrap(),
            scenarios,
            dir.join("p.jsonl"),
        );
        options.play = Some(PlayOptions {
            study: Some(study),
            ..PlayOptions::default()
        });
        let e = match Server::start(options).await {
            Ok(_) => panic!("{entry}: started"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("[[game]] 1") && e.contains(why), "{entry}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_never_seats_an_outside_player_and_keeps_live_games() {
    let dir = temp_dir("play-registry");
    let (server, _, _) = server(&dir, |o| o.max_sessions = 2).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    for opponent in ["external", "human:eve"] {
        let (status, refused) = create(
            &http,
            &base,
            json!({"name": "al", "family": "casino", "opponent": opponent}),
        )
        .await;
        assert_eq!(status, 422, "{refused}");
    }
    let (status, refused) = create(
        &http,
        &base,
        json!({"name": "al", "family": "casino", "role": "buyer"}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let (status, live) = create(
        &http,
        &base,
        json!({"name": "al", "family": "casino", "opponent": "rule:linear"}),
    )
    .await;
    assert_eq!(status, 201, "{live}");
    // Games waiting for a second person fill the room; the live game is never let go for them.
    let mut refused = 0;
    for _ in 0..4 {
        let (status, _) = create(
            &http,
            &base,
            json!({"name": "bo", "family": "casino", "opponent": "person"}),
        )
        .await;
        refused += usize::from(status == 503);
    }
    assert!(refused >= 3, "{refused}");
    let id = live["game_id"].as_str().unwrap();
    let seen = get(
        &http,
        format!("{base}/play/api/games/{id}"),
        live["seat_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(seen["game_id"], id, "{seen}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_share_a_market_each_by_their_own_token() {
    let dir = temp_dir("play-market-people");
    let markets = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/market.jsonl");
    let (server, log, _) = server(&dir, |o| o.scenarios.push(markets)).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let (status, made) = create(
        &http,
        &base,
        json!({"name": "ann", "family": "market", "opponent": "person"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let id = made["game_id"].as_str().unwrap().to_string();
    let ann = made["seat_token"].as_str().unwrap().to_string();
    let join = made["view"]["join"]["path"]
        .as_str()
        .unwrap()
        .rsplit_once('.')
        .unwrap()
        .1
        .to_string();
    let (status, joined) = post(
        &http,
        format!("{base}/play/api/games/{id}/join"),
        None,
        json!({"name": "bob", "join_token": join}),
    )
    .await;
    assert_eq!(status, 200, "{joined}");
    let bob = joined["seat_token"].as_str().unwrap().to_string();
    // Both still reach their own seats after the table started.
    let mut done = false;
    for _ in 0..80 {
        let mut moved = false;
        for token in [&ann, &bob] {
            let view = get(&http, format!("{base}/play/api/games/{id}"), token).await;
            assert!(view["error"].is_null(), "{view}");
            if view["done"] == true {
                done = true;
                break;
            }
            if view["your_turn"] == true {
                let (status, next) = step(
                    &http,
                    &base,
                    &id,
                    Some(token),
                    json!({"move": {"kind": "walk_away"}}),
                )
                .await;
                assert_eq!(status, 200, "{next}");
                moved = true;
            }
        }
        if done || !moved {
            break;
        }
    }
    assert!(done, "the market did not end");
    server.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("\"human:ann\"") && text.contains("\"human:bob\""),
        "{text}"
    ); // At a market, the people are one row beside the players, never a player of their own.
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--quiet",
        &log.display().to_string(),
        "--out",
        &report.display().to_string(),
    ]));
    let players = std::fs::read_to_string(report.join("tables/market_players.csv")).unwrap();
    assert!(
        players.lines().any(|l| l.starts_with("people,")) && !players.contains("human:"),
        "{players}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_answered_from_its_own_origin_only() {
    let dir = temp_dir("play-origin");
    let (server, _, _) = server(&dir, |_| {}).await;
    let base = server.base_url();
    let port = server.addr.port();
    let http = reqwest::Client::new();
    let setup = |origin: String, host: String| {
        http.get(format!("{base}/play/api/setup"))
            .header("origin", origin)
            .header("host", host)
            .send()
    };
    let own = setup(
        format!("http://127.0.0.1:{port}"),
        format!("127.0.0.1:{port}"),
    )
    .await
    .unwrap();
    assert_eq!(own.status().as_u16(), 200);
    let other = setup("http://evil.example".into(), format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 403);
    // A page that rebinds its own name to the server sends that name as its Host and Origin.
    let rebound = setup(
        format!("http://evil.example:{port}"),
        format!("evil.example:{port}"),
    )
    .await
    .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    // Only the page's own routes take a same-origin call; the environment's do not.
    let episodes = http
        .post(format!("{base}/v1/episodes"))
        .header("origin", format!("http://127.0.0.1:{port}"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(episodes.status().as_u16(), 403);
    server.shutdown().await;
}
