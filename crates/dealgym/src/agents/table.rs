//! A seat at an n-party table: a model endpoint (the same client, retries and token-exact
//! sequence as a two-party seat), a script, or the scripted party of its incentive
//! (`rule:deliberation`). It moves on its own view alone ([`TableEpisode::view`]).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::game::Completion;
use crate::llm::TokenMode;
use crate::negotiator::deliberation::scripted_table_completion;
use crate::table::TableEpisode;

use super::model::llm_call;
use super::{Played, Player, PlayerConfig, PlayerError, SamplingDefaults};

/// The spec of the scripted party of a seat's own incentive.
pub use crate::negotiator::deliberation::SCRIPTED_SPEC as SCRIPTED;

/// Who plays a seat of a table.
#[derive(Debug, Clone)]
pub(crate) enum TablePlayer {
    /// The scripted party of the seat's incentive.
    Scripted,
    /// A model endpoint or a script.
    Player(Player),
}

impl TablePlayer {
    /// A seat's player from its spec: `rule:deliberation`, `openai:MODEL@URL`, `script:FILE`
    /// or a `[players.NAME]` table.
    pub fn from_spec(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<TablePlayer, PlayerError> {
        if spec.trim() == SCRIPTED {
            return Ok(TablePlayer::Scripted);
        }
        let player = Player::from_spec_with(spec, named, http, sampling)?;
        match &player {
            Player::Llm { .. } | Player::Script { .. } => Ok(TablePlayer::Player(player)),
            Player::Rule { .. } => Err(PlayerError::spec(
                spec,
                format!("rule:NAME tactics play two-party games; a table seat takes `{SCRIPTED}` (the scripted party of its incentive)"),
            )),
            Player::Planner { .. } => Err(PlayerError::spec(
                spec,
                "a planner plays two-party games; a table seat takes a model, a script or rule:deliberation",
            )),
        }
    }

    /// The spec as recorded.
    pub fn spec(&self) -> &str {
        match self {
            TablePlayer::Scripted => SCRIPTED,
            TablePlayer::Player(p) => p.spec(),
        }
    }

    pub fn model(&self) -> Option<String> {
        match self {
            TablePlayer::Scripted => None,
            TablePlayer::Player(p) => p.model(),
        }
    }

    /// The completion of `seat`, whose turn it is in `episode`.
    pub async fn play(
        &self,
        episode: &TableEpisode,
        seat: usize,
        sampling_seed: u64,
    ) -> Result<Played, PlayerError> {
        let started = Instant::now();
        let (completion, call, retries) = match self {
            TablePlayer::Scripted => (scripted_table_completion(episode, seat), None, 0),
            TablePlayer::Player(Player::Script { script, .. }) => {
                let calls = episode.turns().iter().filter(|t| t.seat == seat).count();
                (Completion::from(script.complete(calls)?), None, 0)
            }
            TablePlayer::Player(Player::Llm {
                client, replicas, ..
            }) => {
                let view = episode.view(seat);
                let format = episode.setup().format;
                super::tools_seat_check(self.spec(), format, false, client.settings().tokens)?;
                let sequence = match client.settings().tokens {
                    TokenMode::Exact => Some(
                        episode
                            .token_sequence(seat)
                            .map(<[u32]>::to_vec)
                            .ok_or_else(|| PlayerError::Spec {
                                spec: client.settings().model.clone(),
                                message: "a token-exact seat needs every earlier call of the \
                                      episode to be exact"
                                    .into(),
                            })?,
                    ),
                    TokenMode::Text => None,
                };
                let mut fields = serde_json::Map::new();
                if format == crate::protocol::TurnFormat::Tools {
                    fields.insert(
                        "tools".into(),
                        crate::table::table_tools(episode.scenario()),
                    );
                }
                let answer = match replicas {
                    None => {
                        llm_call(client, sampling_seed, view, sequence.as_deref(), fields).await?
                    }
                    Some(pool) => {
                        let routed = pool
                            .call(None, |replica| {
                                let fields = fields.clone();
                                let sequence = sequence.as_deref();
                                async move {
                                    let answer =
                                        llm_call(&replica, sampling_seed, view, sequence, fields)
                                            .await?;
                                    let tokens = answer.tokens;
                                    Ok((answer, tokens))
                                }
                            })
                            .await?;
                        routed.value
                    }
                };
                (
                    Completion {
                        text: answer.text,
                        reasoning: answer.reasoning,
                        tokens: answer.tokens_record,
                        tool_calls: answer.tool_calls,
                        ..Completion::default()
                    },
                    answer.call,
                    answer.retries,
                )
            }
            TablePlayer::Player(other) => {
                return Err(PlayerError::spec(
                    other.spec(),
                    "this player cannot sit at a table",
                ))
            }
        };
        Ok(Played {
            completion,
            call,
            latency_ms: started.elapsed().as_millis() as u64,
            retries,
            replica: None,
            planning: None,
        })
    }
}
