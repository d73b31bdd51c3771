//! The OpenAI-compatible chat-completions wire format: what we send and what we read back.

use serde::{Deserialize, Serialize};

use crate::vocab::{Call, Message, ToolCall, Usage};

/// The request body. `extra` is merged in last, so a player's `extra_body`
/// (`chat_template_kwargs`, `guided_regex`, `structured_outputs`, …) reaches the server as is.
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
pub(crate) struct ChatResponse {
    #[serde(default)]
    pub model: Option<String>,
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Token ids of the prompt as the server rendered it (vLLM with `return_token_ids`).
    #[serde(default)]
    pub prompt_token_ids: Option<Vec<u32>>,
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
    pub tool_calls: Vec<ToolCall>,
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
