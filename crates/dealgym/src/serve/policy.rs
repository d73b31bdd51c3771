//! What a client may choose. A client of the server names players, endpoints and files only as
//! the operator allows: the opponents of the server's config (`[players.NAME]`), the built-in
//! rules, the operator's own `--opponent`, and `external`; a `script:FILE` only with
//! `--allow-client-scripts`; a URL (a rollout learner's endpoint, the token-exact policy
//! server, an `openai:MODEL@URL` opponent) only when `--allow-endpoint` lists its origin, and
//! the server's HTTP client follows no redirect (`llm::http_client`). Otherwise a
//! client could read the server's files, grow it without bound (`script:/dev/zero`) or make it
//! call any host (server-side request forgery). A browser page the user visits is refused by
//! its `Origin` header: a request that carries one must name an origin `--allow-origin`
//! lists, so no web page can drive a local server through the user's browser.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::HeaderMap;
use reqwest::Url;
use serde_json::{Map, Value};

use super::error::ServeError;
use crate::agents::PlayerConfig;
use crate::limits::shown;
use crate::llm::{check_url, EndpointSettings};

/// The operator's allowances (the `--allow-*` flags of `dealgym serve`) and bounds
/// (`--max-client-*`).
#[derive(Debug, Clone)]
pub struct ClientPolicy {
    /// Endpoints a client may name: each an origin (`http://127.0.0.1:8000`; a path given
    /// with it is ignored: every route of an allowed origin is allowed), or `*` for any.
    pub endpoints: Vec<String>,
    /// A client may name `script:FILE` opponents (files on the server's disk).
    pub scripts: bool,
    /// Browser origins allowed to call the server (`Origin` header); none by default.
    pub origins: Vec<String>,
    /// Host names a loopback server answers besides `localhost` and loopback addresses
    /// (`--allow-host`, for a proxy that passes its public name on).
    pub hosts: Vec<String>,
    /// The longest per-call timeout (`timeout_s`) a client may give an endpoint the server
    /// calls for it (`--max-client-timeout-s`): a call that hangs holds one of the rollout
    /// permits every client shares for that long.
    pub max_call_timeout: Duration,
    /// The longest wait between tries a client may ask for (`backoff_s`, `backoff_max_s`;
    /// `--max-client-backoff-s`): it keeps its episode, and its request's place, alive.
    pub max_backoff: Duration,
    /// The most retries a client may ask for (`retries`; `--max-client-retries`): with the
    /// timeout, what bounds how long one call to an endpoint that hangs holds its permit.
    pub max_retries: u32,
}

impl Default for ClientPolicy {
    fn default() -> ClientPolicy {
        ClientPolicy {
            endpoints: Vec::new(),
            scripts: false,
            origins: Vec::new(),
            hosts: Vec::new(),
            max_call_timeout: Duration::from_secs(crate::limits::DEFAULT_CLIENT_TIMEOUT_S),
            max_backoff: Duration::from_secs(crate::limits::DEFAULT_CLIENT_BACKOFF_S),
            max_retries: crate::limits::DEFAULT_CLIENT_RETRIES as u32,
        }
    }
}

impl ClientPolicy {
    /// Every allowance parses; called at startup, so a typo is refused before serving.
    pub fn check(&self) -> Result<(), String> {
        for entry in &self.endpoints {
            if entry != "*" {
                allowed_url(entry).map_err(|e| format!("--allow-endpoint {entry}: {e}"))?;
            }
        }
        for origin in &self.origins {
            let url = Url::parse(origin).map_err(|e| format!("--allow-origin {origin}: {e}"))?;
            if url.origin().ascii_serialization() != origin.trim_end_matches('/') {
                return Err(format!(
                    "--allow-origin {origin}: give an origin alone, like http://localhost:3000"
                ));
            }
        }
        Ok(())
    }

