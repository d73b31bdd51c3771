//! The mock as a judge and as a reward model, for tests and demos of the reward calls.
//!
//! - A chat request whose messages carry the built-in rubrics' marker
//!   ([`RUBRIC_MARKER`]) — a seat's episode or one turn — is answered with a readable verdict
//!   in the fixed format: a score computed from the judged text (in the rubric's `SCORE RANGE`
//!   where it states one), and for each turn to label one label of each set the rubric lists,
//!   chosen the same way — or, at the rate `--judge-unreadable-rate`, with prose that is not a
//!   verdict.
//! - `POST /pooling` (vLLM's pooling API, `{"messages"}`), `POST /score` (vLLM's score API,
//!   `{"text_1", "text_2"}`) and `POST /reward` (the plain API: `{"messages"}` in,
//!   `{"reward"}` out) answer with [`conversation_reward`] of what they were sent — or, at the
//!   rate `--reward-model-error-rate`, with a 500.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rand::Rng;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{error, fnv, AppState};
use dealgym::game::Message;
use dealgym::reward::judge::RUBRIC_MARKER;

/// Whether a chat request is a judge request (made from a built-in rubric).
pub(crate) fn is_judge_request(messages: &[Message]) -> bool {
    messages.iter().any(|m| m.content.contains(RUBRIC_MARKER))
}

/// The mock judge's verdict on `prompt`: `SCORE: x` with x = low + (high − low) · (FNV-1a of
/// the prompt mod 101) / 100, to two decimals — [low, high] the rubric's `SCORE RANGE: low to
/// high` line, [0, 1] without one — after one `TURN k set: label` line per turn to label and
/// set, the label picked by the same hash plus k. Reads the rubric's `LABEL SET name: a | b`
/// and `TURNS TO LABEL: 1, 3` lines.
pub fn verdict(prompt: &str) -> String {
    let hash = fnv(prompt.as_bytes());
    let mut sets: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut turns: Vec<u64> = Vec::new();
    let (mut low, mut high) = (0.0, 1.0);
    for line in prompt.lines().map(str::trim) {
        if let Some((l, h)) = line
            .strip_prefix("SCORE RANGE:")
            .and_then(|r| r.split_once(" to "))
        {
            if let (Ok(l), Ok(h)) = (l.trim().parse::<f64>(), h.trim().parse::<f64>()) {
                (low, high) = (l, h);
            }
        }
        if let Some(rest) = line.strip_prefix("LABEL SET ") {
            if let Some((name, labels)) = rest.split_once(':') {
                sets.push((name.trim(), labels.split('|').map(str::trim).collect()));
            }
        } else if let Some(rest) = line.strip_prefix("TURNS TO LABEL:") {
            turns = rest
                .split(',')
                .filter_map(|k| k.trim().parse().ok())
                .collect();
        }
    }
    let mut out = String::from("The negotiator was judged by the mock.\n");
    for k in &turns {
        for (name, labels) in &sets {
            if labels.is_empty() {
                continue;
            }
            let pick = labels[((hash.wrapping_add(*k)) % labels.len() as u64) as usize];
            out.push_str(&format!("TURN {k} {name}: {pick}\n"));
        }
    }
    let share = (hash % 101) as f64 / 100.0;
    out.push_str(&format!("SCORE: {:.2}", low + (high - low) * share));
    out
}

/// What the mock answers a judge request at the unreadable rate.
pub(crate) const UNREADABLE_VERDICT: &str =
    "Both sides negotiated. I would rate this fairly well overall.";

/// The mock reward model's reward for the text it was sent: (FNV-1a mod 2001) / 1000 − 1,
/// in [−1, 1].
pub fn conversation_reward(text: &str) -> f64 {
    (fnv(text.as_bytes()) % 2001) as f64 / 1000.0 - 1.0
}

/// The text a reward-model request is scored on: every message's role and content, or the
/// score API's two texts.
fn scored_text(body: &serde_json::Value) -> Option<String> {
    if let Some(messages) = body.get("messages").and_then(|m| m.as_array()) {
        let parts: Vec<String> = messages
            .iter()
            .map(|m| {
                format!(
                    "{}: {}",
                    m.get("role").and_then(|r| r.as_str()).unwrap_or(""),
                    m.get("content").and_then(|c| c.as_str()).unwrap_or("")
                )
            })
            .collect();
        return Some(parts.join("\n"));
    }
    let (a, b) = (body.get("text_1")?.as_str()?, body.get("text_2")?.as_str()?);
    Some(format!("{a}\n{b}"))
}

