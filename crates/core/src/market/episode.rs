//! The market episode: the engine's turn mechanics with the order book as the rulebook.
//!
//! It takes one raw completion per step from the seat the schedule names and answers with what
//! happened, as a table does: the engine reads nothing itself that the other rulebooks do not
//! share — a seat's history and exact tokens ([`SeatHistory`]), the malformed-turn policy
//! ([`after_unusable`]), regulation ([`crate::engine::regulate`], through the book), the
//! ending's terminated/truncated ([`crate::engine::ending`]) and the one driver loop
//! ([`crate::engine::ToMove`]). Seats, their setup and the schedule's slots are the table's
//! types ([`TableSeat`], [`Slot`]). What the book decides is [`super::book`]'s.

use std::sync::Arc;
use std::sync::LazyLock;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{after_unusable, Reply, SeatHistory, Unusable};
use crate::game::{Completion, ErrorCause, OutcomeKind, Prompts};
use crate::protocol::{format_cents, parse, Action, Parsed, TermSpace, TurnError, TurnFormat};
use crate::scenario::{MarketScenario, MarketVariant, Side};
use crate::table::{Slot, SlotKind, TableError, TableSeat, TableStep};
use crate::vocab::Message;

use super::book::{MarketBook, MarketRegulation};

/// What a market is set up with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketOptions {
    /// Malformed or illegal turns a seat may retry in one slot before it forfeits (default 1).
    pub retries: u32,
    /// Roles that may not trade at a loss (default none).
    pub regulated: Vec<String>,
    /// How every seat writes its turns (`tagged` or `xml`; the market has no tools yet).
    pub format: TurnFormat,
}

impl Default for MarketOptions {
    fn default() -> Self {
        MarketOptions {
            retries: crate::engine::DEFAULT_RETRIES,
            regulated: Vec::new(),
            format: TurnFormat::Tagged,
        }
    }
}

/// Everything fixed at the start: the seed, the drawn schedule, the seats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketSetup {
    pub seed: u64,
    pub retries: u32,
    pub format: TurnFormat,
    pub seats: Vec<TableSeat>,
    /// Who moves when: each round every seat once, in an order drawn from `seed`.
    pub schedule: Vec<Slot>,
}

