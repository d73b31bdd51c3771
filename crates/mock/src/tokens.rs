//! The mock's token routes, so token-exact mode is tested without a model: a toy byte-level
//! tokenizer (ids 0–255 are bytes; `<|im_start|>` and `<|im_end|>` are ids 256 and 257) and a
//! ChatML-like template, behind the same routes vLLM and llama.cpp's server offer (`/tokenize`,
//! `/apply-template`, `/completion`, `/v1/completions`). The template can be made
//! non-append-only (earlier assistant turns lose their Thought line, as Qwen3's template drops
//! earlier reasoning) to exercise drift.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{error, fnv, reading, respond_with, sleep_ms, AppState};
use dealgym::vocab::{Message, MessageRole};

pub(crate) const IM_START: u32 = 256;
pub const IM_END: u32 = 257;
const SPECIALS: [(&str, u32); 2] = [("<|im_start|>", IM_START), ("<|im_end|>", IM_END)];

/// How the mock's chat template renders a conversation; named by [`MockTemplate::name`]
/// (`--template drops-earlier-thoughts`; a config file spells it in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MockTemplate {
    /// `<|im_start|>ROLE\nCONTENT<|im_end|>\n` per message: append-only.
    #[default]
    Chatml,
    /// As `chatml`, but every assistant turn before the last one loses its `Thought:` line.
    DropsEarlierThoughts,
}

impl MockTemplate {
    pub const ALL: [MockTemplate; 2] = [MockTemplate::Chatml, MockTemplate::DropsEarlierThoughts];

    pub fn name(self) -> &'static str {
        match self {
            MockTemplate::Chatml => "chatml",
            MockTemplate::DropsEarlierThoughts => "drops-earlier-thoughts",
        }
    }
}

impl std::fmt::Display for MockTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MockTemplate {
    type Err = String;

    fn from_str(name: &str) -> Result<MockTemplate, String> {
        MockTemplate::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| format!("unknown template `{name}`: chatml or drops-earlier-thoughts"))
    }
}

/// Text to ids: the two special markers, bytes otherwise.
pub fn tokenize(text: &str) -> Vec<u32> {
    let mut ids = Vec::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some((marker, id)) = SPECIALS.iter().find(|(m, _)| rest.starts_with(m)) {
            ids.push(*id);
            rest = &rest[marker.len()..];
        } else {
            let c = rest.chars().next().expect("not empty");
            let mut buf = [0u8; 4];
            ids.extend(c.encode_utf8(&mut buf).bytes().map(u32::from));
            rest = &rest[c.len_utf8()..];
        }
    }
    ids
}

/// Ids to text (bytes that are not UTF-8 are replaced).
pub(crate) fn detokenize(ids: &[u32]) -> String {
    let mut out = String::new();
    let mut bytes = Vec::new();
    for id in ids {
        match SPECIALS.iter().find(|(_, s)| s == id) {
            Some((marker, _)) => {
                out.push_str(&String::from_utf8_lossy(&bytes));
                bytes.clear();
                out.push_str(marker);
            }
            None => bytes.push(u8::try_from(*id).unwrap_or(b'?')),
        }
    }
    out.push_str(&String::from_utf8_lossy(&bytes));
    out
}

/// Render a conversation. Without a generation prompt, a final assistant message is continued
/// (no end marker), as llama.cpp's prefill and vLLM's `continue_final_message` do.
pub fn render(messages: &[Message], template: MockTemplate, generation_prompt: bool) -> String {
    let last_assistant = messages
        .iter()
        .rposition(|m| m.role == MessageRole::Assistant);
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.role.name();
        let content = if template == MockTemplate::DropsEarlierThoughts
            && m.role == MessageRole::Assistant
            && Some(i) != last_assistant
        {
            m.content
                .lines()
                .filter(|l| !l.starts_with("Thought:"))
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            m.content.clone()
        };
        out.push_str(&format!("<|im_start|>{role}\n{content}"));
        let continued =
            !generation_prompt && i + 1 == messages.len() && m.role == MessageRole::Assistant;
        if !continued {
            out.push_str("<|im_end|>\n");
        }
    }
    if generation_prompt {
        out.push_str("<|im_start|>assistant\n");
    }
    out
}

/// The messages of a rendered prompt (the open assistant header at its end is dropped).
fn messages_of(text: &str) -> Vec<Message> {
    text.split("<|im_start|>")
        .filter_map(|block| {
            let (role, rest) = block.split_once('\n')?;
            let role = match role {
                "system" => MessageRole::System,
                "user" => MessageRole::User,
                "assistant" => MessageRole::Assistant,
                _ => return None,
            };
            let content = rest.split("<|im_end|>").next().unwrap_or("");
            (!(role == MessageRole::Assistant && content.is_empty()))
                .then(|| Message::new(role, content))
        })
        .collect()
}

