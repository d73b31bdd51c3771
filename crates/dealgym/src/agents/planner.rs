//! A propose-then-commit player (the DialogXpert setting, issue 26 part 4): each turn it asks
//! its proposers for k candidate completions, has a value model score each against the state
//! text of the seat ([`crate::planner::state_text`]), and commits the best
//! ([`crate::planner::choose`]); the candidates, their values and the choice go on the turn.
//!
//! The proposers are players like any other: one player asked k times, each candidate with its
//! own sampling seed (the first with the seat's own, so k = 1 is that player), or a list of k
//! players, one candidate each (a scripted planner: `rule:` negotiators with different
//! tactics). Without a value model the planner commits the first candidate: the baseline a
//! value model is measured against.

use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Played, Player, PlayerError, TurnContext};
use crate::game::{mix, Message};
use crate::llm::LlmError;
use crate::planner::{choose, state_text, Candidate, Planning, ValueModel};
use crate::protocol::parse;
use crate::scenario::find_act;

/// DialogXpert's top-k (§4.3 and Table 4: k = 4 did best).
pub const DEFAULT_K: usize = 4;

/// A planner seat, as a `[players.NAME]` table's `planner` key gives it:
/// `planner = { k = 4, propose = "openai:m@URL", value = "http://…/v1/value" }`, or
/// `propose = ["rule:conceder", "rule:linear", …]` (one candidate each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlannerConfig {
    /// Candidates per turn. With one proposer it is asked this many times (default 4,
    /// DialogXpert's top-k); with a list, the list's length (and `k`, if given, must match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// Who proposes the candidates: a player spec, or a list of specs (one candidate each).
    /// A proposer cannot itself be a planner.
    pub propose: Proposers,
    /// The value model's URL (POST `{"state", "candidates"}`, answered `{"values"}`;
    /// `dealgym mock` serves one at `/v1/value`). Absent: commit the first candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// One proposer or a list of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Proposers {
    /// One player spec, asked k times with k sampling seeds.
    One(String),
    /// One player spec per candidate.
    Each(Vec<String>),
}

/// How a planner commits: by a value model (over HTTP or in process), or the first candidate.
#[derive(Clone)]
pub enum Selector {
    First,
    Http(crate::llm::ValueModelClient),
    InProcess(Arc<dyn ValueModel>),
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::First => write!(f, "First"),
            Selector::Http(c) => write!(f, "Http({})", c.url()),
            Selector::InProcess(_) => write!(f, "InProcess"),
        }
    }
}

impl Selector {
    fn identity(&self) -> String {
        match self {
            Selector::First => "first".into(),
            Selector::Http(c) => format!("value={}", crate::llm::without_userinfo(c.url())),
            Selector::InProcess(_) => "value=in-process".into(),
        }
    }
}

/// A propose-then-commit player.
#[derive(Debug, Clone)]
pub struct Planner {
    proposers: Vec<Player>,
    k: usize,
    selector: Selector,
}

impl Planner {
    /// A planner over `proposers` (one asked `k` times, or `k` of them) committing by
    /// `selector`. An in-process value model is given here ([`Selector::InProcess`]).
    pub fn new(proposers: Vec<Player>, k: usize, selector: Selector) -> Result<Planner, String> {
        if k == 0 {
            return Err("`k` must be at least 1".into());
        }
        match proposers.len() {
            0 => return Err("no proposer".into()),
            1 => {}
            n if n != k => return Err(format!("{n} proposers for k = {k} candidates")),
            _ => {}
        }
        if proposers
            .iter()
            .any(|p| matches!(p, Player::Planner { .. }))
        {
            return Err("a proposer cannot itself be a planner".into());
        }
        Ok(Planner {
            proposers,
            k,
            selector,
        })
    }