impl MarketSetup {
    /// The setup of the market seeded `seed`, its prompts rendered by `prompts`.
    pub fn new(
        scenario: &MarketScenario,
        options: &MarketOptions,
        seed: u64,
        prompts: &Prompts,
    ) -> Result<MarketSetup, TableError> {
        if let Some(r) = options
            .regulated
            .iter()
            .find(|r| scenario.seat_of(r).is_none())
        {
            return Err(TableError::UnknownRegulated(r.clone()));
        }
        if options.format == TurnFormat::Tools {
            return Err(TableError::BadSetup(
                "a market reads text turns (`tagged` or `xml`); the tools format does not play markets yet".into(),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let seats = (0..scenario.traders.len())
            .map(|seat| {
                let regulated = options.regulated.contains(&scenario.traders[seat].role);
                Ok(TableSeat {
                    role: scenario.traders[seat].role.clone(),
                    regulated,
                    system_prompt: super::prompt::system_prompt(
                        prompts,
                        scenario,
                        seat,
                        regulated,
                        options.format,
                    )?,
                })
            })
            .collect::<Result<Vec<_>, TableError>>()?;
        Ok(MarketSetup {
            seed,
            retries: options.retries,
            format: options.format,
            seats,
            schedule: draw_rounds(scenario, &mut rng),
        })
    }
}

/// The schedule: `rounds` rounds, each every seat once in a fresh order drawn from `rng`.
fn draw_rounds(scenario: &MarketScenario, rng: &mut ChaCha8Rng) -> Vec<Slot> {
    let n = scenario.traders.len();
    (1..=scenario.rules.rounds)
        .flat_map(|round| {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(rng);
            order.into_iter().map(move |seat| Slot {
                seat,
                kind: SlotKind::Round { round },
            })
        })
        .collect()
}

/// One attempt at a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketTurn {
    pub seat: usize,
    pub slot: usize,
    pub completion: Completion,
    pub parsed: Parsed,
    /// The order a take named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takes: Option<u32>,
    /// The seat a private message went to (`Talk: @ROLE …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<usize>,
    /// The order a quote made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<u32>,
    /// The trade a take made (its index in the book's trades).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regulation: Option<MarketRegulation>,
}

impl MarketTurn {
    /// The move that took effect (after regulation), if the attempt was played.
    pub fn played(&self) -> Option<&Action> {
        crate::engine::move_played(
            self.error.is_some(),
            self.regulation.as_ref().map(|r| &r.replacement),
            self.parsed.action.as_ref(),
        )
    }
}

/// How a market ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MarketOutcome {
    /// `deal` (no trade left possible, some trade made), `walk_away` (no trade left possible,
    /// none made), `max_turns` (the cap on rounds), `format_forfeit`, `error`.
    pub kind: OutcomeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorCause>,
}

/// A market being played.
#[derive(Debug, Clone)]
pub struct MarketEpisode {
    scenario: Arc<MarketScenario>,
    setup: MarketSetup,
    turns: Vec<MarketTurn>,
    book: MarketBook,
    cursor: usize,
    failures: u32,
    outcome: Option<MarketOutcome>,
    prompts: Arc<Prompts>,
    histories: Vec<SeatHistory>,
    seen: Vec<usize>,
}

/// The market's turn order (its schedule), for the one driver loop.
impl crate::engine::ToMove for MarketEpisode {
    type Seat = usize;
    fn to_move(&self) -> Option<usize> {
        MarketEpisode::to_move(self)
    }
}

/// A private message: `Talk: @seller_2 …`.
static ADDRESSEE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*@([A-Za-z0-9_]+)").expect("static regex"));

impl MarketEpisode {
    pub fn new(
        scenario: Arc<MarketScenario>,
        setup: MarketSetup,
        prompts: Arc<Prompts>,
    ) -> Result<MarketEpisode, TableError> {
        if setup.seats.len() != scenario.traders.len()
            || setup.schedule.iter().any(|s| s.seat >= setup.seats.len())
        {
            return Err(TableError::BadSetup(format!(
                "the setup does not seat the {} traders of {}",
                scenario.traders.len(),
                scenario.id
            )));
        }
        let histories = setup
            .seats
            .iter()
            .map(|s| SeatHistory::new(s.system_prompt.clone()))
            .collect();
        let n = scenario.traders.len();
        let mut episode = MarketEpisode {
            book: MarketBook::new(&scenario),
            scenario,
            setup,
            turns: Vec::new(),
            cursor: 0,
            failures: 0,
            outcome: None,
            prompts,
            histories,
            seen: vec![0; n],
        };
        if episode.setup.schedule.is_empty() {
            episode.end(OutcomeKind::MaxTurns, None);
        }
        episode.prompt_to_move()?;
        Ok(episode)
    }

    pub fn scenario(&self) -> &MarketScenario {
        &self.scenario
    }
    pub fn setup(&self) -> &MarketSetup {
        &self.setup
    }
    pub fn turns(&self) -> &[MarketTurn] {
        &self.turns
    }
    /// The standing quotes `seat` may take now (the ids an `[ACCEPT_DEAL] #N` of its may
    /// name): the book's own rule ([`MarketBook::check`]), asked of every standing quote.
    pub fn acceptable(&self, seat: usize) -> Vec<u32> {
        let book = self.book();
        book.standing()
            .map(|o| o.id)
            .filter(|&id| {
                book.check(self.scenario(), seat, &Action::Accept, Some(id), None)
                    .is_ok()
            })
            .collect()
    }

    pub fn book(&self) -> &MarketBook {
        &self.book
    }
    pub fn outcome(&self) -> Option<&MarketOutcome> {
        self.outcome.as_ref()
    }
    pub(crate) fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The seat to move, or `None` once the market has ended.
    pub fn to_move(&self) -> Option<usize> {
        if self.outcome.is_some() {
            return None;
        }
        self.setup.schedule.get(self.cursor).map(|s| s.seat)
    }

    /// The round being played (1-based).
    pub fn round(&self) -> u32 {
        match self.setup.schedule.get(self.cursor).map(|s| s.kind) {
            Some(SlotKind::Round { round }) => round,
            _ => self.scenario.rules.rounds,
        }
    }

    /// What `seat` sees: its system prompt, the news before each of its turns, its replies.
    pub fn view(&self, seat: usize) -> &[Message] {
        self.histories[seat].view()
    }

    /// Which history [`view`](Self::view) reads (`engine::SeatHistory::origin`), as a table's
    /// [`view_origin`](crate::table::TableEpisode::view_origin).
    pub fn view_origin(&self, seat: usize) -> u64 {
        self.histories[seat].origin()
    }

