//! A seat at an n-party table or a market: a model endpoint (the same client, retries and token-exact
//! sequence as a two-party seat), a script, a planner proposing with those (the one planning
//! loop of `agents::planner`, its state text the table seat's), or the scripted party of its
//! incentive (`rule:deliberation`, the strong one, or `rule:deliberation-naive`) or, at a
//! market, a scripted trader (`rule:zic`, `rule:sniper`, `rule:truthful`). It moves on its own
//! view alone ([`SeatEpisode::view`]): the one seat path is written over both episodes.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::game::{Completion, Message};
use crate::market::MarketEpisode;
use crate::negotiator::deliberation::Scripted;
use crate::negotiator::market::MarketRule;
use crate::planner::Known;
use crate::protocol::TurnFormat;
use crate::table::TableEpisode;

use super::model::{exact_sequence, routed_call};
use super::planner::{PlannerSeat, Proposal};
use super::{Planner, Played, Player, PlayerConfig, PlayerError, SamplingDefaults};
use crate::planner::state_text;

/// The spec of the scripted party of a seat's own incentive.
pub use crate::negotiator::deliberation::SCRIPTED_SPEC as SCRIPTED;

/// What a scripted seat of one rulebook is: the table's party of its incentive
/// ([`Scripted`]), the market's traders ([`MarketRule`]). [`SeatPlayer`] is written once over
/// it.
pub(crate) trait ScriptedSeat: Copy + Send + Sync {
    /// The episode it plays.
    type Episode: SeatEpisode;
    /// What a seat of this rulebook takes when its spec names a two-party `rule:NAME` tactic.
    const TAKES: &'static str;
    /// The scripted player a spec names, if it names one.
    fn from_spec(spec: &str) -> Option<Self>;
    /// Its spec, as records name it.
    fn spec(self) -> &'static str;
    /// Its completion for `seat`, whose turn it is in `episode`.
    fn completion(self, episode: &Self::Episode, seat: usize) -> Completion;
}

impl ScriptedSeat for Scripted {
    type Episode = TableEpisode;
    const TAKES: &'static str = "`rule:deliberation` (the scripted party of its incentive)";
    fn from_spec(spec: &str) -> Option<Scripted> {
        Scripted::from_spec(spec)
    }
    fn spec(self) -> &'static str {
        Scripted::spec(self)
    }
    fn completion(self, episode: &TableEpisode, seat: usize) -> Completion {
        Scripted::completion(self, episode, seat)
    }
}

impl ScriptedSeat for MarketRule {
    type Episode = MarketEpisode;
    const TAKES: &'static str = "`rule:zic`, `rule:sniper` or `rule:truthful` (a scripted trader)";
    fn from_spec(spec: &str) -> Option<MarketRule> {
        MarketRule::from_spec(spec)
    }
    fn spec(self) -> &'static str {
        MarketRule::spec(self)
    }
    fn completion(self, episode: &MarketEpisode, seat: usize) -> Completion {
        MarketRule::completion(self, episode, seat)
    }
}

/// Who plays a seat of an n-party episode (a table, a market).
#[derive(Debug, Clone)]
pub(crate) enum SeatPlayer<S> {
    /// The rulebook's scripted player.
    Scripted(S),
    /// A model endpoint, a script, or a planner proposing with them.
    Player(Player),
}

/// Who plays a seat of a table.
pub(crate) type TablePlayer = SeatPlayer<Scripted>;
/// Who plays a seat of a market.
pub(crate) type MarketPlayer = SeatPlayer<MarketRule>;

