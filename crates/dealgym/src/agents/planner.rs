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

use std::future::Future;
use std::pin::Pin;
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
pub(crate) const DEFAULT_K: usize = 4;

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
    pub(crate) fn new(
        proposers: Vec<Player>,
        k: usize,
        selector: Selector,
    ) -> Result<Planner, String> {
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

    /// The proposers, one per candidate or one asked k times.
    pub(crate) fn proposers(&self) -> &[Player] {
        &self.proposers
    }

    /// Propose k candidates for the seat to move, score them, commit one: the one planning
    /// loop for a seat of either kind of episode ([`PlannerSeat`]).
    pub(crate) async fn play(&self, seat: &impl PlannerSeat) -> Result<Played, PlayerError> {
        let started = Instant::now();
        let mut proposed: Vec<Played> = Vec::with_capacity(self.k);
        for i in 0..self.k {
            let proposer = self.proposers.get(i).unwrap_or(&self.proposers[0]);
            let mut sampling_seed = seat.sampling_seed();
            if i > 0 && self.proposers.len() == 1 {
                sampling_seed = mix(&[sampling_seed, i as u64]);
            }
            proposed.push(seat.propose(proposer, sampling_seed).await?);
        }
        let texts: Vec<&str> = proposed
            .iter()
            .map(|p| p.completion.text.as_str())
            .collect();
        let values = match &self.selector {
            Selector::First => None,
            Selector::Http(client) => Some(client.values(&seat.state_text(), &texts).await?),
            Selector::InProcess(model) => {
                let values = model
                    .values(&seat.state_text(), &texts)
                    .map_err(|message| {
                        PlayerError::Backend(LlmError::BadResponse {
                            url: "in-process value model".into(),
                            message,
                        })
                    })?;
                let bad = if values.len() != texts.len() {
                    Some(format!(
                        "{} values for {} candidates",
                        values.len(),
                        texts.len()
                    ))
                } else {
                    // As the HTTP client holds an endpoint to (`llm::value_model`).
                    values
                        .iter()
                        .find(|v| !v.is_finite())
                        .map(|v| format!("a value that is not a finite number: {v}"))
                };
                if let Some(message) = bad {
                    return Err(PlayerError::Backend(LlmError::BadResponse {
                        url: "in-process value model".into(),
                        message,
                    }));
                }
                Some(values)
            }
        };
        let chosen = values.as_deref().and_then(choose).unwrap_or(0);
        let candidates: Vec<Candidate> = proposed
            .iter()
            .enumerate()
            .map(|(i, p)| Candidate {
                raw: p.completion.text.clone(),
                act: seat.act(&p.completion.text),
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

/// A future a proposer answers with.
pub(crate) type Proposal<'a> =
    Pin<Box<dyn Future<Output = Result<Played, PlayerError>> + Send + 'a>>;

/// The seat a planner moves for, in either kind of episode: what [`Planner::play`] needs of
/// it — how to ask a proposer for a candidate, the seat's state text, the act a candidate
/// names. A two-party seat ([`TwoPartySeat`]) and a table seat (`agents::table`) give them.
pub(crate) trait PlannerSeat: Sync {
    /// The seat's own sampling seed (the first candidate's; the others' are mixed from it).
    fn sampling_seed(&self) -> u64;
    /// `proposer`'s completion for the seat, sampled with `sampling_seed`.
    fn propose<'a>(&'a self, proposer: &'a Player, sampling_seed: u64) -> Proposal<'a>;
    /// The seat's state text ([`crate::planner::state_text`]), which a value model scores
    /// candidates against.
    fn state_text(&self) -> String;
    /// The dialogue act a candidate names, in its family catalog's spelling (none for a game
    /// without a catalog).
    fn act(&self, text: &str) -> Option<String>;
}

/// A two-party seat to move: its context and the messages it sees.
pub(crate) struct TwoPartySeat<'c, 'a> {
    pub ctx: &'c TurnContext<'a>,
    pub view: &'c [Message],
}

impl PlannerSeat for TwoPartySeat<'_, '_> {
    fn sampling_seed(&self) -> u64 {
        self.ctx.sampling_seed
    }

    fn propose<'s>(&'s self, proposer: &'s Player, sampling_seed: u64) -> Proposal<'s> {
        Box::pin(async move {
            let mut position = self.ctx.position.clone();
            position.sampling_seed = sampling_seed;
            let asked = TurnContext {
                position,
                calls: self.ctx.calls,
                turns: self.ctx.turns,
                route: self.ctx.route,
                episode: self.ctx.episode,
            };
            proposer.play(&asked, self.view).await
        })
    }

    fn state_text(&self) -> String {
        state_text(self.ctx.episode, self.ctx.seat)
    }

    fn act(&self, text: &str) -> Option<String> {
        let scenario = self.ctx.scenario;
        parse(text, scenario.term_space(), None)
            .act
            .and_then(|l| find_act(scenario.family, &l))
            .map(|a| a.label.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::PlayerConfig;
    use crate::fixtures::{price, setup_with};
    use crate::game::{Episode, EpisodeConfig, FirstMover, Seat};

    fn rule(name: &str) -> Player {
        Player::from_spec(
            &format!("rule:{name}"),
            &Default::default(),
            &reqwest::Client::new(),
        )
        .unwrap()
    }

    fn episode() -> Episode {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        };
        Episode::new(s.clone(), setup_with(&s, &config)).unwrap()
    }

    #[tokio::test]
    async fn an_in_process_value_model_picks_among_the_proposers_candidates() {
        let e = episode();
        let ctx = TurnContext::of(&e, Seat::Learner, 9);
        // Prefer the lowest price a buyer offers: the value is minus the offered price.
        let cheapest = |state: &str, candidate: &str| {
            assert!(
                state.starts_with("State: {"),
                "the model is sent the state text"
            );
            let price = candidate.rsplit("price:").next().unwrap_or("0");
            -price.trim().parse::<f64>().unwrap_or(f64::MAX)
        };
        let planner = Planner::new(
            vec![rule("conceder"), rule("tough")],
            2,
            Selector::InProcess(Arc::new(cheapest)),
        )
        .unwrap();
        let played = planner
            .play(&TwoPartySeat {
                ctx: &ctx,
                view: e.view(Seat::Learner),
            })
            .await
            .unwrap();
        let planning = played.planning.expect("the candidates are kept");
        assert_eq!(planning.candidates.len(), 2);
        let values: Vec<f64> = planning
            .candidates
            .iter()
            .map(|c| c.value.unwrap())
            .collect();
        assert_eq!(Some(planning.chosen), choose(&values));
        assert_eq!(
            played.completion.text,
            planning.candidates[planning.chosen].raw
        );

        // Without a value model: the first candidate, no values.
        let first = Planner::new(vec![rule("conceder"), rule("tough")], 2, Selector::First)
            .unwrap()
            .play(&TwoPartySeat {
                ctx: &ctx,
                view: e.view(Seat::Learner),
            })
            .await
            .unwrap();
        let planning = first.planning.unwrap();
        assert_eq!(planning.chosen, 0);
        assert!(planning.candidates.iter().all(|c| c.value.is_none()));
    }

    #[test]
    fn a_planner_config_is_checked_when_it_is_built() {
        let make = |spec: &str| Ok(rule(spec.trim_start_matches("rule:")));
        let http = reqwest::Client::new();
        let config = |k: Option<usize>, propose: Proposers| PlannerConfig {
            k,
            propose,
            value: None,
        };
        let two = Proposers::Each(vec!["rule:linear".into(), "rule:tough".into()]);
        let e = Planner::from_config(&config(Some(3), two.clone()), &http, make).unwrap_err();
        assert!(e.contains("`k` is 3 but `propose` lists 2"), "{e}");
        assert_eq!(
            Planner::from_config(&config(None, two), &http, make)
                .unwrap()
                .k,
            2
        );
        let one = Proposers::One("rule:linear".into());
        assert_eq!(
            Planner::from_config(&config(None, one.clone()), &http, make)
                .unwrap()
                .k,
            DEFAULT_K
        );
        assert!(Planner::from_config(&config(Some(0), one), &http, make).is_err());
        // A table with `planner` holds nothing else.
        let mixed = serde_json::from_str::<PlayerConfig>(
            r#"{"planner": {"propose": "rule:linear"}, "model": "m"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(mixed.contains("`planner` alone"), "{mixed}");
    }
}
