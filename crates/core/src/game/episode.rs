//! The episode state machine: one raw completion in per step, the next state out.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::{after_unusable, Reply, SeatHistory, Unusable};
use crate::narration::Narration;
use crate::observation::EndingRules;
use crate::protocol::constraint::ConstraintCheck;
use crate::protocol::{self, render_action, render_forwarded, Action, Parsed, TurnError};
use crate::scenario::Scenario;

use super::outcome::{self, ErrorCause, Outcome, OutcomeKind};
use super::prompt::{PromptError, Prompts, SystemPrompt};
use super::rules::{self, Move, Offer, RegulationEvent};
use super::setup::Setup;
use crate::vocab::{Message, ToolCall, TurnTokens};
use crate::vocab::{PerSeat, Seat};

/// One completion from a player: the text and, where the endpoint returned it separately, its
/// reasoning, with what the engine keeps of how it was made (the constraint's verdict, the
/// exact token ids). What the endpoint said about the call (usage, logprobs) goes beside it
/// into the record ([`crate::record::TurnRecord::call`]); the engine never sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Completion {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// For a completion decoded under a constraint: whether the constraint admits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<ConstraintCheck>,
    /// The exact token ids of the call, for a seat played in token-exact mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TurnTokens>,
    /// The tool calls of a seat that acts through tools ([`TurnFormat::Tools`]); `text` is
    /// then what it wrote beside them. A completion with calls is read from its calls.
    ///
    /// [`TurnFormat::Tools`]: crate::protocol::TurnFormat::Tools
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A narrated turn's decided move and the brief its narrator was sent (a decider's move in
    /// a narrator's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narration: Option<Narration>,
}

impl From<&str> for Completion {
    fn from(text: &str) -> Self {
        Completion {
            text: text.to_string(),
            ..Completion::default()
        }
    }
}

impl From<String> for Completion {
    fn from(text: String) -> Self {
        Completion {
            text,
            ..Completion::default()
        }
    }
}

/// One attempt at a turn: the completion as the engine was given it and what the engine made of
/// it. What the layers above add — the endpoint's account of the call, rewards, the judge's
/// labels, a dataset's labels, an annotation — is the record's ([`crate::record::TurnRecord`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub seat: Seat,
    /// 0 for a first try; 1, 2, … for tries after a correction.
    pub attempt: u32,
    pub raw: String,
    /// The endpoint's separate `reasoning_content`, as received (also merged into
    /// `reasoning`); kept apart so replay feeds the engine exactly what it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(flatten)]
    pub parsed: Parsed,
    /// The action that took effect (after regulation); none for a turn that could not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub played: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regulation: Option<RegulationEvent>,
    /// Exactly what the counterpart was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<String>,
    /// For a constrained call: whether the completion is one the constraint admits. `false`
    /// means the server ignored the constraint (counted as `constraint_violations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<ConstraintCheck>,
    /// The exact token ids of the call (token-exact mode): the seat's next prompt is built on
    /// them ([`token_sequence`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TurnTokens>,
    /// The tool calls the turn was played with (a seat acting through tools), as made; `raw`
    /// is the text written beside them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A narrated turn ([`crate::narration`]): the decided move, the narrator's brief, and
    /// where its Talk contradicts the move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narration: Option<Narration>,
}

impl AsRef<Turn> for Turn {
    fn as_ref(&self) -> &Turn {
        self
    }
}

impl Turn {
    /// The reply as its seat's history keeps it: the narrator's brief, if any, then the text
    /// and tool calls.
    pub(crate) fn reply(&self) -> Reply<'_> {
        Reply {
            brief: self.narration.as_ref().map(|n| n.brief.as_str()),
            text: &self.raw,
            tool_calls: &self.tool_calls,
        }
    }

    /// The completion this turn was played with: stepping it again gives this turn again.
    pub fn completion(&self) -> Completion {
        Completion {
            text: self.raw.clone(),
            reasoning: self.reasoning_content.clone(),
            constraint: self.constraint,
            tokens: self.tokens.clone(),
            tool_calls: self.tool_calls.clone(),
            narration: self.narration.clone(),
        }
    }
}

/// What one step did. `terminated`/`truncated` follow Gymnasium: a deal, walk-away, reject loop
/// or forfeit terminates; the turn cap truncates.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub seat: Seat,
    pub parsed: Parsed,
    /// The move that took effect, if the completion could be used.
    pub played: Option<Action>,
    pub(crate) event: Option<RegulationEvent>,
    /// The completion could not be used and the same seat is asked again.
    pub retry: bool,
    pub(crate) terminated: bool,
    pub(crate) truncated: bool,
    pub(crate) outcome: Option<Outcome>,
}

