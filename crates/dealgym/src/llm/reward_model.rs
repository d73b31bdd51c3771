//! The reward model's call: one POST of `reward::reward_model::request_body` to the configured
//! URL, retried like any call ([`LlmClient::post_json`]: timeouts, 429 and 5xx with backoff)
//! and cached by the request body. The answer is read by `reward::reward_model::read_score`.

use super::client::{EndpointSettings, LlmClient, LlmError};
use crate::cache::BoundedCache;
use crate::digest::{digest_bytes, Digest};
use crate::reward::reward_model::{read_score, request_body};
use crate::reward::RewardModelConfig;
use crate::vocab::Message;

/// A reward-model endpoint with its score cache.
#[derive(Debug)]
pub(crate) struct RewardModelClient {
    client: LlmClient,
    config: RewardModelConfig,
    /// Keyed by the digest of what is sent, not by the text itself: a cache of whole
    /// transcripts would hold thousands of conversations.
    cache: BoundedCache<Digest, f64>,
}

impl RewardModelClient {
    /// A client for the reward model `config` describes; the API key is read now.
    pub fn new(
        http: reqwest::Client,
        config: &RewardModelConfig,
    ) -> Result<RewardModelClient, LlmError> {
        let settings = EndpointSettings::for_service(config.call());
        Ok(RewardModelClient {
            client: LlmClient::new(http, settings)?,
            config: config.clone(),
            cache: BoundedCache::new(config.cache),
        })
    }

    /// The reward of the conversation `messages`. An answer with no number in it is an error
    /// like a failed call (never a 0).
    pub async fn score(&self, messages: &[Message]) -> Result<f64, LlmError> {
        let body = request_body(self.config.api, self.config.model.as_deref(), messages);
        let key = digest_bytes(body.to_string().as_bytes());
        if let Some(score) = self.cache.get(&key) {
            return Ok(score);
        }
        let url = &self.config.url;
        let (score, _retries) = self
            .client
            .post_json(url, &body, |bytes| {
                read_score(self.config.api, bytes).map_err(|message| LlmError::BadResponse {
                    url: url.clone(),
                    message,
                })
            })
            .await?;
        self.cache.insert(key, score);
        Ok(score)
    }
}
