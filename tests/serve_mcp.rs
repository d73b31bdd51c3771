//! MCP against a live `dealgym serve`: the handshake of MCP's streamable HTTP transport, the
//! tools listed with the scenario's own terms, a negotiation to a deal through them, every
//! malformed tool call answered with the malformed-turn policy (never a crash, never a move),
//! OpenEnv's WebSocket `mcp` message on the socket's own episode, and a log that replays.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{read_log, scenario_files, temp_dir, ws_connect, ws_send};
use dealgym::replay::{verify, VerifyOptions};
use dealgym::serve::{ServeOptions, Server};

async fn server(name: &str) -> (Server, PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(name);
    let scenarios = scenario_files(&dir, 20);
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenarios.clone(),
        log.clone(),
    );
    options.opponent = "rule:linear".into();
    (Server::start(options).await.unwrap(), log, scenarios)
}

/// An MCP client over HTTP: its session id once `initialize` gave one.
struct Mcp {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    next: u64,
}

impl Mcp {
    fn new(server: &Server) -> Mcp {
        Mcp {
            http: reqwest::Client::new(),
            url: format!("{}/mcp", server.base_url()),
            session: None,
            next: 0,
        }
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.unwrap()
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let answer: Value = self.post(&body).await.json().await.unwrap();
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], self.next, "{answer}");
        answer
    }

    async fn initialize(&mut self) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}});
        let response = self.post(&body).await;
        assert_eq!(response.status(), 200);
        self.session = Some(
            response.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_string(),
        );
        let answer: Value = response.json().await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(&initialized).await.status(), 202);
        answer["result"].clone()
    }

    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        answer["result"].clone()
    }
}

fn observation(result: &Value) -> &Value {
    &result["structuredContent"]["observation"]
}

