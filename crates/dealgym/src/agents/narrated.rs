//! A narrated player (`narrate:DECIDER+MODEL`, or a `[players.NAME]` table with `decider` and
//! `narrator`): strategy apart from language. Each turn the decider — a `rule:NAME` negotiator,
//! a planner, a script, or at a table the scripted party of its incentive — picks the move
//! from the seat's position; the narrating model is sent the seat's view and a brief naming
//! that move, and writes the Thought and Talk around it. How the action line is held to the
//! move is the player's `force` ([`Force`]): appended after the narrator's words (its ids
//! marked forced in token-exact mode, so a trainer masks them), forced by the endpoint's
//! constrained decoding, or asked for and checked. The engine holds every narrated turn to its
//! decided move and counts where its Talk contradicts it (`crate::narration`); nothing here
//! rewrites what the narrator wrote.

use std::collections::BTreeMap;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::{exact_sequence, routed_call};
use super::{Constrain, Played, Player, PlayerConfig, PlayerError, SamplingDefaults, TurnContext};
use crate::game::{Completion, Message, MessageRole};
use crate::llm::{LlmError, SeatKey, TokenMode};
use crate::narration::{appended, forced_text, sampled_words, Force, Narration};
use crate::negotiator::deliberation::Scripted;
use crate::protocol::constraint::ConstraintCheck;
use crate::protocol::{action_text, TurnFormat};

/// The spec prefix of a narrated player: `narrate:DECIDER+MODEL`.
pub const PREFIX: &str = "narrate:";

/// A `[players.NAME]` table of a narrated player: `decider = "rule:linear"`, `narrator =
/// "openai:m@URL"` (or the name of another table), and optionally `force`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NarratedConfig {
    /// Who picks the move: `rule:NAME`, `script:FILE`, a planner's `[players.NAME]` table, or
    /// at a table seat `rule:deliberation` (the scripted party of its incentive).
    pub decider: String,
    /// The model that writes the words: `openai:MODEL@URL` or a model's `[players.NAME]` table.
    pub narrator: String,
    /// How the action line is held to the decided move: `grammar` (by the narrator's
    /// `constrain`: the default where it has one and is not token-exact), `appended` (the
    /// default otherwise) or `prompt` (asked for, and checked by the engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<Force>,
}

/// Who decides a narrated seat's moves.
#[derive(Debug, Clone)]
pub(crate) enum Decider {
    /// A player of a two-party seat (a rule negotiator, a planner, a script), or a table's
    /// planner or script.
    Player(Player),
    /// A table's scripted party of its incentive (`rule:deliberation`).
    Table(Scripted),
}

impl Decider {
    /// Its spec, as records and errors name it.
    pub(crate) fn spec(&self) -> &str {
        match self {
            Decider::Player(p) => p.spec(),
            Decider::Table(s) => s.spec(),
        }
    }
}

/// A decider and the model that narrates its moves.
#[derive(Debug, Clone)]
pub struct Narrated {
    pub(crate) decider: Decider,
    /// A model player (`Player::Llm`), checked when made.
    pub(crate) narrator: Player,
    pub(crate) force: Force,
}

/// `narrate:DECIDER+MODEL` split at its first `+`: the decider's spec and the narrator's.
pub(crate) fn split_spec(spec: &str) -> Option<Result<(&str, &str), String>> {
    let rest = spec.trim().strip_prefix(PREFIX)?;
    Some(match rest.split_once('+') {
        Some((decider, narrator)) if !decider.trim().is_empty() && !narrator.trim().is_empty() => {
            Ok((decider.trim(), narrator.trim()))
        }
        _ => Err("expected narrate:DECIDER+MODEL, e.g. narrate:rule:linear+openai:m@http://127.0.0.1:8000/v1".into()),
    })
}

