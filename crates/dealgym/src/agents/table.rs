//! A seat at an n-party table: a model endpoint (the same client, retries and token-exact
//! sequence as a two-party seat), a script, a planner proposing with those (the one planning
//! loop of `agents::planner`, its state text the table seat's), or the scripted party of its
//! incentive (`rule:deliberation`, the strong one, or `rule:deliberation-naive`). It moves on its
//! own view alone ([`TableEpisode::view`]).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::game::Completion;
use crate::llm::TokenMode;
use crate::negotiator::deliberation::Scripted;
use crate::table::TableEpisode;

use super::model::llm_call;
use super::planner::{PlannerSeat, Proposal};
use super::{Played, Player, PlayerConfig, PlayerError, SamplingDefaults};
use crate::planner::state_text;

/// The spec of the scripted party of a seat's own incentive.
pub use crate::negotiator::deliberation::SCRIPTED_SPEC as SCRIPTED;

/// Who plays a seat of a table.
#[derive(Debug, Clone)]
pub(crate) enum TablePlayer {
    /// The scripted party of the seat's incentive, strong or naive.
    Scripted(Scripted),
    /// A model endpoint, a script, or a planner proposing with them.
    Player(Player),
}

impl TablePlayer {
    /// A seat's player from its spec: `rule:deliberation`, `rule:deliberation-naive`,
    /// `openai:MODEL@URL`, `script:FILE` or a `[players.NAME]` table.
    pub fn from_spec(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<TablePlayer, PlayerError> {
        if let Some(scripted) = Scripted::from_spec(spec) {
            return Ok(TablePlayer::Scripted(scripted));
        }
        let player = Player::from_spec_with(spec, named, http, sampling)?;
        seats_at_table(&player, spec)?;
        Ok(TablePlayer::Player(player))
    }

    /// The spec as recorded.
    pub fn spec(&self) -> &str {
        match self {
            TablePlayer::Scripted(s) => s.spec(),
            TablePlayer::Player(p) => p.spec(),
        }
    }

    pub fn model(&self) -> Option<String> {
        match self {
            TablePlayer::Scripted(_) => None,
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
        match self {
            TablePlayer::Scripted(scripted) => {
                let started = Instant::now();
                Ok(Played {
                    completion: scripted.completion(episode, seat),
                    call: None,
                    latency_ms: started.elapsed().as_millis() as u64,
                    retries: 0,
                    replica: None,
                    planning: None,
                })
            }
            TablePlayer::Player(player) => {
                play_at_table(
                    player,
                    &TableSeatToMove {
                        episode,
                        seat,
                        sampling_seed,
                    },
                )
                .await
            }
        }
    }
}

/// Whether `player` can sit at a table: a model endpoint, a script, or a planner whose
/// proposers are those; a `rule:NAME` tactic plays two-party games.
fn seats_at_table(player: &Player, spec: &str) -> Result<(), PlayerError> {
    match player {
        Player::Llm { constrain, .. } if *constrain != super::Constrain::None => {
            Err(PlayerError::spec(
                spec,
                "`constrain` writes a two-party turn's grammar; a table seat's turns are not \
                 constrained: set `constrain = \"none\"` for it"
                    .to_string(),
            ))
        }
        Player::Llm { .. } | Player::Script { .. } => Ok(()),
        Player::Rule { .. } => Err(PlayerError::spec(
            spec,
            format!("rule:NAME tactics play two-party games; a table seat takes `{SCRIPTED}` (the scripted party of its incentive)"),
        )),
        Player::Planner { planner, .. } => {
            for proposer in planner.proposers() {
                if matches!(proposer, Player::Rule { .. }) {
                    return Err(PlayerError::spec(
                        spec,
                        format!(
                            "a planner at a table proposes with models or scripts; `{}` plays two-party games",
                            proposer.spec()
                        ),
                    ));
                }
                seats_at_table(proposer, spec)?;
            }
            Ok(())
        }
    }
}

/// A table seat to move, as a planner moves for it ([`PlannerSeat`]).
#[derive(Clone, Copy)]
struct TableSeatToMove<'a> {
    episode: &'a TableEpisode,
    seat: usize,
    sampling_seed: u64,
}

impl PlannerSeat for TableSeatToMove<'_> {
    fn sampling_seed(&self) -> u64 {
        self.sampling_seed
    }

    fn propose<'s>(&'s self, proposer: &'s Player, sampling_seed: u64) -> Proposal<'s> {
        let asked = TableSeatToMove {
            sampling_seed,
            ..*self
        };
        Box::pin(async move { play_at_table(proposer, &asked).await })
    }

    fn state_text(&self) -> String {
        state_text(self.episode, self.seat)
    }

    /// Tables have no act catalog: a candidate's label is not kept.
    fn act(&self, _: &str) -> Option<String> {
        None
    }
}

/// The completion of `player` (a model, a script or a planner, [`seats_at_table`]) for the
/// table seat to move.
async fn play_at_table(
    player: &Player,
    to_move: &TableSeatToMove<'_>,
) -> Result<Played, PlayerError> {
    let TableSeatToMove {
        episode,
        seat,
        sampling_seed,
    } = *to_move;
    let started = Instant::now();
    let (completion, call, retries) = match player {
        Player::Script { script, .. } => {
            let calls = episode.turns().iter().filter(|t| t.seat == seat).count();
            (Completion::from(script.complete(calls)?), None, 0)
        }
        Player::Llm {
            client, replicas, ..
        } => {
            let view = episode.view(seat);
            let format = episode.setup().format;
            super::tools_seat_check(player.spec(), format, false, client.settings().tokens)?;
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
                None => llm_call(client, sampling_seed, view, sequence.as_deref(), fields).await?,
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
        // A planner's turn is its committed candidate, timed and recorded by the planner.
        Player::Planner { planner, .. } => return Box::pin(planner.play(to_move)).await,
        Player::Rule { .. } => {
            return Err(PlayerError::spec(
                player.spec(),
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