    /// May a client name this opponent? `default` is the operator's `--opponent`.
    pub(crate) fn opponent(
        &self,
        spec: &str,
        default: &str,
        players: &BTreeMap<String, PlayerConfig>,
    ) -> Result<(), ServeError> {
        let spec = spec.trim();
        if spec == default || spec == super::EXTERNAL || players.contains_key(spec) {
            return Ok(());
        }
        if spec.starts_with("rule:") {
            return Ok(());
        }
        // A narrated player is its decider and its narrator: each is held to the same policy.
        if let Some(parts) = crate::agents::narrated_parts(spec) {
            let (decider, narrator) =
                parts.map_err(|e| ServeError::Validation(format!("opponent: {e}")))?;
            self.opponent(decider, default, players)?;
            return self.opponent(narrator, default, players);
        }
        if spec.starts_with("script:") {
            if self.scripts {
                return Ok(());
            }
            return Err(ServeError::Forbidden(
                "a client may not name a file: `script:` opponents need the server's --allow-client-scripts; \
                 name a rule:NAME or one of the server's [players.NAME]"
                    .into(),
            ));
        }
        // The URLs the player will call, read by the player's own reader.
        if let Some((_, urls)) = crate::agents::openai_spec(spec)
            .map_err(|e| ServeError::Validation(format!("opponent: {e}")))?
        {
            for url in &urls {
                self.endpoint("opponent", url)?;
            }
            return Ok(());
        }
        // Anything else is not a spec at all; the player's own parser says so.
        Ok(())
    }

    /// May a client have the server call `url` (named `what` in the refusal)?
    pub(crate) fn endpoint(&self, what: &str, url: &str) -> Result<(), ServeError> {
        let given = check_url(what, url).map_err(ServeError::Validation)?;
        // By origin: a client reaches the routes an OpenAI-compatible server has beside its
        // chat route (`/tokenize`, `/health`, templates) on the same origin, so a path prefix
        // would promise what it cannot keep.
        let allowed = self.endpoints.iter().any(|entry| {
            entry == "*"
                || allowed_url(entry).is_ok_and(|allowed| allowed.origin() == given.origin())
        });
        if allowed {
            Ok(())
        } else {
            Err(ServeError::Forbidden(format!(
                "{what}: the server does not call {}: its operator lists the endpoints a client may name with --allow-endpoint",
                given.origin().ascii_serialization()
            )))
        }
    }

    /// A client's endpoint `settings` (`what` names them) within the operator's bounds on
    /// time: a `timeout_s`, `backoff_s`, `backoff_max_s` or `retries` the client gave (a key of
    /// `given`) past its bound is refused, naming the bound and its flag; one left to its
    /// default is lowered to the bound. So one call holds its episode's permit for at most
    /// (1 + retries) × timeout.
    pub(crate) fn call_times(
        &self,
        what: &str,
        given: &Map<String, Value>,
        settings: &mut EndpointSettings,
    ) -> Result<(), ServeError> {
        let timeout = (self.max_call_timeout, "--max-client-timeout-s");
        let backoff = (self.max_backoff, "--max-client-backoff-s");
        for (key, value, (bound, flag)) in [
            ("timeout_s", &mut settings.timeout_s, timeout),
            ("backoff_s", &mut settings.backoff_s, backoff),
            ("backoff_max_s", &mut settings.backoff_max_s, backoff),
        ] {
            let most = bound.as_secs_f64();
            if *value <= most {
                continue;
            }
            if given.contains_key(key) {
                return Err(ServeError::Validation(format!(
                    "{what}: {key} {} is over this server's limit of {} s ({flag})",
                    shown(*value),
                    shown(most)
                )));
            }
            *value = most;
        }
        if settings.retries > self.max_retries {
            if given.contains_key("retries") {
                return Err(ServeError::Validation(format!(
                    "{what}: retries {} is over this server's limit of {} (--max-client-retries)",
                    settings.retries, self.max_retries
                )));
            }
            settings.retries = self.max_retries;
        }
        Ok(())
    }