#[tokio::test]
async fn an_mcp_client_lists_the_tools_and_negotiates_a_deal_through_them() {
    let (server, log, scenarios) = server("mcp-deal").await;
    let mut mcp = Mcp::new(&server);
    let info = mcp.initialize().await;
    assert_eq!(info["protocolVersion"], "2025-06-18");
    assert_eq!(info["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(info["serverInfo"]["name"], "dealgym");

    let started = mcp
        .call("start_negotiation", json!({"family": "casino", "seed": 3}))
        .await;
    assert_eq!(started["isError"], false, "{started}");
    let state = observation(&started)["state"].clone();
    assert!(
        observation(&started)["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("make_offer(terms, message)"),
        "the learner is told to act through the tools"
    );
    // The tools now carry the scenario's own terms.
    let tools = mcp.request("tools/list", json!({})).await["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "make_offer",
            "accept",
            "reject",
            "walk_away",
            "say",
            "start_negotiation",
            "observe"
        ]
    );
    let terms = &tools[0]["inputSchema"]["properties"]["terms"];
    for item in state["public"]["items"].as_array().unwrap() {
        let name = item["name"].as_str().unwrap();
        assert_eq!(
            terms["properties"][name]["maximum"], item["count"],
            "{name}"
        );
    }

    // Ask for everything, then take whatever the rule opponent offers.
    let mut result = started;
    for _ in 0..20 {
        if observation(&result)["done"] == true {
            break;
        }
        let legal = observation(&result)["state"]["legal_actions"].clone();
        result = if legal.as_array().unwrap().contains(&json!("accept")) {
            mcp.call("accept", json!({"message": "Deal."})).await
        } else {
            let all: serde_json::Map<String, Value> = state["public"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i["name"].as_str().unwrap().to_string(), i["count"].clone()))
                .collect();
            mcp.call("make_offer", json!({"terms": all, "message": "All of it?"}))
                .await
        };
        assert_eq!(result["isError"], false, "{result}");
    }
    let outcome = &observation(&result)["info"]["outcome"];
    assert_eq!(outcome["kind"], "deal", "{result}");
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("The negotiation is over: deal"));

    server.shutdown().await;
    let records = read_log(&log);
    assert_eq!(records.len(), 1);
    let learner_turns: Vec<_> = records[0]
        .turns
        .iter()
        .filter(|t| t.seat == dealgym::game::Seat::Learner)
        .collect();
    assert!(learner_turns
        .iter()
        .all(|t| t.tool_calls.len() == 1 && t.parsed.format_ok));
    assert_eq!(
        serde_json::to_value(records[0].setup.seats.learner.format).unwrap(),
        "tools"
    );
    let report = verify(&VerifyOptions {
        files: vec![log],
        episode: None,
        scenarios,
        prompts_dir: None,
        rewards: Default::default(),
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
}

/// Each malformed call is the seat's malformed turn: the result says what was wrong
/// (`isError`), the seat is corrected once, and a second malformed call forfeits.
#[tokio::test]
async fn every_malformed_tool_call_gets_the_malformed_turn_policy() {
    let (server, log, _) = server("mcp-malformed").await;
    let mut mcp = Mcp::new(&server);
    mcp.initialize().await;
    let cases = [
        ("haggle", json!({}), "unknown tool `haggle`"),
        ("make_offer", json!({}), "needs `terms`"),
        ("accept", json!({"terms": {}}), "takes no argument `terms`"),
        (
            "make_offer",
            json!({"terms": {"price": 10}, "why": "x"}),
            "takes no argument `why`",
        ),
        ("make_offer", json!({"terms": {"food": 1}}), "unknown term"),
        ("make_offer", json!({"terms": {"price": -5}}), "negative"),
        ("accept", json!({}), "needs an offer to accept"),
        ("make_offer", json!("price 10"), "must be a JSON object"),
        ("reject", json!([1, 2]), "must be a JSON object"),
        (
            "walk_away",
            json!({"message": {"deep": [1]}}),
            "must be a string",
        ),
    ];
    for (i, (tool, arguments, says)) in cases.iter().enumerate() {
        let started = mcp
            .call(
                "start_negotiation",
                json!({"family": "ahp", "seed": i, "first_mover": "learner"}),
            )
            .await;
        assert_eq!(started["isError"], false, "{started}");
        let first = mcp.call(tool, arguments.clone()).await;
        assert_eq!(first["isError"], true, "{tool} {arguments}: {first}");
        let last_turn = &observation(&first)["state"]["last_turn"];
        let error = last_turn["error"]["message"].as_str().unwrap();
        assert!(error.contains(says), "{tool} {arguments}: {error}");
        assert_eq!(last_turn["retry"], true);
        assert!(first["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("could not be used"));
        let second = mcp.call(tool, arguments.clone()).await;
        let outcome = &observation(&second)["info"]["outcome"];
        assert_eq!(outcome["kind"], "format_forfeit", "{tool}: {second}");
    }
    // Before any negotiation, and for a name that is no tool, the answers say what to do.
    let mut fresh = Mcp::new(&server);
    fresh.initialize().await;
    let early = fresh.call("accept", json!({})).await;
    assert_eq!(early["isError"], true);
    assert!(early["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("send a reset first"));
    let unknown = fresh
        .request("tools/call", json!({"name": "haggle", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let nameless = fresh
        .request("tools/call", json!({"name": 3, "arguments": {}}))
        .await;
    assert_eq!(nameless["error"]["code"], -32602, "{nameless}");
    server.shutdown().await;
    assert_eq!(read_log(&log).len(), cases.len());
}

/// What OpenEnv's validator and a careless client send: answered with JSON-RPC, never a crash.
#[tokio::test]
async fn bad_requests_get_json_rpc_errors_and_sessions_are_checked() {
    let (server, _, _) = server("mcp-bad").await;
    let mut mcp = Mcp::new(&server);
    for (body, code) in [
        (json!({}), -32600),
        (json!([1, 2]), -32600),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "nope"}), -32601),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}),
            -32601,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": 3}),
            -32602,
        ),
    ] {
        let response = mcp.post(&body).await;
        assert_eq!(response.status(), 200, "{body}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
    let not_json = mcp.http.post(&mcp.url).body("{").send().await.unwrap();
    let answer: Value = not_json.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32700);
    // Without a session the tools are still listed, with terms as an open object.
    let tools = mcp.request("tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 7);
    // An unknown session is a 404 (the client starts a new one); a deleted one is gone.
    mcp.session = Some("nope".into());
    let stale = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(stale.status(), 404);
    mcp.initialize().await;
    assert_eq!(mcp.request("ping", json!({})).await["result"], json!({}));
    let deleted = mcp
        .http
        .delete(&mcp.url)
        .header("mcp-session-id", mcp.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(gone.status(), 404);
    let stream = mcp.http.get(&mcp.url).send().await.unwrap();
    assert_eq!(stream.status(), 405);
    server.shutdown().await;
}

/// OpenEnv's WebSocket `mcp` message acts on the socket's own episode: reset by OpenEnv's
/// `reset`, moved by tool calls, read back by `state`.
#[tokio::test]
async fn the_websocket_mcp_message_acts_on_the_sockets_episode() {
    let (server, log, _) = server("mcp-ws").await;
    let mut ws = ws_connect(server.addr).await;
    // A seat prompted for text is not moved by tool calls: the answer says how to start one.
    ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"family": "ahp", "seed": 1, "first_mover": "learner"}}),
    )
    .await;
    let refused = ws_send(
        &mut ws,
        json!({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 0, "method": "tools/call",
            "params": {"name": "walk_away", "arguments": {}}}}),
    )
    .await;
    assert_eq!(refused["data"]["result"]["isError"], true, "{refused}");
    assert!(refused["data"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("learner_format"));
    let reset = ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"family": "ahp", "seed": 1, "first_mover": "learner",
            "rules": {"learner_format": "tools"}}}),
    )
    .await;
    assert_eq!(reset["type"], "observation");
    let listed = ws_send(
        &mut ws,
        json!({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}),
    )
    .await;
    assert_eq!(listed["type"], "mcp");
    assert_eq!(
        listed["data"]["result"]["tools"][0]["inputSchema"]["properties"]["terms"]["required"],
        json!(["price"])
    );
    let walked = ws_send(
        &mut ws,
        json!({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "walk_away", "arguments": {"message": "Too dear."}}}}),
    )
    .await;
    assert_eq!(walked["data"]["id"], 2);
    let result = &walked["data"]["result"];
    assert_eq!(result["isError"], false, "{walked}");
    assert_eq!(
        result["structuredContent"]["observation"]["info"]["outcome"]["kind"],
        "walk_away"
    );
    let state = ws_send(&mut ws, json!({"type": "state"})).await;
    assert_eq!(state["data"]["done"], true);
    // OpenEnv's own `step` carries tool calls too, as a chat completion's message holds them.
    ws_send(
        &mut ws,
        json!({"type": "reset", "data": {"family": "casino", "seed": 2, "first_mover": "learner",
            "rules": {"learner_format": "tools"}}}),
    )
    .await;
    let offered = ws_send(
        &mut ws,
        json!({"type": "step", "data": {"message": "I want the food.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "make_offer",
             "arguments": "{\"terms\": {\"food\": 3, \"water\": 0, \"firewood\": 0}}"}}]}}),
    )
    .await;
    assert_eq!(offered["type"], "observation", "{offered}");
    let last = &offered["data"]["observation"]["state"]["last_turn"];
    assert_eq!(last["read"]["kind"], "submit", "{offered}");
    assert_eq!(last["read"]["terms"]["food"], 3);
    assert_eq!(last["format_ok"], true);
    server.shutdown().await;
    let records = read_log(&log);
    // The text-format episode dropped on reset is not logged; the tools one is, format-ok.
    assert_eq!(records[0].turns[0].tool_calls[0].function.name, "walk_away");
    assert!(records[0].turns[0].parsed.format_ok);
}