impl<S: ScriptedSeat> SeatPlayer<S> {
    /// A seat's player from its spec: the rulebook's scripted player (`rule:deliberation`,
    /// `rule:deliberation-naive` at a table; `rule:zic`, `rule:sniper`, `rule:truthful` at a
    /// market), `openai:MODEL@URL`, `script:FILE` or a `[players.NAME]` table.
    pub fn from_spec(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<SeatPlayer<S>, PlayerError> {
        if let Some(scripted) = S::from_spec(spec) {
            return Ok(SeatPlayer::Scripted(scripted));
        }
        // An unknown `rule:NAME` says what a seat of this rulebook takes.
        let player = Player::from_spec_with(spec, named, http, sampling).map_err(|e| match e {
            PlayerError::Spec { spec, message } if spec.trim().starts_with("rule:") => {
                PlayerError::Spec {
                    spec,
                    message: format!("{message}; a seat here takes {}", S::TAKES),
                }
            }
            e => e,
        })?;
        seats_at_table(&player, spec, S::TAKES)?;
        S::Episode::seats(&player, spec)?;
        Ok(SeatPlayer::Player(player))
    }

    /// The spec as recorded.
    pub fn spec(&self) -> &str {
        match self {
            SeatPlayer::Scripted(s) => s.spec(),
            SeatPlayer::Player(p) => p.spec(),
        }
    }

    pub fn model(&self) -> Option<String> {
        match self {
            SeatPlayer::Scripted(_) => None,
            SeatPlayer::Player(p) => p.model(),
        }
    }

    /// The completion of `seat`, whose turn it is in `episode`.
    pub async fn play(
        &self,
        episode: &S::Episode,
        seat: usize,
        sampling_seed: u64,
    ) -> Result<Played, PlayerError> {
        match self {
            SeatPlayer::Scripted(scripted) => {
                let started = Instant::now();
                let completion = scripted.completion(episode, seat);
                Ok(Played::scripted(
                    completion,
                    started.elapsed().as_millis() as u64,
                ))
            }
            SeatPlayer::Player(player) => {
                play_at_table(
                    player,
                    &SeatToMove {
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

/// What a model, a script or a planner reads of an n-party episode to play a seat of it: the
/// seat's own view and exact tokens, its attempts so far, how turns are written. The table
/// and the market give them; [`play_at_table`] is written once over them.
pub(crate) trait SeatEpisode: Sync + Sized {
    /// What `seat` sees.
    fn view(&self, seat: usize) -> &[Message];
    /// `seat`'s exact token sequence so far, if every earlier call was exact.
    fn token_sequence(&self, seat: usize) -> Option<&[u32]>;
    /// How every seat writes its turns.
    fn format(&self) -> TurnFormat;
    /// `seat`'s attempts at a turn so far (a script's next line).
    fn attempts(&self, seat: usize) -> usize;
    /// The tools a seat is offered when the episode is played through tools.
    fn tools(&self) -> serde_json::Value;
    /// Whether `player` (a model, a script or a planner) can play a seat of this rulebook.
    fn seats(player: &Player, spec: &str) -> Result<(), PlayerError>;
    /// A planner's turn for the seat to move.
    fn plan<'a>(planner: &'a Planner, to_move: &'a SeatToMove<'a, Self>) -> Proposal<'a>;
    /// The scripted party's move for `seat`, as a narrated seat's decider (`None` where this
    /// rulebook has no such party).
    fn scripted_move(&self, scripted: Scripted, seat: usize) -> Option<Completion>;
    /// The brief a narrated seat's narrator is sent with the decided `line`.
    fn narration_brief(&self, line: &str) -> Result<String, String>;
}

impl SeatEpisode for TableEpisode {
    fn view(&self, seat: usize) -> &[Message] {
        TableEpisode::view(self, seat)
    }
    fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        TableEpisode::token_sequence(self, seat)
    }
    fn format(&self) -> TurnFormat {
        self.setup().format
    }
    fn attempts(&self, seat: usize) -> usize {
        self.turns().iter().filter(|t| t.seat == seat).count()
    }
    fn tools(&self) -> serde_json::Value {
        crate::table::table_tools(self.scenario())
    }
    fn seats(_: &Player, _: &str) -> Result<(), PlayerError> {
        Ok(())
    }
    fn plan<'a>(planner: &'a Planner, to_move: &'a SeatToMove<'a, Self>) -> Proposal<'a> {
        Box::pin(planner.play(to_move))
    }
    fn scripted_move(&self, scripted: Scripted, seat: usize) -> Option<Completion> {
        Some(scripted.completion(self, seat))
    }
    fn narration_brief(&self, line: &str) -> Result<String, String> {
        TableEpisode::narration_brief(self, line).map_err(|e| e.to_string())
    }
}

impl SeatEpisode for MarketEpisode {
    fn view(&self, seat: usize) -> &[Message] {
        MarketEpisode::view(self, seat)
    }
    fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        MarketEpisode::token_sequence(self, seat)
    }
    fn format(&self) -> TurnFormat {
        self.setup().format
    }
    fn attempts(&self, seat: usize) -> usize {
        self.turns().iter().filter(|t| t.seat == seat).count()
    }
    /// A market reads text turns only ([`MarketSetup::new`](crate::market::MarketSetup)
    /// refuses the tools format): no tools.
    fn tools(&self) -> serde_json::Value {
        serde_json::Value::Array(Vec::new())
    }
    /// A planner needs a seat's state text, which a market does not write yet: refused.
    fn seats(player: &Player, spec: &str) -> Result<(), PlayerError> {
        match player {
            Player::Narrated { .. } => Err(PlayerError::spec(
                spec,
                "a narrated player does not sit at a market (a market's quotes and takes have \
                 no decider yet): seat its model or a scripted trader"
                    .to_string(),
            )),
            Player::Planner { .. } => Err(PlayerError::spec(
                spec,
                "a planner does not sit at a market yet (a market seat has no state text for \
                 its value model): seat the model itself"
                    .to_string(),
            )),
            _ => Ok(()),
        }
    }
    fn plan<'a>(_: &'a Planner, to_move: &'a SeatToMove<'a, Self>) -> Proposal<'a> {
        let _ = to_move;
        Box::pin(std::future::ready(Err(PlayerError::spec(
            "planner",
            "a planner does not sit at a market yet".to_string(),
        ))))
    }
    fn scripted_move(&self, _: Scripted, _: usize) -> Option<Completion> {
        None
    }
    /// A market seat is not narrated ([`SeatEpisode::seats`] refuses one).
    fn narration_brief(&self, _: &str) -> Result<String, String> {
        Err("a market seat is not narrated".into())
    }
}