/// Misuse of the episode API (not a player's error: those are recorded turns).
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    #[error("the episode has already ended ({0})")]
    Finished(&'static str),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// A campaign's ledger cannot be applied to the deal's scenario (a `budget` ledger on a
    /// seat with no budget).
    #[error("{0}")]
    Campaign(String),
}

/// A negotiation in progress (Gym-style): `to_move()`, `view(seat)`, `step(completion)`.
/// Cloned by a caller that builds a record (which consumes the episode) and keeps playing or
/// reading it, as the Python binding does.
#[derive(Clone)]
pub struct Episode {
    scenario: Arc<Scenario>,
    setup: Setup,
    prompts: Arc<Prompts>,
    /// Each seat's system prompt, with its form reduced for the copy check
    /// ([`protocol::copies_instructions`]).
    system_prompts: PerSeat<Arc<SystemPrompt>>,
    /// Each seat's view and exact token sequence ([`token_sequence`]), extended as its turns
    /// come, not rebuilt at every call.
    histories: PerSeat<SeatHistory>,
    turns: Vec<Turn>,
    history: Vec<Move>,
    to_move: Seat,
    moves: PerSeat<u32>,
    attempt: u32,
    standing: Option<Offer>,
    outcome: Option<Outcome>,
    /// Notes for seats whose last move regulation replaced, sent with their next message.
    regulation_notes: PerSeat<Option<String>>,
}

/// What [`Episode::step_all`] does with completions left once the episode has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leftover {
    /// Step them anyway: the first is an error (a record whose completions outlast its
    /// episode is not this engine's).
    Refuse,
    /// Stop at the end and count them (`replay --verify` reports the difference field by
    /// field instead).
    Stop,
}

impl Episode {
    /// Start an episode with the built-in prompt templates.
    pub fn new(scenario: Arc<Scenario>, setup: Setup) -> Result<Episode, GameError> {
        Episode::with_prompts(scenario, setup, Prompts::builtin())
    }

    /// Start an episode with the given templates.
    pub fn with_prompts(
        scenario: Arc<Scenario>,
        setup: Setup,
        prompts: Arc<Prompts>,
    ) -> Result<Episode, GameError> {
        let scenario = setup.scenario_for(scenario).map_err(GameError::Campaign)?;
        let render = |seat: Seat| {
            prompts.system_prompt(
                &scenario,
                &setup.seats[seat],
                &EndingRules::from(&setup.rules),
                setup.no_deal_value_of(seat),
            )
        };
        let system_prompts = PerSeat::new(render(Seat::Learner)?, render(Seat::Opponent)?);
        let mut histories = system_prompts.map(|_, p| SeatHistory::new(p.text.clone()));
        let first = setup.first_mover;
        histories[first].push_user(prompts.opening(setup.seats[first].format)?);
        Ok(Episode {
            to_move: first,
            scenario,
            setup,
            prompts,
            system_prompts,
            histories,
            turns: Vec::new(),
            history: Vec::new(),
            moves: PerSeat::new(0, 0),
            attempt: 0,
            standing: None,
            outcome: None,
            regulation_notes: PerSeat::default(),
        })
    }

    /// Rebuild an episode played with the built-in templates from its setup and the raw
    /// completions it was played with, in order: the same inputs give the same turns, views
    /// and outcome.
    pub fn replay(
        scenario: Arc<Scenario>,
        setup: Setup,
        completions: impl IntoIterator<Item = Completion>,
    ) -> Result<Episode, GameError> {
        Episode::replay_with(scenario, setup, Prompts::builtin(), completions)
    }

    /// Rebuild an episode from its setup, the templates and the raw completions it was played
    /// with, in order. The same inputs give the same turns, views and outcome (what replay
    /// relies on); other templates give other views. `EpisodeRecord::replay` checks a record's
    /// scenario and templates before calling this.
    pub(crate) fn replay_with(
        scenario: Arc<Scenario>,
        setup: Setup,
        prompts: Arc<Prompts>,
        completions: impl IntoIterator<Item = Completion>,
    ) -> Result<Episode, GameError> {
        let mut episode = Episode::with_prompts(scenario, setup, prompts)?;
        episode.step_all(completions, Leftover::Refuse, |_| {})?;
        Ok(episode)
    }