/// MCP plays an n-party table as OpenEnv does, over the server's one registry: a
/// `start_negotiation` naming a table scenario with `learner_role` seats the client there in
/// the tools format (every other seat `rule:deliberation`), `tools/list` answers the table's
/// tools (`accept` names an offer), each move tool's call is the seat's turn, and the table's
/// record — the client seat's turns carrying its calls — is logged with the reward the last
/// result answered. `start_negotiation` refused tables before.
#[tokio::test]
async fn an_mcp_client_plays_a_seat_at_a_table_through_its_tools() {
    let dir = temp_dir("mcp-table");
    let log = dir.join("serve.jsonl");
    let table =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/table/six_party.jsonl");
    let options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), vec![table], log.clone());
    let server = Server::start(options).await.unwrap();
    let mut mcp = Mcp::new(&server);
    mcp.initialize().await;

    let started = mcp
        .call(
            "start_negotiation",
            json!({"scenario_id": "deliberation:test:cooperative", "seed": 9, "learner_role": "party_2"}),
        )
        .await;
    assert_eq!(started["isError"], false, "{started}");
    let seat = observation(&started);
    assert_eq!(seat["role"], "party_2", "{started}");
    assert_eq!(seat["your_turn"], true, "{started}");
    assert_eq!(seat["tools"][1]["function"]["name"], "accept", "{started}");

    let listed = mcp.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "make_offer",
            "accept",
            "reject",
            "walk_away",
            "say",
            "start_negotiation",
            "observe"
        ]
    );
    assert_eq!(
        tools[1]["inputSchema"]["required"],
        json!(["offer"]),
        "{listed}"
    );

    let mut last = started;
    let mut calls = 0;
    for _ in 0..32 {
        let seen = mcp.call("observe", json!({})).await;
        assert_eq!(seen["isError"], false, "{seen}");
        assert_eq!(observation(&seen)["role"], "party_2", "{seen}");
        if observation(&seen)["done"] == true {
            break;
        }
        last = match observation(&seen)["state"]["offers"]
            .as_array()
            .unwrap()
            .last()
        {
            Some(offer) => {
                mcp.call(
                    "accept",
                    json!({"offer": offer["id"], "message": "Agreed."}),
                )
                .await
            }
            None => mcp.call("say", json!({"text": "Let us see."})).await,
        };
        calls += 1;
        assert_eq!(last["isError"], false, "{last}");
        assert_eq!(observation(&last)["error"], Value::Null, "{last}");
    }
    assert_eq!(
        last["structuredContent"]["done"], true,
        "the table ended: {last}"
    );
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("The negotiation is over: "), "{text}");

    let records: Vec<dealgym::record::TableRecord> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "one table record");
    let record = &records[0];
    assert_eq!(
        serde_json::to_value(record.setup.format).unwrap(),
        json!("tools")
    );
    let mine: Vec<_> = record
        .turns
        .iter()
        .filter(|t| t.role == "party_2")
        .collect();
    assert_eq!(mine.len(), calls, "every call is one of the seat's turns");
    for turn in &mine {
        let called = &turn.turn.completion.tool_calls;
        assert_eq!(called.len(), 1, "{turn:?}");
        assert!(called[0].id.starts_with("mcp_"), "{turn:?}");
        assert!(turn.turn.parsed.format_ok, "{turn:?}");
    }
    assert_eq!(
        last["structuredContent"]["reward"].as_f64().unwrap(),
        record.rewards["party_2"]
    );
    assert!(
        text.ends_with(&format!("your reward: {}.", record.rewards["party_2"])),
        "{text}"
    );
    server.shutdown().await;
}