#[derive(Deserialize)]
pub(super) struct TokenizeBody {
    #[serde(default)]
    content: Option<String>,
    /// vLLM's plain-text form.
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default = "yes")]
    add_generation_prompt: bool,
    #[serde(default)]
    continue_final_message: bool,
}

fn yes() -> bool {
    true
}

/// `/tokenize`: llama.cpp's (`content`) or vLLM's (`messages`) form.
pub(super) async fn tokenize_route(
    State(state): State<Arc<AppState>>,
    Json(body): Json<TokenizeBody>,
) -> Response {
    let text = match (body.content.or(body.prompt), body.messages) {
        (Some(text), _) => text,
        (None, Some(messages)) => render(
            &messages,
            state.config.template,
            body.add_generation_prompt && !body.continue_final_message,
        ),
        (None, None) => return error(StatusCode::BAD_REQUEST, "content or messages needed"),
    };
    let tokens = tokenize(&text);
    Json(json!({"count": tokens.len(), "tokens": tokens})).into_response()
}

#[derive(Deserialize)]
pub(super) struct TemplateBody {
    messages: Vec<Message>,
    #[serde(default = "yes")]
    add_generation_prompt: bool,
}

/// `/apply-template` (llama.cpp): the rendered prompt as text.
pub(super) async fn apply_template_route(
    State(state): State<Arc<AppState>>,
    Json(body): Json<TemplateBody>,
) -> Response {
    let ends_with_assistant = body
        .messages
        .last()
        .is_some_and(|m| m.role == MessageRole::Assistant);
    let prompt = render(
        &body.messages,
        state.config.template,
        body.add_generation_prompt && !ends_with_assistant,
    );
    Json(json!({ "prompt": prompt })).into_response()
}

#[derive(Deserialize)]
pub(super) struct CompletionBody {
    prompt: Vec<u32>,
    #[serde(default)]
    n_predict: Option<usize>,
    #[serde(default)]
    max_tokens: Option<usize>,
    /// The request's sampling seed: the negotiator's tie-breaker.
    #[serde(default)]
    seed: Option<u64>,
    /// Stop strings: the sample ends where the first begins.
    #[serde(default)]
    stop: crate::stop::Stop,
    /// vLLM's: whether the stop string is kept in the text and ids (llama.cpp never keeps it).
    #[serde(default)]
    include_stop_str_in_output: bool,
}

/// What the mock negotiator says to an id prompt: its ids, their logprobs, and whether the
/// token budget cut it.
/// What the mock sampled for an id prompt: the text, its ids and logprobs, whether the budget
/// cut it, and (with a prefix cache) how many of the prompt's ids were cached.
struct Sample {
    text: String,
    ids: Vec<u32>,
    logprobs: Vec<f64>,
    cut: bool,
    /// Ended by a stop string (no end-of-turn token sampled).
    stopped: bool,
    cached: Option<u64>,
}

async fn sample(state: &AppState, body: &CompletionBody) -> Sample {
    state.stats.requests.fetch_add(1, Ordering::Relaxed);
    sleep_ms(state.config.latency_ms).await;
    let prompt = detokenize(&body.prompt);
    let messages = messages_of(&prompt);
    // A narrator's brief first (as the chat endpoint answers it), then a two-party seat, a
    // table's seat, a market's. Unfaithful by a draw from the prompt, as the chat route draws
    // from its request.
    let draw = (fnv(prompt.as_bytes()) % 10_000) as f64;
    let unfaithful = draw < state.config.narrate_unfaithful_rate * 10_000.0;
    let content = match crate::narrator::narrate(&messages, unfaithful) {
        Some(narrated) => narrated,
        None => match reading(state, &messages) {
            Some(r) => respond_with(&r, &messages, state.config.tactic, body.seed.unwrap_or(0)),
            None => crate::table::respond_table(&messages, None)
                .map(|(text, _)| text)
                .or_else(|| crate::market::respond_market(&messages))
                .unwrap_or_else(|| {
                    "Thought: I do not recognise this task.\nTalk: Hello.\nAction: [REJECT_DEAL]"
                        .into()
                }),
        },
    };
    let (content, stopped) = crate::stop::cut_at_stop(
        &content,
        &body.stop.strings(),
        body.include_stop_str_in_output,
    );
    let mut ids = tokenize(&content);
    let budget = body.n_predict.or(body.max_tokens).unwrap_or(usize::MAX);
    let cut = ids.len() > budget;
    ids.truncate(budget);
    let stopped = stopped && !cut;
    let logprobs = ids
        .iter()
        .map(|id| -((fnv(&id.to_le_bytes()) % 2000) as f64) / 1000.0)
        .collect();
    // The prefix cache sees the id prompt as sent and keeps the ids sampled after it, as the
    // chat route does for its rendered prompt.
    let cached = match &state.prefix_cache {
        Some(cache) => {
            let cached = cache.serve(&body.prompt, &ids);
            let stats = &state.stats;
            stats
                .prompt_tokens
                .fetch_add(body.prompt.len() as u64, Ordering::Relaxed);
            stats.cached_tokens.fetch_add(cached, Ordering::Relaxed);
            let uncached = body.prompt.len() as u64 - cached.min(body.prompt.len() as u64);
            sleep_ms(uncached * state.config.prefill_us_per_token / 1000).await;
            Some(cached)
        }
        None => None,
    };
    Sample {
        text: detokenize(&ids),
        ids,
        logprobs,
        cut,
        stopped,
        cached,
    }
}

