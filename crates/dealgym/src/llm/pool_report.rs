//! What the replicas of a pool served, as a run's summary shows it: per replica (requests,
//! errors by kind, peak in flight, tokens and the cached share) and the Markdown table of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::client::LlmError;
use super::routing::Routing;

/// What one replica served, as the summary shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReplicaReport {
    /// The base URL, without credentials.
    pub endpoint: String,
    /// Requests sent to it (each try counts).
    pub requests: u64,
    /// Failed requests by kind (`timeout`, `connect`, `http_429`, `http_5xx`, `http_4xx`,
    /// `bad_response`).
    pub errors: BTreeMap<String, u64>,
    /// The most requests on the wire at once (never above the cap; more wait for a slot).
    pub peak_in_flight: u64,
    /// Episode-seats that started on it or moved to it.
    pub seats: u64,
    pub prompt_tokens: u64,
    /// Prompt tokens served from its prefix cache (counted where the server reports them).
    pub cached_tokens: u64,
    /// Whether any answer reported cached tokens.
    pub cache_reported: bool,
    /// Times it was taken out of rotation, health probes sent while out, and times put back.
    pub ejections: u64,
    pub probes: u64,
    pub readmissions: u64,
}

impl ReplicaReport {
    /// The share of prompt tokens served from the prefix cache; `None` when the server never
    /// reported cached tokens.
    pub(crate) fn cached_share(&self) -> Option<f64> {
        (self.cache_reported && self.prompt_tokens > 0)
            .then(|| self.cached_tokens as f64 / self.prompt_tokens as f64)
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// The replicas of one player and how they served it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PoolReport {
    pub routing: Routing,
    pub replicas: Vec<ReplicaReport>,
}

impl PoolReport {
    /// Cached prompt tokens over prompt tokens, across the replicas that report them.
    pub fn cached_share(&self) -> Option<f64> {
        let reported: Vec<&ReplicaReport> =
            self.replicas.iter().filter(|r| r.cache_reported).collect();
        let prompt: u64 = reported.iter().map(|r| r.prompt_tokens).sum();
        (prompt > 0)
            .then(|| reported.iter().map(|r| r.cached_tokens).sum::<u64>() as f64 / prompt as f64)
    }
}

/// The kind of a failed request, as the summary counts it.
pub(crate) fn error_kind(error: &LlmError) -> &'static str {
    match error {
        LlmError::Timeout { .. } => "timeout",
        LlmError::Connect { .. } => "connect",
        LlmError::Status { status: 429, .. } => "http_429",
        LlmError::Status { status, .. } if *status >= 500 => "http_5xx",
        LlmError::Status { .. } => "http_4xx",
        LlmError::BadResponse { .. } => "bad_response",
        LlmError::MissingKey { .. } => "missing_key",
        LlmError::Settings { .. } => "settings",
        LlmError::GaveUp { last, .. } => error_kind(last),
        LlmError::NoReplica { .. } => "no_replica",
    }
}

/// The per-replica table of a run: one row per player seat and replica.
pub(crate) fn replica_table(pools: &[(String, PoolReport)]) -> String {
    let mut out = String::from(
        "| player | replica | requests | errors | peak in flight | seats | prompt tokens | cached | ejected | probes | re-admitted |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (player, pool) in pools {
        for (i, r) in pool.replicas.iter().enumerate() {
            let errors = if r.errors.is_empty() {
                "0".to_string()
            } else {
                let kinds: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                format!("{} ({})", r.error_count(), kinds.join(", "))
            };
            out.push_str(&format!(
                "| {player} | {i} {} | {} | {errors} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.endpoint,
                r.requests,
                r.peak_in_flight,
                r.seats,
                r.prompt_tokens,
                share(r.cached_share()),
                r.ejections,
                r.probes,
                r.readmissions,
            ));
        }
        out.push_str(&format!(
            "| {player} | all ({} routing) | {} | {} | | {} | {} | {} | {} | {} | {} |\n",
            pool.routing.name(),
            pool.replicas.iter().map(|r| r.requests).sum::<u64>(),
            pool.replicas.iter().map(|r| r.error_count()).sum::<u64>(),
            pool.replicas.iter().map(|r| r.seats).sum::<u64>(),
            pool.replicas.iter().map(|r| r.prompt_tokens).sum::<u64>(),
            share(pool.cached_share()),
            pool.replicas.iter().map(|r| r.ejections).sum::<u64>(),
            pool.replicas.iter().map(|r| r.probes).sum::<u64>(),
            pool.replicas.iter().map(|r| r.readmissions).sum::<u64>(),
        ));
    }
    out
}

fn share(s: Option<f64>) -> String {
    s.map(|s| format!("{:.1}%", 100.0 * s))
        .unwrap_or_else(|| "-".into())
}
