//! The chat-completions client: one call with a timeout, retried with exponential backoff and
//! jitter on transient failures (connection errors, timeouts, 429, 5xx, unreadable bodies).

use std::time::Duration;

use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::transport::{self, Target};
use super::types::{ChatRequest, ChatResponse, Reply};
use crate::limits::{
    check_count, check_sampling, check_seconds, MAX_CONCURRENCY, MAX_REPLICAS, MAX_RESPONSE_BYTES,
    MAX_RETRIES,
};
use crate::vocab::Call;
use crate::vocab::Message;

/// Which seed to send with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeedPolicy {
    /// The episode's sampling seed (different per GRPO member and seat): reproducible runs.
    #[default]
    PerEpisode,
    /// No seed: the server samples freely.
    None,
    /// The same seed for every request.
    Fixed(u64),
}

/// How to reach one endpoint and sample from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EndpointSettings {
    /// e.g. `http://127.0.0.1:8000/v1`; `/chat/completions` is appended. Called `endpoint` in a
    /// `[players.NAME]` table.
    #[serde(rename = "endpoint")]
    pub base_url: String,
    pub model: String,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    pub seed_policy: SeedPolicy,
    /// The name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Per-call timeout, in seconds.
    pub timeout_s: f64,
    /// Retries after the first try, for transient failures only.
    pub retries: u32,
    /// First backoff delay, in seconds; doubled per retry up to `backoff_max_s`, with jitter.
    pub backoff_s: f64,
    pub backoff_max_s: f64,
    /// Ask for logprobs of the sampled tokens.
    pub logprobs: bool,
    /// Ask for the token ids of the prompt and the completion (vLLM's `return_token_ids`;
    /// kept in the record as `prompt_token_ids` and `token_ids`).
    pub token_ids: bool,
    /// Merged into the request body as is (`chat_template_kwargs`, guided decoding, …). A
    /// field the client builds itself from its other settings (`model`, `max_tokens`, `n`,
    /// `seed`, …) is refused: it would replace the checked setting.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// `"exact"`: keep the seat's conversation as token ids, rendered by the server's own
    /// template and extended turn by turn, never re-tokenized ([`super::TokenMode`]).
    pub tokens: super::TokenMode,
    /// The server's token API for exact mode: `"vllm"` or `"llama_cpp"`.
    pub token_api: super::TokenApi,
    /// Several base URLs serving one model (replicas): calls are spread over them by a
    /// [`ReplicaPool`](super::ReplicaPool). Give this or `endpoint`, not both.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// How a pool of replicas routes calls: `"sticky"` (an episode-seat keeps its replica, so
    /// its prefix cache is reused turn after turn) or `"least_loaded"` (every call to the
    /// replica with the fewest requests in flight).
    #[serde(skip_serializing_if = "is_default")]
    pub routing: super::Routing,
    /// At most this many requests in flight to one replica; more wait for a slot.
    #[serde(skip_serializing_if = "is_default_cap")]
    pub max_in_flight_per_replica: usize,
    /// The health route, at the server root (the base URL without `/v1`): vLLM and llama.cpp
    /// both answer `GET /health` with 200 when ready.
    #[serde(skip_serializing_if = "is_default_health_path")]
    pub health_path: String,
    /// Seconds between probes of a replica out of rotation (doubled per failed probe, up to
    /// 16 times this).
    #[serde(skip_serializing_if = "is_default_health_interval")]
    pub health_interval_s: f64,
    /// A replica is taken out of rotation after this many consecutive transient failures
    /// (connection errors, timeouts, 429, 5xx, unreadable bodies).
    #[serde(skip_serializing_if = "is_default_eject_after")]
    pub eject_after: u32,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
fn is_default_cap(value: &usize) -> bool {
    *value == EndpointSettings::default().max_in_flight_per_replica
}
fn is_default_health_path(value: &String) -> bool {
    *value == EndpointSettings::default().health_path
}
fn is_default_health_interval(value: &f64) -> bool {
    *value == EndpointSettings::default().health_interval_s
}
fn is_default_eject_after(value: &u32) -> bool {
    *value == EndpointSettings::default().eject_after
}