impl Narrated {
    /// A narrated player from its config; `spec` names it in errors.
    pub(crate) fn from_config(
        spec: &str,
        config: &NarratedConfig,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<Narrated, PlayerError> {
        for part in [&config.decider, &config.narrator] {
            if part.trim() == spec.trim() {
                return Err(PlayerError::spec(
                    spec,
                    "a narrated player cannot name itself",
                ));
            }
        }
        let decider = match Scripted::from_spec(config.decider.trim()) {
            Some(scripted) => Decider::Table(scripted),
            None => {
                let player = Player::from_spec_with(&config.decider, named, http, sampling)?;
                match &player {
                    Player::Planner { planner, .. }
                        if planner.proposers().iter().any(Player::token_exact) =>
                    {
                        return Err(PlayerError::spec(
                            spec,
                            format!(
                                "the decider `{}` proposes with a token-exact model: a deciding \
                                 planner's proposers play in text mode (the seat's exact ids are \
                                 its narrator's)",
                                config.decider
                            ),
                        ))
                    }
                    Player::Rule { .. } | Player::Script { .. } | Player::Planner { .. } => {}
                    Player::Llm { .. } | Player::Narrated { .. } => {
                        return Err(PlayerError::spec(
                            spec,
                            format!(
                                "the decider `{}` is a model: a decider is a rule player, a \
                                 planner or a script (the model narrates)",
                                config.decider
                            ),
                        ))
                    }
                }
                Decider::Player(player)
            }
        };
        let narrator = Player::from_spec_with(&config.narrator, named, http, sampling)?;
        let Player::Llm {
            client, constrain, ..
        } = &narrator
        else {
            return Err(PlayerError::spec(
                spec,
                format!(
                    "the narrator `{}` is not a model: narrate with openai:MODEL@URL or a \
                     model's [players.NAME] table",
                    config.narrator
                ),
            ));
        };
        let exact = client.settings().tokens == TokenMode::Exact;
        // The endpoint's constrained decoding where the narrator has one, else appended.
        let force = config.force.unwrap_or(match (*constrain, exact) {
            (Constrain::None, _) | (_, true) => Force::Appended,
            _ => Force::Grammar,
        });
        match (force, *constrain) {
            (Force::Grammar, Constrain::None) => {
                return Err(PlayerError::spec(
                    spec,
                    "force = \"grammar\" needs the narrator's `constrain` (gbnf, vllm or \
                     vllm_legacy) to hold the action line",
                ))
            }
            (Force::Grammar, _) if exact => {
                return Err(PlayerError::spec(
                    spec,
                    "force = \"grammar\" cannot tell a token-exact narrator's forced action ids \
                     from its own: use force = \"appended\", which marks them",
                ))
            }
            (Force::Appended | Force::Prompt, via) if via != Constrain::None => {
                return Err(PlayerError::spec(
                    spec,
                    format!(
                        "the narrator's `constrain` is used by force = \"grammar\" alone; with \
                         force = \"{}\" set `constrain = \"none\"` on it",
                        force.name()
                    ),
                ))
            }
            _ => {}
        }
        Ok(Narrated {
            decider,
            narrator,
            force,
        })
    }

    /// What identifies it across runs: its decider, its narrator and how it forces.
    pub(crate) fn identity(&self) -> String {
        let decider = match &self.decider {
            Decider::Player(p) => p.identity(),
            Decider::Table(_) => self.decider.spec().to_string(),
        };
        format!(
            "narrated|{decider}|{}|force={}",
            self.narrator.identity(),
            self.force.name()
        )
    }

    /// Why this narrated player cannot sit at a two-party seat written in `format`, if it
    /// cannot (its decider plays tables, or the seat acts through tools): checked at setup.
    pub(crate) fn check_two_party(&self, format: TurnFormat) -> Result<(), String> {
        self.two_party_decider(format).map(|_| ())
    }

    /// The decider of a two-party seat written in `format`, or why there is none.
    fn two_party_decider(&self, format: TurnFormat) -> Result<&Player, String> {
        self.writes_text(format)?;
        match &self.decider {
            Decider::Player(p) => Ok(p),
            Decider::Table(s) => Err(format!(
                "its decider `{}` is a table's scripted party: it decides an n-party table's \
                 seat (--seat ROLE=narrate:{}+MODEL), not a two-party one",
                s.spec(),
                s.spec()
            )),
        }
    }

    /// The turn of a two-party seat: the decider's move, narrated.
    pub(crate) async fn play(
        &self,
        ctx: &TurnContext<'_>,
        view: &[Message],
    ) -> Result<Played, PlayerError> {
        let started = Instant::now();
        let format = ctx.setup.seats[ctx.seat].format;
        let decider = self
            .two_party_decider(format)
            .map_err(|message| PlayerError::spec(self.narrator.spec(), message))?;
        let decided = Box::pin(decider.play(ctx, view)).await?;
        let line = decided_line(self.decider.spec(), &decided)?;
        let brief = ctx
            .episode
            .narration_brief(ctx.seat, &line)
            .map_err(|e| PlayerError::spec(self.narrator.spec(), e.to_string()))?;
        let asked = Asked {
            view,
            brief,
            line,
            format,
            sequence: ctx.own_sequence(),
            sampling_seed: ctx.sampling_seed,
            key: ctx.seat_key(),
        };
        self.narrate(asked, decided, started).await
    }

    /// The turn of a table seat: the decider's move (the scripted party's, or a planner's or a
    /// script's through `play`), narrated.
    pub(crate) async fn play_at_table<'a>(
        &self,
        decided: Played,
        view: &'a [Message],
        brief_for: impl FnOnce(&str) -> Result<String, String>,
        format: TurnFormat,
        sequence: Option<&'a [u32]>,
        sampling_seed: u64,
    ) -> Result<Played, PlayerError> {
        let started = Instant::now();
        self.writes_text(format)
            .map_err(|message| PlayerError::spec(self.narrator.spec(), message))?;
        let line = decided_line(self.decider.spec(), &decided)?;
        let brief = brief_for(&line).map_err(|e| PlayerError::spec(self.narrator.spec(), e))?;
        let asked = Asked {
            view,
            brief,
            line,
            format,
            sequence,
            sampling_seed,
            key: None,
        };
        self.narrate(asked, decided, started).await
    }

