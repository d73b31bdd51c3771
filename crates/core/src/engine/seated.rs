//! What a face needs to host an episode of seats named by role — an n-party table or a market
//! — without knowing which: [`Seated`]. The server's sessions and Python's env are written
//! once against it; every method delegates to the episode's own (no rule lives here), so a
//! table and a market step, end and record exactly as `dealgym run` plays them.

use crate::game::{Completion, EpisodeSeed, ErrorCause, OutcomeKind};
use crate::market::MarketEpisode;
use crate::protocol::TurnFormat;
use crate::record::{MarketCallRecord, MarketRecord, TablePlayerInfo, TableRecord, TurnCost};
use crate::scenario::UnknownParty;
use crate::table::{TableEpisode, TableError, TableOptions, TableStep};
use crate::vocab::Message;

use super::ToMove;

/// How a seated episode ended, whatever its kind: what every seat may know of the ending.
/// Each seat's reward is its record's ([`SeatedRecord::rewards`]): a table's depends on the
/// `[rewards]` it is recorded under.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// `deal`, `walk_away`, `max_turns`, `format_forfeit`, `error`.
    pub kind: OutcomeKind,
    /// The seat that ended it, if one did.
    pub by: Option<usize>,
    /// What went wrong (a forfeit, an error, an abandoned episode's `abandoned: …`).
    pub detail: Option<String>,
    /// For an `error` ending: what caused it.
    pub error_kind: Option<ErrorCause>,
}

/// Who played an episode and what its turns cost: what its record is written with beside the
/// episode itself.
#[derive(Debug, Clone, Copy)]
pub struct SeatedRun<'a> {
    pub run_id: &'a str,
    /// The seeds the episode was played under (a table's record keeps them).
    pub seeds: EpisodeSeed,
    /// The record's episode id; `None`: the seeds' (`g{group}-m{member}`).
    pub episode_id: Option<&'a str>,
    /// Each seat's player spec and model, in seat order.
    pub players: &'a [TablePlayerInfo],
    /// Per turn (in the order of the episode's turns), what its call cost.
    pub costs: &'a [TurnCost],
}

impl SeatedRun<'_> {
    fn episode_id(&self) -> String {
        self.episode_id
            .map_or_else(|| self.seeds.episode_id(), str::to_string)
    }
}

/// A seated episode's record: the line its kind's writer writes, as it writes it (serialised,
/// each is its own record, byte for byte).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum SeatedRecord {
    Table(Box<TableRecord>),
    Market(Box<MarketRecord>),
}

impl SeatedRecord {
    pub fn episode_id(&self) -> &str {
        match self {
            SeatedRecord::Table(r) => &r.episode_id,
            SeatedRecord::Market(r) => &r.episode_id,
        }
    }

    /// Each seat's reward, in seat order: a table's role rewards
    /// ([`TableRecord::rewards`]), a market seat's surplus ([`MarketRecord::reward`]).
    pub fn rewards(&self) -> Vec<f64> {
        match self {
            SeatedRecord::Table(r) => r
                .roles()
                .iter()
                .map(|role| r.rewards.get(*role).copied().unwrap_or(0.0))
                .collect(),
            SeatedRecord::Market(r) => (0..r.seats.len()).map(|s| r.reward(s)).collect(),
        }
    }

    /// Per call of `seat`, its reward (each kind's `call_rewards`).
    pub fn call_rewards(&self, seat: usize) -> Vec<f64> {
        match self {
            SeatedRecord::Table(r) => r.call_rewards(seat),
            SeatedRecord::Market(r) => r.call_rewards(seat),
        }
    }
}

/// An episode whose seats are named by role, stepped one raw completion at a time by the seat
/// its schedule names: what a face (the server's sessions, Python's env) hosts. Implemented by
/// [`TableEpisode`] and [`MarketEpisode`], each by its own methods.
pub trait Seated: ToMove<Seat = usize> {
    /// What the record is written with beyond the episode (a table's options; a market's
    /// record needs none).
    type Options;