impl Default for EndpointSettings {
    fn default() -> Self {
        EndpointSettings {
            base_url: String::new(),
            model: String::new(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            stop: Vec::new(),
            seed_policy: SeedPolicy::PerEpisode,
            api_key_env: None,
            timeout_s: 120.0,
            retries: 4,
            backoff_s: 0.5,
            backoff_max_s: 20.0,
            logprobs: false,
            token_ids: false,
            extra_body: serde_json::Map::new(),
            tokens: super::TokenMode::Text,
            token_api: super::TokenApi::Vllm,
            endpoints: Vec::new(),
            routing: super::Routing::Sticky,
            max_in_flight_per_replica: 256,
            health_path: "/health".into(),
            health_interval_s: 5.0,
            eject_after: 3,
        }
    }
}

impl EndpointSettings {
    /// The settings of a reward service (the judge, the reward model): its URL, model, key,
    /// timeout and retries, everything else as for any endpoint. The one place a
    /// `[rewards.*]` table becomes endpoint settings.
    pub(crate) fn for_service(call: crate::reward::ServiceCall<'_>) -> EndpointSettings {
        EndpointSettings {
            base_url: call.url.to_string(),
            model: call.model.to_string(),
            api_key_env: call.api_key_env.map(str::to_string),
            timeout_s: call.timeout_s,
            retries: call.retries,
            backoff_s: call.backoff_s,
            ..EndpointSettings::default()
        }
    }
}

/// Why a call failed, naming the endpoint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{url}: no answer within {seconds}s")]
    Timeout { url: String, seconds: f64 },
    #[error("{url}: cannot connect: {message}")]
    Connect { url: String, message: String },
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
        /// The server's `Retry-After`, in ms (capped at `backoff_max_s`): how long to wait
        /// before the next try instead of the backoff.
        retry_after_ms: Option<u64>,
    },
    #[error("{url}: unreadable response: {message}")]
    BadResponse { url: String, message: String },
    #[error("the API key variable {var} is not set")]
    MissingKey { var: String },
    /// Settings no call can be made with (a timeout or backoff that is not a duration).
    #[error("{url}: {message}")]
    Settings { url: String, message: String },
    #[error("{last} (gave up after {tries} tries)")]
    GaveUp { tries: u32, last: Box<LlmError> },
    /// Every replica of a pool is out of rotation (failed health checks or kept erroring).
    #[error(
        "no healthy replica among {replicas} (all failed their health checks or kept erroring)"
    )]
    NoReplica { replicas: usize },
}

impl LlmError {
    /// How long the server asked to be left alone before the next try (`Retry-After`).
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after_ms, .. } => retry_after_ms.map(Duration::from_millis),
            _ => None,
        }
    }

    /// Worth another try: connection trouble, timeouts, 429, 5xx and unreadable bodies. Other
    /// 4xx mean the request itself is wrong and are not retried.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            LlmError::Timeout { .. }
            | LlmError::Connect { .. }
            | LlmError::BadResponse { .. }
            | LlmError::NoReplica { .. } => true,
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::MissingKey { .. } | LlmError::Settings { .. } | LlmError::GaveUp { .. } => {
                false
            }
        }
    }
}

/// A client for one endpoint. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    settings: std::sync::Arc<EndpointSettings>,
    url: String,
    /// The chat-completions URL, read once (shared by the client's clones).
    chat: std::sync::Arc<PostTarget>,
    api_key: Option<String>,
}

/// A URL calls are POSTed to, read once: reqwest's URL, and the transport's target where the
/// transport carries it (plain `http`, no proxy: [`transport`]).
#[derive(Debug, Clone)]
struct PostTarget {
    /// Why the URL does not read, where it does not (every call then fails, naming it).
    url: Result<reqwest::Url, String>,
    fast: Option<Target>,
}

impl PostTarget {
    fn new(url: &str) -> PostTarget {
        let url = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"));
        PostTarget {
            fast: url.as_ref().ok().and_then(Target::of),
            url,
        }
    }
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("LlmClient")
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .finish()
    }
}