    /// Build a planner from its config; `make` makes each proposer from its spec.
    pub(crate) fn from_config(
        config: &PlannerConfig,
        http: &reqwest::Client,
        mut make: impl FnMut(&str) -> Result<Player, PlayerError>,
    ) -> Result<Planner, String> {
        let specs: Vec<&str> = match &config.propose {
            Proposers::One(spec) => vec![spec.as_str()],
            Proposers::Each(specs) => specs.iter().map(String::as_str).collect(),
        };
        let k = match (&config.propose, config.k) {
            (Proposers::One(_), k) => k.unwrap_or(DEFAULT_K),
            (Proposers::Each(specs), None) => specs.len(),
            (Proposers::Each(specs), Some(k)) if k == specs.len() => k,
            (Proposers::Each(specs), Some(k)) => {
                return Err(format!("`k` is {k} but `propose` lists {}", specs.len()))
            }
        };
        let proposers = specs
            .into_iter()
            .map(|s| make(s).map_err(|e| format!("proposer: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let selector = match &config.value {
            None => Selector::First,
            Some(url) => Selector::Http(
                crate::llm::ValueModelClient::new(http.clone(), url)
                    .map_err(|e| format!("value: {e}"))?,
            ),
        };
        Planner::new(proposers, k, selector)
    }

    /// What identifies the planner across runs: its proposers, k and how it commits.
    pub(crate) fn identity(&self) -> String {
        let proposers: Vec<String> = self.proposers.iter().map(Player::identity).collect();
        format!(
            "planner|k={}|{}|{}",
            self.k,
            proposers.join(","),
            self.selector.identity()
        )
    }

    pub(crate) fn first_proposer(&self) -> &Player {
        &self.proposers[0]
    }

    /// Propose k candidates, score them, commit one.
    pub(crate) async fn play(
        &self,
        ctx: &TurnContext<'_>,
        view: &[Message],
    ) -> Result<Played, PlayerError> {
        let started = Instant::now();
        let mut proposed: Vec<Played> = Vec::with_capacity(self.k);
        for i in 0..self.k {
            let proposer = self.proposers.get(i).unwrap_or(&self.proposers[0]);
            let mut position = ctx.position.clone();
            if i > 0 && self.proposers.len() == 1 {
                position.sampling_seed = mix(&[ctx.sampling_seed, i as u64]);
            }
            let asked = TurnContext {
                position,
                calls: ctx.calls,
                turns: ctx.turns,
                route: ctx.route,
                episode: ctx.episode,
            };
            proposed.push(Box::pin(proposer.play(&asked, view)).await?);
        }
        let texts: Vec<&str> = proposed
            .iter()
            .map(|p| p.completion.text.as_str())
            .collect();
        let values = match &self.selector {
            Selector::First => None,
            Selector::Http(client) => {
                let state = state_text(ctx.episode, ctx.seat);
                Some(client.values(&state, &texts).await?)
            }
            Selector::InProcess(model) => {
                let state = state_text(ctx.episode, ctx.seat);
                let values = model.values(&state, &texts).map_err(|message| {
                    PlayerError::Backend(LlmError::BadResponse {
                        url: "in-process value model".into(),
                        message,
                    })
                })?;
                if values.len() != texts.len() {
                    return Err(PlayerError::Backend(LlmError::BadResponse {
                        url: "in-process value model".into(),
                        message: format!("{} values for {} candidates", values.len(), texts.len()),
                    }));
                }
                Some(values)
            }
        };
        let chosen = values.as_deref().and_then(choose).unwrap_or(0);
        let space = ctx.scenario.term_space();
        let candidates: Vec<Candidate> = proposed
            .iter()
            .enumerate()
            .map(|(i, p)| Candidate {
                raw: p.completion.text.clone(),
                act: parse(&p.completion.text, space, None)
                    .act
                    .and_then(|l| find_act(ctx.scenario.family, &l))
                    .map(|a| a.label.to_string()),
                value: values.as_ref().map(|v| v[i]),
            })
            .collect();
        let retries = proposed.iter().map(|p| p.retries).sum();
        let committed = proposed.swap_remove(chosen);
        Ok(Played {
            latency_ms: started.elapsed().as_millis() as u64,
            retries,
            planning: Some(Planning { candidates, chosen }),
            ..committed
        })
    }
}
