//! The page's three files, in the binary: nothing is fetched from anywhere else, so it works
//! offline and is the page this build was tested with.

use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

const HTML: &str = include_str!("page/play.html");
const CSS: &str = include_str!("page/play.css");
const JS: &str = include_str!("page/play.js");

/// A file of the page, with a policy that lets it load nothing but this server's own files
/// and talk to nothing but this server.
fn file(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, kind),
            (CACHE_CONTROL, "no-cache"),
            (
                CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

pub(super) async fn html() -> Response {
    file(HTML, "text/html; charset=utf-8")
}

pub(super) async fn css() -> Response {
    file(CSS, "text/css; charset=utf-8")
}

pub(super) async fn js() -> Response {
    file(JS, "text/javascript; charset=utf-8")
}
