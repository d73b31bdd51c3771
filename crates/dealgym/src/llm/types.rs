//! The OpenAI-compatible chat-completions wire format: what we send and what we read back.

use serde::{Deserialize, Serialize};

use crate::vocab::{Call, Message, PromptTokensDetails, ToolCall, Usage};

/// The request body. `extra` is merged in last, so a player's `extra_body`
/// (`chat_template_kwargs`, `guided_regex`, `structured_outputs`, …) reaches the server as is;
/// it may not name a field built here (`EndpointSettings::check` refuses that).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// vLLM: return `prompt_token_ids` and `choices[].token_ids`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub return_token_ids: bool,
    #[serde(flatten)]
    pub extra: &'a serde_json::Map<String, serde_json::Value>,
}

/// The parts of a response dealgym reads. Unknown fields are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "ChatResponseLine")]
pub(crate) struct ChatResponse {
    pub model: Option<String>,
    pub choices: Vec<Choice>,
    /// The token counts, with the prompt tokens the server took from its cache where it said
    /// so in `usage` or, for llama.cpp, in its `timings` ([`LlamaTimings::complete`]).
    pub usage: Option<Usage>,
    /// Token ids of the prompt as the server rendered it (vLLM with `return_token_ids`).
    pub prompt_token_ids: Option<Vec<u32>>,
}

/// A chat completion as sent.
#[derive(Deserialize)]
struct ChatResponseLine {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    prompt_token_ids: Option<Vec<u32>>,
    #[serde(default)]
    timings: Option<LlamaTimings>,
}

impl From<ChatResponseLine> for ChatResponse {
    fn from(line: ChatResponseLine) -> ChatResponse {
        ChatResponse {
            model: line.model,
            choices: line.choices,
            usage: LlamaTimings::complete(line.usage, line.timings),
            prompt_token_ids: line.prompt_token_ids,
        }
    }
}

/// llama.cpp's `timings` beside an answer (`/v1/chat/completions` and `/completion`): of the
/// prompt's tokens, `cache_n` came from the slot's cache (its `prompt_n`, the tokens
/// evaluated, is the rest: not kept, it is the prompt's count less this).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct LlamaTimings {
    #[serde(default)]
    pub cache_n: Option<u64>,
}

impl LlamaTimings {
    /// The usage to keep: as the server gave it, and where it did not say what it took from
    /// its cache (llama.cpp servers older than `usage.prompt_tokens_details`), `cache_n` as the
    /// cached tokens. A server that says neither leaves the usage as it was, so its records
    /// stay byte for byte what they were.
    pub(crate) fn complete(usage: Option<Usage>, timings: Option<LlamaTimings>) -> Option<Usage> {
        let cache_n = timings.and_then(|t| t.cache_n);
        match (usage, cache_n) {
            (Some(mut usage), Some(cached)) if usage.cached_tokens().is_none() => {
                usage.prompt_tokens_details = Some(PromptTokensDetails {
                    cached_tokens: Some(cached),
                });
                Some(usage)
            }
            (usage, _) => usage,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Choice {
    pub message: ResponseMessage,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Option<serde_json::Value>,
    /// Token ids of the completion, as vLLM returns them when asked (`return_token_ids`).
    #[serde(default)]
    pub token_ids: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResponseMessage {
    #[serde(default)]
    pub content: Option<String>,
    /// Reasoning returned apart from the content (vLLM's reasoning parsers before the rename,
    /// llama.cpp). Read as its own field, not an alias: a server may send both names at once.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// The same, under the name newer vLLM uses.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The calls of a model that acts through tools (requests that carry `tools`), as sent:
    /// read with [`ToolCall::read`], so an odd call is the model's malformed turn, not a
    /// response that cannot be read.
    #[serde(default)]
    pub tool_calls: Option<Vec<serde_json::Value>>,
}

impl ResponseMessage {
    /// The reasoning text under whichever name the server used (the newer one first); blank
    /// reasoning counts as none.
    /// The calls the model made.
    pub(crate) fn calls(&mut self) -> Vec<ToolCall> {
        self.tool_calls
            .take()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, call)| ToolCall::read(call, i))
            .collect()
    }

    pub(crate) fn reasoning_text(&mut self) -> Option<String> {
        [self.reasoning.take(), self.reasoning_content.take()]
            .into_iter()
            .flatten()
            .find(|r| !r.trim().is_empty())
    }
}

/// One model reply, with what the server said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub reasoning: Option<String>,
    /// The tool calls the model made, if the request carried tools.
    pub(crate) tool_calls: Vec<ToolCall>,
    /// What the record keeps about the call (everything but the text and the timing).
    pub call: Call,
    /// Transient failures retried before this reply.
    pub retries: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: &str) -> ResponseMessage {
        serde_json::from_str(json).unwrap()
    }