/// Whether `player` can sit at a table: a model endpoint, a script, or a planner whose
/// proposers are those; a `rule:NAME` tactic plays two-party games.
fn seats_at_table(player: &Player, spec: &str, takes: &str) -> Result<(), PlayerError> {
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
        // Its narrator is a model; its decider is the scripted party, a script or a planner.
        Player::Narrated { narrated, .. } => match &narrated.decider {
            super::Decider::Table(_) => Ok(()),
            super::Decider::Player(decider) => seats_at_table(decider, spec, takes),
        },
        Player::Rule { .. } => Err(PlayerError::spec(
            spec,
            format!("rule:NAME tactics play two-party games; a seat here takes {takes}"),
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
                seats_at_table(proposer, spec, takes)?;
            }
            Ok(())
        }
    }
}

/// A seat of an n-party episode to move, as a planner moves for it ([`PlannerSeat`]).
pub(crate) struct SeatToMove<'a, E> {
    episode: &'a E,
    seat: usize,
    sampling_seed: u64,
}

impl<E> Clone for SeatToMove<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for SeatToMove<'_, E> {}

impl<E: SeatEpisode + Known<Seat = usize>> PlannerSeat for SeatToMove<'_, E> {
    fn sampling_seed(&self) -> u64 {
        self.sampling_seed
    }

    fn propose<'s>(&'s self, proposer: &'s Player, sampling_seed: u64) -> Proposal<'s> {
        let asked = SeatToMove {
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
/// seat to move of a table or a market.
async fn play_at_table<E: SeatEpisode>(
    player: &Player,
    to_move: &SeatToMove<'_, E>,
) -> Result<Played, PlayerError> {
    let SeatToMove {
        episode,
        seat,
        sampling_seed,
    } = *to_move;
    let started = Instant::now();
    let (completion, call, retries) = match player {
        Player::Script { script, .. } => {
            let calls = episode.attempts(seat);
            (Completion::from(script.complete(calls)?), None, 0)
        }
        Player::Llm {
            client, replicas, ..
        } => {
            let view = episode.view(seat);
            let format = episode.format();
            super::tools_seat_check(player.spec(), format, false, client.settings().tokens)?;
            let sequence = exact_sequence(client, episode.token_sequence(seat))?;
            let mut fields = serde_json::Map::new();
            if format == crate::protocol::TurnFormat::Tools {
                fields.insert("tools".into(), episode.tools());
            }
            let (answer, _) = routed_call(
                client,
                replicas.as_ref(),
                None,
                sampling_seed,
                view,
                sequence,
                fields,
            )
            .await?;
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
        Player::Planner { planner, .. } => return E::plan(planner, to_move).await,
        Player::Narrated { narrated, .. } => {
            let decided = match &narrated.decider {
                super::Decider::Table(scripted) => {
                    let completion = episode.scripted_move(*scripted, seat).ok_or_else(|| {
                        PlayerError::spec(scripted.spec(), "no scripted party sits here")
                    })?;
                    Played::scripted(completion, 0)
                }
                super::Decider::Player(decider) => {
                    Box::pin(play_at_table(decider, to_move)).await?
                }
            };
            return narrated
                .play_at_table(
                    decided,
                    episode.view(seat),
                    |line| episode.narration_brief(line),
                    episode.format(),
                    episode.token_sequence(seat),
                    sampling_seed,
                )
                .await;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn market(spec: &str) -> Result<MarketPlayer, PlayerError> {
        MarketPlayer::from_spec(
            spec,
            &BTreeMap::new(),
            &reqwest::Client::new(),
            &SamplingDefaults::default(),
        )
    }

    #[test]
    fn a_market_seat_takes_its_traders_models_and_scripts_and_names_what_it_refuses() {
        assert!(matches!(
            market("rule:zic"),
            Ok(SeatPlayer::Scripted(MarketRule::Zic))
        ));
        assert_eq!(market("rule:sniper").unwrap().spec(), "rule:sniper");
        assert!(matches!(
            market("openai:m@http://127.0.0.1:1/v1"),
            Ok(SeatPlayer::Player(_))
        ));
        // A two-party tactic, and the table's scripted party, are no market trader.
        for spec in ["rule:linear", "rule:deliberation"] {
            let e = market(spec).expect_err(spec).to_string();
            assert!(
                e.contains("`rule:zic`, `rule:sniper` or `rule:truthful`"),
                "{e}"
            );
        }
        // A table seat still takes its own scripted party, and refuses a market trader.
        let table = |spec: &str| {
            TablePlayer::from_spec(
                spec,
                &BTreeMap::new(),
                &reqwest::Client::new(),
                &SamplingDefaults::default(),
            )
        };
        assert!(matches!(
            table("rule:deliberation"),
            Ok(SeatPlayer::Scripted(Scripted::Strong))
        ));
        let e = table("rule:zic").expect_err("refused").to_string();
        assert!(e.contains("rule:deliberation"), "{e}");
    }
}