    /// `seat`'s exact token sequence so far.
    pub fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        self.histories[seat].token_sequence()
    }

    /// Play `completion` as `seat`'s turn; answers what happened, as a table's step does.
    pub fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError> {
        let Some(slot) = self.to_move() else {
            return Err(TableError::Ended);
        };
        if seat != slot {
            return Err(TableError::OutOfTurn {
                acted: self
                    .scenario
                    .traders
                    .get(seat)
                    .map_or_else(|| seat.to_string(), |t| t.role.clone()),
                expected: self.scenario.traders[slot].role.clone(),
            });
        }
        let (parsed, takes, to) = self.read(&completion);
        let mut turn = MarketTurn {
            seat,
            slot: self.cursor,
            completion,
            parsed,
            takes,
            to: to.as_ref().ok().copied().flatten(),
            quote: None,
            trade: None,
            error: None,
            regulation: None,
        };
        turn.error = turn.parsed.error.clone().or(to.err());
        if turn.error.is_none() && turn.completion.narration.is_some() {
            // A market's moves are quotes and takes, which no decider writes yet.
            turn.error = Some(TurnError::illegal(
                "a market seat is not narrated: seat its decider or its model",
            ));
        }
        if turn.error.is_none() {
            match turn.parsed.action.clone() {
                None => turn.error = Some(TurnError::format("no move could be read")),
                Some(action) => {
                    match self
                        .book
                        .check(&self.scenario, seat, &action, turn.takes, turn.to)
                    {
                        Err(e) => turn.error = Some(e),
                        Ok(()) => {
                            turn.regulation = self.book.regulate(
                                &self.scenario,
                                seat,
                                self.setup.seats[seat].regulated,
                                &action,
                                turn.takes,
                            )
                        }
                    }
                }
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
                self.end(OutcomeKind::FormatForfeit, Some(seat));
                if let Some(o) = self.outcome.as_mut() {
                    o.detail = Some(why);
                }
            }
            return Ok(self.step_result(seat, retry, Some(error)));
        }
        self.histories[seat].push_own(Reply::of(&turn.completion), None);
        let action = turn.played().cloned().expect("a played turn has a move");
        let (quote, trade) = self.book.play(&self.scenario, seat, &action, turn.takes);
        turn.quote = quote;
        turn.trade = trade.map(|_| self.book.trades.len() - 1);
        self.turns.push(turn);
        if !self.book.open(&self.scenario) {
            let kind = if self.book.trades.is_empty() {
                OutcomeKind::WalkAway
            } else {
                OutcomeKind::Deal
            };
            self.end(kind, Some(seat));
        } else {
            self.advance()?;
        }
        Ok(self.step_result(seat, false, None))
    }

    fn step_result(&self, seat: usize, retry: bool, error: Option<TurnError>) -> TableStep {
        TableStep::after(seat, retry, error, self.outcome.as_ref().map(|o| o.kind))
    }

    /// End the market as an `error` of `cause` while `seat` was to move.
    pub fn fail(&mut self, seat: usize, cause: ErrorCause, message: impl Into<String>) {
        self.end_in_error(Some(seat), cause, message.into());
    }

    /// End the market unfinished, by no seat, as a table is abandoned
    /// ([`crate::table::TableEpisode::abandon`]): it was dropped before it ended (a server's
    /// client deleted it, or it sat idle past the timeout). `why` says so; the record keeps the
    /// turns and trades made, so it replays as far as it went.
    pub fn abandon(&mut self, why: impl Into<String>) {
        self.end_in_error(None, ErrorCause::Abandoned, why.into());
    }

    fn end_in_error(&mut self, by: Option<usize>, cause: ErrorCause, detail: String) {
        if self.outcome.is_none() {
            self.outcome = Some(MarketOutcome {
                kind: OutcomeKind::Error,
                by,
                detail: Some(detail),
                error_kind: Some(cause),
            });
        }
    }