    /// The scenario's family (`deliberation`, `market`, …).
    fn family(&self) -> &'static str;
    fn scenario_id(&self) -> &str;
    /// How many seats the episode has.
    fn seats(&self) -> usize;
    /// The role of `seat`.
    fn role(&self, seat: usize) -> &str;
    /// The seat of `role`, if the episode has one.
    fn seat_of(&self, role: &str) -> Option<usize> {
        (0..self.seats()).find(|&seat| self.role(seat) == role)
    }
    /// The seat of `role`, or the refusal every face gives a role the episode has not, naming
    /// the scenario and its roles ([`UnknownParty`]).
    fn seat_of_party(&self, role: &str) -> Result<usize, UnknownParty> {
        self.seat_of(role).ok_or_else(|| UnknownParty {
            role: role.to_string(),
            scenario: self.scenario_id().to_string(),
            roles: (0..self.seats())
                .map(|s| self.role(s).to_string())
                .collect(),
        })
    }
    /// How every seat writes its turns.
    fn format(&self) -> TurnFormat;
    /// What `seat` sees: its chat, append-only.
    fn view(&self, seat: usize) -> &[Message];
    /// Which history [`view`](Seated::view) reads (`SeatHistory::origin`).
    fn view_origin(&self, seat: usize) -> u64;
    /// `seat`'s exact token sequence so far (`None` once a call had no ids).
    fn token_sequence(&self, seat: usize) -> Option<&[u32]>;
    /// How many attempts at a turn have been played.
    fn turns_played(&self) -> usize;
    /// Play `completion` as `seat`'s turn.
    fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError>;
    /// End the episode as an `error` of `cause` while `seat` was to move.
    fn fail(&mut self, seat: usize, cause: ErrorCause, message: String);
    /// End the episode unfinished, by no seat (`why` says so).
    fn abandon(&mut self, why: String);
    /// How it ended; `None` while it goes on.
    fn ending(&self) -> Option<Ending>;
    /// The record of the episode (ended, or unfinished as its kind records that).
    fn record(&self, options: &Self::Options, run: &SeatedRun<'_>) -> SeatedRecord;
}

impl Seated for TableEpisode {
    type Options = TableOptions;

    fn family(&self) -> &'static str {
        self.scenario().family.name()
    }
    fn scenario_id(&self) -> &str {
        &self.scenario().id
    }
    fn seats(&self) -> usize {
        self.scenario().parties.len()
    }
    fn role(&self, seat: usize) -> &str {
        TableEpisode::role(self, seat)
    }
    fn format(&self) -> TurnFormat {
        self.setup().format
    }
    fn view(&self, seat: usize) -> &[Message] {
        TableEpisode::view(self, seat)
    }
    fn view_origin(&self, seat: usize) -> u64 {
        TableEpisode::view_origin(self, seat)
    }
    fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        TableEpisode::token_sequence(self, seat)
    }
    fn turns_played(&self) -> usize {
        self.turns().len()
    }
    fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError> {
        TableEpisode::step(self, seat, completion)
    }
    fn fail(&mut self, seat: usize, cause: ErrorCause, message: String) {
        TableEpisode::fail(self, seat, cause, message);
    }
    fn abandon(&mut self, why: String) {
        TableEpisode::abandon(self, why);
    }
    fn ending(&self) -> Option<Ending> {
        self.outcome().map(|o| Ending {
            kind: o.kind,
            by: o.by,
            detail: o.detail.clone(),
            error_kind: o.error_kind,
        })
    }
    fn record(&self, options: &TableOptions, run: &SeatedRun<'_>) -> SeatedRecord {
        let mut record =
            TableRecord::of(run.run_id, run.seeds, self, options, run.players, run.costs);
        record.episode_id = run.episode_id();
        SeatedRecord::Table(Box::new(record))
    }
}

impl Seated for MarketEpisode {
    type Options = ();

