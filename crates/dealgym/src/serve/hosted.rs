//! What a served table hosts: an n-party table or a market — one [`Hosted`], core's
//! [`Seated`], that the table sessions and the `/v1/tables` routes are written against, so both
//! kinds are served by the one copy of those routes. What differs by kind is read here from
//! core, by kind: a scripted seat's turn (`rule:deliberation` at a table, a market's scripted
//! trader), a seat's public state, the table's tools.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::{Ending, Seated, SeatedRecord, SeatedRun, ToMove};
use crate::game::{Completion, ErrorCause};
use crate::jsonl::encoded_len;
use crate::market::{market_seat_state, MarketEpisode, MarketSeatState};
use crate::negotiator::deliberation::scripted_table_completion;
use crate::negotiator::market::MarketRule;
use crate::protocol::TurnFormat;
use crate::scenario::{MarketFamily, TableFamily};
use crate::table::{seat_state, TableEpisode, TableError, TableOptions, TableSeatState, TableStep};
use crate::vocab::Message;

/// A served table's episode: an n-party table with the options it was set up with, or a
/// market with each seat's scripted trader (`None`: a client's seat).
pub(super) enum Hosted {
    Table {
        episode: TableEpisode,
        options: TableOptions,
    },
    Market {
        episode: MarketEpisode,
        traders: Vec<Option<MarketRule>>,
    },
}

/// The family a `/v1/tables` create names: an n-party game's (`deliberation`) or `market`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SeatedFamily {
    Table(TableFamily),
    Market(MarketFamily),
}

/// What a seat knows of its table or market besides its chat: core's
/// [`seat_state`](crate::table::seat_state) or [`market_seat_state`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum SeatState {
    Table(TableSeatState),
    Market(MarketSeatState),
}

/// Each kind's episode, for what both answer alike.
macro_rules! each {
    ($hosted:expr, $episode:ident => $body:expr) => {
        match $hosted {
            Hosted::Table {
                episode: $episode, ..
            } => $body,
            Hosted::Market {
                episode: $episode, ..
            } => $body,
        }
    };
}

impl Hosted {
    /// The n-party table, where this is one.
    pub fn table(&self) -> Option<&TableEpisode> {
        match self {
            Hosted::Table { episode, .. } => Some(episode),
            Hosted::Market { .. } => None,
        }
    }

    /// What the kind is called in messages, with its article (`an n-party table`, `a market`).
    pub fn kind(&self) -> &'static str {
        match self {
            Hosted::Table { .. } => "an n-party table",
            Hosted::Market { .. } => "a market",
        }
    }

    /// The turn of scripted `seat` (asked only of a seat played in process): the scripted party
    /// of its incentive at a table, its scripted trader at a market.
    pub fn scripted_turn(&self, seat: usize) -> Completion {
        match self {
            Hosted::Table { episode, .. } => scripted_table_completion(episode, seat),
            Hosted::Market { episode, traders } => traders[seat]
                .expect("asked only of a scripted trader")
                .completion(episode, seat),
        }
    }

    /// What `seat` knows besides its chat.
    pub fn seat_state(&self, seat: usize) -> SeatState {
        match self {
            Hosted::Table { episode, .. } => SeatState::Table(seat_state(episode, seat)),
            Hosted::Market { episode, .. } => SeatState::Market(market_seat_state(episode, seat)),
        }
    }

    /// At a table played through tools: the table's tools (a market reads text turns).
    /// The offers (a table's proposals, a market's standing quotes) `seat` may accept now:
    /// core's rule of each kind.
    pub fn acceptable(&self, seat: usize) -> Vec<u32> {
        each!(self, episode => episode.acceptable(seat))
    }

    pub fn tools(&self) -> Option<Value> {
        self.table()
            .filter(|e| e.setup().format == TurnFormat::Tools)
            .map(|e| crate::table::table_tools(e.scenario()))
    }

    /// The length of each turn from `from` on, as the record writes it (what the server's
    /// text limits count).
    pub fn turn_lens(&self, from: usize) -> Vec<u64> {
        each!(self, e => e.turns()[from..].iter().map(encoded_len).collect())
    }
}

/// Either kind's schedule, for the one driver loop.
impl ToMove for Hosted {
    type Seat = usize;
    fn to_move(&self) -> Option<usize> {
        each!(self, e => e.to_move())
    }
}

/// Either kind through core's [`Seated`]; the record carries the table's options.
impl Seated for Hosted {
    type Options = ();

    fn family(&self) -> &'static str {
        each!(self, e => Seated::family(e))
    }
    fn scenario_id(&self) -> &str {
        each!(self, e => Seated::scenario_id(e))
    }
    fn seats(&self) -> usize {
        each!(self, e => Seated::seats(e))
    }
    fn role(&self, seat: usize) -> &str {
        each!(self, e => Seated::role(e, seat))
    }
    fn seat_of(&self, role: &str) -> Option<usize> {
        each!(self, e => Seated::seat_of(e, role))
    }
    fn format(&self) -> TurnFormat {
        each!(self, e => Seated::format(e))
    }
    fn view(&self, seat: usize) -> &[Message] {
        each!(self, e => Seated::view(e, seat))
    }
    fn view_origin(&self, seat: usize) -> u64 {
        each!(self, e => Seated::view_origin(e, seat))
    }
    fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        each!(self, e => Seated::token_sequence(e, seat))
    }
    fn turns_played(&self) -> usize {
        each!(self, e => Seated::turns_played(e))
    }
    fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError> {
        each!(self, e => Seated::step(e, seat, completion))
    }
    fn fail(&mut self, seat: usize, cause: ErrorCause, message: String) {
        each!(self, e => Seated::fail(e, seat, cause, message))
    }
    fn abandon(&mut self, why: String) {
        each!(self, e => Seated::abandon(e, why))
    }
    fn ending(&self) -> Option<Ending> {
        each!(self, e => Seated::ending(e))
    }
    fn record(&self, _: &(), run: &SeatedRun<'_>) -> SeatedRecord {
        match self {
            Hosted::Table { episode, options } => episode.record(options, run),
            Hosted::Market { episode, .. } => episode.record(&(), run),
        }
    }
}
