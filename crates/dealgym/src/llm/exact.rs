//! Token-exact calls (`tokens = "exact"`): a seat's conversation is kept as token ids, never
//! re-tokenized. The endpoint's own chat template and tokenizer render the messages to ids
//! (vLLM: `/tokenize` with `messages`; llama.cpp: `/apply-template`, then `/tokenize`), and the
//! model samples from an id prompt (vLLM: `/v1/completions` with `prompt: [ids]`; llama.cpp:
//! `/completion`), returning the ids it sampled and their logprobs.
//!
//! How the next prompt's ids are found from those renderings is the core's one rule
//! ([`crate::vocab::NextPrompt`]), shared with `dealgym serve` and the Python package: turn
//! k+1's prompt is turn k's prompt, the ids sampled at turn k, and the ids of the new message(s)
//! only, with drift reported where a full re-render differs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{LlmClient, LlmError};
use crate::vocab::{continued_prefix, extend, Message, NextPrompt};

const TEMPLATE_KWARGS: &str = "chat_template_kwargs";

/// Which server's token API to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenApi {
    /// vLLM: `/tokenize` (chat messages in, ids out) and `/v1/completions` with an id prompt.
    #[default]
    Vllm,
    /// llama.cpp's server: `/apply-template`, `/tokenize` and `/completion`.
    LlamaCpp,
}

/// How a seat's conversation is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenMode {
    /// Chat messages to `/v1/chat/completions` (the server renders and tokenizes).
    #[default]
    Text,
    /// Token ids, rendered once by the server's template and extended turn by turn.
    Exact,
}

/// What the model sampled for one id prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    pub text: String,
    pub ids: Vec<u32>,
    pub logprobs: Vec<f64>,
    /// The text of each sampled id, where the server gives it (vLLM's `logprobs.tokens`,
    /// llama.cpp's `completion_probabilities[].token`); empty otherwise. What a narrated turn
    /// is cut at its action label by.
    pub pieces: Vec<String>,
    pub finish_reason: Option<String>,
    pub(crate) retries: u32,
    /// Prompt tokens the server served from its prefix cache, when it says (vLLM's
    /// `usage.prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`).
    pub(crate) cached_tokens: Option<u64>,
}

