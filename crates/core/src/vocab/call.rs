//! What an endpoint said about one call, as a record keeps it: the model that answered, why it
//! stopped, the token counts, and the ids and logprobs where the server returned them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// The fields are declared in name order: records have always written them so (the call was a
// JSON object, whose keys serialize sorted), and a record must read and write back the same.
/// One call's facts beside its text (the text, the reasoning and the timing are kept elsewhere
/// in the record). Built by the HTTP client from a chat completion, or by a token-exact seat
/// from what it sampled; the engine never reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Call {
    /// Why sampling stopped (`stop`, `length`), as the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The `logprobs` object exactly as the server sent it: its shape is the server's (the chat
    /// API's `{"content": [{"token", "logprob", "bytes", "top_logprobs"}]}`, the completions
    /// API's `{"token_logprobs": [...]}`, a provider's own), so the record keeps it verbatim
    /// rather than a reading of it. The token-exact logprobs a trainer uses are typed, in
    /// [`TurnTokens::logprobs`](super::TurnTokens::logprobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<serde_json::Value>,
    /// The model the server says answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The prompt's token ids, where the server returned them (vLLM's `return_token_ids`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// The sampled token ids, where the server returned them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
    /// The token counts the server gave (a token-exact seat counts its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Call {
    /// `None` for a call the server said nothing about: the record then has no `call`.
    pub fn if_any(self) -> Option<Call> {
        (self != Call::default()).then_some(self)
    }
}

// Declared in name order, like `Call`.
/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub prompt_tokens: u64,
    /// What the server says of the prompt's tokens (vLLM with `--enable-prompt-tokens-details`,
    /// OpenAI): kept in the record where given, read for the replica statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

impl Usage {
    /// Prompt tokens the server served from its prefix cache, when it says
    /// (`usage.prompt_tokens_details.cached_tokens`: vLLM, OpenAI).
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }
}

/// The part of `usage.prompt_tokens_details` dealgym reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PromptTokensDetails {
    /// Prompt tokens served from the server's prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record's `call` was once an untyped JSON object: every call written then reads into
    /// the type and writes back byte for byte.
    #[test]
    fn a_call_written_as_an_untyped_object_reads_and_writes_back_the_same() {
        for line in [
            r#"{"finish_reason":"stop","logprobs":{"content":[{"bytes":[104],"logprob":-0.25,"token":"h","top_logprobs":[]}]},"model":"m","prompt_token_ids":[1,2],"token_ids":[5],"usage":{"completion_tokens":1,"prompt_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}"#,
            r#"{"finish_reason":"length","usage":{"completion_tokens":3,"prompt_tokens":7}}"#,
            r#"{"model":"x"}"#,
        ] {
            let call: Call = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&call).unwrap(), line);
        }
        assert_eq!(Call::default().if_any(), None);
    }
}
