//! The n-party episode: seats by role, a drawn schedule, offers with ids, acceptances that name
//! an offer, the game's agreement rule, regulation and the malformed-turn policy per seat, and
//! termination by agreement, a veto party walking out, a forfeit, or the end of the schedule.
//!
//! It takes one raw completion per step from the seat the schedule names, and answers with what
//! happened. What each seat sees is rebuilt from the turns ([`TableEpisode::view`]): its own
//! system prompt, the others' talk and moves (never their thoughts, reasoning or scores), and
//! its own replies, append-only.

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{after_unusable, Reply, SeatHistory, Unusable};
use crate::game::{Completion, ErrorCause, OutcomeKind, PromptError, Prompts};
use crate::protocol::{Action, Parsed, TurnError, TurnFormat};
use crate::scenario::TableScenario;
use crate::vocab::Message;

use super::agreement::{counts_toward, holds_veto, is_agreed, still_possible};
use super::prompt::{system_prompt, turn_prompt, TurnNews};
use super::schedule::{draw_schedule, Slot, SlotKind};
use super::turn::read_table_completion;

/// What a table is set up with, per seat and for all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableOptions {
    /// Malformed or illegal turns a seat may retry in one slot before it forfeits (default 1).
    pub retries: u32,
    /// Roles whose ACCEPT or SUBMIT below their own minimum becomes a REJECT (default none).
    pub regulated: Vec<String>,
    /// How every seat writes its turns (`tagged`, `xml`, or `tools`: through the table's tools).
    pub format: TurnFormat,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            retries: crate::engine::DEFAULT_RETRIES,
            regulated: Vec::new(),
            format: TurnFormat::Tagged,
        }
    }
}

/// One seat's setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableSeat {
    /// The seat's role.
    pub role: String,
    /// Whether its moves below its own minimum are replaced by a REJECT.
    pub regulated: bool,
    /// The seat's system prompt, rendered once.
    pub system_prompt: String,
}

/// Everything fixed at the start of an episode: the seed, the drawn schedule, the seats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableSetup {
    /// The episode's seed (from the run seed and the episode index).
    pub seed: u64,
    /// Attempts a seat may retry in one slot before it forfeits.
    pub retries: u32,
    /// How every seat writes its turns.
    pub format: TurnFormat,
    /// Each seat, in the game's order.
    pub seats: Vec<TableSeat>,
    /// Who moves when, drawn from `seed`.
    pub schedule: Vec<Slot>,
}

/// An error starting or stepping a table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    #[error("a seat acted out of turn: `{acted}` moved while it is `{expected}`'s turn")]
    OutOfTurn { acted: String, expected: String },
    #[error("the episode has ended")]
    Ended,
    #[error("unknown seat `{0}`")]
    UnknownSeat(String),
    #[error("regulated role `{0}` is not a party of the game")]
    UnknownRegulated(String),
    #[error("prompt template: {0}")]
    Template(String),
    #[error("the setup does not fit the scenario: {0}")]
    BadSetup(String),
}

impl From<PromptError> for TableError {
    fn from(e: PromptError) -> Self {
        TableError::Template(e.to_string())
    }
}

/// An offer on the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableOffer {
    /// 1-based, in the order offers were made.
    pub id: u32,
    /// The proposing seat.
    pub proposer: usize,
    /// One 0-based option index per issue.
    pub deal: Vec<usize>,
    /// The turn (index into the turns) that made it.
    pub turn: usize,
    /// Who accepts it now: the proposer first, then acceptors in order.
    pub acceptors: Vec<usize>,
}

/// A regulated seat's move that was replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableRegulation {
    /// The move the seat made.
    pub original: Action,
    /// What took effect instead.
    pub replacement: Action,
    /// The seat's score of the deal it tried to make or accept.
    pub score: i64,
    /// The seat's own minimum.
    pub minimum: i64,
}