    /// A request from a browser page (it carries `Origin`) must come from an allowed origin.
    pub(crate) fn origin(&self, headers: &HeaderMap) -> Result<(), ServeError> {
        let Some(origin) = headers.get(axum::http::header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("");
        if self
            .origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
        {
            return Ok(());
        }
        Err(ServeError::Forbidden(format!(
            "requests from browser pages are refused (Origin `{}`); the operator allows an origin with --allow-origin",
            origin.chars().take(100).collect::<String>()
        )))
    }
}

impl ClientPolicy {
    /// A server bound to loopback answers only requests addressed to a loopback name
    /// (`Host`): a web page that points a name it controls at 127.0.0.1 (DNS rebinding) is
    /// same-origin to the browser and sends no `Origin` on a GET, but its `Host` is its own name.
    pub(crate) fn host(
        &self,
        headers: &HeaderMap,
        bound: std::net::IpAddr,
    ) -> Result<(), ServeError> {
        if !bound.is_loopback() {
            return Ok(());
        }
        let Some(host) = headers.get(axum::http::header::HOST) else {
            return Ok(());
        };
        let host = host.to_str().unwrap_or("");
        if self.names_loopback(host) {
            return Ok(());
        }
        Err(ServeError::Forbidden(format!(
            "a server on loopback answers requests to localhost only, not to `{}`; the operator allows a name with --allow-host",
            host.chars().take(100).collect::<String>()
        )))
    }
}

impl ClientPolicy {
    /// Whether a `Host` value names this machine's loopback: `localhost`, a loopback address,
    /// or an `--allow-host` name.
    fn names_loopback(&self, host: &str) -> bool {
        let name = host_name(host);
        match name.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => {
                name.eq_ignore_ascii_case("localhost")
                    || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(&name))
            }
        }
    }

    /// Whether a `Host` value names this very server: as [`ClientPolicy::names_loopback`],
    /// or the address it is bound to. A page that rebinds a name of its own to the server
    /// sends that name, never one of these.
    pub(crate) fn names_self(&self, host: &str, bound: std::net::IpAddr) -> bool {
        self.names_loopback(host)
            || host_name(host)
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip == bound)
    }
}

/// The name or address of a `Host` value, without its port or brackets.
fn host_name(host: &str) -> String {
    let name = Url::parse(&format!("http://{host}/"))
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    name.trim_matches(|c| c == '[' || c == ']').to_string()
}