impl LlmClient {
    /// The server root (the base URL without a trailing `/v1`): where the token routes live.
    pub(crate) fn root(&self) -> String {
        let base = self.settings().base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base).to_string()
    }

    /// Render `messages` with the server's chat template and tokenize them: with a generation
    /// prompt (`continuation = false`), or continuing the last (assistant) message, which then
    /// ends without its end-of-turn marker.
    pub(crate) async fn render_ids(
        &self,
        api: TokenApi,
        messages: &[Message],
        continuation: bool,
    ) -> Result<Vec<u32>, LlmError> {
        let root = self.root();
        match api {
            TokenApi::Vllm => {
                let url = format!("{root}/tokenize");
                let mut body = serde_json::json!({
                    "model": self.settings().model,
                    "messages": messages,
                    "add_generation_prompt": !continuation,
                    "continue_final_message": continuation,
                    "add_special_tokens": false,
                });
                self.with_template_kwargs(&mut body);
                let (answer, _) = self
                    .post_json(&url, &body, |b| read::<TokenizeAnswer>(&url, b))
                    .await?;
                Ok(answer.tokens)
            }
            TokenApi::LlamaCpp => {
                let url = format!("{root}/apply-template");
                let mut body = serde_json::json!({
                    "messages": messages,
                    "add_generation_prompt": !continuation,
                });
                self.with_template_kwargs(&mut body);
                let (answer, _) = self
                    .post_json(&url, &body, |b| read::<TemplateAnswer>(&url, b))
                    .await?;
                self.tokenize_text(&answer.prompt).await
            }
        }
    }

    /// The player's `chat_template_kwargs` (say `enable_thinking = false`) belong to the
    /// rendering, so they go with every template call, as a text seat's chat request has them.
    fn with_template_kwargs(&self, body: &mut serde_json::Value) {
        if let Some(kwargs) = self.settings().extra_body.get(TEMPLATE_KWARGS) {
            body[TEMPLATE_KWARGS] = kwargs.clone();
        }
    }

    /// Tokenize rendered text (special tokens written in it are read as special tokens).
    async fn tokenize_text(&self, text: &str) -> Result<Vec<u32>, LlmError> {
        let url = format!("{}/tokenize", self.root());
        let body = serde_json::json!({
            "content": text,
            "add_special": false,
            "parse_special": true,
        });
        let (answer, _) = self
            .post_json(&url, &body, |b| read::<TokenizeAnswer>(&url, b))
            .await?;
        Ok(answer.tokens)
    }

    /// Plain text's ids, special tokens not read (vLLM: `/tokenize` with `prompt`; llama.cpp:
    /// `/tokenize` with `content`): a narrated turn's forced action line, written after what
    /// its narrator sampled.
    pub(crate) async fn tokenize_plain(
        &self,
        api: TokenApi,
        text: &str,
    ) -> Result<Vec<u32>, LlmError> {
        let url = format!("{}/tokenize", self.root());
        let body = match api {
            TokenApi::Vllm => serde_json::json!({
                "model": self.settings().model,
                "prompt": text,
                "add_special_tokens": false,
            }),
            TokenApi::LlamaCpp => serde_json::json!({
                "content": text,
                "add_special": false,
                "parse_special": false,
            }),
        };
        let (answer, _) = self
            .post_json(&url, &body, |b| read::<TokenizeAnswer>(&url, b))
            .await?;
        Ok(answer.tokens)
    }

    /// The ids to add for a seat's next call. `sequence` is everything the seat has been sent
    /// and has sampled so far (empty before its first call); `messages` is its view now.
    pub(crate) async fn next_prompt(
        &self,
        api: TokenApi,
        sequence: &[u32],
        messages: &[Message],
    ) -> Result<NextPrompt, LlmError> {
        let full = self.render_ids(api, messages, false).await?;
        let Some(end) = continued_prefix(sequence, messages) else {
            return Ok(NextPrompt::whole(full));
        };
        let before = self.render_ids(api, &messages[..end], true).await?;
        Ok(extend(sequence, &before, &full))
    }

    /// Sample from an id prompt. `extra` carries request fields of this call (a constraint).
    pub async fn sample(
        &self,
        api: TokenApi,
        prompt: &[u32],
        seed: Option<u64>,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Sampled, LlmError> {
        let s = self.settings();
        let mut body = serde_json::Map::new();
        let root = self.root();
        let url = match api {
            TokenApi::Vllm => {
                body.insert("model".into(), s.model.clone().into());
                body.insert("prompt".into(), prompt.into());
                body.insert("logprobs".into(), 0.into());
                body.insert("return_token_ids".into(), true.into());
                body.insert("include_stop_str_in_output".into(), true.into());
                if let Some(n) = s.max_tokens {
                    body.insert("max_tokens".into(), n.into());
                }
                format!("{root}/v1/completions")
            }
            TokenApi::LlamaCpp => {
                body.insert("prompt".into(), prompt.into());
                body.insert("n_probs".into(), 1.into());
                body.insert("return_tokens".into(), true.into());
                body.insert("cache_prompt".into(), true.into());
                if let Some(n) = s.max_tokens {
                    body.insert("n_predict".into(), n.into());
                }
                format!("{root}/completion")
            }
        };
        if let Some(t) = s.temperature {
            body.insert("temperature".into(), t.into());
        }
        if let Some(p) = s.top_p {
            body.insert("top_p".into(), p.into());
        }
        if !s.stop.is_empty() {
            body.insert("stop".into(), s.stop.clone().into());
        }
        if let Some(seed) = seed {
            body.insert("seed".into(), seed.into());
        }
        // Template arguments were used when the prompt was rendered; the rest goes with the call.
        body.extend(
            s.extra_body
                .iter()
                .filter(|(k, _)| k.as_str() != TEMPLATE_KWARGS)
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        body.extend(extra);
        let (mut sampled, retries) = self
            .post_json(&url, &body, |b| match api {
                TokenApi::Vllm => read::<CompletionsAnswer>(&url, b)?.into_sampled(&url),
                TokenApi::LlamaCpp => read::<LlamaAnswer>(&url, b)?.into_sampled(&url),
            })
            .await?;
        sampled.retries = retries;
        Ok(sampled)
    }
}

fn read<T: for<'de> Deserialize<'de>>(url: &str, bytes: &[u8]) -> Result<T, LlmError> {
    serde_json::from_slice(bytes).map_err(|e| LlmError::BadResponse {
        url: url.to_string(),
        message: e.to_string(),
    })
}

fn bad(url: &str, message: &str) -> LlmError {
    LlmError::BadResponse {
        url: url.to_string(),
        message: message.to_string(),
    }
}

#[derive(Deserialize)]
struct TokenizeAnswer {
    tokens: Vec<u32>,
}

#[derive(Deserialize)]
struct TemplateAnswer {
    prompt: String,
}

/// vLLM's `/v1/completions` answer.
#[derive(Deserialize)]
struct CompletionsAnswer {
    choices: Vec<CompletionsChoice>,
    #[serde(default)]
    usage: Option<crate::vocab::Usage>,
}

#[derive(Deserialize)]
struct CompletionsChoice {
    #[serde(default)]
    text: String,
    #[serde(default)]
    token_ids: Option<Vec<u32>>,
    #[serde(default)]
    logprobs: Option<CompletionsLogprobs>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CompletionsLogprobs {
    #[serde(default)]
    token_logprobs: Vec<Option<f64>>,
    #[serde(default)]
    tokens: Vec<String>,
}

impl CompletionsAnswer {
    fn into_sampled(self, url: &str) -> Result<Sampled, LlmError> {
        let choice = self
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| bad(url, "no choices"))?;
        let ids = choice
            .token_ids
            .ok_or_else(|| bad(url, "no token_ids (does the server read return_token_ids?)"))?;
        let (logprobs, pieces): (Vec<f64>, Vec<String>) = choice
            .logprobs
            .map(|l| {
                let logprobs = l
                    .token_logprobs
                    .into_iter()
                    .map(|p| p.unwrap_or(0.0))
                    .collect();
                (logprobs, l.tokens)
            })
            .unwrap_or_default();
        // Pieces that do not pair up with the ids are not used.
        let pieces = if pieces.len() == ids.len() {
            pieces
        } else {
            Vec::new()
        };
        if logprobs.len() != ids.len() {
            return Err(bad(url, "logprobs do not match the sampled ids"));
        }
        Ok(Sampled {
            text: choice.text,
            ids,
            logprobs,
            pieces,
            finish_reason: choice.finish_reason,
            retries: 0,
            cached_tokens: self.usage.and_then(|u| u.cached_tokens()),
        })
    }
}

/// llama.cpp's `/completion` answer.
#[derive(Deserialize)]
struct LlamaAnswer {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tokens: Vec<u32>,
    #[serde(default)]
    completion_probabilities: Vec<LlamaProb>,
    #[serde(default)]
    stop_type: Option<String>,
    /// What it took from the slot's cache. (Not `tokens_cached`: that is the slot's whole
    /// length after the call, the sampled tokens included, never the prompt's cached part.)
    #[serde(default)]
    timings: Option<super::types::LlamaTimings>,
}

#[derive(Deserialize)]
struct LlamaProb {
    #[serde(default)]
    id: Option<u32>,
    #[serde(default)]
    logprob: Option<f64>,
    #[serde(default)]
    token: Option<String>,
}

impl LlamaAnswer {
    fn into_sampled(self, url: &str) -> Result<Sampled, LlmError> {
        if self.completion_probabilities.len() != self.tokens.len()
            || self
                .completion_probabilities
                .iter()
                .zip(&self.tokens)
                .any(|(p, id)| p.id.is_some_and(|pid| pid != *id))
        {
            return Err(bad(url, "token probabilities do not match the sampled ids"));
        }
        let finish_reason = match self.stop_type.as_deref() {
            Some("limit") => Some("length".to_string()),
            Some("eos" | "word") => Some("stop".to_string()),
            other => other.map(str::to_string),
        };
        let pieces: Option<Vec<String>> = self
            .completion_probabilities
            .iter()
            .map(|p| p.token.clone())
            .collect();
        Ok(Sampled {
            text: self.content,
            pieces: pieces.unwrap_or_default(),
            logprobs: self
                .completion_probabilities
                .iter()
                .map(|p| p.logprob.unwrap_or(0.0))
                .collect(),
            ids: self.tokens,
            finish_reason,
            retries: 0,
            cached_tokens: self.timings.and_then(|t| t.cache_n),
        })
    }
}