/// One attempt at a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableTurn {
    /// The seat that made the attempt (its index in the game's parties).
    pub seat: usize,
    /// The schedule slot it answered.
    pub slot: usize,
    /// The raw completion (text, reasoning, token ids).
    pub completion: Completion,
    /// What was read from it.
    pub parsed: Parsed,
    /// The offer an acceptance named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepts: Option<u32>,
    /// The offer a proposal made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<u32>,
    /// Why the move could not be played (parse or legality); the seat retried or forfeited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regulation: Option<TableRegulation>,
}

impl TableTurn {
    /// The move that took effect (after regulation), if the attempt was played.
    pub fn played(&self) -> Option<&Action> {
        crate::engine::move_played(
            self.error.is_some(),
            self.regulation.as_ref().map(|r| &r.replacement),
            self.parsed.action.as_ref(),
        )
    }
}

/// How a table ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableOutcome {
    /// How it ended (`deal`, `walk_away`, `max_turns`, `format_forfeit`, `error`).
    pub kind: OutcomeKind,
    /// The seat that ended it (the acceptor that completed the agreement, the walker, the
    /// forfeiter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<usize>,
    /// The agreed offer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<u32>,
    /// The agreed deal: one 0-based option index per issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deal: Option<Vec<usize>>,
    /// What went wrong, for `error` and `format_forfeit` endings; a table dropped before it
    /// ended (by no seat) says `abandoned:` and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For an `error` ending: what caused it (a backend, a bug, a server's limit, a client
    /// that dropped the table), as a two-party outcome says it. Absent in records written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorCause>,
}

impl TableOutcome {
    /// An ending with no deal and no detail.
    pub(crate) fn plain(kind: OutcomeKind, by: Option<usize>) -> TableOutcome {
        TableOutcome {
            kind,
            by,
            offer: None,
            deal: None,
            detail: None,
            error_kind: None,
        }
    }
}

/// What one step did. `terminated`/`truncated` follow Gymnasium, as a two-party step's do: an
/// agreement, a walk-out that ends the table or a forfeit terminates; the end of the schedule
/// truncates.
#[derive(Debug, Clone, PartialEq)]
pub struct TableStep {
    pub seat: usize,
    /// The attempt could not be played and the same seat moves again.
    pub retry: bool,
    pub error: Option<TurnError>,
    pub terminated: bool,
    pub truncated: bool,
}

impl TableStep {
    /// What a step of `seat` did, the episode having ended as `kind` after it (`None`: it goes
    /// on): a table's and a market's step both answer with it ([`crate::engine::Seated`]).
    pub(crate) fn after(
        seat: usize,
        retry: bool,
        error: Option<TurnError>,
        kind: Option<OutcomeKind>,
    ) -> TableStep {
        let (terminated, truncated) = crate::engine::ending(kind);
        TableStep {
            seat,
            retry,
            error,
            terminated,
            truncated,
        }
    }

