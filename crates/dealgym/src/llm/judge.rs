//! The judge's call: one chat completion per rendered rubric, at temperature 0 by default,
//! retried like any call ([`LlmClient`]) and cached by the rendered rubric (the judged text and
//! the rubric together), so a transcript judged once is never judged again in a run. Reading
//! the verdict is `reward::judge`'s.

use super::client::{EndpointSettings, LlmClient, LlmError, SeedPolicy};
use crate::cache::BoundedCache;
use crate::digest::{digest_bytes, Digest};
use crate::reward::JudgeConfig;
use crate::vocab::{Message, MessageRole};

/// A judge endpoint with its verdict cache.
#[derive(Debug)]
pub(crate) struct JudgeClient {
    client: LlmClient,
    /// Keyed by the digest of what is sent, not by the text itself: a cache of whole
    /// transcripts would hold thousands of conversations.
    cache: BoundedCache<Digest, String>,
}

impl JudgeClient {
    /// A client for the judge `config` describes; the API key is read now (an unset variable
    /// is an error here, not at the first call).
    pub fn new(http: reqwest::Client, config: &JudgeConfig) -> Result<JudgeClient, LlmError> {
        let settings = EndpointSettings {
            temperature: Some(config.temperature),
            max_tokens: config.max_tokens,
            seed_policy: SeedPolicy::Fixed(0),
            ..EndpointSettings::for_service(config.call())
        };
        Ok(JudgeClient {
            client: LlmClient::new(http, settings)?,
            cache: BoundedCache::new(config.cache),
        })
    }

    /// The judge's reply to `prompt` (sent as one user message), from the cache when this
    /// prompt was judged before. Failures are not cached.
    pub async fn reply(&self, prompt: &str) -> Result<String, LlmError> {
        let key = digest_bytes(prompt.as_bytes());
        if let Some(reply) = self.cache.get(&key) {
            return Ok(reply);
        }
        let messages = [Message::new(MessageRole::User, prompt)];
        let reply = self.client.complete(&messages, 0).await?;
        self.cache.insert(key, reply.text.clone());
        Ok(reply.text)
    }
}
