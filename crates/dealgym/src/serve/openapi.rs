//! `GET /openapi.json`: the server's routes as an OpenAPI 3.1 document, which OpenEnv's
//! validator (`openenv validate --url`) reads for the API's version and for which of OpenEnv's
//! modes the server is in (`/reset`, `/step` and `/state` together: simulation).
//!
//! The routes are registered through [`Routes`], which keeps the list of what the router
//! answers beside the router, so a test checks that the document names every one of them. The
//! bodies are JSON Schemas derived from the wire types ([`super::wire`]) as `/schema` is: what a
//! client sends as it is read, what the server answers as it is written, each shared type once
//! under `components/schemas`.

use std::sync::LazyLock;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter};
use axum::Router;
use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use super::openenv::StepRequest;
use super::rollouts::RolloutRequest;
use super::session::ResetArgs;
use super::wire::{
    Action, EnvState, EpisodeStep, EpisodeView, Health, Metadata, OpenEnvSchema, RestError,
    StepAnswer, StreamError, WsReply,
};
use super::Shared;
use crate::record::EpisodeRecord;

/// The router and the list of what it answers, built together: a route is added here or not
/// at all, so the list cannot miss one.
pub(super) struct Routes {
    router: Router<Shared>,
    registered: Vec<(Method, &'static str)>,
}

impl Routes {
    pub fn new() -> Routes {
        Routes {
            router: Router::new(),
            registered: Vec::new(),
        }
    }

    pub fn get<H: Handler<T, Shared>, T: 'static>(self, path: &'static str, handler: H) -> Routes {
        self.add(Method::GET, MethodFilter::GET, path, handler)
    }

    pub fn post<H: Handler<T, Shared>, T: 'static>(self, path: &'static str, handler: H) -> Routes {
        self.add(Method::POST, MethodFilter::POST, path, handler)
    }

    pub fn delete<H: Handler<T, Shared>, T: 'static>(
        self,
        path: &'static str,
        handler: H,
    ) -> Routes {
        self.add(Method::DELETE, MethodFilter::DELETE, path, handler)
    }

    fn add<H: Handler<T, Shared>, T: 'static>(
        mut self,
        method: Method,
        filter: MethodFilter,
        path: &'static str,
        handler: H,
    ) -> Routes {
        // Two methods on one path merge into one route (axum refuses the same method twice).
        self.router = self.router.route(path, on(filter, handler));
        self.registered.push((method, path));
        self
    }

    pub fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.registered.extend(other.registered);
        self
    }

    /// What the router answers: each method and path.
    #[cfg(test)]
    pub fn registered(&self) -> &[(Method, &'static str)] {
        &self.registered
    }

    pub fn into_router(self) -> Router<Shared> {
        self.router
    }
}

/// The document, derived from the types once.
pub(super) static OPENAPI: LazyLock<Value> = LazyLock::new(derived);

pub(super) async fn openapi() -> axum::Json<&'static Value> {
    axum::Json(&OPENAPI)
}

/// One generator per direction: what a client sends is read (`Contract::Deserialize`: a field
/// with a default is optional), what the server answers is written.
pub(super) struct Schemas {
    sent: SchemaGenerator,
    answered: SchemaGenerator,
}

impl Schemas {
    fn new() -> Schemas {
        let generator = |contract: Contract| {
            SchemaSettings::draft2020_12()
                .with(|s| {
                    s.contract = contract;
                    s.meta_schema = None;
                    s.definitions_path = "/components/schemas".into();
                })
                .into_generator()
        };
        Schemas {
            sent: generator(Contract::Deserialize),
            answered: generator(Contract::Serialize),
        }
    }

    /// A request body of type `T`.
    pub(super) fn body<T: JsonSchema>(&mut self, description: &str) -> Value {
        json!({
            "required": true,
            "description": description,
            "content": {"application/json": {"schema": self.sent.subschema_for::<T>()}},
        })
    }

    /// An answer of type `T`.
    pub(super) fn answer<T: JsonSchema>(&mut self, description: &str) -> Value {
        json!({
            "description": description,
            "content": {"application/json": {"schema": self.answered.subschema_for::<T>()}},
        })
    }

    /// Every type either direction named, once each. A type read and written alike is one
    /// entry; one whose two schemas differ would need two names, which `derived`'s test refuses.
    fn components(mut self) -> Map<String, Value> {
        let mut all = self.answered.take_definitions(true);
        for (name, schema) in self.sent.take_definitions(true) {
            match all.get(&name) {
                Some(written) if *written != schema => panic!(
                    "`{name}` is read and written with different schemas: give one of them its own name"
                ),
                _ => {
                    all.insert(name, schema);
                }
            }
        }
        all
    }
}

/// An operation: its summary, its answers (with the JSON error every refusal is), and its
/// request body if it takes one.
pub(super) fn operation(
    summary: &str,
    body: Option<Value>,
    answers: Value,
    error: &Value,
) -> Value {
    let mut responses = answers;
    responses["default"] = error.clone();
    let mut op = json!({"summary": summary, "responses": responses});
    if let Some(body) = body {
        op["requestBody"] = body;
    }
    op
}