    /// Whether the step ended the episode, either way.
    pub fn ended(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// An n-party episode.
#[derive(Debug, Clone)]
pub struct TableEpisode {
    scenario: Arc<TableScenario>,
    setup: TableSetup,
    turns: Vec<TableTurn>,
    offers: Vec<TableOffer>,
    /// The schedule slot to play next.
    cursor: usize,
    /// Failed attempts in the current slot.
    failures: u32,
    present: Vec<bool>,
    outcome: Option<TableOutcome>,
    /// The templates the seats' messages are rendered with.
    prompts: Arc<Prompts>,
    /// What each seat sees and its exact token sequence, kept and extended
    /// ([`TableEpisode::view`]).
    histories: Vec<SeatHistory>,
    /// For each seat, the turns its last prompt's news reached.
    seen: Vec<usize>,
}

/// The table rulebook's turn order (its schedule), for the one driver loop.
impl crate::engine::ToMove for TableEpisode {
    type Seat = usize;
    fn to_move(&self) -> Option<usize> {
        TableEpisode::to_move(self)
    }
}

impl TableSetup {
    /// The setup of the episode seeded `seed`: the schedule drawn from it, the prompts rendered
    /// with the built-in templates.
    pub fn new(
        scenario: &TableScenario,
        options: &TableOptions,
        seed: u64,
    ) -> Result<TableSetup, TableError> {
        TableSetup::with_prompts(scenario, options, seed, &Prompts::builtin())
    }

    /// [`TableSetup::new`] with the system prompts rendered by `prompts`.
    pub fn with_prompts(
        scenario: &TableScenario,
        options: &TableOptions,
        seed: u64,
        prompts: &Prompts,
    ) -> Result<TableSetup, TableError> {
        if let Some(r) = options
            .regulated
            .iter()
            .find(|r| scenario.seat_of(r).is_none())
        {
            return Err(TableError::UnknownRegulated(r.clone()));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let schedule = draw_schedule(scenario, &mut rng);
        let seats = scenario
            .parties
            .iter()
            .enumerate()
            .map(|(seat, party)| {
                Ok(TableSeat {
                    role: party.role.clone(),
                    regulated: options.regulated.contains(&party.role),
                    system_prompt: system_prompt(prompts, scenario, seat, options.format)?,
                })
            })
            .collect::<Result<Vec<_>, TableError>>()?;
        Ok(TableSetup {
            seed,
            retries: options.retries,
            format: options.format,
            seats,
            schedule,
        })
    }
}

impl TableSetup {
    /// Whether this setup can be played on `scenario`: a seat per party, in its order, and a
    /// schedule of those seats only. What a setup read from outside (an imported record's) is
    /// checked with before an episode is built on it.
    pub(crate) fn check(&self, scenario: &TableScenario) -> Result<(), TableError> {
        let n = scenario.parties.len();
        if self.seats.len() != n {
            return Err(TableError::BadSetup(format!(
                "{} seats for the {n} parties of {}",
                self.seats.len(),
                scenario.id
            )));
        }
        if let Some((seat, party)) = self
            .seats
            .iter()
            .zip(&scenario.parties)
            .find(|(seat, party)| seat.role != party.role)
        {
            return Err(TableError::BadSetup(format!(
                "seat `{}` where {} has `{}`",
                seat.role, scenario.id, party.role
            )));
        }
        if let Some((i, slot)) = self
            .schedule
            .iter()
            .enumerate()
            .find(|(_, slot)| slot.seat >= n)
        {
            return Err(TableError::BadSetup(format!(
                "schedule slot {i} names seat {} of {n}",
                slot.seat
            )));
        }
        Ok(())
    }
}

impl TableEpisode {
    /// Start an episode with the built-in templates.
    pub fn new(
        scenario: Arc<TableScenario>,
        setup: TableSetup,
    ) -> Result<TableEpisode, TableError> {
        TableEpisode::with_prompts(scenario, setup, Prompts::builtin())
    }

    /// Start an episode whose messages `prompts` renders (the setup's system prompts were
    /// rendered by the same set: [`TableSetup::with_prompts`]).
    pub fn with_prompts(
        scenario: Arc<TableScenario>,
        setup: TableSetup,
        prompts: Arc<Prompts>,
    ) -> Result<TableEpisode, TableError> {
        let n = scenario.parties.len();
        let histories = setup
            .seats
            .iter()
            .map(|seat| SeatHistory::new(seat.system_prompt.clone()))
            .collect();
        let mut episode = TableEpisode {
            scenario,
            setup,
            turns: Vec::new(),
            offers: Vec::new(),
            cursor: 0,
            failures: 0,
            present: vec![true; n],
            outcome: None,
            prompts,
            histories,
            seen: vec![0; n],
        };
        if episode.setup.schedule.is_empty() {
            episode.end_of_schedule();
        }
        episode.prompt_to_move()?;
        Ok(episode)
    }

    /// The templates the episode renders its messages with.
    pub fn prompts(&self) -> &Arc<Prompts> {
        &self.prompts
    }

    pub fn scenario(&self) -> &TableScenario {
        &self.scenario
    }

    pub fn setup(&self) -> &TableSetup {
        &self.setup
    }

    pub fn turns(&self) -> &[TableTurn] {
        &self.turns
    }

    pub fn offers(&self) -> &[TableOffer] {
        &self.offers
    }

    pub fn outcome(&self) -> Option<&TableOutcome> {
        self.outcome.as_ref()
    }

    /// Whether each seat is still at the table.
    pub(crate) fn present(&self) -> &[bool] {
        &self.present
    }

    /// The seat to move, or `None` once the episode has ended.
    pub fn to_move(&self) -> Option<usize> {
        if self.outcome.is_some() {
            return None;
        }
        self.setup.schedule.get(self.cursor).map(|s| s.seat)
    }

    /// The slot being played.
    pub(crate) fn slot(&self) -> Option<Slot> {
        self.setup.schedule.get(self.cursor).copied()
    }

    /// The role of a seat.
    pub fn role(&self, seat: usize) -> &str {
        &self.scenario.parties[seat].role
    }

    /// The lead's final proposal, once it has made it.
    pub(crate) fn final_offer(&self) -> Option<&TableOffer> {
        let fin = self
            .setup
            .schedule
            .iter()
            .position(|s| s.kind == SlotKind::Final)?;
        self.turns
            .iter()
            .rev()
            .find(|t| t.slot == fin && t.offer.is_some())
            .and_then(|t| self.offer(t.offer?))
    }

    /// The offers `seat` may accept now (the ids an `[ACCEPT_DEAL] #N` of its may name):
    /// the rule a turn's acceptance is checked by, asked of every offer on the table.
    pub fn acceptable(&self, seat: usize) -> Vec<u32> {
        self.offers
            .iter()
            .map(|o| o.id)
            .filter(|&id| self.check(seat, &Action::Accept, Some(id)).is_ok())
            .collect()
    }

    pub(crate) fn offer(&self, id: u32) -> Option<&TableOffer> {
        id.checked_sub(1).and_then(|i| self.offers.get(i as usize))
    }

    /// The brief a narrated seat's narrator is sent for the `decided` action line, in the
    /// table's format ([`crate::narration`]).
    pub fn narration_brief(&self, decided: &str) -> Result<String, crate::game::PromptError> {
        self.prompts.narration_brief(decided, self.setup.format)
    }

    /// A narrated turn ([`crate::narration`]): whether it plays its decided move (the offer
    /// an acceptance names included), and where its Talk contradicts that move, kept on its
    /// narration. `None` for a turn that is not narrated.
    fn narrated(&self, turn: &mut TableTurn) -> Option<TurnError> {
        let narration = turn.completion.narration.as_mut()?;
        let decided = super::turn::read_table_turn(
            &self.scenario.issues,
            &format!("Action: {}", narration.decided),
            None,
        );
        let decided_move = match (&decided.parsed.action, &decided.parsed.error) {
            (Some(action), None) => Ok((action, decided.accepts)),
            (_, Some(e)) => Err(e.clone()),
            (None, None) => Err(TurnError::format("no move")),
        };
        // A table's deals are issue options, with no price to name: the stance checks alone.
        crate::narration::judge(
            narration,
            decided_move.as_ref().map(|m| *m),
            turn.parsed.action.as_ref().map(|a| (a, turn.accepts)),
            turn.parsed.talk.as_deref(),
            (None, &[]),
            self.setup.format,
        )
    }

    /// Play `completion` as `seat`'s turn.
    pub fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError> {
        let Some(slot) = self.slot().filter(|_| self.outcome.is_none()) else {
            return Err(TableError::Ended);
        };
        if seat >= self.present.len() {
            return Err(TableError::UnknownSeat(seat.to_string()));
        }
        if seat != slot.seat {
            return Err(TableError::OutOfTurn {
                acted: self.role(seat).to_string(),
                expected: self.role(slot.seat).to_string(),
            });
        }
        let read = read_table_completion(&self.scenario, &completion, self.setup.format);
        let mut turn = TableTurn {
            seat,
            slot: self.cursor,
            completion,
            parsed: read.parsed,
            accepts: read.accepts,
            offer: None,
            error: None,
            regulation: None,
        };
        turn.error = turn.parsed.error.clone();
        let refused = self.narrated(&mut turn);
        if turn.error.is_none() {
            turn.error = refused;
        }
        if turn.error.is_none() {
            if let Some(action) = turn.parsed.action.clone() {
                match self.check(seat, &action, turn.accepts) {
                    Err(e) => turn.error = Some(e),
                    Ok(()) => turn.regulation = self.regulate(seat, &action, turn.accepts),
                }
            } else {
                turn.error = Some(TurnError::format("no move could be read"));
            }
        }
        self.histories[seat].push_tokens(turn.completion.tokens.as_ref());
        if let Some(error) = turn.error.clone() {
            let next = after_unusable(
                &mut self.histories[seat],
                &self.prompts,
                self.setup.format,
                Reply::of(&turn.completion),
                &error,
                self.failures,
                self.setup.retries,
            )?;
            self.turns.push(turn);
            self.failures += 1;
            let retry = next == Unusable::Retry;
            if let Unusable::Forfeit(why) = next {
                self.outcome = Some(TableOutcome {
                    detail: Some(why),
                    ..TableOutcome::plain(OutcomeKind::FormatForfeit, Some(seat))
                });
            }
            return Ok(self.step_result(seat, retry, Some(error)));
        }
        self.histories[seat].push_own(Reply::of(&turn.completion), None);
        let action = turn
            .played()
            .cloned()
            .expect("a turn without an error has a move");
        let index = self.turns.len();
        match &action {
            Action::Submit(terms) => {
                let deal = TableScenario::deal_of(terms).expect("checked: a deal of the game");
                let id = self.offers.len() as u32 + 1;
                self.offers.push(TableOffer {
                    id,
                    proposer: seat,
                    deal,
                    turn: index,
                    acceptors: vec![seat],
                });
                turn.offer = Some(id);
                self.turns.push(turn);
                self.agreed(id, seat);
            }
            Action::Accept => {
                let id = turn
                    .accepts
                    .expect("checked: an acceptance names its offer");
                self.turns.push(turn);
                let offer = &mut self.offers[id as usize - 1];
                if !offer.acceptors.contains(&seat) {
                    offer.acceptors.push(seat);
                }
                self.agreed(id, seat);
            }
            Action::Reject => {
                // A REJECT turns down the latest offer; a regulated acceptance replaced by one
                // turns down the offer it named.
                let named = turn
                    .regulation
                    .as_ref()
                    .filter(|r| r.original == Action::Accept)
                    .and(turn.accepts)
                    .and_then(|id| id.checked_sub(1))
                    .map(|i| i as usize);
                self.turns.push(turn);
                let target = match named {
                    Some(i) => self.offers.get_mut(i),
                    None => self.offers.last_mut(),
                };
                if let Some(offer) = target {
                    if offer.proposer != seat {
                        offer.acceptors.retain(|&s| s != seat);
                    }
                }
            }
            Action::Talk => self.turns.push(turn),
            Action::WalkAway => {
                self.turns.push(turn);
                self.present[seat] = false;
                for offer in &mut self.offers {
                    offer.acceptors.retain(|&s| s != seat);
                }
                if holds_veto(&self.scenario, seat)
                    || !still_possible(&self.scenario, &self.present)
                {
                    self.outcome = Some(TableOutcome::plain(OutcomeKind::WalkAway, Some(seat)));
                }
            }
        }
        if self.outcome.is_none() {
            self.advance()?;
        }
        Ok(self.step_result(seat, false, None))
    }

    fn step_result(&self, seat: usize, retry: bool, error: Option<TurnError>) -> TableStep {
        TableStep::after(seat, retry, error, self.outcome.as_ref().map(|o| o.kind))
    }

    /// End the episode as an `error` of `cause` while `seat` was to move (the seat's endpoint
    /// failed after its retries, the code playing it panicked, a server's limit ended it).
    pub fn fail(&mut self, seat: usize, cause: ErrorCause, message: impl Into<String>) {
        self.end_in_error(Some(seat), cause, message.into());
    }

    /// End the episode unfinished, by no seat: it was dropped before it ended (a server's
    /// client deleted it, or it sat idle past the timeout). `why` says so; the record keeps
    /// the turns played, as an `error` ending does, so it replays as far as it went.
    pub fn abandon(&mut self, why: impl Into<String>) {
        self.end_in_error(None, ErrorCause::Abandoned, why.into());
    }

    fn end_in_error(&mut self, by: Option<usize>, cause: ErrorCause, detail: String) {
        if self.outcome.is_none() {
            self.outcome = Some(TableOutcome {
                detail: Some(detail),
                error_kind: Some(cause),
                ..TableOutcome::plain(OutcomeKind::Error, by)
            });
        }
    }

    /// Whether `action` is allowed to `seat` now.
    fn check(&self, seat: usize, action: &Action, accepts: Option<u32>) -> Result<(), TurnError> {
        match action {
            Action::Submit(terms) => match TableScenario::deal_of(terms) {
                Some(deal) if deal.len() == self.scenario.issues.len() => Ok(()),
                _ => Err(TurnError::illegal(
                    "a proposal names one option of every issue",
                )),
            },
            Action::Accept => {
                let id = accepts.unwrap_or(0);
                let Some(offer) = self.offer(id) else {
                    return Err(TurnError::illegal(format!(
                        "there is no offer #{id} (offers so far: {})",
                        if self.offers.is_empty() {
                            "none".to_string()
                        } else {
                            format!("#1 to #{}", self.offers.len())
                        }
                    )));
                };
                if offer.proposer == seat {
                    return Err(TurnError::illegal(format!(
                        "offer #{id} is your own proposal"
                    )));
                }
                if !self.present[offer.proposer] {
                    return Err(TurnError::illegal(format!(
                        "offer #{id} was made by a party that has left"
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A regulated seat's proposal or acceptance below its own minimum, replaced by a REJECT.
    fn regulate(
        &self,
        seat: usize,
        action: &Action,
        accepts: Option<u32>,
    ) -> Option<TableRegulation> {
        let (replacement, deal) = crate::engine::regulate(
            self.setup.seats[seat].regulated,
            action,
            |action| match action {
                Action::Submit(terms) => TableScenario::deal_of(terms),
                Action::Accept => Some(self.offer(accepts?)?.deal.clone()),
                _ => None,
            },
            |deal| !counts_toward(&self.scenario, seat, deal),
        )?;
        Some(TableRegulation {
            original: action.clone(),
            replacement,
            score: self.scenario.score(seat, &deal),
            minimum: self.scenario.parties[seat].private.minimum,
        })
    }

    /// End with a deal if offer `id` is agreed now.
    fn agreed(&mut self, id: u32, by: usize) {
        let offer = &self.offers[id as usize - 1];
        if is_agreed(&self.scenario, &offer.deal, &offer.acceptors) {
            self.outcome = Some(TableOutcome {
                offer: Some(id),
                deal: Some(offer.deal.clone()),
                ..TableOutcome::plain(OutcomeKind::Deal, Some(by))
            });
        }
    }

    /// Move to the next slot of a seat still at the table.
    fn advance(&mut self) -> Result<(), TableError> {
        self.failures = 0;
        self.cursor += 1;
        while let Some(slot) = self.setup.schedule.get(self.cursor) {
            if self.present[slot.seat] {
                return self.prompt_to_move();
            }
            self.cursor += 1;
        }
        self.end_of_schedule();
        Ok(())
    }

    fn end_of_schedule(&mut self) {
        self.outcome = Some(TableOutcome::plain(OutcomeKind::MaxTurns, None));
    }

    /// What `seat` sees now: its system prompt, then for each of its turns the news since its
    /// previous one and what the turn asks, followed by its reply (and a correction for each
    /// attempt that could not be played). Ends with a user message when it is the seat's turn.
    /// Kept per seat and extended as the episode goes (append-only), never rebuilt.
    pub fn view(&self, seat: usize) -> &[Message] {
        self.histories[seat].view()
    }

    /// Which history [`view`](Self::view) reads: unchanged while the seat's view only grows,
    /// another after a restore or in a copy (`engine::SeatHistory::origin`).
    pub fn view_origin(&self, seat: usize) -> u64 {
        self.histories[seat].origin()
    }

    /// `seat`'s exact token sequence so far (its calls' prompt suffixes and sampled ids, in
    /// order): `None` if one of its calls had no token ids.
    pub fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        self.histories[seat].token_sequence()
    }

    /// [`TableEpisode::view`] rebuilt from the turns alone: what the kept views are checked
    /// against. What `seat` sees now: its system prompt, then for each of its turns the news since its
    /// previous one and what the turn asks, followed by its reply (and a correction for each
    /// attempt that could not be played). Ends with a user message when it is the seat's turn.
    #[cfg(test)]
    pub(crate) fn rebuilt_view(&self, seat: usize) -> Vec<Message> {
        let mut messages = vec![Message::new(
            crate::vocab::MessageRole::System,
            self.setup.seats[seat].system_prompt.clone(),
        )];
        let mut seen = 0;
        let mut last_slot = None;
        let mut push_turn_prompt = |messages: &mut Vec<Message>, upto: usize, slot: usize| {
            let news = TurnNews::between(self, seat, seen, upto);
            seen = upto;
            messages.push(Message::new(
                crate::vocab::MessageRole::User,
                turn_prompt(self, slot, &news).expect("the turn prompt renders"),
            ));
        };
        for (i, turn) in self.turns.iter().enumerate() {
            if turn.seat != seat {
                continue;
            }
            if last_slot == Some(turn.slot) {
                // A retry in the same slot: the correction, then the new attempt.
                let previous = &self.turns[..i]
                    .iter()
                    .rev()
                    .find(|t| t.seat == seat)
                    .and_then(|t| t.error.clone());
                let error = previous
                    .as_ref()
                    .map_or_else(String::new, |e| e.message.clone());
                messages.push(Message::new(
                    crate::vocab::MessageRole::User,
                    self.prompts
                        .correction(&error, self.setup.format)
                        .expect("the correction renders"),
                ));
            } else {
                push_turn_prompt(&mut messages, i, turn.slot);
            }
            // A forfeiting reply ended the table: it never entered the seat's history.
            let forfeited = i + 1 == self.turns.len()
                && self
                    .outcome
                    .as_ref()
                    .is_some_and(|o| o.kind == OutcomeKind::FormatForfeit && o.by == Some(seat));
            if !forfeited {
                messages.push(crate::engine::own_message(
                    &turn.completion.text,
                    &turn.completion.tool_calls,
                ));
            }
            last_slot = Some(turn.slot);
        }
        if self.to_move() == Some(seat) {
            if last_slot == Some(self.cursor) {
                let error = self
                    .turns
                    .iter()
                    .rev()
                    .find(|t| t.seat == seat)
                    .and_then(|t| t.error.as_ref())
                    .map_or_else(String::new, |e| e.message.clone());
                messages.push(Message::new(
                    crate::vocab::MessageRole::User,
                    self.prompts
                        .correction(&error, self.setup.format)
                        .expect("the correction renders"),
                ));
            } else {
                push_turn_prompt(&mut messages, self.turns.len(), self.cursor);
            }
        }
        messages
    }

    /// Append the prompt of the slot to play to its seat's view: the news since the seat's last
    /// prompt and what the slot asks.
    fn prompt_to_move(&mut self) -> Result<(), TableError> {
        if self.outcome.is_some() {
            return Ok(());
        }
        let Some(slot) = self.slot() else {
            return Ok(());
        };
        let seat = slot.seat;
        let news = TurnNews::between(self, seat, self.seen[seat], self.turns.len());
        let prompt = turn_prompt(self, self.cursor, &news)?;
        self.seen[seat] = self.turns.len();
        self.histories[seat].push_user(prompt);
        Ok(())
    }
}
