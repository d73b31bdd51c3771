//! A chat completion as server-sent events (`"stream": true`), in the shape OpenAI's API and
//! vLLM send: `chat.completion.chunk`s (the role first, then the reasoning and the content as
//! deltas, then the finish reason), a usage chunk when `stream_options.include_usage` asks for
//! one, and `data: [DONE]`. The mock used to ignore `stream` and answer one JSON body with a 200,
//! which a streaming client reads as a stream that ended before its terminal event.
//!
//! The whole answer is known before the first event, so the events are sent as one body: a
//! client reads them as it would read them arriving one by one.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The events of `completion`, a `chat.completion` body as the mock answers it unstreamed.
pub(crate) fn events(completion: &Value, include_usage: bool) -> Response {
    let chunk = |choices: Value| {
        json!({
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "choices": choices,
        })
    };
    let choice = &completion["choices"][0];
    let message = &choice["message"];
    let delta = |delta: Value| json!([{"index": 0, "delta": delta, "finish_reason": null}]);
    let mut chunks = vec![chunk(delta(json!({"role": "assistant", "content": ""})))];
    if let Some(reasoning) = message.get("reasoning_content") {
        chunks.push(chunk(delta(json!({ "reasoning_content": reasoning }))));
    }
    // The content word by word (each piece keeps the whitespace after it), the logprobs, if
    // asked for, with the first piece.
    let content = message["content"].as_str().unwrap_or_default();
    for (i, piece) in content.split_inclusive(char::is_whitespace).enumerate() {
        let mut choices = delta(json!({ "content": piece }));
        if i == 0 {
            if let Some(logprobs) = choice.get("logprobs") {
                choices[0]["logprobs"] = logprobs.clone();
            }
        }
        chunks.push(chunk(choices));
    }
    // Tool calls whole, in one delta, each with its index (as OpenAI streams a call's first piece).
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let indexed: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let mut call = call.clone();
                call["index"] = json!(i);
                call
            })
            .collect();
        chunks.push(chunk(delta(json!({ "tool_calls": indexed }))));
    }
    chunks.push(chunk(json!([{
        "index": 0,
        "delta": {},
        "finish_reason": choice["finish_reason"],
    }])));
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = completion["usage"].clone();
        chunks.push(last);
    }
    let mut body = String::new();
    for c in &chunks {
        body.push_str("data: ");
        body.push_str(&c.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )],
        body,
    )
        .into_response()
}