    /// Step `completions` in order — the one loop every replay runs (`replay_with`, and a
    /// record's `replay`, `replay_until_end` and `replay_observing`) — calling `before_step`
    /// with the episode just before each is stepped. Where the episode ends before the
    /// completions do, `leftover` says whether that is an error (the step after the end
    /// fails) or where to stop. Answers how many completions were left unplayed.
    pub(crate) fn step_all(
        &mut self,
        completions: impl IntoIterator<Item = Completion>,
        leftover: Leftover,
        mut before_step: impl FnMut(&Episode),
    ) -> Result<usize, GameError> {
        let mut completions = completions.into_iter();
        for completion in completions.by_ref() {
            if leftover == Leftover::Stop && self.outcome.is_some() {
                return Ok(1 + completions.count());
            }
            before_step(self);
            self.step(completion)?;
        }
        Ok(0)
    }

    pub fn scenario(&self) -> &Arc<Scenario> {
        &self.scenario
    }

    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The templates the episode renders its messages with.
    pub fn prompts(&self) -> &Arc<Prompts> {
        &self.prompts
    }

    /// The brief `seat`'s narrator is sent for the `decided` action line, in the seat's format
    /// ([`crate::narration`]).
    pub fn narration_brief(&self, seat: Seat, decided: &str) -> Result<String, PromptError> {
        self.prompts
            .narration_brief(decided, self.setup.seats[seat].format)
    }

    /// The seat whose completion the next `step` takes; `None` once the episode has ended.
    pub fn to_move(&self) -> Option<Seat> {
        self.outcome.is_none().then_some(self.to_move)
    }

    /// The chat messages the seat's model is sent: its system prompt, then the turns as it saw
    /// them. Only ever grows (append-only), so an endpoint's prefix cache is reused.
    pub fn view(&self, seat: Seat) -> &[Message] {
        self.histories[seat].view()
    }

    /// Which history [`view`](Self::view) reads: unchanged while the seat's view only grows,
    /// another after a restore or in a copy (`engine::SeatHistory::origin`).
    pub fn view_origin(&self, seat: Seat) -> u64 {
        self.histories[seat].origin()
    }

    pub fn system_prompt(&self, seat: Seat) -> &str {
        &self.system_prompts[seat].text
    }

    /// Every attempt so far, in order.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// `seat`'s exact token sequence so far, as [`token_sequence`] reads it from the turns
    /// (kept as they come): `None` if one of its turns has no token ids.
    pub fn token_sequence(&self, seat: Seat) -> Option<&[u32]> {
        self.histories[seat].token_sequence()
    }

    /// Add an attempt, extending its seat's token sequence (a logged turn is not the seat's
    /// own call, and is left out as [`token_sequence`] leaves it out).
    fn push_turn(&mut self, turn: Turn) {
        if !self.setup.rules.is_logged_turn(self.turns.len()) {
            self.histories[turn.seat].push_tokens(turn.tokens.as_ref());
        }
        self.turns.push(turn);
    }

    /// The moves that took effect, in order.
    pub(crate) fn history(&self) -> &[Move] {
        &self.history
    }

    /// The offer on the table, if any.
    pub fn standing_offer(&self) -> Option<&Offer> {
        self.standing.as_ref()
    }

    /// The offer `seat` may accept now, if ACCEPT is legal for it (`rules::check_accept`).
    /// Players and decoding constraints ask this instead of deciding it themselves.
    pub fn offer_to_accept(&self, seat: Seat) -> Option<&Offer> {
        rules::check_accept(self.standing.as_ref(), seat).ok()
    }

    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// Tries already spent on the turn in progress (0 on a first try): the seat to move has
    /// `format_retries − attempt` corrections left.
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Moves that took effect per seat (rounds played).
    pub fn moves(&self) -> PerSeat<u32> {
        self.moves
    }