impl EndpointSettings {
    /// Every value of the settings within its limit ([`crate::limits`]): each URL an http(s)
    /// URL (`check_url`), the sampling settings, the counts (retries, replicas, requests in
    /// flight per replica, failures before ejection) and the durations. Checked at config load
    /// (a `[players.NAME]` table) and again where every client is built, so a value no call
    /// can be made with is refused naming its key instead of failing every call later.
    pub fn check(&self) -> Result<(), String> {
        if !self.base_url.trim().is_empty() {
            check_url("endpoint", &self.base_url)?;
        }
        check_count(
            "the number of endpoints",
            self.endpoints.len() as u64,
            0,
            MAX_REPLICAS,
        )?;
        for (i, url) in self.endpoints.iter().enumerate() {
            check_url(&format!("endpoints[{i}]"), url)?;
        }
        check_sampling("", self.temperature, self.top_p, self.max_tokens)?;
        check_count("retries", self.retries.into(), 0, MAX_RETRIES)?;
        check_count(
            "max_in_flight_per_replica",
            self.max_in_flight_per_replica as u64,
            1,
            MAX_CONCURRENCY,
        )?;
        check_count("eject_after", self.eject_after.into(), 1, MAX_RETRIES)?;
        check_seconds("timeout_s", self.timeout_s, false)?;
        check_seconds("backoff_s", self.backoff_s, true)?;
        check_seconds("backoff_max_s", self.backoff_max_s, true)?;
        check_seconds("health_interval_s", self.health_interval_s, true)?;
        check_extra_body(&self.extra_body)
    }
}

/// The request fields the client builds itself, each from a checked setting or from the
/// episode (the chat request's, and a token-exact call's on vLLM and llama.cpp), with what to
/// set instead. `extra_body` is merged in last, so one of these there would replace what was
/// checked: a `max_tokens` past its bound, an `n` of completions nobody reads, a `model` other
/// than the record names.
const BUILT_FIELDS: &[(&str, &str)] = &[
    ("model", "set `model`"),
    ("messages", "the seat's conversation is the episode's"),
    ("prompt", "the seat's conversation is the episode's"),
    ("temperature", "set `temperature`"),
    ("top_p", "set `top_p`"),
    ("max_tokens", "set `max_tokens`"),
    ("max_completion_tokens", "set `max_tokens`"),
    ("n_predict", "set `max_tokens`"),
    ("stop", "set `stop`"),
    ("seed", "set `seed_policy`"),
    ("logprobs", "set `logprobs`"),
    ("n_probs", "set `logprobs`"),
    ("return_token_ids", "set `token_ids`"),
    ("return_tokens", "set `tokens`"),
    ("include_stop_str_in_output", "set `tokens`"),
    ("n", "a call asks for one completion (a seat plays one)"),
    ("stream", "an answer is read whole, not streamed"),
];

/// The rule for a player's `extra_body`: none of [`BUILT_FIELDS`] (checked with the rest of
/// the settings, so a config is refused at load and a client's request with a 422).
fn check_extra_body(extra: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
    match BUILT_FIELDS
        .iter()
        .find(|(key, _)| extra.contains_key(*key))
    {
        Some((key, instead)) => Err(format!(
            "extra_body.{key} would replace a field dealgym builds itself: {instead}"
        )),
        None => Ok(()),
    }
}

