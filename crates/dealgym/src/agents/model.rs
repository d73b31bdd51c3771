//! The model player's calls: the client (and replica pool) a player's settings make, one call
//! to it (chat messages, or in token-exact mode the ids of the seat's new messages and what the
//! model samples after them), and the one reader of an `openai:MODEL@URL` spec.

use super::PlayerError;
use crate::game::Message;
use crate::llm::{
    without_userinfo, CallTokens, EndpointSettings, LlmClient, LlmError, ReplicaPool, SeatKey,
    TokenMode,
};
use crate::vocab::{Call, PromptTokensDetails, Usage};

/// The client of a player's settings, and its replica pool when it lists `endpoints` (the
/// first replica then stands for the player where one URL is needed).
pub(super) fn llm_client(
    spec: &str,
    http: &reqwest::Client,
    mut settings: EndpointSettings,
) -> Result<(LlmClient, Option<ReplicaPool>), PlayerError> {
    // Checked whole before the replicas are taken out: every URL and the number of them.
    settings
        .check()
        .map_err(|message| PlayerError::spec(spec, message))?;
    let endpoints = std::mem::take(&mut settings.endpoints);
    if let Some(first) = endpoints.first() {
        settings.base_url = first.clone();
    }
    let client = LlmClient::new(http.clone(), settings)
        .map_err(|e| PlayerError::spec(spec, e.to_string()))?;
    if endpoints.is_empty() {
        return Ok((client, None));
    }
    let shown: Vec<String> = endpoints.iter().map(|u| without_userinfo(u)).collect();
    Ok((
        client.clone(),
        Some(ReplicaPool::new(&client, &endpoints, &shown)),
    ))
}

/// The sequence a call of `client` sends: the seat's exact ids so far (`sequence`) for a
/// token-exact client, checked before any call; none for a text client.
pub(super) fn exact_sequence<'a>(
    client: &LlmClient,
    sequence: Option<&'a [u32]>,
) -> Result<Option<&'a [u32]>, PlayerError> {
    match client.settings().tokens {
        TokenMode::Text => Ok(None),
        TokenMode::Exact => sequence.map(Some).ok_or_else(|| PlayerError::Spec {
            spec: client.settings().model.clone(),
            message: "a token-exact seat needs every earlier call of the episode to be exact"
                .into(),
        }),
    }
}

/// One call of a model player: to `client`, or with `replicas` to the replica that serves the
/// seat `key` (each seat of an episode keeps one), with the index of the replica that served
/// it.
pub(super) async fn routed_call(
    client: &LlmClient,
    replicas: Option<&ReplicaPool>,
    key: Option<SeatKey>,
    sampling_seed: u64,
    view: &[Message],
    sequence: Option<&[u32]>,
    fields: serde_json::Map<String, serde_json::Value>,
) -> Result<(CallAnswer, Option<u32>), LlmError> {
    let Some(pool) = replicas else {
        return Ok((
            llm_call(client, sampling_seed, view, sequence, fields).await?,
            None,
        ));
    };
    // Boxed, as a planner's: only the seats with replicas carry its size.
    let routed = Box::pin(pool.call(key, |replica| {
        let fields = fields.clone();
        async move {
            let answer = llm_call(&replica, sampling_seed, view, sequence, fields).await?;
            let tokens = answer.tokens;
            Ok((answer, tokens))
        }
    }))
    .await?;
    Ok((
        CallAnswer {
            retries: routed.retries,
            ..routed.value
        },
        Some(routed.replica),
    ))
}

/// One call to `client`: chat messages, or (with the seat's exact `sequence`) the ids of its new
/// messages and what the model samples from that id prompt.
pub(super) async fn llm_call(
    client: &LlmClient,
    sampling_seed: u64,
    view: &[Message],
    sequence: Option<&[u32]>,
    fields: serde_json::Map<String, serde_json::Value>,
) -> Result<CallAnswer, LlmError> {
    let Some(sequence) = sequence else {
        let reply = client.complete_with(view, sampling_seed, fields).await?;
        let tokens = CallTokens {
            prompt: reply.call.usage.map_or(0, |u| u.prompt_tokens),
            cached: reply.call.usage.and_then(|u| u.cached_tokens()),
        };
        return Ok(CallAnswer {
            call: reply.call.if_any(),
            text: reply.text,
            reasoning: reply.reasoning,
            tool_calls: reply.tool_calls,
            tokens_record: None,
            pieces: Vec::new(),
            retries: reply.retries,
            tokens,
        });
    };
    // Boxed: only token-exact seats carry the size of its two calls.
    Box::pin(exact_call(client, sampling_seed, view, sequence, fields)).await
}