fn derived() -> Value {
    let mut s = Schemas::new();
    let error = s.answer::<RestError>(
        "A refused request: `{\"error\": {\"code\", \"message\"}}`, the message naming what to change (see the serving guide for the codes).",
    );
    let episode_id = json!([{
        "name": "id", "in": "path", "required": true,
        "description": "The episode's id, as its create answered it.",
        "schema": {"type": "string"},
    }]);
    let step_answer =
        "What the seat sees, its reward (`null` on a reset) and whether the episode is over.";
    let mut paths = Map::new();
    let mut path = |path: &str, item: Value| {
        paths.insert(path.to_string(), item);
    };
    path(
        "/health",
        json!({"get": operation(
            "Whether the server is up (needs no token).", None,
            json!({"200": s.answer::<Health>("Always `healthy` while the server runs.")}), &error)}),
    );
    path(
        "/metadata",
        json!({"get": operation(
            "The environment's name, description and version (OpenEnv's `EnvironmentMetadata`).", None,
            json!({"200": s.answer::<Metadata>("The environment.")}), &error)}),
    );
    path(
        "/schema",
        json!({"get": operation(
            "The action, observation and state schemas (OpenEnv's `SchemaResponse`), derived from the wire types.", None,
            json!({"200": s.answer::<OpenEnvSchema>("The three schemas.")}), &error)}),
    );
    path(
        "/openapi.json",
        json!({"get": operation("This document.", None,
            json!({"200": {"description": "An OpenAPI 3.1 document.",
                "content": {"application/json": {"schema": {"type": "object"}}}}}), &error)}),
    );
    path(
        "/reset",
        json!({"post": operation(
            "OpenEnv's stateless reset: a fresh episode, played by the in-process seats up to the learner's first turn (the episode is not kept; use /ws or /v1/episodes to play it).",
            Some(s.body::<ResetArgs>("The reset kwargs; an empty body is `{}`.")),
            json!({"200": s.answer::<StepAnswer>(step_answer)}), &error)}),
    );
    path(
        "/step",
        json!({"post": operation(
            "OpenEnv's stateless step: a fresh episode from the reset kwargs sent beside `action`, with the action played as its first client turn.",
            Some(s.body::<StepRequest>("The action, and the reset kwargs of the fresh episode.")),
            json!({"200": s.answer::<StepAnswer>(step_answer)}), &error)}),
    );
    path(
        "/state",
        json!({"get": operation(
            "OpenEnv's stateless state: a fresh environment's (no episode). A WebSocket's `state` message gives its episode's.", None,
            json!({"200": s.answer::<EnvState>("The state of an environment with no episode.")}), &error)}),
    );
    path(
        "/ws",
        json!({"get": operation(
            "OpenEnv's stateful protocol: a WebSocket taking `{\"type\": \"reset\" | \"step\" | \"state\" | \"mcp\" | \"close\", \"data\"}` and answering `WsReply` messages; one episode per connection.",
            None,
            json!({"101": {"description": "Switching to the WebSocket; each message the server sends is a WsReply.",
                "content": {"application/json": {"schema": s.answered.subschema_for::<WsReply>()}}}}),
            &error)}),
    );
    path(
        "/mcp",
        json!({
            "post": operation(
                "MCP (Model Context Protocol) over its streamable HTTP transport: one JSON-RPC 2.0 request (initialize, ping, tools/list, tools/call; the tools make_offer, accept, reject, walk_away, say, start_negotiation, observe), one JSON-RPC 2.0 response; a notification is answered 202. `initialize` answers the session's id in the `Mcp-Session-Id` header, sent back with every later request.",
                Some(json!({"required": true, "content": {"application/json": {"schema": jsonrpc_request()}}})),
                json!({"200": {"description": "A JSON-RPC 2.0 response: `result` or `error`.",
                    "content": {"application/json": {"schema": jsonrpc_response()}}},
                    "202": {"description": "A notification, accepted."}}),
                &error),
            "get": operation(
                "No stream of server-initiated messages: answered 405.", None,
                json!({"405": {"description": "This server sends no server-initiated messages."}}), &error),
            "delete": operation(
                "End the MCP session named by the `Mcp-Session-Id` header, dropping its negotiation.", None,
                json!({"204": {"description": "The session is ended."}}), &error),
        }),
    );
    path(
        "/v1/episodes",
        json!({"post": operation(
            "Start an episode kept by the server (native REST).",
            Some(s.body::<ResetArgs>("The reset kwargs; an empty body is `{}`.")),
            json!({"201": s.answer::<EpisodeStep>("The new episode's id, the seat to move and what it sees.")}), &error)}),
    );
    path(
        "/v1/episodes/{id}",
        json!({
            "parameters": episode_id.clone(),
            "get": operation(
                "Where the episode stands and what the seat to move sees.", None,
                json!({"200": s.answer::<EpisodeView>("The state and the observation.")}), &error),
            "delete": operation(
                "Drop the episode: takes its token in `x-seat-token` (the `episode_token` its creation answered; else 403). An unfinished episode is logged as abandoned (an `error` ending of kind `abandoned`).", None,
                json!({"204": {"description": "Dropped."}}), &error),
        }),
    );
    path(
        "/v1/episodes/{id}/step",
        json!({
            "parameters": episode_id,
            "post": operation(
                "Play the seat to move's completion (self-play: `seat` names it).",
                Some(s.body::<Action>("The raw completion, and in token-exact mode what the model sampled.")),
                json!({"200": s.answer::<EpisodeStep>(step_answer)}), &error),
        }),
    );
    path(
        "/v1/rollouts",
        json!({"post": operation(
            "Play whole episodes against the caller's endpoint and the server's opponent, streamed as JSON lines.",
            Some(s.body::<RolloutRequest>("Which scenarios, how many per group, the learner and the format.")),
            json!({"200": {
                "description": "JSON lines: with `format` `records`, one EpisodeRecord per episode as it ends (or a StreamError line for one that could not be played); with a `dealgym export` format, that format's lines per GRPO group. Headers `x-dealgym-episodes` (the count planned) and `x-dealgym-request` (the request's tag).",
                "content": {"application/x-ndjson": {"schema": {"oneOf": [
                    s.answered.subschema_for::<EpisodeRecord>(),
                    s.answered.subschema_for::<StreamError>(),
                ]}}},
            }}),
            &error)}),
    );
    for (route, item) in super::table_rest::describe(&mut s, &error) {
        path(route, item);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "dealgym",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Two-party negotiations as an environment: OpenEnv's protocol (/ws, /reset, /step, /state, /schema, /metadata, /health, /mcp), native REST (/v1/episodes; n-party tables and markets at /v1/tables, a session per seat) and the rollout service (/v1/rollouts).",
        },
        "paths": paths,
        "components": {"schemas": s.components()},
    })
}

