//! What a client may choose. A client of the server names players, endpoints and files only as
//! the operator allows: the opponents of the server's config (`[players.NAME]`), the built-in
//! rules, the operator's own `--opponent`, and `external`; a `script:FILE` only with
//! `--allow-client-scripts`; a URL (a rollout learner's endpoint, the token-exact policy
//! server, an `openai:MODEL@URL` opponent) only when `--allow-endpoint` lists it. Otherwise a
//! client could read the server's files, grow it without bound (`script:/dev/zero`) or make it
//! call any host (server-side request forgery). A browser page the user visits is refused by
//! its `Origin` header: a request that carries one must name an origin `--allow-origin`
//! lists, so no web page can drive a local server through the user's browser.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use reqwest::Url;

use super::error::ServeError;
use crate::agents::PlayerConfig;

/// The operator's allowances (the `--allow-*` flags of `dealgym serve`).
#[derive(Debug, Clone, Default)]
pub struct ClientPolicy {
    /// Endpoints a client may name: each an origin with an optional path prefix
    /// (`http://127.0.0.1:8000`, `https://host/v1`), or `*` for any.
    pub endpoints: Vec<String>,
    /// A client may name `script:FILE` opponents (files on the server's disk).
    pub scripts: bool,
    /// Browser origins allowed to call the server (`Origin` header); none by default.
    pub origins: Vec<String>,
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
    pub fn opponent(
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
        if let Some(rest) = spec.strip_prefix("openai:") {
            let urls = rest.find('@').map(|at| &rest[at + 1..]).unwrap_or("");
            for url in urls.split(',') {
                self.endpoint("opponent", url.trim())?;
            }
            return Ok(());
        }
        // Anything else is not a spec at all; the player's own parser says so.
        Ok(())
    }

    /// May a client have the server call `url` (named `what` in the refusal)?
    pub fn endpoint(&self, what: &str, url: &str) -> Result<(), ServeError> {
        let given = Url::parse(url)
            .map_err(|e| ServeError::Validation(format!("{what}: `{url}` is not a URL: {e}")))?;
        if !matches!(given.scheme(), "http" | "https") || given.host().is_none() {
            return Err(ServeError::Validation(format!(
                "{what}: `{url}` is not an http(s) URL"
            )));
        }
        let allowed = self.endpoints.iter().any(|entry| {
            entry == "*"
                || allowed_url(entry).is_ok_and(|allowed| {
                    allowed.scheme() == given.scheme()
                        && allowed.host() == given.host()
                        && allowed.port_or_known_default() == given.port_or_known_default()
                        && given
                            .path()
                            .starts_with(allowed.path().trim_end_matches('/'))
                })
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

    /// A request from a browser page (it carries `Origin`) must come from an allowed origin.
    pub fn origin(&self, headers: &HeaderMap) -> Result<(), ServeError> {
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

/// An `--allow-endpoint` entry as a URL: http(s), with a host.
fn allowed_url(entry: &str) -> Result<Url, String> {
    let url = Url::parse(entry).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("give an http(s) URL such as http://127.0.0.1:8000, or *".into());
    }
    Ok(url)
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
        let scripts = ClientPolicy {
            scripts: true,
            ..ClientPolicy::default()
        };
        assert!(scripts
            .opponent("script:x.json", "rule:boulware", &players)
            .is_ok());
    }

    #[test]
    fn an_allowed_endpoint_matches_by_scheme_host_port_and_path_prefix() {
        let p = policy(&["http://127.0.0.1:8000/v1"]);
        assert!(p.endpoint("learner", "http://127.0.0.1:8000/v1").is_ok());
        assert!(p.endpoint("learner", "http://127.0.0.1:8000/v1/").is_ok());
        for refused in [
            "http://127.0.0.1:8001/v1",
            "https://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/admin",
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