    fn family(&self) -> &'static str {
        self.scenario().family.name()
    }
    fn scenario_id(&self) -> &str {
        &self.scenario().id
    }
    fn seats(&self) -> usize {
        self.scenario().traders.len()
    }
    fn role(&self, seat: usize) -> &str {
        &self.scenario().traders[seat].role
    }
    fn seat_of(&self, role: &str) -> Option<usize> {
        self.scenario().seat_of(role)
    }
    fn format(&self) -> TurnFormat {
        self.setup().format
    }
    fn view(&self, seat: usize) -> &[Message] {
        MarketEpisode::view(self, seat)
    }
    fn view_origin(&self, seat: usize) -> u64 {
        MarketEpisode::view_origin(self, seat)
    }
    fn token_sequence(&self, seat: usize) -> Option<&[u32]> {
        MarketEpisode::token_sequence(self, seat)
    }
    fn turns_played(&self) -> usize {
        self.turns().len()
    }
    fn step(&mut self, seat: usize, completion: Completion) -> Result<TableStep, TableError> {
        MarketEpisode::step(self, seat, completion)
    }
    fn fail(&mut self, seat: usize, cause: ErrorCause, message: String) {
        MarketEpisode::fail(self, seat, cause, message);
    }
    fn abandon(&mut self, why: String) {
        MarketEpisode::abandon(self, why);
    }
    fn ending(&self) -> Option<Ending> {
        self.outcome().map(|o| Ending {
            kind: o.kind,
            by: o.by,
            detail: o.detail.clone(),
            error_kind: o.error_kind,
        })
    }
    fn record(&self, _: &(), run: &SeatedRun<'_>) -> SeatedRecord {
        let specs: Vec<String> = run.players.iter().map(|p| p.player.clone()).collect();
        let mut record = MarketRecord::of(self, run.run_id, &run.episode_id(), &specs);
        for (seat, player) in record.seats.iter_mut().zip(run.players) {
            seat.model = player.model.clone();
        }
        record.calls = run
            .costs
            .iter()
            .enumerate()
            .filter_map(|(turn, cost)| MarketCallRecord::of(turn, cost.clone()))
            .collect();
        SeatedRecord::Market(Box::new(record))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::Prompts;
    use crate::market::{MarketOptions, MarketSetup};
    use crate::negotiator::market::MarketRule;

    fn say(text: &str) -> Completion {
        Completion {
            text: text.to_string(),
            ..Completion::default()
        }
    }

    fn table() -> TableEpisode {
        crate::table::tests::episode(7, &TableOptions::default())
    }

    fn market() -> MarketEpisode {
        let m = Arc::new(crate::scenario::generate::generate_markets(None, Some(4))[3].clone());
        let prompts = Prompts::builtin();
        let setup = MarketSetup::new(&m, &MarketOptions::default(), 5, &prompts).unwrap();
        MarketEpisode::new(m, setup, prompts).unwrap()
    }

    fn run(players: &[TablePlayerInfo]) -> SeatedRun<'_> {
        SeatedRun {
            run_id: "r",
            seeds: EpisodeSeed {
                run: 0,
                group: 0,
                member: 0,
            },
            episode_id: Some("t-1"),
            players,
            costs: &[],
        }
    }

    /// Steps a seated episode through the trait alone: a seat out of turn is refused naming
    /// the seat to move, an unreadable turn is retried by the same seat, then every seat
    /// walks away until it ends.
    fn walk_out<E: Seated>(e: &mut E) -> Vec<TableStep> {
        let seat = e.to_move().unwrap();
        let other = (seat + 1) % e.seats();
        assert_eq!(e.seat_of(e.role(other)), Some(other));
        assert_eq!(e.seat_of("nobody"), None);
        let unknown = e.seat_of_party("nobody").unwrap_err().to_string();
        assert!(
            unknown.contains(e.scenario_id()) && unknown.contains(e.role(other)),
            "{unknown}"
        );
        assert!(matches!(
            e.step(other, say("Action: [WALK_AWAY]")),
            Err(TableError::OutOfTurn { expected, .. }) if expected == e.role(seat)
        ));
        let origin = e.view_origin(seat);
        let before = e.view(seat).len();
        let retried = e.step(seat, say("no move here")).unwrap();
        assert!(retried.retry && retried.error.is_some() && !retried.ended());
        assert_eq!(e.to_move(), Some(seat), "the same seat moves again");
        assert!(e.view(seat).len() > before, "told what was wrong");
        assert_eq!(e.view_origin(seat), origin, "its view only grew");
        assert_eq!(e.turns_played(), 1);
        let mut steps = Vec::new();
        while let Some(seat) = e.to_move() {
            steps.push(
                e.step(seat, say("Thought: done\nTalk: bye\nAction: [WALK_AWAY]"))
                    .unwrap(),
            );
        }
        assert!(steps.last().unwrap().ended());
        assert!(e.ending().is_some());
        steps
    }

    #[test]
    fn a_table_is_stepped_ended_and_recorded_through_the_trait() {
        let mut e = table();
        assert_eq!(e.family(), "deliberation");
        assert_eq!(e.seats(), e.scenario().parties.len());
        let steps = walk_out(&mut e);
        assert!(steps.iter().all(|s| !s.retry));
        assert_eq!(e.ending().unwrap().kind, OutcomeKind::WalkAway);
        let players = vec![TablePlayerInfo::default(); e.seats()];
        let SeatedRecord::Table(record) = e.record(&TableOptions::default(), &run(&players)) else {
            panic!("a table's record is a table record")
        };
        assert_eq!(record.episode_id, "t-1");
        assert_eq!(record.turns.len(), e.turns().len());
        let line = serde_json::to_string(&SeatedRecord::Table(record.clone())).unwrap();
        assert_eq!(
            line,
            serde_json::to_string(&record).unwrap(),
            "the same line"
        );
    }

    #[test]
    fn a_market_is_stepped_ended_and_recorded_through_the_trait() {
        let mut e = market();
        assert_eq!(e.family(), "market");
        assert_eq!(e.scenario_id(), e.scenario().id);
        assert_eq!(e.role(0), e.scenario().traders[0].role);
        walk_out(&mut e);
        assert_eq!(e.ending().unwrap().kind, OutcomeKind::WalkAway);
        let players = vec![
            TablePlayerInfo {
                player: "rule:zic".into(),
                model: None,
            };
            e.seats()
        ];
        let record = e.record(&(), &run(&players));
        assert_eq!(record.episode_id(), "t-1");
        assert_eq!(
            record.rewards(),
            vec![0.0; e.seats()],
            "no trade, no surplus"
        );
        let SeatedRecord::Market(r) = &record else {
            panic!("a market's record is a market record")
        };
        assert_eq!(r.seats[0].player, "rule:zic");
        assert_eq!(
            r.replay(&Arc::new(e.scenario().clone()), Prompts::builtin()),
            Ok(())
        );
    }

    /// A market abandoned while it goes on ends as a table does — an `error` by no seat, of
    /// cause `abandoned`, saying why — and its record replays as far as it went.
    #[test]
    fn a_market_abandoned_ends_as_an_abandoned_table_does() {
        let mut t = table();
        let mut m = market();
        let seat = m.to_move().unwrap();
        let quote = MarketRule::Zic.completion(&m, seat);
        m.step(seat, quote).unwrap();
        Seated::abandon(&mut m, "abandoned: idle".into());
        Seated::abandon(&mut t, "abandoned: idle".into());
        let (mt, tt) = (m.ending().unwrap(), t.ending().unwrap());
        assert_eq!(mt, tt);
        assert_eq!(mt.kind, OutcomeKind::Error);
        assert_eq!(mt.by, None);
        assert_eq!(mt.error_kind, Some(ErrorCause::Abandoned));
        assert_eq!(mt.detail.as_deref(), Some("abandoned: idle"));
        assert_eq!(m.to_move(), None);
        assert!(matches!(m.step(seat, say("x")), Err(TableError::Ended)));
        let record = m.record(&(), &run(&[]));
        let SeatedRecord::Market(r) = record else {
            panic!()
        };
        assert_eq!(r.turns.len(), 1);
        assert_eq!(
            r.replay(&Arc::new(m.scenario().clone()), Prompts::builtin()),
            Ok(())
        );
        // A second ending never replaces the first.
        Seated::fail(&mut m, 0, ErrorCause::Backend, "late".into());
        assert_eq!(
            m.ending().unwrap().detail.as_deref(),
            Some("abandoned: idle")
        );
    }
}
