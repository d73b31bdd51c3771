//! The only code that talks HTTP to a model: an OpenAI-compatible chat-completions client
//! (vLLM first, llama.cpp's server, hosted APIs) with timeouts, retries with backoff and
//! jitter, and the server's reasoning, usage, logprobs and token ids kept for the record.
//!
//! It knows nothing of episodes: it takes chat messages and a seed and returns a [`Reply`] or
//! an [`LlmError`] that says which endpoint failed and how. The reward calls — an LLM judge
//! (`JudgeClient`) and a scalar reward model (`RewardModelClient`) — go through the same
//! client, with a cache each.
//!
//! A player may list several replicas of one model: a [`ReplicaPool`] routes each call
//! (`pool.rs`: sticky per episode-seat, so prefix caches stay warm; a cap on requests in flight
//! per replica) and keeps the replicas' health (`health.rs`: probes, ejection, re-admission).
//! A call waiting between tries gives back the permit its episode plays under (`permit.rs`).

mod client;
mod exact;
mod health;
mod judge;
mod permit;
mod pool;
mod pool_report;
mod reward_model;
mod routing;
mod transport;
mod types;
mod value_model;

pub(crate) use client::{check_url, without_userinfo};
pub use client::{http_client, EndpointSettings, LlmClient, LlmError, SeedPolicy};
pub use exact::{Sampled, TokenApi, TokenMode};
pub(crate) use judge::JudgeClient;
pub(crate) use permit::{wait_between_tries, PlayPermit};
pub use pool::{CallTokens, ReplicaPool, Routed, SeatKey};
pub(crate) use pool_report::replica_table;
pub use pool_report::{PoolReport, ReplicaReport};
pub(crate) use reward_model::RewardModelClient;
pub use routing::Routing;
pub use types::Reply;
pub use value_model::ValueModelClient;