/// An `--allow-endpoint` entry as a URL: http(s), with a host, by the rule every endpoint is
/// read by (`llm::check_url`).
fn allowed_url(entry: &str) -> Result<Url, String> {
    check_url("an allowed endpoint", entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(endpoints: &[&str]) -> ClientPolicy {
        ClientPolicy {
            endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
            ..ClientPolicy::default()
        }
    }

    #[test]
    fn a_client_names_no_file_and_no_url_unless_the_operator_allows_it() {
        let none = policy(&[]);
        let players = BTreeMap::new();
        assert!(none
            .opponent("rule:tough", "rule:boulware", &players)
            .is_ok());
        assert!(none.opponent("external", "rule:boulware", &players).is_ok());
        assert!(none
            .opponent("script:a.json", "script:a.json", &players)
            .is_ok());
        assert!(matches!(
            none.opponent("script:/etc/passwd", "rule:boulware", &players),
            Err(ServeError::Forbidden(_))
        ));
        assert!(matches!(
            none.opponent("openai:m@http://10.0.0.1/v1", "rule:boulware", &players),
            Err(ServeError::Forbidden(_))
        ));
        // What is checked is what the player calls: an allowed URL spelled into the model
        // name does not let another through.
        let one = policy(&["http://127.0.0.1:8000"]);
        assert!(one
            .opponent(
                "openai:m@http://127.0.0.1:8000/v1",
                "rule:boulware",
                &players
            )
            .is_ok());
        assert!(matches!(
            one.opponent(
                "openai:m@HTTP://127.0.0.1:8000/v1@http://127.0.0.1:9999/v1",
                "rule:boulware",
                &players
            ),
            Err(ServeError::Forbidden(_))
        ));
        let scripts = ClientPolicy {
            scripts: true,
            ..ClientPolicy::default()
        };
        assert!(scripts
            .opponent("script:x.json", "rule:boulware", &players)
            .is_ok());
        // A narrated opponent is held to the policy through both of its parts.
        assert!(one
            .opponent(
                "narrate:rule:linear+openai:m@http://127.0.0.1:8000/v1",
                "rule:boulware",
                &players
            )
            .is_ok());
        for refused in [
            "narrate:rule:linear+openai:m@http://10.0.0.1/v1",
            "narrate:script:/etc/passwd+openai:m@http://127.0.0.1:8000/v1",
        ] {
            assert!(
                matches!(
                    one.opponent(refused, "rule:boulware", &players),
                    Err(ServeError::Forbidden(_))
                ),
                "{refused}"
            );
        }
    }

    #[test]
    fn an_allowed_endpoint_matches_by_origin() {
        let p = policy(&["http://127.0.0.1:8000/v1"]);
        assert!(p.endpoint("learner", "http://127.0.0.1:8000/v1").is_ok());
        assert!(p
            .endpoint("learner", "http://127.0.0.1:8000/tokenize")
            .is_ok());
        for refused in [
            "http://127.0.0.1:8001/v1",
            "https://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000@evil.example/v1",
            "http://localhost:8000/v1",
        ] {
            assert!(
                matches!(
                    p.endpoint("learner", refused),
                    Err(ServeError::Forbidden(_))
                ),
                "{refused}"
            );
        }
        assert!(matches!(
            p.endpoint("learner", "not a url"),
            Err(ServeError::Validation(_))
        ));
        assert!(policy(&["*"])
            .endpoint("learner", "http://anywhere:1/v1")
            .is_ok());
        assert!(policy(&["ftp://x"]).check().is_err());
        assert!(policy(&["http://127.0.0.1:8000"]).check().is_ok());
    }

    #[test]
    fn a_loopback_server_answers_loopback_names_only() {
        let lo: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let p = ClientPolicy {
            hosts: vec!["dealgym.internal".into()],
            ..ClientPolicy::default()
        };
        let with = |host: &str| {
            let mut h = HeaderMap::new();
            h.insert("host", host.parse().unwrap());
            h
        };
        for ok in [
            "localhost:8100",
            "127.0.0.1:8100",
            "[::1]:8100",
            "LOCALHOST",
            "dealgym.internal:80",
        ] {
            assert!(p.host(&with(ok), lo).is_ok(), "{ok}");
        }
        for refused in ["rebind.evil.example:8100", "10.0.0.1:8100", ""] {
            assert!(
                matches!(p.host(&with(refused), lo), Err(ServeError::Forbidden(_))),
                "{refused}"
            );
        }
        assert!(p
            .host(&with("rebind.evil.example"), "0.0.0.0".parse().unwrap())
            .is_ok());
        assert!(p.host(&HeaderMap::new(), lo).is_ok());
    }

    #[test]
    fn a_browser_origin_is_refused_unless_listed() {
        let mut headers = HeaderMap::new();
        let p = ClientPolicy {
            origins: vec!["http://localhost:3000".into()],
            ..ClientPolicy::default()
        };
        assert!(p.origin(&headers).is_ok());
        headers.insert("origin", "http://localhost:3000".parse().unwrap());
        assert!(p.origin(&headers).is_ok());
        headers.insert("origin", "https://evil.example".parse().unwrap());
        assert!(matches!(p.origin(&headers), Err(ServeError::Forbidden(_))));
        assert!(ClientPolicy::default().origin(&headers).is_err());
        let bad = ClientPolicy {
            origins: vec!["http://localhost:3000/path".into()],
            ..ClientPolicy::default()
        };
        assert!(bad.check().is_err());
    }
}