/// The rule for a URL a user gives a model endpoint by (a player's `endpoint` or
/// `endpoints`, an `openai:MODEL@URL` spec, the judge's `endpoint`, the reward model's `url`;
/// named by `key`): it parses, its scheme is http or https, and it names a host (a port past
/// 65535 does not parse). Checked where the URL enters, so a typo is refused naming it instead
/// of failing every call of the run as an "unreadable response". The URL is shown without
/// credentials.
pub(crate) fn check_url(key: &str, url: &str) -> Result<reqwest::Url, String> {
    let refused = |why: String| {
        format!(
            "{key} `{}` is not an http(s) URL: {why}",
            without_userinfo(url)
        )
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| refused(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refused(format!(
            "the scheme is {}, not http or https",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refused("it names no host".into()));
    }
    Ok(parsed)
}

/// `url` without the `user:password@` part of its authority, as it may be printed.
pub(crate) fn without_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(host_end);
            let host = authority
                .rsplit_once('@')
                .map(|(_, h)| h)
                .unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

impl LlmClient {
    /// Build a client; reads the API key from the environment variable named in the settings.
    pub fn new(http: reqwest::Client, settings: EndpointSettings) -> Result<Self, LlmError> {
        // Checked here, where every client is built (players, replicas, judge, reward model):
        // a negative, non-finite or huge duration would panic at the first call or retry, and
        // a URL that does not parse would fail every call.
        if let Err(message) = settings.check() {
            return Err(LlmError::Settings {
                url: settings.base_url.clone(),
                message,
            });
        }
        let api_key = match &settings.api_key_env {
            Some(var) => {
                Some(std::env::var(var).map_err(|_| LlmError::MissingKey { var: var.clone() })?)
            }
            None => None,
        };
        let url = format!(
            "{}/chat/completions",
            settings.base_url.trim_end_matches('/')
        );
        Ok(LlmClient {
            http,
            settings: std::sync::Arc::new(settings),
            chat: std::sync::Arc::new(PostTarget::new(&url)),
            url,
            api_key,
        })
    }

    pub(crate) fn settings(&self) -> &EndpointSettings {
        &self.settings
    }

    /// One completion for `messages`, retrying transient failures.
    pub async fn complete(
        &self,
        messages: &[Message],
        sampling_seed: u64,
    ) -> Result<Reply, LlmError> {
        self.complete_with(messages, sampling_seed, serde_json::Map::new())
            .await
    }

    /// As [`LlmClient::complete`], with request fields of this call only (a decoding
    /// constraint, say) merged over the player's `extra_body`.
    pub(crate) async fn complete_with(
        &self,
        messages: &[Message],
        sampling_seed: u64,
        per_request: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Reply, LlmError> {
        let s = &self.settings;
        let merged;
        let extra = if per_request.is_empty() {
            &s.extra_body
        } else {
            let mut m = s.extra_body.clone();
            m.extend(per_request);
            merged = m;
            &merged
        };
        let seed = self.seed_for(sampling_seed);
        let request = ChatRequest {
            model: &s.model,
            messages,
            temperature: s.temperature,
            top_p: s.top_p,
            max_tokens: s.max_tokens,
            stop: &s.stop,
            seed,
            logprobs: s.logprobs,
            return_token_ids: s.token_ids,
            extra,
        };
        // The body's size, about: the conversation's text and a little for each message's
        // fields, so it is written without growing its buffer.
        let size = 256 + messages.iter().map(|m| m.content.len() + 64).sum::<usize>();
        // The answer is read inside the retry loop: a 200 whose body is not a chat completion
        // is a transient failure like a 500, retried, not the end of the episode.
        let (mut reply, retries) = self
            .post_to(&self.chat, &self.url, &request, size, |bytes| {
                parse_chat(&self.url, bytes)
            })
            .await?;
        reply.retries = retries;
        Ok(reply)
    }

    /// The seed to send, by the player's seed policy.
    pub(crate) fn seed_for(&self, sampling_seed: u64) -> Option<u64> {
        match self.settings.seed_policy {
            SeedPolicy::PerEpisode => Some(sampling_seed),
            SeedPolicy::None => None,
            SeedPolicy::Fixed(seed) => Some(seed),
        }
    }

    /// POST a JSON body to `url` (an endpoint of this server), retrying transient failures,
    /// and read the successful answer's body with `read` inside the retry loop, so a 200 whose
    /// body `read` cannot use is a failed try like a 500; returns what `read` made of it and
    /// how many retries it took.
    pub(crate) async fn post_json<T>(
        &self,
        url: &str,
        request: &(impl Serialize + Sync),
        read: impl Fn(&[u8]) -> Result<T, LlmError>,
    ) -> Result<(T, u32), LlmError> {
        self.post_to(&PostTarget::new(url), url, request, 1024, read)
            .await
    }

    /// [`post_json`](Self::post_json) to a target already read, the body written into a buffer
    /// of `size` bytes to start with.
    async fn post_to<T>(
        &self,
        target: &PostTarget,
        url: &str,
        request: &(impl Serialize + Sync),
        size: usize,
        read: impl Fn(&[u8]) -> Result<T, LlmError>,
    ) -> Result<(T, u32), LlmError> {
        let s = &self.settings;
        // Written for each try, not kept between them: once a try's request is sent its body
        // is dropped, so a call waiting for its answer holds no copy of the conversation.
        let body = || {
            let mut body = Vec::with_capacity(size);
            serde_json::to_writer(&mut body, request).map_err(|e| LlmError::BadResponse {
                url: url.to_string(),
                message: format!("cannot encode the request: {e}"),
            })?;
            Ok(bytes::Bytes::from(body))
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let answer = self.call_once(target, url, &body).await;
            match answer.and_then(|bytes| read(&bytes)) {
                Ok(value) => return Ok((value, tries - 1)),
                Err(e) if e.is_transient() && tries <= s.retries => {
                    super::wait_between_tries(self.wait_before_retry(tries, &e)).await;
                }
                Err(e) if tries > 1 => {
                    return Err(LlmError::GaveUp {
                        tries,
                        last: Box::new(e),
                    })
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The wait before try `tries + 1` after `error`: the server's `Retry-After` where it gave
    /// one, else the backoff. One rule for this client's loop and a replica pool's.
    pub(crate) fn wait_before_retry(&self, tries: u32, error: &LlmError) -> Duration {
        error.retry_after().unwrap_or_else(|| self.backoff(tries))
    }

    /// Exponential backoff with jitter: base · 2^(try − 1), capped, times a factor in [0.5, 1).
    pub(crate) fn backoff(&self, tries: u32) -> Duration {
        let s = &self.settings;
        let base =
            (s.backoff_s * 2f64.powi(tries.saturating_sub(1).min(30) as i32)).min(s.backoff_max_s);
        Duration::from_secs_f64(base * rand::rng().random_range(0.5..1.0))
    }

    /// One try: the request `body` writes, sent to `target`; the answer's body, or the error
    /// its status or its failure says.
    async fn call_once(
        &self,
        target: &PostTarget,
        url: &str,
        body: &(dyn Fn() -> Result<bytes::Bytes, LlmError> + Sync),
    ) -> Result<Vec<u8>, LlmError> {
        let s = &self.settings;
        let timeout = Duration::from_secs_f64(s.timeout_s);
        if let Some(fast) = &target.fast {
            let answer = transport::post(
                fast,
                body,
                self.api_key.as_deref(),
                timeout,
                MAX_RESPONSE_BYTES,
            )
            .await?;
            return self.answered(
                url,
                answer.status,
                answer.retry_after.as_deref(),
                answer.body,
            );
        }
        let target_url = target.url.clone().map_err(|message| LlmError::Settings {
            url: without_userinfo(url),
            message,
        })?;
        let mut request = self
            .http
            .post(target_url)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body()?);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let classify = |e: reqwest::Error| {
            if e.is_timeout() {
                LlmError::Timeout {
                    url: url.to_string(),
                    seconds: s.timeout_s,
                }
            } else if e.is_connect() || e.is_request() {
                LlmError::Connect {
                    url: url.to_string(),
                    message: e.to_string(),
                }
            } else {
                LlmError::BadResponse {
                    url: url.to_string(),
                    message: e.to_string(),
                }
            }
        };
        let mut response = request.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let retry_after = transport::retry_after(response.headers());
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(classify)? {
            transport::append_within(&mut bytes, &chunk, MAX_RESPONSE_BYTES).map_err(
                |message| LlmError::BadResponse {
                    url: url.to_string(),
                    message,
                },
            )?;
        }
        self.answered(url, status, retry_after.as_deref(), bytes)
    }

    /// An answer's body, or the error its status says (with how long the server asked to be
    /// left alone, its `Retry-After` in seconds, capped at `backoff_max_s`).
    fn answered(
        &self,
        url: &str,
        status: u16,
        retry_after: Option<&str>,
        bytes: Vec<u8>,
    ) -> Result<Vec<u8>, LlmError> {
        if (200..300).contains(&status) {
            return Ok(bytes);
        }
        let retry_after_ms = retry_after
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| (v.min(self.settings.backoff_max_s) * 1000.0).round() as u64);
        let text = String::from_utf8_lossy(&bytes);
        Err(LlmError::Status {
            url: url.to_string(),
            status,
            body: text.chars().take(300).collect(),
            retry_after_ms,
        })
    }
}

impl LlmClient {
    /// A copy of this client for another base URL (a replica of the same model), with
    /// `retries` tries after the first.
    pub(crate) fn for_replica(&self, base_url: &str, retries: u32) -> LlmClient {
        let mut settings = (*self.settings).clone();
        settings.base_url = base_url.to_string();
        settings.retries = retries;
        let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        LlmClient {
            http: self.http.clone(),
            settings: std::sync::Arc::new(settings),
            chat: std::sync::Arc::new(PostTarget::new(&url)),
            url,
            api_key: self.api_key.clone(),
        }
    }

    /// `GET` the server's health route (at the root, without `/v1`) once: true when the server
    /// answers within the timeout (the call timeout, at most 5 s) with anything but a server
    /// error — a server without the route (404) or behind a key (401) is up; vLLM answers 5xx
    /// when its engine is dead.
    pub(crate) async fn healthy(&self) -> bool {
        let path = &self.settings.health_path;
        let url = if path.starts_with('/') {
            format!("{}{path}", self.root())
        } else {
            format!("{}/{path}", self.root())
        };
        let mut request = self.http.get(url).timeout(Duration::from_secs_f64(
            self.settings.timeout_s.clamp(0.05, 5.0),
        ));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        matches!(request.send().await, Ok(r) if !r.status().is_server_error())
    }
}

/// Read a chat-completions answer. An unreadable one is a transient failure
/// ([`LlmError::BadResponse`]): the retry loop tries again.
fn parse_chat(url: &str, bytes: &[u8]) -> Result<Reply, LlmError> {
    let bad = |message: String| LlmError::BadResponse {
        url: url.to_string(),
        message,
    };
    let parsed: ChatResponse = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let Some(choice) = parsed.choices.into_iter().next() else {
        return Err(bad("no choices".into()));
    };
    // A reply with no content (e.g. all tokens spent on reasoning) is the model's answer,
    // judged by the engine as a format problem, not a backend failure.
    let mut message = choice.message;
    let reasoning = message.reasoning_text();
    let tool_calls = message.calls();
    Ok(Reply {
        text: message.content.unwrap_or_default(),
        reasoning,
        tool_calls,
        call: Call {
            finish_reason: choice.finish_reason,
            logprobs: choice.logprobs,
            model: parsed.model,
            prompt_token_ids: parsed.prompt_token_ids,
            token_ids: choice.token_ids,
            usage: parsed.usage,
        },
        retries: 0,
    })
}

/// A shared HTTP client sized for many concurrent episodes. It follows no redirect: an
/// OpenAI-compatible server answers where it is asked, and a redirect followed would take a
/// served client's call to a host the operator never allowed (`serve::policy`); a redirect is
/// a failed call naming its status.
pub fn http_client(max_idle_per_host: usize) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(max_idle_per_host)
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| LlmError::Connect {
            url: String::new(),
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_SECONDS;

    #[test]
    fn a_reward_service_is_called_as_its_table_says_and_otherwise_as_any_endpoint() {
        let judge = crate::reward::JudgeConfig {
            endpoint: "http://judge/v1".into(),
            model: "j".into(),
            api_key_env: Some("KEY".into()),
            timeout_s: 7.0,
            retries: 5,
            backoff_s: 0.25,
            ..Default::default()
        };
        let s = EndpointSettings::for_service(judge.call());
        assert_eq!(
            (
                s.base_url.as_str(),
                s.model.as_str(),
                s.api_key_env.as_deref()
            ),
            ("http://judge/v1", "j", Some("KEY"))
        );
        assert_eq!((s.timeout_s, s.retries, s.backoff_s), (7.0, 5, 0.25));
        assert_eq!(s.backoff_max_s, EndpointSettings::default().backoff_max_s);
        let rm = crate::reward::RewardModelConfig::default();
        let s = EndpointSettings::for_service(rm.call());
        assert_eq!((s.model.as_str(), s.timeout_s, s.retries), ("", 60.0, 2));
    }

    #[test]
    fn a_client_is_refused_a_timeout_or_backoff_that_is_no_duration() {
        let http = reqwest::Client::new();
        let settings = |timeout_s: f64, backoff_s: f64| EndpointSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            timeout_s,
            backoff_s,
            ..EndpointSettings::default()
        };
        assert!(LlmClient::new(http.clone(), settings(5.0, 0.0)).is_ok());
        assert!(LlmClient::new(http.clone(), settings(MAX_SECONDS, 0.0)).is_ok());
        for (t, b, key) in [
            (0.0, 0.5, "timeout_s"),
            (f64::NAN, 0.5, "timeout_s"),
            (5.0, -1.0, "backoff_s"),
            (1e300, 0.5, "timeout_s"),
            (MAX_SECONDS + 1.0, 0.5, "timeout_s"),
        ] {
            let e = LlmClient::new(http.clone(), settings(t, b)).expect_err("refused");
            assert!(matches!(e, LlmError::Settings { .. }), "{e}");
            assert!(e.to_string().contains(key), "{e}");
            assert!(!e.is_transient());
            if t == 1e300 {
                assert!(e.to_string().ends_with("it is 1e300"), "{e}");
            }
        }
    }

    #[test]
    fn a_url_that_no_call_can_use_is_refused_naming_the_key_and_the_value() {
        assert!(check_url("endpoint", "http://127.0.0.1:8000/v1").is_ok());
        assert!(check_url("endpoint", "https://api.example.com/v1").is_ok());
        for (url, why) in [
            ("not a url", "relative URL without a base"),
            ("http://127.0.0.1:99999/v1", "invalid port number"),
            (
                "ftp://127.0.0.1:21/v1",
                "the scheme is ftp, not http or https",
            ),
            (
                "file:///etc/passwd",
                "the scheme is file, not http or https",
            ),
            ("127.0.0.1:8000/v1", "relative URL without a base"),
            (
                "localhost:8000/v1",
                "the scheme is localhost, not http or https",
            ),
        ] {
            let e = check_url("endpoints[1]", url).unwrap_err();
            assert_eq!(
                e,
                format!("endpoints[1] `{url}` is not an http(s) URL: {why}")
            );
        }
        // Credentials are never printed.
        let e = check_url("endpoint", "http://u:secret@127.0.0.1:99999/v1").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn settings_with_a_count_past_its_limit_are_refused_by_key() {
        let ok = EndpointSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..EndpointSettings::default()
        };
        assert_eq!(ok.check(), Ok(()));
        for (settings, says) in [
            (
                EndpointSettings {
                    max_in_flight_per_replica: 0,
                    ..ok.clone()
                },
                "max_in_flight_per_replica must be from 1 to 65536; it is 0",
            ),
            (
                EndpointSettings {
                    retries: u32::MAX,
                    ..ok.clone()
                },
                "retries must be from 0 to 100; it is 4294967295",
            ),
            (
                EndpointSettings {
                    eject_after: 0,
                    ..ok.clone()
                },
                "eject_after must be from 1 to 100; it is 0",
            ),
            (
                EndpointSettings {
                    top_p: Some(0.0),
                    ..ok.clone()
                },
                "top_p must be a finite number above 0 and at most 1; it is 0",
            ),
            (
                EndpointSettings {
                    endpoints: vec!["http://a/v1".into(), "http://b:70000/v1".into()],
                    ..ok.clone()
                },
                "endpoints[1] `http://b:70000/v1` is not an http(s) URL: invalid port number",
            ),
            (
                EndpointSettings {
                    endpoints: vec!["http://a/v1".into(); 1025],
                    ..ok.clone()
                },
                "the number of endpoints must be from 0 to 1024; it is 1025",
            ),
        ] {
            assert_eq!(settings.check().unwrap_err(), says);
            let e = LlmClient::new(reqwest::Client::new(), settings).expect_err("refused");
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn an_extra_body_may_not_replace_a_field_the_client_builds() {
        // Issue 42, item 10: `extra_body` is merged in last, so `max_tokens` there went past
        // the checked `max_tokens`, `n` asked for completions nobody reads, `model` named
        // another model than the record says.
        let ok = EndpointSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..EndpointSettings::default()
        };
        for (key, value, setting) in [
            ("max_tokens", serde_json::json!(1u64 << 40), "`max_tokens`"),
            ("n", serde_json::json!(64), "one completion"),
            ("model", serde_json::json!("other"), "`model`"),
            ("temperature", serde_json::json!(1e9), "`temperature`"),
            ("seed", serde_json::json!(7), "`seed_policy`"),
            ("stream", serde_json::json!(true), "read whole"),
            ("messages", serde_json::json!([]), "conversation"),
            ("n_predict", serde_json::json!(1u64 << 40), "`max_tokens`"),
        ] {
            let settings = EndpointSettings {
                extra_body: serde_json::Map::from_iter([(key.to_string(), value)]),
                ..ok.clone()
            };
            let e = settings.check().unwrap_err();
            assert!(
                e.starts_with(&format!("extra_body.{key} ")) && e.contains(setting),
                "{key}: {e}"
            );
        }
        // What the client does not build itself still goes through.
        let kwargs = EndpointSettings {
            extra_body: serde_json::Map::from_iter([
                (
                    "chat_template_kwargs".to_string(),
                    serde_json::json!({"enable_thinking": false}),
                ),
                ("cache_prompt".to_string(), serde_json::json!(true)),
                ("tool_choice".to_string(), serde_json::json!("required")),
            ]),
            ..ok
        };
        assert_eq!(kwargs.check(), Ok(()));
    }
}