/// JSON-RPC 2.0's request, as MCP sends it.
fn jsonrpc_request() -> Value {
    json!({
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "method": {"type": "string", "description": "The MCP method (`initialize`, `tools/list`, `tools/call`, …)."},
            "params": {"type": "object"},
            "id": {"type": ["string", "integer", "null"]},
        },
    })
}

/// JSON-RPC 2.0's response: a `result` or an `error`.
fn jsonrpc_response() -> Value {
    json!({
        "type": "object",
        "required": ["jsonrpc"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"type": ["string", "integer", "null"]},
            "result": {},
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "integer"},
                    "message": {"type": "string"},
                    "data": {},
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every method and path the router answers is in the document, under that method.
    #[test]
    fn the_document_names_every_route_the_router_registers() {
        let paths = OPENAPI["paths"].as_object().expect("paths");
        let routes = super::super::routes();
        assert!(!routes.registered().is_empty());
        for (method, path) in routes.registered() {
            let item = paths
                .get(*path)
                .unwrap_or_else(|| panic!("{path} is routed but not in /openapi.json"));
            let method = method.as_str().to_ascii_lowercase();
            assert!(
                item.get(&method).is_some(),
                "{method} {path} is routed but not in /openapi.json"
            );
        }
    }

    /// What `openenv validate --url` reads: `info.version` a string, and OpenEnv's simulation
    /// mode (`/reset`, `/step` and `/state` all present: `mode_endpoint_consistency`).
    #[test]
    fn the_document_passes_openenvs_runtime_checks() {
        assert_eq!(OPENAPI["openapi"], "3.1.0");
        assert_eq!(OPENAPI["info"]["title"], "dealgym");
        assert_eq!(OPENAPI["info"]["version"], env!("CARGO_PKG_VERSION"));
        let paths = OPENAPI["paths"].as_object().expect("paths");
        for path in ["/reset", "/step", "/state"] {
            assert!(paths.contains_key(path), "{path}");
        }
        assert!(paths["/mcp"].get("post").is_some());
    }

    /// Every `$ref` points into `components/schemas`, at a schema that is there.
    #[test]
    fn every_reference_resolves() {
        fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
            match value {
                Value::Object(map) => {
                    for (key, v) in map {
                        match (key.as_str(), v) {
                            ("$ref", Value::String(r)) => out.push(r),
                            _ => refs(v, out),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        refs(&OPENAPI, &mut found);
        assert!(!found.is_empty());
        let schemas = OPENAPI["components"]["schemas"]
            .as_object()
            .expect("schemas");
        for r in found {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{r} is not a component"));
            assert!(schemas.contains_key(name), "{r}");
        }
        for name in ["DealAction", "StepAnswer", "DealState", "RestError"] {
            assert!(schemas.contains_key(name), "{name}");
        }
    }
}
