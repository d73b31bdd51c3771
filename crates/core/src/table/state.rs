//! What a seat knows of a table besides its chat: the public state every seat may see — whose
//! turn it is, the offers made (by whom, what, who accepts each now), who is still at the
//! table, how it ended. Every part of it is what the seats' played moves already told everyone;
//! nothing private to any seat (scores, minimums, instructions, thoughts) is in it. The Python
//! binding's observation and `dealgym serve`'s seat view both hand it out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::game::OutcomeKind;
use crate::protocol::IssueRange;

use super::episode::TableEpisode;

/// One offer as every seat saw it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicOffer {
    pub id: u32,
    /// The proposer's role.
    pub proposer: String,
    /// The deal in the games' notation (`A1 B2 C4 D1 E5`).
    pub deal: String,
    /// The roles that accept it now (the proposer first).
    pub acceptors: Vec<String>,
}

/// How the table ended, as every seat saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicOutcome {
    pub kind: OutcomeKind,
    /// The role that ended it, where one did.
    pub by: Option<String>,
    /// The agreed offer and its deal.
    pub offer: Option<u32>,
    pub deal: Option<String>,
}

/// The table's public state, from one seat's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableSeatState {
    /// The seat's own role.
    pub role: String,
    /// The role to move; none once the table has ended.
    pub to_move: Option<String>,
    /// Attempts at a turn so far (played or not).
    pub turns: usize,
    pub offers: Vec<PublicOffer>,
    /// The roles still at the table.
    pub present: Vec<String>,
    pub outcome: Option<PublicOutcome>,
}

/// The public state of `episode` from `seat`'s side.
pub fn seat_state(episode: &TableEpisode, seat: usize) -> TableSeatState {
    let scenario = episode.scenario();
    let role = |s: usize| scenario.parties[s].role.clone();
    TableSeatState {
        role: role(seat),
        to_move: episode.to_move().map(role),
        turns: episode.turns().len(),
        offers: episode
            .offers()
            .iter()
            .map(|o| PublicOffer {
                id: o.id,
                proposer: role(o.proposer),
                deal: scenario.render_deal(&o.deal),
                acceptors: o.acceptors.iter().map(|&s| role(s)).collect(),
            })
            .collect(),
        present: episode
            .present()
            .iter()
            .enumerate()
            .filter(|(_, here)| **here)
            .map(|(s, _)| role(s))
            .collect(),
        outcome: episode.outcome().map(|o| PublicOutcome {
            kind: o.kind,
            by: o.by.map(role),
            offer: o.offer,
            deal: o.deal.as_ref().map(|d| scenario.render_deal(d)),
        }),
    }
}

/// A seat's own values at a table, which only it reads (the numbers of its confidential
/// block): its points per option, by the option's label (`A1`), and its minimum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableOwnValues {
    pub scores: BTreeMap<String, i64>,
    pub minimum: i64,
}

/// What one seat knows of a table, as data: the public state and its own values, never
/// another seat's — the structured line of a planner's state text at a table
/// ([`crate::planner::state_text`]), as the two-party seat state is a two-party seat's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableSeatKnowledge {
    #[serde(flatten)]
    pub state: TableSeatState,
    pub own: TableOwnValues,
}

/// What `seat` knows of `episode` ([`TableSeatKnowledge`]).
pub(crate) fn seat_knowledge(episode: &TableEpisode, seat: usize) -> TableSeatKnowledge {
    let scenario = episode.scenario();
    let private = &scenario.parties[seat].private;
    let scores = scenario
        .issues
        .iter()
        .zip(&private.scores)
        .flat_map(|(issue, row)| match &issue.range {
            IssueRange::Discrete { options } => options
                .iter()
                .cloned()
                .zip(row.iter().copied())
                .collect::<Vec<_>>(),
            IssueRange::Integer { .. } => Vec::new(),
        })
        .collect();
    TableSeatKnowledge {
        state: seat_state(episode, seat),
        own: TableOwnValues {
            scores,
            minimum: private.minimum,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::Completion;
    use crate::table::tests::six_party;
    use crate::table::{TableOptions, TableSetup};

    #[test]
    fn the_public_state_names_offers_and_acceptors_by_role_and_holds_nothing_private() {
        let s = Arc::new(six_party());
        let setup = TableSetup::new(&s, &TableOptions::default(), 1).unwrap();
        let mut ep = TableEpisode::new(s.clone(), setup).unwrap();
        let lead = ep.to_move().unwrap();
        ep.step(
            lead,
            Completion::from("Thought: SECRET\nTalk: go\nAction: [SUBMIT_DEAL] A1 B1 C2 D1 E3"),
        )
        .unwrap();
        let next = ep.to_move().unwrap();
        ep.step(
            next,
            Completion::from("Thought: SECRET\nTalk: ok\nAction: [ACCEPT_DEAL] #1"),
        )
        .unwrap();
        let state = seat_state(&ep, 4);
        assert_eq!(state.role, "party_4");
        assert_eq!(state.offers.len(), 1);
        assert_eq!(state.offers[0].deal, "A1 B1 C2 D1 E3");
        assert_eq!(
            state.offers[0].acceptors,
            vec![s.parties[lead].role.clone(), s.parties[next].role.clone()]
        );
        assert_eq!(state.present.len(), 6);
        let text = serde_json::to_string(&state).unwrap();
        assert!(!text.contains("SECRET") && !text.contains("minimum") && !text.contains("score"));
    }
}