/// [`llm_call`] of a token-exact seat: the ids of its new messages, then what the model samples
/// after its whole sequence.
async fn exact_call(
    client: &LlmClient,
    sampling_seed: u64,
    view: &[Message],
    sequence: &[u32],
    fields: serde_json::Map<String, serde_json::Value>,
) -> Result<CallAnswer, LlmError> {
    let api = client.settings().token_api;
    let mut sequence = sequence.to_vec();
    let next = client.next_prompt(api, &sequence, view).await?;
    sequence.extend_from_slice(&next.suffix);
    let sampled = client
        .sample(api, &sequence, client.seed_for(sampling_seed), fields)
        .await?;
    let call = Call {
        finish_reason: sampled.finish_reason.clone(),
        usage: Some(Usage {
            completion_tokens: sampled.ids.len() as u64,
            prompt_tokens: sequence.len() as u64,
            // What the server took from its cache (llama.cpp's `timings.cache_n`, vLLM's
            // `usage.prompt_tokens_details.cached_tokens`), for the prompt-cost figure.
            prompt_tokens_details: sampled.cached_tokens.map(|cached| PromptTokensDetails {
                cached_tokens: Some(cached),
            }),
        }),
        ..Call::default()
    };
    let tokens = CallTokens {
        prompt: sequence.len() as u64,
        cached: sampled.cached_tokens,
    };
    let tokens_record = next
        .sampled(sampled.ids, sampled.logprobs, sampled.finish_reason.clone())
        .map_err(|e| LlmError::BadResponse {
            url: client.root(),
            message: e.to_string(),
        })?;
    Ok(CallAnswer {
        text: sampled.text,
        pieces: sampled.pieces,
        reasoning: None,
        tool_calls: Vec::new(),
        call: Some(call),
        tokens_record: Some(tokens_record),
        retries: sampled.retries,
        tokens,
    })
}

/// What one call answered: text, reasoning, call info, exact tokens (exact mode), retries, and
/// the token counts for the replica statistics.
pub(super) struct CallAnswer {
    pub(super) text: String,
    pub(super) reasoning: Option<String>,
    pub(super) tool_calls: Vec<crate::vocab::ToolCall>,
    pub(super) call: Option<Call>,
    pub(super) tokens_record: Option<crate::vocab::TurnTokens>,
    /// The text of each sampled id (token-exact calls whose server gives it).
    pub(super) pieces: Vec<String>,
    pub(super) retries: u32,
    pub(super) tokens: CallTokens,
}

/// An `openai:MODEL@URL1,URL2,…` spec read once: its model and the URLs of its replicas, the
/// exact URLs the player will call (`None`: not an `openai:` spec). The one reader of the
/// form, so what a server's client policy checks is what is called.
pub(crate) fn openai_spec(spec: &str) -> Result<Option<(&str, Vec<String>)>, PlayerError> {
    let spec = spec.trim();
    let Some(rest) = spec.strip_prefix("openai:") else {
        return Ok(None);
    };
    let Some(at) = rest.find("@http://").or_else(|| rest.find("@https://")) else {
        return Err(PlayerError::spec(
            spec,
            "expected openai:MODEL@http://HOST:PORT/v1",
        ));
    };
    let (model, urls) = (&rest[..at], &rest[at + 1..]);
    if model.is_empty() {
        return Err(PlayerError::spec(spec, "the model name is empty"));
    }
    // `openai:MODEL@URL1,URL2,…`: replicas of one model (each URL checked with the rest of
    // the settings, in `llm_client`).
    let urls = urls.split(',').map(|u| u.trim().to_string()).collect();
    Ok(Some((model, urls)))
}
