//! The reward model, the pure half: the request body for each supported API and the number read
//! back from its answer. The call itself is `llm/reward_model.rs`'s.
//!
//! Field names checked against vLLM's own protocol definitions (`vllm/entrypoints/openai/
//! protocol.py` in v0.9–v0.10, moved to `vllm/entrypoints/pooling/{pooling,score}/protocol.py`
//! in v0.11 and later, unchanged there):
//! - pooling (`POST /pooling`, a server started with `--runner pooling` on a reward model):
//!   `PoolingChatRequest {model, messages}`; the answer is `PoolingResponse {data:
//!   [PoolingResponseData {index, object: "pooling", data}]}`, where `data` is
//!   `list[list[float]] | list[float] | str` — one score per token for a reward model pooled
//!   with `ALL` (the conversation's reward is the last token's), or one vector for a sequence
//!   classifier (its last entry). A base64 `str` (`encoding_format`) is not asked for and not
//!   read.
//! - score (`POST /score`, a cross-encoder): `ScoreRequest {model, text_1, text_2}`; the answer
//!   `ScoreResponse {data: [ScoreResponseData {index, object: "score", score}]}`. `text_1` is
//!   the seat's system prompt (its task), `text_2` the rest of its conversation as text.
//! - plain: any URL that takes `{"model"?, "messages": [...]}` and answers `{"reward": x}`,
//!   `{"score": x}` or a bare number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::vocab::{Message, MessageRole};

/// Which API the reward model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardModelApi {
    /// vLLM's pooling API with chat messages.
    VllmPooling,
    /// vLLM's score API (text pairs).
    VllmScore,
    /// `{"messages": [...]}` in, `{"reward": x}` or a number out.
    #[default]
    Plain,
}

/// The request body for scoring the conversation `messages` (a seat's view).
pub fn request_body(api: RewardModelApi, model: Option<&str>, messages: &[Message]) -> Value {
    let mut body = match api {
        RewardModelApi::VllmPooling | RewardModelApi::Plain => json!({ "messages": messages }),
        RewardModelApi::VllmScore => {
            let (system, rest): (Vec<&Message>, Vec<&Message>) =
                messages.iter().partition(|m| m.role == MessageRole::System);
            let text_1 = system
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let text_2 = rest
                .iter()
                .map(|m| format!("{}: {}", m.role.name(), m.content))
                .collect::<Vec<_>>()
                .join("\n");
            json!({ "text_1": text_1, "text_2": text_2 })
        }
    };
    if let Some(model) = model {
        body["model"] = json!(model);
    }
    body
}

/// The reward in a reward model's answer, or what is wrong with the answer.
pub fn read_score(api: RewardModelApi, body: &[u8]) -> Result<f64, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let number = match api {
        RewardModelApi::VllmPooling => {
            let data = value
                .pointer("/data/0/data")
                .ok_or("no data[0].data in the pooling answer")?;
            last_number(data).ok_or("data[0].data holds no number")?
        }
        RewardModelApi::VllmScore => value
            .pointer("/data/0/score")
            .and_then(Value::as_f64)
            .ok_or("no data[0].score in the score answer")?,
        RewardModelApi::Plain => match &value {
            Value::Number(n) => n.as_f64().ok_or("not a number")?,
            Value::Object(o) => o
                .get("reward")
                .or_else(|| o.get("score"))
                .and_then(Value::as_f64)
                .ok_or("no `reward` or `score` number in the answer")?,
            _ => return Err("neither a number nor an object".into()),
        },
    };
    if !number.is_finite() {
        return Err("the reward is not finite".into());
    }
    // Bounded like every number `[rewards]` gives, so that no total it enters, times a weight,
    // overflows to infinity (`null` in a record): an answer past it is garbage, not a score.
    let most = crate::limits::MAX_REWARD_NUMBER;
    if number.abs() > most {
        return Err(format!(
            "the reward {number} is over the {most} in size a reward may be"
        ));
    }
    Ok(number)
}

/// The last number of a number, a list of numbers, or a list of lists (the last token's
/// last entry).
fn last_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Array(items) => items.last().and_then(last_number),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::new(MessageRole::System, "You sell a bike."),
            Message::new(MessageRole::User, "Hi"),
            Message::new(MessageRole::Assistant, "Hello"),
        ]
    }

    #[test]
    fn each_api_gets_its_own_request_shape() {
        let m = conversation();
        let pooling = request_body(RewardModelApi::VllmPooling, Some("rm"), &m);
        assert_eq!(pooling["model"], "rm");
        assert_eq!(pooling["messages"][1]["content"], "Hi");
        assert_eq!(pooling["messages"][0]["role"], "system");
        let score = request_body(RewardModelApi::VllmScore, Some("ce"), &m);
        assert_eq!(score["text_1"], "You sell a bike.");
        assert_eq!(score["text_2"], "user: Hi\nassistant: Hello");
        let plain = request_body(RewardModelApi::Plain, None, &m);
        assert!(plain.get("model").is_none());
        assert_eq!(plain["messages"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn each_api_answer_is_read_and_a_bad_one_named() {
        let pooled = br#"{"object":"list","data":[{"index":0,"object":"pooling","data":[[0.1],[0.2],[-0.75]]}]}"#;
        assert_eq!(read_score(RewardModelApi::VllmPooling, pooled), Ok(-0.75));
        let flat = br#"{"data":[{"index":0,"object":"pooling","data":[1.5]}]}"#;
        assert_eq!(read_score(RewardModelApi::VllmPooling, flat), Ok(1.5));
        let score = br#"{"data":[{"index":0,"object":"score","score":0.25}]}"#;
        assert_eq!(read_score(RewardModelApi::VllmScore, score), Ok(0.25));
        assert_eq!(read_score(RewardModelApi::Plain, b"0.5"), Ok(0.5));
        assert_eq!(
            read_score(RewardModelApi::Plain, br#"{"reward": -2}"#),
            Ok(-2.0)
        );
        assert_eq!(
            read_score(RewardModelApi::Plain, br#"{"score": 3}"#),
            Ok(3.0)
        );
        for (api, bad) in [
            (RewardModelApi::Plain, &br#"{"value": 1}"#[..]),
            (RewardModelApi::Plain, b"not json"),
            (
                RewardModelApi::VllmPooling,
                br#"{"data":[{"data":"AAAA"}]}"#,
            ),
            (RewardModelApi::VllmPooling, br#"{"data":[]}"#),
            (RewardModelApi::VllmScore, br#"{"data":[{"score":"high"}]}"#),
            // Past the bound every `[rewards]` number keeps: times a weight of 1e6 it would
            // overflow a total to infinity.
            (RewardModelApi::Plain, b"1e305"),
            (RewardModelApi::VllmScore, br#"{"data":[{"score":-2e6}]}"#),
        ] {
            assert!(
                read_score(api, bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