    /// A narrated seat writes text: a seat that acts through tools is refused.
    fn writes_text(&self, format: TurnFormat) -> Result<(), String> {
        crate::narration::writes_text(format).map_err(str::to_string)
    }

    /// Ask the narrator for the words around `asked.line`, and hold the action line to it.
    async fn narrate(
        &self,
        asked: Asked<'_>,
        decided: Played,
        started: Instant,
    ) -> Result<Played, PlayerError> {
        let Player::Llm {
            client,
            constrain,
            replicas,
            ..
        } = &self.narrator
        else {
            unreachable!("a narrator is a model player (checked when it was made)");
        };
        let mut messages = asked.view.to_vec();
        messages.push(Message::new(MessageRole::User, asked.brief.clone()));
        let sequence = exact_sequence(client, asked.sequence)?;
        // No stop strings: a thinking model's reasoning may name its action too (servers
        // apply them to it), and servers disagree on whether a stop string's ids come back.
        // Its words are cut after the answer instead (`words_end`).
        let fields = match self.force {
            Force::Grammar => constrain.narration_fields(asked.format, &asked.line),
            Force::Appended | Force::Prompt => serde_json::Map::new(),
        };
        let (answer, replica) = routed_call(
            client,
            replicas.as_ref(),
            asked.key,
            asked.sampling_seed,
            &messages,
            sequence,
            fields,
        )
        .await?;
        let cut = answer
            .call
            .as_ref()
            .is_some_and(|c| c.finish_reason.as_deref() == Some("length"));
        let mut text = answer.text;
        let mut tokens = answer.tokens_record;
        if self.force == Force::Appended {
            match tokens.as_mut() {
                None => text = appended(&text, asked.format, &asked.line),
                Some(tokens) => {
                    // Ids that cannot be cut where the words end (no texts, or texts of other
                    // text): kept whole, an action line or end-of-turn id of its own would be
                    // trained on as the narrator's words, with the decided line after it.
                    let (ids, bytes) = sampled_words(&answer.pieces, &text, asked.format)
                        .ok_or_else(|| {
                            PlayerError::Backend(LlmError::BadResponse {
                                url: client.root(),
                                message: "a narrator's sampled ids cannot be cut where its \
                                          words end: the server gave no text for each id (the \
                                          logprobs' tokens), or texts that do not spell its reply"
                                    .into(),
                            })
                        })?;
                    tokens.completion_ids.truncate(ids);
                    tokens.logprobs.truncate(ids);
                    text.truncate(bytes);
                    let forced = forced_text(&text, asked.format, &asked.line);
                    let forced_ids = client
                        .tokenize_plain(client.settings().token_api, &forced)
                        .await?;
                    tokens.forced_from = Some(tokens.completion_ids.len());
                    if !tokens.logprobs.is_empty() {
                        tokens
                            .logprobs
                            .extend(std::iter::repeat_n(0.0, forced_ids.len()));
                    }
                    tokens.completion_ids.extend(forced_ids);
                    text.push_str(&forced);
                }
            }
        }
        let constraint = (self.force == Force::Grammar)
            .then(|| {
                ConstraintCheck::of_narration(*constrain, asked.format, &asked.line, &text, cut)
            })
            .flatten();
        Ok(Played {
            completion: Completion {
                text,
                reasoning: answer.reasoning,
                constraint,
                tokens,
                tool_calls: Vec::new(),
                narration: Some(Narration {
                    decided: asked.line,
                    brief: asked.brief,
                    force: self.force,
                    contradictions: Vec::new(),
                }),
            },
            call: answer.call,
            latency_ms: started.elapsed().as_millis() as u64,
            retries: answer.retries + decided.retries,
            replica,
            planning: decided.planning,
        })
    }
}

/// What the narrator is asked with.
struct Asked<'a> {
    view: &'a [Message],
    brief: String,
    /// The decided action line.
    line: String,
    format: TurnFormat,
    sequence: Option<&'a [u32]>,
    sampling_seed: u64,
    key: Option<SeatKey>,
}

/// The decider's move as an action line, or why there is none (a script's line that has no
/// action part cannot be narrated: the episode ends as an error, naming the decider).
fn decided_line(decider: &str, decided: &Played) -> Result<String, PlayerError> {
    action_text(&decided.completion.text).ok_or_else(|| {
        PlayerError::spec(
            decider,
            format!(
                "its turn has no action line to narrate: {:?}",
                decided
                    .completion
                    .text
                    .chars()
                    .take(120)
                    .collect::<String>()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrated_spec_splits_at_its_first_plus() {
        assert_eq!(
            split_spec("narrate:rule:linear+openai:m@http://h/v1"),
            Some(Ok(("rule:linear", "openai:m@http://h/v1")))
        );
        assert!(matches!(split_spec("narrate:rule:linear"), Some(Err(_))));
        assert_eq!(split_spec("rule:linear"), None);
    }
}