/// `/completion` (llama.cpp): the sampled ids without an end-of-turn token.
pub(super) async fn completion_route(
    State(state): State<Arc<AppState>>,
    Json(body): Json<CompletionBody>,
) -> Response {
    let Sample {
        text: content,
        ids,
        logprobs,
        cut,
        stopped,
        cached,
    } = sample(&state, &body).await;
    let probs: Vec<_> = ids
        .iter()
        .zip(&logprobs)
        .map(|(id, lp)| json!({"id": id, "logprob": lp, "token": detokenize(&[*id])}))
        .collect();
    let mut answer = json!({
        "content": content,
        "tokens": ids,
        "completion_probabilities": probs,
        "stop_type": if cut { "limit" } else if stopped { "word" } else { "eos" },
    });
    if let Some(cached) = cached {
        // As llama.cpp says it: of the prompt, `cache_n` from the cache, `prompt_n` evaluated.
        answer["timings"] =
            json!({"cache_n": cached, "prompt_n": body.prompt.len() as u64 - cached});
    }
    Json(answer).into_response()
}

/// `/v1/completions` (vLLM): the sampled ids, ending with the end-of-turn token it sampled.
pub(super) async fn completions_route(
    State(state): State<Arc<AppState>>,
    Json(body): Json<CompletionBody>,
) -> Response {
    let Sample {
        text,
        mut ids,
        mut logprobs,
        cut,
        stopped,
        cached,
    } = sample(&state, &body).await;
    // A stop string ends the sample; an end-of-turn token is sampled otherwise.
    if !cut && !stopped {
        ids.push(IM_END);
        logprobs.push(-0.001);
    }
    let mut answer = json!({
        "object": "text_completion",
        "choices": [{
            "index": 0,
            "text": text,
            "token_ids": ids,
            "logprobs": {"token_logprobs": logprobs, "tokens": ids.iter().map(|id| detokenize(&[*id])).collect::<Vec<_>>()},
            "finish_reason": if cut { "length" } else { "stop" },
        }],
    });
    if let Some(cached) = cached {
        let n = body.prompt.len() as u64;
        answer["usage"] = json!({
            "prompt_tokens": n,
            "completion_tokens": ids.len(),
            "prompt_tokens_details": {"cached_tokens": cached},
        });
    }
    Json(answer).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_round_trips_and_reads_markers() {
        let text = "<|im_start|>user\nhé<|im_end|>\n";
        let ids = tokenize(text);
        assert_eq!(ids[0], IM_START);
        assert!(ids.contains(&IM_END));
        assert_eq!(detokenize(&ids), text);
    }

    #[test]
    fn chatml_is_append_only_and_the_other_template_is_not() {
        let mut m = vec![
            Message::new(MessageRole::System, "s"),
            Message::new(MessageRole::User, "u"),
            Message::new(MessageRole::Assistant, "Thought: t\nTalk: a"),
        ];
        let before = render(&m, MockTemplate::Chatml, false);
        m.push(Message::new(MessageRole::User, "v"));
        let full = render(&m, MockTemplate::Chatml, true);
        assert!(full.starts_with(&before));
        assert_eq!(messages_of(&full).len(), 4);
        m.push(Message::new(MessageRole::Assistant, "Thought: x\nTalk: b"));
        let later = render(&m, MockTemplate::DropsEarlierThoughts, false);
        assert!(!later.starts_with(&render(&m[..3], MockTemplate::DropsEarlierThoughts, false)));
    }
}