    /// A reply whose calls are odd — arguments as an object or null, no id, no content — is
    /// read whole: what is wrong with a call is the engine's to say (a malformed turn), never a
    /// response that cannot be read (a backend error).
    #[test]
    fn odd_tool_calls_are_read_not_refused() {
        let mut m = message(
            r#"{"content":null,"tool_calls":[
                {"type":"function","function":{"name":"make_offer","arguments":{"terms":{"price":5}}}},
                {"id":"x","function":{"name":"accept","arguments":null}},
                {"function":{}}]}"#,
        );
        let calls = m.calls();
        assert_eq!(
            calls[0],
            ToolCall::new("call_0", "make_offer", r#"{"terms":{"price":5}}"#)
        );
        assert_eq!(calls[1], ToolCall::new("x", "accept", ""));
        assert_eq!(calls[2], ToolCall::new("call_2", "", ""));
        assert_eq!(m.content, None);
    }

    #[test]
    fn reasoning_is_read_under_either_name_and_both_at_once() {
        assert_eq!(
            message(r#"{"content":"x","reasoning_content":"old"}"#).reasoning_text(),
            Some("old".into())
        );
        assert_eq!(
            message(r#"{"content":"x","reasoning":"new"}"#).reasoning_text(),
            Some("new".into())
        );
        // A server in the middle of the rename sends both; that is not a broken reply.
        assert_eq!(
            message(r#"{"content":"x","reasoning":"new","reasoning_content":"new"}"#)
                .reasoning_text(),
            Some("new".into())
        );
        assert_eq!(
            message(r#"{"content":"x","reasoning":" ","reasoning_content":"old"}"#)
                .reasoning_text(),
            Some("old".into())
        );
        assert_eq!(
            message(r#"{"content":"x","reasoning":null}"#).reasoning_text(),
            None
        );
    }

    #[test]
    fn cached_prompt_tokens_are_read_and_kept_only_where_given() {
        let with: Usage = serde_json::from_str(
            r#"{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":96}}"#,
        )
        .unwrap();
        assert_eq!(with.cached_tokens(), Some(96));
        assert!(serde_json::to_string(&with)
            .unwrap()
            .contains("\"cached_tokens\":96"));
        let without: Usage =
            serde_json::from_str(r#"{"prompt_tokens":100,"completion_tokens":5}"#).unwrap();
        assert_eq!(without.cached_tokens(), None);
        // A record of a server that does not say stays as it was (the record's order: by name).
        assert_eq!(
            serde_json::to_string(&without).unwrap(),
            r#"{"completion_tokens":5,"prompt_tokens":100}"#
        );
    }

    /// llama.cpp's answer (b1-0c1e570, the real-model stage's build) says what it took from
    /// its slot's cache twice: in `usage` and in `timings`; an older build only in `timings`.
    #[test]
    fn llama_cpp_cache_figures_are_kept_from_usage_or_else_from_timings() {
        let answer = |usage: &str| {
            let r: ChatResponse = serde_json::from_str(&format!(
                r#"{{"choices":[{{"message":{{"content":"hi"}}}}],{usage}"timings":{{"cache_n":30,"prompt_n":13,"prompt_ms":1.5}}}}"#
            ))
            .unwrap();
            r.usage
        };
        let now = answer(
            r#""usage":{"completion_tokens":6,"prompt_tokens":43,"total_tokens":49,"prompt_tokens_details":{"cached_tokens":30}},"#,
        );
        assert_eq!(now.and_then(|u| u.cached_tokens()), Some(30));
        let older = answer(r#""usage":{"completion_tokens":6,"prompt_tokens":43},"#).unwrap();
        assert_eq!(older.cached_tokens(), Some(30));
        assert_eq!(older.prompt_tokens - 30, 13);
        // The server's own figure wins where both are given.
        let both = LlamaTimings::complete(
            Some(Usage {
                prompt_tokens: 43,
                completion_tokens: 6,
                prompt_tokens_details: Some(PromptTokensDetails {
                    cached_tokens: Some(29),
                }),
            }),
            Some(LlamaTimings { cache_n: Some(30) }),
        );
        assert_eq!(both.and_then(|u| u.cached_tokens()), Some(29));
        // No usage, nothing made up.
        assert_eq!(answer(""), None);
        let plain: ChatResponse =
            serde_json::from_str(r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":1,"prompt_tokens":2}}"#)
                .unwrap();
        assert_eq!(plain.usage.and_then(|u| u.cached_tokens()), None);
    }

    #[test]
    fn token_ids_of_prompt_and_completion_are_read() {
        let r: ChatResponse = serde_json::from_str(
            r#"{"choices":[{"message":{"content":"hi"},"token_ids":[5,6]}],"prompt_token_ids":[1,2,3]}"#,
        )
        .unwrap();
        assert_eq!(r.prompt_token_ids, Some(vec![1, 2, 3]));
        assert_eq!(r.choices[0].token_ids, Some(vec![5, 6]));
    }
}