    /// Play one completion for the seat to move.
    pub fn step(&mut self, completion: impl Into<Completion>) -> Result<Step, GameError> {
        if let Some(o) = &self.outcome {
            return Err(GameError::Finished(o.kind.name()));
        }
        let completion = completion.into();
        let seat = self.to_move;
        let space = self.scenario.term_space();
        let reasoning = completion.reasoning.as_deref();
        let mut parsed = if completion.tool_calls.is_empty() {
            protocol::parse(&completion.text, space, reasoning)
        } else {
            protocol::read_tool_calls(&completion.tool_calls, &completion.text, space, reasoning)
        };
        protocol::judge_mode(
            &mut parsed,
            self.setup.seats[seat].format,
            !completion.tool_calls.is_empty(),
        );
        crate::scenario::judge_act(
            &mut parsed,
            self.scenario.family,
            self.setup.seats[seat].acts,
        );
        if parsed.error.is_none()
            && parsed.note.is_none()
            && protocol::copies_instructions(&parsed, &self.system_prompts[seat].instructions)
        {
            parsed.note = Some(protocol::ParseNote::CopiedInstructions);
        }
        let mut chosen = parsed.action.clone().filter(|_| parsed.error.is_none());
        let mut narration = completion.narration;
        if let Some(narration) = narration.as_mut() {
            let decided = protocol::read_move(&protocol::split_act(&narration.decided).0, space);
            let on_table = self.standing.as_ref().map(|o| o.terms_for(seat, space));
            // Prices a Talk may name without offering them: the listing price, the offer on
            // the table.
            let known: Vec<i64> = self
                .scenario
                .listing_price()
                .map(protocol::to_cents)
                .into_iter()
                .chain(
                    on_table
                        .as_ref()
                        .and_then(protocol::Terms::price)
                        .map(protocol::to_cents),
                )
                .collect();
            if let Some(e) = crate::narration::judge(
                narration,
                decided.as_ref().map(|d| (d, None)),
                chosen.as_ref().map(|c| (c, None)),
                parsed.talk.as_deref(),
                (on_table.as_ref(), &known),
                self.setup.seats[seat].format,
            ) {
                parsed.error = Some(e);
                chosen = None;
            }
        }
        if let Some(Action::Accept) = chosen {
            if let Err(e) = rules::check_accept(self.standing.as_ref(), seat) {
                parsed.error = Some(e);
                chosen = None;
            }
        }
        let mut turn = Turn {
            seat,
            attempt: self.attempt,
            raw: completion.text,
            reasoning_content: completion.reasoning,
            parsed: parsed.clone(),
            played: None,
            regulation: None,
            forwarded: None,
            constraint: completion.constraint,
            tokens: completion.tokens,
            tool_calls: completion.tool_calls,
            narration,
        };

        let Some(action) = chosen else {
            // A turn that cannot be used: correct and retry, or forfeit.
            let error = parsed
                .error
                .clone()
                .unwrap_or_else(|| TurnError::format("no action"));
            let next = after_unusable(
                &mut self.histories[seat],
                &self.prompts,
                self.setup.seats[seat].format,
                turn.reply(),
                &error,
                self.attempt,
                self.setup.rules.format_retries,
            )?;
            self.push_turn(turn);
            return Ok(match next {
                Unusable::Retry => {
                    self.attempt += 1;
                    self.step_result(seat, parsed, None, None, true)
                }
                Unusable::Forfeit(why) => {
                    self.finish(OutcomeKind::FormatForfeit, Some(seat), None, Some(why));
                    self.step_result(seat, parsed, None, None, false)
                }
            });
        };

        let event = rules::regulate(
            &self.scenario,
            &self.setup,
            seat,
            &action,
            self.standing.as_ref(),
        );
        let played = event
            .as_ref()
            .map(|e| e.replacement.clone())
            .unwrap_or(action);
        let receiver = seat.other();
        let mut forwarded = render_forwarded(
            parsed.talk.as_deref().unwrap_or(""),
            self.setup.rules.talk,
            &played,
            space,
            self.setup.seats[receiver].format,
        );
        // A seat whose own move was replaced by regulation learns so with its next message.
        if let Some(note) = self.regulation_notes[receiver].take() {
            forwarded = format!("{note}\n\n{forwarded}");
        }
        if let Some(e) = &event {
            let note = self.prompts.regulated(
                &render_action(&e.original, space, true),
                &render_action(&e.replacement, space, true),
            )?;
            self.regulation_notes[seat] = Some(note);
        }
        self.histories[seat].push_own(turn.reply(), None);
        self.histories[receiver].push_user(forwarded.clone());
        turn.played = Some(played.clone());
        turn.regulation = event.clone();
        turn.forwarded = Some(forwarded);
        self.push_turn(turn);
        self.attempt = 0;
        self.moves[seat] += 1;
        self.history.push(Move {
            seat,
            action: played.clone(),
        });

        match &played {
            Action::Accept => {
                let deal = self.standing.take();
                self.finish(OutcomeKind::Deal, Some(seat), deal, None);
            }
            Action::WalkAway => self.finish(OutcomeKind::WalkAway, Some(seat), None, None),
            _ => self.standing = rules::standing_after(self.standing.take(), seat, &played),
        }
        if self.outcome.is_none() {
            if let Some(rule) = rules::reject_loop(&self.history, seat, &self.setup.rules) {
                let k = match rule {
                    rules::RejectLoop::SameOffer => self.setup.rules.reject_loop,
                    rules::RejectLoop::Rejections => self.setup.rules.reject_streak,
                };
                self.finish(
                    OutcomeKind::RejectLoop,
                    Some(seat),
                    None,
                    Some(rule.describe(k)),
                );
            } else if rules::rounds_exhausted(&self.moves, &self.setup.rules)
                || rules::continuation_spent(self.setup.rules.continuation.as_ref(), &self.turns)
            {
                self.finish(OutcomeKind::MaxTurns, None, None, None);
            } else {
                self.to_move = receiver;
            }
        }
        Ok(self.step_result(seat, parsed, Some(played), event, false))
    }

