//! The guards every request passes before its handler: the Origin check, the body read in
//! time, the bearer token, a panic turned into a JSON 500, and every refusal said in the one
//! JSON shape.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ServeError;
use super::Shared;

/// Requests from browser pages are refused unless their origin is allowed (`policy.rs`): on
/// every route, before anything else runs. No route answers CORS preflights, so a browser
/// never sends a page's non-simple request either.
pub(super) async fn browsers(
    State(state): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let policy = &state.hub.options.policy;
    let path = request.uri().path();
    let page = super::play::is_page(path);
    let bound = state.hub.options.addr.ip();
    let same_origin = state.hub.options.play.is_some()
        && page
        && same_origin(request.headers(), |host| policy.names_self(host, bound));
    let checked = if same_origin {
        Ok(())
    } else {
        policy.origin(request.headers())
    }
    .and_then(|()| policy.host(request.headers(), bound));
    match checked {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

/// Whether a browser request comes from a page of this very server: its `Origin` is the
/// scheme and `Host` it was sent to, and that `Host` names the server itself (`own`: a
/// loopback name, an `--allow-host` name, the bound address). The play page's own calls; a
/// page that rebinds a name of its own to the server carries that name, and is refused.
fn same_origin(headers: &axum::http::HeaderMap, own: impl Fn(&str) -> bool) -> bool {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    match (
        header(axum::http::header::ORIGIN),
        header(axum::http::header::HOST),
    ) {
        (Some(origin), Some(host)) if own(host) => {
            let origin = origin.trim_end_matches('/');
            ["http://", "https://"].iter().any(|scheme| {
                origin
                    .strip_prefix(scheme)
                    .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
            })
        }
        _ => false,
    }
}

/// A request's body is read whole within `--body-timeout-s` (and within the body limit),
/// before its handler runs: a client that sends headers and then trickles its body is cut off.
/// A body declared (`Content-Length`) over the limit is refused at once, unread.
pub(super) async fn body_in_time(
    State(state): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    use axum::body::HttpBody;
    let options = &state.hub.options;
    let (parts, body) = request.into_parts();
    if body.size_hint().lower() > options.body_limit as u64 {
        return ServeError::TooLarge(options.body_limit).into_response();
    }
    let read = axum::body::to_bytes(body, options.body_limit);
    let bytes = match tokio::time::timeout(options.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) if over_limit(&e) => {
            return ServeError::TooLarge(options.body_limit).into_response()
        }
        Ok(Err(e)) => {
            return ServeError::InvalidJson(format!("reading the request body: {e}"))
                .into_response()
        }
        Err(_) => {
            return ServeError::Validation(format!(
                "the request body did not arrive within {} s (--body-timeout-s)",
                options.body_timeout.as_secs_f64()
            ))
            .into_response()
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// A panic while a request is answered (a bug) is a 500 with a JSON error body naming it as
/// an internal error, not a connection closed without an answer. (An episode of
/// `/v1/rollouts` that panics is caught where it is played, and is an `error` record on the
/// stream: its 200 is sent already.)
pub(super) async fn catch_panic(request: Request, next: Next) -> Response {
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(next.run(request))
        .catch_unwind()
        .await
    {
        Ok(response) => response,
        Err(panic) => ServeError::Execution(format!(
            "{}: {}",
            crate::run::INTERNAL_ERROR,
            crate::run::panic_message(panic.as_ref())
        ))
        .into_response(),
    }
}

/// Every refusal in one shape, `{"error":{"code","message"}}`: one that a layer below the
/// routes answered in plain text (axum's extractors: a WebSocket handshake without its
/// headers, a path segment that is not UTF-8) is said again in it, with its status and words.
/// (hyper's own refusals, before any route, are shaped where they are written: `peer.rs`.)
pub(super) async fn json_refusals(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let said = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|text| String::from_utf8_lossy(&text).trim().to_string())
        .unwrap_or_default();
    let message = if said.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        said
    };
    ServeError::Protocol { status, message }.into_response()
}

/// The body was cut at the limit (not broken off by the client).
fn over_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The optional bearer token, compared in constant time.
pub(super) async fn auth(State(state): State<Shared>, request: Request, next: Next) -> Response {
    // The play page's own files hold no data: a browser gets the page, which then asks the
    // person for the token its API calls need.
    let path = request.uri().path();
    let page = state.hub.options.play.is_some() && super::play::FILES.contains(&path);
    let open = path == "/health" || page;
    if let (Some(token), false) = (&state.hub.options.token, open) {
        let given = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !super::secret::same(given, token) {
            return ServeError::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;

    #[tokio::test]
    async fn a_handler_that_panics_answers_500_naming_an_internal_error() {
        async fn boom() -> &'static str {
            panic!("a bug")
        }
        let app = Router::new()
            .route("/boom", axum::routing::get(boom))
            .layer(axum::middleware::from_fn(catch_panic));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let response = reqwest::get(format!("http://{addr}/boom")).await.unwrap();
        assert_eq!(response.status(), 500);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "EXECUTION_ERROR");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(crate::run::INTERNAL_ERROR) && message.contains("panicked: a bug"),
            "{message}"
        );
    }
}
