//! The exact token ids of a call, as a record keeps them (token-exact mode).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The exact tokens of one call of a seat played in token-exact mode (`tokens = "exact"`): the
/// seat's whole sequence is the concatenation, over its turns in order, of `prompt_ids` then
/// `completion_ids` — never re-tokenized from text. A trainer's loss mask is 1 on
/// `completion_ids` (what the model sampled) and 0 on `prompt_ids` (what the environment wrote).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TurnTokens {
    /// The prompt ids this call added after the seat's previous call: the whole rendered prompt
    /// on its first call, afterwards only the rendered suffix of the new message(s).
    pub prompt_ids: Vec<u32>,
    /// The ids the model sampled, exactly (stop strings, an EOS token, a max_tokens cut kept).
    pub completion_ids: Vec<u32>,
    /// The sampling logprob of each completion id.
    pub logprobs: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Set when a full re-render of the conversation by the chat template does not equal the
    /// exact sequence (the template is not append-only: it drops earlier reasoning or rewrites
    /// an earlier turn). The exact ids are still what was sent and recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

/// Where a full re-render parted from the exact sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    /// The first position (in the seat's whole sequence) where the two differ.
    pub at: usize,
    /// Lengths of the exact sequence and of the re-render.
    pub exact_len: usize,
    pub rerender_len: usize,
}