/// Which reward-model API a route speaks.
#[derive(Clone, Copy)]
pub(super) enum RmRoute {
    Pooling,
    Score,
    Plain,
}

pub(super) async fn pooling_route(
    state: State<Arc<AppState>>,
    body: axum::body::Bytes,
) -> Response {
    reward_model(state, body, RmRoute::Pooling).await
}

pub(super) async fn score_route(state: State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    reward_model(state, body, RmRoute::Score).await
}

pub(super) async fn plain_route(state: State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    reward_model(state, body, RmRoute::Plain).await
}

async fn reward_model(
    State(state): State<Arc<AppState>>,
    body: axum::body::Bytes,
    route: RmRoute,
) -> Response {
    state
        .stats
        .reward_model_requests
        .fetch_add(1, Ordering::Relaxed);
    let mut rng = super::arrival_rng(&state, &body);
    if rng.random::<f64>() < state.config.reward_model_error_rate {
        state.stats.errors.fetch_add(1, Ordering::Relaxed);
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected reward-model error",
        );
    }
    let parsed: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("invalid request: {e}")),
    };
    let Some(text) = scored_text(&parsed) else {
        return error(
            StatusCode::BAD_REQUEST,
            "no messages (or text_1 and text_2) to score",
        );
    };
    let reward = conversation_reward(&text);
    let model = parsed.get("model").cloned().unwrap_or(json!("mock-rm"));
    let usage = json!({"prompt_tokens": text.len() / 4, "total_tokens": text.len() / 4, "completion_tokens": 0});
    let answer = match route {
        // One score per token, as a reward model pooled with ALL answers: the last is the
        // conversation's.
        RmRoute::Pooling => json!({
            "id": "pool-mock", "object": "list", "created": 0, "model": model,
            "data": [{"index": 0, "object": "pooling", "data": [[0.0], [reward / 2.0], [reward]]}],
            "usage": usage,
        }),
        RmRoute::Score => json!({
            "id": "score-mock", "object": "list", "created": 0, "model": model,
            "data": [{"index": 0, "object": "score", "score": reward}],
            "usage": usage,
        }),
        RmRoute::Plain => json!({"reward": reward}),
    };
    Json(answer).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dealgym::reward::judge::parse_verdict;
    use std::collections::BTreeMap;

    #[test]
    fn the_mock_verdict_is_readable_and_deterministic() {
        let prompt = format!(
            "{RUBRIC_MARKER}\n...\nLABEL SET strategy: anchor | concede\nTURNS TO LABEL: 2, 4\n"
        );
        let v = verdict(&prompt);
        assert_eq!(v, verdict(&prompt));
        let sets = BTreeMap::from([(
            "strategy".to_string(),
            vec!["anchor".to_string(), "concede".to_string()],
        )]);
        let read = parse_verdict(&v, &[2, 4], &sets, [0.0, 1.0]).unwrap();
        assert_eq!(read.score, (fnv(prompt.as_bytes()) % 101) as f64 / 100.0);
        assert_eq!(read.labels.len(), 2);
        assert!(parse_verdict(UNREADABLE_VERDICT, &[2, 4], &sets, [0.0, 1.0]).is_err());
        assert!(is_judge_request(&[Message::new(
            dealgym::game::MessageRole::User,
            prompt
        )]));
    }

    #[test]
    fn the_mock_verdict_keeps_to_the_range_the_rubric_states() {
        // [−100, 0]: x = −100 + 100 · share, share = (hash mod 101) / 100.
        let prompt = format!("{RUBRIC_MARKER}\nSCORE RANGE: -100.0 to 0.0\nTURNS TO LABEL: 3\n");
        let share = (fnv(prompt.as_bytes()) % 101) as f64 / 100.0;
        let read = parse_verdict(&verdict(&prompt), &[3], &BTreeMap::new(), [-100.0, 0.0]);
        let score = read.unwrap().score;
        assert!((score - (-100.0 + 100.0 * share)).abs() < 0.005, "{score}");
        assert!((-100.0..=0.0).contains(&score));
    }

    #[test]
    fn the_mock_reward_is_in_range_and_reads_both_shapes() {
        let r = conversation_reward("user: hi");
        assert!((-1.0..=1.0).contains(&r));
        let messages = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(scored_text(&messages).as_deref(), Some("user: hi"));
        let pair = json!({"text_1": "a", "text_2": "b"});
        assert_eq!(scored_text(&pair).as_deref(), Some("a\nb"));
        assert_eq!(scored_text(&json!({})), None);
    }
}
