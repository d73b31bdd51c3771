//! The chat client against scripted HTTP servers on 127.0.0.1: what is retried and what is not.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use dealgym::game::{Message, MessageRole};
use dealgym::llm::{http_client, EndpointSettings, LlmClient, LlmError};

/// A server answering the n-th request with `script[n]` (the last entry repeats):
/// a status code, or 0 for "hang for 2 s then answer", or 200 for a good reply.
async fn scripted(script: Vec<u16>) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let code = script[n.min(script.len() - 1)];
            async move {
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                if code == 0 {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                if code == 200 || code == 0 {
                    let reply = serde_json::json!({
                        "model": request["model"],
                        "choices": [{"message": {"content": format!("seed {}", request["seed"]), "reasoning_content": "hmm"}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2}
                    });
                    (StatusCode::OK, reply.to_string()).into_response()
                } else {
                    (StatusCode::from_u16(code).unwrap(), "nope").into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, count)
}

fn client(url: &str, retries: u32) -> LlmClient {
    let settings = EndpointSettings {
        base_url: url.into(),
        model: "m".into(),
        timeout_s: 0.3,
        retries,
        backoff_s: 0.01,
        backoff_max_s: 0.05,
        ..EndpointSettings::default()
    };
    LlmClient::new(http_client(4).unwrap(), settings).unwrap()
}

fn messages() -> Vec<Message> {
    vec![Message::new(MessageRole::User, "hi")]
}

#[tokio::test]
async fn transient_failures_are_retried_until_an_answer() {
    let (url, count) = scripted(vec![500, 429, 502, 0, 200]).await;
    let reply = client(&url, 5).complete(&messages(), 77).await.unwrap();
    assert_eq!(reply.text, "seed 77");
    assert_eq!(reply.reasoning.as_deref(), Some("hmm"));
    assert_eq!(reply.retries, 4);
    assert_eq!(reply.call.usage.map(|u| u.completion_tokens), Some(2));
    assert_eq!(count.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    for code in [400u16, 401, 404, 422] {
        let (url, count) = scripted(vec![code]).await;
        let err = client(&url, 5).complete(&messages(), 1).await.unwrap_err();
        assert!(
            matches!(err, LlmError::Status { status, .. } if status == code),
            "{err}"
        );
        assert_eq!(count.load(Ordering::SeqCst), 1, "HTTP {code} was retried");
    }
}

#[tokio::test]
async fn giving_up_names_the_endpoint_and_the_last_failure() {
    let (url, count) = scripted(vec![0]).await;
    let err = client(&url, 2).complete(&messages(), 1).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("no answer within 0.3s") && text.contains("3 tries"),
        "{text}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 3);
    let nobody = client("http://127.0.0.1:9/v1", 1)
        .complete(&messages(), 1)
        .await
        .unwrap_err();
    assert!(nobody.to_string().contains("cannot connect"), "{nobody}");
}

#[tokio::test]
async fn a_missing_api_key_variable_is_a_clear_error() {
    let settings = EndpointSettings {
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key_env: Some("DEALGYM_SURELY_UNSET_KEY".into()),
        ..EndpointSettings::default()
    };
    let err = LlmClient::new(reqwest::Client::new(), settings).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the API key variable DEALGYM_SURELY_UNSET_KEY is not set"
    );
}

/// An endpoint that answers with more than any completion holds is refused at the limit, not
/// buffered whole; one that redirects is a failed call, not followed.
#[tokio::test]
async fn an_endless_or_redirected_answer_is_a_named_failure() {
    let app = Router::new()
        .route(
            "/big/v1/chat/completions",
            post(|| async { vec![b' '; dealgym::limits::MAX_RESPONSE_BYTES + 1] }),
        )
        .route(
            "/moved/v1/chat/completions",
            post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [("location", "/big/v1/chat/completions")],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let root = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let settings = EndpointSettings {
        base_url: format!("{root}/big/v1"),
        model: "m".into(),
        timeout_s: 20.0,
        retries: 0,
        ..EndpointSettings::default()
    };
    let big = LlmClient::new(http_client(4).unwrap(), settings).unwrap();
    let e = big.complete(&messages(), 1).await.unwrap_err().to_string();
    assert!(e.contains("longer than"), "{e}");
    let e = client(&format!("{root}/moved/v1"), 0)
        .complete(&messages(), 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("HTTP 307"), "{e}");
}