    /// Read a completion: the grammar with a price, the acceptance's order id (the table's
    /// rule) and an addressee of a private message.
    fn read(
        &self,
        completion: &Completion,
    ) -> (Parsed, Option<u32>, Result<Option<usize>, TurnError>) {
        if !completion.tool_calls.is_empty() {
            let parsed = Parsed {
                error: Some(TurnError::format(
                    "a market reads text turns: write Thought, Talk and Action",
                )),
                ..Parsed::default()
            };
            return (parsed, None, Ok(None));
        }
        let text = &completion.text;
        let mut parsed = parse(text, TermSpace::Price, completion.reasoning.as_deref());
        crate::protocol::judge_mode(&mut parsed, self.setup.format, false);
        let takes = crate::table::accepted_offer(&mut parsed, text);
        let to = match parsed.talk.as_deref().and_then(|t| ADDRESSEE.captures(t)) {
            None => Ok(None),
            Some(c) => self.scenario.seat_of(&c[1]).map(Some).ok_or_else(|| {
                TurnError::illegal(format!(
                    "`@{}` is not a trader of this market (its roles: {})",
                    &c[1],
                    self.scenario
                        .traders
                        .iter()
                        .map(|t| t.role.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
        };
        (parsed, takes, to)
    }

    fn end(&mut self, kind: OutcomeKind, by: Option<usize>) {
        self.outcome = Some(MarketOutcome {
            kind,
            by,
            detail: None,
            error_kind: None,
        });
    }

    /// Move to the next slot of a seat still in the market.
    fn advance(&mut self) -> Result<(), TableError> {
        self.failures = 0;
        self.cursor += 1;
        while let Some(slot) = self.setup.schedule.get(self.cursor) {
            if self.book.present[slot.seat] {
                return self.prompt_to_move();
            }
            self.cursor += 1;
        }
        self.end(OutcomeKind::MaxTurns, None);
        Ok(())
    }

    /// Append the news since the seat's last prompt and the book to the view of the seat to
    /// move.
    fn prompt_to_move(&mut self) -> Result<(), TableError> {
        let Some(seat) = self.to_move() else {
            return Ok(());
        };
        let news = self.news(seat, self.seen[seat], self.turns.len());
        let prompt = super::prompt::turn_prompt(self, seat, &news)?;
        self.seen[seat] = self.turns.len();
        self.histories[seat].push_user(prompt);
        Ok(())
    }

    /// What the others did in turns `from..to`, as `seat` reads it: public talk and talk
    /// addressed to it, every quote and trade; never a thought or a limit.
    pub(crate) fn news(&self, seat: usize, from: usize, to: usize) -> Vec<String> {
        let role = |s: usize| self.scenario.traders[s].role.as_str();
        self.turns[from..to]
            .iter()
            .filter(|t| t.seat != seat)
            .filter_map(|t| {
                t.played()?;
                let talk = t
                    .parsed
                    .talk
                    .as_deref()
                    .filter(|_| t.to.is_none_or(|to| to == seat))
                    .map(str::trim)
                    .filter(|s| !s.is_empty());
                let shown = self.shown_move(t);
                let said = talk.map(|s| match t.to {
                    Some(_) => format!("(to you only) {s}"),
                    None => s.to_string(),
                });
                match (said, shown) {
                    (None, None) => None,
                    (Some(s), None) => Some(format!("{}: {s}", role(t.seat))),
                    (None, Some(m)) => Some(format!("{}: [{m}]", role(t.seat))),
                    (Some(s), Some(m)) => Some(format!("{}: {s}\n  [{m}]", role(t.seat))),
                }
            })
            .collect()
    }

    /// The move `turn` played as every trader reads it (`quote #3 bid 70`, `took #1: buyer_1
    /// bought from seller_2 at 70`, `left the market`); `None` for a pass, talk alone or an
    /// attempt that was not played.
    pub fn shown_move(&self, turn: &MarketTurn) -> Option<String> {
        let role = |s: usize| self.scenario.traders[s].role.as_str();
        match turn.played()? {
            Action::Submit(terms) => {
                let price = super::book::quote_price(terms).unwrap_or(0);
                let kind = match self.scenario.traders[turn.seat].side {
                    Side::Buyer => "bid",
                    Side::Seller => "ask",
                };
                Some(format!(
                    "quote #{} {kind} {}",
                    turn.quote.unwrap_or(0),
                    format_cents(price)
                ))
            }
            Action::Accept => turn.trade.and_then(|i| self.book.trades.get(i)).map(|tr| {
                format!(
                    "took #{}: {} bought from {} at {}",
                    tr.order,
                    role(tr.buyer),
                    role(tr.seller),
                    format_cents(tr.price)
                )
            }),
            Action::WalkAway => Some("left the market".to_string()),
            Action::Reject | Action::Talk => None,
        }
    }

    /// Whether the market is of several units per trader.
    pub(crate) fn multi_unit(&self) -> bool {
        self.scenario.variant == MarketVariant::MultiUnit
    }
}