    /// End the episode because the endpoint failed for `seat` after its retries. A backend
    /// failure is never turned into a move.
    pub fn fail_backend(
        &mut self,
        seat: Seat,
        message: impl Into<String>,
    ) -> Result<&Outcome, GameError> {
        self.fail(seat, Some(ErrorCause::Backend), message)
    }

    /// End the episode unfinished: a client of the server dropped it before it ended. The
    /// detail is `abandoned:` and `why`, as a dropped table's is; the seat to move is named,
    /// its client having dropped the episode instead of answering, so the record replays to
    /// the same ending.
    pub fn abandon(&mut self, why: &str) -> Result<&Outcome, GameError> {
        self.fail(
            self.to_move,
            Some(ErrorCause::Abandoned),
            format!("abandoned: {why}"),
        )
    }

    /// End the episode as an `error` of `kind` while `seat` was to move (`None`: a record
    /// older than [`Outcome::error_kind`], replayed as it was written).
    pub fn fail(
        &mut self,
        seat: Seat,
        kind: Option<ErrorCause>,
        message: impl Into<String>,
    ) -> Result<&Outcome, GameError> {
        if let Some(o) = &self.outcome {
            return Err(GameError::Finished(o.kind.name()));
        }
        self.finish(OutcomeKind::Error, Some(seat), None, Some(message.into()));
        let outcome = self.outcome.as_mut().expect("just set");
        outcome.error_kind = kind;
        Ok(outcome)
    }

    fn finish(
        &mut self,
        kind: OutcomeKind,
        by: Option<Seat>,
        deal: Option<Offer>,
        detail: Option<String>,
    ) {
        let space = self.scenario.term_space();
        let learner_terms = deal.map(|offer| offer.terms_for(Seat::Learner, space));
        let (utility, rho) =
            outcome::seat_values(&self.scenario, &self.setup, learner_terms.as_ref());
        self.outcome = Some(Outcome {
            kind,
            by,
            terms_text: learner_terms.as_ref().map(|t| t.render(space)),
            terms: learner_terms,
            utility,
            rho,
            detail,
            error_kind: None,
        });
    }

    fn step_result(
        &self,
        seat: Seat,
        parsed: Parsed,
        played: Option<Action>,
        event: Option<RegulationEvent>,
        retry: bool,
    ) -> Step {
        let outcome = self.outcome.clone();
        let (terminated, truncated) = crate::engine::ending(outcome.as_ref().map(|o| o.kind));
        Step {
            seat,
            parsed,
            played,
            event,
            retry,
            terminated,
            truncated,
            outcome,
        }
    }

    /// The parts of the episode a record needs: setup, system prompts, turns and outcome.
    pub(crate) fn into_parts(
        self,
    ) -> (
        Arc<Scenario>,
        Setup,
        PerSeat<String>,
        Vec<Turn>,
        Option<Outcome>,
    ) {
        (
            self.scenario,
            self.setup,
            self.system_prompts.map(|_, p| p.text.clone()),
            self.turns,
            self.outcome,
        )
    }
}

/// The bilateral rulebook's turn order, for the one driver loop.
impl crate::engine::ToMove for Episode {
    type Seat = Seat;
    fn to_move(&self) -> Option<Seat> {
        Episode::to_move(self)
    }
}

/// A seat's exact token sequence so far: its prompt suffixes and sampled ids, turn by turn; none
/// if one of its turns was not played in token-exact mode. The turns of a logged prefix
/// ([`Rules::is_logged_turn`](super::Rules::is_logged_turn)) have no ids and are not the
/// seat's calls: they are skipped, so a seat continuing a prefix starts with an empty sequence
/// and its first call renders the whole view.
pub fn token_sequence(
    turns: &[impl AsRef<Turn>],
    seat: Seat,
    rules: &super::Rules,
) -> Option<Vec<u32>> {
    let mut ids = Vec::new();
    let own = turns
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(i, t)| t.seat == seat && !rules.is_logged_turn(*i))
        .map(|(_, t)| t);
    for t in own {
        let tokens = t.tokens.as_ref()?;
        ids.extend_from_slice(&tokens.prompt_ids);
        ids.extend_from_slice(&tokens.completion_ids);
    }
    Some(ids)
}
